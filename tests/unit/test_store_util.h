/* test_store_util.h: helpers shared by the store tests (temp directories, files, doubles).
 * Include after <cmocka.h>. Defines _XOPEN_SOURCE for nftw before any system header. */
#ifndef PDBX_TEST_STORE_UTIL_H
#define PDBX_TEST_STORE_UTIL_H

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* cmocka 1.1 has only a float comparison; measurements are doubles. */
#define assert_double_equal(a, b, eps)                                                           \
    do {                                                                                         \
        double a_ = (a), b_ = (b), e_ = (eps);                                                   \
        if (!(fabs(a_ - b_) <= e_))                                                              \
            fail_msg("%s = %.17g, expected %s = %.17g (tolerance %g)", #a, a_, #b, b_, e_);      \
    } while (0)

static inline int test_rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(p);
}

static inline void test_rm_rf(const char *dir)
{
    nftw(dir, test_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* cmocka setup/teardown: *state is a fresh temp directory (malloc'ed path). */
static inline int test_setup_tmpdir(void **state)
{
    char *d = strdup("/tmp/pdbx-store-test-XXXXXX");
    if (!d || !mkdtemp(d)) {
        free(d);
        return -1;
    }
    *state = d;
    return 0;
}

static inline int test_teardown_tmpdir(void **state)
{
    test_rm_rf((char *)*state);
    free(*state);
    return 0;
}

/* Whole file into a malloc'ed, NUL-terminated buffer; NULL when it cannot be read. */
static inline char *test_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = (size_t)n;
    }
    return buf;
}

static inline void test_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

#endif
