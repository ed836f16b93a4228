/* ops.c: op names, classes and the FASOP column mapping (see ops.h). */
#include "store/ops.h"

#include <string.h>

static const char *const op_names[PDBX_OP_COUNT] = {
    [PDBX_OP_EMBED] = "embed",
    [PDBX_OP_INPUT_NORM] = "input_norm",
    [PDBX_OP_ATTN_Q] = "attn_q",
    [PDBX_OP_ATTN_Q_A] = "attn_q_a",
    [PDBX_OP_ATTN_Q_NORM] = "attn_q_norm",
    [PDBX_OP_ATTN_Q_B] = "attn_q_b",
    [PDBX_OP_ATTN_K] = "attn_k",
    [PDBX_OP_ATTN_V] = "attn_v",
    [PDBX_OP_ATTN_KV_A] = "attn_kv_a",
    [PDBX_OP_ATTN_KV_NORM] = "attn_kv_norm",
    [PDBX_OP_ATTN_KV_B] = "attn_kv_b",
    [PDBX_OP_ATTN_QK_NORM] = "attn_qk_norm",
    [PDBX_OP_ATTN_ROPE] = "attn_rope",
    [PDBX_OP_ATTN_CORE] = "attn_core",
    [PDBX_OP_ATTN_O] = "attn_o",
    [PDBX_OP_TP_ALLREDUCE_ATTN] = "tp_allreduce_attn",
    [PDBX_OP_ATTN_RESIDUAL] = "attn_residual",
    [PDBX_OP_POST_ATTN_NORM] = "post_attn_norm",
    [PDBX_OP_MLP_GATE] = "mlp_gate",
    [PDBX_OP_MLP_UP] = "mlp_up",
    [PDBX_OP_MLP_ACT_FN] = "mlp_act_fn",
    [PDBX_OP_MLP_DOWN] = "mlp_down",
    [PDBX_OP_MOE_ROUTER] = "moe_router",
    [PDBX_OP_MOE_PERMUTE] = "moe_permute",
    [PDBX_OP_EP_DISPATCH] = "ep_dispatch",
    [PDBX_OP_MOE_EXPERT_GATE] = "moe_expert_gate",
    [PDBX_OP_MOE_EXPERT_UP] = "moe_expert_up",
    [PDBX_OP_MOE_EXPERT_ACT] = "moe_expert_act",
    [PDBX_OP_MOE_EXPERT_DOWN] = "moe_expert_down",
    [PDBX_OP_EP_COMBINE] = "ep_combine",
    [PDBX_OP_MOE_UNPERMUTE] = "moe_unpermute",
    [PDBX_OP_MOE_SHARED_GATE] = "moe_shared_gate",
    [PDBX_OP_MOE_SHARED_UP] = "moe_shared_up",
    [PDBX_OP_MOE_SHARED_ACT] = "moe_shared_act",
    [PDBX_OP_MOE_SHARED_DOWN] = "moe_shared_down",
    [PDBX_OP_TP_ALLREDUCE_MLP] = "tp_allreduce_mlp",
    [PDBX_OP_MLP_RESIDUAL] = "mlp_residual",
    [PDBX_OP_FINAL_NORM] = "final_norm",
    [PDBX_OP_LM_HEAD] = "lm_head",
    [PDBX_OP_LOSS] = "loss",
    [PDBX_OP_OPTIMIZER] = "optimizer",
};

const char *pdbx_op_name(pdbx_op op)
{
    return (op >= 0 && op < PDBX_OP_COUNT) ? op_names[op] : "?";
}

int pdbx_op_from_name(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < PDBX_OP_COUNT; i++)
        if (strcmp(op_names[i], name) == 0)
            return i;
    return -1;
}

const char *pdbx_pass_name(pdbx_pass p)
{
    return p == PDBX_PASS_FWD ? "fwd" : p == PDBX_PASS_BWD ? "bwd" : "?";
}

int pdbx_pass_from_name(const char *name)
{
    for (int p = 0; name && p < PDBX_PASS_COUNT; p++)
        if (strcmp(name, pdbx_pass_name((pdbx_pass)p)) == 0)
            return p;
    return -1;
}

int pdbx_op_is_per_layer(pdbx_op op)
{
    return op != PDBX_OP_EMBED && op != PDBX_OP_FINAL_NORM && op != PDBX_OP_LM_HEAD &&
           op != PDBX_OP_LOSS && op != PDBX_OP_OPTIMIZER;
}

int pdbx_op_in_model_fwd(pdbx_op op)
{
    return op != PDBX_OP_LOSS && op != PDBX_OP_OPTIMIZER;
}

int pdbx_op_has_bwd(pdbx_op op)
{
    return op != PDBX_OP_OPTIMIZER;
}

