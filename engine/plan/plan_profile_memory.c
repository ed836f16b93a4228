/* plan_profile_memory.c: the buffers pdbx-engine allocates for one point on one rank (plan.h,
 * "profile memory"; docs/spec.md, "Memory model").
 *
 * This list is the sizing rule itself, not a model of it (the backends' lists are
 * plan_profile_memory_cpu.c and plan_profile_memory_cuda.c; what they share is here): the cpu backend allocates exactly
 * these buffers (engine/backends/cpu/cpu_memory.c walks the list and maps each role to its
 * pointer) and the engine asks for the comm buffer it names, so the prediction and the
 * allocation cannot disagree. The cuda rule mirrors engine/backends/cuda/cuda_backend.c
 * (global_bufs, layer_bufs, CUDA_GEMM_WORKSPACE_BYTES), which still sizes its own buffers in
 * its own code (it links none of the planner); a change there must be made here too.
 *
 * Only the profiled layers are instantiated (weights x layers); one set of activation buffers
 * serves every layer. A spec whose passes include bwd adds the backward's buffers (activation
 * gradients, one set of weight gradients, its workspaces: kind "grads"); nothing else of
 * training (optimizer states, the micro-batches in flight) is allocated: that is the training
 * prediction of plan_memory.c. */
#include "engine/plan/plan_comm.h"
#include "engine/plan/plan_profile_memory.h"

#include <math.h>
#include <string.h>


