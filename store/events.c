/* events.c: the run-event schema (see events.h and docs/events.md). The only file in pdbx that
 * spells an event type or field name. Encoders build with add_* helpers that keep going
 * after a failure and report it once at the end (ok flags), so every encoder is one chain.
 */
#include "store/events.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/util/err.h"

/* ---- JSON helpers ---------------------------------------------------------------------- */

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

static void get_strbuf(const cJSON *obj, const char *name, char *dst, size_t cap)
{
    const char *s = get_str(obj, name);
    if (s)
        snprintf(dst, cap, "%s", s);
}

/* Attaches item under name (taking it; deleted when it cannot be attached). */
static int add_item(cJSON *obj, const char *name, cJSON *item)
{
    if (!item || !cJSON_AddItemToObject(obj, name, item)) {
        cJSON_Delete(item);
        return 0;
    }
    return 1;
}

static int add_num(cJSON *obj, const char *name, double v)
{
    return cJSON_AddNumberToObject(obj, name, v) != NULL;
}

/* A number, or null when not finite (JSON has no NaN). */
static int add_num_or_null(cJSON *obj, const char *name, double v)
{
    return add_item(obj, name, isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull());
}

static int add_str(cJSON *obj, const char *name, const char *s)
{
    return cJSON_AddStringToObject(obj, name, s ? s : "") != NULL;
}

/* A new event {"type": <t>} (type first: raw prefixes rely on it). */
static cJSON *new_event(pdbx_event_type t)
{
    cJSON *ev = cJSON_CreateObject();
    if (ev && !add_str(ev, "type", pdbx_event_type_name(t))) {
        cJSON_Delete(ev);
        return NULL;
    }
    return ev;
}

/* ev when ok, else NULL (ev freed): never an event with fields missing. */
static cJSON *done_or_null(cJSON *ev, int ok)
{
    if (ok && ev)
        return ev;
    cJSON_Delete(ev);
    return NULL;
}

/* ---- types ----------------------------------------------------------------------------- */

static const char *const type_names[PDBX_EV_COUNT] = {
    [PDBX_EV_UNKNOWN] = "?", [PDBX_EV_RUN_START] = "run_start", [PDBX_EV_LAUNCH] = "launch",
    [PDBX_EV_POINT_START] = "point_start", [PDBX_EV_OP] = "op", [PDBX_EV_STEP] = "step",
    [PDBX_EV_COMM] = "comm", [PDBX_EV_TRACE] = "trace", [PDBX_EV_POINT_END] = "point_end",
    [PDBX_EV_COLL] = "coll", [PDBX_EV_PROGRESS] = "progress", [PDBX_EV_WARNING] = "warning",
    [PDBX_EV_RUN_END] = "run_end",
};

const char *pdbx_event_type_name(pdbx_event_type t)
{
    return ((int)t > 0 && t < PDBX_EV_COUNT) ? type_names[t] : "?";
}

pdbx_event_type pdbx_event_type_from_name(const char *name)
{
    for (int t = 1; name && t < PDBX_EV_COUNT; t++)
        if (strcmp(type_names[t], name) == 0)
            return (pdbx_event_type)t;
    return PDBX_EV_UNKNOWN;
}

const char *pdbx_event_type_str(const cJSON *ev)
{
    return get_str(ev, "type");
}

pdbx_event_type pdbx_event_type_of(const cJSON *ev)
{
    return pdbx_event_type_from_name(pdbx_event_type_str(ev));
}

int pdbx_event_time(const cJSON *ev, double *t)
{
    return get_num(ev, "t", t);
}

int pdbx_event_stamp(cJSON *ev, double t)
{
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(ev, "t")))
        return 0;
    cJSON_DeleteItemFromObjectCaseSensitive(ev, "t");
    return add_num(ev, "t", t) ? 0 : -1;
}

