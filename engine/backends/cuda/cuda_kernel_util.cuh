/* cuda_kernel_util.cuh: device helpers shared by the cuda backend's kernel files
 * (cuda_kernels.cu, cuda_kernels_bwd.cu, cuda_flash.cu, cuda_flash_bwd.cu). CUDA C++ only.
 *
 *  - storage types: to_f32 / from_f32 between __nv_bfloat16, __half, float and fp32 (round to
 *    nearest even, as PyTorch's casts), CK_DISPATCH from pdbx_dtype to the type;
 *  - grid sizes for grid-stride loops and for one warp per row;
 *  - the row kernels' walk: one warp per row, a scalar head up to the first 16-byte boundary,
 *    whole 16-byte vectors while every pointer of the row is aligned, a scalar tail (the split
 *    is cuda_rowsplit.h, host-tested), with vector loads and stores in fp32.
 * Everything is in namespace ck and inline, so every file that includes it has its own copy
 * of the device code (no relocatable device code is built).
 */
#ifndef PDBX_CUDA_KERNEL_UTIL_CUH
#define PDBX_CUDA_KERNEL_UTIL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "engine/backends/cuda/cuda_rowsplit.h"
#include "engine/plan/plan.h"

namespace ck {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = 8;   /* row kernels: 256 threads, 8 warps, 8 rows */

inline int64_t dtype_bytes(pdbx_dtype dt)
{
    return dt == PDBX_DTYPE_FP32 ? 4 : (dt == PDBX_DTYPE_BF16 || dt == PDBX_DTYPE_FP16) ? 2 : 0;
}

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

/* Grid for grid-stride loops: enough blocks to fill any current GPU, capped so the launch
 * stays small for small n. */
inline unsigned grid_for(size_t n, unsigned block)
{
    size_t blocks = (n + block - 1) / block;
    if (blocks > 65535u)
        blocks = 65535u;
    return blocks ? (unsigned)blocks : 1u;
}

/* Blocks for one warp per row, kRowsPerBlock rows a block (rows <= 0x7fffffff: checked). */
inline unsigned warp_rows_grid(int64_t rows)
{
    return (unsigned)((rows + kRowsPerBlock - 1) / kRowsPerBlock);
}

/* Threads per block for a row of `cols` elements: a multiple of 32 between 32 and 1024. */
inline unsigned row_block(int64_t cols)
{
    unsigned b = 32;
    while (b < 1024 && (int64_t)b * 4 < cols)
        b *= 2;
    return b;
}

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = kWarp / 2; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = kWarp / 2; o > 0; o /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

template <typename T> __host__ __device__ constexpr int vec_elems() { return 16 / (int)sizeof(T); }

__device__ __forceinline__ bool aligned16(const void *p) { return (uintptr_t)p % 16 == 0; }

/* cuda_rowsplit.h's split for up to three arrays indexed alike. */
template <typename T>
__device__ __forceinline__ ck_row_split split_row(int64_t n, const T *p0, const T *p1 = nullptr,
                                                  const T *p2 = nullptr)
{
    return ck_split_row(n, (uintptr_t)p0, (uintptr_t)p1, (uintptr_t)p2, (int64_t)sizeof(T));
}

/* f(j, std::integral_constant<int, C>) handles elements j..j+C-1 (C = 1 or the vector). */
template <typename T, typename F>
__device__ __forceinline__ void warp_walk(const ck_row_split &sp, int64_t n, F f)
{
    constexpr int W = vec_elems<T>();
    const int lane = threadIdx.x % kWarp;
    for (int64_t j = lane; j < sp.head; j += kWarp)
        f(j, std::integral_constant<int, 1>{});
    for (int64_t v = lane; v < sp.nvec; v += kWarp)
        f(sp.head + v * W, std::integral_constant<int, W>{});
    for (int64_t j = sp.body_end + lane; j < n; j += kWarp)
        f(j, std::integral_constant<int, 1>{});
}

template <typename T, int C>
__device__ __forceinline__ void load_c(const T *p, float (&out)[C])
{
    if constexpr (C == 1) {
        out[0] = to_f32(p[0]);
    } else {
        static_assert(C == vec_elems<T>(), "a whole vector");
        uint4 raw = *reinterpret_cast<const uint4 *>(p);
        const T *e = reinterpret_cast<const T *>(&raw);
#pragma unroll
        for (int i = 0; i < C; i++)
            out[i] = to_f32(e[i]);
    }
}

/* As load_c for a pointer whose alignment at the vector's start is not known (the norm
 * weight, shared by rows of any misalignment): a vector when it is aligned, else scalars. */
template <typename T, int C>
__device__ __forceinline__ void load_c_any(const T *p, float (&out)[C])
{
    if constexpr (C == 1) {
        out[0] = to_f32(p[0]);
    } else {
        if (aligned16(p)) {
            load_c<T, C>(p, out);
        } else {
#pragma unroll
            for (int i = 0; i < C; i++)
                out[i] = to_f32(p[i]);
        }
    }
}

template <typename T, int C>
__device__ __forceinline__ void store_c(T *p, const float (&in)[C])
{
    if constexpr (C == 1) {
        p[0] = from_f32<T>(in[0]);
    } else {
        uint4 raw;
        T *e = reinterpret_cast<T *>(&raw);
#pragma unroll
        for (int i = 0; i < C; i++)
            e[i] = from_f32<T>(in[i]);
        *reinterpret_cast<uint4 *>(p) = raw;
    }
}

/* This thread's row (warp w of the block), or -1 past the last row. */
__device__ __forceinline__ int64_t warp_row(int64_t rows)
{
    int64_t r = (int64_t)blockIdx.x * kRowsPerBlock + threadIdx.x / kWarp;
    return r < rows ? r : -1;
}

} /* namespace ck */

/* Runs the statements with T the storage type of dt; an unknown dtype returns
 * cudaErrorInvalidValue from the enclosing function. */
#define CK_DISPATCH(dt, T, ...)                                               \
    switch (dt) {                                                             \
    case PDBX_DTYPE_BF16: { typedef __nv_bfloat16 T; __VA_ARGS__; break; }   \
    case PDBX_DTYPE_FP16: { typedef __half T; __VA_ARGS__; break; }          \
    case PDBX_DTYPE_FP32: { typedef float T; __VA_ARGS__; break; }           \
    default: return cudaErrorInvalidValue;                                    \
    }

#endif
