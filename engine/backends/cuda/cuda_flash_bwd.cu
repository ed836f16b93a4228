/* cuda_flash_bwd.cu: the fused (FlashAttention-2) causal attention backward of the cuda backend
 * (contract in cuda_kernels.h, ck_flash_attention_bwd; docs/cuda.md, "Fused backward").
 *
 * Three launches on the stream:
 *   1. delta_kernel: delta_i = sum_d dO_i,d O_i,d per query row (one warp per row, fp32);
 *      dq_acc is zeroed (cudaMemsetAsync) before it;
 *   2. flash_bwd_kernel: one block per (sequence b, kv head g: grid x; key tile kt: grid y). It
 *      loads K_kt and V_kt once, then for each q head h of g's group and each query tile
 *      qt >= kt (the causal tiles) recomputes S = Q K^T and P = exp2(scale_log2 S - lse) from the
 *      forward's saved log-sum-exp, and accumulates
 *          dV += P^T dO      dP = dO V^T      dS = P o (dP - delta)      dK += dS^T Q
 *          dQ_qt += scale dS K   (fp32 atomicAdd into dq_acc: other key tiles add to it too)
 *      dK and dV stay in shared memory (fp32) for the whole loop, so the group's sum needs no
 *      atomics, and are written once at the end (dK times scale), in the dtype;
 *   3. (bf16/fp16) dq = dq_acc rounded to the dtype; for fp32 dq_acc is dq.
 * Tiles are kBT x kBT (CK_FLASH_BWD_TILE), 4 warps. The five tile products go through
 * tile_mma: tensor cores (nvcuda::wmma 16x16x16, fp32 accumulate) for bf16/fp16, with P and dS
 * rounded to the dtype first as FlashAttention-2 does; plain fp32 FMA for fp32 (no TF32), as the
 * forward. The executed products are 5 of 2 * kBT^2 * D FLOPs per visited (key, query) tile
 * pair: plan.h's pdbx_attn_core_executed_flops. tests/unit/test_flash_bwd_reference.c mirrors
 * this loop in C against textbook gradients; tests/cuda/test_cuda_flash_bwd.c checks this kernel
 * against the unfused backward on a GPU.
 */
#include "engine/backends/cuda/cuda_kernels.h"
#include "engine/backends/cuda/cuda_flash_common.cuh"

#include <mma.h>

