/* cuda_flash.cu: the fused (flash-style) causal attention forward of the cuda backend
 * (contract in cuda_kernels.h, ck_flash_attention; docs/cuda-kernels.md, "Kernels and attention").
 *
 * One block per (sequence b and q head h: grid x; query tile of CK_FLASH_TILE rows: grid y). It walks the key/value
 * tiles 0..qtile of kv head h / group (GQA: the group's q heads read the same K/V rows, no
 * repeat_kv copy), keeps the running row max m and row sum l (online softmax) and the output
 * accumulator O in fp32, and never writes an s x s score matrix:
 *     S = scale * Q K_t^T (masked j > i and j >= s)    m' = max(m, rowmax S)
 *     P = exp(S - m')    l = l exp(m - m') + rowsum P    O = O exp(m - m') + P V_t
 *     out = O / l,   and, when asked (the backward will run), lse = m + log2(l) per row
 * Tiles above the diagonal are skipped; the diagonal tile is masked element-wise. The
 * executed work is therefore whole tiles: 4 * d * TILE^2 FLOPs per tile for QK^T and PV,
 * nq (nq + 1) / 2 tiles per (b, h), nq = ceil(s / TILE) (plan.h, pdbx_attn_core_executed_flops).
 *
 *  - bf16/fp16: tensor cores through nvcuda::wmma (16x16x16, fp32 accumulate), 4 warps, each
 *    16 query rows; S and O live in shared memory in fp32, P is rounded to the storage type for
 *    the PV product (as FlashAttention-2 does).
 *  - fp32: plain fp32 FMA (no TF32), 256 threads, 4 per query row; O in registers.
 * Q/K/V/out rows are read and written as 16-byte vectors (head_dim a multiple of 8, base
 * pointers 16-byte aligned: checked at launch). The host test tests/unit/test_flash_reference.c
 * mirrors this tiling and online softmax in C; tests/cuda/test_cuda_kernels.c checks this
 * kernel against the unfused path on a GPU. The log-sum-exp (base 2, of the log2e-scaled
 * scores, fp32 [mbs, heads, seq]) is what cuda_flash_bwd.cu recomputes P from.
 */
#include "engine/backends/cuda/cuda_kernels.h"
#include "engine/backends/cuda/cuda_flash_common.cuh"

#include <mma.h>

namespace {

using ck::from_f32;
using ck_flash::kLog2e;
using ck_flash::lse_index;
using ck_flash::row_off;

constexpr int kTile = CK_FLASH_TILE;
static_assert(CK_FLASH_TILE == PDBX_FLASH_TILE, "plan.h's executed-FLOPs tile is this kernel's");

struct flash_args {
    const void *q, *k, *v;
    void *out;
    float *lse;         /* NULL, or the rows' log-sum-exp for the backward */
    int64_t mbs, seq, heads, kv_heads;
    float scale_log2;   /* 1/sqrt(d) * log2(e): exp2 of scaled scores */
};

template <typename T, int D>
__device__ __forceinline__ void load_tile(T *dst, int ld, const T *src, int64_t pos0, int64_t seq,
                                          int64_t b, int64_t head, int64_t mbs, int64_t nheads)
{
    ck_flash::load_tile<T, D, kTile>(dst, ld, src, pos0, seq, b, head, mbs, nheads);
}

/* ---- bf16 / fp16: wmma ---- */

template <typename T, int D>
struct wmma_layout {
    static constexpr int ldt = D + 8;          /* Q, K, V rows (T): 16 bytes of padding */
    static constexpr int lds = kTile + 4;      /* S rows (fp32) */
    static constexpr int ldp = kTile + 8;      /* P rows (T) */
    static constexpr int ldo = D + 4;          /* O rows (fp32) */
    static constexpr size_t q_off = 0;
    static constexpr size_t k_off = q_off + sizeof(T) * kTile * ldt;
    static constexpr size_t v_off = k_off + sizeof(T) * kTile * ldt;
    static constexpr size_t s_off = v_off + sizeof(T) * kTile * ldt;
    static constexpr size_t p_off = s_off + sizeof(float) * kTile * lds;
    static constexpr size_t o_off = p_off + sizeof(T) * kTile * ldp;
    static constexpr size_t bytes = o_off + sizeof(float) * kTile * ldo;
    /* wmma wants 256-bit aligned fragment pointers: every section and every 16-row band */
    static_assert(k_off % 32 == 0 && v_off % 32 == 0 && s_off % 32 == 0 && p_off % 32 == 0 &&
                  o_off % 32 == 0, "shared sections 32-byte aligned");
    static_assert((16 * ldt * sizeof(T)) % 32 == 0 && (16 * lds * 4) % 32 == 0 &&
                  (16 * ldp * sizeof(T)) % 32 == 0 && (16 * ldo * 4) % 32 == 0,
                  "16-row bands 32-byte aligned");
};

/* S (16 x TILE, this warp's rows from r0) = Q K^T; K row-major [n][d] is B = K^T column-major */
template <typename T, int D>
__device__ __forceinline__ void wmma_scores(float *Ss, const T *Qs, const T *Ks, int r0)
{
    using namespace nvcuda;
    using L = wmma_layout<T, D>;
    for (int nt = 0; nt < kTile / 16; nt++) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.0f);
        for (int kk = 0; kk < D / 16; kk++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;
            wmma::load_matrix_sync(fa, Qs + r0 * L::ldt + kk * 16, L::ldt);
            wmma::load_matrix_sync(fb, Ks + nt * 16 * L::ldt + kk * 16, L::ldt);
            wmma::mma_sync(acc, fa, fb, acc);
        }
        wmma::store_matrix_sync(Ss + r0 * L::lds + nt * 16, acc, L::lds, wmma::mem_row_major);
    }
}

