/* test_cuda_kernels.c: numerical checks of the cuda backend's building blocks on a GPU, each
 * against a plain host reference computed in fp32 from the same (rounded) inputs:
 *   cuBLASLt linear GEMMs (bf16, fp16, fp32/TF32), RMSNorm, SiLU*up (vector and scalar paths),
 *   the vocab-parallel embedding gather (in-shard and masked rows), RoPE (its table, the
 *   rotation on the sequence-major layout, the inverse undoing it) and the residual add, the causal attention core
 *   with MHA, GQA and MQA head layouts, the checksum reduction, the %globaltimer spin of the
 *   timing protocol, and the NVML device sample.
 * Built by engine/backends/cuda/SConscript from the same objects as libpdbx_cuda.so (not the .so: its
 * internals are hidden) into <variant>/tests/, so tests/run_suite.sh runs it.
 * Host-only part, run everywhere: the exact GEMM shapes and offsets the backend hands to
 * cuBLASLt (linear layers and the attention core) are run through an emulation of cuBLASLt's
 * column-major strided-batched definition and must reproduce X W^T and causal GQA attention;
 * the backend's own per-rank dimensions must agree with the planner's shapes for every model
 * preset and valid TP.
 * Backward (passes with bwd): the dgrad/wgrad GEMM shapes and the attention backward's GEMM
 * sequence through the same emulation against the textbook gradients (host), and on a GPU the
 * linear backward, RMSNorm, SiLU x up and attention backward kernels and the embedding
 * scatter-add against host references.
 * Biases: the bias epilogue's layout (host, emulated), and on a GPU Y = X W^T + b through
 * cuBLASLt's epilogue and through cublasGemmEx + ck_bias_add, and the bias gradient kernel.
 * Without a CUDA device the GPU part is skipped with the reason printed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include <cublas_v2.h>

#include "engine/backends/cuda/cuda_attention.h"
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cuda_gemm.h"
#include "engine/backends/cuda/cuda_kernels.h"

/* ASan reserves the address range CUDA maps device memory into unless told not to. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "protect_shadow_gap=0";
}

static cudaStream_t stream;
static cuda_gemm *gemm;

/* ---- host-side number formats ------------------------------------------------------------ */

static uint16_t f2bf(float f)   /* round to nearest even */
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float bf2f(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t f2h(float f)    /* IEEE half, round to nearest even; inputs here are small */
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t sign = (u >> 16) & 0x8000u;
    int32_t exp = (int32_t)((u >> 23) & 0xff) - 127 + 15;
    uint32_t man = u & 0x7fffffu;
    if (exp <= 0) {   /* subnormal half */
        if (exp < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)exp << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
        half++;
    return (uint16_t)half;
}

static float h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
    float f;
    if (exp == 0) {
        f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    uint32_t u = sign | ((exp - 15 + 127) << 23) | (man << 13);
    memcpy(&f, &u, sizeof f);
    return f;
}

static size_t esize(pdbx_dtype dt)
{
    return dt == PDBX_DTYPE_FP32 ? 4 : 2;
}

/* Rounds v to dt and stores it at index i of a host buffer of that type. */
static void put(void *buf, size_t i, pdbx_dtype dt, float v)
{
    if (dt == PDBX_DTYPE_FP32)
        ((float *)buf)[i] = v;
    else if (dt == PDBX_DTYPE_BF16)
        ((uint16_t *)buf)[i] = f2bf(v);
    else
        ((uint16_t *)buf)[i] = f2h(v);
}

static float get(const void *buf, size_t i, pdbx_dtype dt)
{
    if (dt == PDBX_DTYPE_FP32)
        return ((const float *)buf)[i];
    return dt == PDBX_DTYPE_BF16 ? bf2f(((const uint16_t *)buf)[i]) : h2f(((const uint16_t *)buf)[i]);
}

static float round_to(pdbx_dtype dt, float v)
{
    float tmp;   /* room for any element type */
    put(&tmp, 0, dt, v);
    return get(&tmp, 0, dt);
}

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static float urand(float lo, float hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (float)((rng_state >> 40) * (1.0 / 16777216.0));
}

/* Host buffer of n random values in [lo, hi) of type dt, and a device copy. */
typedef struct {
    void *host, *dev;
    size_t n;
    pdbx_dtype dt;
} tensor;

static tensor make(size_t n, pdbx_dtype dt, float lo, float hi)
{
    tensor t = {malloc(n * esize(dt)), NULL, n, dt};
    assert_non_null(t.host);
    for (size_t i = 0; i < n; i++)
        put(t.host, i, dt, urand(lo, hi));
    assert_int_equal(cudaMalloc(&t.dev, n * esize(dt)), cudaSuccess);
    assert_int_equal(cudaMemcpy(t.dev, t.host, n * esize(dt), cudaMemcpyHostToDevice), cudaSuccess);
    return t;
}

static void download(tensor *t)
{
    assert_int_equal(cudaStreamSynchronize(stream), cudaSuccess);
    assert_int_equal(cudaMemcpy(t->host, t->dev, t->n * esize(t->dt), cudaMemcpyDeviceToHost),
                     cudaSuccess);
}

static void drop(tensor *t)
{
    free(t->host);
    cudaFree(t->dev);
}

static float at(const tensor *t, size_t i)
{
    return get(t->host, i, t->dt);
}

/* |got - want| <= atol + rtol * |want| for every element, with the worst one in the message. */
static void expect_close(const char *what, const tensor *got, const float *want, size_t n,
                         float atol, float rtol)
{
    size_t worst = 0;
    float worst_excess = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float g = at(got, i), d = fabsf(g - want[i]), lim = atol + rtol * fabsf(want[i]);
        if (!(d <= lim) && (d - lim > worst_excess || worst_excess == 0.0f)) {
            worst = i;
            worst_excess = isnan(d) ? INFINITY : d - lim;
        }
    }
    if (worst_excess > 0.0f)
        fail_msg("%s: element %zu is %g, reference %g (atol %g, rtol %g)", what, worst,
                 (double)at(got, worst), (double)want[worst], (double)atol, (double)rtol);
}

/* ---- GEMM ------------------------------------------------------------------------------ */

