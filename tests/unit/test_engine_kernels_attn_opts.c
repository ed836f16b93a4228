/* test_engine_kernels_attn_opts.c: the attention core's sliding window and logit soft-capping
 * (cpu_kernels_attn.h) forward and backward against a naive double-precision reference (the
 * whole score matrix, the band i - window < j <= i, cap tanh(s / cap), softmax, P V with v's
 * head dim dv apart from q/k's d (MLA); dQ, dK, dV by the analytic formulas, themselves
 * checked against finite differences), and the
 * final-logit soft-capping against double tanh.
 *
 * Tolerances, norm-wise: |got - want| <= tol x the largest |want| of the tensor (an output
 * is a sum of terms of both signs, dS = P (dP - D) a difference, so no fp32 kernel has an
 * element-wise relative bound where they cancel):
 *  - forward 1e-5. A score's fp32 dot product is uncertain by ~ulp of its partial sums and
 *    P's relative error is the scores' absolute error (plus pdbx_k_exp's 2e-7 and the capped
 *    scores' pdbx_k_tanh 1.5e-7 relative, up to 7.5e-6 absolute at cap 50). Measured (each
 *    clone): <= 5e-7 with ordinary scores (|s| <= 12), <= 4.9e-6 with cap 50 and scores to 62
 *    before the cap (ulp(50) = 3.8e-6 alone: the worst case of fp32 here, 2x inside); <= 8.2e-6
 *    with MLA's d 192 (q . k over 192 terms of up to 40 x 1: larger partial sums).
 *  - backward 1e-4: dS cancels where dP_ij is near its row's D, dK and dV sum up to 4 heads x
 *    300 rows; measured <= 2.5e-6 (cap 50), <= 6e-7 otherwise.
 * Bits: opts {0, 0, 0}, NULL, a window >= seq_len, dv = d and negative options give the bits of
 * pdbx_k_attention_causal and pdbx_k_attention_causal_bwd (the old entry points, now thin
 * wrappers; bench/attn_opts.sh with BASE=<commit> compares them with the kernels before the
 * options existed), and 1 and 3 threads give the same bits. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_attn.h"
#include "engine/backends/cpu/cpu_kernels_bwd.h"
#include "tests/unit/test_kernel_util.h"

#define FWD_TOL 1e-5
#define BWD_TOL 1e-4

typedef struct {
    int64_t seqs, S, H, KV, d, window;
    float cap, qscale;   /* qscale: q's range, so the scores reach past the cap */
    int64_t dv;          /* v's head dim; 0: d */
} shape;

static int64_t dv_of(const shape *x)
{
    return x->dv > 0 ? x->dv : x->d;
}

typedef struct {
    size_t nq, nk, no, nv;           /* q/dq, k/dk, out/dO, v/dv elements */
    float *q, *k, *v, *dO;           /* inputs */
    float *out, *dq, *dk, *dv;       /* the kernels' */
    double *rout, *rdq, *rdk, *rdv;  /* the reference's */
} bufs;

static void bufs_init(bufs *b, const shape *x)
{
    b->nq = (size_t)(x->seqs * x->S * x->H * x->d);
    b->nk = (size_t)(x->seqs * x->S * x->KV * x->d);
    b->no = (size_t)(x->seqs * x->S * x->H * dv_of(x));
    b->nv = (size_t)(x->seqs * x->S * x->KV * dv_of(x));
    b->q = randv(b->nq, x->qscale, 11);
    b->k = randv(b->nk, 1.0f, 12);
    b->v = randv(b->nv, 1.0f, 13);
    b->dO = randv(b->no, 1.0f, 14);
    b->out = nanv(b->no), b->dq = nanv(b->nq), b->dk = nanv(b->nk), b->dv = nanv(b->nv);
    b->rout = calloc(b->no, sizeof(double)), b->rdq = calloc(b->nq, sizeof(double));
    b->rdk = calloc(b->nk, sizeof(double)), b->rdv = calloc(b->nv, sizeof(double));
    assert_true(b->rout && b->rdq && b->rdk && b->rdv);
}

