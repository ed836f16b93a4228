/* events.c: the run-event schema (see events.h and docs/events.md). The only file in pdbx that
 * spells an event type or field name. Encoders chain json_fields.h writers with && (each
 * takes or deletes what it is given), so an event is whole or NULL, never half built.
 */
#include "store/events.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/json_fields.h"
#include "store/util/err.h"

/* Field tables: the scalar members of a struct and their names (json_fields.h). */
#define F(T, kind, member, name) JF_FIELD(T, JF_##kind, member, name)

static const jf_field launcher_fields[] = {
    F(pdbx_ev_launcher, ID, id, "id"), F(pdbx_ev_launcher, STR, pdbx_version, "pdbx_version"),
    F(pdbx_ev_launcher, STR, git_rev, "git_rev"), F(pdbx_ev_launcher, STR, host, "host"),
    F(pdbx_ev_launcher, PID, pid, "pid"), F(pdbx_ev_launcher, NUM, pid_start, "pid_start"),
    F(pdbx_ev_launcher, STR, boot_id, "boot_id"), F(pdbx_ev_launcher, INT, world_size, "world_size"),
    F(pdbx_ev_launcher, INT, ranks_per_node, "ranks_per_node"),
};
/* Written only when set (put_launch_fields): runs before them read the same as ever. */
static const jf_field launch_fields[] = {
    F(pdbx_ev_launcher, STR, launcher, "launcher"), F(pdbx_ev_launcher, STR, command, "command"),
};
static const jf_field header_fields[] = {
    F(pdbx_ev_run_start, STR, backend, "backend"),
    F(pdbx_ev_run_start, INT, layers_profiled, "layers_profiled"),
    F(pdbx_ev_run_start, INT, seq_len, "seq_len"), F(pdbx_ev_run_start, STR, dtype, "dtype"),
    F(pdbx_ev_run_start, STR, gpu, "gpu"), F(pdbx_ev_run_start, STR, gpu_tag, "gpu_tag"),
    F(pdbx_ev_run_start, INT, warmup, "warmup"), F(pdbx_ev_run_start, INT, steps, "steps"),
};
static const jf_field model_fields[] = {
    F(pdbx_model_info, STR, name, "name"), F(pdbx_model_info, STR, tag, "tag"),
    F(pdbx_model_info, INT, hidden, "hidden"), F(pdbx_model_info, INT, intermediate, "intermediate"),
    F(pdbx_model_info, INT, heads, "heads"), F(pdbx_model_info, INT, kv_heads, "kv_heads"),
    F(pdbx_model_info, INT, head_dim, "head_dim"), F(pdbx_model_info, INT, layers, "layers"),
    F(pdbx_model_info, INT, vocab, "vocab"),
};
static const jf_field plan_fields[] = {
    F(pdbx_ev_plan_point, INT, index, "index"), F(pdbx_ev_plan_point, INT, tp, "tp"),
    F(pdbx_ev_plan_point, INT, pp, "pp"), F(pdbx_ev_plan_point, INT, dp, "dp"),
    F(pdbx_ev_plan_point, INT, mbs, "mbs"), F(pdbx_ev_plan_point, INT, seq_len, "seq_len"),
    F(pdbx_ev_plan_point, NUM, predicted_mem_bytes, "predicted_mem_bytes"),
    F(pdbx_ev_plan_point, BOOL, predicted_oom, "predicted_oom"),
};
static const jf_field shape_fields[] = {
    F(pdbx_ev_point_start, INT, tp, "tp"), F(pdbx_ev_point_start, INT, pp, "pp"),
    F(pdbx_ev_point_start, INT, dp, "dp"), F(pdbx_ev_point_start, INT, mbs, "mbs"),
    F(pdbx_ev_point_start, INT, seq_len, "seq_len"),
};
static const jf_field comm_fields[] = {
    F(pdbx_comm_cell, NUM, bytes, "bytes"), F(pdbx_comm_cell, INT, group_size, "group_size"),
    F(pdbx_comm_cell, NUM, algbw, "algbw"), F(pdbx_comm_cell, NUM, busbw, "busbw"),
};
/* done, total, point (written as null when < 0), elapsed_s, coll_done, coll_total */
static const jf_field progress_fields[] = {
    F(pdbx_ev_progress, NUM, done, "done"), F(pdbx_ev_progress, NUM, total, "total"),
    F(pdbx_ev_progress, INT, point, "point"), F(pdbx_ev_progress, NUM, elapsed_s, "elapsed_s"),
    F(pdbx_ev_progress, NUM, coll_done, "coll_done"), F(pdbx_ev_progress, NUM, coll_total, "coll_total"),
    F(pdbx_ev_progress, NUM, infer_done, "infer_done"), F(pdbx_ev_progress, NUM, infer_total, "infer_total"),
};
static const jf_field infer_attn_fields[] = {
    F(pdbx_infer_attn, INT, tp, "tp"), F(pdbx_infer_attn, INT, batch, "batch"),
    F(pdbx_infer_attn, INT, chunk, "chunk"), F(pdbx_infer_attn, INT, kv, "kv"),
    F(pdbx_infer_attn, INT, heads, "heads"), F(pdbx_infer_attn, INT, kv_heads, "kv_heads"),
};
static const jf_field coll_fields[] = {
    F(pdbx_coll_result, STR, coll, "coll"), F(pdbx_coll_result, NUM, bytes, "bytes"),
    F(pdbx_coll_result, INT, nranks, "nranks"), F(pdbx_coll_result, INT, ranks_per_node, "ranks_per_node"),
    F(pdbx_coll_result, NUM, algbw, "algbw"), F(pdbx_coll_result, NUM, busbw, "busbw"),
    F(pdbx_coll_result, INT, nodes, "nodes"), F(pdbx_coll_result, BOOL, spans_nodes, "spans_nodes"),
    F(pdbx_coll_result, BOOL, in_place, "in_place"),
};

