/* profiledb.c: statistics helpers and the folding of run events into a pdbx_run
 * (see profiledb.h and docs/events.md). No I/O.
 */
#include "store/util/err.h"
#include "store/profiledb.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ------------------------------------------------------------------- */


/* 1 and *out set when obj[name] is a number; 0 when absent or not a number. */
static int get_num(const cJSON *obj, const char *name, double *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(it))
        return 0;
    *out = it->valuedouble;
    return 1;
}

static int get_int(const cJSON *obj, const char *name, int *out)
{
    double v;
    if (!get_num(obj, name, &v) || !(v >= -2147483648.0 && v <= 2147483647.0))
        return 0;
    *out = (int)v;
    return 1;
}

static const char *get_str(const cJSON *obj, const char *name)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(it) ? it->valuestring : NULL;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    if (src)
        snprintf(dst, cap, "%s", src);
}

/* ---- statistics ---------------------------------------------------------------------- */

static const char *const stat_names[PDBX_STAT_COUNT_KINDS] = {
    [PDBX_STAT_MEAN] = "mean", [PDBX_STAT_MEDIAN] = "median", [PDBX_STAT_MIN] = "min",
    [PDBX_STAT_MAX] = "max", [PDBX_STAT_STD] = "std",
};

const char *pdbx_stat_name(pdbx_stat_kind k)
{
    return (k >= 0 && k < PDBX_STAT_COUNT_KINDS) ? stat_names[k] : "?";
}

int pdbx_stat_from_name(const char *name)
{
    if (!name)
        return -1;
    for (int k = 0; k < PDBX_STAT_COUNT_KINDS; k++)
        if (strcmp(stat_names[k], name) == 0)
            return k;
    return -1;
}

double pdbx_stats_get(const pdbx_stats *s, pdbx_stat_kind k)
{
    switch (k) {
    case PDBX_STAT_MEAN: return s->mean;
    case PDBX_STAT_MEDIAN: return s->median;
    case PDBX_STAT_MIN: return s->min;
    case PDBX_STAT_MAX: return s->max;
    case PDBX_STAT_STD: return s->std;
    default: return NAN;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void pdbx_stats_from_samples(double *samples, size_t n, pdbx_stats *out)
{
    out->count = (int64_t)n;
    if (n == 0) {
        out->min = out->max = out->mean = out->median = out->std = NAN;
        return;
    }
    qsort(samples, n, sizeof *samples, cmp_double);
    out->min = samples[0];
    out->max = samples[n - 1];
    out->median = (n % 2) ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += samples[i];
    double mean = sum / (double)n;
    double ss = 0.0;   /* two-pass variance: stable for samples far from zero */
    for (size_t i = 0; i < n; i++)
        ss += (samples[i] - mean) * (samples[i] - mean);
    out->mean = mean;
    out->std = sqrt(ss / (double)n);
}

cJSON *pdbx_stats_to_json(const pdbx_stats *s)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    /* JSON has no NaN: an unmeasured value is written as null and read back as NaN. */
    const struct { const char *name; double v; } f[] = {
        {"min", s->min}, {"max", s->max}, {"mean", s->mean}, {"median", s->median}, {"std", s->std},
    };
    if (!cJSON_AddNumberToObject(o, "count", (double)s->count))
        goto fail;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        cJSON *item = isfinite(f[i].v) ? cJSON_CreateNumber(f[i].v) : cJSON_CreateNull();
        if (!item)
            goto fail;
        cJSON_AddItemToObject(o, f[i].name, item);
    }
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

int pdbx_stats_from_json(const cJSON *obj, pdbx_stats *out)
{
    if (!cJSON_IsObject(obj))
        return -1;
    double count;
    if (!get_num(obj, "count", &count) || count < 0 || count > 9.0e15)
        return -1;
    out->count = (int64_t)count;
    struct { const char *name; double *dst; } f[] = {
        {"min", &out->min}, {"max", &out->max}, {"mean", &out->mean},
        {"median", &out->median}, {"std", &out->std},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, f[i].name);
        if (cJSON_IsNumber(it))
            *f[i].dst = it->valuedouble;
        else if (cJSON_IsNull(it))
            *f[i].dst = NAN;
        else
            return -1;
    }
    return 0;
}

/* ---- names --------------------------------------------------------------------------- */

