/* test_cuda_attn_opts.c: the cuda backend's attention-core options (cuda_attention.h's
 * cuda_attention_opts: sliding window, logit soft-capping, v's head dim apart from q/k's) and
 * the final-logit soft-capping, against a naive double reference (the whole score matrix, the
 * band i - window < j <= i, cap tanh(s / cap), softmax, P V; the textbook gradients with the
 * cap's derivative 1 - tanh^2).
 *
 * Host part (runs everywhere): the unfused path's GEMM shapes with options
 * (cuda_attention_shapes_opts, cuda_attention_shapes_bwd_opts) executed by the emulation of
 * cuBLASLt's definition, between the softmax kernels' definitions with window and cap
 * (cuda_attn_mask.h's ck_first_key, ck_softcap, ck_softcap_grad; the backward recovers the
 * capped scores from P and the forward's lse as the kernel does), reproduce the reference; and
 * the fused path refuses each option by name.
 * GPU part: the same cases through cuda_attention_enqueue / cuda_attention_bwd_enqueue and
 * ck_logit_softcap(_bwd) on the device. Without a device it prints a SKIP line and exits 77
 * after the host part passed. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cuda/cuda_attention.h"
#include "engine/backends/cuda/cuda_attn_mask.h"
#include "engine/backends/cuda/cuda_kernels.h"
#include "tests/cuda/cuda_test_util.h"

typedef struct {
    int64_t mbs, seq, heads, kv, d;
    cuda_attention_opts o;
} acase;

static int64_t vdim(const acase *c)
{
    return c->o.v_dim > 0 ? c->o.v_dim : c->d;
}

/* ---- the reference: per (sequence b, head h), tokens at row pos * mbs + b ------------------- */
typedef struct {
    double *out, *dq, *dk, *dv;
} grads;

/* Row i's capped scores over keys [lo, i] into p (as probabilities on return) and the cap's
 * derivative into g; returns lo. */
static int64_t ref_row(const acase *c, const double *q, const double *k, int64_t b, int64_t h,
                       int64_t i, double *p, double *g)
{
    const int64_t d = c->d, kh = h / (c->heads / c->kv), mbs = c->mbs;
    const int64_t lo = c->o.window > 0 && i - c->o.window + 1 > 0 ? i - c->o.window + 1 : 0;
    const double *qi = q + ((i * mbs + b) * c->heads + h) * d;
    double m = -INFINITY, sum = 0;
    for (int64_t j = lo; j <= i; j++) {
        const double *kj = k + ((j * mbs + b) * c->kv + kh) * d;
        double s = 0;
        for (int64_t e = 0; e < d; e++)
            s += qi[e] * kj[e];
        s /= sqrt((double)d);
        g[j] = 1;
        if (c->o.softcap > 0) {
            const double t = tanh(s / c->o.softcap);
            s = c->o.softcap * t, g[j] = 1 - t * t;
        }
        p[j] = s, m = fmax(m, s);
    }
    for (int64_t j = lo; j <= i; j++)
        sum += p[j] = exp(p[j] - m);
    for (int64_t j = lo; j <= i; j++)
        p[j] /= sum;
    return lo;
}

