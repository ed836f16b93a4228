/* cuda_kernels.cu: element-wise, normalisation, gather and softmax kernels of the cuda backend
 * (contract in cuda_kernels.h). GEMMs, including the two batched GEMMs of the attention core,
 * go through cuBLASLt in cuda_gemm.c; docs/cuda.md explains that split.
 *
 * Every kernel is templated on the storage type T (__nv_bfloat16, __half, float) and computes
 * in fp32. The dispatch switch at the bottom of each entry point maps pdbx_dtype to T.
 */
#include "engine/backends/cuda/cuda_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

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

/* splitmix64: a counter-based hash, so fills are deterministic and need no state. */
__device__ __forceinline__ uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
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
        uint64_t r = mix64(seed ^ mix64(i));
        float u = (float)(r >> 40) * (1.0f / 16777216.0f);   /* 24 random bits in [0,1) */
        buf[i] = from_f32<T>(lo + span * u);
    }
}

__global__ void fill_tokens_kernel(int32_t *ids, size_t n, int32_t vocab, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        ids[i] = (int32_t)(mix64(seed ^ mix64(i)) % (uint64_t)vocab);
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

/* Block-wide sum; every thread gets the result. blockDim.x is a multiple of 32, <= 1024. */
__device__ float block_sum(float v, float *smem)
{
    int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, nwarps = blockDim.x / kWarp;
    v = warp_sum(v);
    __syncthreads();   /* smem may still be read by a previous call */
    if (lane == 0)
        smem[warp] = v;
    __syncthreads();
    v = lane < nwarps ? smem[lane] : 0.0f;
    return warp_sum(v);
}

__device__ float block_max(float v, float *smem)
{
    int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, nwarps = blockDim.x / kWarp;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0)
        smem[warp] = v;
    __syncthreads();
    v = lane < nwarps ? smem[lane] : -INFINITY;
    return warp_max(v);
}

template <typename T>
__global__ void rmsnorm_kernel(const T *x, const T *w, T *y, int64_t cols, float eps)
{
    __shared__ float smem[kWarp];
    const T *row = x + blockIdx.x * cols;
    T *out = y + blockIdx.x * cols;
    float ss = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = to_f32(row[j]);
        ss += v * v;
    }
    ss = block_sum(ss, smem);
    float inv = rsqrtf(ss / (float)cols + eps);
    /* HF LlamaRMSNorm: normalise in fp32, round to the storage type, then scale by w. */
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        out[j] = from_f32<T>(to_f32(w[j]) * to_f32(from_f32<T>(to_f32(row[j]) * inv)));
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

/* One block per score row. Pass 1: running (max, sum of exp) per thread over j <= i, merged
 * across the block; pass 2: write p = exp(x - max) / sum, and 0 above the diagonal. */
template <typename T>
__global__ void causal_softmax_kernel(T *scores, int64_t s)
{
    __shared__ float smem[kWarp];
    int64_t r = blockIdx.x;
    int64_t i = r % s;                 /* query position within its [s, s] matrix */
    T *row = scores + r * s;
    float m = -INFINITY, l = 0.0f;
    for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) {
        float v = to_f32(row[j]);
        if (v > m) {
            l = l * __expf(m - v) + 1.0f;
            m = v;
        } else {
            l += __expf(v - m);
        }
    }
    float gm = block_max(m, smem);
    float ls = (m == -INFINITY) ? 0.0f : l * __expf(m - gm);
    float gl = block_sum(ls, smem);
    float inv = 1.0f / gl;             /* gl >= 1: column j = i is always present */
    for (int64_t j = threadIdx.x; j < s; j += blockDim.x)
        row[j] = from_f32<T>(j <= i ? __expf(to_f32(row[j]) - gm) * inv : 0.0f);
}

/* ---- backward ---- */

/* One block per row: dx and the row's rstd (kept for the dweight kernel). */
template <typename T>
__global__ void rmsnorm_bwd_dx_kernel(const T *x, const T *w, const T *dy, T *dx, float *rstd,
                                      int64_t cols, float eps)
{
    __shared__ float smem[kWarp];
    const T *xr = x + blockIdx.x * cols, *gr = dy + blockIdx.x * cols;
    T *o = dx + blockIdx.x * cols;
    float ss = 0.0f, dot = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        float xv = to_f32(xr[j]);
        ss += xv * xv;
        dot += to_f32(w[j]) * to_f32(gr[j]) * xv;
    }
    ss = block_sum(ss, smem);
    dot = block_sum(dot, smem);
    float inv = rsqrtf(ss / (float)cols + eps);
    float coef = dot * inv * inv * inv / (float)cols;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        o[j] = from_f32<T>(inv * to_f32(w[j]) * to_f32(gr[j]) - coef * to_f32(xr[j]));
    if (threadIdx.x == 0)
        rstd[blockIdx.x] = inv;
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

/* One block per row, as the forward softmax. */
template <typename T>
__global__ void causal_softmax_bwd_kernel(const T *p, T *dp, int64_t s, float scale)
{
    __shared__ float smem[kWarp];
    int64_t r = blockIdx.x, i = r % s;
    const T *pr = p + r * s;
    T *gr = dp + r * s;
    float dot = 0.0f;
    for (int64_t j = threadIdx.x; j <= i; j += blockDim.x)
        dot += to_f32(pr[j]) * to_f32(gr[j]);
    dot = block_sum(dot, smem);
    for (int64_t j = threadIdx.x; j < s; j += blockDim.x)
        gr[j] = from_f32<T>(j <= i ? scale * to_f32(pr[j]) * (to_f32(gr[j]) - dot) : 0.0f);
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

/* Threads per block for a row of `cols` elements: a multiple of 32 between 32 and 1024. */
inline unsigned row_block(int64_t cols)
{
    unsigned b = 32;
    while (b < 1024 && (int64_t)b * 4 < cols)
        b *= 2;
    return b;
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
    unsigned block = row_block(cols);
    DISPATCH(dt, T, rmsnorm_kernel<T><<<(unsigned)rows, block, 0, stream>>>(
                        static_cast<const T *>(x), static_cast<const T *>(w), static_cast<T *>(y),
                        cols, eps));
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
    unsigned block = row_block(s);
    DISPATCH(dt, T, causal_softmax_kernel<T><<<(unsigned)(nmat * s), block, 0, stream>>>(
                        static_cast<T *>(scores), s));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_rmsnorm_bwd(const void *x, const void *w, const void *dy, void *dx,
                                      float *rstd, float *dw, int64_t rows, int64_t cols, float eps,
                                      pdbx_dtype dt, cudaStream_t stream)
{
    if (rows <= 0 || rows > 0x7fffffff || cols <= 0)
        return cudaErrorInvalidValue;
    unsigned block = row_block(cols);
    DISPATCH(dt, T, rmsnorm_bwd_dx_kernel<T><<<(unsigned)rows, block, 0, stream>>>(
                        static_cast<const T *>(x), static_cast<const T *>(w),
                        static_cast<const T *>(dy), static_cast<T *>(dx), rstd, cols, eps));
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
    unsigned block = row_block(s);
    DISPATCH(dt, T, causal_softmax_bwd_kernel<T><<<(unsigned)(nmat * s), block, 0, stream>>>(
                        static_cast<const T *>(p), static_cast<T *>(dp), s, scale));
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
