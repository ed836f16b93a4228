/* cuda_kernels_bwd.cu: the backward's own kernels of the cuda backend (passes with bwd;
 * contract in cuda_kernels.h, docs/engine.md "Backward pass"): RMSNorm (dx and rstd, then the
 * fp32 weight gradient), SiLU x up, the causal softmax, the embedding's scatter-add and the
 * bias gradient. Templated on the storage type, computing in fp32, as cuda_kernels.cu.
 */
#include "engine/backends/cuda/cuda_kernels.h"
#include "engine/backends/cuda/cuda_attn_mask.h"
#include "engine/backends/cuda/cuda_kernel_util.cuh"

namespace {

using namespace ck;

/* One warp per row: dx and the row's rstd (kept for the dweight kernel). */
template <typename T>
__global__ void __launch_bounds__(kRowsPerBlock * kWarp)
rmsnorm_bwd_dx_kernel(const T *x, const T *w, const T *dy, T *dx, float *rstd, int64_t rows,
                      int64_t cols, float eps)
{
    const int64_t r = warp_row(rows);
    if (r < 0)
        return;
    const T *xr = x + r * cols, *gr = dy + r * cols;
    T *o = dx + r * cols;
    const ck_row_split sp = split_row<T>(cols, xr, gr, static_cast<const T *>(o));
    float ss = 0.0f, dot = 0.0f;
    warp_walk<T>(sp, cols, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float xv[C], gv[C], wv[C];
        load_c<T, C>(xr + j, xv);
        load_c<T, C>(gr + j, gv);
        load_c_any<T, C>(w + j, wv);
#pragma unroll
        for (int e = 0; e < C; e++) {
            ss += xv[e] * xv[e];
            dot += wv[e] * gv[e] * xv[e];
        }
    });
    ss = warp_sum(ss);
    dot = warp_sum(dot);
    const float inv = rsqrtf(ss / (float)cols + eps);
    const float coef = dot * inv * inv * inv / (float)cols;
    warp_walk<T>(sp, cols, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float xv[C], gv[C], wv[C];
        load_c<T, C>(xr + j, xv);
        load_c<T, C>(gr + j, gv);
        load_c_any<T, C>(w + j, wv);
#pragma unroll
        for (int e = 0; e < C; e++)
            xv[e] = inv * wv[e] * gv[e] - coef * xv[e];
        store_c<T, C>(o + j, xv);
    });
    if (threadIdx.x % kWarp == 0)
        rstd[r] = inv;
}

/* dw[j] += sum_r dy[r,j] x[r,j] rstd[r]: 32 columns x 8 row lanes per block, the row range
 * split over gridDim.y blocks whose partial sums meet in one atomicAdd per column and block. */
template <typename T>
__global__ void rmsnorm_bwd_dw_kernel(const T *x, const T *dy, const float *rstd, float *dw,
                                      int64_t rows, int64_t cols)
{
    __shared__ float part[8][kWarp + 1];
    int64_t j = blockIdx.x * (int64_t)kWarp + threadIdx.x;
    float acc = 0.0f;
    if (j < cols)
        for (int64_t r = blockIdx.y * 8 + threadIdx.y; r < rows; r += (int64_t)gridDim.y * 8)
            acc += to_f32(dy[r * cols + j]) * to_f32(x[r * cols + j]) * rstd[r];
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < cols) {
        float s = 0.0f;
        for (int y = 0; y < 8; y++)
            s += part[y][threadIdx.x];
        atomicAdd(&dw[j], s);
    }
}

template <typename T>
__global__ void silu_mul_bwd_kernel(const T *gate, const T *up, const T *dout, T *dgate, T *dup,
                                    int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float g = to_f32(gate[i]), d = to_f32(dout[i]);
        float s = 1.0f / (1.0f + __expf(-g));
        dgate[i] = from_f32<T>(d * to_f32(up[i]) * s * (1.0f + g * (1.0f - s)));
        dup[i] = from_f32<T>(d * g * s);
    }
}

/* One warp per row, as the forward softmax, over the keys [lo, keys) the row saw (P is 0
 * elsewhere, so is dS). With cap > 0 the scores were capped: dS takes the cap's derivative at
 * the capped score c = log p + lse (ck_softcap_grad; lse the forward's natural log-sum-exp);
 * p = 0 (underflow) gives dS = 0 whatever the factor. */
