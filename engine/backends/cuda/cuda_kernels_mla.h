/* cuda_kernels_mla.h: the cuda backend's kernels for the attention variants beyond a Llama's
 * (cuda_mla.h runs them): an RMSNorm over strided rows and its backward (MLA's kv_norm over
 * kv_a's latent, in place in its [rows, rkv + rope] layout; the backward also serves MLA's
 * q_norm and qwen3's per-head q/k norm in place), and MLA's gather of k and v out of the
 * latent's outputs with its transpose. Implemented in cuda_kernels_mla.cu, callable from C.
 *
 * Contract (that of cuda_kernels.h and cuda_kernels_dense.h):
 *  - Every function enqueues its kernel(s) on `stream` and returns the launch status; nothing
 *    here synchronises. Arguments out of range return cudaErrorInvalidValue before any CUDA
 *    call (the host test checks this without a device).
 *  - Element types follow pdbx_dtype (bf16, fp16, fp32); arithmetic in fp32, each result
 *    rounded once to the storage type; norm weights in the dtype, their gradient fp32 and
 *    accumulated (+=).
 *  - The layouts and walks are cuda_mla_walk.h's (host-tested); sizes are element counts.
 *  - These symbols are hidden in libpdbx_cuda.so (-fvisibility=hidden).
 */
#ifndef PDBX_CUDA_KERNELS_MLA_H
#define PDBX_CUDA_KERNELS_MLA_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#include "engine/backends/cuda/cuda_mla_walk.h"
#include "engine/plan/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* RMSNorm (ck_rmsnorm's arithmetic: normalised in fp32, rounded, then times w) of the first
 * cols elements of rows of stride ldx into rows of stride ldy (ld >= cols); elements past
 * cols are neither read nor written. One warp per row. */
cudaError_t ck_rmsnorm_strided(const void *x, int64_t ldx, const void *w, void *y, int64_t ldy,
                               int64_t rows, int64_t cols, float eps, pdbx_dtype dt,
                               cudaStream_t stream);
/* Its backward in one kernel: per row, rstd = rsqrt(mean(x^2) + eps) and
 * dx = rstd w dy - x rstd^3 / cols sum(w dy x) (the first cols elements of each row of stride
 * lddx overwritten); dw[cols] += sum over rows of dy x rstd (fp32, a shared-memory partial per
 * block, one atomicAdd per column and block). dx may be dy (in place, lddx == ldy): each
 * element of dy is read before the same thread overwrites it. cols <= CK_MLA_NORM_MAX_COLS. */
cudaError_t ck_rmsnorm_strided_bwd(const void *x, int64_t ldx, const void *w, const void *dy,
                                   int64_t ldy, void *dx, int64_t lddx, float *dw, int64_t rows,
                                   int64_t cols, float eps, pdbx_dtype dt, cudaStream_t stream);

/* MLA's k and v out of kv_b's output and kv_a's k_pe (after attn_rope rotated k_pe):
 * k[r, h] = (kvb[r, h, :nope], kva[r, rkv:]), v[r, h] = kvb[r, h, nope:] (HF
 * DeepseekV2Attention's cat and split). rope >= 1, dv >= 1. */
cudaError_t ck_mla_kv_gather(const void *kva, const void *kvb, void *k, void *v, int64_t rows,
                             const ck_mla_shape *s, pdbx_dtype dt, cudaStream_t stream);
/* Its transpose: dkvb = (dk's nope parts, dv) per head (overwritten); dkva's k_pe columns =
 * the sum over the heads of dk's rope parts (fp32 sum in head order, overwritten); dkva's
 * latent columns untouched (kv_norm's backward writes them). */
cudaError_t ck_mla_kv_scatter(const void *dk, const void *dv, void *dkva, void *dkvb, int64_t rows,
                              const ck_mla_shape *s, pdbx_dtype dt, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
