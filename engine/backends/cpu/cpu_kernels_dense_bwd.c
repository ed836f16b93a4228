/* cpu_kernels_dense_bwd.c: the dense families' backward kernels (see cpu_kernels_dense.h):
 * LayerNorm, GELU and GELU x up, the position-embedding gradient. Vectorised and threaded as
 * the forward kernels (cpu_kernels_dense.c). */
#include "engine/backends/cpu/cpu_kernels_dense.h"
#include "engine/backends/cpu/cpu_kernels_vec.h"

#include <stddef.h>

/* Below this many elements a kernel runs on the caller alone (as the forward kernels). */
#define PAR_MIN_ELEMS 32768

/* ---- LayerNorm ---------------------------------------------------------------------------- */
/* s1 = sum(w*dy), s2 = sum(w*dy*xhat) over a row, xhat = (x - mu) * rs, in 16 partial sums
 * each (a float reduction gcc vectorises without -ffast-math; fixed order, fixed result). */
PDBX_K_INLINE void ln_bwd_sums(const float *x, const float *w, const float *dy, float mu, float rs,
                               int64_t n, float *s1, float *s2)
{
    float p1[16] = { 0 }, p2[16] = { 0 };
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int l = 0; l < 16; l++) {
            const float g = w[j + l] * dy[j + l];
            p1[l] += g;
            p2[l] += g * ((x[j + l] - mu) * rs);
        }
    float a = 0.0f, b = 0.0f;
    for (; j < n; j++) {
        const float g = w[j] * dy[j];
        a += g;
        b += g * ((x[j] - mu) * rs);
    }
    for (int l = 0; l < 16; l++) {
        a += p1[l];
        b += p2[l];
    }
    *s1 = a;
    *s2 = b;
}

/* One row's terms of the weight gradients over n columns: dw[c] += dy[c] * xhat[c],
 * db[c] += dy[c]. The one-thread pass and the column pass both call this, so each dw[c] sees
 * the same operations in the same order (the thread count does not change a bit). */
PDBX_K_INLINE void ln_wgrad_row(const float *x, const float *dy, float mu, float rs, int64_t n,
                                float *dw, float *db)
{
    for (int64_t c = 0; c < n; c++)
        dw[c] += dy[c] * ((x[c] - mu) * rs);
    if (db)
        for (int64_t c = 0; c < n; c++)
            db[c] += dy[c];
}

typedef struct {
    const float *x, *w, *mean, *rstd, *dy;
    int64_t rows, cols, chunk_rows;
    float *dx, *dw, *db;
    int wgrad_by_row;          /* 1: dw, db updated with dx, row by row (the caller alone) */
} ln_bwd_job;

/* dx for rows [r0, r0 + nr) and, when wgrad_by_row, their dw and db terms (the row is still
 * in cache: one pass over x and dy). */
PDBX_K_HOT static void ln_bwd_rows(const ln_bwd_job *J, int64_t r0, int64_t nr)
{
    const int64_t cols = J->cols;
    const float inv_cols = 1.0f / (float)cols;
    for (int64_t i = r0; i < r0 + nr; i++) {
        const float *x = J->x + i * cols, *dy = J->dy + i * cols, *w = J->w;
        float *dx = J->dx + i * cols;
        const float mu = J->mean[i], rs = J->rstd[i];
        float s1, s2;
        ln_bwd_sums(x, w, dy, mu, rs, cols, &s1, &s2);
        const float m1 = s1 * inv_cols, m2 = s2 * inv_cols;
        for (int64_t c = 0; c < cols; c++)
            dx[c] = rs * (w[c] * dy[c] - m1 - ((x[c] - mu) * rs) * m2);
        if (J->wgrad_by_row)
            ln_wgrad_row(x, dy, mu, rs, cols, J->dw, J->db);
    }
}

/* Four rows' terms at once, added in row order (each sum is evaluated left to right: the
 * additions of ln_wgrad_row four times, in the same order, so the same bits), which gives the
 * column pass eight streams to load at a time instead of two: 30% faster here. */
PDBX_K_INLINE void ln_wgrad_4rows(const float *x, const float *dy, int64_t stride,
                                  const float *mu, const float *rs, int64_t n, float *dw, float *db)
{
    const float *x1 = x + stride, *x2 = x1 + stride, *x3 = x2 + stride;
    const float *g1 = dy + stride, *g2 = g1 + stride, *g3 = g2 + stride;
    for (int64_t c = 0; c < n; c++)
        dw[c] = dw[c] + dy[c] * ((x[c] - mu[0]) * rs[0]) + g1[c] * ((x1[c] - mu[1]) * rs[1])
              + g2[c] * ((x2[c] - mu[2]) * rs[2]) + g3[c] * ((x3[c] - mu[3]) * rs[3]);
    if (db)
        for (int64_t c = 0; c < n; c++)
            db[c] = db[c] + dy[c] + g1[c] + g2[c] + g3[c];
}

