/* cuda_kernels_mla.cu: the kernels of cuda_kernels_mla.h (contract there): the strided RMSNorm
 * and its one-kernel backward, MLA's k/v gather and its transpose. Templated on the storage
 * type T, computing in fp32; CK_DISPATCH maps pdbx_dtype to T. The walks are
 * cuda_mla_walk.h's, which the host part of tests/cuda/test_cuda_kernels_mla.c checks.
 *
 * The norms walk a row one element per lane (coalesced, no 16-byte vectors): their rows are
 * strided (kv_a's latent) or short (a head of 64-192 dims), where the vector split of
 * cuda_rowsplit.h would leave mostly head and tail.
 */
#include "engine/backends/cuda/cuda_kernels_mla.h"
#include "engine/backends/cuda/cuda_kernel_util.cuh"

namespace {

using namespace ck;

/* One warp per row: ck_rmsnorm's arithmetic on the first cols elements of strided rows. */
template <typename T>
__global__ void __launch_bounds__(kRowsPerBlock * kWarp)
rmsnorm_strided_kernel(const T *x, int64_t ldx, const T *w, T *y, int64_t ldy, int64_t rows,
                       int64_t cols, float eps)
{
    const int64_t r = warp_row(rows);
    if (r < 0)
        return;   /* the whole warp: the shuffles below stay within full warps */
    const int lane = threadIdx.x % kWarp;
    const T *xr = x + r * ldx;
    T *yr = y + r * ldy;
    float ss = 0.0f;
    for (int64_t j = lane; j < cols; j += kWarp) {
        const float v = to_f32(xr[j]);
        ss += v * v;
    }
    const float inv = rsqrtf(warp_sum(ss) / (float)cols + eps);
    for (int64_t j = lane; j < cols; j += kWarp)   /* normalise, round, then scale (HF) */
        yr[j] = from_f32<T>(to_f32(w[j]) * to_f32(from_f32<T>(to_f32(xr[j]) * inv)));
}

/* dx of each row (cuda_mla_walk.h's rows per warp) and the block's dweight partial in shared
 * memory, added to dw once per column at the end. A lane reads dy[j] and x[j] before it writes
 * dx[j], and only it touches j of that row: dx may be dy. */
template <typename T>
__global__ void rmsnorm_strided_bwd_kernel(const T *x, int64_t ldx, const T *w, const T *dy, int64_t ldy, T *dx,
                           int64_t lddx, float *dw, int64_t rows, int64_t cols, float eps)
{
    extern __shared__ float part[];   /* cols */
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        part[j] = 0.0f;
    __syncthreads();
    const int lane = threadIdx.x % kWarp, wid = threadIdx.x / kWarp;
    for (int64_t k = 0;; k++) {
        const int64_t r = ck_mla_norm_row(rows, gridDim.x, blockIdx.x, wid, k);
        if (r < 0)
            break;   /* the whole warp (r is the warp's) */
        const T *xr = x + r * ldx, *gr = dy + r * ldy;
        T *o = dx + r * lddx;
        float ss = 0.0f, dot = 0.0f;
        for (int64_t j = lane; j < cols; j += kWarp) {
            const float xv = to_f32(xr[j]);
            ss += xv * xv;
            dot += to_f32(w[j]) * to_f32(gr[j]) * xv;
        }
        const float inv = rsqrtf(warp_sum(ss) / (float)cols + eps);
        const float coef = warp_sum(dot) * inv * inv * inv / (float)cols;
        for (int64_t j = lane; j < cols; j += kWarp) {
            const float xv = to_f32(xr[j]), gv = to_f32(gr[j]);
            atomicAdd(&part[j], gv * xv * inv);
            o[j] = from_f32<T>(inv * to_f32(w[j]) * gv - coef * xv);
        }
    }
    __syncthreads();
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        atomicAdd(&dw[j], part[j]);
}

/* The gather and the scatter: item i of the walk, grid-stride; the four arrays by CK_MLA_*. */
template <typename T, bool Scatter>
__global__ void mla_kv_kernel(const T *src0, const T *src1, T *dst0, T *dst1, int64_t rows,
                              ck_mla_shape s, int64_t items)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < items;
         i += (int64_t)gridDim.x * blockDim.x) {
        const ck_mla_item it = Scatter ? ck_mla_scatter_item(i, rows, &s) : ck_mla_gather_item(i, rows, &s);
        /* gather: src0 kva, src1 kvb, dst0 k, dst1 v; scatter: src0 dk, src1 dv, dst0 dkva,
         * dst1 dkvb */
        const bool first_src = Scatter ? it.src == CK_MLA_K : it.src == CK_MLA_KVA;
        const bool first_dst = Scatter ? it.dst == CK_MLA_KVA : it.dst == CK_MLA_K;
        const T *src = first_src ? src0 : src1;
        float acc = 0.0f;
        for (int64_t n = 0; n < it.count; n++)
            acc += to_f32(src[it.src_off + n * it.src_stride]);
        (first_dst ? dst0 : dst1)[it.dst_off] = from_f32<T>(acc);
    }
}

