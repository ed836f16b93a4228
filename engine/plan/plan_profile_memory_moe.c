/* plan_profile_memory_moe.c: the cpu backend's buffers of a mixture-of-experts layer
 * (plan.h's PDBX_BUF_MOE_* roles; engine/backends/cpu/cpu_moe.c allocates exactly these).
 *
 * Activations are one set shared by the MoE layers, as the dense layers share theirs; weights
 * are one set per profiled MoE layer (pdbx_profiled_moe_layers), so a dense layer of the same
 * model holds no expert weights; with bwd, the activations' gradients and one set of fp32 weight
 * gradients (the experts' gate and up sharing one, as mlp gate/up do: a wgrad's time depends on
 * its shape, not on its buffer). Everything is fp32: the cpu MoE kernels are (cpu_kernels_moe.h;
 * the planner refuses another dtype for a MoE model on cpu). Sizes (plan_shapes_moe.c): R the
 * layer's rows on the rank (ceil(T / TP)), X = R x top_k its own routed copies (what permute
 * writes and unpermute reads), E experts of which the rank holds E_l = E / EP, X_r the rows its
 * experts receive (plan_moe.h's load of the measured rank; X at EP 1, and under balanced
 * routing at any EP), I_e an expert's width, I_s the shared experts' width / TP. The permuted
 * rows and the experts' output hold max(X, X_r) rows: at EP > 1 the dispatch lands the
 * received rows where the experts read them and the combine returns the own ones where
 * unpermute reads them (the all-to-all itself runs on the comm buffer). The offsets hold the
 * permute's E + 1 and, at EP > 1, the local experts' E_l + 1. At EP 1 the imbalance moves
 * rows between experts, never the total; at EP > 1 it grows X_r (the busiest rank receives
 * more than it sends). */
#include "engine/plan/plan_profile_memory.h"
#include "engine/plan/plan_moe.h"

typedef struct {
    double R, X, Xr, M, E, El, k, h, Ie, Is, T;
    int layers;       /* profiled MoE layers: weight sets */
} moe_dims;

/* The rows the measured rank's experts receive (X when the routing cannot be evaluated: the
 * planner's validation names the fault before any point is measured). */
static double received_rows(const pdbx_profile_point *p, int64_t R)
{
    const pdbx_arch *a = &p->model.arch;
    const pdbx_moe_route r = { R, a->moe.top_k, a->moe.experts, p->ep > 1 ? p->ep : 1,
                               p->moe_imbalance >= 1 ? p->moe_imbalance : 1 };
    pdbx_moe_load load;
    char err[160];
    if (pdbx_moe_rank_load(&r, PDBX_MOE_MEASURED_RANK, &load, NULL, NULL, NULL, NULL, err, sizeof err) != 0)
        return (double)R * a->moe.top_k;
    return (double)load.received;
}

static int moe_dims_of(const pdbx_profile_point *p, moe_dims *d)
{
    const pdbx_model *m = &p->model;
    if (!plan_is_moe(m) || !(p->ops & PDBX_OPS_MOE))
        return 0;
    const double T = (double)p->mbs * p->seq_len;
    d->T = T;
    d->R = (double)(((int64_t)p->mbs * p->seq_len + p->tp - 1) / p->tp);
    d->k = m->arch.moe.top_k;
    d->X = d->R * d->k;
    d->E = m->arch.moe.experts;
    d->El = d->E / (p->ep > 1 ? p->ep : 1);
    d->Xr = received_rows(p, (int64_t)d->R);
    d->M = d->X > d->Xr ? d->X : d->Xr;
    d->h = m->hidden;
    d->Ie = m->arch.moe.expert_intermediate;
    d->Is = (double)(plan_moe_shared_width(m) / p->tp);
    d->layers = pdbx_profiled_moe_layers(m, p->layers);
    return d->layers > 0;
}

