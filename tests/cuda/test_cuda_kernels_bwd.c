/* test_cuda_kernels_bwd.c: numerical checks of the cuda backend's backward (passes with bwd) on
 * a GPU, each against a host reference from the same (rounded) inputs: the linear layers'
 * dgrad and wgrad GEMMs, RMSNorm, SiLU x up, the embedding scatter-add, the bias gradient, and the attention
 * core's backward on both paths: the unfused one (keeping the forward's probabilities) and the
 * fused FlashAttention-2 kernel (ck_flash_attention_bwd, from the fused forward's saved
 * log-sum-exp), each against the textbook gradients; and a flash_attention point with bwd
 * through the backend's entry (as pdbx-engine runs it): its backward before any forward (the
 * lse prepare computed), its device memory the planner's fused list (no scores buffer).
 * Without a CUDA device it prints a SKIP line with the reason and exits 77 (the host-only
 * checks of the same code are test_cuda_layouts.c and tests/unit/test_flash_bwd_reference.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>

#include "engine/backends/backend.h"
#include "engine/backends/cuda/cuda_attention.h"
#include "engine/backends/cuda/cuda_gemm.h"
#include "engine/backends/cuda/cuda_kernels.h"
#include "tests/cuda/cuda_test_util.h"

/* dgrad into dX (dtype) and wgrad added onto an fp32 dW holding values already. */
static void check_linear_bwd(pdbx_dtype dt, int64_t m, int64_t n, int64_t k, float rtol)
{
    tensor x = ct_make((size_t)(m * k), dt, -1.0f, 1.0f), w = ct_make((size_t)(n * k), dt, -0.1f, 0.1f);
    tensor dy = ct_make((size_t)(m * n), dt, -1.0f, 1.0f), dx = ct_make((size_t)(m * k), dt, 7.0f, 8.0f);
    tensor dw = ct_make((size_t)(n * k), PDBX_DTYPE_FP32, -1.0f, 1.0f);
    float *rx = malloc((size_t)(m * k) * sizeof *rx), *rw = malloc((size_t)(n * k) * sizeof *rw);
    assert_non_null(rx);
    assert_non_null(rw);
    for (int64_t i = 0; i < m; i++)
        for (int64_t l = 0; l < k; l++) {
            double acc = 0.0;
            for (int64_t j = 0; j < n; j++)
                acc += (double)ct_at(&dy, (size_t)(i * n + j)) * ct_at(&w, (size_t)(j * k + l));
            rx[i * k + l] = (float)acc;
        }
    for (int64_t j = 0; j < n; j++)
        for (int64_t l = 0; l < k; l++) {
            double acc = ct_at(&dw, (size_t)(j * k + l));
            for (int64_t i = 0; i < m; i++)
                acc += (double)ct_at(&dy, (size_t)(i * n + j)) * ct_at(&x, (size_t)(i * k + l));
            rw[j * k + l] = (float)acc;
        }
    char err[512];
    cuda_gemm_shape ds = cuda_gemm_dgrad_shape(dt, m, n, k), ws = cuda_gemm_wgrad_shape(dt, m, n, k);
    cuda_gemm_plan *dp = NULL, *wp = NULL;
    if (cuda_gemm_plan_get(gemm, &ds, &dp, err, sizeof err) != 0 ||
        cuda_gemm_plan_get(gemm, &ws, &wp, err, sizeof err) != 0)
        fail_msg("plan: %s", err);
    if (cuda_gemm_exec(gemm, dp, 1.0f, w.dev, dy.dev, dx.dev, stream, err, sizeof err) != 0 ||
        cuda_gemm_exec_beta(gemm, wp, 1.0f, 1.0f, x.dev, dy.dev, dw.dev, stream, err, sizeof err))
        fail_msg("exec: %s", err);
    ct_download(&dx);
    ct_download(&dw);
    expect_close("dgrad", &dx, rx, (size_t)(m * k), 2e-3f * (float)n * 0.1f, rtol);
    expect_close("wgrad", &dw, rw, (size_t)(n * k), 2e-3f * (float)m, 1e-3f);
    free(rx), free(rw);
    ct_drop(&x), ct_drop(&w), ct_drop(&dy), ct_drop(&dx), ct_drop(&dw);
}

