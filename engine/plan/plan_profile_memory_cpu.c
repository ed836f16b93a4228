/* plan_profile_memory_cpu.c: the cpu backend's buffers of a point (plan_profile_memory.h):
 * the list cpu_memory.c allocates as it is, and cpu_backward.c's gradients. */
#include "engine/plan/plan_profile_memory.h"

/* The fp32 [T, width] rows of one layer's forward (or their gradients, grad): the hidden state,
 * the norm outputs, q, k, v, the context, the attention output, the MLP's gate (gated only), up
 * and activation, in the order cpu_memory.c (cpu_backward.c) allocates them. */
static void layer_rows(const pdbx_profile_point *p, pdbx_profile_memory *out, int grad)
{
    enum { W_H, W_QD, W_KD, W_VD, W_CTX, W_I };
    static const struct {
        pdbx_buf_role act, grad;
        int width, gated_only;
    } rows[] = {
        {PDBX_BUF_HIDDEN, PDBX_BUF_GRAD_HIDDEN, W_H, 0},
        {PDBX_BUF_NORM_OUT, PDBX_BUF_GRAD_NORM_OUT, W_H, 0},
        {PDBX_BUF_Q, PDBX_BUF_GRAD_Q, W_QD, 0},
        {PDBX_BUF_K, PDBX_BUF_GRAD_K, W_KD, 0},
        {PDBX_BUF_V, PDBX_BUF_GRAD_V, W_VD, 0},
        {PDBX_BUF_CONTEXT, PDBX_BUF_GRAD_CONTEXT, W_CTX, 0},
        {PDBX_BUF_ATTN_OUT, PDBX_BUF_GRAD_ATTN_OUT, W_H, 0},
        {PDBX_BUF_POST_NORM_OUT, PDBX_BUF_GRAD_POST_NORM_OUT, W_H, 0},
        {PDBX_BUF_GATE, PDBX_BUF_GRAD_GATE, W_I, 1},
        {PDBX_BUF_UP, PDBX_BUF_GRAD_UP, W_I, 0},
        {PDBX_BUF_ACT, PDBX_BUF_GRAD_ACT, W_I, 0},
    };
    const double T = (double)p->mbs * p->seq_len, d = p->model.head_dim;
    double kd, vd, ctxd;   /* MLA: its own widths of k, v and the context */
    plan_mem_attn_widths(p, &kd, &vd, &ctxd);
    const double width[] = {
        [W_H] = p->model.hidden, [W_QD] = (double)(p->model.heads / p->tp) * d, [W_KD] = kd, [W_VD] = vd,
        [W_CTX] = ctxd, [W_I] = p->model.intermediate / p->tp,
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if ((!rows[i].gated_only || GATED(p)) && (rows[i].width != W_I || DENSE_MLP(p)))
            plan_mem_add(out, grad ? rows[i].grad : rows[i].act, grad ? PDBX_MEM_GRADS : PDBX_MEM_ACTIVATIONS,
                         plan_mem_lines(T * width[rows[i].width] * 4), 1);
}

/* cpu_memory.c's buffers: fp32 activations (GEMM outputs and every elementwise op run in
 * fp32), with bf16 copies of the GEMM inputs when the GEMMs run in bf16; one norm weight (and
 * with LayerNorm one bias) shared by every norm, LayerNorm's per-row mean and rstd; the gate
 * only in a gated MLP; learned positions' table of max_positions rows; the attention scratch per
 * thread. */
void plan_mem_cpu_list(const pdbx_profile_point *p, pdbx_profile_memory *out)
{
    const double f = 4, e = p->dtype == PDBX_DTYPE_BF16 ? 2 : 4;
    const double T = (double)p->mbs * p->seq_len, h = p->model.hidden;
    const double heads = p->model.heads / p->tp, kv = plan_kv_heads_per_rank(&p->model, p->tp);
    const double qd = heads * p->model.head_dim, kvd = kv * p->model.head_dim;
    const double I = p->model.intermediate / p->tp, V = plan_vocab_per_rank(&p->model, p->tp);
    const pdbx_mem_kind A = PDBX_MEM_ACTIVATIONS, W = PDBX_MEM_WEIGHTS;
    double kd, vd, ctxd;   /* the context (attn_o's input): a Llama's qd, MLA's heads x v */
    plan_mem_attn_widths(p, &kd, &vd, &ctxd);
    plan_mem_add(out, PDBX_BUF_TOKEN_IDS, A, plan_mem_lines(T * 4), 1);
    if (HAS(EMBED))
        plan_mem_add(out, PDBX_BUF_EMBED_OUT, A, plan_mem_lines(T * h * e), 1);
    layer_rows(p, out, 0);
    if (LAYERNORM(p)) {
        plan_mem_add(out, PDBX_BUF_NORM_MEAN, A, plan_mem_lines(T * f), 1);
        plan_mem_add(out, PDBX_BUF_NORM_STATS_RSTD, A, plan_mem_lines(T * f), 1);
    }
    double scratch = ((double)CPU_ATTN_BLOCK * p->seq_len + (double)p->model.head_dim * CPU_ATTN_KBLOCK)
                     * (p->threads > 0 ? p->threads : 1);
    plan_mem_add(out, PDBX_BUF_ATTN_SCRATCH, PDBX_MEM_WORKSPACE, plan_mem_lines(scratch * f), 1);
    if (HAS(ATTN_ROPE))
        plan_mem_add(out, PDBX_BUF_ROPE_TABLE, A, plan_mem_lines(plan_mem_rope_table_bytes(p)), 1);
    if (e == 2) {
        plan_mem_add(out, PDBX_BUF_NORM_OUT_LP, A, plan_mem_lines(T * h * e), 1);
        plan_mem_add(out, PDBX_BUF_CONTEXT_LP, A, plan_mem_lines(T * ctxd * e), 1);
        plan_mem_add(out, PDBX_BUF_POST_NORM_OUT_LP, A, plan_mem_lines(T * h * e), 1);
        plan_mem_add(out, PDBX_BUF_ACT_LP, A, plan_mem_lines(T * I * e), 1);
    }
    if (HAS(LM_HEAD))
        plan_mem_add(out, PDBX_BUF_LOGITS, A, plan_mem_lines(T * V * f), 1);
    /* weights: kept across a config's MBS sweep, allocated after the activations */
    if (HAS(EMBED))
        plan_mem_add(out, PDBX_BUF_EMBED_TABLE, W, plan_mem_lines(V * h * e), 1);
    plan_mem_add(out, PDBX_BUF_NORM_W, W, plan_mem_lines(h * f), 1);
    if (LAYERNORM(p))
        plan_mem_add(out, PDBX_BUF_NORM_B, W, plan_mem_lines(h * f), 1);
    if (LEARNED_POS(p) && HAS(EMBED))
        plan_mem_add(out, PDBX_BUF_POS_TABLE, W, plan_mem_lines((double)p->model.arch.max_positions * h * f), 1);
    if (HAS(ATTN_QK_NORM) && p->model.arch.qk_norm)   /* one pair shared by the layers, as norm_w is */
        plan_mem_add(out, PDBX_BUF_QK_NORM_W, W, plan_mem_lines(2.0 * p->model.head_dim * f), 1);
    if (HAS(LM_HEAD))
        plan_mem_add(out, PDBX_BUF_LM_HEAD_W, W, plan_mem_lines(h * V * e), 1);
    const int L = p->layers, Ld = L - pdbx_profiled_moe_layers(&p->model, L);   /* dense MLP layers */
    if (HAS(ATTN_Q)) plan_mem_add(out, PDBX_BUF_L_Q, W, plan_mem_lines(h * qd * e), L);
    if (HAS(ATTN_K)) plan_mem_add(out, PDBX_BUF_L_K, W, plan_mem_lines(h * kvd * e), L);
    if (HAS(ATTN_V)) plan_mem_add(out, PDBX_BUF_L_V, W, plan_mem_lines(h * kvd * e), L);
    if (HAS(ATTN_O)) plan_mem_add(out, PDBX_BUF_L_O, W, plan_mem_lines(ctxd * h * e), L);
    if (HAS(MLP_GATE)) plan_mem_add(out, PDBX_BUF_L_GATE, W, plan_mem_lines(h * I * e), Ld);
    if (HAS(MLP_UP)) plan_mem_add(out, PDBX_BUF_L_UP, W, plan_mem_lines(h * I * e), Ld);
    if (HAS(MLP_DOWN)) plan_mem_add(out, PDBX_BUF_L_DOWN, W, plan_mem_lines(I * h * e), Ld);
    plan_mem_biases(p, out, plan_mem_lines, f, L);
    plan_mem_cpu_mla(p, out, 0);
    if (HAS(OPTIMIZER) && (p->passes & PDBX_PASS_BIT(PDBX_PASS_BWD))) {   /* cpu_optimizer.c (plan.h) */
        const double n = pdbx_optimizer_params(&p->model, p->tp, p->ep);
        plan_mem_add(out, PDBX_BUF_OPT_MASTER, W, plan_mem_lines(n * f), 1);
        plan_mem_add(out, PDBX_BUF_OPT_M, W, plan_mem_lines(n * f), 1);
        plan_mem_add(out, PDBX_BUF_OPT_V, W, plan_mem_lines(n * f), 1);
        if (e == 2)
            plan_mem_add(out, PDBX_BUF_OPT_MODEL_LP, W, plan_mem_lines(n * e), 1);
    }
}

/* cpu_backward.c's buffers (passes with bwd): the gradient of every activation in fp32, as
 * the forward's activations (each backward kernel runs in fp32), with copies in bf16 of those
 * that a bf16 dgrad/wgrad GEMM reads (the output gradients dY of the GEMMs); the weight
 * gradients; the attention backward's scratch per thread (P and dS of a query block, one
 * transposed key block: cpu_kernels_bwd.h). lm_head's dgrad writes the gradient of its input,
 * the final norm's output, which the cpu forward keeps in input_norm_out: d input_norm_out.
 * With final-logit soft-capping lm_head's dgrad/wgrad read d logits through the cap in a
 * buffer of their own, in the GEMM dtype (cpu_backward.c); in bf16 it takes the place of the
 * bf16 copy of d logits, which nothing then reads. */
void plan_mem_cpu_grad_list(const pdbx_profile_point *p, pdbx_profile_memory *out)
{
    if (!(p->passes & PDBX_PASS_BIT(PDBX_PASS_BWD)))
        return;
    const double f = 4, e = p->dtype == PDBX_DTYPE_BF16 ? 2 : 4;
    const double T = (double)p->mbs * p->seq_len, h = p->model.hidden;
    const double heads = p->model.heads / p->tp, kv = plan_kv_heads_per_rank(&p->model, p->tp);
    const double qd = heads * p->model.head_dim, kvd = kv * p->model.head_dim;
    const double I = p->model.intermediate / p->tp, V = plan_vocab_per_rank(&p->model, p->tp);
    const pdbx_mem_kind G = PDBX_MEM_GRADS;
    layer_rows(p, out, 1);
    if (HAS(LM_HEAD))
        plan_mem_add(out, PDBX_BUF_GRAD_LOGITS, G, plan_mem_lines(T * V * f), 1);
    if (HAS(LM_HEAD) && FINAL_CAP(p))
        plan_mem_add(out, PDBX_BUF_GRAD_LOGITS_CAPPED, G, plan_mem_lines(T * V * e), 1);
    if (HAS(LOSS))   /* cpu_kernels_loss.h; its gradient is written over the logits */
        plan_mem_add(out, PDBX_BUF_LOSS_STATS, G, plan_mem_lines(T * 3 * f), 1);
    if (LAYERNORM(p))
        plan_mem_add(out, PDBX_BUF_GRAD_NORM_B, G, plan_mem_lines(h * f), 1);
    if (LEARNED_POS(p) && HAS(EMBED))
        plan_mem_add(out, PDBX_BUF_GRAD_POS_TABLE, G, plan_mem_lines((double)p->model.arch.max_positions * h * f), 1);
    if (HAS(ATTN_QK_NORM) && p->model.arch.qk_norm)
        plan_mem_add(out, PDBX_BUF_GRAD_QK_NORM_W, G, plan_mem_lines(2.0 * p->model.head_dim * f), 1);
    /* the key block is transposed at the larger of q/k's and v's head dims (MLA's v differs) */
    const double dmax = p->model.head_dim > plan_v_head_dim(&p->model) ? p->model.head_dim
                                                                      : plan_v_head_dim(&p->model);
    double scratch = (3.0 * CPU_ATTN_BLOCK * p->seq_len + dmax * CPU_ATTN_KBLOCK)
                     * (p->threads > 0 ? p->threads : 1);
    plan_mem_add(out, PDBX_BUF_ATTN_BWD_SCRATCH, PDBX_MEM_WORKSPACE, plan_mem_lines(scratch * f), 1);
    if (e == 2) {
        plan_mem_add(out, PDBX_BUF_GRAD_HIDDEN_LP, G, plan_mem_lines(T * h * e), 1);
        plan_mem_add(out, PDBX_BUF_GRAD_Q_LP, G, plan_mem_lines(T * qd * e), 1);
        plan_mem_add(out, PDBX_BUF_GRAD_K_LP, G, plan_mem_lines(T * kvd * e), 1);
        plan_mem_add(out, PDBX_BUF_GRAD_V_LP, G, plan_mem_lines(T * kvd * e), 1);
        plan_mem_add(out, PDBX_BUF_GRAD_ATTN_OUT_LP, G, plan_mem_lines(T * h * e), 1);
        if (GATED(p))
            plan_mem_add(out, PDBX_BUF_GRAD_GATE_LP, G, plan_mem_lines(T * I * e), 1);
        plan_mem_add(out, PDBX_BUF_GRAD_UP_LP, G, plan_mem_lines(T * I * e), 1);
        if (HAS(LM_HEAD) && !FINAL_CAP(p))
            plan_mem_add(out, PDBX_BUF_GRAD_LOGITS_LP, G, plan_mem_lines(T * V * e), 1);
    }
    plan_mem_weight_grads(p, out, 1);
    plan_mem_cpu_mla(p, out, 1);
    if (HAS(OPTIMIZER)) {
        const double n = pdbx_optimizer_params(&p->model, p->tp, p->ep);
        plan_mem_add(out, PDBX_BUF_OPT_GRAD, G, plan_mem_lines(n * f), 1);
        plan_mem_add(out, PDBX_BUF_OPT_GRAD_ZEROED, G, plan_mem_lines(n * f), 1);
    }
}
