/* cpu_kernels_attn_bwd.c: the cpu backend's causal attention backward, plain (cpu_kernels_bwd.h,
 * pdbx_k_attention_causal_bwd) and with a sliding window and logit soft-capping
 * (cpu_kernels_attn.h, pdbx_k_attention_causal_bwd_opts): FlashAttention-2's recomputation,
 * plain C11 loops with a contiguous innermost dimension that gcc vectorises, compiled for AVX2
 * and AVX-512 too (the clones of cpu_kernels_bwd.c). */
#include "engine/backends/cpu/cpu_kernels_attn.h"
#include "engine/backends/cpu/cpu_kernels_bwd.h"
#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_vec.h"   /* PDBX_K_HOT, pdbx_k_exp, pdbx_k_tanh */
#include "engine/backends/cpu/cpu_kernels_attn_tile.h"   /* QR, KB, TW, tile_fma */

#include <math.h>
#include <string.h>

size_t pdbx_k_attention_bwd_scratch_floats(int64_t seq_len, int64_t d, int threads)
{
    /* per thread: P and dP/dS of one query block against the sequence, one of them transposed,
     * one transposed key or value block */
    size_t per = 3 * (size_t)PDBX_K_ATTN_BLOCK * (size_t)seq_len + (size_t)d * PDBX_K_ATTN_KBLOCK;
    return per * (size_t)(threads > 0 ? threads : 1);
}

typedef struct {
    const float *q, *k, *v, *dout;
    float *dq, *dk, *dv;
    int64_t seq_len, heads, kv_heads, d;
    int64_t dvd;               /* v's, dout's and dv's head dim (d unless MLA) */
    int64_t window;            /* >= 1, or 0: full causal */
    float softcap;             /* > 0, or 0: none */
    float *scratch;            /* every thread's, `per` floats each */
    size_t per;
} attn_bwd_job;

/* The first key query i attends: i - window + 1, or 0 (window 0: the whole causal prefix). */
static inline int64_t first_key(int64_t i, int64_t window)
{
    return window > 0 && i - window + 1 > 0 ? i - window + 1 : 0;
}

/* out[r*S + j] = scale * a_(i0+r) . b_j for r < nr, jlo <= j < i1 (a: query-like rows of
 * stride astride; b: key-like rows of stride bstride): the forward's score tiles, key blocks of
 * KB from jlo transposed into kt. */
PDBX_K_HOT static void block_dots(const float *a, int64_t astride, const float *b,
                                  int64_t bstride, int64_t d, int64_t S, int64_t i0, int64_t nr,
                                  int64_t jlo, int64_t i1, float scale, float *kt, float *out)
{
    for (int64_t j0 = jlo; j0 < i1; j0 += KB) {
        const int64_t nj = j0 + KB < i1 ? KB : i1 - j0;
        transpose_keys(b + j0 * bstride, bstride, nj, d, kt);
        for (int64_t r = 0; r < nr; r += QR) {
            const int rows = nr - r < QR ? (int)(nr - r) : QR;
            const float *ar = a + (i0 + r) * astride;
            const float *A[QR] = { ar, ar + (rows > 1) * astride, ar + (rows > 2) * 2 * astride,
                                   ar + (rows > 3) * 3 * astride };
            for (int64_t jt = 0; jt < nj; jt += TW) {
                float t[QR][TW];
                tile_fma(kt + jt, KB, A, d, t);
                const int64_t nw = nj - jt < TW ? nj - jt : TW;
                for (int rr = 0; rr < rows; rr++)
                    for (int64_t jj = 0; jj < nw; jj++)
                        out[(r + rr) * S + j0 + jt + jj] = t[rr][jj] * scale;
            }
        }
    }
}

/* The soft-capping of n scores: s <- c = cap tanh(s / cap), and g <- dc/ds = 1 - tanh^2 =
 * (cap - c)(cap + c) / cap^2 (the factor dS takes). The forward's expression for c. */
PDBX_K_HOT static void softcap_grad_row(float *s, float *g, int64_t n, float cap)
{
    const float inv = 1.0f / cap, inv2 = 1.0f / (cap * cap);
    for (int64_t j = 0; j < n; j++) {
        const float c = cap * pdbx_k_tanh(s[j] * inv);
        s[j] = c;
        g[j] = (cap - c) * (cap + c) * inv2;
    }
}

/* The row reductions in LANES partial results, combined at the end: a float max or sum over
 * one accumulator is a serial chain the compiler may not reorder (no -ffast-math), 4 cycles
 * an element; in lanes it vectorises (the forward's softmax_row does the same). */
#define LANES 16

