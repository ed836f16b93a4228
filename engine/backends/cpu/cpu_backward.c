/* cpu_backward.c: the bwd pass of the cpu backend's ops (backend.h, run_op with PDBX_PASS_BWD)
 * and the roles and values of its buffers (cpu_internal.h, cpu_grads).
 *
 * One bwd execution is the op's whole backward as Megatron/PyTorch run it:
 *   GEMM y = x W (W stored [k, n]):  dgrad dX = dY W^T  and  wgrad dW += X^T dY
 *       (two GEMMs of the forward's size; wgrad accumulates into the fp32 weight gradient,
 *        beta 1, as Megatron's gradient-accumulation fusion does into main_grad; in bf16 both
 *        GEMMs read bf16 operands through sbgemm and write fp32); a projection with a bias
 *       (pdbx_op_shape.bias) adds the bias gradient db += column sums of dY (fp32), as
 *       Megatron's wgrad does with the weight gradient;
 *   norms: RMSNorm backward (dx and dweight), or LayerNorm's (dx, dweight and dbias, from
 *       the forward's row mean and rstd); mlp_act_fn: SiLU(g)*u backward (dg, du), GELU(g)*u's,
 *       or a plain MLP's GELU(u) backward (du);
 *   attn_core: causal attention backward, FlashAttention-2's recomputation (dQ, dK, dV);
 *   lm_head with final-logit soft-capping: d logits x (1 - (logits / cap)^2) from the
 *       forward's capped logits into a buffer of its own in the GEMM dtype, which the dgrad
 *       and wgrad then read (d logits itself, filled once, is never modified: a product in
 *       place would shrink it step after step);
 *   embed: the scatter-add of dY's rows into the embedding gradient's rows of the ids, and
 *       with learned positions the position table's gradient (each position's rows summed).
 * The data flow mirrors the forward's backwards (cpu_compute.c): each op reads the gradient its
 * successor in the forward would have written (lm_head: d logits -> d input_norm_out ->
 * final_norm -> d hidden -> mlp_down -> d act -> act_fn -> d gate, d up -> gate/up ->
 * d post_attn_norm_out -> post_attn_norm -> d attn_out -> attn_o -> d context -> attn_core ->
 * dq, dk, dv -> q/k/v -> d input_norm_out -> input_norm -> d hidden -> embed). */
#include "engine/backends/cpu/cpu_internal.h"
#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_bwd.h"
#include "engine/backends/cpu/cpu_kernels_dense.h"
#include "engine/backends/cpu/cpu_kernels_loss.h"

#include <stdio.h>
#include <string.h>

#define RMS_EPS 1e-5f   /* the forward's (cpu_compute.c) */