static void check_linear(pdbx_dtype dt, int64_t m, int64_t n, int64_t k, float rtol)
{
    tensor x = make((size_t)(m * k), dt, -1.0f, 1.0f), w = make((size_t)(n * k), dt, -0.1f, 0.1f);
    tensor y = make((size_t)(m * n), dt, 0.0f, 0.0f);
    float *ref = malloc((size_t)(m * n) * sizeof *ref);
    assert_non_null(ref);
    char err[512];
    cuda_gemm_shape s = cuda_gemm_linear_shape(dt, m, n, k);
    cuda_gemm_plan *p = NULL;
    if (cuda_gemm_plan_get(gemm, &s, &p, err, sizeof err) != 0)
        fail_msg("plan: %s", err);
    if (cuda_gemm_exec(gemm, p, 1.0f, w.dev, x.dev, y.dev, stream, err, sizeof err) != 0)
        fail_msg("exec: %s", err);
    download(&y);
    float scale = 0.0f;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0.0, mag = 0.0;
            for (int64_t l = 0; l < k; l++) {
                acc += (double)at(&x, (size_t)(i * k + l)) * at(&w, (size_t)(j * k + l));
                mag += fabs((double)at(&x, (size_t)(i * k + l)) * at(&w, (size_t)(j * k + l)));
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
    drop(&x), drop(&w), drop(&y);
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
    tensor x = make((size_t)(m * k), dt, -1.0f, 1.0f), w = make((size_t)(n * k), dt, -0.1f, 0.1f);
    tensor b = make((size_t)n, dt, -0.5f, 0.5f), y = make((size_t)(m * n), dt, 0.0f, 0.0f);
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
    download(&y);
    float scale = 0.0f;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = at(&b, (size_t)j), mag = fabs(acc);
            for (int64_t l = 0; l < k; l++) {
                acc += (double)at(&x, (size_t)(i * k + l)) * at(&w, (size_t)(j * k + l));
                mag += fabs((double)at(&x, (size_t)(i * k + l)) * at(&w, (size_t)(j * k + l)));
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
    drop(&x), drop(&w), drop(&b), drop(&y);
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
            tensor dy = make((size_t)(rows * cols), dts[di], -1.0f, 1.0f);
            tensor db = make((size_t)cols, PDBX_DTYPE_FP32, -1.0f, 1.0f);
            float *ref = malloc((size_t)cols * sizeof *ref);
            assert_non_null(ref);
            for (int64_t c = 0; c < cols; c++) {
                double acc = at(&db, (size_t)c);
                for (int64_t r = 0; r < rows; r++)
                    acc += at(&dy, (size_t)(r * cols + c));
                ref[c] = (float)acc;
            }
            assert_int_equal(ck_bias_grad(dy.dev, db.dev, rows, cols, dts[di], stream), cudaSuccess);
            download(&db);
            expect_close("bias grad", &db, ref, (size_t)cols, 1e-5f * (float)rows + 1e-4f, 1e-4f);
            free(ref);
            drop(&dy), drop(&db);
        }
}

/* ---- element-wise and row kernels ------------------------------------------------------- */

static void test_rmsnorm(void **state)
{
    (void)state;
    const pdbx_dtype dts[] = {PDBX_DTYPE_BF16, PDBX_DTYPE_FP32};
    /* cols 1000: every row 16-byte aligned; 1003 and 4101: rows start misaligned and end in a
     * partial vector (the warp kernels' scalar head and tail) */
    for (size_t t = 0; t < 6; t++) {
        pdbx_dtype dt = dts[t % 2];
        const int64_t rows = 5, cols = t < 2 ? 1000 : t < 4 ? 1003 : 4101;
        tensor x = make((size_t)(rows * cols), dt, -2.0f, 2.0f), w = make((size_t)cols, dt, 0.5f, 1.5f);
        tensor y = make((size_t)(rows * cols), dt, 0.0f, 0.0f);
        assert_int_equal(ck_rmsnorm(x.dev, w.dev, y.dev, rows, cols, 1e-5f, dt, stream), cudaSuccess);
        download(&y);
        float *ref = malloc((size_t)(rows * cols) * sizeof *ref);
        assert_non_null(ref);
        for (int64_t r = 0; r < rows; r++) {
            double ss = 0.0;
            for (int64_t c = 0; c < cols; c++)
                ss += (double)at(&x, (size_t)(r * cols + c)) * at(&x, (size_t)(r * cols + c));
            float inv = (float)(1.0 / sqrt(ss / (double)cols + 1e-5));
            for (int64_t c = 0; c < cols; c++)
                ref[r * cols + c] = at(&w, (size_t)c) *
                                    round_to(dt, at(&x, (size_t)(r * cols + c)) * inv);
        }
        expect_close(dt == PDBX_DTYPE_BF16 ? "rmsnorm bf16" : "rmsnorm fp32", &y, ref,
                     (size_t)(rows * cols), 1e-5f, dt == PDBX_DTYPE_BF16 ? 2.0f / 128 : 1e-4f);
        free(ref);
        drop(&x), drop(&w), drop(&y);
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
            tensor g = make((size_t)n, dt, -6.0f, 6.0f), u = make((size_t)n, dt, -2.0f, 2.0f);
            tensor o = make((size_t)n, dt, 0.0f, 0.0f);
            assert_int_equal(ck_silu_mul(g.dev, u.dev, o.dev, n, dt, stream), cudaSuccess);
            download(&o);
            float *ref = malloc((size_t)n * sizeof *ref);
            assert_non_null(ref);
            for (int64_t i = 0; i < n; i++) {
                float gv = at(&g, (size_t)i);
                ref[i] = round_to(dt, gv / (1.0f + expf(-gv))) * at(&u, (size_t)i);
            }
            char what[64];
            snprintf(what, sizeof what, "silu_mul dtype %d n %lld", (int)dt, (long long)n);
            expect_close(what, &o, ref, (size_t)n, 1e-6f,
                         dt == PDBX_DTYPE_BF16 ? 1.0f / 128 : dt == PDBX_DTYPE_FP16 ? 2.0f / 1024 : 1e-4f);
            free(ref);
            drop(&g), drop(&u), drop(&o);
        }
}

/* ck_rope on [seq, mbs, heads, d] against a host rotate-half in double from the same rounded
 * inputs and ck_rope_table's values (checked against cos/sin here too); the inverse rotation
 * gives the input back; head_dim 128 (vector path) and 6 (scalar path, d/2 = 3). */
static void test_rope(void **state)
{
    (void)state;
    const pdbx_dtype dts[] = {PDBX_DTYPE_BF16, PDBX_DTYPE_FP16, PDBX_DTYPE_FP32};
    const int64_t dims[] = {128, 6};
    const int64_t mbs = 2, seq = 37, heads = 3;
    for (size_t di = 0; di < 3; di++)
        for (size_t hi = 0; hi < 2; hi++) {
            const pdbx_dtype dt = dts[di];
            const int64_t d = dims[hi], half = d / 2, T = mbs * seq, n = T * heads * d;
            float *table = NULL, *ht = malloc((size_t)(2 * seq * half) * sizeof *ht);
            assert_non_null(ht);
            assert_int_equal(cudaMalloc((void **)&table, (size_t)(2 * seq * half) * sizeof(float)), cudaSuccess);
            assert_int_equal(ck_rope_table(table, seq, d, 10000.0, stream), cudaSuccess);
            assert_int_equal(cudaStreamSynchronize(stream), cudaSuccess);
            assert_int_equal(cudaMemcpy(ht, table, (size_t)(2 * seq * half) * sizeof(float),
                                        cudaMemcpyDeviceToHost), cudaSuccess);
            for (int64_t pos = 0; pos < seq; pos++)
                for (int64_t i = 0; i < half; i++) {
                    double ang = (double)pos * pow(10000.0, -2.0 * (double)i / (double)d);
                    assert_true(fabs(ht[pos * half + i] - cos(ang)) < 1e-6);
                    assert_true(fabs(ht[seq * half + pos * half + i] - sin(ang)) < 1e-6);
                }
            tensor x = make((size_t)n, dt, -2.0f, 2.0f);
            float *in = malloc((size_t)n * sizeof *in), *ref = malloc((size_t)n * sizeof *ref);
            assert_non_null(in);
            assert_non_null(ref);
            for (int64_t i = 0; i < n; i++)
                in[i] = ref[i] = at(&x, (size_t)i);
            for (int64_t t = 0; t < T; t++)
                for (int64_t h = 0; h < heads; h++)
                    for (int64_t i = 0; i < half; i++) {
                        const int64_t pos = t / mbs, lo = (t * heads + h) * d + i;
                        const double c = ht[pos * half + i], s = ht[seq * half + pos * half + i];
                        ref[lo] = (float)(in[lo] * c - in[lo + half] * s);
                        ref[lo + half] = (float)(in[lo + half] * c + in[lo] * s);
                    }
            assert_int_equal(ck_rope(x.dev, T, heads, d, mbs, seq, table, 0, dt, stream), cudaSuccess);
            download(&x);
            char what[64];
            const float rtol = dt == PDBX_DTYPE_BF16 ? 1.0f / 128 : dt == PDBX_DTYPE_FP16 ? 2.0f / 1024 : 1e-5f;
            snprintf(what, sizeof what, "rope dtype %d d %lld", (int)dt, (long long)d);
            expect_close(what, &x, ref, (size_t)n, rtol, rtol);   /* values O(1): atol one rounding */
            assert_int_equal(ck_rope(x.dev, T, heads, d, mbs, seq, table, 1, dt, stream), cudaSuccess);
            download(&x);
            snprintf(what, sizeof what, "rope inverse dtype %d d %lld", (int)dt, (long long)d);
            expect_close(what, &x, in, (size_t)n, 4 * rtol, 2 * rtol);   /* two roundings of |x| <= 2 */
            free(in), free(ref), free(ht);
            cudaFree(table);
            drop(&x);
        }
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
            tensor y = make((size_t)n, dt, -2.0f, 2.0f), x = make((size_t)n, dt, -2.0f, 2.0f);
            float *ref = malloc((size_t)n * sizeof *ref);
            assert_non_null(ref);
            for (int64_t i = 0; i < n; i++)
                ref[i] = at(&y, (size_t)i) + at(&x, (size_t)i);
            assert_int_equal(ck_residual_add(y.dev, x.dev, n, dt, stream), cudaSuccess);
            download(&y);
            char what[64];
            snprintf(what, sizeof what, "residual_add dtype %d n %lld", (int)dt, (long long)n);
            expect_close(what, &y, ref, (size_t)n, 1e-6f,
                         dt == PDBX_DTYPE_BF16 ? 1.0f / 128 : dt == PDBX_DTYPE_FP16 ? 2.0f / 1024 : 1e-6f);
            free(ref);
            drop(&y), drop(&x);
        }
}

