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
    PDBX_OP_ATTN_Q,             /* GEMM [T,h] x [h, a*d/TP] */
    PDBX_OP_ATTN_K,             /* GEMM [T,h] x [h, max(k/TP,1)*d] */
    PDBX_OP_ATTN_V,
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
    PDBX_OP_TP_ALLREDUCE_MLP,   /* TP all-reduce of [T,h] after mlp_down (TP > 1 only) */
    PDBX_OP_MLP_RESIDUAL,       /* hidden += MLP output, [T,h] */
    PDBX_OP_FINAL_NORM,         /* once per step: RMSNorm [T,h] */
    PDBX_OP_LM_HEAD,            /* once per step: GEMM [T,h] x [h, V/TP] */
    PDBX_OP_COUNT
} pdbx_op;

/* A set of ops: bit PDBX_OP_BIT(op) for each op. 64 bits: the op list is meant to grow past 32
 * (mixture-of-experts, MLA and the other families' ops). */
typedef uint64_t pdbx_opmask;
#define PDBX_OP_BIT(op) (UINT64_C(1) << (op))
#define PDBX_OPS_ALL ((UINT64_C(1) << PDBX_OP_COUNT) - 1u)

const char *pdbx_op_name(pdbx_op op);
int pdbx_op_from_name(const char *name);      /* -1 when unknown */
int pdbx_op_is_per_layer(pdbx_op op);         /* 0 for embed, final_norm, lm_head */
int pdbx_op_is_gemm(pdbx_op op);
int pdbx_op_is_comm(pdbx_op op);              /* the two TP all-reduces */

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
