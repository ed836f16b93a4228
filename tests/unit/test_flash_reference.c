/* test_flash_reference.c: the algorithm of the cuda backend's fused attention forward
 * (engine/backends/cuda/cuda_flash.cu) mirrored in C and checked against the naive
 * softmax(scale Q K^T, causal) V on random data, in the backend's layouts (q, out
 * [seq, mbs, heads, d]; k, v [seq, mbs, kv_heads, d]; GQA), with small tiles so that sequences
 * span several tiles and end in a partial one.
 *
 * What this proves and what it does not: the tiling, the skipped tiles above the diagonal, the
 * element mask on the diagonal tile, the online-softmax rescaling (m, l, alpha) and the GQA
 * head mapping, and that the tiles it visits are what pdbx_attn_core_executed_flops counts.
 * It runs on the host in fp32/double: the GPU kernel itself (wmma fragments, shared memory,
 * rounding of P to bf16/fp16) is checked against the unfused path only by
 * tests/cuda/test_cuda_kernels.c on a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/plan/plan.h"

typedef struct {
    int mbs, seq, heads, kv_heads, d;
} dims;

static size_t row(const dims *x, int pos, int b, int head, int nheads)
{
    return ((size_t)(pos * x->mbs + b) * (size_t)nheads + (size_t)head) * (size_t)x->d;
}

/* Deterministic values in [-2, 2): large enough that exp() ranges widely. */
static void fill(float *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)(seed >> 8) / (float)(1u << 24) * 4.0f - 2.0f;
    }
}

static void naive(const dims *x, const float *q, const float *k, const float *v, double *out)
{
    const int group = x->heads / x->kv_heads;
    const double scale = 1.0 / sqrt((double)x->d);
    double *p = malloc(sizeof *p * (size_t)x->seq);
    assert_non_null(p);
    for (int b = 0; b < x->mbs; b++)
        for (int h = 0; h < x->heads; h++)
            for (int i = 0; i < x->seq; i++) {
                const float *qr = q + row(x, i, b, h, x->heads);
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j <= i; j++) {
                    const float *kr = k + row(x, j, b, h / group, x->kv_heads);
                    double dot = 0;
                    for (int e = 0; e < x->d; e++)
                        dot += (double)qr[e] * kr[e];
                    p[j] = dot * scale;
                    mx = fmax(mx, p[j]);
                }
                for (int j = 0; j <= i; j++)
                    sum += (p[j] = exp(p[j] - mx));
                double *o = out + row(x, i, b, h, x->heads);
                for (int e = 0; e < x->d; e++) {
                    double acc = 0;
                    for (int j = 0; j <= i; j++)
                        acc += p[j] * v[row(x, j, b, h / group, x->kv_heads) + (size_t)e];
                    o[e] = acc / sum;
                }
            }
    free(p);
}

/* The kernel's loop for one (b, h) and query tile, all its rows at once as the block does:
 * tiles kt = 0..qt, exp2 of log2e-scaled scores, base 0 for a row with nothing yet. Returns
 * the tiles visited. */
static long flash_mirror(const dims *x, int tile, const float *q, const float *k, const float *v,
                         float *out)
{
    const int group = x->heads / x->kv_heads, nq = (x->seq + tile - 1) / tile;
    const float scale_log2 = 1.4426950408889634f / sqrtf((float)x->d);
    float *S = malloc(sizeof *S * (size_t)tile * (size_t)tile);
    float *O = malloc(sizeof *O * (size_t)tile * (size_t)x->d);
    float *m = malloc(sizeof *m * (size_t)tile), *l = malloc(sizeof *l * (size_t)tile);
    assert_true(S && O && m && l);
    long tiles = 0;
    for (int b = 0; b < x->mbs; b++)
        for (int h = 0; h < x->heads; h++) {
            const int g = h / group;
            for (int qt = nq - 1; qt >= 0; qt--) {
                const int q0 = qt * tile;
                memset(O, 0, sizeof *O * (size_t)tile * (size_t)x->d);
                for (int r = 0; r < tile; r++) {
                    m[r] = -INFINITY;
                    l[r] = 0;
                }
                for (int kt = 0; kt <= qt; kt++, tiles++) {
                    const int k0 = kt * tile;
                    for (int r = 0; r < tile; r++)   /* S = Q K^T (zero rows past seq) */
                        for (int c = 0; c < tile; c++) {
                            float dot = 0;
                            if (q0 + r < x->seq && k0 + c < x->seq)
                                for (int e = 0; e < x->d; e++)
                                    dot += q[row(x, q0 + r, b, h, x->heads) + (size_t)e] *
                                           k[row(x, k0 + c, b, g, x->kv_heads) + (size_t)e];
                            S[r * tile + c] = dot;
                        }
                    for (int r = 0; r < tile; r++) {
                        const int qi = q0 + r;
                        float tmax = -INFINITY;
                        for (int c = 0; c < tile; c++) {
                            int j = k0 + c;
                            float s = (j <= qi && j < x->seq) ? S[r * tile + c] * scale_log2 : -INFINITY;
                            tmax = fmaxf(tmax, s);
                        }
                        const float mnew = fmaxf(m[r], tmax);
                        const float base = mnew == -INFINITY ? 0.0f : mnew;
                        const float alpha = m[r] == -INFINITY ? 0.0f : exp2f(m[r] - base);
                        float rsum = 0;
                        for (int e = 0; e < x->d; e++)
                            O[r * x->d + e] *= alpha;
                        for (int c = 0; c < tile; c++) {
                            int j = k0 + c;
                            float p = (j <= qi && j < x->seq) ? exp2f(S[r * tile + c] * scale_log2 - base)
                                                              : 0.0f;
                            rsum += p;
                            if (p != 0.0f)
                                for (int e = 0; e < x->d; e++)
                                    O[r * x->d + e] += p * v[row(x, j, b, g, x->kv_heads) + (size_t)e];
                        }
                        l[r] = l[r] * alpha + rsum;
                        m[r] = mnew;
                    }
                }
                for (int r = 0; r < tile && q0 + r < x->seq; r++)
                    for (int e = 0; e < x->d; e++)
                        out[row(x, q0 + r, b, h, x->heads) + (size_t)e] = O[r * x->d + e] / l[r];
            }
        }
    free(S);
    free(O);
    free(m);
    free(l);
    return tiles;
}