/* {"type": <t>}: type first, as pdbx_event_raw_is expects. */
static cJSON *new_event(pdbx_event_type t)
{
    cJSON *ev = cJSON_CreateObject();
    return jf_done(ev, ev && jf_put_str(ev, "type", pdbx_event_type_name(t)));
}

/* ---- types ----------------------------------------------------------------------------- */

static const char *const type_names[PDBX_EV_COUNT] = {
    [PDBX_EV_UNKNOWN] = "?", [PDBX_EV_RUN_START] = "run_start", [PDBX_EV_LAUNCH] = "launch",
    [PDBX_EV_POINT_START] = "point_start", [PDBX_EV_OP] = "op", [PDBX_EV_STEP] = "step",
    [PDBX_EV_COMM] = "comm", [PDBX_EV_TRACE] = "trace", [PDBX_EV_POINT_END] = "point_end",
    [PDBX_EV_COLL] = "coll", [PDBX_EV_PROGRESS] = "progress", [PDBX_EV_WARNING] = "warning",
    [PDBX_EV_RUN_END] = "run_end", [PDBX_EV_INFER_TOKENS] = "infer_tokens",
    [PDBX_EV_INFER_ATTN] = "infer_attn",
};

const char *pdbx_event_type_name(pdbx_event_type t)
{
    return ((int)t > 0 && t < PDBX_EV_COUNT) ? type_names[t] : "?";
}

pdbx_event_type pdbx_event_type_from_name(const char *name)
{
    int t = jf_name_index(name, type_names + 1, PDBX_EV_COUNT - 1);
    return t < 0 ? PDBX_EV_UNKNOWN : (pdbx_event_type)(t + 1);
}

const char *pdbx_event_type_str(const cJSON *ev)
{
    return jf_str(ev, "type");
}

pdbx_event_type pdbx_event_type_of(const cJSON *ev)
{
    return pdbx_event_type_from_name(pdbx_event_type_str(ev));
}

int pdbx_event_time(const cJSON *ev, double *t)
{
    return jf_num(ev, "t", t);
}

int pdbx_event_stamp(cJSON *ev, double t)
{
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(ev, "t")))
        return 0;
    cJSON_DeleteItemFromObjectCaseSensitive(ev, "t");
    return jf_put_num(ev, "t", t) ? 0 : -1;
}

int pdbx_event_raw_is(const char *json, size_t len, pdbx_event_type t)
{
    /* cJSON prints an object's first member as {"type":"<name>", (unformatted: no spaces) */
    static const char raw_head[] = "{\"type\":\"";
    if ((int)t <= 0 || t >= PDBX_EV_COUNT)
        return 0;
    size_t h = sizeof raw_head - 1, n = strlen(type_names[t]);
    return len > h + n + 2 && memcmp(json, raw_head, h) == 0 &&
           memcmp(json + h, type_names[t], n) == 0 && memcmp(json + h + n, "\",", 2) == 0;
}

