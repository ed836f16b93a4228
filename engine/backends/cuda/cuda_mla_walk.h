/* cuda_mla_walk.h: how the kernels of cuda_kernels_mla.cu walk their arrays. Pure index
 * arithmetic shared by the device code and the host part of tests/cuda/test_cuda_kernels_mla.c,
 * so the mapping the GPU runs is the one the host checks (as cuda_rope.h, cuda_dense_walk.h).
 *
 * Layouts (cpu_kernels_mla.h's, one row per token; the rows' order does not matter here), H
 * heads, kd = nope + rope:
 *   kva [rows, rkv + rope]   kv_a's output: the latent, then k_pe (one rope head for all)
 *   kvb [rows, H, nope + dv] kv_b's output: each head's k_nope, then its v
 *   k   [rows, H, kd]        each head's k_nope, then the shared k_pe
 *   v   [rows, H, dv]
 *
 *  - the gather (attn_rope's forward after the rotation): one item per element of k, then
 *    one per element of v; item i copies src[src_off] to dst[dst_off] (count 1).
 *  - the scatter (attn_rope's backward before the inverse rotation): one item per element of
 *    dkvb (from dk's nope part or dv), then one per k_pe column of dkva per row, which is the
 *    sum over the H heads of dk's rope parts: `count` sources src_off + n * src_stride summed in
 *    head order (the cpu's order, pdbx_k_mla_rope_kv_bwd).
 *  - the strided RMSNorm backward: blocks of CK_MLA_NORM_WARPS warps, warp w of block b takes
 *    rows b * CK_MLA_NORM_WARPS + w + k * blocks * CK_MLA_NORM_WARPS; about 64 rows per block
 *    (as ck_rmsnorm_bwd), at most 1024 blocks, so each block's dweight partial (shared memory,
 *    cols floats) meets the others in one atomicAdd per column and block.
 */
#ifndef PDBX_CUDA_MLA_WALK_H
#define PDBX_CUDA_MLA_WALK_H

#include <stdint.h>

#ifdef __CUDACC__
#define CK_MLA_HD __host__ __device__
#else
#define CK_MLA_HD
#endif

#define CK_MLA_NORM_WARPS 8
#define CK_MLA_NORM_MAX_COLS 12288   /* the dweight partial: 48 KiB of shared memory */

typedef struct {
    int64_t heads, nope, rope, dv, rkv;
} ck_mla_shape;

enum { CK_MLA_K, CK_MLA_V, CK_MLA_KVA, CK_MLA_KVB };   /* the arrays an item names */

typedef struct {
    int dst, src;              /* CK_MLA_* */
    int64_t dst_off, src_off;  /* element offsets */
    int64_t src_stride, count; /* count sources summed, src_stride apart */
} ck_mla_item;

static inline CK_MLA_HD int64_t ck_mla_gather_items(int64_t rows, const ck_mla_shape *s)
{
    return rows * s->heads * (s->nope + s->rope + s->dv);
}

static inline CK_MLA_HD ck_mla_item ck_mla_gather_item(int64_t i, int64_t rows, const ck_mla_shape *s)
{
    const int64_t kd = s->nope + s->rope, nk = rows * s->heads * kd;
    ck_mla_item it = {CK_MLA_K, CK_MLA_KVB, i, 0, 0, 1};
    if (i < nk) {
        const int64_t rh = i / kd, j = i % kd, r = rh / s->heads;
        if (j < s->nope) {
            it.src_off = rh * (s->nope + s->dv) + j;
        } else {   /* the shared k_pe of the row */
            it.src = CK_MLA_KVA;
            it.src_off = r * (s->rkv + s->rope) + s->rkv + (j - s->nope);
        }
        return it;
    }
    const int64_t iv = i - nk, rh = iv / s->dv, j = iv % s->dv;
    it.dst = CK_MLA_V;
    it.dst_off = iv;
    it.src_off = rh * (s->nope + s->dv) + s->nope + j;
    return it;
}

static inline CK_MLA_HD int64_t ck_mla_scatter_items(int64_t rows, const ck_mla_shape *s)
{
    return rows * (s->heads * (s->nope + s->dv) + s->rope);
}

static inline CK_MLA_HD ck_mla_item ck_mla_scatter_item(int64_t i, int64_t rows, const ck_mla_shape *s)
{
    const int64_t kd = s->nope + s->rope, bd = s->nope + s->dv, nb = rows * s->heads * bd;
    ck_mla_item it = {CK_MLA_KVB, CK_MLA_K, i, 0, 0, 1};
    if (i < nb) {
        const int64_t rh = i / bd, j = i % bd;
        if (j < s->nope) {
            it.src_off = rh * kd + j;
        } else {
            it.src = CK_MLA_V;
            it.src_off = rh * s->dv + (j - s->nope);
        }
        return it;
    }
    const int64_t ip = i - nb, r = ip / s->rope, j = ip % s->rope;
    it.dst = CK_MLA_KVA;
    it.dst_off = r * (s->rkv + s->rope) + s->rkv + j;
    it.src_off = r * s->heads * kd + s->nope + j;   /* head 0's rope part, then every head's */
    it.src_stride = kd;
    it.count = s->heads;
    return it;
}

/* The strided RMSNorm backward's blocks for `rows` rows. */
static inline CK_MLA_HD int64_t ck_mla_norm_blocks(int64_t rows)
{
    int64_t b = (rows + 63) / 64;
    return b < 1 ? 1 : b > 1024 ? 1024 : b;
}

/* The k-th row (k = 0, 1, ...) warp w of block b takes, or -1 past the last. */
static inline CK_MLA_HD int64_t ck_mla_norm_row(int64_t rows, int64_t blocks, int64_t b, int64_t w, int64_t k)
{
    const int64_t r = (k * blocks + b) * CK_MLA_NORM_WARPS + w;
    return r < rows ? r : -1;
}

#endif