static void check(dims x, int tile, uint32_t seed)
{
    const size_t nq = (size_t)x.seq * x.mbs * x.heads * x.d, nk = (size_t)x.seq * x.mbs * x.kv_heads * x.d;
    float *q = calloc(nq, sizeof *q), *k = calloc(nk, sizeof *k), *v = calloc(nk, sizeof *v);
    float *out = malloc(nq * sizeof *out);
    double *ref = malloc(nq * sizeof *ref);
    assert_true(q && k && v && out && ref);
    fill(q, nq, seed);
    fill(k, nk, seed + 1);
    fill(v, nk, seed + 2);
    naive(&x, q, k, v, ref);
    long tiles = flash_mirror(&x, tile, q, k, v, out);
    double maxerr = 0;
    for (size_t i = 0; i < nq; i++)
        maxerr = fmax(maxerr, fabs((double)out[i] - ref[i]));
    assert_true(maxerr < 1e-5);
    /* the visited tiles are what the executed-FLOPs formula counts */
    const long nqt = (x.seq + tile - 1) / tile;
    assert_int_equal(tiles, (long)x.mbs * x.heads * nqt * (nqt + 1) / 2);
    assert_true(pdbx_attn_core_executed_flops(1, PDBX_PASS_FWD, (int64_t)x.mbs * x.heads, x.seq, x.d,
                                              tile) ==
                4.0 * (double)tiles * tile * tile * x.d);
    free(q);
    free(k);
    free(v);
    free(out);
    free(ref);
}

/* one tile, exactly full */
static void test_single_tile(void **state)
{
    (void)state;
    check((dims){1, 8, 1, 1, 8}, 8, 1);
}

/* several tiles, a partial last one (seq 37 = 4 * 8 + 5), mbs 2 */
static void test_partial_tile(void **state)
{
    (void)state;
    check((dims){2, 37, 2, 2, 16}, 8, 2);
}

/* GQA: 6 q heads on 2 kv heads, seq shorter than a tile, and long rows with tile 4 */
static void test_gqa(void **state)
{
    (void)state;
    check((dims){2, 5, 6, 2, 8}, 8, 3);
    check((dims){1, 50, 4, 1, 8}, 4, 4);
}

/* scores spread wide (q and k scaled up): the rescaling must keep exp() finite */
static void test_large_scores(void **state)
{
    (void)state;
    dims x = {1, 24, 2, 1, 4};
    const size_t nq = 24 * 2 * 4, nk = 24 * 4;
    float *q = calloc(nq, sizeof *q), *k = calloc(nk, sizeof *k), *v = calloc(nk, sizeof *v);
    float *out = malloc(nq * sizeof *out);
    double *ref = malloc(nq * sizeof *ref);
    assert_true(q && k && v && out && ref);
    fill(q, nq, 9);
    fill(k, nk, 10);
    fill(v, nk, 11);
    for (size_t i = 0; i < nq; i++)
        q[i] *= 20.0f;   /* scores up to +-640 / 2: exp overflows without the running max */
    for (size_t i = 0; i < nk; i++)
        k[i] *= 4.0f;
    naive(&x, q, k, v, ref);
    flash_mirror(&x, 8, q, k, v, out);
    for (size_t i = 0; i < nq; i++) {
        assert_true(isfinite(out[i]));
        assert_true(fabs((double)out[i] - ref[i]) < 1e-4);
    }
    free(q);
    free(k);
    free(v);
    free(out);
    free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_tile),
        cmocka_unit_test(test_partial_tile),
        cmocka_unit_test(test_gqa),
        cmocka_unit_test(test_large_scores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