void **pdbx_cpu_grad_slot(pdbx_compute *c, pdbx_buf_role r)
{
    cpu_grads *g = &c->grad;
    switch (r) {
    case PDBX_BUF_GRAD_HIDDEN: return (void **)&g->dx;
    case PDBX_BUF_GRAD_NORM_OUT: return (void **)&g->dxn;
    case PDBX_BUF_GRAD_Q: return (void **)&g->dq;
    case PDBX_BUF_GRAD_K: return (void **)&g->dk;
    case PDBX_BUF_GRAD_V: return (void **)&g->dv;
    case PDBX_BUF_GRAD_CONTEXT: return (void **)&g->dctx;
    case PDBX_BUF_GRAD_ATTN_OUT: return (void **)&g->dy;
    case PDBX_BUF_GRAD_POST_NORM_OUT: return (void **)&g->dyn;
    case PDBX_BUF_GRAD_GATE: return (void **)&g->dg;
    case PDBX_BUF_GRAD_UP: return (void **)&g->du;
    case PDBX_BUF_GRAD_ACT: return (void **)&g->dact;
    case PDBX_BUF_GRAD_LOGITS: return (void **)&g->dlogits;
    case PDBX_BUF_ATTN_BWD_SCRATCH: return (void **)&g->scratch;
    case PDBX_BUF_GRAD_HIDDEN_LP: return &g->dx_b;
    case PDBX_BUF_GRAD_Q_LP: return &g->dq_b;
    case PDBX_BUF_GRAD_K_LP: return &g->dk_b;
    case PDBX_BUF_GRAD_V_LP: return &g->dv_b;
    case PDBX_BUF_GRAD_ATTN_OUT_LP: return &g->dy_b;
    case PDBX_BUF_GRAD_GATE_LP: return &g->dg_b;
    case PDBX_BUF_GRAD_UP_LP: return &g->du_b;
    case PDBX_BUF_GRAD_LOGITS_LP: return &g->dlogits_b;
    case PDBX_BUF_GRAD_LOGITS_CAPPED: return &g->dlogits_capped;
    case PDBX_BUF_LOSS_STATS: return (void **)&g->loss_stats;
    case PDBX_BUF_GRAD_EMBED_TABLE: return (void **)&g->demb;
    case PDBX_BUF_GRAD_NORM_W: return (void **)&g->dnorm_w;
    case PDBX_BUF_GRAD_LM_HEAD_W: return (void **)&g->dwlm;
    case PDBX_BUF_GRAD_W_Q: return (void **)&g->dwq;
    case PDBX_BUF_GRAD_W_KV: return (void **)&g->dwkv;
    case PDBX_BUF_GRAD_W_O: return (void **)&g->dwo;
    case PDBX_BUF_GRAD_W_GATE_UP: return (void **)&g->dwgu;
    case PDBX_BUF_GRAD_W_DOWN: return (void **)&g->dwd;
    case PDBX_BUF_GRAD_QKV_FUSED: return &g->dqkv;
    case PDBX_BUF_GRAD_GATE_UP_FUSED: return &g->dfc1;
    case PDBX_BUF_GRAD_W_QKV_FUSED: return (void **)&g->dwqkv;
    case PDBX_BUF_GRAD_W_GATE_UP_FUSED: return (void **)&g->dwfc1;
    case PDBX_BUF_GRAD_B_Q: return (void **)&g->dbq;
    case PDBX_BUF_GRAD_B_KV: return (void **)&g->dbkv;
    case PDBX_BUF_GRAD_B_O: return (void **)&g->dbo;
    case PDBX_BUF_GRAD_B_GATE_UP: return (void **)&g->dbgu;
    case PDBX_BUF_GRAD_B_DOWN: return (void **)&g->dbd;
    case PDBX_BUF_GRAD_B_QKV_FUSED: return (void **)&g->dbqkv;
    case PDBX_BUF_GRAD_B_GATE_UP_FUSED: return (void **)&g->dbfc1;
    case PDBX_BUF_GRAD_NORM_B: return (void **)&g->dnorm_b;
    case PDBX_BUF_GRAD_POS_TABLE: return (void **)&g->dpos;
    case PDBX_BUF_GRAD_QK_NORM_W: return (void **)&g->dqk_norm_w;
    default: return NULL;
    }
}

/* Pseudo-random values in [-scale, scale]: one block generated, then copied (as cpu_memory.c's
 * fill: memcpy runs at memory speed, generating every element of a large buffer would not);
 * esz 2 stores bf16. */
#define GRAD_FILL_BLOCK 65536
static void fill(void *x, size_t n, size_t esz, float scale, uint64_t seed)
{
    if (!x || n == 0)
        return;
    const size_t head = n < GRAD_FILL_BLOCK ? n : GRAD_FILL_BLOCK;
    if (esz == 4) {
        pdbx_k_fill_uniform(x, head, scale, seed);
    } else {
        uint16_t *b = x;
        float tmp[1024];
        for (size_t i = 0; i < head; i += 1024) {
            size_t m = head - i < 1024 ? head - i : 1024;
            pdbx_k_fill_uniform(tmp, m, scale, seed + i);
            for (size_t j = 0; j < m; j++)
                b[i + j] = pdbx_k_f32_to_bf16(tmp[j]);
        }
    }
    unsigned char *p = x;
    const size_t total = n * esz;
    for (size_t done = head * esz; done < total;) {
        size_t chunk = done < total - done ? done : total - done;
        memcpy(p + done, p, chunk);
        done += chunk;
    }
}

static void zero(void *x, size_t bytes)
{
    if (x)
        memset(x, 0, bytes);
}

