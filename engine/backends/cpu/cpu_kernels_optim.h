/* cpu_kernels_optim.h: the optimizer step of the cpu backend (the optimizer op, store/ops.h).
 *
 * Contract:
 *  - pdbx_k_adamw: one AdamW step (Loshchilov & Hutter; torch.optim.AdamW's arithmetic) over n
 *    parameters in flat fp32 arrays, Megatron's mixed-precision layout: master weights p, main
 *    gradient g, first and second moments m and v, in one pass:
 *        m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *        p = p (1 - lr wd) - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 *    and, when lp is not NULL, the updated p rounded to bf16 into lp (the model's 16-bit copy
 *    that the next forward reads). t >= 1 is the step number. v must be >= 0 on entry.
 *  - Split over the pool in cache-line-aligned chunks (pdbx_cpu_pool_for): each parameter is
 *    read and written once; any thread count gives the same bits.
 */
#ifndef PDBX_CPU_KERNELS_OPTIM_H
#define PDBX_CPU_KERNELS_OPTIM_H

#include <stdint.h>

#include "engine/backends/cpu/cpu_threads.h"

typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
    int step;                     /* t >= 1 */
} pdbx_adamw_hyper;

/* Megatron's defaults for a GPT pretraining run (lr: a typical peak) */
#define PDBX_ADAMW_DEFAULTS { 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1 }

void pdbx_k_adamw(pdbx_cpu_pool *pool, float *p, const float *g, float *m, float *v, uint16_t *lp,
                  int64_t n, const pdbx_adamw_hyper *hy);

#endif
