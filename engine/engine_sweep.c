/* engine_sweep.c: points, measurement, gathering to rank 0, events (engine_sweep.h). */
#include "engine/engine_sweep.h"
#include "engine/engine_grid.h"
#include "engine/engine_stats.h"
#include "store/profiledb.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* DP all-reduce message cap on the cpu backend: a real stage's gradients (GBs) would take
 * minutes through shared memory and measure nothing new; the cap is stated in a warning. */
#define CPU_DP_CAP_BYTES (64.0 * 1024 * 1024)

#define NSTAT PDBX_ESTAT                       /* count, min, max, mean, median, std */
#define ROW_TP_ALL PDBX_OP_COUNT              /* both TP all-reduces together */
#define ROW_PP (PDBX_OP_COUNT + 1)
#define ROW_DP (PDBX_OP_COUNT + 2)
#define ROW_LAYER (PDBX_OP_COUNT + 3)         /* one layer's forward, per layer and step */
#define ROW_TOTAL (PDBX_OP_COUNT + 4)         /* one step's forward, per step */
#define NROWS (PDBX_OP_COUNT + 5)
#define MSG_LEN 256

enum { ST_OK = 0, ST_OOM = 1, ST_ERROR = 2 };

double pdbx_engine_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_ms(void)
{
    return pdbx_engine_now() * 1e3;
}

/* ---- groups of one parallel config ------------------------------------------------------- */
typedef struct {
    int tp, pp, dp;
    MPI_Comm mpi[3];
    pdbx_group *g[3];
    int built;
} cfg_groups;

static int bcast_cb(void *buf, size_t len, int root, void *ctx)
{
    return MPI_Bcast(buf, (int)len, MPI_BYTE, root, *(MPI_Comm *)ctx) == MPI_SUCCESS ? 0 : -1;
}

static void groups_free(pdbx_engine *e, cfg_groups *cg)
{
    for (int k = 0; k < 3; k++) {
        if (cg->g[k])
            e->be.comm->group_destroy(e->comm, cg->g[k]);
        cg->g[k] = NULL;
        if (cg->mpi[k] != MPI_COMM_NULL)
            MPI_Comm_free(&cg->mpi[k]);
        cg->mpi[k] = MPI_COMM_NULL;
    }
    cg->built = 0;
}

static int groups_build(pdbx_engine *e, cfg_groups *cg, int tp, int pp, int dp, char *err,
                        size_t errlen)
{
    cg->tp = tp;
    cg->pp = pp;
    cg->dp = dp;
    for (int k = 0; k < 3; k++) {
        cg->mpi[k] = MPI_COMM_NULL;
        cg->g[k] = NULL;
    }
    /* a group has at most the world's ranks (a DP group alone may hold all of them) */
    int *members = malloc(sizeof(int) * (size_t)e->size);
    if (!members) {
        snprintf(err, errlen, "out of memory for the groups of %d ranks", e->size);
        return -1;
    }
    for (int k = 0; k < 3; k++) {
        int color = pdbx_grid_color(e->rank, tp, pp, dp, (pdbx_grid_kind)k);
        int me = 0;
        int n = pdbx_grid_group(e->rank, tp, pp, dp, (pdbx_grid_kind)k, members, &me);
        if (color < 0 || n < 1) {
            snprintf(err, errlen, "config tp %d pp %d dp %d does not fit %d ranks", tp, pp, dp, e->size);
            goto fail;
        }
        pdbx_watch_begin("comm_split", -1);
        int rc = MPI_Comm_split(MPI_COMM_WORLD, color, me, &cg->mpi[k]);
        pdbx_watch_end();
        if (rc != MPI_SUCCESS) {
            snprintf(err, errlen, "MPI_Comm_split for the %s group failed", pdbx_grid_kind_name(k));
            goto fail;
        }
        pdbx_group_desc d = {
            .group_rank = me, .group_size = n, .world_rank = e->rank, .world_size = e->size,
            .mpi_comm = &cg->mpi[k], .bcast = bcast_cb, .bcast_ctx = &cg->mpi[k],
        };
        pdbx_watch_begin("group_create", -1);
        rc = e->be.comm->group_create(e->comm, &d, &cg->g[k], err, errlen);
        pdbx_watch_end();
        if (rc != 0)
            goto fail;
    }
    free(members);
    cg->built = 1;
    return 0;
fail:
    free(members);
    groups_free(e, cg);
    return -1;
}

/* ---- per-rank samples of one point ------------------------------------------------------- */
typedef struct {
    double *s[NROWS];
    size_t n[NROWS], cap[NROWS];
    double *trace;             /* [op, layer, start_us, dur_us] per entry */
    size_t ntrace, trace_cap;
} samples;

