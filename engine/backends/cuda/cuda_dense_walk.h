/* cuda_dense_walk.h: how the dense-family kernels of cuda_kernels_dense.cu (LayerNorm, GELU,
 * learned position embeddings) walk their arrays. Pure arithmetic on indices and addresses,
 * shared by the device code and the host part of tests/cuda/test_cuda_kernels_dense.c, so the
 * walk the GPU runs is the one the host checks (as cuda_rowsplit.h and cuda_rope.h).
 *
 *  - ck_split_flat: the split of an element-wise kernel's n elements over up to CK_FLAT_MAX
 *    arrays indexed alike (cuda_rowsplit.h's split of the first array: a scalar head up to its
 *    first 16-byte boundary, whole 16-byte vectors, a scalar tail), vectors only when every
 *    array is 16-byte aligned at the head; else all n elements are scalars. ck_flat_scalar
 *    numbers the scalar elements (the head's, then the tail's) for a grid-stride loop.
 *  - position embeddings: x [tokens, h] is sequence-major (cuda_attention.h: row
 *    r = pos * mbs + b, so row r is position r / mbs), table [seq, h]. A work item is w
 *    consecutive columns (1, or a 16-byte vector of the element type: ck_pos_embed_width):
 *    the forward's item i covers one row of x, the backward's item k one row of the table and
 *    reads its mbs rows of dx.
 *  - ck_welford: LayerNorm's row statistics (count, mean, sum of squared deviations) of a part
 *    of a row, merged pairwise (Chan, Golub, LeVeque 1979): one pass over the row, none of the
 *    cancellation of E[x^2] - E[x]^2 when the mean is large against the spread.
 */
#ifndef PDBX_CUDA_DENSE_WALK_H
#define PDBX_CUDA_DENSE_WALK_H

#include <stdint.h>

#include "engine/backends/cuda/cuda_rowsplit.h"   /* ck_row_split, ck_split_row, CK_HOST_DEVICE */

#define CK_FLAT_MAX 5   /* ck_gelu_mul_bwd: gate, up, dout, dgate, dup */

/* p: the np (1..CK_FLAT_MAX) arrays' base addresses, p[0] deciding the head. */
static inline CK_HOST_DEVICE ck_row_split ck_split_flat(int64_t n, const uintptr_t *p, int np,
                                                        int64_t esize)
{
    const ck_row_split none = {0, 0, 0};
    if (np < 1 || np > CK_FLAT_MAX)
        return none;
    const ck_row_split s = ck_split_row(n, p[0], 0, 0, esize);
    const uintptr_t off = (uintptr_t)(s.head * esize);
    for (int i = 1; i < np; i++)
        if ((p[i] + off) % 16 != 0)
            return none;
    return s;
}

/* Scalar elements of a split: head + (n - body_end) (all n when it has no vectors). */
static inline CK_HOST_DEVICE int64_t ck_flat_scalars(ck_row_split s, int64_t n)
{
    return s.head + (n - s.body_end);
}

/* The element of scalar number k < ck_flat_scalars: the head's first, then the tail's. */
static inline CK_HOST_DEVICE int64_t ck_flat_scalar(ck_row_split s, int64_t k)
{
    return k < s.head ? k : s.body_end + (k - s.head);
}

/* Columns per work item: the 16-byte vector of an element of esize bytes when h is a multiple
 * of it and both arrays (x and table, or dx and the fp32 dtable) are 16-byte aligned, else 1.
 * Every item then starts 16-byte aligned in both (the dtable's rows hold h * 4 bytes). */
static inline CK_HOST_DEVICE int64_t ck_pos_embed_width(int64_t h, uintptr_t a, uintptr_t b,
                                                        int64_t esize)
{
    const int64_t w = esize > 0 && 16 % esize == 0 ? 16 / esize : 1;
    return h % w == 0 && a % 16 == 0 && b % 16 == 0 ? w : 1;
}

typedef struct {
    int64_t x;       /* element offset in x (or dx) of the item's first column */
    int64_t table;   /* element offset in table (or dtable) */
} ck_pos_at;

static inline CK_HOST_DEVICE int64_t ck_pos_embed_items(int64_t rows, int64_t h, int64_t w)
{
    return rows * (h / w);
}

/* The forward's item i of ck_pos_embed_items(tokens, h, w): row r of x, row r / mbs of table. */
static inline CK_HOST_DEVICE ck_pos_at ck_pos_embed_at(int64_t i, int64_t h, int64_t mbs, int64_t w)
{
    const int64_t chunks = h / w, r = i / chunks, c = (i % chunks) * w;
    const ck_pos_at at = {r * h + c, (r / mbs) * h + c};
    return at;
}

/* The backward's item k of ck_pos_embed_items(seq, h, w), sequence b < mbs: table row
 * p = k / (h / w), and of dx the row p * mbs + b (the position's b-th sequence). */
static inline CK_HOST_DEVICE ck_pos_at ck_pos_embed_bwd_at(int64_t k, int64_t b, int64_t h,
                                                           int64_t mbs, int64_t w)
{
    const int64_t chunks = h / w, p = k / chunks, c = (k % chunks) * w;
    const ck_pos_at at = {(p * mbs + b) * h + c, p * h + c};
    return at;
}

typedef struct {
    float n, mean, m2;   /* count (exact up to 2^24), mean, sum of squared deviations */
} ck_welford;

/* The statistics of c values (a vector's or one element): mean first, then the deviations. */
static inline CK_HOST_DEVICE ck_welford ck_welford_of(const float *v, int c)
{
    float sum = 0.0f, m2 = 0.0f;
    for (int i = 0; i < c; i++)
        sum += v[i];
    const float mean = sum / (float)c;
    for (int i = 0; i < c; i++)
        m2 += (v[i] - mean) * (v[i] - mean);
    const ck_welford s = {(float)c, mean, m2};
    return s;
}

/* a and b together. Not symmetric in rounding: the kernel's lanes merge in the same order and
 * then take lane 0's result, so every lane of a row normalises with the same numbers. */
static inline CK_HOST_DEVICE ck_welford ck_welford_merge(ck_welford a, ck_welford b)
{
    if (b.n == 0.0f)
        return a;
    if (a.n == 0.0f)
        return b;
    const float n = a.n + b.n, d = b.mean - a.mean, fb = b.n / n;
    const ck_welford s = {n, a.mean + d * fb, a.m2 + b.m2 + d * d * a.n * fb};
    return s;
}

#endif