uint64_t pdbx_cpu_fill_grads(pdbx_compute *c, uint64_t seed)
{
    cpu_grads *g = &c->grad;
    const size_t T = (size_t)c->T, h = (size_t)c->h, qd = (size_t)c->qd, kvd = (size_t)c->kvd,
                 ni = (size_t)c->inter, V = (size_t)c->vloc, e = c->esz;
    const size_t vd = (size_t)c->vd, ctxd = (size_t)c->ctxd;   /* MLA: heads x v_head_dim */
    /* activation gradients: O(1) values as a loss's gradient scaled by the loss scale would be */
    const struct { void *p; size_t n, esz; } act[] = {
        { g->dx, T * h, 4 }, { g->dxn, T * h, 4 }, { g->dq, T * qd, 4 }, { g->dk, T * kvd, 4 },
        { g->dv, T * vd, 4 }, { g->dctx, T * ctxd, 4 }, { g->dy, T * h, 4 }, { g->dyn, T * h, 4 },
        { g->dg, T * ni, 4 }, { g->du, T * ni, 4 }, { g->dact, T * ni, 4 }, { g->dlogits, T * V, 4 },
        { g->dx_b, T * h, e }, { g->dq_b, T * qd, e }, { g->dk_b, T * kvd, e },
        { g->dv_b, T * vd, e }, { g->dy_b, T * h, e }, { g->dg_b, T * ni, e },
        { g->du_b, T * ni, e }, { g->dlogits_b, T * V, e },
        { g->dqkv, T * (qd + 2 * kvd), e }, { g->dfc1, T * 2 * ni, e },
        { g->dlogits_capped, T * V, e },   /* lm_head's bwd writes it before reading it */
    };
    for (size_t i = 0; i < sizeof act / sizeof act[0]; i++)
        fill(act[i].p, act[i].n, act[i].esz, 1.0f, seed++);
    zero(g->scratch, pdbx_k_attention_bwd_scratch_floats(c->p.seq_len, c->d > c->dvh ? c->d : c->dvh,
                                                         c->cfg.blas_threads) * sizeof(float));
    /* weight gradients start from zero, as main_grad at the start of a step */
    zero(g->demb, V * h * 4);
    zero(g->dnorm_w, h * 4);
    zero(g->dwlm, h * V * 4);
    zero(g->dwq, h * qd * 4);
    zero(g->dwkv, h * kvd * 4);
    zero(g->dwo, ctxd * h * 4);
    zero(g->dwgu, h * ni * 4);
    zero(g->dwd, ni * h * 4);
    zero(g->dwqkv, h * (qd + 2 * kvd) * 4);
    zero(g->dwfc1, h * 2 * ni * 4);
    zero(g->dbq, qd * 4);
    zero(g->dbkv, kvd * 4);
    zero(g->dbo, h * 4);
    zero(g->dbgu, ni * 4);
    zero(g->dbd, h * 4);
    zero(g->dbqkv, (qd + 2 * kvd) * 4);
    zero(g->dbfc1, 2 * ni * 4);
    zero(g->dnorm_b, h * 4);
    zero(g->dpos, (size_t)c->p.model.arch.max_positions * h * 4);
    zero(g->dqk_norm_w, (size_t)(2 * c->d) * 4);
    return seed;
}

/* The backward of Y[m,n] = X[m,k] W[k,n] (row-major, X and W in the GEMM dtype):
 *   dgrad  dX[m,k]  = dY[m,n] W^T        (beta 0, fp32 out)
 *   wgrad  dW[k,n] += X^T dY[m,n]         (beta 1 into the fp32 gradient)
 * dY in the GEMM dtype. */
static void linear_bwd(pdbx_compute *c, const void *x, const void *w, const void *dy, float *dx,
                       float *dw, int64_t m, int64_t n, int64_t k)
{
    const blasint M = (blasint)m, N = (blasint)n, K = (blasint)k;
    if (c->esz == 4) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, K, N, 1.0f, dy, N, w, N, 0.0f,
                    dx, K);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, N, M, 1.0f, x, K, dy, N, 1.0f,
                    dw, N);
    } else {
        c->sbgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, K, N, 1.0f, (const bfloat16 *)dy, N,
                  (const bfloat16 *)w, N, 0.0f, dx, K);
        c->sbgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, N, M, 1.0f, (const bfloat16 *)x, K,
                  (const bfloat16 *)dy, N, 1.0f, dw, N);
    }
}

