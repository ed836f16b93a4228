/* cuda_backward.c: the bwd pass of the cuda backend's ops (backend.h, run_op with
 * PDBX_PASS_BWD) and its buffers, allocated by prepare() when the point's passes include bwd.
 *
 * One bwd execution is the op's whole backward as Megatron runs it:
 *   linear layers: dgrad dX = dY W (cuBLASLt, the weight operand not transposed where the
 *       forward transposes it) and wgrad dW += dY^T X (the activation operand transposed, beta
 *       1 into an fp32 gradient with fp32 accumulation: gradient-accumulation fusion into
 *       main_grad); cuda_gemm.h, cuda_gemm_dgrad_shape/cuda_gemm_wgrad_shape;
 *   norms: RMSNorm backward (dx, and dweight accumulated in fp32); mlp_act_fn: SiLU x up
 *       backward; attn_core: the unfused core's backward keeping the forward's probabilities
 *       (cuda_attention.h), or, with flash_attention, the fused FlashAttention-2 backward
 *       (cuda_flash_bwd.cu) from the forward's log-sum-exp; embed: the
 *       scatter-add of dY's rows into the fp32 embedding gradient (atomicAdd); attn_rope: the
 *       inverse rotation of dq and dk in place (ck_rope); the residual adds: the gradient added
 *       into the residual branch's (ck_residual_add).
 * The data flow is the forward's reversed (the gradient an op reads is the one its successor's
 * backward writes), so every bwd reads and writes buffers of its real shapes. The weight
 * gradients are one set shared by the layers (plan_profile_memory.c says why). */
#include "engine/backends/cuda/cuda_backend.h"

#include <stdio.h>

#include "engine/backends/cuda/cuda_kernels.h"

#define RMS_EPS 1e-5f   /* the forward's (cuda_backend.c) */

enum { GK_ACT, GK_F32_ZERO };   /* filled with values in the dtype / fp32 zeros */