static const char *const point_status_names[] = {
    [PDBX_POINT_PENDING] = "pending", [PDBX_POINT_RUNNING] = "running", [PDBX_POINT_OK] = "ok",
    [PDBX_POINT_OOM] = "oom", [PDBX_POINT_PREDICTED_OOM] = "predicted_oom",
    [PDBX_POINT_ERROR] = "error", [PDBX_POINT_SKIPPED] = "skipped",
};
#define N_POINT_STATUS ((int)(sizeof point_status_names / sizeof point_status_names[0]))

const char *pdbx_point_status_name(pdbx_point_status s)
{
    return ((int)s >= 0 && (int)s < N_POINT_STATUS) ? point_status_names[s] : "?";
}

static int point_status_from_name(const char *name)
{
    for (int i = 0; name && i < N_POINT_STATUS; i++)
        if (strcmp(point_status_names[i], name) == 0)
            return i;
    return -1;
}

static const char *const run_status_names[] = {
    [PDBX_RUN_RUNNING] = "running", [PDBX_RUN_COMPLETE] = "complete",
    [PDBX_RUN_CANCELLED] = "cancelled", [PDBX_RUN_FAILED] = "failed", [PDBX_RUN_CORRUPT] = "corrupt",
};
#define N_RUN_STATUS ((int)(sizeof run_status_names / sizeof run_status_names[0]))

const char *pdbx_run_status_name(pdbx_run_status s)
{
    return ((int)s >= 0 && (int)s < N_RUN_STATUS) ? run_status_names[s] : "?";
}

/* ---- the run ------------------------------------------------------------------------- */

void pdbx_run_init(pdbx_run *run)
{
    memset(run, 0, sizeof *run);
    run->status = PDBX_RUN_RUNNING;
    run->current_point = -1;
}

static void point_free(pdbx_point *p)
{
    free(p->message);
    p->message = NULL;
    for (int o = 0; o < PDBX_OP_COUNT; o++) {
        free(p->op[o].rank);
        p->op[o].rank = NULL;
    }
    free(p->layer.rank);
    free(p->total.rank);
    p->layer.rank = p->total.rank = NULL;
}

void pdbx_run_free(pdbx_run *run)
{
    for (size_t i = 0; i < run->npoints; i++)
        point_free(&run->points[i]);
    free(run->points);
    free(run->coll);
    free(run->trace);
    cJSON_Delete(run->spec);
    cJSON_Delete(run->env);
    memset(run, 0, sizeof *run);
    run->current_point = -1;
}

static void point_init(pdbx_point *p, int index)
{
    memset(p, 0, sizeof *p);
    p->index = index;
    p->status = PDBX_POINT_PENDING;
}

/* The point with plan index idx; grown on demand when create != 0 (events for points the
 * plan did not list still fold). NULL when absent (or out of memory). */
static pdbx_point *find_point(pdbx_run *run, int idx, int create)
{
    if (idx < 0 || idx > 1000000)
        return NULL;
    if ((size_t)idx < run->npoints && run->points[idx].index == idx)
        return &run->points[idx];
    for (size_t i = 0; i < run->npoints; i++)
        if (run->points[i].index == idx)
            return &run->points[i];
    if (!create)
        return NULL;
    pdbx_point *np = realloc(run->points, (run->npoints + 1) * sizeof *np);
    if (!np)
        return NULL;
    run->points = np;
    point_init(&run->points[run->npoints], idx);
    return &run->points[run->npoints++];
}

static void read_point_shape(pdbx_point *p, const cJSON *ev)
{
    get_int(ev, "tp", &p->tp);
    get_int(ev, "pp", &p->pp);
    get_int(ev, "dp", &p->dp);
    get_int(ev, "mbs", &p->mbs);
    get_int(ev, "seq_len", &p->seq_len);
}

