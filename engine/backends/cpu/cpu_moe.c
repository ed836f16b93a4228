/* cpu_moe.c: a mixture-of-experts layer on the cpu backend: its buffers' roles, their values,
 * the measured assignment, and the forward of its ops (cpu_internal.h; the kernels are
 * cpu_kernels_moe.h's; docs/engine-layers.md, "Mixture of experts").
 *
 * Data flow of a MoE layer (fp32), in the place of a dense layer's MLP:
 *   moe_router: yn [R, h] -> logits [R, E] -> the router's own top-k ids and weights [R, k]
 *   moe_permute: the assignment -> offsets, pos (the counting sort); yn -> rows [R k, h]
 *   moe_expert_gate/up: rows -> gate, up [R k, I_e] (one GEMM per expert with rows)
 *   moe_expert_act: gate, up -> act;  moe_expert_down: act -> out [R k, h]
 *   moe_unpermute: out, the router's weights -> x [R, h] (the layer's output, as mlp_down's)
 *   moe_shared_gate/up: yn [T, h] -> sg, su [T, I_s];  moe_shared_act: -> sa
 *   moe_shared_down: x += sa W (the shared experts' output added to the routed one)
 * R = ceil(T / TP): with TP > 1 Megatron runs MoE under sequence parallelism, each TP rank
 * routing its share of the rows (plan_shapes_moe.c); the shared experts are a dense MLP split
 * over TP, over all T rows. ep_dispatch and ep_combine are not ops of this backend: they are
 * the engine's all-to-alls on the comm backend (at EP 1 nothing crosses ranks).
 *
 * Expert parallelism (ep > 1): the rank holds E_l = E / ep experts and is the measured EP rank
 * of plan_moe.h (the one holding the busiest expert): permute sorts its own R k copies by
 * global expert, as it would before the dispatch; the expert GEMMs run on the X_r rows its
 * local experts receive (plan_moe.h's counts, per local expert), read from the permuted rows'
 * buffer (the dispatch's destination: it holds max(X, X_r) rows) and written to the output's;
 * unpermute reads its own R k rows back (the combine's destination). The all-to-all's data
 * movement is the engine's timed collective; here the rows are where it would leave them.
 *
 * Why the experts run on an assignment and not on the router's top-k: the router computes real
 * scores and a real top-k from real logits (that is its cost), but random weights route nearly
 * uniformly and differently on every seed; the profile must be reproducible and show the
 * routing the spec states (moe_routing). So permute, the experts and unpermute run on
 * pdbx_moe_assign's map realising plan_moe.h's counts for the measured rank, built once at
 * prepare (not timed: a real router's output costs nothing more to use), with the router's
 * weights. */
#include "engine/backends/cpu/cpu_internal.h"
#include "engine/backends/cpu/cpu_kernels_moe.h"
#include "engine/plan/plan_moe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pdbx_cpu_moe_dims(pdbx_compute *c)
{
    cpu_moe *M = &c->moe;
    const pdbx_model *m = &c->p.model;
    M->R = M->X = M->E = M->k = M->Ie = M->Is = M->ep = M->El = M->Xr = M->M = 0;
    if (m->arch.moe.experts <= 0)
        return;
    M->R = (c->T + c->p.tp - 1) / c->p.tp;
    M->k = m->arch.moe.top_k;
    M->X = M->R * M->k;
    M->E = m->arch.moe.experts;
    M->ep = c->p.ep > 1 ? c->p.ep : 1;
    M->El = M->E / M->ep;
    M->Xr = M->X;
    const pdbx_moe_route r = { M->R, (int)M->k, (int)M->E, (int)M->ep,
                               c->p.moe_imbalance >= 1 ? c->p.moe_imbalance : 1 };
    pdbx_moe_load load;
    char err[160];
    if (pdbx_moe_rank_load(&r, PDBX_MOE_MEASURED_RANK, &load, NULL, NULL, NULL, NULL, err, sizeof err) == 0)
        M->Xr = load.received;   /* (an invalid route fails build_assign with its message) */
    M->M = M->X > M->Xr ? M->X : M->Xr;
    M->Ie = m->arch.moe.expert_intermediate;
    M->Is = pdbx_moe_shared_width(m) / c->p.tp;
    M->router_sigmoid = m->arch.moe.sigmoid;
    M->norm_topk = m->arch.moe.norm_topk;
    M->scale = m->arch.moe.routed_scale > 0 ? (float)m->arch.moe.routed_scale : 1.0f;
    const pdbx_activation a = pdbx_activation_of(m->arch.activation);
    M->act = a == PDBX_ACT_GELU_TANH ? PDBX_MOE_ACT_GELU_TANH : a == PDBX_ACT_GELU_ERF ? PDBX_MOE_ACT_GELU_ERF
                                                                                     : PDBX_MOE_ACT_SILU;
}

