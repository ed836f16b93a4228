/* cuda_kernels_dense.cu: the kernels of the dense model families beyond Llama (contract in
 * cuda_kernels_dense.h): LayerNorm and its backward (row kernels as RMSNorm's in
 * cuda_kernels.cu and cuda_kernels_bwd.cu), GELU plain and gated with their backward
 * (element-wise, 16-byte vectors where aligned), and the learned position embeddings.
 *
 * Templated on the storage type T (__nv_bfloat16, __half, float), computing in fp32;
 * CK_DISPATCH (cuda_kernel_util.cuh) maps pdbx_dtype to T in each entry point. The walks (the
 * element-wise split, the position-embedding items, the statistics' merge) are
 * cuda_dense_walk.h, which the host part of tests/cuda/test_cuda_kernels_dense.c checks.
 */
#include "engine/backends/cuda/cuda_kernels_dense.h"
#include "engine/backends/cuda/cuda_dense_walk.h"
#include "engine/backends/cuda/cuda_kernel_util.cuh"

#include <initializer_list>

namespace {

using namespace ck;

/* ---- LayerNorm ---- */

/* The row's statistics from every lane's: a butterfly of merges, then lane 0's result for all
 * (ck_welford_merge is not symmetric in rounding; the lanes must agree). */
__device__ __forceinline__ ck_welford warp_welford(ck_welford s)
{
    for (int o = kWarp / 2; o > 0; o /= 2) {
        const ck_welford t = {__shfl_xor_sync(0xffffffffu, s.n, o),
                              __shfl_xor_sync(0xffffffffu, s.mean, o),
                              __shfl_xor_sync(0xffffffffu, s.m2, o)};
        s = ck_welford_merge(s, t);
    }
    const ck_welford all = {__shfl_sync(0xffffffffu, s.n, 0), __shfl_sync(0xffffffffu, s.mean, 0),
                            __shfl_sync(0xffffffffu, s.m2, 0)};
    return all;
}

/* One warp per row: pass 1 the statistics (one read of the row, each lane's head scalars,
 * vectors and tail merged in walk order), pass 2 y = (x - mean) rstd w + b rounded once (as
 * PyTorch's vectorized_layer_norm_kernel; no intermediate rounding, unlike HF's RMSNorm). */
template <typename T>
__global__ void __launch_bounds__(kRowsPerBlock * kWarp)
layernorm_kernel(const T *x, const T *w, const T *b, T *y, float *mean_out, float *rstd_out,
                 int64_t rows, int64_t cols, float eps)
{
    const int64_t r = warp_row(rows);
    if (r < 0)
        return;   /* the whole warp: the shuffles below stay within full warps */
    const T *row = x + r * cols;
    T *out = y + r * cols;
    const ck_row_split sp = split_row<T>(cols, row, static_cast<const T *>(out));
    ck_welford st = {0.0f, 0.0f, 0.0f};
    warp_walk<T>(sp, cols, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float v[C];
        load_c<T, C>(row + j, v);
        st = ck_welford_merge(st, ck_welford_of(v, C));
    });
    st = warp_welford(st);
    const float mean = st.mean, rstd = rsqrtf(st.m2 / (float)cols + eps);
    warp_walk<T>(sp, cols, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float v[C], wv[C], bv[C];
        load_c<T, C>(row + j, v);
        load_c_any<T, C>(w + j, wv);
        if (b) {
            load_c_any<T, C>(b + j, bv);
        } else {
#pragma unroll
            for (int e = 0; e < C; e++)
                bv[e] = 0.0f;
        }
#pragma unroll
        for (int e = 0; e < C; e++)
            v[e] = (v[e] - mean) * rstd * wv[e] + bv[e];
        store_c<T, C>(out + j, v);
    });
    if (threadIdx.x % kWarp == 0) {
        if (mean_out)
            mean_out[r] = mean;
        if (rstd_out)
            rstd_out[r] = rstd;
    }
}

