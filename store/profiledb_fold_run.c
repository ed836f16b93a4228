/* profiledb_fold_run.c: what the run-wide events do to a pdbx_run (profiledb.h): run_start
 * with its plan, launch, coll, infer_tokens, infer_attn, progress, warning and run_end
 * (profiledb_internal.h). No I/O. */
#include "store/profiledb_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>

#include "store/events.h"
#include "store/progress.h"
#include "store/util/err.h"
#include "store/util/text.h"

/* Shape fields an event carries (0: absent) onto p. */
void pdb_set_shape(pdbx_point *p, int tp, int pp, int dp, int mbs, int seq_len)
{
    const int v[5] = {tp, pp, dp, mbs, seq_len};
    int *dst[5] = {&p->tp, &p->pp, &p->dp, &p->mbs, &p->seq_len};
    for (int i = 0; i < 5; i++)
        if (v[i] != 0)
            *dst[i] = v[i];
}

static int apply_plan(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    pdbx_ev_plan_point *pts;
    size_t n;
    if (pdbx_event_decode_plan(ev, &pts, &n, err, errlen) != 0) {
        free(pts);
        return -1;
    }
    if (n > PDBX_RUN_MAX_POINTS) {
        free(pts);
        return pdbx_fail(err, errlen, "run_start: field \"points\" lists %zu points; at most %d "
                         "(PDBX_RUN_MAX_POINTS)", n, PDBX_RUN_MAX_POINTS);
    }
    for (size_t i = 0; i < n; i++) {
        pdbx_point *p = pdb_find_point(run, pts[i].index, 1);
        if (!p) {
            pdbx_errf(err, errlen, "run_start: points[%zu]: field \"index\" is %d; allowed 0..%d "
                      "(PDBX_RUN_MAX_POINTS)%s", i, pts[i].index, PDBX_RUN_MAX_POINTS - 1,
                      pts[i].index >= 0 && pts[i].index < PDBX_RUN_MAX_POINTS ? " (out of memory)" : "");
            free(pts);
            return -1;
        }
        pdb_set_shape(p, pts[i].tp, pts[i].pp, pts[i].dp, pts[i].mbs, pts[i].seq_len);
        if (pts[i].ep > 1)
            p->ep = pts[i].ep;
        if (p->seq_len == 0)
            p->seq_len = run->seq_len;
        if (pts[i].predicted_mem_bytes != 0.0)
            p->predicted_mem_bytes = pts[i].predicted_mem_bytes;
        p->predicted_oom = pts[i].predicted_oom;
    }
    free(pts);
    return 0;
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

static void set_launcher(pdbx_run *run, const pdbx_ev_launcher *w)
{
    pdbx_strcopy(run->host, sizeof run->host, w->host);
    if (w->pid >= 0) {
        run->pid = w->pid;
        /* a launch without them (an older engine) must not keep the previous launcher's */
        run->pid_start = w->pid_start;
        pdbx_strcopy(run->boot_id, sizeof run->boot_id, w->boot_id);
    }
    run->world_size = w->world_size;
    run->ranks_per_node = w->ranks_per_node;
    pdbx_strcopy(run->launcher, sizeof run->launcher, w->launcher);
    pdbx_strcopy(run->command, sizeof run->command, w->command);
}

/* The decoders overlay: start from what the run holds, so absent fields keep it. */
static pdbx_ev_launcher launcher_of(const pdbx_run *run)
{
    pdbx_ev_launcher w;
    memset(&w, 0, sizeof w);
    pdbx_strcopy(w.host, sizeof w.host, run->host);
    w.pid = -1;
    w.world_size = run->world_size;
    w.ranks_per_node = run->ranks_per_node;
    return w;
}

/* A run restarted (run_start) or launched again (launch) is running again. */
static void reopen(pdbx_run *run)
{
    run->have_end = 0;
    run->status = PDBX_RUN_RUNNING;
    run->end_reason[0] = '\0';
    run->end_cause = 0;
    run->in_flight = 0;
    run->in_flight_point = -1;
}

/* A count a file declares: one outside 0..max is left unknown (0) and, when rc is still 0,
 * err names the field and the cap. Returns rc, or -1 when v was out of range. */
static int cap_count(int *v, int max, const char *what, const char *cap, int rc, char *err,
                     size_t errlen)
{
    if (*v >= 0 && *v <= max)
        return rc;
    if (rc == 0)
        pdbx_errf(err, errlen, "%s is %d; allowed 0..%d (%s)", what, *v, max, cap);
    *v = 0;
    return -1;
}

static int cap_launcher(pdbx_ev_launcher *w, const char *ev, int rc, char *err, size_t errlen)
{
    char what[64];
    snprintf(what, sizeof what, "%s: field \"world_size\"", ev);
    rc = cap_count(&w->world_size, PDBX_RUN_MAX_RANKS, what, "PDBX_RUN_MAX_RANKS", rc, err, errlen);
    snprintf(what, sizeof what, "%s: field \"ranks_per_node\"", ev);
    return cap_count(&w->ranks_per_node, PDBX_RUN_MAX_RANKS, what, "PDBX_RUN_MAX_RANKS", rc, err,
                     errlen);
}

int pdb_apply_run_start(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen)
{
    pdbx_ev_run_start h;
    memset(&h, 0, sizeof h);
    h.who = launcher_of(run);
    pdbx_strcopy(h.who.id, sizeof h.who.id, run->id);
    h.model = run->model;
    h.layers_profiled = run->layers_profiled;
    h.seq_len = run->seq_len;
    h.warmup = run->warmup;
    h.steps = run->steps;
    pdbx_event_decode_run_start(ev, &h);
    int rc = cap_launcher(&h.who, "run_start", 0, err, errlen);
    rc = cap_count(&h.layers_profiled, PDBX_RUN_MAX_LAYERS, "run_start: field \"layers_profiled\"",
                   "PDBX_RUN_MAX_LAYERS", rc, err, errlen);
    rc = cap_count(&h.model.layers, PDBX_RUN_MAX_LAYERS, "run_start: field \"model\".\"layers\"",
                   "PDBX_RUN_MAX_LAYERS", rc, err, errlen);
    if (run->created == 0.0)
        run->created = t;
    pdbx_strcopy(run->id, sizeof run->id, h.who.id);
    set_launcher(run, &h.who);
    run->model = h.model;
    run->layers_profiled = h.layers_profiled;
    run->seq_len = h.seq_len;
    run->warmup = h.warmup;
    run->steps = h.steps;
    const struct { char *dst; size_t cap; const char *src; } s[] = {
        {run->dtype, sizeof run->dtype, h.dtype}, {run->backend, sizeof run->backend, h.backend},
        {run->gpu, sizeof run->gpu, h.gpu}, {run->gpu_tag, sizeof run->gpu_tag, h.gpu_tag},
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        if (s[i].src[0])
            pdbx_strcopy(s[i].dst, s[i].cap, s[i].src);
    const char *device = pdbx_event_env_device(h.env);
    if (device)
        pdbx_strcopy(run->device_name, sizeof run->device_name, device);
    if (replace_json(&run->spec, h.spec) != 0 || replace_json(&run->env, h.env) != 0) {
        pdbx_errf(err, errlen, "run_start: out of memory copying spec/env");
        return -1;
    }
    reopen(run);
    char perr[256] = "";
    if (apply_plan(run, ev, perr, sizeof perr) != 0) {
        if (rc == 0)
            pdbx_errf(err, errlen, "%s", perr);      /* the first problem is the one named */
        rc = -1;
    }
    return rc;
}

int pdb_apply_launch(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    pdbx_ev_launcher w = launcher_of(run);
    pdbx_event_decode_launch(ev, &w);
    int rc = cap_launcher(&w, "launch", 0, err, errlen);
    set_launcher(run, &w);
    if (run->have_end)        /* a later launch runs the run again */
        reopen(run);
    return rc;
}

int pdb_apply_coll(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen)
{
    pdbx_coll_result r;
    if (pdbx_event_decode_coll(ev, &r, err, errlen) != 0)
        return -1;
    if (run->ncoll >= PDBX_RUN_MAX_COLLS)
        return pdbx_fail(err, errlen, "coll event (%s): the run already holds %d entries; at most "
                         "%d (PDBX_RUN_MAX_COLLS)", r.coll, PDBX_RUN_MAX_COLLS, PDBX_RUN_MAX_COLLS);
    if (pdb_reserve((void **)&run->coll, &run->coll_cap, run->ncoll + 1, sizeof *run->coll, 32) != 0) {
        pdbx_errf(err, errlen, "coll event (%s): out of memory", r.coll);
        return -1;
    }
    run->coll[run->ncoll++] = r;
    pdbx_progress_fold_coll(run, t);
    return 0;
}

/* Inference rows: a row of a key already held (a later launch measured it again) replaces it. */
int pdb_apply_infer_tokens(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen)
{
    pdbx_infer_tokens r;
    if (pdbx_event_decode_infer_tokens(ev, &r, err, errlen) != 0)
        return -1;
    pdbx_progress_fold_infer(run, pdbx_progress_infer_tokens_work(run->layers_profiled, &r), t);
    for (size_t i = 0; i < run->ninfer_tokens; i++)
        if (run->infer_tokens[i].tp == r.tp && run->infer_tokens[i].tokens == r.tokens) {
            run->infer_tokens[i] = r;
            return 0;
        }
    if (run->ninfer_tokens >= PDBX_RUN_MAX_INFER)
        return pdbx_fail(err, errlen, "infer_tokens event (tp %d, tokens %d): the run already holds %d rows "
                         "(PDBX_RUN_MAX_INFER)", r.tp, r.tokens, PDBX_RUN_MAX_INFER);
    if (pdb_reserve((void **)&run->infer_tokens, &run->infer_tokens_cap, run->ninfer_tokens + 1,
                sizeof *run->infer_tokens, 16) != 0)
        return pdbx_fail(err, errlen, "infer_tokens event (tp %d, tokens %d): out of memory", r.tp, r.tokens);
    run->infer_tokens[run->ninfer_tokens++] = r;
    return 0;
}

int pdb_apply_infer_attn(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen)
{
    pdbx_infer_attn r;
    if (pdbx_event_decode_infer_attn(ev, &r, err, errlen) != 0)
        return -1;
    pdbx_progress_fold_infer(run, pdbx_progress_coll_work(run->layers_profiled), t);
    for (size_t i = 0; i < run->ninfer_attn; i++) {
        pdbx_infer_attn *a = &run->infer_attn[i];
        if (a->tp == r.tp && a->batch == r.batch && a->chunk == r.chunk && a->kv == r.kv) {
            *a = r;
            return 0;
        }
    }
    if (run->ninfer_attn >= PDBX_RUN_MAX_INFER)
        return pdbx_fail(err, errlen, "infer_attn event (tp %d): the run already holds %d rows "
                         "(PDBX_RUN_MAX_INFER)", r.tp, PDBX_RUN_MAX_INFER);
    if (pdb_reserve((void **)&run->infer_attn, &run->infer_attn_cap, run->ninfer_attn + 1,
                sizeof *run->infer_attn, 16) != 0)
        return pdbx_fail(err, errlen, "infer_attn event (tp %d): out of memory", r.tp);
    run->infer_attn[run->ninfer_attn++] = r;
    return 0;
}

int pdb_apply_progress(pdbx_run *run, const cJSON *ev)
{
    pdbx_ev_progress pg = {run->progress_done, run->progress_total, -1, NULL, 0.0, 0.0, 0.0, NAN, 0.0, 0.0};
    pdbx_event_decode_progress(ev, &pg);
    run->progress_done = pg.done;
    run->progress_total = pg.total;
    pdbx_progress_fold_beat(run, pg.coll_total);
    pdbx_progress_fold_infer_beat(run, pg.infer_total);
    if (pg.point >= 0)
        run->current_point = pg.point;
    if (pg.op)
        pdbx_strcopy(run->current_op, sizeof run->current_op, pg.op);
    return 0;
}

int pdb_apply_warning(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    const char *msg;
    if (pdbx_event_decode_warning(ev, &msg, err, errlen) != 0)
        return -1;
    pdbx_run_warn(run, "%s", msg);
    return 0;
}

int pdb_apply_run_end(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    pdbx_ev_run_end re;
    int rc = pdbx_event_decode_run_end(ev, &re, err, errlen);
    /* even a bad status ends the run (as failed) */
    run->have_end = 1;
    run->current_point = -1;
    run->end_reason[0] = '\0';
    if (re.reason)
        pdbx_strcopy(run->end_reason, sizeof run->end_reason, re.reason);
    run->status = re.status;
    run->end_cause = (int)re.cause;
    run->in_flight = (int)re.in_flight;
    run->in_flight_point = re.in_flight_point;
    return rc;
}
