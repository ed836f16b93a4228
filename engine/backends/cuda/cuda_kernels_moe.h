/* cuda_kernels_moe.h: the cuda backend's mixture-of-experts kernels, forward and backward: the
 * router's scoring and top-k, the route index (the counting sort of the copies by expert), the
 * permute and unpermute row moves. Implemented in cuda_kernels_moe.cu, callable from C. The
 * router's projection and the experts' GEMMs are cuBLASLt's (cuda_gemm.h; cuda_moe.c); the
 * gated activation is cuda_kernels.h's ck_silu_mul and cuda_kernels_dense.h's ck_gelu_mul.
 *
 * Contract (that of cuda_kernels.h), with the semantics of the cpu backend's
 * cpu_kernels_moe.h, which these kernels run on the GPU:
 *  - Every function enqueues its kernel(s) on `stream` and returns the launch status; nothing
 *    here synchronises. Arguments out of range return cudaErrorInvalidValue before any CUDA
 *    call (tokens, hidden >= 1; 1 <= top_k <= min(experts, CK_MOE_MAX_TOPK); copies
 *    tokens x top_k <= INT32_MAX; experts <= 12288 for the route index).
 *  - Activations (x, rows, logits, dy ...) are in the dtype (bf16, fp16, fp32), row-major;
 *    arithmetic in fp32, each result rounded once to the dtype. The routing weights and their
 *    gradient are fp32 [tokens, top_k]; expert ids int32; offsets and positions int64.
 *  - Copy c = t top_k + j is token t's j-th choice; route_index places it at row pos[c] of the
 *    permuted rows, expert g's rows being [offsets[g], offsets[g+1]) in copy order (stable).
 *  - Every output element is computed by one thread (or one warp) in a fixed order: no
 *    atomics on values, so the results are deterministic.
 *  - How the kernels walk (the top-k insertion, the route index's warps) is cuda_moe_walk.h.
 *  - These symbols are hidden in libpdbx_cuda.so (-fvisibility=hidden).
 */
#ifndef PDBX_CUDA_KERNELS_MOE_H
#define PDBX_CUDA_KERNELS_MOE_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#include "engine/plan/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The router's scoring (one thread per token): s = softmax(logits row) (sigmoid: sigmoid of
 * each logit); idx [tokens, top_k] the top_k largest logits, decreasing, ties to the lower id;
 * weights [tokens, top_k] (fp32) = s_j x ck_moe_weight_factor(norm_topk, scale, sum of the
 * chosen s). logits [tokens, experts] in the dtype. */
cudaError_t ck_moe_topk(const void *logits, int64_t tokens, int experts, int top_k, int sigmoid,
                        int norm_topk, float scale, int32_t *idx, float *weights, pdbx_dtype dt,
                        cudaStream_t stream);
/* Its backward (one thread per token; the cpu's pdbx_k_moe_topk_bwd): dlogits [tokens,
 * experts] (overwritten, dtype) from dweights (fp32) through the chosen entries, the
 * normalisation and the softmax or sigmoid, the scores recomputed from logits. */
cudaError_t ck_moe_topk_bwd(const void *logits, const int32_t *idx, const float *dweights,
                            int64_t tokens, int experts, int top_k, int sigmoid, int norm_topk,
                            float scale, void *dlogits, pdbx_dtype dt, cudaStream_t stream);

/* The stable counting sort of the copies idx [copies] by expert: offsets [experts + 1]
 * (offsets[0] = 0, offsets[experts] = copies) and pos [copies] (one block, cuda_moe_walk.h). */
cudaError_t ck_moe_route_index(const int32_t *idx, int64_t copies, int experts, int64_t *offsets,
                               int64_t *pos, cudaStream_t stream);

/* rows[pos[t top_k + j], :] = x[t, :] (one warp per copy). */
cudaError_t ck_moe_permute(const void *x, const int64_t *pos, int64_t tokens, int64_t hidden,
                           int top_k, void *rows, pdbx_dtype dt, cudaStream_t stream);
/* y[t, :] = sum over j (in order) of w[t, j] rows[pos[t top_k + j], :], fp32 sums rounded
 * once (w NULL: weights 1, the permute's backward dx = sum_j drows[pos]); one warp per token,
 * y overwritten. */
cudaError_t ck_moe_gather_sum(const void *rows, const float *w, const int64_t *pos, int64_t tokens,
                              int64_t hidden, int top_k, void *y, pdbx_dtype dt, cudaStream_t stream);
/* The unpermute's backward (one warp per copy): drows[pos[c], :] = w[c] dy[t, :] and
 * dw[c] = dy[t, :] . rows[pos[c], :] (fp32), both overwritten. */
cudaError_t ck_moe_unpermute_bwd(const void *rows, const float *w, const int64_t *pos, const void *dy,
                                 int64_t tokens, int64_t hidden, int top_k, void *drows, float *dw,
                                 pdbx_dtype dt, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