/* One warp per row: the two row means of the dx formula, then dx (PyTorch's
 * layer_norm_grad_input: (cols w dy - sum w dy - xhat sum w dy xhat) rstd / cols). */
template <typename T>
__global__ void __launch_bounds__(kRowsPerBlock * kWarp)
layernorm_bwd_dx_kernel(const T *x, const T *w, const float *mean, const float *rstd, const T *dy,
                        T *dx, int64_t rows, int64_t cols)
{
    const int64_t r = warp_row(rows);
    if (r < 0)
        return;
    const T *xr = x + r * cols, *gr = dy + r * cols;
    T *o = dx + r * cols;
    const ck_row_split sp = split_row<T>(cols, xr, gr, static_cast<const T *>(o));
    const float mu = mean[r], rs = rstd[r];
    float s1 = 0.0f, s2 = 0.0f;
    warp_walk<T>(sp, cols, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float xv[C], gv[C], wv[C];
        load_c<T, C>(xr + j, xv);
        load_c<T, C>(gr + j, gv);
        load_c_any<T, C>(w + j, wv);
#pragma unroll
        for (int e = 0; e < C; e++) {
            const float wdy = wv[e] * gv[e];
            s1 += wdy;
            s2 += wdy * (xv[e] - mu) * rs;
        }
    });
    const float m1 = warp_sum(s1) / (float)cols, m2 = warp_sum(s2) / (float)cols;
    warp_walk<T>(sp, cols, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float xv[C], gv[C], wv[C];
        load_c<T, C>(xr + j, xv);
        load_c<T, C>(gr + j, gv);
        load_c_any<T, C>(w + j, wv);
#pragma unroll
        for (int e = 0; e < C; e++)
            xv[e] = rs * (wv[e] * gv[e] - m1 - (xv[e] - mu) * rs * m2);
        store_c<T, C>(o + j, xv);
    });
}

/* dw[j] += sum_r dy[r,j] (x[r,j] - mean[r]) rstd[r], db[j] += sum_r dy[r,j]: 32 columns x 8
 * row lanes per block (reads coalesced across the warp), the row range split over gridDim.y
 * blocks whose partial sums meet in one atomicAdd per column and block (rmsnorm_bwd_dw_kernel's
 * shape). */
template <typename T>
__global__ void layernorm_bwd_dwdb_kernel(const T *x, const T *dy, const float *mean,
                                          const float *rstd, float *dw, float *db, int64_t rows,
                                          int64_t cols)
{
    __shared__ float pw[8][kWarp + 1], pb[8][kWarp + 1];
    const int64_t j = blockIdx.x * (int64_t)kWarp + threadIdx.x;
    float aw = 0.0f, ab = 0.0f;
    if (j < cols)
        for (int64_t r = blockIdx.y * 8 + threadIdx.y; r < rows; r += (int64_t)gridDim.y * 8) {
            const float g = to_f32(dy[r * cols + j]);
            aw += g * (to_f32(x[r * cols + j]) - mean[r]) * rstd[r];
            ab += g;
        }
    pw[threadIdx.y][threadIdx.x] = aw;
    pb[threadIdx.y][threadIdx.x] = ab;
    __syncthreads();
    if (threadIdx.y == 0 && j < cols) {
        float sw = 0.0f, sb = 0.0f;
        for (int i = 0; i < 8; i++) {
            sw += pw[i][threadIdx.x];
            sb += pb[i][threadIdx.x];
        }
        atomicAdd(&dw[j], sw);
        if (db)
            atomicAdd(&db[j], sb);
    }
}

/* ---- GELU (torch's formulas and constants, ActivationGeluKernel.cu, in fp32) ---- */

constexpr float kSqrt1_2 = 0.70710678118654752440f;     /* 1/sqrt(2) */
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;  /* 1/sqrt(2 pi): the normal pdf */
constexpr float kTanhBeta = 0.79788456080286535588f;    /* sqrt(2/pi) */
constexpr float kTanhKappa = 0.044715f;

