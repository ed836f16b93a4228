/* events_point.c: the event schema of one point (events.h, docs/events.md): point_start, op,
 * step, comm, trace and point_end. With events.c and events_run.c the only files in pdbx that
 * spell an event type or field name; encoders chain json_fields.h writers with && as there. */
#include "store/events.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/json_fields.h"
#include "store/util/err.h"

#include "store/events_internal.h"

static const jf_field shape_fields[] = {
    F(pdbx_ev_point_start, INT, tp, "tp"), F(pdbx_ev_point_start, INT, pp, "pp"),
    F(pdbx_ev_point_start, INT, dp, "dp"), F(pdbx_ev_point_start, INT, mbs, "mbs"),
    F(pdbx_ev_point_start, INT, seq_len, "seq_len"),
};
static const jf_field comm_fields[] = {
    F(pdbx_comm_cell, NUM, bytes, "bytes"), F(pdbx_comm_cell, INT, group_size, "group_size"),
    F(pdbx_comm_cell, NUM, algbw, "algbw"), F(pdbx_comm_cell, NUM, busbw, "busbw"),
};

/* ---- one point ------------------------------------------------------------------------- */

/* Required "point" (>= 0) of a point's event. */
static int get_point(const cJSON *ev, pdbx_event_type t, int *point, char *err, size_t errlen)
{
    if (!jf_int(ev, "point", point) || *point < 0)
        return pdbx_fail(err, errlen, "%s event: field \"point\" must be a point index >= 0",
                         pdbx_event_type_name(t));
    return 0;
}

cJSON *pdbx_event_point_start(int point, int tp, int pp, int dp, int ep, int mbs)
{
    cJSON *ev = ev_new_event(PDBX_EV_POINT_START);
    pdbx_ev_point_start ps = {point, tp, pp, dp, mbs, 0, 1, ep};
    int ok = ev && jf_put_num(ev, "point", point) &&
             jf_put_fields(ev, &ps, shape_fields, JF_N(shape_fields) - 1) &&   /* no seq_len */
             (ep <= 1 || jf_put_num(ev, "ep", ep));   /* a dense run's events read as before */
    return jf_done(ev, ok);
}

int pdbx_event_decode_point_start(const cJSON *ev, pdbx_ev_point_start *out, char *err, size_t errlen)
{
    if (get_point(ev, PDBX_EV_POINT_START, &out->point, err, errlen) != 0)
        return -1;
    out->has_shape = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(ev, shape_fields[0].name));
    jf_get_fields(ev, out, shape_fields, JF_N(shape_fields));
    if (!jf_int(ev, "ep", &out->ep) || out->ep < 1 || out->ep > PDBX_RUN_MAX_RANKS)
        out->ep = 1;   /* absent (older runs, EP 1) or out of range: no expert parallelism */
    return 0;
}

/* A cell's "stats" and "ranks" onto obj. */
static int add_cell_stats(cJSON *obj, const pdbx_cell *c)
{
    cJSON *ranks = cJSON_CreateArray();
    int ok_stats = jf_add(obj, "stats", pdbx_stats_to_json(&c->stats));
    int ok = jf_add(obj, "ranks", ranks) && ok_stats;      /* both run: ranks is taken */
    for (int i = 0; ok && i < c->nranks && c->rank; i++)
        ok = jf_push(ranks, pdbx_stats_to_json(&c->rank[i]));
    return ok;
}

/* "stats" (required) and "ranks" (optional) of obj into c (c->rank malloc'ed). what names
 * the event in messages, e.g. "op event (point 3, op attn_q)". */
