/* engine_point.c: the point loop (engine_point.h). */
#include "engine/engine_point.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine_adaptive.h"
#include "engine/engine_agree.h"
#include "engine/engine_noise.h"
#include "engine/engine_point_events.h"
#include "engine/engine_stats.h"
#include "engine/plan/plan_comm.h"
#include "store/util/clock.h"

#define NSTAT PDBX_ESTAT
#define NROWS PDBX_NROWS
#define MSG_LEN PDBX_MSG_LEN

/* The ranks agree after a batch of executions of about this many seconds: their agreement (an
 * all-reduce, tens of microseconds) stays a small share of an op of microseconds. */
#define BATCH_S 0.005

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

static void samples_free(samples *sm)
{
    for (int r = 0; r < NROWS; r++)
        free(sm->s[r]);
    free(sm->trace);
    memset(sm, 0, sizeof *sm);
}

static int samples_init(samples *sm, int layers)
{
    memset(sm, 0, sizeof *sm);
    sm->trace_cap = (size_t)(3 + layers * PDBX_OP_COUNT + 2);
    sm->trace = calloc(sm->trace_cap * 4, sizeof(double));
    return sm->trace ? 0 : -1;
}

static void push(samples *sm, int row, double ms)
{
    if (sm->n[row] == sm->cap[row]) {
        size_t cap = sm->cap[row] ? 2 * sm->cap[row] : 64;
        double *s = realloc(sm->s[row], cap * sizeof *s);
        if (!s) {
            sm->oom = 1;
            return;
        }
        sm->s[row] = s;
        sm->cap[row] = cap;
    }
    sm->s[row][sm->n[row]++] = ms;
}

static void push_trace(samples *sm, int op, int layer, double start_ms, double dur_ms)
{
    if (sm->ntrace >= sm->trace_cap)
        return;
    double *t = sm->trace + 4 * sm->ntrace++;
    t[0] = op;
    t[1] = layer;
    t[2] = start_ms * 1e3;
    t[3] = dur_ms * 1e3;
}

/* A step is kept (its samples stay) or dropped (a warm-up step: back to the last kept one). */
static void steps_settle(samples *sm, int keep)
{
    for (int r = 0; r < NROWS; r++) {
        if (keep)
            sm->kept[r] = sm->n[r];
        else
            sm->n[r] = sm->kept[r];
    }
}

static double mean_of(const samples *sm, int row)
{
    double sum = 0;
    for (size_t i = 0; i < sm->n[row]; i++)
        sum += sm->s[row][i];
    return sm->n[row] ? sum / (double)sm->n[row] : 0;
}

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

/* The first failure of this rank in the point; the others are consequences. */
static void fail_with(point_run *pr, const char *err)
{
    if (pr->failed)
        return;
    pr->failed = 1;
    snprintf(pr->msg, sizeof pr->msg, "%s", err);
}

/* A backend call's failure rc: PDBX_EFATAL (the device is unusable) takes over the message,
 * since it, not an earlier error, is what ends the run. */
static void fail_rc(point_run *pr, int rc, const char *err)
{
    if (rc == PDBX_EFATAL && !pr->fatal) {
        pr->fatal = 1;
        pr->failed = 0;
    } else if (rc == PDBX_EOOM && !pr->failed) {
        pr->oom = 1;
    }
    fail_with(pr, err);
}

/* The agreed status of a point whose steps ran: OK, OOM (its first failure was an
 * allocation), ERROR, or FATAL. */
static int failed_status(const point_run *pr)
{
    return pr->fatal ? PDBX_ST_FATAL : !pr->failed ? PDBX_ST_OK : pr->oom ? PDBX_ST_OOM : PDBX_ST_ERROR;
}

static void fault_check(point_run *pr)
{
    pdbx_engine *e = pr->e;
    if (pdbx_fault_hits(&e->fault, PDBX_FAULT_HANG, e->rank, pr->pt->index)) {
        pdbx_watch_begin("fault_hang", pr->pt->index);
        for (;;)
            sleep(1);
    }
    if (pdbx_fault_hits(&e->fault, PDBX_FAULT_EXIT, e->rank, pr->pt->index)) {
        fprintf(stderr, "pdbx-engine: rank %d: PDBX_FAULT exit at point %d\n", e->rank, pr->pt->index);
        _exit(3);
    }
}

