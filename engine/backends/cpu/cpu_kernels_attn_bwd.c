/* cpu_kernels_attn_bwd.c: the cpu backend's causal attention backward, plain (cpu_kernels_bwd.h,
 * pdbx_k_attention_causal_bwd) and with a sliding window and logit soft-capping
 * (cpu_kernels_attn.h, pdbx_k_attention_causal_bwd_opts): FlashAttention-2's recomputation,
 * plain C11 loops with a contiguous innermost dimension that gcc vectorises, compiled for AVX2
 * and AVX-512 too (the clones of cpu_kernels_bwd.c). */
#include "engine/backends/cpu/cpu_kernels_attn.h"
#include "engine/backends/cpu/cpu_kernels_bwd.h"
#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_vec.h"   /* PDBX_K_HOT, pdbx_k_tanh */

/* The clones of cpu_kernels_bwd.c's kernels, without contracted multiply-adds: every loop of
 * the plain causal backward gives the bits it gave before the options existed. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PDBX_KB_HOT __attribute__((target_clones("arch=skylake-avx512", "arch=haswell", "default"), \
                                   optimize("tree-vectorize", "vect-cost-model=dynamic")))
#else
#define PDBX_KB_HOT
#endif

#include <math.h>
#include <pthread.h>
#include <string.h>

size_t pdbx_k_attention_bwd_scratch_floats(int64_t seq_len, int64_t d, int threads)
{
    /* per thread: P and dP/dS of one query block against the sequence, one transposed key or
     * value block */
    size_t per = 2 * (size_t)PDBX_K_ATTN_BLOCK * (size_t)seq_len + (size_t)d * PDBX_K_ATTN_KBLOCK;
    return per * (size_t)(threads > 0 ? threads : 1);
}

typedef struct {
    const float *q, *k, *v, *dout;
    float *dq, *dk, *dv;
    int64_t seq_len, heads, kv_heads, d;
    int64_t dvd;               /* v's, dout's and dv's head dim (d unless MLA) */
    int64_t window;            /* >= 1, or 0: full causal */
    float softcap;             /* > 0, or 0: none */
    int64_t first, last;       /* (sequence, kv head) pairs [first, last) */
    float *scratch;
} attn_bwd_job;

/* The first key query i attends: i - window + 1, or 0 (window 0: the whole causal prefix). */
static inline int64_t first_key(int64_t i, int64_t window)
{
    return window > 0 && i - window + 1 > 0 ? i - window + 1 : 0;
}

/* out[r*S + j] = scale * a_(i0+r) . b_j for r < nr, jlo <= j < i1 (a: query-like rows of
 * stride astride; b: key-like rows of stride bstride), blocked as the forward's score loop
 * (key blocks from jlo): a key block transposed into kt so the update is a contiguous axpy. */
