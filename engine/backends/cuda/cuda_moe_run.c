/* cuda_moe_run.c: the forward and backward of a MoE layer's ops on the cuda backend (cuda_moe.h;
 * the dimensions, assignment and plans are cuda_moe.c's). What each op enqueues is what the cpu
 * backend's cpu_moe.c / cpu_moe_bwd.c compute, op for op:
 *   forward:  router = logits GEMM + ck_moe_topk; permute = ck_moe_route_index + ck_moe_permute;
 *             expert gate/up/down = one GEMM per local expert with rows; expert act = the
 *             gated SiLU or GELU over all received rows; unpermute = the weighted gather into x;
 *             shared gate/up = a GEMM over all T rows, shared act, shared down added into x.
 *   backward: unpermute -> d out and d weights; expert down -> d act, dW; act -> d gate, d up;
 *             expert up (writes d rows) then gate (adds); permute -> d yn (a gather per token);
 *             router -> d logits through the top-k, then d yn += and dW_r; the shared experts
 *             as a dense gated MLP (up writes d yn, gate adds).
 * The weight gradients accumulate (beta 1) into fp32, as the dense projections' do; the input
 * gradient of the layer (d yn) is written by permute's backward over the shared experts' (the
 * cpu's choice, cpu_moe_bwd.c says why). */
#include "engine/backends/cuda/cuda_moe.h"

#include <stdio.h>

#include "engine/backends/cuda/cuda_kernels.h"
#include "engine/backends/cuda/cuda_kernels_dense.h"
#include "engine/backends/cuda/cuda_kernels_moe.h"

static char *at(void *base, int64_t elems, int64_t esize)
{
    return (char *)base + elems * esize;
}

/* One grouped projection [in -> out] over the local experts: forward y = x w_e^T, or the
 * backward's dgrad dx (= or += with beta) dy w_e and wgrad dw_e += dy^T x (wgrad 1), each
 * expert with rows on its slices. */
typedef struct {
    const void *x, *w, *dy;
    void *y, *dx, *dw;
    int64_t in, out;
    int fwd_kind;          /* CUDA_MOE_GU or CUDA_MOE_D: the dgrad and wgrad plans follow it */
    float dx_beta;
} grouped;

