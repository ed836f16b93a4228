/* cpu_optimizer.c: the optimizer op on the cpu backend (store/ops.h): one AdamW step over one
 * layer's parameters on the rank, in the planner's flat fp32 arrays (plan.h, PDBX_BUF_OPT_*:
 * master weights, m, v, main gradient; the 16-bit model copy in a bf16 run), by the threaded
 * one-pass kernel of cpu_kernels_optim.h, then the zeroing of the gradient buffer for the next
 * iteration (Megatron's zero_grad_buffer: a memset of the fp32 main gradients, once per
 * iteration). The zeroed array is not the one AdamW reads: the backward here does not write
 * the main gradient, and steps over zeros would decay m and v into denormals. */
#include "engine/backends/cpu/cpu_internal.h"

#include <stdio.h>

#include "engine/backends/cpu/cpu_kernels_optim.h"

void **pdbx_cpu_opt_slot(pdbx_compute *c, pdbx_buf_role r)
{
    switch (r) {
    case PDBX_BUF_OPT_MASTER: return (void **)&c->opt.master;
    case PDBX_BUF_OPT_M: return (void **)&c->opt.m;
    case PDBX_BUF_OPT_V: return (void **)&c->opt.v;
    case PDBX_BUF_OPT_MODEL_LP: return (void **)&c->opt.model_lp;
    case PDBX_BUF_OPT_GRAD: return (void **)&c->opt.grad;
    case PDBX_BUF_OPT_GRAD_ZEROED: return (void **)&c->opt.grad_zeroed;
    default: return NULL;
    }
}

void pdbx_cpu_opt_forget(pdbx_compute *c, int weights)
{
    c->opt.grad = c->opt.grad_zeroed = NULL;
    if (weights) {
        c->opt.master = c->opt.m = c->opt.v = NULL;
        c->opt.model_lp = NULL;
        c->opt.step = 0;
    }
}

/* Values of a model some steps into training: weights O(0.02), gradients O(1e-3), m of the
 * gradients' size and v their square's (>= 0: the step takes its square root), so no denormal
 * and no NaN slows the kernel. */
uint64_t pdbx_cpu_opt_fill(pdbx_compute *c, int new_weights, uint64_t seed)
{
    if (!(c->p.ops & PDBX_OP_BIT(PDBX_OP_OPTIMIZER)) || !c->opt.master || !c->opt.grad)
        return seed;   /* not listed: no backward in the point's passes */
    /* the planner's count, which sized the arrays (the op's shape n in the engine's points) */
    c->opt.n = (int64_t)pdbx_optimizer_params(&c->p.model, c->p.tp, c->p.ep > 0 ? c->p.ep : 1);
    const size_t n = (size_t)c->opt.n;
    pdbx_cpu_fill_f32(c, c->opt.grad, n, 1e-3f, seed++);
    if (!new_weights)
        return seed;
    pdbx_cpu_fill_f32(c, c->opt.master, n, 0.02f, seed++);
    pdbx_cpu_fill_f32(c, c->opt.m, n, 1e-3f, seed++);
    pdbx_cpu_fill_f32(c, c->opt.v, n, 1e-6f, seed++);
    for (size_t i = 0; i < n; i++)   /* |v|: a square's running mean */
        c->opt.v[i] = c->opt.v[i] < 0 ? -c->opt.v[i] : c->opt.v[i];
    if (c->opt.model_lp)
        pdbx_cpu_fill_zero(c, c->opt.model_lp, n * 2);
    c->opt.step = 0;
    return seed;
}

int pdbx_cpu_opt_run(pdbx_compute *c, char *err, size_t errlen)
{
    if (!c->opt.master || !c->opt.m || !c->opt.v || !c->opt.grad || !c->opt.grad_zeroed) {
        snprintf(err, errlen, "cpu backend: the optimizer's buffers were not prepared");
        return -1;
    }
    pdbx_adamw_hyper hy = PDBX_ADAMW_DEFAULTS;
    hy.step = ++c->opt.step;
    pdbx_k_adamw(c->pool, c->opt.master, c->opt.grad, c->opt.m, c->opt.v, c->opt.model_lp, c->opt.n, &hy);
    pdbx_cpu_fill_zero(c, c->opt.grad_zeroed, (size_t)c->opt.n * sizeof(float));
    return 0;
}
