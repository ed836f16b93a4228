/* cpu_kernels_attn.c: the cpu backend's causal attention core, forward: plain causal
 * (cpu_kernels.h, pdbx_k_attention_causal) and with a sliding window and logit soft-capping
 * (cpu_kernels_attn.h, pdbx_k_attention_causal_opts), and the final-logit soft-capping.
 * Register tiles of GNU C vectors that gcc keeps in registers, compiled for three x86-64 levels
 * (cpu_kernels_vec.h), (sequence, head) pairs split over the backend's pool (cpu_threads.h). */
#include "engine/backends/cpu/cpu_kernels_attn.h"
#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_vec.h"   /* PDBX_K_HOT, pdbx_k_exp, pdbx_k_tanh, bf16 */
#include "engine/backends/cpu/cpu_kernels_attn_tile.h"   /* QR, KB, TW, tile_fma, transpose_keys */

#include <math.h>
#include <string.h>

/* ---- causal attention --------------------------------------------------------------------- */
size_t pdbx_k_attention_scratch_floats(int64_t seq_len, int64_t d, int threads)
{
    size_t per = (size_t)PDBX_K_ATTN_BLOCK * (size_t)seq_len + (size_t)d * PDBX_K_ATTN_KBLOCK;
    return per * (size_t)(threads > 0 ? threads : 1);
}

typedef struct {
    const float *q, *k, *v;
    int64_t seqs, seq_len, heads, kv_heads, d;
    int64_t dv;         /* v's and out's head dim (d unless MLA) */
    int64_t window;     /* >= 1, or 0: full causal */
    float softcap;      /* > 0, or 0: none */
    float *scratch, *out;
} attn_job;

/* The first key query i attends: i - window + 1, or 0 (window 0: the whole causal prefix). */
static inline int64_t first_key(int64_t i, int64_t window)
{
    return window > 0 && i - window + 1 > 0 ? i - window + 1 : 0;
}

/* s[j] <- cap * tanh(s[j] / cap) for j < n (the scores' soft-capping; also the final logits') */
PDBX_K_HOT static void softcap_range(float *s, int64_t n, float cap)
{
    const float inv = 1.0f / cap;
    for (int64_t j = 0; j < n; j++)
        s[j] = cap * pdbx_k_tanh(s[j] * inv);
}

/* scores s[r][j0 + jj] = scale * (q_r . k_(j0+jj)) for the QR rows q[r] (row r at q + r * qstride)
 * against the block's keys transposed in kt ([d][KB], zero past the block's nj keys); rows
 * r < nrows and keys jj < nj are stored (the rows past nrows repeat valid rows, unstored). */
PDBX_K_HOT static void qk_block(const float *q, int64_t qstride, int nrows, const float *kt,
                                int64_t d, int64_t nj, float scale, float *s, int64_t sstride)
{
    const float *a[QR] = { q, q + (nrows > 1) * qstride, q + (nrows > 2) * 2 * qstride,
                           q + (nrows > 3) * 3 * qstride };
    for (int64_t jt = 0; jt < nj; jt += TW) {
        float t[QR][TW];
        tile_fma(kt + jt, KB, a, d, t);
        const int64_t nw = nj - jt < TW ? nj - jt : TW;
        for (int r = 0; r < nrows; r++)
            for (int64_t jj = 0; jj < nw; jj++)
                s[r * sstride + jt + jj] = t[r][jj] * scale;
    }
}

/* o_r[c] = inv_r * sum_{j < jend} p_r[j] v_j[c] for the QR rows p_r (row r at p + r * pstride,
 * zero past its causal end) and the d columns of v (row j at v + j * vstride); rows r < nrows
 * stored at o + r * ostride. */
