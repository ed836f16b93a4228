/* engine_point_internal.h: the state of one point being measured, shared by the point loop's
 * files and nothing else (the sweep sees engine_point.h only).
 *
 * engine_point.c:         a point's lifecycle: prepare, the phases, agreement, gather, release;
 * engine_point_steps.c:   the step phase (whole steps, warm-up steps dropped);
 * engine_point_cells.c:   the op phase of an adaptive point (one cell at a time);
 * engine_point_exec.c:    one execution of an op, span or step collective into the samples,
 *                         and a rank's first failure in the point;
 * engine_point_samples.c: a rank's samples per row and the trace of its latest step.
 * Functions are pt_*; every one is called on every rank in lockstep where it says so in
 * engine_point.h.
 */
#ifndef PDBX_ENGINE_POINT_INTERNAL_H
#define PDBX_ENGINE_POINT_INTERNAL_H

#include <stddef.h>

#include "engine/engine_agree.h"
#include "engine/engine_point.h"
#include "engine/engine_stats.h"

#define NSTAT PDBX_ESTAT
#define NROWS PDBX_NROWS
#define MSG_LEN PDBX_MSG_LEN

/* ---- per-rank samples of one point ------------------------------------------------------- */
typedef struct {
    double *s[NROWS];
    size_t n[NROWS], cap[NROWS];
    size_t kept[NROWS];        /* samples of the steps kept so far (a warm-up step's are dropped) */
    signed char stop[NROWS];   /* adaptive: why this rank's cell stopped (pdbx_cell_state) */
    double *trace;             /* [op, layer, start_us, dur_us] per entry, of the latest step */
    size_t ntrace, trace_cap;
    int oom;                   /* a sample could not be stored */
} samples;

/* ---- one point ---------------------------------------------------------------------------- */
typedef struct {
    pdbx_engine *e;
    const pdbx_plan_point *pt;
    pdbx_cfg_groups *cg;
    samples sm;
    void *buf;
    pdbx_point_bytes bytes;
    double comm_bytes;         /* the comm buffer (profile memory's comm entry; 0: none) */
    int compute;               /* 1: the compute ops run here (0: their cells are reused) */
    int failed;                /* a compute op failed: keep joining collectives, report error */
    int fatal;                 /* ... with PDBX_EFATAL: the device is unusable, the run ends */
    int oom;                   /* the first failure was PDBX_EOOM (nccl: memory): point `oom` */
    int cancelled;
    pdbx_op sample_op[PDBX_OP_COUNT];
    /* fused_projections: the leader of each op's fused group (PDBX_OP_COUNT: none, or not
     * fused) and the op's FLOP share of the fused GEMM (pdbx_fused_share) */
    pdbx_op fused_leader[PDBX_OP_COUNT];
    double fused_share[PDBX_OP_COUNT];
    pdbx_point_mem mem;        /* rank 0: the largest measured peak over the ranks */
    char msg[MSG_LEN];
} point_run;

/* engine_point_samples.c. init: the trace's room for a step of `layers` layers (0, or -1 out
 * of memory); push: one sample of a row (out of memory: sm->oom); push_trace: one entry of the
 * latest step's trace (ms in, us stored); steps_settle: a step's samples kept or dropped;
 * mean_of: a row's mean (0: no samples). */
int pt_samples_init(samples *sm, int layers);
void pt_samples_free(samples *sm);
void pt_push(samples *sm, int row, double ms);
void pt_push_trace(samples *sm, int op, int layer, double start_ms, double dur_ms);
void pt_steps_settle(samples *sm, int keep);
double pt_mean_of(const samples *sm, int row);

/* engine_point_exec.c. fail_with: this rank's first failure in the point (later ones are its
 * consequences); run_one: one execution of pass `pass` of op into its cell (trace != 0: also
 * into the step's trace at its offset from step0); span: brackets span s (end 0: begin, 1: end,
 * *ms < 0 when nothing was measured); step_comm: one PP or DP collective of a step (step0 >= 0:
 * in the step's trace too). */
void pt_fail_with(point_run *pr, const char *err);
/* 1 for the EP all-to-alls (ep_dispatch, ep_combine): run at EP > 1, forward and backward. */
int pt_ep_alltoall(pdbx_op op);
void pt_run_one(point_run *pr, pdbx_op op, pdbx_pass pass, int layer, double step0, int trace);
void pt_span(point_run *pr, pdbx_span s, int end, double *ms);
void pt_step_comm(point_run *pr, pdbx_grid_kind kind, double step0);

/* engine_point_steps.c. layer_ops_init: the forward order of one layer's ops, once per
 * process; run_steps: the step phase (engine_point.h), 0, or 1 when cancelled. */
void pt_layer_ops_init(void);
int pt_run_steps(point_run *pr);

/* engine_point_cells.c: the op phase (adaptive): 0, or 1 when cancelled. */
int pt_run_cells(point_run *pr);

#endif