namespace {

using ck::from_f32;
using ck::to_f32;
using ck_flash::kLog2e;
using ck_flash::lse_index;
using ck_flash::row_off;

constexpr int kBT = CK_FLASH_BWD_TILE;
constexpr int kThreads = 128;
static_assert(CK_FLASH_BWD_TILE == PDBX_FLASH_BWD_TILE, "plan.h's executed-FLOPs tile is this kernel's");
static_assert(kBT % 16 == 0, "whole wmma fragments");

struct flash_bwd_args {
    const void *q, *k, *v, *dout;
    const float *lse, *delta;
    float *dq_acc;
    void *dk, *dv;
    int64_t mbs, seq, heads, kv_heads;
    float scale, scale_log2;
};

/* Shared memory of one block: Q, dO, K, V tiles in T (rows padded by 16 bytes), S and dP in
 * fp32, P and dS in T (the operands of the next products), the dK, dV accumulators and the
 * dQ tile in fp32, and the query rows' lse and delta. Every section and every 16-row band is
 * 32-byte aligned, as wmma's fragment loads want. */
template <typename T, int D>
struct bwd_layout {
    static constexpr int pad = 16 / (int)sizeof(T);
    static constexpr int ldt = D + pad;        /* Q, dO, K, V (T) */
    static constexpr int lds = kBT + 4;        /* S, dP (fp32) */
    static constexpr int ldp = kBT + pad;      /* P, dS (T) */
    static constexpr int lda = D + 4;          /* dK, dV, dQ (fp32) */
    static constexpr size_t tile_t = sizeof(T) * kBT * ldt;
    static constexpr size_t q_off = 0;
    static constexpr size_t do_off = q_off + tile_t;
    static constexpr size_t k_off = do_off + tile_t;
    static constexpr size_t v_off = k_off + tile_t;
    static constexpr size_t s_off = v_off + tile_t;
    static constexpr size_t dp_off = s_off + sizeof(float) * kBT * lds;
    static constexpr size_t p_off = dp_off + sizeof(float) * kBT * lds;
    static constexpr size_t ds_off = p_off + sizeof(T) * kBT * ldp;
    static constexpr size_t dk_off = ds_off + sizeof(T) * kBT * ldp;
    static constexpr size_t dv_off = dk_off + sizeof(float) * kBT * lda;
    static constexpr size_t dq_off = dv_off + sizeof(float) * kBT * lda;
    static constexpr size_t lse_off = dq_off + sizeof(float) * kBT * lda;
    static constexpr size_t delta_off = lse_off + sizeof(float) * kBT;
    static constexpr size_t bytes = delta_off + sizeof(float) * kBT;
    static_assert(do_off % 32 == 0 && k_off % 32 == 0 && v_off % 32 == 0 && s_off % 32 == 0 &&
                  dp_off % 32 == 0 && p_off % 32 == 0 && ds_off % 32 == 0 && dk_off % 32 == 0 &&
                  dv_off % 32 == 0 && dq_off % 32 == 0 && lse_off % 32 == 0,
                  "shared sections 32-byte aligned");
    static_assert((16 * ldt * sizeof(T)) % 32 == 0 && (16 * lds * 4) % 32 == 0 &&
                  (16 * ldp * sizeof(T)) % 32 == 0 && (16 * lda * 4) % 32 == 0,
                  "16-row bands 32-byte aligned");
};

/* C[M x N] (fp32, row-major, ldc) = (accumulate ? C : 0) + A[M x K] B[K x N], A and B in shared
 * memory, each row-major (element (r, c) at X[r * ld + c]) or column-major (X[c * ld + r]) as
 * A_COL / B_COL say. The block's warps share the 16 x 16 output fragments; every thread must
 * call it. M, N, K multiples of 16. */
template <typename T, bool A_COL, bool B_COL>
__device__ __forceinline__ void tile_mma(float *C, int ldc, const T *A, int lda, const T *B, int ldb,
                                         int M, int N, int K, bool accumulate)
{
    if constexpr (std::is_same<T, float>::value) {
        for (int idx = threadIdx.x; idx < M * N; idx += blockDim.x) {
            const int r = idx / N, c = idx % N;
            float acc = accumulate ? C[r * ldc + c] : 0.0f;
            for (int k = 0; k < K; k++)
                acc = fmaf(A_COL ? A[k * lda + r] : A[r * lda + k],
                           B_COL ? B[c * ldb + k] : B[k * ldb + c], acc);
            C[r * ldc + c] = acc;
        }
    } else {
        using namespace nvcuda;
        using LA = typename std::conditional<A_COL, wmma::col_major, wmma::row_major>::type;
        using LB = typename std::conditional<B_COL, wmma::col_major, wmma::row_major>::type;
        const int warp = threadIdx.x / ck::kWarp, nwarps = blockDim.x / ck::kWarp;
        const int tn = N / 16, tiles = (M / 16) * tn;
        for (int t = warp; t < tiles; t += nwarps) {
            const int mi = t / tn, ni = t % tn;
            float *ct = C + mi * 16 * ldc + ni * 16;
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
            if (accumulate)
                wmma::load_matrix_sync(acc, ct, ldc, wmma::mem_row_major);
            else
                wmma::fill_fragment(acc, 0.0f);
            for (int kk = 0; kk < K / 16; kk++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, T, LA> fa;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T, LB> fb;
                wmma::load_matrix_sync(fa, A_COL ? A + kk * 16 * lda + mi * 16 : A + mi * 16 * lda + kk * 16,
                                       lda);
                wmma::load_matrix_sync(fb, B_COL ? B + ni * 16 * ldb + kk * 16 : B + kk * 16 * ldb + ni * 16,
                                       ldb);
                wmma::mma_sync(acc, fa, fb, acc);
            }
            wmma::store_matrix_sync(ct, acc, ldc, wmma::mem_row_major);
        }
    }
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads) flash_bwd_kernel(flash_bwd_args a)
{
    using L = bwd_layout<T, D>;
    extern __shared__ __align__(128) unsigned char smem[];
    T *Qs = reinterpret_cast<T *>(smem + L::q_off);
    T *dOs = reinterpret_cast<T *>(smem + L::do_off);
    T *Ks = reinterpret_cast<T *>(smem + L::k_off);
    T *Vs = reinterpret_cast<T *>(smem + L::v_off);
    float *Ss = reinterpret_cast<float *>(smem + L::s_off);
    float *dPs = reinterpret_cast<float *>(smem + L::dp_off);
    T *Ps = reinterpret_cast<T *>(smem + L::p_off);
    T *dSs = reinterpret_cast<T *>(smem + L::ds_off);
    float *dKs = reinterpret_cast<float *>(smem + L::dk_off);
    float *dVs = reinterpret_cast<float *>(smem + L::dv_off);
    float *dQs = reinterpret_cast<float *>(smem + L::dq_off);
    float *lse_s = reinterpret_cast<float *>(smem + L::lse_off);
    float *delta_s = reinterpret_cast<float *>(smem + L::delta_off);

    const int64_t nt = (a.seq + kBT - 1) / kBT;
    const int64_t kt = blockIdx.y;               /* kt 0 has the most query tiles: first */
    const int64_t b = blockIdx.x / a.kv_heads, g = blockIdx.x % a.kv_heads;
    const int64_t group = a.heads / a.kv_heads, k0 = kt * kBT;

    ck_flash::load_tile<T, D, kBT>(Ks, L::ldt, static_cast<const T *>(a.k), k0, a.seq, b, g, a.mbs,
                                   a.kv_heads);
    ck_flash::load_tile<T, D, kBT>(Vs, L::ldt, static_cast<const T *>(a.v), k0, a.seq, b, g, a.mbs,
                                   a.kv_heads);
    for (int i = threadIdx.x; i < kBT * L::lda; i += blockDim.x) {
        dKs[i] = 0.0f;
        dVs[i] = 0.0f;
    }
    for (int64_t jj = 0; jj < group; jj++) {
        const int64_t h = g * group + jj;
        for (int64_t qt = kt; qt < nt; qt++) {
            const int64_t q0 = qt * kBT;
            __syncthreads();   /* the previous tile's Q, dO and dQ are no longer read */
            ck_flash::load_tile<T, D, kBT>(Qs, L::ldt, static_cast<const T *>(a.q), q0, a.seq, b, h,
                                           a.mbs, a.heads);
            ck_flash::load_tile<T, D, kBT>(dOs, L::ldt, static_cast<const T *>(a.dout), q0, a.seq, b,
                                           h, a.mbs, a.heads);
            if (threadIdx.x < kBT) {
                const int64_t qi = q0 + threadIdx.x;
                lse_s[threadIdx.x] = qi < a.seq ? a.lse[lse_index(qi, b, h, a.heads, a.seq)] : 0.0f;
                delta_s[threadIdx.x] = qi < a.seq ? a.delta[lse_index(qi, b, h, a.heads, a.seq)] : 0.0f;
            }
            __syncthreads();
            tile_mma<T, false, true>(Ss, L::lds, Qs, L::ldt, Ks, L::ldt, kBT, kBT, D, false);
            tile_mma<T, false, true>(dPs, L::lds, dOs, L::ldt, Vs, L::ldt, kBT, kBT, D, false);
            __syncthreads();
            /* P and dS; masked (key after the query, or a query past seq) elements are 0 */
            for (int idx = threadIdx.x; idx < kBT * kBT; idx += blockDim.x) {
                const int r = idx / kBT, c = idx % kBT;
                const int64_t qi = q0 + r, kj = k0 + c;
                const float p = (kj <= qi && qi < a.seq)
                                    ? exp2f(Ss[r * L::lds + c] * a.scale_log2 - lse_s[r]) : 0.0f;
                Ps[r * L::ldp + c] = from_f32<T>(p);
                dSs[r * L::ldp + c] = from_f32<T>(p * (dPs[r * L::lds + c] - delta_s[r]));
            }
            __syncthreads();
            tile_mma<T, true, false>(dVs, L::lda, Ps, L::ldp, dOs, L::ldt, kBT, D, kBT, true);
            tile_mma<T, true, false>(dKs, L::lda, dSs, L::ldp, Qs, L::ldt, kBT, D, kBT, true);
            tile_mma<T, false, false>(dQs, L::lda, dSs, L::ldp, Ks, L::ldt, kBT, D, kBT, false);
            __syncthreads();
            float *dq = a.dq_acc;
            for (int idx = threadIdx.x; idx < kBT * D; idx += blockDim.x) {
                const int r = idx / D, c = idx % D;
                if (q0 + r < a.seq)
                    atomicAdd(dq + row_off<D>(q0 + r, b, h, a.mbs, a.heads) + c,
                              dQs[r * L::lda + c] * a.scale);
            }
        }
    }
    __syncthreads();
    T *dk = static_cast<T *>(a.dk), *dv = static_cast<T *>(a.dv);
    for (int idx = threadIdx.x; idx < kBT * D; idx += blockDim.x) {
        const int r = idx / D, c = idx % D;
        if (k0 + r < a.seq) {
            const int64_t o = row_off<D>(k0 + r, b, g, a.mbs, a.kv_heads) + c;
            dk[o] = from_f32<T>(dKs[r * L::lda + c] * a.scale);
            dv[o] = from_f32<T>(dVs[r * L::lda + c]);
        }
    }
}

/* delta[b, h, pos] = sum_d dout * out over the row (pos, b, h) of [seq, mbs, heads, d]: one
 * warp per row, 16-byte vectors where aligned (the rows of d 64 and 128 always are). */
template <typename T>
__global__ void __launch_bounds__(ck::kRowsPerBlock * ck::kWarp)
delta_kernel(const T *out, const T *dout, float *delta, int64_t rows, int64_t mbs, int64_t heads,
             int64_t seq, int64_t d)
{
    const int64_t r = ck::warp_row(rows);
    if (r < 0)
        return;
    const T *o = out + r * d, *g = dout + r * d;
    float dot = 0.0f;
    ck::warp_walk<T>(ck::split_row<T>(d, o, g), d, [&](int64_t j, auto cnt) {
        constexpr int C = decltype(cnt)::value;
        float ov[C], gv[C];
        ck::load_c<T, C>(o + j, ov);
        ck::load_c<T, C>(g + j, gv);
#pragma unroll
        for (int e = 0; e < C; e++)
            dot += ov[e] * gv[e];
    });
    dot = ck::warp_sum(dot);
    if (threadIdx.x % ck::kWarp == 0) {
        const int64_t h = r % heads, b = (r / heads) % mbs, pos = r / (heads * mbs);
        delta[lse_index(pos, b, h, heads, seq)] = dot;
    }
}

template <typename T>
__global__ void round_kernel(const float *src, T *dst, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = from_f32<T>(src[i]);
}

template <typename T>
size_t smem_bytes(int64_t head_dim)
{
    return head_dim == 64 ? bwd_layout<T, 64>::bytes : bwd_layout<T, 128>::bytes;
}

template <typename T>
cudaError_t bwd_launch(const flash_bwd_args &a, const void *out, float *delta, void *dq,
                       int64_t head_dim, cudaStream_t stream)
{
    const int64_t rows = a.seq * a.mbs * a.heads, n = rows * head_dim;
    cudaError_t e = cudaMemsetAsync(a.dq_acc, 0, (size_t)n * sizeof(float), stream);
    if (e != cudaSuccess)
        return e;
    delta_kernel<T><<<ck::warp_rows_grid(rows), ck::kRowsPerBlock * ck::kWarp, 0, stream>>>(
        static_cast<const T *>(out), static_cast<const T *>(a.dout), delta, rows, a.mbs, a.heads,
        a.seq, head_dim);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    const dim3 grid((unsigned)(a.mbs * a.kv_heads), (unsigned)((a.seq + kBT - 1) / kBT));
    e = head_dim == 64 ? ck_flash::launch(flash_bwd_kernel<T, 64>, grid, kThreads, smem_bytes<T>(64), a, stream)
                       : ck_flash::launch(flash_bwd_kernel<T, 128>, grid, kThreads, smem_bytes<T>(128), a,
                                          stream);
    if (e != cudaSuccess || static_cast<void *>(a.dq_acc) == dq)
        return e;
    round_kernel<T><<<ck::grid_for((size_t)n, 256), 256, 0, stream>>>(a.dq_acc, static_cast<T *>(dq), n);
    return cudaGetLastError();
}

} /* namespace */