int pdbx_op_is_gemm(pdbx_op op)
{
    switch (op) {
    case PDBX_OP_ATTN_Q: case PDBX_OP_ATTN_K: case PDBX_OP_ATTN_V: case PDBX_OP_ATTN_O:
    case PDBX_OP_MLP_GATE: case PDBX_OP_MLP_UP: case PDBX_OP_MLP_DOWN: case PDBX_OP_LM_HEAD:
    case PDBX_OP_ATTN_Q_A: case PDBX_OP_ATTN_Q_B: case PDBX_OP_ATTN_KV_A: case PDBX_OP_ATTN_KV_B:
    case PDBX_OP_MOE_ROUTER: case PDBX_OP_MOE_EXPERT_GATE: case PDBX_OP_MOE_EXPERT_UP:
    case PDBX_OP_MOE_EXPERT_DOWN: case PDBX_OP_MOE_SHARED_GATE: case PDBX_OP_MOE_SHARED_UP:
    case PDBX_OP_MOE_SHARED_DOWN:
        return 1;
    default:
        return 0;
    }
}

int pdbx_op_is_comm(pdbx_op op)
{
    return op == PDBX_OP_TP_ALLREDUCE_ATTN || op == PDBX_OP_TP_ALLREDUCE_MLP ||
           op == PDBX_OP_EP_DISPATCH || op == PDBX_OP_EP_COMBINE;
}

int pdbx_op_is_tp_allreduce(pdbx_op op)
{
    return op == PDBX_OP_TP_ALLREDUCE_ATTN || op == PDBX_OP_TP_ALLREDUCE_MLP;
}

int pdbx_op_is_moe(pdbx_op op)
{
    return op >= PDBX_OP_MOE_ROUTER && op <= PDBX_OP_MOE_SHARED_DOWN;
}

static const char *const fasop_cols[PDBX_FASOP_COLS] = {
    "embed", "attn_q", "attn_k", "attn_v", "attn_o",
    "mlp_gate", "mlp_act_fn", "mlp_up", "mlp_down", "lm_head",
};

const char *pdbx_fasop_col_name(int col)
{
    return (col >= 0 && col < PDBX_FASOP_COLS) ? fasop_cols[col] : "?";
}

/* FASOP times each module from the end of the previous one. In execution order
 *   [ar_mlp mlp_residual of the previous layer] input_norm q k v [qk_norm] rope core o ar_attn
 *   attn_residual post_norm gate up act down
 * the unnamed work before a module lands in its column: the previous layer's MLP all-reduce,
 * its residual add and the input norm go to attn_q, qk_norm, RoPE and the attention core to
 * attn_o, the
 * attention all-reduce, its residual add and the post-attention norm to mlp_gate, the final
 * norm to lm_head. Every layer op is then in
 * exactly one column, so a row's layer columns sum to the layer's forward time. */
pdbx_opmask pdbx_fasop_col_ops(int col, int fasop)
{
    static const pdbx_op own[PDBX_FASOP_COLS] = {
        PDBX_OP_EMBED, PDBX_OP_ATTN_Q, PDBX_OP_ATTN_K, PDBX_OP_ATTN_V, PDBX_OP_ATTN_O,
        PDBX_OP_MLP_GATE, PDBX_OP_MLP_ACT_FN, PDBX_OP_MLP_UP, PDBX_OP_MLP_DOWN, PDBX_OP_LM_HEAD,
    };
    if (col < 0 || col >= PDBX_FASOP_COLS)
        return 0;
    pdbx_opmask mask = PDBX_OP_BIT(own[col]);
    if (!fasop)
        return mask;
    switch (own[col]) {
    case PDBX_OP_ATTN_Q:
        return mask | PDBX_OP_BIT(PDBX_OP_TP_ALLREDUCE_MLP) | PDBX_OP_BIT(PDBX_OP_MLP_RESIDUAL) |
               PDBX_OP_BIT(PDBX_OP_INPUT_NORM);
    case PDBX_OP_ATTN_O:
        return mask | PDBX_OP_BIT(PDBX_OP_ATTN_QK_NORM) | PDBX_OP_BIT(PDBX_OP_ATTN_ROPE) |
               PDBX_OP_BIT(PDBX_OP_ATTN_CORE);
    case PDBX_OP_MLP_GATE:
        return mask | PDBX_OP_BIT(PDBX_OP_TP_ALLREDUCE_ATTN) | PDBX_OP_BIT(PDBX_OP_ATTN_RESIDUAL) |
               PDBX_OP_BIT(PDBX_OP_POST_ATTN_NORM);
    case PDBX_OP_LM_HEAD:
        return mask | PDBX_OP_BIT(PDBX_OP_FINAL_NORM);
    default:
        return mask;
    }
}
