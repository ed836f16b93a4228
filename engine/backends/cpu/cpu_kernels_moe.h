/* cpu_kernels_moe.h: the cpu backend's mixture-of-experts kernels, forward and backward, each a
 * pure piece the engine times as its own op: router scoring and top-k (cpu_kernels_moe.c),
 * permute and unpermute (cpu_kernels_moe_perm.c), the grouped expert MLP (cpu_kernels_moe_expert.c).
 *
 * Contract (as cpu_kernels.h and cpu_kernels_bwd.h):
 *  - Row-major float32, computed in fp32; no allocation (no kernel here needs a scratch); every
 *    element of every output written, or accumulated where stated. Weight gradients ACCUMULATE
 *    (+=), as Megatron's gradient-accumulation fusion adds into main_grad; input gradients are
 *    overwritten unless a kernel's dx_accumulate says otherwise. Outputs do not overlap inputs.
 *  - GEMMs go through OpenBLAS (cblas_sgemm, its own threads). Weights are [in, out] (Y = X W,
 *    as the backend's dense projections); an expert weight tensor is [experts, in, out], expert
 *    e's matrix at e*in*out. Every expert is its own GEMM with its own row count (a grouped GEMM
 *    as a loop, Megatron's SequentialMLP): an expert with no rows runs nothing.
 *  - The other kernels split their work over the pool (cpu_threads.h; NULL: the caller alone)
 *    in chunks of whole tokens (or rows) that pdbx_cpu_pool_for hands out; every output element
 *    is computed by one chunk with the same operations in the same order whatever the pool, so
 *    the result does not depend on the thread count (bit for bit). The router's top-k is not
 *    vectorised (an insertion per expert); its exps are (cpu_kernels_vec.h's pdbx_k_exp).
 *  - Token copies: idx [tokens, top_k] (int32 expert ids; a token's top_k distinct), copy
 *    c = t*top_k + j. pdbx_k_moe_route_index sorts the copies by expert (stable: within an
 *    expert, by copy number, as Megatron's permute sorts token indices) into rows
 *    [tokens*top_k, hidden]: expert g's rows are [offsets[g], offsets[g+1]), copy c sits at row
 *    pos[c]. The expert MLP kernels take per-expert row offsets the same way (absolute rows into
 *    their x and y, offsets[0] need not be 0).
 *  - Shapes are validated by the caller: tokens, hidden, inter >= 1, 1 <= top_k <= experts,
 *    ids in 0 .. experts-1.
 *
 * In the engine the router runs on real logits (its own idx and weights; its backward needs
 * that idx), while permute, the experts and unpermute run on plan_moe.h's pdbx_moe_assign map of
 * the spec's routing (see plan_moe.h for why), with the router's weights: the values are the
 * router's, the shape of the work is the spec's.
 */
#ifndef PDBX_CPU_KERNELS_MOE_H
#define PDBX_CPU_KERNELS_MOE_H

#include <stdint.h>

#include "engine/backends/cpu/cpu_threads.h"

/* ---- router ------------------------------------------------------------------------------- */
typedef enum {
    PDBX_MOE_SCORE_SOFTMAX = 0,   /* softmax over the E logits (Mixtral, Qwen-MoE, DeepSeek-V2) */
    PDBX_MOE_SCORE_SIGMOID        /* sigmoid of each logit (DeepSeek-V3) */
} pdbx_moe_score;

typedef struct {
    pdbx_moe_score score;
    int norm_topk;       /* top-k weights divided by their sum (HF norm_topk_prob: Mixtral,
                          * qwen3_moe, DeepSeek-V3 true; qwen2_moe, DeepSeek-V2 false) */
    float scale;         /* every weight times this (DeepSeek's routed_scaling_factor; 1 else) */
    const float *select_bias;   /* NULL, or [E] added to the sigmoid scores for choosing only
                                 * (DeepSeek-V3's e_score_correction_bias): the weights stay the
                                 * unbiased scores. Ignored with softmax scoring. */
} pdbx_moe_router_cfg;