static int apply_points(pdbx_run *run, const cJSON *points, char *err, size_t errlen)
{
    if (!cJSON_IsArray(points)) {
        pdbx_errf(err, errlen, "run_start: field \"points\" must be an array of points");
        return -1;
    }
    int i = 0;
    const cJSON *pj;
    cJSON_ArrayForEach(pj, points) {
        if (!cJSON_IsObject(pj)) {
            pdbx_errf(err, errlen, "run_start: points[%d] must be an object", i);
            return -1;
        }
        int idx = i;
        get_int(pj, "index", &idx);
        pdbx_point *p = find_point(run, idx, 1);
        if (!p) {
            pdbx_errf(err, errlen, "run_start: points[%d]: bad index %d (allowed 0..1000000) or out of memory",
                    i, idx);
            return -1;
        }
        read_point_shape(p, pj);
        if (p->seq_len == 0)
            p->seq_len = run->seq_len;
        get_num(pj, "predicted_mem_bytes", &p->predicted_mem_bytes);
        const cJSON *oom = cJSON_GetObjectItemCaseSensitive(pj, "predicted_oom");
        p->predicted_oom = cJSON_IsTrue(oom);
        i++;
    }
    return 0;
}

static void apply_model(pdbx_model_info *m, const cJSON *mj)
{
    if (!cJSON_IsObject(mj))
        return;
    copy_str(m->name, sizeof m->name, get_str(mj, "name"));
    copy_str(m->tag, sizeof m->tag, get_str(mj, "tag"));
    get_int(mj, "hidden", &m->hidden);
    get_int(mj, "intermediate", &m->intermediate);
    get_int(mj, "heads", &m->heads);
    get_int(mj, "kv_heads", &m->kv_heads);
    get_int(mj, "head_dim", &m->head_dim);
    get_int(mj, "layers", &m->layers);
    get_int(mj, "vocab", &m->vocab);
}

static int replace_json(cJSON **dst, const cJSON *src)
{
    if (!src)
        return 0;
    cJSON *copy = cJSON_Duplicate(src, 1);
    if (!copy)
        return -1;
    cJSON_Delete(*dst);
    *dst = copy;
    return 0;
}

static void apply_launcher(pdbx_run *run, const cJSON *ev)
{
    double pid;
    copy_str(run->host, sizeof run->host, get_str(ev, "host"));
    if (get_num(ev, "pid", &pid) && pid >= 0 && pid <= 2147483647.0)
        run->pid = (long)pid;
    get_int(ev, "world_size", &run->world_size);
    get_int(ev, "ranks_per_node", &run->ranks_per_node);
}

static int apply_run_start(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen)
{
    copy_str(run->id, sizeof run->id, get_str(ev, "id"));
    if (run->created == 0.0)
        run->created = t;
    apply_launcher(run, ev);
    apply_model(&run->model, cJSON_GetObjectItemCaseSensitive(ev, "model"));
    get_int(ev, "layers_profiled", &run->layers_profiled);
    get_int(ev, "seq_len", &run->seq_len);
    get_int(ev, "warmup", &run->warmup);
    get_int(ev, "steps", &run->steps);
    copy_str(run->dtype, sizeof run->dtype, get_str(ev, "dtype"));
    copy_str(run->backend, sizeof run->backend, get_str(ev, "backend"));
    copy_str(run->gpu, sizeof run->gpu, get_str(ev, "gpu"));
    copy_str(run->gpu_tag, sizeof run->gpu_tag, get_str(ev, "gpu_tag"));
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(ev, "env");
    if (cJSON_IsObject(env))
        copy_str(run->device_name, sizeof run->device_name, get_str(env, "device"));
    if (replace_json(&run->spec, cJSON_GetObjectItemCaseSensitive(ev, "spec")) != 0 ||
        replace_json(&run->env, env) != 0) {
        pdbx_errf(err, errlen, "run_start: out of memory copying spec/env");
        return -1;
    }
    /* A run restarted by a second run_start continues: it is running again. */
    run->have_end = 0;
    run->status = PDBX_RUN_RUNNING;
    run->end_reason[0] = '\0';
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(ev, "points");
    if (points)
        return apply_points(run, points, err, errlen);
    return 0;
}

static pdbx_point *event_point(pdbx_run *run, const cJSON *ev, const char *type, int create,
                               char *err, size_t errlen)
{
    int idx;
    if (!get_int(ev, "point", &idx) || idx < 0) {
        pdbx_errf(err, errlen, "%s event: field \"point\" must be a point index >= 0", type);
        return NULL;
    }
    pdbx_point *p = find_point(run, idx, create);
    if (!p)
        pdbx_errf(err, errlen, "%s event: field \"point\": %d is not a planned point", type, idx);
    return p;
}

