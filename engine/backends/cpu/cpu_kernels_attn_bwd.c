/* cpu_kernels_attn_bwd.c: the cpu backend's causal attention backward (declared in
 * cpu_kernels_bwd.h, pdbx_k_attention_causal_bwd; moved here from cpu_kernels_bwd.c unchanged):
 * FlashAttention-2's recomputation, plain C11 loops with a contiguous innermost dimension that
 * gcc vectorises, compiled for AVX2 and AVX-512 too (the clones of cpu_kernels_bwd.c). */
#include "engine/backends/cpu/cpu_kernels_bwd.h"
#include "engine/backends/cpu/cpu_kernels.h"

/* the clones of cpu_kernels_bwd.c's kernels (the same bits as before the move) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PDBX_KB_HOT __attribute__((target_clones("arch=skylake-avx512", "arch=haswell", "default"), \
                                   optimize("tree-vectorize", "vect-cost-model=dynamic")))
#else
#define PDBX_KB_HOT
#endif

#include <math.h>
#include <pthread.h>
#include <string.h>

/* ---- attention ------------------------------------------------------------------------- */

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
    int64_t first, last;       /* (sequence, kv head) pairs [first, last) */
    float *scratch;
} attn_bwd_job;

/* out[r*S + j] = scale * a_(i0+r) . b_j for r < nr, j < i1 (a: query-like rows of stride
 * astride at column offset aoff; b: key-like rows of stride bstride at boff), blocked as the
 * forward's score loop: a key block transposed into kt so the update is a contiguous axpy. */
