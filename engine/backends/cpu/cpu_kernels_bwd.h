/* cpu_kernels_bwd.h: the backward kernels of the CPU backend's own ops (the GEMMs' dgrad and
 * wgrad go through OpenBLAS in cpu_backward.c).
 *
 * Contract (as cpu_kernels.h): row-major fp32, computed in fp32, no allocation (scratch passed
 * in), every element of every output written (or accumulated, where stated), shapes validated
 * by the caller. Weight gradients ACCUMULATE (+=) into their buffer, as Megatron's
 * gradient-accumulation fusion adds into main_grad; input gradients are overwritten.
 */
#ifndef PDBX_CPU_KERNELS_BWD_H
#define PDBX_CPU_KERNELS_BWD_H

#include <stddef.h>
#include <stdint.h>

#include "engine/backends/cpu/cpu_threads.h"

/* Embedding gradient of the vocab-parallel shard: dtable[ids[i] - vocab_start, :] += dy[i, :]
 * for i < rows whose id falls in [vocab_start, vocab_start + table_rows) (the other rows belong
 * to another rank's shard, as Megatron masks them). dtable is [table_rows, cols] fp32. */
void pdbx_k_embed_scatter_add(const float *dy, const int32_t *ids, int64_t rows, int64_t cols,
                              int64_t table_rows, int64_t vocab_start, float *dtable);

/* RMSNorm backward of y = x * inv * w, inv = 1/sqrt(mean(x^2) + eps), per row of [rows, cols]:
 *   dx = inv * (w*dy) - x * inv^3 / cols * sum(w*dy*x)     (overwritten)
 *   dw += sum over rows of dy * x * inv                      (accumulated) */
void pdbx_k_rmsnorm_bwd(const float *x, const float *weight, const float *dy, int64_t rows,
                        int64_t cols, float eps, float *dx, float *dw);

/* Backward of out = silu(g) * u over n values (s = sigmoid(g)):
 *   dg = dout * u * s * (1 + g * (1 - s)),  du = dout * g * s   (both overwritten)
 * Element-wise in chunks over the pool (NULL: the caller alone); the bits do not depend on
 * the thread count. */
void pdbx_k_silu_mul_bwd(pdbx_cpu_pool *pool, const float *gate, const float *up,
                         const float *dout, int64_t n, float *dgate, float *dup);

/* Linear-layer bias gradient: db[j] += sum over the rows of dy[i, j] (accumulated, as the
 * weight gradients), dy [rows, cols] in fp32 or, when dy_bf16, bf16 (a fused GEMM's dY in the
 * GEMM dtype); summed in fp32 in row order. Chunks of BIAS_GRAD_CHUNK_COLS columns over the pool
 * (each column summed by one chunk: the result does not depend on the thread count). */
void pdbx_k_bias_grad(pdbx_cpu_pool *pool, const void *dy, int dy_bf16, int64_t rows,
                      int64_t cols, float *db);

/* Causal attention backward (cpu_kernels_attn_bwd.c), FlashAttention-2's algorithm on the
 * forward's layouts (cpu_kernels.h, pdbx_k_attention_causal): the probabilities P are
 * recomputed block by block from q and k (nothing of the forward is kept), then per query block
 *   dV_j += sum_i P_ij dO_i,  dP_ij = dO_i . V_j,  D_i = sum_j P_ij dP_ij,
 *   dS_ij = P_ij (dP_ij - D_i),  dQ_i = scale sum_j dS_ij K_j,  dK_j += scale sum_i dS_ij Q_i.
 * dq is [seqs*seq_len, heads*d], dk and dv [seqs*seq_len, kv_heads*d], all overwritten; under
 * GQA dk and dv of a kv head are the sums over the heads of its group. Work is split over
 * (sequence, kv head) pairs, chunks of the pool (NULL: the caller alone), so the heads sharing
 * a kv head run on one thread and the accumulation into dk and dv needs no lock; the bits do
 * not depend on the thread count. The products run in the forward's register tiles
 * (cpu_kernels_attn_tile.h); dK and dV from P and dS transposed. scratch:
 * pdbx_k_attention_bwd_scratch_floats(seq_len, d, the pool's threads). */
size_t pdbx_k_attention_bwd_scratch_floats(int64_t seq_len, int64_t d, int threads);
void pdbx_k_attention_causal_bwd(pdbx_cpu_pool *pool, const float *q, const float *k,
                                 const float *v, const float *dout, int64_t seqs, int64_t seq_len,
                                 int64_t heads, int64_t kv_heads, int64_t d, float *scratch,
                                 float *dq, float *dk, float *dv);

#endif
