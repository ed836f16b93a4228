/* test_cuda_rope.c: how the cuda backend's ck_rope walks q and k (engine/backends/cuda/
 * cuda_rope.h, used by cuda_kernels.cu's rope kernel), emulated on the host exactly as the
 * kernel runs it: items of w rotation pairs (1, or a 16-byte vector of 4 fp32 / 8 bf16), each
 * rotating its pairs with the table row of its token's position. On the sequence-major layout
 * [seq, mbs, heads, d] the emulation must touch every rotated element once (the first rot dims
 * of each head: all of it, or a part with partial rotary; odd d: all but the last) and nothing
 * else, and equal a plain rotate-half reference whose position is the token's index in its
 * sequence; the vector items start 16-byte aligned. The GPU numerics are
 * tests/cuda/test_cuda_kernels.c's (test_rope). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cuda/cuda_rope.h"

static void check_rot(int64_t mbs, int64_t seq, int64_t heads, int64_t d, int64_t rot, int64_t w,
                      int64_t esize)
{
    const int64_t T = mbs * seq, n = T * heads * d, half = rot / 2;
    double *x = malloc((size_t)n * sizeof *x), *ref = malloc((size_t)n * sizeof *ref);
    double *cs = malloc((size_t)(seq * half + 1) * sizeof *cs), *sn = malloc((size_t)(seq * half + 1) * sizeof *sn);
    int *seen = calloc((size_t)n, sizeof *seen);
    assert_true(x && ref && cs && sn && seen);
    for (int64_t i = 0; i < n; i++)
        x[i] = ref[i] = sin(0.37 * (double)i + 1.0);
    for (int64_t p = 0; p < seq; p++)
        for (int64_t i = 0; i < half; i++) {
            cs[p * half + i] = cos((double)p * pow(10000.0, -2.0 * (double)i / (double)rot));
            sn[p * half + i] = sin((double)p * pow(10000.0, -2.0 * (double)i / (double)rot));
        }
    /* the reference: token row t = pos * mbs + b (cuda_attention.h), so pos = t / mbs */
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t i = 0; i < half; i++) {
                const int64_t lo = (t * heads + h) * d + i, pos = t / mbs;
                const double a = ref[lo], b = ref[lo + half];
                ref[lo] = a * cs[pos * half + i] - b * sn[pos * half + i];
                ref[lo + half] = b * cs[pos * half + i] + a * sn[pos * half + i];
            }
    /* the kernel's walk */
    const int64_t items = ck_rope_items(T, heads, rot, w);
    assert_int_equal(items * w, T * heads * half);
    for (int64_t it = 0; it < items; it++) {
        const ck_rope_at at = ck_rope_item(it, heads, d, rot, mbs, w);
        if (w > 1) {   /* a cudaMalloc base is 16-byte aligned: so are both of the item's vectors */
            assert_int_equal((at.lo * esize) % 16, 0);
            assert_int_equal(((at.lo + half) * esize) % 16, 0);
        }
        for (int64_t e = 0; e < w; e++) {
            const double a = x[at.lo + e], b = x[at.lo + half + e];
            const double c = cs[at.table + e], s = sn[at.table + e];
            x[at.lo + e] = a * c - b * s;
            x[at.lo + half + e] = b * c + a * s;
            seen[at.lo + e]++;
            seen[at.lo + half + e]++;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        const int rotated = i % d < 2 * half;   /* the first rot dims (an odd rot: all but one) */
        assert_int_equal(seen[i], rotated ? 1 : 0);
        if (fabs(x[i] - ref[i]) > 1e-12)
            fail_msg("mbs %lld seq %lld heads %lld d %lld w %lld: element %lld is %g, reference %g",
                     (long long)mbs, (long long)seq, (long long)heads, (long long)d, (long long)w,
                     (long long)i, x[i], ref[i]);
    }
    free(x), free(ref), free(cs), free(sn), free(seen);
}

static void check(int64_t mbs, int64_t seq, int64_t heads, int64_t d, int64_t w, int64_t esize)
{
    check_rot(mbs, seq, heads, d, d, w, esize);
}

static void test_scalar_walk(void **state)
{
    (void)state;
    check(1, 5, 2, 8, 1, 2);
    check(3, 7, 4, 6, 1, 4);     /* mbs > 1: positions repeat every mbs rows */
    check(2, 4, 1, 7, 1, 4);     /* odd head_dim: the last element of each head stays */
}

static void test_vector_walk(void **state)
{
    (void)state;
    check(2, 9, 3, 128, 8, 2);   /* bf16 / fp16: 8 pairs a vector */
    check(4, 3, 2, 64, 4, 4);    /* fp32: 4 */
    check(1, 16, 5, 16, 8, 2);
}

/* Partial rotary: the first rot dims of each head of stride d rotate, the rest stay;
 * pythia's 16 of 64 (bf16 vectors of 8 pairs), gpt-j's 64 of 256, a rot/2 that the vector does
 * not divide (scalar), an fp32 vector of 4 pairs in a 24-wide head. */
static void test_partial_walk(void **state)
{
    (void)state;
    check_rot(2, 9, 3, 64, 16, 8, 2);
    check_rot(1, 5, 2, 256, 64, 8, 2);
    check_rot(3, 4, 2, 64, 12, 1, 2);
    check_rot(2, 3, 4, 24, 8, 4, 4);
    check_rot(1, 6, 2, 10, 4, 1, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalar_walk),
        cmocka_unit_test(test_vector_walk),
        cmocka_unit_test(test_partial_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
