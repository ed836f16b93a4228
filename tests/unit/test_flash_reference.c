/* test_flash_reference.c: the algorithms of the cuda backend's fused attention forward
 * (engine/backends/cuda/cuda_flash.cu) and backward (cuda_flash_bwd.cu, FlashAttention-2)
 * mirrored in C and checked against the naive softmax(scale Q K^T, causal) V and its textbook
 * gradients on random data, in the backend's layouts (q, out [seq, mbs, heads, d]; k, v
 * [seq, mbs, kv_heads, d]; GQA), with small tiles so that sequences span several tiles and end
 * in a partial one.
 *
 * What this proves and what it does not: the tiling, the skipped tiles above the diagonal, the
 * element mask on the diagonal tile, the online-softmax rescaling (m, l, alpha) and the GQA
 * head mapping, and that the tiles it visits are what pdbx_attn_core_executed_flops counts.
 * Backward: the log-sum-exp the forward saves (base 2 of the log2e-scaled scores), delta =
 * rowsum(dO o O), the loop per key tile over the group's q heads and the query tiles on and
 * below the diagonal, P recomputed from the lse, dS = P (dP - delta), dK and dV summed over the
 * group in the block, dQ accumulated across key tiles (the kernel's atomics), the scale on dQ
 * and dK. It runs on the host in fp32/double: the GPU kernels themselves (wmma fragments,
 * shared memory, rounding of P and dS to bf16/fp16) are checked against the unfused path only
 * by tests/cuda/test_cuda_kernels.c and test_cuda_kernels_bwd.c on a GPU. */
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
                         float *out, float *lse)
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
                for (int r = 0; r < tile && q0 + r < x->seq; r++) {
                    for (int e = 0; e < x->d; e++)
                        out[row(x, q0 + r, b, h, x->heads) + (size_t)e] = O[r * x->d + e] / l[r];
                    if (lse)   /* the forward's saved log-sum-exp, [mbs, heads, seq] */
                        lse[((size_t)b * x->heads + h) * x->seq + q0 + r] = m[r] + log2f(l[r]);
                }
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
    long tiles = flash_mirror(&x, tile, q, k, v, out, NULL);
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
    flash_mirror(&x, 8, q, k, v, out, NULL);
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

/* ---- backward ------------------------------------------------------------------------------ */

/* Textbook gradients of L = sum dO o attention(q, k, v), in double. */
static void naive_bwd(const dims *x, const float *q, const float *k, const float *v, const float *dO,
                      double *dq, double *dk, double *dv)
{
    const int group = x->heads / x->kv_heads;
    const double scale = 1.0 / sqrt((double)x->d);
    const size_t nq = (size_t)x->seq * x->mbs * x->heads * x->d, nk = nq / (size_t)group;
    memset(dq, 0, nq * sizeof *dq);
    memset(dk, 0, nk * sizeof *dk);
    memset(dv, 0, nk * sizeof *dv);
    double *p = malloc(sizeof *p * (size_t)x->seq), *dp = malloc(sizeof *dp * (size_t)x->seq);
    assert_true(p && dp);
    for (int b = 0; b < x->mbs; b++)
        for (int h = 0; h < x->heads; h++)
            for (int i = 0; i < x->seq; i++) {
                const size_t qi = row(x, i, b, h, x->heads);
                double mx = -INFINITY, sum = 0, D = 0;
                for (int j = 0; j <= i; j++) {
                    double dot = 0;
                    for (int e = 0; e < x->d; e++)
                        dot += (double)q[qi + (size_t)e] * k[row(x, j, b, h / group, x->kv_heads) + (size_t)e];
                    p[j] = dot * scale;
                    mx = fmax(mx, p[j]);
                }
                for (int j = 0; j <= i; j++)
                    sum += (p[j] = exp(p[j] - mx));
                for (int j = 0; j <= i; j++) {
                    const size_t kj = row(x, j, b, h / group, x->kv_heads);
                    p[j] /= sum;
                    dp[j] = 0;
                    for (int e = 0; e < x->d; e++) {
                        dp[j] += (double)dO[qi + (size_t)e] * v[kj + (size_t)e];
                        dv[kj + (size_t)e] += p[j] * dO[qi + (size_t)e];
                    }
                    D += p[j] * dp[j];
                }
                for (int j = 0; j <= i; j++) {
                    const size_t kj = row(x, j, b, h / group, x->kv_heads);
                    const double ds = p[j] * (dp[j] - D) * scale;
                    for (int e = 0; e < x->d; e++) {
                        dq[qi + (size_t)e] += ds * k[kj + (size_t)e];
                        dk[kj + (size_t)e] += ds * q[qi + (size_t)e];
                    }
                }
            }
    free(p);
    free(dp);
}

typedef struct {
    const float *q, *k, *v, *out, *dO, *lse;
    float *dq, *dk, *dv;
} bwd_io;

