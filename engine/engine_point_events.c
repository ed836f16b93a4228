/* engine_point_events.c: rank 0's events about one point (engine_point_events.h), built by
 * store/events.h's encoders from the gathered statistics rows. */
#include "engine/engine_point_events.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_adaptive.h"
#include "engine/engine_grid.h"
#include "engine/engine_stats.h"
#include "store/events.h"

#define NSTAT PDBX_ESTAT

/* World ranks of world rank 0's TP, PP and DP groups of the point's config, and room for the
 * per-TP-rank statistics of two cells (a step event holds two). */
typedef struct {
    int *tp, *pp, *dp;
    int ntp, npp, ndp;
    pdbx_stats *rank_stats[2];
} rank0_groups;

void pdbx_point_start_event(pdbx_engine *e, const pdbx_plan_point *pt)
{
    if (e->rank == 0)
        pdbx_events_emit(e->ev, pdbx_event_point_start(pt->index, pt->tp, pt->pp, pt->dp, pt->ep, pt->mbs));
}

void pdbx_point_end_event(pdbx_engine *e, int point, pdbx_point_status status, const char *msg)
{
    if (e->rank == 0)
        pdbx_events_emit(e->ev, pdbx_event_point_end(point, status, msg));
}

void pdbx_point_end_mem_event(pdbx_engine *e, const pdbx_plan_point *pt, pdbx_point_status status,
                              const char *msg, const pdbx_point_end_figures *fig)
{
    if (e->rank != 0)
        return;
    pdbx_ev_point_end pe = { .point = pt->index, .status = status, .message = msg,
                             .profile_mem_bytes = pt->profile_bytes,
                             .mem_peak_bytes = fig->mem.peak_bytes, .mem_base_bytes = fig->mem.base_bytes,
                             .setup_s = fig->setup_s, .noise = fig->noise };
    pdbx_events_emit(e->ev, pdbx_event_point_end_mem(&pe));
}

/* A cell as the op and step events carry it: stats the element-wise max over the TP ranks of
 * row, rank[i] each TP rank's own statistics (in g->rank_stats[slot]). */
static pdbx_cell row_cell(const double *all, int row, const rank0_groups *g, int slot)
{
    pdbx_cell c;
    memset(&c, 0, sizeof c);
    double st[NSTAT];
    pdbx_estats_max(all, PDBX_NROWS, g->tp, g->ntp, row, st);
    pdbx_estats_unpack(st, &c.stats);
    for (int i = 0; i < g->ntp; i++)
        pdbx_estats_unpack(all + ((size_t)g->tp[i] * PDBX_NROWS + row) * NSTAT, &g->rank_stats[slot][i]);
    c.valid = 1;
    c.nranks = g->ntp;
    c.rank = g->rank_stats[slot];
    return c;
}

static int row_measured(const double *all, int row)
{
    return all[(size_t)row * NSTAT] > 0;
}

/* FLOPs of one execution of pass `pass` of an op whose forward does `fwd`: a GEMM's
 * backward is two GEMMs of its size (dgrad, wgrad); the attention core's five of its two
 * (dS, dP, dQ, dK, dV against QK^T, PV); the element-wise ops' about twice, except RoPE's
 * (one inverse rotation) and a residual add's (one add of the gradient), which do the
 * forward's work again. */
static int bwd_repeats_fwd(pdbx_op op)
{
    return op == PDBX_OP_ATTN_ROPE || op == PDBX_OP_ATTN_RESIDUAL || op == PDBX_OP_MLP_RESIDUAL;
}

static double pass_flops(pdbx_op op, pdbx_pass pass, double fwd)
{
    if (pass == PDBX_PASS_FWD || bwd_repeats_fwd(op))
        return fwd;
    return op == PDBX_OP_ATTN_CORE ? 2.5 * fwd : 2 * fwd;
}

