/* plan_profile_memory.c: the buffers pdbx-engine allocates for one point on one rank (plan.h,
 * "profile memory"; docs/spec.md, "Memory model").
 *
 * This list is the sizing rule itself, not a model of it: the cpu backend allocates exactly
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
#include "engine/plan/plan_internal.h"

#include <math.h>
#include <string.h>

/* cpu: take() in cpu_memory.c hands out whole 64-byte lines (posix_memalign(64)). */
#define CPU_ALIGN 64.0
/* cpu: the attention kernel's blocking (engine/backends/cpu/cpu_kernels.h, PDBX_K_ATTN_BLOCK
 * and PDBX_K_ATTN_KBLOCK): per thread a block of query-row scores against the sequence and a
 * transposed key block. A unit test holds the two in step. */
#define CPU_ATTN_BLOCK 32
#define CPU_ATTN_KBLOCK 64
/* cuda: cuBLASLt workspace of the GEMM cache (cuda_gemm.h, CUDA_GEMM_WORKSPACE_BYTES). */
#define CUDA_GEMM_WORKSPACE (32.0 * 1024 * 1024)

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
    [PDBX_BUF_COMM] = "collective buffer",
};

const char *pdbx_buf_role_name(pdbx_buf_role r)
{
    return (int)r >= 0 && r < PDBX_BUF_ROLES ? role_names[r] : "?";
}

static void add(pdbx_profile_memory *out, pdbx_buf_role role, pdbx_mem_kind kind, double bytes,
                int count)
{
    if (out->nbufs >= PDBX_PROFILE_MAX_BUFS || count < 1)
        return;
    out->buf[out->nbufs++] = (pdbx_profile_buf){ role, kind, bytes, count };
    out->kind_bytes[kind] += bytes * count;
    out->total += bytes * count;
}

/* The RoPE table's bytes: fp32 cos and sin of [seq_len, head_dim/2] (both backends). */
static double rope_table_bytes(const pdbx_profile_point *p)
{
    return 2.0 * 4.0 * (double)p->seq_len * (double)(p->model.head_dim / 2);
}

static double lines(double bytes)
{
    return ceil(bytes / CPU_ALIGN) * CPU_ALIGN;
}

static double exact(double bytes)
{
    return bytes;   /* cudaMalloc: the size asked for */
}

/* The collectives of the point and the buffer they share: plan_comm.c's sizing, the one the
 * engine's point_comm uses. */
static void comm_messages(const pdbx_profile_point *p, pdbx_profile_memory *out)
{
    pdbx_plan_comm pc;
    pdbx_plan_comm_bytes(&p->model, p->tp, p->pp, p->dp, p->mbs, p->seq_len, p->dtype, p->backend,
                         &pc);
    out->tp_bytes = pc.tp_bytes;
    out->pp_bytes = pc.pp_bytes;
    out->dp_bytes = pc.dp_bytes;
    if (pc.buffer_bytes > 0)   /* a point without collectives asks for no buffer */
        add(out, PDBX_BUF_COMM, PDBX_MEM_COMM, pc.buffer_bytes, 1);
}

#define HAS(op) (p->ops & PDBX_OP_BIT(PDBX_OP_##op))
/* the residual adds read and write hidden and attn_out (their gradients in the backward) */
#define RESID(p) (((p)->ops & (PDBX_OP_BIT(PDBX_OP_ATTN_RESIDUAL) | PDBX_OP_BIT(PDBX_OP_MLP_RESIDUAL))) != 0)

/* The per-layer bias vectors of the prepared projections that have one (arch.bias), each of
 * n elements of `e` bytes (cpu: fp32, as its GEMM outputs; cuda: the dtype), `sets` of each. */
