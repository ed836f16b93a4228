/* cuda_bufs.c: the point's buffers of cuda_bufs.h: per slot the ops that read or write it,
 * how it is filled, and the exceptions the model's kinds and the point's path make. */
#include "engine/backends/cuda/cuda_bufs.h"

#include "engine/backends/cuda/cuda_attention.h"
#include "engine/backends/cuda/cuda_mla.h"

#define OB(op) PDBX_OP_BIT(PDBX_OP_##op)
#define NORMS (OB(INPUT_NORM) | OB(POST_ATTN_NORM) | OB(FINAL_NORM))
/* the readers of xn and of q and k besides a Llama's (qk_norm, MLA: cuda_mla.h) */
#define XN_MLA (OB(ATTN_Q_A) | OB(ATTN_KV_A))
#define QK_MORE (OB(ATTN_QK_NORM) | OB(ATTN_Q_B))
/* a MoE layer's ops that read yn (B_XN2) and write x (B_X) */
#define MOE_IN (OB(MOE_ROUTER) | OB(MOE_PERMUTE) | OB(MOE_SHARED_GATE) | OB(MOE_SHARED_UP))
#define MOE_OUT (OB(MOE_UNPERMUTE) | OB(MOE_SHARED_DOWN))
#define MOE_ROUTE (OB(MOE_PERMUTE) | OB(MOE_UNPERMUTE))   /* the assignment and its index */

typedef struct {
    const char *name;
    pdbx_opmask ops;   /* the ops that read or write it: allocated when any of them is prepared */
    int fill;
} buf_desc;

