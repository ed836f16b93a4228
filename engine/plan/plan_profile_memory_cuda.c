/* plan_profile_memory_cuda.c: the cuda backend's buffers of a point (plan_profile_memory.h),
 * mirroring cuda_point.c and cuda_backward.c, which size their own buffers (the .so links none
 * of the planner): a change there must be made here too. */
#include "engine/plan/plan_profile_memory.h"

/* cuda_point.c's buffers (engine/backends/cuda/cuda_bufs.c decides them; the host test
 * tests/cuda/test_cuda_dense_point.c holds this list equal to it): everything in the dtype
 * (token ids int32), a buffer allocated when any op that reads or writes it is prepared; the
 * full score matrix of the attention core unless the fused kernels run it (flash_attention:
 * cuda_attention_needs_scores), which with a backward keep each row's fp32 log-sum-exp
 * instead (the unfused core with an attention cap keeps them beside the scores: its
 * backward's cap derivative reads them); per layer its two norm weights too (and with LayerNorm their biases), in as many
 * copies as the L2 rotation needs; the vocabulary split rounded up; the lm_head reads the
 * embedding table when tied. The dense families (as the cpu's data flow): LayerNorm's biases
 * and each row's fp32 mean and rstd (written by every forward norm; its backward reads them
 * and needs no rstd of its own); a plain MLP has no gate buffer; learned positions a table of
 * max_positions rows (and no rope table: no attn_rope op); a parallel residual's
 * post_attn_norm reads hidden, not attn_out. */
#define PARALLEL(p) ((p)->model.arch.parallel_residual != 0)
#define NORM_OPS(p) (HAS(INPUT_NORM) || HAS(POST_ATTN_NORM) || HAS(FINAL_NORM))
/* qk_norm and MLA (cuda_bufs.c's XN_MLA, QK_MORE): more readers of xn and q; MLA's attn_rope
 * writes v (gathered from kv_b's output) */
#define XN_MLA(p) (HAS(ATTN_Q_A) || HAS(ATTN_KV_A))
#define Q_MORE(p) (HAS(ATTN_QK_NORM) || HAS(ATTN_Q_B))
#define MLA_ROPE(p) ((p)->model.arch.attention == PDBX_ATTN_MLA && HAS(ATTN_ROPE))
/* a MoE layer reads post_attn_norm's output and writes hidden (cuda_bufs.c's MOE_IN, MOE_OUT) */
#define MOE_IN(p) (HAS(MOE_ROUTER) || HAS(MOE_PERMUTE) || HAS(MOE_SHARED_GATE) || HAS(MOE_SHARED_UP))
#define MOE_OUT(p) (HAS(MOE_UNPERMUTE) || HAS(MOE_SHARED_DOWN))

/* The bytes of one layer's weights on a cuda rank as cuda_backend.c allocates them (the
 * norm weights and LayerNorm's biases, the projections prepared, or for fused_projections the
 * fused QKV / fc1 weights in place of their groups'): what the L2 rotation's copy count is
 * computed from. */
