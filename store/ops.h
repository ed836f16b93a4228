/* ops.h: the operators a sweep point measures, their names in files, their execution order
 * and the FASOP column mapping. Shared vocabulary of engine/, store/ and tui/.
 *
 * Contract:
 *  - pdbx_op values are in forward execution order of one decoder layer, with the
 *    once-per-step ops (embed before, final_norm and lm_head after) around the layer ops. Not
 *    every model has every op (a Llama has no attn_qk_norm, a plain MLP no mlp_gate: the
 *    planner's pdbx_model_ops says which).
 *  - pdbx_op_name() is the stable spelling used in events, CSV headers and JSON output;
 *    pdbx_op_from_name() is its inverse (-1 when unknown).
 *  - FASOP NPZ columns: PDBX_FASOP_COLS columns in FASOP's order. Under "fasop" attribution a
 *    column also carries the ops FASOP's module timing folds into it (norms, the attention core
 *    and TP all-reduces land in the following module), so a row's layer columns sum to the
 *    layer's forward time; under "pure" attribution a column is its own op only.
 */
#ifndef PDBX_OPS_H
#define PDBX_OPS_H

#include <stdint.h>

typedef enum {
    PDBX_OP_EMBED = 0,          /* once per step: vocab-parallel gather of T rows */
    PDBX_OP_INPUT_NORM,         /* per layer: RMSNorm [T,h] */
    PDBX_OP_ATTN_Q,             /* GEMM [T,h] x [h, a*d/TP] (MLA without a q low rank: d = nope +
                                 * rope head dim) */
    PDBX_OP_ATTN_Q_A,           /* MLA (DeepSeek) with q_lora_rank r_q: GEMM [T,h] x [h, r_q] */
    PDBX_OP_ATTN_Q_NORM,        /* MLA: RMSNorm [T, r_q] */
    PDBX_OP_ATTN_Q_B,           /* MLA: GEMM [T, r_q] x [r_q, a/TP * (nope + rope)] */
    PDBX_OP_ATTN_K,             /* GEMM [T,h] x [h, max(k/TP,1)*d] */
    PDBX_OP_ATTN_V,
    PDBX_OP_ATTN_KV_A,          /* MLA: GEMM [T,h] x [h, r_kv + rope] (the latent and k's shared
                                 * rope part) */
    PDBX_OP_ATTN_KV_NORM,       /* MLA: RMSNorm [T, r_kv] */
    PDBX_OP_ATTN_KV_B,          /* MLA: GEMM [T, r_kv] x [r_kv, a/TP * (nope + v)] */
    PDBX_OP_ATTN_QK_NORM,       /* qk_norm models (qwen3): RMSNorm of each head of q [T, a/TP, d]
                                 * and k [T, max(k/TP,1), d] over its d, before RoPE */
    PDBX_OP_ATTN_ROPE,          /* rotary embedding of q [T, a/TP, d] and k [T, max(k/TP,1), d]
                                 * in place (rotate-half, a cos/sin table of seq_len positions) */
    PDBX_OP_ATTN_CORE,          /* causal softmax(QK^T)V over a/TP heads */
    PDBX_OP_ATTN_O,             /* GEMM [T, a*d/TP] x [a*d/TP, h] */
    PDBX_OP_TP_ALLREDUCE_ATTN,  /* TP all-reduce of [T,h] after attn_o (TP > 1 only) */
    PDBX_OP_ATTN_RESIDUAL,      /* hidden += attention output, [T,h] */
    PDBX_OP_POST_ATTN_NORM,     /* RMSNorm [T,h] */
    PDBX_OP_MLP_GATE,           /* GEMM [T,h] x [h, I/TP] */
    PDBX_OP_MLP_UP,             /* GEMM [T,h] x [h, I/TP] */
    PDBX_OP_MLP_ACT_FN,         /* SiLU(gate) * up over [T, I/TP] */
    PDBX_OP_MLP_DOWN,           /* GEMM [T, I/TP] x [I/TP, h] */
    /* mixture of experts (a MoE layer's MLP; a dense layer of the same model keeps mlp_*):
     * R = the rank's MoE rows (plan_moe.h), E_l its local experts, n_e the rows of expert e */
    PDBX_OP_MOE_ROUTER,         /* GEMM [R,h] x [h,E], scores (softmax or sigmoid), top-k */
    PDBX_OP_MOE_PERMUTE,        /* rows grouped by expert: [R*k, h] */
    PDBX_OP_EP_DISPATCH,        /* EP all-to-all of the permuted rows (EP > 1 only) */
    PDBX_OP_MOE_EXPERT_GATE,    /* per local expert: GEMM [n_e,h] x [h,I_e] */
    PDBX_OP_MOE_EXPERT_UP,
    PDBX_OP_MOE_EXPERT_ACT,     /* act(gate) * up over each expert's [n_e, I_e] */
    PDBX_OP_MOE_EXPERT_DOWN,    /* per local expert: GEMM [n_e,I_e] x [I_e,h] */
    PDBX_OP_EP_COMBINE,         /* EP all-to-all back to the tokens' ranks (EP > 1 only) */
    PDBX_OP_MOE_UNPERMUTE,      /* the top-k outputs of each token, weighted and summed: [R,h] */
    PDBX_OP_MOE_SHARED_GATE,    /* shared experts (DeepSeek, Qwen-MoE): a dense gated MLP of
                                 * width I_s/TP over the layer's T rows */
    PDBX_OP_MOE_SHARED_UP,
    PDBX_OP_MOE_SHARED_ACT,
    PDBX_OP_MOE_SHARED_DOWN,
    PDBX_OP_TP_ALLREDUCE_MLP,   /* TP all-reduce of [T,h] after mlp_down (TP > 1 only) */
    PDBX_OP_MLP_RESIDUAL,       /* hidden += MLP output, [T,h] */
    PDBX_OP_FINAL_NORM,         /* once per step: RMSNorm [T,h] */
    PDBX_OP_LM_HEAD,            /* once per step: GEMM [T,h] x [h, V/TP] */
    PDBX_OP_LOSS,               /* once per step, training sweeps only: cross-entropy over the
                                 * rank's vocabulary shard [T, V/TP] of lm_head's logits (the
                                 * local work of Megatron's vocab_parallel_cross_entropy: row max,
                                 * sum of exponentials, the target's logit; the backward softmax
                                 * minus one-hot in place); its TP all-reduces of T floats are
                                 * not in the cell. After the step's forward (not in its span) */
    PDBX_OP_OPTIMIZER,          /* once per step, after the backward: AdamW over one layer's
                                 * parameters on the rank (n = planner's layer parameters at the
                                 * point's TP and EP; fp32 master weights, m, v and main gradient,
                                 * Megatron's layout; a 16-bit run also writes the model's 16-bit
                                 * copy). Only with a backward pass; one cell, filed under fwd:
                                 * the step is neither pass (pdbx_op_has_bwd) */
    PDBX_OP_COUNT
} pdbx_op;