/* The per-layer weights of the l-th listed MoE layer: the profiled MoE layers follow the dense
 * ones (pdbx_layer_is_moe). */
static cpu_layer *moe_layer(pdbx_compute *c, int l)
{
    const int first = c->nlayers - pdbx_profiled_moe_layers(&c->p.model, c->nlayers);
    const int at = first + l;
    return &c->layer[at >= 0 && at < MAX_LAYERS ? at : 0];
}

static void **weight_slot(pdbx_compute *c, pdbx_buf_role r, int layer)
{
    cpu_layer *L = moe_layer(c, layer);
    switch (r) {
    case PDBX_BUF_L_ROUTER: return (void **)&L->wr;
    case PDBX_BUF_L_EXPERT_GATE: return (void **)&L->weg;
    case PDBX_BUF_L_EXPERT_UP: return (void **)&L->weu;
    case PDBX_BUF_L_EXPERT_DOWN: return (void **)&L->wed;
    case PDBX_BUF_L_SHARED_GATE: return (void **)&L->wsg;
    case PDBX_BUF_L_SHARED_UP: return (void **)&L->wsu;
    case PDBX_BUF_L_SHARED_DOWN: return (void **)&L->wsd;
    default: return NULL;
    }
}

void **pdbx_cpu_moe_slot(pdbx_compute *c, pdbx_buf_role r, int layer)
{
    cpu_moe *M = &c->moe;
    switch (r) {
    case PDBX_BUF_MOE_LOGITS: return (void **)&M->logits;
    case PDBX_BUF_MOE_TOPK_IDX: return (void **)&M->tidx;
    case PDBX_BUF_MOE_TOPK_W: return (void **)&M->tw;
    case PDBX_BUF_MOE_ASSIGN: return (void **)&M->assign;
    case PDBX_BUF_MOE_OFFSETS: return (void **)&M->offsets;
    case PDBX_BUF_MOE_POS: return (void **)&M->pos;
    case PDBX_BUF_MOE_ROWS: return (void **)&M->rows;
    case PDBX_BUF_MOE_GATE: return (void **)&M->eg;
    case PDBX_BUF_MOE_UP: return (void **)&M->eu;
    case PDBX_BUF_MOE_ACT: return (void **)&M->ea;
    case PDBX_BUF_MOE_OUT: return (void **)&M->eo;
    case PDBX_BUF_MOE_SH_GATE: return (void **)&M->sg;
    case PDBX_BUF_MOE_SH_UP: return (void **)&M->su;
    case PDBX_BUF_MOE_SH_ACT: return (void **)&M->sa;
    case PDBX_BUF_GRAD_MOE_LOGITS: return (void **)&M->dlogits;
    case PDBX_BUF_GRAD_MOE_TOPK_W: return (void **)&M->dtw;
    case PDBX_BUF_GRAD_MOE_ROWS: return (void **)&M->drows;
    case PDBX_BUF_GRAD_MOE_GATE: return (void **)&M->deg;
    case PDBX_BUF_GRAD_MOE_UP: return (void **)&M->deu;
    case PDBX_BUF_GRAD_MOE_ACT: return (void **)&M->dea;
    case PDBX_BUF_GRAD_MOE_OUT: return (void **)&M->deo;
    case PDBX_BUF_GRAD_MOE_SH_GATE: return (void **)&M->dsg;
    case PDBX_BUF_GRAD_MOE_SH_UP: return (void **)&M->dsu;
    case PDBX_BUF_GRAD_MOE_SH_ACT: return (void **)&M->dsa;
    case PDBX_BUF_GRAD_W_ROUTER: return (void **)&M->dwr;
    case PDBX_BUF_GRAD_W_EXPERT_GATE_UP: return (void **)&M->dwe_gu;
    case PDBX_BUF_GRAD_W_EXPERT_DOWN: return (void **)&M->dwe_d;
    case PDBX_BUF_GRAD_W_SHARED_GATE_UP: return (void **)&M->dws_gu;
    case PDBX_BUF_GRAD_W_SHARED_DOWN: return (void **)&M->dws_d;
    default: return weight_slot(c, r, layer);
    }
}

void pdbx_cpu_moe_release(pdbx_compute *c)
{
    cpu_moe *M = &c->moe;
    const cpu_moe keep = *M;
    memset(M, 0, sizeof *M);   /* the buffers are freed with the point's others */
    M->R = keep.R;
    M->X = keep.X;
    M->E = keep.E;
    M->k = keep.k;
    M->Ie = keep.Ie;
    M->Is = keep.Is;
    M->ep = keep.ep;
    M->El = keep.El;
    M->Xr = keep.Xr;
    M->M = keep.M;
}