static const buf_desc global_bufs[B_COUNT] = {
    [B_IDS] = {"token_ids", OB(EMBED), CUDA_FILL_IDS},
    [B_EMBED] = {"embed_table", OB(EMBED), CUDA_FILL_WEIGHT},   /* + lm_head when tied */
    [B_X] = {"hidden", OB(EMBED) | OB(INPUT_NORM) | OB(MLP_DOWN) | OB(FINAL_NORM) | OB(ATTN_RESIDUAL) |
             OB(MLP_RESIDUAL) | MOE_OUT, CUDA_FILL_ACT},
    [B_XN] = {"input_norm_out", OB(INPUT_NORM) | OB(ATTN_Q) | OB(ATTN_K) | OB(ATTN_V) | CUDA_FUSED_QKV |
              XN_MLA, CUDA_FILL_ACT},
    [B_Q] = {"q", OB(ATTN_Q) | OB(ATTN_ROPE) | OB(ATTN_CORE) | QK_MORE, CUDA_FILL_ACT},
    [B_K] = {"k", OB(ATTN_K) | OB(ATTN_ROPE) | OB(ATTN_CORE) | OB(ATTN_QK_NORM), CUDA_FILL_ACT},
    [B_V] = {"v", OB(ATTN_V) | OB(ATTN_CORE), CUDA_FILL_ACT},
    [B_SCORES] = {"attn_scores", OB(ATTN_CORE), CUDA_FILL_ACT},
    [B_CTX] = {"attn_context", OB(ATTN_CORE) | OB(ATTN_O), CUDA_FILL_ACT},
    [B_ATTN_OUT] = {"attn_out", OB(ATTN_O) | OB(POST_ATTN_NORM) | OB(ATTN_RESIDUAL) | OB(MLP_RESIDUAL),
                    CUDA_FILL_ACT},
    [B_XN2] = {"post_attn_norm_out", OB(POST_ATTN_NORM) | OB(MLP_GATE) | OB(MLP_UP) | CUDA_FUSED_FC1 | MOE_IN,
               CUDA_FILL_ACT},
    [B_GATE] = {"mlp_gate_out", OB(MLP_GATE) | OB(MLP_ACT_FN), CUDA_FILL_ACT},
    [B_UP] = {"mlp_up_out", OB(MLP_UP) | OB(MLP_ACT_FN), CUDA_FILL_ACT},
    [B_ACT] = {"mlp_act_out", OB(MLP_ACT_FN) | OB(MLP_DOWN), CUDA_FILL_ACT},
    [B_XF] = {"final_norm_out", OB(FINAL_NORM) | OB(LM_HEAD), CUDA_FILL_ACT},
    [B_FINAL_W] = {"final_norm_weight", OB(FINAL_NORM), CUDA_FILL_NORM_W},
    [B_LOGITS] = {"logits", OB(LM_HEAD), CUDA_FILL_ACT},
    [B_LM_W] = {"lm_head_weight", OB(LM_HEAD), CUDA_FILL_WEIGHT},   /* not when tied */
    [B_QKV] = {"qkv (fused)", CUDA_FUSED_QKV, CUDA_FILL_ACT},
    [B_FC1] = {"mlp_fc1_out (fused)", CUDA_FUSED_FC1, CUDA_FILL_ACT},
    [B_ROPE] = {"rope cos/sin table", OB(ATTN_ROPE), CUDA_FILL_ROPE},
    /* the fused forward's log-sum-exp for the fused backward (flash_attention with bwd only):
     * computed by a forward at prepare (cuda_bwd_prepare), rewritten by each timed forward */
    [B_LSE] = {"attn lse (fp32)", OB(ATTN_CORE), CUDA_FILL_ZERO32},
    [B_FINAL_B] = {"final_norm_bias", OB(FINAL_NORM), CUDA_FILL_BIAS},
    [B_POS] = {"position table", OB(EMBED), CUDA_FILL_BIAS},
    [B_NORM_MEAN] = {"norm mean (fp32)", NORMS, CUDA_FILL_STATS},
    [B_NORM_RSTD] = {"norm rstd (fp32)", NORMS, CUDA_FILL_STATS},
    [B_QK_NORM_W] = {"q/k norm weights", OB(ATTN_QK_NORM), CUDA_FILL_NORM_W},
    [B_MLA_QA] = {"mla q_a_out", OB(ATTN_Q_A) | OB(ATTN_Q_NORM), CUDA_FILL_ACT},
    [B_MLA_QAN] = {"mla q_norm_out", OB(ATTN_Q_NORM) | OB(ATTN_Q_B), CUDA_FILL_ACT},
    /* + attn_rope (MLA's reads k_pe and kv_b's output: global_uses) */
    [B_MLA_KVA] = {"mla kv_a_out", OB(ATTN_KV_A) | OB(ATTN_KV_NORM), CUDA_FILL_ACT},
    [B_MLA_KVN] = {"mla kv_norm_out", OB(ATTN_KV_NORM) | OB(ATTN_KV_B), CUDA_FILL_ACT},
    [B_MLA_KVB] = {"mla kv_b_out", OB(ATTN_KV_B), CUDA_FILL_ACT},
    [B_MLA_NORM_W] = {"mla q/kv norm weights", OB(ATTN_Q_NORM) | OB(ATTN_KV_NORM), CUDA_FILL_NORM_W},
    [B_MOE_LOGITS] = {"moe router logits", OB(MOE_ROUTER), CUDA_FILL_ACT},
    [B_MOE_TOPK_IDX] = {"moe top-k ids", OB(MOE_ROUTER), CUDA_FILL_ZERO_I32},
    [B_MOE_TOPK_W] = {"moe top-k weights (fp32)", OB(MOE_ROUTER) | OB(MOE_UNPERMUTE), CUDA_FILL_STATS},
    [B_MOE_ASSIGN] = {"moe assignment", MOE_ROUTE, CUDA_FILL_ZERO_I32},
    [B_MOE_OFFSETS] = {"moe expert offsets", MOE_ROUTE, CUDA_FILL_ZERO_I64},
    [B_MOE_POS] = {"moe copy positions", MOE_ROUTE, CUDA_FILL_ZERO_I64},
    [B_MOE_ROWS] = {"moe permuted rows", OB(MOE_PERMUTE) | OB(MOE_EXPERT_GATE) | OB(MOE_EXPERT_UP), CUDA_FILL_ACT},
    [B_MOE_GATE] = {"moe expert gate_out", OB(MOE_EXPERT_GATE) | OB(MOE_EXPERT_ACT), CUDA_FILL_ACT},
    [B_MOE_UP] = {"moe expert up_out", OB(MOE_EXPERT_UP) | OB(MOE_EXPERT_ACT), CUDA_FILL_ACT},
    [B_MOE_ACT] = {"moe expert act_out", OB(MOE_EXPERT_ACT) | OB(MOE_EXPERT_DOWN), CUDA_FILL_ACT},
    [B_MOE_OUT] = {"moe expert out", OB(MOE_EXPERT_DOWN) | OB(MOE_UNPERMUTE), CUDA_FILL_ACT},
    [B_MOE_SH_GATE] = {"moe shared gate_out", OB(MOE_SHARED_GATE) | OB(MOE_SHARED_ACT), CUDA_FILL_ACT},
    [B_MOE_SH_UP] = {"moe shared up_out", OB(MOE_SHARED_UP) | OB(MOE_SHARED_ACT), CUDA_FILL_ACT},
    [B_MOE_SH_ACT] = {"moe shared act_out", OB(MOE_SHARED_ACT) | OB(MOE_SHARED_DOWN), CUDA_FILL_ACT},
};

