/* cpu_kernels_dense.c: the dense families' forward kernels (see cpu_kernels_dense.h): LayerNorm,
 * GELU and GELU x up, the position-embedding add, and the HF activation names. Plain C11 loops
 * over a contiguous inner dimension that gcc vectorises (cpu_kernels_vec.h), split over the
 * backend's thread pool (cpu_threads.h) in chunks of whole rows or elements. */
#include "engine/backends/cpu/cpu_kernels_dense.h"
#include "engine/plan/plan.h"
#include "engine/backends/cpu/cpu_kernels_vec.h"

#include <math.h>
#include <string.h>

/* Below this many elements a kernel runs on the caller alone: waking the pool costs more (the
 * threshold of cpu_kernels.c's kernels). */
#define PAR_MIN_ELEMS 32768

/* ---- LayerNorm ---------------------------------------------------------------------------- */
/* sum of x[0..n) in 16 partial sums: a float reduction gcc vectorises without -ffast-math
 * (reassociating it is not allowed otherwise); the order is fixed, so is the result. */
PDBX_K_INLINE float row_sum(const float *x, int64_t n)
{
    float part[16] = { 0 };
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int l = 0; l < 16; l++)
            part[l] += x[j + l];
    float s = 0.0f;
    for (; j < n; j++)
        s += x[j];
    for (int l = 0; l < 16; l++)
        s += part[l];
    return s;
}

/* sd = sum of d = x[j] - mu and sq = sum of d^2, the same way */
PDBX_K_INLINE void row_dev(const float *x, float mu, int64_t n, float *sd, float *sq)
{
    float p1[16] = { 0 }, p2[16] = { 0 };
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int l = 0; l < 16; l++) {
            const float d = x[j + l] - mu;
            p1[l] += d;
            p2[l] += d * d;
        }
    float a = 0.0f, b = 0.0f;
    for (; j < n; j++) {
        const float d = x[j] - mu;
        a += d;
        b += d * d;
    }
    for (int l = 0; l < 16; l++) {
        a += p1[l];
        b += p2[l];
    }
    *sd = a;
    *sq = b;
}

/* Two passes over a row in cache. The first mean mu0 carries the rounding of a sum of `cols`
 * values (at mean 1000 and spread 1 over 2048 columns, about 1e-4: 3e-4 of y); the second pass
 * sums the deviations d = x - mu0 (exact: x and mu0 are close) and their squares, and
 * c = mean(d) corrects the mean (the corrected two-pass algorithm: var = mean(d^2) - c^2).
 * y = ((x - mu0) - c) * rstd: the deviation is taken from the two parts, so mean's own fp32
 * rounding (ulp(1000) = 6e-5) does not enter y either. */
PDBX_K_HOT static void layernorm_rows(const float *x, const float *w, const float *b, int64_t rows,
                                      int64_t cols, float eps, float *out, float *mean, float *rstd)
{
    const float inv_cols = 1.0f / (float)cols;
    for (int64_t i = 0; i < rows; i++) {
        const float *xr = x + i * cols;
        float *o = out + i * cols;
        const float mu0 = row_sum(xr, cols) * inv_cols;
        float sd, sq;
        row_dev(xr, mu0, cols, &sd, &sq);
        const float c = sd * inv_cols, v = sq * inv_cols - c * c;
        const float rs = 1.0f / sqrtf((v > 0.0f ? v : 0.0f) + eps);
        if (b)
            for (int64_t j = 0; j < cols; j++)
                o[j] = ((xr[j] - mu0) - c) * rs * w[j] + b[j];
        else
            for (int64_t j = 0; j < cols; j++)
                o[j] = ((xr[j] - mu0) - c) * rs * w[j];
        if (mean)
            mean[i] = mu0 + c;
        if (rstd)
            rstd[i] = rs;
    }
}

typedef struct {
    const float *x, *w, *b;
    int64_t rows, cols, chunk_rows;
    float eps;
    float *out, *mean, *rstd;
} layernorm_job;

/* Rows per chunk: about 32768 elements (128 KiB of x in, 128 KiB out: 16 rows of 2048, as
 * cpu_kernels.c's RMSNorm), at least one row. */
#define LN_CHUNK_ELEMS 32768

static void layernorm_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const layernorm_job *J = arg;
    const int64_t r0 = chunk * J->chunk_rows;
    const int64_t nr = J->rows - r0 < J->chunk_rows ? J->rows - r0 : J->chunk_rows;
    layernorm_rows(J->x + r0 * J->cols, J->w, J->b, nr, J->cols, J->eps, J->out + r0 * J->cols,
                   J->mean ? J->mean + r0 : NULL, J->rstd ? J->rstd + r0 : NULL);
}

void pdbx_k_layernorm(pdbx_cpu_pool *pool, const float *x, const float *w, const float *b,
                      int64_t rows, int64_t cols, float eps, float *out, float *mean, float *rstd)
{
    if (rows < 1 || cols < 1)
        return;
    const int64_t cr = LN_CHUNK_ELEMS / cols;
    layernorm_job J = { .x = x, .w = w, .b = b, .rows = rows, .cols = cols,
                        .chunk_rows = cr < 1 ? 1 : cr, .eps = eps, .out = out, .mean = mean,
                        .rstd = rstd };
    if (rows * cols < PAR_MIN_ELEMS)
        pool = NULL;
    pdbx_cpu_pool_for(pool, (rows + J.chunk_rows - 1) / J.chunk_rows, layernorm_chunk, &J);
}

