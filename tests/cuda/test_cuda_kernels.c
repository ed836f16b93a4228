/* test_cuda_kernels.c: numerical checks of the cuda backend's building blocks on a GPU, each
 * against a plain host reference computed in fp32 from the same (rounded) inputs:
 *   cuBLASLt linear GEMMs (bf16, fp16, fp32/TF32), RMSNorm, SiLU*up (vector and scalar paths),
 *   the vocab-parallel embedding gather (in-shard and masked rows), RoPE (its table, the
 *   rotation on the sequence-major layout, the inverse undoing it) and the residual add, the causal attention core
 *   with MHA, GQA and MQA head layouts, the checksum reduction, the %globaltimer spin of the
 *   timing protocol, and the NVML device sample.
 * Built by engine/backends/cuda/SConscript from the same objects as libpdbx_cuda.so (not the .so: its
 * internals are hidden) into <variant>/tests/, so tests/run_suite.sh runs it.
 * Biases: Y = X W^T + b through cuBLASLt's epilogue and through cublasGemmEx + ck_bias_add.
 * The host-only checks of the same code are
 * test_cuda_layouts.c, the backward's numerics test_cuda_kernels_bwd.c, attention with a KV
 * cache test_cuda_attn_kv.c. Without a CUDA device it prints a SKIP line with the reason and
 * exits 77.
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
#include <dlfcn.h>
#include <cublas_v2.h>

#include "engine/backends/cuda/cuda_attention.h"
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cuda_gemm.h"
#include "engine/backends/cuda/cuda_kernels.h"
#include "tests/cuda/cuda_test_util.h"

static void check_linear(pdbx_dtype dt, int64_t m, int64_t n, int64_t k, float rtol)
{
    tensor x = ct_make((size_t)(m * k), dt, -1.0f, 1.0f), w = ct_make((size_t)(n * k), dt, -0.1f, 0.1f);
    tensor y = ct_make((size_t)(m * n), dt, 0.0f, 0.0f);
    float *ref = malloc((size_t)(m * n) * sizeof *ref);
    assert_non_null(ref);
    char err[512];
    cuda_gemm_shape s = cuda_gemm_linear_shape(dt, m, n, k);
    cuda_gemm_plan *p = NULL;
    if (cuda_gemm_plan_get(gemm, &s, &p, err, sizeof err) != 0)
        fail_msg("plan: %s", err);
    if (cuda_gemm_exec(gemm, p, 1.0f, w.dev, x.dev, y.dev, stream, err, sizeof err) != 0)
        fail_msg("exec: %s", err);
    ct_download(&y);
    float scale = 0.0f;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0.0, mag = 0.0;
            for (int64_t l = 0; l < k; l++) {
                acc += (double)ct_at(&x, (size_t)(i * k + l)) * ct_at(&w, (size_t)(j * k + l));
                mag += fabs((double)ct_at(&x, (size_t)(i * k + l)) * ct_at(&w, (size_t)(j * k + l)));
            }
            ref[i * n + j] = (float)acc;
            if ((float)mag > scale)
                scale = (float)mag;
        }
    char what[96];
    snprintf(what, sizeof what, "linear %s %lldx%lldx%lld", dt == PDBX_DTYPE_BF16 ? "bf16" :
             dt == PDBX_DTYPE_FP16 ? "fp16" : "fp32/tf32", (long long)m, (long long)n, (long long)k);
    /* Output rounding (rtol) plus accumulated input rounding relative to sum |x w|. */
    expect_close(what, &y, ref, (size_t)(m * n), 2e-3f * scale, rtol);
    /* A second call with the same shape reuses the cached plan. */
    size_t plans = cuda_gemm_plan_count(gemm);
    cuda_gemm_plan *again = NULL;
    assert_int_equal(cuda_gemm_plan_get(gemm, &s, &again, err, sizeof err), 0);
    assert_ptr_equal(again, p);
    assert_int_equal(cuda_gemm_plan_count(gemm), plans);
    free(ref);
    ct_drop(&x), ct_drop(&w), ct_drop(&y);
}

static void test_linear_bf16(void **state)
{
    (void)state;
    check_linear(PDBX_DTYPE_BF16, 128, 192, 256, 1.0f / 128);
    check_linear(PDBX_DTYPE_BF16, 7, 40, 24, 1.0f / 128);   /* odd m, small n, k */
}