static double cuda_layer_weight_bytes(const pdbx_profile_point *p)
{
    const double es = p->dtype == PDBX_DTYPE_FP32 ? 4 : 2;
    const double h = p->model.hidden, I = p->model.intermediate / p->tp;
    const double qd = (double)p->model.heads / p->tp * p->model.head_dim;
    const double kvd = plan_kv_heads_per_rank(&p->model, p->tp) * p->model.head_dim;
#define HAS_OP(o) ((p->ops & PDBX_OP_BIT(PDBX_OP_##o)) != 0)
    const int fq = p->fused_projections && (p->ops & QKV_OPS);
    const int ff = p->fused_projections && (p->ops & FC1_OPS);
    double kd, vd, ctxd;   /* o's input: MLA's heads x v_head_dim */
    plan_mem_attn_widths(p, &kd, &vd, &ctxd);
    double b = (HAS_OP(INPUT_NORM) + HAS_OP(POST_ATTN_NORM)) * h * (LAYERNORM(p) ? 2 : 1) +
               HAS_OP(ATTN_O) * ctxd * h + HAS_OP(MLP_DOWN) * I * h + plan_mem_cuda_mla_layer_elems(p);
    b += fq ? (qd + 2 * kvd) * h : (HAS_OP(ATTN_Q) * qd + (HAS_OP(ATTN_K) + HAS_OP(ATTN_V)) * kvd) * h;
    b += ff ? 2 * I * h : (HAS_OP(MLP_GATE) + HAS_OP(MLP_UP)) * I * h;
    /* the biases rotate with their layer's weights (cuda_backend.c's layer_bufs) */
    if (QKV_BIAS(p))
        b += fq ? qd + 2 * kvd : HAS_OP(ATTN_Q) * qd + (HAS_OP(ATTN_K) + HAS_OP(ATTN_V)) * kvd;
    if (O_BIAS(p))
        b += HAS_OP(ATTN_O) * h;
    if (MLP_BIAS(p))
        b += (ff ? 2 * I : (HAS_OP(MLP_GATE) + HAS_OP(MLP_UP)) * I) + HAS_OP(MLP_DOWN) * h;
#undef HAS_OP
    return b * es + plan_mem_cuda_moe_layer_bytes(p, es);
}

/* The per-layer weight sets a cuda rank allocates: layers x the rotating copies. */
int plan_mem_cuda_weight_sets(const pdbx_profile_point *p)
{
    return p->layers * pdbx_cuda_weight_copies(cuda_layer_weight_bytes(p), p->layers,
                                               PDBX_CUDA_PLAN_L2_BYTES);
}

