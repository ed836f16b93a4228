/* test_engine_kernels_mla.c: MLA's kernels (cpu_kernels_mla.h) and the forward they make with
 * the shared ones, as the cpu backend runs it (cpu_mla.c).
 *  - the whole attention forward of a tiny shape with q's low rank (q_a, q_norm, q_b; kv_a,
 *    kv_norm on the latent's strided rows, kv_b; attn_rope's rotation and k/v gather; the
 *    attention core with dv != d) against a double reference written from HF
 *    DeepseekV2Attention's definition: q_pe = q[..., nope:], k_pe = kv_a[..., rkv:] one head,
 *    rotate-half of each, key = cat(k_nope, k_pe broadcast), value = kv_b's last dv per head,
 *    scale 1/sqrt(nope + rope); also q, k and v as the core reads them;
 *  - attn_rope's backward is the transpose of its forward (a linear map of q, k_pe and kv_b):
 *    <F(x), g> = <x, F^T g> in double for random x and g; the latent columns of dkva are left
 *    as they were; bit for bit the same over a pool of 3 as on one thread;
 *  - the strided RMSNorm and its backward are pdbx_k_rmsnorm's and pdbx_k_rmsnorm_bwd's on the
 *    packed rows bit for bit, and touch nothing past cols of each row.
 * Tolerances: the forward within 2e-5 of the reference's largest magnitude (fp32 through three
 * GEMMs of at most 12 terms, two norms, the rotation and a softmax); the transpose identity
 * within 1e-5 relative (both sides summed in double from fp32 values). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_attn.h"
#include "engine/backends/cpu/cpu_kernels_bwd.h"
#include "engine/backends/cpu/cpu_kernels_mla.h"
#include "tests/unit/test_kernel_util.h"

enum { SEQS = 2, S = 5, ROWS = SEQS * S, HID = 12, H = 3, RQ = 8, RKV = 6, NOPE = 4, ROPE = 4, DV = 3 };
enum { D = NOPE + ROPE, KVA = RKV + ROPE, KVB = NOPE + DV };
#define EPS 1e-5f
#define THETA 10000.0

static float *copyv(const float *src, size_t n)
{
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    memcpy(x, src, n * sizeof *x);
    return x;
}

/* C[m,n] = A[m,k] B[k,n] in fp32 (the backend's GEMMs are OpenBLAS's; the kernels are tested) */
static void gemm_f(const float *a, const float *b, float *c, int m, int n, int k)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float s = 0;
            for (int l = 0; l < k; l++)
                s += a[i * k + l] * b[l * n + j];
            c[i * n + j] = s;
        }
}

static void gemm_d(const float *a, const float *b, double *c, int m, int n, int k)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int l = 0; l < k; l++)
                s += (double)a[i * k + l] * b[l * n + j];
            c[i * n + j] = s;
        }
}

static void gemm_dd(const double *a, const float *b, double *c, int m, int n, int k)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int l = 0; l < k; l++)
                s += a[i * k + l] * b[l * n + j];
            c[i * n + j] = s;
        }
}

/* RMSNorm in double of cols elements of rows of stride ld (in and out alike) */
static void rms_d(const double *x, int ld, const float *w, int rows, int cols, double *y, int ldy)
{
    for (int r = 0; r < rows; r++) {
        double ss = 0;
        for (int j = 0; j < cols; j++)
            ss += x[r * ld + j] * x[r * ld + j];
        const double inv = 1.0 / sqrt(ss / cols + EPS);
        for (int j = 0; j < cols; j++)
            y[r * ldy + j] = x[r * ld + j] * inv * w[j];
    }
}

/* HF's rotate-half of n = ROPE dims at position pos: x cos + rotate_half(x) sin */
static void rope_d(double *x, int pos)
{
    double tmp[ROPE];
    for (int i = 0; i < ROPE / 2; i++) {
        const double ang = pos * pow(THETA, -2.0 * i / ROPE), c = cos(ang), s = sin(ang);
        tmp[i] = x[i] * c - x[i + ROPE / 2] * s;
        tmp[i + ROPE / 2] = x[i + ROPE / 2] * c + x[i] * s;
    }
    memcpy(x, tmp, sizeof tmp);
}