static void samples_free(samples *sm)
{
    for (int r = 0; r < NROWS; r++)
        free(sm->s[r]);
    free(sm->trace);
    memset(sm, 0, sizeof *sm);
}

static int samples_init(samples *sm, int layers, int steps)
{
    memset(sm, 0, sizeof *sm);
    for (int r = 0; r < NROWS; r++) {
        sm->cap[r] = (size_t)(2 * layers + 1) * (size_t)steps;
        sm->s[r] = malloc(sm->cap[r] * sizeof(double));
        if (!sm->s[r])
            goto fail;
    }
    sm->trace_cap = (size_t)(3 + layers * PDBX_OP_COUNT + 2);
    sm->trace = calloc(sm->trace_cap * 4, sizeof(double));
    if (!sm->trace)
        goto fail;
    return 0;
fail:
    samples_free(sm);
    return -1;
}

static void push(samples *sm, int row, double ms)
{
    if (sm->n[row] < sm->cap[row])
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

/* ---- events -------------------------------------------------------------------------------- */
static int emit(pdbx_engine *e, cJSON *ev)
{
    char err[512];
    if (pdbx_events_append(e->ev, ev, err, sizeof err) != 0) {
        fprintf(stderr, "pdbx-engine: writing an event: %s\n", err);
        return -1;
    }
    return 0;
}

/* Event building: a field that cannot be added (out of memory) drops the whole event, so no
 * event goes to the store with fields missing; emit(NULL) reports it. The add_* helpers take
 * ownership of item: it is freed when it cannot be attached (or is NULL). */
static int add_item(cJSON *obj, const char *name, cJSON *item)
{
    if (!item || !obj || !cJSON_AddItemToObject(obj, name, item)) {
        cJSON_Delete(item);
        return 0;
    }
    return 1;
}

static int add_to_array(cJSON *arr, cJSON *item)
{
    if (!item || !arr || !cJSON_AddItemToArray(arr, item)) {
        cJSON_Delete(item);
        return 0;
    }
    return 1;
}

static cJSON *complete_or_null(cJSON *ev, int ok)
{
    if (ok)
        return ev;
    cJSON_Delete(ev);
    return NULL;
}

static void point_end(pdbx_engine *e, int point, const char *status, const char *msg)
{
    if (e->rank != 0)
        return;
    cJSON *ev = cJSON_CreateObject();
    int ok = cJSON_AddStringToObject(ev, "type", "point_end") &&
             cJSON_AddNumberToObject(ev, "point", point) &&
             cJSON_AddStringToObject(ev, "status", status) &&
             (!msg || !*msg || cJSON_AddStringToObject(ev, "message", msg));
    emit(e, complete_or_null(ev, ok));
}

static cJSON *stats_json(const double *packed)
{
    pdbx_stats st;
    pdbx_estats_unpack(packed, &st);
    return pdbx_stats_to_json(&st);
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
             add_item(ev, "stats", stats_json(st)) &&
             cJSON_AddNumberToObject(ev, "algbw", algbw) &&
             cJSON_AddNumberToObject(ev, "busbw", algbw * pdbx_coll_busbw_factor(coll, group_size));
    emit(e, complete_or_null(ev, ok));
}

/* ---- agreement across ranks ---------------------------------------------------------------- */
/* Max of every rank's status; rank 0 gets the first failing rank's message in msg. */
static int agree_status(pdbx_engine *e, int status, char *msg, int point)
{
    int all = status;
    pdbx_watch_begin("agree", point);
    MPI_Allreduce(&status, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (all != ST_OK) {
        /* the lowest rank with that status and a message sends it: no buffer of every rank's
         * message on rank 0 (whose allocation could fail inside a collective) */
        int mine = status == all && msg[0] ? e->rank : INT_MAX, first = INT_MAX;
        MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (first != INT_MAX) {
            char theirs[MSG_LEN];
            if (e->rank == first)
                snprintf(theirs, sizeof theirs, "%s", msg);
            MPI_Bcast(theirs, MSG_LEN, MPI_CHAR, first, MPI_COMM_WORLD);
            if (e->rank == 0 && first == 0)
                snprintf(msg, MSG_LEN, "%.250s", theirs);
            else if (e->rank == 0)
                snprintf(msg, MSG_LEN, "rank %d: %.230s", first, theirs);
        }
    }
    pdbx_watch_end();
    return all;
}

static int agree_cancel(pdbx_engine *e, int point)
{
    int mine = pdbx_watch_cancelled(), any = 0;
    pdbx_watch_begin("agree_cancel", point);
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    pdbx_watch_end();
    if (any)
        e->cancelled = 1;
    return any;
}

/* ---- one point ---------------------------------------------------------------------------- */
typedef struct {
    pdbx_engine *e;
    const pdbx_plan_point *pt;
    cfg_groups *cg;
    samples sm;
    void *buf;
    double tp_bytes, pp_bytes, dp_bytes;
    int failed;                /* a compute op failed: keep joining collectives, report error */
    char msg[MSG_LEN];
} point_run;

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

static int coll_timed(point_run *pr, pdbx_group *g, pdbx_coll coll, double bytes,
                      const char *name, double *ms)
{
    pdbx_engine *e = pr->e;
    int point = pr->pt->index;
    pdbx_watch_begin("barrier", point);
    e->be.comm->barrier(e->comm, g);
    pdbx_watch_end();
    pdbx_watch_begin(name, point);
    char err[MSG_LEN];
    int rc = e->be.comm->run(e->comm, g, coll, pr->buf, (size_t)bytes, ms, err, sizeof err);
    pdbx_watch_end();
    if (rc != 0 && !pr->failed) {
        pr->failed = 1;
        snprintf(pr->msg, sizeof pr->msg, "%s", err);
    }
    return rc;
}

static void run_one(point_run *pr, pdbx_op op, int layer, double step0, int measured, int last)
{
    pdbx_engine *e = pr->e;
    if (!(e->spec.ops & PDBX_OP_BIT(op)))
        return;
    if (e->ev)
        pdbx_events_progress_op(e->ev, pdbx_op_name(op));
    double start = now_ms(), ms = 0;
    if (pdbx_op_is_comm(op)) {
        if (pr->cg->tp < 2)
            return;
        coll_timed(pr, pr->cg->g[PDBX_GRID_TP], PDBX_COLL_ALL_REDUCE, pr->tp_bytes,
                   pdbx_op_name(op), &ms);
        if (measured)
            push(&pr->sm, ROW_TP_ALL, ms);
    } else {
        if (pr->failed)
            return;
        fault_check(pr);
        char err[MSG_LEN];
        pdbx_watch_begin(pdbx_op_name(op), pr->pt->index);
        int rc = e->be.compute->run_op(e->compute, op, layer, &ms, err, sizeof err);
        pdbx_watch_end();
        if (rc != 0) {
            pr->failed = 1;
            snprintf(pr->msg, sizeof pr->msg, "%s", err);
            return;
        }
    }
    if (measured)
        push(&pr->sm, op, ms);
    if (last)
        push_trace(&pr->sm, op, pdbx_op_is_per_layer(op) ? layer : -1, start - step0, ms);
}

static const pdbx_op layer_ops[] = {
    PDBX_OP_INPUT_NORM, PDBX_OP_ATTN_Q, PDBX_OP_ATTN_K, PDBX_OP_ATTN_V, PDBX_OP_ATTN_CORE,
    PDBX_OP_ATTN_O, PDBX_OP_TP_ALLREDUCE_ATTN, PDBX_OP_POST_ATTN_NORM, PDBX_OP_MLP_GATE,
    PDBX_OP_MLP_UP, PDBX_OP_MLP_ACT_FN, PDBX_OP_MLP_DOWN, PDBX_OP_TP_ALLREDUCE_MLP,
};

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
        pr->failed = 1;
        snprintf(pr->msg, sizeof pr->msg, "%s", err);
        *ms = -1;
    }
}

