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

/* One batch member n = b * kv_heads + g of `batch` sequences of q_len queries against kv_len
 * keys (the square training core: q_len = kv_len = seq); its score block is S'[kv_len, q_len]
 * (column q of S' is row q of the row-major [q_len, kv_len] matrix). The GEMMs come in three
 * forms, each over a head dim x (q/k's head_dim, or v's: MLA's differ):
 *   qk-like  S'  = K'^T Q'   (k x over x; the backward's dP' = V'^T dO' too)
 *   pv-like  O'  = V' P'     (m x; the backward's dQ' = K' dS' too)
 *   pt-like  dV' = dO' P'^T  (m x; dK' = Q' dS'^T too)
 * where the "k-like" operand is [tokens, kv_heads, x] and the "q-like" one [tokens, heads, x]. */
typedef struct {
    int64_t batch, q_len, kv_len, heads, kv_heads;
    pdbx_dtype dt;
} rect_dims;

static int rect_ok(const rect_dims *r, int64_t x)
{
    return r->batch > 0 && r->q_len > 0 && r->kv_len >= r->q_len && r->heads > 0 &&
           r->kv_heads > 0 && x > 0 && r->heads % r->kv_heads == 0 &&
           r->batch * r->kv_heads <= INT32_MAX;
}

/* Alignments of the q-like and k-like operands over head dim x (every group member's offset
 * is a multiple of x elements) and of the score blocks. */
static void rect_align(const rect_dims *r, int64_t x, uint32_t *a_q, uint32_t *a_k, uint32_t *a_s)
{
    const int64_t es = elem_bytes(r->dt);
    *a_q = min_u32(align_of_bytes(x * es), align_of_bytes(r->batch * r->heads * x * es));
    *a_k = min_u32(align_of_bytes(x * es), align_of_bytes(r->batch * r->kv_heads * x * es));
    *a_s = align_of_bytes(r->kv_len * es);
}

static cuda_gemm_shape qk_like(const rect_dims *r, int64_t x)
{
    uint32_t a_q, a_k, a_s;
    rect_align(r, x, &a_q, &a_k, &a_s);
    const int64_t group = r->heads / r->kv_heads;
    return (cuda_gemm_shape){
        .dtype = r->dt, .trans_a = 1, .trans_b = 0,
        .m = r->kv_len, .n = r->q_len, .k = x,
        .lda = r->batch * r->kv_heads * x, .ldb = r->batch * r->heads * x, .ldc = r->kv_len,
        .batch = (int32_t)(r->batch * r->kv_heads), .stride_a = x, .stride_b = group * x,
        .stride_c = r->q_len * r->kv_len, .align_a = a_k, .align_b = a_q, .align_c = a_s,
    };
}

static cuda_gemm_shape pv_like(const rect_dims *r, int64_t x)
{
    uint32_t a_q, a_k, a_s;
    rect_align(r, x, &a_q, &a_k, &a_s);
    const int64_t group = r->heads / r->kv_heads;
    return (cuda_gemm_shape){
        .dtype = r->dt, .trans_a = 0, .trans_b = 0,
        .m = x, .n = r->q_len, .k = r->kv_len,
        .lda = r->batch * r->kv_heads * x, .ldb = r->kv_len, .ldc = r->batch * r->heads * x,
        .batch = (int32_t)(r->batch * r->kv_heads), .stride_a = x,
        .stride_b = r->q_len * r->kv_len, .stride_c = group * x,
        .align_a = a_k, .align_b = a_s, .align_c = a_q,
    };
}

static cuda_gemm_shape pt_like(const rect_dims *r, int64_t x)
{
    uint32_t a_q, a_k, a_s;
    rect_align(r, x, &a_q, &a_k, &a_s);
    const int64_t group = r->heads / r->kv_heads, s = r->q_len;
    return (cuda_gemm_shape){
        .dtype = r->dt, .trans_a = 0, .trans_b = 1,
        .m = x, .n = s, .k = s,
        .lda = r->batch * r->heads * x, .ldb = s, .ldc = r->batch * r->kv_heads * x,
        .batch = (int32_t)(r->batch * r->kv_heads), .stride_a = group * x, .stride_b = s * s,
        .stride_c = x, .align_a = a_q, .align_b = a_s, .align_c = a_k,
    };
}