/* logits [tokens, E] = x [tokens, hidden] w [hidden, E] (the router's projection, no bias). */
void pdbx_k_moe_router_logits(const float *x, const float *w, int64_t tokens, int64_t hidden,
                              int experts, float *logits);
/* Its backward: dx (= or += when dx_accumulate, the MoE input's gradient being the sum of the
 * router's and the permute's) dlogits w^T; dw += x^T dlogits. */
void pdbx_k_moe_router_logits_bwd(const float *x, const float *w, const float *dlogits,
                                  int64_t tokens, int64_t hidden, int experts, float *dx,
                                  int dx_accumulate, float *dw);

/* Scoring and top-k per token: s = softmax(logits row) or sigmoid(logits); the top_k experts of
 * the largest s (+ select_bias) in decreasing order, ties to the lower expert id, into idx
 * [tokens, top_k]; weights [tokens, top_k] = scale * s_j, divided by the sum of the chosen s
 * when norm_topk (HF MixtralSparseMoeBlock, Qwen2MoeSparseMoeBlock, DeepseekV3TopkRouter
 * without its group limit: DeepSeek-V3's n_group / topk_group preselection is not modelled).
 * Softmax uses the backend's exp (relative error < 2e-7). */
void pdbx_k_moe_topk(pdbx_cpu_pool *pool, const float *logits, int64_t tokens, int experts,
                     int top_k, const pdbx_moe_router_cfg *cfg, int32_t *idx, float *weights);
/* Its backward: dlogits [tokens, E] (overwritten) from dweights [tokens, top_k] through the
 * chosen entries (the choice itself has no gradient), idx the forward's choice from these
 * logits. With s the scores and S the sum of the chosen ones:
 *   ds_m = scale/S (dw_m - sum_j dw_j s_j / S)  (norm_topk),  ds_m = scale dw_m  (else)
 *   softmax: dlogit_i = s_i (ds_i - sum_m s_m ds_m);  sigmoid: dlogit_i = ds_i s_i (1 - s_i)
 * (ds zero off the chosen m). The scores are recomputed from logits (nothing else is kept). */
void pdbx_k_moe_topk_bwd(pdbx_cpu_pool *pool, const float *logits, const int32_t *idx,
                         const float *dweights, int64_t tokens, int experts, int top_k,
                         const pdbx_moe_router_cfg *cfg, float *dlogits);

/* ---- permute / unpermute ------------------------------------------------------------------ */
/* The counting sort of the copies by expert: offsets [experts + 1] (offsets[0] = 0,
 * offsets[experts] = tokens*top_k) and pos [tokens*top_k]. Serial (one pass to count, one to
 * place: memory-bound on T*k ids, small beside the row moves). Part of the permute op. */
void pdbx_k_moe_route_index(const int32_t *idx, int64_t tokens, int top_k, int experts,
                            int64_t *offsets, int64_t *pos);
/* rows[pos[t*top_k + j], :] = x[t, :]: rows [tokens*top_k, hidden] grouped by expert. */
void pdbx_k_moe_permute(pdbx_cpu_pool *pool, const float *x, const int64_t *pos, int64_t tokens,
                        int64_t hidden, int top_k, float *rows);
/* Its backward: dx[t, :] = sum over j of drows[pos[t*top_k + j], :] (overwritten; j in order),
 * a gather per token, so no two threads add into one row. */
void pdbx_k_moe_permute_bwd(pdbx_cpu_pool *pool, const float *drows, const int64_t *pos,
                            int64_t tokens, int64_t hidden, int top_k, float *dx);
/* y[t, :] = sum over j (in order) of w[t, j] * rows[pos[t*top_k + j], :] (overwritten). */
void pdbx_k_moe_unpermute(pdbx_cpu_pool *pool, const float *rows, const float *w,
                          const int64_t *pos, int64_t tokens, int64_t hidden, int top_k, float *y);