#define OB(op) PDBX_OP_BIT(PDBX_OP_##op)
#define NORMS (OB(INPUT_NORM) | OB(POST_ATTN_NORM) | OB(FINAL_NORM))
/* engine/plan/plan_profile_memory.c, cuda_grad_list, lists the same buffers for the same ops */
static const struct {
    const char *name;
    pdbx_opmask ops;   /* the ops whose backward reads or writes it */
    int kind;
} grad_bufs[G_COUNT] = {
    [G_X] = {"d hidden", OB(EMBED) | OB(INPUT_NORM) | OB(MLP_DOWN) | OB(FINAL_NORM) | OB(ATTN_RESIDUAL) |
             OB(MLP_RESIDUAL), GK_ACT},
    [G_XN] = {"d input_norm_out", OB(INPUT_NORM) | OB(ATTN_Q) | OB(ATTN_K) | OB(ATTN_V) | CUDA_FUSED_QKV,
              GK_ACT},
    [G_Q] = {"d q", OB(ATTN_Q) | OB(ATTN_ROPE) | OB(ATTN_CORE), GK_ACT},
    [G_K] = {"d k", OB(ATTN_K) | OB(ATTN_ROPE) | OB(ATTN_CORE), GK_ACT},
    [G_V] = {"d v", OB(ATTN_V) | OB(ATTN_CORE), GK_ACT},
    [G_SCORES] = {"d attn_scores", OB(ATTN_CORE), GK_ACT},   /* unfused only (grad_used) */
    [G_CTX] = {"d attn_context", OB(ATTN_CORE) | OB(ATTN_O), GK_ACT},
    [G_ATTN_OUT] = {"d attn_out", OB(ATTN_O) | OB(POST_ATTN_NORM) | OB(ATTN_RESIDUAL) | OB(MLP_RESIDUAL),
                    GK_ACT},
    [G_XN2] = {"d post_attn_norm_out", OB(POST_ATTN_NORM) | OB(MLP_GATE) | OB(MLP_UP) | CUDA_FUSED_FC1,
               GK_ACT},
    [G_GATE] = {"d mlp_gate_out", OB(MLP_GATE) | OB(MLP_ACT_FN), GK_ACT},
    [G_UP] = {"d mlp_up_out", OB(MLP_UP) | OB(MLP_ACT_FN), GK_ACT},
    [G_ACT] = {"d mlp_act_out", OB(MLP_ACT_FN) | OB(MLP_DOWN), GK_ACT},
    [G_XF] = {"d final_norm_out", OB(FINAL_NORM) | OB(LM_HEAD), GK_ACT},
    [G_LOGITS] = {"d logits", OB(LM_HEAD), GK_ACT},
    [G_RSTD] = {"norm rstd", NORMS, GK_F32_ZERO},
    [G_EMBED] = {"d embed_table", OB(EMBED), GK_F32_ZERO},   /* + lm_head when tied */
    [G_NORM_W] = {"d norm weight", NORMS, GK_F32_ZERO},
    [G_LM_W] = {"d lm_head weight", OB(LM_HEAD), GK_F32_ZERO},   /* not when tied */
    [G_WQ] = {"d q_proj", OB(ATTN_Q), GK_F32_ZERO},
    [G_WKV] = {"d k_proj, v_proj", OB(ATTN_K) | OB(ATTN_V), GK_F32_ZERO},
    [G_WO] = {"d o_proj", OB(ATTN_O), GK_F32_ZERO},
    [G_WGU] = {"d gate_proj, up_proj", OB(MLP_GATE) | OB(MLP_UP), GK_F32_ZERO},
    [G_WD] = {"d down_proj", OB(MLP_DOWN), GK_F32_ZERO},
    [G_QKV] = {"d qkv (fused)", CUDA_FUSED_QKV, GK_ACT},
    [G_FC1] = {"d mlp_fc1_out (fused)", CUDA_FUSED_FC1, GK_ACT},
    [G_WQKV] = {"d qkv_proj (fused)", CUDA_FUSED_QKV, GK_F32_ZERO},
    [G_WFC1] = {"d fc1 (fused)", CUDA_FUSED_FC1, GK_F32_ZERO},
    /* the biases' gradients: where the op is prepared and has a bias (grad_used) */
    [G_BQ] = {"d q_proj bias", OB(ATTN_Q), GK_F32_ZERO},
    [G_BKV] = {"d k_proj, v_proj bias", OB(ATTN_K) | OB(ATTN_V), GK_F32_ZERO},
    [G_BO] = {"d o_proj bias", OB(ATTN_O), GK_F32_ZERO},
    [G_BGU] = {"d gate_proj, up_proj bias", OB(MLP_GATE) | OB(MLP_UP), GK_F32_ZERO},
    [G_BD] = {"d down_proj bias", OB(MLP_DOWN), GK_F32_ZERO},
    [G_BQKV] = {"d qkv_proj bias (fused)", CUDA_FUSED_QKV, GK_F32_ZERO},
    [G_BFC1] = {"d fc1 bias (fused)", CUDA_FUSED_FC1, GK_F32_ZERO},
    /* flash_attention only (grad_used): the fused backward's scratch */
    [G_DELTA] = {"attn delta (fp32)", OB(ATTN_CORE), GK_F32_ZERO},
    [G_DQ_ACC] = {"d q accumulator (fp32)", OB(ATTN_CORE), GK_F32_ZERO},
};

static int is_bias_grad(int b)
{
    return b >= G_BQ && b <= G_BFC1;
}
#undef NORMS

/* Elements of gradient buffer b (in the dtype for GK_ACT, fp32 for the others). */
static size_t grad_elems(const struct cuda_point *pt, int b)
{
    const int64_t T = pt->d.tokens, h = pt->d.hidden, qd = pt->d.heads * pt->d.head_dim,
                  kvd = pt->d.kv_heads * pt->d.head_dim, I = pt->d.inter, V = pt->d.vocab;
    switch (b) {
    case G_X: case G_XN: case G_ATTN_OUT: case G_XN2: case G_XF: return (size_t)(T * h);
    case G_Q: case G_CTX: return (size_t)(T * qd);
    case G_K: case G_V: return (size_t)(T * kvd);
    case G_SCORES: return cuda_attention_scores_elems(&pt->attn.dims);
    case G_GATE: case G_UP: case G_ACT: return (size_t)(T * I);
    case G_LOGITS: return (size_t)(T * V);
    case G_RSTD: return (size_t)T;
    case G_EMBED: case G_LM_W: return (size_t)(V * h);
    case G_NORM_W: return (size_t)h;
    case G_WQ: case G_WO: return (size_t)(qd * h);
    case G_WKV: return (size_t)(kvd * h);
    case G_WGU: case G_WD: return (size_t)(I * h);
    case G_QKV: return (size_t)(T * (qd + 2 * kvd));
    case G_FC1: return (size_t)(T * 2 * I);
    case G_WQKV: return (size_t)((qd + 2 * kvd) * h);
    case G_WFC1: return (size_t)(2 * I * h);
    case G_BQ: return (size_t)qd;
    case G_BKV: return (size_t)kvd;
    case G_BO: case G_BD: return (size_t)h;
    case G_BGU: return (size_t)I;
    case G_BQKV: return (size_t)(qd + 2 * kvd);
    case G_BFC1: return (size_t)(2 * I);
    case G_DELTA: return (size_t)(pt->d.mbs * pt->d.heads * pt->d.seq);
    case G_DQ_ACC: return (size_t)(T * qd);
    default: return 0;
    }
}

