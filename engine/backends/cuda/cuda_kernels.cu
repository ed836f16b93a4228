/* cuda_kernels.cu: element-wise, normalisation, gather and softmax kernels of the cuda backend
 * (contract in cuda_kernels.h). GEMMs, including the two batched GEMMs of the attention core,
 * go through cuBLASLt in cuda_gemm.c; docs/cuda.md explains that split.
 *
 * Every kernel is templated on the storage type T (__nv_bfloat16, __half, float) and computes
 * in fp32. The dispatch switch at the bottom of each entry point maps pdbx_dtype to T.
 */
#include "engine/backends/cuda/cuda_kernels.h"
#include "engine/backends/cuda/cuda_fill.h"
#include "engine/backends/cuda/cuda_rope.h"
#include "engine/backends/cuda/cuda_rowsplit.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

namespace {

constexpr int kWarp = 32;

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

template <typename T>
__global__ void fill_uniform_kernel(T *buf, size_t n, uint64_t seed, float lo, float span)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        buf[i] = from_f32<T>(ck_fill_value(seed, i, lo, span));   /* cuda_fill.h */
    }
}

__global__ void fill_tokens_kernel(int32_t *ids, size_t n, int32_t vocab, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        ids[i] = (int32_t)(ck_mix64(seed ^ ck_mix64(i)) % (uint64_t)vocab);
}

/* One block per token; rows are copied in 16-byte vectors when the row size allows it. */
template <typename V>
__global__ void embed_gather_kernel(const int32_t *ids, const V *table, int64_t vstart,
                                    int64_t vrows, int64_t row_vecs, V *out)
{
    int64_t t = blockIdx.x;
    int64_t id = (int64_t)ids[t] - vstart;
    V *dst = out + t * row_vecs;
    if (id < 0 || id >= vrows) {
        V zero{};
        for (int64_t j = threadIdx.x; j < row_vecs; j += blockDim.x)
            dst[j] = zero;
        return;
    }
    const V *src = table + id * row_vecs;
    for (int64_t j = threadIdx.x; j < row_vecs; j += blockDim.x)
        dst[j] = src[j];
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

/* ---- row kernels: one warp per row, 16-byte vectors ----
 * A row of n elements is walked by the 32 lanes of its warp in three parts: a scalar head up to
 * the first 16-byte boundary of the row's first pointer, whole 16-byte vectors (8 bf16/fp16 or
 * 4 fp32 elements) while every pointer of the row is aligned at the same element, and a scalar
 * tail (a row length that is not a multiple of the vector, or the whole row when the pointers
 * disagree in alignment). Softmax rows of [s, s] matrices and RMSNorm rows of [rows, h] start
 * misaligned whenever s or h is not a multiple of the vector width; the head takes care of it.
 * The split itself is cuda_rowsplit.h (host-tested). */
constexpr int kRowsPerBlock = 8;   /* 256 threads: 8 warps, 8 rows */

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

template <typename T>
__global__ void __launch_bounds__(kRowsPerBlock * kWarp)
rmsnorm_kernel(const T *x, const T *w, T *y, int64_t rows, int64_t cols, float eps)
{
    const int64_t r = warp_row(rows);
    if (r < 0)
        return;   /* the whole warp: the shuffles below stay within full warps */
    const T *row = x + r * cols;
    T *out = y + r * cols;
    const ck_row_split sp = split_row<T>(cols, row, out);
    float ss = 0.0f;
    warp_walk<T>(sp, cols, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float v[C];
        load_c<T, C>(row + j, v);
#pragma unroll
        for (int e = 0; e < C; e++)
            ss += v[e] * v[e];
    });
    const float inv = rsqrtf(warp_sum(ss) / (float)cols + eps);
    /* HF LlamaRMSNorm: normalise in fp32, round to the storage type, then scale by w. */
    warp_walk<T>(sp, cols, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float v[C], wv[C];
        load_c<T, C>(row + j, v);
        load_c_any<T, C>(w + j, wv);
#pragma unroll
        for (int e = 0; e < C; e++)
            v[e] = wv[e] * to_f32(from_f32<T>(v[e] * inv));
        store_c<T, C>(out + j, v);
    });
}

