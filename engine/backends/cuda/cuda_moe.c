/* cuda_moe.c: a mixture-of-experts layer on the cuda backend (cuda_moe.h): its dimensions, the
 * measured assignment, the GEMM plans, and the forward and backward of its ops. The kernels are
 * cuda_kernels_moe.h's, the GEMMs cuda_gemm.h's, the activation the dense MLP's kernels.
 *
 * The grouped GEMMs: one cuBLASLt GEMM per local expert with rows, on the slice of the rows
 * (and of the output) its offsets give, with its own plan: a slice starts at a row offset, so
 * its alignment can be less than cudaMalloc's 256 bytes, and each plan is built for the
 * alignment of its slices (ck_moe_align). The counts are fixed at prepare (the assignment is),
 * so no plan is looked up, and nothing is copied back from the device, while a step is timed.
 */
#include "engine/backends/cuda/cuda_moe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cuda/cuda_kernels.h"
#include "engine/backends/cuda/cuda_kernels_dense.h"
#include "engine/backends/cuda/cuda_kernels_moe.h"
#include "engine/plan/plan_moe.h"

/* ---- dimensions ------------------------------------------------------------------------- */

int cuda_moe_dims_of(const pdbx_point_shapes *p, cuda_moe_dims *m, char *err, size_t errlen)
{
    const pdbx_model *md = &p->model;
    const pdbx_arch *a = &md->arch;
    memset(m, 0, sizeof *m);
    if (a->moe.experts <= 0)
        return 0;
    const int64_t T = (int64_t)p->mbs * p->seq_len;
    m->R = (T + p->tp - 1) / p->tp;
    m->k = a->moe.top_k;
    m->X = m->R * m->k;
    m->E = a->moe.experts;
    m->ep = p->ep > 1 ? p->ep : 1;
    m->El = m->E / m->ep;
    m->Ie = a->moe.expert_intermediate;
    const int sw = a->moe.shared_experts <= 0 ? 0
                   : a->moe.shared_expert_intermediate > 0 ? a->moe.shared_expert_intermediate
                                                           : a->moe.shared_experts * a->moe.expert_intermediate;
    m->Is = sw / p->tp;   /* plan_moe_shared_width's, split over TP */
    m->sigmoid = a->moe.sigmoid != 0;
    m->norm_topk = a->moe.norm_topk != 0;
    m->scale = a->moe.routed_scale > 0 ? (float)a->moe.routed_scale : 1.0f;
    m->imbalance = p->moe_imbalance >= 1 ? p->moe_imbalance : 1;
    const pdbx_moe_route r = {m->R, (int)m->k, (int)m->E, m->ep, m->imbalance};
    pdbx_moe_load load;
    char why[160];
    if (pdbx_moe_rank_load(&r, PDBX_MOE_MEASURED_RANK, &load, NULL, NULL, NULL, NULL, why, sizeof why) != 0) {
        snprintf(err, errlen, "cuda prepare: model '%s': %s", md->name, why);
        return -1;
    }
    m->Xr = load.received;
    m->M = m->X > m->Xr ? m->X : m->Xr;
    if (m->Ie <= 0 || m->k > CK_MOE_MAX_TOPK || m->X > INT32_MAX || ck_moe_route_warps((int)m->E) < 1) {
        snprintf(err, errlen, "cuda prepare: model '%s': moe expert width %lld, top_k %lld, %lld routed copies, "
                 "%lld experts (allowed: width >= 1, top_k <= %d, copies <= 2^31 - 1, experts <= 12288)",
                 md->name, (long long)m->Ie, (long long)m->k, (long long)m->X, (long long)m->E, CK_MOE_MAX_TOPK);
        return -1;
    }
    const pdbx_op_shape *s = &p->shape[PDBX_OP_MOE_ROUTER];
    if ((p->ops & PDBX_OP_BIT(PDBX_OP_MOE_ROUTER)) && s->m && (s->m != m->R || s->n != m->E || s->k != md->hidden)) {
        snprintf(err, errlen, "cuda prepare: moe_router shape m,n,k = %lld,%lld,%lld from the plan, but the model "
                 "at tp %d gives %lld,%lld,%d", (long long)s->m, (long long)s->n, (long long)s->k, p->tp,
                 (long long)m->R, (long long)m->E, md->hidden);
        return -1;
    }
    return 0;
}

