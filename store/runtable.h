/* runtable.h: THE run table, run -> configs (tp, pp, dp, ep) -> points in MBS order -> cells. Every
 * view of a run's numbers reads it: `pdbx show` (table, JSON, CSV), `pdbx diff`, the exports
 * (NPZ, CSV, trace), and the explorer's run view, compare and export dialog. It is built here
 * and nowhere else, so they agree cell for cell.
 *
 * Contract:
 *  - Units: milliseconds. A cell that was never measured has valid == 0 and NaN statistics
 *    (count 0): views print N/A (JSON null, CSV empty), never 0.
 *  - op[]: the point's per-op cells as folded (element-wise max across the TP ranks), of the
 *    table's pass (pdbx_point_cell_pass: fwd, bwd, or both = fwd + bwd; the _pass builders).
 *  - layer and total are measured forward sums: a table of pass bwd or both has them N/A (and
 *    so N/A shares), never a forward figure beside backward cells.
 *  - layer, total: the MEASURED sums of pdbx_point (one layer's forward; the whole step's
 *    forward: embed, every profiled layer, final_norm, lm_head), with real min/max/std.
 *    They are NEVER added up from op cells: a run recorded before the engine measured them
 *    shows N/A there for every statistic.
 *  - comm[]: the point's parallelism traffic (tp_allreduce, pp_sendrecv, dp_allreduce).
 *  - Columns (show, diff, NPZ): under PDBX_ATTR_PURE a column is one op; under PDBX_ATTR_FASOP
 *    one of FASOP's 10 columns with the ops its module timing folds in (store/ops.h). A
 *    column's value is the sum of the chosen statistic over its measured ops, except std: a
 *    sum of standard deviations is not a deviation, so a column of more than one op has no
 *    std (NaN). pdbx_rt_check_time_stat() is the one refusal of std where a time is needed
 *    (the NPZ, from `pdbx export` and from the explorer's export dialog alike).
 *  - Shares (run view): a per-layer op's share is op / the measured layer; a once-per-step op
 *    (embed, final_norm, lm_head) is op / the measured total. NaN when that cell is N/A.
 *  - A table borrows the run: the run must outlive it and not change while it is used.
 */
#ifndef PDBX_RUNTABLE_H
#define PDBX_RUNTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "store/profiledb.h"

typedef struct {
    int valid;
    pdbx_stats stats;          /* NaN (count 0) when !valid */
    double flops, bytes;       /* per TP rank, one execution (ops only; NaN when !valid) */
    /* provenance (profiledb.h pdbx_cell): measured at point source_point; the samples of
     * shared_op of the same point; fused_share of fused_op's fused GEMM (fused_projections) */
    int reused, source_point, shared;
    pdbx_op shared_op;
    int fused;
    pdbx_op fused_op;
    double fused_share;
} pdbx_rt_cell;

enum { PDBX_RT_COMM_TP = 0, PDBX_RT_COMM_PP, PDBX_RT_COMM_DP, PDBX_RT_NCOMM };

typedef struct {
    const pdbx_point *point;   /* borrowed: mbs, status, message, comm cells */
    int mbs;
    pdbx_point_status status;
    pdbx_rt_cell op[PDBX_OP_COUNT];
    pdbx_rt_cell layer, total;
    const pdbx_comm_cell *comm[PDBX_RT_NCOMM];
} pdbx_rt_point;

typedef struct {
    int tp, pp, dp;
    int ep;                    /* expert-parallel degree (1: none); configs differ by it too */
    size_t npoints;
    pdbx_rt_point *points;     /* MBS order (owned) */
    int op_present[PDBX_OP_COUNT];   /* 1 when any point measured the op */
    pdbx_pass_sel pass;
} pdbx_rt_config;

typedef struct {
    const pdbx_run *run;
    pdbx_pass_sel pass;        /* the pass of every op cell */
    size_t nconfigs;
    pdbx_rt_config *configs;   /* plan order (owned) */
} pdbx_runtable;

/* One config's points (ep <= 1: EP 1). 0, or -1 out of memory (*out is then empty). A config
 * the run does not have gives 0 points. */
int pdbx_rt_config_build(const pdbx_run *run, int tp, int pp, int dp, int ep, pdbx_rt_config *out);
void pdbx_rt_config_free(pdbx_rt_config *c);
/* Every config of the run (only those with tp == only_tp when only_tp > 0). 0 or -1 (OOM). */
int pdbx_runtable_build(const pdbx_run *run, int only_tp, pdbx_runtable *t);
void pdbx_runtable_free(pdbx_runtable *t);
/* The same with the op cells of pass sel (the two above are PDBX_PASS_SEL_FWD). They do not
 * refuse a pass the run lacks (its cells are then N/A): views call pdbx_pass_sel_check. */
int pdbx_rt_config_build_pass(const pdbx_run *run, int tp, int pp, int dp, int ep, pdbx_pass_sel sel,
                              pdbx_rt_config *out);
int pdbx_runtable_build_pass(const pdbx_run *run, int only_tp, pdbx_pass_sel sel, pdbx_runtable *t);

/* The statistic of a cell; NaN when the cell was not measured. */
double pdbx_rt_value(const pdbx_rt_cell *c, pdbx_stat_kind stat);
/* 1 when the cell is measured and its CV (std / mean) exceeds PDBX_CV_NOISY: the views mark it
 * ('!' after the value, legend "! noisy: CV > 5%"). */
int pdbx_rt_cell_noisy(const pdbx_rt_cell *c);
/* Where a cell's samples came from: "measured at point 3", "shared with attn_k", "fused in
 * attn_q x0.25" (its FLOP share of the fused QKV GEMM timed by attn_q), joined by ", ", or ""
 * (measured here, on its own). Returns buf. */
char *pdbx_rt_cell_source(const pdbx_rt_cell *c, char *buf, size_t len);
const char *pdbx_rt_comm_name(int kind);   /* "tp_allreduce", "pp_sendrecv", "dp_allreduce" */

/* ---- attribution: table columns over the op cells -------------------------------------- */
typedef enum { PDBX_ATTR_FASOP = 0, PDBX_ATTR_PURE } pdbx_attribution;

typedef struct {
    char name[32];
    pdbx_opmask ops;           /* PDBX_OP_BIT mask */
    int per_layer;             /* every op of the column runs once per layer */
} pdbx_rt_col;

#define PDBX_RT_MAX_COLS PDBX_OP_COUNT
/* show/diff columns: PURE one per op (PDBX_OP_COUNT), FASOP FASOP's 10. Returns the count. */
size_t pdbx_rt_columns(pdbx_attribution attr, pdbx_rt_col *out);
/* FASOP's 10 columns with the ops of `attr` (the NPZ: PURE keeps FASOP's columns, own op only). */
size_t pdbx_rt_fasop_columns(pdbx_attribution attr, pdbx_rt_col *out);
/* A column's value in a point: the sum of stat over its measured ops; NaN when none is
 * measured, or stat is std and the column has more than one op. */
double pdbx_rt_col_value(const pdbx_rt_point *p, const pdbx_rt_col *col, pdbx_stat_kind stat);
/* 0 when stat is a time (mean, median, min, max); -1 with "--stat: 'std' is not a time ..."
 * for std or an unknown statistic. */
int pdbx_rt_check_time_stat(pdbx_stat_kind stat, char *err, size_t errlen);
/* The run-view share of op in a point: op / layer (per-layer ops) or op / total; NaN when
 * either is not measured. */
double pdbx_rt_share(const pdbx_rt_point *p, pdbx_op op, pdbx_stat_kind stat);

#endif
