/* cpu_kernels_optim.c: AdamW over flat fp32 arrays (cpu_kernels_optim.h). */
#include "engine/backends/cpu/cpu_kernels_optim.h"

#include <math.h>
#include <stddef.h>

#include "engine/backends/cpu/cpu_kernels_vec.h"

/* 16384 parameters a chunk: 64 kB of each array, whole cache lines, and enough chunks for the
 * pool to balance a preempted thread's share (cpu_threads.h) */
#define CHUNK 16384

typedef struct {
    float *p, *m, *v;
    const float *g;
    uint16_t *lp;
    int64_t n;
    float b1, b2, c1, c2, step_size, rbc2, decay, eps;
} adamw_job;

static void adamw_prepare(adamw_job *j, const pdbx_adamw_hyper *hy)
{
    j->b1 = hy->beta1, j->b2 = hy->beta2, j->eps = hy->eps;
    j->c1 = (float)(1.0 - (double)hy->beta1), j->c2 = (float)(1.0 - (double)hy->beta2);
    const double bc1 = 1.0 - pow(hy->beta1, hy->step), bc2 = 1.0 - pow(hy->beta2, hy->step);
    j->step_size = (float)(hy->lr / bc1);
    j->rbc2 = (float)(1.0 / sqrt(bc2));
    j->decay = 1.0f - hy->lr * hy->weight_decay;
}

/* The kernels' clones and options (cpu_kernels_vec.h), and no errno from sqrtf: with it gcc
 * calls libm for a negative argument and leaves the loop scalar (v >= 0: never taken). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ADAMW_HOT __attribute__((PDBX_K_CLONES, optimize("tree-vectorize", "vect-cost-model=dynamic", \
                                 "fp-contract=fast", "no-trapping-math", "no-thread-jumps", "no-math-errno")))
#else
#define ADAMW_HOT
#endif

/* One chunk, one pass: no dependence between iterations, vectorised in each clone. */
ADAMW_HOT static void adamw_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const adamw_job *j = arg;
    const int64_t lo = (int64_t)chunk * CHUNK, hi = lo + CHUNK < j->n ? lo + CHUNK : j->n;
    float *restrict p = j->p, *restrict m = j->m, *restrict v = j->v;
    const float *restrict g = j->g;
    const float b1 = j->b1, b2 = j->b2, c1 = j->c1, c2 = j->c2, ss = j->step_size, rbc2 = j->rbc2,
                decay = j->decay, eps = j->eps;
    for (int64_t i = lo; i < hi; i++) {
        const float gi = g[i];
        const float mi = b1 * m[i] + c1 * gi;
        const float vi = b2 * v[i] + c2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i] * decay - ss * mi / (sqrtf(vi) * rbc2 + eps);
    }
    if (j->lp)
        for (int64_t i = lo; i < hi; i++)
            j->lp[i] = pdbx_k_bf16_rne(p[i]);
}

void pdbx_k_adamw(pdbx_cpu_pool *pool, float *p, const float *g, float *m, float *v, uint16_t *lp,
                  int64_t n, const pdbx_adamw_hyper *hy)
{
    if (n <= 0)
        return;
    adamw_job j = { .p = p, .m = m, .v = v, .g = g, .lp = lp, .n = n };
    adamw_prepare(&j, hy);
    pdbx_cpu_pool_for(pool, (n + CHUNK - 1) / CHUNK, adamw_chunk, &j);
}
