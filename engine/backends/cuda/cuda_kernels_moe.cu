/* cuda_kernels_moe.cu: the mixture-of-experts kernels of cuda_kernels_moe.h (the router's
 * scoring and top-k, the route index, permute and unpermute, and their backward). The walks
 * are cuda_moe_walk.h's, host-tested; the semantics are the cpu backend's cpu_kernels_moe.h.
 *
 * The router kernels run one thread per token: a token's choice depends on its own E logits
 * only, E is small (8 .. 256) beside the GEMM that made them, and one thread keeps the cpu's
 * serial insertion (its ties) without a cross-lane sort. The row moves run one warp per copy
 * (permute, the unpermute's backward) or per token (the gathers), 16-byte vectors when every
 * row is aligned (the hidden size a multiple of the vector and the bases aligned). */
#include "engine/backends/cuda/cuda_kernels_moe.h"

#include "engine/backends/cuda/cuda_kernel_util.cuh"
#include "engine/backends/cuda/cuda_moe_walk.h"

namespace {

using namespace ck;

constexpr unsigned kTokenBlock = 128;   /* router kernels: threads (tokens) per block */

/* The row's softmax max and 1 / sum (sigmoid: unused). */
template <typename T>
__device__ __forceinline__ void softmax_stats(const T *l, int experts, float *max, float *inv)
{
    float m = to_f32(l[0]);
    for (int e = 1; e < experts; e++)
        m = fmaxf(m, to_f32(l[e]));
    float sum = 0.0f;
    for (int e = 0; e < experts; e++)
        sum += expf(to_f32(l[e]) - m);
    *max = m;
    *inv = 1.0f / sum;
}

__device__ __forceinline__ float score_of(int sigmoid, float logit, float max, float inv)
{
    return sigmoid ? 1.0f / (1.0f + expf(-logit)) : expf(logit - max) * inv;
}

template <typename T>
__global__ void topk_kernel(const T *logits, int64_t tokens, int experts, int top_k, int sigmoid,
                            int norm_topk, float scale, int32_t *idx, float *weights)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tokens)
        return;
    const T *l = logits + t * experts;
    float key[CK_MOE_MAX_TOPK];
    int32_t id[CK_MOE_MAX_TOPK];
    int n = 0;
    for (int e = 0; e < experts; e++)
        pdbx_moe_topk_insert(to_f32(l[e]), e, key, id, &n, top_k);
    float max = 0.0f, inv = 1.0f, sum = 0.0f;
    if (!sigmoid)
        softmax_stats(l, experts, &max, &inv);
    for (int j = 0; j < top_k; j++) {
        key[j] = score_of(sigmoid, to_f32(l[id[j]]), max, inv);
        sum += key[j];
    }
    const float f = ck_moe_weight_factor(norm_topk, scale, sum);
    for (int j = 0; j < top_k; j++) {
        idx[t * top_k + j] = id[j];
        weights[t * top_k + j] = key[j] * f;
    }
}

/* One token's dlogits (the cpu's topk_bwd_row): S = sum s_j, D = sum dw_j s_j,
 * ds_j = a (dw_j - b) with a = scale / S, b = D / S (norm_topk) or a = scale, b = 0. */
