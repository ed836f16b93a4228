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

/* ---- the cuda backend's MoE buffers --------------------------------------------------------
 * engine/backends/cuda/cuda_bufs.c's B_MOE_*, W_MOE_* and G_MOE_* (tests/cuda/test_cuda_dense_point.c
 * holds the two equal on the host): each allocated where an op that reads or writes it is
 * prepared, exact bytes (cudaMalloc, no cache-line rounding); activations and weights in the
 * dtype, the routing weights and every weight gradient fp32, the ids int32, the offsets
 * (E + 1: the local experts' are kept on the host) and positions int64. The assignment and its
 * index serve permute and unpermute both (either alone computes the index at prepare). The
 * weights are per layer in each of the L2 rotation's weight sets, on every profiled layer as the
 * dense MLP's are on this backend (a mixed model's dense layers hold them too). */
#define OPB(o) PDBX_OP_BIT(PDBX_OP_MOE_##o)
#define ANY(mask) ((p->ops & (mask)) != 0)

double plan_mem_cuda_moe_layer_bytes(const pdbx_profile_point *p, double es)
{
    moe_dims d;
    if (!moe_dims_of(p, &d))
        return 0;
    const double ex = d.El * d.Ie * d.h, sh = d.Is * d.h;
    return es * (ANY(OPB(ROUTER)) * d.E * d.h + (ANY(OPB(EXPERT_GATE)) + ANY(OPB(EXPERT_UP)) +
                 ANY(OPB(EXPERT_DOWN))) * ex + (d.Is > 0) * (ANY(OPB(SHARED_GATE)) + ANY(OPB(SHARED_UP)) +
                 ANY(OPB(SHARED_DOWN))) * sh);
}

/* A row of the lists below: the role, the ops that use it, its bytes (0: none at this point). */
typedef struct {
    pdbx_buf_role role;
    pdbx_opmask ops;
    double bytes;
} cuda_moe_buf;

static void add_used(const pdbx_profile_point *p, const cuda_moe_buf *b, size_t n, pdbx_mem_kind kind, int count,
                     pdbx_profile_memory *out)
{
    for (size_t i = 0; i < n; i++)
        if (ANY(b[i].ops) && b[i].bytes > 0)
            plan_mem_add(out, b[i].role, kind, b[i].bytes, count);
}

void plan_mem_cuda_moe_list(const pdbx_profile_point *p, int sets, pdbx_profile_memory *out)
{
    moe_dims d;
    if (!moe_dims_of(p, &d))
        return;
    const double es = p->dtype == PDBX_DTYPE_FP32 ? 4 : 2, ex = d.El * d.Ie * d.h * es, sh = d.Is * d.h * es;
    const pdbx_opmask route = OPB(PERMUTE) | OPB(UNPERMUTE);
    const double act = d.Xr * d.Ie * es, sa = d.T * d.Is * es;
    const cuda_moe_buf a[] = {
        {PDBX_BUF_MOE_LOGITS, OPB(ROUTER), d.R * d.E * es}, {PDBX_BUF_MOE_TOPK_IDX, OPB(ROUTER), d.X * 4},
        {PDBX_BUF_MOE_TOPK_W, OPB(ROUTER) | OPB(UNPERMUTE), d.X * 4}, {PDBX_BUF_MOE_ASSIGN, route, d.X * 4},
        {PDBX_BUF_MOE_OFFSETS, route, (d.E + 1) * 8}, {PDBX_BUF_MOE_POS, route, d.X * 8},
        {PDBX_BUF_MOE_ROWS, OPB(PERMUTE) | OPB(EXPERT_GATE) | OPB(EXPERT_UP), d.M * d.h * es},
        {PDBX_BUF_MOE_GATE, OPB(EXPERT_GATE) | OPB(EXPERT_ACT), act},
        {PDBX_BUF_MOE_UP, OPB(EXPERT_UP) | OPB(EXPERT_ACT), act},
        {PDBX_BUF_MOE_ACT, OPB(EXPERT_ACT) | OPB(EXPERT_DOWN), act},
        {PDBX_BUF_MOE_OUT, OPB(EXPERT_DOWN) | OPB(UNPERMUTE), d.M * d.h * es},
        {PDBX_BUF_MOE_SH_GATE, OPB(SHARED_GATE) | OPB(SHARED_ACT), sa},
        {PDBX_BUF_MOE_SH_UP, OPB(SHARED_UP) | OPB(SHARED_ACT), sa},
        {PDBX_BUF_MOE_SH_ACT, OPB(SHARED_ACT) | OPB(SHARED_DOWN), sa},
    };
    const cuda_moe_buf w[] = {
        {PDBX_BUF_L_ROUTER, OPB(ROUTER), d.E * d.h * es}, {PDBX_BUF_L_EXPERT_GATE, OPB(EXPERT_GATE), ex},
        {PDBX_BUF_L_EXPERT_UP, OPB(EXPERT_UP), ex}, {PDBX_BUF_L_EXPERT_DOWN, OPB(EXPERT_DOWN), ex},
        {PDBX_BUF_L_SHARED_GATE, OPB(SHARED_GATE), sh}, {PDBX_BUF_L_SHARED_UP, OPB(SHARED_UP), sh},
        {PDBX_BUF_L_SHARED_DOWN, OPB(SHARED_DOWN), sh},
    };
    add_used(p, a, sizeof a / sizeof a[0], PDBX_MEM_ACTIVATIONS, 1, out);
    add_used(p, w, sizeof w / sizeof w[0], PDBX_MEM_WEIGHTS, sets, out);
}