static int rect_shapes(const rect_dims *r, int64_t hd, int64_t hv, cuda_gemm_shape *qk,
                       cuda_gemm_shape *pv)
{
    if (!rect_ok(r, hd) || hv <= 0)
        return -1;
    *qk = qk_like(r, hd);
    *pv = pv_like(r, hv);
    return 0;
}

static rect_dims train_rect(const cuda_attention_dims *d)
{
    return (rect_dims){d->mbs, d->seq, d->seq, d->heads, d->kv_heads, d->dtype};
}

int64_t cuda_attention_v_dim(const cuda_attention_dims *d, const cuda_attention_opts *o)
{
    return o && o->v_dim > 0 ? o->v_dim : d->head_dim;
}

int cuda_attention_shapes(const cuda_attention_dims *d, cuda_gemm_shape *qk, cuda_gemm_shape *pv)
{
    return cuda_attention_shapes_opts(d, NULL, qk, pv);
}

int cuda_attention_shapes_opts(const cuda_attention_dims *d, const cuda_attention_opts *o,
                               cuda_gemm_shape *qk, cuda_gemm_shape *pv)
{
    const rect_dims r = train_rect(d);
    return rect_shapes(&r, d->head_dim, cuda_attention_v_dim(d, o), qk, pv);
}

int cuda_attention_kv_shapes(const pdbx_attn_kv_shape *s, pdbx_dtype dt, cuda_gemm_shape *qk,
                             cuda_gemm_shape *pv)
{
    const rect_dims r = {s->batch, s->q_len, s->kv_len, s->heads, s->kv_heads, dt};
    return rect_shapes(&r, s->head_dim, s->head_dim, qk, pv);
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
    cuda_gemm_shape b[4];
    if (cuda_attention_shapes_bwd_opts(d, NULL, b) != 0)
        return -1;
    *pt = b[3];
    return 0;
}

int cuda_attention_shapes_bwd_opts(const cuda_attention_dims *d, const cuda_attention_opts *o,
                                   cuda_gemm_shape out[4])
{
    const rect_dims r = train_rect(d);
    const int64_t hd = d->head_dim, hv = cuda_attention_v_dim(d, o);
    if (!rect_ok(&r, hd) || hv <= 0)
        return -1;
    out[0] = pt_like(&r, hv);   /* dV = P^T dO */
    out[1] = qk_like(&r, hv);   /* dP = dO V^T */
    out[2] = pv_like(&r, hd);   /* dQ = dS K */
    out[3] = pt_like(&r, hd);   /* dK = dS^T Q */
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
    return cuda_attention_plan_opts(g, d, NULL, out, err, errlen);
}

int cuda_attention_opts_flash_ok(const cuda_attention_dims *d, const cuda_attention_opts *o,
                                 char *err, size_t errlen)
{
    const char *what = !o ? NULL
                       : o->window > 0 && o->window < d->seq ? "a sliding window"
                       : o->softcap > 0.0f ? "attention soft-capping"
                       : o->v_dim > 0 && o->v_dim != d->head_dim ? "a v head dim apart from q/k's"
                       : NULL;
    if (!what)
        return 1;
    snprintf(err, errlen, "cuda attention: flash_attention true with %s (the fused kernel runs "
             "plain causal attention only; allowed: flash_attention false)", what);
    return 0;
}

