/* cuda_backward.c: the bwd pass of the cuda backend's ops (backend.h, run_op with
 * PDBX_PASS_BWD) and its buffers, allocated by prepare() when the point's passes include bwd.
 *
 * One bwd execution is the op's whole backward as Megatron runs it:
 *   linear layers: dgrad dX = dY W (cuBLASLt, the weight operand not transposed where the
 *       forward transposes it) and wgrad dW += dY^T X (the activation operand transposed, beta
 *       1 into an fp32 gradient with fp32 accumulation: gradient-accumulation fusion into
 *       main_grad); cuda_gemm.h, cuda_gemm_dgrad_shape/cuda_gemm_wgrad_shape;
 *   norms: RMSNorm backward (dx, and dweight accumulated in fp32), or LayerNorm's (dx,
 *       dweight and dbias, from the forward's row mean and rstd); mlp_act_fn: SiLU x up
 *       backward, GELU x up's, or a plain MLP's GELU(up) (d up only); attn_core: the unfused
 *       core's backward keeping the forward's probabilities
 *       (cuda_attention.h), or, with flash_attention, the fused FlashAttention-2 backward
 *       (cuda_flash_bwd.cu) from the forward's log-sum-exp; embed: the
 *       scatter-add of dY's rows into the fp32 embedding gradient (atomicAdd) and, with learned
 *       positions, the position table's gradient; attn_rope: the inverse rotation of dq and dk
 *       in place (ck_rope, the rotated dims of each head); the residual adds: the gradient
 *       added into the residual branch's (ck_residual_add). A parallel residual's
 *       post_attn_norm reads the layer input x, as its forward does.
 * The data flow is the forward's reversed (the gradient an op reads is the one its successor's
 * backward writes), so every bwd reads and writes buffers of its real shapes. The weight
 * gradients are one set shared by the layers (plan_profile_memory.c says why). */
#include "engine/backends/cuda/cuda_backend.h"

#include <stdio.h>

#include "engine/backends/cuda/cuda_bufs.h"
#include "engine/backends/cuda/cuda_kernels.h"
#include "engine/backends/cuda/cuda_kernels_dense.h"
#include "engine/backends/cuda/cuda_mla.h"
#include "engine/backends/cuda/cuda_moe.h"

#define RMS_EPS 1e-5f   /* the forward's (cuda_backend.c) */

/* The gradient buffers (cuda_bufs.c says which a point has; the planner's cuda grad list
 * lists the same), filled: activation gradients O(1), weight gradients zero, as main_grad at a
 * step's start. */