static int get_cell_stats(const cJSON *obj, pdbx_cell *c, const char *what, char *err, size_t errlen)
{
    *c = (pdbx_cell){0};
    if (pdbx_stats_from_json(cJSON_GetObjectItemCaseSensitive(obj, "stats"), &c->stats) != 0)
        return pdbx_fail(err, errlen, "%s: field \"stats\" must be a stats object", what);
    const cJSON *rj = cJSON_GetObjectItemCaseSensitive(obj, "ranks");
    int n = cJSON_IsArray(rj) ? cJSON_GetArraySize(rj) : 0;
    if (n > 0 && !(c->rank = calloc((size_t)n, sizeof *c->rank)))
        return pdbx_fail(err, errlen, "%s: out of memory", what);
    const cJSON *r;
    cJSON_ArrayForEach(r, (n > 0 ? rj : NULL)) {
        if (pdbx_stats_from_json(r, &c->rank[c->nranks]) != 0)
            break;
        c->nranks++;
    }
    if (c->nranks < n) {
        pdbx_errf(err, errlen, "%s: field \"ranks\"[%d] must be a stats object", what, c->nranks);
        free(c->rank);
        *c = (pdbx_cell){0};
        return -1;
    }
    c->valid = 1;
    return 0;
}

cJSON *pdbx_event_op(int point, pdbx_op op, pdbx_pass pass, const pdbx_cell *c)
{
    cJSON *ev = ev_new_event(PDBX_EV_OP);
    int ok = ev && jf_put_num(ev, "point", point) && jf_put_str(ev, "op", pdbx_op_name(op)) &&
             (pass == PDBX_PASS_FWD || jf_put_str(ev, "pass", pdbx_pass_name(pass))) &&
             add_cell_stats(ev, c) && jf_put_num(ev, "flops", c->flops) && jf_put_num(ev, "bytes", c->bytes) &&
             (!c->reused || jf_put_num(ev, "reused_from", c->source_point)) &&
             (!c->shared || jf_put_str(ev, "shared_with", pdbx_op_name(c->shared_op))) &&
             (!c->fused || (jf_put_str(ev, "fused_with", pdbx_op_name(c->fused_op)) &&
                            jf_put_num(ev, "fused_share", c->fused_share)));
    return jf_done(ev, ok);
}

int pdbx_event_decode_op(const cJSON *ev, pdbx_ev_op *out, char *err, size_t errlen)
{
    if (get_point(ev, PDBX_EV_OP, &out->point, err, errlen) != 0)
        return -1;
    out->name = jf_str(ev, "op");
    out->op = pdbx_op_from_name(out->name);
    const char *pass = jf_str(ev, "pass");
    int p = pass ? pdbx_pass_from_name(pass) : PDBX_PASS_FWD;
    out->pass = p < 0 ? PDBX_PASS_FWD : (pdbx_pass)p;
    if (out->op < 0 || p < 0) {
        out->op = -1;
        return 0;   /* forward compatible: an op or pass this build does not know is skipped */
    }
    char what[96];
    snprintf(what, sizeof what, "op event (point %d, op %s)", out->point, out->name);
    if (get_cell_stats(ev, &out->cell, what, err, errlen) != 0)
        return -1;
    jf_num(ev, "flops", &out->cell.flops);
    jf_num(ev, "bytes", &out->cell.bytes);
    double from;
    if (jf_num(ev, "reused_from", &from) && from >= 0 && from <= INT32_MAX) {
        out->cell.reused = 1;
        out->cell.source_point = (int)from;
    }
    int shared = pdbx_op_from_name(jf_str(ev, "shared_with"));
    if (shared >= 0) {
        out->cell.shared = 1;
        out->cell.shared_op = (pdbx_op)shared;
    }
    /* absent (runs before fused_projections, or separate GEMMs): not fused */
    int fused = pdbx_op_from_name(jf_str(ev, "fused_with"));
    double share;
    if (fused >= 0 && jf_num(ev, "fused_share", &share) && share > 0 && share <= 1) {
        out->cell.fused = 1;
        out->cell.fused_op = (pdbx_op)fused;
        out->cell.fused_share = share;
    }
    return 0;
}

static const char *const step_cells[2] = {"layer", "total"};

cJSON *pdbx_event_step(int point, const pdbx_cell *layer, const pdbx_cell *total)
{
    const pdbx_cell *cells[2] = {layer, total};
    cJSON *ev = ev_new_event(PDBX_EV_STEP);
    int ok = ev && jf_put_num(ev, "point", point);
    for (int i = 0; ok && i < 2; i++) {
        if (!cells[i] || !cells[i]->valid)
            continue;
        cJSON *o = cJSON_CreateObject();
        ok = o && add_cell_stats(o, cells[i]);
        ok = jf_add(ev, step_cells[i], jf_done(o, ok));
    }
    return jf_done(ev, ok);
}

