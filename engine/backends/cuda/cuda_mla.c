/* cuda_mla.c: qwen3's q/k norm and DeepSeek's multi-head latent attention on the cuda backend
 * (contract and data flow in cuda_mla.h): their dims, buffer sizes and both passes of their
 * ops. The buffers are cuda_bufs.c's slots (B_QK_NORM_W, B_MLA_*, W_Q_A .. W_KV_B, G_MLA_*,
 * ...), allocated and filled with the others by cuda_point.c and cuda_backward.c; the GEMM
 * plans are cuda_point.c's and cuda_backward.c's, from cuda_linear_ops' entries. */
#include "engine/backends/cuda/cuda_mla.h"

#include <stdio.h>

#include "engine/backends/cuda/cuda_kernels.h"
#include "engine/backends/cuda/cuda_kernels_mla.h"

#define MLA_NORM_EPS 1e-5f   /* the other norms' (cuda_backend.c; the cpu's MLA_NORM_EPS) */

#define OB(op) PDBX_OP_BIT(PDBX_OP_##op)

int cuda_mla_kinds(const pdbx_point_shapes *p, cuda_dims *d, char *err, size_t errlen)
{
    const pdbx_model *m = &p->model;
    const pdbx_arch *a = &m->arch;
    d->qk_norm = a->qk_norm != 0;
    d->mla.on = a->attention == PDBX_ATTN_MLA;
    if (!d->mla.on)
        return 0;
    d->mla.rq = a->mla.q_lora_rank;
    d->mla.rkv = a->mla.kv_lora_rank;
    d->mla.nope = a->mla.qk_nope_head_dim;
    d->mla.rope = a->mla.qk_rope_head_dim;
    d->mla.dv = a->mla.v_head_dim;
    d->kv_heads = d->heads;        /* every head its own k_nope and v (k_pe broadcast) */
    d->rot = d->mla.rope;          /* attn_rope rotates the rope part only */
    if (p->fused_projections) {    /* the planner refuses it too (plan_validate.c) */
        snprintf(err, errlen, "cuda prepare: model '%s''s multi-head latent attention has no fused QKV "
                 "GEMM (allowed: fused_projections false)", m->name);
        return -1;
    }
    if (d->mla.rope < 2 || d->mla.nope + d->mla.rope != m->head_dim || d->mla.rkv < 1 || d->mla.dv < 1 ||
        d->mla.rq < 0) {
        snprintf(err, errlen, "cuda prepare: model '%s': MLA dims rq %lld, rkv %lld, nope %lld, rope %lld, "
                 "dv %lld with head_dim %d (allowed: rope >= 2, nope + rope = head_dim, rkv, dv >= 1)",
                 m->name, (long long)d->mla.rq, (long long)d->mla.rkv, (long long)d->mla.nope,
                 (long long)d->mla.rope, (long long)d->mla.dv, m->head_dim);
        return -1;
    }
    return 0;
}