/* A set of ops: bit PDBX_OP_BIT(op) for each op. 64 bits: the op list is meant to grow past 32
 * (mixture-of-experts, MLA and the other families' ops). */
typedef uint64_t pdbx_opmask;
#define PDBX_OP_BIT(op) (UINT64_C(1) << (op))
#define PDBX_OPS_ALL ((UINT64_C(1) << PDBX_OP_COUNT) - 1u)
/* MLA's own ops (attn_q_a .. attn_kv_b, not attn_k/attn_v between them) */
#define PDBX_OPS_MLA (PDBX_OP_BIT(PDBX_OP_ATTN_Q_A) | PDBX_OP_BIT(PDBX_OP_ATTN_Q_NORM) |              \
                      PDBX_OP_BIT(PDBX_OP_ATTN_Q_B) | PDBX_OP_BIT(PDBX_OP_ATTN_KV_A) |               \
                      PDBX_OP_BIT(PDBX_OP_ATTN_KV_NORM) | PDBX_OP_BIT(PDBX_OP_ATTN_KV_B))
/* a MoE layer's ops (moe_router .. moe_shared_down, the EP all-to-alls among them), and its
 * shared experts' */
#define PDBX_OPS_MOE ((PDBX_OP_BIT(PDBX_OP_MOE_SHARED_DOWN + 1) - 1u) & ~(PDBX_OP_BIT(PDBX_OP_MOE_ROUTER) - 1u))
#define PDBX_OPS_MOE_SHARED ((PDBX_OP_BIT(PDBX_OP_MOE_SHARED_DOWN + 1) - 1u) &                     \
                             ~(PDBX_OP_BIT(PDBX_OP_MOE_SHARED_GATE) - 1u))
/* a dense Llama layer's ops (and the once-per-step ones) */
#define PDBX_OPS_LLAMA (PDBX_OPS_ALL & ~(PDBX_OP_BIT(PDBX_OP_ATTN_QK_NORM) | PDBX_OPS_MLA | PDBX_OPS_MOE))

const char *pdbx_op_name(pdbx_op op);
int pdbx_op_from_name(const char *name);      /* -1 when unknown */
int pdbx_op_is_per_layer(pdbx_op op);         /* 0 for embed, final_norm, lm_head, loss, optimizer */
int pdbx_op_has_bwd(pdbx_op op);              /* 0 for the optimizer (its one cell is fwd's) */
/* 1 for the ops of the model's forward (the step span's, a trace's, a share of the total's), 0
 * for training's own work around it: the loss and the optimizer */
int pdbx_op_in_model_fwd(pdbx_op op);
int pdbx_op_is_gemm(pdbx_op op);
int pdbx_op_is_comm(pdbx_op op);              /* the two TP all-reduces, the EP all-to-alls */
int pdbx_op_is_moe(pdbx_op op);
int pdbx_op_is_tp_allreduce(pdbx_op op);      /* tp_allreduce_attn, tp_allreduce_mlp */               /* moe_* and ep_*: a MoE layer's MLP */

/* The passes of an op a sweep measures: forward, and backward (the gradients of its inputs
 * and weights: dgrad and wgrad GEMMs, norm/activation/attention backward, the embedding's
 * gradient scatter). */
typedef enum { PDBX_PASS_FWD = 0, PDBX_PASS_BWD, PDBX_PASS_COUNT } pdbx_pass;
#define PDBX_PASS_BIT(p) (UINT32_C(1) << (p))
const char *pdbx_pass_name(pdbx_pass p);      /* "fwd", "bwd"; "?" */
int pdbx_pass_from_name(const char *name);    /* -1 when unknown */

#define PDBX_FASOP_COLS 10
/* FASOP's column names in order: embed, attn_q, attn_k, attn_v, attn_o, mlp_gate,
 * mlp_act_fn, mlp_up, mlp_down, lm_head. */
const char *pdbx_fasop_col_name(int col);
/* The ops summed into FASOP column `col`: fasop=1 gives FASOP's attribution, fasop=0 the
 * pure per-op one. Returned as a PDBX_OP_BIT mask. */
pdbx_opmask pdbx_fasop_col_ops(int col, int fasop);

#endif