/* Its backward (both overwritten):
 *   drows[pos[t*top_k + j], :] = w[t, j] * dy[t, :],  dw[t, j] = dy[t, :] . rows[pos[t*top_k + j], :] */
void pdbx_k_moe_unpermute_bwd(pdbx_cpu_pool *pool, const float *rows, const float *w,
                              const int64_t *pos, const float *dy, int64_t tokens, int64_t hidden,
                              int top_k, float *drows, float *dw);

/* ---- grouped expert MLP ------------------------------------------------------------------- */
typedef enum {
    PDBX_MOE_ACT_SILU = 0,    /* silu(gate) * up (Mixtral, Qwen-MoE, DeepSeek) */
    PDBX_MOE_ACT_GELU_TANH,   /* gelu_tanh(gate) * up */
    PDBX_MOE_ACT_GELU_ERF     /* gelu(gate) * up, the exact GELU */
} pdbx_moe_act;

/* For each expert e < experts with n_e = offsets[e+1] - offsets[e] rows (0 allowed):
 *   y[offsets[e] .. , :out] = x[offsets[e] .. , :in] w[e] ([n_e, in] x [in, out]), one cblas
 * call per expert with rows. The three projections of the gated MLP (gate, up: in = hidden,
 * out = inter; down: in = inter, out = hidden) are this with their weights. */
void pdbx_k_moe_expert_gemm(const float *x, const float *w, const int64_t *offsets, int experts,
                            int64_t in, int64_t out, float *y);
void pdbx_k_moe_expert_gate(const float *x, const float *w_gate, const int64_t *offsets,
                            int experts, int64_t hidden, int64_t inter, float *gate);
void pdbx_k_moe_expert_up(const float *x, const float *w_up, const int64_t *offsets, int experts,
                          int64_t hidden, int64_t inter, float *up);
void pdbx_k_moe_expert_down(const float *act, const float *w_down, const int64_t *offsets,
                            int experts, int64_t inter, int64_t hidden, float *out);
/* Their backward, per expert with rows: dgrad dx_e = dy_e w[e]^T (overwritten, or added when
 * dx_accumulate: gate's and up's dgrads both land in the expert input's gradient), wgrad
 * dw[e] += x_e^T dy_e (an expert without rows leaves its dw as it was). Rows outside
 * [offsets[0], offsets[experts]) are not touched. */
void pdbx_k_moe_expert_gemm_bwd(const float *x, const float *w, const float *dy,
                                const int64_t *offsets, int experts, int64_t in, int64_t out,
                                float *dx, int dx_accumulate, float *dw);
void pdbx_k_moe_expert_gate_bwd(const float *x, const float *w_gate, const float *dgate,
                                const int64_t *offsets, int experts, int64_t hidden, int64_t inter,
                                float *dx, int dx_accumulate, float *dw_gate);
void pdbx_k_moe_expert_up_bwd(const float *x, const float *w_up, const float *dup,
                              const int64_t *offsets, int experts, int64_t hidden, int64_t inter,
                              float *dx, int dx_accumulate, float *dw_up);
void pdbx_k_moe_expert_down_bwd(const float *act, const float *w_down, const float *dout,
                                const int64_t *offsets, int experts, int64_t inter, int64_t hidden,
                                float *dact, float *dw_down);

/* act[i] = f(gate[i]) * up[i] over the experts' rows x inter values together (element-wise: the
 * expert boundaries do not matter), f by kind (cpu_kernels.h's SiLU x up, cpu_kernels_dense.h's
 * gated GELU). */
void pdbx_k_moe_expert_act(pdbx_cpu_pool *pool, const float *gate, const float *up, int64_t rows,
                           int64_t inter, pdbx_moe_act kind, float *act);
/* Its backward: dgate = dact * up * f'(gate), dup = dact * f(gate) (both overwritten). */
void pdbx_k_moe_expert_act_bwd(pdbx_cpu_pool *pool, const float *gate, const float *up,
                               const float *dact, int64_t rows, int64_t inter, pdbx_moe_act kind,
                               float *dgate, float *dup);

#endif