/* The measured assignment: plan_moe.h's load of the measured rank at the spec's imbalance and
 * EP: its own copies per global expert (own[E]), realised by pdbx_moe_assign, and its local
 * experts' received rows (counts[El]); the permute's offsets and positions from the assignment,
 * the local experts' offsets from the counts, so the backward of permute, the experts and
 * unpermute finds them valid before any forward ran. */
static int build_assign(pdbx_compute *c, char *err, size_t errlen)
{
    cpu_moe *M = &c->moe;
    const double f = c->p.moe_imbalance >= 1 ? c->p.moe_imbalance : 1;
    const pdbx_moe_route r = { M->R, (int)M->k, (int)M->E, (int)M->ep, f };
    /* E + El int64: transient, freed here */
    int64_t *own = malloc((size_t)(M->E + M->El) * sizeof *own);
    if (!own) {
        snprintf(err, errlen, "cpu backend: moe assignment: out of memory");
        return PDBX_EOOM;
    }
    int64_t *counts = own + M->E;
    pdbx_moe_load load;
    int rc = pdbx_moe_rank_load(&r, PDBX_MOE_MEASURED_RANK, &load, counts, NULL, NULL, own, err, errlen);
    if (rc == 0 && load.received != M->Xr) {
        snprintf(err, errlen, "cpu backend: moe: %lld received rows, %lld sized", (long long)load.received,
                 (long long)M->Xr);
        rc = -1;
    }
    if (rc == 0)
        rc = pdbx_moe_assign(M->R, (int)M->k, (int)M->E, own, M->assign, err, errlen);
    if (rc == 0) {
        pdbx_k_moe_route_index(M->assign, M->R, (int)M->k, (int)M->E, M->offsets, M->pos);
        M->eoff = M->ep > 1 ? M->offsets + M->E + 1 : M->offsets;
        if (M->ep > 1) {
            M->eoff[0] = 0;
            for (int64_t e = 0; e < M->El; e++)
                M->eoff[e + 1] = M->eoff[e] + counts[e];
        }
        memcpy(M->tidx, M->assign, (size_t)M->X * sizeof *M->tidx);   /* valid ids until the router runs */
    }
    free(own);
    return rc != 0 ? -1 : 0;
}

/* Weights scaled 1/sqrt(fan_in), as cpu_memory.c's, so activations stay O(1). */
static void fill_weights(pdbx_compute *c, uint64_t seed)
{
    cpu_moe *M = &c->moe;
    const size_t h = (size_t)c->h, E = (size_t)M->E, El = (size_t)M->El, Ie = (size_t)M->Ie, Is = (size_t)M->Is;
    const float sh = 1.0f / sqrtf((float)h), se = 1.0f / sqrtf((float)Ie);
    const float ss = Is ? 1.0f / sqrtf((float)Is) : 1.0f;
    for (int l = 0; l < c->nlayers; l++) {
        cpu_layer *L = &c->layer[l];
        pdbx_cpu_fill_f32(c, L->wr, h * E, sh, seed++);
        pdbx_cpu_fill_f32(c, L->weg, El * h * Ie, sh, seed++);
        pdbx_cpu_fill_f32(c, L->weu, El * h * Ie, sh, seed++);
        pdbx_cpu_fill_f32(c, L->wed, El * Ie * h, se, seed++);
        pdbx_cpu_fill_f32(c, L->wsg, h * Is, sh, seed++);
        pdbx_cpu_fill_f32(c, L->wsu, h * Is, sh, seed++);
        pdbx_cpu_fill_f32(c, L->wsd, Is * h, ss, seed++);
    }
}

