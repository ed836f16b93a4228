/* cuda_kernels.cu: the forward's element-wise, normalisation, gather and softmax kernels of
 * the cuda backend, and the fills, checksum and timing spin (contract in cuda_kernels.h; the
 * backward's kernels are cuda_kernels_bwd.cu). GEMMs, including the two batched GEMMs of the
 * attention core, go through cuBLASLt in cuda_gemm.c; docs/cuda.md explains that split.
 *
 * Every kernel is templated on the storage type T (__nv_bfloat16, __half, float) and computes
 * in fp32. CK_DISPATCH (cuda_kernel_util.cuh) maps pdbx_dtype to T in each entry point.
 */
#include "engine/backends/cuda/cuda_kernels.h"
#include "engine/backends/cuda/cuda_attn_mask.h"
#include "engine/backends/cuda/cuda_fill.h"
#include "engine/backends/cuda/cuda_kernel_util.cuh"
#include "engine/backends/cuda/cuda_rope.h"

namespace {

using namespace ck;

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

/* warp_walk, or with Vec false one element per lane at a time (the capped softmax: eight
 * inlined tanhf of a 16-byte vector of bf16 spill registers). */
template <typename T, bool Vec, typename F>
__device__ __forceinline__ void walk_row(const ck_row_split &sp, int64_t n, F f)
{
    if constexpr (Vec)
        warp_walk<T>(sp, n, f);
    else
        for (int64_t j = threadIdx.x % kWarp; j < n; j += kWarp)
            f(j, std::integral_constant<int, 1>{});
}

/* One warp per score row of a stack of [q_len, kv_len] matrices: row r sees keys
 * lo .. ck_keys_visible(r) - 1 (cuda_attn_mask.h: causal, after a cached prefix of
 * kv_len - q_len keys; lo = ck_first_key, 0 without a window), each soft-capped first when
 * cap > 0 (ck_softcap). Pass 1: running (max, sum of exp) per lane over those keys, merged
 * across the warp; pass 2: p = exp(x - max) / sum, and 0 for the keys the row does not see
 * (written without reading the scores there). lse (NULL: none) gets the row's natural
 * log-sum-exp of the capped scores, from which the backward recovers them (c = log p + lse). */
template <typename T, bool Cap>
__global__ void __launch_bounds__(kRowsPerBlock * kWarp)
causal_softmax_kernel(T *scores, int64_t nrows, int64_t q_len, int64_t kv_len, int64_t window,
                      float cap, float *lse)
{
    const int64_t r = warp_row(nrows);
    if (r < 0)
        return;
    const int64_t keys = ck_keys_visible(r, q_len, kv_len);
    const int64_t lo = ck_first_key(r, q_len, kv_len, window);
    T *row = scores + r * kv_len;
    float m = -INFINITY, l = 0.0f;
    walk_row<T, !Cap>(split_row<T>(keys - lo, row + lo), keys - lo, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float v[C];
        load_c<T, C>(row + lo + j, v);
#pragma unroll
        for (int e = 0; e < C; e++) {
            if constexpr (Cap)
                v[e] = ck_softcap(v[e], cap);
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
    const float inv = 1.0f / gl;       /* gl >= 1: the row's own key is always present */
    if (lse && threadIdx.x % kWarp == 0)
        lse[r] = gm + logf(gl);
    walk_row<T, !Cap>(split_row<T>(kv_len, row), kv_len, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float v[C];
        if (j + C > lo && j < keys)
            load_c<T, C>(row + j, v);
#pragma unroll
        for (int e = 0; e < C; e++)
            v[e] = j + e >= lo && j + e < keys ? __expf((Cap ? ck_softcap(v[e], cap) : v[e]) - gm) * inv
                                               : 0.0f;
        store_c<T, C>(row + j, v);
    });
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

/* ---- rotary position embedding (ck_rope; cuda_rope.h walks x) ----
 * Grid-stride over work items of W rotation pairs; x read and written as 16-byte vectors
 * when W is the vector (rot/2 and d multiples of it, x aligned), the fp32 table read per pair.
 * The rotation in fp32, rounded once to T. sign -1: the inverse rotation (the backward). */
template <typename T, int W>
__global__ void rope_kernel(T *x, int64_t items, int64_t heads, int64_t d, int64_t rot, int64_t mbs,
                            const float *cos_t, const float *sin_t, float sign)
{
    const int64_t half = rot / 2;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < items;
         i += (int64_t)gridDim.x * blockDim.x) {
        const ck_rope_at at = ck_rope_item(i, heads, d, rot, mbs, W);
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

} /* namespace */

extern "C" cudaError_t ck_fill_uniform(void *buf, size_t n, pdbx_dtype dt, uint64_t seed, float lo,
                                       float hi, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    CK_DISPATCH(dt, T, fill_uniform_kernel<T><<<grid_for(n, 256), 256, 0, stream>>>(
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
    CK_DISPATCH(dt, T, rmsnorm_kernel<T><<<warp_rows_grid(rows), kRowsPerBlock * kWarp, 0, stream>>>(
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
    CK_DISPATCH(dt, T, silu_mul_kernel<T><<<grid_for((size_t)n, 256), 256, 0, stream>>>(
                        static_cast<const T *>(gate), static_cast<const T *>(up),
                        static_cast<T *>(out), n));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_attn_softmax(void *scores, int64_t nmat, int64_t q_len, int64_t kv_len,
                                       int64_t window, float softcap, float *lse, pdbx_dtype dt,
                                       cudaStream_t stream)
{
    if (nmat <= 0 || q_len <= 0 || kv_len < q_len || nmat * q_len > 0x7fffffff)
        return cudaErrorInvalidValue;
    const float cap = softcap > 0.0f && softcap < INFINITY ? softcap : 0.0f;
    /* the cap's tanh in its own instantiation: the plain kernel keeps its registers */
    const unsigned grid = warp_rows_grid(nmat * q_len), block = kRowsPerBlock * kWarp;
    if (cap > 0.0f) {
        CK_DISPATCH(dt, T, causal_softmax_kernel<T, true><<<grid, block, 0, stream>>>(
                            static_cast<T *>(scores), nmat * q_len, q_len, kv_len, window, cap, lse));
    } else {
        CK_DISPATCH(dt, T, causal_softmax_kernel<T, false><<<grid, block, 0, stream>>>(
                            static_cast<T *>(scores), nmat * q_len, q_len, kv_len, window, cap, lse));
    }
    return cudaGetLastError();
}

extern "C" cudaError_t ck_prefix_softmax(void *scores, int64_t nmat, int64_t q_len, int64_t kv_len,
                                         pdbx_dtype dt, cudaStream_t stream)
{
    return ck_attn_softmax(scores, nmat, q_len, kv_len, 0, 0.0f, NULL, dt, stream);
}

extern "C" cudaError_t ck_causal_softmax(void *scores, int64_t nmat, int64_t s, pdbx_dtype dt,
                                         cudaStream_t stream)
{
    return ck_prefix_softmax(scores, nmat, s, s, dt, stream);
}

extern "C" cudaError_t ck_accumulate_sum(const void *x, size_t n, pdbx_dtype dt, double *acc,
                                         cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    unsigned grid = grid_for(n, 256);
    if (grid > 1024)
        grid = 1024;
    CK_DISPATCH(dt, T, accumulate_sum_kernel<T><<<grid, 256, 0, stream>>>(static_cast<const T *>(x),
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
cudaError_t rope_launch(T *x, int64_t tokens, int64_t heads, int64_t d, int64_t rot, int64_t mbs,
                        const float *table, int64_t seq, float sign, cudaStream_t stream)
{
    constexpr int V = vec_elems<T>();
    const float *cos_t = table, *sin_t = table + seq * (rot / 2);
    /* rot = d: (d/2) % V == 0 implies d % V == 0, the whole-head condition as it was */
    if ((rot / 2) % V == 0 && d % V == 0 && (uintptr_t)x % 16 == 0) {
        const int64_t items = ck_rope_items(tokens, heads, rot, V);
        rope_kernel<T, V><<<grid_for((size_t)items, 256), 256, 0, stream>>>(x, items, heads, d, rot, mbs,
                                                                            cos_t, sin_t, sign);
    } else {
        const int64_t items = ck_rope_items(tokens, heads, rot, 1);
        rope_kernel<T, 1><<<grid_for((size_t)items, 256), 256, 0, stream>>>(x, items, heads, d, rot, mbs,
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

extern "C" cudaError_t ck_rope(void *x, int64_t tokens, int64_t heads, int64_t d, int64_t rot,
                               int64_t mbs, int64_t seq, const float *table, int inverse,
                               pdbx_dtype dt, cudaStream_t stream)
{
    if (tokens <= 0 || heads <= 0 || d < 2 || rot < 2 || rot > d || mbs <= 0 || seq <= 0 ||
        tokens != mbs * seq)
        return cudaErrorInvalidValue;
    const float sign = inverse ? -1.0f : 1.0f;
    cudaError_t rc = cudaErrorInvalidValue;
    CK_DISPATCH(dt, T, rc = rope_launch<T>(static_cast<T *>(x), tokens, heads, d, rot, mbs, table, seq,
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
    CK_DISPATCH(dt, T, rc = residual_add_launch<T>(static_cast<T *>(y), static_cast<const T *>(x), n,
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
    CK_DISPATCH(dt, T, bias_add_kernel<T><<<dim3(gx, gy), 256, 0, stream>>>(
                        static_cast<T *>(y), static_cast<const T *>(bias), rows, cols));
    return cudaGetLastError();
}