static void bufs_free(bufs *b)
{
    free(b->q), free(b->k), free(b->v), free(b->dO), free(b->out), free(b->dq), free(b->dk);
    free(b->dv), free(b->rout), free(b->rdq), free(b->rdk), free(b->rdv);
}

/* ---- the reference ------------------------------------------------------------------------ */
static int64_t first_key(int64_t i, int64_t window)
{
    return window > 0 && i - window + 1 > 0 ? i - window + 1 : 0;
}

static double ref_smax;   /* the largest |score| before the cap the reference met */

/* Row i of one (sequence, head): P over keys [lo, i] (p[j - lo]), and the cap's derivative
 * dc/ds of each score (1 without a cap) in g. Returns lo. */
static int64_t ref_probs(const double *q, const double *k, const shape *x, int64_t s, int64_t h,
                         int64_t i, double *p, double *g)
{
    const int64_t d = x->d, kh = h / (x->H / x->KV), lo = first_key(i, x->window);
    const double *qi = q + (s * x->S + i) * x->H * d + h * d;
    double m = -INFINITY, sum = 0;
    for (int64_t j = lo; j <= i; j++) {
        const double *kj = k + (s * x->S + j) * x->KV * d + kh * d;
        double dot = 0;
        for (int64_t c = 0; c < d; c++)
            dot += qi[c] * kj[c];
        double sc = dot / sqrt((double)d);
        ref_smax = fmax(ref_smax, fabs(sc));
        g[j - lo] = 1;
        if (x->cap > 0) {
            const double t = tanh(sc / x->cap);
            sc = x->cap * t;
            g[j - lo] = 1 - t * t;
        }
        p[j - lo] = sc;
        m = fmax(m, sc);
    }
    for (int64_t j = lo; j <= i; j++)
        sum += p[j - lo] = exp(p[j - lo] - m);
    for (int64_t j = lo; j <= i; j++)
        p[j - lo] /= sum;
    return lo;
}

/* out = P V; with dO: dV_j += P_ij dO_i, dP_ij = dO_i . V_j, D_i = sum_j P_ij dP_ij,
 * dS_ij = P_ij (dP_ij - D_i) g_ij, dQ_i = scale sum_j dS_ij K_j, dK_j += scale dS_ij Q_i
 * (dk, dv summed over the heads of a kv head). q, k, dq, dk of head dim d; v, out, dO, dv of
 * dv (MLA). All in double. */
static void reference(const double *q, const double *k, const double *v, const double *dO,
                      const shape *x, double *out, double *dq, double *dk, double *dv)
{
    const int64_t S = x->S, d = x->d, e = dv_of(x), qs = x->H * d, ks = x->KV * d;
    const int64_t os = x->H * e, vs = x->KV * e;
    const double scale = 1 / sqrt((double)d);
    double *p = malloc((size_t)S * sizeof *p), *g = malloc((size_t)S * sizeof *g);
    double *dp = malloc((size_t)S * sizeof *dp);
    if (dk) {
        memset(dk, 0, (size_t)(x->seqs * S * ks) * sizeof *dk);
        memset(dv, 0, (size_t)(x->seqs * S * vs) * sizeof *dv);
    }
    for (int64_t s = 0; s < x->seqs; s++)
        for (int64_t h = 0; h < x->H; h++)
            for (int64_t i = 0; i < S; i++) {
                const int64_t kh = h / (x->H / x->KV), lo = ref_probs(q, k, x, s, h, i, p, g);
                const int64_t qo = (s * S + i) * qs + h * d, oo = (s * S + i) * os + h * e;
                for (int64_t c = 0; c < e && out; c++) {
                    double acc = 0;
                    for (int64_t j = lo; j <= i; j++)
                        acc += p[j - lo] * v[(s * S + j) * vs + kh * e + c];
                    out[oo + c] = acc;
                }
                if (!dO)
                    continue;
                double D = 0;
                for (int64_t j = lo; j <= i; j++) {
                    const double *vj = v + (s * S + j) * vs + kh * e;
                    double a = 0;
                    for (int64_t c = 0; c < e; c++)
                        a += dO[oo + c] * vj[c];
                    dp[j - lo] = a;
                    D += p[j - lo] * a;
                }
                for (int64_t c = 0; c < d; c++)
                    dq[qo + c] = 0;
                for (int64_t j = lo; j <= i; j++) {
                    const double ds = p[j - lo] * (dp[j - lo] - D) * g[j - lo] * scale;
                    const int64_t ko = (s * S + j) * ks + kh * d, vo = (s * S + j) * vs + kh * e;
                    for (int64_t c = 0; c < d; c++) {
                        dq[qo + c] += ds * k[ko + c];
                        dk[ko + c] += ds * q[qo + c];
                    }
                    for (int64_t c = 0; c < e; c++)
                        dv[vo + c] += p[j - lo] * dO[oo + c];
                }
            }
    free(p), free(g), free(dp);
}