/* cJSON prints an object's first member as {"name":"value", with no spaces (unformatted). */
static const char *const raw_prefixes[PDBX_EV_COUNT] = {
    [PDBX_EV_UNKNOWN] = "", [PDBX_EV_RUN_START] = "{\"type\":\"run_start\",",
    [PDBX_EV_LAUNCH] = "{\"type\":\"launch\",", [PDBX_EV_POINT_START] = "{\"type\":\"point_start\",",
    [PDBX_EV_OP] = "{\"type\":\"op\",", [PDBX_EV_STEP] = "{\"type\":\"step\",",
    [PDBX_EV_COMM] = "{\"type\":\"comm\",", [PDBX_EV_TRACE] = "{\"type\":\"trace\",",
    [PDBX_EV_POINT_END] = "{\"type\":\"point_end\",", [PDBX_EV_COLL] = "{\"type\":\"coll\",",
    [PDBX_EV_PROGRESS] = "{\"type\":\"progress\",", [PDBX_EV_WARNING] = "{\"type\":\"warning\",",
    [PDBX_EV_RUN_END] = "{\"type\":\"run_end\",",
};

const char *pdbx_event_raw_prefix(pdbx_event_type t)
{
    return ((int)t > 0 && t < PDBX_EV_COUNT) ? raw_prefixes[t] : "";
}

int pdbx_event_raw_is(const char *json, size_t len, pdbx_event_type t)
{
    const char *p = pdbx_event_raw_prefix(t);
    size_t n = strlen(p);
    return n > 0 && len > n && memcmp(json, p, n) == 0;
}

/* ---- stats (declared in profiledb.h) ---------------------------------------------------- */

cJSON *pdbx_stats_to_json(const pdbx_stats *s)
{
    cJSON *o = cJSON_CreateObject();
    /* An unmeasured value is written as null and read back as NaN. */
    int ok = o && add_num(o, "count", (double)s->count) && add_num_or_null(o, "min", s->min) &&
             add_num_or_null(o, "max", s->max) && add_num_or_null(o, "mean", s->mean) &&
             add_num_or_null(o, "median", s->median) && add_num_or_null(o, "std", s->std);
    return done_or_null(o, ok);
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

/* ---- run_start, launch, env ------------------------------------------------------------ */

static int add_launcher(cJSON *ev, const pdbx_ev_launcher *w)
{
    return add_str(ev, "id", w->id) && add_str(ev, "pdbx_version", w->pdbx_version) &&
           add_str(ev, "git_rev", w->git_rev) && add_str(ev, "host", w->host) &&
           add_num(ev, "pid", (double)w->pid) && add_num(ev, "world_size", w->world_size) &&
           add_num(ev, "ranks_per_node", w->ranks_per_node);
}

static void get_launcher(const cJSON *ev, pdbx_ev_launcher *w)
{
    double pid;
    const char *id = get_str(ev, "id");
    if (id && strlen(id) < sizeof w->id)      /* a longer one is no run id: not cut to one */
        snprintf(w->id, sizeof w->id, "%s", id);
    get_strbuf(ev, "pdbx_version", w->pdbx_version, sizeof w->pdbx_version);
    get_strbuf(ev, "git_rev", w->git_rev, sizeof w->git_rev);
    get_strbuf(ev, "host", w->host, sizeof w->host);
    if (get_num(ev, "pid", &pid) && pid >= 0 && pid <= 2147483647.0)
        w->pid = (long)pid;
    get_int(ev, "world_size", &w->world_size);
    get_int(ev, "ranks_per_node", &w->ranks_per_node);
}

static cJSON *model_json(const pdbx_model_info *m)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o && add_str(o, "name", m->name) && add_str(o, "tag", m->tag) &&
             add_num(o, "hidden", m->hidden) && add_num(o, "intermediate", m->intermediate) &&
             add_num(o, "heads", m->heads) && add_num(o, "kv_heads", m->kv_heads) &&
             add_num(o, "head_dim", m->head_dim) && add_num(o, "layers", m->layers) &&
             add_num(o, "vocab", m->vocab);
    return done_or_null(o, ok);
}

static void get_model(const cJSON *mj, pdbx_model_info *m)
{
    if (!cJSON_IsObject(mj))
        return;
    get_strbuf(mj, "name", m->name, sizeof m->name);
    get_strbuf(mj, "tag", m->tag, sizeof m->tag);
    get_int(mj, "hidden", &m->hidden);
    get_int(mj, "intermediate", &m->intermediate);
    get_int(mj, "heads", &m->heads);
    get_int(mj, "kv_heads", &m->kv_heads);
    get_int(mj, "head_dim", &m->head_dim);
    get_int(mj, "layers", &m->layers);
    get_int(mj, "vocab", &m->vocab);
}