__device__ __forceinline__ float silu(float g) { return g / (1.0f + __expf(-g)); }

template <typename T>
__global__ void silu_mul_kernel(const T *gate, const T *up, T *out, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = from_f32<T>(to_f32(from_f32<T>(silu(to_f32(gate[i])))) * to_f32(up[i]));
}

/* 2-byte types, 8 elements per 16-byte vector: the memory-bound path for aligned sizes. */
template <typename T>
__global__ void silu_mul_vec8_kernel(const uint4 *gate, const uint4 *up, uint4 *out, int64_t nvec)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nvec;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint4 g = gate[i], u = up[i], o;
        const T *gv = reinterpret_cast<const T *>(&g);
        const T *uv = reinterpret_cast<const T *>(&u);
        T *ov = reinterpret_cast<T *>(&o);
#pragma unroll
        for (int e = 0; e < 8; e++)
            ov[e] = from_f32<T>(to_f32(from_f32<T>(silu(to_f32(gv[e])))) * to_f32(uv[e]));
        out[i] = o;
    }
}

/* One warp per score row (row r of matrix r / s is query i = r % s). Pass 1: running (max, sum
 * of exp) per lane over j <= i, merged across the warp; pass 2: p = exp(x - max) / sum, and 0
 * above the diagonal (written without reading the scores there). */
template <typename T>
__global__ void __launch_bounds__(kRowsPerBlock * kWarp)
causal_softmax_kernel(T *scores, int64_t nrows, int64_t s)
{
    const int64_t r = warp_row(nrows);
    if (r < 0)
        return;
    const int64_t i = r % s;
    T *row = scores + r * s;
    float m = -INFINITY, l = 0.0f;
    warp_walk<T>(split_row<T>(i + 1, row), i + 1, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float v[C];
        load_c<T, C>(row + j, v);
#pragma unroll
        for (int e = 0; e < C; e++) {
            if (v[e] > m) {
                l = l * __expf(m - v[e]) + 1.0f;
                m = v[e];
            } else {
                l += __expf(v[e] - m);
            }
        }
    });
    const float gm = warp_max(m);
    const float gl = warp_sum(m == -INFINITY ? 0.0f : l * __expf(m - gm));
    const float inv = 1.0f / gl;       /* gl >= 1: column j = i is always present */
    warp_walk<T>(split_row<T>(s, row), s, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float v[C];
        if (j <= i)
            load_c<T, C>(row + j, v);
#pragma unroll
        for (int e = 0; e < C; e++)
            v[e] = j + e <= i ? __expf(v[e] - gm) * inv : 0.0f;
        store_c<T, C>(row + j, v);
    });
}

/* ---- backward ---- */

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