static double *to_double(const float *x, size_t n)
{
    double *o = malloc(n * sizeof *o);
    assert_non_null(o);
    for (size_t i = 0; i < n; i++)
        o[i] = x[i];
    return o;
}

static void run_reference(bufs *b, const shape *x)
{
    double *q = to_double(b->q, b->nq), *k = to_double(b->k, b->nk), *v = to_double(b->v, b->nv);
    double *dO = to_double(b->dO, b->no);
    reference(q, k, v, dO, x, b->rout, b->rdq, b->rdk, b->rdv);
    free(q), free(k), free(v), free(dO);
}

/* The largest error of got against want relative to the largest |want| (norm-wise); fails
 * past tol. */
static double check(const float *got, const double *want, size_t n, double tol, const char *what)
{
    double scale = 1e-30, worst = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < n; i++) {
        const double e = fabs(got[i] - want[i]) / scale;
        if (!(e <= tol)) {   /* NaN fails too */
            print_error("%s[%zu]: got %.9g, want %.9g (error %.3g > %.3g)\n", what, i, got[i],
                        want[i], e, tol);
            fail();
        }
        worst = fmax(worst, e);
    }
    return worst;
}

/* ---- the kernels -------------------------------------------------------------------------- */
static void run_kernels(bufs *b, const shape *x, const pdbx_attn_opts *o, int threads)
{
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(threads);
    const int64_t wide = x->d > dv_of(x) ? x->d : dv_of(x);   /* the backward's block */
    float *fs = calloc(pdbx_k_attention_scratch_floats(x->S, x->d, threads), sizeof(float));
    float *bs = calloc(pdbx_k_attention_bwd_scratch_floats(x->S, wide, threads), sizeof(float));
    assert_true(fs && bs);
    pdbx_k_attention_causal_opts(pool, b->q, b->k, b->v, x->seqs, x->S, x->H, x->KV, x->d, fs,
                                 b->out, o);
    pdbx_k_attention_causal_bwd_opts(pool, b->q, b->k, b->v, b->dO, x->seqs, x->S, x->H, x->KV,
                                     x->d, bs, b->dq, b->dk, b->dv, o);
    pdbx_cpu_pool_destroy(pool);
    free(fs), free(bs);
}