static cJSON *plan_json(const pdbx_ev_plan_point *pts, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    int ok = arr != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        const pdbx_ev_plan_point *p = &pts[i];
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(arr, o);
        if (!ok) {
            cJSON_Delete(o);
            break;
        }
        ok = add_num(o, "index", p->index) && add_num(o, "tp", p->tp) && add_num(o, "pp", p->pp) &&
             add_num(o, "dp", p->dp) && add_num(o, "mbs", p->mbs) && add_num(o, "seq_len", p->seq_len) &&
             add_num(o, "predicted_mem_bytes", p->predicted_mem_bytes) &&
             cJSON_AddBoolToObject(o, "predicted_oom", p->predicted_oom);
    }
    return done_or_null(arr, ok);
}

cJSON *pdbx_event_run_start(const pdbx_ev_run_start *h, cJSON *spec, cJSON *env,
                            const pdbx_ev_plan_point *pts, size_t n)
{
    cJSON *ev = new_event(PDBX_EV_RUN_START);
    if (!ev) {
        cJSON_Delete(spec);
        cJSON_Delete(env);
        return NULL;
    }
    int ok_env = !env || add_item(ev, "env", env);      /* both run: each takes its item */
    int ok_spec = !spec || add_item(ev, "spec", spec);
    int ok = ok_env && ok_spec && add_launcher(ev, &h->who) && add_str(ev, "backend", h->backend) &&
             add_item(ev, "model", model_json(&h->model)) &&
             add_num(ev, "layers_profiled", h->layers_profiled) && add_num(ev, "seq_len", h->seq_len) &&
             add_str(ev, "dtype", h->dtype) && add_str(ev, "gpu", h->gpu) &&
             add_str(ev, "gpu_tag", h->gpu_tag) && add_num(ev, "warmup", h->warmup) &&
             add_num(ev, "steps", h->steps) && add_item(ev, "points", plan_json(pts, n));
    return done_or_null(ev, ok);
}

int pdbx_event_decode_run_start(const cJSON *ev, pdbx_ev_run_start *out, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    get_launcher(ev, &out->who);
    get_strbuf(ev, "backend", out->backend, sizeof out->backend);
    get_model(cJSON_GetObjectItemCaseSensitive(ev, "model"), &out->model);
    get_int(ev, "layers_profiled", &out->layers_profiled);
    get_int(ev, "seq_len", &out->seq_len);
    get_int(ev, "warmup", &out->warmup);
    get_int(ev, "steps", &out->steps);
    get_strbuf(ev, "dtype", out->dtype, sizeof out->dtype);
    get_strbuf(ev, "gpu", out->gpu, sizeof out->gpu);
    get_strbuf(ev, "gpu_tag", out->gpu_tag, sizeof out->gpu_tag);
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(ev, "spec");
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(ev, "env");
    if (spec)
        out->spec = spec;
    if (env)
        out->env = env;
    return 0;
}

int pdbx_event_decode_plan(const cJSON *ev, pdbx_ev_plan_point **pts, size_t *n,
                           char *err, size_t errlen)
{
    *pts = NULL;
    *n = 0;
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(ev, "points");
    if (!points)
        return 0;
    if (!cJSON_IsArray(points)) {
        pdbx_errf(err, errlen, "run_start: field \"points\" must be an array of points");
        return -1;
    }
    size_t cap = (size_t)cJSON_GetArraySize(points);
    if (cap && !(*pts = calloc(cap, sizeof **pts))) {
        pdbx_errf(err, errlen, "run_start: out of memory reading the points");
        return -1;
    }
    const cJSON *pj;
    cJSON_ArrayForEach(pj, points) {
        int i = (int)*n;
        if (!cJSON_IsObject(pj)) {
            pdbx_errf(err, errlen, "run_start: points[%d] must be an object", i);
            return -1;
        }
        pdbx_ev_plan_point *p = &(*pts)[(*n)++];
        p->index = i;
        get_int(pj, "index", &p->index);
        get_int(pj, "tp", &p->tp);
        get_int(pj, "pp", &p->pp);
        get_int(pj, "dp", &p->dp);
        get_int(pj, "mbs", &p->mbs);
        get_int(pj, "seq_len", &p->seq_len);
        get_num(pj, "predicted_mem_bytes", &p->predicted_mem_bytes);
        p->predicted_oom = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pj, "predicted_oom"));
    }
    return 0;
}

