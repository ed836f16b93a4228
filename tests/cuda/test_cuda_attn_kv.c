/* test_cuda_attn_kv.c: the cuda backend's attention with a KV cache (backend.h attn_kv,
 * cuda_attn_kv.c): the inference phase's prefill rows (q_len C after a cached prefix, kv_len
 * P + C) and decode rows (q_len 1 against K cached keys), GQA read in place.
 *
 * Host part, run everywhere the backend builds: the GEMM shapes and group-member offsets the
 * backend hands to cuBLASLt (cuda_attention_kv_shapes, cuda_attention_kv_member) run through
 * the emulation of cuBLASLt's strided-batched definition, with the softmax's mask as the kernel
 * applies it (cuda_attn_mask.h, ck_keys_visible), must reproduce attention written out from its
 * definition (query i of a sequence sees keys 0 .. kv_len - q_len + i) in double; the mask's
 * rows for training, prefill and decode; bad shapes refused. A mutated stride, offset or
 * mask fails it.
 * GPU part: cuda_attention_kv_enqueue (the backend's GEMMs and ck_prefix_softmax) against the
 * same reference on the rounded inputs, bf16, fp16 and fp32; the backend's attn_kv slot (as
 * pdbx-engine calls it through the entry) timing prefill and decode rows, keeping a shape's
 * buffers for the next call and giving them back at release(). Without a device it is skipped
 * with the reason printed (the host part still decides the exit status).
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
#include "engine/backends/cuda/cuda_attn_mask.h"
#include "engine/backends/cuda/cuda_gemm.h"
#include "engine/backends/cuda/cuda_kernels.h"
#include "tests/cuda/cuda_test_util.h"

/* Element offsets in the layouts of cuda_attention.h: q/out [q_len, batch, heads, d], k/v
 * [kv_len, batch, kv_heads, d]. */
static size_t q_at(const pdbx_attn_kv_shape *s, int64_t i, int64_t b, int64_t h)
{
    return (size_t)(((i * s->batch + b) * s->heads + h) * s->head_dim);
}

static size_t kv_at(const pdbx_attn_kv_shape *s, int64_t j, int64_t b, int64_t g)
{
    return (size_t)(((j * s->batch + b) * s->kv_heads + g) * s->head_dim);
}

/* Attention with a cached prefix from its definition, in double: query i of sequence b, head h
 * sees keys 0 .. kv_len - q_len + i of kv head h / (heads / kv_heads). */
static void kv_reference(const pdbx_attn_kv_shape *s, const double *q, const double *k,
                         const double *v, double *out)
{
    const int64_t d = s->head_dim, group = s->heads / s->kv_heads, prefix = s->kv_len - s->q_len;
    double *p = malloc((size_t)s->kv_len * sizeof *p);
    assert_non_null(p);
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t h = 0; h < s->heads; h++)
            for (int64_t i = 0; i < s->q_len; i++) {
                const double *qi = q + q_at(s, i, b, h);
                double mx = -INFINITY, sum = 0.0;
                for (int64_t j = 0; j <= prefix + i; j++) {
                    const double *kj = k + kv_at(s, j, b, h / group);
                    double dot = 0.0;
                    for (int64_t e = 0; e < d; e++)
                        dot += qi[e] * kj[e];
                    p[j] = dot / sqrt((double)d);
                    mx = fmax(mx, p[j]);
                }
                for (int64_t j = 0; j <= prefix + i; j++)
                    sum += exp(p[j] - mx);
                for (int64_t e = 0; e < d; e++) {
                    double acc = 0.0;
                    for (int64_t j = 0; j <= prefix + i; j++)
                        acc += exp(p[j] - mx) / sum * v[kv_at(s, j, b, h / group) + (size_t)e];
                    out[q_at(s, i, b, h) + (size_t)e] = acc;
                }
            }
    free(p);
}

static size_t q_elems(const pdbx_attn_kv_shape *s)
{
    return (size_t)s->batch * (size_t)s->q_len * (size_t)s->heads * (size_t)s->head_dim;
}

static size_t kv_elems(const pdbx_attn_kv_shape *s)
{
    return (size_t)s->batch * (size_t)s->kv_len * (size_t)s->kv_heads * (size_t)s->head_dim;
}

/* The backend's sequence on the host: QK^T per group member, ck_prefix_softmax's definition
 * over every row of every [q_len, kv_len] block, PV per member. */
