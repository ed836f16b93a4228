/* plan_moe.h: how many tokens each expert of one rank's mixture-of-experts layer processes, and
 * the token assignment that realises those counts. The planner (op shapes, profile memory) and
 * the backends (the measured permute, grouped expert GEMMs and unpermute) both call it, so the
 * shapes they time and the memory they predict cannot disagree.
 *
 * Contract: pure (no I/O, no allocation); every output is a function of the arguments alone.
 *
 * The routing model. ep expert-parallel ranks each hold T tokens (the MoE layer's input rows)
 * and route each token to top_k distinct experts of E, so every rank produces T*top_k token
 * copies and the layer moves C = ep*T*top_k copies in all. E % ep == 0; EP rank q holds the
 * E/ep global experts [q*E/ep, (q+1)*E/ep) (Megatron's contiguous expert placement).
 *  1. Global copies per expert, G[g] (sum C, each <= ep*T since a token picks an expert at
 *     most once), from the imbalance f >= 1:
 *       busiest expert, g = 0:  G[0] = min(max(round(f*C/E), ceil(C/E)), ep*T)
 *                               (round: nearest, halves up; capped at what exists)
 *       the others, g >= 1:     the rest C - G[0] shared evenly, the remainder one copy each
 *                               to the lowest-numbered: G[g] = q + (g - 1 < r), q, r = the
 *                               quotient and remainder of (C - G[0]) / (E - 1).
 *     f = 1 is the balanced routing (every expert C/E, the remainder of C/E one copy each to
 *     experts 0, 1, ...): there is no separate balanced code path. f > 1 models a skewed
 *     router the way a capacity factor does: only the busiest expert matters for the step time,
 *     since the layer waits for it.
 *  2. Who sends them: lay the C copies out expert by expert (G[0] copies of expert 0, then
 *     G[1] of expert 1, ...) and deal them to the source ranks in turn: copy c comes from rank
 *     c % ep. So every rank sends exactly T*top_k copies, each expert's copies are spread over
 *     the ranks as evenly as integers allow (floor or ceil of G[g]/ep from each; balanced
 *     routing gives every expert floor or ceil of T*top_k/E of each rank's copies), and a rank
 *     sends any one expert at most T copies (a valid top-k: pdbx_moe_assign realises it).
 *  3. The rank measured is rank 0: it holds the busiest expert and receives the most rows of
 *     all ranks (G is non-increasing after expert 0), so it sets the step. Its local expert e
 *     processes counts[e] = G[e] rows from all ep ranks (what its grouped GEMMs run on).
 * All-to-all message sizes, in rows (of hidden elements) per peer, for rank r: send[q] = the
 * copies of r's own tokens bound for q's experts, recv[q] = the copies of q's tokens bound for
 * r's experts; the q == r entries are the rows that stay on the rank (no message). Dispatch
 * sends send[] and receives recv[]; the combine returns the same rows the other way.
 *
 * Why the measured assignment is the spec's and not the router's: the router op computes real
 * scores and a real top-k from real logits (that is its cost), but the token -> expert map that
 * permute, the expert GEMMs and unpermute then run on is pdbx_moe_assign's, built from the
 * counts above. Random weights route nearly uniformly and differently on every seed and
 * backend; a profile must be reproducible and must match the routing the spec states (as
 * Megatron-LM's --moe-router-force-load-balancing does for benchmarking).
 */
#ifndef PDBX_PLAN_MOE_H
#define PDBX_PLAN_MOE_H

#include <stddef.h>
#include <stdint.h>

/* Bounds of the checked fields (the planner's spec ranges lie inside them). */
#define PDBX_MOE_MAX_TOKENS INT64_C(2147483647)
/* ep x tokens x top_k, the layer's copies, stays exact in a double and in int64 arithmetic */
#define PDBX_MOE_MAX_COPIES (INT64_C(1) << 53)
#define PDBX_MOE_MAX_EXPERTS 65536
/* The EP rank whose load the profile measures (the one holding the busiest expert). */
#define PDBX_MOE_MEASURED_RANK 0

