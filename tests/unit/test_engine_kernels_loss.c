/* test_engine_kernels_loss.c: the loss op's cross-entropy kernels (cpu_kernels_loss.h) against
 * a double-precision log-softmax:
 *  - the forward's row statistics (max, sum of exponentials, target logit) and the mean loss,
 *    with targets inside and outside the shard;
 *  - the vocabulary split as Megatron splits it over TP: two shards' statistics, combined as
 *    its all-reduces do (global max, sums rescaled to it and added, target logits added), give
 *    the whole vocabulary's loss;
 *  - the backward in place: softmax minus one-hot, times the scale, and central differences of
 *    the mean loss (double) at sampled logits;
 *  - the same bits on one thread and on a pool of 3, rows of a chunk and of several.
 * Tolerances: 1e-6 relative on the statistics and 2e-6 on the loss (fp32 sums of up to 3000
 * terms in 16 lanes against double), 1e-7 absolute on gradients of size 1/(rows n). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_loss.h"
#include "tests/unit/test_kernel_util.h"

/* the mean over rows of log sum_j exp(x_ij) - x_(i, t_i) in double, columns [lo, lo + n) of a
 * vocabulary whose logits are x [rows, ld] (a shard is the whole here: lo 0, n = ld) */
static double ref_loss(const float *x, const int32_t *t, int64_t rows, int64_t ld)
{
    double sum = 0;
    for (int64_t i = 0; i < rows; i++) {
        double m = -INFINITY, s = 0;
        for (int64_t j = 0; j < ld; j++)
            m = fmax(m, x[i * ld + j]);
        for (int64_t j = 0; j < ld; j++)
            s += exp((double)x[i * ld + j] - m);
        sum += log(s) + m - x[i * ld + t[i]];
    }
    return sum / (double)rows;
}

static int32_t *targets(int64_t rows, int64_t vocab, uint64_t seed)
{
    int32_t *t = malloc((size_t)rows * sizeof *t);
    assert_non_null(t);
    for (int64_t i = 0; i < rows; i++)
        t[i] = (int32_t)(((uint64_t)i * 2654435761u + seed) % (uint64_t)vocab);
    return t;
}

static void test_forward_stats(void **state)
{
    (void)state;
    const int64_t rows = 7, n = 3001;
    float *x = randv((size_t)(rows * n), 8.0f, 3);
    int32_t *t = targets(rows, n, 5);
    float *st = nanv((size_t)(3 * rows));
    pdbx_k_xent_fwd(NULL, x, t, rows, n, 0, st);
    for (int64_t i = 0; i < rows; i++) {
        double m = -INFINITY, s = 0;
        for (int64_t j = 0; j < n; j++)
            m = fmax(m, x[i * n + j]);
        for (int64_t j = 0; j < n; j++)
            s += exp((double)x[i * n + j] - m);
        assert_true(st[i] == (float)m);
        assert_true(fabs(st[rows + i] - s) <= 1e-6 * s);
        assert_true(st[2 * rows + i] == x[i * n + t[i]]);
    }
    const double want = ref_loss(x, t, rows, n);
    assert_true(fabs(pdbx_k_xent_mean(st, rows) - want) <= 2e-6 * fabs(want));
    /* a shard that holds none of the targets: target logits 0 (another rank's) */
    pdbx_k_xent_fwd(NULL, x, t, rows, n, n, st);
    for (int64_t i = 0; i < rows; i++)
        assert_true(st[2 * rows + i] == 0.0f);
    free(x), free(t), free(st);
}

static void test_vocab_parallel_combines(void **state)
{
    (void)state;
    const int64_t rows = 5, V = 2000, half = V / 2;
    float *x = randv((size_t)(rows * V), 6.0f, 11);
    int32_t *t = targets(rows, V, 13);
    float *shard[2], *st[2];
    for (int r = 0; r < 2; r++) {   /* rank r's columns [r half, (r + 1) half), contiguous */
        shard[r] = malloc((size_t)(rows * half) * sizeof(float));
        st[r] = nanv((size_t)(3 * rows));
        assert_non_null(shard[r]);
        for (int64_t i = 0; i < rows; i++)
            memcpy(shard[r] + i * half, x + i * V + r * half, (size_t)half * sizeof(float));
        pdbx_k_xent_fwd(NULL, shard[r], t, rows, half, r * half, st[r]);
    }
    double sum = 0;
    for (int64_t i = 0; i < rows; i++) {   /* the all-reduces: max, then the sums at that max */
        const double m = fmax(st[0][i], st[1][i]);
        const double s = st[0][rows + i] * exp(st[0][i] - m) + st[1][rows + i] * exp(st[1][i] - m);
        const double tl = (double)st[0][2 * rows + i] + st[1][2 * rows + i];
        assert_true(tl == x[i * V + t[i]]);   /* exactly one shard holds each target */
        sum += log(s) + m - tl;
    }
    const double want = ref_loss(x, t, rows, V);
    assert_true(fabs(sum / rows - want) <= 2e-6 * fabs(want));
    for (int r = 0; r < 2; r++)
        free(shard[r]), free(st[r]);
    free(x), free(t);
}

