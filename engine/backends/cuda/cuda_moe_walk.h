/* cuda_moe_walk.h: the dimensions of a mixture-of-experts layer on the cuda backend and how
 * its kernels (cuda_kernels_moe.cu) walk their arrays. Pure arithmetic on indices, shared by the
 * device code, the host side of the backend (cuda_moe.c) and the host part of
 * tests/cuda/test_cuda_kernels_moe.c, so the walk the GPU runs is the one the host checks (as
 * cuda_dense_walk.h and cuda_rowsplit.h).
 *
 *  - cuda_moe_dims: R = ceil(T / TP) rows the rank routes, X = R top_k its own copies, E
 *    experts of which it holds El = E / ep, Xr the rows its experts receive (plan_moe.h's load
 *    of the measured rank; X at EP 1), M = max(X, Xr) rows of the permuted and output buffers,
 *    Ie an expert's width, Is the shared experts' width / TP (0: none). The cpu backend's
 *    cpu_moe.c uses the same numbers (docs/engine.md, "Mixture of experts").
 *  - Top-k: plan_moe.h's pdbx_moe_topk_insert (the cpu kernel's too) keeps a token's top_k
 *    (key, id) pairs in decreasing key order, ties to the lower id; the key is the logit
 *    (softmax and sigmoid both increase with it, and it has no rounding of its own).
 *  - Route index (the counting sort of the copies by expert, stable): one block of W warps
 *    (ck_moe_route_warps: W x E int32 counters in shared memory); warp w owns the contiguous
 *    segment ck_moe_segment of the copies, counts its experts, the counts are scanned expert by
 *    expert over the warps (so warp w's copies of expert g follow warp w-1's), and each warp
 *    places its segment 32 copies at a time, a copy's place its warp's cursor for the expert
 *    plus the lanes below it with the same expert (ck_moe_lane_rank; __match_any_sync on the
 *    device). That is copy order within an expert: the cpu's pdbx_k_moe_route_index exactly.
 *  - ck_moe_align: the byte alignment of a row offset into a cudaMalloc'd (256-byte aligned)
 *    buffer, for the grouped GEMMs' per-expert plans (cuda_gemm_shape.align_*).
 */
#ifndef PDBX_CUDA_MOE_WALK_H
#define PDBX_CUDA_MOE_WALK_H

#include <stdint.h>

#include "engine/backends/cuda/cuda_rowsplit.h"   /* CK_HOST_DEVICE */
#include "engine/plan/plan_moe.h"                  /* pdbx_moe_topk_insert */

#define CK_MOE_MAX_TOPK 16                  /* a token's choices held in registers */
#define CK_MOE_ROUTE_SHARED (48 * 1024)     /* the route kernel's counters: static shared limit */
#define CK_MOE_ROUTE_MAX_WARPS 32

typedef struct {
    int64_t R, k, X, E, El, Xr, M, Ie, Is;
    int ep;
    int sigmoid, norm_topk;   /* the router (plan_arch.h's moe fields) */
    float scale;              /* routed_scaling_factor (1 when unset) */
    double imbalance;         /* the spec's moe_routing (>= 1) */
} cuda_moe_dims;

/* The route kernel's warps: up to 32, as many as W x experts int32 counters fit in
 * CK_MOE_ROUTE_SHARED; 0 when not even one warp's do (experts > 12288). */
static inline CK_HOST_DEVICE int ck_moe_route_warps(int experts)
{
    if (experts < 1)
        return 0;
    const int64_t w = CK_MOE_ROUTE_SHARED / ((int64_t)experts * 4);
    return w > CK_MOE_ROUTE_MAX_WARPS ? CK_MOE_ROUTE_MAX_WARPS : (int)w;
}

/* Warp w's copies [*c0, *c1) of n split over `warps`: ceil(n / warps) each, the last ones
 * shorter or empty. */
static inline CK_HOST_DEVICE void ck_moe_segment(int64_t n, int warps, int w, int64_t *c0, int64_t *c1)
{
    const int64_t per = (n + warps - 1) / warps;
    const int64_t a = (int64_t)w * per, b = a + per;
    *c0 = a < n ? a : n;
    *c1 = b < n ? b : n;
}

/* The rank of lane `lane` among the lanes below it with its expert (ids[0..lanes), as
 * __popc(__match_any_sync(...) & lanes_below) computes it). */
static inline CK_HOST_DEVICE int ck_moe_lane_rank(const int32_t *ids, int lane)
{
    int r = 0;
    for (int l = 0; l < lane; l++)
        r += ids[l] == ids[lane];
    return r;
}

/* The factor of every chosen score: scale / (sum of the chosen scores) with norm_topk, else
 * scale (HF's norm_topk_prob, DeepSeek's routed_scaling_factor). */
static inline CK_HOST_DEVICE float ck_moe_weight_factor(int norm_topk, float scale, float chosen_sum)
{
    return norm_topk ? scale / chosen_sum : scale;
}

/* The byte alignment (a power of two <= 256) of an offset into a 256-byte aligned buffer. */
static inline CK_HOST_DEVICE uint32_t ck_moe_align(int64_t byte_off)
{
    uint32_t a = 256;
    while (a > 1 && byte_off % a != 0)
        a /= 2;
    return a;
}

#endif