cJSON *pdbx_event_launch(const pdbx_ev_launcher *who, cJSON *env, const int (*configs)[3], size_t n)
{
    cJSON *ev = new_event(PDBX_EV_LAUNCH);
    if (!ev) {
        cJSON_Delete(env);
        return NULL;
    }
    int ok_env = !env || add_item(ev, "env", env);
    int ok = ok_env && add_launcher(ev, who);
    cJSON *cfgs = ok ? cJSON_AddArrayToObject(ev, "configs") : NULL;
    ok = ok && cfgs;
    for (size_t c = 0; ok && c < n; c++) {
        cJSON *one = cJSON_CreateIntArray(configs[c], 3);
        ok = one && cJSON_AddItemToArray(cfgs, one);
        if (!ok)
            cJSON_Delete(one);
    }
    return done_or_null(ev, ok);
}

int pdbx_event_decode_launch(const cJSON *ev, pdbx_ev_launcher *out, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    get_launcher(ev, out);
    return 0;
}

/* A field the backend has not described yet. */
static int add_missing_str(cJSON *env, const char *name, const char *v)
{
    return cJSON_GetObjectItemCaseSensitive(env, name) || !v || add_str(env, name, v);
}

int pdbx_event_env_fill(cJSON *env, const pdbx_ev_env *e)
{
    cJSON *hosts = cJSON_CreateArray();
    int ok = hosts != NULL;
    for (size_t i = 0; ok && i < e->nhosts; i++) {
        cJSON *h = cJSON_CreateString(e->hosts[i]);
        ok = h && cJSON_AddItemToArray(hosts, h);
        if (!ok)
            cJSON_Delete(h);
    }
    if (!ok) {
        cJSON_Delete(hosts);
        return -1;
    }
    ok = add_item(env, "hosts", hosts) && add_missing_str(env, "cpu", e->cpu) &&
         (cJSON_GetObjectItemCaseSensitive(env, "blas_threads") ||
          add_num(env, "blas_threads", e->blas_threads)) &&
         add_str(env, "mpi", e->mpi) && add_str(env, "comm", e->comm) &&
         (cJSON_GetObjectItemCaseSensitive(env, "nccl") || cJSON_AddNullToObject(env, "nccl")) &&
         (cJSON_GetObjectItemCaseSensitive(env, "cuda") || cJSON_AddNullToObject(env, "cuda")) &&
         add_str(env, "pdbx_version", e->pdbx_version) && add_str(env, "git_rev", e->git_rev) &&
         add_num(env, "ranks_per_node", e->ranks_per_node) &&
         add_num(env, "cores_per_node", e->cores_per_node) &&
         add_str(env, "rank_order", e->rank_order) && add_str(env, "timing", e->timing);
    return ok ? 0 : -1;
}

int pdbx_event_env_set_device(cJSON *env, const char *device)
{
    cJSON_DeleteItemFromObjectCaseSensitive(env, "device");
    return add_str(env, "device", device) ? 0 : -1;
}

const char *pdbx_event_env_device(const cJSON *env)
{
    return cJSON_IsObject(env) ? get_str(env, "device") : NULL;
}

size_t pdbx_event_env_hosts(const cJSON *env, const char **out, size_t cap)
{
    size_t n = 0;
    const cJSON *h;
    const cJSON *hl = cJSON_IsObject(env) ? cJSON_GetObjectItemCaseSensitive(env, "hosts") : NULL;
    cJSON_ArrayForEach(h, hl) {
        if (n < cap && cJSON_IsString(h))
            out[n++] = h->valuestring;
    }
    return n;
}

/* ---- one point ------------------------------------------------------------------------- */

/* Required "point" (>= 0) of a point's event. */
static int get_point(const cJSON *ev, pdbx_event_type t, int *point, char *err, size_t errlen)
{
    if (!get_int(ev, "point", point) || *point < 0) {
        pdbx_errf(err, errlen, "%s event: field \"point\" must be a point index >= 0",
                  pdbx_event_type_name(t));
        return -1;
    }
    return 0;
}

cJSON *pdbx_event_point_start(int point, int tp, int pp, int dp, int mbs)
{
    cJSON *ev = new_event(PDBX_EV_POINT_START);
    int ok = ev && add_num(ev, "point", point) && add_num(ev, "tp", tp) && add_num(ev, "pp", pp) &&
             add_num(ev, "dp", dp) && add_num(ev, "mbs", mbs);
    return done_or_null(ev, ok);
}