/* max of a[0..n), n >= 1 */
PDBX_K_INLINE float row_max(const float *a, int64_t n)
{
    float mx[LANES];
    for (int l = 0; l < LANES; l++)
        mx[l] = a[0];
    int64_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++)
            mx[l] = a[j + l] > mx[l] ? a[j + l] : mx[l];
    float m = a[0];
    for (; j < n; j++)
        m = a[j] > m ? a[j] : m;
    for (int l = 0; l < LANES; l++)
        m = mx[l] > m ? mx[l] : m;
    return m;
}

/* sum of a[j] * b[j] over j < n, or of a[j] when b is NULL */
PDBX_K_INLINE float row_dot(const float *a, const float *b, int64_t n)
{
    float part[LANES] = { 0 };
    int64_t j = 0;
    if (b)
        for (; j + LANES <= n; j += LANES)
            for (int l = 0; l < LANES; l++)
                part[l] += a[j + l] * b[j + l];
    else
        for (; j + LANES <= n; j += LANES)
            for (int l = 0; l < LANES; l++)
                part[l] += a[j + l];
    float sum = 0.0f;
    for (; j < n; j++)
        sum += b ? a[j] * b[j] : a[j];
    for (int l = 0; l < LANES; l++)
        sum += part[l];
    return sum;
}

/* Row of P recomputed from its scores pr: the forward's exact softmax over the keys [lo, hi)
 * the row attends (capped first when gr, which takes the cap's derivative); zero on [jlo, lo)
 * and [hi, i1), the rest of the block's keys: no gradient flows outside the band. */
PDBX_K_HOT static void probs_row(float *pr, float *gr, int64_t jlo, int64_t lo, int64_t hi,
                                  int64_t i1, float cap)
{
    if (gr) {
        softcap_grad_row(pr + lo, gr + lo, hi - lo, cap);
        for (int64_t j = jlo; j < lo; j++)
            gr[j] = 0.0f;
        for (int64_t j = hi; j < i1; j++)
            gr[j] = 0.0f;
    }
    const float m = row_max(pr + lo, hi - lo);
    for (int64_t j = lo; j < hi; j++)
        pr[j] = pdbx_k_exp(pr[j] - m);
    const float inv = 1.0f / row_dot(pr + lo, NULL, hi - lo);
    for (int64_t j = lo; j < hi; j++)
        pr[j] *= inv;
    for (int64_t j = jlo; j < lo; j++)
        pr[j] = 0.0f;
    for (int64_t j = hi; j < i1; j++)
        pr[j] = 0.0f;
}

/* dS = P (dP - rowsum(P dP)) [x the cap's derivative gr] x scale, in place on the row of dP
 * (keys [jlo, i1); P is zero outside the row's band, so is dS). */
PDBX_K_HOT static void dscores_row(const float *pr, const float *gr, float *sr, int64_t jlo,
                                    int64_t i1, float scale)
{
    const float D = row_dot(pr + jlo, sr + jlo, i1 - jlo);
    if (gr)
        for (int64_t j = jlo; j < i1; j++)
            sr[j] = pr[j] * (sr[j] - D) * gr[j] * scale;
    else
        for (int64_t j = jlo; j < i1; j++)
            sr[j] = pr[j] * (sr[j] - D) * scale;   /* the score scale folded in once */
}

/* The (sequence, head) a block belongs to: inputs at their head's column, strides, window. */
typedef struct {
    const float *q, *dO, *k;
    float *dq, *dk, *dv;
    int64_t qstride, kvstride, d, S, W;
    int64_t ostride, vstride, dvd;   /* dO's and dv's row strides, their head dim */
} bwd_head;

/* y_(r0+r) (+)= sum_{i < n} A_r[i] x_i over the d columns of x (rows of xstride) for the rows
 * A_r of the tile (r < rows; A repeats a valid row past them), stored at y + r * ystride
 * (added when acc): one tile of QR rows at a time, the columns past the last TW scalar. */
PDBX_K_INLINE void tile_rows_times(const float *const A[QR], int rows, const float *x,
                                   int64_t xstride, int64_t n, int64_t d, float *y,
                                   int64_t ystride, int acc)
{
    int64_t c0 = 0;
    for (; c0 + TW <= d; c0 += TW) {
        float t[QR][TW];
        tile_fma(x + c0, xstride, A, n, t);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < TW; c++)
                y[r * ystride + c0 + c] = (acc ? y[r * ystride + c0 + c] : 0.0f) + t[r][c];
    }
    for (int r = 0; r < rows; r++)
        for (int64_t c = c0; c < d; c++) {
            float sum = 0.0f;
            for (int64_t i = 0; i < n; i++)
                sum += A[r][i] * x[i * xstride + c];
            y[r * ystride + c] = (acc ? y[r * ystride + c] : 0.0f) + sum;
        }
}