void plan_mem_cuda_moe_grad_list(const pdbx_profile_point *p, pdbx_profile_memory *out)
{
    moe_dims d;
    if (!(p->passes & PDBX_PASS_BIT(PDBX_PASS_BWD)) || !moe_dims_of(p, &d))
        return;
    const double es = p->dtype == PDBX_DTYPE_FP32 ? 4 : 2, ex = d.El * d.Ie * d.h * 4, sh = d.Is * d.h * 4;
    const double act = d.Xr * d.Ie * es, sa = d.T * d.Is * es;
    const cuda_moe_buf g[] = {
        {PDBX_BUF_GRAD_MOE_LOGITS, OPB(ROUTER), d.R * d.E * es},
        {PDBX_BUF_GRAD_MOE_TOPK_W, OPB(ROUTER) | OPB(UNPERMUTE), d.X * 4},
        {PDBX_BUF_GRAD_MOE_ROWS, OPB(PERMUTE) | OPB(EXPERT_GATE) | OPB(EXPERT_UP), d.M * d.h * es},
        {PDBX_BUF_GRAD_MOE_GATE, OPB(EXPERT_GATE) | OPB(EXPERT_ACT), act},
        {PDBX_BUF_GRAD_MOE_UP, OPB(EXPERT_UP) | OPB(EXPERT_ACT), act},
        {PDBX_BUF_GRAD_MOE_ACT, OPB(EXPERT_ACT) | OPB(EXPERT_DOWN), act},
        {PDBX_BUF_GRAD_MOE_OUT, OPB(EXPERT_DOWN) | OPB(UNPERMUTE), d.M * d.h * es},
        {PDBX_BUF_GRAD_MOE_SH_GATE, OPB(SHARED_GATE) | OPB(SHARED_ACT), sa},
        {PDBX_BUF_GRAD_MOE_SH_UP, OPB(SHARED_UP) | OPB(SHARED_ACT), sa},
        {PDBX_BUF_GRAD_MOE_SH_ACT, OPB(SHARED_ACT) | OPB(SHARED_DOWN), sa},
        {PDBX_BUF_GRAD_W_ROUTER, OPB(ROUTER), d.E * d.h * 4},
        {PDBX_BUF_GRAD_W_EXPERT_GATE_UP, OPB(EXPERT_GATE) | OPB(EXPERT_UP), ex},
        {PDBX_BUF_GRAD_W_EXPERT_DOWN, OPB(EXPERT_DOWN), ex},
        {PDBX_BUF_GRAD_W_SHARED_GATE_UP, OPB(SHARED_GATE) | OPB(SHARED_UP), sh},
        {PDBX_BUF_GRAD_W_SHARED_DOWN, OPB(SHARED_DOWN), sh},
    };
    add_used(p, g, sizeof g / sizeof g[0], PDBX_MEM_GRADS, 1, out);
}