static const buf_desc layer_bufs[W_COUNT] = {
    [W_IN_NORM] = {"input_norm_weight", OB(INPUT_NORM), CUDA_FILL_NORM_W},
    [W_Q] = {"q_proj", OB(ATTN_Q), CUDA_FILL_WEIGHT},
    [W_K] = {"k_proj", OB(ATTN_K), CUDA_FILL_WEIGHT},
    [W_V] = {"v_proj", OB(ATTN_V), CUDA_FILL_WEIGHT},
    [W_O] = {"o_proj", OB(ATTN_O), CUDA_FILL_WEIGHT},
    [W_POST_NORM] = {"post_attn_norm_weight", OB(POST_ATTN_NORM), CUDA_FILL_NORM_W},
    [W_GATE] = {"gate_proj", OB(MLP_GATE), CUDA_FILL_WEIGHT},
    [W_UP] = {"up_proj", OB(MLP_UP), CUDA_FILL_WEIGHT},
    [W_DOWN] = {"down_proj", OB(MLP_DOWN), CUDA_FILL_WEIGHT},
    [W_QKV] = {"qkv_proj (fused)", CUDA_FUSED_QKV, CUDA_FILL_WEIGHT},
    [W_FC1] = {"fc1 (fused gate_proj, up_proj)", CUDA_FUSED_FC1, CUDA_FILL_WEIGHT},
    /* projection biases: where the op is prepared AND has a bias (bias_ops) */
    [W_BQ] = {"q_proj bias", OB(ATTN_Q), CUDA_FILL_BIAS},
    [W_BK] = {"k_proj bias", OB(ATTN_K), CUDA_FILL_BIAS},
    [W_BV] = {"v_proj bias", OB(ATTN_V), CUDA_FILL_BIAS},
    [W_BO] = {"o_proj bias", OB(ATTN_O), CUDA_FILL_BIAS},
    [W_BGATE] = {"gate_proj bias", OB(MLP_GATE), CUDA_FILL_BIAS},
    [W_BUP] = {"up_proj bias", OB(MLP_UP), CUDA_FILL_BIAS},
    [W_BDOWN] = {"down_proj bias", OB(MLP_DOWN), CUDA_FILL_BIAS},
    [W_BQKV] = {"qkv_proj bias (fused)", CUDA_FUSED_QKV, CUDA_FILL_BIAS},
    [W_BFC1] = {"fc1 bias (fused)", CUDA_FUSED_FC1, CUDA_FILL_BIAS},
    /* LayerNorm only */
    [W_IN_NORM_B] = {"input_norm_bias", OB(INPUT_NORM), CUDA_FILL_BIAS},
    [W_POST_NORM_B] = {"post_attn_norm_bias", OB(POST_ATTN_NORM), CUDA_FILL_BIAS},
    [W_Q_A] = {"q_a_proj", OB(ATTN_Q_A), CUDA_FILL_WEIGHT},
    [W_Q_B] = {"q_b_proj", OB(ATTN_Q_B), CUDA_FILL_WEIGHT},
    [W_KV_A] = {"kv_a_proj_with_mqa", OB(ATTN_KV_A), CUDA_FILL_WEIGHT},
    [W_KV_B] = {"kv_b_proj", OB(ATTN_KV_B), CUDA_FILL_WEIGHT},
    [W_MOE_ROUTER] = {"router", OB(MOE_ROUTER), CUDA_FILL_WEIGHT},
    [W_MOE_GATE] = {"experts gate_proj", OB(MOE_EXPERT_GATE), CUDA_FILL_WEIGHT},
    [W_MOE_UP] = {"experts up_proj", OB(MOE_EXPERT_UP), CUDA_FILL_WEIGHT},
    [W_MOE_DOWN] = {"experts down_proj", OB(MOE_EXPERT_DOWN), CUDA_FILL_WEIGHT},
    [W_MOE_SH_GATE] = {"shared experts gate_proj", OB(MOE_SHARED_GATE), CUDA_FILL_WEIGHT},
    [W_MOE_SH_UP] = {"shared experts up_proj", OB(MOE_SHARED_UP), CUDA_FILL_WEIGHT},
    [W_MOE_SH_DOWN] = {"shared experts down_proj", OB(MOE_SHARED_DOWN), CUDA_FILL_WEIGHT},
};

/* passes with bwd: the gradient of each activation (dtype), the RMSNorms' rstd (fp32) and one
 * set of weight gradients (fp32) shared by the layers */
