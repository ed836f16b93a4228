/* cuda_kernels.h: the own CUDA kernels of the cuda backend (cuda_kernels.cu, the backward's in
 * cuda_kernels_bwd.cu, the fused attention in cuda_flash.cu and cuda_flash_bwd.cu), callable from C.
 *
 * Contract:
 *  - Every function enqueues its kernel(s) on `stream` and returns the launch status
 *    (cudaGetLastError() right after the launch); nothing here synchronises.
 *  - Element types follow pdbx_dtype (bf16, fp16, fp32). Arithmetic is done in fp32 and the
 *    result rounded once to the storage type, as PyTorch's kernels do.
 *  - Shapes are row-major; sizes are element counts (not bytes).
 *  - These symbols are hidden in libpdbx_cuda.so (-fvisibility=hidden).
 */
#ifndef PDBX_CUDA_KERNELS_H
#define PDBX_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "engine/plan/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* buf[i] = uniform in [lo, hi) from a counter-based hash of (seed, i): deterministic. */
cudaError_t ck_fill_uniform(void *buf, size_t n, pdbx_dtype dt, uint64_t seed, float lo, float hi,
                            cudaStream_t stream);
/* ids[i] = hash(seed, i) mod vocab: token ids over the full vocabulary. */
cudaError_t ck_fill_tokens(int32_t *ids, size_t n, int32_t vocab, uint64_t seed, cudaStream_t stream);

/* Vocab-parallel embedding (Megatron VocabParallelEmbedding): out[t,:] = table[ids[t]-vstart,:]
 * when vstart <= ids[t] < vstart+vrows, else zeros. table is [vrows, h], out is [T, h]. */
cudaError_t ck_embed_gather(const int32_t *ids, int64_t tokens, const void *table, int64_t vstart,
                            int64_t vrows, int64_t h, void *out, pdbx_dtype dt, cudaStream_t stream);

/* RMSNorm (HF LlamaRMSNorm): y = x * rsqrt(mean(x^2) + eps) * w over each row of [rows, cols]. */
cudaError_t ck_rmsnorm(const void *x, const void *w, void *y, int64_t rows, int64_t cols, float eps,
                       pdbx_dtype dt, cudaStream_t stream);

/* out = silu(gate) * up, element-wise over n elements (HF LlamaMLP act_fn(gate) * up). */
cudaError_t ck_silu_mul(const void *gate, const void *up, void *out, int64_t n, pdbx_dtype dt,
                        cudaStream_t stream);

/* Rotary position embedding (HF Llama / Megatron rotate-half), in place on x [seq, mbs, heads,
 * d] (tokens = mbs * seq, the sequence-major layout of cuda_attention.h; cuda_rope.h walks it),
 * over the first rot dims of each head (2 <= rot <= d; rot = d for a Llama, fewer for partial
 * rotary, as HF GPT-NeoX's rotary_ndims): for i < rot/2 with c, s = table's cos and sin at
 * [pos, i],
 *   x[i] <- x[i] c - x[i + rot/2] s,   x[i + rot/2] <- x[i + rot/2] c + x[i] s
 * (inverse != 0: by -angle, the backward's R^T dy). table: fp32 cos [seq, rot/2] then sin
 * [seq, rot/2] (ck_rope_table with d = rot). Dims rot.. d-1 stay (an odd rot = d leaves the
 * head's last element alone). */
cudaError_t ck_rope(void *x, int64_t tokens, int64_t heads, int64_t d, int64_t rot, int64_t mbs,
                    int64_t seq, const float *table, int inverse, pdbx_dtype dt, cudaStream_t stream);
/* Fills table (2 * seq * (d/2) floats) with cos then sin of pos * theta^(-2i/d) (d: the dims
 * rotated, rot for partial rotary, as HF's inv_freq over rotary_ndims). */
cudaError_t ck_rope_table(float *table, int64_t seq, int64_t d, double theta, cudaStream_t stream);
/* Residual add in place: y[i] += x[i] for i < n (fp32 add, rounded once); the forward's
 * hidden += sublayer output and the backward's gradient into the residual branch's. */
cudaError_t ck_residual_add(void *y, const void *x, int64_t n, pdbx_dtype dt, cudaStream_t stream);

/* In-place causal softmax over `nmat` row-major [s, s] score matrices (already scaled by
 * 1/sqrt(d)): row i keeps columns j <= i (softmax in fp32), columns j > i become 0. */
cudaError_t ck_causal_softmax(void *scores, int64_t nmat, int64_t s, pdbx_dtype dt,
                              cudaStream_t stream);
/* The same over `nmat` row-major [q_len, kv_len] matrices whose queries are the last q_len of
 * the kv_len tokens (attention with a KV cache): row i keeps keys j <= kv_len - q_len + i
 * (cuda_attn_mask.h), the others become 0. q_len <= kv_len; ck_causal_softmax is q_len =
 * kv_len = s. */
