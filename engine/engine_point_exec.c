/* engine_point_exec.c: one execution of an op, a span or a step's PP/DP collective, timed
 * and added to the point's samples, and a rank's first failure in the point
 * (engine_point_internal.h). */
#include "engine/engine_point_internal.h"

#include <stdio.h>
#include <unistd.h>

#include "store/util/clock.h"

/* The first failure of this rank in the point; the others are consequences. */
void pt_fail_with(point_run *pr, const char *err)
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
    pt_fail_with(pr, err);
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
        pt_push(&pr->sm, PDBX_ROW_OP(pass, op), part);
        if (trace)
            pt_push_trace(&pr->sm, op, layer, at, part);
        at += part;
    }
}

int pt_ep_alltoall(pdbx_op op)
{
    return op == PDBX_OP_EP_DISPATCH || op == PDBX_OP_EP_COMBINE;
}

/* Runs one execution of pass `pass` of op (a compute op, or a TP all-reduce) and adds its
 * sample; the trace keeps the step's forward (trace != 0). */
void pt_run_one(point_run *pr, pdbx_op op, pdbx_pass pass, int layer, double step0, int trace)
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
        if (pt_ep_alltoall(op)) {
            /* the EP all-to-alls at EP > 1, forward and backward, in the op's own cell (at EP 1
             * they move nothing and are not run) */
            if (pr->cg->ep < 2)
                return;
            if (coll_timed(pr, pr->cg->g[PDBX_GRID_EP], PDBX_COLL_ALL_TO_ALL, e->spec.dtype, pr->bytes.ep,
                           pdbx_op_name(op), &ms) != 0)
                return;
            pt_push(&pr->sm, PDBX_ROW_OP(pass, op), ms);
            if (trace)
                pt_push_trace(&pr->sm, op, layer, start - step0, ms);
            return;
        }
        /* the TP all-reduces at TP > 1, forward only */
        if (!pdbx_op_is_tp_allreduce(op) || pr->cg->tp < 2 || pass != PDBX_PASS_FWD)
            return;
        coll_timed(pr, pr->cg->g[PDBX_GRID_TP], PDBX_COLL_ALL_REDUCE, e->spec.dtype, pr->bytes.tp,
                   pdbx_op_name(op), &ms);
        pt_push(&pr->sm, PDBX_ROW_TP_ALL, ms);
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
    pt_push(&pr->sm, PDBX_ROW_OP(pass, pr->sample_op[op]), ms);
    if (trace)
        pt_push_trace(&pr->sm, op, pdbx_op_is_per_layer(op) ? layer : -1, start - step0, ms);
}

/* Brackets span s with the compute backend; a failure counts as a failed op (the point ends
 * as an error once the ranks agree). ms < 0 on end means nothing was measured. */
void pt_span(point_run *pr, pdbx_span s, int end, double *ms)
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

/* A once-per-step collective of the PP or DP group: PP sends activations in the run's dtype,
 * DP all-reduces one bucket of gradients in fp32 (Megatron's grad_reduce_in_fp32). In the step
 * phase (step0 >= 0) also in the step's trace at its offset from the step's start. */
void pt_step_comm(point_run *pr, pdbx_grid_kind kind, double step0)
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
    pt_push(&pr->sm, pp ? PDBX_ROW_PP : PDBX_ROW_DP, ms);
    if (step0 >= 0)
        pt_push_trace(&pr->sm, PDBX_TRACE_STEP_COMM(what), -1, start - step0, ms);
}
