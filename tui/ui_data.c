/* ui_data.c: see ui_data.h. */
#include "tui/ui_data.h"

#include "store/runtable.h"

#include <math.h>
#include <string.h>

static void matrix_point(const pdbx_rt_point *p, int i, pdbx_stat_kind stat, ui_matrix *m)
{
    m->mbs[i] = p->mbs;
    m->status[i] = p->status;
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        const pdbx_rt_cell *c = &p->op[op];
        m->v[op][i] = pdbx_rt_value(c, stat);
        m->st[op][i] = c->stats;
        m->flops[op][i] = c->flops;
        m->bytes[op][i] = c->bytes;
        m->share[op][i] = pdbx_rt_share(p, (pdbx_op)op, stat);
        m->noisy[op][i] = pdbx_rt_cell_noisy(c);
        m->bwd_ratio[op][i] = pdbx_point_bwd_ratio(p->point, (pdbx_op)op, stat);
        m->have_ratio |= isfinite(m->bwd_ratio[op][i]);
    }
    m->layer[i] = pdbx_rt_value(&p->layer, stat);
    m->total[i] = pdbx_rt_value(&p->total, stat);
    m->layer_st[i] = p->layer.stats;
    m->total_st[i] = p->total.stats;
    const pdbx_comm_cell *pp_c = p->comm[PDBX_RT_COMM_PP], *dp_c = p->comm[PDBX_RT_COMM_DP];
    m->pp_sendrecv[i] = pp_c->valid ? pdbx_stats_get(&pp_c->time, stat) : NAN;
    m->dp_allreduce[i] = dp_c->valid ? pdbx_stats_get(&dp_c->time, stat) : NAN;
    m->pp_present |= pp_c->valid;
    m->dp_present |= dp_c->valid;
}

void ui_matrix_build(const pdbx_run *run, const int cfg[PDBX_CFG_DIMS], pdbx_stat_kind stat, ui_matrix *m)
{
    ui_matrix_build_pass(run, cfg, stat, PDBX_PASS_SEL_FWD, m);
}

void ui_matrix_build_pass(const pdbx_run *run, const int cfg[PDBX_CFG_DIMS], pdbx_stat_kind stat,
                          pdbx_pass_sel pass, ui_matrix *m)
{
    memset(m, 0, sizeof(*m));
    m->pass = pass;
    pdbx_rt_config c;
    if (pdbx_rt_config_build_pass(run, cfg[PDBX_CFG_TP], cfg[PDBX_CFG_PP], cfg[PDBX_CFG_DP], cfg[PDBX_CFG_EP],
                                  pass, &c) != 0)
        return;                  /* out of memory: an empty matrix, the views say no points */
    m->n = c.npoints < UI_MAX_MBS ? (int)c.npoints : UI_MAX_MBS;
    for (int i = 0; i < m->n; i++)
        matrix_point(&c.points[i], i, stat, m);
    memcpy(m->op_present, c.op_present, sizeof m->op_present);
    pdbx_rt_config_free(&c);
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