static const buf_desc grad_bufs[G_COUNT] = {
    [G_X] = {"d hidden", OB(EMBED) | OB(INPUT_NORM) | OB(MLP_DOWN) | OB(FINAL_NORM) | OB(ATTN_RESIDUAL) |
             OB(MLP_RESIDUAL) | MOE_OUT, CUDA_FILL_ACT},
    [G_XN] = {"d input_norm_out", OB(INPUT_NORM) | OB(ATTN_Q) | OB(ATTN_K) | OB(ATTN_V) | CUDA_FUSED_QKV |
              XN_MLA, CUDA_FILL_ACT},
    [G_Q] = {"d q", OB(ATTN_Q) | OB(ATTN_ROPE) | OB(ATTN_CORE) | QK_MORE, CUDA_FILL_ACT},
    [G_K] = {"d k", OB(ATTN_K) | OB(ATTN_ROPE) | OB(ATTN_CORE) | OB(ATTN_QK_NORM), CUDA_FILL_ACT},
    [G_V] = {"d v", OB(ATTN_V) | OB(ATTN_CORE), CUDA_FILL_ACT},
    [G_SCORES] = {"d attn_scores", OB(ATTN_CORE), CUDA_FILL_ACT},   /* unfused only */
    [G_CTX] = {"d attn_context", OB(ATTN_CORE) | OB(ATTN_O), CUDA_FILL_ACT},
    /* post_attn_norm's dx: its input's gradient, the residual stream's (also with a parallel
     * residual, as the cpu's) */
    [G_ATTN_OUT] = {"d attn_out", OB(ATTN_O) | OB(POST_ATTN_NORM) | OB(ATTN_RESIDUAL) | OB(MLP_RESIDUAL),
                    CUDA_FILL_ACT},
    [G_XN2] = {"d post_attn_norm_out", OB(POST_ATTN_NORM) | OB(MLP_GATE) | OB(MLP_UP) | CUDA_FUSED_FC1 | MOE_IN,
               CUDA_FILL_ACT},
    [G_GATE] = {"d mlp_gate_out", OB(MLP_GATE) | OB(MLP_ACT_FN), CUDA_FILL_ACT},
    [G_UP] = {"d mlp_up_out", OB(MLP_UP) | OB(MLP_ACT_FN), CUDA_FILL_ACT},
    [G_ACT] = {"d mlp_act_out", OB(MLP_ACT_FN) | OB(MLP_DOWN), CUDA_FILL_ACT},
    [G_XF] = {"d final_norm_out", OB(FINAL_NORM) | OB(LM_HEAD), CUDA_FILL_ACT},
    [G_LOGITS] = {"d logits", OB(LM_HEAD), CUDA_FILL_ACT},
    [G_RSTD] = {"norm rstd", NORMS, CUDA_FILL_ZERO32},   /* RMSNorm's dx kernel -> dweight */
    [G_EMBED] = {"d embed_table", OB(EMBED), CUDA_FILL_ZERO32},   /* + lm_head when tied */
    [G_NORM_W] = {"d norm weight", NORMS, CUDA_FILL_ZERO32},
    [G_LM_W] = {"d lm_head weight", OB(LM_HEAD), CUDA_FILL_ZERO32},   /* not when tied */
    [G_WQ] = {"d q_proj", OB(ATTN_Q), CUDA_FILL_ZERO32},
    [G_WKV] = {"d k_proj, v_proj", OB(ATTN_K) | OB(ATTN_V), CUDA_FILL_ZERO32},
    [G_WO] = {"d o_proj", OB(ATTN_O), CUDA_FILL_ZERO32},
    [G_WGU] = {"d gate_proj, up_proj", OB(MLP_GATE) | OB(MLP_UP), CUDA_FILL_ZERO32},
    [G_WD] = {"d down_proj", OB(MLP_DOWN), CUDA_FILL_ZERO32},
    [G_QKV] = {"d qkv (fused)", CUDA_FUSED_QKV, CUDA_FILL_ACT},
    [G_FC1] = {"d mlp_fc1_out (fused)", CUDA_FUSED_FC1, CUDA_FILL_ACT},
    [G_WQKV] = {"d qkv_proj (fused)", CUDA_FUSED_QKV, CUDA_FILL_ZERO32},
    [G_WFC1] = {"d fc1 (fused)", CUDA_FUSED_FC1, CUDA_FILL_ZERO32},
    /* the projection biases' gradients: where the op is prepared and has a bias */
    [G_BQ] = {"d q_proj bias", OB(ATTN_Q), CUDA_FILL_ZERO32},
    [G_BKV] = {"d k_proj, v_proj bias", OB(ATTN_K) | OB(ATTN_V), CUDA_FILL_ZERO32},
    [G_BO] = {"d o_proj bias", OB(ATTN_O), CUDA_FILL_ZERO32},
    [G_BGU] = {"d gate_proj, up_proj bias", OB(MLP_GATE) | OB(MLP_UP), CUDA_FILL_ZERO32},
    [G_BD] = {"d down_proj bias", OB(MLP_DOWN), CUDA_FILL_ZERO32},
    [G_BQKV] = {"d qkv_proj bias (fused)", CUDA_FUSED_QKV, CUDA_FILL_ZERO32},
    [G_BFC1] = {"d fc1 bias (fused)", CUDA_FUSED_FC1, CUDA_FILL_ZERO32},
    /* flash_attention only: the fused backward's scratch */
    [G_DELTA] = {"attn delta (fp32)", OB(ATTN_CORE), CUDA_FILL_ZERO32},
    [G_DQ_ACC] = {"d q accumulator (fp32)", OB(ATTN_CORE), CUDA_FILL_ZERO32},
    [G_NORM_B] = {"d norm bias", NORMS, CUDA_FILL_ZERO32},   /* LayerNorm only */
    [G_POS] = {"d position table", OB(EMBED), CUDA_FILL_ZERO32},   /* learned positions only */
    [G_LOGITS_CAPPED] = {"d logits (capped)", OB(LM_HEAD), CUDA_FILL_ACT},   /* final cap only */
    [G_MLA_QA] = {"d mla q_a_out", OB(ATTN_Q_A) | OB(ATTN_Q_NORM), CUDA_FILL_ACT},
    [G_MLA_QAN] = {"d mla q_norm_out", OB(ATTN_Q_NORM) | OB(ATTN_Q_B), CUDA_FILL_ACT},
    [G_MLA_KVA] = {"d mla kv_a_out", OB(ATTN_KV_A) | OB(ATTN_KV_NORM), CUDA_FILL_ACT},   /* + rope */
    [G_MLA_KVN] = {"d mla kv_norm_out", OB(ATTN_KV_NORM) | OB(ATTN_KV_B), CUDA_FILL_ACT},
    [G_MLA_KVB] = {"d mla kv_b_out", OB(ATTN_KV_B), CUDA_FILL_ACT},   /* + rope */
    [G_QK_NORM_W] = {"d q/k norm weights", OB(ATTN_QK_NORM), CUDA_FILL_ZERO32},
    [G_MLA_NORM_W] = {"d mla q/kv norm weights", OB(ATTN_Q_NORM) | OB(ATTN_KV_NORM), CUDA_FILL_ZERO32},
    [G_W_Q_A] = {"d q_a_proj", OB(ATTN_Q_A), CUDA_FILL_ZERO32},
    [G_W_Q_B] = {"d q_b_proj", OB(ATTN_Q_B), CUDA_FILL_ZERO32},
    [G_W_KV_A] = {"d kv_a_proj_with_mqa", OB(ATTN_KV_A), CUDA_FILL_ZERO32},
    [G_W_KV_B] = {"d kv_b_proj", OB(ATTN_KV_B), CUDA_FILL_ZERO32},
    [G_MOE_LOGITS] = {"d moe router logits", OB(MOE_ROUTER), CUDA_FILL_ACT},
    [G_MOE_TOPK_W] = {"d moe top-k weights (fp32)", OB(MOE_ROUTER) | OB(MOE_UNPERMUTE), CUDA_FILL_STATS},
    [G_MOE_ROWS] = {"d moe permuted rows", OB(MOE_PERMUTE) | OB(MOE_EXPERT_GATE) | OB(MOE_EXPERT_UP), CUDA_FILL_ACT},
    [G_MOE_GATE] = {"d moe expert gate_out", OB(MOE_EXPERT_GATE) | OB(MOE_EXPERT_ACT), CUDA_FILL_ACT},
    [G_MOE_UP] = {"d moe expert up_out", OB(MOE_EXPERT_UP) | OB(MOE_EXPERT_ACT), CUDA_FILL_ACT},
    [G_MOE_ACT] = {"d moe expert act_out", OB(MOE_EXPERT_ACT) | OB(MOE_EXPERT_DOWN), CUDA_FILL_ACT},
    [G_MOE_OUT] = {"d moe expert out", OB(MOE_EXPERT_DOWN) | OB(MOE_UNPERMUTE), CUDA_FILL_ACT},
    [G_MOE_SH_GATE] = {"d moe shared gate_out", OB(MOE_SHARED_GATE) | OB(MOE_SHARED_ACT), CUDA_FILL_ACT},
    [G_MOE_SH_UP] = {"d moe shared up_out", OB(MOE_SHARED_UP) | OB(MOE_SHARED_ACT), CUDA_FILL_ACT},
    [G_MOE_SH_ACT] = {"d moe shared act_out", OB(MOE_SHARED_ACT) | OB(MOE_SHARED_DOWN), CUDA_FILL_ACT},
    [G_MOE_WROUTER] = {"d router", OB(MOE_ROUTER), CUDA_FILL_ZERO32},
    [G_MOE_WGU] = {"d experts gate_proj, up_proj", OB(MOE_EXPERT_GATE) | OB(MOE_EXPERT_UP), CUDA_FILL_ZERO32},
    [G_MOE_WD] = {"d experts down_proj", OB(MOE_EXPERT_DOWN), CUDA_FILL_ZERO32},
    [G_MOE_WSH_GU] = {"d shared gate_proj, up_proj", OB(MOE_SHARED_GATE) | OB(MOE_SHARED_UP), CUDA_FILL_ZERO32},
    [G_MOE_WSH_D] = {"d shared down_proj", OB(MOE_SHARED_DOWN), CUDA_FILL_ZERO32},
};

