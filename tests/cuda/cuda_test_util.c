/* cuda_test_util.c: the shared helpers of the cuda backend's tests (cuda_test_util.h). */
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

#include "tests/cuda/cuda_test_util.h"
#include "engine/backends/cuda/cuda_attn_mask.h"

/* ASan reserves the address range CUDA maps device memory into unless told not to. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "protect_shadow_gap=0";
}

cudaStream_t stream;
cuda_gemm *gemm;

uint16_t f2bf(float f)   /* round to nearest even */
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float bf2f(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t f2h(float f)    /* IEEE half, round to nearest even; inputs here are small */
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

float h2f(uint16_t h)
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

size_t esize(pdbx_dtype dt)
{
    return dt == PDBX_DTYPE_FP32 ? 4 : 2;
}

/* Rounds v to dt and stores it at index i of a host buffer of that type. */
void ct_put(void *buf, size_t i, pdbx_dtype dt, float v)
{
    if (dt == PDBX_DTYPE_FP32)
        ((float *)buf)[i] = v;
    else if (dt == PDBX_DTYPE_BF16)
        ((uint16_t *)buf)[i] = f2bf(v);
    else
        ((uint16_t *)buf)[i] = f2h(v);
}

float ct_get(const void *buf, size_t i, pdbx_dtype dt)
{
    if (dt == PDBX_DTYPE_FP32)
        return ((const float *)buf)[i];
    return dt == PDBX_DTYPE_BF16 ? bf2f(((const uint16_t *)buf)[i]) : h2f(((const uint16_t *)buf)[i]);
}

float round_to(pdbx_dtype dt, float v)
{
    float tmp;   /* room for any element type */
    ct_put(&tmp, 0, dt, v);
    return ct_get(&tmp, 0, dt);
}

static uint64_t rng_state = 0x243F6A8885A308D3ull;

float urand(float lo, float hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (float)((rng_state >> 40) * (1.0 / 16777216.0));
}

tensor ct_make(size_t n, pdbx_dtype dt, float lo, float hi)
{
    tensor t = {malloc(n * esize(dt)), NULL, n, dt};
    assert_non_null(t.host);
    for (size_t i = 0; i < n; i++)
        ct_put(t.host, i, dt, urand(lo, hi));
    assert_int_equal(cudaMalloc(&t.dev, n * esize(dt)), cudaSuccess);
    assert_int_equal(cudaMemcpy(t.dev, t.host, n * esize(dt), cudaMemcpyHostToDevice), cudaSuccess);
    return t;
}

void ct_download(tensor *t)
{
    assert_int_equal(cudaStreamSynchronize(stream), cudaSuccess);
    assert_int_equal(cudaMemcpy(t->host, t->dev, t->n * esize(t->dt), cudaMemcpyDeviceToHost),
                     cudaSuccess);
}

void ct_drop(tensor *t)
{
    free(t->host);
    cudaFree(t->dev);
}

float ct_at(const tensor *t, size_t i)
{
    return ct_get(t->host, i, t->dt);
}

/* |got - want| <= atol + rtol * |want| for every element, with the worst one in the message. */
void expect_close(const char *what, const tensor *got, const float *want, size_t n,
                         float atol, float rtol)
{
    size_t worst = 0;
    float worst_excess = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float g = ct_at(got, i), d = fabsf(g - want[i]), lim = atol + rtol * fabsf(want[i]);
        if (!(d <= lim) && (d - lim > worst_excess || worst_excess == 0.0f)) {
            worst = i;
            worst_excess = isnan(d) ? INFINITY : d - lim;
        }
    }
    if (worst_excess > 0.0f)
        fail_msg("%s: element %zu is %g, reference %g (atol %g, rtol %g)", what, worst,
                 (double)ct_at(got, worst), (double)want[worst], (double)atol, (double)rtol);
}

double *host_of(const tensor *t)
{
    double *o = malloc(t->n * sizeof *o);
    assert_non_null(o);
    for (size_t i = 0; i < t->n; i++)
        o[i] = ct_at(t, i);
    return o;
}