/* One execution (iters 1: one sample per step, as the compute ops), through the comm's
 * aligned start all the same (nccl: spin, align all-reduce, events; docs/cuda.md). */
static int coll_timed(point_run *pr, pdbx_group *g, pdbx_coll coll, pdbx_dtype dtype,
                      double bytes, const char *name, double *ms)
{
    pdbx_engine *e = pr->e;
    int point = pr->pt->index;
    char err[MSG_LEN];
    pdbx_watch_begin("barrier", point);
    int rc = e->be.comm->barrier(e->comm, g, e->spec.timeout_s, err, sizeof err);
    pdbx_watch_end();
    if (rc != 0) {
        fail_rc(pr, rc, err);
        return rc;
    }
    pdbx_watch_begin(name, point);
    const pdbx_coll_call call = { coll, dtype, (size_t)bytes, 1, 0 };
    rc = e->be.comm->run(e->comm, g, &call, pr->buf, ms, err, sizeof err);
    pdbx_watch_end();
    if (rc != 0)
        fail_rc(pr, rc, err);
    return rc;
}

pdbx_op pdbx_point_sample_op(const pdbx_spec *spec, int tp, int mbs, pdbx_op op)
{
    /* fused projections: each op of a group has its own (attributed) samples */
    if (spec->fused_projections && pdbx_fused_leader(op) != PDBX_OP_COUNT)
        return op;
    pdbx_op with = op == PDBX_OP_ATTN_V ? PDBX_OP_ATTN_K
                 : op == PDBX_OP_MLP_UP ? PDBX_OP_MLP_GATE
                 : op == PDBX_OP_MLP_RESIDUAL ? PDBX_OP_ATTN_RESIDUAL
                 : op == PDBX_OP_TP_ALLREDUCE_MLP ? PDBX_OP_TP_ALLREDUCE_ATTN : op;
    if (with == op || !(pdbx_spec_ops(spec) & PDBX_OP_BIT(with)))
        return op;
    pdbx_op_shape a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    pdbx_op_shape_for(spec, tp, mbs, op, &a);
    pdbx_op_shape_for(spec, tp, mbs, with, &b);
    return a.m == b.m && a.n == b.n && a.k == b.k && a.batch == b.batch ? with : op;
}

/* A fused group's execution of ms (its leader ran the fused GEMM) as one sample per op of
 * the group, ms x the op's FLOP share, and (trace) one trace entry per op, back to back from
 * start in the group's order: the cells and the trace sum to the fused measurement. */
static void push_fused(point_run *pr, pdbx_op leader, pdbx_pass pass, int layer, double start,
                       double ms, int trace)
{
    double at = start;
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        if (pr->fused_leader[op] != leader)
            continue;
        const double part = ms * pr->fused_share[op];
        push(&pr->sm, PDBX_ROW_OP(pass, op), part);
        if (trace)
            push_trace(&pr->sm, op, layer, at, part);
        at += part;
    }
}

/* Runs one execution of pass `pass` of op (a compute op, or a TP all-reduce) and adds its
 * sample; the trace keeps the step's forward (trace != 0). */
static void run_one(point_run *pr, pdbx_op op, pdbx_pass pass, int layer, double step0, int trace)
{
    pdbx_engine *e = pr->e;
    if (!(pdbx_spec_ops(&e->spec) & PDBX_OP_BIT(op)))
        return;
    if (pr->fused_leader[op] != PDBX_OP_COUNT && pr->fused_leader[op] != op)
        return;   /* timed within its leader's fused GEMM */
    if (e->ev)
        pdbx_events_progress_op(e->ev, pdbx_op_name(op));
    double start = pdbx_mono_s() * 1e3, ms = 0;
    if (pdbx_op_is_comm(op)) {
        if (pr->cg->tp < 2 || pass != PDBX_PASS_FWD)
            return;
        coll_timed(pr, pr->cg->g[PDBX_GRID_TP], PDBX_COLL_ALL_REDUCE, e->spec.dtype, pr->bytes.tp,
                   pdbx_op_name(op), &ms);
        push(&pr->sm, PDBX_ROW_TP_ALL, ms);
    } else {
        if (pr->failed)
            return;
        fault_check(pr);
        char err[MSG_LEN];
        pdbx_watch_begin(pdbx_op_name(op), pr->pt->index);
        int rc;
        if (pdbx_fault_hits(&e->fault, PDBX_FAULT_FATAL, e->rank, pr->pt->index)) {
            rc = PDBX_EFATAL;
            snprintf(err, sizeof err, "%s: device unusable (injected by PDBX_FAULT)", pdbx_op_name(op));
        } else {
            rc = e->be.compute->run_op(e->compute, op, pass, layer, &ms, err, sizeof err);
        }
        pdbx_watch_end();
        if (rc != 0) {
            fail_rc(pr, rc, err);
            return;
        }
    }
    if (pr->fused_leader[op] == op) {
        push_fused(pr, op, pass, layer, start - step0, ms, trace);
        return;
    }
    push(&pr->sm, PDBX_ROW_OP(pass, pr->sample_op[op]), ms);
    if (trace)
        push_trace(&pr->sm, op, pdbx_op_is_per_layer(op) ? layer : -1, start - step0, ms);
}

