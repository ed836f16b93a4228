/* cuda_kernels_dense.h: the cuda backend's kernels for the dense model families beyond Llama
 * (issue 24): LayerNorm with bias (GPT-2, GPT-NeoX, OPT, Falcon), GELU plain and gated
 * (GPT-2's MLP, Gemma's GeGLU), learned absolute position embeddings (GPT-2's wpe), each with
 * its backward. Implemented in cuda_kernels_dense.cu, callable from C.
 *
 * Contract (that of cuda_kernels.h):
 *  - Every function enqueues its kernel(s) on `stream` and returns the launch status
 *    (cudaGetLastError() right after the launch); nothing here synchronises. Arguments out of
 *    range return cudaErrorInvalidValue before any CUDA call.
 *  - Element types follow pdbx_dtype (bf16, fp16, fp32). Arithmetic is done in fp32 and each
 *    result rounded once to the storage type, as PyTorch's kernels do; where PyTorch runs two
 *    kernels (a gated GELU's activation and product) the intermediate is rounded as there.
 *  - Weight gradients are fp32 and accumulated (+=; atomicAdd where blocks of rows meet), as
 *    ck_rmsnorm_bwd's dweight; input gradients are overwritten in the dtype.
 *  - Shapes are row-major; sizes are element counts (not bytes). Tokens are sequence-major:
 *    row = position * mbs + sequence (cuda_attention.h).
 *  - GELU uses erff and tanhf, its backward expf (the accurate CUDA functions, not the
 *    __expf intrinsics): the kernels are memory-bound, so exactness costs nothing measurable.
 *  - How the kernels walk the arrays (vectors, items, the statistics' merge) is
 *    cuda_dense_walk.h, host-tested.
 *  - These symbols are hidden in libpdbx_cuda.so (-fvisibility=hidden).
 */
#ifndef PDBX_CUDA_KERNELS_DENSE_H
#define PDBX_CUDA_KERNELS_DENSE_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#include "engine/plan/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.nn.LayerNorm over rows of [rows, cols]: y = (x - mean) * rstd * w + b (biased
 * variance, rstd = rsqrt(var + eps), statistics in fp32, b may be NULL); mean[rows], rstd[rows]
 * (fp32) written when not NULL (the backward's inputs). One warp per row, 8 rows per block;
 * cols <= 2^24 (the statistics count elements in fp32). */
cudaError_t ck_layernorm(const void *x, const void *w, const void *b, void *y, float *mean,
                         float *rstd, int64_t rows, int64_t cols, float eps, pdbx_dtype dt,
                         cudaStream_t stream);
/* Its backward from the forward's mean and rstd: dx = rstd * (w*dy - mean_c(w*dy) - xhat *
 * mean_c(w*dy*xhat)), xhat = (x - mean) * rstd (overwritten, dtype; one warp per row);
 * dw += sum_rows dy*xhat, db += sum_rows dy (fp32, db may be NULL; a second kernel of 32
 * columns x 8 row lanes per block, one atomicAdd per column and block). */
cudaError_t ck_layernorm_bwd(const void *x, const void *w, const float *mean, const float *rstd,
                             const void *dy, void *dx, float *dw, float *db, int64_t rows,
                             int64_t cols, pdbx_dtype dt, cudaStream_t stream);

/* torch's gelu, approximate='none' (x/2 (1 + erf(x/sqrt 2))) | 'tanh'
 * (x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))). */
typedef enum { CK_GELU_ERF = 0, CK_GELU_TANH } ck_gelu_kind;

/* The four GELU functions are element-wise over n elements: 16-byte vectors where every array
 * is 16-byte aligned at the same element (after a scalar head; cuda_dense_walk.h,
 * ck_split_flat), one element per thread otherwise. out = gelu(x). */
cudaError_t ck_gelu(const void *x, void *out, int64_t n, ck_gelu_kind kind, pdbx_dtype dt,
                    cudaStream_t stream);
/* out = gelu(gate) * up (Gemma's gated GELU; gelu rounded to the dtype before the product, as
 * PyTorch's two kernels do, like ck_silu_mul). */
cudaError_t ck_gelu_mul(const void *gate, const void *up, void *out, int64_t n, ck_gelu_kind kind,
                        pdbx_dtype dt, cudaStream_t stream);
/* dx = dout * gelu'(x) (torch's gelu_backward; overwritten). */
cudaError_t ck_gelu_bwd(const void *x, const void *dout, void *dx, int64_t n, ck_gelu_kind kind,
                        pdbx_dtype dt, cudaStream_t stream);
/* The backward of ck_gelu_mul as PyTorch's autograd runs it (the product's backward, then
 * gelu_backward), with its roundings: dup = dout * gelu(gate) (gelu rounded first, as the
 * forward); dgate = gelu'(gate) * (dout * up rounded). Both overwritten. */
cudaError_t ck_gelu_mul_bwd(const void *gate, const void *up, const void *dout, void *dgate,
                            void *dup, int64_t n, ck_gelu_kind kind, pdbx_dtype dt,
                            cudaStream_t stream);

/* Learned absolute position embeddings (GPT-2's wpe) added in place to x [tokens, h]
 * (tokens = mbs * seq, sequence-major: row r is position r / mbs): x[r, :] += table[r / mbs, :],
 * table [seq, h] in the dtype; 16-byte vectors when h allows and both are aligned
 * (ck_pos_embed_width), one element per thread otherwise. tokens a multiple of mbs. */
cudaError_t ck_pos_embed_add(void *x, const void *table, int64_t tokens, int64_t h, int64_t mbs,
                             pdbx_dtype dt, cudaStream_t stream);
/* dtable[p, :] += sum over the mbs rows of position p of dx (fp32 dtable [seq, h], no atomics:
 * one thread per position and column, or 16-byte vector of dx, sums its mbs rows). */
cudaError_t ck_pos_embed_bwd(const void *dx, float *dtable, int64_t tokens, int64_t h, int64_t mbs,
                             pdbx_dtype dt, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
