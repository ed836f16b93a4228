/* cpu_kernels_loss.c: cross-entropy over a vocabulary shard (cpu_kernels_loss.h). Two passes
 * over a row in the forward (its max, then the sum of exponentials: a row of a 32k vocabulary
 * is 128 KiB, in L2 for the second), one in the backward; row reductions in lanes so they
 * vectorise (cpu_kernels_vec.h's exp, no libm call). */
#include "engine/backends/cpu/cpu_kernels_loss.h"
#include "engine/backends/cpu/cpu_kernels_vec.h"   /* PDBX_K_HOT, PDBX_K_INLINE, pdbx_k_exp */

#include <math.h>

#define LANES 16
#define CHUNK_ELEMS 65536       /* a chunk's rows: at least this many logits (one row at least) */

PDBX_K_HOT static float row_max(const float *a, int64_t n)
{
    float mx[LANES];
    for (int l = 0; l < LANES; l++)
        mx[l] = -INFINITY;
    int64_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++)
            mx[l] = a[j + l] > mx[l] ? a[j + l] : mx[l];
    float m = -INFINITY;
    for (; j < n; j++)
        m = a[j] > m ? a[j] : m;
    for (int l = 0; l < LANES; l++)
        m = mx[l] > m ? mx[l] : m;
    return m;
}

PDBX_K_HOT static float row_exp_sum(const float *a, int64_t n, float m)
{
    float part[LANES] = { 0 };
    int64_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++)
            part[l] += pdbx_k_exp(a[j + l] - m);
    float s = 0.0f;
    for (; j < n; j++)
        s += pdbx_k_exp(a[j] - m);
    for (int l = 0; l < LANES; l++)
        s += part[l];
    return s;
}

PDBX_K_HOT static void row_grad(float *a, int64_t n, float m, float scale_over_sum)
{
    for (int64_t j = 0; j < n; j++)
        a[j] = pdbx_k_exp(a[j] - m) * scale_over_sum;
}

typedef struct {
    float *logits;
    const int32_t *targets;
    int64_t rows, n, vocab_start, per_chunk;
    float *stats;            /* the forward's output */
    const float *in_stats;   /* the backward's input */
    float scale;
} xent_job;

/* the target's column in the shard, or -1 */
static int64_t local_target(const xent_job *J, int64_t i)
{
    const int64_t t = (int64_t)J->targets[i] - J->vocab_start;
    return t >= 0 && t < J->n ? t : -1;
}

/* the rows [*r0, return) of a chunk */
static int64_t chunk_rows(const xent_job *J, long long chunk, int64_t *r0)
{
    *r0 = chunk * J->per_chunk;
    return *r0 + J->per_chunk < J->rows ? *r0 + J->per_chunk : J->rows;
}

static void fwd_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const xent_job *J = arg;
    int64_t r0;
    const int64_t r1 = chunk_rows(J, chunk, &r0);
    for (int64_t i = r0; i < r1; i++) {
        const float *row = J->logits + i * J->n;
        const float m = row_max(row, J->n);
        const int64_t t = local_target(J, i);
        J->stats[i] = m;
        J->stats[J->rows + i] = row_exp_sum(row, J->n, m);
        J->stats[2 * J->rows + i] = t >= 0 ? row[t] : 0.0f;
    }
}

static void bwd_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const xent_job *J = arg;
    int64_t r0;
    const int64_t r1 = chunk_rows(J, chunk, &r0);
    for (int64_t i = r0; i < r1; i++) {
        float *row = J->logits + i * J->n;
        const int64_t t = local_target(J, i);
        row_grad(row, J->n, J->in_stats[i], J->scale / J->in_stats[J->rows + i]);
        if (t >= 0)
            row[t] -= J->scale;
    }
}

static void xent_run(pdbx_cpu_pool *pool, xent_job *J, pdbx_cpu_chunk_task fn)
{
    if (J->rows < 1 || J->n < 1)
        return;
    J->per_chunk = J->n >= CHUNK_ELEMS ? 1 : CHUNK_ELEMS / J->n;
    pdbx_cpu_pool_for(pool, (J->rows + J->per_chunk - 1) / J->per_chunk, fn, J);
}

void pdbx_k_xent_fwd(pdbx_cpu_pool *pool, const float *logits, const int32_t *targets,
                     int64_t rows, int64_t n, int64_t vocab_start, float *stats)
{
    xent_job J = { .logits = (float *)logits, .targets = targets, .rows = rows, .n = n,
                   .vocab_start = vocab_start, .stats = stats };
    xent_run(pool, &J, fwd_chunk);   /* the forward only reads the logits */
}

double pdbx_k_xent_mean(const float *stats, int64_t rows)
{
    double sum = 0.0;
    for (int64_t i = 0; i < rows; i++)
        sum += log((double)stats[rows + i]) + (double)stats[i] - (double)stats[2 * rows + i];
    return rows > 0 ? sum / (double)rows : 0.0;
}

void pdbx_k_xent_bwd(pdbx_cpu_pool *pool, float *logits, const int32_t *targets, int64_t rows,
                     int64_t n, int64_t vocab_start, const float *stats, float scale)
{
    xent_job J = { .logits = logits, .targets = targets, .rows = rows, .n = n,
                   .vocab_start = vocab_start, .in_stats = stats, .scale = scale };
    xent_run(pool, &J, bwd_chunk);
}