/* ---- stats (declared in profiledb.h) ---------------------------------------------------- */

static const jf_field stats_fields[] = {
    F(pdbx_stats, NUM, min, "min"), F(pdbx_stats, NUM, max, "max"), F(pdbx_stats, NUM, mean, "mean"),
    F(pdbx_stats, NUM, median, "median"), F(pdbx_stats, NUM, std, "std"),
};

/* An unmeasured value is written as null and read back as NaN. */
cJSON *pdbx_stats_to_json(const pdbx_stats *s)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o && jf_put_num(o, "count", (double)s->count) &&
             jf_put_fields(o, s, stats_fields, JF_N(stats_fields)) &&
             (!isfinite(s->ci95) || jf_put_num(o, "ci95", s->ci95));
    return jf_done(o, ok);
}

int pdbx_stats_from_json(const cJSON *obj, pdbx_stats *out)
{
    double count;
    if (!cJSON_IsObject(obj) || !jf_num(obj, "count", &count) || count < 0 || count > 9.0e15 ||
        jf_get_numbers_or_null(obj, out, stats_fields, JF_N(stats_fields)) != 0)
        return -1;
    out->count = (int64_t)count;
    /* optional (runs recorded before it have none); a negative half-width is no interval */
    if (!jf_num(obj, "ci95", &out->ci95) || !(out->ci95 >= 0))
        out->ci95 = NAN;
    return 0;
}

/* ---- run_start, launch, env ------------------------------------------------------------ */

static cJSON *plan_json(const pdbx_ev_plan_point *pts, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    int ok = arr != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        ok = jf_push(arr, o) && jf_put_fields(o, &pts[i], plan_fields, JF_N(plan_fields));
    }
    return jf_done(arr, ok);
}

static int put_launch_fields(cJSON *ev, const pdbx_ev_launcher *who)
{
    return (!who->launcher[0] || jf_put_str(ev, "launcher", who->launcher)) &&
           (!who->command[0] || jf_put_str(ev, "command", who->command));
}

cJSON *pdbx_event_run_start(const pdbx_ev_run_start *h, cJSON *spec, cJSON *env,
                            const pdbx_ev_plan_point *pts, size_t n)
{
    cJSON *ev = new_event(PDBX_EV_RUN_START);
    /* both run, even without ev: each takes (or deletes) its item */
    int ok_env = !env || jf_add(ev, "env", env);
    int ok_spec = !spec || jf_add(ev, "spec", spec);
    cJSON *model = cJSON_CreateObject();
    int ok_model = jf_add(ev, "model", model) &&
                   jf_put_fields(model, &h->model, model_fields, JF_N(model_fields));
    int ok = ok_env && ok_spec && ok_model &&
             jf_put_fields(ev, &h->who, launcher_fields, JF_N(launcher_fields)) &&
             put_launch_fields(ev, &h->who) &&
             jf_put_fields(ev, h, header_fields, JF_N(header_fields)) &&
             jf_add(ev, "points", plan_json(pts, n));
    return jf_done(ev, ok);
}

void pdbx_event_decode_run_start(const cJSON *ev, pdbx_ev_run_start *out)
{
    jf_get_fields(ev, &out->who, launcher_fields, JF_N(launcher_fields));
    jf_get_fields(ev, &out->who, launch_fields, JF_N(launch_fields));
    jf_get_fields(ev, out, header_fields, JF_N(header_fields));
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(ev, "model");
    if (cJSON_IsObject(model))
        jf_get_fields(model, &out->model, model_fields, JF_N(model_fields));
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(ev, "spec");
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(ev, "env");
    out->spec = spec ? spec : out->spec;
    out->env = env ? env : out->env;
}

int pdbx_event_decode_plan(const cJSON *ev, pdbx_ev_plan_point **pts, size_t *n,
                           char *err, size_t errlen)
{
    *pts = NULL;
    *n = 0;
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(ev, "points");
    if (!points)
        return 0;
    if (!cJSON_IsArray(points))
        return pdbx_fail(err, errlen, "run_start: field \"points\" must be an array of points");
    size_t cap = (size_t)cJSON_GetArraySize(points);
    if (cap && !(*pts = calloc(cap, sizeof **pts)))
        return pdbx_fail(err, errlen, "run_start: out of memory reading the points");
    const cJSON *pj;
    cJSON_ArrayForEach(pj, points) {
        if (!cJSON_IsObject(pj))
            return pdbx_fail(err, errlen, "run_start: points[%zu] must be an object", *n);
        pdbx_ev_plan_point *p = &(*pts)[*n];
        p->index = (int)(*n)++;
        jf_get_fields(pj, p, plan_fields, JF_N(plan_fields));
    }
    return 0;
}