/* ---- prepare ------------------------------------------------------------------------------ */

/* The measured rank's assignment (plan_moe.h) uploaded into the assignment and, until the router
 * runs, the top-k ids; its index computed on the device; the local experts' offsets into eoff. */
static int upload_assignment(pdbx_compute *c, struct cuda_point *pt, int64_t *eoff, char *err, size_t errlen)
{
    const cuda_moe_dims *m = &pt->d.moe;
    int rc = -1;
    int64_t *own = malloc((size_t)(m->E + m->El) * sizeof *own);
    int32_t *assign = malloc((size_t)m->X * sizeof *assign);
    if (!own || !assign) {
        snprintf(err, errlen, "cuda prepare: moe assignment: out of host memory");
        goto fail;
    }
    int64_t *counts = own + m->E;
    const pdbx_moe_route r = {m->R, (int)m->k, (int)m->E, m->ep, m->imbalance};
    pdbx_moe_load load;
    if (pdbx_moe_rank_load(&r, PDBX_MOE_MEASURED_RANK, &load, counts, NULL, NULL, own, err, errlen) != 0 ||
        pdbx_moe_assign(m->R, (int)m->k, (int)m->E, own, assign, err, errlen) != 0)
        goto fail;
    eoff[0] = 0;
    for (int64_t e = 0; e < m->El; e++)
        eoff[e + 1] = eoff[e] + counts[e];
    const size_t bytes = (size_t)m->X * sizeof *assign;
    void *const *B = pt->buf;
    if (B[B_MOE_ASSIGN])
        CU_TRY("cudaMemcpyAsync(moe assignment)", cudaMemcpyAsync(B[B_MOE_ASSIGN], assign, bytes,
                                                                 cudaMemcpyHostToDevice, c->stream));
    if (B[B_MOE_TOPK_IDX])   /* valid ids for a router backward timed before its forward */
        CU_TRY("cudaMemcpyAsync(moe top-k ids)", cudaMemcpyAsync(B[B_MOE_TOPK_IDX], assign, bytes,
                                                                cudaMemcpyHostToDevice, c->stream));
    if (B[B_MOE_POS])        /* so unpermute and the backward find a valid index before permute ran */
        CU_TRY("ck_moe_route_index", ck_moe_route_index(B[B_MOE_ASSIGN], m->X, (int)m->E, B[B_MOE_OFFSETS],
                                                        B[B_MOE_POS], c->stream));
    CU_TRY("cudaStreamSynchronize(moe assignment)", cudaStreamSynchronize(c->stream));   /* assign freed */
    rc = 0;
fail:
    free(own);
    free(assign);
    return rc;
}

/* The shape of expert GEMM `kind` over rows [row0, row0 + rows) of an [in -> out] projection of
 * expert e, aligned as its slices are: x [., in], y [., out] (the dtype, es bytes), w [out, in]
 * per expert, dw the same in fp32. */
static cuda_gemm_shape expert_shape(int kind, pdbx_dtype dt, int64_t rows, int64_t out, int64_t in, int64_t row0,
                                    int64_t e)
{
    const int64_t es = dt == PDBX_DTYPE_FP32 ? 4 : 2;
    const uint32_t x = ck_moe_align(row0 * in * es), y = ck_moe_align(row0 * out * es);
    const uint32_t w = ck_moe_align(e * out * in * es), dw = ck_moe_align(e * out * in * 4);
    cuda_gemm_shape s;
    if (kind == CUDA_MOE_GU || kind == CUDA_MOE_D) {   /* y = x w^T */
        s = cuda_gemm_linear_shape(dt, rows, out, in);
        s.align_a = w, s.align_b = x, s.align_c = y;
    } else if (kind == CUDA_MOE_GU_DG || kind == CUDA_MOE_D_DG) {   /* dx = dy w */
        s = cuda_gemm_dgrad_shape(dt, rows, out, in);
        s.align_a = w, s.align_b = y, s.align_c = x;
    } else {   /* dw += dy^T x */
        s = cuda_gemm_wgrad_shape(dt, rows, out, in);
        s.align_a = x, s.align_b = y, s.align_c = dw;
    }
    return s;
}