static void test_embed_gather(void **state)
{
    (void)state;
    const int64_t vocab = 100, tokens = 33;
    const int64_t widths[] = {136, 7};   /* 272-byte rows (16-byte vectors), 14-byte rows */
    for (size_t wi = 0; wi < 2; wi++) {
        const int64_t h = widths[wi], vstart = 50, vrows = 50;   /* rank 1 of TP 2 */
        tensor table = make((size_t)(vrows * h), PDBX_DTYPE_BF16, -1.0f, 1.0f);
        tensor out = make((size_t)(tokens * h), PDBX_DTYPE_BF16, 5.0f, 6.0f);
        int32_t ids[33], *ids_dev = NULL;
        for (int64_t t = 0; t < tokens; t++)
            ids[t] = (int32_t)((t * 37 + 11) % vocab);
        assert_int_equal(cudaMalloc((void **)&ids_dev, sizeof ids), cudaSuccess);
        assert_int_equal(cudaMemcpy(ids_dev, ids, sizeof ids, cudaMemcpyHostToDevice), cudaSuccess);
        assert_int_equal(ck_embed_gather(ids_dev, tokens, table.dev, vstart, vrows, h, out.dev,
                                         PDBX_DTYPE_BF16, stream), cudaSuccess);
        download(&out);
        float *ref = malloc((size_t)(tokens * h) * sizeof *ref);
        assert_non_null(ref);
        for (int64_t t = 0; t < tokens; t++)
            for (int64_t c = 0; c < h; c++) {
                int64_t row = ids[t] - vstart;
                ref[t * h + c] = row >= 0 && row < vrows ? at(&table, (size_t)(row * h + c)) : 0.0f;
            }
        expect_close("embed_gather", &out, ref, (size_t)(tokens * h), 0.0f, 0.0f);
        free(ref);
        cudaFree(ids_dev);
        drop(&table), drop(&out);
    }
}