/* The bias gradient of op's projection (none without a bias): db += the column sums of dY
 * ([T, n]), the copy the dgrad/wgrad GEMMs read (dy_lp: in the GEMM dtype, bf16 in bf16). */
static void bias_bwd(pdbx_compute *c, pdbx_op op, const void *dy, int dy_lp, float *db, int64_t n)
{
    if (c->p.shape[op].bias && db)
        pdbx_k_bias_grad(c->pool, dy, dy_lp && c->esz == 2, c->T, n, db);
}

/* A norm's backward of the model's kind (as run_norm in cpu_compute.c): dx from the norm's input
 * x and output gradient dy; the weight's (and LayerNorm's bias') gradient accumulated. */
static void norm_bwd(pdbx_compute *c, const float *x, const float *dy, float *dx)
{
    cpu_grads *g = &c->grad;
    if (c->p.model.arch.norm == PDBX_NORM_LAYER)
        pdbx_k_layernorm_bwd(c->pool, x, c->norm_w, c->norm_mean, c->norm_rstd, dy, c->T, c->h, dx,
                             g->dnorm_w, g->dnorm_b);
    else
        pdbx_k_rmsnorm_bwd(x, c->norm_w, dy, c->T, c->h, RMS_EPS, dx, g->dnorm_w);
}

/* The MLP activation's backward (as run_act in cpu_compute.c). */
static void act_bwd(pdbx_compute *c)
{
    cpu_grads *g = &c->grad;
    const int64_t n = c->T * c->inter;
    pdbx_gelu_kind kind;
    if (pdbx_gelu_kind_of(c->p.model.arch.activation, &kind) != 0)
        pdbx_k_silu_mul_bwd(c->pool, c->g, c->u, g->dact, n, g->dg, g->du);
    else if (c->p.model.arch.mlp_plain)
        pdbx_k_gelu_bwd(c->pool, c->u, g->dact, n, kind, g->du);
    else
        pdbx_k_gelu_mul_bwd(c->pool, c->g, c->u, g->dact, n, kind, g->dg, g->du);
}

void pdbx_cpu_linear_bwd(pdbx_compute *c, const void *x, const void *w, const void *dy, float *dx,
                         float *dw, int64_t m, int64_t n, int64_t k)
{
    linear_bwd(c, x, w, dy, dx, dw, m, n, k);
}

/* The bwd pass of the attention block's ops, attn_q .. attn_o (MLA's own and its attn_rope in
 * cpu_mla_bwd.c): 0, or 1 when op is not one of them. */