template <typename T>
__global__ void __launch_bounds__(kRowsPerBlock * kWarp)
causal_softmax_bwd_kernel(const T *p, T *dp, int64_t nrows, int64_t s, float scale,
                          int64_t window, float cap, const float *lse)
{
    const int64_t r = warp_row(nrows);
    if (r < 0)
        return;
    const int64_t keys = ck_keys_visible(r, s, s);   /* cuda_attn_mask.h: j <= i */
    const int64_t lo = ck_first_key(r, s, s, window);
    const float rl = cap > 0.0f ? lse[r] : 0.0f;
    const T *pr = p + r * s;
    T *gr = dp + r * s;
    float dot = 0.0f;
    warp_walk<T>(split_row<T>(keys - lo, pr + lo, static_cast<const T *>(gr + lo)), keys - lo,
                 [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float pv[C], gv[C];
        load_c<T, C>(pr + lo + j, pv);
        load_c<T, C>(gr + lo + j, gv);
#pragma unroll
        for (int e = 0; e < C; e++)
            dot += pv[e] * gv[e];
    });
    dot = warp_sum(dot);
    warp_walk<T>(split_row<T>(s, pr, static_cast<const T *>(gr)), s, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float pv[C], gv[C];
        if (j + C > lo && j < keys) {
            load_c<T, C>(pr + j, pv);
            load_c<T, C>(gr + j, gv);
        }
#pragma unroll
        for (int e = 0; e < C; e++) {
            const bool in = j + e >= lo && j + e < keys;
            float g = in ? scale * pv[e] * (gv[e] - dot) : 0.0f;
            if (cap > 0.0f && in)
                g = pv[e] > 0.0f ? g * ck_softcap_grad(logf(pv[e]) + rl, cap) : 0.0f;
            gv[e] = g;
        }
        store_c<T, C>(gr + j, gv);
    });
}

template <typename T>
__global__ void embed_scatter_add_kernel(const int32_t *ids, const T *dy, int64_t vstart,
                                         int64_t vrows, int64_t h, float *dtable)
{
    int64_t t = blockIdx.x;
    int64_t id = (int64_t)ids[t] - vstart;
    if (id < 0 || id >= vrows)
        return;   /* another rank's shard */
    for (int64_t j = threadIdx.x; j < h; j += blockDim.x)
        atomicAdd(&dtable[id * h + j], to_f32(dy[t * h + j]));
}

/* db[c] += sum over rows of dy[r, c]: a block of kWarp columns x kBiasRowsY row lanes; each
 * lane sums a strided share of the rows of its column (coalesced across the warp), the
 * lanes are reduced in shared memory and one atomicAdd per column and block adds the part. */
constexpr int kBiasRowsY = 8;
template <typename T>
__global__ void bias_grad_kernel(const T *dy, float *db, int64_t rows, int64_t cols)
{
    __shared__ float part[kBiasRowsY][kWarp + 1];
    const int64_t c = blockIdx.x * (int64_t)kWarp + threadIdx.x;
    float acc = 0.0f;
    if (c < cols)
        for (int64_t r = blockIdx.y * (int64_t)kBiasRowsY + threadIdx.y; r < rows;
             r += (int64_t)gridDim.y * kBiasRowsY)
            acc += to_f32(dy[r * cols + c]);
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        float sum = 0.0f;
        for (int i = 0; i < kBiasRowsY; i++)
            sum += part[i][threadIdx.x];
        atomicAdd(&db[c], sum);
    }
}

} /* namespace */