size_t cuda_mla_elems(const cuda_dims *d, int b, int w, int g)
{
    const int64_t T = d->tokens, h = d->hidden, rq = d->mla.rq, rkv = d->mla.rkv, rope = d->mla.rope;
    const int64_t qbd = d->heads * d->head_dim, kvbd = d->heads * (d->mla.nope + d->mla.dv);
    switch (b) {
    case B_QK_NORM_W: return (size_t)(2 * d->head_dim);
    case B_MLA_QA: case B_MLA_QAN: return (size_t)(T * rq);
    case B_MLA_KVA: return (size_t)(T * (rkv + rope));
    case B_MLA_KVN: return (size_t)(T * rkv);
    case B_MLA_KVB: return (size_t)(T * kvbd);
    case B_MLA_NORM_W: return (size_t)(rq + rkv);
    default: break;
    }
    switch (w) {
    case W_Q_A: return (size_t)(rq * h);
    case W_Q_B: return (size_t)(qbd * rq);
    case W_KV_A: return (size_t)((rkv + rope) * h);
    case W_KV_B: return (size_t)(kvbd * rkv);
    default: break;
    }
    switch (g) {   /* the activations' gradients are their buffers' sizes */
    case G_MLA_QA: return cuda_mla_elems(d, B_MLA_QA, -1, -1);
    case G_MLA_QAN: return cuda_mla_elems(d, B_MLA_QAN, -1, -1);
    case G_MLA_KVA: return cuda_mla_elems(d, B_MLA_KVA, -1, -1);
    case G_MLA_KVN: return cuda_mla_elems(d, B_MLA_KVN, -1, -1);
    case G_MLA_KVB: return cuda_mla_elems(d, B_MLA_KVB, -1, -1);
    case G_QK_NORM_W: return cuda_mla_elems(d, B_QK_NORM_W, -1, -1);
    case G_MLA_NORM_W: return cuda_mla_elems(d, B_MLA_NORM_W, -1, -1);
    case G_W_Q_A: return cuda_mla_elems(d, -1, W_Q_A, -1);
    case G_W_Q_B: return cuda_mla_elems(d, -1, W_Q_B, -1);
    case G_W_KV_A: return cuda_mla_elems(d, -1, W_KV_A, -1);
    case G_W_KV_B: return cuda_mla_elems(d, -1, W_KV_B, -1);
    default: return 0;
    }
}

int cuda_mla_runs(const cuda_dims *d, pdbx_op op)
{
    if ((int)op < 0 || op >= PDBX_OP_COUNT)
        return 0;
    if (op == PDBX_OP_ATTN_QK_NORM)
        return d->qk_norm;
    return d->mla.on && ((PDBX_OP_BIT(op) & PDBX_OPS_MLA) || op == PDBX_OP_ATTN_ROPE);
}

static size_t esz(pdbx_dtype dt)
{
    return dt == PDBX_DTYPE_FP32 ? 4 : 2;
}

/* p advanced by n elements of the dtype */
static void *at(void *p, int64_t n, pdbx_dtype dt)
{
    return (char *)p + (size_t)n * esz(dt);
}

static ck_mla_shape shape_of(const cuda_dims *d)
{
    return (ck_mla_shape){d->heads, d->mla.nope, d->mla.rope, d->mla.dv, d->mla.rkv};
}

/* MLA's attn_rope: q's rope part of every head and the shared k_pe rotated in place, then k
 * and v gathered (inverse 0); its backward (inverse 1): the scatter into kv_b's output
 * gradient and k_pe's (summed over the heads), then both rotated back. */
static int mla_rope(pdbx_compute *c, int inverse, char *err, size_t errlen)
{
    int rc = -1;
    const struct cuda_point *pt = c->point;
    const cuda_dims *d = &pt->d;
    void *const *X = inverse ? pt->grad : pt->buf;
    void *q = X[inverse ? G_Q : B_Q], *kva = X[inverse ? G_MLA_KVA : B_MLA_KVA];
    const ck_mla_shape s = shape_of(d);
    const int64_t T = d->tokens, kd = d->head_dim, kvaw = d->mla.rkv + d->mla.rope;
    if (inverse)
        CU_TRY("ck_mla_kv_scatter", ck_mla_kv_scatter(X[G_K], X[G_V], kva, X[G_MLA_KVB], T, &s, c->dtype,
                                                      c->stream));
    CU_TRY("ck_rope(q rope part)", ck_rope(at(q, d->mla.nope, c->dtype), T, d->heads, kd, d->mla.rope,
                                           d->mbs, d->seq, pt->buf[B_ROPE], inverse, c->dtype, c->stream));
    CU_TRY("ck_rope(k_pe)", ck_rope(at(kva, d->mla.rkv, c->dtype), T, 1, kvaw, d->mla.rope, d->mbs, d->seq,
                                    pt->buf[B_ROPE], inverse, c->dtype, c->stream));
    if (!inverse)
        CU_TRY("ck_mla_kv_gather", ck_mla_kv_gather(kva, X[B_MLA_KVB], X[B_K], X[B_V], T, &s, c->dtype,
                                                    c->stream));
    return 0;
fail:
    return rc;
}