static const char *const role_names[PDBX_BUF_ROLES] = {
    [PDBX_BUF_TOKEN_IDS] = "token_ids", [PDBX_BUF_EMBED_OUT] = "embed_out",
    [PDBX_BUF_HIDDEN] = "hidden", [PDBX_BUF_NORM_OUT] = "input_norm_out", [PDBX_BUF_Q] = "q",
    [PDBX_BUF_K] = "k", [PDBX_BUF_V] = "v", [PDBX_BUF_CONTEXT] = "attn_context",
    [PDBX_BUF_ATTN_OUT] = "attn_out", [PDBX_BUF_POST_NORM_OUT] = "post_attn_norm_out",
    [PDBX_BUF_GATE] = "mlp_gate_out", [PDBX_BUF_UP] = "mlp_up_out", [PDBX_BUF_ACT] = "mlp_act_out",
    [PDBX_BUF_SCORES] = "attn_scores", [PDBX_BUF_FINAL_NORM_OUT] = "final_norm_out",
    [PDBX_BUF_LOGITS] = "logits", [PDBX_BUF_NORM_OUT_LP] = "input_norm_out (gemm dtype)",
    [PDBX_BUF_CONTEXT_LP] = "attn_context (gemm dtype)",
    [PDBX_BUF_POST_NORM_OUT_LP] = "post_attn_norm_out (gemm dtype)",
    [PDBX_BUF_ACT_LP] = "mlp_act_out (gemm dtype)", [PDBX_BUF_ATTN_SCRATCH] = "attention scratch",
    [PDBX_BUF_GEMM_WORKSPACE] = "gemm workspace", [PDBX_BUF_EMBED_TABLE] = "embed_table",
    [PDBX_BUF_NORM_W] = "norm weight", [PDBX_BUF_LM_HEAD_W] = "lm_head weight",
    [PDBX_BUF_L_IN_NORM] = "layer input_norm weight", [PDBX_BUF_L_Q] = "layer q_proj",
    [PDBX_BUF_L_K] = "layer k_proj", [PDBX_BUF_L_V] = "layer v_proj", [PDBX_BUF_L_O] = "layer o_proj",
    [PDBX_BUF_L_POST_NORM] = "layer post_attn_norm weight", [PDBX_BUF_L_GATE] = "layer gate_proj",
    [PDBX_BUF_L_UP] = "layer up_proj", [PDBX_BUF_L_DOWN] = "layer down_proj",
    [PDBX_BUF_GRAD_HIDDEN] = "d hidden", [PDBX_BUF_GRAD_NORM_OUT] = "d input_norm_out",
    [PDBX_BUF_GRAD_Q] = "d q", [PDBX_BUF_GRAD_K] = "d k", [PDBX_BUF_GRAD_V] = "d v",
    [PDBX_BUF_GRAD_SCORES] = "d attn_scores", [PDBX_BUF_GRAD_CONTEXT] = "d attn_context",
    [PDBX_BUF_GRAD_ATTN_OUT] = "d attn_out", [PDBX_BUF_GRAD_POST_NORM_OUT] = "d post_attn_norm_out",
    [PDBX_BUF_GRAD_GATE] = "d mlp_gate_out", [PDBX_BUF_GRAD_UP] = "d mlp_up_out",
    [PDBX_BUF_GRAD_ACT] = "d mlp_act_out", [PDBX_BUF_GRAD_FINAL_NORM_OUT] = "d final_norm_out",
    [PDBX_BUF_GRAD_LOGITS] = "d logits", [PDBX_BUF_GRAD_HIDDEN_LP] = "d hidden (gemm dtype)",
    [PDBX_BUF_GRAD_Q_LP] = "d q (gemm dtype)", [PDBX_BUF_GRAD_K_LP] = "d k (gemm dtype)",
    [PDBX_BUF_GRAD_V_LP] = "d v (gemm dtype)", [PDBX_BUF_GRAD_ATTN_OUT_LP] = "d attn_out (gemm dtype)",
    [PDBX_BUF_GRAD_GATE_LP] = "d mlp_gate_out (gemm dtype)",
    [PDBX_BUF_GRAD_UP_LP] = "d mlp_up_out (gemm dtype)",
    [PDBX_BUF_GRAD_LOGITS_LP] = "d logits (gemm dtype)",
    [PDBX_BUF_ATTN_BWD_SCRATCH] = "attention backward scratch", [PDBX_BUF_NORM_RSTD] = "norm rstd",
    [PDBX_BUF_GRAD_EMBED_TABLE] = "d embed_table", [PDBX_BUF_GRAD_NORM_W] = "d norm weight",
    [PDBX_BUF_GRAD_LM_HEAD_W] = "d lm_head weight", [PDBX_BUF_GRAD_W_Q] = "d q_proj",
    [PDBX_BUF_GRAD_W_KV] = "d k_proj, v_proj", [PDBX_BUF_GRAD_W_O] = "d o_proj",
    [PDBX_BUF_GRAD_W_GATE_UP] = "d gate_proj, up_proj", [PDBX_BUF_GRAD_W_DOWN] = "d down_proj",
    [PDBX_BUF_QKV_FUSED] = "qkv (fused)", [PDBX_BUF_GATE_UP_FUSED] = "mlp_fc1_out (fused)",
    [PDBX_BUF_L_QKV_FUSED] = "layer qkv_proj (fused)", [PDBX_BUF_L_GATE_UP_FUSED] = "layer fc1 (fused)",
    [PDBX_BUF_GRAD_QKV_FUSED] = "d qkv (fused, gemm dtype)",
    [PDBX_BUF_GRAD_GATE_UP_FUSED] = "d mlp_fc1_out (fused, gemm dtype)",
    [PDBX_BUF_GRAD_W_QKV_FUSED] = "d qkv_proj (fused)", [PDBX_BUF_GRAD_W_GATE_UP_FUSED] = "d fc1 (fused)",
    [PDBX_BUF_L_Q_BIAS] = "layer q_proj bias", [PDBX_BUF_L_K_BIAS] = "layer k_proj bias",
    [PDBX_BUF_L_V_BIAS] = "layer v_proj bias", [PDBX_BUF_L_O_BIAS] = "layer o_proj bias",
    [PDBX_BUF_L_GATE_BIAS] = "layer gate_proj bias", [PDBX_BUF_L_UP_BIAS] = "layer up_proj bias",
    [PDBX_BUF_L_DOWN_BIAS] = "layer down_proj bias",
    [PDBX_BUF_L_QKV_FUSED_BIAS] = "layer qkv_proj bias (fused)",
    [PDBX_BUF_L_GATE_UP_FUSED_BIAS] = "layer fc1 bias (fused)",
    [PDBX_BUF_GRAD_B_Q] = "d q_proj bias", [PDBX_BUF_GRAD_B_KV] = "d k_proj, v_proj bias",
    [PDBX_BUF_GRAD_B_O] = "d o_proj bias", [PDBX_BUF_GRAD_B_GATE_UP] = "d gate_proj, up_proj bias",
    [PDBX_BUF_GRAD_B_DOWN] = "d down_proj bias",
    [PDBX_BUF_GRAD_B_QKV_FUSED] = "d qkv_proj bias (fused)",
    [PDBX_BUF_GRAD_B_GATE_UP_FUSED] = "d fc1 bias (fused)",
    [PDBX_BUF_ROPE_TABLE] = "rope cos/sin table",
    [PDBX_BUF_ATTN_LSE] = "attn lse (fp32)", [PDBX_BUF_ATTN_DELTA] = "attn delta (fp32)",
    [PDBX_BUF_GRAD_Q_ACC] = "d q accumulator (fp32)",
    [PDBX_BUF_NORM_B] = "norm bias", [PDBX_BUF_NORM_MEAN] = "norm mean (fp32)",
    [PDBX_BUF_NORM_STATS_RSTD] = "norm rstd (fp32, layernorm)", [PDBX_BUF_GRAD_NORM_B] = "d norm bias",
    [PDBX_BUF_POS_TABLE] = "position table", [PDBX_BUF_GRAD_POS_TABLE] = "d position table",
    [PDBX_BUF_QK_NORM_W] = "q/k norm weights", [PDBX_BUF_GRAD_QK_NORM_W] = "d q/k norm weights",
    [PDBX_BUF_MLA_Q_A] = "mla q_a_out", [PDBX_BUF_MLA_Q_A_NORM] = "mla q_norm_out",
    [PDBX_BUF_MLA_KV_A] = "mla kv_a_out", [PDBX_BUF_MLA_KV_NORM] = "mla kv_norm_out",
    [PDBX_BUF_MLA_KV_B] = "mla kv_b_out", [PDBX_BUF_MLA_NORM_W] = "mla q/kv norm weights",
    [PDBX_BUF_L_Q_A] = "layer q_a_proj", [PDBX_BUF_L_Q_B] = "layer q_b_proj",
    [PDBX_BUF_L_KV_A] = "layer kv_a_proj", [PDBX_BUF_L_KV_B] = "layer kv_b_proj",
    [PDBX_BUF_GRAD_MLA_Q_A] = "d mla q_a_out", [PDBX_BUF_GRAD_MLA_Q_A_NORM] = "d mla q_norm_out",
    [PDBX_BUF_GRAD_MLA_KV_A] = "d mla kv_a_out", [PDBX_BUF_GRAD_MLA_KV_NORM] = "d mla kv_norm_out",
    [PDBX_BUF_GRAD_MLA_KV_B] = "d mla kv_b_out", [PDBX_BUF_GRAD_MLA_NORM_W] = "d mla q/kv norm weights",
    [PDBX_BUF_GRAD_W_Q_A] = "d q_a_proj", [PDBX_BUF_GRAD_W_Q_B] = "d q_b_proj",
    [PDBX_BUF_GRAD_W_KV_A] = "d kv_a_proj", [PDBX_BUF_GRAD_W_KV_B] = "d kv_b_proj",
    [PDBX_BUF_MOE_LOGITS] = "moe router logits", [PDBX_BUF_MOE_TOPK_IDX] = "moe top-k ids",
    [PDBX_BUF_MOE_TOPK_W] = "moe top-k weights", [PDBX_BUF_MOE_ASSIGN] = "moe assignment",
    [PDBX_BUF_MOE_OFFSETS] = "moe expert offsets", [PDBX_BUF_MOE_POS] = "moe copy positions",
    [PDBX_BUF_MOE_ROWS] = "moe permuted rows", [PDBX_BUF_MOE_GATE] = "moe expert gate_out",
    [PDBX_BUF_MOE_UP] = "moe expert up_out", [PDBX_BUF_MOE_ACT] = "moe expert act_out",
    [PDBX_BUF_MOE_OUT] = "moe expert out", [PDBX_BUF_MOE_SH_GATE] = "moe shared gate_out",
    [PDBX_BUF_MOE_SH_UP] = "moe shared up_out", [PDBX_BUF_MOE_SH_ACT] = "moe shared act_out",
    [PDBX_BUF_L_ROUTER] = "layer router", [PDBX_BUF_L_EXPERT_GATE] = "layer experts gate_proj",
    [PDBX_BUF_L_EXPERT_UP] = "layer experts up_proj", [PDBX_BUF_L_EXPERT_DOWN] = "layer experts down_proj",
    [PDBX_BUF_L_SHARED_GATE] = "layer shared gate_proj", [PDBX_BUF_L_SHARED_UP] = "layer shared up_proj",
    [PDBX_BUF_L_SHARED_DOWN] = "layer shared down_proj",
    [PDBX_BUF_GRAD_MOE_LOGITS] = "d moe router logits", [PDBX_BUF_GRAD_MOE_TOPK_W] = "d moe top-k weights",
    [PDBX_BUF_GRAD_MOE_ROWS] = "d moe permuted rows", [PDBX_BUF_GRAD_MOE_GATE] = "d moe expert gate_out",
    [PDBX_BUF_GRAD_MOE_UP] = "d moe expert up_out", [PDBX_BUF_GRAD_MOE_ACT] = "d moe expert act_out",
    [PDBX_BUF_GRAD_MOE_OUT] = "d moe expert out", [PDBX_BUF_GRAD_MOE_SH_GATE] = "d moe shared gate_out",
    [PDBX_BUF_GRAD_MOE_SH_UP] = "d moe shared up_out", [PDBX_BUF_GRAD_MOE_SH_ACT] = "d moe shared act_out",
    [PDBX_BUF_GRAD_W_ROUTER] = "d router", [PDBX_BUF_GRAD_W_EXPERT_GATE_UP] = "d experts gate_proj, up_proj",
    [PDBX_BUF_GRAD_W_EXPERT_DOWN] = "d experts down_proj",
    [PDBX_BUF_GRAD_W_SHARED_GATE_UP] = "d shared gate_proj, up_proj",
    [PDBX_BUF_GRAD_W_SHARED_DOWN] = "d shared down_proj",
    [PDBX_BUF_GRAD_LOGITS_CAPPED] = "d logits (capped, gemm dtype)",
    [PDBX_BUF_LOSS_STATS] = "loss row statistics",
    [PDBX_BUF_OPT_MASTER] = "optimizer master weights", [PDBX_BUF_OPT_M] = "optimizer m",
    [PDBX_BUF_OPT_V] = "optimizer v", [PDBX_BUF_OPT_MODEL_LP] = "optimizer 16-bit model copy",
    [PDBX_BUF_OPT_GRAD] = "optimizer main gradient",
    [PDBX_BUF_OPT_GRAD_ZEROED] = "gradient buffer (zeroed each step)",
    [PDBX_BUF_COMM] = "collective buffer",
};