/* sets: the per-layer weight sets (cuda_weight_sets of the whole point). */
void plan_mem_cuda_list(const pdbx_profile_point *p, int sets, pdbx_profile_memory *out)
{
    const double es = p->dtype == PDBX_DTYPE_FP32 ? 4 : 2;
    const double T = (double)p->mbs * p->seq_len, h = p->model.hidden;
    const double heads = p->model.heads / p->tp;
    const double qd = heads * p->model.head_dim;
    double kvd, vd, ctxd;   /* MLA: k [H, nope + rope], v and the context [H, dv] */
    plan_mem_attn_widths(p, &kvd, &vd, &ctxd);
    const double I = p->model.intermediate / p->tp;
    const double V = plan_vocab_per_rank(&p->model, p->tp);
    const int tied = p->model.tie_embeddings;
    const pdbx_mem_kind A = PDBX_MEM_ACTIVATIONS, W = PDBX_MEM_WEIGHTS;
    if (HAS(EMBED)) plan_mem_add(out, PDBX_BUF_TOKEN_IDS, A, T * 4, 1);
    if (HAS(EMBED) || (tied && HAS(LM_HEAD))) plan_mem_add(out, PDBX_BUF_EMBED_TABLE, W, V * h * es, 1);
    if (HAS(EMBED) || HAS(INPUT_NORM) || HAS(MLP_DOWN) || HAS(FINAL_NORM) || RESID(p) ||
        (PARALLEL(p) && HAS(POST_ATTN_NORM)) || MOE_OUT(p))
        plan_mem_add(out, PDBX_BUF_HIDDEN, A, T * h * es, 1);
    if (HAS(INPUT_NORM) || HAS(ATTN_Q) || HAS(ATTN_K) || HAS(ATTN_V) || XN_MLA(p))
        plan_mem_add(out, PDBX_BUF_NORM_OUT, A, T * h * es, 1);
    if (HAS(ATTN_Q) || HAS(ATTN_ROPE) || HAS(ATTN_CORE) || Q_MORE(p)) plan_mem_add(out, PDBX_BUF_Q, A, T * qd * es, 1);
    if (HAS(ATTN_K) || HAS(ATTN_ROPE) || HAS(ATTN_CORE) || HAS(ATTN_QK_NORM))
        plan_mem_add(out, PDBX_BUF_K, A, T * kvd * es, 1);
    if (HAS(ATTN_V) || HAS(ATTN_CORE) || MLA_ROPE(p)) plan_mem_add(out, PDBX_BUF_V, A, T * vd * es, 1);
    if (HAS(ATTN_CORE) && !p->flash_attention)
        plan_mem_add(out, PDBX_BUF_SCORES, A, (double)p->mbs * heads * p->seq_len * (double)p->seq_len * es, 1);
    /* the rows' lse: the fused forward's for its backward; the capped unfused forward's always
     * (it writes them, its backward reads them for the cap's derivative) */
    if (HAS(ATTN_CORE) && (p->flash_attention ? (p->passes & PDBX_PASS_BIT(PDBX_PASS_BWD)) != 0
                                              : p->model.arch.attn_softcap > 0))
        plan_mem_add(out, PDBX_BUF_ATTN_LSE, A, (double)p->mbs * heads * p->seq_len * 4, 1);
    if (HAS(ATTN_CORE) || HAS(ATTN_O)) plan_mem_add(out, PDBX_BUF_CONTEXT, A, T * ctxd * es, 1);
    if (HAS(ATTN_O) || (HAS(POST_ATTN_NORM) && !PARALLEL(p)) || RESID(p))
        plan_mem_add(out, PDBX_BUF_ATTN_OUT, A, T * h * es, 1);
    if (HAS(POST_ATTN_NORM) || HAS(MLP_GATE) || HAS(MLP_UP) || MOE_IN(p))
        plan_mem_add(out, PDBX_BUF_POST_NORM_OUT, A, T * h * es, 1);
    if (HAS(ATTN_ROPE)) plan_mem_add(out, PDBX_BUF_ROPE_TABLE, A, plan_mem_rope_table_bytes(p), 1);
    if (HAS(MLP_GATE) || (GATED(p) && HAS(MLP_ACT_FN))) plan_mem_add(out, PDBX_BUF_GATE, A, T * I * es, 1);
    if (HAS(MLP_UP) || HAS(MLP_ACT_FN)) plan_mem_add(out, PDBX_BUF_UP, A, T * I * es, 1);
    if (HAS(MLP_ACT_FN) || HAS(MLP_DOWN)) plan_mem_add(out, PDBX_BUF_ACT, A, T * I * es, 1);
    if (HAS(FINAL_NORM) || HAS(LM_HEAD)) plan_mem_add(out, PDBX_BUF_FINAL_NORM_OUT, A, T * h * es, 1);
    if (HAS(FINAL_NORM)) plan_mem_add(out, PDBX_BUF_NORM_W, W, h * es, 1);
    if (HAS(LM_HEAD)) plan_mem_add(out, PDBX_BUF_LOGITS, A, T * V * es, 1);
    if (HAS(LM_HEAD) && !tied) plan_mem_add(out, PDBX_BUF_LM_HEAD_W, W, V * h * es, 1);
    if (LEARNED_POS(p) && HAS(EMBED))
        plan_mem_add(out, PDBX_BUF_POS_TABLE, W, (double)p->model.arch.max_positions * h * es, 1);
    if (LAYERNORM(p) && NORM_OPS(p)) {
        plan_mem_add(out, PDBX_BUF_NORM_MEAN, A, T * 4, 1);
        plan_mem_add(out, PDBX_BUF_NORM_STATS_RSTD, A, T * 4, 1);
        /* every norm's own bias, as its weight: per layer in each weight set, and the final's */
        plan_mem_add(out, PDBX_BUF_NORM_B, W, h * es,
                     sets * ((HAS(INPUT_NORM) != 0) + (HAS(POST_ATTN_NORM) != 0)) + (HAS(FINAL_NORM) != 0));
    }
    /* per-layer weights: layers x the rotating copies (pdbx_cuda_weight_copies) */
    const int L = sets;
    if (HAS(INPUT_NORM)) plan_mem_add(out, PDBX_BUF_L_IN_NORM, W, h * es, L);
    if (HAS(ATTN_Q)) plan_mem_add(out, PDBX_BUF_L_Q, W, qd * h * es, L);
    if (HAS(ATTN_K)) plan_mem_add(out, PDBX_BUF_L_K, W, kvd * h * es, L);
    if (HAS(ATTN_V)) plan_mem_add(out, PDBX_BUF_L_V, W, kvd * h * es, L);
    if (HAS(ATTN_O)) plan_mem_add(out, PDBX_BUF_L_O, W, ctxd * h * es, L);
    if (HAS(POST_ATTN_NORM)) plan_mem_add(out, PDBX_BUF_L_POST_NORM, W, h * es, L);
    if (HAS(MLP_GATE)) plan_mem_add(out, PDBX_BUF_L_GATE, W, I * h * es, L);
    if (HAS(MLP_UP)) plan_mem_add(out, PDBX_BUF_L_UP, W, I * h * es, L);
    if (HAS(MLP_DOWN)) plan_mem_add(out, PDBX_BUF_L_DOWN, W, I * h * es, L);
    plan_mem_biases(p, out, plan_mem_exact, es, L);
    plan_mem_cuda_mla(p, out, L, 0);   /* qk_norm's and MLA's (plan_profile_memory_cuda_mla.c) */
    plan_mem_add(out, PDBX_BUF_GEMM_WORKSPACE, PDBX_MEM_WORKSPACE, CUDA_GEMM_WORKSPACE, 1);
}

