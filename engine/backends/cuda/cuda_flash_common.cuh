/* cuda_flash_common.cuh: what the fused attention forward (cuda_flash.cu) and backward
 * (cuda_flash_bwd.cu) share: the sequence-major layout of cuda_attention.h
 * (q, out [seq, mbs, heads, D]; k, v [seq, mbs, kv_heads, D]), tile loads into shared memory,
 * the log-sum-exp layout the forward saves for the backward, and the dynamic shared memory
 * opt-in of a launch. CUDA C++ only; namespace ck_flash, all inline. */
#ifndef PDBX_CUDA_FLASH_COMMON_CUH
#define PDBX_CUDA_FLASH_COMMON_CUH

#include "engine/backends/cuda/cuda_kernel_util.cuh"

namespace ck_flash {

constexpr float kLog2e = 1.4426950408889634f;

/* Element offset of row (pos, b, head) in a [seq, mbs, nheads, D] tensor. */
template <int D>
__device__ __forceinline__ int64_t row_off(int64_t pos, int64_t b, int64_t head, int64_t mbs,
                                           int64_t nheads)
{
    return ((pos * mbs + b) * nheads + head) * D;
}

/* Index of query pos of (sequence b, q head h) in the fp32 log-sum-exp [mbs, heads, seq]
 * (the backward's delta has the same layout). */
__device__ __forceinline__ int64_t lse_index(int64_t pos, int64_t b, int64_t h, int64_t heads,
                                             int64_t seq)
{
    return (b * heads + h) * seq + pos;
}

/* Copies ROWS rows (pos0.., zero past seq) of D elements into shared rows of ld elements with
 * 16-byte vectors (ld * sizeof(T) a multiple of 16); every thread of the block takes part. */
template <typename T, int D, int ROWS>
__device__ __forceinline__ void load_tile(T *dst, int ld, const T *src, int64_t pos0, int64_t seq,
                                          int64_t b, int64_t head, int64_t mbs, int64_t nheads)
{
    constexpr int kVec = 16 / (int)sizeof(T), kRowVecs = D / kVec;
    for (int idx = threadIdx.x; idx < ROWS * kRowVecs; idx += blockDim.x) {
        int r = idx / kRowVecs, c = (idx % kRowVecs) * kVec;
        int64_t pos = pos0 + r;
        uint4 val = make_uint4(0, 0, 0, 0);
        if (pos < seq)
            val = *reinterpret_cast<const uint4 *>(src + row_off<D>(pos, b, head, mbs, nheads) + c);
        *reinterpret_cast<uint4 *>(dst + r * ld + c) = val;
    }
}

/* Launches kernel<<<grid, block, smem>>>(args) after the opt-in to more than 48 KiB of dynamic
 * shared memory (per device and function; cheap to repeat, and a rank uses one device). */
template <typename K, typename A>
cudaError_t launch(K kernel, dim3 grid, unsigned block, size_t smem, const A &args,
                   cudaStream_t stream)
{
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)smem);
    if (e != cudaSuccess)
        return e;
    kernel<<<grid, block, smem, stream>>>(args);
    return cudaGetLastError();
}

} /* namespace ck_flash */

#endif
