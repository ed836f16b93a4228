/* plan_comm.c: the sizing of a point's collectives (plan_comm.h). */
#include "engine/plan/plan_comm.h"

#include <math.h>
#include <string.h>

#include "engine/plan/plan_internal.h"

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
        out->dp_full_bytes = stage * fp32;
        double bytes = fmin(stage, pdbx_plan_dp_bucket_elems(dp)) * fp32;
        if (backend == PDBX_BACKEND_CPU && bytes > PDBX_CPU_DP_CAP_BYTES)
            bytes = PDBX_CPU_DP_CAP_BYTES;
        bytes = floor(bytes / PAGE) * PAGE;   /* whole 4 KiB pages */
        out->dp_bytes = bytes < PAGE ? PAGE : bytes;
    }
    out->buffer_bytes = fmax(out->tp_bytes, fmax(out->pp_bytes, out->dp_bytes));
}