typedef struct {
    int64_t tokens;      /* T: the MoE layer's input rows on each EP rank, 1 .. 2^31 - 1 */
    int top_k;           /* experts per token, 1 .. experts */
    int experts;         /* E: routed experts of the layer, 1 .. PDBX_MOE_MAX_EXPERTS */
    int ep;              /* expert-parallel degree: 1 .. experts, experts % ep == 0 */
    double imbalance;    /* f >= 1 (finite): the busiest expert's share over the balanced one */
} pdbx_moe_route;

typedef struct {
    int rank;                /* the EP rank described */
    int local_experts;       /* E / ep */
    int64_t sent;            /* T * top_k: rows its permute produces, dispatched in all */
    int64_t received;        /* rows its local experts process: sum of counts */
    int64_t busiest;         /* the most rows one of its local experts processes */
} pdbx_moe_load;

/* 0 when r is valid; else -1 and one line in err naming the field, its value and the allowed
 * range, e.g. "moe top_k 9: allowed 1 .. 8 (experts)". */
int pdbx_moe_route_check(const pdbx_moe_route *r, char *err, size_t errlen);

/* G[g]: copies expert g (0 .. E-1) receives from all ranks. r must be valid. */
int64_t pdbx_moe_expert_copies(const pdbx_moe_route *r, int g);
/* Copies of source rank s's tokens routed to expert g. r must be valid. */
int64_t pdbx_moe_source_copies(const pdbx_moe_route *r, int s, int g);

/* EP rank `rank`'s load into *out; each array is filled when not NULL:
 *   counts[E/ep]  rows of each local expert (global expert rank*E/ep + e)
 *   send[ep]      rows to each EP rank (send[rank]: kept)
 *   recv[ep]      rows from each EP rank (recv[rank]: kept)
 *   own[E]        the rank's own copies per global expert (pdbx_moe_assign's counts)
 * Returns 0, or -1 with err as pdbx_moe_route_check (rank outside 0 .. ep-1 is named too). */
int pdbx_moe_rank_load(const pdbx_moe_route *r, int rank, pdbx_moe_load *out, int64_t *counts,
                       int64_t *send, int64_t *recv, int64_t *own, char *err, size_t errlen);

/* The token -> expert map of `tokens` tokens with top_k choices each, realising counts[E]
 * exactly: idx[t*top_k + j] is token t's j-th expert, the top_k of a token distinct, expert g
 * chosen by exactly counts[g] tokens. Deterministic: copy c (0 .. T*top_k-1) of the copies laid
 * out expert by expert goes to choice j = c / T of token perm(c % T), perm(t) = t*m mod T with
 * m the first integer >= 0.618 T coprime to T (so an expert's tokens are spread over the batch,
 * as a real router's are, and the gather is not a sequential copy). A token's choices are in
 * increasing expert order. Returns 0, or -1 and one line in err when tokens < 1, top_k outside
 * 1 .. experts, experts outside 1 .. PDBX_MOE_MAX_EXPERTS, a count outside 0 .. tokens (a token
 * picks an expert once) or the counts not summing to tokens*top_k. */
int pdbx_moe_assign(int64_t tokens, int top_k, int experts, const int64_t *counts, int32_t *idx,
                    char *err, size_t errlen);

/* The router's top-k selection step, shared by the cpu kernel (cpu_kernels_moe.c) and the cuda
 * one (cuda_kernels_moe.cu, host-tested through cuda_moe_walk.h), so both choose alike: inserts
 * expert e with key v into a token's (key, id) list of *n <= top_k entries kept in decreasing
 * key order, after every key >= v (experts arrive in increasing id order, so a tie keeps the
 * lower id first); dropped when the list is full and v is not above its last key. */
#ifdef __CUDACC__
#define PDBX_MOE_HOST_DEVICE __host__ __device__
#else
#define PDBX_MOE_HOST_DEVICE
#endif
static inline PDBX_MOE_HOST_DEVICE void pdbx_moe_topk_insert(float v, int e, float *key, int32_t *id, int *n,
                                                             int top_k)
{
    if (*n == top_k && !(v > key[top_k - 1]))
        return;
    int p = *n < top_k ? *n : top_k - 1;   /* the last slot, dropped when full */
    while (p > 0 && v > key[p - 1]) {
        key[p] = key[p - 1];
        id[p] = id[p - 1];
        p--;
    }
    key[p] = v;
    id[p] = (int32_t)e;
    *n += *n < top_k;
}

#endif