/* The kernels against the reference on shape x, and the same bits on 1 and 3 threads. */
static void check_case(const shape *x)
{
    bufs b, one;
    bufs_init(&b, x);
    bufs_init(&one, x);
    const pdbx_attn_opts o = { .window = x->window, .softcap = x->cap, .dv = x->dv };
    run_kernels(&b, x, &o, 3);
    ref_smax = 0;
    run_reference(&b, x);
    char what[128];
    snprintf(what, sizeof what, "S %lld d %lld dv %lld window %lld cap %g", (long long)x->S,
             (long long)x->d, (long long)dv_of(x), (long long)x->window, x->cap);
    const double ef = check(b.out, b.rout, b.no, FWD_TOL, what);
    double eb = check(b.dq, b.rdq, b.nq, BWD_TOL, what);
    eb = fmax(eb, check(b.dk, b.rdk, b.nk, BWD_TOL, what));
    eb = fmax(eb, check(b.dv, b.rdv, b.nv, BWD_TOL, what));
    print_message("%s: worst error fwd %.2g bwd %.2g, |scores| up to %.3g\n", what, ef, eb,
                  ref_smax);
    run_kernels(&one, x, &o, 1);
    assert_memory_equal(b.out, one.out, b.no * sizeof(float));
    assert_memory_equal(b.dq, one.dq, b.nq * sizeof(float));
    assert_memory_equal(b.dk, one.dk, b.nk * sizeof(float));
    assert_memory_equal(b.dv, one.dv, b.nv * sizeof(float));
    bufs_free(&b);
    bufs_free(&one);
}

/* ---- tests -------------------------------------------------------------------------------- */
/* The reference's analytic gradient is the derivative of its forward: central differences of
 * L = sum dO * out on a small case with a window and a cap that bites. */
static void test_reference_gradient(void **state)
{
    (void)state;
    const shape x = { .seqs = 1, .S = 12, .H = 2, .KV = 1, .d = 4, .window = 5, .cap = 1.5f,
                      .qscale = 3.0f, .dv = 3 };
    bufs b;
    bufs_init(&b, &x);
    double *q = to_double(b.q, b.nq), *k = to_double(b.k, b.nk), *v = to_double(b.v, b.nv);
    double *dO = to_double(b.dO, b.no), *out = malloc(b.no * sizeof *out);
    run_reference(&b, &x);
    double *xs[3] = { q, k, v }, *gs[3] = { b.rdq, b.rdk, b.rdv };
    const size_t ns[3] = { b.nq, b.nk, b.nv };
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < ns[t]; i++) {
            const double keep = xs[t][i], h = 1e-6;
            double l[2];
            for (int sgn = 0; sgn < 2; sgn++) {
                xs[t][i] = keep + (sgn ? -h : h);
                reference(q, k, v, NULL, &x, out, NULL, NULL, NULL);
                l[sgn] = 0;
                for (size_t e = 0; e < b.no; e++)
                    l[sgn] += dO[e] * out[e];
            }
            xs[t][i] = keep;
            assert_true(fabs((l[0] - l[1]) / (2 * h) - gs[t][i]) < 1e-7);
        }
    free(q), free(k), free(v), free(dO), free(out);
    bufs_free(&b);
}

/* opts {0, 0, 0}, NULL, window >= seq_len, dv = d and negative options: the old entry
 * points' bits. */
