/* engine/backends/host.h: the resident shadow of AddressSanitizer, which the cpu backend takes
 * out of a point's measured peak (cpu_mem_peak). In the ASan build it must count the shadow's
 * pages and nothing else; without ASan it is 0. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "engine/backends/host.h"

#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifdef TEST_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define MIB (1024.0 * 1024.0)

/* 64 MiB of fresh memory written (its pages resident: not shadow, so not counted; the reads
 * of its shadow by ASan's memset check count at most 1/8 of it, and only where the kernel has
 * no shared zero page), then poisoned: ASan writes its shadow, 8 MiB of real pages on every
 * kernel, all of which are counted. */
static void test_shadow_rss_counts_the_shadow_only(void **state)
{
    (void)state;
    const size_t n = (size_t)64 << 20;
    double s0 = -1, s1 = -1, s2 = -1;
    assert_int_equal(pdbx_host_shadow_rss(&s0), 0);
    unsigned char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    memset(p, 1, n);
    assert_int_equal(pdbx_host_shadow_rss(&s1), 0);
#ifdef TEST_ASAN
    assert_true(s1 - s0 <= n / 8 + MIB);
    ASAN_POISON_MEMORY_REGION(p, n);
    assert_int_equal(pdbx_host_shadow_rss(&s2), 0);
    if (!(s2 - s0 >= 0.95 * (double)(n / 8) && s2 - s0 <= n / 8 + MIB))
        print_error("poisoned 64 MiB: the shadow grew by %.2f MiB, allowed 7.6..9 MiB\n",
                    (s2 - s0) / MIB);
    assert_true(s2 - s0 >= 0.95 * (double)(n / 8) && s2 - s0 <= n / 8 + MIB);
    ASAN_UNPOISON_MEMORY_REGION(p, n);
#else
    (void)s2;
    assert_true(s0 == 0 && s1 == 0);   /* no sanitizer, no shadow */
#endif
    assert_int_equal(munmap(p, n), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shadow_rss_counts_the_shadow_only),
    };
    return cmocka_run_group_tests_name("engine_host", tests, NULL, NULL);
}