static int run_grouped(pdbx_compute *c, const grouped *g, int bwd, char *err, size_t errlen)
{
    const struct cuda_point *pt = c->point;
    const struct cuda_moe *mo = pt->moe;
    const int64_t es = c->dtype == PDBX_DTYPE_FP32 ? 4 : 2;
    const int gu = g->fwd_kind == CUDA_MOE_GU;
    const int dg = gu ? CUDA_MOE_GU_DG : CUDA_MOE_D_DG, wg = gu ? CUDA_MOE_GU_WG : CUDA_MOE_D_WG;
    for (int64_t e = 0; e < pt->d.moe.El; e++) {
        const int64_t r0 = mo->eoff[e];
        cuda_gemm_plan *const *p = &mo->xplan[e * CUDA_MOE_XPLANS];
        if (mo->eoff[e + 1] == r0)
            continue;
        const void *w = at((void *)g->w, e * g->out * g->in, es);
        int rc;
        if (!bwd) {
            rc = cuda_gemm_exec(c->gemm, p[g->fwd_kind], 1.0f, w, at((void *)g->x, r0 * g->in, es),
                                at(g->y, r0 * g->out, es), c->stream, err, errlen);
        } else {
            const void *dy = at((void *)g->dy, r0 * g->out, es);
            rc = cuda_gemm_exec_beta(c->gemm, p[dg], 1.0f, g->dx_beta, w, dy, at(g->dx, r0 * g->in, es), c->stream,
                                     err, errlen);
            if (rc == 0)
                rc = cuda_gemm_exec_beta(c->gemm, p[wg], 1.0f, 1.0f, at((void *)g->x, r0 * g->in, es), dy,
                                         at(g->dw, e * g->out * g->in, 4), c->stream, err, errlen);
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* The gated activation (the model's: SiLU or GELU x up) over n elements, or its backward. */
static int gated_act(pdbx_compute *c, const void *gate, const void *up, void *act, const void *dact, void *dgate,
                     void *dup, int64_t n, int bwd, char *err, size_t errlen)
{
    int rc = -1;
    const pdbx_activation a = c->point->d.act;
    const ck_gelu_kind kind = a == PDBX_ACT_GELU_TANH ? CK_GELU_TANH : CK_GELU_ERF;
    if (a == PDBX_ACT_SILU && !bwd)
        CU_TRY("ck_silu_mul", ck_silu_mul(gate, up, act, n, c->dtype, c->stream));
    else if (a == PDBX_ACT_SILU)
        CU_TRY("ck_silu_mul_bwd", ck_silu_mul_bwd(gate, up, dact, dgate, dup, n, c->dtype, c->stream));
    else if (!bwd)
        CU_TRY("ck_gelu_mul", ck_gelu_mul(gate, up, act, n, kind, c->dtype, c->stream));
    else
        CU_TRY("ck_gelu_mul_bwd", ck_gelu_mul_bwd(gate, up, dact, dgate, dup, n, kind, c->dtype, c->stream));
    return 0;
fail:
    return rc;
}

/* A dense projection's backward on a fixed plan pair: dx (= or +=) dy w, dw += dy^T x. */
static int dense_bwd(pdbx_compute *c, int dg, int wg, const void *x, const void *w, const void *dy, void *dx,
                     float dx_beta, void *dw, char *err, size_t errlen)
{
    cuda_gemm_plan *const *f = c->point->moe->fixed;
    int rc = cuda_gemm_exec_beta(c->gemm, f[dg], 1.0f, dx_beta, w, dy, dx, c->stream, err, errlen);
    if (rc == 0)
        rc = cuda_gemm_exec_beta(c->gemm, f[wg], 1.0f, 1.0f, x, dy, dw, c->stream, err, errlen);
    return rc;
}

static grouped expert_op(const struct cuda_point *pt, pdbx_op op, void **W)
{
    void *const *B = pt->buf, *const *G = pt->grad;
    const int64_t h = pt->d.hidden, I = pt->d.moe.Ie;
    switch (op) {
    case PDBX_OP_MOE_EXPERT_GATE:   /* the backward's second: adds its dgrad into d rows */
        return (grouped){B[B_MOE_ROWS], W[W_MOE_GATE], G[G_MOE_GATE], B[B_MOE_GATE], G[G_MOE_ROWS],
                         G[G_MOE_WGU], h, I, CUDA_MOE_GU, 1.0f};
    case PDBX_OP_MOE_EXPERT_UP:     /* the backward's first: writes d rows */
        return (grouped){B[B_MOE_ROWS], W[W_MOE_UP], G[G_MOE_UP], B[B_MOE_UP], G[G_MOE_ROWS], G[G_MOE_WGU], h,
                         I, CUDA_MOE_GU, 0.0f};
    default:
        return (grouped){B[B_MOE_ACT], W[W_MOE_DOWN], G[G_MOE_OUT], B[B_MOE_OUT], G[G_MOE_ACT], G[G_MOE_WD], I,
                         h, CUDA_MOE_D, 0.0f};
    }
}

/* The grouped experts' projections and their activation, forward or backward. */
static int run_expert(pdbx_compute *c, pdbx_op op, void **W, int bwd, char *err, size_t errlen)
{
    const struct cuda_point *pt = c->point;
    void *const *B = pt->buf, *const *G = pt->grad;
    if (op == PDBX_OP_MOE_EXPERT_ACT)
        return gated_act(c, B[B_MOE_GATE], B[B_MOE_UP], bwd ? NULL : B[B_MOE_ACT], bwd ? G[G_MOE_ACT] : NULL,
                         bwd ? G[G_MOE_GATE] : NULL, bwd ? G[G_MOE_UP] : NULL, pt->d.moe.Xr * pt->d.moe.Ie, bwd,
                         err, errlen);
    const grouped g = expert_op(pt, op, W);
    return run_grouped(c, &g, bwd, err, errlen);
}

int cuda_moe_enqueue(pdbx_compute *c, pdbx_op op, void **W, char *err, size_t errlen)
{
    int rc = -1;
    const struct cuda_point *pt = c->point;
    const cuda_moe_dims *m = &pt->d.moe;
    void *const *B = pt->buf;
    cuda_gemm_plan *const *f = pt->moe->fixed;
    const int64_t h = pt->d.hidden, k = m->k;
    switch (op) {
    case PDBX_OP_MOE_ROUTER:
        rc = cuda_gemm_exec(c->gemm, f[CUDA_MOE_R_FWD], 1.0f, W[W_MOE_ROUTER], B[B_XN2], B[B_MOE_LOGITS],
                            c->stream, err, errlen);
        if (rc)
            return rc;
        rc = -1;
        CU_TRY("ck_moe_topk", ck_moe_topk(B[B_MOE_LOGITS], m->R, (int)m->E, (int)k, m->sigmoid, m->norm_topk,
                                          m->scale, B[B_MOE_TOPK_IDX], B[B_MOE_TOPK_W], c->dtype, c->stream));
        return 0;
    case PDBX_OP_MOE_PERMUTE:   /* the counting sort of the assignment, then the row moves */
        CU_TRY("ck_moe_route_index", ck_moe_route_index(B[B_MOE_ASSIGN], m->X, (int)m->E, B[B_MOE_OFFSETS],
                                                        B[B_MOE_POS], c->stream));
        CU_TRY("ck_moe_permute", ck_moe_permute(B[B_XN2], B[B_MOE_POS], m->R, h, (int)k, B[B_MOE_ROWS],
                                                c->dtype, c->stream));
        return 0;
    case PDBX_OP_MOE_EXPERT_GATE: case PDBX_OP_MOE_EXPERT_UP: case PDBX_OP_MOE_EXPERT_ACT:
    case PDBX_OP_MOE_EXPERT_DOWN:
        return run_expert(c, op, W, 0, err, errlen);
    case PDBX_OP_MOE_UNPERMUTE:
        CU_TRY("ck_moe_gather_sum", ck_moe_gather_sum(B[B_MOE_OUT], B[B_MOE_TOPK_W], B[B_MOE_POS], m->R, h, (int)k,
                                                      B[B_X], c->dtype, c->stream));
        return 0;
    case PDBX_OP_MOE_SHARED_GATE: case PDBX_OP_MOE_SHARED_UP: {
        const int gate = op == PDBX_OP_MOE_SHARED_GATE;
        return cuda_gemm_exec(c->gemm, f[CUDA_MOE_S_GU], 1.0f, W[gate ? W_MOE_SH_GATE : W_MOE_SH_UP], B[B_XN2],
                              B[gate ? B_MOE_SH_GATE : B_MOE_SH_UP], c->stream, err, errlen);
    }
    case PDBX_OP_MOE_SHARED_ACT:
        return gated_act(c, B[B_MOE_SH_GATE], B[B_MOE_SH_UP], B[B_MOE_SH_ACT], NULL, NULL, NULL,
                         pt->d.tokens * m->Is, 0, err, errlen);
    case PDBX_OP_MOE_SHARED_DOWN:   /* added into the routed output */
        return cuda_gemm_exec_beta(c->gemm, f[CUDA_MOE_S_D], 1.0f, 1.0f, W[W_MOE_SH_DOWN], B[B_MOE_SH_ACT], B[B_X],
                                   c->stream, err, errlen);
    default:
        return 1;
    }
fail:
    return rc;
}

static int shared_bwd(pdbx_compute *c, pdbx_op op, void **W, char *err, size_t errlen)
{
    const struct cuda_point *pt = c->point;
    void *const *B = pt->buf, *const *G = pt->grad;
    switch (op) {
    case PDBX_OP_MOE_SHARED_DOWN:
        return dense_bwd(c, CUDA_MOE_S_D_DG, CUDA_MOE_S_D_WG, B[B_MOE_SH_ACT], W[W_MOE_SH_DOWN], G[G_X],
                         G[G_MOE_SH_ACT], 0.0f, G[G_MOE_WSH_D], err, errlen);
    case PDBX_OP_MOE_SHARED_ACT:
        return gated_act(c, B[B_MOE_SH_GATE], B[B_MOE_SH_UP], NULL, G[G_MOE_SH_ACT], G[G_MOE_SH_GATE],
                         G[G_MOE_SH_UP], pt->d.tokens * pt->d.moe.Is, 1, err, errlen);
    case PDBX_OP_MOE_SHARED_UP:     /* writes d yn */
        return dense_bwd(c, CUDA_MOE_S_GU_DG, CUDA_MOE_S_GU_WG, B[B_XN2], W[W_MOE_SH_UP], G[G_MOE_SH_UP],
                         G[G_XN2], 0.0f, G[G_MOE_WSH_GU], err, errlen);
    case PDBX_OP_MOE_SHARED_GATE:   /* adds into it */
        return dense_bwd(c, CUDA_MOE_S_GU_DG, CUDA_MOE_S_GU_WG, B[B_XN2], W[W_MOE_SH_GATE], G[G_MOE_SH_GATE],
                         G[G_XN2], 1.0f, G[G_MOE_WSH_GU], err, errlen);
    default:
        return 1;
    }
}

int cuda_moe_bwd_enqueue(pdbx_compute *c, pdbx_op op, void **W, char *err, size_t errlen)
{
    int rc = -1;
    const struct cuda_point *pt = c->point;
    const cuda_moe_dims *m = &pt->d.moe;
    void *const *B = pt->buf, *const *G = pt->grad;
    const int64_t h = pt->d.hidden, k = m->k;
    switch (op) {
    case PDBX_OP_MOE_UNPERMUTE:
        CU_TRY("ck_moe_unpermute_bwd", ck_moe_unpermute_bwd(B[B_MOE_OUT], B[B_MOE_TOPK_W], B[B_MOE_POS], G[G_X],
                                                            m->R, h, (int)k, G[G_MOE_OUT], G[G_MOE_TOPK_W],
                                                            c->dtype, c->stream));
        return 0;
    case PDBX_OP_MOE_EXPERT_GATE: case PDBX_OP_MOE_EXPERT_UP: case PDBX_OP_MOE_EXPERT_ACT:
    case PDBX_OP_MOE_EXPERT_DOWN:
        return run_expert(c, op, W, 1, err, errlen);
    case PDBX_OP_MOE_PERMUTE:
        CU_TRY("ck_moe_gather_sum", ck_moe_gather_sum(G[G_MOE_ROWS], NULL, B[B_MOE_POS], m->R, h, (int)k, G[G_XN2],
                                                      c->dtype, c->stream));
        return 0;
    case PDBX_OP_MOE_ROUTER:   /* the top-k's backward, then the logits GEMM's (d yn +=) */
        CU_TRY("ck_moe_topk_bwd", ck_moe_topk_bwd(B[B_MOE_LOGITS], B[B_MOE_TOPK_IDX], G[G_MOE_TOPK_W], m->R,
                                                  (int)m->E, (int)k, m->sigmoid, m->norm_topk, m->scale,
                                                  G[G_MOE_LOGITS], c->dtype, c->stream));
        return dense_bwd(c, CUDA_MOE_R_DG, CUDA_MOE_R_WG, B[B_XN2], W[W_MOE_ROUTER], G[G_MOE_LOGITS], G[G_XN2],
                         1.0f, G[G_MOE_WROUTER], err, errlen);
    default:
        return shared_bwd(c, op, W, err, errlen);
    }
fail:
    return rc;
}

int cuda_moe_launches(const struct cuda_point *pt, pdbx_op op, pdbx_pass pass)
{
    if (!pt || !pt->moe || !pdbx_op_is_moe(op))
        return 0;
    const int bwd = pass == PDBX_PASS_BWD;
    if (op == PDBX_OP_MOE_EXPERT_GATE || op == PDBX_OP_MOE_EXPERT_UP || op == PDBX_OP_MOE_EXPERT_DOWN) {
        int n = 0;
        for (int64_t e = 0; e < pt->d.moe.El; e++)
            n += pt->moe->eoff[e + 1] > pt->moe->eoff[e];
        return bwd ? 2 * n : n;
    }
    return op == PDBX_OP_MOE_ROUTER ? 2 + bwd : 2;   /* the others: one to three */
}