static void test_checksum_sum(void **state)
{
    (void)state;
    const size_t n = 100000;
    tensor x = make(n, PDBX_DTYPE_FP32, -1.0f, 1.0f);
    double want = 0.0, *acc = NULL, got = 0.0;
    for (size_t i = 0; i < n; i++)
        want += at(&x, i);
    assert_int_equal(cudaMalloc((void **)&acc, sizeof *acc), cudaSuccess);
    assert_int_equal(cudaMemset(acc, 0, sizeof *acc), cudaSuccess);
    assert_int_equal(ck_accumulate_sum(x.dev, n, PDBX_DTYPE_FP32, acc, stream), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(stream), cudaSuccess);
    assert_int_equal(cudaMemcpy(&got, acc, sizeof got, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_true(fabs(got - want) < 1e-6 * n);
    cudaFree(acc);
    drop(&x);
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

/* ---- attention core --------------------------------------------------------------------- */

static void check_attention(pdbx_dtype dt, int64_t mbs, int64_t seq, int64_t heads, int64_t kv,
                            int64_t d, float atol)
{
    const int64_t T = mbs * seq, group = heads / kv;
    tensor q = make((size_t)(T * heads * d), dt, -1.0f, 1.0f);
    tensor k = make((size_t)(T * kv * d), dt, -1.0f, 1.0f);
    tensor v = make((size_t)(T * kv * d), dt, -1.0f, 1.0f);
    tensor o = make((size_t)(T * heads * d), dt, 9.0f, 9.5f);
    cuda_attention_dims dims = {mbs, seq, heads, kv, d, dt, 0};
    tensor s = make(cuda_attention_scores_elems(&dims), dt, 0.0f, 0.0f);
    cuda_attention a;
    char err[512];
    if (cuda_attention_plan(gemm, &dims, &a, err, sizeof err) != 0)
        fail_msg("attention plan: %s", err);
    if (cuda_attention_enqueue(gemm, &a, q.dev, k.dev, v.dev, s.dev, o.dev, stream, err, sizeof err))
        fail_msg("attention: %s", err);
    download(&o);
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
                        dot += (double)at(&q, qi + (size_t)e) * at(&k, kj + (size_t)e);
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
                        acc += (double)p[j] * at(&v, (size_t)(((j * mbs + b) * kv + g) * d + e));
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
    drop(&q), drop(&k), drop(&v), drop(&o), drop(&s);
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
    tensor q = make((size_t)(T * heads * d), dt, -1.0f, 1.0f);
    tensor k = make((size_t)(T * kv * d), dt, -1.0f, 1.0f);
    tensor v = make((size_t)(T * kv * d), dt, -1.0f, 1.0f);
    tensor o = make((size_t)(T * heads * d), dt, 9.0f, 9.5f);
    tensor of = make((size_t)(T * heads * d), dt, 9.0f, 9.5f);
    cuda_attention_dims dims = {mbs, seq, heads, kv, d, dt, 0};
    tensor s = make(cuda_attention_scores_elems(&dims), dt, 0.0f, 0.0f);
    cuda_attention a, af;
    char err[512];
    if (cuda_attention_plan(gemm, &dims, &a, err, sizeof err) != 0)
        fail_msg("attention plan: %s", err);
    if (cuda_attention_enqueue(gemm, &a, q.dev, k.dev, v.dev, s.dev, o.dev, stream, err, sizeof err))
        fail_msg("attention: %s", err);
    dims.flash = 1;
    if (cuda_attention_plan(gemm, &dims, &af, err, sizeof err) != 0)
        fail_msg("flash plan: %s", err);
    if (cuda_attention_enqueue(gemm, &af, q.dev, k.dev, v.dev, NULL, of.dev, stream, err, sizeof err))
        fail_msg("flash attention: %s", err);
    download(&o);
    download(&of);
    float *ref = malloc(o.n * sizeof *ref);
    assert_non_null(ref);
    for (size_t i = 0; i < o.n; i++)
        ref[i] = at(&o, i);
    char what[128];
    snprintf(what, sizeof what, "flash vs unfused dtype %d mbs %lld seq %lld heads %lld kv %lld "
             "d %lld", (int)dt, (long long)mbs, (long long)seq, (long long)heads, (long long)kv,
             (long long)d);
    expect_close(what, &of, ref, o.n, atol, 1.0f / 64);
    free(ref);
    drop(&q), drop(&k), drop(&v), drop(&o), drop(&of), drop(&s);
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

/* ---- backward (GPU) ----------------------------------------------------------------------- */

static double *host_of(const tensor *t)
{
    double *o = malloc(t->n * sizeof *o);
    assert_non_null(o);
    for (size_t i = 0; i < t->n; i++)
        o[i] = at(t, i);
    return o;
}

/* dgrad into dX (dtype) and wgrad added onto an fp32 dW holding values already. */
static void check_linear_bwd(pdbx_dtype dt, int64_t m, int64_t n, int64_t k, float rtol)
{
    tensor x = make((size_t)(m * k), dt, -1.0f, 1.0f), w = make((size_t)(n * k), dt, -0.1f, 0.1f);
    tensor dy = make((size_t)(m * n), dt, -1.0f, 1.0f), dx = make((size_t)(m * k), dt, 7.0f, 8.0f);
    tensor dw = make((size_t)(n * k), PDBX_DTYPE_FP32, -1.0f, 1.0f);
    float *rx = malloc((size_t)(m * k) * sizeof *rx), *rw = malloc((size_t)(n * k) * sizeof *rw);
    assert_non_null(rx);
    assert_non_null(rw);
    for (int64_t i = 0; i < m; i++)
        for (int64_t l = 0; l < k; l++) {
            double acc = 0.0;
            for (int64_t j = 0; j < n; j++)
                acc += (double)at(&dy, (size_t)(i * n + j)) * at(&w, (size_t)(j * k + l));
            rx[i * k + l] = (float)acc;
        }
    for (int64_t j = 0; j < n; j++)
        for (int64_t l = 0; l < k; l++) {
            double acc = at(&dw, (size_t)(j * k + l));
            for (int64_t i = 0; i < m; i++)
                acc += (double)at(&dy, (size_t)(i * n + j)) * at(&x, (size_t)(i * k + l));
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
    download(&dx);
    download(&dw);
    expect_close("dgrad", &dx, rx, (size_t)(m * k), 2e-3f * (float)n * 0.1f, rtol);
    expect_close("wgrad", &dw, rw, (size_t)(n * k), 2e-3f * (float)m, 1e-3f);
    free(rx), free(rw);
    drop(&x), drop(&w), drop(&dy), drop(&dx), drop(&dw);
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
        tensor x = make(n, dt, -2.0f, 2.0f), w = make((size_t)cols, dt, 0.5f, 1.5f);
        tensor dy = make(n, dt, -1.0f, 1.0f), dx = make(n, dt, 0.0f, 0.0f);
        tensor dw = make((size_t)cols, PDBX_DTYPE_FP32, 0.25f, 0.25f);
        float *rstd = NULL, *rdx = malloc(n * sizeof *rdx), *rdw = malloc((size_t)cols * sizeof *rdw);
        assert_non_null(rdx);
        assert_non_null(rdw);
        assert_int_equal(cudaMalloc((void **)&rstd, (size_t)rows * sizeof *rstd), cudaSuccess);
        for (int64_t c = 0; c < cols; c++)
            rdw[c] = 0.25f;
        for (int64_t r = 0; r < rows; r++) {
            double ss = 0.0, dot = 0.0;
            for (int64_t c = 0; c < cols; c++) {
                double xv = at(&x, (size_t)(r * cols + c));
                ss += xv * xv;
                dot += at(&w, (size_t)c) * at(&dy, (size_t)(r * cols + c)) * xv;
            }
            double inv = 1.0 / sqrt(ss / (double)cols + 1e-5);
            for (int64_t c = 0; c < cols; c++) {
                double xv = at(&x, (size_t)(r * cols + c)), g = at(&dy, (size_t)(r * cols + c));
                rdx[r * cols + c] = (float)(inv * at(&w, (size_t)c) * g - dot * inv * inv * inv / cols * xv);
                rdw[c] += (float)(g * xv * inv);
            }
        }
        assert_int_equal(ck_rmsnorm_bwd(x.dev, w.dev, dy.dev, dx.dev, rstd, dw.dev, rows, cols,
                                        1e-5f, dt, stream), cudaSuccess);
        download(&dx);
        download(&dw);
        expect_close("rmsnorm_bwd dx", &dx, rdx, n, 1e-3f, dt == PDBX_DTYPE_BF16 ? 2.0f / 128 : 1e-4f);
        expect_close("rmsnorm_bwd dw", &dw, rdw, (size_t)cols, 1e-2f, 1e-4f);
        cudaFree(rstd);
        free(rdx), free(rdw);
        drop(&x), drop(&w), drop(&dy), drop(&dx), drop(&dw);
    }
}

static void test_silu_mul_bwd(void **state)
{
    (void)state;
    const pdbx_dtype dts[] = {PDBX_DTYPE_BF16, PDBX_DTYPE_FP32};
    for (size_t t = 0; t < 2; t++) {
        pdbx_dtype dt = dts[t];
        const int64_t n = 4099;
        tensor g = make((size_t)n, dt, -6.0f, 6.0f), u = make((size_t)n, dt, -2.0f, 2.0f);
        tensor d = make((size_t)n, dt, -1.0f, 1.0f);
        tensor dg = make((size_t)n, dt, 0.0f, 0.0f), du = make((size_t)n, dt, 0.0f, 0.0f);
        float *rg = malloc((size_t)n * sizeof *rg), *ru = malloc((size_t)n * sizeof *ru);
        assert_non_null(rg);
        assert_non_null(ru);
        for (int64_t i = 0; i < n; i++) {
            double gv = at(&g, (size_t)i), sg = 1.0 / (1.0 + exp(-gv)), dv = at(&d, (size_t)i);
            rg[i] = (float)(dv * at(&u, (size_t)i) * sg * (1.0 + gv * (1.0 - sg)));
            ru[i] = (float)(dv * gv * sg);
        }
        assert_int_equal(ck_silu_mul_bwd(g.dev, u.dev, d.dev, dg.dev, du.dev, n, dt, stream),
                         cudaSuccess);
        download(&dg);
        download(&du);
        const float rtol = dt == PDBX_DTYPE_BF16 ? 1.0f / 64 : 1e-4f;
        expect_close("silu_mul_bwd dg", &dg, rg, (size_t)n, 1e-5f, rtol);
        expect_close("silu_mul_bwd du", &du, ru, (size_t)n, 1e-5f, rtol);
        free(rg), free(ru);
        drop(&g), drop(&u), drop(&d), drop(&dg), drop(&du);
    }
}

static void test_embed_scatter_add(void **state)
{
    (void)state;
    const int64_t vocab = 100, tokens = 64, h = 136, vstart = 50, vrows = 50;   /* rank 1 of 2 */
    tensor dy = make((size_t)(tokens * h), PDBX_DTYPE_BF16, -1.0f, 1.0f);
    tensor dt = make((size_t)(vrows * h), PDBX_DTYPE_FP32, -1.0f, 1.0f);
    int32_t ids[64], *ids_dev = NULL;
    for (int64_t t = 0; t < tokens; t++)
        ids[t] = (int32_t)((t * 37 + 11) % vocab / 2 * 2);   /* repeated ids add up */
    float *ref = malloc((size_t)(vrows * h) * sizeof *ref);
    assert_non_null(ref);
    for (int64_t i = 0; i < vrows * h; i++)
        ref[i] = at(&dt, (size_t)i);
    for (int64_t t = 0; t < tokens; t++)
        if (ids[t] >= vstart && ids[t] < vstart + vrows)
            for (int64_t c = 0; c < h; c++)
                ref[(ids[t] - vstart) * h + c] += at(&dy, (size_t)(t * h + c));
    assert_int_equal(cudaMalloc((void **)&ids_dev, sizeof ids), cudaSuccess);
    assert_int_equal(cudaMemcpy(ids_dev, ids, sizeof ids, cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(ck_embed_scatter_add(ids_dev, tokens, dy.dev, vstart, vrows, h, dt.dev,
                                          PDBX_DTYPE_BF16, stream), cudaSuccess);
    download(&dt);
    expect_close("embed_scatter_add", &dt, ref, (size_t)(vrows * h), 1e-5f, 1e-6f);
    free(ref);
    cudaFree(ids_dev);
    drop(&dy), drop(&dt);
}

/* The attention backward on the device (after its forward, whose probabilities it keeps)
 * against attention_bwd_ref on the same rounded inputs. flash: the forward is the fused
 * kernel, which leaves no probabilities: the backward recomputes them (s starts as zeros). */
static void attention_bwd_ref(int64_t mbs, int64_t seq, int64_t heads, int64_t kv, int64_t d,
                              const double *q, const double *k, const double *v, const double *dO,
                              double *dq, double *dk, double *dv);
static void check_attention_bwd(pdbx_dtype dt, int64_t mbs, int64_t seq, int64_t heads, int64_t kv,
                                int64_t d, float atol, int flash)
{
    const int64_t T = mbs * seq;
    const size_t nq = (size_t)(T * heads * d), nk = (size_t)(T * kv * d);
    cuda_attention_dims dims = {mbs, seq, heads, kv, d, dt, flash};
    tensor q = make(nq, dt, -1.0f, 1.0f), k = make(nk, dt, -1.0f, 1.0f), v = make(nk, dt, -1.0f, 1.0f);
    tensor o = make(nq, dt, 0.0f, 0.0f), dO = make(nq, dt, -1.0f, 1.0f);
    tensor s = make(cuda_attention_scores_elems(&dims), dt, 0.0f, 0.0f);
    tensor ds = make(cuda_attention_scores_elems(&dims), dt, 0.0f, 0.0f);
    tensor dq = make(nq, dt, 5.0f, 6.0f), dk = make(nk, dt, 5.0f, 6.0f), dv = make(nk, dt, 5.0f, 6.0f);
    cuda_attention a;
    char err[512];
    if (cuda_attention_plan(gemm, &dims, &a, err, sizeof err) != 0 ||
        cuda_attention_plan_bwd(gemm, &a, err, sizeof err) != 0)
        fail_msg("attention plan: %s", err);
    if (cuda_attention_enqueue(gemm, &a, q.dev, k.dev, v.dev, s.dev, o.dev, stream, err, sizeof err) ||
        cuda_attention_bwd_enqueue(gemm, &a, q.dev, k.dev, v.dev, s.dev, dO.dev, ds.dev, dq.dev,
                                   dk.dev, dv.dev, stream, err, sizeof err))
        fail_msg("attention: %s", err);
    download(&dq), download(&dk), download(&dv);
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
    expect_close("attention bwd dq", &dq, fq, nq, atol, 1.0f / 32);
    expect_close("attention bwd dk", &dk, fk, nk, atol, 1.0f / 32);
    expect_close("attention bwd dv", &dv, fv, nk, atol, 1.0f / 32);
    free(hq), free(hk), free(hv), free(hd), free(rq), free(rk), free(rv), free(fq), free(fk), free(fv);
    drop(&q), drop(&k), drop(&v), drop(&o), drop(&dO), drop(&s), drop(&ds), drop(&dq), drop(&dk),
        drop(&dv);
}

static void test_attention_bwd(void **state)
{
    (void)state;
    check_attention_bwd(PDBX_DTYPE_FP32, 2, 24, 4, 2, 64, 1e-2f, 0);    /* GQA, TF32 GEMMs */
    check_attention_bwd(PDBX_DTYPE_BF16, 2, 40, 8, 2, 64, 6e-2f, 0);    /* GQA, group 4 */
    check_attention_bwd(PDBX_DTYPE_BF16, 1, 33, 4, 4, 128, 6e-2f, 0);   /* MHA, Llama d */
    /* the fused path: its backward recomputes P */
    check_attention_bwd(PDBX_DTYPE_BF16, 2, 70, 8, 2, 128, 6e-2f, 1);
    check_attention_bwd(PDBX_DTYPE_FP32, 1, 24, 4, 2, 64, 1e-2f, 1);
}

/* ---- host-only: the layouts the GPU code hands to cuBLASLt, run through an emulated GEMM --- */

/* cuBLASLt's definition, column-major: C[b](i,j) = alpha * sum_l op(A[b])(i,l) op(B[b])(l,j),
 * op(X)(i,l) = X[l + i*ld] when transposed, else X[i + l*ld]. */
static void emulate_gemm_beta(const cuda_gemm_shape *s, double alpha, double beta, const double *A,
                              const double *B, double *C);
static void emulate_gemm(const cuda_gemm_shape *s, double alpha, const double *A, const double *B,
                         double *C)
{
    emulate_gemm_beta(s, alpha, 0.0, A, B, C);
}

static void emulate_gemm_beta(const cuda_gemm_shape *s, double alpha, double beta, const double *A,
                              const double *B, double *C)
{
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t i = 0; i < s->m; i++)
            for (int64_t j = 0; j < s->n; j++) {
                double acc = 0.0;
                for (int64_t l = 0; l < s->k; l++) {
                    double a = s->trans_a ? A[b * s->stride_a + l + i * s->lda]
                                          : A[b * s->stride_a + i + l * s->lda];
                    double x = s->trans_b ? B[b * s->stride_b + j + l * s->ldb]
                                          : B[b * s->stride_b + l + j * s->ldb];
                    acc += a * x;
                }
                double *c = &C[b * s->stride_c + i + j * s->ldc];
                *c = alpha * acc + (beta != 0.0 ? beta * *c : 0.0);
            }
}

static double *host_rand(size_t n)
{
    double *x = malloc(n * sizeof *x);
    assert_non_null(x);
    for (size_t i = 0; i < n; i++)
        x[i] = urand(-1.0f, 1.0f);
    return x;
}

static void test_host_linear_layout(void **state)
{
    (void)state;
    const int64_t m = 5, n = 7, k = 3;
    double *x = host_rand((size_t)(m * k)), *w = host_rand((size_t)(n * k));
    double *y = calloc((size_t)(m * n), sizeof *y);
    assert_non_null(y);
    cuda_gemm_shape s = cuda_gemm_linear_shape(PDBX_DTYPE_BF16, m, n, k);
    assert_int_equal(s.batch, 1);
    emulate_gemm(&s, 1.0, w, x, y);   /* A = weight, B = activations, as the backend calls it */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double want = 0.0;
            for (int64_t l = 0; l < k; l++)
                want += x[i * k + l] * w[j * k + l];   /* Y = X W^T, row-major, W [n, k] */
            assert_true(fabs(y[i * n + j] - want) < 1e-12);
        }
    free(x), free(w), free(y);
}

/* The backward's GEMMs of Y = X W^T (W [n, k]): dgrad gives dX = dY W, wgrad adds dY^T X onto
 * what dW held (beta 1). */
/* A linear shape with a bias: the vector has the out features' n elements (cuBLASLt's bias
 * epilogue adds bias[i] to row i of the column-major C, for every column), which is
 * row-major Y = X W^T + b; cublasGemmEx's arguments carry the bias (the backend adds it with
 * ck_bias_add over C as [rows, out]); a bias on a batched or fp32-output (wgrad) GEMM is
 * refused. */
static void test_host_linear_bias_layout(void **state)
{
    (void)state;
    const int64_t m = 5, n = 7, k = 3;
    double *x = host_rand((size_t)(m * k)), *w = host_rand((size_t)(n * k)), *b = host_rand((size_t)n);
    double *y = calloc((size_t)(m * n), sizeof *y);
    assert_non_null(y);
    cuda_gemm_shape s = cuda_gemm_linear_shape(PDBX_DTYPE_BF16, m, n, k);
    assert_int_equal(cuda_gemm_bias_elems(&s), 0);
    s.bias = 1;
    assert_int_equal(cuda_gemm_bias_elems(&s), n);
    emulate_gemm(&s, 1.0, w, x, y);
    for (int64_t i = 0; i < s.m; i++)          /* CUBLASLT_EPILOGUE_BIAS: C(i, j) += bias[i] */
        for (int64_t j = 0; j < s.n; j++)
            y[i + j * s.ldc] += b[i];
    for (int64_t r = 0; r < m; r++)
        for (int64_t j = 0; j < n; j++) {
            double want = b[j];
            for (int64_t l = 0; l < k; l++)
                want += x[r * k + l] * w[j * k + l];
            assert_true(fabs(y[r * n + j] - want) < 1e-12);
        }
    char err[256];
    cuda_gemm_ex_args a;
    assert_int_equal(cuda_gemm_ex_args_for(&s, PDBX_FP32_MATH_IEEE, &a, err, sizeof err), 0);
    assert_int_equal(a.bias, 1);
    assert_int_equal(a.ldc, a.m);   /* ck_bias_add(C, b, rows = a.n, cols = a.m) is this add */
    cuda_gemm_shape wg = cuda_gemm_wgrad_shape(PDBX_DTYPE_BF16, m, n, k);
    wg.bias = 1;
    assert_int_equal(cuda_gemm_ex_args_for(&wg, PDBX_FP32_MATH_IEEE, &a, err, sizeof err), -1);
    assert_non_null(strstr(err, "a bias on a fp32-output GEMM"));
    free(x), free(w), free(b), free(y);
}

static void test_host_linear_bwd_layout(void **state)
{
    (void)state;
    const int64_t m = 5, n = 7, k = 3;
    double *x = host_rand((size_t)(m * k)), *w = host_rand((size_t)(n * k));
    double *dy = host_rand((size_t)(m * n)), *dw = host_rand((size_t)(n * k));
    double *dw0 = malloc((size_t)(n * k) * sizeof *dw0), *dx = calloc((size_t)(m * k), sizeof *dx);
    assert_non_null(dw0);
    assert_non_null(dx);
    memcpy(dw0, dw, (size_t)(n * k) * sizeof *dw0);
    cuda_gemm_shape dg = cuda_gemm_dgrad_shape(PDBX_DTYPE_BF16, m, n, k);
    cuda_gemm_shape wg = cuda_gemm_wgrad_shape(PDBX_DTYPE_BF16, m, n, k);
    assert_int_equal(wg.c_fp32, 1);
    assert_int_equal(dg.c_fp32, 0);
    emulate_gemm(&dg, 1.0, w, dy, dx);            /* A = weight, B = dY, as the backend calls it */
    emulate_gemm_beta(&wg, 1.0, 1.0, x, dy, dw);  /* A = activations, B = dY */
    for (int64_t i = 0; i < m; i++)
        for (int64_t l = 0; l < k; l++) {
            double want = 0.0;
            for (int64_t j = 0; j < n; j++)
                want += dy[i * n + j] * w[j * k + l];
            assert_true(fabs(dx[i * k + l] - want) < 1e-12);
        }
    for (int64_t j = 0; j < n; j++)
        for (int64_t l = 0; l < k; l++) {
            double want = dw0[j * k + l];
            for (int64_t i = 0; i < m; i++)
                want += dy[i * n + j] * x[i * k + l];
            assert_true(fabs(dw[j * k + l] - want) < 1e-12);
        }
    free(x), free(w), free(dy), free(dw), free(dw0), free(dx);
}

/* Textbook gradients of L = sum dO * attention(q, k, v) (token row = pos * mbs + b; q head h
 * uses kv head h / group), in double; dq, dk, dv overwritten. */
static void attention_bwd_ref(int64_t mbs, int64_t seq, int64_t heads, int64_t kv, int64_t d,
                              const double *q, const double *k, const double *v, const double *dO,
                              double *dq, double *dk, double *dv)
{
    const int64_t T = mbs * seq, group = heads / kv;
    const double scale = 1.0 / sqrt((double)d);
    memset(dq, 0, (size_t)(T * heads * d) * sizeof *dq);
    memset(dk, 0, (size_t)(T * kv * d) * sizeof *dk);
    memset(dv, 0, (size_t)(T * kv * d) * sizeof *dv);
    double *p = malloc((size_t)seq * sizeof *p), *dp = malloc((size_t)seq * sizeof *dp);
    assert_non_null(p);
    assert_non_null(dp);
    for (int64_t b = 0; b < mbs; b++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t i = 0; i < seq; i++) {
                const int64_t g = h / group;
                const double *qi = q + ((i * mbs + b) * heads + h) * d;
                const double *doi = dO + ((i * mbs + b) * heads + h) * d;
                double mx = -INFINITY, sum = 0.0, D = 0.0;
                for (int64_t j = 0; j <= i; j++) {
                    const double *kj = k + ((j * mbs + b) * kv + g) * d;
                    double dot = 0.0;
                    for (int64_t e = 0; e < d; e++)
                        dot += qi[e] * kj[e];
                    p[j] = dot * scale;
                    mx = fmax(mx, p[j]);
                }
                for (int64_t j = 0; j <= i; j++)
                    sum += exp(p[j] - mx);
                for (int64_t j = 0; j <= i; j++) {
                    p[j] = exp(p[j] - mx) / sum;
                    const double *vj = v + ((j * mbs + b) * kv + g) * d;
                    double *dvj = dv + ((j * mbs + b) * kv + g) * d;
                    dp[j] = 0.0;
                    for (int64_t e = 0; e < d; e++) {
                        dp[j] += doi[e] * vj[e];
                        dvj[e] += p[j] * doi[e];
                    }
                    D += p[j] * dp[j];
                }
                double *dqi = dq + ((i * mbs + b) * heads + h) * d;
                for (int64_t j = 0; j <= i; j++) {
                    const double ds = p[j] * (dp[j] - D) * scale;
                    const double *kj = k + ((j * mbs + b) * kv + g) * d;
                    double *dkj = dk + ((j * mbs + b) * kv + g) * d;
                    for (int64_t e = 0; e < d; e++) {
                        dqi[e] += ds * kj[e];
                        dkj[e] += ds * qi[e];
                    }
                }
            }
    free(p), free(dp);
}

static void expect_near(const char *what, const double *got, const double *want, size_t n,
                        double tol)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol * (1.0 + fabs(want[i]))))
            fail_msg("%s[%zu] = %g, want %g", what, i, got[i], want[i]);
}

/* The backend's backward sequence (cuda_attention_bwd_enqueue: its shapes, member offsets,
 * beta accumulation over the group and ck_causal_softmax_bwd's definition) reproduces the
 * textbook gradients. */
static void check_host_attention_bwd(int64_t mbs, int64_t seq, int64_t heads, int64_t kv, int64_t d)
{
    cuda_attention_dims dims = {mbs, seq, heads, kv, d, PDBX_DTYPE_BF16, 0};
    cuda_gemm_shape qk, pv, pt;
    assert_int_equal(cuda_attention_shapes(&dims, &qk, &pv), 0);
    assert_int_equal(cuda_attention_shape_bwd(&dims, &pt), 0);
    const int64_t T = mbs * seq, group = heads / kv;
    const size_t nq = (size_t)(T * heads * d), nk = (size_t)(T * kv * d);
    const size_t ns = cuda_attention_scores_elems(&dims);
    double *q = host_rand(nq), *k = host_rand(nk), *v = host_rand(nk), *dO = host_rand(nq);
    double *P = calloc(ns, sizeof *P), *dS = calloc(ns, sizeof *dS);
    double *dq = host_rand(nq), *dk = host_rand(nk), *dv = host_rand(nk);   /* overwritten */
    double *rq = malloc(nq * sizeof *rq), *rk = malloc(nk * sizeof *rk), *rv = malloc(nk * sizeof *rv);
    assert_true(P && dS && rq && rk && rv);
    int64_t q_off, s_off;
    /* the forward's probabilities, as check_host_attention computes them */
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_member(&dims, jj, &q_off, &s_off);
        emulate_gemm(&qk, cuda_attention_scale(&dims), k, q + q_off, P + s_off);
    }
    for (int64_t r = 0; r < mbs * heads * seq; r++) {
        double *row = P + r * seq, mx = -INFINITY, sum = 0.0;
        int64_t i = r % seq;
        for (int64_t j = 0; j <= i; j++)
            mx = fmax(mx, row[j]);
        for (int64_t j = 0; j <= i; j++)
            sum += exp(row[j] - mx);
        for (int64_t j = 0; j < seq; j++)
            row[j] = j <= i ? exp(row[j] - mx) / sum : 0.0;
    }
    /* cuda_attention_bwd_enqueue's sequence */
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_member(&dims, jj, &q_off, &s_off);
        emulate_gemm_beta(&pt, 1.0, jj ? 1.0 : 0.0, dO + q_off, P + s_off, dv);
        emulate_gemm(&qk, 1.0, v, dO + q_off, dS + s_off);
    }
    for (int64_t r = 0; r < mbs * heads * seq; r++) {   /* ck_causal_softmax_bwd's definition */
        const double *pr = P + r * seq;
        double *gr = dS + r * seq, dot = 0.0;
        int64_t i = r % seq;
        for (int64_t j = 0; j <= i; j++)
            dot += pr[j] * gr[j];
        for (int64_t j = 0; j < seq; j++)
            gr[j] = j <= i ? cuda_attention_scale(&dims) * pr[j] * (gr[j] - dot) : 0.0;
    }
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_member(&dims, jj, &q_off, &s_off);
        emulate_gemm(&pv, 1.0, k, dS + s_off, dq + q_off);
        emulate_gemm_beta(&pt, 1.0, jj ? 1.0 : 0.0, q + q_off, dS + s_off, dk);
    }
    attention_bwd_ref(mbs, seq, heads, kv, d, q, k, v, dO, rq, rk, rv);
    expect_near("attention bwd dq", dq, rq, nq, 1e-6);   /* the scale is a float */
    expect_near("attention bwd dk", dk, rk, nk, 1e-6);   /* the scale is a float */
    expect_near("attention bwd dv", dv, rv, nk, 1e-6);   /* the scale is a float */
    free(q), free(k), free(v), free(dO), free(P), free(dS), free(dq), free(dk), free(dv);
    free(rq), free(rk), free(rv);
}