int pdbx_event_decode_point_start(const cJSON *ev, pdbx_ev_point_start *out, char *err, size_t errlen)
{
    if (get_point(ev, PDBX_EV_POINT_START, &out->point, err, errlen) != 0)
        return -1;
    out->has_shape = get_int(ev, "tp", &out->tp);
    get_int(ev, "pp", &out->pp);
    get_int(ev, "dp", &out->dp);
    get_int(ev, "mbs", &out->mbs);
    get_int(ev, "seq_len", &out->seq_len);
    return 0;
}

/* A cell's "stats" and "ranks" onto obj. */
static int add_cell_stats(cJSON *obj, const pdbx_cell *c)
{
    cJSON *ranks = cJSON_CreateArray();
    int ok = ranks != NULL;
    for (int i = 0; ok && i < c->nranks && c->rank; i++) {
        cJSON *r = pdbx_stats_to_json(&c->rank[i]);
        ok = r && cJSON_AddItemToArray(ranks, r);
        if (!ok)
            cJSON_Delete(r);
    }
    if (!ok) {
        cJSON_Delete(ranks);
        return 0;
    }
    return add_item(obj, "stats", pdbx_stats_to_json(&c->stats)) && add_item(obj, "ranks", ranks);
}

/* "stats" (required) and "ranks" (optional) of obj into c (c->rank malloc'ed). what names
 * the event in messages, e.g. "op event (point 3, op attn_q)". */
static int get_cell_stats(const cJSON *obj, pdbx_cell *c, const char *what, char *err, size_t errlen)
{
    if (pdbx_stats_from_json(cJSON_GetObjectItemCaseSensitive(obj, "stats"), &c->stats) != 0) {
        pdbx_errf(err, errlen, "%s: field \"stats\" must be a stats object", what);
        return -1;
    }
    const cJSON *rj = cJSON_GetObjectItemCaseSensitive(obj, "ranks");
    int n = cJSON_IsArray(rj) ? cJSON_GetArraySize(rj) : 0;
    c->rank = NULL;
    c->nranks = 0;
    if (n > 0 && !(c->rank = calloc((size_t)n, sizeof *c->rank))) {
        pdbx_errf(err, errlen, "%s: out of memory", what);
        return -1;
    }
    const cJSON *r;
    cJSON_ArrayForEach(r, rj) {
        if (pdbx_stats_from_json(r, &c->rank[c->nranks]) != 0) {
            pdbx_errf(err, errlen, "%s: field \"ranks\"[%d] must be a stats object", what, c->nranks);
            free(c->rank);
            c->rank = NULL;
            c->nranks = 0;
            return -1;
        }
        c->nranks++;
    }
    c->valid = 1;
    return 0;
}

cJSON *pdbx_event_op(int point, pdbx_op op, const pdbx_cell *c)
{
    cJSON *ev = new_event(PDBX_EV_OP);
    int ok = ev && add_num(ev, "point", point) && add_str(ev, "op", pdbx_op_name(op)) &&
             add_cell_stats(ev, c) && add_num(ev, "flops", c->flops) && add_num(ev, "bytes", c->bytes);
    return done_or_null(ev, ok);
}

int pdbx_event_decode_op(const cJSON *ev, pdbx_ev_op *out, char *err, size_t errlen)
{
    if (get_point(ev, PDBX_EV_OP, &out->point, err, errlen) != 0)
        return -1;
    out->name = get_str(ev, "op");
    out->op = pdbx_op_from_name(out->name);
    if (out->op < 0)
        return 0;   /* forward compatible: an op this build does not know is skipped */
    char what[96];
    snprintf(what, sizeof what, "op event (point %d, op %s)", out->point, out->name);
    if (get_cell_stats(ev, &out->cell, what, err, errlen) != 0)
        return -1;
    out->cell.flops = out->cell.bytes = 0.0;
    get_num(ev, "flops", &out->cell.flops);
    get_num(ev, "bytes", &out->cell.bytes);
    return 0;
}

static const char *const step_cells[2] = {"layer", "total"};