int pdbx_cpu_moe_fill(pdbx_compute *c, int new_weights, uint64_t seed, char *err, size_t errlen)
{
    cpu_moe *M = &c->moe;
    if (!M->rows)
        return 0;   /* no MoE layer in this point */
    const size_t R = (size_t)M->R, X = (size_t)M->X, T = (size_t)c->T, h = (size_t)c->h;
    const size_t E = (size_t)M->E, El = (size_t)M->El, Ie = (size_t)M->Ie, Is = (size_t)M->Is;
    const size_t Xr = (size_t)M->Xr, Mr = (size_t)M->M;
    const struct { float *p; size_t n; } act[] = {
        { M->logits, R * E }, { M->tw, X }, { M->rows, Mr * h }, { M->eg, Xr * Ie }, { M->eu, Xr * Ie },
        { M->ea, Xr * Ie }, { M->eo, Mr * h }, { M->sg, T * Is }, { M->su, T * Is }, { M->sa, T * Is },
        /* gradients: O(1) values, as cpu_backward.c's */
        { M->dlogits, R * E }, { M->dtw, X }, { M->drows, Mr * h }, { M->deg, Xr * Ie }, { M->deu, Xr * Ie },
        { M->dea, Xr * Ie }, { M->deo, Mr * h }, { M->dsg, T * Is }, { M->dsu, T * Is }, { M->dsa, T * Is },
    };
    for (size_t i = 0; i < sizeof act / sizeof act[0]; i++)
        pdbx_cpu_fill_f32(c, act[i].p, act[i].n, 1.0f, seed++);
    /* weight gradients start from zero, as main_grad at the start of a step */
    pdbx_cpu_fill_zero(c, M->dwr, h * E * 4);
    pdbx_cpu_fill_zero(c, M->dwe_gu, El * h * Ie * 4);
    pdbx_cpu_fill_zero(c, M->dwe_d, El * Ie * h * 4);
    pdbx_cpu_fill_zero(c, M->dws_gu, h * Is * 4);
    pdbx_cpu_fill_zero(c, M->dws_d, Is * h * 4);
    int rc = build_assign(c, err, errlen);
    if (rc != 0)
        return rc;
    if (new_weights)
        fill_weights(c, seed + 32);
    return 0;
}

/* y[m, n] (=, or += with beta 1) x[m, k] w[k, n]: the shared experts' dense projections. */
static void sgemm(const float *x, const float *w, float *y, int64_t m, int64_t n, int64_t k, float beta)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)n, (blasint)k, 1.0f, x,
                (blasint)k, w, (blasint)n, beta, y, (blasint)n);
}

int pdbx_cpu_moe_fwd(pdbx_compute *c, pdbx_op op, int layer)
{
    cpu_moe *M = &c->moe;
    const cpu_layer *L = &c->layer[layer >= 0 && layer < MAX_LAYERS ? layer : 0];
    const int E = (int)M->E, k = (int)M->k;
    const pdbx_moe_router_cfg rc = { M->router_sigmoid ? PDBX_MOE_SCORE_SIGMOID : PDBX_MOE_SCORE_SOFTMAX,
                                     M->norm_topk, M->scale, NULL };
    switch (op) {
    case PDBX_OP_MOE_ROUTER:
        pdbx_k_moe_router_logits(c->yn, L->wr, M->R, c->h, E, M->logits);
        pdbx_k_moe_topk(c->pool, M->logits, M->R, E, k, &rc, M->tidx, M->tw);
        return 0;
    case PDBX_OP_MOE_PERMUTE:   /* the counting sort of the assignment, then the row moves */
        pdbx_k_moe_route_index(M->assign, M->R, k, E, M->offsets, M->pos);
        pdbx_k_moe_permute(c->pool, c->yn, M->pos, M->R, c->h, k, M->rows);
        return 0;
    /* the local experts on their received rows (eoff, El: the permute's own at EP 1) */
    case PDBX_OP_MOE_EXPERT_GATE:
        pdbx_k_moe_expert_gate(M->rows, L->weg, M->eoff, (int)M->El, c->h, M->Ie, M->eg);
        return 0;
    case PDBX_OP_MOE_EXPERT_UP:
        pdbx_k_moe_expert_up(M->rows, L->weu, M->eoff, (int)M->El, c->h, M->Ie, M->eu);
        return 0;
    case PDBX_OP_MOE_EXPERT_ACT:
        pdbx_k_moe_expert_act(c->pool, M->eg, M->eu, M->Xr, M->Ie, (pdbx_moe_act)M->act, M->ea);
        return 0;
    case PDBX_OP_MOE_EXPERT_DOWN:
        pdbx_k_moe_expert_down(M->ea, L->wed, M->eoff, (int)M->El, M->Ie, c->h, M->eo);
        return 0;
    case PDBX_OP_MOE_UNPERMUTE:
        pdbx_k_moe_unpermute(c->pool, M->eo, M->tw, M->pos, M->R, c->h, k, c->x);
        return 0;
    case PDBX_OP_MOE_SHARED_GATE:
        sgemm(c->yn, L->wsg, M->sg, c->T, M->Is, c->h, 0.0f);
        return 0;
    case PDBX_OP_MOE_SHARED_UP:
        sgemm(c->yn, L->wsu, M->su, c->T, M->Is, c->h, 0.0f);
        return 0;
    case PDBX_OP_MOE_SHARED_ACT:   /* element-wise: the experts' kernel over the shared rows */
        pdbx_k_moe_expert_act(c->pool, M->sg, M->su, c->T, M->Is, (pdbx_moe_act)M->act, M->sa);
        return 0;
    case PDBX_OP_MOE_SHARED_DOWN:
        sgemm(M->sa, L->wsd, c->x, c->T, c->h, M->Is, 1.0f);
        return 0;
    default:
        return 1;
    }
}