const char *pdbx_buf_role_name(pdbx_buf_role r)
{
    return (int)r >= 0 && r < PDBX_BUF_ROLES ? role_names[r] : "?";
}

void plan_mem_add(pdbx_profile_memory *out, pdbx_buf_role role, pdbx_mem_kind kind, double bytes,
                int count)
{
    if (out->nbufs >= PDBX_PROFILE_MAX_BUFS || count < 1)
        return;
    out->buf[out->nbufs++] = (pdbx_profile_buf){ role, kind, bytes, count };
    out->kind_bytes[kind] += bytes * count;
    out->total += bytes * count;
}

/* The RoPE table's bytes: fp32 cos and sin of [seq_len, rot/2], rot the rotated dims of a head
 * (pdbx_rotary_dims: head_dim for a Llama; both backends). */
double plan_mem_rope_table_bytes(const pdbx_profile_point *p)
{
    return 2.0 * 4.0 * (double)p->seq_len * (double)(pdbx_rotary_dims(&p->model) / 2);
}

double plan_mem_lines(double bytes)
{
    return ceil(bytes / CPU_ALIGN) * CPU_ALIGN;
}

double plan_mem_exact(double bytes)
{
    return bytes;   /* cudaMalloc: the size asked for */
}

/* The collectives of the point and the buffer they share: plan_comm.c's sizing, the one the
 * engine's point_comm uses. */