static void test_backward(void **state)
{
    (void)state;
    const int64_t rows = 4, n = 257;
    const float scale = 1.0f / (float)rows;
    float *x = randv((size_t)(rows * n), 4.0f, 21);
    float *g = malloc((size_t)(rows * n) * sizeof *g);
    int32_t *t = targets(rows, n, 23);
    float *st = nanv((size_t)(3 * rows));
    assert_non_null(g);
    memcpy(g, x, (size_t)(rows * n) * sizeof *g);
    pdbx_k_xent_fwd(NULL, x, t, rows, n, 0, st);
    pdbx_k_xent_bwd(NULL, g, t, rows, n, 0, st, scale);
    for (int64_t i = 0; i < rows; i++) {
        double m = -INFINITY, s = 0, row = 0;
        for (int64_t j = 0; j < n; j++)
            m = fmax(m, x[i * n + j]);
        for (int64_t j = 0; j < n; j++)
            s += exp((double)x[i * n + j] - m);
        for (int64_t j = 0; j < n; j++) {
            const double want = (exp((double)x[i * n + j] - m) / s - (j == t[i])) * scale;
            assert_true(fabs(g[i * n + j] - want) <= 1e-7);
            row += g[i * n + j];
        }
        assert_true(fabs(row) <= 1e-6);   /* softmax sums to the one-hot's 1 */
    }
    /* central differences of the mean loss at every 17th logit, the target's among them */
    for (int64_t k = 0; k < rows * n; k += 17) {
        const int64_t i = k / n;
        const int64_t at[2] = { k, i * n + t[i] };
        for (int w = 0; w < 2; w++) {
            const float keep = x[at[w]], h = 1e-2f;
            x[at[w]] = keep + h;
            const double lp = ref_loss(x, t, rows, n);
            x[at[w]] = keep - h;
            const double lm = ref_loss(x, t, rows, n);
            x[at[w]] = keep;
            assert_true(fabs((lp - lm) / (2.0 * h) - g[at[w]]) <= 2e-5);
        }
    }
    free(x), free(g), free(t), free(st);
}

static void test_threads_same_bits(void **state)
{
    (void)state;
    const int64_t shapes[][2] = { { 37, 300 }, { 6, 70001 } };   /* many rows a chunk; one */
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(3);
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        const int64_t rows = shapes[c][0], n = shapes[c][1];
        const size_t len = (size_t)(rows * n);
        float *x = randv(len, 5.0f, 31 + c), *a = malloc(len * sizeof *a), *b = malloc(len * sizeof *b);
        float *sa = nanv((size_t)(3 * rows)), *sb = nanv((size_t)(3 * rows));
        int32_t *t = targets(rows, n, 37);
        assert_non_null(a);
        assert_non_null(b);
        memcpy(a, x, len * sizeof *a);
        memcpy(b, x, len * sizeof *b);
        pdbx_k_xent_fwd(NULL, x, t, rows, n, 0, sa);
        pdbx_k_xent_fwd(pool, x, t, rows, n, 0, sb);
        assert_memory_equal(sa, sb, (size_t)(3 * rows) * sizeof *sa);
        pdbx_k_xent_bwd(NULL, a, t, rows, n, 0, sa, 0.5f);
        pdbx_k_xent_bwd(pool, b, t, rows, n, 0, sb, 0.5f);
        assert_memory_equal(a, b, len * sizeof *a);
        free(x), free(a), free(b), free(sa), free(sb), free(t);
    }
    pdbx_cpu_pool_destroy(pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward_stats),
        cmocka_unit_test(test_vocab_parallel_combines),
        cmocka_unit_test(test_backward),
        cmocka_unit_test(test_threads_same_bits),
    };
    return cmocka_run_group_tests_name("engine_kernels_loss", tests, NULL, NULL);
}