static int grad_used(const struct cuda_point *pt, pdbx_dtype dt, int b)
{
    pdbx_opmask uses = grad_bufs[b].ops;
    const int flash = pt->attn.dims.flash;
    if ((b == G_SCORES && flash) || ((b == G_DELTA || b == G_DQ_ACC) && !flash) ||
        (b == G_DQ_ACC && dt == PDBX_DTYPE_FP32))
        uses = 0;   /* fp32 accumulates dQ in d q itself */
    if (b == G_EMBED && pt->d.tied)
        uses |= PDBX_OP_BIT(PDBX_OP_LM_HEAD);
    if (b == G_LM_W && pt->d.tied)
        uses = 0;
    return (uses & pt->d.ops & (is_bias_grad(b) ? pt->d.bias_ops : ~UINT64_C(0))) != 0;
}

static int alloc_grads(pdbx_compute *c, struct cuda_point *pt, char *err, size_t errlen)
{
    int rc = 0;
    const size_t es = c->dtype == PDBX_DTYPE_FP32 ? 4 : 2;
    const uint64_t seed = FILL_SEED ^ ((uint64_t)c->world_rank << 32) ^ UINT64_C(0x6b7761726467);
    for (int b = 0; b < G_COUNT && rc == 0; b++) {
        if (!grad_used(pt, c->dtype, b))
            continue;
        const size_t n = grad_elems(pt, b);
        pt->gbytes[b] = n * (grad_bufs[b].kind == GK_ACT ? es : sizeof(float));
        rc = cuda_alloc_buf(&pt->grad[b], pt->gbytes[b], grad_bufs[b].name, err, errlen);
        if (rc)
            break;
        char call[96];
        snprintf(call, sizeof call, "fill(%s)", grad_bufs[b].name);
        /* activation gradients O(1); weight gradients zero, as main_grad at a step's start */
        CU_TRY(call, grad_bufs[b].kind == GK_ACT
                         ? ck_fill_uniform(pt->grad[b], n, c->dtype, seed + (uint64_t)b, -1.0f,
                                           1.0f, c->stream)
                         : cudaMemsetAsync(pt->grad[b], 0, pt->gbytes[b], c->stream));
    }
    return rc;
fail:
    return rc;
}

/* dgrad and wgrad plans of every GEMM the point runs (the fused ones in their leaders' slots)
 * and the attention backward's plan. */
static int plan_grads(pdbx_compute *c, struct cuda_point *pt, char *err, size_t errlen)
{
    cuda_point_gemm gemms[CUDA_POINT_GEMMS];
    const int n = cuda_point_gemms(&pt->d, gemms);
    for (int i = 0; i < n; i++) {
        const pdbx_op op = gemms[i].op;
        cuda_gemm_shape dg = cuda_gemm_dgrad_shape(c->dtype, pt->d.tokens, gemms[i].n, gemms[i].k);
        cuda_gemm_shape wg = cuda_gemm_wgrad_shape(c->dtype, pt->d.tokens, gemms[i].n, gemms[i].k);
        int rc = cuda_gemm_plan_get(c->gemm, &dg, &pt->dgrad[op], err, errlen);
        if (rc == 0)
            rc = cuda_gemm_plan_get(c->gemm, &wg, &pt->wgrad[op], err, errlen);
        if (rc)
            return rc;
    }
    if (!(pt->d.ops & PDBX_OP_BIT(PDBX_OP_ATTN_CORE)))
        return 0;
    return cuda_attention_plan_bwd(c->gemm, &pt->attn, err, errlen);
}