cJSON *pdbx_event_launch(const pdbx_ev_launcher *who, cJSON *env, const int (*configs)[3], size_t n)
{
    cJSON *ev = new_event(PDBX_EV_LAUNCH);
    int ok_env = !env || jf_add(ev, "env", env);
    int ok = ok_env && jf_put_fields(ev, who, launcher_fields, JF_N(launcher_fields)) &&
             put_launch_fields(ev, who);
    cJSON *cfgs = ok ? cJSON_AddArrayToObject(ev, "configs") : NULL;
    ok = ok && cfgs;
    for (size_t c = 0; ok && c < n; c++)
        ok = jf_push(cfgs, cJSON_CreateIntArray(configs[c], 3));
    return jf_done(ev, ok);
}

void pdbx_event_decode_launch(const cJSON *ev, pdbx_ev_launcher *out)
{
    jf_get_fields(ev, out, launcher_fields, JF_N(launcher_fields));
    jf_get_fields(ev, out, launch_fields, JF_N(launch_fields));
}

static const jf_field place_fields[] = {
    F(pdbx_ev_rank_place, STR, host, "host"), F(pdbx_ev_rank_place, INT, local_rank, "local_rank"),
    F(pdbx_ev_rank_place, INT, device, "device"), F(pdbx_ev_rank_place, STR, uuid, "uuid"),
};

static cJSON *placement_json(const pdbx_ev_rank_place *p, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    int ok = arr != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        ok = jf_push(arr, o) && jf_put_num(o, "rank", (double)i) &&
             jf_put_fields(o, &p[i], place_fields, JF_N(place_fields));
    }
    return jf_done(arr, ok);
}

size_t pdbx_event_env_placement(const cJSON *env, pdbx_ev_rank_place *out, size_t cap)
{
    const cJSON *arr = cJSON_IsObject(env) ? cJSON_GetObjectItemCaseSensitive(env, "placement") : NULL;
    const cJSON *o;
    size_t n = 0;
    if (!cJSON_IsArray(arr))
        return 0;
    cJSON_ArrayForEach(o, arr) {
        if (n >= cap || !cJSON_IsObject(o))
            break;
        memset(&out[n], 0, sizeof out[n]);
        out[n].device = -1;
        jf_get_fields(o, &out[n], place_fields, JF_N(place_fields));
        n++;
    }
    return n;
}

int pdbx_event_env_fill(cJSON *env, const pdbx_ev_env *e)
{
    /* what the backend described itself wins */
    int ok = jf_add(env, "hosts", cJSON_CreateStringArray(e->hosts, (int)e->nhosts)) &&
             (cJSON_HasObjectItem(env, "cpu") || !e->cpu || jf_put_str(env, "cpu", e->cpu)) &&
             (cJSON_HasObjectItem(env, "blas_threads") ||
              jf_put_num(env, "blas_threads", e->blas_threads)) &&
             jf_put_str(env, "mpi", e->mpi) && jf_put_str(env, "comm", e->comm) &&
             (cJSON_HasObjectItem(env, "nccl") || cJSON_AddNullToObject(env, "nccl")) &&
             (cJSON_HasObjectItem(env, "cuda") || cJSON_AddNullToObject(env, "cuda")) &&
             jf_put_str(env, "pdbx_version", e->pdbx_version) && jf_put_str(env, "git_rev", e->git_rev) &&
             jf_put_num(env, "ranks_per_node", e->ranks_per_node) &&
             jf_put_num(env, "cores_per_node", e->cores_per_node) &&
             jf_put_str(env, "rank_order", e->rank_order) && jf_put_str(env, "timing", e->timing) &&
             (!e->places || jf_add(env, "placement", placement_json(e->places, e->nplaces)));
    return ok ? 0 : -1;
}

int pdbx_event_env_set_device(cJSON *env, const char *device)
{
    cJSON_DeleteItemFromObjectCaseSensitive(env, "device");
    return jf_put_str(env, "device", device) ? 0 : -1;
}