static void test_host_attention_bwd_layout(void **state)
{
    (void)state;
    check_host_attention_bwd(3, 5, 6, 2, 4);    /* GQA, group 3 */
    check_host_attention_bwd(2, 6, 4, 4, 4);    /* MHA */
    check_host_attention_bwd(1, 9, 4, 1, 8);    /* MQA */
    check_host_attention_bwd(4, 3, 2, 1, 2);    /* mbs > seq */
}

/* The backend derives each point's dimensions itself and refuses a point whose planner GEMM
 * shapes disagree; here both derivations must agree for every model preset and valid TP. */
static void test_host_dims_match_plan(void **state)
{
    (void)state;
    char names[32][64], err[512];
    size_t n = pdbx_preset_names("models", names, 32);
    assert_true(n >= 6);
    int checked = 0;
    for (size_t i = 0; i < n; i++) {
        pdbx_spec spec;
        pdbx_spec_defaults(&spec);
        if (pdbx_model_load(names[i], &spec.model, err, sizeof err) != 0)
            fail_msg("model %s: %s", names[i], err);
        spec.seq_len = 1024;
        const pdbx_model *m = &spec.model;
        for (int tp = 1; tp <= 8; tp *= 2) {
            if (m->heads % tp || m->intermediate % tp || m->vocab % tp ||
                (m->kv_heads % tp && tp % m->kv_heads))
                continue;
            for (int mbs = 1; mbs <= 4; mbs *= 4) {
                pdbx_point_shapes p;
                memset(&p, 0, sizeof p);
                p.model = spec.model;
                p.tp = tp, p.mbs = mbs, p.seq_len = spec.seq_len, p.layers = 2;
                p.ops = PDBX_OPS_ALL;
                for (int op = 0; op < PDBX_OP_COUNT; op++)
                    assert_int_equal(pdbx_op_shape_for(&spec, tp, mbs, (pdbx_op)op, &p.shape[op]), 0);
                cuda_dims d;
                if (cuda_point_dims(&p, tp - 1, &d, err, sizeof err) != 0)
                    fail_msg("%s tp %d mbs %d: %s", names[i], tp, mbs, err);
                assert_int_equal(d.tokens, (int64_t)mbs * 1024);
                assert_int_equal(d.vstart, (int64_t)(tp - 1) * d.vocab);   /* last TP rank */
                assert_int_equal(d.heads * tp, m->heads);
                assert_int_equal(p.shape[PDBX_OP_ATTN_CORE].batch, mbs * d.heads);
                /* fused: the fused GEMMs' n is the planner's (q + k + v, gate + up), the group
                 * bits become the fused ones, and only the leaders may run */
                pdbx_op_shape fq, ff;
                assert_int_equal(pdbx_fused_shape_for(&spec, tp, mbs, PDBX_OP_ATTN_Q, &fq), 0);
                assert_int_equal(pdbx_fused_shape_for(&spec, tp, mbs, PDBX_OP_MLP_GATE, &ff), 0);
                assert_int_equal(fq.n, (d.heads + 2 * d.kv_heads) * d.head_dim);
                assert_int_equal(ff.n, 2 * d.inter);
                /* the bias bits are the shapes' (Qwen2.5: q, k, v; the others none) */
                uint32_t want_bias = 0;
                for (int op = 0; op < PDBX_OP_COUNT; op++)
                    if (p.shape[op].bias)
                        want_bias |= PDBX_OP_BIT(op);
                assert_int_equal(d.bias_ops, want_bias);
                if (strcmp(m->arch.model_type, "qwen2") == 0)
                    assert_int_equal(d.bias_ops, PDBX_OP_BIT(PDBX_OP_ATTN_Q) | PDBX_OP_BIT(PDBX_OP_ATTN_K) |
                                                     PDBX_OP_BIT(PDBX_OP_ATTN_V));
                p.fused_projections = 1;
                cuda_dims fd;
                assert_int_equal(cuda_point_dims(&p, 0, &fd, err, sizeof err), 0);
                assert_int_equal(fd.bias_ops, p.shape[PDBX_OP_ATTN_Q].bias ? CUDA_FUSED_QKV : 0);
                assert_true((fd.ops & CUDA_FUSED_QKV) && (fd.ops & CUDA_FUSED_FC1));
                assert_true(cuda_op_prepared(&fd, PDBX_OP_ATTN_Q) && cuda_op_prepared(&fd, PDBX_OP_MLP_GATE));
                assert_false(cuda_op_prepared(&fd, PDBX_OP_ATTN_K) || cuda_op_prepared(&fd, PDBX_OP_ATTN_V) ||
                             cuda_op_prepared(&fd, PDBX_OP_MLP_UP));
                assert_true(cuda_op_prepared(&fd, PDBX_OP_ATTN_CORE));
                p.fused_projections = 0;
                /* A shape the backend would compute differently is refused, naming the op. */
                p.shape[PDBX_OP_MLP_DOWN].k += 1;
                assert_int_equal(cuda_point_dims(&p, 0, &d, err, sizeof err), -1);
                assert_non_null(strstr(err, "mlp_down"));
                checked++;
            }
        }
    }
    assert_true(checked >= 24);
}