static void reference(const acase *c, const double *q, const double *k, const double *v,
                      const double *dO, grads *r)
{
    const int64_t S = c->seq, d = c->d, e = vdim(c), mbs = c->mbs, H = c->heads;
    const size_t nk = (size_t)(S * mbs * c->kv * d), nv = (size_t)(S * mbs * c->kv * e);
    double *p = malloc((size_t)S * sizeof *p), *g = malloc((size_t)S * sizeof *g);
    double *dp = malloc((size_t)S * sizeof *dp);
    memset(r->dk, 0, nk * sizeof *r->dk), memset(r->dv, 0, nv * sizeof *r->dv);
    for (int64_t b = 0; b < mbs; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < S; i++) {
                const int64_t lo = ref_row(c, q, k, b, h, i, p, g), kh = h / (H / c->kv);
                const int64_t qo = ((i * mbs + b) * H + h) * d, oo = ((i * mbs + b) * H + h) * e;
                double D = 0;
                for (int64_t x = 0; x < e; x++)
                    r->out[oo + x] = 0;
                for (int64_t j = lo; j <= i; j++) {
                    const double *vj = v + ((j * mbs + b) * c->kv + kh) * e;
                    dp[j] = 0;
                    for (int64_t x = 0; x < e; x++)
                        r->out[oo + x] += p[j] * vj[x], dp[j] += dO[oo + x] * vj[x];
                    D += p[j] * dp[j];
                }
                for (int64_t x = 0; x < d; x++)
                    r->dq[qo + x] = 0;
                for (int64_t j = lo; j <= i; j++) {
                    const double ds = p[j] * (dp[j] - D) * g[j] / sqrt((double)d);
                    const int64_t ko = ((j * mbs + b) * c->kv + kh) * d;
                    const int64_t vo = ((j * mbs + b) * c->kv + kh) * e;
                    for (int64_t x = 0; x < d; x++)
                        r->dq[qo + x] += ds * k[ko + x], r->dk[ko + x] += ds * q[qo + x];
                    for (int64_t x = 0; x < e; x++)
                        r->dv[vo + x] += p[j] * dO[oo + x];
                }
            }
    free(p), free(g), free(dp);
}

/* ---- the host emulation of the unfused path -------------------------------------------- */
/* ck_attn_softmax's definition (double), lse the rows' natural log-sum-exp. */
static void host_softmax_opts(const acase *c, double *sc, int64_t rows, double *lse)
{
    const int64_t S = c->seq;
    for (int64_t r = 0; r < rows; r++) {
        double *row = sc + r * S, mx = -INFINITY, sum = 0;
        const int64_t end = ck_keys_visible(r, S, S), lo = ck_first_key(r, S, S, c->o.window);
        for (int64_t j = lo; j < end; j++)
            row[j] = c->o.softcap > 0 ? c->o.softcap * tanh(row[j] / c->o.softcap) : row[j];
        for (int64_t j = lo; j < end; j++)
            mx = fmax(mx, row[j]);
        for (int64_t j = lo; j < end; j++)
            sum += exp(row[j] - mx);
        lse[r] = mx + log(sum);
        for (int64_t j = 0; j < S; j++)
            row[j] = j >= lo && j < end ? exp(row[j] - lse[r]) : 0.0;
    }
}

/* ck_attn_softmax_bwd's definition: dS from P, dP in place, the cap's derivative at
 * c = log p + lse (ck_softcap_grad in float, as the kernel). */
static void host_softmax_bwd_opts(const acase *c, const double *P, double *dP, int64_t rows,
                                  const double *lse)
{
    const int64_t S = c->seq;
    const double scale = 1 / sqrt((double)c->d);
    for (int64_t r = 0; r < rows; r++) {
        const double *pr = P + r * S;
        double *gr = dP + r * S, dot = 0;
        const int64_t end = ck_keys_visible(r, S, S), lo = ck_first_key(r, S, S, c->o.window);
        for (int64_t j = lo; j < end; j++)
            dot += pr[j] * gr[j];
        for (int64_t j = 0; j < S; j++) {
            double gs = j >= lo && j < end ? scale * pr[j] * (gr[j] - dot) : 0.0;
            if (c->o.softcap > 0 && gs != 0.0)
                gs *= ck_softcap_grad((float)(log(pr[j]) + lse[r]), c->o.softcap);
            gr[j] = gs;
        }
    }
}

typedef struct {
    size_t nq, nk, no, nv, ns, rows;
} sizes;

static sizes sizes_of(const acase *c)
{
    const size_t T = (size_t)(c->mbs * c->seq);
    return (sizes){T * (size_t)(c->heads * c->d), T * (size_t)(c->kv * c->d),
                   T * (size_t)(c->heads * vdim(c)), T * (size_t)(c->kv * vdim(c)),
                   (size_t)(c->mbs * c->heads) * (size_t)(c->seq * c->seq),
                   (size_t)(c->mbs * c->heads * c->seq)};
}