const char *pdbx_event_env_device(const cJSON *env)
{
    return cJSON_IsObject(env) ? jf_str(env, "device") : NULL;
}

size_t pdbx_event_env_hosts(const cJSON *env, const char **out, size_t cap)
{
    return cJSON_IsObject(env) ? jf_strings(env, "hosts", out, cap) : 0;
}

/* ---- one point ------------------------------------------------------------------------- */

/* Required "point" (>= 0) of a point's event. */
static int get_point(const cJSON *ev, pdbx_event_type t, int *point, char *err, size_t errlen)
{
    if (!jf_int(ev, "point", point) || *point < 0)
        return pdbx_fail(err, errlen, "%s event: field \"point\" must be a point index >= 0",
                         pdbx_event_type_name(t));
    return 0;
}

cJSON *pdbx_event_point_start(int point, int tp, int pp, int dp, int mbs)
{
    cJSON *ev = new_event(PDBX_EV_POINT_START);
    pdbx_ev_point_start ps = {point, tp, pp, dp, mbs, 0, 1};
    int ok = ev && jf_put_num(ev, "point", point) &&
             jf_put_fields(ev, &ps, shape_fields, JF_N(shape_fields) - 1);   /* no seq_len */
    return jf_done(ev, ok);
}

int pdbx_event_decode_point_start(const cJSON *ev, pdbx_ev_point_start *out, char *err, size_t errlen)
{
    if (get_point(ev, PDBX_EV_POINT_START, &out->point, err, errlen) != 0)
        return -1;
    out->has_shape = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(ev, shape_fields[0].name));
    jf_get_fields(ev, out, shape_fields, JF_N(shape_fields));
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
    cJSON *ev = new_event(PDBX_EV_OP);
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
    cJSON *ev = new_event(PDBX_EV_STEP);
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
    [PDBX_COMM_DP_ALLREDUCE] = "dp_allreduce",
};

const char *pdbx_comm_kind_name(pdbx_comm_kind k)
{
    return ((int)k >= 0 && k < PDBX_COMM_KINDS) ? comm_kinds[k] : "?";
}

cJSON *pdbx_event_comm(int point, pdbx_comm_kind kind, const pdbx_comm_cell *c)
{
    cJSON *ev = new_event(PDBX_EV_COMM);
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
                         "tp_allreduce, pp_sendrecv, dp_allreduce", out->point, kind ? kind : "(missing)");
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
    cJSON *ev = new_event(PDBX_EV_TRACE);
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
    cJSON *ev = new_event(PDBX_EV_POINT_END);
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

/* ---- the run --------------------------------------------------------------------------- */

cJSON *pdbx_event_coll(const pdbx_coll_result *r)
{
    cJSON *ev = new_event(PDBX_EV_COLL);
    int ok = ev && jf_put_fields(ev, r, coll_fields, 1) &&
             jf_add(ev, "stats", pdbx_stats_to_json(&r->time)) &&
             jf_put_fields(ev, r, coll_fields + 1, JF_N(coll_fields) - 1);
    return jf_done(ev, ok);
}

int pdbx_event_decode_coll(const cJSON *ev, pdbx_coll_result *r, char *err, size_t errlen)
{
    const char *coll = jf_str(ev, "coll");
    memset(r, 0, sizeof *r);
    if (!coll || !*coll)
        return pdbx_fail(err, errlen, "coll event: field \"coll\" must be a collective name");
    if (pdbx_stats_from_json(cJSON_GetObjectItemCaseSensitive(ev, "stats"), &r->time) != 0)
        return pdbx_fail(err, errlen, "coll event (%s): field \"stats\" must be a stats object", coll);
    r->algbw = r->busbw = NAN;
    r->in_place = 1;   /* runs recorded before the field ran every collective in place */
    jf_get_fields(ev, r, coll_fields, JF_N(coll_fields));
    return 0;
}

cJSON *pdbx_event_infer_tokens(const pdbx_infer_tokens *r)
{
    cJSON *ev = new_event(PDBX_EV_INFER_TOKENS);
    cJSON *ops = cJSON_CreateObject();
    int ok = ev && ops && jf_put_num(ev, "tp", r->tp) && jf_put_num(ev, "tokens", r->tokens);
    for (int op = 0; ok && op < PDBX_OP_COUNT; op++)
        if (r->op[op].count > 0)
            ok = jf_add(ops, pdbx_op_name((pdbx_op)op), pdbx_stats_to_json(&r->op[op]));
    if (ok) {
        ok = jf_add(ev, "ops", ops);
        ops = NULL;
    }
    cJSON_Delete(ops);
    return jf_done(ev, ok);
}