/* qwen3's norm of every head of q, then of k, in place (ck_rmsnorm's rows are the heads). */
static int qk_norm_fwd(pdbx_compute *c, char *err, size_t errlen)
{
    int rc = -1;
    const struct cuda_point *pt = c->point;
    const cuda_dims *d = &pt->d;
    void *w = pt->buf[B_QK_NORM_W];
    CU_TRY("ck_rmsnorm(q heads)", ck_rmsnorm(pt->buf[B_Q], w, pt->buf[B_Q], d->tokens * d->heads, d->head_dim,
                                             MLA_NORM_EPS, c->dtype, c->stream));
    CU_TRY("ck_rmsnorm(k heads)", ck_rmsnorm(pt->buf[B_K], at(w, d->head_dim, c->dtype), pt->buf[B_K],
                                             d->tokens * d->kv_heads, d->head_dim, MLA_NORM_EPS, c->dtype,
                                             c->stream));
    return 0;
fail:
    return rc;
}

/* Its backward: dq and dk through their norms in place, q and k standing for the norms'
 * inputs (the same rows, as the cpu's); both weights' gradients into G_QK_NORM_W. */
static int qk_norm_bwd(pdbx_compute *c, char *err, size_t errlen)
{
    int rc = -1;
    const struct cuda_point *pt = c->point;
    const cuda_dims *d = &pt->d;
    const int64_t hd = d->head_dim;
    const void *w = pt->buf[B_QK_NORM_W];
    float *dw = pt->grad[G_QK_NORM_W];
    CU_TRY("ck_rmsnorm_strided_bwd(q heads)",
           ck_rmsnorm_strided_bwd(pt->buf[B_Q], hd, w, pt->grad[G_Q], hd, pt->grad[G_Q], hd, dw,
                                  d->tokens * d->heads, hd, MLA_NORM_EPS, c->dtype, c->stream));
    CU_TRY("ck_rmsnorm_strided_bwd(k heads)",
           ck_rmsnorm_strided_bwd(pt->buf[B_K], hd, at((void *)w, hd, c->dtype), pt->grad[G_K], hd, pt->grad[G_K],
                                  hd, dw + hd, d->tokens * d->kv_heads, hd, MLA_NORM_EPS, c->dtype, c->stream));
    return 0;
fail:
    return rc;
}

static int gemm(pdbx_compute *c, pdbx_op op, const void *x, const void *w, void *y, char *err, size_t errlen)
{
    return cuda_gemm_exec(c->gemm, c->point->plan[op], 1.0f, w, x, y, c->stream, err, errlen);
}

int cuda_mla_fwd(pdbx_compute *c, pdbx_op op, void **W, char *err, size_t errlen)
{
    int rc = -1;
    struct cuda_point *pt = c->point;
    const cuda_dims *d = &pt->d;
    void **B = pt->buf;
    const int64_t T = d->tokens, rq = d->mla.rq, rkv = d->mla.rkv;
    switch (op) {
    case PDBX_OP_ATTN_QK_NORM: return qk_norm_fwd(c, err, errlen);
    case PDBX_OP_ATTN_Q_A: return gemm(c, op, B[B_XN], W[W_Q_A], B[B_MLA_QA], err, errlen);
    case PDBX_OP_ATTN_Q_NORM:
        CU_TRY("ck_rmsnorm(q_a)", ck_rmsnorm(B[B_MLA_QA], B[B_MLA_NORM_W], B[B_MLA_QAN], T, rq, MLA_NORM_EPS,
                                             c->dtype, c->stream));
        return 0;
    case PDBX_OP_ATTN_Q_B: return gemm(c, op, B[B_MLA_QAN], W[W_Q_B], B[B_Q], err, errlen);
    case PDBX_OP_ATTN_KV_A: return gemm(c, op, B[B_XN], W[W_KV_A], B[B_MLA_KVA], err, errlen);
    case PDBX_OP_ATTN_KV_NORM:   /* kv_a's latent, read in place in its rows */
        CU_TRY("ck_rmsnorm_strided(kv_a latent)",
               ck_rmsnorm_strided(B[B_MLA_KVA], rkv + d->mla.rope, at(B[B_MLA_NORM_W], rq, c->dtype), B[B_MLA_KVN],
                                  rkv, T, rkv, MLA_NORM_EPS, c->dtype, c->stream));
        return 0;
    case PDBX_OP_ATTN_KV_B: return gemm(c, op, B[B_MLA_KVN], W[W_KV_B], B[B_MLA_KVB], err, errlen);
    case PDBX_OP_ATTN_ROPE: return mla_rope(c, 0, err, errlen);
    default:
        snprintf(err, errlen, "cuda run_op: op %s is not an MLA or q/k norm op", pdbx_op_name(op));
        return -1;
    }
fail:
    return rc;
}