template <bool Tanh> __device__ __forceinline__ float gelu(float x)
{
    if constexpr (Tanh)
        return 0.5f * x * (1.0f + tanhf(kTanhBeta * (x + kTanhKappa * x * x * x)));
    else
        return x * 0.5f * (1.0f + erff(x * kSqrt1_2));
}

template <bool Tanh> __device__ __forceinline__ float gelu_grad(float x)
{
    if constexpr (Tanh) {
        const float x2 = x * x, t = tanhf(kTanhBeta * (x + kTanhKappa * x2 * x));
        return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kTanhBeta * (1.0f + 3.0f * kTanhKappa * x2);
    } else {
        return 0.5f * (1.0f + erff(x * kSqrt1_2)) + x * expf(-0.5f * x * x) * kInvSqrt2Pi;
    }
}

template <typename T> __device__ __forceinline__ float rnd(float v) { return to_f32(from_f32<T>(v)); }

/* f(j, C) for the elements j..j+C-1 of a ck_split_flat split (computed once at launch): the
 * vectors grid-strided, then the scalars (head and tail, or every element without vectors). */
template <typename T, typename F>
__device__ __forceinline__ void flat_walk(const ck_row_split sp, int64_t n, F f)
{
    constexpr int W = vec_elems<T>();
    const int64_t t0 = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t v = t0; v < sp.nvec; v += step)
        f(sp.head + v * W, std::integral_constant<int, W>{});
    const int64_t ns = ck_flat_scalars(sp, n);
    for (int64_t k = t0; k < ns; k += step)
        f(ck_flat_scalar(sp, k), std::integral_constant<int, 1>{});
}

template <typename T, bool Tanh>
__global__ void gelu_kernel(const T *x, T *out, ck_row_split sp, int64_t n)
{
    flat_walk<T>(sp, n, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float v[C];
        load_c<T, C>(x + j, v);
#pragma unroll
        for (int e = 0; e < C; e++)
            v[e] = gelu<Tanh>(v[e]);
        store_c<T, C>(out + j, v);
    });
}

template <typename T, bool Tanh>
__global__ void gelu_mul_kernel(const T *gate, const T *up, T *out, ck_row_split sp, int64_t n)
{
    flat_walk<T>(sp, n, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float g[C], u[C];
        load_c<T, C>(gate + j, g);
        load_c<T, C>(up + j, u);
#pragma unroll
        for (int e = 0; e < C; e++)
            g[e] = rnd<T>(gelu<Tanh>(g[e])) * u[e];
        store_c<T, C>(out + j, g);
    });
}

template <typename T, bool Tanh>
__global__ void gelu_bwd_kernel(const T *x, const T *dout, T *dx, ck_row_split sp, int64_t n)
{
    flat_walk<T>(sp, n, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float v[C], d[C];
        load_c<T, C>(x + j, v);
        load_c<T, C>(dout + j, d);
#pragma unroll
        for (int e = 0; e < C; e++)
            v[e] = d[e] * gelu_grad<Tanh>(v[e]);
        store_c<T, C>(dx + j, v);
    });
}

/* PyTorch's autograd of gelu(g) * u: MulBackward (dout * u and dout * gelu(g), each a kernel
 * whose result is rounded) then GeluBackward on the rounded dout * u. */
template <typename T, bool Tanh>
__global__ void gelu_mul_bwd_kernel(const T *gate, const T *up, const T *dout, T *dgate, T *dup,
                                    ck_row_split sp, int64_t n)
{
    flat_walk<T>(sp, n, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float g[C], u[C], d[C];
        load_c<T, C>(gate + j, g);
        load_c<T, C>(up + j, u);
        load_c<T, C>(dout + j, d);
#pragma unroll
        for (int e = 0; e < C; e++) {
            const float du = d[e] * rnd<T>(gelu<Tanh>(g[e]));
            g[e] = gelu_grad<Tanh>(g[e]) * rnd<T>(d[e] * u[e]);
            u[e] = du;
        }
        store_c<T, C>(dgate + j, g);
        store_c<T, C>(dup + j, u);
    });
}