bool mla_shape_ok(int64_t rows, const ck_mla_shape *s)
{
    return s && rows > 0 && s->heads > 0 && s->nope >= 0 && s->rope > 0 && s->dv > 0 && s->rkv > 0;
}

} /* namespace */

extern "C" cudaError_t ck_rmsnorm_strided(const void *x, int64_t ldx, const void *w, void *y, int64_t ldy,
                                          int64_t rows, int64_t cols, float eps, pdbx_dtype dt,
                                          cudaStream_t stream)
{
    if (rows <= 0 || rows > 0x7fffffff || cols <= 0 || ldx < cols || ldy < cols)
        return cudaErrorInvalidValue;
    CK_DISPATCH(dt, T, rmsnorm_strided_kernel<T><<<warp_rows_grid(rows), kRowsPerBlock * kWarp, 0, stream>>>(
                        static_cast<const T *>(x), ldx, static_cast<const T *>(w), static_cast<T *>(y),
                        ldy, rows, cols, eps));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_rmsnorm_strided_bwd(const void *x, int64_t ldx, const void *w, const void *dy,
                                              int64_t ldy, void *dx, int64_t lddx, float *dw, int64_t rows,
                                              int64_t cols, float eps, pdbx_dtype dt, cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0 || cols > CK_MLA_NORM_MAX_COLS || ldx < cols || ldy < cols || lddx < cols ||
        (dx == dy && lddx != ldy))
        return cudaErrorInvalidValue;
    const unsigned blocks = (unsigned)ck_mla_norm_blocks(rows);
    const size_t smem = (size_t)cols * sizeof(float);
    CK_DISPATCH(dt, T, rmsnorm_strided_bwd_kernel<T><<<blocks, CK_MLA_NORM_WARPS * kWarp, smem, stream>>>(
                        static_cast<const T *>(x), ldx, static_cast<const T *>(w),
                        static_cast<const T *>(dy), ldy, static_cast<T *>(dx), lddx, dw, rows, cols, eps));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_mla_kv_gather(const void *kva, const void *kvb, void *k, void *v, int64_t rows,
                                        const ck_mla_shape *s, pdbx_dtype dt, cudaStream_t stream)
{
    if (!mla_shape_ok(rows, s))
        return cudaErrorInvalidValue;
    const int64_t items = ck_mla_gather_items(rows, s);
    CK_DISPATCH(dt, T, mla_kv_kernel<T, false><<<grid_for((size_t)items, 256), 256, 0, stream>>>(
                        static_cast<const T *>(kva), static_cast<const T *>(kvb), static_cast<T *>(k),
                        static_cast<T *>(v), rows, *s, items));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_mla_kv_scatter(const void *dk, const void *dv, void *dkva, void *dkvb, int64_t rows,
                                         const ck_mla_shape *s, pdbx_dtype dt, cudaStream_t stream)
{
    if (!mla_shape_ok(rows, s))
        return cudaErrorInvalidValue;
    const int64_t items = ck_mla_scatter_items(rows, s);
    CK_DISPATCH(dt, T, mla_kv_kernel<T, true><<<grid_for((size_t)items, 256), 256, 0, stream>>>(
                        static_cast<const T *>(dk), static_cast<const T *>(dv), static_cast<T *>(dkva),
                        static_cast<T *>(dkvb), rows, *s, items));
    return cudaGetLastError();
}