#define QKV_BIAS(p) ((p)->model.arch.bias.qkv != 0)
#define O_BIAS(p) ((p)->model.arch.bias.attn_out != 0)
#define MLP_BIAS(p) ((p)->model.arch.bias.mlp != 0)
static void biases(const pdbx_profile_point *p, pdbx_profile_memory *out, double (*sz)(double),
                   double e, int sets)
{
    const double h = p->model.hidden;
    const double qd = (double)p->model.heads / p->tp * p->model.head_dim;
    const double kvd = plan_kv_heads_per_rank(&p->model, p->tp) * p->model.head_dim;
    const double I = p->model.intermediate / p->tp;
    const pdbx_mem_kind W = PDBX_MEM_WEIGHTS;
    if (QKV_BIAS(p)) {
        if (HAS(ATTN_Q)) add(out, PDBX_BUF_L_Q_BIAS, W, sz(qd * e), sets);
        if (HAS(ATTN_K)) add(out, PDBX_BUF_L_K_BIAS, W, sz(kvd * e), sets);
        if (HAS(ATTN_V)) add(out, PDBX_BUF_L_V_BIAS, W, sz(kvd * e), sets);
    }
    if (O_BIAS(p) && HAS(ATTN_O)) add(out, PDBX_BUF_L_O_BIAS, W, sz(h * e), sets);
    if (MLP_BIAS(p)) {
        if (HAS(MLP_GATE)) add(out, PDBX_BUF_L_GATE_BIAS, W, sz(I * e), sets);
        if (HAS(MLP_UP)) add(out, PDBX_BUF_L_UP_BIAS, W, sz(I * e), sets);
        if (HAS(MLP_DOWN)) add(out, PDBX_BUF_L_DOWN_BIAS, W, sz(h * e), sets);
    }
}

/* cpu_memory.c's buffers: fp32 activations (GEMM outputs and every elementwise op run in
 * fp32), with bf16 copies of the GEMM inputs when the GEMMs run in bf16; one RMSNorm weight
 * shared by every norm; the attention scratch per thread. */
static void cpu_list(const pdbx_profile_point *p, pdbx_profile_memory *out)
{
    const double f = 4, e = p->dtype == PDBX_DTYPE_BF16 ? 2 : 4;
    const double T = (double)p->mbs * p->seq_len, h = p->model.hidden;
    const double heads = p->model.heads / p->tp, kv = plan_kv_heads_per_rank(&p->model, p->tp);
    const double qd = heads * p->model.head_dim, kvd = kv * p->model.head_dim;
    const double I = p->model.intermediate / p->tp, V = p->model.vocab / p->tp;
    const pdbx_mem_kind A = PDBX_MEM_ACTIVATIONS, W = PDBX_MEM_WEIGHTS;
    add(out, PDBX_BUF_TOKEN_IDS, A, lines(T * 4), 1);
    if (HAS(EMBED))
        add(out, PDBX_BUF_EMBED_OUT, A, lines(T * h * e), 1);
    add(out, PDBX_BUF_HIDDEN, A, lines(T * h * f), 1);
    add(out, PDBX_BUF_NORM_OUT, A, lines(T * h * f), 1);
    add(out, PDBX_BUF_Q, A, lines(T * qd * f), 1);
    add(out, PDBX_BUF_K, A, lines(T * kvd * f), 1);
    add(out, PDBX_BUF_V, A, lines(T * kvd * f), 1);
    add(out, PDBX_BUF_CONTEXT, A, lines(T * qd * f), 1);
    add(out, PDBX_BUF_ATTN_OUT, A, lines(T * h * f), 1);
    add(out, PDBX_BUF_POST_NORM_OUT, A, lines(T * h * f), 1);
    add(out, PDBX_BUF_GATE, A, lines(T * I * f), 1);
    add(out, PDBX_BUF_UP, A, lines(T * I * f), 1);
    add(out, PDBX_BUF_ACT, A, lines(T * I * f), 1);
    double scratch = ((double)CPU_ATTN_BLOCK * p->seq_len + (double)p->model.head_dim * CPU_ATTN_KBLOCK)
                     * (p->threads > 0 ? p->threads : 1);
    add(out, PDBX_BUF_ATTN_SCRATCH, PDBX_MEM_WORKSPACE, lines(scratch * f), 1);
    if (HAS(ATTN_ROPE))
        add(out, PDBX_BUF_ROPE_TABLE, A, lines(rope_table_bytes(p)), 1);
    if (e == 2) {
        add(out, PDBX_BUF_NORM_OUT_LP, A, lines(T * h * e), 1);
        add(out, PDBX_BUF_CONTEXT_LP, A, lines(T * qd * e), 1);
        add(out, PDBX_BUF_POST_NORM_OUT_LP, A, lines(T * h * e), 1);
        add(out, PDBX_BUF_ACT_LP, A, lines(T * I * e), 1);
    }
    if (HAS(LM_HEAD))
        add(out, PDBX_BUF_LOGITS, A, lines(T * V * f), 1);
    /* weights: kept across a config's MBS sweep, allocated after the activations */
    if (HAS(EMBED))
        add(out, PDBX_BUF_EMBED_TABLE, W, lines(V * h * e), 1);
    add(out, PDBX_BUF_NORM_W, W, lines(h * f), 1);
    if (HAS(LM_HEAD))
        add(out, PDBX_BUF_LM_HEAD_W, W, lines(h * V * e), 1);
    const int L = p->layers;
    if (HAS(ATTN_Q)) add(out, PDBX_BUF_L_Q, W, lines(h * qd * e), L);
    if (HAS(ATTN_K)) add(out, PDBX_BUF_L_K, W, lines(h * kvd * e), L);
    if (HAS(ATTN_V)) add(out, PDBX_BUF_L_V, W, lines(h * kvd * e), L);
    if (HAS(ATTN_O)) add(out, PDBX_BUF_L_O, W, lines(qd * h * e), L);
    if (HAS(MLP_GATE)) add(out, PDBX_BUF_L_GATE, W, lines(h * I * e), L);
    if (HAS(MLP_UP)) add(out, PDBX_BUF_L_UP, W, lines(h * I * e), L);
    if (HAS(MLP_DOWN)) add(out, PDBX_BUF_L_DOWN, W, lines(I * h * e), L);
    biases(p, out, lines, f, L);
}