void emulate_gemm_beta(const cuda_gemm_shape *s, double alpha, double beta, const double *A,
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

void emulate_gemm(const cuda_gemm_shape *s, double alpha, const double *A, const double *B,
                         double *C)
{
    emulate_gemm_beta(s, alpha, 0.0, A, B, C);
}

double *host_rand(size_t n)
{
    double *x = malloc(n * sizeof *x);
    assert_non_null(x);
    for (size_t i = 0; i < n; i++)
        x[i] = urand(-1.0f, 1.0f);
    return x;
}

/* Textbook gradients of L = sum dO * attention(q, k, v) (token row = pos * mbs + b; q head h
 * uses kv head h / group), in double; dq, dk, dv overwritten. */
void attention_bwd_ref(int64_t mbs, int64_t seq, int64_t heads, int64_t kv, int64_t d,
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

void expect_near(const char *what, const double *got, const double *want, size_t n,
                        double tol)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol * (1.0 + fabs(want[i]))))
            fail_msg("%s[%zu] = %g, want %g", what, i, got[i], want[i]);
}

void host_masked_softmax(double *scores, int64_t rows, int64_t q_len, int64_t kv_len)
{
    for (int64_t r = 0; r < rows; r++) {
        double *row = scores + r * kv_len, mx = -INFINITY, sum = 0.0;
        const int64_t keys = ck_keys_visible(r, q_len, kv_len);
        for (int64_t j = 0; j < keys; j++)
            mx = fmax(mx, row[j]);
        for (int64_t j = 0; j < keys; j++)
            sum += exp(row[j] - mx);
        for (int64_t j = 0; j < kv_len; j++)
            row[j] = j < keys ? exp(row[j] - mx) / sum : 0.0;
    }
}

int ct_gpu_open(void)
{
    /* PDBX_TEST_FILTER: run only the tests whose names match (cmocka's * and ? wildcards), as
     * bench/gpu_first_light.sh does under compute-sanitizer, where every test runs 10-100x
     * slower */
    const char *filter = getenv("PDBX_TEST_FILTER");
    if (filter && *filter)
        cmocka_set_test_filter(filter);
    /* the driver first, as the backend's probe does: without one, cudart's own answer is
     * "CUDA driver version is insufficient for CUDA runtime version", which reads as a
     * version mismatch */
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver) {
        const char *why = dlerror();
        printf("SKIP: no CUDA device (no NVIDIA driver: libcuda.so.1 cannot be loaded (%s))\n",
               why ? why : "?");
        return 77;
    }
    dlclose(driver);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n <= 0) {
        printf("SKIP: no CUDA device (cudaGetDeviceCount: %s)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    char err[512] = "";
    if (cudaStreamCreate(&stream) != cudaSuccess || cuda_gemm_create(&gemm, err, sizeof err) != 0) {
        fprintf(stderr, "set-up failed: %s\n", err);
        return 1;
    }
    return 0;
}

void ct_gpu_close(void)
{
    cuda_gemm_destroy(gemm);
    cudaStreamDestroy(stream);
}

int ct_run_host_then_gpu(const char *name, const struct CMUnitTest *host, size_t nh,
                         const struct CMUnitTest *gpu, size_t ng)
{
    char group[128];
    snprintf(group, sizeof group, "%s_host", name);
    int rc = _cmocka_run_group_tests(group, host, nh, NULL, NULL);
    if (rc != 0)
        return rc;
    rc = ct_gpu_open();
    if (rc == 77) {   /* no device: it printed why */
        printf("note: the GPU part was skipped; the host part passed\n");
        return 0;
    }
    if (rc != 0)   /* a device whose set-up failed is a failure, not a skip */
        return rc;
    rc = _cmocka_run_group_tests(name, gpu, ng, NULL, NULL);
    ct_gpu_close();
    return rc;
}