struct flat_plan {
    ck_row_split sp;
    unsigned grid;
};

/* The split of the arrays an element-wise kernel reads and writes (all at the same index) and
 * its grid: one thread per vector or scalar element, capped by grid_for. */
template <typename T>
flat_plan plan_flat(int64_t n, std::initializer_list<const void *> arrays)
{
    uintptr_t ps[CK_FLAT_MAX];
    int np = 0;
    for (const void *a : arrays)
        if (np < CK_FLAT_MAX)
            ps[np++] = (uintptr_t)a;
    flat_plan f;
    f.sp = ck_split_flat(n, ps, np, (int64_t)sizeof(T));
    f.grid = grid_for((size_t)(f.sp.nvec + ck_flat_scalars(f.sp, n)), 256);
    return f;
}

/* launch(std::bool_constant<tanh>) enqueues the kernel of that GELU form. */
template <typename L>
cudaError_t with_kind(ck_gelu_kind kind, L launch)
{
    if (kind == CK_GELU_TANH)
        launch(std::true_type{});
    else
        launch(std::false_type{});
    return cudaGetLastError();
}

/* ---- learned position embeddings (cuda_dense_walk.h: items of W columns) ---- */

template <typename T, int W>
__global__ void pos_embed_add_kernel(T *x, const T *table, int64_t items, int64_t h, int64_t mbs)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < items;
         i += (int64_t)gridDim.x * blockDim.x) {
        const ck_pos_at at = ck_pos_embed_at(i, h, mbs, W);
        float a[W], t[W];
        load_c<T, W>(x + at.x, a);
        load_c<T, W>(table + at.table, t);
#pragma unroll
        for (int e = 0; e < W; e++)
            a[e] += t[e];
        store_c<T, W>(x + at.x, a);
    }
}

/* One thread per (position, W columns): the sum of its mbs rows of dx in fp32, added once to
 * dtable (fp32: W / 4 16-byte vectors, or one float). Adjacent threads read adjacent columns. */
template <typename T, int W>
__global__ void pos_embed_bwd_kernel(const T *dx, float *dtable, int64_t items, int64_t h,
                                     int64_t mbs)
{
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < items;
         k += (int64_t)gridDim.x * blockDim.x) {
        float acc[W];
#pragma unroll
        for (int e = 0; e < W; e++)
            acc[e] = 0.0f;
        for (int64_t b = 0; b < mbs; b++) {
            float v[W];
            load_c<T, W>(dx + ck_pos_embed_bwd_at(k, b, h, mbs, W).x, v);
#pragma unroll
            for (int e = 0; e < W; e++)
                acc[e] += v[e];
        }
        float *dst = dtable + ck_pos_embed_bwd_at(k, 0, h, mbs, W).table;
        if constexpr (W == 1) {
            dst[0] += acc[0];
        } else {
            static_assert(W % 4 == 0, "whole fp32 vectors");
#pragma unroll
            for (int q = 0; q < W; q += 4) {
                float t[4];
                load_c<float, 4>(dst + q, t);
#pragma unroll
                for (int e = 0; e < 4; e++)
                    t[e] += acc[q + e];
                store_c<float, 4>(dst + q, t);
            }
        }
    }
}

template <typename T>
cudaError_t pos_embed_add_launch(T *x, const T *table, int64_t tokens, int64_t h, int64_t mbs,
                                 cudaStream_t stream)
{
    constexpr int V = vec_elems<T>();
    const int64_t w = ck_pos_embed_width(h, (uintptr_t)x, (uintptr_t)table, (int64_t)sizeof(T));
    const int64_t items = ck_pos_embed_items(tokens, h, w);
    const unsigned grid = grid_for((size_t)items, 256);
    if (w == V)
        pos_embed_add_kernel<T, V><<<grid, 256, 0, stream>>>(x, table, items, h, mbs);
    else
        pos_embed_add_kernel<T, 1><<<grid, 256, 0, stream>>>(x, table, items, h, mbs);
    return cudaGetLastError();
}

