/* cpu_kernels.c: the CPU backend's own kernels (see cpu_kernels.h). Plain C11 loops written
 * so gcc -O2 vectorizes the inner dimension (contiguous, no aliasing between in and out). */
#include "engine/cpu/cpu_kernels.h"

#include <math.h>
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

void pdbx_k_rmsnorm(const float *x, const float *weight, int64_t rows, int64_t cols,
                    float eps, float *out)
{
    for (int64_t i = 0; i < rows; i++) {
        const float *xr = x + i * cols;
        float *o = out + i * cols;
        float ss = 0.0f;
        for (int64_t j = 0; j < cols; j++)
            ss += xr[j] * xr[j];
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int64_t j = 0; j < cols; j++)
            o[j] = xr[j] * inv * weight[j];
    }
}

void pdbx_k_silu_mul(const float *gate, const float *up, int64_t n, float *out)
{
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

static float dot(const float *a, const float *b, int64_t n)
{
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

void pdbx_k_attention_causal(const float *q, const float *k, const float *v,
                             int64_t seqs, int64_t seq_len, int64_t heads, int64_t kv_heads,
                             int64_t d, float *scratch, float *out)
{
    const int64_t qstride = heads * d, kvstride = kv_heads * d;
    const int64_t group = heads / kv_heads;
    const float scale = 1.0f / sqrtf((float)d);
    for (int64_t s = 0; s < seqs; s++) {
        const int64_t base = s * seq_len;
        for (int64_t h = 0; h < heads; h++) {
            const int64_t kvh = h / group;
            for (int64_t i0 = 0; i0 < seq_len; i0 += PDBX_K_ATTN_BLOCK) {
                int64_t i1 = i0 + PDBX_K_ATTN_BLOCK < seq_len ? i0 + PDBX_K_ATTN_BLOCK : seq_len;
                int64_t nr = i1 - i0;
                /* Scores of the block: key j is read once for every row of the block that
                 * may attend to it (j <= i). */
                for (int64_t j = 0; j < i1; j++) {
                    const float *kj = k + (base + j) * kvstride + kvh * d;
                    int64_t r0 = j > i0 ? j - i0 : 0;
                    for (int64_t r = r0; r < nr; r++) {
                        const float *qi = q + (base + i0 + r) * qstride + h * d;
                        scratch[r * seq_len + j] = dot(qi, kj, d) * scale;
                    }
                }
                /* Exact softmax per row over its causal prefix [0, i]. */
                for (int64_t r = 0; r < nr; r++) {
                    float *sr = scratch + r * seq_len;
                    int64_t len = i0 + r + 1;
                    float m = sr[0];
                    for (int64_t j = 1; j < len; j++)
                        m = sr[j] > m ? sr[j] : m;
                    float sum = 0.0f;
                    for (int64_t j = 0; j < len; j++) {
                        sr[j] = expf(sr[j] - m);
                        sum += sr[j];
                    }
                    float inv = 1.0f / sum;
                    for (int64_t j = 0; j < len; j++)
                        sr[j] *= inv;
                    memset(out + (base + i0 + r) * qstride + h * d, 0, (size_t)d * sizeof(float));
                }
                /* out_i = sum_j p_ij v_j, value row j reused across the block's rows. */
                for (int64_t j = 0; j < i1; j++) {
                    const float *vj = v + (base + j) * kvstride + kvh * d;
                    int64_t r0 = j > i0 ? j - i0 : 0;
                    for (int64_t r = r0; r < nr; r++) {
                        float p = scratch[r * seq_len + j];
                        float *o = out + (base + i0 + r) * qstride + h * d;
                        for (int64_t c = 0; c < d; c++)
                            o[c] += p * vj[c];
                    }
                }
            }
        }
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