/* O (16 x D, this warp's rows from r0) += P V; V row-major [k][d] is B row-major */
template <typename T, int D>
__device__ __forceinline__ void wmma_pv(float *Os, const T *Ps, const T *Vs, int r0)
{
    using namespace nvcuda;
    using L = wmma_layout<T, D>;
    for (int dt = 0; dt < D / 16; dt++) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::load_matrix_sync(acc, Os + r0 * L::ldo + dt * 16, L::ldo, wmma::mem_row_major);
        for (int kk = 0; kk < kTile / 16; kk++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
            wmma::load_matrix_sync(fa, Ps + r0 * L::ldp + kk * 16, L::ldp);
            wmma::load_matrix_sync(fb, Vs + kk * 16 * L::ldt + dt * 16, L::ldt);
            wmma::mma_sync(acc, fa, fb, acc);
        }
        wmma::store_matrix_sync(Os + r0 * L::ldo + dt * 16, acc, L::ldo, wmma::mem_row_major);
    }
}

/* Row qi's half `half` of out = O / l (orow: that half of its O row), 8 elements (16 bytes) at
 * a time, and its log-sum-exp (lane half 0); rows past seq are not written. */
template <typename T, int D>
__device__ __forceinline__ void wmma_store_rows(const flash_args &a, const float *orow, float m, float l,
                                                int64_t qi, int64_t b, int64_t h, int half)
{
    if (a.lse && half == 0 && qi < a.seq)
        a.lse[lse_index(qi, b, h, a.heads, a.seq)] = m + log2f(l);
    if (qi >= a.seq)
        return;
    const float inv = 1.0f / l;   /* l >= 1: the diagonal column is always present */
    T *dst = static_cast<T *>(a.out) + row_off<D>(qi, b, h, a.mbs, a.heads) + half * (D / 2);
    for (int c = 0; c < D / 2; c += 8) {
        uint4 pack;
        T *pv = reinterpret_cast<T *>(&pack);
#pragma unroll
        for (int e = 0; e < 8; e++)
            pv[e] = from_f32<T>(orow[c + e] * inv);
        *reinterpret_cast<uint4 *>(dst + c) = pack;
    }
}