int cuda_bwd_prepare(pdbx_compute *c, struct cuda_point *pt, char *err, size_t errlen)
{
    /* after the forward's planning: the attention's dims (scores size, path) are set */
    int rc = alloc_grads(c, pt, err, errlen);
    if (rc)
        return rc;
    if (pt->attn.dims.flash && pt->buf[B_LSE]) {
        /* the fused backward reads the forward's log-sum-exp: one forward now, so a bwd timed
         * before any forward of the point still reads real values */
        rc = cuda_attention_enqueue(c->gemm, &pt->attn, pt->buf[B_Q], pt->buf[B_K], pt->buf[B_V],
                                    NULL, pt->buf[B_CTX], pt->buf[B_LSE], c->stream, err, errlen);
        if (rc)
            return rc;
    }
    CU_TRY("cudaStreamSynchronize(after the gradients' fill)", cudaStreamSynchronize(c->stream));
    rc = plan_grads(c, pt, err, errlen);
    if (rc == 0)
        pt->bwd = 1;
    return rc;
fail:
    return rc;
}

/* dX = dY W (beta 0) and dW += dY^T X (beta 1, fp32), one after the other on the stream; for a
 * projection with a bias (db set, else NULL) then db += the column sums of dY [T, n] (fp32,
 * ck_bias_grad), part of the wgrad as in Megatron (its wgrad GEMM computes grad_bias). */
static int linear_bwd(pdbx_compute *c, pdbx_op op, const void *x, const void *w, const void *dy,
                      void *dx, void *dw, void *db, char *err, size_t errlen)
{
    const struct cuda_point *pt = c->point;
    int rc = cuda_gemm_exec(c->gemm, pt->dgrad[op], 1.0f, w, dy, dx, c->stream, err, errlen);
    if (rc == 0)
        rc = cuda_gemm_exec_beta(c->gemm, pt->wgrad[op], 1.0f, 1.0f, x, dy, dw, c->stream, err,
                                 errlen);
    if (rc != 0 || !db)
        return rc;
    /* dY is [T, n] with n the wgrad shape's n (cuda_gemm_wgrad_shape: the out features) */
    rc = -1;
    CU_TRY("ck_bias_grad", ck_bias_grad(dy, db, pt->d.tokens, cuda_gemm_plan_shape(pt->wgrad[op])->n,
                                        c->dtype, c->stream));
    return 0;
fail:
    return rc;
}

static int norm_bwd(pdbx_compute *c, const void *x, const void *w, const void *dy, void *dx,
                    char *err, size_t errlen)
{
    int rc = -1;
    const struct cuda_point *pt = c->point;
    CU_TRY("ck_rmsnorm_bwd", ck_rmsnorm_bwd(x, w, dy, dx, pt->grad[G_RSTD], pt->grad[G_NORM_W],
                                            pt->d.tokens, pt->d.hidden, RMS_EPS, c->dtype,
                                            c->stream));
    return 0;
fail:
    return rc;
}