/* One block of the kernel: key tile kt of (b, kv head g), the group's q heads and the query
 * tiles qt >= kt in turn, dK and dV accumulated in the block, dQ added into io->dq (which the
 * kernel zeroes first and adds to with atomics). delta: [mbs, heads, seq]. Returns the tile
 * pairs visited. */
static long bwd_block(const dims *x, int tile, const bwd_io *io, const float *delta, int b, int g,
                      int kt, float *dK, float *dV, float *S, float *dP)
{
    const int group = x->heads / x->kv_heads, nt = (x->seq + tile - 1) / tile, k0 = kt * tile;
    const float scale = 1.0f / sqrtf((float)x->d), scale_log2 = 1.4426950408889634f * scale;
    long pairs = 0;
    memset(dK, 0, sizeof *dK * (size_t)tile * (size_t)x->d);
    memset(dV, 0, sizeof *dV * (size_t)tile * (size_t)x->d);
    for (int jj = 0; jj < group; jj++) {
        const int h = g * group + jj;
        for (int qt = kt; qt < nt; qt++, pairs++) {
            const int q0 = qt * tile;
            for (int r = 0; r < tile; r++)   /* S = Q K^T and dP = dO V^T, zero rows past seq */
                for (int c = 0; c < tile; c++) {
                    float s = 0, dp = 0;
                    if (q0 + r < x->seq && k0 + c < x->seq)
                        for (int e = 0; e < x->d; e++) {
                            const size_t qe = row(x, q0 + r, b, h, x->heads) + (size_t)e;
                            const size_t ke = row(x, k0 + c, b, g, x->kv_heads) + (size_t)e;
                            s += io->q[qe] * io->k[ke];
                            dp += io->dO[qe] * io->v[ke];
                        }
                    S[r * tile + c] = s;
                    dP[r * tile + c] = dp;
                }
            for (int r = 0; r < tile; r++)   /* P from the lse, then dS in place of dP */
                for (int c = 0; c < tile; c++) {
                    const int qi = q0 + r, kj = k0 + c;
                    const size_t li = ((size_t)b * x->heads + h) * x->seq + (size_t)qi;
                    const float p = (kj <= qi && qi < x->seq) ? exp2f(S[r * tile + c] * scale_log2 - io->lse[li]) : 0.0f;
                    S[r * tile + c] = p;
                    dP[r * tile + c] = p * (dP[r * tile + c] - (qi < x->seq ? delta[li] : 0.0f));
                }
            for (int c = 0; c < tile; c++)   /* dV += P^T dO, dK += dS^T Q */
                for (int r = 0; r < tile && q0 + r < x->seq; r++)
                    for (int e = 0; e < x->d; e++) {
                        const size_t qe = row(x, q0 + r, b, h, x->heads) + (size_t)e;
                        dV[c * x->d + e] += S[r * tile + c] * io->dO[qe];
                        dK[c * x->d + e] += dP[r * tile + c] * io->q[qe];
                    }
            for (int r = 0; r < tile && q0 + r < x->seq; r++)   /* dQ += scale dS K */
                for (int e = 0; e < x->d; e++) {
                    float acc = 0;
                    for (int c = 0; c < tile && k0 + c < x->seq; c++)
                        acc += dP[r * tile + c] * io->k[row(x, k0 + c, b, g, x->kv_heads) + (size_t)e];
                    io->dq[row(x, q0 + r, b, h, x->heads) + (size_t)e] += acc * scale;
                }
        }
    }
    for (int c = 0; c < tile && k0 + c < x->seq; c++)
        for (int e = 0; e < x->d; e++) {
            io->dk[row(x, k0 + c, b, g, x->kv_heads) + (size_t)e] = dK[c * x->d + e] * scale;
            io->dv[row(x, k0 + c, b, g, x->kv_heads) + (size_t)e] = dV[c * x->d + e];
        }
    return pairs;
}

/* The kernel's three launches: delta per query row, the blocks (every b, kv head, key tile),
 * dQ as accumulated. Returns the tile pairs visited. */