static void test_plain_bits(void **state)
{
    (void)state;
    const shape x = { .seqs = 2, .S = 97, .H = 4, .KV = 2, .d = 64, .qscale = 3.0f };
    const pdbx_attn_opts variants[] = { { 0, 0.0f, 0 },     { 97, 0.0f, 0 },
                                        { 1000, 0.0f, 0 },  { -3, -1.0f, -2 },
                                        { 0, 0.0f, 64 } };
    bufs ref, b;
    bufs_init(&ref, &x);
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(2);
    float *fs = calloc(pdbx_k_attention_scratch_floats(x.S, x.d, 2), sizeof(float));
    float *bs = calloc(pdbx_k_attention_bwd_scratch_floats(x.S, x.d, 2), sizeof(float));
    pdbx_k_attention_causal(pool, ref.q, ref.k, ref.v, x.seqs, x.S, x.H, x.KV, x.d, fs, ref.out);
    pdbx_k_attention_causal_bwd(pool, ref.q, ref.k, ref.v, ref.dO, x.seqs, x.S, x.H, x.KV, x.d,
                                bs, ref.dq, ref.dk, ref.dv);
    run_reference(&ref, &x);
    check(ref.out, ref.rout, ref.nq, FWD_TOL, "plain out");
    check(ref.dq, ref.rdq, ref.nq, BWD_TOL, "plain dq");
    check(ref.dk, ref.rdk, ref.nk, BWD_TOL, "plain dk");
    check(ref.dv, ref.rdv, ref.nk, BWD_TOL, "plain dv");
    for (size_t t = 0; t <= sizeof variants / sizeof variants[0]; t++) {
        const pdbx_attn_opts *o = t < sizeof variants / sizeof variants[0] ? &variants[t] : NULL;
        bufs_init(&b, &x);
        run_kernels(&b, &x, o, 2);
        assert_memory_equal(b.out, ref.out, b.nq * sizeof(float));
        assert_memory_equal(b.dq, ref.dq, b.nq * sizeof(float));
        assert_memory_equal(b.dk, ref.dk, b.nk * sizeof(float));
        assert_memory_equal(b.dv, ref.dv, b.nk * sizeof(float));
        bufs_free(&b);
    }
    pdbx_cpu_pool_destroy(pool);
    free(fs), free(bs);
    bufs_free(&ref);
}

/* Gemma-2's cap 50 over full causal attention, scores past the cap (q up to 40: |s| to ~60,
 * where the cap bends them to ~42), and a cap of 5 that bends ordinary scores (|s| to 12); an
 * odd head_dim (the output's column tail). */
static void test_softcap_causal(void **state)
{
    (void)state;
    check_case(&(shape){ .seqs = 2, .S = 130, .H = 4, .KV = 2, .d = 64, .cap = 50.0f,
                         .qscale = 40.0f });
    check_case(&(shape){ .seqs = 1, .S = 100, .H = 4, .KV = 2, .d = 64, .cap = 5.0f,
                         .qscale = 8.0f });
    check_case(&(shape){ .seqs = 1, .S = 75, .H = 4, .KV = 2, .d = 37, .cap = 50.0f,
                         .qscale = 40.0f });
}

/* Windows of 16 and 100 at seq 64..300, GQA 4 heads over 2, head_dim 64 and 37. */
static void test_window(void **state)
{
    (void)state;
    const int64_t seqs[] = { 64, 150, 300 }, windows[] = { 16, 100 }, ds[] = { 64, 37 };
    for (int a = 0; a < 3; a++)
        for (int w = 0; w < 2; w++)
            for (int c = 0; c < 2; c++)
                check_case(&(shape){ .seqs = a == 0 ? 2 : 1, .S = seqs[a], .H = 4, .KV = 2,
                                     .d = ds[c], .window = windows[w], .qscale = 3.0f });
    /* window 1 (each token itself) and one just under seq_len */
    check_case(&(shape){ .seqs = 1, .S = 70, .H = 4, .KV = 2, .d = 64, .window = 1,
                         .qscale = 3.0f });
    check_case(&(shape){ .seqs = 1, .S = 70, .H = 4, .KV = 2, .d = 64, .window = 69,
                         .qscale = 3.0f });
}

/* Gemma-2's local layers: a window and the cap together. */
static void test_window_softcap(void **state)
{
    (void)state;
    check_case(&(shape){ .seqs = 1, .S = 300, .H = 4, .KV = 2, .d = 64, .window = 100,
                         .cap = 50.0f, .qscale = 40.0f });
    check_case(&(shape){ .seqs = 2, .S = 90, .H = 4, .KV = 2, .d = 37, .window = 16,
                         .cap = 5.0f, .qscale = 8.0f });
}

/* MLA's head dims: q/k 192 (nope 128 + rope 64), v 128, alone and with a window and a cap;
 * a small odd pair both ways round (dv < d and dv > d: the backward's column tails and its
 * transposed block sized by the larger), GQA 4 heads over 2. */