static int run_bwd_attn(pdbx_compute *c, pdbx_op op, int layer)
{
    cpu_grads *g = &c->grad;
    const int64_t T = c->T, h = c->h;
    const int bf = c->esz == 2;
    cpu_layer *L = &c->layer[layer];
    if (pdbx_cpu_mla_runs(c, op)) {
        pdbx_cpu_mla_bwd(c, op, layer);
        return 0;
    }
/* the GEMM dtype's copy of activation (or gradient) a: the bf16 one when the GEMMs run bf16 */
#define LP(a, a_b) (bf ? (const void *)(a_b) : (const void *)(a))
    switch (op) {
    case PDBX_OP_ATTN_Q:
        if (c->p.fused_projections)   /* the fused QKV GEMM's dgrad and wgrad */
        {
            linear_bwd(c, LP(c->xn, c->xn_b), L->wqkv, g->dqkv, g->dxn, g->dwqkv, T, c->qd + 2 * c->kvd, h);
            bias_bwd(c, op, g->dqkv, 1, g->dbqkv, c->qd + 2 * c->kvd);
        } else {
            linear_bwd(c, LP(c->xn, c->xn_b), L->wq, LP(g->dq, g->dq_b), g->dxn, g->dwq, T, c->qd, h);
            bias_bwd(c, op, LP(g->dq, g->dq_b), 1, g->dbq, c->qd);
        }
        return 0;
    case PDBX_OP_ATTN_K:
        linear_bwd(c, LP(c->xn, c->xn_b), L->wk, LP(g->dk, g->dk_b), g->dxn, g->dwkv, T, c->kvd, h);
        bias_bwd(c, op, LP(g->dk, g->dk_b), 1, g->dbkv, c->kvd);
        return 0;
    case PDBX_OP_ATTN_V:
        linear_bwd(c, LP(c->xn, c->xn_b), L->wv, LP(g->dv, g->dv_b), g->dxn, g->dwkv, T, c->kvd, h);
        bias_bwd(c, op, LP(g->dv, g->dv_b), 1, g->dbkv, c->kvd);
        return 0;
    case PDBX_OP_ATTN_CORE: {   /* the forward's window and cap of this layer */
        const pdbx_attn_opts o = pdbx_cpu_attn_opts(c, layer);
        pdbx_k_attention_causal_bwd_opts(c->pool, c->q, c->k, c->v, g->dctx, c->p.mbs,
                                         c->p.seq_len, c->heads, c->kv_heads, c->d, g->scratch,
                                         g->dq, g->dk, g->dv, &o);
        return 0;
    }
    case PDBX_OP_ATTN_QK_NORM:   /* dq, dk through their per-head norms, in place (the kernel reads
                                  * a row's dy before it writes its dx); q and k stand for the
                                  * norms' inputs, the same rows */
        pdbx_k_rmsnorm_bwd(c->q, c->qk_norm_w, g->dq, T * c->heads, c->d, RMS_EPS, g->dq, g->dqk_norm_w);
        pdbx_k_rmsnorm_bwd(c->k, c->qk_norm_w + c->d, g->dk, T * c->kv_heads, c->d, RMS_EPS, g->dk,
                           g->dqk_norm_w + c->d);
        return 0;
    case PDBX_OP_ATTN_ROPE:   /* the inverse rotation of the core's dq and dk, in place */
        pdbx_k_rope(c->pool, g->dq, T, c->heads, c->d, c->rot, c->p.seq_len, c->rope,
                    c->rope + c->p.seq_len * (c->rot / 2), 1);
        pdbx_k_rope(c->pool, g->dk, T, c->kv_heads, c->d, c->rot, c->p.seq_len, c->rope,
                    c->rope + c->p.seq_len * (c->rot / 2), 1);
        return 0;
    case PDBX_OP_ATTN_O:
        linear_bwd(c, LP(c->ctx, c->ctx_b), L->wo, LP(g->dy, g->dy_b), g->dctx, g->dwo, T, h, c->ctxd);
        bias_bwd(c, op, LP(g->dy, g->dy_b), 1, g->dbo, h);
        return 0;
    default:
        return 1;
    }
#undef LP
}

/* The dense MLP's ops (mlp_gate/up/act_fn/down): 0, or 1 when op is not one of them. */
static int mlp_bwd(pdbx_compute *c, pdbx_op op, const cpu_layer *L)
{
    cpu_grads *g = &c->grad;
    const int64_t T = c->T, h = c->h;
    const int bf = c->esz == 2;
#define LP(a, a_b) (bf ? (const void *)(a_b) : (const void *)(a))
    switch (op) {
    case PDBX_OP_MLP_GATE:
        if (c->p.fused_projections)   /* the fused fc1 GEMM's dgrad and wgrad */
        {
            linear_bwd(c, LP(c->yn, c->yn_b), L->wfc1, g->dfc1, g->dyn, g->dwfc1, T, 2 * c->inter, h);
            bias_bwd(c, op, g->dfc1, 1, g->dbfc1, 2 * c->inter);
        } else {
            linear_bwd(c, LP(c->yn, c->yn_b), L->wg, LP(g->dg, g->dg_b), g->dyn, g->dwgu, T, c->inter, h);
            bias_bwd(c, op, LP(g->dg, g->dg_b), 1, g->dbgu, c->inter);
        }
        return 0;
    case PDBX_OP_MLP_UP:
        linear_bwd(c, LP(c->yn, c->yn_b), L->wu, LP(g->du, g->du_b), g->dyn, g->dwgu, T, c->inter, h);
        bias_bwd(c, op, LP(g->du, g->du_b), 1, g->dbgu, c->inter);
        return 0;
    case PDBX_OP_MLP_ACT_FN:
        act_bwd(c);
        return 0;
    case PDBX_OP_MLP_DOWN:
        linear_bwd(c, LP(c->act, c->act_b), L->wd, LP(g->dx, g->dx_b), g->dact, g->dwd, T, h, c->inter);
        bias_bwd(c, op, LP(g->dx, g->dx_b), 1, g->dbd, h);
        return 0;
    default:
        return 1;
    }
#undef LP
}