int pdbx_event_decode_step(const cJSON *ev, pdbx_ev_step *out, char *err, size_t errlen)
{
    memset(&out->layer, 0, sizeof out->layer);
    memset(&out->total, 0, sizeof out->total);
    if (get_point(ev, PDBX_EV_STEP, &out->point, err, errlen) != 0)
        return -1;
    pdbx_cell *cells[2] = {&out->layer, &out->total};
    for (int i = 0; i < 2; i++) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(ev, step_cells[i]);
        char what[96];
        snprintf(what, sizeof what, "step event (point %d): field \"%s\"", out->point, step_cells[i]);
        if (o && !cJSON_IsObject(o))
            pdbx_errf(err, errlen, "%s must be an object with stats and ranks", what);
        if (o && (!cJSON_IsObject(o) || get_cell_stats(o, cells[i], what, err, errlen) != 0)) {
            free(out->layer.rank);       /* nothing half decoded stays */
            memset(&out->layer, 0, sizeof out->layer);
            return -1;
        }
    }
    return 0;
}

static const char *const comm_kinds[PDBX_COMM_KINDS] = {
    [PDBX_COMM_TP_ALLREDUCE] = "tp_allreduce", [PDBX_COMM_PP_SENDRECV] = "pp_sendrecv",
    [PDBX_COMM_DP_ALLREDUCE] = "dp_allreduce", [PDBX_COMM_EP_ALLTOALL] = "ep_alltoall",
};

const char *pdbx_comm_kind_name(pdbx_comm_kind k)
{
    return ((int)k >= 0 && k < PDBX_COMM_KINDS) ? comm_kinds[k] : "?";
}

cJSON *pdbx_event_comm(int point, pdbx_comm_kind kind, const pdbx_comm_cell *c)
{
    cJSON *ev = ev_new_event(PDBX_EV_COMM);
    int ok = ev && jf_put_num(ev, "point", point) && jf_put_str(ev, "kind", pdbx_comm_kind_name(kind)) &&
             jf_add(ev, "stats", pdbx_stats_to_json(&c->time)) &&
             jf_put_fields(ev, c, comm_fields, JF_N(comm_fields)) &&
             (!c->dtype[0] || jf_put_str(ev, "dtype", c->dtype));
    return jf_done(ev, ok);
}

int pdbx_event_decode_comm(const cJSON *ev, pdbx_ev_comm *out, char *err, size_t errlen)
{
    if (get_point(ev, PDBX_EV_COMM, &out->point, err, errlen) != 0)
        return -1;
    const char *kind = jf_str(ev, "kind");
    int k = jf_name_index(kind, comm_kinds, PDBX_COMM_KINDS);
    if (k < 0)
        return pdbx_fail(err, errlen, "comm event (point %d): field \"kind\" is \"%s\"; allowed: "
                         "tp_allreduce, pp_sendrecv, dp_allreduce, ep_alltoall", out->point, kind ? kind : "(missing)");
    out->kind = (pdbx_comm_kind)k;
    pdbx_comm_cell *c = &out->cell;
    *c = (pdbx_comm_cell){.valid = 1, .algbw = NAN, .busbw = NAN};
    if (pdbx_stats_from_json(cJSON_GetObjectItemCaseSensitive(ev, "stats"), &c->time) != 0)
        return pdbx_fail(err, errlen, "comm event (point %d, %s): field \"stats\" must be a stats object",
                         out->point, kind);
    jf_get_fields(ev, c, comm_fields, JF_N(comm_fields));
    const char *dtype = jf_str(ev, "dtype");   /* optional: older runs have none */
    if (dtype && strlen(dtype) < sizeof c->dtype)
        snprintf(c->dtype, sizeof c->dtype, "%s", dtype);
    return 0;
}