/* One warp per row, as the forward softmax. */
template <typename T>
__global__ void __launch_bounds__(kRowsPerBlock * kWarp)
causal_softmax_bwd_kernel(const T *p, T *dp, int64_t nrows, int64_t s, float scale)
{
    const int64_t r = warp_row(nrows);
    if (r < 0)
        return;
    const int64_t i = r % s;
    const T *pr = p + r * s;
    T *gr = dp + r * s;
    float dot = 0.0f;
    warp_walk<T>(split_row<T>(i + 1, pr, static_cast<const T *>(gr)), i + 1,
                 [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float pv[C], gv[C];
        load_c<T, C>(pr + j, pv);
        load_c<T, C>(gr + j, gv);
#pragma unroll
        for (int e = 0; e < C; e++)
            dot += pv[e] * gv[e];
    });
    dot = warp_sum(dot);
    warp_walk<T>(split_row<T>(s, pr, static_cast<const T *>(gr)), s, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float pv[C], gv[C];
        if (j <= i) {
            load_c<T, C>(pr + j, pv);
            load_c<T, C>(gr + j, gv);
        }
#pragma unroll
        for (int e = 0; e < C; e++)
            gv[e] = j + e <= i ? scale * pv[e] * (gv[e] - dot) : 0.0f;
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

template <typename T>
__global__ void accumulate_sum_kernel(const T *x, size_t n, double *acc)
{
    __shared__ double smem[kWarp];
    double v = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        v += (double)to_f32(x[i]);
    for (int o = kWarp / 2; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    if (lane == 0)
        smem[warp] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        double b = 0.0;
        for (int w = 0; w < (int)(blockDim.x / kWarp); w++)
            b += smem[w];
        atomicAdd(acc, b);
    }
}

/* %globaltimer: the GPU's nanosecond timer, which runs at the same rate on every GPU whatever
 * its SM clock (clock64 counts SM cycles: a lower-clocked GPU spun longer for the same count,
 * and the max over ranks of a collective's time took that skew in). */
__device__ __forceinline__ unsigned long long globaltimer_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void spin_kernel(long long ns)
{
    const unsigned long long t0 = globaltimer_ns();
    while ((long long)(globaltimer_ns() - t0) < ns) {
    }
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

/* ---- rotary position embedding (ck_rope; cuda_rope.h walks x) ----
 * Grid-stride over work items of W rotation pairs; x read and written as 16-byte vectors
 * when W is the vector (d/2 a multiple of it, x aligned), the fp32 table read per pair. The
 * rotation in fp32, rounded once to T. sign -1: the inverse rotation (the backward). */
template <typename T, int W>
__global__ void rope_kernel(T *x, int64_t items, int64_t heads, int64_t d, int64_t mbs,
                            const float *cos_t, const float *sin_t, float sign)
{
    const int64_t half = d / 2;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < items;
         i += (int64_t)gridDim.x * blockDim.x) {
        const ck_rope_at at = ck_rope_item(i, heads, d, mbs, W);
        float a[W], b[W];
        load_c<T, W>(x + at.lo, a);
        load_c<T, W>(x + at.lo + half, b);
#pragma unroll
        for (int e = 0; e < W; e++) {
            const float c = cos_t[at.table + e], s = sign * sin_t[at.table + e];
            const float lo = a[e] * c - b[e] * s, hi = b[e] * c + a[e] * s;
            a[e] = lo;
            b[e] = hi;
        }
        store_c<T, W>(x + at.lo, a);
        store_c<T, W>(x + at.lo + half, b);
    }
}

/* The [seq, d/2] cos and sin tables: angle pos * theta^(-2i/d) in double (HF's inv_freq). */
__global__ void rope_table_kernel(float *cos_t, float *sin_t, int64_t seq, int64_t half, double theta)
{
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < seq * half;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t pos = k / half, i = k % half;
        const double ang = (double)pos * pow(theta, -2.0 * (double)i / (double)(2 * half));
        cos_t[k] = (float)cos(ang);
        sin_t[k] = (float)sin(ang);
    }
}

/* ---- residual add: y += x, W elements per thread (16-byte vectors when aligned) ---- */
template <typename T, int W>
__global__ void residual_add_kernel(T *y, const T *x, int64_t items)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < items;
         i += (int64_t)gridDim.x * blockDim.x) {
        float a[W], b[W];
        load_c<T, W>(y + i * W, a);
        load_c<T, W>(x + i * W, b);
#pragma unroll
        for (int e = 0; e < W; e++)
            a[e] += b[e];
        store_c<T, W>(y + i * W, a);
    }
}

/* ---- linear-layer bias (cuda_gemm.h: gemm_api cublas's add; every bias gradient) ---- */
/* y[r, c] += b[c] over [rows, cols], the add in fp32 rounded once: rows over blockIdx.y,
 * columns over the block's threads (no per-element division). */
template <typename T>
__global__ void bias_add_kernel(T *y, const T *b, int64_t rows, int64_t cols)
{
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
        T *yr = y + r * cols;
        for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols;
             c += (int64_t)gridDim.x * blockDim.x)
            yr[c] = from_f32<T>(to_f32(yr[c]) + to_f32(b[c]));
    }
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

