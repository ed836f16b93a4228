/* cpu_kernels.c: the CPU backend's own kernels (see cpu_kernels.h). Plain C11 loops written
 * so gcc -O2 vectorizes the inner dimension (contiguous, no aliasing between in and out). */
#include "engine/backends/cpu/cpu_kernels.h"

/* The build targets baseline x86-64 (SSE2). The hot kernels are compiled a second and third
 * time for AVX2+FMA and AVX-512 and picked at load time by the CPU (GCC target_clones, an
 * ifunc), with the cost model that accepts runtime alias checks: the same C, vector units used. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PDBX_K_HOT __attribute__((target_clones("arch=skylake-avx512", "arch=haswell", "default"), \
                                  optimize("tree-vectorize", "vect-cost-model=dynamic")))
#else
#define PDBX_K_HOT
#endif

#include <math.h>
#include <pthread.h>
#include <string.h>

void pdbx_k_embed_gather(const void *table, int64_t table_rows, int64_t vocab_start,
                         const int32_t *ids, int64_t rows, size_t row_bytes, void *out)
{
    const unsigned char *src = table;
    unsigned char *dst = out;
    for (int64_t i = 0; i < rows; i++) {
        int64_t local = (int64_t)ids[i] - vocab_start;
        if (local < 0 || local >= table_rows)
            memset(dst + (size_t)i * row_bytes, 0, row_bytes);
        else
            memcpy(dst + (size_t)i * row_bytes, src + (size_t)local * row_bytes, row_bytes);
    }
}

PDBX_K_HOT void pdbx_k_rmsnorm(const float *x, const float *weight, int64_t rows, int64_t cols,
                    float eps, float *out)
{
    for (int64_t i = 0; i < rows; i++) {
        const float *xr = x + i * cols;
        float *o = out + i * cols;
        /* 16 partial sums: a float reduction the compiler may vectorise without -ffast-math */
        float part[16] = { 0 };
        int64_t j = 0;
        for (; j + 16 <= cols; j += 16)
            for (int l = 0; l < 16; l++)
                part[l] += xr[j + l] * xr[j + l];
        float ss = 0.0f;
        for (; j < cols; j++)
            ss += xr[j] * xr[j];
        for (int l = 0; l < 16; l++)
            ss += part[l];
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int64_t j = 0; j < cols; j++)
            o[j] = xr[j] * inv * weight[j];
    }
}