template <typename T>
__global__ void topk_bwd_kernel(const T *logits, const int32_t *idx, const float *dweights, int64_t tokens,
                                int experts, int top_k, int sigmoid, int norm_topk, float scale, T *dlogits)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tokens)
        return;
    const T *l = logits + t * experts;
    const int32_t *id = idx + t * top_k;
    const float *dw = dweights + t * top_k;
    T *dl = dlogits + t * experts;
    float max = 0.0f, inv = 1.0f;
    if (!sigmoid)
        softmax_stats(l, experts, &max, &inv);
    float S = 0.0f, D = 0.0f;
    for (int j = 0; j < top_k; j++) {
        const float s = score_of(sigmoid, to_f32(l[id[j]]), max, inv);
        S += s;
        D += dw[j] * s;
    }
    const float a = norm_topk ? scale / S : scale, b = norm_topk ? D / S : 0.0f;
    float dot = 0.0f;   /* softmax's centring term sum_j s_j ds_j */
    if (!sigmoid)
        for (int j = 0; j < top_k; j++)
            dot += score_of(0, to_f32(l[id[j]]), max, inv) * (a * (dw[j] - b));
    for (int e = 0; e < experts; e++) {
        const float le = to_f32(l[e]);
        float g = sigmoid ? 0.0f : -(expf(le - max) * inv) * dot;
        for (int j = 0; j < top_k; j++)   /* e chosen at most once */
            if (id[j] == e) {
                const float s = score_of(sigmoid, le, max, inv), ds = a * (dw[j] - b);
                g += sigmoid ? ds * s * (1.0f - s) : s * ds;
            }
        dl[e] = from_f32<T>(g);
    }
}

/* cuda_moe_walk.h's route index: per-warp counts, the scan over (expert, warp), the placement
 * 32 copies at a time. cnt [warps][experts] in dynamic shared memory. */
__global__ void route_index_kernel(const int32_t *idx, int64_t n, int experts, int warps, int64_t *offsets,
                                   int64_t *pos)
{
    extern __shared__ int32_t cnt[];
    const int w = (int)(threadIdx.x / kWarp), lane = (int)(threadIdx.x % kWarp);
    for (int i = (int)threadIdx.x; i < warps * experts; i += (int)blockDim.x)
        cnt[i] = 0;
    __syncthreads();
    int64_t c0, c1;
    ck_moe_segment(n, warps, w, &c0, &c1);
    int32_t *mine = cnt + (int64_t)w * experts;
    for (int64_t c = c0 + lane; c < c1; c += kWarp)
        atomicAdd(&mine[idx[c]], 1);   /* a count: the order of the adds does not matter */
    __syncthreads();
    /* per expert: the warps' counts into exclusive prefixes, the total into offsets[g + 1] */
    for (int g = (int)threadIdx.x; g < experts; g += (int)blockDim.x) {
        int64_t run = 0;
        for (int v = 0; v < warps; v++) {
            const int32_t k = cnt[(int64_t)v * experts + g];
            cnt[(int64_t)v * experts + g] = (int32_t)run;
            run += k;
        }
        offsets[g + 1] = run;
    }
    __syncthreads();
    if (threadIdx.x == 0) {   /* E <= 12288 serial adds: small beside the copies' moves */
        offsets[0] = 0;
        for (int g = 0; g < experts; g++)
            offsets[g + 1] += offsets[g];
    }
    __syncthreads();
    for (int64_t base = c0; base < c1; base += kWarp) {
        const int64_t c = base + lane;
        const int valid = c < c1;
        const int32_t g = valid ? idx[c] : -1;
        const unsigned peers = __match_any_sync(0xffffffffu, g);
        const int rank = __popc(peers & ((1u << lane) - 1u));
        if (valid)
            pos[c] = offsets[g] + mine[g] + rank;
        __syncwarp();
        if (valid && lane == __ffs(peers) - 1)
            mine[g] += __popc(peers);
        __syncwarp();
    }
}

/* Whether every row of the arrays (bases a, b, c; 0 when absent) starts 16-byte aligned. */
template <typename T>
__host__ __device__ bool rows_vec(int64_t hidden, const void *a, const void *b, const void *c)
{
    return hidden % vec_elems<T>() == 0 && (uintptr_t)a % 16 == 0 && (uintptr_t)b % 16 == 0 &&
           (uintptr_t)c % 16 == 0;
}

/* f(j, C) over a row of `hidden` elements by one warp: vectors of C when vec, else scalars. */
template <typename T, typename F>
__device__ __forceinline__ void row_walk(bool vec, int64_t hidden, F f)
{
    constexpr int W = vec_elems<T>();
    const int lane = (int)(threadIdx.x % kWarp);
    if (vec) {
        for (int64_t j = (int64_t)lane * W; j < hidden; j += (int64_t)kWarp * W)
            f(j, std::integral_constant<int, W>{});
    } else {
        for (int64_t j = lane; j < hidden; j += kWarp)
            f(j, std::integral_constant<int, 1>{});
    }
}