/* The weight gradients of the backward pass (both backends): fp32 (Megatron's main_grad, into
 * which the wgrad GEMMs accumulate with beta 1), ONE set shared by the profiled layers and one
 * buffer per weight shape (k and v, gate and up share): a wgrad's time depends on the shape of
 * its output, not on which buffer it is, and at a real model's sizes every weight gradient is
 * far larger than the caches, so layer l's wgrad finds nothing of layer l-1's in cache either
 * way; per-layer buffers would only multiply the memory. */
static void weight_grads(const pdbx_profile_point *p, pdbx_profile_memory *out, int cpu)
{
    const double f = 4, h = p->model.hidden;
    const double heads = p->model.heads / p->tp, kv = plan_kv_heads_per_rank(&p->model, p->tp);
    const double qd = heads * p->model.head_dim, kvd = kv * p->model.head_dim;
    const double I = p->model.intermediate / p->tp;
    const double V = cpu ? p->model.vocab / p->tp : (p->model.vocab + p->tp - 1) / p->tp;
    const int tied = !cpu && p->model.tie_embeddings;   /* the cpu backend never ties */
    const pdbx_mem_kind G = PDBX_MEM_GRADS;
    double (*sz)(double) = cpu ? lines : exact;
    if (HAS(EMBED) || (tied && HAS(LM_HEAD))) add(out, PDBX_BUF_GRAD_EMBED_TABLE, G, sz(V * h * f), 1);
    if (cpu || HAS(INPUT_NORM) || HAS(POST_ATTN_NORM) || HAS(FINAL_NORM))
        add(out, PDBX_BUF_GRAD_NORM_W, G, sz(h * f), 1);
    if (HAS(LM_HEAD) && !tied) add(out, PDBX_BUF_GRAD_LM_HEAD_W, G, sz(h * V * f), 1);
    if (HAS(ATTN_Q)) add(out, PDBX_BUF_GRAD_W_Q, G, sz(h * qd * f), 1);
    if (HAS(ATTN_K) || HAS(ATTN_V)) add(out, PDBX_BUF_GRAD_W_KV, G, sz(h * kvd * f), 1);
    if (HAS(ATTN_O)) add(out, PDBX_BUF_GRAD_W_O, G, sz(qd * h * f), 1);
    if (HAS(MLP_GATE) || HAS(MLP_UP)) add(out, PDBX_BUF_GRAD_W_GATE_UP, G, sz(h * I * f), 1);
    if (HAS(MLP_DOWN)) add(out, PDBX_BUF_GRAD_W_DOWN, G, sz(I * h * f), 1);
    /* the biases' gradients: fp32, one set, k and v (gate and up) sharing one as the weights' */
    if (QKV_BIAS(p) && HAS(ATTN_Q)) add(out, PDBX_BUF_GRAD_B_Q, G, sz(qd * f), 1);
    if (QKV_BIAS(p) && (HAS(ATTN_K) || HAS(ATTN_V))) add(out, PDBX_BUF_GRAD_B_KV, G, sz(kvd * f), 1);
    if (O_BIAS(p) && HAS(ATTN_O)) add(out, PDBX_BUF_GRAD_B_O, G, sz(h * f), 1);
    if (MLP_BIAS(p) && (HAS(MLP_GATE) || HAS(MLP_UP))) add(out, PDBX_BUF_GRAD_B_GATE_UP, G, sz(I * f), 1);
    if (MLP_BIAS(p) && HAS(MLP_DOWN)) add(out, PDBX_BUF_GRAD_B_DOWN, G, sz(h * f), 1);
}

