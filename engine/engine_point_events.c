/* engine_point_events.c: rank 0's events about one point (engine_point_events.h). */
#include "engine/engine_point_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_grid.h"
#include "engine/engine_stats.h"

#define NSTAT PDBX_ESTAT

/* World ranks of world rank 0's TP, PP and DP groups of the point's config. */
typedef struct {
    int *tp, *pp, *dp;
    int ntp, npp, ndp;
} rank0_groups;

void pdbx_point_start_event(pdbx_engine *e, const pdbx_plan_point *pt)
{
    if (e->rank != 0)
        return;
    cJSON *ev = cJSON_CreateObject();
    int ok = cJSON_AddStringToObject(ev, "type", "point_start") &&
             cJSON_AddNumberToObject(ev, "point", pt->index) &&
             cJSON_AddNumberToObject(ev, "tp", pt->tp) &&
             cJSON_AddNumberToObject(ev, "pp", pt->pp) &&
             cJSON_AddNumberToObject(ev, "dp", pt->dp) &&
             cJSON_AddNumberToObject(ev, "mbs", pt->mbs);
    pdbx_events_emit(e->ev, pdbx_json_complete(ev, ok));
}

void pdbx_point_end_event(pdbx_engine *e, int point, const char *status, const char *msg)
{
    if (e->rank != 0)
        return;
    cJSON *ev = cJSON_CreateObject();
    int ok = cJSON_AddStringToObject(ev, "type", "point_end") &&
             cJSON_AddNumberToObject(ev, "point", point) &&
             cJSON_AddStringToObject(ev, "status", status) &&
             (!msg || !*msg || cJSON_AddStringToObject(ev, "message", msg));
    pdbx_events_emit(e->ev, pdbx_json_complete(ev, ok));
}

/* A cell as the op and step events carry it: `key` the element-wise max over the TP ranks of
 * row, `ranks_key` each TP rank's own statistics. */
static int add_cell(cJSON *ev, const char *key, const char *ranks_key, const double *all, int row,
                    const rank0_groups *g)
{
    double st[NSTAT];
    pdbx_estats_max(all, PDBX_NROWS, g->tp, g->ntp, row, st);
    if (!pdbx_json_add(ev, key, pdbx_estats_json(st)))
        return 0;
    cJSON *ranks = cJSON_AddArrayToObject(ev, ranks_key);
    int ok = ranks != NULL;
    for (int i = 0; ok && i < g->ntp; i++)
        ok = pdbx_json_push(ranks, pdbx_estats_json(all + ((size_t)g->tp[i] * PDBX_NROWS + row) * NSTAT));
    return ok;
}

static void op_events(pdbx_engine *e, const pdbx_plan_point *pt, const pdbx_point_bytes *b,
                      const double *all, const rank0_groups *g)
{
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        if (all[(size_t)op * NSTAT] <= 0)
            continue;                       /* not measured (not in ops, or TP 1 all-reduce) */
        cJSON *ev = cJSON_CreateObject();
        int ok = cJSON_AddStringToObject(ev, "type", "op") &&
                 cJSON_AddNumberToObject(ev, "point", pt->index) &&
                 cJSON_AddStringToObject(ev, "op", pdbx_op_name((pdbx_op)op)) &&
                 add_cell(ev, "stats", "ranks", all, op, g);
        pdbx_op_shape shape;
        memset(&shape, 0, sizeof shape);
        if (pdbx_op_is_comm((pdbx_op)op)) {
            ok = ok && cJSON_AddNumberToObject(ev, "flops", 0) &&
                 cJSON_AddNumberToObject(ev, "bytes", b->tp);
        } else {
            pdbx_op_shape_for(&e->spec, pt->tp, pt->mbs, (pdbx_op)op, &shape);
            ok = ok && cJSON_AddNumberToObject(ev, "flops", shape.flops) &&
                 cJSON_AddNumberToObject(ev, "bytes", shape.bytes);
        }
        pdbx_events_emit(e->ev, pdbx_json_complete(ev, ok));
    }
}

/* The measured layer and step sums of a point (no event when no step was measured). */
static void step_event(pdbx_engine *e, int point, const double *all, const rank0_groups *g)
{
    if (all[(size_t)PDBX_ROW_TOTAL * NSTAT] <= 0)
        return;
    cJSON *ev = cJSON_CreateObject();
    int ok = cJSON_AddStringToObject(ev, "type", "step") &&
             cJSON_AddNumberToObject(ev, "point", point) &&
             add_cell(ev, "layer", "layer_ranks", all, PDBX_ROW_LAYER, g) &&
             add_cell(ev, "total", "total_ranks", all, PDBX_ROW_TOTAL, g);
    pdbx_events_emit(e->ev, pdbx_json_complete(ev, ok));
}