cJSON *pdbx_event_trace(int point, int rank, const pdbx_trace_event *ops, size_t n)
{
    cJSON *ev = ev_new_event(PDBX_EV_TRACE);
    int ok = ev && jf_put_num(ev, "point", point) && jf_put_num(ev, "rank", rank);
    cJSON *arr = ok ? cJSON_AddArrayToObject(ev, "ops") : NULL;
    ok = ok && arr;
    for (size_t i = 0; ok && i < n; i++) {
        /* [op, layer, start_us, dur_us] */
        const double v[3] = {ops[i].layer, ops[i].start_us, ops[i].dur_us};
        cJSON *one = cJSON_CreateDoubleArray(v, 3);
        const char *name = ops[i].op == PDBX_OP_COUNT
                               ? pdbx_comm_kind_name((pdbx_comm_kind)ops[i].comm)
                               : pdbx_op_name(ops[i].op);
        ok = jf_push(arr, one) &&
             cJSON_InsertItemInArray(one, 0, cJSON_CreateString(name)) &&
             cJSON_GetArraySize(one) == 4;
    }
    return jf_done(ev, ok);
}

int pdbx_event_decode_trace(const cJSON *ev, pdbx_ev_trace *out, char *err, size_t errlen)
{
    out->ops = NULL;
    out->n = 0;
    if (!jf_int(ev, "point", &out->point))
        return pdbx_fail(err, errlen, "trace event: field \"point\" must be a point index");
    jf_int(ev, "rank", &out->rank);
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(ev, "ops");
    if (!cJSON_IsArray(ops))
        return pdbx_fail(err, errlen, "trace event (point %d): field \"ops\" must be an array of "
                         "[op, layer, start_us, dur_us]", out->point);
    size_t cap = (size_t)cJSON_GetArraySize(ops);
    if (cap && !(out->ops = calloc(cap, sizeof *out->ops)))
        return pdbx_fail(err, errlen, "trace event (point %d): out of memory", out->point);
    int i = 0, rc = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, ops) {
        const char *name;
        double v[3];     /* layer, start_us, dur_us */
        int op = jf_tuple(e, &name, v, 3) ? pdbx_op_from_name(name) : -2;
        /* a step's PP/DP collective is named by its comm kind (tp_allreduce is an op here) */
        int comm = op == -1 ? jf_name_index(name, comm_kinds, PDBX_COMM_KINDS) : -1;
        if (comm == PDBX_COMM_TP_ALLREDUCE)
            comm = -1;
        if (op == -2) {
            pdbx_errf(err, errlen, "trace event (point %d): field \"ops\"[%d] must be "
                      "[op, layer, start_us, dur_us]", out->point, i);
            rc = -1;
        } else if (op >= 0 || comm >= 0) {
            out->ops[out->n++] = (pdbx_trace_event){
                .point = out->point, .rank = out->rank, .layer = (int)fmax(-1e9, fmin(v[0], 1e9)),
                .op = op >= 0 ? (pdbx_op)op : PDBX_OP_COUNT, .comm = comm,
                .start_us = v[1], .dur_us = v[2]};
        }
        i++;
    }
    return rc;
}

/* point_end's optional memory figures: written when known, NaN when absent. */
static const jf_field point_end_mem_fields[] = {
    F(pdbx_ev_point_end, NUM, profile_mem_bytes, "profile_mem_bytes"),
    F(pdbx_ev_point_end, NUM, mem_peak_bytes, "mem_peak_bytes"),
    F(pdbx_ev_point_end, NUM, mem_base_bytes, "mem_base_bytes"),
    F(pdbx_ev_point_end, NUM, setup_s, "setup_s"),
};

/* point_end's "noise" object (profiledb.h, pdbx_point_noise); the gpu figures only when
 * gpu_valid. */