/* ---- which slots a point has ------------------------------------------------------------ */

/* The ops that make slot b (c: its table's entry) allocated at d, p: its table's, and the
 * exceptions. (The entry comes in rather than being looked up here: gcc 12 reports a false
 * array-bounds warning for the lookup once these are partially inlined.) */
static pdbx_opmask global_uses(const cuda_dims *d, const cuda_buf_path *p, int b, const buf_desc *c)
{
    const pdbx_opmask uses = c->ops;
    const cuda_attention_dims path = {.flash = p->flash};
    switch (b) {
    case B_EMBED: return d->tied ? uses | OB(LM_HEAD) : uses;
    case B_LM_W: return d->tied ? 0 : uses;
    case B_SCORES: return cuda_attention_needs_scores(&path) ? uses : 0;   /* fused: no scores */
    /* the fused backward reads it; the capped unfused forward writes it (its backward reads) */
    case B_LSE: return (p->flash && p->bwd) || (!p->flash && d->attn_softcap > 0.0f) ? uses : 0;
    /* a parallel residual's post_attn_norm reads the layer input, not the attention output */
    case B_X: return d->parallel_residual ? uses | OB(POST_ATTN_NORM) : uses;
    case B_ATTN_OUT: return d->parallel_residual ? uses & ~OB(POST_ATTN_NORM) : uses;
    case B_GATE: return d->mlp_plain ? uses & ~OB(MLP_ACT_FN) : uses;   /* act(up) reads no gate */
    case B_FINAL_B: case B_NORM_MEAN: case B_NORM_RSTD: return d->layernorm ? uses : 0;
    case B_POS: return d->pos_rows > 0 ? uses : 0;
    /* MLA's attn_rope rotates k_pe in kv_a's output and gathers k and v out of kv_b's */
    case B_MLA_KVA: case B_MLA_KVB: case B_V: return d->mla.on ? uses | OB(ATTN_ROPE) : uses;
    case B_QK_NORM_W: return d->qk_norm ? uses : 0;
    case B_MOE_SH_GATE: case B_MOE_SH_UP: case B_MOE_SH_ACT: return d->moe.Is > 0 ? uses : 0;
    default: return uses;
    }
}