static void comm_messages(const pdbx_profile_point *p, pdbx_profile_memory *out)
{
    pdbx_plan_comm pc;
    const pdbx_parallel par = { p->tp, p->pp, p->dp, p->ep };
    pdbx_plan_comm_point(&p->model, &par, p->mbs, p->seq_len, p->dtype, p->backend, p->moe_imbalance, &pc);
    out->tp_bytes = pc.tp_bytes;
    out->pp_bytes = pc.pp_bytes;
    out->dp_bytes = pc.dp_bytes;
    out->ep_bytes = pc.ep_bytes;
    if (pc.buffer_bytes > 0)   /* a point without collectives asks for no buffer */
        plan_mem_add(out, PDBX_BUF_COMM, PDBX_MEM_COMM, pc.buffer_bytes, 1);
}

/* The per-layer bias vectors of the prepared projections that have one (arch.bias), each of
 * n elements of `e` bytes (cpu: fp32, as its GEMM outputs; cuda: the dtype), `sets` of each. */
void plan_mem_biases(const pdbx_profile_point *p, pdbx_profile_memory *out, double (*sz)(double),
                   double e, int sets)
{
    const double h = p->model.hidden;
    const double qd = (double)p->model.heads / p->tp * p->model.head_dim;
    const double kvd = plan_kv_heads_per_rank(&p->model, p->tp) * p->model.head_dim;
    const double I = p->model.intermediate / p->tp;
    const pdbx_mem_kind W = PDBX_MEM_WEIGHTS;
    if (QKV_BIAS(p)) {
        if (HAS(ATTN_Q)) plan_mem_add(out, PDBX_BUF_L_Q_BIAS, W, sz(qd * e), sets);
        if (HAS(ATTN_K)) plan_mem_add(out, PDBX_BUF_L_K_BIAS, W, sz(kvd * e), sets);
        if (HAS(ATTN_V)) plan_mem_add(out, PDBX_BUF_L_V_BIAS, W, sz(kvd * e), sets);
    }
    if (O_BIAS(p) && HAS(ATTN_O)) plan_mem_add(out, PDBX_BUF_L_O_BIAS, W, sz(h * e), sets);
    if (MLP_BIAS(p)) {
        if (HAS(MLP_GATE)) plan_mem_add(out, PDBX_BUF_L_GATE_BIAS, W, sz(I * e), sets);
        if (HAS(MLP_UP)) plan_mem_add(out, PDBX_BUF_L_UP_BIAS, W, sz(I * e), sets);
        if (HAS(MLP_DOWN)) plan_mem_add(out, PDBX_BUF_L_DOWN_BIAS, W, sz(h * e), sets);
    }
}