static int alloc_grads(pdbx_compute *c, struct cuda_point *pt, char *err, size_t errlen)
{
    int rc = 0;
    const cuda_buf_path path = {c->dtype, c->flash_attention, 1};
    const uint64_t seed = FILL_SEED ^ ((uint64_t)c->world_rank << 32) ^ UINT64_C(0x6b7761726467);
    for (int g = 0; g < G_COUNT && rc == 0; g++) {
        const cuda_buf buf = cuda_grad_buf(&pt->d, &path, g);
        if (!buf.used)
            continue;
        pt->gbytes[g] = buf.bytes;
        rc = cuda_alloc_buf(&pt->grad[g], buf.bytes, buf.name, err, errlen);
        if (rc == 0)
            rc = cuda_fill_buf(c, &pt->d, pt->grad[g], &buf, seed + (uint64_t)g, err, errlen);
    }
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
    if (pt->buf[B_LSE]) {
        /* the fused backward, and the capped unfused one, read the forward's log-sum-exp (the
         * latter its probabilities too): one forward now, layer 0's, so a bwd timed before any
         * forward of the point still reads real values */
        const cuda_attention a = cuda_point_attn(pt, 0);
        rc = cuda_attention_enqueue(c->gemm, &a, pt->buf[B_Q], pt->buf[B_K], pt->buf[B_V],
                                    pt->buf[B_SCORES], pt->buf[B_CTX], pt->buf[B_LSE], c->stream, err,
                                    errlen);
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

int cuda_linear_bwd(pdbx_compute *c, pdbx_op op, const void *x, const void *w, const void *dy,
                    void *dx, void *dw, void *db, char *err, size_t errlen)
{
    return linear_bwd(c, op, x, w, dy, dx, dw, db, err, errlen);
}

/* A norm's backward of the model's kind (the forward's, cuda_backend.c's run_norm): dx from
 * the norm's input x and output gradient dy; the weight's (and LayerNorm's bias') gradient
 * accumulated into the one set the norms share. LayerNorm reads the row mean and rstd the
 * forward kept; RMSNorm's first kernel recomputes rstd for its second (G_RSTD). */
static int norm_bwd(pdbx_compute *c, const void *x, const void *w, const void *dy, void *dx,
                    char *err, size_t errlen)
{
    int rc = -1;
    const struct cuda_point *pt = c->point;
    void *const *B = pt->buf, *const *G = pt->grad;
    if (pt->d.layernorm)
        CU_TRY("ck_layernorm_bwd", ck_layernorm_bwd(x, w, B[B_NORM_MEAN], B[B_NORM_RSTD], dy, dx,
                                                    G[G_NORM_W], G[G_NORM_B], pt->d.tokens,
                                                    pt->d.hidden, c->dtype, c->stream));
    else
        CU_TRY("ck_rmsnorm_bwd", ck_rmsnorm_bwd(x, w, dy, dx, G[G_RSTD], G[G_NORM_W], pt->d.tokens,
                                                pt->d.hidden, RMS_EPS, c->dtype, c->stream));
    return 0;
fail:
    return rc;
}

/* The MLP activation's backward (the forward's, cuda_backend.c's run_act): SiLU x up's, GELU x
 * up's (both gradients), or a plain MLP's GELU(up) (d up only: there is no gate). */
static int act_bwd(pdbx_compute *c, char *err, size_t errlen)
{
    int rc = -1;
    const struct cuda_point *pt = c->point;
    void *const *B = pt->buf, *const *G = pt->grad;
    const int64_t n = pt->d.tokens * pt->d.inter;
    const ck_gelu_kind kind = pt->d.act == PDBX_ACT_GELU_TANH ? CK_GELU_TANH : CK_GELU_ERF;
    if (pt->d.act == PDBX_ACT_SILU)
        CU_TRY("ck_silu_mul_bwd", ck_silu_mul_bwd(B[B_GATE], B[B_UP], G[G_ACT], G[G_GATE], G[G_UP], n,
                                                  c->dtype, c->stream));
    else if (pt->d.mlp_plain)
        CU_TRY("ck_gelu_bwd", ck_gelu_bwd(B[B_UP], G[G_ACT], G[G_UP], n, kind, c->dtype, c->stream));
    else
        CU_TRY("ck_gelu_mul_bwd", ck_gelu_mul_bwd(B[B_GATE], B[B_UP], G[G_ACT], G[G_GATE], G[G_UP], n,
                                                  kind, c->dtype, c->stream));
    return 0;
fail:
    return rc;
}

/* embed's backward: the scatter-add of d hidden's rows into the embedding gradient, and with
 * learned positions each position's mbs rows summed into the table's gradient. */
static int embed_bwd(pdbx_compute *c, char *err, size_t errlen)
{
    int rc = -1;
    const struct cuda_point *pt = c->point;
    void *const *B = pt->buf, *const *G = pt->grad;
    const int64_t T = pt->d.tokens, h = pt->d.hidden;
    CU_TRY("ck_embed_scatter_add", ck_embed_scatter_add(B[B_IDS], T, G[G_X], pt->d.vstart, pt->d.vocab,
                                                        h, G[G_EMBED], c->dtype, c->stream));
    if (pt->d.pos_rows)
        CU_TRY("ck_pos_embed_bwd", ck_pos_embed_bwd(G[G_X], G[G_POS], T, h, pt->d.mbs, c->dtype,
                                                    c->stream));
    return 0;
fail:
    return rc;
}

/* q and k's RoPE inverted on dq and dk in place (the rotated rot dims of each head). */
static int rope_bwd(pdbx_compute *c, char *err, size_t errlen)
{
    int rc = -1;
    const struct cuda_point *pt = c->point;
    const cuda_dims *d = &pt->d;
    CU_TRY("ck_rope(dq)", ck_rope(pt->grad[G_Q], d->tokens, d->heads, d->head_dim, d->rot, d->mbs,
                                  d->seq, pt->buf[B_ROPE], 1, c->dtype, c->stream));
    CU_TRY("ck_rope(dk)", ck_rope(pt->grad[G_K], d->tokens, d->kv_heads, d->head_dim, d->rot, d->mbs,
                                  d->seq, pt->buf[B_ROPE], 1, c->dtype, c->stream));
    return 0;
fail:
    return rc;
}

/* lm_head: with gemma-2's final cap its GEMMs' dY is d logits through the cap's derivative,
 * written from the forward's capped logits into G_LOGITS_CAPPED (G_LOGITS, filled once, is
 * left as it is); without, d logits itself. */
static int lm_head_bwd(pdbx_compute *c, char *err, size_t errlen)
{
    int rc = -1;
    struct cuda_point *pt = c->point;
    void **B = pt->buf, **G = pt->grad;
    const void *dy = G[G_LOGITS];
    if (pt->d.final_softcap > 0.0f && G[G_LOGITS_CAPPED]) {
        CU_TRY("ck_logit_softcap_bwd", ck_logit_softcap_bwd(B[B_LOGITS], G[G_LOGITS], G[G_LOGITS_CAPPED],
                                                            pt->d.tokens * pt->d.vocab, pt->d.final_softcap,
                                                            c->dtype, c->stream));
        dy = G[G_LOGITS_CAPPED];
    }
    return linear_bwd(c, PDBX_OP_LM_HEAD, B[B_XF], pt->d.tied ? B[B_EMBED] : B[B_LM_W], dy, G[G_XF],
                      pt->d.tied ? G[G_EMBED] : G[G_LM_W], NULL, err, errlen);
fail:
    return rc;
}

int cuda_bwd_enqueue(pdbx_compute *c, pdbx_op op, int layer, char *err, size_t errlen)
{
    int rc = -1;
    struct cuda_point *pt = c->point;
    void **B = pt->buf, **W = cuda_layer_weights(pt, op, layer), **G = pt->grad;
    const int64_t T = pt->d.tokens, h = pt->d.hidden;
    if (cuda_mla_runs(&pt->d, op))   /* qk_norm's and MLA's ops (cuda_mla.c) */
        return cuda_mla_bwd(c, op, W, err, errlen);
    switch (op) {
    case PDBX_OP_EMBED:
        return embed_bwd(c, err, errlen);
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
        return rope_bwd(c, err, errlen);
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
        const cuda_attention a = cuda_point_attn(pt, layer);   /* the forward's window and cap */
        return cuda_attention_bwd_enqueue(c->gemm, &a, &ab, c->stream, err, errlen);
    }
    case PDBX_OP_ATTN_O:
        return linear_bwd(c, op, B[B_CTX], W[W_O], G[G_ATTN_OUT], G[G_CTX], G[G_WO], G[G_BO], err, errlen);
    case PDBX_OP_POST_ATTN_NORM:
        /* a parallel residual's norm read the layer's input: its dx is part of that input's
         * gradient, written into d attn_out as the cpu does (the same [T, h] rows; the sum with
         * the attention branch's is the residual ops' add) */
        return norm_bwd(c, pt->d.parallel_residual ? B[B_X] : B[B_ATTN_OUT], W[W_POST_NORM], G[G_XN2],
                        G[G_ATTN_OUT], err, errlen);
    case PDBX_OP_MLP_GATE:
        if (pt->d.ops & CUDA_FUSED_FC1)   /* the fused fc1 GEMM's dgrad and wgrad */
            return linear_bwd(c, op, B[B_XN2], W[W_FC1], G[G_FC1], G[G_XN2], G[G_WFC1], G[G_BFC1], err, errlen);
        return linear_bwd(c, op, B[B_XN2], W[W_GATE], G[G_GATE], G[G_XN2], G[G_WGU], G[G_BGU], err, errlen);
    case PDBX_OP_MLP_UP:
        return linear_bwd(c, op, B[B_XN2], W[W_UP], G[G_UP], G[G_XN2], G[G_WGU], G[G_BGU], err, errlen);
    case PDBX_OP_MLP_ACT_FN:
        return act_bwd(c, err, errlen);
    case PDBX_OP_MLP_DOWN:
        return linear_bwd(c, op, B[B_ACT], W[W_DOWN], G[G_X], G[G_ACT], G[G_WD], G[G_BD], err, errlen);
    case PDBX_OP_FINAL_NORM:
        return norm_bwd(c, B[B_X], B[B_FINAL_W], G[G_XF], G[G_X], err, errlen);
    case PDBX_OP_LM_HEAD:
        return lm_head_bwd(c, err, errlen);
    default:
        if (pdbx_op_is_moe(op))   /* cuda_moe.c */
            return cuda_moe_bwd_enqueue(c, op, W, err, errlen);
        snprintf(err, errlen, "cuda run_op: op %d has no backward", (int)op);
        return -1;
    }
fail:
    return rc;
}