PDBX_K_HOT static void pv_block(const float *p, int64_t pstride, int nrows, const float *v,
                                int64_t vstride, int64_t jend, int64_t d, const float *inv,
                                float *o, int64_t ostride)
{
    const float *a[QR] = { p, p + (nrows > 1) * pstride, p + (nrows > 2) * 2 * pstride,
                           p + (nrows > 3) * 3 * pstride };
    int64_t c0 = 0;
    for (; c0 + TW <= d; c0 += TW) {
        float t[QR][TW];
        tile_fma(v + c0, vstride, a, jend, t);
        for (int r = 0; r < nrows; r++)
            for (int c = 0; c < TW; c++)
                o[r * ostride + c0 + c] = t[r][c] * inv[r];
    }
    /* head_dim not a multiple of TW: the last columns one row at a time */
    for (int r = 0; r < nrows; r++)
        for (int64_t c = c0; c < d; c++) {
            float acc = 0.0f;
            for (int64_t j = 0; j < jend; j++)
                acc += p[r * pstride + j] * v[j * vstride + c];
            o[r * ostride + c] = acc * inv[r];
        }
}

/* A row of scores (length len: the keys the row attends, the causal prefix or its window)
 * becomes exp(s - max), zero from len to zero_to; returns 1 / the sum of the exponentials. */
PDBX_K_HOT static float softmax_row(float *s, int64_t len, int64_t zero_to)
{
    float mx[16];
    for (int l = 0; l < 16; l++)
        mx[l] = s[0];
    int64_t j = 0;
    for (; j + 16 <= len; j += 16)
        for (int l = 0; l < 16; l++)
            mx[l] = s[j + l] > mx[l] ? s[j + l] : mx[l];
    float m = s[0];
    for (; j < len; j++)
        m = s[j] > m ? s[j] : m;
    for (int l = 0; l < 16; l++)
        m = mx[l] > m ? mx[l] : m;
    for (j = 0; j < len; j++)
        s[j] = pdbx_k_exp(s[j] - m);
    float part[16] = { 0 };
    for (j = 0; j + 16 <= len; j += 16)
        for (int l = 0; l < 16; l++)
            part[l] += s[j + l];
    float sum = 0.0f;
    for (; j < len; j++)
        sum += s[j];
    for (int l = 0; l < 16; l++)
        sum += part[l];
    for (j = len; j < zero_to; j++)
        s[j] = 0.0f;
    return 1.0f / sum;
}

/* Scores of query rows [i0, i0 + nr) against keys [jlo, i1), in key blocks of KB from jlo
 * (window 0: jlo = 0, the blocks of the plain causal kernel; the entries above the diagonal
 * and left of a row's window are computed with their tile and zeroed by the softmax). */
static void block_scores(const float *qh, int64_t qstride, const float *kh, int64_t kvstride,
                         int64_t d, int64_t S, int64_t i0, int64_t nr, int64_t jlo, int64_t i1,
                         float scale, float *kt, float *scores)
{
    for (int64_t j0 = jlo; j0 < i1; j0 += KB) {
        const int64_t nj = j0 + KB < i1 ? KB : i1 - j0;
        transpose_keys(kh + j0 * kvstride, kvstride, nj, d, kt);
        for (int64_t r = 0; r < nr; r += QR) {
            const int rows = nr - r < QR ? (int)(nr - r) : QR;
            qk_block(qh + (i0 + r) * qstride, qstride, rows, kt, d, nj, scale,
                     scores + r * S + j0, S);
        }
    }
}