typedef struct {
    float *x, *wqa, *wqb, *wkva, *wkvb, *nq, *nkv;
} weights;

static weights make_weights(void)
{
    weights w = { randv(ROWS * HID, 1.0f, 1), randv(HID * RQ, 0.3f, 2), randv(RQ * H * D, 0.35f, 3),
                  randv(HID * KVA, 0.3f, 4), randv(RKV * H * KVB, 0.4f, 5), randv(RQ, 0.1f, 6),
                  randv(RKV, 0.1f, 7) };
    for (int i = 0; i < RQ; i++)
        w.nq[i] += 1.0f;
    for (int i = 0; i < RKV; i++)
        w.nkv[i] += 1.0f;
    return w;
}

static void free_weights(weights *w)
{
    free(w->x); free(w->wqa); free(w->wqb); free(w->wkva); free(w->wkvb); free(w->nq); free(w->nkv);
}

/* The reference: HF DeepseekV2Attention's forward in double (no kv cache, no yarn scaling). */
static void reference(const weights *w, double *qr, double *kr, double *vr, double *out)
{
    static double qa[ROWS * RQ], qan[ROWS * RQ], kva[ROWS * KVA], kvn[ROWS * RKV], kvb[ROWS * H * KVB];
    gemm_d(w->x, w->wqa, qa, ROWS, RQ, HID);
    rms_d(qa, RQ, w->nq, ROWS, RQ, qan, RQ);
    gemm_dd(qan, w->wqb, qr, ROWS, H * D, RQ);
    gemm_d(w->x, w->wkva, kva, ROWS, KVA, HID);
    rms_d(kva, KVA, w->nkv, ROWS, RKV, kvn, RKV);   /* compressed_kv = kva[..., :rkv] */
    gemm_dd(kvn, w->wkvb, kvb, ROWS, H * KVB, RKV);
    for (int r = 0; r < ROWS; r++) {
        double kpe[ROPE];
        memcpy(kpe, kva + r * KVA + RKV, sizeof kpe);
        rope_d(kpe, r % S);
        for (int h = 0; h < H; h++) {
            rope_d(qr + (r * H + h) * D + NOPE, r % S);   /* q_pe = q[..., nope:] */
            for (int i = 0; i < NOPE; i++)
                kr[(r * H + h) * D + i] = kvb[(r * H + h) * KVB + i];
            for (int i = 0; i < ROPE; i++)
                kr[(r * H + h) * D + NOPE + i] = kpe[i];
            for (int i = 0; i < DV; i++)
                vr[(r * H + h) * DV + i] = kvb[(r * H + h) * KVB + NOPE + i];
        }
    }
    for (int sq = 0; sq < SEQS; sq++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < S; i++) {
                const int ri = sq * S + i;
                double sc[S], mx = -1e300, sum = 0;
                for (int j = 0; j <= i; j++) {
                    double dot = 0;
                    for (int t = 0; t < D; t++)
                        dot += qr[(ri * H + h) * D + t] * kr[((sq * S + j) * H + h) * D + t];
                    sc[j] = dot / sqrt((double)D);
                    mx = sc[j] > mx ? sc[j] : mx;
                }
                for (int j = 0; j <= i; j++)
                    sum += (sc[j] = exp(sc[j] - mx));
                for (int t = 0; t < DV; t++) {
                    double o = 0;
                    for (int j = 0; j <= i; j++)
                        o += sc[j] / sum * vr[((sq * S + j) * H + h) * DV + t];
                    out[(ri * H + h) * DV + t] = o;
                }
            }
}

static void expect_close(const float *got, const double *want, size_t n, const char *what)
{
    double big = 0;
    for (size_t i = 0; i < n; i++)
        big = fabs(want[i]) > big ? fabs(want[i]) : big;
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= 2e-5 * big)) {
            print_error("%s[%zu]: got %.9g, want %.9g (largest %.3g)\n", what, i, got[i], want[i], big);
            fail();
        }
}