/* The weight gradients of the backward pass (both backends): fp32 (Megatron's main_grad, into
 * which the wgrad GEMMs accumulate with beta 1), ONE set shared by the profiled layers and one
 * buffer per weight shape (k and v, gate and up share): a wgrad's time depends on the shape of
 * its output, not on which buffer it is, and at a real model's sizes every weight gradient is
 * far larger than the caches, so layer l's wgrad finds nothing of layer l-1's in cache either
 * way; per-layer buffers would only multiply the memory. */
void plan_mem_weight_grads(const pdbx_profile_point *p, pdbx_profile_memory *out, int cpu)
{
    const double f = 4, h = p->model.hidden;
    const double heads = p->model.heads / p->tp, kv = plan_kv_heads_per_rank(&p->model, p->tp);
    const double qd = heads * p->model.head_dim, kvd = kv * p->model.head_dim;
    const double I = p->model.intermediate / p->tp;
    const double V = plan_vocab_per_rank(&p->model, p->tp);
    const int tied = !cpu && p->model.tie_embeddings;   /* the cpu backend never ties */
    const pdbx_mem_kind G = PDBX_MEM_GRADS;
    double (*sz)(double) = cpu ? plan_mem_lines : plan_mem_exact;
    if (HAS(EMBED) || (tied && HAS(LM_HEAD))) plan_mem_add(out, PDBX_BUF_GRAD_EMBED_TABLE, G, sz(V * h * f), 1);
    if (cpu || HAS(INPUT_NORM) || HAS(POST_ATTN_NORM) || HAS(FINAL_NORM))
        plan_mem_add(out, PDBX_BUF_GRAD_NORM_W, G, sz(h * f), 1);
    if (HAS(LM_HEAD) && !tied) plan_mem_add(out, PDBX_BUF_GRAD_LM_HEAD_W, G, sz(h * V * f), 1);
    if (HAS(ATTN_Q)) plan_mem_add(out, PDBX_BUF_GRAD_W_Q, G, sz(h * qd * f), 1);
    if (HAS(ATTN_K) || HAS(ATTN_V)) plan_mem_add(out, PDBX_BUF_GRAD_W_KV, G, sz(h * kvd * f), 1);
    double kd, vd, ctxd;   /* o's input: the context (MLA: heads x v_head_dim) */
    plan_mem_attn_widths(p, &kd, &vd, &ctxd);
    if (HAS(ATTN_O)) plan_mem_add(out, PDBX_BUF_GRAD_W_O, G, sz(ctxd * h * f), 1);
    if (HAS(MLP_GATE) || HAS(MLP_UP)) plan_mem_add(out, PDBX_BUF_GRAD_W_GATE_UP, G, sz(h * I * f), 1);
    if (HAS(MLP_DOWN)) plan_mem_add(out, PDBX_BUF_GRAD_W_DOWN, G, sz(I * h * f), 1);
    /* the biases' gradients: fp32, one set, k and v (gate and up) sharing one as the weights' */
    if (QKV_BIAS(p) && HAS(ATTN_Q)) plan_mem_add(out, PDBX_BUF_GRAD_B_Q, G, sz(qd * f), 1);
    if (QKV_BIAS(p) && (HAS(ATTN_K) || HAS(ATTN_V))) plan_mem_add(out, PDBX_BUF_GRAD_B_KV, G, sz(kvd * f), 1);
    if (O_BIAS(p) && HAS(ATTN_O)) plan_mem_add(out, PDBX_BUF_GRAD_B_O, G, sz(h * f), 1);
    if (MLP_BIAS(p) && (HAS(MLP_GATE) || HAS(MLP_UP))) plan_mem_add(out, PDBX_BUF_GRAD_B_GATE_UP, G, sz(I * f), 1);
    if (MLP_BIAS(p) && HAS(MLP_DOWN)) plan_mem_add(out, PDBX_BUF_GRAD_B_DOWN, G, sz(h * f), 1);
}