static void check_host_attention(int64_t mbs, int64_t seq, int64_t heads, int64_t kv, int64_t d)
{
    cuda_attention_dims dims = {mbs, seq, heads, kv, d, PDBX_DTYPE_BF16, 0};
    cuda_gemm_shape qk, pv;
    assert_int_equal(cuda_attention_shapes(&dims, &qk, &pv), 0);
    const int64_t T = mbs * seq, group = heads / kv;
    double *q = host_rand((size_t)(T * heads * d)), *k = host_rand((size_t)(T * kv * d));
    double *v = host_rand((size_t)(T * kv * d));
    double *sc = calloc(cuda_attention_scores_elems(&dims), sizeof *sc);
    double *o = calloc((size_t)(T * heads * d), sizeof *o);
    assert_non_null(sc);
    assert_non_null(o);
    int64_t q_off, s_off;
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_member(&dims, jj, &q_off, &s_off);
        emulate_gemm(&qk, cuda_attention_scale(&dims), k, q + q_off, sc + s_off);
    }
    for (int64_t r = 0; r < mbs * heads * seq; r++) {   /* ck_causal_softmax's definition */
        double *row = sc + r * seq, mx = -INFINITY, sum = 0.0;
        int64_t i = r % seq;
        for (int64_t j = 0; j <= i; j++)
            mx = fmax(mx, row[j]);
        for (int64_t j = 0; j <= i; j++)
            sum += exp(row[j] - mx);
        for (int64_t j = 0; j < seq; j++)
            row[j] = j <= i ? exp(row[j] - mx) / sum : 0.0;
    }
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_member(&dims, jj, &q_off, &s_off);
        emulate_gemm(&pv, 1.0, v, sc + s_off, o + q_off);
    }
    double *p = malloc((size_t)seq * sizeof *p);
    assert_non_null(p);
    for (int64_t b = 0; b < mbs; b++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t i = 0; i < seq; i++) {
                const double *qi = q + ((i * mbs + b) * heads + h) * d;
                double mx = -INFINITY, sum = 0.0;
                for (int64_t j = 0; j <= i; j++) {
                    const double *kj = k + ((j * mbs + b) * kv + h / group) * d;
                    double dot = 0.0;
                    for (int64_t e = 0; e < d; e++)
                        dot += qi[e] * kj[e];
                    p[j] = dot / sqrt((double)d);
                    mx = fmax(mx, p[j]);
                }
                for (int64_t j = 0; j <= i; j++)
                    sum += exp(p[j] - mx);
                for (int64_t e = 0; e < d; e++) {
                    double want = 0.0;
                    for (int64_t j = 0; j <= i; j++)
                        want += exp(p[j] - mx) / sum * v[((j * mbs + b) * kv + h / group) * d + e];
                    double got = o[((i * mbs + b) * heads + h) * d + e];
                    if (fabs(got - want) > 1e-5)
                        fail_msg("mbs %lld seq %lld heads %lld kv %lld d %lld: out[b %lld, h %lld, "
                                 "pos %lld, %lld] = %g, want %g", (long long)mbs, (long long)seq,
                                 (long long)heads, (long long)kv, (long long)d, (long long)b,
                                 (long long)h, (long long)i, (long long)e, got, want);
                }
            }
    free(q), free(k), free(v), free(sc), free(o), free(p);
}

