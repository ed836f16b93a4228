/* cpu_kernels_moe_perm.c: the MoE permute (token copies grouped by expert) and unpermute (the
 * weighted sum of a token's expert outputs), forward and backward (see cpu_kernels_moe.h).
 * Every kernel is organised per token: a token's copies are written by, or read into, the one
 * chunk that owns the token, so no row is touched by two threads and the sums over a token's
 * copies run in j order whatever the pool. */
#include "engine/backends/cpu/cpu_kernels_moe.h"
#include "engine/backends/cpu/cpu_kernels_vec.h"   /* PDBX_K_HOT */

#include <string.h>

/* Below this many elements moved a kernel runs on the caller alone: waking the pool costs more. */
#define PERM_PAR_MIN 32768
/* Tokens per chunk: about 64 KiB of x (16384 floats), at least one token. */
#define PERM_CHUNK_ELEMS 16384

void pdbx_k_moe_route_index(const int32_t *idx, int64_t tokens, int top_k, int experts,
                            int64_t *offsets, int64_t *pos)
{
    const int64_t n = tokens * top_k;
    for (int g = 0; g <= experts; g++)
        offsets[g] = 0;
    for (int64_t c = 0; c < n; c++)
        offsets[idx[c] + 1]++;
    for (int g = 0; g < experts; g++)
        offsets[g + 1] += offsets[g];
    /* offsets[g] is expert g's next free row while the copies are placed in copy order (the
     * stable sort); afterwards it holds the start of g + 1, so the starts shift back by one */
    for (int64_t c = 0; c < n; c++)
        pos[c] = offsets[idx[c]]++;
    for (int g = experts; g > 0; g--)
        offsets[g] = offsets[g - 1];
    offsets[0] = 0;
}

typedef struct {
    const float *x, *w, *dy;
    const int64_t *pos;
    int64_t tokens, hidden, chunk_tokens;
    int top_k;
    float *out, *dw;
} perm_job;

static int64_t chunk_tokens(int64_t hidden, int top_k)
{
    const int64_t c = PERM_CHUNK_ELEMS / (hidden * top_k);
    return c < 1 ? 1 : c;
}

static void run_tokens(pdbx_cpu_pool *pool, perm_job *J, pdbx_cpu_chunk_task fn)
{
    if (J->tokens < 1)
        return;
    J->chunk_tokens = chunk_tokens(J->hidden, J->top_k);
    if (J->tokens * J->hidden * J->top_k < PERM_PAR_MIN)
        pool = NULL;
    pdbx_cpu_pool_for(pool, (J->tokens + J->chunk_tokens - 1) / J->chunk_tokens, fn, J);
}

#define CHUNK_RANGE(J, chunk, t0, t1)                                                      \
    const int64_t t0 = (chunk) * (J)->chunk_tokens;                                       \
    const int64_t t1 = (J)->tokens - t0 < (J)->chunk_tokens ? (J)->tokens : t0 + (J)->chunk_tokens

/* ---- permute ------------------------------------------------------------------------------ */
static void permute_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const perm_job *J = arg;
    CHUNK_RANGE(J, chunk, t0, t1);
    const size_t bytes = (size_t)J->hidden * sizeof(float);
    for (int64_t t = t0; t < t1; t++)
        for (int j = 0; j < J->top_k; j++)
            memcpy(J->out + J->pos[t * J->top_k + j] * J->hidden, J->x + t * J->hidden, bytes);
}

void pdbx_k_moe_permute(pdbx_cpu_pool *pool, const float *x, const int64_t *pos, int64_t tokens,
                        int64_t hidden, int top_k, float *rows)
{
    perm_job J = { .x = x, .pos = pos, .tokens = tokens, .hidden = hidden, .top_k = top_k,
                   .out = rows };
    run_tokens(pool, &J, permute_chunk);
}