cJSON *pdbx_event_step(int point, const pdbx_cell *layer, const pdbx_cell *total)
{
    const pdbx_cell *cells[2] = {layer, total};
    cJSON *ev = new_event(PDBX_EV_STEP);
    int ok = ev && add_num(ev, "point", point);
    for (int i = 0; ok && i < 2; i++) {
        if (!cells[i] || !cells[i]->valid)
            continue;
        cJSON *o = cJSON_CreateObject();
        ok = o && add_cell_stats(o, cells[i]);
        ok = add_item(ev, step_cells[i], done_or_null(o, ok));
    }
    return done_or_null(ev, ok);
}

int pdbx_event_decode_step(const cJSON *ev, pdbx_ev_step *out, char *err, size_t errlen)
{
    if (get_point(ev, PDBX_EV_STEP, &out->point, err, errlen) != 0)
        return -1;
    pdbx_cell *cells[2] = {&out->layer, &out->total};
    for (int i = 0; i < 2; i++) {
        memset(cells[i], 0, sizeof *cells[i]);
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(ev, step_cells[i]);
        if (!o)
            continue;
        char what[96];
        snprintf(what, sizeof what, "step event (point %d): field \"%s\"", out->point, step_cells[i]);
        if (!cJSON_IsObject(o)) {
            pdbx_errf(err, errlen, "%s must be an object with stats and ranks", what);
        } else if (get_cell_stats(o, cells[i], what, err, errlen) == 0) {
            continue;
        }
        if (i == 1) {
            free(out->layer.rank);
            memset(&out->layer, 0, sizeof out->layer);
        }
        return -1;
    }
    return 0;
}

static const char *const comm_kinds[PDBX_COMM_KINDS] = {
    [PDBX_COMM_TP_ALLREDUCE] = "tp_allreduce", [PDBX_COMM_PP_SENDRECV] = "pp_sendrecv",
    [PDBX_COMM_DP_ALLREDUCE] = "dp_allreduce",
};

const char *pdbx_comm_kind_name(pdbx_comm_kind k)
{
    return ((int)k >= 0 && k < PDBX_COMM_KINDS) ? comm_kinds[k] : "?";
}

cJSON *pdbx_event_comm(int point, pdbx_comm_kind kind, const pdbx_comm_cell *c)
{
    cJSON *ev = new_event(PDBX_EV_COMM);
    int ok = ev && add_num(ev, "point", point) && add_str(ev, "kind", pdbx_comm_kind_name(kind)) &&
             add_num(ev, "bytes", c->bytes) && add_num(ev, "group_size", c->group_size) &&
             add_item(ev, "stats", pdbx_stats_to_json(&c->time)) &&
             add_num_or_null(ev, "algbw", c->algbw) && add_num_or_null(ev, "busbw", c->busbw);
    return done_or_null(ev, ok);
}