cudaError_t ck_prefix_softmax(void *scores, int64_t nmat, int64_t q_len, int64_t kv_len,
                              pdbx_dtype dt, cudaStream_t stream);
/* ck_prefix_softmax with the attention core's options (cuda_attn_mask.h): row r keeps keys
 * ck_first_key(r, .., window) .. ck_keys_visible(r) - 1 (window <= 0: from 0), each score
 * soft-capped first, cap tanh(s / cap), when softcap > 0 (NaN, infinite or <= 0: none). lse:
 * NULL, or fp32 [nmat * q_len] that receives each row's natural log-sum-exp of its capped
 * scores (the backward's cap derivative needs it). window 0, softcap 0, lse NULL is
 * ck_prefix_softmax. */
cudaError_t ck_attn_softmax(void *scores, int64_t nmat, int64_t q_len, int64_t kv_len,
                            int64_t window, float softcap, float *lse, pdbx_dtype dt,
                            cudaStream_t stream);
/* Final-logit soft-capping (Gemma-2, on lm_head's output y of n elements, in place):
 * y <- cap tanh(y / cap), nothing done for cap <= 0, NaN or infinite. Its backward from the
 * capped y, out of place: dx = dy (cap - y)(cap + y) / cap^2 (cuda_attn_mask.h's ck_softcap,
 * ck_softcap_grad; cuda_softcap.cu), dx may be dy; out of place because the backend fills
 * d logits once and reuses it every step (a product in place would shrink it step after
 * step). No cap: dx = dy (copied unless dx is dy). */
cudaError_t ck_logit_softcap(void *y, int64_t n, float cap, pdbx_dtype dt, cudaStream_t stream);
cudaError_t ck_logit_softcap_bwd(const void *y, const void *dy, void *dx, int64_t n, float cap,
                                 pdbx_dtype dt, cudaStream_t stream);

/* Fused causal attention forward (cuda_flash.cu; docs/cuda-kernels.md, "Kernels and attention"):
 * out = softmax(scale Q K^T, causal) V with scale 1/sqrt(head_dim), in the layouts of
 * cuda_attention.h (q, out [seq, mbs, heads, d]; k, v [seq, mbs, kv_heads, d]; GQA: q head j
 * reads kv head j / (heads / kv_heads)), never materialising the scores. Online softmax over
 * CK_FLASH_TILE x CK_FLASH_TILE tiles, tiles above the diagonal skipped; fp32 statistics and
 * accumulation (bf16/fp16 on tensor cores, fp32 with FMA). Pointers 16-byte aligned
 * (cudaErrorInvalidValue otherwise, as for a head_dim and dtype ck_flash_supported refuses);
 * seq up to 65535 tiles. */
#define CK_FLASH_TILE 64
int ck_flash_supported(int64_t head_dim, pdbx_dtype dt);   /* 1: head_dim 64 or 128 */
size_t ck_flash_smem_bytes(int64_t head_dim, pdbx_dtype dt);   /* dynamic shared memory */
/* lse: NULL, or fp32 [mbs, heads, seq] that receives each query row's log-sum-exp in base 2
 * of the log2(e)-scaled scores, m + log2(l) (what the fused backward recomputes P from:
 * P = exp2(scale log2(e) S - lse)). */
cudaError_t ck_flash_attention(const void *q, const void *k, const void *v, void *out,
                               float *lse, int64_t mbs, int64_t seq, int64_t heads,
                               int64_t kv_heads, int64_t head_dim, pdbx_dtype dt,
                               cudaStream_t stream);

/* Fused causal attention backward (cuda_flash_bwd.cu; FlashAttention-2's algorithm, docs/cuda.md
 * "Fused backward"): from q, k, v, the forward's out and lse (ck_flash_attention) and dout, the
 * gradients dq (layout of q), dk and dv (layout of k: summed over each kv head's group of q
 * heads), never materialising an s x s matrix:
 *     delta_i = rowsum(dO_i o O_i)                                  (one warp per row)
 *     per key tile j (a block per sequence, kv head and key tile; the group's q heads and the
 *     query tiles i >= j in turn):  S = Q_i K_j^T,  P = exp2(scale log2e S - lse_i) (causal),
 *     dV_j += P^T dO_i,  dP = dO_i V_j^T,  dS = P o (dP - delta_i),  dK_j += scale dS^T Q_i,
 *     dQ_i += scale dS K_j (fp32 atomicAdd into dq_acc, then rounded into dq)
 * Tiles CK_FLASH_BWD_TILE x CK_FLASH_BWD_TILE, whole tiles on and below the diagonal (plan.h,
 * pdbx_attn_core_executed_flops). bf16/fp16 on tensor cores (wmma, P and dS rounded to the
 * dtype for their products, as FlashAttention-2), fp32 with FMA. Scratch: delta fp32
 * [mbs, heads, seq]; dq_acc fp32 [seq, mbs, heads, d] (for fp32 it may be dq itself). Both
 * are written here (dq_acc zeroed first), so nothing carries over between executions. The
 * same shapes, dtypes and alignment as ck_flash_attention. */