/* mt[j][r] = m[r][jlo + j] for r < nr, j < nk (m rows of S floats; mt rows of BR) */
PDBX_K_HOT static void transpose_block(const float *m, int64_t S, int64_t nr, int64_t jlo,
                                       int64_t nk, int64_t BR, float *mt)
{
    for (int64_t r = 0; r < nr; r++)
        for (int64_t j = 0; j < nk; j++)
            mt[j * BR + r] = m[r * S + jlo + j];
}

/* dY_j += sum_r M_rj X_r for the block's keys j in [jlo, i1) (dV: M = P, X = dO; dK: M = dS,
 * X = Q): M transposed into mt ([keys][BR]), the block's rows of X packed into xp ([nr][xd]),
 * then register tiles of QR keys; a key's rows start at the diagonal (M is zero above it).
 * Packed, because X's rows are a whole token apart (8 KiB for 32 heads of 64): the tile's
 * loads from 32 of them fall into one L1 set and evict each other. */
PDBX_K_HOT static void dkv_product(const float *M, const float *X, int64_t xstride, int64_t xd,
                                   float *dY, int64_t ystride, int64_t S, int64_t BR, int64_t i0,
                                   int64_t nr, int64_t jlo, int64_t i1, float *mt, float *xp)
{
    const int64_t nk = i1 - jlo;
    transpose_block(M, S, nr, jlo, nk, BR, mt);
    for (int64_t r = 0; r < nr; r++)
        memcpy(xp + r * xd, X + (i0 + r) * xstride, (size_t)xd * sizeof(float));
    for (int64_t j = 0; j < nk; j += QR) {
        const int rows = nk - j < QR ? (int)(nk - j) : QR;
        const int64_t r0 = jlo + j > i0 ? jlo + j - i0 : 0;   /* the tile's first key's diagonal */
        const float *mj = mt + j * BR + r0;
        const float *A[QR] = { mj, mj + (rows > 1) * BR, mj + (rows > 2) * 2 * BR,
                               mj + (rows > 3) * 3 * BR };
        tile_rows_times(A, rows, xp + r0 * xd, xd, nr - r0, xd,
                        dY + (jlo + j) * ystride, ystride, 1);
    }
}

/* dQ_r = sum_j dS_rj K_j over the keys row r attends (dS zero elsewhere on [jlo, i1)), in tiles
 * of QR rows from the tile's first row's first key, as the forward's P V. */
PDBX_K_HOT static void dq_block(const bwd_head *H, const float *dS, int64_t i0, int64_t nr)
{
    for (int64_t r = 0; r < nr; r += QR) {
        const int rows = nr - r < QR ? (int)(nr - r) : QR;
        const int64_t lo = first_key(i0 + r, H->W);
        const float *sr = dS + r * H->S + lo;
        const float *A[QR] = { sr, sr + (rows > 1) * H->S, sr + (rows > 2) * 2 * H->S,
                               sr + (rows > 3) * 3 * H->S };
        tile_rows_times(A, rows, H->k + lo * H->kvstride, H->kvstride, i0 + r + rows - lo, H->d,
                        H->dq + (i0 + r) * H->qstride, H->qstride, 0);
    }
}

/* The backward of q head h (kv head kvh) of sequence s; dk, dv of kvh accumulate. Query blocks
 * of PDBX_K_ATTN_BLOCK rows, or half of it with softcap: P, dS and the cap's derivative G then
 * take 3 x 16 rows of the scratch's 2 x 32 (the transposed block stays where it was). */