/* ---- GELU, GELU x up ---------------------------------------------------------------------- */
/* One loop per kind and per form (with or without up): the kind is tested once, outside, so
 * each loop body is branch-free and vectorises (gcc -O2 does not unswitch loops). */
PDBX_K_HOT static void gelu_range(const float *x, const float *up, int64_t n, pdbx_gelu_kind kind,
                                  float *out)
{
    if (kind == PDBX_GELU_TANH) {
        if (up)
            for (int64_t i = 0; i < n; i++)
                out[i] = pdbx_k_gelu_tanh(x[i], NULL) * up[i];
        else
            for (int64_t i = 0; i < n; i++)
                out[i] = pdbx_k_gelu_tanh(x[i], NULL);
    } else {
        if (up)
            for (int64_t i = 0; i < n; i++)
                out[i] = pdbx_k_gelu_erf(x[i], NULL) * up[i];
        else
            for (int64_t i = 0; i < n; i++)
                out[i] = pdbx_k_gelu_erf(x[i], NULL);
    }
}

typedef struct {
    const float *x, *up;
    int64_t n;
    pdbx_gelu_kind kind;
    float *out;
} gelu_job;

#define GELU_CHUNK 16384        /* elements: 64 KiB of each stream, as SiLU x up's */

static void gelu_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const gelu_job *J = arg;
    const int64_t i0 = chunk * GELU_CHUNK;
    const int64_t n = J->n - i0 < GELU_CHUNK ? J->n - i0 : GELU_CHUNK;
    gelu_range(J->x + i0, J->up ? J->up + i0 : NULL, n, J->kind, J->out + i0);
}

static void gelu_run(pdbx_cpu_pool *pool, const float *x, const float *up, int64_t n,
                     pdbx_gelu_kind kind, float *out)
{
    if (n < 1)
        return;
    gelu_job J = { .x = x, .up = up, .n = n, .kind = kind, .out = out };
    if (n < PAR_MIN_ELEMS)
        pool = NULL;
    pdbx_cpu_pool_for(pool, (n + GELU_CHUNK - 1) / GELU_CHUNK, gelu_chunk, &J);
}

void pdbx_k_gelu(pdbx_cpu_pool *pool, const float *x, int64_t n, pdbx_gelu_kind kind, float *out)
{
    gelu_run(pool, x, NULL, n, kind, out);
}

void pdbx_k_gelu_mul(pdbx_cpu_pool *pool, const float *gate, const float *up, int64_t n,
                     pdbx_gelu_kind kind, float *out)
{
    gelu_run(pool, gate, up, n, kind, out);
}

int pdbx_gelu_kind_of(const char *hf_name, pdbx_gelu_kind *kind)
{
    /* the planner's classification of transformers' names (plan.h, pdbx_activation_of), so
     * the kernel the backend runs is the one the planner counted */
    switch (pdbx_activation_of(hf_name)) {
    case PDBX_ACT_GELU_ERF: *kind = PDBX_GELU_ERF; return 0;
    case PDBX_ACT_GELU_TANH: *kind = PDBX_GELU_TANH; return 0;
    default: return -1;
    }
}

/* ---- learned absolute position embeddings ---------------------------------------------- */
PDBX_K_HOT static void pos_add_rows(float *x, const float *pos_table, int64_t row0, int64_t rows,
                                    int64_t cols, int64_t seq_len)
{
    for (int64_t r = row0; r < row0 + rows; r++) {
        float *xr = x + r * cols;
        const float *pr = pos_table + (r % seq_len) * cols;
        for (int64_t c = 0; c < cols; c++)
            xr[c] += pr[c];
    }
}

typedef struct {
    float *x;
    const float *pos_table;
    int64_t rows, cols, seq_len, chunk_rows;
} pos_add_job;

#define POS_CHUNK_ELEMS 16384   /* about 64 KiB of x per chunk, as pdbx_k_bias_add's */

static void pos_add_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const pos_add_job *J = arg;
    const int64_t r0 = chunk * J->chunk_rows;
    const int64_t nr = J->rows - r0 < J->chunk_rows ? J->rows - r0 : J->chunk_rows;
    pos_add_rows(J->x, J->pos_table, r0, nr, J->cols, J->seq_len);
}

void pdbx_k_pos_embed_add(pdbx_cpu_pool *pool, float *x, const float *pos_table, int64_t rows,
                          int64_t cols, int64_t seq_len)
{
    if (rows < 1 || cols < 1 || seq_len < 1)
        return;
    const int64_t cr = POS_CHUNK_ELEMS / cols;
    pos_add_job J = { .x = x, .pos_table = pos_table, .rows = rows, .cols = cols,
                      .seq_len = seq_len, .chunk_rows = cr < 1 ? 1 : cr };
    if (rows * cols < PAR_MIN_ELEMS)
        pool = NULL;
    pdbx_cpu_pool_for(pool, (rows + J.chunk_rows - 1) / J.chunk_rows, pos_add_chunk, &J);
}