template <typename T>
__global__ void permute_kernel(const T *x, const int64_t *pos, int64_t copies, int64_t hidden, int top_k,
                               bool vec, T *rows)
{
    const int64_t c = warp_row(copies);
    if (c < 0)
        return;
    const T *src = x + (c / top_k) * hidden;
    T *dst = rows + pos[c] * hidden;
    row_walk<T>(vec, hidden, [&](int64_t j, auto cc) {
        constexpr int C = decltype(cc)::value;
        float v[C];
        load_c<T, C>(src + j, v);
        store_c<T, C>(dst + j, v);
    });
}

template <typename T>
__global__ void gather_sum_kernel(const T *rows, const float *w, const int64_t *pos, int64_t tokens,
                                  int64_t hidden, int top_k, bool vec, T *y)
{
    const int64_t t = warp_row(tokens);
    if (t < 0)
        return;
    const int64_t *p = pos + t * top_k;
    const float *wt = w ? w + t * top_k : nullptr;
    row_walk<T>(vec, hidden, [&](int64_t j, auto cc) {
        constexpr int C = decltype(cc)::value;
        float acc[C], v[C];
        for (int i = 0; i < C; i++)
            acc[i] = 0.0f;
        for (int k = 0; k < top_k; k++) {   /* in j order, as the cpu's gather_sum */
            load_c<T, C>(rows + p[k] * hidden + j, v);
            const float wk = wt ? wt[k] : 1.0f;
            for (int i = 0; i < C; i++)
                acc[i] += wk * v[i];
        }
        store_c<T, C>(y + t * hidden + j, acc);
    });
}

template <typename T>
__global__ void unpermute_bwd_kernel(const T *rows, const float *w, const int64_t *pos, const T *dy,
                                     int64_t copies, int64_t hidden, int top_k, bool vec, T *drows, float *dw)
{
    const int64_t c = warp_row(copies);
    if (c < 0)
        return;
    const T *r = rows + pos[c] * hidden, *g = dy + (c / top_k) * hidden;
    T *dr = drows + pos[c] * hidden;
    const float wc = w[c];
    float dot = 0.0f;
    row_walk<T>(vec, hidden, [&](int64_t j, auto cc) {
        constexpr int C = decltype(cc)::value;
        float gv[C], rv[C], out[C];
        load_c<T, C>(g + j, gv);
        load_c<T, C>(r + j, rv);
        for (int i = 0; i < C; i++) {
            out[i] = wc * gv[i];
            dot += gv[i] * rv[i];
        }
        store_c<T, C>(dr + j, out);
    });
    dot = warp_sum(dot);
    if (threadIdx.x % kWarp == 0)
        dw[c] = dot;
}

bool router_args_ok(const void *a, const void *b, int64_t tokens, int experts, int top_k)
{
    return a && b && tokens >= 1 && experts >= 1 && top_k >= 1 && top_k <= experts &&
           top_k <= CK_MOE_MAX_TOPK && tokens * top_k <= INT32_MAX;
}

bool rows_args_ok(const void *a, const void *b, const void *c, int64_t tokens, int64_t hidden, int top_k)
{
    return a && b && c && tokens >= 1 && hidden >= 1 && top_k >= 1 && top_k <= CK_MOE_MAX_TOPK &&
           tokens * top_k <= INT32_MAX;
}

unsigned warp_grid(int64_t rows)
{
    return warp_rows_grid(rows);
}

} /* namespace */