static void comm_event(pdbx_engine *e, int point, const char *kind, double bytes, int group_size,
                       pdbx_coll coll, const double *st)
{
    double mean_s = st[3] / 1e3;
    double algbw = mean_s > 0 ? bytes / mean_s / 1e9 : 0;
    cJSON *ev = cJSON_CreateObject();
    int ok = cJSON_AddStringToObject(ev, "type", "comm") &&
             cJSON_AddNumberToObject(ev, "point", point) &&
             cJSON_AddStringToObject(ev, "kind", kind) &&
             cJSON_AddNumberToObject(ev, "bytes", bytes) &&
             cJSON_AddNumberToObject(ev, "group_size", group_size) &&
             pdbx_json_add(ev, "stats", pdbx_estats_json(st)) &&
             cJSON_AddNumberToObject(ev, "algbw", algbw) &&
             cJSON_AddNumberToObject(ev, "busbw", algbw * pdbx_coll_busbw_factor(coll, group_size));
    pdbx_events_emit(e->ev, pdbx_json_complete(ev, ok));
}

static void comm_events(pdbx_engine *e, const pdbx_plan_point *pt, const pdbx_point_bytes *b,
                        const double *all, const rank0_groups *g)
{
    double st[NSTAT];
    if (pt->tp > 1 && all[(size_t)PDBX_ROW_TP_ALL * NSTAT] > 0) {
        pdbx_estats_max(all, PDBX_NROWS, g->tp, g->ntp, PDBX_ROW_TP_ALL, st);
        comm_event(e, pt->index, "tp_allreduce", b->tp, pt->tp, PDBX_COLL_ALL_REDUCE, st);
    }
    if (pt->pp > 1 && all[(size_t)PDBX_ROW_PP * NSTAT] > 0) {
        /* adjacent stages 0 -> 1: the receiver's time is when the data has arrived */
        int pair[2] = { g->pp[0], g->pp[1] };
        pdbx_estats_max(all, PDBX_NROWS, pair, g->npp > 1 ? 2 : 1, PDBX_ROW_PP, st);
        comm_event(e, pt->index, "pp_sendrecv", b->pp, 2, PDBX_COLL_SEND_RECV, st);
    }
    if (pt->dp > 1 && all[(size_t)PDBX_ROW_DP * NSTAT] > 0) {
        pdbx_estats_max(all, PDBX_NROWS, g->dp, g->ndp, PDBX_ROW_DP, st);
        comm_event(e, pt->index, "dp_allreduce", b->dp, pt->dp, PDBX_COLL_ALL_REDUCE, st);
    }
}

static void trace_events(pdbx_engine *e, int point, const pdbx_point_results *res)
{
    for (int r = 0; r < e->size; r++) {
        cJSON *ev = cJSON_CreateObject();
        int ok = cJSON_AddStringToObject(ev, "type", "trace") &&
                 cJSON_AddNumberToObject(ev, "point", point) &&
                 cJSON_AddNumberToObject(ev, "rank", r);
        cJSON *ops = ok ? cJSON_AddArrayToObject(ev, "ops") : NULL;
        ok = ok && ops;
        for (int i = 0; ok && i < res->ntrace[r]; i++) {
            const double *t = res->traces + ((size_t)r * res->trace_cap + (size_t)i) * 4;
            cJSON *one = cJSON_CreateArray();
            ok = pdbx_json_push(ops, one) &&
                 pdbx_json_push(one, cJSON_CreateString(pdbx_op_name((pdbx_op)(int)t[0]))) &&
                 pdbx_json_push(one, cJSON_CreateNumber(t[1])) &&
                 pdbx_json_push(one, cJSON_CreateNumber(t[2])) &&
                 pdbx_json_push(one, cJSON_CreateNumber(t[3]));
        }
        pdbx_events_emit(e->ev, pdbx_json_complete(ev, ok));
    }
}

void pdbx_point_results_events(pdbx_engine *e, const pdbx_plan_point *pt,
                               const pdbx_point_bytes *bytes, const pdbx_point_results *res)
{
    if (e->rank != 0)
        return;
    /* each group has at most the world's ranks */
    int *members = malloc(3 * sizeof(int) * (size_t)e->size);
    if (!members) {
        fprintf(stderr, "pdbx-engine: point %d: out of memory for its events\n", pt->index);
        return;
    }
    rank0_groups g = { .tp = members, .pp = members + e->size, .dp = members + 2 * e->size };
    g.ntp = pdbx_grid_group(0, pt->tp, pt->pp, pt->dp, PDBX_GRID_TP, g.tp, NULL);
    g.npp = pdbx_grid_group(0, pt->tp, pt->pp, pt->dp, PDBX_GRID_PP, g.pp, NULL);
    g.ndp = pdbx_grid_group(0, pt->tp, pt->pp, pt->dp, PDBX_GRID_DP, g.dp, NULL);
    op_events(e, pt, bytes, res->all, &g);
    step_event(e, pt->index, res->all, &g);
    comm_events(e, pt, bytes, res->all, &g);
    trace_events(e, pt->index, res);
    free(members);
}
