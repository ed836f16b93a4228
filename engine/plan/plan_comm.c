/* plan_comm.c: the sizing of a point's collectives (plan_comm.h). */
#include "engine/plan/plan_comm.h"

#include <math.h>
#include <string.h>

#include "engine/plan/plan_internal.h"
#include "engine/plan/plan_moe.h"

#define PAGE 4096.0

double pdbx_plan_dp_bucket_elems(int dp)
{
    return fmax(PDBX_DP_BUCKET_MIN_ELEMS, PDBX_DP_BUCKET_ELEMS_PER_RANK * (dp > 0 ? dp : 1));
}

void pdbx_plan_comm_bytes(const pdbx_model *model, int tp, int pp, int dp, int mbs, int seq_len,
                          pdbx_dtype dtype, pdbx_backend_kind backend, pdbx_plan_comm *out)
{
    memset(out, 0, sizeof *out);
    out->tp_dtype = out->pp_dtype = dtype;
    out->dp_dtype = PDBX_DTYPE_FP32;
    const double act = (double)mbs * seq_len * model->hidden * pdbx_dtype_bytes(dtype);
    out->tp_bytes = tp > 1 ? act : 0;
    out->pp_bytes = pp > 1 ? act : 0;
    if (dp > 1) {
        /* Gradients are reduced in fp32 (grad_reduce_in_fp32) one bucket at a time; the
         * engine times one bucket, the stage's last when it is smaller than a bucket. */
        const double fp32 = pdbx_dtype_bytes(PDBX_DTYPE_FP32);
        const double stage = plan_stage_params(model, tp, pp);
        out->dp_full_bytes = (stage - plan_stage_expert_params(model, pp, 1)) * fp32;
        double bytes = fmin(stage, pdbx_plan_dp_bucket_elems(dp)) * fp32;
        if (backend == PDBX_BACKEND_CPU && bytes > PDBX_CPU_DP_CAP_BYTES)
            bytes = PDBX_CPU_DP_CAP_BYTES;
        bytes = floor(bytes / PAGE) * PAGE;   /* whole 4 KiB pages */
        out->dp_bytes = bytes < PAGE ? PAGE : bytes;
    }
    out->buffer_bytes = fmax(out->tp_bytes, fmax(out->pp_bytes, out->dp_bytes));
}

double pdbx_plan_ep_bytes(const pdbx_model *model, int tp, int ep, int mbs, int seq_len,
                          pdbx_dtype dtype, double imbalance)
{
    if (ep <= 1 || ep > PDBX_MAX_EP || tp < 1 || mbs < 1 || seq_len < 1 || !plan_is_moe(model))
        return 0;
    const int64_t T = (int64_t)mbs * seq_len;
    const pdbx_moe_route r = { (T + tp - 1) / tp, model->arch.moe.top_k, model->arch.moe.experts, ep,
                               imbalance >= 1 ? imbalance : 1 };
    int64_t send[PDBX_MAX_EP], recv[PDBX_MAX_EP];
    pdbx_moe_load load;
    char err[160];
    if (pdbx_moe_rank_load(&r, PDBX_MOE_MEASURED_RANK, &load, NULL, send, recv, NULL, err, sizeof err) != 0)
        return 0;
    int64_t block = 0;
    for (int q = 0; q < ep; q++) {
        block = send[q] > block ? send[q] : block;
        block = recv[q] > block ? recv[q] : block;
    }
    return (double)block * ep * model->hidden * pdbx_dtype_bytes(dtype);
}

int pdbx_plan_expert_dp(int tp, int dp, int ep)
{
    if (tp < 1 || dp < 1 || ep < 1 || (tp * dp) % ep != 0)
        return 0;
    return tp * dp / ep;
}

void pdbx_plan_comm_point(const pdbx_model *model, const pdbx_parallel *par, int mbs, int seq_len,
                          pdbx_dtype dtype, pdbx_backend_kind backend, double imbalance,
                          pdbx_plan_comm *out)
{
    pdbx_plan_comm_bytes(model, par->tp, par->pp, par->dp, mbs, seq_len, dtype, backend, out);
    const int ep = pdbx_par_ep(par);
    out->ep_bytes = pdbx_plan_ep_bytes(model, par->tp, ep, mbs, seq_len, dtype, imbalance);
    out->edp = plan_is_moe(model) ? pdbx_plan_expert_dp(par->tp, par->dp, ep) : 0;
    if (out->edp > 1)
        out->edp_full_bytes = plan_stage_expert_params(model, par->pp, ep) * pdbx_dtype_bytes(PDBX_DTYPE_FP32);
    out->buffer_bytes = fmax(out->buffer_bytes, 2 * out->ep_bytes);
}