template <typename T, int D>
__global__ void __launch_bounds__(128) flash_fwd_wmma_kernel(flash_args a)
{
    using namespace nvcuda;
    using L = wmma_layout<T, D>;
    extern __shared__ __align__(128) unsigned char smem[];
    T *Qs = reinterpret_cast<T *>(smem + L::q_off);
    T *Ks = reinterpret_cast<T *>(smem + L::k_off);
    T *Vs = reinterpret_cast<T *>(smem + L::v_off);
    float *Ss = reinterpret_cast<float *>(smem + L::s_off);
    T *Ps = reinterpret_cast<T *>(smem + L::p_off);
    float *Os = reinterpret_cast<float *>(smem + L::o_off);

    const int64_t nq = (a.seq + kTile - 1) / kTile;
    const int64_t qt = nq - 1 - blockIdx.y;      /* the longest rows first */
    const int64_t bh = blockIdx.x, b = bh / a.heads, h = bh % a.heads;
    const int64_t g = h / (a.heads / a.kv_heads);
    const int64_t q0 = qt * kTile;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r0 = warp * 16;                    /* this warp's 16 query rows */
    const int rloc = r0 + lane / 2, half = lane % 2;   /* softmax: 2 lanes per row */
    const int64_t qi = q0 + rloc;

    load_tile<T, D>(Qs, L::ldt, static_cast<const T *>(a.q), q0, a.seq, b, h, a.mbs, a.heads);
    for (int i = threadIdx.x; i < kTile * L::ldo; i += blockDim.x)
        Os[i] = 0.0f;
    float m = -INFINITY, l = 0.0f;

    for (int64_t kt = 0; kt <= qt; kt++) {
        const int64_t k0 = kt * kTile;
        __syncthreads();   /* the previous tile's K/V are no longer read; Q/O are set */
        load_tile<T, D>(Ks, L::ldt, static_cast<const T *>(a.k), k0, a.seq, b, g, a.mbs, a.kv_heads);
        load_tile<T, D>(Vs, L::ldt, static_cast<const T *>(a.v), k0, a.seq, b, g, a.mbs, a.kv_heads);
        __syncthreads();

        wmma_scores<T, D>(Ss, Qs, Ks, r0);
        __syncwarp();

        /* online softmax over this row's TILE/2 columns, the pair of lanes merged by shuffle */
        constexpr int kHalfCols = kTile / 2;
        const float *srow = Ss + rloc * L::lds + half * kHalfCols;
        float tmax = -INFINITY;
        for (int c = 0; c < kHalfCols; c++) {
            int64_t j = k0 + half * kHalfCols + c;
            float x = (j <= qi && j < a.seq) ? srow[c] * a.scale_log2 : -INFINITY;
            tmax = fmaxf(tmax, x);
        }
        tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
        const float mnew = fmaxf(m, tmax);
        const float base = mnew == -INFINITY ? 0.0f : mnew;   /* a row with nothing yet */
        float rsum = 0.0f;
        T *prow = Ps + rloc * L::ldp + half * kHalfCols;
        for (int c = 0; c < kHalfCols; c++) {
            int64_t j = k0 + half * kHalfCols + c;
            float p = (j <= qi && j < a.seq) ? exp2f(srow[c] * a.scale_log2 - base) : 0.0f;
            rsum += p;
            prow[c] = from_f32<T>(p);
        }
        rsum += __shfl_xor_sync(0xffffffffu, rsum, 1);
        const float alpha = m == -INFINITY ? 0.0f : exp2f(m - base);
        l = l * alpha + rsum;
        m = mnew;
        float *orow = Os + rloc * L::ldo + half * (D / 2);
        for (int c = 0; c < D / 2; c++)
            orow[c] *= alpha;
        __syncwarp();

        wmma_pv<T, D>(Os, Ps, Vs, r0);
        __syncwarp();
    }
    wmma_store_rows<T, D>(a, Os + rloc * L::ldo + half * (D / 2), m, l, qi, b, h, half);
}

/* ---- fp32: FMA, 4 threads per query row ---- */

template <int D>
struct f32_layout {
    static constexpr int ldq = D + 1;   /* Q, K rows: the quad reads different rows of K */
    static constexpr int ldv = D;
    static constexpr int ldp = kTile + 1;
    static constexpr size_t q_off = 0;
    static constexpr size_t k_off = q_off + 4 * kTile * ldq;
    static constexpr size_t v_off = k_off + 4 * kTile * ldq;
    static constexpr size_t p_off = v_off + 4 * kTile * ldv;
    static constexpr size_t bytes = p_off + 4 * kTile * ldp;
};