static void test_mla_dv(void **state)
{
    (void)state;
    check_case(&(shape){ .seqs = 1, .S = 70, .H = 2, .KV = 2, .d = 192, .dv = 128,
                         .qscale = 3.0f });
    check_case(&(shape){ .seqs = 1, .S = 90, .H = 2, .KV = 1, .d = 192, .dv = 128,
                         .window = 33, .cap = 50.0f, .qscale = 40.0f });
    check_case(&(shape){ .seqs = 2, .S = 75, .H = 4, .KV = 2, .d = 40, .dv = 24, .window = 16,
                         .cap = 5.0f, .qscale = 8.0f });
    check_case(&(shape){ .seqs = 1, .S = 75, .H = 4, .KV = 2, .d = 24, .dv = 40, .window = 20,
                         .cap = 5.0f, .qscale = 8.0f });
    check_case(&(shape){ .seqs = 1, .S = 50, .H = 4, .KV = 2, .d = 16, .dv = 80,
                         .qscale = 3.0f });
}

/* A window >= seq_len is full causal attention, with a cap too: the same bits. */
static void test_window_ge_seq(void **state)
{
    (void)state;
    const shape x = { .seqs = 1, .S = 150, .H = 4, .KV = 2, .d = 64, .cap = 50.0f,
                      .qscale = 40.0f };
    bufs a, b;
    bufs_init(&a, &x);
    run_kernels(&a, &x, &(pdbx_attn_opts){ 0, 50.0f, 0 }, 2);
    for (int64_t w = 150; w <= 151; w++) {
        bufs_init(&b, &x);
        run_kernels(&b, &x, &(pdbx_attn_opts){ w, 50.0f, 0 }, 2);
        assert_memory_equal(a.out, b.out, a.nq * sizeof(float));
        assert_memory_equal(a.dq, b.dq, a.nq * sizeof(float));
        assert_memory_equal(a.dk, b.dk, a.nk * sizeof(float));
        assert_memory_equal(a.dv, b.dv, a.nk * sizeof(float));
        bufs_free(&b);
    }
    bufs_free(&a);
}

/* ---- final-logit soft-capping ------------------------------------------------------------- */
/* Gemma-2's cap 30 over logits from -300 to 300 (saturated tails, the linear middle), rows x n
 * above the pool's threshold; the bits on 1 and 3 threads; cap 0 leaves y alone and copies dy.
 * The backward writes a separate dx and leaves dy as it was (the backends reuse d logits every
 * step); its factor is checked against 1 - (y/cap)^2 of the capped float y, as the kernel sees
 * it; the bf16 dx is the fp32 one rounded to nearest even. */