static void op_events(pdbx_engine *e, const pdbx_plan_point *pt, const pdbx_point_bytes *b,
                      const pdbx_point_results *res, const rank0_groups *g)
{
    for (int pass = 0; pass < PDBX_PASS_COUNT; pass++) {
        if (!(e->spec.passes & PDBX_PASS_BIT(pass)))
            continue;
        for (int op = 0; op < PDBX_OP_COUNT; op++) {
            pdbx_op from = pdbx_point_sample_op(&e->spec, pt->tp, pt->mbs, (pdbx_op)op);
            int row = PDBX_ROW_OP(pass, from);
            if (!(pdbx_spec_ops(&e->spec) & PDBX_OP_BIT(op)) || !row_measured(res->compute, row))
                continue;                   /* not measured (not in ops, TP 1 all-reduce, no bwd) */
            pdbx_cell c = row_cell(res->compute, row, g, 0);
            if (pdbx_op_is_tp_allreduce((pdbx_op)op)) {
                c.flops = 0;
                c.bytes = b->tp;
            } else if (pdbx_op_is_comm((pdbx_op)op)) {   /* the EP all-to-alls (EP > 1 only) */
                c.flops = 0;
                c.bytes = b->ep;
            } else {
                pdbx_op_shape shape;
                memset(&shape, 0, sizeof shape);
                pdbx_op_shape_ep(&e->spec, pt->tp, pt->ep, pt->mbs, (pdbx_op)op, &shape);
                c.flops = pass_flops((pdbx_op)op, (pdbx_pass)pass, shape.flops);
                c.bytes = pass == PDBX_PASS_FWD || bwd_repeats_fwd((pdbx_op)op) ? shape.bytes
                                                                                : 2 * shape.bytes;
            }
            c.shared = from != (pdbx_op)op;
            c.shared_op = from;
            if (e->spec.fused_projections && pdbx_fused_leader((pdbx_op)op) != PDBX_OP_COUNT) {
                c.fused = 1;
                c.fused_op = pdbx_fused_leader((pdbx_op)op);
                c.fused_share = pdbx_fused_share(&e->spec, pt->tp, pt->mbs, (pdbx_op)op);
            }
            c.reused = res->reused_from >= 0;
            c.source_point = res->reused_from;
            cJSON *ev = pdbx_event_op(pt->index, (pdbx_op)op, (pdbx_pass)pass, &c);
            const char *stop = res->stop ? pdbx_cell_state_name((pdbx_cell_state)res->stop[row])
                                         : NULL;
            if (ev && stop)   /* why the adaptive loop stopped sampling it (docs/events.md) */
                cJSON_AddStringToObject(ev, "stop", stop);
            if (ev && op == PDBX_OP_ATTN_CORE && strcmp(e->be.compute->name, "cuda") == 0) {
                /* what the cuda kernels execute (full s x s, or whole tiles) next to the
                 * model's causal-half flops (docs/events.md) */
                pdbx_op_shape shape;
                memset(&shape, 0, sizeof shape);
                pdbx_op_shape_for(&e->spec, pt->tp, pt->mbs, (pdbx_op)op, &shape);
                cJSON_AddNumberToObject(ev, "executed_flops", pdbx_attn_core_executed_flops(
                    e->spec.flash_attention, (pdbx_pass)pass, shape.batch, shape.m, shape.k,
                    PDBX_FLASH_TILE));
            }
            pdbx_events_emit(e->ev, ev);
        }
    }
}

/* The measured layer and step sums of a point (no event when no step was measured). */
static void step_event(pdbx_engine *e, int point, const double *all, const rank0_groups *g)
{
    /* a reused point's spans are its source's: its step event says so through its op events */
    if (!row_measured(all, PDBX_ROW_TOTAL))
        return;
    pdbx_cell layer = row_cell(all, PDBX_ROW_LAYER, g, 0);
    pdbx_cell total = row_cell(all, PDBX_ROW_TOTAL, g, 1);
    layer.valid = row_measured(all, PDBX_ROW_LAYER);
    pdbx_events_emit(e->ev, pdbx_event_step(point, &layer, &total));
}

/* One comm event: max over ranks[0..n) of row; algbw = S / mean, busbw by nccl-tests' factor. */
static void comm_event(pdbx_engine *e, int point, pdbx_comm_kind kind, double bytes,
                       pdbx_dtype dtype, int group_size, pdbx_coll coll, const double *all,
                       const int *ranks, int n, int row)
{
    double st[NSTAT];
    pdbx_estats_max(all, PDBX_NROWS, ranks, n, row, st);
    pdbx_comm_cell c = { .valid = 1, .bytes = bytes, .group_size = group_size };
    snprintf(c.dtype, sizeof c.dtype, "%s", pdbx_dtype_name(dtype));
    pdbx_estats_unpack(st, &c.time);
    double mean_s = c.time.mean / 1e3;
    c.algbw = mean_s > 0 ? bytes / mean_s / 1e9 : 0;
    c.busbw = c.algbw * pdbx_coll_busbw_factor(coll, group_size);
    pdbx_events_emit(e->ev, pdbx_event_comm(point, kind, &c));
}