/* One step's forward: embed, every profiled layer, final_norm, lm_head, with the layer and
 * step spans measured around them (the sums of profiledb.h's layer and total cells). */
static void run_forward(point_run *pr, double step0, int measured, int last)
{
    const pdbx_spec *sp = &pr->e->spec;
    double ms = 0;
    span(pr, PDBX_SPAN_STEP, 0, &ms);
    run_one(pr, PDBX_OP_EMBED, -1, step0, measured, last);
    for (int l = 0; l < sp->layers_profiled; l++) {
        span(pr, PDBX_SPAN_LAYER, 0, &ms);
        for (size_t i = 0; i < sizeof layer_ops / sizeof layer_ops[0]; i++)
            run_one(pr, layer_ops[i], l, step0, measured, last);
        span(pr, PDBX_SPAN_LAYER, 1, &ms);
        if (measured && ms >= 0)
            push(&pr->sm, ROW_LAYER, ms);
    }
    run_one(pr, PDBX_OP_FINAL_NORM, -1, step0, measured, last);
    run_one(pr, PDBX_OP_LM_HEAD, -1, step0, measured, last);
    span(pr, PDBX_SPAN_STEP, 1, &ms);
    if (measured && ms >= 0)
        push(&pr->sm, ROW_TOTAL, ms);
}