#define DISPATCH(dt, T, ...)                                                  \
    switch (dt) {                                                             \
    case PDBX_DTYPE_BF16: { typedef __nv_bfloat16 T; __VA_ARGS__; break; }   \
    case PDBX_DTYPE_FP16: { typedef __half T; __VA_ARGS__; break; }          \
    case PDBX_DTYPE_FP32: { typedef float T; __VA_ARGS__; break; }           \
    default: return cudaErrorInvalidValue;                                    \
    }

extern "C" cudaError_t ck_fill_uniform(void *buf, size_t n, pdbx_dtype dt, uint64_t seed, float lo,
                                       float hi, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    DISPATCH(dt, T, fill_uniform_kernel<T><<<grid_for(n, 256), 256, 0, stream>>>(
                        static_cast<T *>(buf), n, seed, lo, hi - lo));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_fill_tokens(int32_t *ids, size_t n, int32_t vocab, uint64_t seed,
                                      cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    if (vocab <= 0)
        return cudaErrorInvalidValue;
    fill_tokens_kernel<<<grid_for(n, 256), 256, 0, stream>>>(ids, n, vocab, seed);
    return cudaGetLastError();
}

extern "C" cudaError_t ck_embed_gather(const int32_t *ids, int64_t tokens, const void *table,
                                       int64_t vstart, int64_t vrows, int64_t h, void *out,
                                       pdbx_dtype dt, cudaStream_t stream)
{
    if (tokens <= 0 || tokens > 0x7fffffff)
        return cudaErrorInvalidValue;
    int64_t row_bytes = h * dtype_bytes(dt);
    if (row_bytes <= 0)
        return cudaErrorInvalidValue;
    unsigned block;
    if (row_bytes % 16 == 0 && (uintptr_t)table % 16 == 0 && (uintptr_t)out % 16 == 0) {
        int64_t vecs = row_bytes / 16;
        block = row_block(vecs);
        embed_gather_kernel<uint4><<<(unsigned)tokens, block, 0, stream>>>(
            ids, static_cast<const uint4 *>(table), vstart, vrows, vecs, static_cast<uint4 *>(out));
    } else if (row_bytes % 2 == 0) {
        int64_t vecs = row_bytes / 2;
        block = row_block(vecs);
        embed_gather_kernel<uint16_t><<<(unsigned)tokens, block, 0, stream>>>(
            ids, static_cast<const uint16_t *>(table), vstart, vrows, vecs,
            static_cast<uint16_t *>(out));
    } else {
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t ck_rmsnorm(const void *x, const void *w, void *y, int64_t rows, int64_t cols,
                                  float eps, pdbx_dtype dt, cudaStream_t stream)
{
    if (rows <= 0 || rows > 0x7fffffff || cols <= 0)
        return cudaErrorInvalidValue;
    DISPATCH(dt, T, rmsnorm_kernel<T><<<warp_rows_grid(rows), kRowsPerBlock * kWarp, 0, stream>>>(
                        static_cast<const T *>(x), static_cast<const T *>(w), static_cast<T *>(y),
                        rows, cols, eps));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_silu_mul(const void *gate, const void *up, void *out, int64_t n,
                                   pdbx_dtype dt, cudaStream_t stream)
{
    if (n <= 0)
        return cudaErrorInvalidValue;
    bool aligned = (uintptr_t)gate % 16 == 0 && (uintptr_t)up % 16 == 0 && (uintptr_t)out % 16 == 0;
    if (dt != PDBX_DTYPE_FP32 && n % 8 == 0 && aligned) {
        int64_t nvec = n / 8;
        unsigned grid = grid_for((size_t)nvec, 256);
        const uint4 *g = static_cast<const uint4 *>(gate), *u = static_cast<const uint4 *>(up);
        uint4 *o = static_cast<uint4 *>(out);
        if (dt == PDBX_DTYPE_BF16)
            silu_mul_vec8_kernel<__nv_bfloat16><<<grid, 256, 0, stream>>>(g, u, o, nvec);
        else
            silu_mul_vec8_kernel<__half><<<grid, 256, 0, stream>>>(g, u, o, nvec);
        return cudaGetLastError();
    }
    DISPATCH(dt, T, silu_mul_kernel<T><<<grid_for((size_t)n, 256), 256, 0, stream>>>(
                        static_cast<const T *>(gate), static_cast<const T *>(up),
                        static_cast<T *>(out), n));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_causal_softmax(void *scores, int64_t nmat, int64_t s, pdbx_dtype dt,
                                         cudaStream_t stream)
{
    if (nmat <= 0 || s <= 0 || nmat * s > 0x7fffffff)
        return cudaErrorInvalidValue;
    DISPATCH(dt, T, causal_softmax_kernel<T><<<warp_rows_grid(nmat * s), kRowsPerBlock * kWarp, 0,
                                               stream>>>(static_cast<T *>(scores), nmat * s, s));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_rmsnorm_bwd(const void *x, const void *w, const void *dy, void *dx,
                                      float *rstd, float *dw, int64_t rows, int64_t cols, float eps,
                                      pdbx_dtype dt, cudaStream_t stream)
{
    if (rows <= 0 || rows > 0x7fffffff || cols <= 0)
        return cudaErrorInvalidValue;
    DISPATCH(dt, T, rmsnorm_bwd_dx_kernel<T><<<warp_rows_grid(rows), kRowsPerBlock * kWarp, 0,
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
    DISPATCH(dt, T, rmsnorm_bwd_dw_kernel<T><<<grid, blk, 0, stream>>>(
                        static_cast<const T *>(x), static_cast<const T *>(dy), rstd, dw, rows, cols));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_silu_mul_bwd(const void *gate, const void *up, const void *dout,
                                       void *dgate, void *dup, int64_t n, pdbx_dtype dt,
                                       cudaStream_t stream)
{
    if (n <= 0)
        return cudaErrorInvalidValue;
    DISPATCH(dt, T, silu_mul_bwd_kernel<T><<<grid_for((size_t)n, 256), 256, 0, stream>>>(
                        static_cast<const T *>(gate), static_cast<const T *>(up),
                        static_cast<const T *>(dout), static_cast<T *>(dgate), static_cast<T *>(dup),
                        n));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_causal_softmax_bwd(const void *p, void *dp, int64_t nmat, int64_t s,
                                             float scale, pdbx_dtype dt, cudaStream_t stream)
{
    if (nmat <= 0 || s <= 0 || nmat * s > 0x7fffffff)
        return cudaErrorInvalidValue;
    DISPATCH(dt, T, causal_softmax_bwd_kernel<T><<<warp_rows_grid(nmat * s), kRowsPerBlock * kWarp,
                                                   0, stream>>>(
                        static_cast<const T *>(p), static_cast<T *>(dp), nmat * s, s, scale));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_embed_scatter_add(const int32_t *ids, int64_t tokens, const void *dy,
                                            int64_t vstart, int64_t vrows, int64_t h, float *dtable,
                                            pdbx_dtype dt, cudaStream_t stream)
{
    if (tokens <= 0 || tokens > 0x7fffffff || h <= 0)
        return cudaErrorInvalidValue;
    unsigned block = row_block(h);
    DISPATCH(dt, T, embed_scatter_add_kernel<T><<<(unsigned)tokens, block, 0, stream>>>(
                        ids, static_cast<const T *>(dy), vstart, vrows, h, dtable));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_accumulate_sum(const void *x, size_t n, pdbx_dtype dt, double *acc,
                                         cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    unsigned grid = grid_for(n, 256);
    if (grid > 1024)
        grid = 1024;
    DISPATCH(dt, T, accumulate_sum_kernel<T><<<grid, 256, 0, stream>>>(static_cast<const T *>(x),
                                                                        n, acc));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_spin_ns(long long ns, cudaStream_t stream)
{
    if (ns <= 0)
        return cudaSuccess;
    spin_kernel<<<1, 1, 0, stream>>>(ns);
    return cudaGetLastError();
}

template <typename T>
cudaError_t rope_launch(T *x, int64_t tokens, int64_t heads, int64_t d, int64_t mbs,
                        const float *table, int64_t seq, float sign, cudaStream_t stream)
{
    constexpr int V = vec_elems<T>();
    const float *cos_t = table, *sin_t = table + seq * (d / 2);
    if ((d / 2) % V == 0 && (uintptr_t)x % 16 == 0) {
        const int64_t items = ck_rope_items(tokens, heads, d, V);
        rope_kernel<T, V><<<grid_for((size_t)items, 256), 256, 0, stream>>>(x, items, heads, d, mbs,
                                                                            cos_t, sin_t, sign);
    } else {
        const int64_t items = ck_rope_items(tokens, heads, d, 1);
        rope_kernel<T, 1><<<grid_for((size_t)items, 256), 256, 0, stream>>>(x, items, heads, d, mbs,
                                                                            cos_t, sin_t, sign);
    }
    return cudaGetLastError();
}

template <typename T>
cudaError_t residual_add_launch(T *y, const T *x, int64_t n, cudaStream_t stream)
{
    constexpr int V = vec_elems<T>();
    if (n % V == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)y % 16 == 0) {
        residual_add_kernel<T, V><<<grid_for((size_t)(n / V), 256), 256, 0, stream>>>(y, x, n / V);
    } else {
        residual_add_kernel<T, 1><<<grid_for((size_t)n, 256), 256, 0, stream>>>(y, x, n);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t ck_rope(void *x, int64_t tokens, int64_t heads, int64_t d, int64_t mbs,
                               int64_t seq, const float *table, int inverse, pdbx_dtype dt,
                               cudaStream_t stream)
{
    if (tokens <= 0 || heads <= 0 || d < 2 || mbs <= 0 || seq <= 0 || tokens != mbs * seq)
        return cudaErrorInvalidValue;
    const float sign = inverse ? -1.0f : 1.0f;
    cudaError_t rc = cudaErrorInvalidValue;
    DISPATCH(dt, T, rc = rope_launch<T>(static_cast<T *>(x), tokens, heads, d, mbs, table, seq,
                                        sign, stream));
    return rc;
}

extern "C" cudaError_t ck_rope_table(float *table, int64_t seq, int64_t d, double theta,
                                     cudaStream_t stream)
{
    if (seq <= 0 || d < 2 || !(theta > 0))
        return cudaErrorInvalidValue;
    const int64_t half = d / 2;
    rope_table_kernel<<<grid_for((size_t)(seq * half), 256), 256, 0, stream>>>(
        table, table + seq * half, seq, half, theta);
    return cudaGetLastError();
}

extern "C" cudaError_t ck_residual_add(void *y, const void *x, int64_t n, pdbx_dtype dt,
                                       cudaStream_t stream)
{
    if (n <= 0)
        return cudaErrorInvalidValue;
    cudaError_t rc = cudaErrorInvalidValue;
    DISPATCH(dt, T, rc = residual_add_launch<T>(static_cast<T *>(y), static_cast<const T *>(x), n,
                                                stream));
    return rc;
}

extern "C" cudaError_t ck_bias_add(void *y, const void *bias, int64_t rows, int64_t cols,
                                   pdbx_dtype dt, cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0)
        return cudaErrorInvalidValue;
    const unsigned gx = grid_for((size_t)cols, 256) < 64u ? grid_for((size_t)cols, 256) : 64u;
    const unsigned gy = rows < 65535 ? (unsigned)rows : 65535u;
    DISPATCH(dt, T, bias_add_kernel<T><<<dim3(gx, gy), 256, 0, stream>>>(
                        static_cast<T *>(y), static_cast<const T *>(bias), rows, cols));
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
    DISPATCH(dt, T, bias_grad_kernel<T><<<grid, block, 0, stream>>>(static_cast<const T *>(dy), db,
                                                                    rows, cols));
    return cudaGetLastError();
}