/* One layer's ops in forward order: the per-layer ops of ops.h, whose enum is that order (a
 * new op joins the layer span, the backward and the trace by being added there). */
static pdbx_op layer_ops[PDBX_OP_COUNT];
static size_t NLAYER_OPS;

static void layer_ops_init(void)
{
    if (NLAYER_OPS)
        return;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        if (pdbx_op_is_per_layer((pdbx_op)op))
            layer_ops[NLAYER_OPS++] = (pdbx_op)op;
}

/* Brackets span s with the compute backend; a failure counts as a failed op (the point ends
 * as an error once the ranks agree). ms < 0 on end means nothing was measured. */
static void span(point_run *pr, pdbx_span s, int end, double *ms)
{
    pdbx_engine *e = pr->e;
    if (pr->failed) {
        *ms = -1;
        return;
    }
    char err[MSG_LEN];
    int rc = end ? e->be.compute->span_end(e->compute, s, ms, err, sizeof err)
                 : e->be.compute->span_begin(e->compute, s, err, sizeof err);
    if (rc != 0) {
        fail_rc(pr, rc, err);
        *ms = -1;
    }
}

/* One step's forward: embed, every profiled layer, final_norm, lm_head, with the layer and
 * step spans measured around them (the sums of profiledb.h's layer and total cells). Returns
 * the step's time in ms (-1: not measured). */
static double run_forward(point_run *pr, double step0)
{
    const pdbx_spec *sp = &pr->e->spec;
    double ms = 0, total = -1;
    span(pr, PDBX_SPAN_STEP, 0, &ms);
    run_one(pr, PDBX_OP_EMBED, PDBX_PASS_FWD, -1, step0, 1);
    for (int l = 0; l < sp->layers_profiled; l++) {
        span(pr, PDBX_SPAN_LAYER, 0, &ms);
        for (size_t i = 0; i < NLAYER_OPS; i++)
            run_one(pr, layer_ops[i], PDBX_PASS_FWD, l, step0, 1);
        span(pr, PDBX_SPAN_LAYER, 1, &ms);
        if (ms >= 0)
            push(&pr->sm, PDBX_ROW_LAYER, ms);
    }
    run_one(pr, PDBX_OP_FINAL_NORM, PDBX_PASS_FWD, -1, step0, 1);
    run_one(pr, PDBX_OP_LM_HEAD, PDBX_PASS_FWD, -1, step0, 1);
    span(pr, PDBX_SPAN_STEP, 1, &total);
    if (total >= 0)
        push(&pr->sm, PDBX_ROW_TOTAL, total);
    return total;
}

/* One step's backward: each op's bwd in reverse order of the forward (comm ops have none). */
static void run_backward(point_run *pr)
{
    const pdbx_spec *sp = &pr->e->spec;
    run_one(pr, PDBX_OP_LM_HEAD, PDBX_PASS_BWD, -1, 0, 0);
    run_one(pr, PDBX_OP_FINAL_NORM, PDBX_PASS_BWD, -1, 0, 0);
    for (int l = sp->layers_profiled - 1; l >= 0; l--)
        for (size_t i = NLAYER_OPS; i-- > 0;)
            if (!pdbx_op_is_comm(layer_ops[i]))
                run_one(pr, layer_ops[i], PDBX_PASS_BWD, l, 0, 0);
    run_one(pr, PDBX_OP_EMBED, PDBX_PASS_BWD, -1, 0, 0);
}

