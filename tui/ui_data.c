/* ui_data.c: see ui_data.h. */
#include "tui/ui_data.h"

#include <math.h>
#include <string.h>

void ui_matrix_build(const pdbx_run *run, int tp, int pp, int dp, pdbx_stat_kind stat, ui_matrix *m)
{
    memset(m, 0, sizeof(*m));
    const pdbx_point *pts[UI_MAX_MBS];
    size_t n = pdbx_run_config_points(run, tp, pp, dp, pts, UI_MAX_MBS);
    m->n = (int)n;
    for (int i = 0; i < m->n; i++) {
        m->mbs[i] = pts[i]->mbs;
        m->status[i] = pts[i]->status;
        double total = 0;
        int any = 0;
        for (int op = 0; op < PDBX_OP_COUNT; op++) {
            const pdbx_cell *c = &pts[i]->op[op];
            if (c->valid) {
                double v = pdbx_stats_get(&c->stats, stat);
                m->v[op][i] = v;
                m->flops[op][i] = c->flops;
                m->bytes[op][i] = c->bytes;
                m->op_present[op] = 1;
                if (isfinite(v)) {
                    total += v;
                    any = 1;
                }
            } else {
                m->v[op][i] = NAN;
                m->flops[op][i] = NAN;
                m->bytes[op][i] = NAN;
            }
        }
        m->total[i] = any ? total : NAN;
        const pdbx_comm_cell *pp_c = &pts[i]->pp_sendrecv, *dp_c = &pts[i]->dp_allreduce;
        m->pp_sendrecv[i] = pp_c->valid ? pdbx_stats_get(&pp_c->time, stat) : NAN;
        m->dp_allreduce[i] = dp_c->valid ? pdbx_stats_get(&dp_c->time, stat) : NAN;
        m->pp_present |= pp_c->valid;
        m->dp_present |= dp_c->valid;
    }
}

int ui_matrix_find(const ui_matrix *m, int mbs)
{
    for (int i = 0; i < m->n; i++)
        if (m->mbs[i] == mbs) return i;
    return -1;
}

double ui_geomean(const double *x, int n)
{
    double s = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && x[i] > 0) {
            s += log(x[i]);
            k++;
        }
    return k ? exp(s / k) : NAN;
}

double ui_gpu_peak_tflops(const pdbx_gpu *gpu, const char *dtype)
{
    if (strcmp(dtype, "fp32") == 0) return gpu->peak_tflops_fp32;
    if (strcmp(dtype, "fp16") == 0) return gpu->peak_tflops_fp16;
    return gpu->peak_tflops_bf16;
}

double ui_roofline_ms(const pdbx_gpu *gpu, const char *dtype, double flops, double bytes)
{
    double peak = ui_gpu_peak_tflops(gpu, dtype);
    double t_compute = (peak > 0 && flops > 0) ? flops / (peak * 1e12) : 0;
    double t_memory = (gpu->bw_gbs > 0 && bytes > 0) ? bytes / (gpu->bw_gbs * 1e9) : 0;
    double t = t_compute > t_memory ? t_compute : t_memory;
    return t > 0 ? t * 1e3 : NAN;
}