static void check_host_kv(int batch, int q_len, int kv_len, int heads, int kv_heads, int d)
{
    const pdbx_attn_kv_shape s = {batch, q_len, kv_len, heads, kv_heads, d};
    cuda_gemm_shape qk, pv;
    assert_int_equal(cuda_attention_kv_shapes(&s, PDBX_DTYPE_BF16, &qk, &pv), 0);
    const int64_t group = heads / kv_heads;
    const size_t nq = q_elems(&s), nk = kv_elems(&s), ns = cuda_attention_kv_scores_elems(&s);
    double *q = host_rand(nq), *k = host_rand(nk), *v = host_rand(nk);
    double *sc = calloc(ns, sizeof *sc), *o = calloc(nq, sizeof *o), *ref = malloc(nq * sizeof *ref);
    assert_true(sc && o && ref);
    int64_t q_off, s_off;
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_kv_member(&s, jj, &q_off, &s_off);
        emulate_gemm(&qk, 1.0 / sqrt((double)d), k, q + q_off, sc + s_off);
    }
    const int64_t rows = (int64_t)ns / kv_len;
    assert_int_equal(rows, (int64_t)batch * heads * q_len);
    host_masked_softmax(sc, rows, q_len, kv_len);   /* ck_prefix_softmax's definition */
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_kv_member(&s, jj, &q_off, &s_off);
        emulate_gemm(&pv, 1.0, v, sc + s_off, o + q_off);
    }
    kv_reference(&s, q, k, v, ref);
    char what[160];
    snprintf(what, sizeof what, "kv attention batch %d q_len %d kv_len %d heads %d kv %d d %d", batch,
             q_len, kv_len, heads, kv_heads, d);
    expect_near(what, o, ref, nq, 1e-9);
    free(q), free(k), free(v), free(sc), free(o), free(ref);
}

static void test_host_kv_layout(void **state)
{
    (void)state;
    check_host_kv(1, 5, 12, 6, 2, 4);    /* prefill after a prefix of 7, GQA group 3 */
    check_host_kv(2, 6, 6, 4, 4, 8);     /* prefill, no prefix (the training mask), MHA */
    check_host_kv(3, 1, 9, 8, 2, 4);     /* decode, batch 3, group 4 */
    check_host_kv(4, 1, 1, 2, 1, 2);     /* decode of the first token, MQA */
    check_host_kv(2, 3, 40, 4, 1, 8);    /* a long prefix, MQA */
}

/* The mask's rows: stacked [q_len, kv_len] matrices, row r is query r % q_len. */
static void test_host_mask(void **state)
{
    (void)state;
    for (int64_t r = 0; r < 12; r++)    /* training: q_len = kv_len = 4, causal */
        assert_int_equal(ck_keys_visible(r, 4, 4), r % 4 + 1);
    assert_int_equal(ck_keys_visible(0, 3, 10), 8);   /* prefill of 3 after 7 cached keys */
    assert_int_equal(ck_keys_visible(2, 3, 10), 10);
    assert_int_equal(ck_keys_visible(5, 3, 10), 10);  /* the next matrix's last row */
    for (int64_t r = 0; r < 5; r++)     /* decode: every key, every row */
        assert_int_equal(ck_keys_visible(r, 1, 37), 37);
}