static int plan_experts(pdbx_compute *c, struct cuda_point *pt, struct cuda_moe *mo, char *err, size_t errlen)
{
    const cuda_moe_dims *m = &pt->d.moe;
    const int64_t h = pt->d.hidden;
    const int kinds = pt->bwd ? CUDA_MOE_XPLANS : CUDA_MOE_D + 1;
    for (int64_t e = 0; e < m->El; e++) {
        const int64_t row0 = mo->eoff[e], n = mo->eoff[e + 1] - row0;
        if (n < 1)
            continue;   /* no rows: no GEMM */
        for (int kind = 0; kind < kinds; kind++) {
            const int down = kind == CUDA_MOE_D || kind == CUDA_MOE_D_DG || kind == CUDA_MOE_D_WG;
            const cuda_gemm_shape s = expert_shape(kind, c->dtype, n, down ? h : m->Ie, down ? m->Ie : h, row0, e);
            int rc = cuda_gemm_plan_get(c->gemm, &s, &mo->xplan[e * CUDA_MOE_XPLANS + kind], err, errlen);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* The router's GEMM [R, h] -> [R, E] and the shared experts' [T, h] -> [T, Is] -> [T, h], each
 * with its dgrad and wgrad when the point has a backward. */
static int plan_fixed(pdbx_compute *c, struct cuda_point *pt, struct cuda_moe *mo, char *err, size_t errlen)
{
    const cuda_moe_dims *m = &pt->d.moe;
    const int64_t h = pt->d.hidden, T = pt->d.tokens;
    const pdbx_dtype dt = c->dtype;
    const struct { int slot, bwd; cuda_gemm_shape s; } g[CUDA_MOE_FPLANS] = {
        {CUDA_MOE_R_FWD, 0, cuda_gemm_linear_shape(dt, m->R, m->E, h)},
        {CUDA_MOE_R_DG, 1, cuda_gemm_dgrad_shape(dt, m->R, m->E, h)},
        {CUDA_MOE_R_WG, 1, cuda_gemm_wgrad_shape(dt, m->R, m->E, h)},
        {CUDA_MOE_S_GU, 0, cuda_gemm_linear_shape(dt, T, m->Is, h)},
        {CUDA_MOE_S_D, 0, cuda_gemm_linear_shape(dt, T, h, m->Is)},
        {CUDA_MOE_S_GU_DG, 1, cuda_gemm_dgrad_shape(dt, T, m->Is, h)},
        {CUDA_MOE_S_GU_WG, 1, cuda_gemm_wgrad_shape(dt, T, m->Is, h)},
        {CUDA_MOE_S_D_DG, 1, cuda_gemm_dgrad_shape(dt, T, h, m->Is)},
        {CUDA_MOE_S_D_WG, 1, cuda_gemm_wgrad_shape(dt, T, h, m->Is)},
    };
    for (int i = 0; i < CUDA_MOE_FPLANS; i++) {
        const int shared = g[i].slot >= CUDA_MOE_S_GU;
        if ((g[i].bwd && !pt->bwd) || (shared && m->Is < 1))
            continue;
        int rc = cuda_gemm_plan_get(c->gemm, &g[i].s, &mo->fixed[g[i].slot], err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}

void cuda_moe_free(struct cuda_moe *m)
{
    if (!m)
        return;
    free(m->eoff);
    free(m->xplan);   /* the plans belong to the gemm cache */
    free(m);
}

int cuda_moe_prepare(pdbx_compute *c, struct cuda_point *pt, char *err, size_t errlen)
{
    const cuda_moe_dims *m = &pt->d.moe;
    struct cuda_moe *mo = calloc(1, sizeof *mo);
    if (mo) {
        mo->eoff = calloc((size_t)m->El + 1, sizeof *mo->eoff);
        mo->xplan = calloc((size_t)m->El * CUDA_MOE_XPLANS, sizeof *mo->xplan);
    }
    if (!mo || !mo->eoff || !mo->xplan) {
        cuda_moe_free(mo);
        snprintf(err, errlen, "cuda prepare: moe: out of host memory");
        return -1;
    }
    int rc = upload_assignment(c, pt, mo->eoff, err, errlen);
    if (rc == 0)
        rc = plan_experts(c, pt, mo, err, errlen);
    if (rc == 0)
        rc = plan_fixed(c, pt, mo, err, errlen);
    if (rc) {
        cuda_moe_free(mo);
        return rc;
    }
    pt->moe = mo;
    return 0;
}