void plan_mem_cpu_moe_list(const pdbx_profile_point *p, pdbx_profile_memory *out)
{
    moe_dims d;
    if (!moe_dims_of(p, &d))
        return;
    const pdbx_mem_kind A = PDBX_MEM_ACTIVATIONS, W = PDBX_MEM_WEIGHTS;
    plan_mem_add(out, PDBX_BUF_MOE_LOGITS, A, plan_mem_lines(d.R * d.E * 4), 1);
    plan_mem_add(out, PDBX_BUF_MOE_TOPK_IDX, A, plan_mem_lines(d.X * 4), 1);
    plan_mem_add(out, PDBX_BUF_MOE_TOPK_W, A, plan_mem_lines(d.X * 4), 1);
    plan_mem_add(out, PDBX_BUF_MOE_ASSIGN, A, plan_mem_lines(d.X * 4), 1);
    plan_mem_add(out, PDBX_BUF_MOE_OFFSETS, A, plan_mem_lines((d.E + 1 + (p->ep > 1 ? d.El + 1 : 0)) * 8), 1);
    plan_mem_add(out, PDBX_BUF_MOE_POS, A, plan_mem_lines(d.X * 8), 1);
    plan_mem_add(out, PDBX_BUF_MOE_ROWS, A, plan_mem_lines(d.M * d.h * 4), 1);
    plan_mem_add(out, PDBX_BUF_MOE_GATE, A, plan_mem_lines(d.Xr * d.Ie * 4), 1);
    plan_mem_add(out, PDBX_BUF_MOE_UP, A, plan_mem_lines(d.Xr * d.Ie * 4), 1);
    plan_mem_add(out, PDBX_BUF_MOE_ACT, A, plan_mem_lines(d.Xr * d.Ie * 4), 1);
    plan_mem_add(out, PDBX_BUF_MOE_OUT, A, plan_mem_lines(d.M * d.h * 4), 1);
    if (d.Is > 0) {
        plan_mem_add(out, PDBX_BUF_MOE_SH_GATE, A, plan_mem_lines(d.T * d.Is * 4), 1);
        plan_mem_add(out, PDBX_BUF_MOE_SH_UP, A, plan_mem_lines(d.T * d.Is * 4), 1);
        plan_mem_add(out, PDBX_BUF_MOE_SH_ACT, A, plan_mem_lines(d.T * d.Is * 4), 1);
    }
    plan_mem_add(out, PDBX_BUF_L_ROUTER, W, plan_mem_lines(d.h * d.E * 4), d.layers);
    plan_mem_add(out, PDBX_BUF_L_EXPERT_GATE, W, plan_mem_lines(d.El * d.h * d.Ie * 4), d.layers);
    plan_mem_add(out, PDBX_BUF_L_EXPERT_UP, W, plan_mem_lines(d.El * d.h * d.Ie * 4), d.layers);
    plan_mem_add(out, PDBX_BUF_L_EXPERT_DOWN, W, plan_mem_lines(d.El * d.Ie * d.h * 4), d.layers);
    if (d.Is > 0) {
        plan_mem_add(out, PDBX_BUF_L_SHARED_GATE, W, plan_mem_lines(d.h * d.Is * 4), d.layers);
        plan_mem_add(out, PDBX_BUF_L_SHARED_UP, W, plan_mem_lines(d.h * d.Is * 4), d.layers);
        plan_mem_add(out, PDBX_BUF_L_SHARED_DOWN, W, plan_mem_lines(d.Is * d.h * 4), d.layers);
    }
}

void plan_mem_cpu_moe_grad_list(const pdbx_profile_point *p, pdbx_profile_memory *out)
{
    moe_dims d;
    if (!(p->passes & PDBX_PASS_BIT(PDBX_PASS_BWD)) || !moe_dims_of(p, &d))
        return;
    const pdbx_mem_kind G = PDBX_MEM_GRADS;
    plan_mem_add(out, PDBX_BUF_GRAD_MOE_LOGITS, G, plan_mem_lines(d.R * d.E * 4), 1);
    plan_mem_add(out, PDBX_BUF_GRAD_MOE_TOPK_W, G, plan_mem_lines(d.X * 4), 1);
    plan_mem_add(out, PDBX_BUF_GRAD_MOE_ROWS, G, plan_mem_lines(d.M * d.h * 4), 1);
    plan_mem_add(out, PDBX_BUF_GRAD_MOE_GATE, G, plan_mem_lines(d.Xr * d.Ie * 4), 1);
    plan_mem_add(out, PDBX_BUF_GRAD_MOE_UP, G, plan_mem_lines(d.Xr * d.Ie * 4), 1);
    plan_mem_add(out, PDBX_BUF_GRAD_MOE_ACT, G, plan_mem_lines(d.Xr * d.Ie * 4), 1);
    plan_mem_add(out, PDBX_BUF_GRAD_MOE_OUT, G, plan_mem_lines(d.M * d.h * 4), 1);
    if (d.Is > 0) {
        plan_mem_add(out, PDBX_BUF_GRAD_MOE_SH_GATE, G, plan_mem_lines(d.T * d.Is * 4), 1);
        plan_mem_add(out, PDBX_BUF_GRAD_MOE_SH_UP, G, plan_mem_lines(d.T * d.Is * 4), 1);
        plan_mem_add(out, PDBX_BUF_GRAD_MOE_SH_ACT, G, plan_mem_lines(d.T * d.Is * 4), 1);
    }
    plan_mem_add(out, PDBX_BUF_GRAD_W_ROUTER, G, plan_mem_lines(d.h * d.E * 4), 1);
    plan_mem_add(out, PDBX_BUF_GRAD_W_EXPERT_GATE_UP, G, plan_mem_lines(d.El * d.h * d.Ie * 4), 1);
    plan_mem_add(out, PDBX_BUF_GRAD_W_EXPERT_DOWN, G, plan_mem_lines(d.El * d.Ie * d.h * 4), 1);
    if (d.Is > 0) {
        plan_mem_add(out, PDBX_BUF_GRAD_W_SHARED_GATE_UP, G, plan_mem_lines(d.h * d.Is * 4), 1);
        plan_mem_add(out, PDBX_BUF_GRAD_W_SHARED_DOWN, G, plan_mem_lines(d.Is * d.h * 4), 1);
    }
}