static int apply_op(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    pdbx_point *p = event_point(run, ev, "op", 1, err, errlen);
    if (!p)
        return -1;
    const char *name = get_str(ev, "op");
    int op = pdbx_op_from_name(name);
    if (op < 0) {
        /* Forward compatible: an op this build does not know is skipped. */
        return 0;
    }
    pdbx_stats st;
    if (pdbx_stats_from_json(cJSON_GetObjectItemCaseSensitive(ev, "stats"), &st) != 0) {
        pdbx_errf(err, errlen, "op event (point %d, op %s): field \"stats\" must be a stats object",
                p->index, name);
        return -1;
    }
    pdbx_cell *c = &p->op[op];
    pdbx_stats *ranks = NULL;
    int nranks = 0;
    const cJSON *rj = cJSON_GetObjectItemCaseSensitive(ev, "ranks");
    if (cJSON_IsArray(rj) && cJSON_GetArraySize(rj) > 0) {
        int n = cJSON_GetArraySize(rj);
        ranks = calloc((size_t)n, sizeof *ranks);
        if (!ranks) {
            pdbx_errf(err, errlen, "op event (point %d, op %s): out of memory", p->index, name);
            return -1;
        }
        const cJSON *r;
        cJSON_ArrayForEach(r, rj) {
            if (pdbx_stats_from_json(r, &ranks[nranks]) != 0) {
                pdbx_errf(err, errlen, "op event (point %d, op %s): field \"ranks\"[%d] must be a stats object",
                        p->index, name, nranks);
                free(ranks);
                return -1;
            }
            nranks++;
        }
    }
    free(c->rank);
    c->rank = ranks;
    c->nranks = nranks;
    c->stats = st;
    c->flops = 0.0;
    c->bytes = 0.0;
    get_num(ev, "flops", &c->flops);
    get_num(ev, "bytes", &c->bytes);
    c->valid = 1;
    return 0;
}

static int apply_comm(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    pdbx_point *p = event_point(run, ev, "comm", 1, err, errlen);
    if (!p)
        return -1;
    const char *kind = get_str(ev, "kind");
    pdbx_comm_cell *c;
    if (kind && strcmp(kind, "tp_allreduce") == 0)
        c = &p->tp_allreduce;
    else if (kind && strcmp(kind, "pp_sendrecv") == 0)
        c = &p->pp_sendrecv;
    else if (kind && strcmp(kind, "dp_allreduce") == 0)
        c = &p->dp_allreduce;
    else {
        pdbx_errf(err, errlen, "comm event (point %d): field \"kind\" is \"%s\"; allowed: tp_allreduce, "
                "pp_sendrecv, dp_allreduce", p->index, kind ? kind : "(missing)");
        return -1;
    }
    pdbx_stats st;
    if (pdbx_stats_from_json(cJSON_GetObjectItemCaseSensitive(ev, "stats"), &st) != 0) {
        pdbx_errf(err, errlen, "comm event (point %d, %s): field \"stats\" must be a stats object",
                p->index, kind);
        return -1;
    }
    c->time = st;
    c->bytes = 0.0;
    c->group_size = 0;
    c->algbw = c->busbw = NAN;
    get_num(ev, "bytes", &c->bytes);
    get_int(ev, "group_size", &c->group_size);
    get_num(ev, "algbw", &c->algbw);
    get_num(ev, "busbw", &c->busbw);
    c->valid = 1;
    return 0;
}

