/* cuda_attention.c: causal attention core as strided-batched cuBLASLt GEMMs + softmax
 * (contract in cuda_attention.h).
 *
 * Column-major view used by cuBLASLt: a row-major [rows, d] block with row stride ld is a
 * column-major [d, rows] matrix with leading dimension ld. So for one batch member
 *     S'[sk, sq] = K'^T Q'        (K' = [d, sk] ld ldk, transposed; Q' = [d, sq] ld ldq)
 *     O'[d, sq]  = V' P'          (V' = [d, sk] ld ldk; P' = S' = [sk, sq] ld seq)
 * and column q of S' is row q of the row-major score matrix the softmax walks.
 */
#include "engine/backends/cuda/cuda_attention.h"

#include <math.h>
#include <stdio.h>

#include "engine/backends/cuda/cuda_kernels.h"

static int64_t elem_bytes(pdbx_dtype dt)
{
    return dt == PDBX_DTYPE_FP32 ? 4 : 2;
}

/* Largest power of two <= 256 dividing x bytes (cuBLASLt alignment preferences). */
static uint32_t align_of_bytes(int64_t x)
{
    uint32_t a = 256;
    if (x == 0)
        return a;
    while (a > 1 && x % a != 0)
        a /= 2;
    return a;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

size_t cuda_attention_scores_elems(const cuda_attention_dims *d)
{
    return (size_t)(d->mbs * d->heads) * (size_t)d->seq * (size_t)d->seq;
}

int cuda_attention_flash_ok(const cuda_attention_dims *d, char *err, size_t errlen)
{
    if (ck_flash_supported(d->head_dim, d->dtype))
        return 1;
    snprintf(err, errlen, "cuda attention: flash_attention true with head_dim %lld (allowed: 64, "
             "128 for the fused kernel; set flash_attention false for the unfused path)",
             (long long)d->head_dim);
    return 0;
}

int cuda_attention_needs_scores(const cuda_attention_dims *d)
{
    return !d->flash;
}

/* The two GEMMs of `batch` sequences of q_len queries against kv_len keys (the square training
 * core: q_len = kv_len = seq). One batch member n = b * kv_heads + g; its score block is
 * S'[kv_len, q_len] (column q of S' is row q of the row-major [q_len, kv_len] matrix). */
static int rect_shapes(int64_t batch, int64_t q_len, int64_t kv_len, int64_t heads, int64_t kv_heads,
                       int64_t hd, pdbx_dtype dt, cuda_gemm_shape *qk, cuda_gemm_shape *pv)
{
    if (batch <= 0 || q_len <= 0 || kv_len < q_len || heads <= 0 || kv_heads <= 0 || hd <= 0 ||
        heads % kv_heads != 0 || batch * kv_heads > INT32_MAX)
        return -1;
    const int64_t es = elem_bytes(dt), group = heads / kv_heads;
    const int64_t ldq = batch * heads * hd, ldk = batch * kv_heads * hd;
    const int32_t members = (int32_t)(batch * kv_heads);
    /* Alignments hold for every group member's offset (multiples of head_dim elements). */
    const uint32_t a_qo = min_u32(align_of_bytes(hd * es), align_of_bytes(ldq * es));
    const uint32_t a_kv = min_u32(align_of_bytes(hd * es), align_of_bytes(ldk * es));
    const uint32_t a_s = align_of_bytes(kv_len * es);
    *qk = (cuda_gemm_shape){
        .dtype = dt, .trans_a = 1, .trans_b = 0,
        .m = kv_len, .n = q_len, .k = hd,
        .lda = ldk, .ldb = ldq, .ldc = kv_len,
        .batch = members, .stride_a = hd, .stride_b = group * hd, .stride_c = q_len * kv_len,
        .align_a = a_kv, .align_b = a_qo, .align_c = a_s,
    };
    *pv = (cuda_gemm_shape){
        .dtype = dt, .trans_a = 0, .trans_b = 0,
        .m = hd, .n = q_len, .k = kv_len,
        .lda = ldk, .ldb = kv_len, .ldc = ldq,
        .batch = members, .stride_a = hd, .stride_b = q_len * kv_len, .stride_c = group * hd,
        .align_a = a_kv, .align_b = a_s, .align_c = a_qo,
    };
    return 0;
}

int cuda_attention_shapes(const cuda_attention_dims *d, cuda_gemm_shape *qk, cuda_gemm_shape *pv)
{
    return rect_shapes(d->mbs, d->seq, d->seq, d->heads, d->kv_heads, d->head_dim, d->dtype, qk, pv);
}

int cuda_attention_kv_shapes(const pdbx_attn_kv_shape *s, pdbx_dtype dt, cuda_gemm_shape *qk,
                             cuda_gemm_shape *pv)
{
    return rect_shapes(s->batch, s->q_len, s->kv_len, s->heads, s->kv_heads, s->head_dim, dt, qk, pv);
}

size_t cuda_attention_kv_scores_elems(const pdbx_attn_kv_shape *s)
{
    return (size_t)s->batch * (size_t)s->heads * (size_t)s->q_len * (size_t)s->kv_len;
}

void cuda_attention_kv_member(const pdbx_attn_kv_shape *s, int64_t jj, int64_t *q_off, int64_t *s_off)
{
    *q_off = jj * s->head_dim;                                              /* q head g * group + jj */
    *s_off = jj * (int64_t)s->batch * s->kv_heads * s->q_len * (int64_t)s->kv_len;   /* its block */
}

int cuda_attention_shape_bwd(const cuda_attention_dims *d, cuda_gemm_shape *pt)
{
    cuda_gemm_shape qk, pv;
    if (cuda_attention_shapes(d, &qk, &pv) != 0)
        return -1;
    const int64_t s = d->seq, hd = d->head_dim, group = d->heads / d->kv_heads;
    /* A = dO or Q (pv's C layout), B = P' or dS' ([sk, sq] ld s, transposed), C = dV or dK
     * (qk's A layout) */
    *pt = (cuda_gemm_shape){
        .dtype = d->dtype, .trans_a = 0, .trans_b = 1,
        .m = hd, .n = s, .k = s,
        .lda = pv.ldc, .ldb = s, .ldc = qk.lda,
        .batch = qk.batch, .stride_a = group * hd, .stride_b = s * s, .stride_c = hd,
        .align_a = pv.align_c, .align_b = pv.align_b, .align_c = qk.align_a,
    };
    return 0;
}

void cuda_attention_member(const cuda_attention_dims *d, int64_t jj, int64_t *q_off, int64_t *s_off)
{
    *q_off = jj * d->head_dim;                                   /* q head g * group + jj */
    *s_off = jj * d->mbs * d->kv_heads * d->seq * d->seq;        /* its [batch][s][s] block */
}

float cuda_attention_scale(const cuda_attention_dims *d)
{
    return 1.0f / sqrtf((float)d->head_dim);
}

int cuda_attention_plan(cuda_gemm *g, const cuda_attention_dims *d, cuda_attention *out,
                        char *err, size_t errlen)
{
    cuda_gemm_shape qk, pv;
    if (cuda_attention_shapes(d, &qk, &pv) != 0) {
        snprintf(err, errlen, "cuda attention: mbs %lld, seq %lld, heads %lld, kv_heads %lld, "
                 "head_dim %lld (allowed: positive, heads a multiple of kv_heads)",
                 (long long)d->mbs, (long long)d->seq, (long long)d->heads,
                 (long long)d->kv_heads, (long long)d->head_dim);
        return -1;
    }
    if (d->flash && !cuda_attention_flash_ok(d, err, errlen))
        return -1;
    out->dims = *d;
    int rc = cuda_gemm_plan_get(g, &qk, &out->qk, err, errlen);
    if (rc == 0)
        rc = cuda_gemm_plan_get(g, &pv, &out->pv, err, errlen);
    return rc;
}

/* A launch status as the backend's message: "call failed: name (text)", -1. */
static int kernel_fail(const char *call, cudaError_t e, char *err, size_t errlen)
{
    (void)cudaGetLastError();
    snprintf(err, errlen, "%s failed: %s (%s)", call, cudaGetErrorName(e), cudaGetErrorString(e));
    return -1;
}

/* The unfused forward of `group` members whose q/out and score blocks lie q_step and s_step
 * elements apart: S = scale Q K^T per member, the masked softmax over the nmat [q_len, kv_len]
 * score matrices (ck_prefix_softmax: causal after kv_len - q_len cached keys), O = P V per
 * member (skipped when out is NULL: the backward's recompute wants P only). */
typedef struct {
    const cuda_gemm_plan *qk, *pv;
    int64_t group, q_step, s_step, nmat, q_len, kv_len;
    pdbx_dtype dtype;
    float scale;
} unfused_fwd;

static int unfused_enqueue(cuda_gemm *g, const unfused_fwd *f, const void *q, const void *k,
                           const void *v, void *scores, void *out, cudaStream_t stream, char *err,
                           size_t errlen)
{
    const int64_t es = elem_bytes(f->dtype);
    const char *qb = q;
    char *sb = scores, *ob = out;
    for (int64_t jj = 0; jj < f->group; jj++) {
        int rc = cuda_gemm_exec(g, f->qk, f->scale, k, qb + jj * f->q_step * es,
                                sb + jj * f->s_step * es, stream, err, errlen);
        if (rc)
            return rc;
    }
    cudaError_t e = ck_prefix_softmax(scores, f->nmat, f->q_len, f->kv_len, f->dtype, stream);
    if (e != cudaSuccess)
        return kernel_fail("ck_prefix_softmax", e, err, errlen);
    for (int64_t jj = 0; jj < f->group && out; jj++) {
        int rc = cuda_gemm_exec(g, f->pv, 1.0f, v, sb + jj * f->s_step * es, ob + jj * f->q_step * es,
                                stream, err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}

int cuda_attention_enqueue(cuda_gemm *g, const cuda_attention *a, const void *q, const void *k,
                           const void *v, void *scores, void *out, float *lse,
                           cudaStream_t stream, char *err, size_t errlen)
{
    const cuda_attention_dims *d = &a->dims;
    if (d->flash) {
        cudaError_t e = ck_flash_attention(q, k, v, out, lse, d->mbs, d->seq, d->heads, d->kv_heads,
                                           d->head_dim, d->dtype, stream);
        return e == cudaSuccess ? 0 : kernel_fail("ck_flash_attention", e, err, errlen);
    }
    int64_t q_step, s_step;
    cuda_attention_member(d, 1, &q_step, &s_step);
    const unfused_fwd f = {a->qk, a->pv, d->heads / d->kv_heads, q_step, s_step, d->mbs * d->heads,
                           d->seq, d->seq, d->dtype, cuda_attention_scale(d)};
    return unfused_enqueue(g, &f, q, k, v, scores, out, stream, err, errlen);
}

int cuda_attention_kv_enqueue(cuda_gemm *g, const cuda_gemm_plan *qk, const cuda_gemm_plan *pv,
                              const pdbx_attn_kv_shape *s, pdbx_dtype dt, const void *q,
                              const void *k, const void *v, void *scores, void *out,
                              cudaStream_t stream, char *err, size_t errlen)
{
    int64_t q_step, s_step;
    cuda_attention_kv_member(s, 1, &q_step, &s_step);
    const unfused_fwd f = {qk, pv, s->heads / s->kv_heads, q_step, s_step,
                           (int64_t)s->batch * s->heads, s->q_len, s->kv_len, dt,
                           1.0f / sqrtf((float)s->head_dim)};
    return unfused_enqueue(g, &f, q, k, v, scores, out, stream, err, errlen);
}

int cuda_attention_plan_bwd(cuda_gemm *g, cuda_attention *a, char *err, size_t errlen)
{
    if (a->dims.flash)
        return 0;   /* ck_flash_attention_bwd: no GEMM */
    cuda_gemm_shape pt;
    if (cuda_attention_shape_bwd(&a->dims, &pt) != 0) {
        snprintf(err, errlen, "cuda attention backward: bad dimensions (plan the forward first)");
        return -1;
    }
    return cuda_gemm_plan_get(g, &pt, &a->pt, err, errlen);
}

static int fused_bwd(const cuda_attention_dims *d, const cuda_attention_bwd_bufs *b,
                     cudaStream_t stream, char *err, size_t errlen)
{
    if (!b->out || !b->lse || !b->delta || !b->dq_acc) {
        snprintf(err, errlen, "cuda attention backward (fused): the forward's output and "
                 "log-sum-exp and the delta and dQ scratch are needed");
        return -1;
    }
    cudaError_t e = ck_flash_attention_bwd(b->q, b->k, b->v, b->out, b->dout, b->lse, b->delta,
                                           b->dq_acc, b->dq, b->dk, b->dv, d->mbs, d->seq, d->heads,
                                           d->kv_heads, d->head_dim, d->dtype, stream);
    return e == cudaSuccess ? 0 : kernel_fail("ck_flash_attention_bwd", e, err, errlen);
}

int cuda_attention_bwd_enqueue(cuda_gemm *g, const cuda_attention *a,
                               const cuda_attention_bwd_bufs *b, cudaStream_t stream, char *err,
                               size_t errlen)
{
    const cuda_attention_dims *d = &a->dims;
    if (d->flash)
        return fused_bwd(d, b, stream, err, errlen);
    const int64_t es = elem_bytes(d->dtype), group = d->heads / d->kv_heads;
    const char *qb = b->q, *ob = b->dout, *pb = b->probs;
    char *sb = b->dscores, *dqb = b->dq;
    int64_t q_off, s_off;
    int rc = 0;
    if (!a->pt) {
        snprintf(err, errlen, "cuda attention backward: not planned");
        return -1;
    }
    /* dV = sum over the group of P^T dO; dP = dO V^T (the qk shape with V and dO) */
    for (int64_t jj = 0; jj < group && rc == 0; jj++) {
        cuda_attention_member(d, jj, &q_off, &s_off);
        rc = cuda_gemm_exec_beta(g, a->pt, 1.0f, jj ? 1.0f : 0.0f, ob + q_off * es,
                                 pb + s_off * es, b->dv, stream, err, errlen);
        if (rc == 0)
            rc = cuda_gemm_exec(g, a->qk, 1.0f, b->v, ob + q_off * es, sb + s_off * es, stream, err,
                                errlen);
    }
    if (rc)
        return rc;
    cudaError_t e = ck_causal_softmax_bwd(b->probs, b->dscores, d->mbs * d->heads, d->seq,
                                          cuda_attention_scale(d), d->dtype, stream);
    if (e != cudaSuccess)
        return kernel_fail("ck_causal_softmax_bwd", e, err, errlen);
    /* dQ = dS K (the pv shape with K and dS); dK = sum over the group of dS^T Q */
    for (int64_t jj = 0; jj < group && rc == 0; jj++) {
        cuda_attention_member(d, jj, &q_off, &s_off);
        rc = cuda_gemm_exec(g, a->pv, 1.0f, b->k, sb + s_off * es, dqb + q_off * es, stream, err,
                            errlen);
        if (rc == 0)
            rc = cuda_gemm_exec_beta(g, a->pt, 1.0f, jj ? 1.0f : 0.0f, qb + q_off * es,
                                     sb + s_off * es, b->dk, stream, err, errlen);
    }
    return rc;
}