/* Runs warmup + measured steps. Returns 0, or 1 when cancelled. */
static int run_steps(point_run *pr)
{
    pdbx_engine *e = pr->e;
    const pdbx_spec *sp = &e->spec;
    const int total = sp->warmup + sp->steps;
    for (int s = 0; s < total; s++) {
        if (agree_cancel(e, pr->pt->index))
            return 1;
        int measured = s >= sp->warmup, last = s == total - 1;
        double step0 = now_ms();
        run_forward(pr, step0, measured, last);
        double ms = 0;
        if (pr->cg->pp > 1) {
            if (e->ev)
                pdbx_events_progress_op(e->ev, "pp_sendrecv");
            coll_timed(pr, pr->cg->g[PDBX_GRID_PP], PDBX_COLL_SEND_RECV, pr->pp_bytes,
                       "pp_sendrecv", &ms);
            if (measured)
                push(&pr->sm, ROW_PP, ms);
        }
        if (pr->cg->dp > 1) {
            if (e->ev)
                pdbx_events_progress_op(e->ev, "dp_allreduce");
            coll_timed(pr, pr->cg->g[PDBX_GRID_DP], PDBX_COLL_ALL_REDUCE, pr->dp_bytes,
                       "dp_allreduce", &ms);
            if (measured)
                push(&pr->sm, ROW_DP, ms);
        }
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
    ps->ops = e->spec.ops;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        pdbx_op_shape_for(&e->spec, pt->tp, pt->mbs, (pdbx_op)op, &ps->shape[op]);
}

/* A cell as the op and step events carry it: `key` the element-wise max over the TP ranks of
 * row, `ranks_key` each TP rank's own statistics. */
static int add_cell(cJSON *ev, const char *key, const char *ranks_key, const double *all, int row,
                    const int *tp_members, int ntp)
{
    double st[NSTAT];
    pdbx_estats_max(all, NROWS, tp_members, ntp, row, st);
    if (!add_item(ev, key, stats_json(st)))
        return 0;
    cJSON *ranks = cJSON_AddArrayToObject(ev, ranks_key);
    int ok = ranks != NULL;
    for (int i = 0; ok && i < ntp; i++)
        ok = add_to_array(ranks, stats_json(all + ((size_t)tp_members[i] * NROWS + row) * NSTAT));
    return ok;
}

/* The measured layer and step sums of a point (no event when no step was measured). */
static void step_event(pdbx_engine *e, int point, const double *all, const int *tp_members, int ntp)
{
    if (all[(size_t)ROW_TOTAL * NSTAT] <= 0)
        return;
    cJSON *ev = cJSON_CreateObject();
    int ok = cJSON_AddStringToObject(ev, "type", "step") &&
             cJSON_AddNumberToObject(ev, "point", point) &&
             add_cell(ev, "layer", "layer_ranks", all, ROW_LAYER, tp_members, ntp) &&
             add_cell(ev, "total", "total_ranks", all, ROW_TOTAL, tp_members, ntp);
    emit(e, complete_or_null(ev, ok));
}

/* Rank 0: op, step, comm and trace events of a measured point from every rank's packed rows. */
static void write_point_events(pdbx_engine *e, const point_run *pr, const double *all,
                               const double *traces, const int *ntrace, size_t trace_cap)
{
    const pdbx_plan_point *pt = pr->pt;
    /* each group has at most the world's ranks */
    int *tp_members = malloc(3 * sizeof(int) * (size_t)e->size);
    if (!tp_members) {
        fprintf(stderr, "pdbx-engine: point %d: out of memory for its events\n", pt->index);
        return;
    }
    int *pp_members = tp_members + e->size, *dp_members = pp_members + e->size;
    int ntp = pdbx_grid_group(0, pt->tp, pt->pp, pt->dp, PDBX_GRID_TP, tp_members, NULL);
    int npp = pdbx_grid_group(0, pt->tp, pt->pp, pt->dp, PDBX_GRID_PP, pp_members, NULL);
    int ndp = pdbx_grid_group(0, pt->tp, pt->pp, pt->dp, PDBX_GRID_DP, dp_members, NULL);
    double st[NSTAT];
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        if (all[(size_t)op * NSTAT] <= 0)
            continue;                       /* not measured (not in ops, or TP 1 all-reduce) */
        cJSON *ev = cJSON_CreateObject();
        int ok = cJSON_AddStringToObject(ev, "type", "op") &&
                 cJSON_AddNumberToObject(ev, "point", pt->index) &&
                 cJSON_AddStringToObject(ev, "op", pdbx_op_name((pdbx_op)op)) &&
                 add_cell(ev, "stats", "ranks", all, op, tp_members, ntp);
        pdbx_op_shape shape;
        memset(&shape, 0, sizeof shape);
        if (pdbx_op_is_comm((pdbx_op)op)) {
            ok = ok && cJSON_AddNumberToObject(ev, "flops", 0) &&
                 cJSON_AddNumberToObject(ev, "bytes", pr->tp_bytes);
        } else {
            pdbx_op_shape_for(&e->spec, pt->tp, pt->mbs, (pdbx_op)op, &shape);
            ok = ok && cJSON_AddNumberToObject(ev, "flops", shape.flops) &&
                 cJSON_AddNumberToObject(ev, "bytes", shape.bytes);
        }
        emit(e, complete_or_null(ev, ok));
    }
    step_event(e, pt->index, all, tp_members, ntp);
    if (pt->tp > 1 && all[(size_t)ROW_TP_ALL * NSTAT] > 0) {
        pdbx_estats_max(all, NROWS, tp_members, ntp, ROW_TP_ALL, st);
        comm_event(e, pt->index, "tp_allreduce", pr->tp_bytes, pt->tp, PDBX_COLL_ALL_REDUCE, st);
    }
    if (pt->pp > 1 && all[(size_t)ROW_PP * NSTAT] > 0) {
        /* adjacent stages 0 -> 1: the receiver's time is when the data has arrived */
        int pair[2] = { pp_members[0], pp_members[1] };
        pdbx_estats_max(all, NROWS, pair, npp > 1 ? 2 : 1, ROW_PP, st);
        comm_event(e, pt->index, "pp_sendrecv", pr->pp_bytes, 2, PDBX_COLL_SEND_RECV, st);
    }
    if (pt->dp > 1 && all[(size_t)ROW_DP * NSTAT] > 0) {
        pdbx_estats_max(all, NROWS, dp_members, ndp, ROW_DP, st);
        comm_event(e, pt->index, "dp_allreduce", pr->dp_bytes, pt->dp, PDBX_COLL_ALL_REDUCE, st);
    }
    for (int r = 0; r < e->size; r++) {
        cJSON *ev = cJSON_CreateObject();
        int ok = cJSON_AddStringToObject(ev, "type", "trace") &&
                 cJSON_AddNumberToObject(ev, "point", pt->index) &&
                 cJSON_AddNumberToObject(ev, "rank", r);
        cJSON *ops = ok ? cJSON_AddArrayToObject(ev, "ops") : NULL;
        ok = ok && ops;
        for (int i = 0; ok && i < ntrace[r]; i++) {
            const double *t = traces + ((size_t)r * trace_cap + (size_t)i) * 4;
            cJSON *one = cJSON_CreateArray();
            ok = add_to_array(ops, one) &&
                 add_to_array(one, cJSON_CreateString(pdbx_op_name((pdbx_op)(int)t[0]))) &&
                 add_to_array(one, cJSON_CreateNumber(t[1])) &&
                 add_to_array(one, cJSON_CreateNumber(t[2])) &&
                 add_to_array(one, cJSON_CreateNumber(t[3]));
        }
        emit(e, complete_or_null(ev, ok));
    }
    free(tp_members);
}