int pdbx_event_decode_infer_tokens(const cJSON *ev, pdbx_infer_tokens *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(ev, "ops");
    if (!jf_int(ev, "tp", &r->tp) || r->tp < 1 || r->tp > PDBX_RUN_MAX_RANKS)
        return pdbx_fail(err, errlen, "infer_tokens event: field \"tp\" must be 1..%d", PDBX_RUN_MAX_RANKS);
    if (!jf_int(ev, "tokens", &r->tokens) || r->tokens < 1)
        return pdbx_fail(err, errlen, "infer_tokens event (tp %d): field \"tokens\" must be a positive integer",
                         r->tp);
    if (!cJSON_IsObject(ops))
        return pdbx_fail(err, errlen, "infer_tokens event (tp %d, tokens %d): field \"ops\" must be an object",
                         r->tp, r->tokens);
    for (const cJSON *it = ops->child; it; it = it->next) {
        int op = pdbx_op_from_name(it->string ? it->string : "");
        if (op < 0)
            continue;   /* an op this build does not know (forward compatible) */
        if (pdbx_stats_from_json(it, &r->op[op]) != 0)
            return pdbx_fail(err, errlen, "infer_tokens event (tp %d, tokens %d, op %s): must be a stats object",
                             r->tp, r->tokens, it->string);
    }
    return 0;
}

cJSON *pdbx_event_infer_attn(const pdbx_infer_attn *r)
{
    cJSON *ev = new_event(PDBX_EV_INFER_ATTN);
    int ok = ev && jf_put_fields(ev, r, infer_attn_fields, JF_N(infer_attn_fields)) &&
             jf_put_str(ev, "phase", r->chunk > 0 ? "prefill" : "decode") &&
             jf_add(ev, "stats", pdbx_stats_to_json(&r->time));
    return jf_done(ev, ok);
}

int pdbx_event_decode_infer_attn(const cJSON *ev, pdbx_infer_attn *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->chunk = r->kv = -1;
    jf_get_fields(ev, r, infer_attn_fields, JF_N(infer_attn_fields));
    if (r->tp < 1 || r->tp > PDBX_RUN_MAX_RANKS || r->batch < 1 || r->chunk < 0 || r->kv < 0)
        return pdbx_fail(err, errlen, "infer_attn event: fields tp, batch (>= 1), chunk and kv (>= 0) must be "
                         "integers, got tp %d batch %d chunk %d kv %d", r->tp, r->batch, r->chunk, r->kv);
    if (pdbx_stats_from_json(cJSON_GetObjectItemCaseSensitive(ev, "stats"), &r->time) != 0)
        return pdbx_fail(err, errlen, "infer_attn event (tp %d, batch %d, chunk %d, kv %d): field \"stats\" "
                         "must be a stats object", r->tp, r->batch, r->chunk, r->kv);
    return 0;
}

cJSON *pdbx_event_progress(const pdbx_ev_progress *p)
{
    cJSON *ev = new_event(PDBX_EV_PROGRESS);
    int ok = ev && jf_put_fields(ev, p, progress_fields, 2) &&
             jf_add(ev, "point", p->point >= 0 ? cJSON_CreateNumber(p->point) : cJSON_CreateNull()) &&
             jf_put_str(ev, "op", p->op) && jf_put_fields(ev, p, progress_fields + 3, 1) &&
             jf_put_num_or_null(ev, "eta_s", p->eta_s) &&
             jf_put_fields(ev, p, progress_fields + 4, 2) &&
             (!(p->infer_total > 0) || jf_put_fields(ev, p, progress_fields + 6, 2));
    return jf_done(ev, ok);
}

void pdbx_event_decode_progress(const cJSON *ev, pdbx_ev_progress *out)
{
    jf_get_fields(ev, out, progress_fields, JF_N(progress_fields));
    out->op = jf_str(ev, "op") ? jf_str(ev, "op") : out->op;
    out->eta_s = NAN;
    jf_num(ev, "eta_s", &out->eta_s);
}

cJSON *pdbx_event_warning(const char *message)
{
    cJSON *ev = new_event(PDBX_EV_WARNING);
    return jf_done(ev, ev && jf_put_str(ev, "message", message));
}