int cuda_attention_plan_opts(cuda_gemm *g, const cuda_attention_dims *d,
                             const cuda_attention_opts *o, cuda_attention *out, char *err,
                             size_t errlen)
{
    cuda_gemm_shape qk, pv;
    if (cuda_attention_shapes_opts(d, o, &qk, &pv) != 0) {
        snprintf(err, errlen, "cuda attention: mbs %lld, seq %lld, heads %lld, kv_heads %lld, "
                 "head_dim %lld, v head dim %lld (allowed: positive, heads a multiple of "
                 "kv_heads)", (long long)d->mbs, (long long)d->seq, (long long)d->heads,
                 (long long)d->kv_heads, (long long)d->head_dim,
                 (long long)cuda_attention_v_dim(d, o));
        return -1;
    }
    if (d->flash && (!cuda_attention_flash_ok(d, err, errlen) ||
                     !cuda_attention_opts_flash_ok(d, o, err, errlen)))
        return -1;
    *out = (cuda_attention){.dims = *d};
    if (o)
        out->opts = *o;
    out->opts.window = out->opts.window > 0 && out->opts.window < d->seq ? out->opts.window : 0;
    out->opts.softcap = out->opts.softcap > 0.0f && out->opts.softcap < INFINITY
                            ? out->opts.softcap : 0.0f;
    out->opts.v_dim = cuda_attention_v_dim(d, o);
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

/* The unfused forward of `group` members whose q, out and score blocks lie q_step, o_step and
 * s_step elements apart: S = scale Q K^T per member, the masked softmax over the nmat
 * [q_len, kv_len] score matrices (ck_attn_softmax: causal after kv_len - q_len cached keys,
 * the window and the cap; lse of the capped rows when not NULL), O = P V per member (skipped
 * when out is NULL: the backward's recompute wants P only). */
typedef struct {
    const cuda_gemm_plan *qk, *pv;
    int64_t group, q_step, o_step, s_step, nmat, q_len, kv_len;
    pdbx_dtype dtype;
    float scale;
    int64_t window;
    float softcap;
    float *lse;
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
    cudaError_t e = ck_attn_softmax(scores, f->nmat, f->q_len, f->kv_len, f->window, f->softcap,
                                    f->lse, f->dtype, stream);
    if (e != cudaSuccess)
        return kernel_fail("ck_attn_softmax", e, err, errlen);
    for (int64_t jj = 0; jj < f->group && out; jj++) {
        int rc = cuda_gemm_exec(g, f->pv, 1.0f, v, sb + jj * f->s_step * es, ob + jj * f->o_step * es,
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
    if (a->opts.softcap > 0.0f && !lse) {
        snprintf(err, errlen, "cuda attention: soft-capping needs the rows' lse buffer");
        return -1;
    }
    int64_t q_step, s_step;
    cuda_attention_member(d, 1, &q_step, &s_step);
    const unfused_fwd f = {a->qk, a->pv, d->heads / d->kv_heads, q_step, a->opts.v_dim, s_step,
                           d->mbs * d->heads, d->seq, d->seq, d->dtype, cuda_attention_scale(d),
                           a->opts.window, a->opts.softcap,
                           a->opts.softcap > 0.0f ? lse : NULL};
    return unfused_enqueue(g, &f, q, k, v, scores, out, stream, err, errlen);
}

int cuda_attention_kv_enqueue(cuda_gemm *g, const cuda_gemm_plan *qk, const cuda_gemm_plan *pv,
                              const pdbx_attn_kv_shape *s, pdbx_dtype dt, const void *q,
                              const void *k, const void *v, void *scores, void *out,
                              cudaStream_t stream, char *err, size_t errlen)
{
    int64_t q_step, s_step;
    cuda_attention_kv_member(s, 1, &q_step, &s_step);
    const unfused_fwd f = {qk, pv, s->heads / s->kv_heads, q_step, q_step, s_step,
                           (int64_t)s->batch * s->heads, s->q_len, s->kv_len, dt,
                           1.0f / sqrtf((float)s->head_dim), 0, 0.0f, NULL};
    return unfused_enqueue(g, &f, q, k, v, scores, out, stream, err, errlen);
}

int cuda_attention_plan_bwd(cuda_gemm *g, cuda_attention *a, char *err, size_t errlen)
{
    if (a->dims.flash)
        return 0;   /* ck_flash_attention_bwd: no GEMM */
    cuda_gemm_shape b[4];
    if (cuda_attention_shapes_bwd_opts(&a->dims, &a->opts, b) != 0) {
        snprintf(err, errlen, "cuda attention backward: bad dimensions (plan the forward first)");
        return -1;
    }
    cuda_gemm_plan **plans[4] = {&a->ptv, &a->dp, &a->dq, &a->pt};
    for (int i = 0; i < 4; i++)
        if (cuda_gemm_plan_get(g, &b[i], plans[i], err, errlen) != 0)
            return -1;
    return 0;
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

/* dV = sum over the group of P^T dO; dP = dO V^T (over v's head dim) */
static int unfused_bwd_dv(cuda_gemm *g, const cuda_attention *a, const cuda_attention_bwd_bufs *b,
                          cudaStream_t stream, char *err, size_t errlen)
{
    const cuda_attention_dims *d = &a->dims;
    const int64_t es = elem_bytes(d->dtype), group = d->heads / d->kv_heads, hv = a->opts.v_dim;
    const char *ob = b->dout, *pb = b->probs;
    char *sb = b->dscores;
    int64_t q_off, s_off;
    int rc = 0;
    for (int64_t jj = 0; jj < group && rc == 0; jj++) {
        cuda_attention_member(d, jj, &q_off, &s_off);
        rc = cuda_gemm_exec_beta(g, a->ptv, 1.0f, jj ? 1.0f : 0.0f, ob + jj * hv * es,
                                 pb + s_off * es, b->dv, stream, err, errlen);
        if (rc == 0)
            rc = cuda_gemm_exec(g, a->dp, 1.0f, b->v, ob + jj * hv * es, sb + s_off * es, stream,
                                err, errlen);
    }
    return rc;
}

int cuda_attention_bwd_enqueue(cuda_gemm *g, const cuda_attention *a,
                               const cuda_attention_bwd_bufs *b, cudaStream_t stream, char *err,
                               size_t errlen)
{
    const cuda_attention_dims *d = &a->dims;
    if (d->flash)
        return fused_bwd(d, b, stream, err, errlen);
    const int64_t es = elem_bytes(d->dtype), group = d->heads / d->kv_heads;
    const char *qb = b->q;
    char *sb = b->dscores, *dqb = b->dq;
    int64_t q_off, s_off;
    if (!a->pt || !a->ptv || !a->dp || !a->dq) {
        snprintf(err, errlen, "cuda attention backward: not planned");
        return -1;
    }
    if (a->opts.softcap > 0.0f && !b->lse) {
        snprintf(err, errlen, "cuda attention backward: soft-capping needs the forward's lse");
        return -1;
    }
    int rc = unfused_bwd_dv(g, a, b, stream, err, errlen);
    if (rc)
        return rc;
    cudaError_t e = ck_attn_softmax_bwd(b->probs, b->dscores, b->lse, d->mbs * d->heads, d->seq,
                                        cuda_attention_scale(d), a->opts.window, a->opts.softcap,
                                        d->dtype, stream);
    if (e != cudaSuccess)
        return kernel_fail("ck_attn_softmax_bwd", e, err, errlen);
    /* dQ = dS K (the pv shape over q/k's head dim); dK = sum over the group of dS^T Q */
    for (int64_t jj = 0; jj < group && rc == 0; jj++) {
        cuda_attention_member(d, jj, &q_off, &s_off);
        rc = cuda_gemm_exec(g, a->dq, 1.0f, b->k, sb + s_off * es, dqb + q_off * es, stream, err,
                            errlen);
        if (rc == 0)
            rc = cuda_gemm_exec_beta(g, a->pt, 1.0f, jj ? 1.0f : 0.0f, qb + q_off * es,
                                     sb + s_off * es, b->dk, stream, err, errlen);
    }
    return rc;
}