/* dw, db of columns [c0, c0 + nc): every row's term in row order */
PDBX_K_HOT static void ln_wgrad_cols(const ln_bwd_job *J, int64_t c0, int64_t nc)
{
    const int64_t cols = J->cols;
    float *dw = J->dw + c0, *db = J->db ? J->db + c0 : NULL;
    int64_t i = 0;
    for (; i + 4 <= J->rows; i += 4)
        ln_wgrad_4rows(J->x + i * cols + c0, J->dy + i * cols + c0, cols, J->mean + i, J->rstd + i,
                       nc, dw, db);
    for (; i < J->rows; i++)
        ln_wgrad_row(J->x + i * cols + c0, J->dy + i * cols + c0, J->mean[i], J->rstd[i], nc, dw,
                     db);
}

static void ln_bwd_row_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const ln_bwd_job *J = arg;
    const int64_t r0 = chunk * J->chunk_rows;
    ln_bwd_rows(J, r0, J->rows - r0 < J->chunk_rows ? J->rows - r0 : J->chunk_rows);
}

/* Columns per chunk of the weight-gradient pass (pdbx_k_bias_grad's 128: each row's slice is
 * 512 bytes of x and of dy, dw's and db's slices stay in L1). */
#define LN_WGRAD_CHUNK_COLS 128

static void ln_wgrad_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const ln_bwd_job *J = arg;
    const int64_t c0 = chunk * LN_WGRAD_CHUNK_COLS;
    ln_wgrad_cols(J, c0, J->cols - c0 < LN_WGRAD_CHUNK_COLS ? J->cols - c0 : LN_WGRAD_CHUNK_COLS);
}

#define LN_CHUNK_ELEMS 32768     /* rows per chunk of the dx pass: as the forward's */

/* Over a pool, x and dy are read twice (per-chunk partial sums of dw and db, combined in a fixed
 * order, would need a scratch this contract does not have): at 2048 x 2048 on this 2-core VM,
 * 2.7 ms on 2 threads against 2.7-3.0 ms for the one pass on one thread; with more threads
 * both passes split further. Both schedules give the same bits, so either may be chosen. */

void pdbx_k_layernorm_bwd(pdbx_cpu_pool *pool, const float *x, const float *w, const float *mean,
                          const float *rstd, const float *dy, int64_t rows, int64_t cols,
                          float *dx, float *dw, float *db)
{
    if (rows < 1 || cols < 1)
        return;
    if (rows * cols < PAR_MIN_ELEMS)
        pool = NULL;
    const int64_t cr = LN_CHUNK_ELEMS / cols;
    ln_bwd_job J = { .x = x, .w = w, .mean = mean, .rstd = rstd, .dy = dy, .rows = rows,
                     .cols = cols, .chunk_rows = cr < 1 ? 1 : cr, .dx = dx, .dw = dw, .db = db,
                     .wgrad_by_row = pdbx_cpu_pool_threads(pool) == 1 };
    pdbx_cpu_pool_for(pool, (rows + J.chunk_rows - 1) / J.chunk_rows, ln_bwd_row_chunk, &J);
    if (!J.wgrad_by_row)
        pdbx_cpu_pool_for(pool, (cols + LN_WGRAD_CHUNK_COLS - 1) / LN_WGRAD_CHUNK_COLS,
                          ln_wgrad_chunk, &J);
}

/* ---- GELU, GELU x up ---------------------------------------------------------------------- */
/* One loop per kind and per form, the kind tested outside (branch-free bodies that vectorise).
 * up == NULL: dx = dout * gelu'(x) into dg; otherwise dg = dout * up * gelu'(g) and
 * du = dout * gelu(g). */
PDBX_K_HOT static void gelu_bwd_range(const float *g, const float *up, const float *dout, int64_t n,
                                      pdbx_gelu_kind kind, float *dg, float *du)
{
    float d;
    if (kind == PDBX_GELU_TANH) {
        if (up)
            for (int64_t i = 0; i < n; i++) {
                const float f = pdbx_k_gelu_tanh(g[i], &d);
                dg[i] = dout[i] * up[i] * d;
                du[i] = dout[i] * f;
            }
        else
            for (int64_t i = 0; i < n; i++) {
                pdbx_k_gelu_tanh(g[i], &d);
                dg[i] = dout[i] * d;
            }
    } else {
        if (up)
            for (int64_t i = 0; i < n; i++) {
                const float f = pdbx_k_gelu_erf(g[i], &d);
                dg[i] = dout[i] * up[i] * d;
                du[i] = dout[i] * f;
            }
        else
            for (int64_t i = 0; i < n; i++) {
                pdbx_k_gelu_erf(g[i], &d);
                dg[i] = dout[i] * d;
            }
    }
}