/* Measures one point on every rank. Returns ST_OK/ST_OOM/ST_ERROR (agreed), or -1 when
 * cancelled; msg (rank 0) holds the reason of a failure. */
static int measure_point(pdbx_engine *e, const pdbx_plan_point *pt, cfg_groups *cg, char *msg)
{
    point_run pr;
    memset(&pr, 0, sizeof pr);
    pr.e = e;
    pr.pt = pt;
    pr.cg = cg;
    int status = ST_OK;
    msg[0] = '\0';
    const pdbx_spec *sp = &e->spec;
    const int esz = pdbx_dtype_bytes(sp->dtype);
    pr.tp_bytes = pr.pp_bytes = (double)pt->mbs * sp->seq_len * sp->model.hidden * esz;
    pr.dp_bytes = pt->mem.params_per_rank * esz;
    if (strcmp(e->be.compute->name, "cpu") == 0 && pr.dp_bytes > CPU_DP_CAP_BYTES)
        pr.dp_bytes = CPU_DP_CAP_BYTES;
    pr.dp_bytes = floor(pr.dp_bytes / 4096.0) * 4096.0;
    if (pr.dp_bytes < 4096)
        pr.dp_bytes = 4096;

    if (samples_init(&pr.sm, sp->layers_profiled, sp->steps) != 0) {
        status = ST_OOM;
        snprintf(msg, MSG_LEN, "host allocation of the sample buffers failed");
    }
    pdbx_point_shapes ps;
    fill_shapes(e, pt, &ps);
    if (status == ST_OK) {
        char err[MSG_LEN] = "";
        int rc;
        if (e->ev)
            pdbx_events_progress_op(e->ev, "prepare");
        pdbx_watch_begin("prepare", pt->index);
        if (pdbx_fault_hits(&e->fault, PDBX_FAULT_OOM, e->rank, pt->index)) {
            rc = PDBX_EOOM;
            snprintf(err, sizeof err, "allocation failed (injected by PDBX_FAULT)");
        } else {
            rc = e->be.compute->prepare(e->compute, &ps, err, sizeof err);
        }
        if (rc == 0) {
            double need = pr.tp_bytes > pr.dp_bytes ? pr.tp_bytes : pr.dp_bytes;
            rc = e->be.compute->comm_buffer(e->compute, (size_t)need, &pr.buf, err, sizeof err);
        }
        pdbx_watch_end();
        if (rc != 0) {
            status = rc == PDBX_EOOM ? ST_OOM : ST_ERROR;
            snprintf(msg, MSG_LEN, "%s", err);
        }
    }
    status = agree_status(e, status, msg, pt->index);
    if (status != ST_OK)
        goto done;

    if (run_steps(&pr) == 1) {
        status = -1;
        goto done;
    }
    status = agree_status(e, pr.failed ? ST_ERROR : ST_OK, pr.msg, pt->index);
    if (status != ST_OK) {
        snprintf(msg, MSG_LEN, "%s", pr.msg);
        goto done;
    }
    /* keep the outputs alive: no op can be optimised away */
    volatile double sink = e->be.compute->checksum(e->compute);
    (void)sink;

    double rows[NROWS * NSTAT];
    for (int r = 0; r < NROWS; r++)
        pdbx_estats_pack(rows + r * NSTAT, pr.sm.s[r], pr.sm.n[r]);
    double *all = e->rank == 0 ? malloc(sizeof rows * (size_t)e->size) : NULL;
    size_t tcap = pr.sm.trace_cap;
    double *traces = e->rank == 0 ? malloc(tcap * 4 * sizeof(double) * (size_t)e->size) : NULL;
    int *ntrace = e->rank == 0 ? malloc(sizeof(int) * (size_t)e->size) : NULL;
    /* every rank learns whether rank 0 can receive before gathering into its buffers */
    int can_gather = e->rank != 0 || (all && traces && ntrace);
    if (!can_gather)
        snprintf(msg, MSG_LEN, "out of memory for the results of %d ranks", e->size);
    status = agree_status(e, can_gather ? ST_OK : ST_ERROR, msg, pt->index);
    if (status != ST_OK) {
        free(all);
        free(traces);
        free(ntrace);
        goto done;
    }
    int mine = (int)pr.sm.ntrace;
    pdbx_watch_begin("gather", pt->index);
    MPI_Gather(rows, NROWS * NSTAT, MPI_DOUBLE, all, NROWS * NSTAT, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(pr.sm.trace, (int)(tcap * 4), MPI_DOUBLE, traces, (int)(tcap * 4), MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
    MPI_Gather(&mine, 1, MPI_INT, ntrace, 1, MPI_INT, 0, MPI_COMM_WORLD);
    pdbx_watch_end();
    if (e->rank == 0)
        write_point_events(e, &pr, all, traces, ntrace, tcap);
    free(all);
    free(traces);
    free(ntrace);
done:
    e->be.compute->release(e->compute);
    samples_free(&pr.sm);
    return status;
}

/* ---- the sweep ---------------------------------------------------------------------------- */
static const char *gib(double bytes, char *buf, size_t len)
{
    snprintf(buf, len, "%.1f GiB", bytes / 1073741824.0);
    return buf;
}

/* Memory in decimal GB as `pdbx plan` and the GPU presets state it (0.001 GB stays visible). */
static const char *gb(double bytes, char *buf, size_t len)
{
    double v = bytes / 1e9;
    snprintf(buf, len, v >= 100 ? "%.0f GB" : "%.3g GB", v);
    return buf;
}

static int measure_config(pdbx_engine *e, int config)
{
    const pdbx_parallel *par = &e->spec.configs[config];
    cfg_groups cg;
    char err[MSG_LEN];
    if (groups_build(e, &cg, par->tp, par->pp, par->dp, err, sizeof err) != 0) {
        for (size_t i = 0; i < e->npoints; i++)
            if (e->points[i].config == config)
                point_end(e, e->points[i].index, "error", err);
        return 0;
    }
    char stop[MSG_LEN] = "";
    int warned_dp = 0;
    for (size_t i = 0; i < e->npoints; i++) {
        const pdbx_plan_point *pt = &e->points[i];
        if (pt->config != config)
            continue;
        if (e->cancelled || agree_cancel(e, pt->index))
            break;
        if (stop[0]) {
            point_end(e, pt->index, "skipped", stop);
            if (e->ev)
                pdbx_events_progress_done(e->ev, 0);
            continue;
        }
        if (e->ev)
            pdbx_events_progress_point(e->ev, pt->index);
        if (pt->predicted_oom && e->spec.predict_oom) {
            char a[32], b[32], m[MSG_LEN];
            snprintf(m, sizeof m, "predicted %s > %s of %s", gb(pt->mem.total, a, sizeof a),
                     gb(e->spec.gpu.mem_bytes, b, sizeof b), e->spec.gpu.name);
            point_end(e, pt->index, "predicted_oom", m);
            snprintf(stop, sizeof stop, "after the predicted OOM at MBS %d", pt->mbs);
            if (e->ev)
                pdbx_events_progress_done(e->ev, pt->mbs);
            continue;
        }
        if (e->rank == 0) {
            cJSON *ev = cJSON_CreateObject();
            int ok = cJSON_AddStringToObject(ev, "type", "point_start") &&
                     cJSON_AddNumberToObject(ev, "point", pt->index) &&
                     cJSON_AddNumberToObject(ev, "tp", pt->tp) &&
                     cJSON_AddNumberToObject(ev, "pp", pt->pp) &&
                     cJSON_AddNumberToObject(ev, "dp", pt->dp) &&
                     cJSON_AddNumberToObject(ev, "mbs", pt->mbs);
            emit(e, complete_or_null(ev, ok));
            double full = pt->mem.params_per_rank * pdbx_dtype_bytes(e->spec.dtype);
            if (pt->dp > 1 && !warned_dp && strcmp(e->be.compute->name, "cpu") == 0 &&
                full > CPU_DP_CAP_BYTES) {
                char m[MSG_LEN], a[32];
                snprintf(m, sizeof m, "dp_allreduce: cpu backend caps the DP gradient message at "
                         "64 MiB (one stage's gradients are %s); the comm event records the bytes "
                         "measured", gib(full, a, sizeof a));
                pdbx_events_warning(e->ev, m);
                warned_dp = 1;
            }
        }
        char msg[MSG_LEN];
        int st = measure_point(e, pt, &cg, msg);
        if (st < 0) {
            point_end(e, pt->index, "skipped", "cancelled while measuring: dropped");
            break;
        }
        if (st == ST_OK) {
            point_end(e, pt->index, "ok", NULL);
        } else if (st == ST_OOM) {
            point_end(e, pt->index, "oom", msg);
            snprintf(stop, sizeof stop, "after the OOM at MBS %d", pt->mbs);
        } else {
            point_end(e, pt->index, "error", msg);
            snprintf(stop, sizeof stop, "config stopped after the error at MBS %d", pt->mbs);
        }
        if (e->ev)
            pdbx_events_progress_done(e->ev, pt->mbs);
    }
    groups_free(e, &cg);
    return 0;
}

/* Collectives sweep: every power-of-two group of the first g ranks, g = 2..world. */
static int coll_sweep(pdbx_engine *e)
{
    const pdbx_spec *sp = &e->spec;
    if (!sp->collectives || sp->ncoll_sizes == 0 || e->size < 2)
        return 0;
    size_t maxb = (size_t)sp->coll_sizes[sp->ncoll_sizes - 1];
    void *buf = NULL;
    char err[MSG_LEN] = "";
    int st = e->be.compute->comm_buffer(e->compute, maxb, &buf, err, sizeof err) == 0 ? ST_OK : ST_OOM;
    if (agree_status(e, st, err, -1) != ST_OK) {
        if (e->ev) {
            char m[MSG_LEN + 64];
            snprintf(m, sizeof m, "collectives sweep skipped: %s", err);
            pdbx_events_warning(e->ev, m);
        }
        return 0;
    }
    double *x = malloc(sizeof(double) * (size_t)(sp->steps > 0 ? sp->steps : 1));
    if (!x)
        return -1;
    for (int g = 2; g <= e->size; g *= 2) {
        MPI_Comm sub;
        MPI_Comm_split(MPI_COMM_WORLD, e->rank < g ? 0 : MPI_UNDEFINED, e->rank, &sub);
        if (e->rank < g) {
            pdbx_group *grp = NULL;
            pdbx_group_desc d = { .group_rank = e->rank, .group_size = g, .world_rank = e->rank,
                                  .world_size = e->size, .mpi_comm = &sub, .bcast = bcast_cb,
                                  .bcast_ctx = &sub };
            if (e->be.comm->group_create(e->comm, &d, &grp, err, sizeof err) != 0) {
                MPI_Comm_free(&sub);
                free(x);
                return -1;
            }
            int rpn = 0;
            for (int r = 0; r < g; r++)
                rpn += strcmp(e->hosts[r], e->hosts[0]) == 0;
            for (int c = 0; c < PDBX_COLL_COUNT && !e->cancelled; c++) {
                for (int si = 0; si < sp->ncoll_sizes; si++) {
                    size_t bytes = (size_t)sp->coll_sizes[si];
                    if (bytes < (size_t)g * sizeof(float))
                        continue;
                    if (e->ev)
                        pdbx_events_progress_op(e->ev, pdbx_coll_name((pdbx_coll)c));
                    size_t n = 0;
                    for (int s = 0; s < sp->warmup + sp->steps; s++) {
                        double ms = 0;
                        pdbx_watch_begin("barrier", -1);
                        e->be.comm->barrier(e->comm, grp);
                        pdbx_watch_end();
                        pdbx_watch_begin(pdbx_coll_name((pdbx_coll)c), -1);
                        int rc = e->be.comm->run(e->comm, grp, (pdbx_coll)c, buf, bytes, &ms, err,
                                                 sizeof err);
                        pdbx_watch_end();
                        if (rc != 0) {
                            fprintf(stderr, "pdbx-engine: rank %d: %s\n", e->rank, err);
                            break;
                        }
                        if (s >= sp->warmup)
                            x[n++] = ms;
                    }
                    double mine[NSTAT], mx[NSTAT];
                    pdbx_estats_pack(mine, x, n);
                    pdbx_watch_begin("reduce", -1);
                    MPI_Reduce(mine, mx, NSTAT, MPI_DOUBLE, MPI_MAX, 0, sub);
                    pdbx_watch_end();
                    if (e->rank == 0) {
                        int peers = c == PDBX_COLL_SEND_RECV ? 2 : g;
                        double algbw = mx[3] > 0 ? (double)bytes / (mx[3] / 1e3) / 1e9 : 0;
                        cJSON *ev = cJSON_CreateObject();
                        int ok = cJSON_AddStringToObject(ev, "type", "coll") &&
                                 cJSON_AddStringToObject(ev, "coll", pdbx_coll_name((pdbx_coll)c)) &&
                                 cJSON_AddNumberToObject(ev, "bytes", (double)bytes) &&
                                 cJSON_AddNumberToObject(ev, "nranks", g) &&
                                 cJSON_AddNumberToObject(ev, "ranks_per_node", rpn) &&
                                 add_item(ev, "stats", stats_json(mx)) &&
                                 cJSON_AddNumberToObject(ev, "algbw", algbw) &&
                                 cJSON_AddNumberToObject(ev, "busbw", algbw *
                                                         pdbx_coll_busbw_factor((pdbx_coll)c, peers));
                        emit(e, complete_or_null(ev, ok));
                    }
                }
                /* cancellation within the group; non-members wait at the world barrier */
                int mine = pdbx_watch_cancelled(), any = 0;
                MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, sub);
                if (any)
                    e->cancelled = 1;
            }
            e->be.comm->group_destroy(e->comm, grp);
            MPI_Comm_free(&sub);
        }
        pdbx_watch_begin("barrier", -1);
        MPI_Barrier(MPI_COMM_WORLD);
        pdbx_watch_end();
        if (agree_cancel(e, -1))
            break;
    }
    free(x);
    return 0;
}

int pdbx_engine_sweep(pdbx_engine *e, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    for (int c = 0; c < e->spec.nconfigs && !e->cancelled; c++) {
        const pdbx_parallel *par = &e->spec.configs[c];
        if (par->tp * par->pp * par->dp != e->size)
            continue;
        if (measure_config(e, c) != 0)
            return -1;
    }
    if (!e->cancelled) {
        if (e->ev)
            pdbx_events_progress_point(e->ev, -1);
        if (coll_sweep(e) != 0) {
            snprintf(err, errlen, "collectives sweep failed");
            return -1;
        }
    }
    return 0;
}