int cuda_mla_bwd(pdbx_compute *c, pdbx_op op, void **W, char *err, size_t errlen)
{
    int rc = -1;
    struct cuda_point *pt = c->point;
    const cuda_dims *d = &pt->d;
    void **B = pt->buf, **G = pt->grad;
    const int64_t T = d->tokens, rq = d->mla.rq, rkv = d->mla.rkv, kvaw = rkv + d->mla.rope;
    float *dnw = G[G_MLA_NORM_W];
    switch (op) {
    case PDBX_OP_ATTN_QK_NORM: return qk_norm_bwd(c, err, errlen);
    case PDBX_OP_ATTN_Q_A:
        return cuda_linear_bwd(c, op, B[B_XN], W[W_Q_A], G[G_MLA_QA], G[G_XN], G[G_W_Q_A], NULL, err, errlen);
    case PDBX_OP_ATTN_Q_NORM:
        CU_TRY("ck_rmsnorm_strided_bwd(q_a)",
               ck_rmsnorm_strided_bwd(B[B_MLA_QA], rq, B[B_MLA_NORM_W], G[G_MLA_QAN], rq, G[G_MLA_QA], rq, dnw, T,
                                      rq, MLA_NORM_EPS, c->dtype, c->stream));
        return 0;
    case PDBX_OP_ATTN_Q_B:
        return cuda_linear_bwd(c, op, B[B_MLA_QAN], W[W_Q_B], G[G_Q], G[G_MLA_QAN], G[G_W_Q_B], NULL, err, errlen);
    case PDBX_OP_ATTN_KV_A:
        return cuda_linear_bwd(c, op, B[B_XN], W[W_KV_A], G[G_MLA_KVA], G[G_XN], G[G_W_KV_A], NULL, err, errlen);
    case PDBX_OP_ATTN_KV_NORM:   /* d latent into kv_a's gradient rows (k_pe's columns are rope's) */
        CU_TRY("ck_rmsnorm_strided_bwd(kv_a latent)",
               ck_rmsnorm_strided_bwd(B[B_MLA_KVA], kvaw, at(B[B_MLA_NORM_W], rq, c->dtype), G[G_MLA_KVN], rkv,
                                      G[G_MLA_KVA], kvaw, dnw + rq, T, rkv, MLA_NORM_EPS, c->dtype, c->stream));
        return 0;
    case PDBX_OP_ATTN_KV_B:
        return cuda_linear_bwd(c, op, B[B_MLA_KVN], W[W_KV_B], G[G_MLA_KVB], G[G_MLA_KVN], G[G_W_KV_B], NULL, err,
                               errlen);
    case PDBX_OP_ATTN_ROPE: return mla_rope(c, 1, err, errlen);
    default:
        snprintf(err, errlen, "cuda run_op: op %s is not an MLA or q/k norm op", pdbx_op_name(op));
        return -1;
    }
fail:
    return rc;
}
