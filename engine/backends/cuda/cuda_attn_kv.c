/* cuda_attn_kv.c: backend.h's attn_kv for the cuda backend: attention with a KV cache, the
 * inference phase's prefill (q_len C after a cached prefix, kv_len P + C) and decode (q_len 1,
 * kv_len K) rows that Vidur's attention.csv holds.
 *
 * The unfused path of the training core on rectangular scores (cuda_attention.h,
 * cuda_attention_kv_shapes): per group member a strided-batched cuBLASLt QK^T into
 * [q_len, kv_len] score blocks, ck_prefix_softmax (query i sees keys 0 .. kv_len - q_len + i),
 * then PV, in the run's dtype. GQA reads each kv head in place for its group's q heads (no
 * repeat_kv copy). Layouts are sequence-major as the training point's:
 *     q, out [q_len, batch, heads, d]     k, v (the cache) [kv_len, batch, kv_heads, d]
 * The buffers and GEMM plans belong to one shape and are rebuilt (untimed) when the shape
 * changes; release() and fini free them. A call is timed like every op of this backend
 * (cuda_timer_start: L2 flush when on, the spin, the start event; the stop event).
 */
#include "engine/backends/cuda/cuda_backend.h"

#include <stdio.h>
#include <stdlib.h>

#include "engine/backends/cuda/cuda_attention.h"
#include "engine/backends/cuda/cuda_kernels.h"

enum { KV_Q, KV_K, KV_V, KV_SCORES, KV_OUT, KV_COUNT };

struct cuda_kv {
    pdbx_attn_kv_shape s;
    void *buf[KV_COUNT];
    cuda_gemm_plan *qk, *pv;   /* owned by the gemm cache */
};

static void kv_destroy(pdbx_compute *c, struct cuda_kv *kv)
{
    if (!kv)
        return;
    cudaStreamSynchronize(c->stream);
    for (int i = 0; i < KV_COUNT; i++)
        cuda_dev_free(kv->buf[i]);
    free(kv);
}

void cuda_kv_free(pdbx_compute *c)
{
    if (!c)
        return;
    kv_destroy(c, c->kv);
    c->kv = NULL;
}

static int same_shape(const pdbx_attn_kv_shape *a, const pdbx_attn_kv_shape *b)
{
    return a->batch == b->batch && a->q_len == b->q_len && a->kv_len == b->kv_len &&
           a->heads == b->heads && a->kv_heads == b->kv_heads && a->head_dim == b->head_dim;
}

/* The buffers of shape s (q, k, v uniform in [-1, 1]; scores and out written by every call)
 * and the two GEMM plans, in c->kv once all of them are ready. */
static int kv_prepare(pdbx_compute *c, const pdbx_attn_kv_shape *s, const cuda_gemm_shape *qk,
                      const cuda_gemm_shape *pv, char *err, size_t errlen)
{
    static const char *names[KV_COUNT] = {"attn_kv q", "attn_kv k cache", "attn_kv v cache",
                                          "attn_kv scores", "attn_kv out"};
    const size_t es = c->dtype == PDBX_DTYPE_FP32 ? 4 : 2;
    const size_t qn = (size_t)s->batch * (size_t)s->q_len * (size_t)s->heads * (size_t)s->head_dim;
    const size_t kn = (size_t)s->batch * (size_t)s->kv_len * (size_t)s->kv_heads * (size_t)s->head_dim;
    const size_t elems[KV_COUNT] = {qn, kn, kn, cuda_attention_kv_scores_elems(s), qn};
    int rc = -1;
    cuda_kv_free(c);   /* the previous shape's first: both would not fit where one just does */
    struct cuda_kv *kv = calloc(1, sizeof *kv);
    if (!kv) {
        snprintf(err, errlen, "attn_kv: out of host memory");
        return -1;
    }
    for (int i = 0; i < KV_COUNT; i++) {
        rc = cuda_alloc_buf(&kv->buf[i], elems[i] * es, names[i], err, errlen);
        if (rc)
            goto fail;
        if (i <= KV_V)
            CU_TRY(names[i], ck_fill_uniform(kv->buf[i], elems[i], c->dtype,
                                             FILL_SEED ^ (0x6b76u + (uint64_t)i), -1.0f, 1.0f, c->stream));
    }
    rc = cuda_gemm_plan_get(c->gemm, qk, &kv->qk, err, errlen);
    if (rc == 0)
        rc = cuda_gemm_plan_get(c->gemm, pv, &kv->pv, err, errlen);
    if (rc)
        goto fail;
    CU_TRY("cudaStreamSynchronize(attn_kv fill)", cudaStreamSynchronize(c->stream));
    kv->s = *s;
    c->kv = kv;
    return 0;
fail:
    kv_destroy(c, kv);
    return rc ? rc : -1;
}

int cuda_attn_kv(pdbx_compute *c, const pdbx_attn_kv_shape *s, double *ms, char *err, size_t errlen)
{
    cuda_gemm_shape qk, pv;
    if (cuda_attention_kv_shapes(s, c ? c->dtype : PDBX_DTYPE_BF16, &qk, &pv) != 0) {
        snprintf(err, errlen, "attn_kv: bad shape batch %d q_len %d kv_len %d heads %d kv_heads %d "
                 "head_dim %d (allowed: positive, kv_len >= q_len, heads a multiple of kv_heads)",
                 s->batch, s->q_len, s->kv_len, s->heads, s->kv_heads, s->head_dim);
        return -1;
    }
    if (!c) {
        snprintf(err, errlen, "attn_kv: no device (init did not run)");
        return -1;
    }
    if (!c->kv || !same_shape(&c->kv->s, s)) {
        int rc = kv_prepare(c, s, &qk, &pv, err, errlen);
        if (rc)
            return rc;
    }
    const struct cuda_kv *kv = c->kv;
    void *const *B = kv->buf;
    int rc = cuda_timer_start(c, err, errlen);
    if (rc == 0)
        rc = cuda_attention_kv_enqueue(c->gemm, kv->qk, kv->pv, s, c->dtype, B[KV_Q], B[KV_K], B[KV_V],
                                       B[KV_SCORES], B[KV_OUT], c->stream, err, errlen);
    if (rc == 0)
        return cuda_timer_stop(c, ms, err, errlen);
    cudaStreamSynchronize(c->stream);   /* leave nothing half-enqueued behind */
    (void)cudaGetLastError();
    return rc;
}