static void test_linear_bwd(void **state)
{
    (void)state;
    check_linear_bwd(PDBX_DTYPE_BF16, 128, 192, 256, 1.0f / 128);
    check_linear_bwd(PDBX_DTYPE_BF16, 8, 40, 24, 1.0f / 128);
    check_linear_bwd(PDBX_DTYPE_FP32, 64, 96, 128, 1e-3f);   /* TF32 */
}

static void test_rmsnorm_bwd(void **state)
{
    (void)state;
    const pdbx_dtype dts[] = {PDBX_DTYPE_BF16, PDBX_DTYPE_FP32};
    for (size_t t = 0; t < 4; t++) {   /* cols 1003: misaligned rows, partial vectors */
        pdbx_dtype dt = dts[t % 2];
        const int64_t rows = 300, cols = t < 2 ? 1000 : 1003;   /* several dweight row splits */
        const size_t n = (size_t)(rows * cols);
        tensor x = ct_make(n, dt, -2.0f, 2.0f), w = ct_make((size_t)cols, dt, 0.5f, 1.5f);
        tensor dy = ct_make(n, dt, -1.0f, 1.0f), dx = ct_make(n, dt, 0.0f, 0.0f);
        tensor dw = ct_make((size_t)cols, PDBX_DTYPE_FP32, 0.25f, 0.25f);
        float *rstd = NULL, *rdx = malloc(n * sizeof *rdx), *rdw = malloc((size_t)cols * sizeof *rdw);
        assert_non_null(rdx);
        assert_non_null(rdw);
        assert_int_equal(cudaMalloc((void **)&rstd, (size_t)rows * sizeof *rstd), cudaSuccess);
        for (int64_t c = 0; c < cols; c++)
            rdw[c] = 0.25f;
        for (int64_t r = 0; r < rows; r++) {
            double ss = 0.0, dot = 0.0;
            for (int64_t c = 0; c < cols; c++) {
                double xv = ct_at(&x, (size_t)(r * cols + c));
                ss += xv * xv;
                dot += ct_at(&w, (size_t)c) * ct_at(&dy, (size_t)(r * cols + c)) * xv;
            }
            double inv = 1.0 / sqrt(ss / (double)cols + 1e-5);
            for (int64_t c = 0; c < cols; c++) {
                double xv = ct_at(&x, (size_t)(r * cols + c)), g = ct_at(&dy, (size_t)(r * cols + c));
                rdx[r * cols + c] = (float)(inv * ct_at(&w, (size_t)c) * g - dot * inv * inv * inv / cols * xv);
                rdw[c] += (float)(g * xv * inv);
            }
        }
        assert_int_equal(ck_rmsnorm_bwd(x.dev, w.dev, dy.dev, dx.dev, rstd, dw.dev, rows, cols,
                                        1e-5f, dt, stream), cudaSuccess);
        ct_download(&dx);
        ct_download(&dw);
        expect_close("rmsnorm_bwd dx", &dx, rdx, n, 1e-3f, dt == PDBX_DTYPE_BF16 ? 2.0f / 128 : 1e-4f);
        expect_close("rmsnorm_bwd dw", &dw, rdw, (size_t)cols, 1e-2f, 1e-4f);
        cudaFree(rstd);
        free(rdx), free(rdw);
        ct_drop(&x), ct_drop(&w), ct_drop(&dy), ct_drop(&dx), ct_drop(&dw);
    }
}