static void attn_bwd_head(const attn_bwd_job *J, float *scratch, int64_t s, int64_t h,
                          int64_t kvh)
{
    const int64_t S = J->seq_len, d = J->d, W = J->window, dvd = J->dvd;
    const int64_t qstride = J->heads * d, kvstride = J->kv_heads * d, base = s * S;
    const int64_t ostride = J->heads * dvd, vstride = J->kv_heads * dvd;
    const int64_t BR = J->softcap > 0.0f ? PDBX_K_ATTN_BLOCK / 2 : PDBX_K_ATTN_BLOCK;
    const float scale = 1.0f / sqrtf((float)d);
    float *P = scratch;                                               /* [BR][S] */
    float *dS = P + (size_t)BR * (size_t)S;                           /* [BR][S] */
    float *G = J->softcap > 0.0f ? dS + (size_t)BR * (size_t)S : NULL;   /* [BR][S] */
    float *Pt = scratch + 2 * (size_t)PDBX_K_ATTN_BLOCK * (size_t)S;  /* [S][BR] */
    /* [max(d,dv)][KB]: the transposed key block, then the packed rows of dkv_product (BR <= KB) */
    float *kt = Pt + (size_t)PDBX_K_ATTN_BLOCK * (size_t)S;
    const int64_t qo = base * qstride + h * d, ko = base * kvstride + kvh * d;   /* offsets */
    const int64_t oo = base * ostride + h * dvd, vo = base * vstride + kvh * dvd;
    const bwd_head H = { .q = J->q + qo, .dO = J->dout + oo, .k = J->k + ko, .dq = J->dq + qo,
                         .dk = J->dk + ko, .dv = J->dv + vo, .qstride = qstride,
                         .kvstride = kvstride, .d = d, .S = S, .W = W, .ostride = ostride,
                         .vstride = vstride, .dvd = dvd };
    const float *v = J->v + vo;
    for (int64_t i0 = 0; i0 < S; i0 += BR) {
        const int64_t i1 = i0 + BR < S ? i0 + BR : S;
        const int64_t nr = i1 - i0, jlo = first_key(i0, W);   /* the block's first key */
        /* P recomputed: the forward's scores, capped, and exact softmax over each row's keys */
        block_dots(H.q, qstride, H.k, kvstride, d, S, i0, nr, jlo, i1, scale, kt, P);
        for (int64_t r = 0; r < nr; r++)
            probs_row(P + r * S, G ? G + r * S : NULL, jlo, first_key(i0 + r, W), i0 + r + 1, i1,
                      J->softcap);
        /* dP = dO V^T, then dS in place */
        block_dots(H.dO, ostride, v, vstride, dvd, S, i0, nr, jlo, i1, 1.0f, kt, dS);
        for (int64_t r = 0; r < nr; r++)
            dscores_row(P + r * S, G ? G + r * S : NULL, dS + r * S, jlo, i1, scale);
        dkv_product(P, H.dO, ostride, dvd, H.dv, vstride, S, BR, i0, nr, jlo, i1, Pt, kt);
        dkv_product(dS, H.q, qstride, d, H.dk, kvstride, S, BR, i0, nr, jlo, i1, Pt, kt);
        dq_block(&H, dS, i0, nr);
    }
}

/* One chunk: one (sequence, kv head) pair, every query head of its group, on the scratch of
 * the thread that took it; dk and dv of the pair start from zero. */
static void attn_bwd_chunk(void *arg, long long pair, int part)
{
    const attn_bwd_job *J = arg;
    const int64_t group = J->heads / J->kv_heads, S = J->seq_len, d = J->d, dvd = J->dvd;
    const int64_t kvstride = J->kv_heads * d, vstride = J->kv_heads * dvd;
    const int64_t s = pair / J->kv_heads, kvh = pair % J->kv_heads;
    float *scratch = J->scratch + J->per * (size_t)part;
    for (int64_t t = 0; t < S; t++) {
        memset(J->dk + (s * S + t) * kvstride + kvh * d, 0, (size_t)d * sizeof(float));
        memset(J->dv + (s * S + t) * vstride + kvh * dvd, 0, (size_t)dvd * sizeof(float));
    }
    for (int64_t jj = 0; jj < group; jj++)
        attn_bwd_head(J, scratch, s, kvh * group + jj, kvh);
}

void pdbx_k_attention_causal_bwd_opts(pdbx_cpu_pool *pool, const float *q, const float *k,
                                      const float *v, const float *dout, int64_t seqs,
                                      int64_t seq_len, int64_t heads, int64_t kv_heads, int64_t d,
                                      float *scratch, float *dq, float *dk, float *dv,
                                      const pdbx_attn_opts *opts)
{
    const int64_t w = opts ? opts->window : 0;
    const float cap = opts ? opts->softcap : 0.0f;
    const int64_t dvd = pdbx_attn_dv(opts, d);
    /* the transposed block holds keys (d) or values (dv): the caller's scratch is sized by the
     * larger, and so is each thread's share */
    const attn_bwd_job J = { .q = q, .k = k, .v = v, .dout = dout, .dq = dq, .dk = dk, .dv = dv,
                             .seq_len = seq_len, .heads = heads, .kv_heads = kv_heads, .d = d,
                             .dvd = dvd, .window = w > 0 && w < seq_len ? w : 0,
                             .softcap = cap > 0.0f && cap < INFINITY ? cap : 0.0f,
                             .scratch = scratch,
                             .per = pdbx_k_attention_bwd_scratch_floats(seq_len, d > dvd ? d : dvd, 1) };
    pdbx_cpu_pool_for(pool, seqs * kv_heads, attn_bwd_chunk, (void *)&J);
}

void pdbx_k_attention_causal_bwd(pdbx_cpu_pool *pool, const float *q, const float *k,
                                 const float *v, const float *dout, int64_t seqs, int64_t seq_len,
                                 int64_t heads, int64_t kv_heads, int64_t d, float *scratch,
                                 float *dq, float *dk, float *dv)
{
    pdbx_k_attention_causal_bwd_opts(pool, q, k, v, dout, seqs, seq_len, heads, kv_heads, d,
                                     scratch, dq, dk, dv, NULL);
}