/* lm_head: with final-logit soft-capping the dY of its GEMMs is d logits through the cap's
 * derivative, written from the forward's capped logits into its own buffer (d logits is left
 * as filled); without, d logits itself. */
static void lm_head_bwd(pdbx_compute *c)
{
    cpu_grads *g = &c->grad;
    const int bf = c->esz == 2;
    const float cap = (float)c->p.model.arch.final_softcap;
    const void *dy = bf ? (const void *)g->dlogits_b : (const void *)g->dlogits;
    if (cap > 0.0f && g->dlogits_capped) {
        pdbx_k_logit_softcap_bwd(c->pool, c->logits, g->dlogits, g->dlogits_capped, bf, c->T, c->vloc, cap);
        dy = g->dlogits_capped;
    }
    linear_bwd(c, bf ? (const void *)c->xn_b : (const void *)c->xn, c->wlm, dy, g->dxn, g->dwlm, c->T, c->vloc,
               c->h);
}

int pdbx_cpu_run_bwd(pdbx_compute *c, pdbx_op op, int layer, char *err, size_t errlen)
{
    cpu_grads *g = &c->grad;
    const int64_t T = c->T, h = c->h;
    /* layer ops only read L; the others get layer 0 (never a NULL the analyzer must follow) */
    cpu_layer *L = &c->layer[pdbx_op_is_per_layer(op) ? layer : 0];
    if (pdbx_op_is_per_layer(op) && run_bwd_attn(c, op, layer) == 0)
        return 0;
    switch (op) {
    case PDBX_OP_EMBED:
        pdbx_k_embed_scatter_add(g->dx, c->ids, T, h, c->vloc, 0, g->demb);
        if (g->dpos)
            pdbx_k_pos_embed_bwd(c->pool, g->dx, T, h, c->p.seq_len, g->dpos);
        break;
    case PDBX_OP_INPUT_NORM:
        norm_bwd(c, c->x, g->dxn, g->dx);
        break;
    case PDBX_OP_ATTN_RESIDUAL:   /* y = x + attn: dy flows on into the layer input's dx */
        pdbx_k_add(c->pool, g->dx, g->dy, T * h);
        break;
    case PDBX_OP_MLP_RESIDUAL:    /* x' = y + mlp: dx' flows on into the hidden state's dy */
        pdbx_k_add(c->pool, g->dy, g->dx, T * h);
        break;
    case PDBX_OP_POST_ATTN_NORM:
        /* a parallel residual's norm read the layer's input x: its dx belongs to x's gradient,
         * written here into dy, the same [T, h] rows (the sum with the attention branch's is
         * the residual ops' add) */
        norm_bwd(c, c->p.model.arch.parallel_residual ? c->x : c->y, g->dyn, g->dy);
        break;
    case PDBX_OP_FINAL_NORM:
        norm_bwd(c, c->x, g->dxn, g->dx);
        break;
    case PDBX_OP_LM_HEAD:
        lm_head_bwd(c);
        break;
    case PDBX_OP_LOSS:   /* the token ids stand for the targets; the measured rank's shard is 0's */
        pdbx_k_xent_bwd(c->pool, c->logits, c->ids, T, c->vloc, 0, g->loss_stats, 1.0f / (float)T);
        break;
    default:
        if (mlp_bwd(c, op, L) == 0 || pdbx_cpu_moe_bwd(c, op, layer) == 0)   /* the MLP's, a MoE layer's */
            break;
        snprintf(err, errlen, "cpu backend: op %s is not a compute op", pdbx_op_name(op));
        return -1;
    }
    return 0;
}