static void test_silu_mul_bwd(void **state)
{
    (void)state;
    const pdbx_dtype dts[] = {PDBX_DTYPE_BF16, PDBX_DTYPE_FP32};
    for (size_t t = 0; t < 2; t++) {
        pdbx_dtype dt = dts[t];
        const int64_t n = 4099;
        tensor g = ct_make((size_t)n, dt, -6.0f, 6.0f), u = ct_make((size_t)n, dt, -2.0f, 2.0f);
        tensor d = ct_make((size_t)n, dt, -1.0f, 1.0f);
        tensor dg = ct_make((size_t)n, dt, 0.0f, 0.0f), du = ct_make((size_t)n, dt, 0.0f, 0.0f);
        float *rg = malloc((size_t)n * sizeof *rg), *ru = malloc((size_t)n * sizeof *ru);
        assert_non_null(rg);
        assert_non_null(ru);
        for (int64_t i = 0; i < n; i++) {
            double gv = ct_at(&g, (size_t)i), sg = 1.0 / (1.0 + exp(-gv)), dv = ct_at(&d, (size_t)i);
            rg[i] = (float)(dv * ct_at(&u, (size_t)i) * sg * (1.0 + gv * (1.0 - sg)));
            ru[i] = (float)(dv * gv * sg);
        }
        assert_int_equal(ck_silu_mul_bwd(g.dev, u.dev, d.dev, dg.dev, du.dev, n, dt, stream),
                         cudaSuccess);
        ct_download(&dg);
        ct_download(&du);
        const float rtol = dt == PDBX_DTYPE_BF16 ? 1.0f / 64 : 1e-4f;
        expect_close("silu_mul_bwd dg", &dg, rg, (size_t)n, 1e-5f, rtol);
        expect_close("silu_mul_bwd du", &du, ru, (size_t)n, 1e-5f, rtol);
        free(rg), free(ru);
        ct_drop(&g), ct_drop(&u), ct_drop(&d), ct_drop(&dg), ct_drop(&du);
    }
}

