/* plan_comm.h: the one sizing of a point's collectives and the buffer they share.
 *
 * Contract: pure (no I/O, no allocation). Given the model, the parallel config, the micro-batch
 * and the run's dtype, says which collectives the engine times at the point, how many bytes
 * each moves (S as nccl-tests defines it), in which dtype, and how large the one comm buffer
 * they share must be. Only the collectives the config runs are sized:
 *   - TP all-reduce of the [mbs*seq, hidden] activations in the run's dtype, only when tp > 1;
 *   - PP send/recv of the same activations, only when pp > 1;
 *   - DP gradient all-reduce, only when dp > 1: ONE bucket of the stage's gradients, in fp32
 *     (Megatron's grad_reduce_in_fp32), capped at PDBX_CPU_DP_CAP_BYTES on the cpu backend.
 *     A MoE model's routed experts are reduced over the expert data parallel group instead
 *     (Megatron's expert_data_parallel group: the tp x dp / ep ranks of a stage that hold the
 *     same experts; expert tensor parallelism 1): dp_full_bytes leaves them out, edp_full_bytes
 *     holds them. The timed bucket (dp_bytes) stays the whole stage's.
 * A message that does not run is 0; the buffer is the largest message (0: no buffer).
 * The engine (engine_point.c, point_comm) and the planner's profile memory
 * (plan_profile_memory.c, the comm entry) both call it, so they cannot disagree.
 */
#ifndef PDBX_PLAN_COMM_H
#define PDBX_PLAN_COMM_H

#include "engine/plan/plan.h"

/* Megatron-LM's default DDP bucket, in parameters (elements): max(40e6, 1e6 * dp).
 * megatron/core/distributed/distributed_data_parallel_config.py, bucket_size: "If
 * unspecified, MCore uses a default value of max(40000000, 1000000 * dp_size) parameters
 * (larger DP sizes need larger buckets to ensure collectives do not become latency-bound)". */
#define PDBX_DP_BUCKET_MIN_ELEMS 40000000.0
#define PDBX_DP_BUCKET_ELEMS_PER_RANK 1000000.0

typedef struct {
    double tp_bytes, pp_bytes, dp_bytes;   /* 0 where the group has one rank */
    double ep_bytes;        /* the EP all-to-all (pdbx_plan_ep_bytes), 0 at EP 1 or without
                             * pdbx_plan_comm_point; it needs 2 x ep_bytes of buffer */
    pdbx_dtype tp_dtype, pp_dtype, dp_dtype;   /* the element type each moves */
    double dp_full_bytes;   /* the stage's gradients in fp32 that DP all-reduces (dp > 1; else
                             * 0): all of them, a MoE model's routed experts' excepted */
    int edp;                /* the expert data parallel degree, tp x dp / ep (pdbx_plan_comm_point;
                             * 0 without it or for a dense model) */
    double edp_full_bytes;  /* the stage's routed experts' gradients in fp32, all-reduced over the
                             * EDP group (pdbx_plan_comm_point, edp > 1; else 0) */
    double buffer_bytes;    /* the comm buffer: the largest message; 0 when none runs */
} pdbx_plan_comm;

/* Megatron's bucket for a DP group of dp ranks, in elements. */
double pdbx_plan_dp_bucket_elems(int dp);

/* Fills *out for the point (model, tp, pp, dp, mbs, seq_len) run in dtype on backend
 * (PDBX_BACKEND_CPU caps the DP message; any other kind does not). */
void pdbx_plan_comm_bytes(const pdbx_model *model, int tp, int pp, int dp, int mbs, int seq_len,
                          pdbx_dtype dtype, pdbx_backend_kind backend, pdbx_plan_comm *out);

/* The largest EP rank count the planner accepts (spec ep; the all-to-all's block arrays). */
#define PDBX_MAX_EP 1024

/* S of the expert-parallel all-to-all of a MoE layer (ep_dispatch; ep_combine returns the same
 * rows the other way, the same S) at config (tp, ep), micro-batch mbs, in dtype: from
 * plan_moe.h's load of the measured rank at R = ceil(mbs x seq_len / tp) rows, top_k, the
 * model's experts and the routing imbalance f, the largest block it sends to or receives from
 * any EP rank (itself included), x ep ranks, x hidden x dtype bytes. The comm backends' all_to_all
 * moves equal blocks, so the measured all-to-all is the uniform one at the largest block: exact
 * for balanced routing (every block R top_k / ep rows), an upper bound under imbalance, where
 * the busiest rank receives more than it sends (until the comm backend grows all_to_allv).
 * 0 at ep <= 1, for a dense model, or when the routing is not valid (ep not dividing experts,
 * ep > PDBX_MAX_EP). */
double pdbx_plan_ep_bytes(const pdbx_model *model, int tp, int ep, int mbs, int seq_len,
                          pdbx_dtype dtype, double imbalance);

/* Megatron's expert data parallel degree at expert tensor parallelism 1: tp x dp / ep (0 when
 * ep does not divide tp x dp). */
int pdbx_plan_expert_dp(int tp, int dp, int ep);

/* pdbx_plan_comm_bytes for config par (its ep included: ep_bytes, edp and edp_full_bytes, and the buffer at least
 * 2 x ep_bytes: the all-to-all is out of place, S sent from the buffer, S received after it)
 * at the routing imbalance f. The engine's point_comm and the profile memory's comm entry. */
void pdbx_plan_comm_point(const pdbx_model *model, const pdbx_parallel *par, int mbs, int seq_len,
                          pdbx_dtype dtype, pdbx_backend_kind backend, double imbalance,
                          pdbx_plan_comm *out);

#endif
