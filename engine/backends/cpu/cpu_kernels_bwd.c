/* cpu_kernels_bwd.c: the CPU backend's backward kernels (see cpu_kernels_bwd.h). Plain C11
 * loops with a contiguous innermost dimension so gcc vectorises them, compiled for AVX2 and
 * AVX-512 too as the forward kernels are (cpu_kernels_vec.h, PDBX_K_HOT). */
#include "engine/backends/cpu/cpu_kernels_bwd.h"
#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_vec.h"   /* PDBX_K_HOT, pdbx_k_exp */

#include <math.h>
#include <string.h>

#define PAR_MIN_ELEMS 32768     /* below, the caller alone: waking the pool costs more (as the
                                 * forward kernels' threshold, cpu_kernels.c) */

void pdbx_k_embed_scatter_add(const float *dy, const int32_t *ids, int64_t rows, int64_t cols,
                              int64_t table_rows, int64_t vocab_start, float *dtable)
{
    for (int64_t i = 0; i < rows; i++) {
        int64_t local = (int64_t)ids[i] - vocab_start;
        if (local < 0 || local >= table_rows)
            continue;
        float *dst = dtable + local * cols;
        const float *src = dy + i * cols;
        for (int64_t j = 0; j < cols; j++)
            dst[j] += src[j];
    }
}

/* ---- linear-layer bias gradient ---------------------------------------------------------- */
#define BIAS_GRAD_CHUNK_COLS 128

/* acc[0..nc) = column sums of rows of dy (row stride cols); the inner loop runs over columns,
 * contiguous, so it vectorises and keeps each column's row order. */
PDBX_K_HOT static void colsum_f32(const float *dy, int64_t rows, int64_t cols, int64_t nc,
                                   float *acc)
{
    for (int64_t j = 0; j < nc; j++)
        acc[j] = 0.0f;
    for (int64_t i = 0; i < rows; i++) {
        const float *r = dy + i * cols;
        for (int64_t j = 0; j < nc; j++)
            acc[j] += r[j];
    }
}

PDBX_K_HOT static void colsum_bf16(const uint16_t *dy, int64_t rows, int64_t cols, int64_t nc,
                                    float *acc)
{
    for (int64_t j = 0; j < nc; j++)
        acc[j] = 0.0f;
    for (int64_t i = 0; i < rows; i++) {
        const uint16_t *r = dy + i * cols;
        for (int64_t j = 0; j < nc; j++) {
            uint32_t bits = (uint32_t)r[j] << 16;   /* bf16 -> fp32: the high half */
            float v;
            memcpy(&v, &bits, sizeof v);
            acc[j] += v;
        }
    }
}

typedef struct {
    const void *dy;
    int bf16;
    int64_t rows, cols;
    float *db;
} bias_grad_job;

static void bias_grad_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const bias_grad_job *J = arg;
    const int64_t c0 = chunk * BIAS_GRAD_CHUNK_COLS;
    const int64_t nc = J->cols - c0 < BIAS_GRAD_CHUNK_COLS ? J->cols - c0 : BIAS_GRAD_CHUNK_COLS;
    float acc[BIAS_GRAD_CHUNK_COLS];
    if (J->bf16)
        colsum_bf16((const uint16_t *)J->dy + c0, J->rows, J->cols, nc, acc);
    else
        colsum_f32((const float *)J->dy + c0, J->rows, J->cols, nc, acc);
    for (int64_t j = 0; j < nc; j++)
        J->db[c0 + j] += acc[j];
}

void pdbx_k_bias_grad(pdbx_cpu_pool *pool, const void *dy, int dy_bf16, int64_t rows,
                      int64_t cols, float *db)
{
    if (rows < 1 || cols < 1)
        return;
    bias_grad_job J = { .dy = dy, .bf16 = dy_bf16, .rows = rows, .cols = cols, .db = db };
    if (rows * cols < PAR_MIN_ELEMS)
        pool = NULL;
    pdbx_cpu_pool_for(pool, (cols + BIAS_GRAD_CHUNK_COLS - 1) / BIAS_GRAD_CHUNK_COLS,
                      bias_grad_chunk, &J);
}

/* sum of a[j]*b[j] (and of c[j]*c[j] when sq) in 16 partial sums: a float reduction the
 * compiler vectorises without -ffast-math (cpu_kernels.c's rmsnorm does the same). */
PDBX_K_HOT void pdbx_k_rmsnorm_bwd(const float *x, const float *weight, const float *dy,
                                    int64_t rows, int64_t cols, float eps, float *dx, float *dw)
{
    for (int64_t i = 0; i < rows; i++) {
        const float *xr = x + i * cols, *gr = dy + i * cols;
        float *o = dx + i * cols;
        float pss[16] = { 0 }, pdot[16] = { 0 };
        int64_t j = 0;
        for (; j + 16 <= cols; j += 16)
            for (int l = 0; l < 16; l++) {
                pss[l] += xr[j + l] * xr[j + l];
                pdot[l] += weight[j + l] * gr[j + l] * xr[j + l];
            }
        float ss = 0.0f, dot = 0.0f;
        for (; j < cols; j++) {
            ss += xr[j] * xr[j];
            dot += weight[j] * gr[j] * xr[j];
        }
        for (int l = 0; l < 16; l++) {
            ss += pss[l];
            dot += pdot[l];
        }
        const float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        const float coef = dot * inv * inv * inv / (float)cols;
        for (int64_t c = 0; c < cols; c++) {
            o[c] = inv * weight[c] * gr[c] - coef * xr[c];
            dw[c] += gr[c] * xr[c] * inv;
        }
    }
}

/* sigmoid from the vectorised exp (cpu_kernels_vec.h): no libm call, so the loop vectorises */
PDBX_K_HOT static void silu_mul_bwd_range(const float *gate, const float *up, const float *dout,
                                          int64_t n, float *dgate, float *dup)
{
    for (int64_t i = 0; i < n; i++) {
        const float g = gate[i], s = 1.0f / (1.0f + pdbx_k_exp(-g));
        dgate[i] = dout[i] * up[i] * s * (1.0f + g * (1.0f - s));
        dup[i] = dout[i] * g * s;
    }
}

typedef struct {
    const float *gate, *up, *dout;
    int64_t n;
    float *dgate, *dup;
} silu_bwd_job;

#define SILU_BWD_CHUNK 16384    /* elements: 64 KiB of each stream, as the forward's */

static void silu_bwd_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const silu_bwd_job *J = arg;
    const int64_t i0 = chunk * SILU_BWD_CHUNK;
    const int64_t n = J->n - i0 < SILU_BWD_CHUNK ? J->n - i0 : SILU_BWD_CHUNK;
    silu_mul_bwd_range(J->gate + i0, J->up + i0, J->dout + i0, n, J->dgate + i0, J->dup + i0);
}

void pdbx_k_silu_mul_bwd(pdbx_cpu_pool *pool, const float *gate, const float *up,
                         const float *dout, int64_t n, float *dgate, float *dup)
{
    if (n < 1)
        return;
    silu_bwd_job J = { .gate = gate, .up = up, .dout = dout, .n = n, .dgate = dgate, .dup = dup };
    if (n < PAR_MIN_ELEMS)
        pool = NULL;
    pdbx_cpu_pool_for(pool, (n + SILU_BWD_CHUNK - 1) / SILU_BWD_CHUNK, silu_bwd_chunk, &J);
}