static long flash_bwd_mirror(const dims *x, int tile, const bwd_io *io)
{
    const size_t rows = (size_t)x->mbs * x->heads * x->seq;
    const size_t nq = (size_t)x->seq * x->mbs * x->heads * x->d;
    float *delta = malloc(sizeof *delta * rows), *dK = malloc(sizeof *dK * (size_t)tile * (size_t)x->d);
    float *dV = malloc(sizeof *dV * (size_t)tile * (size_t)x->d);
    float *S = malloc(sizeof *S * (size_t)tile * (size_t)tile), *dP = malloc(sizeof *dP * (size_t)tile * (size_t)tile);
    assert_true(delta && dK && dV && S && dP);
    for (int b = 0; b < x->mbs; b++)
        for (int h = 0; h < x->heads; h++)
            for (int i = 0; i < x->seq; i++) {
                float dot = 0;
                for (int e = 0; e < x->d; e++)
                    dot += io->dO[row(x, i, b, h, x->heads) + (size_t)e] * io->out[row(x, i, b, h, x->heads) + (size_t)e];
                delta[((size_t)b * x->heads + h) * x->seq + (size_t)i] = dot;
            }
    memset(io->dq, 0, nq * sizeof *io->dq);
    long pairs = 0;
    const int nt = (x->seq + tile - 1) / tile;
    for (int b = 0; b < x->mbs; b++)
        for (int g = 0; g < x->kv_heads; g++)
            for (int kt = 0; kt < nt; kt++)
                pairs += bwd_block(x, tile, io, delta, b, g, kt, dK, dV, S, dP);
    free(delta);
    free(dK);
    free(dV);
    free(S);
    free(dP);
    return pairs;
}

static void check_bwd(dims x, int fwd_tile, int bwd_tile, uint32_t seed)
{
    const size_t nq = (size_t)x.seq * x.mbs * x.heads * x.d, nk = (size_t)x.seq * x.mbs * x.kv_heads * x.d;
    float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nk * sizeof *v);
    float *out = malloc(nq * sizeof *out), *dO = malloc(nq * sizeof *dO);
    float *lse = malloc(sizeof *lse * (size_t)x.mbs * x.heads * x.seq);
    float *dq = malloc(nq * sizeof *dq), *dk = malloc(nk * sizeof *dk), *dv = malloc(nk * sizeof *dv);
    double *rq = malloc(nq * sizeof *rq), *rk = malloc(nk * sizeof *rk), *rv = malloc(nk * sizeof *rv);
    assert_true(q && k && v && out && dO && lse && dq && dk && dv && rq && rk && rv);
    fill(q, nq, seed);
    fill(k, nk, seed + 1);
    fill(v, nk, seed + 2);
    fill(dO, nq, seed + 3);
    flash_mirror(&x, fwd_tile, q, k, v, out, lse);
    const bwd_io io = {q, k, v, out, dO, lse, dq, dk, dv};
    const long pairs = flash_bwd_mirror(&x, bwd_tile, &io);
    naive_bwd(&x, q, k, v, dO, rq, rk, rv);
    double err_q = 0, err_k = 0, err_v = 0, mag = 0;
    for (size_t i = 0; i < nq; i++) {
        err_q = fmax(err_q, fabs((double)dq[i] - rq[i]));
        mag = fmax(mag, fabs(rq[i]));
    }
    for (size_t i = 0; i < nk; i++) {
        err_k = fmax(err_k, fabs((double)dk[i] - rk[i]));
        err_v = fmax(err_v, fabs((double)dv[i] - rv[i]));
    }
    if (!(err_q < 1e-4 && err_k < 1e-4 && err_v < 1e-4))
        fail_msg("flash bwd mirror: max |err| dq %g dk %g dv %g (gradients up to %g)", err_q, err_k, err_v, mag);
    assert_true(mag > 0.1);   /* the gradients are not trivially small */
    /* the visited tile pairs are what the executed-FLOPs formula counts, at the kernel's tile */
    const long nt = (x.seq + bwd_tile - 1) / bwd_tile;
    assert_int_equal(pairs, (long)x.mbs * x.heads * nt * (nt + 1) / 2);
    if (bwd_tile == PDBX_FLASH_BWD_TILE)
        assert_true(pdbx_attn_core_executed_flops(1, PDBX_PASS_BWD, (int64_t)x.mbs * x.heads, x.seq, x.d,
                                                  PDBX_FLASH_TILE) ==
                    10.0 * (double)pairs * bwd_tile * bwd_tile * x.d);
    free(q), free(k), free(v), free(out), free(dO), free(lse), free(dq), free(dk), free(dv);
    free(rq), free(rk), free(rv);
}

/* the fused backward: one tile, several with a partial last one, GQA groups 1 to 6, MQA,
 * forward and backward tiles that differ (the lse does not depend on the forward's tiling),
 * and the kernel's own tile (32) for the executed FLOPs */
static void test_bwd(void **state)
{
    (void)state;
    check_bwd((dims){1, 8, 1, 1, 8}, 8, 8, 21);
    check_bwd((dims){2, 37, 2, 2, 16}, 8, 4, 22);
    check_bwd((dims){2, 13, 6, 2, 8}, 4, 8, 23);
    check_bwd((dims){1, 50, 4, 1, 8}, 16, 4, 24);
    check_bwd((dims){1, 70, 2, 1, 8}, 64, PDBX_FLASH_BWD_TILE, 25);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_tile),
        cmocka_unit_test(test_partial_tile),
        cmocka_unit_test(test_gqa),
        cmocka_unit_test(test_large_scores),
        cmocka_unit_test(test_bwd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