/* cuda_backward.c's gradient buffers (passes with bwd; cuda_bufs.c's grad table): the gradient
 * of an activation in the dtype, allocated when an op whose backward reads or writes it is
 * prepared; the backward of the unfused attention core keeps the forward's probabilities (the
 * scores buffer) and needs dP/dS of the same size, the fused one (flash_attention) needs the
 * rows' delta and, for bf16/fp16, an fp32 dQ accumulator; RMSNorm's backward keeps each row's
 * rstd (fp32) between its dx and dweight kernels (LayerNorm's reads the forward's mean and
 * rstd); weight gradients fp32, LayerNorm's bias and the position table's too; with
 * final-logit soft-capping, lm_head's d logits through the cap in a buffer of its own. */
void plan_mem_cuda_grad_list(const pdbx_profile_point *p, pdbx_profile_memory *out)
{
    if (!(p->passes & PDBX_PASS_BIT(PDBX_PASS_BWD)))
        return;
    const double es = p->dtype == PDBX_DTYPE_FP32 ? 4 : 2;
    const double T = (double)p->mbs * p->seq_len, h = p->model.hidden;
    const double heads = p->model.heads / p->tp;
    const double qd = heads * p->model.head_dim;
    double kvd, vd, ctxd;
    plan_mem_attn_widths(p, &kvd, &vd, &ctxd);
    const double I = p->model.intermediate / p->tp;
    const double V = plan_vocab_per_rank(&p->model, p->tp);
    const pdbx_mem_kind G = PDBX_MEM_GRADS;
    if (HAS(EMBED) || HAS(INPUT_NORM) || HAS(MLP_DOWN) || HAS(FINAL_NORM) || RESID(p) || MOE_OUT(p))
        plan_mem_add(out, PDBX_BUF_GRAD_HIDDEN, G, T * h * es, 1);
    if (HAS(INPUT_NORM) || HAS(ATTN_Q) || HAS(ATTN_K) || HAS(ATTN_V) || XN_MLA(p))
        plan_mem_add(out, PDBX_BUF_GRAD_NORM_OUT, G, T * h * es, 1);
    if (HAS(ATTN_Q) || HAS(ATTN_ROPE) || HAS(ATTN_CORE) || Q_MORE(p))
        plan_mem_add(out, PDBX_BUF_GRAD_Q, G, T * qd * es, 1);
    if (HAS(ATTN_K) || HAS(ATTN_ROPE) || HAS(ATTN_CORE) || HAS(ATTN_QK_NORM))
        plan_mem_add(out, PDBX_BUF_GRAD_K, G, T * kvd * es, 1);
    if (HAS(ATTN_V) || HAS(ATTN_CORE) || MLA_ROPE(p)) plan_mem_add(out, PDBX_BUF_GRAD_V, G, T * vd * es, 1);
    if (HAS(ATTN_CORE) && !p->flash_attention)
        plan_mem_add(out, PDBX_BUF_GRAD_SCORES, G, (double)p->mbs * heads * p->seq_len * (double)p->seq_len * es, 1);
    if (HAS(ATTN_CORE) && p->flash_attention) {
        plan_mem_add(out, PDBX_BUF_ATTN_DELTA, PDBX_MEM_WORKSPACE, (double)p->mbs * heads * p->seq_len * 4, 1);
        if (es == 2)
            plan_mem_add(out, PDBX_BUF_GRAD_Q_ACC, PDBX_MEM_WORKSPACE, T * qd * 4, 1);
    }
    if (HAS(ATTN_CORE) || HAS(ATTN_O)) plan_mem_add(out, PDBX_BUF_GRAD_CONTEXT, G, T * ctxd * es, 1);
    if (HAS(ATTN_O) || HAS(POST_ATTN_NORM) || RESID(p)) plan_mem_add(out, PDBX_BUF_GRAD_ATTN_OUT, G, T * h * es, 1);
    if (HAS(POST_ATTN_NORM) || HAS(MLP_GATE) || HAS(MLP_UP) || MOE_IN(p))
        plan_mem_add(out, PDBX_BUF_GRAD_POST_NORM_OUT, G, T * h * es, 1);
    if (HAS(MLP_GATE) || (GATED(p) && HAS(MLP_ACT_FN))) plan_mem_add(out, PDBX_BUF_GRAD_GATE, G, T * I * es, 1);
    if (HAS(MLP_UP) || HAS(MLP_ACT_FN)) plan_mem_add(out, PDBX_BUF_GRAD_UP, G, T * I * es, 1);
    if (HAS(MLP_ACT_FN) || HAS(MLP_DOWN)) plan_mem_add(out, PDBX_BUF_GRAD_ACT, G, T * I * es, 1);
    if (HAS(FINAL_NORM) || HAS(LM_HEAD)) plan_mem_add(out, PDBX_BUF_GRAD_FINAL_NORM_OUT, G, T * h * es, 1);
    if (HAS(LM_HEAD)) plan_mem_add(out, PDBX_BUF_GRAD_LOGITS, G, T * V * es, 1);
    if (NORM_OPS(p) && !LAYERNORM(p))   /* LayerNorm's backward reads the forward's */
        plan_mem_add(out, PDBX_BUF_NORM_RSTD, PDBX_MEM_WORKSPACE, T * 4, 1);
    plan_mem_weight_grads(p, out, 0);
    if (NORM_OPS(p) && LAYERNORM(p)) plan_mem_add(out, PDBX_BUF_GRAD_NORM_B, G, h * 4, 1);
    if (LEARNED_POS(p) && HAS(EMBED))
        plan_mem_add(out, PDBX_BUF_GRAD_POS_TABLE, G, (double)p->model.arch.max_positions * h * 4, 1);
    if (HAS(LM_HEAD) && FINAL_CAP(p))   /* d logits through the final cap, lm_head's dY */
        plan_mem_add(out, PDBX_BUF_GRAD_LOGITS_CAPPED, G, T * V * es, 1);
    plan_mem_cuda_mla(p, out, 1, 1);
}