static cuda_attention_dims dims_of(const acase *c, pdbx_dtype dt)
{
    return (cuda_attention_dims){c->mbs, c->seq, c->heads, c->kv, c->d, dt, 0};
}

/* The backend's sequence of GEMMs and softmax kernels, emulated in double. */
static void emulate(const acase *c, const double *q, const double *k, const double *v,
                    const double *dO, grads *r)
{
    const sizes z = sizes_of(c);
    const cuda_attention_dims dims = dims_of(c, PDBX_DTYPE_FP32);
    const int64_t group = c->heads / c->kv, e = vdim(c);
    cuda_gemm_shape qk, pv, b[4];
    assert_int_equal(cuda_attention_shapes_opts(&dims, &c->o, &qk, &pv), 0);
    assert_int_equal(cuda_attention_shapes_bwd_opts(&dims, &c->o, b), 0);
    double *P = calloc(z.ns, sizeof *P), *dS = calloc(z.ns, sizeof *dS);
    double *lse = calloc(z.rows, sizeof *lse);
    assert_true(P && dS && lse);
    const double scale = 1 / sqrt((double)c->d);
    int64_t q_off, s_off;
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_member(&dims, jj, &q_off, &s_off);
        emulate_gemm(&qk, scale, k, q + q_off, P + s_off);
    }
    host_softmax_opts(c, P, (int64_t)z.rows, lse);
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_member(&dims, jj, &q_off, &s_off);
        emulate_gemm(&pv, 1, v, P + s_off, r->out + jj * e);
        emulate_gemm_beta(&b[0], 1, jj ? 1 : 0, dO + jj * e, P + s_off, r->dv);
        emulate_gemm(&b[1], 1, v, dO + jj * e, dS + s_off);
    }
    host_softmax_bwd_opts(c, P, dS, (int64_t)z.rows, lse);
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_member(&dims, jj, &q_off, &s_off);
        emulate_gemm(&b[2], 1, k, dS + s_off, r->dq + q_off);
        emulate_gemm_beta(&b[3], 1, jj ? 1 : 0, q + q_off, dS + s_off, r->dk);
    }
    free(P), free(dS), free(lse);
}

static grads grads_new(const sizes *z)
{
    grads g = {calloc(z->no, sizeof(double)), calloc(z->nq, sizeof(double)),
               calloc(z->nk, sizeof(double)), calloc(z->nv, sizeof(double))};
    assert_true(g.out && g.dq && g.dk && g.dv);
    return g;
}

static void grads_free(grads *g)
{
    free(g->out), free(g->dq), free(g->dk), free(g->dv);
}

/* MLA's 192/128 with a window and Gemma-2's cap 50 (scores past it), small odd shapes, GQA. */
static const acase cases[] = {
    {2, 24, 4, 2, 16, {7, 0.0f, 0}},        /* window, GQA */
    {1, 30, 2, 1, 16, {0, 2.0f, 0}},        /* a cap that bends ordinary scores */
    {2, 20, 4, 2, 24, {5, 3.0f, 8}},        /* window, cap, dv < d */
    {1, 17, 2, 2, 8, {4, 0.0f, 20}},        /* dv > d */
    {1, 40, 2, 1, 192, {16, 50.0f, 128}},   /* MLA's head dims, window and cap 50 */
};

static void test_host_emulation(void **state)
{
    (void)state;
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        const acase *c = &cases[t];
        const sizes z = sizes_of(c);
        const double qs = c->o.softcap >= 50 ? 20.0 : 2.0;   /* scores past a cap of 50 */
        double *q = host_rand(z.nq), *k = host_rand(z.nk), *v = host_rand(z.nv);
        double *dO = host_rand(z.no);
        for (size_t i = 0; i < z.nq; i++)
            q[i] *= qs;
        grads want = grads_new(&z), got = grads_new(&z);
        reference(c, q, k, v, dO, &want);
        emulate(c, q, k, v, dO, &got);
        expect_near("emulated out", got.out, want.out, z.no, 1e-9);
        expect_near("emulated dv", got.dv, want.dv, z.nv, 1e-9);
        /* the cap's derivative in float from log p + lse: ~1e-7 of it */
        expect_near("emulated dq", got.dq, want.dq, z.nq, 1e-5);
        expect_near("emulated dk", got.dk, want.dk, z.nk, 1e-5);
        free(q), free(k), free(v), free(dO);
        grads_free(&want), grads_free(&got);
    }
}