static void test_linear_fp16(void **state)
{
    (void)state;
    check_linear(PDBX_DTYPE_FP16, 64, 96, 128, 1.0f / 1024);
}

static void test_linear_tf32(void **state)
{
    (void)state;
    check_linear(PDBX_DTYPE_FP32, 64, 96, 128, 1e-4f);
}

/* The other math mode and API: TF32 through cuBLASLt, and every dtype through cublasGemmEx
 * (gemm_api cublas), against the same host reference. */
static void with_modes(pdbx_fp32_math math, pdbx_gemm_api api, pdbx_dtype dt, float rtol)
{
    char err[512];
    cuda_gemm *saved = gemm, *g = NULL;
    if (cuda_gemm_create_modes(&g, math, api, err, sizeof err) != 0)
        fail_msg("create: %s", err);
    assert_int_equal(cuda_gemm_fp32_math(g), math);
    assert_int_equal(cuda_gemm_api(g), api);
    gemm = g;
    check_linear(dt, 64, 96, 128, rtol);
    gemm = saved;
    cuda_gemm_destroy(g);
}

static void test_linear_modes(void **state)
{
    (void)state;
    with_modes(PDBX_FP32_MATH_TF32, PDBX_GEMM_API_CUBLASLT, PDBX_DTYPE_FP32, 1e-3f);
    with_modes(PDBX_FP32_MATH_IEEE, PDBX_GEMM_API_CUBLAS, PDBX_DTYPE_FP32, 1e-5f);
    with_modes(PDBX_FP32_MATH_TF32, PDBX_GEMM_API_CUBLAS, PDBX_DTYPE_FP32, 1e-3f);
    with_modes(PDBX_FP32_MATH_IEEE, PDBX_GEMM_API_CUBLAS, PDBX_DTYPE_BF16, 1.0f / 128);
}

/* Y = X W^T + b (cuda_gemm_shape.bias): through the plan's CUBLASLT_EPILOGUE_BIAS, or with
 * gemm_api cublas through cublasGemmEx then ck_bias_add; the bias plan refuses a run without
 * its bias (the epilogue would read a stale pointer). */
static void check_linear_bias(pdbx_dtype dt, int64_t m, int64_t n, int64_t k, float rtol)
{
    tensor x = ct_make((size_t)(m * k), dt, -1.0f, 1.0f), w = ct_make((size_t)(n * k), dt, -0.1f, 0.1f);
    tensor b = ct_make((size_t)n, dt, -0.5f, 0.5f), y = ct_make((size_t)(m * n), dt, 0.0f, 0.0f);
    float *ref = malloc((size_t)(m * n) * sizeof *ref);
    assert_non_null(ref);
    char err[512];
    cuda_gemm_shape s = cuda_gemm_linear_shape(dt, m, n, k);
    s.bias = 1;
    assert_int_equal(cuda_gemm_bias_elems(&s), n);
    cuda_gemm_plan *p = NULL;
    if (cuda_gemm_plan_get(gemm, &s, &p, err, sizeof err) != 0)
        fail_msg("plan: %s", err);
    if (cuda_gemm_exec_bias(gemm, p, 1.0f, w.dev, x.dev, b.dev, y.dev, stream, err, sizeof err) != 0)
        fail_msg("exec: %s", err);
    ct_download(&y);
    float scale = 0.0f;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = ct_at(&b, (size_t)j), mag = fabs(acc);
            for (int64_t l = 0; l < k; l++) {
                acc += (double)ct_at(&x, (size_t)(i * k + l)) * ct_at(&w, (size_t)(j * k + l));
                mag += fabs((double)ct_at(&x, (size_t)(i * k + l)) * ct_at(&w, (size_t)(j * k + l)));
            }
            ref[i * n + j] = (float)acc;
            if ((float)mag > scale)
                scale = (float)mag;
        }
    char what[96];
    snprintf(what, sizeof what, "linear+bias %s %s %lldx%lldx%lld", cuda_gemm_api(gemm) == PDBX_GEMM_API_CUBLAS ?
             "cublas" : "cublaslt", dt == PDBX_DTYPE_BF16 ? "bf16" : "fp32", (long long)m, (long long)n, (long long)k);
    expect_close(what, &y, ref, (size_t)(m * n), 2e-3f * scale, rtol);
    assert_int_equal(cuda_gemm_exec(gemm, p, 1.0f, w.dev, x.dev, y.dev, stream, err, sizeof err), -1);
    assert_non_null(strstr(err, "cuda_gemm_exec_bias"));
    free(ref);
    ct_drop(&x), ct_drop(&w), ct_drop(&b), ct_drop(&y);
}