template <typename T>
cudaError_t pos_embed_bwd_launch(const T *dx, float *dtable, int64_t tokens, int64_t h,
                                 int64_t mbs, cudaStream_t stream)
{
    constexpr int V = vec_elems<T>();
    const int64_t w = ck_pos_embed_width(h, (uintptr_t)dx, (uintptr_t)dtable, (int64_t)sizeof(T));
    const int64_t items = ck_pos_embed_items(tokens / mbs, h, w);
    const unsigned grid = grid_for((size_t)items, 256);
    if (w == V)
        pos_embed_bwd_kernel<T, V><<<grid, 256, 0, stream>>>(dx, dtable, items, h, mbs);
    else
        pos_embed_bwd_kernel<T, 1><<<grid, 256, 0, stream>>>(dx, dtable, items, h, mbs);
    return cudaGetLastError();
}

bool bad_gelu(int64_t n, ck_gelu_kind kind)
{
    return n <= 0 || (kind != CK_GELU_ERF && kind != CK_GELU_TANH);
}

} /* namespace */

extern "C" cudaError_t ck_layernorm(const void *x, const void *w, const void *b, void *y,
                                    float *mean, float *rstd, int64_t rows, int64_t cols, float eps,
                                    pdbx_dtype dt, cudaStream_t stream)
{
    if (rows <= 0 || rows > 0x7fffffff || cols <= 0 || cols > (1 << 24))   /* counts exact in fp32 */
        return cudaErrorInvalidValue;
    CK_DISPATCH(dt, T, layernorm_kernel<T><<<warp_rows_grid(rows), kRowsPerBlock * kWarp, 0, stream>>>(
                        static_cast<const T *>(x), static_cast<const T *>(w), static_cast<const T *>(b),
                        static_cast<T *>(y), mean, rstd, rows, cols, eps));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_layernorm_bwd(const void *x, const void *w, const float *mean,
                                        const float *rstd, const void *dy, void *dx, float *dw,
                                        float *db, int64_t rows, int64_t cols, pdbx_dtype dt,
                                        cudaStream_t stream)
{
    if (rows <= 0 || rows > 0x7fffffff || cols <= 0 || (cols + kWarp - 1) / kWarp > 0x7fffffff)
        return cudaErrorInvalidValue;
    CK_DISPATCH(dt, T, layernorm_bwd_dx_kernel<T><<<warp_rows_grid(rows), kRowsPerBlock * kWarp, 0,
                                                 stream>>>(
                        static_cast<const T *>(x), static_cast<const T *>(w), mean, rstd,
                        static_cast<const T *>(dy), static_cast<T *>(dx), rows, cols));
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    int64_t ysplit = (rows + 63) / 64;   /* about 64 rows per block, as ck_rmsnorm_bwd */
    if (ysplit > 1024)
        ysplit = 1024;
    const dim3 grid((unsigned)((cols + kWarp - 1) / kWarp), (unsigned)ysplit), blk(kWarp, 8);
    CK_DISPATCH(dt, T, layernorm_bwd_dwdb_kernel<T><<<grid, blk, 0, stream>>>(
                        static_cast<const T *>(x), static_cast<const T *>(dy), mean, rstd, dw, db,
                        rows, cols));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_gelu(const void *x, void *out, int64_t n, ck_gelu_kind kind,
                               pdbx_dtype dt, cudaStream_t stream)
{
    if (bad_gelu(n, kind))
        return cudaErrorInvalidValue;
    cudaError_t rc = cudaErrorInvalidValue;
    CK_DISPATCH(dt, T, const flat_plan f = plan_flat<T>(n, {x, out});
                rc = with_kind(kind, [&](auto tanh) {
                    gelu_kernel<T, decltype(tanh)::value><<<f.grid, 256, 0, stream>>>(
                        static_cast<const T *>(x), static_cast<T *>(out), f.sp, n);
                }));
    return rc;
}

extern "C" cudaError_t ck_gelu_mul(const void *gate, const void *up, void *out, int64_t n,
                                   ck_gelu_kind kind, pdbx_dtype dt, cudaStream_t stream)
{
    if (bad_gelu(n, kind))
        return cudaErrorInvalidValue;
    cudaError_t rc = cudaErrorInvalidValue;
    CK_DISPATCH(dt, T, const flat_plan f = plan_flat<T>(n, {gate, up, out});
                rc = with_kind(kind, [&](auto tanh) {
                    gelu_mul_kernel<T, decltype(tanh)::value><<<f.grid, 256, 0, stream>>>(
                        static_cast<const T *>(gate), static_cast<const T *>(up),
                        static_cast<T *>(out), f.sp, n);
                }));
    return rc;
}

extern "C" cudaError_t ck_gelu_bwd(const void *x, const void *dout, void *dx, int64_t n,
                                   ck_gelu_kind kind, pdbx_dtype dt, cudaStream_t stream)
{
    if (bad_gelu(n, kind))
        return cudaErrorInvalidValue;
    cudaError_t rc = cudaErrorInvalidValue;
    CK_DISPATCH(dt, T, const flat_plan f = plan_flat<T>(n, {x, dout, dx});
                rc = with_kind(kind, [&](auto tanh) {
                    gelu_bwd_kernel<T, decltype(tanh)::value><<<f.grid, 256, 0, stream>>>(
                        static_cast<const T *>(x), static_cast<const T *>(dout),
                        static_cast<T *>(dx), f.sp, n);
                }));
    return rc;
}

extern "C" cudaError_t ck_gelu_mul_bwd(const void *gate, const void *up, const void *dout,
                                       void *dgate, void *dup, int64_t n, ck_gelu_kind kind,
                                       pdbx_dtype dt, cudaStream_t stream)
{
    if (bad_gelu(n, kind))
        return cudaErrorInvalidValue;
    cudaError_t rc = cudaErrorInvalidValue;
    CK_DISPATCH(dt, T, const flat_plan f = plan_flat<T>(n, {gate, up, dout, dgate, dup});
                rc = with_kind(kind, [&](auto tanh) {
                    gelu_mul_bwd_kernel<T, decltype(tanh)::value><<<f.grid, 256, 0, stream>>>(
                        static_cast<const T *>(gate), static_cast<const T *>(up),
                        static_cast<const T *>(dout), static_cast<T *>(dgate),
                        static_cast<T *>(dup), f.sp, n);
                }));
    return rc;
}

extern "C" cudaError_t ck_pos_embed_add(void *x, const void *table, int64_t tokens, int64_t h,
                                        int64_t mbs, pdbx_dtype dt, cudaStream_t stream)
{
    if (tokens <= 0 || h <= 0 || mbs <= 0 || tokens % mbs != 0)
        return cudaErrorInvalidValue;
    cudaError_t rc = cudaErrorInvalidValue;
    CK_DISPATCH(dt, T, rc = pos_embed_add_launch<T>(static_cast<T *>(x), static_cast<const T *>(table),
                                                 tokens, h, mbs, stream));
    return rc;
}

extern "C" cudaError_t ck_pos_embed_bwd(const void *dx, float *dtable, int64_t tokens, int64_t h,
                                        int64_t mbs, pdbx_dtype dt, cudaStream_t stream)
{
    if (tokens <= 0 || h <= 0 || mbs <= 0 || tokens % mbs != 0)
        return cudaErrorInvalidValue;
    cudaError_t rc = cudaErrorInvalidValue;
    CK_DISPATCH(dt, T, rc = pos_embed_bwd_launch<T>(static_cast<const T *>(dx), dtable, tokens, h,
                                                 mbs, stream));
    return rc;
}