static void test_host_kv_refused(void **state)
{
    (void)state;
    cuda_gemm_shape qk, pv;
    const pdbx_attn_kv_shape bad[] = {
        {1, 8, 4, 4, 2, 8},    /* kv_len < q_len */
        {1, 1, 4, 6, 4, 8},    /* 6 heads over 4 kv heads */
        {0, 1, 4, 4, 2, 8},    /* no sequence */
        {1, 1, 4, 4, 2, 0},    /* no head_dim */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(cuda_attention_kv_shapes(&bad[i], PDBX_DTYPE_BF16, &qk, &pv), -1);
}

/* ---- GPU: the backend's enqueue against the reference on the rounded inputs ------------- */

static void check_kv(pdbx_dtype dt, int batch, int q_len, int kv_len, int heads, int kv_heads, int d,
                     float atol)
{
    const pdbx_attn_kv_shape s = {batch, q_len, kv_len, heads, kv_heads, d};
    cuda_gemm_shape qs, ps;
    cuda_gemm_plan *qk = NULL, *pv = NULL;
    char err[512];
    assert_int_equal(cuda_attention_kv_shapes(&s, dt, &qs, &ps), 0);
    if (cuda_gemm_plan_get(gemm, &qs, &qk, err, sizeof err) || cuda_gemm_plan_get(gemm, &ps, &pv, err, sizeof err))
        fail_msg("kv plans: %s", err);
    const size_t nq = q_elems(&s), nk = kv_elems(&s);
    tensor q = ct_make(nq, dt, -1.0f, 1.0f), k = ct_make(nk, dt, -1.0f, 1.0f), v = ct_make(nk, dt, -1.0f, 1.0f);
    tensor o = ct_make(nq, dt, 9.0f, 9.5f), sc = ct_make(cuda_attention_kv_scores_elems(&s), dt, 0.0f, 0.0f);
    if (cuda_attention_kv_enqueue(gemm, qk, pv, &s, dt, q.dev, k.dev, v.dev, sc.dev, o.dev, stream, err,
                                  sizeof err))
        fail_msg("kv attention: %s", err);
    ct_download(&o);
    double *hq = host_of(&q), *hk = host_of(&k), *hv = host_of(&v), *ref = malloc(nq * sizeof *ref);
    float *want = malloc(nq * sizeof *want);
    assert_true(ref && want);
    kv_reference(&s, hq, hk, hv, ref);
    for (size_t i = 0; i < nq; i++)
        want[i] = (float)ref[i];
    char what[160];
    snprintf(what, sizeof what, "kv attention dtype %d batch %d q_len %d kv_len %d heads %d kv %d d %d",
             (int)dt, batch, q_len, kv_len, heads, kv_heads, d);
    expect_close(what, &o, want, nq, atol, 1.0f / 64);
    free(hq), free(hk), free(hv), free(ref), free(want);
    ct_drop(&q), ct_drop(&k), ct_drop(&v), ct_drop(&o), ct_drop(&sc);
}

static void test_kv_prefill(void **state)
{
    (void)state;
    check_kv(PDBX_DTYPE_BF16, 1, 64, 192, 8, 2, 128, 2e-2f);   /* chunk 64 after 128 cached */
    check_kv(PDBX_DTYPE_BF16, 1, 33, 33, 4, 4, 64, 2e-2f);     /* no prefix, MHA */
    check_kv(PDBX_DTYPE_FP16, 1, 16, 100, 8, 1, 64, 5e-3f);    /* MQA, odd kv_len */
    check_kv(PDBX_DTYPE_FP32, 1, 24, 56, 4, 2, 64, 5e-3f);
}

static void test_kv_decode(void **state)
{
    (void)state;
    check_kv(PDBX_DTYPE_BF16, 8, 1, 257, 32, 8, 128, 2e-2f);   /* Llama-3.1-8B's heads */
    check_kv(PDBX_DTYPE_BF16, 3, 1, 1, 4, 2, 64, 2e-2f);       /* the first token */
    check_kv(PDBX_DTYPE_FP32, 5, 1, 77, 8, 8, 64, 5e-3f);
}

const pdbx_backend_entry *pdbx_backend_entry_v1(void);   /* cuda_backend.c, linked in */

static void test_kv_slot(void **state)
{
    (void)state;
    const pdbx_compute_ops *ops = pdbx_backend_entry_v1()->compute;
    const pdbx_compute_config cfg = {.local_size = 1, .world_size = 1, .blas_threads = 1,
                                     .dtype = PDBX_DTYPE_BF16};
    pdbx_compute *c = NULL;
    char err[512] = "";
    if (ops->init(&cfg, &c, err, sizeof err) != 0)
        fail_msg("init: %s", err);
    const pdbx_attn_kv_shape rows[] = {{1, 256, 1280, 32, 8, 128}, {16, 1, 2048, 32, 8, 128}};
    double ms[2][2];
    for (size_t i = 0; i < 2; i++)
        for (int rep = 0; rep < 2; rep++) {   /* the second call reuses the shape's buffers */
            ms[i][rep] = -1;
            if (ops->attn_kv(c, &rows[i], &ms[i][rep], err, sizeof err) != 0)
                fail_msg("attn_kv: %s", err);
            assert_true(ms[i][rep] > 0.0 && ms[i][rep] < 1000.0);
        }
    print_message("attn_kv bf16: prefill 256 after 1024 cached %.3f ms; decode batch 16, 2048 "
                  "cached %.3f ms\n", ms[0][1], ms[1][1]);
    uint64_t free0 = 0, free1 = 0, total = 0;
    assert_int_equal(ops->mem_info(c, &free0, &total), 0);
    ops->release(c);
    assert_int_equal(ops->mem_info(c, &free1, &total), 0);
    /* the decode row's q, k and v cache, scores and output: 16 x 2048 x 8 x 128 x 2 x 2 bytes
     * of cache alone (64 MiB) */
    assert_true((double)free1 - (double)free0 >= 64.0 * 1024 * 1024);
    ops->fini(c);
}

int main(void)
{
    const struct CMUnitTest host[] = {
        cmocka_unit_test(test_host_kv_layout),
        cmocka_unit_test(test_host_mask),
        cmocka_unit_test(test_host_kv_refused),
    };
    const struct CMUnitTest gpu[] = {
        cmocka_unit_test(test_kv_prefill),
        cmocka_unit_test(test_kv_decode),
        cmocka_unit_test(test_kv_slot),
    };
    return ct_run_host_then_gpu("cuda_attn_kv", host, CT_COUNT(host), gpu, CT_COUNT(gpu));
}