static void attn_pair(const attn_job *J, float *scratch, int64_t s, int64_t h)
{
    const int64_t S = J->seq_len, d = J->d, dv = J->dv, W = J->window;
    const int64_t qstride = J->heads * d, kvstride = J->kv_heads * d;
    const int64_t vstride = J->kv_heads * dv, ostride = J->heads * dv;
    const int64_t kvh = h / (J->heads / J->kv_heads);
    const int64_t base = s * S;
    const float scale = 1.0f / sqrtf((float)d);
    float *scores = scratch;                                           /* [BLOCK][S] */
    float *kt = scratch + (size_t)PDBX_K_ATTN_BLOCK * (size_t)S;       /* [d][KB] */
    const float *qh = J->q + base * qstride + h * d;
    const float *kh = J->k + base * kvstride + kvh * d;
    const float *vh = J->v + base * vstride + kvh * dv;
    float *oh = J->out + base * ostride + h * dv;
    float inv[PDBX_K_ATTN_BLOCK];       /* 1 / each row's softmax sum */
    for (int64_t i0 = 0; i0 < S; i0 += PDBX_K_ATTN_BLOCK) {
        const int64_t i1 = i0 + PDBX_K_ATTN_BLOCK < S ? i0 + PDBX_K_ATTN_BLOCK : S;
        const int64_t nr = i1 - i0, jlo = first_key(i0, W);   /* the block's first key */
        block_scores(qh, qstride, kh, kvstride, d, S, i0, nr, jlo, i1, scale, kt, scores);
        for (int64_t r = 0; r < nr; r++) {
            /* row r's keys [lo, i0 + r], capped, softmax; zero left of lo and right of them */
            float *row = scores + r * S;
            const int64_t lo = first_key(i0 + r, W), len = i0 + r + 1 - lo;
            if (J->softcap > 0.0f)
                softcap_range(row + lo, len, J->softcap);
            for (int64_t j = jlo; j < lo; j++)
                row[j] = 0.0f;
            inv[r] = softmax_row(row + lo, len, i1 - lo);
        }
        for (int64_t r = 0; r < nr; r += QR) {
            /* from the tile's first row's first key: the rows below start later (zeros) */
            const int rows = nr - r < QR ? (int)(nr - r) : QR;
            const int64_t lo = first_key(i0 + r, W);
            pv_block(scores + r * S + lo, S, rows, vh + lo * vstride, vstride,
                     i0 + r + rows - lo, dv, inv + r, oh + (i0 + r) * ostride, ostride);
        }
    }
}

/* One chunk: one (sequence, head) pair, on the scratch of the thread that took it. */
static void attn_chunk(void *arg, long long pair, int part)
{
    const attn_job *J = arg;
    float *scratch = J->scratch + pdbx_k_attention_scratch_floats(J->seq_len, J->d, 1) * (size_t)part;
    attn_pair(J, scratch, pair / J->heads, pair % J->heads);
}

void pdbx_k_attention_causal_opts(pdbx_cpu_pool *pool, const float *q, const float *k,
                                  const float *v, int64_t seqs, int64_t seq_len, int64_t heads,
                                  int64_t kv_heads, int64_t d, float *scratch, float *out,
                                  const pdbx_attn_opts *opts)
{
    const int64_t w = opts ? opts->window : 0;
    const float cap = opts ? opts->softcap : 0.0f;
    attn_job J = { .q = q, .k = k, .v = v, .seqs = seqs, .seq_len = seq_len, .heads = heads,
                   .kv_heads = kv_heads, .d = d, .dv = pdbx_attn_dv(opts, d),
                   .window = w > 0 && w < seq_len ? w : 0,
                   .softcap = cap > 0.0f && cap < INFINITY ? cap : 0.0f, .scratch = scratch,
                   .out = out };
    pdbx_cpu_pool_for(pool, seqs * heads, attn_chunk, &J);
}

void pdbx_k_attention_causal(pdbx_cpu_pool *pool, const float *q, const float *k, const float *v,
                             int64_t seqs, int64_t seq_len, int64_t heads, int64_t kv_heads,
                             int64_t d, float *scratch, float *out)
{
    pdbx_k_attention_causal_opts(pool, q, k, v, seqs, seq_len, heads, kv_heads, d, scratch, out,
                                 NULL);
}