/* The fused path refuses each option by name; plain options pass. */
static void test_host_flash_refuses(void **state)
{
    (void)state;
    const cuda_attention_dims d = {1, 4096, 8, 2, 128, PDBX_DTYPE_BF16, 1};
    char err[256];
    const struct { cuda_attention_opts o; const char *name; } refused[] = {
        {{1024, 0.0f, 0}, "sliding window"},
        {{0, 50.0f, 0}, "soft-capping"},
        {{0, 0.0f, 96}, "v head dim"},
    };
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(cuda_attention_opts_flash_ok(&d, &refused[i].o, err, sizeof err), 0);
        assert_non_null(strstr(err, refused[i].name));
        assert_non_null(strstr(err, "flash_attention"));
    }
    const cuda_attention_opts plain[] = {{0, 0.0f, 0}, {4096, 0.0f, 128}, {-1, -2.0f, -3}};
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(cuda_attention_opts_flash_ok(&d, &plain[i], err, sizeof err), 1);
    assert_int_equal(cuda_attention_opts_flash_ok(&d, NULL, err, sizeof err), 1);
}

/* ---- GPU ------------------------------------------------------------------------------- */
static void check_device(const acase *c, pdbx_dtype dt, float atol)
{
    const sizes z = sizes_of(c);
    const cuda_attention_dims dims = dims_of(c, dt);
    const float qs = c->o.softcap >= 50 ? 20.0f : 2.0f;
    tensor q = ct_make(z.nq, dt, -qs, qs), k = ct_make(z.nk, dt, -1, 1), v = ct_make(z.nv, dt, -1, 1);
    tensor dO = ct_make(z.no, dt, -1, 1), o = ct_make(z.no, dt, 7, 8);
    tensor s = ct_make(z.ns, dt, 7, 8), ds = ct_make(z.ns, dt, 7, 8);
    tensor lse = ct_make(z.rows, PDBX_DTYPE_FP32, 7, 8);
    tensor dq = ct_make(z.nq, dt, 7, 8), dk = ct_make(z.nk, dt, 7, 8), dv = ct_make(z.nv, dt, 7, 8);
    cuda_attention a;
    char err[512];
    if (cuda_attention_plan_opts(gemm, &dims, &c->o, &a, err, sizeof err) != 0 ||
        cuda_attention_plan_bwd(gemm, &a, err, sizeof err) != 0)
        fail_msg("plan: %s", err);
    const cuda_attention_bwd_bufs bufs = {.q = q.dev, .k = k.dev, .v = v.dev, .out = o.dev,
                                          .dout = dO.dev, .probs = s.dev, .dscores = ds.dev,
                                          .lse = lse.dev, .dq = dq.dev, .dk = dk.dev, .dv = dv.dev};
    if (cuda_attention_enqueue(gemm, &a, q.dev, k.dev, v.dev, s.dev, o.dev, lse.dev, stream, err,
                               sizeof err) ||
        cuda_attention_bwd_enqueue(gemm, &a, &bufs, stream, err, sizeof err))
        fail_msg("attention: %s", err);
    ct_download(&o), ct_download(&dq), ct_download(&dk), ct_download(&dv);
    double *hq = host_of(&q), *hk = host_of(&k), *hv = host_of(&v), *hd = host_of(&dO);
    grads want = grads_new(&z);
    reference(c, hq, hk, hv, hd, &want);
    const tensor *got[4] = {&o, &dq, &dk, &dv};
    const double *ref[4] = {want.out, want.dq, want.dk, want.dv};
    const size_t n[4] = {z.no, z.nq, z.nk, z.nv};
    const char *name[4] = {"out", "dq", "dk", "dv"};
    for (int t = 0; t < 4; t++) {
        float *f = malloc(n[t] * sizeof *f);
        for (size_t i = 0; i < n[t]; i++)
            f[i] = (float)ref[t][i];
        expect_close(name[t], got[t], f, n[t], atol, 1.0f / 32);
        free(f);
    }
    free(hq), free(hk), free(hv), free(hd);
    grads_free(&want);
    tensor *all[11] = {&q, &k, &v, &dO, &o, &s, &ds, &lse, &dq, &dk, &dv};
    for (int t = 0; t < 11; t++)
        ct_drop(all[t]);
}