int pdbx_event_decode_comm(const cJSON *ev, pdbx_ev_comm *out, char *err, size_t errlen)
{
    if (get_point(ev, PDBX_EV_COMM, &out->point, err, errlen) != 0)
        return -1;
    const char *kind = get_str(ev, "kind");
    int k = 0;
    while (k < PDBX_COMM_KINDS && !(kind && strcmp(kind, comm_kinds[k]) == 0))
        k++;
    if (k == PDBX_COMM_KINDS) {
        pdbx_errf(err, errlen, "comm event (point %d): field \"kind\" is \"%s\"; allowed: tp_allreduce, "
                  "pp_sendrecv, dp_allreduce", out->point, kind ? kind : "(missing)");
        return -1;
    }
    out->kind = (pdbx_comm_kind)k;
    pdbx_comm_cell *c = &out->cell;
    if (pdbx_stats_from_json(cJSON_GetObjectItemCaseSensitive(ev, "stats"), &c->time) != 0) {
        pdbx_errf(err, errlen, "comm event (point %d, %s): field \"stats\" must be a stats object",
                  out->point, kind);
        return -1;
    }
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

cJSON *pdbx_event_trace(int point, int rank, const pdbx_trace_event *ops, size_t n)
{
    cJSON *ev = new_event(PDBX_EV_TRACE);
    int ok = ev && add_num(ev, "point", point) && add_num(ev, "rank", rank);
    cJSON *arr = ok ? cJSON_AddArrayToObject(ev, "ops") : NULL;
    ok = ok && arr;
    for (size_t i = 0; ok && i < n; i++) {
        cJSON *one = cJSON_CreateArray();
        ok = one && cJSON_AddItemToArray(arr, one);
        if (!ok) {
            cJSON_Delete(one);
            break;
        }
        const double v[3] = {ops[i].layer, ops[i].start_us, ops[i].dur_us};
        cJSON *name = cJSON_CreateString(pdbx_op_name(ops[i].op));
        ok = name && cJSON_AddItemToArray(one, name);
        if (!ok)
            cJSON_Delete(name);
        for (int k = 0; ok && k < 3; k++) {
            cJSON *num = cJSON_CreateNumber(v[k]);
            ok = num && cJSON_AddItemToArray(one, num);
            if (!ok)
                cJSON_Delete(num);
        }
    }
    return done_or_null(ev, ok);
}

int pdbx_event_decode_trace(const cJSON *ev, pdbx_ev_trace *out, char *err, size_t errlen)
{
    out->ops = NULL;
    out->n = 0;
    if (!get_int(ev, "point", &out->point)) {
        pdbx_errf(err, errlen, "trace event: field \"point\" must be a point index");
        return -1;
    }
    get_int(ev, "rank", &out->rank);
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(ev, "ops");
    if (!cJSON_IsArray(ops)) {
        pdbx_errf(err, errlen, "trace event (point %d): field \"ops\" must be an array of "
                  "[op, layer, start_us, dur_us]", out->point);
        return -1;
    }
    size_t cap = (size_t)cJSON_GetArraySize(ops);
    if (cap && !(out->ops = calloc(cap, sizeof *out->ops))) {
        pdbx_errf(err, errlen, "trace event (point %d): out of memory", out->point);
        return -1;
    }
    int i = 0, rc = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, ops) {
        const cJSON *name = cJSON_GetArrayItem(e, 0), *layer = cJSON_GetArrayItem(e, 1),
                    *start = cJSON_GetArrayItem(e, 2), *dur = cJSON_GetArrayItem(e, 3);
        int op = cJSON_IsString(name) ? pdbx_op_from_name(name->valuestring) : -1;
        if (!cJSON_IsArray(e) || !cJSON_IsString(name) || !cJSON_IsNumber(layer) ||
            !cJSON_IsNumber(start) || !cJSON_IsNumber(dur)) {
            pdbx_errf(err, errlen, "trace event (point %d): field \"ops\"[%d] must be "
                      "[op, layer, start_us, dur_us]", out->point, i);
            rc = -1;
        } else if (op >= 0) {
            out->ops[out->n++] = (pdbx_trace_event){
                .point = out->point, .rank = out->rank, .layer = layer->valueint, .op = (pdbx_op)op,
                .start_us = start->valuedouble, .dur_us = dur->valuedouble};
        }
        i++;
    }
    return rc;
}

cJSON *pdbx_event_point_end(int point, pdbx_point_status status, const char *message)
{
    cJSON *ev = new_event(PDBX_EV_POINT_END);
    int ok = ev && add_num(ev, "point", point) && add_str(ev, "status", pdbx_point_status_name(status)) &&
             (!message || !*message || add_str(ev, "message", message));
    return done_or_null(ev, ok);
}

int pdbx_event_decode_point_end(const cJSON *ev, pdbx_ev_point_end *out, char *err, size_t errlen)
{
    if (get_point(ev, PDBX_EV_POINT_END, &out->point, err, errlen) != 0)
        return -1;
    const char *st = get_str(ev, "status");
    int s = PDBX_POINT_OK;
    while (s <= PDBX_POINT_SKIPPED && !(st && strcmp(st, pdbx_point_status_name((pdbx_point_status)s)) == 0))
        s++;
    if (s > PDBX_POINT_SKIPPED) {
        pdbx_errf(err, errlen, "point_end event (point %d): field \"status\" is \"%s\"; allowed: ok, oom, "
                  "predicted_oom, error, skipped", out->point, st ? st : "(missing)");
        return -1;
    }
    out->status = (pdbx_point_status)s;
    const char *msg = get_str(ev, "message");
    out->message = (msg && *msg) ? msg : NULL;
    return 0;
}

/* ---- the run --------------------------------------------------------------------------- */

cJSON *pdbx_event_coll(const pdbx_coll_result *r)
{
    cJSON *ev = new_event(PDBX_EV_COLL);
    int ok = ev && add_str(ev, "coll", r->coll) && add_num(ev, "bytes", r->bytes) &&
             add_num(ev, "nranks", r->nranks) && add_num(ev, "ranks_per_node", r->ranks_per_node) &&
             add_item(ev, "stats", pdbx_stats_to_json(&r->time)) &&
             add_num_or_null(ev, "algbw", r->algbw) && add_num_or_null(ev, "busbw", r->busbw);
    return done_or_null(ev, ok);
}