PDBX_KB_HOT static void block_dots(const float *a, int64_t astride, const float *b,
                                   int64_t bstride, int64_t d, int64_t S, int64_t i0, int64_t nr,
                                   int64_t jlo, int64_t i1, float scale, float *kt, float *out)
{
    for (int64_t j0 = jlo; j0 < i1; j0 += PDBX_K_ATTN_KBLOCK) {
        const int64_t j1 = j0 + PDBX_K_ATTN_KBLOCK < i1 ? j0 + PDBX_K_ATTN_KBLOCK : i1;
        const int64_t nj = j1 - j0;
        for (int64_t jj = 0; jj < nj; jj++) {
            const float *bj = b + (j0 + jj) * bstride;
            for (int64_t c = 0; c < d; c++)
                kt[c * PDBX_K_ATTN_KBLOCK + jj] = bj[c];
        }
        for (int64_t r = 0; r < nr; r++) {
            const float *ar = a + (i0 + r) * astride;
            float *sr = out + r * S + j0;
            for (int64_t jj = 0; jj < nj; jj++)
                sr[jj] = 0.0f;
            for (int64_t c = 0; c < d; c++) {
                const float ac = ar[c] * scale;
                const float *ktc = kt + c * PDBX_K_ATTN_KBLOCK;
                for (int64_t jj = 0; jj < nj; jj++)
                    sr[jj] += ac * ktc[jj];
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

/* Row of P recomputed from its scores pr: the forward's exact softmax over the keys [lo, hi)
 * the row attends (capped first when gr, which takes the cap's derivative); zero on [jlo, lo)
 * and [hi, i1), the rest of the block's keys: no gradient flows outside the band. */
PDBX_KB_HOT static void probs_row(float *pr, float *gr, int64_t jlo, int64_t lo, int64_t hi,
                                  int64_t i1, float cap)
{
    if (gr) {
        softcap_grad_row(pr + lo, gr + lo, hi - lo, cap);
        for (int64_t j = jlo; j < lo; j++)
            gr[j] = 0.0f;
        for (int64_t j = hi; j < i1; j++)
            gr[j] = 0.0f;
    }
    float m = pr[lo];
    for (int64_t j = lo + 1; j < hi; j++)
        m = pr[j] > m ? pr[j] : m;
    float sum = 0.0f;
    for (int64_t j = lo; j < hi; j++) {
        pr[j] = expf(pr[j] - m);
        sum += pr[j];
    }
    const float inv = 1.0f / sum;
    for (int64_t j = lo; j < hi; j++)
        pr[j] *= inv;
    for (int64_t j = jlo; j < lo; j++)
        pr[j] = 0.0f;
    for (int64_t j = hi; j < i1; j++)
        pr[j] = 0.0f;
}

/* dS = P (dP - rowsum(P dP)) [x the cap's derivative gr] x scale, in place on the row of dP
 * (keys [jlo, i1); P is zero outside the row's band, so is dS). */
PDBX_KB_HOT static void dscores_row(const float *pr, const float *gr, float *sr, int64_t jlo,
                                    int64_t i1, float scale)
{
    float D = 0.0f;
    for (int64_t j = jlo; j < i1; j++)
        D += pr[j] * sr[j];
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

/* dV_j += sum_r P_rj dO_r and dK_j += sum_r dS_rj Q_r for the block's keys [jlo, i1): row j of
 * dv and dk reused across the rows that attend key j, r from the diagonal (j - i0) to the
 * window's end (j + W - 1 - i0). */
PDBX_KB_HOT static void dkv_block(const bwd_head *H, const float *P, const float *dS, int64_t i0,
                                  int64_t nr, int64_t jlo, int64_t i1)
{
    const int64_t S = H->S, d = H->d, dvd = H->dvd, both = d < dvd ? d : dvd;
    for (int64_t j = jlo; j < i1; j++) {
        float *dvj = H->dv + j * H->vstride, *dkj = H->dk + j * H->kvstride;
        const int64_t r0 = j > i0 ? j - i0 : 0;
        const int64_t r1 = H->W > 0 && j + H->W - i0 < nr ? j + H->W - i0 : nr;
        for (int64_t r = r0; r < r1; r++) {
            const float p = P[r * S + j], g = dS[r * S + j];
            const float *dor = H->dO + (i0 + r) * H->ostride, *qr = H->q + (i0 + r) * H->qstride;
            for (int64_t c = 0; c < both; c++) {   /* one pass while both rows have columns */
                dvj[c] += p * dor[c];
                dkj[c] += g * qr[c];
            }
            for (int64_t c = both; c < dvd; c++)    /* MLA: the longer of the two, alone */
                dvj[c] += p * dor[c];
            for (int64_t c = both; c < d; c++)
                dkj[c] += g * qr[c];
        }
    }
}

/* dQ_r = sum_j dS_rj K_j over the keys row r attends. */
PDBX_KB_HOT static void dq_block(const bwd_head *H, const float *dS, int64_t i0, int64_t nr)
{
    const int64_t d = H->d;
    for (int64_t r = 0; r < nr; r++) {
        float *dqr = H->dq + (i0 + r) * H->qstride;
        const float *sr = dS + r * H->S;
        const int64_t len = i0 + r + 1;
        for (int64_t c = 0; c < d; c++)
            dqr[c] = 0.0f;
        for (int64_t j = first_key(i0 + r, H->W); j < len; j++) {
            const float g = sr[j];
            const float *kj = H->k + j * H->kvstride;
            for (int64_t c = 0; c < d; c++)
                dqr[c] += g * kj[c];
        }
    }
}

/* The backward of q head h (kv head kvh) of sequence s; dk, dv of kvh accumulate. Query blocks
 * of PDBX_K_ATTN_BLOCK rows, or half of it with softcap: P, dS and the cap's derivative G then
 * take 3 x 16 rows of the scratch's 2 x 32 (the transposed block stays where it was). */
static void attn_bwd_head(const attn_bwd_job *J, int64_t s, int64_t h, int64_t kvh)
{
    const int64_t S = J->seq_len, d = J->d, W = J->window, dvd = J->dvd;
    const int64_t qstride = J->heads * d, kvstride = J->kv_heads * d, base = s * S;
    const int64_t ostride = J->heads * dvd, vstride = J->kv_heads * dvd;
    const int64_t BR = J->softcap > 0.0f ? PDBX_K_ATTN_BLOCK / 2 : PDBX_K_ATTN_BLOCK;
    const float scale = 1.0f / sqrtf((float)d);
    float *P = J->scratch;                                            /* [BR][S] */
    float *dS = P + (size_t)BR * (size_t)S;                           /* [BR][S] */
    float *G = J->softcap > 0.0f ? dS + (size_t)BR * (size_t)S : NULL;   /* [BR][S] */
    float *kt = J->scratch + 2 * (size_t)PDBX_K_ATTN_BLOCK * (size_t)S;  /* [max(d,dv)][KB] */
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
        dkv_block(&H, P, dS, i0, nr, jlo, i1);
        dq_block(&H, dS, i0, nr);
    }
}

static void *attn_bwd_worker(void *arg)
{
    const attn_bwd_job *J = arg;
    const int64_t group = J->heads / J->kv_heads, S = J->seq_len, d = J->d, dvd = J->dvd;
    const int64_t kvstride = J->kv_heads * d, vstride = J->kv_heads * dvd;
    for (int64_t p = J->first; p < J->last; p++) {
        const int64_t s = p / J->kv_heads, kvh = p % J->kv_heads;
        for (int64_t t = 0; t < S; t++) {   /* dk, dv of this pair start from zero */
            memset(J->dk + (s * S + t) * kvstride + kvh * d, 0, (size_t)d * sizeof(float));
            memset(J->dv + (s * S + t) * vstride + kvh * dvd, 0, (size_t)dvd * sizeof(float));
        }
        for (int64_t jj = 0; jj < group; jj++)
            attn_bwd_head(J, s, kvh * group + jj, kvh);
    }
    return NULL;
}

void pdbx_k_attention_causal_bwd_opts(const float *q, const float *k, const float *v,
                                      const float *dout, int64_t seqs, int64_t seq_len,
                                      int64_t heads, int64_t kv_heads, int64_t d, int threads,
                                      float *scratch, float *dq, float *dk, float *dv,
                                      const pdbx_attn_opts *opts)
{
    enum { MAX_THREADS = 256 };
    const int64_t pairs = seqs * kv_heads;
    const int64_t w = opts ? opts->window : 0;
    const float cap = opts ? opts->softcap : 0.0f;
    if (threads < 1)
        threads = 1;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (threads > pairs)
        threads = (int)(pairs > 0 ? pairs : 1);
    const int64_t dvd = pdbx_attn_dv(opts, d);
    /* the transposed block holds keys (d) or values (dv): the caller's scratch is sized by the
     * larger, and so is each thread's share */
    const size_t per = pdbx_k_attention_bwd_scratch_floats(seq_len, d > dvd ? d : dvd, 1);
    attn_bwd_job jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = { 0 };
    for (int t = 0; t < threads; t++)
        jobs[t] = (attn_bwd_job){ .q = q, .k = k, .v = v, .dout = dout, .dq = dq, .dk = dk,
                                  .dv = dv, .seq_len = seq_len, .heads = heads,
                                  .kv_heads = kv_heads, .d = d, .dvd = dvd,
                                  .window = w > 0 && w < seq_len ? w : 0,
                                  .softcap = cap > 0.0f && cap < INFINITY ? cap : 0.0f,
                                  .first = pairs * t / threads,
                                  .last = pairs * (t + 1) / threads,
                                  .scratch = scratch + per * (size_t)t };
    for (int t = 1; t < threads; t++)
        started[t] = pthread_create(&tid[t], NULL, attn_bwd_worker, &jobs[t]) == 0;
    attn_bwd_worker(&jobs[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            attn_bwd_worker(&jobs[t]);   /* no thread: do that share here */
    }
}

void pdbx_k_attention_causal_bwd(const float *q, const float *k, const float *v, const float *dout,
                                 int64_t seqs, int64_t seq_len, int64_t heads, int64_t kv_heads,
                                 int64_t d, int threads, float *scratch, float *dq, float *dk,
                                 float *dv)
{
    pdbx_k_attention_causal_bwd_opts(q, k, v, dout, seqs, seq_len, heads, kv_heads, d, threads,
                                     scratch, dq, dk, dv, NULL);
}