PDBX_K_HOT void pdbx_k_silu_mul(const float *gate, const float *up, int64_t n, float *out)
{
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

size_t pdbx_k_attention_scratch_floats(int64_t seq_len, int64_t d, int threads)
{
    size_t per = (size_t)PDBX_K_ATTN_BLOCK * (size_t)seq_len + (size_t)d * PDBX_K_ATTN_KBLOCK;
    return per * (size_t)(threads > 0 ? threads : 1);
}

typedef struct {
    const float *q, *k, *v;
    int64_t seq_len, heads, kv_heads, d;
    int64_t first, last;       /* (sequence, head) pairs [first, last) */
    float *scratch, *out;
} attn_job;

PDBX_K_HOT static void attn_pair(const attn_job *J, int64_t s, int64_t h)
{
    const int64_t S = J->seq_len, d = J->d;
    const int64_t qstride = J->heads * d, kvstride = J->kv_heads * d;
    const int64_t kvh = h / (J->heads / J->kv_heads);
    const int64_t base = s * S;
    const float scale = 1.0f / sqrtf((float)d);
    float *scores = J->scratch;                                   /* [BLOCK][S] */
    float *kt = J->scratch + (size_t)PDBX_K_ATTN_BLOCK * (size_t)S;   /* [d][KBLOCK] */
    for (int64_t i0 = 0; i0 < S; i0 += PDBX_K_ATTN_BLOCK) {
        const int64_t i1 = i0 + PDBX_K_ATTN_BLOCK < S ? i0 + PDBX_K_ATTN_BLOCK : S;
        const int64_t nr = i1 - i0;
        /* scores[r][j] = scale * q_(i0+r) . k_j for j < i1 (entries above the diagonal are
         * computed with their block and ignored by the softmax) */
        for (int64_t j0 = 0; j0 < i1; j0 += PDBX_K_ATTN_KBLOCK) {
            const int64_t j1 = j0 + PDBX_K_ATTN_KBLOCK < i1 ? j0 + PDBX_K_ATTN_KBLOCK : i1;
            const int64_t nj = j1 - j0;
            for (int64_t jj = 0; jj < nj; jj++) {
                const float *kj = J->k + (base + j0 + jj) * kvstride + kvh * d;
                for (int64_t c = 0; c < d; c++)
                    kt[c * PDBX_K_ATTN_KBLOCK + jj] = kj[c];
            }
            for (int64_t r = 0; r < nr; r++) {
                const float *qi = J->q + (base + i0 + r) * qstride + h * d;
                float *sr = scores + r * S + j0;
                for (int64_t jj = 0; jj < nj; jj++)
                    sr[jj] = 0.0f;
                for (int64_t c = 0; c < d; c++) {
                    const float qc = qi[c] * scale;
                    const float *ktc = kt + c * PDBX_K_ATTN_KBLOCK;
                    for (int64_t jj = 0; jj < nj; jj++)
                        sr[jj] += qc * ktc[jj];
                }
            }
        }
        /* exact softmax per row over its causal prefix [0, i] */
        for (int64_t r = 0; r < nr; r++) {
            float *sr = scores + r * S;
            const int64_t len = i0 + r + 1;
            float m = sr[0];
            for (int64_t j = 1; j < len; j++)
                m = sr[j] > m ? sr[j] : m;
            float sum = 0.0f;
            for (int64_t j = 0; j < len; j++) {
                sr[j] = expf(sr[j] - m);
                sum += sr[j];
            }
            const float inv = 1.0f / sum;
            for (int64_t j = 0; j < len; j++)
                sr[j] *= inv;
            memset(J->out + (base + i0 + r) * qstride + h * d, 0, (size_t)d * sizeof(float));
        }
        /* out_i = sum_j p_ij v_j: value row j reused across the block's rows */
        for (int64_t j = 0; j < i1; j++) {
            const float *vj = J->v + (base + j) * kvstride + kvh * d;
            const int64_t r0 = j > i0 ? j - i0 : 0;
            for (int64_t r = r0; r < nr; r++) {
                const float p = scores[r * S + j];
                float *o = J->out + (base + i0 + r) * qstride + h * d;
                for (int64_t c = 0; c < d; c++)
                    o[c] += p * vj[c];
            }
        }
    }
}

static void *attn_worker(void *arg)
{
    const attn_job *J = arg;
    for (int64_t p = J->first; p < J->last; p++)
        attn_pair(J, p / J->heads, p % J->heads);
    return NULL;
}

void pdbx_k_attention_causal(const float *q, const float *k, const float *v,
                             int64_t seqs, int64_t seq_len, int64_t heads, int64_t kv_heads,
                             int64_t d, int threads, float *scratch, float *out)
{
    enum { MAX_THREADS = 256 };
    const int64_t pairs = seqs * heads;
    if (threads < 1)
        threads = 1;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (threads > pairs)
        threads = (int)(pairs > 0 ? pairs : 1);
    const size_t per = pdbx_k_attention_scratch_floats(seq_len, d, 1);
    attn_job jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = { 0 };
    for (int t = 0; t < threads; t++) {
        jobs[t] = (attn_job){ .q = q, .k = k, .v = v, .seq_len = seq_len, .heads = heads,
                              .kv_heads = kv_heads, .d = d, .first = pairs * t / threads,
                              .last = pairs * (t + 1) / threads, .scratch = scratch + per * (size_t)t,
                              .out = out };
    }
    for (int t = 1; t < threads; t++)
        started[t] = pthread_create(&tid[t], NULL, attn_worker, &jobs[t]) == 0;
    attn_worker(&jobs[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            attn_worker(&jobs[t]);     /* no thread: do that share here */
    }
}

uint16_t pdbx_k_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
        return (uint16_t)((u >> 16) | 0x0040u);            /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);                       /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float pdbx_k_bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void pdbx_k_fill_uniform(float *x, size_t n, float scale, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    if (s == 0)
        s = 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        /* 24 random bits -> [-1, 1) */
        float u = (float)(s >> 40) * (1.0f / 8388608.0f) - 1.0f;
        x[i] = u * scale;
    }
}