/* cpu_backward.c's buffers (passes with bwd): the gradient of every activation in fp32, as
 * the forward's activations (each backward kernel runs in fp32), with copies in bf16 of those
 * that a bf16 dgrad/wgrad GEMM reads (the output gradients dY of the GEMMs); the weight
 * gradients; the attention backward's scratch per thread (P and dS of a query block, one
 * transposed key block: cpu_kernels_bwd.h). lm_head's dgrad writes the gradient of its input,
 * the final norm's output, which the cpu forward keeps in input_norm_out: d input_norm_out. */
static void cpu_grad_list(const pdbx_profile_point *p, pdbx_profile_memory *out)
{
    if (!(p->passes & PDBX_PASS_BIT(PDBX_PASS_BWD)))
        return;
    const double f = 4, e = p->dtype == PDBX_DTYPE_BF16 ? 2 : 4;
    const double T = (double)p->mbs * p->seq_len, h = p->model.hidden;
    const double heads = p->model.heads / p->tp, kv = plan_kv_heads_per_rank(&p->model, p->tp);
    const double qd = heads * p->model.head_dim, kvd = kv * p->model.head_dim;
    const double I = p->model.intermediate / p->tp, V = p->model.vocab / p->tp;
    const pdbx_mem_kind G = PDBX_MEM_GRADS;
    add(out, PDBX_BUF_GRAD_HIDDEN, G, lines(T * h * f), 1);
    add(out, PDBX_BUF_GRAD_NORM_OUT, G, lines(T * h * f), 1);
    add(out, PDBX_BUF_GRAD_Q, G, lines(T * qd * f), 1);
    add(out, PDBX_BUF_GRAD_K, G, lines(T * kvd * f), 1);
    add(out, PDBX_BUF_GRAD_V, G, lines(T * kvd * f), 1);
    add(out, PDBX_BUF_GRAD_CONTEXT, G, lines(T * qd * f), 1);
    add(out, PDBX_BUF_GRAD_ATTN_OUT, G, lines(T * h * f), 1);
    add(out, PDBX_BUF_GRAD_POST_NORM_OUT, G, lines(T * h * f), 1);
    add(out, PDBX_BUF_GRAD_GATE, G, lines(T * I * f), 1);
    add(out, PDBX_BUF_GRAD_UP, G, lines(T * I * f), 1);
    add(out, PDBX_BUF_GRAD_ACT, G, lines(T * I * f), 1);
    if (HAS(LM_HEAD))
        add(out, PDBX_BUF_GRAD_LOGITS, G, lines(T * V * f), 1);
    double scratch = (2.0 * CPU_ATTN_BLOCK * p->seq_len + (double)p->model.head_dim * CPU_ATTN_KBLOCK)
                     * (p->threads > 0 ? p->threads : 1);
    add(out, PDBX_BUF_ATTN_BWD_SCRATCH, PDBX_MEM_WORKSPACE, lines(scratch * f), 1);
    if (e == 2) {
        add(out, PDBX_BUF_GRAD_HIDDEN_LP, G, lines(T * h * e), 1);
        add(out, PDBX_BUF_GRAD_Q_LP, G, lines(T * qd * e), 1);
        add(out, PDBX_BUF_GRAD_K_LP, G, lines(T * kvd * e), 1);
        add(out, PDBX_BUF_GRAD_V_LP, G, lines(T * kvd * e), 1);
        add(out, PDBX_BUF_GRAD_ATTN_OUT_LP, G, lines(T * h * e), 1);
        add(out, PDBX_BUF_GRAD_GATE_LP, G, lines(T * I * e), 1);
        add(out, PDBX_BUF_GRAD_UP_LP, G, lines(T * I * e), 1);
        if (HAS(LM_HEAD))
            add(out, PDBX_BUF_GRAD_LOGITS_LP, G, lines(T * V * e), 1);
    }
    weight_grads(p, out, 1);
}