static int listed(const pdbx_profile_memory *out, pdbx_buf_role r)
{
    for (int i = 0; i < out->nbufs; i++)
        if (out->buf[i].role == r)
            return 1;
    return 0;
}

/* fused_projections (both backends): per fused group whose ops are prepared, its weight per
 * layer ([h, n_fused] in the dtype), its output (cpu: fp32 as every cpu GEMM output; cuda:
 * the dtype) and, with bwd, its output gradient in the GEMM dtype and its fp32 weight
 * gradient; the GEMM's input (and, with bwd, its gradient: the dgrad's output) where the lists
 * above left it out (cuda allocates by the ops prepared, and the group's bits are cleared for
 * them: see pdbx_profile_memory_list). */
static void fused_list(const pdbx_profile_point *p, int sets, pdbx_profile_memory *out)
{
    const int cpu = p->backend == PDBX_BACKEND_CPU;
    const double e = cpu ? (p->dtype == PDBX_DTYPE_BF16 ? 2 : 4) : (p->dtype == PDBX_DTYPE_FP32 ? 4 : 2);
    const double y = cpu ? 4 : e, f = 4;
    const double T = (double)p->mbs * p->seq_len, h = p->model.hidden;
    const double heads = p->model.heads / p->tp, kv = plan_kv_heads_per_rank(&p->model, p->tp);
    const double d = p->model.head_dim, I = p->model.intermediate / p->tp;
    double (*sz)(double) = cpu ? plan_mem_lines : plan_mem_exact;
    const int bwd = (p->passes & PDBX_PASS_BIT(PDBX_PASS_BWD)) != 0;
    const struct {
        pdbx_opmask ops;
        double n;
        pdbx_buf_role in, grad_in, outb, w, grad_out, grad_w, bias, grad_bias;
        int has_bias;
    } groups[2] = {
        {QKV_OPS, (heads + 2 * kv) * d, PDBX_BUF_NORM_OUT, PDBX_BUF_GRAD_NORM_OUT, PDBX_BUF_QKV_FUSED,
         PDBX_BUF_L_QKV_FUSED, PDBX_BUF_GRAD_QKV_FUSED, PDBX_BUF_GRAD_W_QKV_FUSED,
         PDBX_BUF_L_QKV_FUSED_BIAS, PDBX_BUF_GRAD_B_QKV_FUSED, QKV_BIAS(p)},
        {FC1_OPS, 2 * I, PDBX_BUF_POST_NORM_OUT, PDBX_BUF_GRAD_POST_NORM_OUT, PDBX_BUF_GATE_UP_FUSED,
         PDBX_BUF_L_GATE_UP_FUSED, PDBX_BUF_GRAD_GATE_UP_FUSED, PDBX_BUF_GRAD_W_GATE_UP_FUSED,
         PDBX_BUF_L_GATE_UP_FUSED_BIAS, PDBX_BUF_GRAD_B_GATE_UP_FUSED, MLP_BIAS(p)},
    };
    for (int g = 0; g < 2; g++) {
        if (!(p->ops & groups[g].ops))
            continue;
        if (!listed(out, groups[g].in))
            plan_mem_add(out, groups[g].in, PDBX_MEM_ACTIVATIONS, sz(T * h * e), 1);
        plan_mem_add(out, groups[g].outb, PDBX_MEM_ACTIVATIONS, sz(T * groups[g].n * y), 1);
        plan_mem_add(out, groups[g].w, PDBX_MEM_WEIGHTS, sz(h * groups[g].n * e), sets);
        if (groups[g].has_bias)   /* cpu: fp32 as its GEMM output; cuda: the dtype */
            plan_mem_add(out, groups[g].bias, PDBX_MEM_WEIGHTS, sz(groups[g].n * y), sets);
        if (!bwd)
            continue;
        if (groups[g].has_bias)
            plan_mem_add(out, groups[g].grad_bias, PDBX_MEM_GRADS, sz(groups[g].n * f), 1);
        if (!listed(out, groups[g].grad_in))
            plan_mem_add(out, groups[g].grad_in, PDBX_MEM_GRADS, sz(T * h * e), 1);
        plan_mem_add(out, groups[g].grad_out, PDBX_MEM_GRADS, sz(T * groups[g].n * e), 1);
        plan_mem_add(out, groups[g].grad_w, PDBX_MEM_GRADS, sz(h * groups[g].n * f), 1);
    }
}