typedef struct {
    const float *g, *up, *dout;
    int64_t n;
    pdbx_gelu_kind kind;
    float *dg, *du;
} gelu_bwd_job;

#define GELU_CHUNK 16384        /* elements: 64 KiB of each stream, as the forward's */

static void gelu_bwd_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const gelu_bwd_job *J = arg;
    const int64_t i0 = chunk * GELU_CHUNK;
    const int64_t n = J->n - i0 < GELU_CHUNK ? J->n - i0 : GELU_CHUNK;
    gelu_bwd_range(J->g + i0, J->up ? J->up + i0 : NULL, J->dout + i0, n, J->kind, J->dg + i0,
                   J->du ? J->du + i0 : NULL);
}

static void gelu_bwd_run(pdbx_cpu_pool *pool, const float *g, const float *up, const float *dout,
                         int64_t n, pdbx_gelu_kind kind, float *dg, float *du)
{
    if (n < 1)
        return;
    gelu_bwd_job J = { .g = g, .up = up, .dout = dout, .n = n, .kind = kind, .dg = dg, .du = du };
    if (n < PAR_MIN_ELEMS)
        pool = NULL;
    pdbx_cpu_pool_for(pool, (n + GELU_CHUNK - 1) / GELU_CHUNK, gelu_bwd_chunk, &J);
}

void pdbx_k_gelu_bwd(pdbx_cpu_pool *pool, const float *x, const float *dout, int64_t n,
                     pdbx_gelu_kind kind, float *dx)
{
    gelu_bwd_run(pool, x, NULL, dout, n, kind, dx, NULL);
}

void pdbx_k_gelu_mul_bwd(pdbx_cpu_pool *pool, const float *gate, const float *up, const float *dout,
                         int64_t n, pdbx_gelu_kind kind, float *dgate, float *dup)
{
    gelu_bwd_run(pool, gate, up, dout, n, kind, dgate, dup);
}

/* ---- position embeddings ------------------------------------------------------------------ */
/* A tile of dpos: POS_TILE_POS positions x POS_TILE_COLS columns (1 KiB of each row: the
 * tile's 16 KiB stay in L1 while the sequences' rows stream past). */
#define POS_TILE_POS 16
#define POS_TILE_COLS 256

typedef struct {
    const float *dx;
    int64_t rows, cols, seq_len, col_tiles;
    float *dpos;
} pos_bwd_job;

/* dpos[p, c0..c0+nc) += dx[r, c0..c0+nc) for r = p, p + seq_len, ... (row order) */
PDBX_K_HOT static void pos_bwd_tile(const pos_bwd_job *J, int64_t p0, int64_t np, int64_t c0,
                                    int64_t nc)
{
    for (int64_t p = p0; p < p0 + np; p++) {
        float *dp = J->dpos + p * J->cols + c0;
        for (int64_t r = p; r < J->rows; r += J->seq_len) {
            const float *g = J->dx + r * J->cols + c0;
            for (int64_t c = 0; c < nc; c++)
                dp[c] += g[c];
        }
    }
}

static void pos_bwd_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const pos_bwd_job *J = arg;
    const int64_t p0 = chunk / J->col_tiles * POS_TILE_POS;
    const int64_t c0 = chunk % J->col_tiles * POS_TILE_COLS;
    pos_bwd_tile(J, p0, J->seq_len - p0 < POS_TILE_POS ? J->seq_len - p0 : POS_TILE_POS, c0,
                 J->cols - c0 < POS_TILE_COLS ? J->cols - c0 : POS_TILE_COLS);
}

void pdbx_k_pos_embed_bwd(pdbx_cpu_pool *pool, const float *dx, int64_t rows, int64_t cols,
                          int64_t seq_len, float *dpos)
{
    if (rows < 1 || cols < 1 || seq_len < 1)
        return;
    pos_bwd_job J = { .dx = dx, .rows = rows, .cols = cols, .seq_len = seq_len,
                      .col_tiles = (cols + POS_TILE_COLS - 1) / POS_TILE_COLS, .dpos = dpos };
    if (rows * cols < PAR_MIN_ELEMS)
        pool = NULL;
    const int64_t pos_tiles = (seq_len + POS_TILE_POS - 1) / POS_TILE_POS;
    pdbx_cpu_pool_for(pool, pos_tiles * J.col_tiles, pos_bwd_chunk, &J);
}
