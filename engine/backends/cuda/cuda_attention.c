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

int cuda_attention_needs_scores(const cuda_attention_dims *d, int bwd)
{
    return !d->flash || bwd;
}

int cuda_attention_shapes(const cuda_attention_dims *d, cuda_gemm_shape *qk, cuda_gemm_shape *pv)
{
    if (d->mbs <= 0 || d->seq <= 0 || d->heads <= 0 || d->kv_heads <= 0 || d->head_dim <= 0 ||
        d->heads % d->kv_heads != 0 || d->mbs * d->kv_heads > INT32_MAX)
        return -1;
    const int64_t s = d->seq, hd = d->head_dim, es = elem_bytes(d->dtype);
    const int64_t group = d->heads / d->kv_heads;
    const int64_t ldq = d->mbs * d->heads * hd, ldk = d->mbs * d->kv_heads * hd;
    const int32_t batch = (int32_t)(d->mbs * d->kv_heads);
    /* Alignments hold for every group member's offset (multiples of head_dim elements). */
    const uint32_t a_qo = min_u32(align_of_bytes(hd * es), align_of_bytes(ldq * es));
    const uint32_t a_kv = min_u32(align_of_bytes(hd * es), align_of_bytes(ldk * es));
    const uint32_t a_s = align_of_bytes(s * es);
    *qk = (cuda_gemm_shape){
        .dtype = d->dtype, .trans_a = 1, .trans_b = 0,
        .m = s, .n = s, .k = hd,
        .lda = ldk, .ldb = ldq, .ldc = s,
        .batch = batch, .stride_a = hd, .stride_b = group * hd, .stride_c = s * s,
        .align_a = a_kv, .align_b = a_qo, .align_c = a_s,
    };
    *pv = (cuda_gemm_shape){
        .dtype = d->dtype, .trans_a = 0, .trans_b = 0,
        .m = hd, .n = s, .k = s,
        .lda = ldk, .ldb = s, .ldc = ldq,
        .batch = batch, .stride_a = hd, .stride_b = s * s, .stride_c = group * hd,
        .align_a = a_kv, .align_b = a_s, .align_c = a_qo,
    };
    return 0;
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

/* The first half of the unfused forward: P = causal_softmax(scale Q K^T) into scores. */
static int probs_enqueue(cuda_gemm *g, const cuda_attention *a, const void *q, const void *k,
                         void *scores, cudaStream_t stream, char *err, size_t errlen)
{
    const cuda_attention_dims *d = &a->dims;
    const int64_t es = elem_bytes(d->dtype), group = d->heads / d->kv_heads;
    const float scale = cuda_attention_scale(d);
    const char *qb = q;
    char *sb = scores;
    int64_t q_off, s_off;
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_member(d, jj, &q_off, &s_off);
        int rc = cuda_gemm_exec(g, a->qk, scale, k, qb + q_off * es, sb + s_off * es, stream,
                                err, errlen);
        if (rc)
            return rc;
    }
    cudaError_t e = ck_causal_softmax(scores, d->mbs * d->heads, d->seq, d->dtype, stream);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(err, errlen, "ck_causal_softmax failed: %s (%s)", cudaGetErrorName(e),
                 cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

int cuda_attention_enqueue(cuda_gemm *g, const cuda_attention *a, const void *q, const void *k,
                           const void *v, void *scores, void *out, cudaStream_t stream,
                           char *err, size_t errlen)
{
    const cuda_attention_dims *d = &a->dims;
    if (d->flash) {
        cudaError_t e = ck_flash_attention(q, k, v, out, d->mbs, d->seq, d->heads, d->kv_heads,
                                           d->head_dim, d->dtype, stream);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            snprintf(err, errlen, "ck_flash_attention failed: %s (%s)", cudaGetErrorName(e),
                     cudaGetErrorString(e));
            return -1;
        }
        return 0;
    }
    const int64_t es = elem_bytes(d->dtype), group = d->heads / d->kv_heads;
    char *sb = scores, *ob = out;
    int64_t q_off, s_off;
    int rc0 = probs_enqueue(g, a, q, k, scores, stream, err, errlen);
    if (rc0)
        return rc0;
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_member(d, jj, &q_off, &s_off);
        int rc = cuda_gemm_exec(g, a->pv, 1.0f, v, sb + s_off * es, ob + q_off * es, stream, err,
                                errlen);
        if (rc)
            return rc;
    }
    return 0;
}

int cuda_attention_plan_bwd(cuda_gemm *g, cuda_attention *a, char *err, size_t errlen)
{
    cuda_gemm_shape pt;
    if (cuda_attention_shape_bwd(&a->dims, &pt) != 0) {
        snprintf(err, errlen, "cuda attention backward: bad dimensions (plan the forward first)");
        return -1;
    }
    return cuda_gemm_plan_get(g, &pt, &a->pt, err, errlen);
}

int cuda_attention_bwd_enqueue(cuda_gemm *g, const cuda_attention *a, const void *q,
                               const void *k, const void *v, void *probs, const void *dout,
                               void *dscores, void *dq, void *dk, void *dv, cudaStream_t stream,
                               char *err, size_t errlen)
{
    const cuda_attention_dims *d = &a->dims;
    const int64_t es = elem_bytes(d->dtype), group = d->heads / d->kv_heads;
    const char *qb = q, *ob = dout, *pb = probs;
    char *sb = dscores, *dqb = dq;
    int64_t q_off, s_off;
    int rc = 0;
    if (!a->pt) {
        snprintf(err, errlen, "cuda attention backward: not planned");
        return -1;
    }
    if (d->flash) {   /* the fused forward kept no probabilities: recompute them */
        rc = probs_enqueue(g, a, q, k, probs, stream, err, errlen);
        if (rc)
            return rc;
    }
    /* dV = sum over the group of P^T dO; dP = dO V^T (the qk shape with V and dO) */
    for (int64_t jj = 0; jj < group && rc == 0; jj++) {
        cuda_attention_member(d, jj, &q_off, &s_off);
        rc = cuda_gemm_exec_beta(g, a->pt, 1.0f, jj ? 1.0f : 0.0f, ob + q_off * es,
                                 pb + s_off * es, dv, stream, err, errlen);
        if (rc == 0)
            rc = cuda_gemm_exec(g, a->qk, 1.0f, v, ob + q_off * es, sb + s_off * es, stream, err,
                                errlen);
    }
    if (rc)
        return rc;
    cudaError_t e = ck_causal_softmax_bwd(probs, dscores, d->mbs * d->heads, d->seq,
                                          cuda_attention_scale(d), d->dtype, stream);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(err, errlen, "ck_causal_softmax_bwd failed: %s (%s)", cudaGetErrorName(e),
                 cudaGetErrorString(e));
        return -1;
    }
    /* dQ = dS K (the pv shape with K and dS); dK = sum over the group of dS^T Q */
    for (int64_t jj = 0; jj < group && rc == 0; jj++) {
        cuda_attention_member(d, jj, &q_off, &s_off);
        rc = cuda_gemm_exec(g, a->pv, 1.0f, k, sb + s_off * es, dqb + q_off * es, stream, err,
                            errlen);
        if (rc == 0)
            rc = cuda_gemm_exec_beta(g, a->pt, 1.0f, jj ? 1.0f : 0.0f, qb + q_off * es,
                                     sb + s_off * es, dk, stream, err, errlen);
    }
    return rc;
}