extern "C" cudaError_t ck_rmsnorm_bwd(const void *x, const void *w, const void *dy, void *dx,
                                      float *rstd, float *dw, int64_t rows, int64_t cols, float eps,
                                      pdbx_dtype dt, cudaStream_t stream)
{
    if (rows <= 0 || rows > 0x7fffffff || cols <= 0)
        return cudaErrorInvalidValue;
    CK_DISPATCH(dt, T, rmsnorm_bwd_dx_kernel<T><<<warp_rows_grid(rows), kRowsPerBlock * kWarp, 0,
                                               stream>>>(
                        static_cast<const T *>(x), static_cast<const T *>(w),
                        static_cast<const T *>(dy), static_cast<T *>(dx), rstd, rows, cols, eps));
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    int64_t ysplit = (rows + 63) / 64;   /* about 64 rows per block */
    if (ysplit > 1024)
        ysplit = 1024;
    dim3 grid((unsigned)((cols + kWarp - 1) / kWarp), (unsigned)ysplit), blk(kWarp, 8);
    CK_DISPATCH(dt, T, rmsnorm_bwd_dw_kernel<T><<<grid, blk, 0, stream>>>(
                        static_cast<const T *>(x), static_cast<const T *>(dy), rstd, dw, rows, cols));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_silu_mul_bwd(const void *gate, const void *up, const void *dout,
                                       void *dgate, void *dup, int64_t n, pdbx_dtype dt,
                                       cudaStream_t stream)
{
    if (n <= 0)
        return cudaErrorInvalidValue;
    CK_DISPATCH(dt, T, silu_mul_bwd_kernel<T><<<grid_for((size_t)n, 256), 256, 0, stream>>>(
                        static_cast<const T *>(gate), static_cast<const T *>(up),
                        static_cast<const T *>(dout), static_cast<T *>(dgate), static_cast<T *>(dup),
                        n));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_attn_softmax_bwd(const void *p, void *dp, const float *lse, int64_t nmat,
                                           int64_t s, float scale, int64_t window, float softcap,
                                           pdbx_dtype dt, cudaStream_t stream)
{
    const float cap = softcap > 0.0f && softcap < INFINITY ? softcap : 0.0f;
    if (nmat <= 0 || s <= 0 || nmat * s > 0x7fffffff || (cap > 0.0f && !lse))
        return cudaErrorInvalidValue;
    CK_DISPATCH(dt, T, causal_softmax_bwd_kernel<T><<<warp_rows_grid(nmat * s), kRowsPerBlock * kWarp,
                                                   0, stream>>>(
                        static_cast<const T *>(p), static_cast<T *>(dp), nmat * s, s, scale,
                        window, cap, lse));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_causal_softmax_bwd(const void *p, void *dp, int64_t nmat, int64_t s,
                                             float scale, pdbx_dtype dt, cudaStream_t stream)
{
    return ck_attn_softmax_bwd(p, dp, NULL, nmat, s, scale, 0, 0.0f, dt, stream);
}

extern "C" cudaError_t ck_embed_scatter_add(const int32_t *ids, int64_t tokens, const void *dy,
                                            int64_t vstart, int64_t vrows, int64_t h, float *dtable,
                                            pdbx_dtype dt, cudaStream_t stream)
{
    if (tokens <= 0 || tokens > 0x7fffffff || h <= 0)
        return cudaErrorInvalidValue;
    unsigned block = row_block(h);
    CK_DISPATCH(dt, T, embed_scatter_add_kernel<T><<<(unsigned)tokens, block, 0, stream>>>(
                        ids, static_cast<const T *>(dy), vstart, vrows, h, dtable));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_bias_grad(const void *dy, float *db, int64_t rows, int64_t cols,
                                    pdbx_dtype dt, cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0)
        return cudaErrorInvalidValue;
    /* enough row splits to fill the GPU for narrow outputs (a few hundred blocks), each block
     * still summing many rows so the atomics stay few */
    int64_t colblocks = (cols + kWarp - 1) / kWarp;
    int64_t ysplit = (512 + colblocks - 1) / colblocks;
    int64_t ymax = (rows + 64 * kBiasRowsY - 1) / (64 * kBiasRowsY);
    if (ysplit > ymax)
        ysplit = ymax;
    if (ysplit < 1)
        ysplit = 1;
    if (ysplit > 65535)
        ysplit = 65535;
    if (colblocks > 0x7fffffff)
        return cudaErrorInvalidValue;
    dim3 grid((unsigned)colblocks, (unsigned)ysplit), block(kWarp, kBiasRowsY);
    CK_DISPATCH(dt, T, bias_grad_kernel<T><<<grid, block, 0, stream>>>(static_cast<const T *>(dy), db,
                                                                    rows, cols));
    return cudaGetLastError();
}