int pdbx_event_decode_warning(const cJSON *ev, const char **message, char *err, size_t errlen)
{
    if (!(*message = jf_str(ev, "message")))
        return pdbx_fail(err, errlen, "warning event: field \"message\" must be a string");
    return 0;
}

const char pdbx_event_by_supervisor[] = "supervisor";

static const char *const cause_names[PDBX_CAUSE_COUNT] = {
    "", "pdbx_cancel", "explorer", "ctrl_c", "signal", "supervisor_lost", "write_failed",
};
static const char *const cause_texts[PDBX_CAUSE_COUNT] = {
    "", "pdbx cancel", "the explorer's cancel", "Ctrl-C", "a signal", "supervisor lost",
    "a failed write",
};
static const char *const in_flight_names[] = { "", "none", "finished", "dropped" };

const char *pdbx_end_cause_name(pdbx_end_cause c)
{
    return (unsigned)c < PDBX_CAUSE_COUNT ? cause_names[c] : "";
}

const char *pdbx_end_cause_text(pdbx_end_cause c)
{
    return (unsigned)c < PDBX_CAUSE_COUNT ? cause_texts[c] : "";
}

pdbx_end_cause pdbx_end_cause_from_name(const char *name)
{
    int i = name && *name ? jf_name_index(name, cause_names, PDBX_CAUSE_COUNT) : -1;
    return i > 0 ? (pdbx_end_cause)i : PDBX_CAUSE_NONE;
}

const char *pdbx_in_flight_name(pdbx_in_flight f)
{
    return (unsigned)f < JF_N(in_flight_names) ? in_flight_names[f] : "";
}

cJSON *pdbx_event_run_end_ex(const pdbx_ev_run_end *e)
{
    cJSON *ev = new_event(PDBX_EV_RUN_END);
    int ok = ev && jf_put_str(ev, "status", pdbx_run_status_name(e->status)) &&
             jf_put_str(ev, "reason", e->reason) && (!e->by || jf_put_str(ev, "by", e->by)) &&
             (isnan(e->elapsed_s) || jf_put_num(ev, "elapsed_s", e->elapsed_s)) &&
             (e->cause == PDBX_CAUSE_NONE || jf_put_str(ev, "cause", pdbx_end_cause_name(e->cause))) &&
             (e->in_flight == PDBX_IN_FLIGHT_UNKNOWN ||
              jf_put_str(ev, "in_flight", pdbx_in_flight_name(e->in_flight))) &&
             (e->in_flight_point < 0 || jf_put_num(ev, "in_flight_point", e->in_flight_point));
    return jf_done(ev, ok);
}

cJSON *pdbx_event_run_end(pdbx_run_status status, const char *reason, double elapsed_s,
                          const char *by)
{
    pdbx_ev_run_end e = { .status = status, .reason = reason, .elapsed_s = elapsed_s, .by = by,
                          .in_flight_point = -1 };
    return pdbx_event_run_end_ex(&e);
}

int pdbx_event_decode_run_end(const cJSON *ev, pdbx_ev_run_end *out, char *err, size_t errlen)
{
    const char *st = jf_str(ev, "status");
    out->reason = jf_str(ev, "reason");
    out->by = jf_str(ev, "by");
    out->cause = pdbx_end_cause_from_name(jf_str(ev, "cause"));
    const char *fl = jf_str(ev, "in_flight");
    int f = fl ? jf_name_index(fl, in_flight_names, JF_N(in_flight_names)) : -1;
    out->in_flight = f > 0 ? (pdbx_in_flight)f : PDBX_IN_FLIGHT_UNKNOWN;
    out->in_flight_point = -1;
    jf_int(ev, "in_flight_point", &out->in_flight_point);
    out->elapsed_s = NAN;
    jf_num(ev, "elapsed_s", &out->elapsed_s);
    int s = PDBX_RUN_COMPLETE;   /* the statuses a run ends with: COMPLETE to FAILED */
    while (s <= PDBX_RUN_FAILED && !(st && strcmp(st, pdbx_run_status_name((pdbx_run_status)s)) == 0))
        s++;
    out->status = s <= PDBX_RUN_FAILED ? (pdbx_run_status)s : PDBX_RUN_FAILED;
    if (s <= PDBX_RUN_FAILED)
        return 0;
    pdbx_errf(err, errlen, "run_end event: field \"status\" is \"%s\"; allowed: complete, cancelled, failed",
              st ? st : "(missing)");
    return -1;
}