/* cuda_point.c's buffers: everything in the dtype (token ids int32), a buffer allocated
 * when any op that reads or writes it is prepared; the full score matrix of the attention
 * core unless the fused kernels run it (flash_attention: cuda_attention_needs_scores), which
 * with a backward keep each row's fp32 log-sum-exp instead; per layer its two
 * RMSNorm weights too, in as many copies as the L2 rotation needs; the vocabulary split
 * rounded up; the lm_head reads the embedding table when tied. */
#define QKV_OPS (PDBX_OP_BIT(PDBX_OP_ATTN_Q) | PDBX_OP_BIT(PDBX_OP_ATTN_K) | PDBX_OP_BIT(PDBX_OP_ATTN_V))
#define FC1_OPS (PDBX_OP_BIT(PDBX_OP_MLP_GATE) | PDBX_OP_BIT(PDBX_OP_MLP_UP))

/* The bytes of one layer's weights on a cuda rank as cuda_backend.c allocates them (the
 * RMSNorm weights, the projections prepared, or for fused_projections the fused QKV / fc1
 * weights in place of their groups'): what the L2 rotation's copy count is computed from. */
static double cuda_layer_weight_bytes(const pdbx_profile_point *p)
{
    const double es = p->dtype == PDBX_DTYPE_FP32 ? 4 : 2;
    const double h = p->model.hidden, I = p->model.intermediate / p->tp;
    const double qd = (double)p->model.heads / p->tp * p->model.head_dim;
    const double kvd = plan_kv_heads_per_rank(&p->model, p->tp) * p->model.head_dim;
#define HAS_OP(o) ((p->ops & PDBX_OP_BIT(PDBX_OP_##o)) != 0)
    const int fq = p->fused_projections && (p->ops & QKV_OPS);
    const int ff = p->fused_projections && (p->ops & FC1_OPS);
    double b = (HAS_OP(INPUT_NORM) + HAS_OP(POST_ATTN_NORM)) * h + HAS_OP(ATTN_O) * qd * h +
               HAS_OP(MLP_DOWN) * I * h;
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
    return b * es;
}

/* The per-layer weight sets a cuda rank allocates: layers x the rotating copies. */
static int cuda_weight_sets(const pdbx_profile_point *p)
{
    return p->layers * pdbx_cuda_weight_copies(cuda_layer_weight_bytes(p), p->layers,
                                               PDBX_CUDA_PLAN_L2_BYTES);
}