/* out[:] = sum_j w_j src_j[:] over a token's copies (w NULL: weights 1), in j order. */
PDBX_K_HOT static void gather_sum(float *out, const float *src, const int64_t *pos,
                                  const float *w, int top_k, int64_t hidden)
{
    const float *r0 = src + pos[0] * hidden;
    const float w0 = w ? w[0] : 1.0f;
    for (int64_t i = 0; i < hidden; i++)
        out[i] = w0 * r0[i];
    for (int j = 1; j < top_k; j++) {
        const float *r = src + pos[j] * hidden;
        const float wj = w ? w[j] : 1.0f;
        for (int64_t i = 0; i < hidden; i++)
            out[i] += wj * r[i];
    }
}

static void permute_bwd_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const perm_job *J = arg;
    CHUNK_RANGE(J, chunk, t0, t1);
    for (int64_t t = t0; t < t1; t++)
        gather_sum(J->out + t * J->hidden, J->x, J->pos + t * J->top_k, NULL, J->top_k, J->hidden);
}

void pdbx_k_moe_permute_bwd(pdbx_cpu_pool *pool, const float *drows, const int64_t *pos,
                            int64_t tokens, int64_t hidden, int top_k, float *dx)
{
    perm_job J = { .x = drows, .pos = pos, .tokens = tokens, .hidden = hidden, .top_k = top_k,
                   .out = dx };
    run_tokens(pool, &J, permute_bwd_chunk);
}

/* ---- unpermute ---------------------------------------------------------------------------- */
static void unpermute_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const perm_job *J = arg;
    CHUNK_RANGE(J, chunk, t0, t1);
    for (int64_t t = t0; t < t1; t++)
        gather_sum(J->out + t * J->hidden, J->x, J->pos + t * J->top_k, J->w + t * J->top_k,
                   J->top_k, J->hidden);
}

void pdbx_k_moe_unpermute(pdbx_cpu_pool *pool, const float *rows, const float *w,
                          const int64_t *pos, int64_t tokens, int64_t hidden, int top_k, float *y)
{
    perm_job J = { .x = rows, .w = w, .pos = pos, .tokens = tokens, .hidden = hidden,
                   .top_k = top_k, .out = y };
    run_tokens(pool, &J, unpermute_chunk);
}

/* drow = w dy and the weight's gradient dy . row, for one copy. The dot product in 16 partial
 * sums added in a fixed order: vectorisable without reassociating, and the same on every thread. */
PDBX_K_HOT static float scatter_dot(float *drow, const float *row, const float *dy, float w,
                                    int64_t hidden)
{
    float part[16] = { 0 };
    int64_t i = 0;
    for (; i + 16 <= hidden; i += 16)
        for (int l = 0; l < 16; l++) {
            drow[i + l] = w * dy[i + l];
            part[l] += dy[i + l] * row[i + l];
        }
    float dot = 0.0f;
    for (; i < hidden; i++) {
        drow[i] = w * dy[i];
        dot += dy[i] * row[i];
    }
    for (int l = 0; l < 16; l++)
        dot += part[l];
    return dot;
}

static void unpermute_bwd_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const perm_job *J = arg;
    CHUNK_RANGE(J, chunk, t0, t1);
    const int64_t h = J->hidden;
    for (int64_t t = t0; t < t1; t++)
        for (int j = 0; j < J->top_k; j++) {
            const int64_t c = t * J->top_k + j, r = J->pos[c];
            J->dw[c] = scatter_dot(J->out + r * h, J->x + r * h, J->dy + t * h, J->w[c], h);
        }
}

void pdbx_k_moe_unpermute_bwd(pdbx_cpu_pool *pool, const float *rows, const float *w,
                              const int64_t *pos, const float *dy, int64_t tokens, int64_t hidden,
                              int top_k, float *drows, float *dw)
{
    perm_job J = { .x = rows, .w = w, .dy = dy, .pos = pos, .tokens = tokens, .hidden = hidden,
                   .top_k = top_k, .out = drows, .dw = dw };
    run_tokens(pool, &J, unpermute_bwd_chunk);
}