static void comm_events(pdbx_engine *e, const pdbx_plan_point *pt, const pdbx_point_bytes *b,
                        const pdbx_point_results *res, const rank0_groups *g)
{
    const double *all = res->all;
    /* the TP all-reduce runs inside the layers: a reused point's comes with its compute rows */
    const double *tp_rows = res->compute;
    if (pt->tp > 1 && row_measured(tp_rows, PDBX_ROW_TP_ALL))
        comm_event(e, pt->index, PDBX_COMM_TP_ALLREDUCE, b->tp, e->spec.dtype, pt->tp, PDBX_COLL_ALL_REDUCE, tp_rows,
                   g->tp, g->ntp, PDBX_ROW_TP_ALL);
    if (pt->pp > 1 && row_measured(all, PDBX_ROW_PP)) {
        /* adjacent stages 0 -> 1: the receiver's time is when the data has arrived */
        int pair[2] = { g->pp[0], g->pp[1] };
        comm_event(e, pt->index, PDBX_COMM_PP_SENDRECV, b->pp, e->spec.dtype, 2, PDBX_COLL_SEND_RECV, all, pair,
                   g->npp > 1 ? 2 : 1, PDBX_ROW_PP);
    }
    if (pt->dp > 1 && row_measured(all, PDBX_ROW_DP))
        comm_event(e, pt->index, PDBX_COMM_DP_ALLREDUCE, b->dp, b->dp_dtype, pt->dp, PDBX_COLL_ALL_REDUCE, all,
                   g->dp, g->ndp, PDBX_ROW_DP);
    /* the EP all-to-all as a collective: ep_dispatch's forward cell (ep_combine's is the same
     * message the other way), max over rank 0's TP group as its op cell; it runs inside the
     * layers, so a reused point's comes with its compute rows */
    const int dispatch = PDBX_ROW_OP(PDBX_PASS_FWD, PDBX_OP_EP_DISPATCH);
    if (pt->ep > 1 && row_measured(tp_rows, dispatch))
        comm_event(e, pt->index, PDBX_COMM_EP_ALLTOALL, b->ep, e->spec.dtype, pt->ep, PDBX_COLL_ALL_TO_ALL, tp_rows,
                   g->tp, g->ntp, dispatch);
}

static void trace_events(pdbx_engine *e, int point, const pdbx_point_results *res)
{
    pdbx_trace_event *ops = malloc(sizeof *ops * (res->trace_cap ? res->trace_cap : 1));
    if (!ops) {
        fprintf(stderr, "pdbx-engine: point %d: out of memory for its trace events\n", point);
        return;
    }
    for (int r = 0; r < e->size; r++) {
        size_t n = (size_t)res->ntrace[r];
        for (size_t i = 0; i < n; i++) {
            const double *t = res->traces + ((size_t)r * res->trace_cap + i) * 4;
            const int slot = (int)t[0];
            const int comm = slot >= PDBX_OP_COUNT ? slot - PDBX_OP_COUNT : -1;
            ops[i] = (pdbx_trace_event){ .point = point, .rank = r,
                                         .op = comm < 0 ? (pdbx_op)slot : PDBX_OP_COUNT,
                                         .comm = comm, .layer = (int)t[1], .start_us = t[2],
                                         .dur_us = t[3] };
        }
        pdbx_events_emit(e->ev, pdbx_event_trace(point, r, ops, n));
    }
    free(ops);
}

void pdbx_point_results_events(pdbx_engine *e, const pdbx_plan_point *pt,
                               const pdbx_point_bytes *bytes, const pdbx_point_results *res)
{
    if (e->rank != 0)
        return;
    /* each group has at most the world's ranks */
    int *members = malloc(3 * sizeof(int) * (size_t)e->size);
    pdbx_stats *stats = malloc(2 * sizeof *stats * (size_t)e->size);
    if (!members || !stats) {
        fprintf(stderr, "pdbx-engine: point %d: out of memory for its events\n", pt->index);
        free(members);
        free(stats);
        return;
    }
    rank0_groups g = { .tp = members, .pp = members + e->size, .dp = members + 2 * e->size,
                       .rank_stats = { stats, stats + e->size } };
    g.ntp = pdbx_grid_group(0, pt->tp, pt->pp, pt->dp, 1, PDBX_GRID_TP, g.tp, NULL);
    g.npp = pdbx_grid_group(0, pt->tp, pt->pp, pt->dp, 1, PDBX_GRID_PP, g.pp, NULL);
    g.ndp = pdbx_grid_group(0, pt->tp, pt->pp, pt->dp, 1, PDBX_GRID_DP, g.dp, NULL);
    op_events(e, pt, bytes, res, &g);
    step_event(e, pt->index, res->compute, &g);
    comm_events(e, pt, bytes, res, &g);
    if (res->reused_from < 0)
        trace_events(e, pt->index, res);
    free(members);
    free(stats);
}