static void test_logit_softcap(void **state)
{
    (void)state;
    const int64_t rows = 7, n = 5003;   /* 35021 elements: several chunks */
    const size_t N = (size_t)(rows * n);
    const float cap = 30.0f;
    float *y = randv(N, 300.0f, 21), *y1 = malloc(N * sizeof *y1), *x = malloc(N * sizeof *x);
    float *dy = randv(N, 1.0f, 22), *dx = malloc(N * sizeof *dx), *dx1 = malloc(N * sizeof *dx1);
    float *g0 = malloc(N * sizeof *g0);
    uint16_t *db = malloc(N * sizeof *db);
    for (size_t i = 0; i < N / 8; i++)
        y[i] *= 0.01f;   /* an eighth near zero: tanh's polynomial side */
    memcpy(x, y, N * sizeof *x);
    memcpy(y1, y, N * sizeof *y1);
    memcpy(g0, dy, N * sizeof *g0);
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(3);
    pdbx_k_logit_softcap(pool, y, rows, n, cap);
    pdbx_k_logit_softcap(NULL, y1, rows, n, cap);
    assert_memory_equal(y, y1, N * sizeof *y);
    double *want = malloc(N * sizeof *want);
    for (size_t i = 0; i < N; i++)
        want[i] = cap * tanh((double)x[i] / cap);
    double worst = 0;
    for (size_t i = 0; i < N; i++)
        worst = fmax(worst, fabs(y[i] - want[i]) / fabs(want[i]));
    print_message("logit softcap fwd: worst relative error %.2g\n", worst);
    assert_true(worst < 2.5e-7);   /* tanh's 1.5e-7, the division by cap, the product */
    pdbx_k_logit_softcap_bwd(pool, y, dy, dx, 0, rows, n, cap);
    pdbx_k_logit_softcap_bwd(NULL, y, dy, dx1, 0, rows, n, cap);
    assert_memory_equal(dx, dx1, N * sizeof *dx);
    assert_memory_equal(dy, g0, N * sizeof *dy);   /* the source gradient untouched */
    /* twice: the same dx (nothing decays step after step) */
    pdbx_k_logit_softcap_bwd(pool, y, dy, dx1, 0, rows, n, cap);
    assert_memory_equal(dx, dx1, N * sizeof *dx);
    worst = 0;
    for (size_t i = 0; i < N; i++) {
        const double t = (double)y[i] / cap, w = g0[i] * (1 - t * t);
        worst = fmax(worst, w == 0 ? fabs(dx[i]) : fabs(dx[i] - w) / fabs(w));
    }
    print_message("logit softcap bwd: worst relative error %.2g\n", worst);
    assert_true(worst < 1e-6);   /* cap - y exact near saturation: a few roundings */
    pdbx_k_logit_softcap_bwd(pool, y, dy, db, 1, rows, n, cap);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(db[i], pdbx_k_f32_to_bf16(dx[i]));
    memcpy(y1, y, N * sizeof *y1);
    pdbx_k_logit_softcap(pool, y, rows, n, 0.0f);
    pdbx_k_logit_softcap_bwd(pool, y, dy, dx, 0, rows, n, 0.0f);
    assert_memory_equal(y, y1, N * sizeof *y);
    assert_memory_equal(dx, dy, N * sizeof *dy);
    pdbx_k_logit_softcap_bwd(pool, y, dy, db, 1, rows, n, NAN);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(db[i], pdbx_k_f32_to_bf16(dy[i]));
    pdbx_cpu_pool_destroy(pool);
    free(y), free(y1), free(x), free(dy), free(dx), free(dx1), free(g0), free(want), free(db);
}

/* pdbx_k_tanh in the clone the CPU picks (through the soft-capping kernel with cap 1: y / 1 and
 * 1 * tanh are exact) over every 997th float up to 40, both signs: relative error < 1.5e-7,
 * odd bit for bit. */
static void test_tanh_accuracy(void **state)
{
    (void)state;
    float lim = 40.0f;
    uint32_t top;
    memcpy(&top, &lim, sizeof top);
    const size_t n = top / 997 + 1;
    float *x = malloc(2 * n * sizeof *x), *y = malloc(2 * n * sizeof *y);
    for (size_t i = 0; i < n; i++) {
        const uint32_t u = (uint32_t)(i * 997);
        memcpy(&x[i], &u, sizeof u);
        x[n + i] = -x[i];
    }
    memcpy(y, x, 2 * n * sizeof *y);
    pdbx_k_logit_softcap(NULL, y, 2, (int64_t)n, 1.0f);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(y[n + i] == -y[i]);
        const double w = tanh((double)x[i]);
        worst = fmax(worst, w == 0 ? fabs(y[i]) : fabs(y[i] - w) / w);
    }
    print_message("tanh: %zu values, worst relative error %.3g\n", 2 * n, worst);
    assert_true(worst < 1.5e-7);
    free(x), free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_gradient),
        cmocka_unit_test(test_plain_bits),
        cmocka_unit_test(test_softcap_causal),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_window_softcap),
        cmocka_unit_test(test_window_ge_seq),
        cmocka_unit_test(test_mla_dv),
        cmocka_unit_test(test_logit_softcap),
        cmocka_unit_test(test_tanh_accuracy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
