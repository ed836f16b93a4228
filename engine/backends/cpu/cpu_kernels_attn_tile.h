/* cpu_kernels_attn_tile.h: the register tile the cpu backend's attention kernels share
 * (cpu_kernels_attn.c's forward, cpu_kernels_attn_bwd.c's backward): a QR x TW block of a
 * product a . x kept in GNU C vector registers, and the key-block transpose that feeds it.
 *
 * Contract (internal to engine/backends/cpu; everything here is static inline, always inlined
 * into the calling kernel, so each of its clones (cpu_kernels_vec.h, PDBX_K_HOT) gets its own
 * vector code): no allocation, no state.
 *  - tile_fma(x, xstride, a, n, t): t[r][0..TW) = sum_{i < n} a[r][i] * x[i*xstride + 0..TW)
 *    for r < QR; x must have TW readable floats in each of its n rows.
 *  - transpose_keys(k, kstride, nj, d, kt): kt[c*KB + jj] = k[jj*kstride + c] for jj < nj,
 *    zero for nj <= jj < KB (nj <= KB).
 */
#ifndef PDBX_CPU_KERNELS_ATTN_TILE_H
#define PDBX_CPU_KERNELS_ATTN_TILE_H

#include <stdint.h>
#include <string.h>

#include "engine/backends/cpu/cpu_kernels.h"       /* PDBX_K_ATTN_KBLOCK */
#include "engine/backends/cpu/cpu_kernels_vec.h"   /* PDBX_K_INLINE */

#define QR 4                       /* query rows per register tile */
#define KB PDBX_K_ATTN_KBLOCK      /* keys per transposed key block */
#define VW 8                       /* floats per vector register of the tiles (AVX2 ymm) */
#define TW (2 * VW)                /* keys (scores) or columns (output) per register tile */

/* Eight floats in a vector register: GNU C vectors, so the 4 x 16 tiles below stay in registers
 * (8 accumulators; plain arrays were kept in memory and each multiply-add waited on a store).
 * Lowered to two SSE registers in the baseline clone. Loads and stores go through memcpy
 * (unaligned); no function takes or returns one (the vector ABI differs between clones). */
typedef float v8f __attribute__((vector_size(VW * sizeof(float))));

/* kt[c][jj] = k_(j0 + jj)[c] for jj < nj, 0 for nj <= jj < KB (rows of kstride floats). Key
 * row by key row: the loads are contiguous and the stores stay inside kt (16 KiB at d = 64);
 * column by column the loads stride by a whole token (2 KiB for 8 kv heads of 64), which maps
 * them to two L1 sets and misses on nearly every one. */
PDBX_K_INLINE void transpose_keys(const float *k, int64_t kstride, int64_t nj, int64_t d,
                                float *kt)
{
    for (int64_t jj = 0; jj < nj; jj++) {
        const float *kj = k + jj * kstride;
        for (int64_t c = 0; c < d; c++)
            kt[c * KB + jj] = kj[c];
    }
    if (nj < KB)
        for (int64_t c = 0; c < d; c++)
            for (int64_t jj = nj; jj < KB; jj++)
                kt[c * KB + jj] = 0.0f;
}

/* The register tile both attention products share: t[r][0..TW) = sum_{i < n} a[r][i] *
 * x[i * xstride + 0..TW) for the QR rows a[r] (QK^T: x the block's transposed keys, a the
 * queries; PV: x the values, a the probabilities): 2 x QR vector accumulators over n steps. */
PDBX_K_INLINE void tile_fma(const float *x, int64_t xstride, const float *const a[QR],
                          int64_t n, float t[QR][TW])
{
    v8f a00 = { 0 }, a01 = { 0 }, a10 = { 0 }, a11 = { 0 }, a20 = { 0 }, a21 = { 0 },
        a30 = { 0 }, a31 = { 0 };
    for (int64_t i = 0; i < n; i++) {
        v8f x0, x1;
        memcpy(&x0, x + i * xstride, sizeof x0);
        memcpy(&x1, x + i * xstride + VW, sizeof x1);
        const float b0 = a[0][i], b1 = a[1][i], b2 = a[2][i], b3 = a[3][i];
        a00 += x0 * b0;
        a01 += x1 * b0;
        a10 += x0 * b1;
        a11 += x1 * b1;
        a20 += x0 * b2;
        a21 += x1 * b2;
        a30 += x0 * b3;
        a31 += x1 * b3;
    }
    memcpy(t[0], &a00, sizeof a00);
    memcpy(t[0] + VW, &a01, sizeof a01);
    memcpy(t[1], &a10, sizeof a10);
    memcpy(t[1] + VW, &a11, sizeof a11);
    memcpy(t[2], &a20, sizeof a20);
    memcpy(t[2] + VW, &a21, sizeof a21);
    memcpy(t[3], &a30, sizeof a30);
    memcpy(t[3] + VW, &a31, sizeof a31);
}

#endif