/* Scalar tile copy (the padded rows of Q and K break 16-byte alignment in shared memory). */
template <int D>
__device__ __forceinline__ void load_tile_f32(float *dst, int ld, const float *src, int64_t pos0,
                                              int64_t seq, int64_t b, int64_t head, int64_t mbs,
                                              int64_t nheads)
{
    constexpr int kRowVecs = D / 4;
    for (int idx = threadIdx.x; idx < kTile * kRowVecs; idx += blockDim.x) {
        int r = idx / kRowVecs, c = (idx % kRowVecs) * 4;
        int64_t pos = pos0 + r;
        float4 val = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (pos < seq)
            val = *reinterpret_cast<const float4 *>(src + row_off<D>(pos, b, head, mbs, nheads) + c);
        float *d = dst + r * ld + c;
        d[0] = val.x;
        d[1] = val.y;
        d[2] = val.z;
        d[3] = val.w;
    }
}

/* Row qi's columns sub, sub + 4, ... of out = o / l (this lane's share of the quad), and its
 * log-sum-exp (lane sub 0); rows past seq are not written. */
template <int D>
__device__ __forceinline__ void f32_store_row(const flash_args &a, const float *o, float m, float l,
                                              int64_t qi, int64_t b, int64_t h, int sub)
{
    if (a.lse && sub == 0 && qi < a.seq)
        a.lse[lse_index(qi, b, h, a.heads, a.seq)] = m + log2f(l);
    if (qi >= a.seq)
        return;
    const float inv = 1.0f / l;
    float *dst = static_cast<float *>(a.out) + row_off<D>(qi, b, h, a.mbs, a.heads);
#pragma unroll
    for (int i = 0; i < D / 4; i++)
        dst[sub + 4 * i] = o[i] * inv;
}

template <int D>
__global__ void __launch_bounds__(256) flash_fwd_f32_kernel(flash_args a)
{
    using L = f32_layout<D>;
    extern __shared__ __align__(128) unsigned char smem[];
    float *Qs = reinterpret_cast<float *>(smem + L::q_off);
    float *Ks = reinterpret_cast<float *>(smem + L::k_off);
    float *Vs = reinterpret_cast<float *>(smem + L::v_off);
    float *Ps = reinterpret_cast<float *>(smem + L::p_off);
    constexpr int kCols = kTile / 4, kDims = D / 4;

    const int64_t nq = (a.seq + kTile - 1) / kTile;
    const int64_t qt = nq - 1 - blockIdx.y;
    const int64_t bh = blockIdx.x, b = bh / a.heads, h = bh % a.heads;
    const int64_t g = h / (a.heads / a.kv_heads);
    const int64_t q0 = qt * kTile;
    const int r = threadIdx.x / 4, sub = threadIdx.x % 4;   /* a quad of lanes per row */
    const int64_t qi = q0 + r;

    load_tile_f32<D>(Qs, L::ldq, static_cast<const float *>(a.q), q0, a.seq, b, h, a.mbs, a.heads);
    float o[kDims];
#pragma unroll
    for (int i = 0; i < kDims; i++)
        o[i] = 0.0f;
    float m = -INFINITY, l = 0.0f;

    for (int64_t kt = 0; kt <= qt; kt++) {
        const int64_t k0 = kt * kTile;
        __syncthreads();
        load_tile_f32<D>(Ks, L::ldq, static_cast<const float *>(a.k), k0, a.seq, b, g, a.mbs,
                         a.kv_heads);
        load_tile_f32<D>(Vs, L::ldv, static_cast<const float *>(a.v), k0, a.seq, b, g, a.mbs,
                         a.kv_heads);
        __syncthreads();
        float sc[kCols];
        float tmax = -INFINITY;
#pragma unroll
        for (int t = 0; t < kCols; t++) {
            int c = sub + 4 * t;
            int64_t j = k0 + c;
            float dot = 0.0f;
            for (int d = 0; d < D; d++)
                dot = fmaf(Qs[r * L::ldq + d], Ks[c * L::ldq + d], dot);
            sc[t] = (j <= qi && j < a.seq) ? dot * a.scale_log2 : -INFINITY;
            tmax = fmaxf(tmax, sc[t]);
        }
        tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
        tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 2));
        const float mnew = fmaxf(m, tmax);
        const float base = mnew == -INFINITY ? 0.0f : mnew;
        float rsum = 0.0f;