int pdbx_profile_memory_list(const pdbx_profile_point *p, pdbx_profile_memory *out, char *err,
                             size_t errlen)
{
    memset(out, 0, sizeof *out);
    const pdbx_model *m = &p->model;
    if (p->tp < 1 || p->pp < 1 || p->dp < 1 || p->mbs < 1 || p->seq_len < 1 || p->layers < 1)
        return pdbx_fail(err, errlen, "profile memory: tp %d, pp %d, dp %d, mbs %d, seq_len %d, "
                         "layers %d (allowed: >= 1)", p->tp, p->pp, p->dp, p->mbs, p->seq_len,
                         p->layers);
    if (m->hidden < 1 || m->heads < 1 || m->head_dim < 1 || m->kv_heads < 1 ||
        m->intermediate < 1 || m->vocab < 1 || m->heads % p->tp || m->intermediate % p->tp)
        return pdbx_fail(err, errlen, "profile memory: tp %d does not divide heads %d and "
                         "intermediate %d", p->tp, m->heads, m->intermediate);
    /* fused: the separate projections' weights (and buffers only they need) are not
     * allocated: the lists see the point without the fused groups' ops, fused_list adds the
     * fused buffers */
    /* per-layer weight sets: the cpu backend allocates each layer once; cuda rotates copies
     * of the whole layer (fused weights included) against L2 */
    const int sets = p->backend == PDBX_BACKEND_CPU ? p->layers : plan_mem_cuda_weight_sets(p);
    pdbx_profile_point sep = *p;
    if (p->fused_projections)
        sep.ops &= ~(pdbx_opmask)(QKV_OPS | FC1_OPS);
    if (p->backend == PDBX_BACKEND_CPU) {
        plan_mem_cpu_list(&sep, out);
        plan_mem_cpu_moe_list(&sep, out);
        plan_mem_cpu_grad_list(&sep, out);
        plan_mem_cpu_moe_grad_list(&sep, out);
    } else {
        plan_mem_cuda_list(&sep, sets, out);
        plan_mem_cuda_moe_list(&sep, sets, out);
        plan_mem_cuda_grad_list(&sep, out);
        plan_mem_cuda_moe_grad_list(&sep, out);
    }
    if (p->fused_projections)
        fused_list(p, sets, out);
    comm_messages(p, out);
    return 0;
}