extern "C" size_t ck_flash_bwd_smem_bytes(int64_t head_dim, pdbx_dtype dt)
{
    if (!ck_flash_supported(head_dim, dt))
        return 0;
    switch (dt) {
    case PDBX_DTYPE_BF16: return smem_bytes<__nv_bfloat16>(head_dim);
    case PDBX_DTYPE_FP16: return smem_bytes<__half>(head_dim);
    default: return smem_bytes<float>(head_dim);
    }
}

extern "C" cudaError_t ck_flash_attention_bwd(const void *q, const void *k, const void *v,
                                              const void *out, const void *dout, const float *lse,
                                              float *delta, float *dq_acc, void *dq, void *dk,
                                              void *dv, int64_t mbs, int64_t seq, int64_t heads,
                                              int64_t kv_heads, int64_t head_dim, pdbx_dtype dt,
                                              cudaStream_t stream)
{
    if (!ck_flash_supported(head_dim, dt) || mbs <= 0 || seq <= 0 || heads <= 0 || kv_heads <= 0 ||
        heads % kv_heads != 0 || mbs * kv_heads > 0x7fffffff || (seq + kBT - 1) / kBT > 65535 ||
        seq * mbs * heads > 0x7fffffff || !lse || !delta || !dq_acc)
        return cudaErrorInvalidValue;
    const void *vec[] = {q, k, v, out, dout, dq, dk, dv};
    for (const void *p : vec)
        if ((uintptr_t)p % 16)
            return cudaErrorInvalidValue;   /* not the sticky device-side misaligned-address error */
    const float scale = 1.0f / sqrtf((float)head_dim);
    const flash_bwd_args a = {q, k, v, dout, lse, delta, dq_acc, dk, dv, mbs, seq, heads, kv_heads,
                              scale, scale * kLog2e};
    switch (dt) {
    case PDBX_DTYPE_BF16: return bwd_launch<__nv_bfloat16>(a, out, delta, dq, head_dim, stream);
    case PDBX_DTYPE_FP16: return bwd_launch<__half>(a, out, delta, dq, head_dim, stream);
    default: return bwd_launch<float>(a, out, delta, dq, head_dim, stream);
    }
}