static int apply_trace(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    int point, rank = 0;
    if (!get_int(ev, "point", &point)) {
        pdbx_errf(err, errlen, "trace event: field \"point\" must be a point index");
        return -1;
    }
    get_int(ev, "rank", &rank);
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(ev, "ops");
    if (!cJSON_IsArray(ops)) {
        pdbx_errf(err, errlen, "trace event (point %d): field \"ops\" must be an array of "
                "[op, layer, start_us, dur_us]", point);
        return -1;
    }
    size_t n = (size_t)cJSON_GetArraySize(ops);
    if (run->ntrace + n > run->trace_cap) {
        size_t cap = run->trace_cap ? run->trace_cap : 256;
        while (cap < run->ntrace + n)
            cap *= 2;
        pdbx_trace_event *nt = realloc(run->trace, cap * sizeof *nt);
        if (!nt) {
            pdbx_errf(err, errlen, "trace event (point %d): out of memory", point);
            return -1;
        }
        run->trace = nt;
        run->trace_cap = cap;
    }
    int i = 0, rc = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, ops) {
        const cJSON *name = cJSON_GetArrayItem(e, 0), *layer = cJSON_GetArrayItem(e, 1),
                    *start = cJSON_GetArrayItem(e, 2), *dur = cJSON_GetArrayItem(e, 3);
        if (!cJSON_IsArray(e) || !cJSON_IsString(name) || !cJSON_IsNumber(layer) ||
            !cJSON_IsNumber(start) || !cJSON_IsNumber(dur)) {
            pdbx_errf(err, errlen, "trace event (point %d): field \"ops\"[%d] must be "
                    "[op, layer, start_us, dur_us]", point, i);
            rc = -1;
        } else {
            int op = pdbx_op_from_name(name->valuestring);
            if (op >= 0) {
                pdbx_trace_event *t = &run->trace[run->ntrace++];
                t->point = point;
                t->rank = rank;
                t->layer = layer->valueint;
                t->op = (pdbx_op)op;
                t->start_us = start->valuedouble;
                t->dur_us = dur->valuedouble;
            }
        }
        i++;
    }
    return rc;
}

static int apply_point_end(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen)
{
    pdbx_point *p = event_point(run, ev, "point_end", 1, err, errlen);
    if (!p)
        return -1;
    const char *st = get_str(ev, "status");
    int s = point_status_from_name(st);
    if (s < 0 || s == PDBX_POINT_PENDING || s == PDBX_POINT_RUNNING) {
        pdbx_errf(err, errlen, "point_end event (point %d): field \"status\" is \"%s\"; allowed: ok, oom, "
                "predicted_oom, error, skipped", p->index, st ? st : "(missing)");
        return -1;
    }
    p->status = (pdbx_point_status)s;
    const char *msg = get_str(ev, "message");
    free(p->message);
    p->message = (msg && *msg) ? strdup(msg) : NULL;
    if (t > 0)
        p->ended = t;
    if (s == PDBX_POINT_PREDICTED_OOM)
        p->predicted_oom = 1;
    if (run->current_point == p->index)
        run->current_point = -1;
    return 0;
}

static int apply_coll(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    const char *coll = get_str(ev, "coll");
    pdbx_coll_result r;
    memset(&r, 0, sizeof r);
    if (!coll || !*coll) {
        pdbx_errf(err, errlen, "coll event: field \"coll\" must be a collective name");
        return -1;
    }
    if (pdbx_stats_from_json(cJSON_GetObjectItemCaseSensitive(ev, "stats"), &r.time) != 0) {
        pdbx_errf(err, errlen, "coll event (%s): field \"stats\" must be a stats object", coll);
        return -1;
    }
    copy_str(r.coll, sizeof r.coll, coll);
    r.algbw = r.busbw = NAN;
    get_num(ev, "bytes", &r.bytes);
    get_int(ev, "nranks", &r.nranks);
    get_int(ev, "ranks_per_node", &r.ranks_per_node);
    get_num(ev, "algbw", &r.algbw);
    get_num(ev, "busbw", &r.busbw);
    if (run->ncoll == run->coll_cap) {
        size_t cap = run->coll_cap ? 2 * run->coll_cap : 32;
        pdbx_coll_result *nc = realloc(run->coll, cap * sizeof *nc);
        if (!nc) {
            pdbx_errf(err, errlen, "coll event (%s): out of memory", coll);
            return -1;
        }
        run->coll = nc;
        run->coll_cap = cap;
    }
    run->coll[run->ncoll++] = r;
    return 0;
}

static void apply_progress(pdbx_run *run, const cJSON *ev)
{
    int point;
    get_num(ev, "done", &run->progress_done);
    get_num(ev, "total", &run->progress_total);
    if (get_int(ev, "point", &point))
        run->current_point = point;
    const char *op = get_str(ev, "op");
    if (op)
        copy_str(run->current_op, sizeof run->current_op, op);
}

static int apply_run_end(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    const char *st = get_str(ev, "status");
    const char *reason = get_str(ev, "reason");
    run->have_end = 1;
    run->current_point = -1;
    run->end_reason[0] = '\0';
    copy_str(run->end_reason, sizeof run->end_reason, reason);
    if (st && strcmp(st, "complete") == 0)
        run->status = PDBX_RUN_COMPLETE;
    else if (st && strcmp(st, "cancelled") == 0)
        run->status = PDBX_RUN_CANCELLED;
    else if (st && strcmp(st, "failed") == 0)
        run->status = PDBX_RUN_FAILED;
    else {
        run->status = PDBX_RUN_FAILED;
        pdbx_errf(err, errlen, "run_end event: field \"status\" is \"%s\"; allowed: complete, cancelled, failed",
                st ? st : "(missing)");
        return -1;
    }
    return 0;
}