void pdbx_profile_point_of(const pdbx_spec *spec, const pdbx_parallel *par, int mbs,
                           pdbx_backend_kind backend, int threads, pdbx_profile_point *out)
{
    memset(out, 0, sizeof *out);
    out->model = spec->model;
    out->tp = par->tp;
    out->pp = par->pp;
    out->dp = par->dp;
    out->ep = pdbx_par_ep(par);
    out->moe_imbalance = spec->moe_imbalance >= 1 ? spec->moe_imbalance : 1;
    out->mbs = mbs;
    out->seq_len = spec->seq_len;
    out->layers = spec->layers_profiled;
    out->ops = pdbx_spec_ops(spec);
    out->passes = spec->passes;
    out->dtype = spec->dtype;
    if (backend == PDBX_BACKEND_AUTO)
        backend = strcmp(spec->gpu.name, "cpu") == 0 ? PDBX_BACKEND_CPU : PDBX_BACKEND_CUDA;
    out->backend = backend;
    out->threads = threads > 0 ? threads : 1;
    out->flash_attention = spec->flash_attention;
    out->fused_projections = spec->fused_projections;
}

int pdbx_plan_point_memory(const pdbx_spec *spec, const pdbx_plan_point *pt,
                           pdbx_backend_kind backend, int threads, pdbx_profile_memory *pm,
                           char *err, size_t errlen)
{
    pdbx_parallel par = { pt->tp, pt->pp, pt->dp, pt->ep };
    pdbx_profile_point pp;
    pdbx_profile_point_of(spec, &par, pt->mbs, backend, threads, &pp);
    return pdbx_profile_memory_list(&pp, pm, err, errlen);
}

int pdbx_plan_point_profile(const pdbx_spec *spec, pdbx_plan_point *pt, pdbx_backend_kind backend,
                            int threads, char *err, size_t errlen)
{
    pdbx_profile_memory pm;
    if (pdbx_plan_point_memory(spec, pt, backend, threads, &pm, err, errlen) != 0)
        return -1;
    memcpy(pt->profile_kind_bytes, pm.kind_bytes, sizeof pt->profile_kind_bytes);
    pt->profile_bytes = pm.total;
    /* mem_bytes 0: unknown memory (no /proc/meminfo), nothing is predicted to OOM */
    pt->profile_oom = spec->gpu.mem_bytes > 0 && pm.total > spec->gpu.mem_bytes;
    return 0;
}