int cuda_bwd_enqueue(pdbx_compute *c, pdbx_op op, int layer, char *err, size_t errlen)
{
    int rc = -1;
    struct cuda_point *pt = c->point;
    void **B = pt->buf, **W = cuda_layer_weights(pt, op, layer), **G = pt->grad;
    const int64_t T = pt->d.tokens, h = pt->d.hidden;
    switch (op) {
    case PDBX_OP_EMBED:
        CU_TRY("ck_embed_scatter_add", ck_embed_scatter_add(B[B_IDS], T, G[G_X], pt->d.vstart,
                                                            pt->d.vocab, h, G[G_EMBED], c->dtype,
                                                            c->stream));
        return 0;
    case PDBX_OP_INPUT_NORM:
        return norm_bwd(c, B[B_X], W[W_IN_NORM], G[G_XN], G[G_X], err, errlen);
    case PDBX_OP_ATTN_Q:
        if (pt->d.ops & CUDA_FUSED_QKV)   /* the fused QKV GEMM's dgrad and wgrad */
            return linear_bwd(c, op, B[B_XN], W[W_QKV], G[G_QKV], G[G_XN], G[G_WQKV], G[G_BQKV], err, errlen);
        return linear_bwd(c, op, B[B_XN], W[W_Q], G[G_Q], G[G_XN], G[G_WQ], G[G_BQ], err, errlen);
    case PDBX_OP_ATTN_K:
        return linear_bwd(c, op, B[B_XN], W[W_K], G[G_K], G[G_XN], G[G_WKV], G[G_BKV], err, errlen);
    case PDBX_OP_ATTN_V:
        return linear_bwd(c, op, B[B_XN], W[W_V], G[G_V], G[G_XN], G[G_WKV], G[G_BKV], err, errlen);
    case PDBX_OP_ATTN_ROPE:   /* the inverse rotation of the core's dq and dk, in place */
        CU_TRY("ck_rope(dq)", ck_rope(G[G_Q], T, pt->d.heads, pt->d.head_dim, pt->d.mbs, pt->d.seq,
                                      B[B_ROPE], 1, c->dtype, c->stream));
        CU_TRY("ck_rope(dk)", ck_rope(G[G_K], T, pt->d.kv_heads, pt->d.head_dim, pt->d.mbs, pt->d.seq,
                                      B[B_ROPE], 1, c->dtype, c->stream));
        return 0;
    case PDBX_OP_ATTN_RESIDUAL:   /* d hidden: the attention branch's gradient flows on into dx */
        CU_TRY("ck_residual_add", ck_residual_add(G[G_X], G[G_ATTN_OUT], T * h, c->dtype, c->stream));
        return 0;
    case PDBX_OP_MLP_RESIDUAL:    /* the MLP branch's gradient flows on into d attn_out */
        CU_TRY("ck_residual_add", ck_residual_add(G[G_ATTN_OUT], G[G_X], T * h, c->dtype, c->stream));
        return 0;
    case PDBX_OP_ATTN_CORE: {
        const cuda_attention_bwd_bufs ab = {
            .q = B[B_Q], .k = B[B_K], .v = B[B_V], .out = B[B_CTX], .dout = G[G_CTX],
            .probs = B[B_SCORES], .dscores = G[G_SCORES], .lse = B[B_LSE], .delta = G[G_DELTA],
            .dq_acc = c->dtype == PDBX_DTYPE_FP32 ? G[G_Q] : G[G_DQ_ACC],
            .dq = G[G_Q], .dk = G[G_K], .dv = G[G_V],
        };
        return cuda_attention_bwd_enqueue(c->gemm, &pt->attn, &ab, c->stream, err, errlen);
    }
    case PDBX_OP_ATTN_O:
        return linear_bwd(c, op, B[B_CTX], W[W_O], G[G_ATTN_OUT], G[G_CTX], G[G_WO], G[G_BO], err, errlen);
    case PDBX_OP_POST_ATTN_NORM:
        return norm_bwd(c, B[B_ATTN_OUT], W[W_POST_NORM], G[G_XN2], G[G_ATTN_OUT], err, errlen);
    case PDBX_OP_MLP_GATE:
        if (pt->d.ops & CUDA_FUSED_FC1)   /* the fused fc1 GEMM's dgrad and wgrad */
            return linear_bwd(c, op, B[B_XN2], W[W_FC1], G[G_FC1], G[G_XN2], G[G_WFC1], G[G_BFC1], err, errlen);
        return linear_bwd(c, op, B[B_XN2], W[W_GATE], G[G_GATE], G[G_XN2], G[G_WGU], G[G_BGU], err, errlen);
    case PDBX_OP_MLP_UP:
        return linear_bwd(c, op, B[B_XN2], W[W_UP], G[G_UP], G[G_XN2], G[G_WGU], G[G_BGU], err, errlen);
    case PDBX_OP_MLP_ACT_FN:
        CU_TRY("ck_silu_mul_bwd", ck_silu_mul_bwd(B[B_GATE], B[B_UP], G[G_ACT], G[G_GATE], G[G_UP],
                                                  T * pt->d.inter, c->dtype, c->stream));
        return 0;
    case PDBX_OP_MLP_DOWN:
        return linear_bwd(c, op, B[B_ACT], W[W_DOWN], G[G_X], G[G_ACT], G[G_WD], G[G_BD], err, errlen);
    case PDBX_OP_FINAL_NORM:
        return norm_bwd(c, B[B_X], B[B_FINAL_W], G[G_XF], G[G_X], err, errlen);
    case PDBX_OP_LM_HEAD:
        return linear_bwd(c, op, B[B_XF], pt->d.tied ? B[B_EMBED] : B[B_LM_W], G[G_LOGITS], G[G_XF],
                          pt->d.tied ? G[G_EMBED] : G[G_LM_W], NULL, err, errlen);
    default:
        snprintf(err, errlen, "cuda run_op: op %d has no backward", (int)op);
        return -1;
    }
fail:
    return rc;
}