/* sets: the per-layer weight sets (cuda_weight_sets of the whole point). */
static void cuda_list(const pdbx_profile_point *p, int sets, pdbx_profile_memory *out)
{
    const double es = p->dtype == PDBX_DTYPE_FP32 ? 4 : 2;
    const double T = (double)p->mbs * p->seq_len, h = p->model.hidden;
    const double heads = p->model.heads / p->tp, kv = plan_kv_heads_per_rank(&p->model, p->tp);
    const double qd = heads * p->model.head_dim, kvd = kv * p->model.head_dim;
    const double I = p->model.intermediate / p->tp;
    const double V = (p->model.vocab + p->tp - 1) / p->tp;
    const int tied = p->model.tie_embeddings;
    const pdbx_mem_kind A = PDBX_MEM_ACTIVATIONS, W = PDBX_MEM_WEIGHTS;
    if (HAS(EMBED)) add(out, PDBX_BUF_TOKEN_IDS, A, T * 4, 1);
    if (HAS(EMBED) || (tied && HAS(LM_HEAD))) add(out, PDBX_BUF_EMBED_TABLE, W, V * h * es, 1);
    if (HAS(EMBED) || HAS(INPUT_NORM) || HAS(MLP_DOWN) || HAS(FINAL_NORM) || RESID(p))
        add(out, PDBX_BUF_HIDDEN, A, T * h * es, 1);
    if (HAS(INPUT_NORM) || HAS(ATTN_Q) || HAS(ATTN_K) || HAS(ATTN_V))
        add(out, PDBX_BUF_NORM_OUT, A, T * h * es, 1);
    if (HAS(ATTN_Q) || HAS(ATTN_ROPE) || HAS(ATTN_CORE)) add(out, PDBX_BUF_Q, A, T * qd * es, 1);
    if (HAS(ATTN_K) || HAS(ATTN_ROPE) || HAS(ATTN_CORE)) add(out, PDBX_BUF_K, A, T * kvd * es, 1);
    if (HAS(ATTN_V) || HAS(ATTN_CORE)) add(out, PDBX_BUF_V, A, T * kvd * es, 1);
    if (HAS(ATTN_CORE) && !p->flash_attention)
        add(out, PDBX_BUF_SCORES, A, (double)p->mbs * heads * p->seq_len * (double)p->seq_len * es, 1);
    if (HAS(ATTN_CORE) && p->flash_attention && (p->passes & PDBX_PASS_BIT(PDBX_PASS_BWD)))
        add(out, PDBX_BUF_ATTN_LSE, A, (double)p->mbs * heads * p->seq_len * 4, 1);
    if (HAS(ATTN_CORE) || HAS(ATTN_O)) add(out, PDBX_BUF_CONTEXT, A, T * qd * es, 1);
    if (HAS(ATTN_O) || HAS(POST_ATTN_NORM) || RESID(p)) add(out, PDBX_BUF_ATTN_OUT, A, T * h * es, 1);
    if (HAS(POST_ATTN_NORM) || HAS(MLP_GATE) || HAS(MLP_UP))
        add(out, PDBX_BUF_POST_NORM_OUT, A, T * h * es, 1);
    if (HAS(ATTN_ROPE)) add(out, PDBX_BUF_ROPE_TABLE, A, rope_table_bytes(p), 1);
    if (HAS(MLP_GATE) || HAS(MLP_ACT_FN)) add(out, PDBX_BUF_GATE, A, T * I * es, 1);
    if (HAS(MLP_UP) || HAS(MLP_ACT_FN)) add(out, PDBX_BUF_UP, A, T * I * es, 1);
    if (HAS(MLP_ACT_FN) || HAS(MLP_DOWN)) add(out, PDBX_BUF_ACT, A, T * I * es, 1);
    if (HAS(FINAL_NORM) || HAS(LM_HEAD)) add(out, PDBX_BUF_FINAL_NORM_OUT, A, T * h * es, 1);
    if (HAS(FINAL_NORM)) add(out, PDBX_BUF_NORM_W, W, h * es, 1);
    if (HAS(LM_HEAD)) add(out, PDBX_BUF_LOGITS, A, T * V * es, 1);
    if (HAS(LM_HEAD) && !tied) add(out, PDBX_BUF_LM_HEAD_W, W, V * h * es, 1);
    /* per-layer weights: layers x the rotating copies (pdbx_cuda_weight_copies) */
    const int L = sets;
    if (HAS(INPUT_NORM)) add(out, PDBX_BUF_L_IN_NORM, W, h * es, L);
    if (HAS(ATTN_Q)) add(out, PDBX_BUF_L_Q, W, qd * h * es, L);
    if (HAS(ATTN_K)) add(out, PDBX_BUF_L_K, W, kvd * h * es, L);
    if (HAS(ATTN_V)) add(out, PDBX_BUF_L_V, W, kvd * h * es, L);
    if (HAS(ATTN_O)) add(out, PDBX_BUF_L_O, W, qd * h * es, L);
    if (HAS(POST_ATTN_NORM)) add(out, PDBX_BUF_L_POST_NORM, W, h * es, L);
    if (HAS(MLP_GATE)) add(out, PDBX_BUF_L_GATE, W, I * h * es, L);
    if (HAS(MLP_UP)) add(out, PDBX_BUF_L_UP, W, I * h * es, L);
    if (HAS(MLP_DOWN)) add(out, PDBX_BUF_L_DOWN, W, I * h * es, L);
    biases(p, out, exact, es, L);
    add(out, PDBX_BUF_GEMM_WORKSPACE, PDBX_MEM_WORKSPACE, CUDA_GEMM_WORKSPACE, 1);
}

