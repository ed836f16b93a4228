/* events.c: the run-event schema (see events.h and docs/events.md): type names, stats objects,
 * run_start, launch and env; one point's events are in events_point.c, the run's in
 * events_run.c (events_internal.h). These are the only files in pdbx that spell an event type
 * or field name. Encoders chain json_fields.h writers with && (each
 * takes or deletes what it is given), so an event is whole or NULL, never half built.
 */
#include "store/events.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/json_fields.h"
#include "store/events_internal.h"
#include "store/util/err.h"

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

/* {"type": <t>}: type first, as pdbx_event_raw_is expects. */
cJSON *ev_new_event(pdbx_event_type t)
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
        ok = jf_push(arr, o) && jf_put_fields(o, &pts[i], plan_fields, JF_N(plan_fields)) &&
             (pts[i].ep <= 1 || jf_put_num(o, "ep", pts[i].ep));   /* dense plans read as before */
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
    cJSON *ev = ev_new_event(PDBX_EV_RUN_START);
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
        if (!jf_int(pj, "ep", &p->ep) || p->ep < 1 || p->ep > PDBX_RUN_MAX_RANKS)
            p->ep = 1;
    }
    return 0;
}

cJSON *pdbx_event_launch(const pdbx_ev_launcher *who, cJSON *env, const int (*configs)[3], size_t n)
{
    cJSON *ev = ev_new_event(PDBX_EV_LAUNCH);
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