static pdbx_opmask layer_uses(const cuda_dims *d, int w, const buf_desc *c)
{
    if (w == W_IN_NORM_B || w == W_POST_NORM_B)
        return d->layernorm ? c->ops : 0;
    if (w == W_MOE_SH_GATE || w == W_MOE_SH_UP || w == W_MOE_SH_DOWN)
        return d->moe.Is > 0 ? c->ops : 0;
    return c->fill == CUDA_FILL_BIAS ? c->ops & d->bias_ops : c->ops;   /* a projection's bias */
}

static pdbx_opmask grad_uses(const cuda_dims *d, const cuda_buf_path *p, int g, const buf_desc *c)
{
    const pdbx_opmask uses = c->ops;
    switch (g) {
    case G_SCORES: return p->flash ? 0 : uses;
    case G_DELTA: return p->flash ? uses : 0;
    case G_DQ_ACC: return p->flash && p->dtype != PDBX_DTYPE_FP32 ? uses : 0;   /* fp32: into d q */
    case G_EMBED: return d->tied ? uses | OB(LM_HEAD) : uses;
    case G_LM_W: return d->tied ? 0 : uses;
    case G_GATE: return d->mlp_plain ? uses & ~OB(MLP_ACT_FN) : uses;
    case G_RSTD: return d->layernorm ? 0 : uses;   /* LayerNorm's backward reads the forward's */
    case G_NORM_B: return d->layernorm ? uses : 0;
    case G_POS: return d->pos_rows > 0 ? uses : 0;
    case G_LOGITS_CAPPED: return d->final_softcap > 0.0f ? uses : 0;
    case G_MLA_KVA: case G_MLA_KVB: case G_V: return d->mla.on ? uses | OB(ATTN_ROPE) : uses;
    case G_QK_NORM_W: return d->qk_norm ? uses : 0;
    case G_MOE_SH_GATE: case G_MOE_SH_UP: case G_MOE_SH_ACT: case G_MOE_WSH_GU: case G_MOE_WSH_D:
        return d->moe.Is > 0 ? uses : 0;
    default: return g >= G_BQ && g <= G_BFC1 ? uses & d->bias_ops : uses;
    }
}

/* ---- sizes ----------------------------------------------------------------------------- */

/* A MoE layer's slot b, w or g (the others -1) in elements (cuda_moe_walk.h's dims); any other
 * slot past the dense ones is MLA's. */