static void test_attention_opts(void **state)
{
    (void)state;
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        check_device(&cases[t], PDBX_DTYPE_FP32, 1e-2f);
        check_device(&cases[t], PDBX_DTYPE_BF16, 6e-2f);
    }
}

/* ck_logit_softcap and its backward against double tanh on the rounded inputs (cap 30,
 * logits to +-300: both tails saturated), bf16 and fp32; the backward writes its own dx and
 * leaves dy as it was. */
static void test_logit_softcap(void **state)
{
    (void)state;
    const pdbx_dtype dts[2] = {PDBX_DTYPE_FP32, PDBX_DTYPE_BF16};
    const size_t n = 70001;
    const float cap = 30.0f;
    for (int t = 0; t < 2; t++) {
        tensor y = ct_make(n, dts[t], -300, 300), dy = ct_make(n, dts[t], -1, 1);
        tensor dx = ct_make(n, dts[t], 0, 0);
        float *want = malloc(n * sizeof *want), *gw = malloc(n * sizeof *gw);
        for (size_t i = 0; i < n; i++)
            want[i] = (float)(cap * tanh(ct_at(&y, i) / cap));
        assert_int_equal(ck_logit_softcap(y.dev, (int64_t)n, cap, dts[t], stream), cudaSuccess);
        ct_download(&y);
        expect_close("logit softcap", &y, want, n, 1e-5f, dts[t] == PDBX_DTYPE_FP32 ? 1e-6f : 1e-2f);
        for (size_t i = 0; i < n; i++) {
            const double c = ct_at(&y, i) / cap;
            gw[i] = (float)(ct_at(&dy, i) * (1 - c * c));
        }
        ct_download(&dy);
        for (size_t i = 0; i < n; i++)   /* the source gradient, to hold it unchanged */
            want[i] = ct_at(&dy, i);
        assert_int_equal(ck_logit_softcap_bwd(y.dev, dy.dev, dx.dev, (int64_t)n, cap, dts[t], stream),
                         cudaSuccess);
        ct_download(&dx);
        expect_close("logit softcap bwd", &dx, gw, n, 1e-6f, dts[t] == PDBX_DTYPE_FP32 ? 1e-5f : 1e-2f);
        ct_download(&dy);
        expect_close("logit softcap bwd leaves dy", &dy, want, n, 0.0f, 0.0f);
        free(want), free(gw);
        ct_drop(&y), ct_drop(&dy), ct_drop(&dx);
    }
}

int main(void)
{
    const struct CMUnitTest host[] = {
        cmocka_unit_test(test_host_emulation),
        cmocka_unit_test(test_host_flash_refuses),
    };
    int rc = cmocka_run_group_tests_name("cuda_attn_opts_host", host, NULL, NULL);
    if (rc != 0)
        return rc;
    rc = ct_gpu_open();
    if (rc == 77) {   /* no device: it printed why */
        printf("note: the host part passed; the GPU part was skipped\n");
        return 77;
    }
    if (rc != 0)
        return rc;
    const struct CMUnitTest gpu[] = {
        cmocka_unit_test(test_attention_opts),
        cmocka_unit_test(test_logit_softcap),
    };
    rc = cmocka_run_group_tests_name("cuda_attn_opts", gpu, NULL, NULL);
    ct_gpu_close();
    return rc;
}