/* ---- final-logit soft-capping ------------------------------------------------------------- */
/* dx[i] = dy[i] (cap - y[i]) (cap + y[i]) / cap^2 = dy[i] (1 - (y[i] / cap)^2) for i < n, in
 * fp32 or rounded to bf16 (the GEMM dtype of lm_head's dgrad/wgrad) */
PDBX_K_HOT static void softcap_bwd_range(const float *y, const float *dy, void *dx, int dx_bf16,
                                         int64_t n, float cap)
{
    const float inv2 = 1.0f / (cap * cap);
    if (!dx_bf16) {
        float *o = dx;
        for (int64_t i = 0; i < n; i++)
            o[i] = dy[i] * ((cap - y[i]) * (cap + y[i]) * inv2);
        return;
    }
    uint16_t *o = dx;
    for (int64_t i = 0; i < n; i++)
        o[i] = pdbx_k_bf16_rne(dy[i] * ((cap - y[i]) * (cap + y[i]) * inv2));
}

typedef struct {
    float *y;           /* the forward, in place; NULL: the backward */
    const float *yc;    /* the backward's capped output */
    const float *dy;
    void *dx;
    int dx_bf16;
    int64_t n;
    float cap;          /* the backward: 0 copies dy (factor 1) */
} softcap_job;

#define SOFTCAP_CHUNK 16384     /* elements: 64 KiB of each stream, as the GELU's */
#define PAR_MIN_ELEMS 32768     /* below, the caller alone (cpu_kernels.c's threshold) */

/* dx = dy, converted to bf16 when dx_bf16 (the backward without a cap) */
PDBX_K_HOT static void softcap_copy_range(const float *dy, void *dx, int dx_bf16, int64_t n)
{
    if (!dx_bf16) {
        if ((const void *)dy != dx)
            memmove(dx, dy, (size_t)n * sizeof *dy);
        return;
    }
    uint16_t *o = dx;
    for (int64_t i = 0; i < n; i++)
        o[i] = pdbx_k_bf16_rne(dy[i]);
}

static void softcap_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const softcap_job *J = arg;
    const int64_t i0 = chunk * SOFTCAP_CHUNK;
    const int64_t n = J->n - i0 < SOFTCAP_CHUNK ? J->n - i0 : SOFTCAP_CHUNK;
    const size_t osz = J->dx_bf16 ? 2 : 4;
    if (J->y)
        softcap_range(J->y + i0, n, J->cap);
    else if (J->cap > 0.0f)
        softcap_bwd_range(J->yc + i0, J->dy + i0, (char *)J->dx + (size_t)i0 * osz, J->dx_bf16, n,
                          J->cap);
    else
        softcap_copy_range(J->dy + i0, (char *)J->dx + (size_t)i0 * osz, J->dx_bf16, n);
}

static void softcap_run(pdbx_cpu_pool *pool, softcap_job J, int64_t rows, int64_t n)
{
    const int64_t total = rows * n;
    if (!(J.cap > 0.0f && J.cap < INFINITY))
        J.cap = 0.0f;
    if (rows < 1 || n < 1 || (J.y && J.cap == 0.0f))
        return;
    J.n = total;
    if (total < PAR_MIN_ELEMS)
        pool = NULL;
    pdbx_cpu_pool_for(pool, (total + SOFTCAP_CHUNK - 1) / SOFTCAP_CHUNK, softcap_chunk, &J);
}

void pdbx_k_logit_softcap(pdbx_cpu_pool *pool, float *y, int64_t rows, int64_t n, float cap)
{
    softcap_run(pool, (softcap_job){ .y = y, .cap = cap }, rows, n);
}

void pdbx_k_logit_softcap_bwd(pdbx_cpu_pool *pool, const float *y, const float *dy, void *dx,
                              int dx_bf16, int64_t rows, int64_t n, float cap)
{
    softcap_run(pool, (softcap_job){ .yc = y, .dy = dy, .dx = dx, .dx_bf16 = dx_bf16, .cap = cap },
                rows, n);
}