static size_t moe_elems(const cuda_dims *d, int b, int w, int g)
{
    const cuda_moe_dims *m = &d->moe;
    const int64_t h = d->hidden, act = m->Xr * m->Ie, sh = d->tokens * m->Is;
    switch (b) {
    case B_MOE_LOGITS: return (size_t)(m->R * m->E);
    case B_MOE_TOPK_IDX: case B_MOE_TOPK_W: case B_MOE_ASSIGN: case B_MOE_POS: return (size_t)m->X;
    case B_MOE_OFFSETS: return (size_t)(m->E + 1);
    case B_MOE_ROWS: case B_MOE_OUT: return (size_t)(m->M * h);
    case B_MOE_GATE: case B_MOE_UP: case B_MOE_ACT: return (size_t)act;
    case B_MOE_SH_GATE: case B_MOE_SH_UP: case B_MOE_SH_ACT: return (size_t)sh;
    default: break;
    }
    switch (w) {
    case W_MOE_ROUTER: return (size_t)(m->E * h);
    case W_MOE_GATE: case W_MOE_UP: case W_MOE_DOWN: return (size_t)(m->El * m->Ie * h);
    case W_MOE_SH_GATE: case W_MOE_SH_UP: case W_MOE_SH_DOWN: return (size_t)(m->Is * h);
    default: break;
    }
    switch (g) {
    case G_MOE_LOGITS: return (size_t)(m->R * m->E);
    case G_MOE_WROUTER: return (size_t)(m->E * h);
    case G_MOE_TOPK_W: return (size_t)m->X;
    case G_MOE_ROWS: case G_MOE_OUT: return (size_t)(m->M * h);
    case G_MOE_GATE: case G_MOE_UP: case G_MOE_ACT: return (size_t)act;
    case G_MOE_SH_GATE: case G_MOE_SH_UP: case G_MOE_SH_ACT: return (size_t)sh;
    case G_MOE_WGU: case G_MOE_WD: return (size_t)(m->El * m->Ie * h);
    case G_MOE_WSH_GU: case G_MOE_WSH_D: return (size_t)(m->Is * h);
    default: return cuda_mla_elems(d, b, w, g);   /* MLA's and qk_norm's slots (cuda_mla.c) */
    }
}

static size_t global_elems(const cuda_dims *d, int b)
{
    const int64_t T = d->tokens, h = d->hidden, qd = d->heads * d->head_dim, kvd = d->kv_heads * d->head_dim;
    const int64_t vd = d->kv_heads * cuda_v_dim(d), ctxd = d->heads * cuda_v_dim(d);
    switch (b) {
    case B_IDS: case B_NORM_MEAN: case B_NORM_RSTD: return (size_t)T;
    case B_EMBED: case B_LM_W: return (size_t)(d->vocab * h);
    case B_X: case B_XN: case B_ATTN_OUT: case B_XN2: case B_XF: return (size_t)(T * h);
    case B_Q: return (size_t)(T * qd);
    case B_K: return (size_t)(T * kvd);
    case B_V: return (size_t)(T * vd);
    case B_CTX: return (size_t)(T * ctxd);
    case B_SCORES: {
        cuda_attention_dims a = {d->mbs, d->seq, d->heads, d->kv_heads, d->head_dim, PDBX_DTYPE_BF16, 0};
        return cuda_attention_scores_elems(&a);
    }
    case B_GATE: case B_UP: case B_ACT: return (size_t)(T * d->inter);
    case B_FINAL_W: case B_FINAL_B: return (size_t)h;
    case B_LOGITS: return (size_t)(T * d->vocab);
    case B_QKV: return (size_t)(T * (qd + 2 * kvd));
    case B_FC1: return (size_t)(T * 2 * d->inter);
    case B_ROPE: return (size_t)(2 * d->seq * (d->rot / 2));
    case B_LSE: return (size_t)(d->mbs * d->heads * d->seq);
    case B_POS: return (size_t)(d->pos_rows * h);
    default: return moe_elems(d, b, -1, -1);
    }
}

static size_t layer_elems(const cuda_dims *d, int w)
{
    const int64_t h = d->hidden, qd = d->heads * d->head_dim, kvd = d->kv_heads * d->head_dim;
    switch (w) {
    case W_IN_NORM: case W_POST_NORM: case W_IN_NORM_B: case W_POST_NORM_B: return (size_t)h;
    case W_Q: return (size_t)(qd * h);
    case W_O: return (size_t)(d->heads * cuda_v_dim(d) * h);
    case W_K: case W_V: return (size_t)(kvd * h);
    case W_GATE: case W_UP: case W_DOWN: return (size_t)(d->inter * h);
    case W_QKV: return (size_t)((qd + 2 * kvd) * h);
    case W_FC1: return (size_t)(2 * d->inter * h);
    case W_BQ: return (size_t)qd;
    case W_BK: case W_BV: return (size_t)kvd;
    case W_BO: case W_BDOWN: return (size_t)h;
    case W_BGATE: case W_BUP: return (size_t)d->inter;
    case W_BQKV: return (size_t)(qd + 2 * kvd);
    case W_BFC1: return (size_t)(2 * d->inter);
    default: return moe_elems(d, -1, w, -1);
    }
}