/* The fused kernel's shared memory per block (host arithmetic of cuda_flash.cu's layouts):
 * bf16/fp16 d 128: Q, K, V 64 x 136 x 2 = 17408 each, S 64 x 68 x 4 = 17408, P 64 x 72 x 2 =
 * 9216, O 64 x 132 x 4 = 33792 -> 112640; d 64: 3 x 9216 + 17408 + 9216 + 17408 = 71680;
 * fp32 d 128: Q, K 64 x 129 x 4 = 33024 each, V 32768, P 64 x 65 x 4 = 16640 -> 115456; d 64:
 * 2 x 16640 + 16384 + 16640 = 66304. All within the opt-in limit of sm_80 (163 KiB = 166912)
 * and so of sm_90 (227 KiB); unsupported shapes: 0. */
static void test_host_flash_smem(void **state)
{
    (void)state;
    assert_int_equal(ck_flash_smem_bytes(128, PDBX_DTYPE_BF16), 112640);
    assert_int_equal(ck_flash_smem_bytes(128, PDBX_DTYPE_FP16), 112640);
    assert_int_equal(ck_flash_smem_bytes(64, PDBX_DTYPE_BF16), 71680);
    assert_int_equal(ck_flash_smem_bytes(128, PDBX_DTYPE_FP32), 115456);
    assert_int_equal(ck_flash_smem_bytes(64, PDBX_DTYPE_FP32), 66304);
    assert_int_equal(ck_flash_smem_bytes(96, PDBX_DTYPE_BF16), 0);
    assert_int_equal(ck_flash_supported(80, PDBX_DTYPE_BF16), 0);
    const int64_t dims[] = {64, 128};
    const pdbx_dtype dts[] = {PDBX_DTYPE_BF16, PDBX_DTYPE_FP16, PDBX_DTYPE_FP32};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            assert_true(ck_flash_smem_bytes(dims[i], dts[j]) <= 166912);
}

