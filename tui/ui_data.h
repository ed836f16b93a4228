/* ui_data.h: the numbers the run view and compare screens show, computed from a loaded
 * pdbx_run. Pure: no curses, no I/O.
 *
 * A config matrix is a thin view over the run table (store/runtable.h), the one table
 * `pdbx show`, `pdbx diff` and every export read: one config's points in MBS order and, per op,
 * the chosen statistic in ms (NaN where the cell was never measured: the views print N/A,
 * never 0). layer and total are the point's MEASURED cells (never a sum of the ops: N/A for a
 * run recorded before the engine measured them); share is pdbx_rt_share (op / layer for a
 * per-layer op, op / total for embed, final_norm and lm_head). A matrix is of one pass (fwd, bwd
 * or both = fwd + bwd: pdbx_point_cell_pass); layer and total are forward sums, N/A in a bwd
 * or both matrix. bwd_ratio is the measured bwd/fwd of each op whatever the matrix's pass.
 */
#ifndef PDBX_UI_DATA_H
#define PDBX_UI_DATA_H

#include "engine/plan/plan.h"
#include "store/profiledb.h"

#define UI_MAX_MBS 32

typedef struct {
    int n;                                   /* points */
    int mbs[UI_MAX_MBS];
    pdbx_point_status status[UI_MAX_MBS];
    double v[PDBX_OP_COUNT][UI_MAX_MBS];     /* ms, NaN = not measured */
    double flops[PDBX_OP_COUNT][UI_MAX_MBS]; /* per TP rank, one execution */
    double bytes[PDBX_OP_COUNT][UI_MAX_MBS];
    double layer[UI_MAX_MBS], total[UI_MAX_MBS];   /* measured; NaN = not measured */
    /* every statistic of each cell (count 0 and NaNs when not measured): compare judges a
       difference against the cells' own noise (pdbx_stats_judge) */
    pdbx_stats st[PDBX_OP_COUNT][UI_MAX_MBS];
    pdbx_stats layer_st[UI_MAX_MBS], total_st[UI_MAX_MBS];
    double share[PDBX_OP_COUNT][UI_MAX_MBS];       /* 0..1, NaN = N/A */
    int op_present[PDBX_OP_COUNT];           /* 1 when any point measured the op */
    /* the point's PP send/recv and DP gradient all-reduce (ms, NaN = not measured): not ops of
       the layer's forward, so outside the total; *_present as op_present */
    double pp_sendrecv[UI_MAX_MBS], dp_allreduce[UI_MAX_MBS];
    int pp_present, dp_present;
    pdbx_pass_sel pass;
    int noisy[PDBX_OP_COUNT][UI_MAX_MBS];      /* CV > PDBX_CV_NOISY (pdbx_rt_cell_noisy) */
    double bwd_ratio[PDBX_OP_COUNT][UI_MAX_MBS];   /* bwd / fwd of the stat, NaN = not both */
    int have_ratio;                          /* some op has a bwd/fwd ratio */
} ui_matrix;

/* The matrix of config cfg (tp, pp, dp, ep: PDBX_CFG_DIMS ints, pdbx_run_configs' rows). */
void ui_matrix_build(const pdbx_run *run, const int cfg[PDBX_CFG_DIMS], pdbx_stat_kind stat, ui_matrix *m);
/* The same for the cells of pass (ui_matrix_build is PDBX_PASS_SEL_FWD). */
void ui_matrix_build_pass(const pdbx_run *run, const int cfg[PDBX_CFG_DIMS], pdbx_stat_kind stat,
                          pdbx_pass_sel pass, ui_matrix *m);
/* Index of mbs in m, or -1. */
int ui_matrix_find(const ui_matrix *m, int mbs);
/* Geometric mean of the finite, positive entries of x (NaN when none). */
double ui_geomean(const double *x, int n);
/* Peak TFLOP/s of the GPU preset for the run's dtype ("bf16", "fp16", "fp32"). */
double ui_gpu_peak_tflops(const pdbx_gpu *gpu, const char *dtype);
/* Roofline bound of one execution in ms: max(flops / peak, bytes / bandwidth); NaN when the
 * preset lacks a peak or the op has no flops and no bytes. */
double ui_roofline_ms(const pdbx_gpu *gpu, const char *dtype, double flops, double bytes);

#endif