/* Elements of gradient buffer g (in the dtype for CUDA_FILL_ACT, fp32 for the others). */
static size_t grad_elems(const cuda_dims *d, int g)
{
    const int64_t T = d->tokens, h = d->hidden, qd = d->heads * d->head_dim,
                  kvd = d->kv_heads * d->head_dim, I = d->inter, V = d->vocab;
    const int64_t vd = d->kv_heads * cuda_v_dim(d), ctxd = d->heads * cuda_v_dim(d);
    switch (g) {
    case G_X: case G_XN: case G_ATTN_OUT: case G_XN2: case G_XF: return (size_t)(T * h);
    case G_Q: case G_DQ_ACC: return (size_t)(T * qd);
    case G_CTX: return (size_t)(T * ctxd);
    case G_K: return (size_t)(T * kvd);
    case G_V: return (size_t)(T * vd);
    case G_SCORES: return global_elems(d, B_SCORES);
    case G_GATE: case G_UP: case G_ACT: return (size_t)(T * I);
    case G_LOGITS: case G_LOGITS_CAPPED: return (size_t)(T * V);
    case G_RSTD: return (size_t)T;
    case G_EMBED: case G_LM_W: return (size_t)(V * h);
    case G_NORM_W: case G_NORM_B: case G_BO: case G_BD: return (size_t)h;
    case G_WQ: return (size_t)(qd * h);
    case G_WO: return (size_t)(ctxd * h);
    case G_WKV: return (size_t)(kvd * h);
    case G_WGU: case G_WD: return (size_t)(I * h);
    case G_QKV: return (size_t)(T * (qd + 2 * kvd));
    case G_FC1: return (size_t)(T * 2 * I);
    case G_WQKV: return (size_t)((qd + 2 * kvd) * h);
    case G_WFC1: return (size_t)(2 * I * h);
    case G_BQ: return (size_t)qd;
    case G_BKV: return (size_t)kvd;
    case G_BGU: return (size_t)I;
    case G_BQKV: return (size_t)(qd + 2 * kvd);
    case G_BFC1: return (size_t)(2 * I);
    case G_DELTA: return global_elems(d, B_LSE);
    case G_POS: return (size_t)(d->pos_rows * h);
    default: return moe_elems(d, -1, -1, g);
    }
}

static size_t dtype_size(pdbx_dtype dt)
{
    return dt == PDBX_DTYPE_FP32 ? 4 : 2;
}

/* The element size of a fill kind: the ids int32, the fp32 kinds, else the dtype. */
static size_t fill_elem_bytes(int fill, pdbx_dtype dt)
{
    switch (fill) {
    case CUDA_FILL_IDS: case CUDA_FILL_ZERO_I32: return sizeof(int32_t);
    case CUDA_FILL_ZERO_I64: return sizeof(int64_t);
    case CUDA_FILL_ROPE: case CUDA_FILL_STATS: case CUDA_FILL_ZERO32: return sizeof(float);
    default: return dtype_size(dt);
    }
}

static cuda_buf make(const buf_desc *desc, int used, size_t elems, pdbx_dtype dt)
{
    cuda_buf b = {desc->name, desc->fill, used, elems, 0};
    b.bytes = used ? elems * fill_elem_bytes(desc->fill, dt) : 0;
    return b;
}

static const buf_desc no_buf = {"(none)", CUDA_FILL_ACT, 0};

cuda_buf cuda_point_buf(const cuda_dims *d, const cuda_buf_path *p, int b)
{
    if (b < 0 || b >= B_COUNT)
        return make(&no_buf, 0, 0, p->dtype);
    const buf_desc *c = &global_bufs[b];
    return make(c, (global_uses(d, p, b, c) & d->ops) != 0, global_elems(d, b), p->dtype);
}

cuda_buf cuda_layer_buf(const cuda_dims *d, const cuda_buf_path *p, int w)
{
    if (w < 0 || w >= W_COUNT)
        return make(&no_buf, 0, 0, p->dtype);
    const buf_desc *c = &layer_bufs[w];
    return make(c, (layer_uses(d, w, c) & d->ops) != 0, layer_elems(d, w), p->dtype);
}

cuda_buf cuda_grad_buf(const cuda_dims *d, const cuda_buf_path *p, int g)
{
    if (g < 0 || g >= G_COUNT)
        return make(&no_buf, 0, 0, p->dtype);
    const buf_desc *c = &grad_bufs[g];
    return make(c, p->bwd && (grad_uses(d, p, g, c) & d->ops) != 0, grad_elems(d, g), p->dtype);
}

double cuda_layer_set_bytes(const cuda_dims *d, const cuda_buf_path *p)
{
    double bytes = 0;
    for (int w = 0; w < W_COUNT; w++)
        bytes += (double)cuda_layer_buf(d, p, w).bytes;
    return bytes;
}

double cuda_point_total_bytes(const cuda_dims *d, const cuda_buf_path *p, int sets)
{
    double bytes = (double)sets * cuda_layer_set_bytes(d, p);
    for (int b = 0; b < B_COUNT; b++)
        bytes += (double)cuda_point_buf(d, p, b).bytes;
    for (int g = 0; g < G_COUNT; g++)
        bytes += (double)cuda_grad_buf(d, p, g).bytes;
    return bytes;
}