static const pdbx_mla_dims DIMS = { .heads = H, .nope = NOPE, .rope = ROPE, .dv = DV, .rkv = RKV };

static void test_forward_vs_hf(void **state)
{
    (void)state;
    weights w = make_weights();
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(2);
    const int threads = pdbx_cpu_pool_threads(pool);
    float qa[ROWS * RQ], qan[ROWS * RQ], q[ROWS * H * D], kva[ROWS * KVA], kvn[ROWS * RKV];
    float kvb[ROWS * H * KVB], k[ROWS * H * D], v[ROWS * H * DV], out[ROWS * H * DV];
    float cos_t[S * ROPE / 2], sin_t[S * ROPE / 2];
    float *scratch = calloc(pdbx_k_attention_scratch_floats(S, D, threads), sizeof(float));
    assert_non_null(scratch);
    /* the backend's order (cpu_mla.c): q_a, q_norm, q_b, kv_a, kv_norm, kv_b, rope, core */
    gemm_f(w.x, w.wqa, qa, ROWS, RQ, HID);
    pdbx_k_rmsnorm(pool, qa, w.nq, ROWS, RQ, EPS, qan);
    gemm_f(qan, w.wqb, q, ROWS, H * D, RQ);
    gemm_f(w.x, w.wkva, kva, ROWS, KVA, HID);
    pdbx_k_rmsnorm_strided(pool, kva, KVA, w.nkv, ROWS, RKV, EPS, kvn, RKV);
    gemm_f(kvn, w.wkvb, kvb, ROWS, H * KVB, RKV);
    pdbx_k_rope_table(S, ROPE, THETA, cos_t, sin_t);
    pdbx_k_mla_rope_kv(pool, &DIMS, ROWS, S, cos_t, sin_t, q, kva, kvb, k, v);
    const pdbx_attn_opts o = { .dv = DV };
    pdbx_k_attention_causal_opts(pool, q, k, v, SEQS, S, H, H, D, scratch, out, &o);

    static double qr[ROWS * H * D], kr[ROWS * H * D], vr[ROWS * H * DV], outr[ROWS * H * DV];
    reference(&w, qr, kr, vr, outr);
    expect_close(q, qr, ROWS * H * D, "q (rope'd)");
    expect_close(k, kr, ROWS * H * D, "k");
    expect_close(v, vr, ROWS * H * DV, "v");
    expect_close(out, outr, ROWS * H * DV, "attention output");
    free(scratch);
    pdbx_cpu_pool_destroy(pool);
    free_weights(&w);
}

