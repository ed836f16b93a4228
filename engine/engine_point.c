/* engine_point.c: the point loop (engine_point.h): a point's lifecycle (prepare, the step and
 * op phases, agreement on the outcome, gather to rank 0 and its events, release). The phases
 * and the sample bookkeeping are in engine_point_{steps,cells,exec,samples}.c. */
#include "engine/engine_point_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_agree.h"
#include "engine/engine_noise.h"
#include "engine/engine_point_events.h"
#include "engine/engine_stats.h"
#include "engine/plan/plan_comm.h"
#include "store/util/clock.h"

/* The agreed status of a point whose steps ran: OK, OOM (its first failure was an
 * allocation), ERROR, or FATAL. */
static int failed_status(const point_run *pr)
{
    return pr->fatal ? PDBX_ST_FATAL : !pr->failed ? PDBX_ST_OK : pr->oom ? PDBX_ST_OOM : PDBX_ST_ERROR;
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
    ps->moe_imbalance = e->spec.moe_imbalance;
    ps->ep = pt->ep > 1 ? pt->ep : 1;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        pdbx_op_shape_ep(&e->spec, pt->tp, ps->ep, pt->mbs, (pdbx_op)op, &ps->shape[op]);
}

/* The comm buffer the point's collectives share (0: none runs) and their messages: the
 * planner's sizing (plan_comm.h), the one its profile memory lists, with the backend this
 * engine loaded. */
static double point_comm(const pdbx_engine *e, const pdbx_plan_point *pt, pdbx_point_bytes *b)
{
    pdbx_plan_comm pc;
    const pdbx_parallel par = { pt->tp, pt->pp, pt->dp, pt->ep };
    pdbx_plan_comm_point(&e->spec.model, &par, pt->mbs, e->spec.seq_len, e->spec.dtype,
                         pdbx_engine_backend_kind(e), e->spec.moe_imbalance, &pc);
    memset(b, 0, sizeof *b);
    b->tp = pc.tp_bytes;
    b->pp = pc.pp_bytes;
    b->dp = pc.dp_bytes;
    b->ep = pc.ep_bytes;
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
    if (pt_samples_init(&pr->sm, e->spec.layers_profiled) != 0) {
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
    pt_layer_ops_init();
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
        if (pt_run_steps(&pr) == 1)
            status = -1;
        if (status == PDBX_ST_OK && e->spec.repetition == PDBX_REP_ADAPTIVE && pt_run_cells(&pr) == 1)
            status = -1;
        pdbx_noise_end(&e->noise, e->be.compute, e->compute, &out->noise);
    }
    if (status == PDBX_ST_OK && pr.sm.oom)
        pt_fail_with(&pr, "out of memory for the samples");
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
    pt_samples_free(&pr.sm);
    out->mem = pr.mem;
    return status;
}