#pragma unroll
        for (int t = 0; t < kCols; t++) {
            float p = sc[t] == -INFINITY ? 0.0f : exp2f(sc[t] - base);
            rsum += p;
            Ps[r * L::ldp + sub + 4 * t] = p;
        }
        rsum += __shfl_xor_sync(0xffffffffu, rsum, 1);
        rsum += __shfl_xor_sync(0xffffffffu, rsum, 2);
        const float alpha = m == -INFINITY ? 0.0f : exp2f(m - base);
        l = l * alpha + rsum;
        m = mnew;
        __syncwarp();   /* the quad's P row is complete */
#pragma unroll
        for (int i = 0; i < kDims; i++)
            o[i] *= alpha;
        for (int c = 0; c < kTile; c++) {
            float p = Ps[r * L::ldp + c];
#pragma unroll
            for (int i = 0; i < kDims; i++)
                o[i] = fmaf(p, Vs[c * L::ldv + sub + 4 * i], o[i]);
        }
    }
    f32_store_row<D>(a, o, m, l, qi, b, h, sub);
}

using ck_flash::launch;

} /* namespace */

extern "C" int ck_flash_supported(int64_t head_dim, pdbx_dtype dt)
{
    return (head_dim == 64 || head_dim == 128) &&
           (dt == PDBX_DTYPE_BF16 || dt == PDBX_DTYPE_FP16 || dt == PDBX_DTYPE_FP32);
}

extern "C" size_t ck_flash_smem_bytes(int64_t head_dim, pdbx_dtype dt)
{
    if (!ck_flash_supported(head_dim, dt))
        return 0;
    if (dt == PDBX_DTYPE_FP32)
        return head_dim == 64 ? f32_layout<64>::bytes : f32_layout<128>::bytes;
    if (dt == PDBX_DTYPE_BF16)
        return head_dim == 64 ? wmma_layout<__nv_bfloat16, 64>::bytes
                              : wmma_layout<__nv_bfloat16, 128>::bytes;
    return head_dim == 64 ? wmma_layout<__half, 64>::bytes : wmma_layout<__half, 128>::bytes;
}

extern "C" cudaError_t ck_flash_attention(const void *q, const void *k, const void *v, void *out,
                                          float *lse, int64_t mbs, int64_t seq, int64_t heads,
                                          int64_t kv_heads, int64_t head_dim, pdbx_dtype dt,
                                          cudaStream_t stream)
{
    if (!ck_flash_supported(head_dim, dt) || mbs <= 0 || seq <= 0 || heads <= 0 ||
        kv_heads <= 0 || heads % kv_heads != 0 || mbs * heads > 0x7fffffff ||
        (seq + kTile - 1) / kTile > 65535)
        return cudaErrorInvalidValue;
    if ((uintptr_t)q % 16 || (uintptr_t)k % 16 || (uintptr_t)v % 16 || (uintptr_t)out % 16)
        return cudaErrorInvalidValue;   /* not the sticky device-side misaligned-address error */
    flash_args a = {q, k, v, out, lse, mbs, seq, heads, kv_heads,
                    kLog2e / sqrtf((float)head_dim)};
    dim3 grid((unsigned)(mbs * heads), (unsigned)((seq + kTile - 1) / kTile));
    size_t smem = ck_flash_smem_bytes(head_dim, dt);
    switch (dt) {
    case PDBX_DTYPE_BF16:
        return head_dim == 64
                   ? launch(flash_fwd_wmma_kernel<__nv_bfloat16, 64>, grid, 128, smem, a, stream)
                   : launch(flash_fwd_wmma_kernel<__nv_bfloat16, 128>, grid, 128, smem, a, stream);
    case PDBX_DTYPE_FP16:
        return head_dim == 64 ? launch(flash_fwd_wmma_kernel<__half, 64>, grid, 128, smem, a, stream)
                              : launch(flash_fwd_wmma_kernel<__half, 128>, grid, 128, smem, a, stream);
    default:
        return head_dim == 64 ? launch(flash_fwd_f32_kernel<64>, grid, 256, smem, a, stream)
                              : launch(flash_fwd_f32_kernel<128>, grid, 256, smem, a, stream);
    }
}