/* cuda_backward.c's gradient buffers (passes with bwd; its grad_bufs table): the gradient of an
 * activation in the dtype, allocated when an op whose backward reads or writes it is
 * prepared; the backward of the unfused attention core keeps the forward's probabilities (the
 * scores buffer) and needs dP/dS of the same size, the fused one (flash_attention) needs the
 * rows' delta and, for bf16/fp16, an fp32 dQ accumulator; the norms' backward keeps each row's rstd
 * (fp32) between its dx and dweight kernels; weight gradients fp32. */
static void cuda_grad_list(const pdbx_profile_point *p, pdbx_profile_memory *out)
{
    if (!(p->passes & PDBX_PASS_BIT(PDBX_PASS_BWD)))
        return;
    const double es = p->dtype == PDBX_DTYPE_FP32 ? 4 : 2;
    const double T = (double)p->mbs * p->seq_len, h = p->model.hidden;
    const double heads = p->model.heads / p->tp, kv = plan_kv_heads_per_rank(&p->model, p->tp);
    const double qd = heads * p->model.head_dim, kvd = kv * p->model.head_dim;
    const double I = p->model.intermediate / p->tp;
    const double V = (p->model.vocab + p->tp - 1) / p->tp;
    const pdbx_mem_kind G = PDBX_MEM_GRADS;
    if (HAS(EMBED) || HAS(INPUT_NORM) || HAS(MLP_DOWN) || HAS(FINAL_NORM) || RESID(p))
        add(out, PDBX_BUF_GRAD_HIDDEN, G, T * h * es, 1);
    if (HAS(INPUT_NORM) || HAS(ATTN_Q) || HAS(ATTN_K) || HAS(ATTN_V))
        add(out, PDBX_BUF_GRAD_NORM_OUT, G, T * h * es, 1);
    if (HAS(ATTN_Q) || HAS(ATTN_ROPE) || HAS(ATTN_CORE)) add(out, PDBX_BUF_GRAD_Q, G, T * qd * es, 1);
    if (HAS(ATTN_K) || HAS(ATTN_ROPE) || HAS(ATTN_CORE)) add(out, PDBX_BUF_GRAD_K, G, T * kvd * es, 1);
    if (HAS(ATTN_V) || HAS(ATTN_CORE)) add(out, PDBX_BUF_GRAD_V, G, T * kvd * es, 1);
    if (HAS(ATTN_CORE) && !p->flash_attention)
        add(out, PDBX_BUF_GRAD_SCORES, G, (double)p->mbs * heads * p->seq_len * (double)p->seq_len * es, 1);
    if (HAS(ATTN_CORE) && p->flash_attention) {
        add(out, PDBX_BUF_ATTN_DELTA, PDBX_MEM_WORKSPACE, (double)p->mbs * heads * p->seq_len * 4, 1);
        if (es == 2)
            add(out, PDBX_BUF_GRAD_Q_ACC, PDBX_MEM_WORKSPACE, T * qd * 4, 1);
    }
    if (HAS(ATTN_CORE) || HAS(ATTN_O)) add(out, PDBX_BUF_GRAD_CONTEXT, G, T * qd * es, 1);
    if (HAS(ATTN_O) || HAS(POST_ATTN_NORM) || RESID(p)) add(out, PDBX_BUF_GRAD_ATTN_OUT, G, T * h * es, 1);
    if (HAS(POST_ATTN_NORM) || HAS(MLP_GATE) || HAS(MLP_UP))
        add(out, PDBX_BUF_GRAD_POST_NORM_OUT, G, T * h * es, 1);
    if (HAS(MLP_GATE) || HAS(MLP_ACT_FN)) add(out, PDBX_BUF_GRAD_GATE, G, T * I * es, 1);
    if (HAS(MLP_UP) || HAS(MLP_ACT_FN)) add(out, PDBX_BUF_GRAD_UP, G, T * I * es, 1);
    if (HAS(MLP_ACT_FN) || HAS(MLP_DOWN)) add(out, PDBX_BUF_GRAD_ACT, G, T * I * es, 1);
    if (HAS(FINAL_NORM) || HAS(LM_HEAD)) add(out, PDBX_BUF_GRAD_FINAL_NORM_OUT, G, T * h * es, 1);
    if (HAS(LM_HEAD)) add(out, PDBX_BUF_GRAD_LOGITS, G, T * V * es, 1);
    if (HAS(INPUT_NORM) || HAS(POST_ATTN_NORM) || HAS(FINAL_NORM))
        add(out, PDBX_BUF_NORM_RSTD, PDBX_MEM_WORKSPACE, T * 4, 1);
    weight_grads(p, out, 0);
}
#undef HAS


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
    double (*sz)(double) = cpu ? lines : exact;
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
            add(out, groups[g].in, PDBX_MEM_ACTIVATIONS, sz(T * h * e), 1);
        add(out, groups[g].outb, PDBX_MEM_ACTIVATIONS, sz(T * groups[g].n * y), 1);
        add(out, groups[g].w, PDBX_MEM_WEIGHTS, sz(h * groups[g].n * e), sets);
        if (groups[g].has_bias)   /* cpu: fp32 as its GEMM output; cuda: the dtype */
            add(out, groups[g].bias, PDBX_MEM_WEIGHTS, sz(groups[g].n * y), sets);
        if (!bwd)
            continue;
        if (groups[g].has_bias)
            add(out, groups[g].grad_bias, PDBX_MEM_GRADS, sz(groups[g].n * f), 1);
        if (!listed(out, groups[g].grad_in))
            add(out, groups[g].grad_in, PDBX_MEM_GRADS, sz(T * h * e), 1);
        add(out, groups[g].grad_out, PDBX_MEM_GRADS, sz(T * groups[g].n * e), 1);
        add(out, groups[g].grad_w, PDBX_MEM_GRADS, sz(h * groups[g].n * f), 1);
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
    const int sets = p->backend == PDBX_BACKEND_CPU ? p->layers : cuda_weight_sets(p);
    pdbx_profile_point sep = *p;
    if (p->fused_projections)
        sep.ops &= ~(pdbx_opmask)(QKV_OPS | FC1_OPS);
    if (p->backend == PDBX_BACKEND_CPU) {
        if (m->vocab % p->tp)
            return pdbx_fail(err, errlen, "profile memory: the cpu backend needs tp %d to divide "
                             "vocab_size %d", p->tp, m->vocab);
        cpu_list(&sep, out);
        cpu_grad_list(&sep, out);
    } else {
        cuda_list(&sep, sets, out);
        cuda_grad_list(&sep, out);
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
    pdbx_parallel par = { pt->tp, pt->pp, pt->dp };
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