int pdbx_event_decode_coll(const cJSON *ev, pdbx_coll_result *r, char *err, size_t errlen)
{
    const char *coll = get_str(ev, "coll");
    memset(r, 0, sizeof *r);
    if (!coll || !*coll) {
        pdbx_errf(err, errlen, "coll event: field \"coll\" must be a collective name");
        return -1;
    }
    if (pdbx_stats_from_json(cJSON_GetObjectItemCaseSensitive(ev, "stats"), &r->time) != 0) {
        pdbx_errf(err, errlen, "coll event (%s): field \"stats\" must be a stats object", coll);
        return -1;
    }
    snprintf(r->coll, sizeof r->coll, "%s", coll);
    r->algbw = r->busbw = NAN;
    get_num(ev, "bytes", &r->bytes);
    get_int(ev, "nranks", &r->nranks);
    get_int(ev, "ranks_per_node", &r->ranks_per_node);
    get_num(ev, "algbw", &r->algbw);
    get_num(ev, "busbw", &r->busbw);
    return 0;
}

cJSON *pdbx_event_progress(const pdbx_ev_progress *p)
{
    cJSON *ev = new_event(PDBX_EV_PROGRESS);
    int ok = ev && add_num(ev, "done", p->done) && add_num(ev, "total", p->total) &&
             (p->point >= 0 ? add_num(ev, "point", p->point) : cJSON_AddNullToObject(ev, "point") != NULL) &&
             add_str(ev, "op", p->op) && add_num(ev, "elapsed_s", p->elapsed_s) &&
             add_num_or_null(ev, "eta_s", p->eta_s);
    return done_or_null(ev, ok);
}

int pdbx_event_decode_progress(const cJSON *ev, pdbx_ev_progress *out, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    get_num(ev, "done", &out->done);
    get_num(ev, "total", &out->total);
    get_int(ev, "point", &out->point);
    const char *op = get_str(ev, "op");
    if (op)
        out->op = op;
    get_num(ev, "elapsed_s", &out->elapsed_s);
    out->eta_s = NAN;
    get_num(ev, "eta_s", &out->eta_s);
    return 0;
}

cJSON *pdbx_event_warning(const char *message)
{
    cJSON *ev = new_event(PDBX_EV_WARNING);
    return done_or_null(ev, ev && add_str(ev, "message", message));
}

int pdbx_event_decode_warning(const cJSON *ev, const char **message, char *err, size_t errlen)
{
    if (!(*message = get_str(ev, "message"))) {
        pdbx_errf(err, errlen, "warning event: field \"message\" must be a string");
        return -1;
    }
    return 0;
}

const char pdbx_event_by_supervisor[] = "supervisor";

cJSON *pdbx_event_run_end(pdbx_run_status status, const char *reason, double elapsed_s,
                          const char *by)
{
    cJSON *ev = new_event(PDBX_EV_RUN_END);
    int ok = ev && add_str(ev, "status", pdbx_run_status_name(status)) && add_str(ev, "reason", reason) &&
             (!by || add_str(ev, "by", by)) && (isnan(elapsed_s) || add_num(ev, "elapsed_s", elapsed_s));
    return done_or_null(ev, ok);
}

int pdbx_event_decode_run_end(const cJSON *ev, pdbx_ev_run_end *out, char *err, size_t errlen)
{
    const char *st = get_str(ev, "status");
    out->reason = get_str(ev, "reason");
    out->by = get_str(ev, "by");
    out->elapsed_s = NAN;
    get_num(ev, "elapsed_s", &out->elapsed_s);
    for (int s = PDBX_RUN_COMPLETE; s <= PDBX_RUN_FAILED; s++) {
        if (st && strcmp(st, pdbx_run_status_name((pdbx_run_status)s)) == 0) {
            out->status = (pdbx_run_status)s;
            return 0;
        }
    }
    out->status = PDBX_RUN_FAILED;
    pdbx_errf(err, errlen, "run_end event: field \"status\" is \"%s\"; allowed: complete, cancelled, failed",
              st ? st : "(missing)");
    return -1;
}