static double dot(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

static void test_rope_kv_transpose(void **state)
{
    (void)state;
    float cos_t[S * ROPE / 2], sin_t[S * ROPE / 2];
    pdbx_k_rope_table(S, ROPE, THETA, cos_t, sin_t);
    float *q = randv(ROWS * H * D, 1, 11), *kva = randv(ROWS * KVA, 1, 12), *kvb = randv(ROWS * H * KVB, 1, 13);
    float *gq = randv(ROWS * H * D, 1, 14), *gk = randv(ROWS * H * D, 1, 15), *gv = randv(ROWS * H * DV, 1, 16);
    float *q0 = copyv(q, ROWS * H * D), *kva0 = copyv(kva, ROWS * KVA);
    float k[ROWS * H * D], v[ROWS * H * DV];
    pdbx_k_mla_rope_kv(NULL, &DIMS, ROWS, S, cos_t, sin_t, q, kva, kvb, k, v);
    /* <F(x), g>: F's outputs are the rotated q, k and v */
    const double lhs = dot(q, gq, ROWS * H * D) + dot(k, gk, ROWS * H * D) + dot(v, gv, ROWS * H * DV);
    float *dq = copyv(gq, ROWS * H * D), dkvb[ROWS * H * KVB];
    float *dkva = randv(ROWS * KVA, 1, 17), *dkva0 = copyv(dkva, ROWS * KVA);
    pdbx_k_mla_rope_kv_bwd(NULL, &DIMS, ROWS, S, cos_t, sin_t, dq, gk, gv, dkva, dkvb);
    /* <x, F^T g>: x is q, k_pe (kva's last rope columns) and kv_b's output */
    double rhs = dot(q0, dq, ROWS * H * D) + dot(kvb, dkvb, ROWS * H * KVB);
    for (int r = 0; r < ROWS; r++) {
        rhs += dot(kva0 + r * KVA + RKV, dkva + r * KVA + RKV, ROPE);
        assert_memory_equal(dkva + r * KVA, dkva0 + r * KVA, RKV * sizeof(float));   /* latent untouched */
    }
    assert_true(fabs(lhs - rhs) <= 1e-5 * (fabs(lhs) + 1));
    /* the same bits over a pool of 3 */
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(3);
    float *dq3 = copyv(gq, ROWS * H * D), *dkva3 = copyv(dkva0, ROWS * KVA), dkvb3[ROWS * H * KVB];
    pdbx_k_mla_rope_kv_bwd(pool, &DIMS, ROWS, S, cos_t, sin_t, dq3, gk, gv, dkva3, dkvb3);
    assert_memory_equal(dq3, dq, ROWS * H * D * sizeof(float));
    assert_memory_equal(dkva3, dkva, ROWS * KVA * sizeof(float));
    assert_memory_equal(dkvb3, dkvb, sizeof dkvb);
    pdbx_cpu_pool_destroy(pool);
    free(q); free(kva); free(kvb); free(gq); free(gk); free(gv); free(q0); free(kva0);
    free(dq); free(dkva); free(dkva0); free(dq3); free(dkva3);
}

static void test_strided_rmsnorm(void **state)
{
    (void)state;
    enum { R = 37, C = 20, LDX = 29, LDY = 23 };
    float *x = randv(R * LDX, 2, 21), *w = randv(C, 0.1f, 22), *dy = randv(R * LDY, 1, 23);
    float packed[R * C], dyp[R * C], ref[R * C], dxref[R * C], dwref[C] = { 0 }, dw[C] = { 0 };
    for (int r = 0; r < R; r++) {
        memcpy(packed + r * C, x + r * LDX, C * sizeof(float));
        memcpy(dyp + r * C, dy + r * LDY, C * sizeof(float));
    }
    pdbx_k_rmsnorm(NULL, packed, w, R, C, EPS, ref);
    pdbx_k_rmsnorm_bwd(packed, w, dyp, R, C, EPS, dxref, dwref);
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(3);
    float *y = randv(R * LDY, 1, 24), *y0 = copyv(y, R * LDY);
    float *dx = randv(R * LDX, 1, 25), *dx0 = copyv(dx, R * LDX);
    pdbx_k_rmsnorm_strided(pool, x, LDX, w, R, C, EPS, y, LDY);
    pdbx_k_rmsnorm_strided_bwd(x, LDX, w, dy, LDY, R, C, EPS, dx, LDX, dw);
    for (int r = 0; r < R; r++) {
        assert_memory_equal(y + r * LDY, ref + r * C, C * sizeof(float));
        assert_memory_equal(y + r * LDY + C, y0 + r * LDY + C, (LDY - C) * sizeof(float));
        assert_memory_equal(dx + r * LDX, dxref + r * C, C * sizeof(float));
        assert_memory_equal(dx + r * LDX + C, dx0 + r * LDX + C, (LDX - C) * sizeof(float));
    }
    assert_memory_equal(dw, dwref, sizeof dw);
    pdbx_cpu_pool_destroy(pool);
    free(x); free(w); free(dy); free(y); free(y0); free(dx); free(dx0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward_vs_hf),
        cmocka_unit_test(test_rope_kv_transpose),
        cmocka_unit_test(test_strided_rmsnorm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