/* A once-per-step collective of the PP or DP group: PP sends activations in the run's dtype,
 * DP all-reduces one bucket of gradients in fp32 (Megatron's grad_reduce_in_fp32). In the step
 * phase (step0 >= 0) also in the step's trace at its offset from the step's start. */
static void step_comm(point_run *pr, pdbx_grid_kind kind, double step0)
{
    double ms = 0;
    const int pp = kind == PDBX_GRID_PP;
    const pdbx_comm_kind what = pp ? PDBX_COMM_PP_SENDRECV : PDBX_COMM_DP_ALLREDUCE;
    const char *name = pdbx_comm_kind_name(what);
    if (pr->e->ev)
        pdbx_events_progress_op(pr->e->ev, name);
    double start = pdbx_mono_s() * 1e3;
    if (coll_timed(pr, pr->cg->g[kind], pp ? PDBX_COLL_SEND_RECV : PDBX_COLL_ALL_REDUCE,
                   pp ? pr->e->spec.dtype : pr->bytes.dp_dtype, pp ? pr->bytes.pp : pr->bytes.dp,
                   name, &ms) != 0)
        return;
    push(&pr->sm, pp ? PDBX_ROW_PP : PDBX_ROW_DP, ms);
    if (step0 >= 0)
        push_trace(&pr->sm, PDBX_TRACE_STEP_COMM(what), -1, start - step0, ms);
}

static void pp_dp_comm(point_run *pr, double step0)
{
    if (pr->cg->pp > 1)
        step_comm(pr, PDBX_GRID_PP, step0);
    if (pr->cg->dp > 1)
        step_comm(pr, PDBX_GRID_DP, step0);
}

static int has_bwd(const point_run *pr)
{
    return (pr->e->spec.passes & PDBX_PASS_BIT(PDBX_PASS_BWD)) != 0;
}

