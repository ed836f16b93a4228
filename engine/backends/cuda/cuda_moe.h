/* cuda_moe.h: a mixture-of-experts layer on the cuda backend (cuda_moe.c): its dimensions, the
 * measured assignment and the GEMM plans prepare builds, and the forward and backward of its
 * ops, with the data flow and semantics of the cpu backend's cpu_moe.c / cpu_moe_bwd.c
 * (docs/engine.md, "Mixture of experts"):
 *   moe_router: yn [R, h] -> logits [R, E] (cuBLASLt) -> the router's top-k ids and fp32
 *               weights [R, k] (ck_moe_topk)
 *   moe_permute: the assignment -> offsets, pos (ck_moe_route_index); yn -> rows [X, h]
 *   moe_expert_gate/up/down: one cuBLASLt GEMM per local expert with rows, each with its own
 *               row count (a grouped GEMM as Megatron's SequentialMLP runs it); act between
 *   moe_unpermute: the experts' output and the router's weights -> x [R, h]
 *   moe_shared_*: a dense gated MLP over all T rows, its down projection added into x
 * yn is post_attn_norm's output (B_XN2), x the layer's output (B_X, as mlp_down's); the
 * gradients are G_XN2 and G_X. The buffers are cuda_bufs.c's B_MOE_*, W_MOE_*, G_MOE_*
 * (the planner lists the same: plan_profile_memory_moe.c, plan_mem_cuda_moe_list).
 *
 * Why the experts run on an assignment and not on the router's top-k: see plan_moe.h (the
 * profile must be reproducible and show the spec's moe_routing). The assignment is built on
 * the host at prepare (pdbx_moe_assign of the measured rank's counts, plan_moe.h, compiled into
 * the .so), uploaded, and its index computed once, so the per-expert row counts the grouped
 * GEMMs run on are known on the host and every GEMM is planned before any timing. At EP > 1
 * the rank holds E / ep experts and runs them on the rows they receive (cpu_moe.c says how).
 */
#ifndef PDBX_CUDA_MOE_H
#define PDBX_CUDA_MOE_H

#include "engine/backends/cuda/cuda_backend.h"

/* A prepared point's MoE state (cuda_moe.c builds it, cuda_moe_run.c reads it): the GEMMs of
 * one expert (the gate and up projections share a shape and the alignment of their slices: one
 * plan), of the router and of the shared experts. */
enum { CUDA_MOE_GU, CUDA_MOE_D, CUDA_MOE_GU_DG, CUDA_MOE_GU_WG, CUDA_MOE_D_DG, CUDA_MOE_D_WG, CUDA_MOE_XPLANS };
enum { CUDA_MOE_R_FWD, CUDA_MOE_R_DG, CUDA_MOE_R_WG, CUDA_MOE_S_GU, CUDA_MOE_S_D, CUDA_MOE_S_GU_DG,
       CUDA_MOE_S_GU_WG, CUDA_MOE_S_D_DG, CUDA_MOE_S_D_WG, CUDA_MOE_FPLANS };
struct cuda_moe {
    int64_t *eoff;                       /* [El + 1]: the local experts' rows in the permuted buffers */
    cuda_gemm_plan **xplan;              /* [El][CUDA_MOE_XPLANS]: NULL for an expert without rows */
    cuda_gemm_plan *fixed[CUDA_MOE_FPLANS];
};

/* The MoE dimensions of point p (all zero for a dense model), and a check of the planner's
 * router and expert shapes against them: -1 with a message naming the fault. Pure. */
int cuda_moe_dims_of(const pdbx_point_shapes *p, cuda_moe_dims *m, char *err, size_t errlen);

/* After the point's buffers (and gradients) are allocated and filled: the assignment uploaded,
 * its index computed, the local experts' row offsets and every GEMM plan of both passes. */
int cuda_moe_prepare(pdbx_compute *c, struct cuda_point *pt, char *err, size_t errlen);
void cuda_moe_free(struct cuda_moe *m);

/* Enqueue op's forward / backward on c's stream (W: the layer's weights of this execution,
 * cuda_layer_weights). 1 when op is not a MoE op. */
int cuda_moe_enqueue(pdbx_compute *c, pdbx_op op, void **W, char *err, size_t errlen);
int cuda_moe_bwd_enqueue(pdbx_compute *c, pdbx_op op, void **W, char *err, size_t errlen);

/* The kernels and GEMMs op's pass enqueues (0 for a non-MoE op): the spin before the start
 * event covers their launches (cuda_timer_spin). */
int cuda_moe_launches(const struct cuda_point *pt, pdbx_op op, pdbx_pass pass);

#endif