static void test_linear_bias(void **state)
{
    (void)state;
    check_linear_bias(PDBX_DTYPE_BF16, 128, 192, 256, 1.0f / 128);
    check_linear_bias(PDBX_DTYPE_BF16, 8, 40, 24, 1.0f / 128);
    check_linear_bias(PDBX_DTYPE_FP32, 64, 96, 128, 1e-4f);
    char err[512];
    cuda_gemm *saved = gemm, *g = NULL;
    if (cuda_gemm_create_modes(&g, PDBX_FP32_MATH_IEEE, PDBX_GEMM_API_CUBLAS, err, sizeof err) != 0)
        fail_msg("create: %s", err);
    gemm = g;
    check_linear_bias(PDBX_DTYPE_BF16, 128, 192, 256, 1.0f / 128);
    check_linear_bias(PDBX_DTYPE_FP32, 8, 40, 24, 1e-5f);
    gemm = saved;
    cuda_gemm_destroy(g);
}


static void test_rmsnorm(void **state)
{
    (void)state;
    const pdbx_dtype dts[] = {PDBX_DTYPE_BF16, PDBX_DTYPE_FP32};
    /* cols 1000: every row 16-byte aligned; 1003 and 4101: rows start misaligned and end in a
     * partial vector (the warp kernels' scalar head and tail) */
    for (size_t t = 0; t < 6; t++) {
        pdbx_dtype dt = dts[t % 2];
        const int64_t rows = 5, cols = t < 2 ? 1000 : t < 4 ? 1003 : 4101;
        tensor x = ct_make((size_t)(rows * cols), dt, -2.0f, 2.0f), w = ct_make((size_t)cols, dt, 0.5f, 1.5f);
        tensor y = ct_make((size_t)(rows * cols), dt, 0.0f, 0.0f);
        assert_int_equal(ck_rmsnorm(x.dev, w.dev, y.dev, rows, cols, 1e-5f, dt, stream), cudaSuccess);
        ct_download(&y);
        float *ref = malloc((size_t)(rows * cols) * sizeof *ref);
        assert_non_null(ref);
        for (int64_t r = 0; r < rows; r++) {
            double ss = 0.0;
            for (int64_t c = 0; c < cols; c++)
                ss += (double)ct_at(&x, (size_t)(r * cols + c)) * ct_at(&x, (size_t)(r * cols + c));
            float inv = (float)(1.0 / sqrt(ss / (double)cols + 1e-5));
            for (int64_t c = 0; c < cols; c++)
                ref[r * cols + c] = ct_at(&w, (size_t)c) *
                                    round_to(dt, ct_at(&x, (size_t)(r * cols + c)) * inv);
        }
        expect_close(dt == PDBX_DTYPE_BF16 ? "rmsnorm bf16" : "rmsnorm fp32", &y, ref,
                     (size_t)(rows * cols), 1e-5f, dt == PDBX_DTYPE_BF16 ? 2.0f / 128 : 1e-4f);
        free(ref);
        ct_drop(&x), ct_drop(&w), ct_drop(&y);
    }
}

static void test_silu_mul(void **state)
{
    (void)state;
    const int64_t sizes[] = {4096, 1001};   /* 16-byte vector path, scalar path */
    const pdbx_dtype dts[] = {PDBX_DTYPE_BF16, PDBX_DTYPE_FP16, PDBX_DTYPE_FP32};
    for (size_t d = 0; d < 3; d++)
        for (size_t s = 0; s < 2; s++) {
            pdbx_dtype dt = dts[d];
            int64_t n = sizes[s];
            tensor g = ct_make((size_t)n, dt, -6.0f, 6.0f), u = ct_make((size_t)n, dt, -2.0f, 2.0f);
            tensor o = ct_make((size_t)n, dt, 0.0f, 0.0f);
            assert_int_equal(ck_silu_mul(g.dev, u.dev, o.dev, n, dt, stream), cudaSuccess);
            ct_download(&o);
            float *ref = malloc((size_t)n * sizeof *ref);
            assert_non_null(ref);
            for (int64_t i = 0; i < n; i++) {
                float gv = ct_at(&g, (size_t)i);
                ref[i] = round_to(dt, gv / (1.0f + expf(-gv))) * ct_at(&u, (size_t)i);
            }
            char what[64];
            snprintf(what, sizeof what, "silu_mul dtype %d n %lld", (int)dt, (long long)n);
            expect_close(what, &o, ref, (size_t)n, 1e-6f,
                         dt == PDBX_DTYPE_BF16 ? 1.0f / 128 : dt == PDBX_DTYPE_FP16 ? 2.0f / 1024 : 1e-4f);
            free(ref);
            ct_drop(&g), ct_drop(&u), ct_drop(&o);
        }
}

