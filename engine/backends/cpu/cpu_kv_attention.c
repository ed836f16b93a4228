/* cpu_kv_attention.c: attention with a KV cache (cpu_kv_attention.h). */
#include "engine/backends/cpu/cpu_kv_attention.h"

#include <math.h>
#include <string.h>

typedef struct {
    const float *q, *k, *v;
    int64_t seqs, q_len, kv_len, heads, kv_heads, d;
    float *scratch, *out;
} kv_job;

size_t pdbx_k_kv_attention_scratch_floats(int64_t kv_len, int threads)
{
    return (size_t)(kv_len > 0 ? kv_len : 1) * (size_t)(threads > 0 ? threads : 1);
}

/* a . b over d floats: eight partial sums, so the loop vectorises without reassociating a
 * single float sum (which gcc will not do without -ffast-math). */
static float dot(const float *a, const float *b, int64_t d)
{
    float acc[8] = { 0 };
    int64_t c = 0;
    for (; c + 8 <= d; c += 8)
        for (int l = 0; l < 8; l++)
            acc[l] += a[c + l] * b[c + l];
    float s = 0;
    for (; c < d; c++)
        s += a[c] * b[c];
    for (int l = 0; l < 8; l++)
        s += acc[l];
    return s;
}

static void kv_pair(const kv_job *J, float *s, int64_t seq, int64_t h)
{
    const int64_t d = J->d, group = J->heads / J->kv_heads, kvh = h / group;
    const int64_t qstride = J->heads * d, kstride = J->kv_heads * d;
    const int64_t offset = J->kv_len - J->q_len;       /* the cached prefix before the queries */
    const float scale = 1.0f / sqrtf((float)d);
    const float *kbase = J->k + seq * J->kv_len * kstride + kvh * d;
    const float *vbase = J->v + seq * J->kv_len * kstride + kvh * d;
    for (int64_t i = 0; i < J->q_len; i++) {
        const float *qi = J->q + (seq * J->q_len + i) * qstride + h * d;
        float *oi = J->out + (seq * J->q_len + i) * qstride + h * d;
        const int64_t nkeys = offset + i + 1;
        float mx = -INFINITY;
        for (int64_t j = 0; j < nkeys; j++) {
            s[j] = dot(qi, kbase + j * kstride, d) * scale;
            if (s[j] > mx)
                mx = s[j];
        }
        float sum = 0;
        for (int64_t j = 0; j < nkeys; j++) {
            s[j] = expf(s[j] - mx);
            sum += s[j];
        }
        const float inv = 1.0f / sum;
        memset(oi, 0, (size_t)d * sizeof *oi);
        for (int64_t j = 0; j < nkeys; j++) {
            const float p = s[j] * inv;
            const float *vj = vbase + j * kstride;
            for (int64_t c = 0; c < d; c++)
                oi[c] += p * vj[c];
        }
    }
}

static void kv_chunk(void *arg, long long pair, int part)
{
    const kv_job *J = arg;
    float *s = J->scratch + pdbx_k_kv_attention_scratch_floats(J->kv_len, 1) * (size_t)part;
    kv_pair(J, s, pair / J->heads, pair % J->heads);
}

void pdbx_k_attention_kv(pdbx_cpu_pool *pool, const float *q, const float *k, const float *v,
                         int64_t seqs, int64_t q_len, int64_t kv_len, int64_t heads,
                         int64_t kv_heads, int64_t d, float *scratch, float *out)
{
    if (seqs <= 0 || q_len <= 0 || kv_len < q_len || heads <= 0 || kv_heads <= 0 || d <= 0)
        return;
    kv_job J = { .q = q, .k = k, .v = v, .seqs = seqs, .q_len = q_len, .kv_len = kv_len,
                 .heads = heads, .kv_heads = kv_heads, .d = d, .scratch = scratch, .out = out };
    pdbx_cpu_pool_for(pool, seqs * heads, kv_chunk, &J);
}