PDBX_KB_HOT static void block_dots(const float *a, int64_t astride, const float *b,
                                   int64_t bstride, int64_t d, int64_t S, int64_t i0, int64_t nr,
                                   int64_t i1, float scale, float *kt, float *out)
{
    for (int64_t j0 = 0; j0 < i1; j0 += PDBX_K_ATTN_KBLOCK) {
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

/* The backward of q head h (kv head kvh) of sequence s; dk, dv of kvh accumulate. */
PDBX_KB_HOT static void attn_bwd_head(const attn_bwd_job *J, int64_t s, int64_t h, int64_t kvh)
{
    const int64_t S = J->seq_len, d = J->d;
    const int64_t qstride = J->heads * d, kvstride = J->kv_heads * d;
    const int64_t base = s * S;
    const float scale = 1.0f / sqrtf((float)d);
    float *P = J->scratch;                                          /* [BLOCK][S] */
    float *dS = P + (size_t)PDBX_K_ATTN_BLOCK * (size_t)S;          /* [BLOCK][S] */
    float *kt = dS + (size_t)PDBX_K_ATTN_BLOCK * (size_t)S;         /* [d][KBLOCK] */
    const float *q = J->q + base * qstride + h * d, *dO = J->dout + base * qstride + h * d;
    const float *k = J->k + base * kvstride + kvh * d, *v = J->v + base * kvstride + kvh * d;
    float *dq = J->dq + base * qstride + h * d;
    float *dk = J->dk + base * kvstride + kvh * d, *dv = J->dv + base * kvstride + kvh * d;
    for (int64_t i0 = 0; i0 < S; i0 += PDBX_K_ATTN_BLOCK) {
        const int64_t i1 = i0 + PDBX_K_ATTN_BLOCK < S ? i0 + PDBX_K_ATTN_BLOCK : S;
        const int64_t nr = i1 - i0;
        /* P recomputed: the forward's scores and exact softmax over the causal prefix */
        block_dots(q, qstride, k, kvstride, d, S, i0, nr, i1, scale, kt, P);
        for (int64_t r = 0; r < nr; r++) {
            float *pr = P + r * S;
            const int64_t len = i0 + r + 1;
            float m = pr[0];
            for (int64_t j = 1; j < len; j++)
                m = pr[j] > m ? pr[j] : m;
            float sum = 0.0f;
            for (int64_t j = 0; j < len; j++) {
                pr[j] = expf(pr[j] - m);
                sum += pr[j];
            }
            const float inv = 1.0f / sum;
            for (int64_t j = 0; j < len; j++)
                pr[j] *= inv;
            for (int64_t j = len; j < i1; j++)
                pr[j] = 0.0f;   /* masked: no gradient flows above the diagonal */
        }
        /* dP = dO V^T, then dS = P (dP - rowsum(P dP)) in place */
        block_dots(dO, qstride, v, kvstride, d, S, i0, nr, i1, 1.0f, kt, dS);
        for (int64_t r = 0; r < nr; r++) {
            const float *pr = P + r * S;
            float *sr = dS + r * S;
            float D = 0.0f;
            for (int64_t j = 0; j < i1; j++)
                D += pr[j] * sr[j];
            for (int64_t j = 0; j < i1; j++)
                sr[j] = pr[j] * (sr[j] - D) * scale;   /* the score scale folded in once */
        }
        /* dV_j += sum_r P_rj dO_r and dK_j += sum_r dS_rj Q_r: row j of dv and dk reused
         * across the block's rows (r from the first unmasked one) */
        for (int64_t j = 0; j < i1; j++) {
            float *dvj = dv + j * kvstride, *dkj = dk + j * kvstride;
            const int64_t r0 = j > i0 ? j - i0 : 0;
            for (int64_t r = r0; r < nr; r++) {
                const float p = P[r * S + j], g = dS[r * S + j];
                const float *dor = dO + (i0 + r) * qstride, *qr = q + (i0 + r) * qstride;
                for (int64_t c = 0; c < d; c++) {
                    dvj[c] += p * dor[c];
                    dkj[c] += g * qr[c];
                }
            }
        }
        /* dQ_r = sum_j dS_rj K_j */
        for (int64_t r = 0; r < nr; r++) {
            float *dqr = dq + (i0 + r) * qstride;
            const float *sr = dS + r * S;
            const int64_t len = i0 + r + 1;
            for (int64_t c = 0; c < d; c++)
                dqr[c] = 0.0f;
            for (int64_t j = 0; j < len; j++) {
                const float g = sr[j];
                const float *kj = k + j * kvstride;
                for (int64_t c = 0; c < d; c++)
                    dqr[c] += g * kj[c];
            }
        }
    }
}

static void *attn_bwd_worker(void *arg)
{
    const attn_bwd_job *J = arg;
    const int64_t group = J->heads / J->kv_heads, S = J->seq_len, d = J->d;
    const int64_t kvstride = J->kv_heads * d;
    for (int64_t p = J->first; p < J->last; p++) {
        const int64_t s = p / J->kv_heads, kvh = p % J->kv_heads;
        for (int64_t t = 0; t < S; t++) {   /* dk, dv of this pair start from zero */
            memset(J->dk + (s * S + t) * kvstride + kvh * d, 0, (size_t)d * sizeof(float));
            memset(J->dv + (s * S + t) * kvstride + kvh * d, 0, (size_t)d * sizeof(float));
        }
        for (int64_t jj = 0; jj < group; jj++)
            attn_bwd_head(J, s, kvh * group + jj, kvh);
    }
    return NULL;
}

void pdbx_k_attention_causal_bwd(const float *q, const float *k, const float *v, const float *dout,
                                 int64_t seqs, int64_t seq_len, int64_t heads, int64_t kv_heads,
                                 int64_t d, int threads, float *scratch, float *dq, float *dk,
                                 float *dv)
{
    enum { MAX_THREADS = 256 };
    const int64_t pairs = seqs * kv_heads;
    if (threads < 1)
        threads = 1;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (threads > pairs)
        threads = (int)(pairs > 0 ? pairs : 1);
    const size_t per = pdbx_k_attention_bwd_scratch_floats(seq_len, d, 1);
    attn_bwd_job jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = { 0 };
    for (int t = 0; t < threads; t++)
        jobs[t] = (attn_bwd_job){ .q = q, .k = k, .v = v, .dout = dout, .dq = dq, .dk = dk,
                                  .dv = dv, .seq_len = seq_len, .heads = heads,
                                  .kv_heads = kv_heads, .d = d, .first = pairs * t / threads,
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