/* ck_rope on [seq, mbs, heads, d] against a host rotate-half in double from the same rounded
 * inputs and ck_rope_table's values (checked against cos/sin here too); the inverse rotation
 * gives the input back; head_dim 128 (vector path) and 6 (scalar path, d/2 = 3) whole, and
 * partial rotary (the first rot dims of each head; the rest must come back untouched): 16 of
 * 64 (pythia's rotary_pct 0.25, the vector path for bf16/fp16 and fp32) and 12 of 64 (rot/2 =
 * 6: the scalar path). */
static void check_rope(pdbx_dtype dt, int64_t d, int64_t rot)
{
    const int64_t mbs = 2, seq = 37, heads = 3;
    const int64_t half = rot / 2, T = mbs * seq, n = T * heads * d;
    float *table = NULL, *ht = malloc((size_t)(2 * seq * half) * sizeof *ht);
    assert_non_null(ht);
    assert_int_equal(cudaMalloc((void **)&table, (size_t)(2 * seq * half) * sizeof(float)), cudaSuccess);
    assert_int_equal(ck_rope_table(table, seq, rot, 10000.0, stream), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(stream), cudaSuccess);
    assert_int_equal(cudaMemcpy(ht, table, (size_t)(2 * seq * half) * sizeof(float),
                                cudaMemcpyDeviceToHost), cudaSuccess);
    for (int64_t pos = 0; pos < seq; pos++)
        for (int64_t i = 0; i < half; i++) {
            double ang = (double)pos * pow(10000.0, -2.0 * (double)i / (double)rot);
            assert_true(fabs(ht[pos * half + i] - cos(ang)) < 1e-6);
            assert_true(fabs(ht[seq * half + pos * half + i] - sin(ang)) < 1e-6);
        }
    tensor x = ct_make((size_t)n, dt, -2.0f, 2.0f);
    float *in = malloc((size_t)n * sizeof *in), *ref = malloc((size_t)n * sizeof *ref);
    assert_non_null(in);
    assert_non_null(ref);
    for (int64_t i = 0; i < n; i++)
        in[i] = ref[i] = ct_at(&x, (size_t)i);
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t i = 0; i < half; i++) {
                const int64_t pos = t / mbs, lo = (t * heads + h) * d + i;
                const double c = ht[pos * half + i], s = ht[seq * half + pos * half + i];
                ref[lo] = (float)(in[lo] * c - in[lo + half] * s);
                ref[lo + half] = (float)(in[lo + half] * c + in[lo] * s);
            }
    assert_int_equal(ck_rope(x.dev, T, heads, d, rot, mbs, seq, table, 0, dt, stream), cudaSuccess);
    ct_download(&x);
    char what[64];
    const float rtol = dt == PDBX_DTYPE_BF16 ? 1.0f / 128 : dt == PDBX_DTYPE_FP16 ? 2.0f / 1024 : 1e-5f;
    snprintf(what, sizeof what, "rope dtype %d d %lld rot %lld", (int)dt, (long long)d, (long long)rot);
    expect_close(what, &x, ref, (size_t)n, rtol, rtol);   /* values O(1): atol one rounding */
    for (int64_t i = 0; i < n; i++)   /* the dims past rot: not written at all */
        if (i % d >= 2 * half && ct_at(&x, (size_t)i) != in[i])
            fail_msg("rope d %lld rot %lld: element %lld past the rotated dims changed",
                     (long long)d, (long long)rot, (long long)i);
    assert_int_equal(ck_rope(x.dev, T, heads, d, rot, mbs, seq, table, 1, dt, stream), cudaSuccess);
    ct_download(&x);
    snprintf(what, sizeof what, "rope inverse dtype %d d %lld rot %lld", (int)dt, (long long)d,
             (long long)rot);
    expect_close(what, &x, in, (size_t)n, 4 * rtol, 2 * rtol);   /* two roundings of |x| <= 2 */
    free(in), free(ref), free(ht);
    cudaFree(table);
    ct_drop(&x);
}