static void test_host_attention_layout(void **state)
{
    (void)state;
    check_host_attention(3, 5, 6, 2, 4);    /* GQA, group 3 */
    check_host_attention(2, 7, 8, 4, 8);    /* GQA, group 2 */
    check_host_attention(2, 6, 4, 4, 4);    /* MHA */
    check_host_attention(1, 9, 4, 1, 8);    /* MQA */
    check_host_attention(4, 3, 2, 1, 2);    /* mbs > seq */
    cuda_attention_dims bad = {1, 8, 6, 4, 8, PDBX_DTYPE_BF16, 0};   /* 6 heads, 4 kv heads */
    cuda_gemm_shape qk, pv;
    assert_int_equal(cuda_attention_shapes(&bad, &qk, &pv), -1);
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

/* C[m,n] = op(A) op(B) by cuBLAS's column-major rules, read from the cublasGemmEx arguments. */
static void emulate_gemm_ex(const cuda_gemm_ex_args *x, const double *A, const double *B, double *C)
{
    for (int i = 0; i < x->m; i++)
        for (int j = 0; j < x->n; j++) {
            double acc = 0.0;
            for (int l = 0; l < x->k; l++) {
                double a = x->transa == CUBLAS_OP_T ? A[l + (size_t)i * x->lda] : A[i + (size_t)l * x->lda];
                double b = x->transb == CUBLAS_OP_T ? B[j + (size_t)l * x->ldb] : B[l + (size_t)j * x->ldb];
                acc += a * b;
            }
            C[i + (size_t)j * x->ldc] = acc;
        }
}

/* gemm_api cublas: cublasGemmEx gets F.linear's TN call (transa T, transb N, m = out features,
 * n = rows, k = in features) and computes Y = X W^T; the compute type follows fp32_math for
 * fp32 only; the wgrad writes fp32; a dimension past int is refused naming it. */
static void test_host_gemm_ex_args(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(cuda_gemm_compute_type(PDBX_DTYPE_FP32, PDBX_FP32_MATH_IEEE), CUBLAS_COMPUTE_32F);
    assert_int_equal(cuda_gemm_compute_type(PDBX_DTYPE_FP32, PDBX_FP32_MATH_TF32), CUBLAS_COMPUTE_32F_FAST_TF32);
    assert_int_equal(cuda_gemm_compute_type(PDBX_DTYPE_BF16, PDBX_FP32_MATH_TF32), CUBLAS_COMPUTE_32F);
    assert_int_equal(cuda_gemm_compute_type(PDBX_DTYPE_FP16, PDBX_FP32_MATH_IEEE), CUBLAS_COMPUTE_32F);
    const int64_t m = 5, n = 7, k = 3;
    cuda_gemm_shape s = cuda_gemm_linear_shape(PDBX_DTYPE_FP32, m, n, k);
    cuda_gemm_ex_args x;
    assert_int_equal(cuda_gemm_ex_args_for(&s, PDBX_FP32_MATH_TF32, &x, err, sizeof err), 0);
    assert_int_equal(x.transa, CUBLAS_OP_T);
    assert_int_equal(x.transb, CUBLAS_OP_N);
    assert_int_equal(x.m, n);
    assert_int_equal(x.n, m);
    assert_int_equal(x.k, k);
    assert_int_equal(x.a_type, CUDA_R_32F);
    assert_int_equal(x.compute_type, CUBLAS_COMPUTE_32F_FAST_TF32);
    double *xs = host_rand((size_t)(m * k)), *w = host_rand((size_t)(n * k));
    double *y = calloc((size_t)(m * n), sizeof *y);
    assert_non_null(y);
    emulate_gemm_ex(&x, w, xs, y);    /* A = weight, B = activations, as cuda_gemm_exec passes */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double want = 0.0;
            for (int64_t l = 0; l < k; l++)
                want += xs[i * k + l] * w[j * k + l];
            assert_true(fabs(y[i * n + j] - want) < 1e-12);
        }
    free(xs), free(w), free(y);
    cuda_gemm_shape wg = cuda_gemm_wgrad_shape(PDBX_DTYPE_BF16, m, n, k);
    assert_int_equal(cuda_gemm_ex_args_for(&wg, PDBX_FP32_MATH_IEEE, &x, err, sizeof err), 0);
    assert_int_equal(x.a_type, CUDA_R_16BF);
    assert_int_equal(x.c_type, CUDA_R_32F);
    assert_int_equal(x.compute_type, CUBLAS_COMPUTE_32F);
    cuda_gemm_shape big = cuda_gemm_linear_shape(PDBX_DTYPE_BF16, (int64_t)1 << 31, n, k);
    assert_int_equal(cuda_gemm_ex_args_for(&big, PDBX_FP32_MATH_IEEE, &x, err, sizeof err), -1);
    assert_non_null(strstr(err, "n 2147483648"));
}

int main(void)
{
    const struct CMUnitTest host_tests[] = {
        cmocka_unit_test(test_host_gemm_ex_args),
        cmocka_unit_test(test_host_linear_layout),
        cmocka_unit_test(test_host_attention_layout),
        cmocka_unit_test(test_host_flash_smem),
        cmocka_unit_test(test_host_linear_bwd_layout),
        cmocka_unit_test(test_host_linear_bias_layout),
        cmocka_unit_test(test_host_attention_bwd_layout),
        cmocka_unit_test(test_host_dims_match_plan),
    };
    int host_rc = cmocka_run_group_tests_name("cuda_layouts_host", host_tests, NULL, NULL);
    if (host_rc != 0)
        return host_rc;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n <= 0) {
        /* The layout tests ran; the GPU numerics need a device. */
        printf("note: GPU numerics skipped: no CUDA device (cudaGetDeviceCount: %s)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 0;
    }
    char err[512];
    if (cudaStreamCreate(&stream) != cudaSuccess || cuda_gemm_create(&gemm, err, sizeof err) != 0) {
        fprintf(stderr, "set-up failed: %s\n", err);
        return 1;
    }
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
        cmocka_unit_test(test_linear_bwd),
        cmocka_unit_test(test_linear_bias),
        cmocka_unit_test(test_bias_grad),
        cmocka_unit_test(test_rmsnorm_bwd),
        cmocka_unit_test(test_silu_mul_bwd),
        cmocka_unit_test(test_embed_scatter_add),
        cmocka_unit_test(test_attention_bwd),
    };
    int rc = cmocka_run_group_tests_name("cuda_kernels", tests, NULL, NULL);
    cuda_gemm_destroy(gemm);
    cudaStreamDestroy(stream);
    return rc;
}