static const jf_field noise_host_fields[] = {
    F(pdbx_point_noise, INT, cores, "cores"), F(pdbx_point_noise, NUM, load1, "load1"),
    F(pdbx_point_noise, NUM, other_busy, "other_busy"), F(pdbx_point_noise, NUM, steal_pct, "steal_pct"),
    F(pdbx_point_noise, INT, busy, "busy"),
};
static const jf_field noise_gpu_fields[] = {
    F(pdbx_point_noise, NUM, sm_clock_min_mhz, "sm_clock_min_mhz"),
    F(pdbx_point_noise, NUM, sm_clock_max_mhz, "sm_clock_max_mhz"),
    F(pdbx_point_noise, NUM, temp_max_c, "temp_max_c"),
    F(pdbx_point_noise, NUM, throttle_reasons, "throttle_reasons"),
};

static cJSON *noise_json(const pdbx_point_noise *n)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o && jf_put_fields(o, n, noise_host_fields, JF_N(noise_host_fields)) &&
             (!n->gpu_valid || jf_put_fields(o, n, noise_gpu_fields, JF_N(noise_gpu_fields)));
    return jf_done(o, ok);
}

static void noise_from_json(const cJSON *o, pdbx_point_noise *n)
{
    memset(n, 0, sizeof *n);
    if (!cJSON_IsObject(o))
        return;
    n->load1 = n->other_busy = n->steal_pct = NAN;
    n->sm_clock_min_mhz = n->sm_clock_max_mhz = n->temp_max_c = NAN;
    jf_get_fields(o, n, noise_host_fields, JF_N(noise_host_fields));
    n->gpu_valid = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "sm_clock_min_mhz"));
    if (n->gpu_valid)
        jf_get_fields(o, n, noise_gpu_fields, JF_N(noise_gpu_fields));
    n->busy = n->busy != 0;
    n->valid = 1;
}

cJSON *pdbx_event_point_end_mem(const pdbx_ev_point_end *pe)
{
    cJSON *ev = ev_new_event(PDBX_EV_POINT_END);
    int ok = ev && jf_put_num(ev, "point", pe->point) &&
             jf_put_str(ev, "status", pdbx_point_status_name(pe->status)) &&
             (!pe->message || !*pe->message || jf_put_str(ev, "message", pe->message));
    for (size_t i = 0; ok && i < JF_N(point_end_mem_fields); i++) {
        double v;
        memcpy(&v, (const char *)pe + point_end_mem_fields[i].off, sizeof v);
        ok = !isfinite(v) || jf_put_num(ev, point_end_mem_fields[i].name, v);
    }
    ok = ok && (!pe->noise.valid || jf_add(ev, "noise", noise_json(&pe->noise)));
    return jf_done(ev, ok);
}

cJSON *pdbx_event_point_end(int point, pdbx_point_status status, const char *message)
{
    pdbx_ev_point_end pe = { .point = point, .status = status, .message = message,
                             .profile_mem_bytes = NAN, .mem_peak_bytes = NAN, .mem_base_bytes = NAN,
                             .setup_s = NAN };
    return pdbx_event_point_end_mem(&pe);
}

int pdbx_event_decode_point_end(const cJSON *ev, pdbx_ev_point_end *out, char *err, size_t errlen)
{
    if (get_point(ev, PDBX_EV_POINT_END, &out->point, err, errlen) != 0)
        return -1;
    const char *st = jf_str(ev, "status");
    int s = PDBX_POINT_OK;     /* the statuses a point ends with: OK and after */
    while (s <= PDBX_POINT_SKIPPED && !(st && !strcmp(st, pdbx_point_status_name((pdbx_point_status)s))))
        s++;
    if (s > PDBX_POINT_SKIPPED)
        return pdbx_fail(err, errlen, "point_end event (point %d): field \"status\" is \"%s\"; allowed: "
                         "ok, oom, predicted_oom, error, skipped", out->point, st ? st : "(missing)");
    out->status = (pdbx_point_status)s;
    const char *msg = jf_str(ev, "message");
    out->message = (msg && *msg) ? msg : NULL;
    out->profile_mem_bytes = out->mem_peak_bytes = out->mem_base_bytes = out->setup_s = NAN;
    jf_get_fields(ev, out, point_end_mem_fields, JF_N(point_end_mem_fields));
    noise_from_json(cJSON_GetObjectItemCaseSensitive(ev, "noise"), &out->noise);
    return 0;
}