static void test_rope(void **state)
{
    (void)state;
    const pdbx_dtype dts[] = {PDBX_DTYPE_BF16, PDBX_DTYPE_FP16, PDBX_DTYPE_FP32};
    const int64_t shapes[][2] = {{128, 128}, {6, 6}, {64, 16}, {64, 12}};
    for (size_t di = 0; di < 3; di++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            check_rope(dts[di], shapes[si][0], shapes[si][1]);
    /* rot outside 2..d is refused before any launch */
    assert_int_equal(ck_rope(NULL, 2, 1, 8, 10, 1, 2, NULL, 0, PDBX_DTYPE_FP32, stream), cudaErrorInvalidValue);
    assert_int_equal(ck_rope(NULL, 2, 1, 8, 0, 1, 2, NULL, 0, PDBX_DTYPE_FP32, stream), cudaErrorInvalidValue);
}

/* ck_residual_add: y += x, vector (4096) and scalar (1001) paths. */
static void test_residual_add(void **state)
{
    (void)state;
    const int64_t sizes[] = {4096, 1001};
    const pdbx_dtype dts[] = {PDBX_DTYPE_BF16, PDBX_DTYPE_FP16, PDBX_DTYPE_FP32};
    for (size_t d = 0; d < 3; d++)
        for (size_t s = 0; s < 2; s++) {
            const pdbx_dtype dt = dts[d];
            const int64_t n = sizes[s];
            tensor y = ct_make((size_t)n, dt, -2.0f, 2.0f), x = ct_make((size_t)n, dt, -2.0f, 2.0f);
            float *ref = malloc((size_t)n * sizeof *ref);
            assert_non_null(ref);
            for (int64_t i = 0; i < n; i++)
                ref[i] = ct_at(&y, (size_t)i) + ct_at(&x, (size_t)i);
            assert_int_equal(ck_residual_add(y.dev, x.dev, n, dt, stream), cudaSuccess);
            ct_download(&y);
            char what[64];
            snprintf(what, sizeof what, "residual_add dtype %d n %lld", (int)dt, (long long)n);
            expect_close(what, &y, ref, (size_t)n, 1e-6f,
                         dt == PDBX_DTYPE_BF16 ? 1.0f / 128 : dt == PDBX_DTYPE_FP16 ? 2.0f / 1024 : 1e-6f);
            free(ref);
            ct_drop(&y), ct_drop(&x);
        }
}

static void test_embed_gather(void **state)
{
    (void)state;
    const int64_t vocab = 100, tokens = 33;
    const int64_t widths[] = {136, 7};   /* 272-byte rows (16-byte vectors), 14-byte rows */
    for (size_t wi = 0; wi < 2; wi++) {
        const int64_t h = widths[wi], vstart = 50, vrows = 50;   /* rank 1 of TP 2 */
        tensor table = ct_make((size_t)(vrows * h), PDBX_DTYPE_BF16, -1.0f, 1.0f);
        tensor out = ct_make((size_t)(tokens * h), PDBX_DTYPE_BF16, 5.0f, 6.0f);
        int32_t ids[33], *ids_dev = NULL;
        for (int64_t t = 0; t < tokens; t++)
            ids[t] = (int32_t)((t * 37 + 11) % vocab);
        assert_int_equal(cudaMalloc((void **)&ids_dev, sizeof ids), cudaSuccess);
        assert_int_equal(cudaMemcpy(ids_dev, ids, sizeof ids, cudaMemcpyHostToDevice), cudaSuccess);
        assert_int_equal(ck_embed_gather(ids_dev, tokens, table.dev, vstart, vrows, h, out.dev,
                                         PDBX_DTYPE_BF16, stream), cudaSuccess);
        ct_download(&out);
        float *ref = malloc((size_t)(tokens * h) * sizeof *ref);
        assert_non_null(ref);
        for (int64_t t = 0; t < tokens; t++)
            for (int64_t c = 0; c < h; c++) {
                int64_t row = ids[t] - vstart;
                ref[t * h + c] = row >= 0 && row < vrows ? ct_at(&table, (size_t)(row * h + c)) : 0.0f;
            }
        expect_close("embed_gather", &out, ref, (size_t)(tokens * h), 0.0f, 0.0f);
        free(ref);
        cudaFree(ids_dev);
        ct_drop(&table), ct_drop(&out);
    }
}

static void test_checksum_sum(void **state)
{
    (void)state;
    const size_t n = 100000;
    tensor x = ct_make(n, PDBX_DTYPE_FP32, -1.0f, 1.0f);
    double want = 0.0, *acc = NULL, got = 0.0;
    for (size_t i = 0; i < n; i++)
        want += ct_at(&x, i);
    assert_int_equal(cudaMalloc((void **)&acc, sizeof *acc), cudaSuccess);
    assert_int_equal(cudaMemset(acc, 0, sizeof *acc), cudaSuccess);
    assert_int_equal(ck_accumulate_sum(x.dev, n, PDBX_DTYPE_FP32, acc, stream), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(stream), cudaSuccess);
    assert_int_equal(cudaMemcpy(&got, acc, sizeof got, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_true(fabs(got - want) < 1e-6 * n);
    cudaFree(acc);
    ct_drop(&x);
}

/* The timing spin waits %globaltimer nanoseconds (time, not SM cycles): 300 us between two
 * events measures 300 us, whatever the clock; 0 enqueues nothing. */
static void test_spin_ns(void **state)
{
    (void)state;
    cudaEvent_t a, b;
    float ms = 0.0f;
    assert_int_equal(cudaEventCreate(&a), cudaSuccess);
    assert_int_equal(cudaEventCreate(&b), cudaSuccess);
    for (int rep = 0; rep < 3; rep++) {   /* the first launch pays the module load */
        assert_int_equal(cudaEventRecord(a, stream), cudaSuccess);
        assert_int_equal(ck_spin_ns(300000, stream), cudaSuccess);
        assert_int_equal(cudaEventRecord(b, stream), cudaSuccess);
        assert_int_equal(cudaEventSynchronize(b), cudaSuccess);
        assert_int_equal(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
    }
    print_message("ck_spin_ns(300 us): %.3f ms between events\n", ms);
    assert_true(ms >= 0.295f && ms < 1.0f);
    assert_int_equal(ck_spin_ns(0, stream), cudaSuccess);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
}

static void check_attention(pdbx_dtype dt, int64_t mbs, int64_t seq, int64_t heads, int64_t kv,
                            int64_t d, float atol)
{
    const int64_t T = mbs * seq, group = heads / kv;
    tensor q = ct_make((size_t)(T * heads * d), dt, -1.0f, 1.0f);
    tensor k = ct_make((size_t)(T * kv * d), dt, -1.0f, 1.0f);
    tensor v = ct_make((size_t)(T * kv * d), dt, -1.0f, 1.0f);
    tensor o = ct_make((size_t)(T * heads * d), dt, 9.0f, 9.5f);
    cuda_attention_dims dims = {mbs, seq, heads, kv, d, dt, 0};
    tensor s = ct_make(cuda_attention_scores_elems(&dims), dt, 0.0f, 0.0f);
    cuda_attention a;
    char err[512];
    if (cuda_attention_plan(gemm, &dims, &a, err, sizeof err) != 0)
        fail_msg("attention plan: %s", err);
    if (cuda_attention_enqueue(gemm, &a, q.dev, k.dev, v.dev, s.dev, o.dev, NULL, stream, err, sizeof err))
        fail_msg("attention: %s", err);
    ct_download(&o);
    /* Reference: token row = pos * mbs + b; q head h uses kv head h / group. */
    float *ref = malloc((size_t)(T * heads * d) * sizeof *ref), *p = malloc((size_t)seq * sizeof *p);
    assert_non_null(ref);
    assert_non_null(p);
    const float scale = 1.0f / sqrtf((float)d);
    for (int64_t b = 0; b < mbs; b++)
        for (int64_t h = 0; h < heads; h++) {
            int64_t g = h / group;
            for (int64_t i = 0; i < seq; i++) {
                size_t qi = (size_t)(((i * mbs + b) * heads + h) * d);
                float mx = -INFINITY;
                for (int64_t j = 0; j <= i; j++) {
                    size_t kj = (size_t)(((j * mbs + b) * kv + g) * d);
                    double dot = 0.0;
                    for (int64_t e = 0; e < d; e++)
                        dot += (double)ct_at(&q, qi + (size_t)e) * ct_at(&k, kj + (size_t)e);
                    p[j] = round_to(dt, (float)dot * scale);   /* scores are stored in dt */
                    mx = fmaxf(mx, p[j]);
                }
                double sum = 0.0;
                for (int64_t j = 0; j <= i; j++)
                    sum += exp((double)(p[j] - mx));
                for (int64_t j = 0; j <= i; j++)
                    p[j] = round_to(dt, (float)(exp((double)(p[j] - mx)) / sum));
                for (int64_t e = 0; e < d; e++) {
                    double acc = 0.0;
                    for (int64_t j = 0; j <= i; j++)
                        acc += (double)p[j] * ct_at(&v, (size_t)(((j * mbs + b) * kv + g) * d + e));
                    ref[qi + (size_t)e] = (float)acc;
                }
            }
        }
    char what[128];
    snprintf(what, sizeof what, "attention dtype %d mbs %lld seq %lld heads %lld kv %lld d %lld",
             (int)dt, (long long)mbs, (long long)seq, (long long)heads, (long long)kv, (long long)d);
    expect_close(what, &o, ref, (size_t)(T * heads * d), atol, 1.0f / 64);
    free(ref);
    free(p);
    ct_drop(&q), ct_drop(&k), ct_drop(&v), ct_drop(&o), ct_drop(&s);
}

static void test_attention_gqa(void **state)
{
    (void)state;
    check_attention(PDBX_DTYPE_BF16, 2, 40, 4, 2, 64, 2e-2f);    /* GQA, group 2 */
    check_attention(PDBX_DTYPE_BF16, 3, 17, 8, 2, 128, 2e-2f);   /* GQA, group 4, Llama d */
}

static void test_attention_mha_mqa(void **state)
{
    (void)state;
    check_attention(PDBX_DTYPE_BF16, 2, 33, 4, 4, 64, 2e-2f);    /* MHA */
    check_attention(PDBX_DTYPE_BF16, 1, 64, 4, 1, 64, 2e-2f);    /* MQA (kv replicated, TP > k) */
    check_attention(PDBX_DTYPE_FP16, 2, 24, 4, 2, 64, 5e-3f);
    check_attention(PDBX_DTYPE_FP32, 2, 24, 4, 2, 64, 5e-3f);    /* TF32 GEMMs */
}

/* The fused forward (ck_flash_attention through cuda_attention_enqueue with dims.flash)
 * against the unfused path on the same q, k, v: sequences of one tile, several tiles and a
 * partial last tile, GQA groups 1, 2, 4 and 8, the three dtypes. The fused path keeps S in
 * fp32 where the unfused one rounds S and P to the dtype, hence the tolerances. */
static void check_flash(pdbx_dtype dt, int64_t mbs, int64_t seq, int64_t heads, int64_t kv,
                        int64_t d, float atol)
{
    const int64_t T = mbs * seq;
    tensor q = ct_make((size_t)(T * heads * d), dt, -1.0f, 1.0f);
    tensor k = ct_make((size_t)(T * kv * d), dt, -1.0f, 1.0f);
    tensor v = ct_make((size_t)(T * kv * d), dt, -1.0f, 1.0f);
    tensor o = ct_make((size_t)(T * heads * d), dt, 9.0f, 9.5f);
    tensor of = ct_make((size_t)(T * heads * d), dt, 9.0f, 9.5f);
    cuda_attention_dims dims = {mbs, seq, heads, kv, d, dt, 0};
    tensor s = ct_make(cuda_attention_scores_elems(&dims), dt, 0.0f, 0.0f);
    cuda_attention a, af;
    char err[512];
    if (cuda_attention_plan(gemm, &dims, &a, err, sizeof err) != 0)
        fail_msg("attention plan: %s", err);
    if (cuda_attention_enqueue(gemm, &a, q.dev, k.dev, v.dev, s.dev, o.dev, NULL, stream, err, sizeof err))
        fail_msg("attention: %s", err);
    dims.flash = 1;
    if (cuda_attention_plan(gemm, &dims, &af, err, sizeof err) != 0)
        fail_msg("flash plan: %s", err);
    if (cuda_attention_enqueue(gemm, &af, q.dev, k.dev, v.dev, NULL, of.dev, NULL, stream, err, sizeof err))
        fail_msg("flash attention: %s", err);
    ct_download(&o);
    ct_download(&of);
    float *ref = malloc(o.n * sizeof *ref);
    assert_non_null(ref);
    for (size_t i = 0; i < o.n; i++)
        ref[i] = ct_at(&o, i);
    char what[128];
    snprintf(what, sizeof what, "flash vs unfused dtype %d mbs %lld seq %lld heads %lld kv %lld "
             "d %lld", (int)dt, (long long)mbs, (long long)seq, (long long)heads, (long long)kv,
             (long long)d);
    expect_close(what, &of, ref, o.n, atol, 1.0f / 64);
    free(ref);
    ct_drop(&q), ct_drop(&k), ct_drop(&v), ct_drop(&o), ct_drop(&of), ct_drop(&s);
}

static void test_flash_attention(void **state)
{
    (void)state;
    check_flash(PDBX_DTYPE_BF16, 2, 200, 8, 2, 128, 2e-2f);   /* 4 tiles, the last partial */
    check_flash(PDBX_DTYPE_BF16, 1, 64, 4, 4, 64, 2e-2f);     /* one tile, MHA */
    check_flash(PDBX_DTYPE_BF16, 3, 1, 8, 1, 128, 2e-2f);     /* one token, MQA */
    check_flash(PDBX_DTYPE_FP16, 2, 130, 8, 1, 64, 5e-3f);    /* group 8 */
    check_flash(PDBX_DTYPE_FP32, 2, 97, 4, 2, 128, 5e-3f);    /* FMA kernel vs TF32 GEMMs */
    check_flash(PDBX_DTYPE_FP32, 1, 64, 2, 1, 64, 5e-3f);
    /* a head_dim the kernel does not have is refused by name, not run */
    cuda_attention_dims bad = {1, 64, 2, 1, 96, PDBX_DTYPE_BF16, 1};
    cuda_attention a;
    char err[512] = "";
    assert_int_equal(cuda_attention_plan(gemm, &bad, &a, err, sizeof err), -1);
    assert_non_null(strstr(err, "head_dim 96"));
}

/* device_noise (cuda_nvml.c): with the driver's NVML, a sample of this device with a plausible
 * SM clock and temperature, and no idle bit in the reasons; without NVML, -1 (no figures). */
static void test_device_noise(void **state)
{
    (void)state;
    pdbx_compute_config cfg = { .local_rank = 0, .local_size = 1, .world_rank = 0, .world_size = 1,
                                .blas_threads = 1, .dtype = PDBX_DTYPE_FP32 };
    pdbx_compute *c = NULL;
    char err[512];
    assert_int_equal(cuda_init(&cfg, &c, err, sizeof err), 0);
    void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    pdbx_device_noise s = { 0 };
    int rc = cuda_device_noise(c, &s);
    if (!nvml) {
        assert_int_equal(rc, -1);
    } else {
        assert_int_equal(rc, 0);
        printf("note: NVML sample: SM %.0f MHz, %.0f C, reasons 0x%llx\n", s.sm_clock_mhz,
               s.temp_c, (unsigned long long)s.throttle_reasons);
        assert_true(s.sm_clock_mhz >= 100 && s.sm_clock_mhz <= 5000);
        assert_true(s.temp_c >= 5 && s.temp_c <= 125);
        assert_false(s.throttle_reasons & 0x1);
        assert_int_equal(cuda_device_noise(c, &s), 0);   /* the opened handle is reused */
        dlclose(nvml);
    }
    cuda_fini(c);
}

int main(void)
{
    int rc = ct_gpu_open();
    if (rc != 0)
        return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_bf16),
        cmocka_unit_test(test_linear_fp16),
        cmocka_unit_test(test_linear_tf32),
        cmocka_unit_test(test_linear_modes),
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_silu_mul),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_residual_add),
        cmocka_unit_test(test_embed_gather),
        cmocka_unit_test(test_checksum_sum),
        cmocka_unit_test(test_spin_ns),
        cmocka_unit_test(test_attention_gqa),
        cmocka_unit_test(test_attention_mha_mqa),
        cmocka_unit_test(test_flash_attention),
        cmocka_unit_test(test_device_noise),
        cmocka_unit_test(test_linear_bias),
    };
    rc = cmocka_run_group_tests_name("cuda_kernels", tests, NULL, NULL);
    ct_gpu_close();
    return rc;
}