static void test_embed_scatter_add(void **state)
{
    (void)state;
    const int64_t vocab = 100, tokens = 64, h = 136, vstart = 50, vrows = 50;   /* rank 1 of 2 */
    tensor dy = ct_make((size_t)(tokens * h), PDBX_DTYPE_BF16, -1.0f, 1.0f);
    tensor dt = ct_make((size_t)(vrows * h), PDBX_DTYPE_FP32, -1.0f, 1.0f);
    int32_t ids[64], *ids_dev = NULL;
    for (int64_t t = 0; t < tokens; t++)
        ids[t] = (int32_t)((t * 37 + 11) % vocab / 2 * 2);   /* repeated ids add up */
    float *ref = malloc((size_t)(vrows * h) * sizeof *ref);
    assert_non_null(ref);
    for (int64_t i = 0; i < vrows * h; i++)
        ref[i] = ct_at(&dt, (size_t)i);
    for (int64_t t = 0; t < tokens; t++)
        if (ids[t] >= vstart && ids[t] < vstart + vrows)
            for (int64_t c = 0; c < h; c++)
                ref[(ids[t] - vstart) * h + c] += ct_at(&dy, (size_t)(t * h + c));
    assert_int_equal(cudaMalloc((void **)&ids_dev, sizeof ids), cudaSuccess);
    assert_int_equal(cudaMemcpy(ids_dev, ids, sizeof ids, cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(ck_embed_scatter_add(ids_dev, tokens, dy.dev, vstart, vrows, h, dt.dev,
                                          PDBX_DTYPE_BF16, stream), cudaSuccess);
    ct_download(&dt);
    expect_close("embed_scatter_add", &dt, ref, (size_t)(vrows * h), 1e-5f, 1e-6f);
    free(ref);
    cudaFree(ids_dev);
    ct_drop(&dy), ct_drop(&dt);
}

/* db += column sums of dY (fp32) for bf16 and fp32 dY, narrow and wide, rows past one block's
 * share (the atomics of several row splits add up). */
static void test_bias_grad(void **state)
{
    (void)state;
    const pdbx_dtype dts[] = {PDBX_DTYPE_BF16, PDBX_DTYPE_FP32};
    const int64_t dims[][2] = {{1000, 37}, {3, 4100}, {8192, 96}};
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
        for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
            const int64_t rows = dims[i][0], cols = dims[i][1];
            tensor dy = ct_make((size_t)(rows * cols), dts[di], -1.0f, 1.0f);
            tensor db = ct_make((size_t)cols, PDBX_DTYPE_FP32, -1.0f, 1.0f);
            float *ref = malloc((size_t)cols * sizeof *ref);
            assert_non_null(ref);
            for (int64_t c = 0; c < cols; c++) {
                double acc = ct_at(&db, (size_t)c);
                for (int64_t r = 0; r < rows; r++)
                    acc += ct_at(&dy, (size_t)(r * cols + c));
                ref[c] = (float)acc;
            }
            assert_int_equal(ck_bias_grad(dy.dev, db.dev, rows, cols, dts[di], stream), cudaSuccess);
            ct_download(&db);
            expect_close("bias grad", &db, ref, (size_t)cols, 1e-5f * (float)rows + 1e-4f, 1e-4f);
            free(ref);
            ct_drop(&dy), ct_drop(&db);
        }
}

/* The attention backward on the device after its forward, against attention_bwd_ref on the
 * same rounded inputs. Unfused: the forward's probabilities are kept in s. Fused (flash): the
 * forward saves each row's log-sum-exp, from which the FlashAttention-2 backward recomputes P
 * tile by tile (no scores buffer; delta and the fp32 dQ accumulator are its scratch, filled with
 * garbage first: the kernel must not read what it did not write). */
static void check_attention_bwd(pdbx_dtype dt, int64_t mbs, int64_t seq, int64_t heads, int64_t kv,
                                int64_t d, float atol, int flash)
{
    const int64_t T = mbs * seq;
    const size_t nq = (size_t)(T * heads * d), nk = (size_t)(T * kv * d);
    const size_t nrow = (size_t)(mbs * heads * seq);
    cuda_attention_dims dims = {mbs, seq, heads, kv, d, dt, flash};
    tensor q = ct_make(nq, dt, -1.0f, 1.0f), k = ct_make(nk, dt, -1.0f, 1.0f), v = ct_make(nk, dt, -1.0f, 1.0f);
    tensor o = ct_make(nq, dt, 0.0f, 0.0f), dO = ct_make(nq, dt, -1.0f, 1.0f);
    const size_t ns = flash ? 1 : cuda_attention_scores_elems(&dims);
    tensor s = ct_make(ns, dt, 0.0f, 0.0f), ds = ct_make(ns, dt, 0.0f, 0.0f);
    tensor dq = ct_make(nq, dt, 5.0f, 6.0f), dk = ct_make(nk, dt, 5.0f, 6.0f), dv = ct_make(nk, dt, 5.0f, 6.0f);
    tensor lse = ct_make(nrow, PDBX_DTYPE_FP32, 0.0f, 0.0f);
    tensor delta = ct_make(nrow, PDBX_DTYPE_FP32, 3.0f, 4.0f), acc = ct_make(nq, PDBX_DTYPE_FP32, 3.0f, 4.0f);
    cuda_attention a;
    char err[512];
    if (cuda_attention_plan(gemm, &dims, &a, err, sizeof err) != 0 ||
        cuda_attention_plan_bwd(gemm, &a, err, sizeof err) != 0)
        fail_msg("attention plan: %s", err);
    const cuda_attention_bwd_bufs bufs = {
        .q = q.dev, .k = k.dev, .v = v.dev, .out = o.dev, .dout = dO.dev, .probs = s.dev,
        .dscores = ds.dev, .lse = lse.dev, .delta = delta.dev,
        .dq_acc = dt == PDBX_DTYPE_FP32 ? dq.dev : acc.dev, .dq = dq.dev, .dk = dk.dev, .dv = dv.dev,
    };
    if (cuda_attention_enqueue(gemm, &a, q.dev, k.dev, v.dev, s.dev, o.dev, flash ? lse.dev : NULL,
                               stream, err, sizeof err) ||
        cuda_attention_bwd_enqueue(gemm, &a, &bufs, stream, err, sizeof err))
        fail_msg("attention: %s", err);
    ct_download(&dq), ct_download(&dk), ct_download(&dv);
    double *hq = host_of(&q), *hk = host_of(&k), *hv = host_of(&v), *hd = host_of(&dO);
    double *rq = malloc(nq * sizeof *rq), *rk = malloc(nk * sizeof *rk), *rv = malloc(nk * sizeof *rv);
    assert_true(rq && rk && rv);
    attention_bwd_ref(mbs, seq, heads, kv, d, hq, hk, hv, hd, rq, rk, rv);
    float *fq = malloc(nq * sizeof *fq), *fk = malloc(nk * sizeof *fk), *fv = malloc(nk * sizeof *fv);
    assert_true(fq && fk && fv);
    for (size_t i = 0; i < nq; i++)
        fq[i] = (float)rq[i];
    for (size_t i = 0; i < nk; i++)
        fk[i] = (float)rk[i], fv[i] = (float)rv[i];
    char what[96];
    snprintf(what, sizeof what, "%s attention bwd dq", flash ? "fused" : "unfused");
    expect_close(what, &dq, fq, nq, atol, 1.0f / 32);
    snprintf(what, sizeof what, "%s attention bwd dk", flash ? "fused" : "unfused");
    expect_close(what, &dk, fk, nk, atol, 1.0f / 32);
    snprintf(what, sizeof what, "%s attention bwd dv", flash ? "fused" : "unfused");
    expect_close(what, &dv, fv, nk, atol, 1.0f / 32);
    free(hq), free(hk), free(hv), free(hd), free(rq), free(rk), free(rv), free(fq), free(fk), free(fv);
    ct_drop(&q), ct_drop(&k), ct_drop(&v), ct_drop(&o), ct_drop(&dO), ct_drop(&s), ct_drop(&ds);
    ct_drop(&dq), ct_drop(&dk), ct_drop(&dv), ct_drop(&lse), ct_drop(&delta), ct_drop(&acc);
}

static void test_attention_bwd(void **state)
{
    (void)state;
    check_attention_bwd(PDBX_DTYPE_FP32, 2, 24, 4, 2, 64, 1e-2f, 0);    /* GQA, TF32 GEMMs */
    check_attention_bwd(PDBX_DTYPE_BF16, 2, 40, 8, 2, 64, 6e-2f, 0);    /* GQA, group 4 */
    check_attention_bwd(PDBX_DTYPE_BF16, 1, 33, 4, 4, 128, 6e-2f, 0);   /* MHA, Llama d */
}

/* The fused backward: sequences of one tile, several and a partial last one (tile 32), GQA
 * groups 1 to 8, the three dtypes, both head_dims. */
static void test_flash_attention_bwd(void **state)
{
    (void)state;
    check_attention_bwd(PDBX_DTYPE_BF16, 2, 70, 8, 2, 128, 6e-2f, 1);   /* 3 tiles, partial */
    check_attention_bwd(PDBX_DTYPE_BF16, 1, 32, 4, 4, 64, 6e-2f, 1);    /* one tile, MHA */
    check_attention_bwd(PDBX_DTYPE_BF16, 3, 1, 8, 1, 128, 6e-2f, 1);    /* one token, MQA */
    check_attention_bwd(PDBX_DTYPE_FP16, 2, 130, 8, 1, 64, 3e-2f, 1);   /* group 8 */
    check_attention_bwd(PDBX_DTYPE_FP32, 1, 24, 4, 2, 64, 1e-2f, 1);    /* FMA kernel */
    check_attention_bwd(PDBX_DTYPE_FP32, 2, 97, 4, 2, 128, 1e-2f, 1);
}

const pdbx_backend_entry *pdbx_backend_entry_v1(void);   /* cuda_backend.c, linked in */

static void test_flash_point(void **state)
{
    (void)state;
    const pdbx_compute_ops *ops = pdbx_backend_entry_v1()->compute;
    const pdbx_compute_config cfg = {.local_size = 1, .world_size = 1, .blas_threads = 1,
                                     .dtype = PDBX_DTYPE_BF16, .flash_attention = 1};
    pdbx_compute *c = NULL;
    char err[512] = "";
    if (ops->init(&cfg, &c, err, sizeof err) != 0)
        fail_msg("init: %s", err);
    pdbx_spec spec;
    pdbx_spec_defaults(&spec);
    spec.model = (pdbx_model){.hidden = 2048, .intermediate = 8192, .heads = 32, .kv_heads = 8,
                              .head_dim = 64, .layers = 16, .vocab = 32000};
    spec.seq_len = 2048;
    pdbx_point_shapes p = {.model = spec.model, .tp = 1, .mbs = 2, .seq_len = spec.seq_len, .layers = 1,
                           .ops = PDBX_OP_BIT(PDBX_OP_ATTN_CORE),
                           .passes = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD)};
    assert_int_equal(pdbx_op_shape_for(&spec, 1, p.mbs, PDBX_OP_ATTN_CORE, &p.shape[PDBX_OP_ATTN_CORE]), 0);
    if (ops->prepare(c, &p, err, sizeof err) != 0)
        fail_msg("prepare: %s", err);
    double bwd = -1, fwd = -1, peak = 0, base = 0;
    if (ops->run_op(c, PDBX_OP_ATTN_CORE, PDBX_PASS_BWD, 0, &bwd, err, sizeof err) != 0 ||
        ops->run_op(c, PDBX_OP_ATTN_CORE, PDBX_PASS_FWD, 0, &fwd, err, sizeof err) != 0 ||
        ops->run_op(c, PDBX_OP_ATTN_CORE, PDBX_PASS_BWD, 0, &bwd, err, sizeof err) != 0)
        fail_msg("attn_core: %s", err);
    print_message("fused attn_core bf16 mbs 2 seq 2048 32 heads d 64: fwd %.3f ms, bwd %.3f ms\n", fwd, bwd);
    assert_true(fwd > 0 && bwd > fwd && isfinite(ops->checksum(c)));
    const pdbx_profile_point pp = {.model = p.model, .tp = 1, .pp = 1, .dp = 1, .mbs = p.mbs,
                                   .seq_len = p.seq_len, .layers = 1, .ops = p.ops, .passes = p.passes,
                                   .flash_attention = 1, .dtype = PDBX_DTYPE_BF16,
                                   .backend = PDBX_BACKEND_CUDA, .threads = 1};
    pdbx_profile_memory pm;
    assert_int_equal(pdbx_profile_memory_list(&pp, &pm, err, sizeof err), 0);
    assert_int_equal(ops->mem_peak(c, &peak, &base), 0);
    /* the cuBLASLt workspace (32 MiB) is allocated at init, in the baseline; the unfused
     * path would add 2 x 2 x 32 x 2048^2 x 2 bytes of scores and d scores (1 GiB) */
    const double listed = pm.total - 32.0 * 1024 * 1024;
    print_message("device memory: %.0f bytes above %.0f, listed %.0f\n", peak, base, listed);
    assert_true(fabs(peak - listed) <= 0.05 * listed + (64 << 20));
    ops->release(c);
    ops->fini(c);
}

int main(void)
{
    int rc = ct_gpu_open();
    if (rc != 0)
        return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_bwd),
        cmocka_unit_test(test_rmsnorm_bwd),
        cmocka_unit_test(test_silu_mul_bwd),
        cmocka_unit_test(test_embed_scatter_add),
        cmocka_unit_test(test_bias_grad),
        cmocka_unit_test(test_attention_bwd),
        cmocka_unit_test(test_flash_attention_bwd),
        cmocka_unit_test(test_flash_point),
    };
    rc = cmocka_run_group_tests_name("cuda_kernels_bwd", tests, NULL, NULL);
    ct_gpu_close();
    return rc;
}