#define CK_FLASH_BWD_TILE 32
size_t ck_flash_bwd_smem_bytes(int64_t head_dim, pdbx_dtype dt);   /* 0 when not supported */
cudaError_t ck_flash_attention_bwd(const void *q, const void *k, const void *v, const void *out,
                                   const void *dout, const float *lse, float *delta,
                                   float *dq_acc, void *dq, void *dk, void *dv, int64_t mbs,
                                   int64_t seq, int64_t heads, int64_t kv_heads, int64_t head_dim,
                                   pdbx_dtype dt, cudaStream_t stream);

/* ---- backward (passes with bwd; docs/engine.md) ----
 * RMSNorm backward of y = x * rstd * w per row of [rows, cols] (rstd = rsqrt(mean(x^2)+eps)):
 * dx = rstd * w * dy - x * rstd^3 / cols * sum(w * dy * x) (overwritten, dtype); rstd[rows]
 * (fp32) is written by the first kernel and read by the second, which accumulates
 * dw[cols] (fp32, Megatron's main_grad) += sum over rows of dy * x * rstd. */
cudaError_t ck_rmsnorm_bwd(const void *x, const void *w, const void *dy, void *dx, float *rstd,
                           float *dw, int64_t rows, int64_t cols, float eps, pdbx_dtype dt,
                           cudaStream_t stream);
/* Backward of out = silu(g) * u (s = sigmoid(g)): dg = dout * u * s * (1 + g (1 - s)),
 * du = dout * silu(g), both overwritten. */
cudaError_t ck_silu_mul_bwd(const void *gate, const void *up, const void *dout, void *dgate,
                            void *dup, int64_t n, pdbx_dtype dt, cudaStream_t stream);
/* Softmax backward over `nmat` [s, s] probability matrices p (ck_causal_softmax's output) with
 * the gradient dp in place: dp = scale * p * (dp - sum_j p * dp) per row (0 above the diagonal,
 * where p is 0); scale folds the scores' 1/sqrt(d) in. */
cudaError_t ck_causal_softmax_bwd(const void *p, void *dp, int64_t nmat, int64_t s, float scale,
                                  pdbx_dtype dt, cudaStream_t stream);
/* The same for ck_attn_softmax's output over square [s, s] matrices with its window and cap:
 * dS is 0 outside each row's keys [ck_first_key, ck_keys_visible); with softcap > 0 it also
 * takes the cap's derivative at the capped score c = log p + lse (ck_softcap_grad; lse the
 * forward's, required then; p = 0 gives 0). window 0, softcap 0 is ck_causal_softmax_bwd. */
cudaError_t ck_attn_softmax_bwd(const void *p, void *dp, const float *lse, int64_t nmat,
                                int64_t s, float scale, int64_t window, float softcap,
                                pdbx_dtype dt, cudaStream_t stream);
/* Vocab-parallel embedding gradient: dtable[ids[t]-vstart, :] += dy[t, :] (atomicAdd in fp32)
 * for the tokens whose id lies in this rank's shard [vstart, vstart+vrows); dtable fp32. */
cudaError_t ck_embed_scatter_add(const int32_t *ids, int64_t tokens, const void *dy, int64_t vstart,
                                 int64_t vrows, int64_t h, float *dtable, pdbx_dtype dt,
                                 cudaStream_t stream);

/* Linear-layer bias over row-major y [rows, cols] (the GEMM's output, in place, dtype):
 * y[r, c] += bias[c] (gemm_api cublas, whose cublasGemmEx has no bias epilogue). */
cudaError_t ck_bias_add(void *y, const void *bias, int64_t rows, int64_t cols, pdbx_dtype dt,
                        cudaStream_t stream);
/* Bias gradient: db[c] (fp32, accumulated as the weight gradients) += sum over rows of
 * dy[r, c] (dy [rows, cols] in dt; fp32 sums, one atomicAdd per column and block). */
cudaError_t ck_bias_grad(const void *dy, float *db, int64_t rows, int64_t cols, pdbx_dtype dt,
                         cudaStream_t stream);

/* *acc += sum of x[0..n) in double (atomicAdd; acc is a device pointer). */
cudaError_t ck_accumulate_sum(const void *x, size_t n, pdbx_dtype dt, double *acc,
                              cudaStream_t stream);

/* One thread busy-waits `ns` nanoseconds of the GPU's %globaltimer (not SM cycles: the same
 * wait on every GPU whatever its clock): queued before a start event it keeps the GPU busy
 * while the host enqueues the timed work, so the launch gap is not timed. */
cudaError_t ck_spin_ns(long long ns, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