extern "C" cudaError_t ck_moe_topk(const void *logits, int64_t tokens, int experts, int top_k, int sigmoid,
                                   int norm_topk, float scale, int32_t *idx, float *weights, pdbx_dtype dt,
                                   cudaStream_t stream)
{
    if (!router_args_ok(logits, idx, tokens, experts, top_k) || !weights)
        return cudaErrorInvalidValue;
    const unsigned grid = (unsigned)((tokens + kTokenBlock - 1) / kTokenBlock);
    CK_DISPATCH(dt, T, topk_kernel<T><<<grid, kTokenBlock, 0, stream>>>(
                           (const T *)logits, tokens, experts, top_k, sigmoid, norm_topk, scale, idx, weights));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_moe_topk_bwd(const void *logits, const int32_t *idx, const float *dweights,
                                       int64_t tokens, int experts, int top_k, int sigmoid, int norm_topk,
                                       float scale, void *dlogits, pdbx_dtype dt, cudaStream_t stream)
{
    if (!router_args_ok(logits, idx, tokens, experts, top_k) || !dweights || !dlogits)
        return cudaErrorInvalidValue;
    const unsigned grid = (unsigned)((tokens + kTokenBlock - 1) / kTokenBlock);
    CK_DISPATCH(dt, T, topk_bwd_kernel<T><<<grid, kTokenBlock, 0, stream>>>(
                           (const T *)logits, idx, dweights, tokens, experts, top_k, sigmoid, norm_topk, scale,
                           (T *)dlogits));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_moe_route_index(const int32_t *idx, int64_t copies, int experts, int64_t *offsets,
                                          int64_t *pos, cudaStream_t stream)
{
    const int warps = ck_moe_route_warps(experts);
    if (!idx || !offsets || !pos || copies < 1 || copies > INT32_MAX || warps < 1)
        return cudaErrorInvalidValue;
    const size_t shared = (size_t)warps * (size_t)experts * sizeof(int32_t);
    route_index_kernel<<<1, (unsigned)warps * kWarp, shared, stream>>>(idx, copies, experts, warps, offsets, pos);
    return cudaGetLastError();
}

extern "C" cudaError_t ck_moe_permute(const void *x, const int64_t *pos, int64_t tokens, int64_t hidden,
                                      int top_k, void *rows, pdbx_dtype dt, cudaStream_t stream)
{
    if (!rows_args_ok(x, pos, rows, tokens, hidden, top_k))
        return cudaErrorInvalidValue;
    const int64_t copies = tokens * top_k;
    CK_DISPATCH(dt, T, permute_kernel<T><<<warp_grid(copies), kWarp * kRowsPerBlock, 0, stream>>>(
                           (const T *)x, pos, copies, hidden, top_k, rows_vec<T>(hidden, x, rows, nullptr),
                           (T *)rows));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_moe_gather_sum(const void *rows, const float *w, const int64_t *pos, int64_t tokens,
                                         int64_t hidden, int top_k, void *y, pdbx_dtype dt, cudaStream_t stream)
{
    if (!rows_args_ok(rows, pos, y, tokens, hidden, top_k))
        return cudaErrorInvalidValue;
    CK_DISPATCH(dt, T, gather_sum_kernel<T><<<warp_grid(tokens), kWarp * kRowsPerBlock, 0, stream>>>(
                           (const T *)rows, w, pos, tokens, hidden, top_k, rows_vec<T>(hidden, rows, y, nullptr),
                           (T *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_moe_unpermute_bwd(const void *rows, const float *w, const int64_t *pos, const void *dy,
                                            int64_t tokens, int64_t hidden, int top_k, void *drows, float *dw,
                                            pdbx_dtype dt, cudaStream_t stream)
{
    if (!rows_args_ok(rows, pos, dy, tokens, hidden, top_k) || !w || !drows || !dw)
        return cudaErrorInvalidValue;
    const int64_t copies = tokens * top_k;
    CK_DISPATCH(dt, T, unpermute_bwd_kernel<T><<<warp_grid(copies), kWarp * kRowsPerBlock, 0, stream>>>(
                           (const T *)rows, w, pos, (const T *)dy, copies, hidden, top_k,
                           rows_vec<T>(hidden, rows, dy, drows), (T *)drows, dw));
    return cudaGetLastError();
}