/* Whether every rank keeps the step it just ran (a warm-up step is dropped by all). */
static int agree_keep(int keep)
{
    int all = keep;
    MPI_Allreduce(&keep, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* The step phase (engine_point.h). Returns 0, or 1 when cancelled. */
static int run_steps(point_run *pr)
{
    pdbx_engine *e = pr->e;
    const pdbx_spec *sp = &e->spec;
    const int adaptive = sp->repetition == PDBX_REP_ADAPTIVE;
    const int max_warm = adaptive ? (sp->warmup > 1 ? sp->warmup : 1) : sp->warmup;
    int kept = 0, warm = 0;
    double prev = -1;
    while (kept < sp->steps) {
        if (pdbx_agree_cancel(e, pr->pt->index))
            return 1;
        double total = -1, step0 = pdbx_mono_s() * 1e3;
        pr->sm.ntrace = 0;        /* the trace keeps the latest step */
        if (pr->compute) {
            total = run_forward(pr, step0);
            if (has_bwd(pr))
                run_backward(pr);
        }
        pp_dp_comm(pr, step0);
        pdbx_noise_device_sample(&e->noise, e->be.compute, e->compute);
        int keep = warm >= max_warm || (adaptive && warm > 0 && pdbx_adaptive_stable(prev, total));
        keep = agree_keep(keep);
        steps_settle(&pr->sm, keep);
        kept += keep;
        warm += !keep;
        prev = total;
    }
    return 0;
}

/* One cell of the op phase: runs `exec` until the rule says the cell is done on every rank.
 * The ranks agree on whether to go on and on the batch (the collectives must match). */
typedef void (*cell_exec)(point_run *pr, int arg, int rep);

/* share: the fraction of one execution a sample of row holds (a fused leader's FLOP share;
 * else 1): batches are sized on whole executions. */
static void adaptive_cell(point_run *pr, int row, cell_exec exec, int arg, double share)
{
    const pdbx_spec *sp = &pr->e->spec;
    const pdbx_adaptive_rule rule = { sp->target_rel_ci, sp->min_reps, sp->max_reps, sp->max_seconds_per_op };
    const double t0 = pdbx_mono_s();
    int rep = 0;
    for (;;) {
        samples *sm = &pr->sm;
        long mine[2] = { 0, 0 }, all[2];
        pdbx_cell_state st = PDBX_CELL_MORE;
        if (!pr->failed && !sm->oom &&
            (st = pdbx_adaptive_state(&rule, sm->s[row], sm->n[row], pdbx_mono_s() - t0)) ==
                PDBX_CELL_MORE) {
            mine[0] = 1;
            mine[1] = pdbx_adaptive_batch(&rule, sm->n[row], mean_of(sm, row) / share, BATCH_S);
        }
        MPI_Allreduce(mine, all, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
        if (!all[0]) {
            sm->stop[row] = (signed char)st;   /* this rank's reason (rank 0's is recorded) */
            return;
        }
        for (long b = 0; b < all[1]; b++)
            exec(pr, arg, rep++);
    }
}

/* Executions of the op phase: a compute op's pass (arg = op | pass << 8) on the layers in
 * turn; the TP all-reduce; PP and DP. */
static void exec_op(point_run *pr, int arg, int rep)
{
    pdbx_op op = (pdbx_op)(arg & 0xff);
    pdbx_pass pass = (pdbx_pass)(arg >> 8);
    run_one(pr, op, pass, pdbx_op_is_per_layer(op) ? rep % pr->e->spec.layers_profiled : -1, 0, 0);
}

static void exec_comm(point_run *pr, int row, int rep)
{
    (void)rep;
    step_comm(pr, row == PDBX_ROW_PP ? PDBX_GRID_PP : PDBX_GRID_DP, -1);
}

/* The op phase (adaptive): every cell the step phase left short of its target. Returns 0, or
 * 1 when cancelled. */
static int run_cells(point_run *pr)
{
    pdbx_engine *e = pr->e;
    const pdbx_spec *sp = &e->spec;
    for (int pass = 0; pr->compute && pass < PDBX_PASS_COUNT; pass++) {
        if (!(sp->passes & PDBX_PASS_BIT(pass)))
            continue;
        for (int op = 0; op < PDBX_OP_COUNT; op++) {
            if (!(pdbx_spec_ops(sp) & PDBX_OP_BIT(op)) || pr->sample_op[op] != (pdbx_op)op ||
                (pr->fused_leader[op] != PDBX_OP_COUNT && pr->fused_leader[op] != (pdbx_op)op) ||
                (pdbx_op_is_comm((pdbx_op)op) && (pass != PDBX_PASS_FWD || pr->cg->tp < 2)))
                continue;
            if (pdbx_agree_cancel(e, pr->pt->index))
                return 1;
            adaptive_cell(pr, PDBX_ROW_OP(pass, op), exec_op, op | pass << 8,
                          pr->fused_leader[op] == (pdbx_op)op ? pr->fused_share[op] : 1);
            pdbx_noise_device_sample(&e->noise, e->be.compute, e->compute);
        }
    }
    static const int comm_rows[2] = { PDBX_ROW_PP, PDBX_ROW_DP };
    for (int i = 0; i < 2; i++) {
        if ((comm_rows[i] == PDBX_ROW_PP ? pr->cg->pp : pr->cg->dp) < 2)
            continue;
        if (pdbx_agree_cancel(e, pr->pt->index))
            return 1;
        adaptive_cell(pr, comm_rows[i], exec_comm, comm_rows[i], 1);
    }
    return 0;
}

static void fill_shapes(pdbx_engine *e, const pdbx_plan_point *pt, pdbx_point_shapes *ps)
{
    memset(ps, 0, sizeof *ps);
    ps->model = e->spec.model;
    ps->tp = pt->tp;
    ps->mbs = pt->mbs;
    ps->seq_len = e->spec.seq_len;
    ps->layers = e->spec.layers_profiled;
    ps->ops = pdbx_spec_ops(&e->spec);
    ps->passes = e->spec.passes;
    ps->fused_projections = e->spec.fused_projections;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        pdbx_op_shape_for(&e->spec, pt->tp, pt->mbs, (pdbx_op)op, &ps->shape[op]);
}

/* The comm buffer the point's collectives share (0: none runs) and their messages: the
 * planner's sizing (plan_comm.h), the one its profile memory lists, with the backend this
 * engine loaded. */
static double point_comm(const pdbx_engine *e, const pdbx_plan_point *pt, pdbx_point_bytes *b)
{
    pdbx_plan_comm pc;
    pdbx_plan_comm_bytes(&e->spec.model, pt->tp, pt->pp, pt->dp, pt->mbs, e->spec.seq_len,
                         e->spec.dtype, pdbx_engine_backend_kind(e), &pc);
    memset(b, 0, sizeof *b);
    b->tp = pc.tp_bytes;
    b->pp = pc.pp_bytes;
    b->dp = pc.dp_bytes;
    b->dp_dtype = pc.dp_dtype;
    return pc.buffer_bytes;
}

/* Sample buffers, the point's buffers (unless its compute cells are reused) and the comm
 * buffer on this rank; then the ranks agree. *setup_s: the wall time of it. */
static int point_prepare(point_run *pr, char *msg, double *setup_s)
{
    pdbx_engine *e = pr->e;
    const pdbx_plan_point *pt = pr->pt;
    int status = PDBX_ST_OK;
    const double t0 = pdbx_mono_s();
    if (samples_init(&pr->sm, e->spec.layers_profiled) != 0) {
        status = PDBX_ST_OOM;
        snprintf(msg, MSG_LEN, "host allocation of the sample buffers failed");
    }
    if (status == PDBX_ST_OK) {
        pdbx_point_shapes ps;
        fill_shapes(e, pt, &ps);
        char err[MSG_LEN] = "";
        int rc = 0;
        if (e->ev)
            pdbx_events_progress_op(e->ev, "prepare");
        pdbx_watch_begin("prepare", pt->index);
        if (pdbx_fault_hits(&e->fault, PDBX_FAULT_OOM, e->rank, pt->index)) {
            rc = PDBX_EOOM;
            snprintf(err, sizeof err, "allocation failed (injected by PDBX_FAULT)");
        } else if (pr->compute) {
            rc = e->be.compute->prepare(e->compute, &ps, err, sizeof err);
        }
        if (rc == 0 && pr->comm_bytes > 0)
            rc = e->be.compute->comm_buffer(e->compute, (size_t)pr->comm_bytes, &pr->buf, err,
                                            sizeof err);
        pdbx_watch_end();
        if (rc != 0) {
            status = rc == PDBX_EOOM ? PDBX_ST_OOM : rc == PDBX_EFATAL ? PDBX_ST_FATAL : PDBX_ST_ERROR;
            snprintf(msg, MSG_LEN, "%s", err);
        }
    }
    *setup_s = pdbx_mono_s() - t0;
    return pdbx_agree_status(e, status, msg, pt->index);
}

/* Every rank's measured peak to rank 0, which keeps the largest with its rank's baseline
 * (NaN on every rank: not measured). */
static void gather_mem(point_run *pr)
{
    pdbx_engine *e = pr->e;
    double mine[2] = { NAN, NAN }, peak = 0, base = 0;
    if (pr->compute && e->be.compute->mem_peak(e->compute, &peak, &base) == 0) {
        mine[0] = peak;
        mine[1] = base;
    }
    double *all = e->rank == 0 ? malloc(sizeof mine * (size_t)e->size) : NULL;
    /* every rank gathers (a collective); a root without room keeps NaN */
    double dummy[2];
    MPI_Gather(mine, 2, MPI_DOUBLE, all ? all : dummy, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (!all)
        return;
    for (int r = 0; r < e->size; r++)
        if (isfinite(all[2 * r]) && !(all[2 * r] <= pr->mem.peak_bytes)) {
            pr->mem.peak_bytes = all[2 * r];
            pr->mem.base_bytes = all[2 * r + 1];
        }
    free(all);
}

/* Every rank's rows and trace to rank 0, which writes the point's events; *rows_out gets
 * rank 0's gathered rows of a point measured here. */
static int point_gather(point_run *pr, const pdbx_point_source *source, char *msg, double **rows_out)
{
    pdbx_engine *e = pr->e;
    const int point = pr->pt->index;
    double rows[NROWS * NSTAT];
    for (int r = 0; r < NROWS; r++)
        pdbx_estats_pack(rows + r * NSTAT, pr->sm.s[r], pr->sm.n[r]);
    const int root = e->rank == 0;
    const size_t tcap = pr->sm.trace_cap;
    double *all = root ? malloc(sizeof rows * (size_t)e->size) : NULL;
    double *traces = root ? malloc(tcap * 4 * sizeof(double) * (size_t)e->size) : NULL;
    int *ntrace = root ? malloc(sizeof(int) * (size_t)e->size) : NULL;
    /* every rank learns whether rank 0 can receive before gathering into its buffers */
    int can_gather = !root || (all && traces && ntrace);
    if (!can_gather)
        snprintf(msg, MSG_LEN, "out of memory for the results of %d ranks", e->size);
    int status = pdbx_agree_status(e, can_gather ? PDBX_ST_OK : PDBX_ST_ERROR, msg, point);
    if (status == PDBX_ST_OK) {
        int mine = pr->compute ? (int)pr->sm.ntrace : 0;
        pdbx_watch_begin("gather", point);
        MPI_Gather(rows, NROWS * NSTAT, MPI_DOUBLE, all, NROWS * NSTAT, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Gather(pr->sm.trace, (int)(tcap * 4), MPI_DOUBLE, traces, (int)(tcap * 4), MPI_DOUBLE, 0,
                   MPI_COMM_WORLD);
        MPI_Gather(&mine, 1, MPI_INT, ntrace, 1, MPI_INT, 0, MPI_COMM_WORLD);
        gather_mem(pr);
        pdbx_watch_end();
        const int adaptive = e->spec.repetition == PDBX_REP_ADAPTIVE;
        pdbx_point_results res = { all, traces, ntrace, tcap, source ? source->rows : all,
                                   source ? source->point : -1,
                                   adaptive && !source ? pr->sm.stop : NULL };
        pdbx_point_results_events(e, pr->pt, &pr->bytes, &res);
        if (!source) {
            *rows_out = all;
            all = NULL;
        }
    }
    free(all);
    free(traces);
    free(ntrace);
    return status;
}

int pdbx_point_measure(pdbx_engine *e, const pdbx_plan_point *pt, pdbx_cfg_groups *cg,
                       const pdbx_point_source *source, char *msg, pdbx_point_outcome *out)
{
    point_run pr;
    memset(&pr, 0, sizeof pr);
    pr.e = e;
    pr.pt = pt;
    pr.cg = cg;
    pr.compute = source == NULL;
    layer_ops_init();
    pr.mem.peak_bytes = pr.mem.base_bytes = NAN;
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        pr.sample_op[op] = pdbx_point_sample_op(&e->spec, pt->tp, pt->mbs, (pdbx_op)op);
        pr.fused_leader[op] = e->spec.fused_projections ? pdbx_fused_leader((pdbx_op)op) : PDBX_OP_COUNT;
        pr.fused_share[op] = pdbx_fused_share(&e->spec, pt->tp, pt->mbs, (pdbx_op)op);
    }
    pr.comm_bytes = point_comm(e, pt, &pr.bytes);
    out->rows = NULL;
    out->setup_s = NAN;
    msg[0] = '\0';
    double setup_s = NAN;
    int status = point_prepare(&pr, msg, &setup_s);
    if (pr.compute)
        out->setup_s = setup_s;
    memset(&out->noise, 0, sizeof out->noise);
    if (status == PDBX_ST_OK) {
        /* the load while measuring, not while preparing; end is a collective every rank
         * makes, cancelled or not */
        pdbx_noise_begin(&e->noise, e->be.compute, e->compute);
        if (run_steps(&pr) == 1)
            status = -1;
        if (status == PDBX_ST_OK && e->spec.repetition == PDBX_REP_ADAPTIVE && run_cells(&pr) == 1)
            status = -1;
        pdbx_noise_end(&e->noise, e->be.compute, e->compute, &out->noise);
    }
    if (status == PDBX_ST_OK && pr.sm.oom)
        fail_with(&pr, "out of memory for the samples");
    if (status == PDBX_ST_OK) {
        status = pdbx_agree_status(e, failed_status(&pr), pr.msg, pt->index);
        if (status != PDBX_ST_OK)
            snprintf(msg, MSG_LEN, "%s", pr.msg);
    }
    if (status == PDBX_ST_OK) {
        /* keep the outputs alive: no op can be optimised away */
        if (pr.compute) {
            volatile double sink = e->be.compute->checksum(e->compute);
            (void)sink;
        }
        status = point_gather(&pr, source, msg, &out->rows);
    }
    if (pr.compute)
        e->be.compute->release(e->compute);
    samples_free(&pr.sm);
    out->mem = pr.mem;
    return status;
}