int pdbx_run_apply(pdbx_run *run, const cJSON *event, char *err, size_t errlen)
{
    if (!cJSON_IsObject(event)) {
        pdbx_errf(err, errlen, "event: not a JSON object");
        return -1;
    }
    const char *type = get_str(event, "type");
    if (!type) {
        pdbx_errf(err, errlen, "event: field \"type\" missing or not a string");
        return -1;
    }
    double t = 0.0;
    if (get_num(event, "t", &t) && t > run->last_event)
        run->last_event = t;

    if (strcmp(type, "run_start") == 0)
        return apply_run_start(run, event, t, err, errlen);
    if (strcmp(type, "launch") == 0) {
        apply_launcher(run, event);
        if (run->have_end) {       /* a later launch runs the run again */
            run->have_end = 0;
            run->status = PDBX_RUN_RUNNING;
            run->end_reason[0] = '\0';
        }
        return 0;
    }
    if (strcmp(type, "point_start") == 0) {
        pdbx_point *p = event_point(run, event, "point_start", 1, err, errlen);
        if (!p)
            return -1;
        int tp = 0;
        if (get_int(event, "tp", &tp) && p->tp == 0)
            read_point_shape(p, event);
        p->status = PDBX_POINT_RUNNING;
        if (t > 0)
            p->started = t;
        run->current_point = p->index;
        return 0;
    }
    if (strcmp(type, "op") == 0)
        return apply_op(run, event, err, errlen);
    if (strcmp(type, "comm") == 0)
        return apply_comm(run, event, err, errlen);
    if (strcmp(type, "trace") == 0)
        return apply_trace(run, event, err, errlen);
    if (strcmp(type, "point_end") == 0)
        return apply_point_end(run, event, t, err, errlen);
    if (strcmp(type, "coll") == 0)
        return apply_coll(run, event, err, errlen);
    if (strcmp(type, "progress") == 0) {
        apply_progress(run, event);
        return 0;
    }
    if (strcmp(type, "warning") == 0) {
        const char *msg = get_str(event, "message");
        if (!msg) {
            pdbx_errf(err, errlen, "warning event: field \"message\" must be a string");
            return -1;
        }
        copy_str(run->warnings[run->nwarnings % PDBX_WARN_RING], sizeof run->warnings[0], msg);
        run->nwarnings++;
        return 0;
    }
    if (strcmp(type, "run_end") == 0)
        return apply_run_end(run, event, err, errlen);
    return 0;   /* unknown type: ignored (forward compatible) */
}

/* ---- queries ------------------------------------------------------------------------- */

size_t pdbx_run_config_points(const pdbx_run *run, int tp, int pp, int dp,
                              const pdbx_point **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < run->npoints && n < cap; i++) {
        const pdbx_point *p = &run->points[i];
        if (p->tp != tp || p->pp != pp || p->dp != dp)
            continue;
        /* insertion sort by MBS (stable: plan order among equal MBS) */
        size_t j = n++;
        while (j > 0 && out[j - 1]->mbs > p->mbs) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = p;
    }
    return n;
}

size_t pdbx_run_configs(const pdbx_run *run, int (*out)[3], size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < run->npoints; i++) {
        const pdbx_point *p = &run->points[i];
        size_t j;
        for (j = 0; j < n; j++)
            if (out[j][0] == p->tp && out[j][1] == p->pp && out[j][2] == p->dp)
                break;
        if (j < n)
            continue;
        if (n == cap)
            break;
        out[n][0] = p->tp;
        out[n][1] = p->pp;
        out[n][2] = p->dp;
        n++;
    }
    return n;
}

size_t pdbx_run_points_done(const pdbx_run *run)
{
    size_t n = 0;
    for (size_t i = 0; i < run->npoints; i++)
        if (run->points[i].status != PDBX_POINT_PENDING && run->points[i].status != PDBX_POINT_RUNNING)
            n++;
    return n;
}
