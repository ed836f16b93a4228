/* cpu_moe_bwd.c: the backward of a MoE layer's ops on the cpu backend (cpu_internal.h; the
 * forward and the buffers are cpu_moe.c's). The data flow is the forward's reversed:
 *   moe_shared_down: dx -> d sa, d W_sd;  moe_shared_act: -> d sg, d su
 *   moe_shared_up / gate: -> d yn (up writes, gate adds), d W_s gate/up (one shared gradient)
 *   moe_unpermute: dx [R, h] -> d out [R k, h] and the router weights' gradient d w [R, k]
 *   moe_expert_down: -> d act, d W_ed;  moe_expert_act: -> d gate, d up
 *   moe_expert_up / gate: -> d rows (up writes, gate adds), d W_e gate/up (one shared gradient)
 *   moe_permute: d rows -> d yn [R, h] (a gather per token)
 *   moe_router: d w -> d logits (through the top-k's normalisation and the scores) -> d yn +=,
 *               d W_r
 * Each op's backward is what Megatron/PyTorch run for it. The input gradient d yn is the sum of
 * the routed path's (permute, router) and the shared experts' in a real model; here permute's
 * gather overwrites the rows the shared experts' dgrad wrote (the kernel has no accumulate
 * form): the same reads and writes but one add of [R, h] per step, which no op times. */
#include "engine/backends/cpu/cpu_internal.h"
#include "engine/backends/cpu/cpu_kernels_moe.h"

/* The backward of Y[m,n] = X[m,k] W[k,n] (fp32): dX (= or += with dx_beta 1) dY W^T, dW += X^T dY. */
static void dense_bwd(const float *x, const float *w, const float *dy, float *dx, float dx_beta, float *dw,
                      int64_t m, int64_t n, int64_t k)
{
    const blasint M = (blasint)m, N = (blasint)n, K = (blasint)k;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, K, N, 1.0f, dy, N, w, N, dx_beta, dx, K);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, N, M, 1.0f, x, K, dy, N, 1.0f, dw, N);
}

/* The shared experts' ops: a dense gated MLP over all T rows (1 when op is not one of them). */
static int shared_bwd(pdbx_compute *c, pdbx_op op, const cpu_layer *L)
{
    cpu_moe *M = &c->moe;
    float *dyn = c->grad.dyn;
    switch (op) {
    case PDBX_OP_MOE_SHARED_DOWN:
        dense_bwd(M->sa, L->wsd, c->grad.dx, M->dsa, 0.0f, M->dws_d, c->T, c->h, M->Is);
        return 0;
    case PDBX_OP_MOE_SHARED_ACT:
        pdbx_k_moe_expert_act_bwd(c->pool, M->sg, M->su, M->dsa, c->T, M->Is, (pdbx_moe_act)M->act, M->dsg,
                                  M->dsu);
        return 0;
    case PDBX_OP_MOE_SHARED_UP:
        dense_bwd(c->yn, L->wsu, M->dsu, dyn, 0.0f, M->dws_gu, c->T, M->Is, c->h);
        return 0;
    case PDBX_OP_MOE_SHARED_GATE:
        dense_bwd(c->yn, L->wsg, M->dsg, dyn, 1.0f, M->dws_gu, c->T, M->Is, c->h);
        return 0;
    default:
        return 1;
    }
}

int pdbx_cpu_moe_bwd(pdbx_compute *c, pdbx_op op, int layer)
{
    cpu_moe *M = &c->moe;
    const cpu_layer *L = &c->layer[layer >= 0 && layer < MAX_LAYERS ? layer : 0];
    const int E = (int)M->E, El = (int)M->El, k = (int)M->k;
    const pdbx_moe_router_cfg rc = { M->router_sigmoid ? PDBX_MOE_SCORE_SIGMOID : PDBX_MOE_SCORE_SOFTMAX,
                                     M->norm_topk, M->scale, NULL };
    switch (op) {
    case PDBX_OP_MOE_UNPERMUTE:
        pdbx_k_moe_unpermute_bwd(c->pool, M->eo, M->tw, M->pos, c->grad.dx, M->R, c->h, k, M->deo, M->dtw);
        return 0;
    /* the local experts on their received rows (cpu_moe.c: eoff, El) */
    case PDBX_OP_MOE_EXPERT_DOWN:
        pdbx_k_moe_expert_down_bwd(M->ea, L->wed, M->deo, M->eoff, El, M->Ie, c->h, M->dea, M->dwe_d);
        return 0;
    case PDBX_OP_MOE_EXPERT_ACT:
        pdbx_k_moe_expert_act_bwd(c->pool, M->eg, M->eu, M->dea, M->Xr, M->Ie, (pdbx_moe_act)M->act, M->deg,
                                  M->deu);
        return 0;
    case PDBX_OP_MOE_EXPERT_UP:   /* runs first in the backward: writes d rows */
        pdbx_k_moe_expert_up_bwd(M->rows, L->weu, M->deu, M->eoff, El, c->h, M->Ie, M->drows, 0, M->dwe_gu);
        return 0;
    case PDBX_OP_MOE_EXPERT_GATE:  /* then adds its dgrad */
        pdbx_k_moe_expert_gate_bwd(M->rows, L->weg, M->deg, M->eoff, El, c->h, M->Ie, M->drows, 1, M->dwe_gu);
        return 0;
    case PDBX_OP_MOE_PERMUTE:
        pdbx_k_moe_permute_bwd(c->pool, M->drows, M->pos, M->R, c->h, k, c->grad.dyn);
        return 0;
    case PDBX_OP_MOE_ROUTER:      /* the top-k's backward, then the logits GEMM's (d yn +=) */
        pdbx_k_moe_topk_bwd(c->pool, M->logits, M->tidx, M->dtw, M->R, E, k, &rc, M->dlogits);
        pdbx_k_moe_router_logits_bwd(c->yn, L->wr, M->dlogits, M->R, c->h, E, c->grad.dyn, 1, M->dwr);
        return 0;
    default:
        return shared_bwd(c, op, L);
    }
}
