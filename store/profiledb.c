/* profiledb.c: the folding of run events into a pdbx_run (see profiledb.h), and the queries
 * over the folded points. Events are taken apart by the schema's decoders (events.h); this
 * file decides only what each one does to the run. No I/O.
 */
#include "store/profiledb.h"

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

/* ---- the run ------------------------------------------------------------------------- */

void pdbx_run_init(pdbx_run *run)
{
    memset(run, 0, sizeof *run);
    run->status = PDBX_RUN_RUNNING;
    run->current_point = -1;
    run->in_flight_point = -1;
}

static void cell_free(pdbx_cell *c)
{
    free(c->rank);
    c->rank = NULL;
}

static void point_free(pdbx_point *p)
{
    free(p->message);
    p->message = NULL;
    for (int o = 0; o < PDBX_OP_COUNT; o++) {
        cell_free(&p->op[o]);
        cell_free(&p->bwd[o]);
    }
    cell_free(&p->layer);
    cell_free(&p->total);
}

void pdbx_run_free(pdbx_run *run)
{
    for (size_t i = 0; i < run->npoints; i++)
        point_free(&run->points[i]);
    free(run->points);
    free(run->point_pos);
    free(run->coll);
    free(run->infer_tokens);
    free(run->infer_attn);
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
    p->profile_mem_bytes = p->mem_peak_bytes = p->mem_base_bytes = p->setup_s = NAN;
}

/* ---- the point index -------------------------------------------------------------------
 * A direct table from plan index to position, so each event finds its point in constant time
 * (a scan per event made loading quadratic: a 100-byte file planning 100000 "{}" points took
 * 10 s, a million of them hours). Indices are < PDBX_RUN_MAX_POINTS, so the table is at most
 * 400 KB; it grows by doubling to the largest index seen. */

/* Makes point_pos cover index idx and every point of points[]; -1 out of memory. */
static int index_points(pdbx_run *run, int idx)
{
    if (run->nindexed > run->npoints) {          /* a caller shrank points[]: start again */
        memset(run->point_pos, 0, run->nslots * sizeof *run->point_pos);
        run->nindexed = 0;
    }
    size_t need = (size_t)idx + 1;
    for (size_t i = run->nindexed; i < run->npoints; i++) {
        int k = run->points[i].index;
        if (k >= 0 && k < PDBX_RUN_MAX_POINTS && (size_t)k + 1 > need)
            need = (size_t)k + 1;
    }
    if (need > run->nslots) {
        size_t n = run->nslots ? run->nslots : 64;
        while (n < need)
            n *= 2;
        if (n > PDBX_RUN_MAX_POINTS)
            n = PDBX_RUN_MAX_POINTS;
        uint32_t *np = realloc(run->point_pos, n * sizeof *np);
        if (!np)
            return -1;
        memset(np + run->nslots, 0, (n - run->nslots) * sizeof *np);
        run->point_pos = np;
        run->nslots = n;
    }
    for (; run->nindexed < run->npoints; run->nindexed++) {
        int k = run->points[run->nindexed].index;    /* a duplicate keeps its first position */
        if (k >= 0 && (size_t)k < run->nslots && run->point_pos[k] == 0)
            run->point_pos[k] = (uint32_t)run->nindexed + 1;
    }
    return 0;
}

/* The point with plan index idx; created on demand when create != 0 (events for points the
 * plan did not list still fold). NULL when absent, beyond the cap, or out of memory. */
static pdbx_point *find_point(pdbx_run *run, int idx, int create)
{
    if (idx < 0 || idx >= PDBX_RUN_MAX_POINTS || index_points(run, idx) != 0)
        return NULL;
    if (run->point_pos[idx])
        return &run->points[run->point_pos[idx] - 1];
    if (!create)
        return NULL;
    if (run->npoints >= run->points_cap) {
        size_t cap = run->npoints >= 8 ? 2 * run->npoints : 16;
        pdbx_point *np = realloc(run->points, cap * sizeof *np);
        if (!np)
            return NULL;
        run->points = np;
        run->points_cap = cap;
    }
    point_init(&run->points[run->npoints], idx);
    run->point_pos[idx] = (uint32_t)++run->npoints;
    run->nindexed = run->npoints;
    return &run->points[run->npoints - 1];
}

const pdbx_point *pdbx_run_point(const pdbx_run *run, int index)
{
    if (index < 0)
        return NULL;
    if (run->point_pos && run->nindexed == run->npoints) {
        uint32_t pos = (size_t)index < run->nslots ? run->point_pos[index] : 0;
        return pos ? &run->points[pos - 1] : NULL;
    }
    for (size_t i = 0; i < run->npoints; i++)
        if (run->points[i].index == index)
            return &run->points[i];
    return NULL;
}

void pdbx_run_warn(pdbx_run *run, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(run->warnings[run->nwarnings % PDBX_WARN_RING], sizeof run->warnings[0], fmt, ap);
    va_end(ap);
    if (run->nwarnings < INT_MAX)     /* a count, never a signed overflow */
        run->nwarnings++;
}

/* The point an event names (created when the plan did not list it). */
static pdbx_point *event_point(pdbx_run *run, int idx, pdbx_event_type t, char *err, size_t errlen)
{
    pdbx_point *p = find_point(run, idx, 1);
    if (!p && (idx < 0 || idx >= PDBX_RUN_MAX_POINTS))
        pdbx_errf(err, errlen, "%s event: field \"point\" is %d; allowed 0..%d (PDBX_RUN_MAX_POINTS)",
                  pdbx_event_type_name(t), idx, PDBX_RUN_MAX_POINTS - 1);
    else if (!p)
        pdbx_errf(err, errlen, "%s event (point %d): out of memory", pdbx_event_type_name(t), idx);
    return p;
}

/* Shape fields an event carries (0: absent) onto p. */
static void set_shape(pdbx_point *p, int tp, int pp, int dp, int mbs, int seq_len)
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
        pdbx_point *p = find_point(run, pts[i].index, 1);
        if (!p) {
            pdbx_errf(err, errlen, "run_start: points[%zu]: field \"index\" is %d; allowed 0..%d "
                      "(PDBX_RUN_MAX_POINTS)%s", i, pts[i].index, PDBX_RUN_MAX_POINTS - 1,
                      pts[i].index >= 0 && pts[i].index < PDBX_RUN_MAX_POINTS ? " (out of memory)" : "");
            free(pts);
            return -1;
        }
        set_shape(p, pts[i].tp, pts[i].pp, pts[i].dp, pts[i].mbs, pts[i].seq_len);
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

static int apply_run_start(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen)
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

static int apply_launch(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    pdbx_ev_launcher w = launcher_of(run);
    pdbx_event_decode_launch(ev, &w);
    int rc = cap_launcher(&w, "launch", 0, err, errlen);
    set_launcher(run, &w);
    if (run->have_end)        /* a later launch runs the run again */
        reopen(run);
    return rc;
}

static int apply_point_start(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen)
{
    pdbx_ev_point_start ps;
    memset(&ps, 0, sizeof ps);
    if (pdbx_event_decode_point_start(ev, &ps, err, errlen) != 0)
        return -1;
    pdbx_point *p = event_point(run, ps.point, PDBX_EV_POINT_START, err, errlen);
    if (!p)
        return -1;
    if (ps.has_shape && p->tp == 0)
        set_shape(p, ps.tp, ps.pp, ps.dp, ps.mbs, ps.seq_len);
    p->status = PDBX_POINT_RUNNING;
    if (t > 0)
        p->started = t;
    run->current_point = p->index;
    run->current_op[0] = '\0';     /* the previous point's op is not this one's */
    return 0;
}

/* Replaces *dst by the decoded cell src, which gives up its rank array; with dst NULL (no point,
 * or a cell that is not kept) src's rank array is freed. */
static void take_cell(pdbx_cell *dst, pdbx_cell *src)
{
    if (dst) {
        free(dst->rank);
        *dst = *src;
    } else {
        free(src->rank);
    }
    src->rank = NULL;
}

/* A decoded cell with more per-rank entries than PDBX_RUN_MAX_RANKS: refused (rank array
 * freed), err names the event. 0 when within the cap. */
static int cap_ranks(pdbx_cell *c, const char *ev, int point, char *err, size_t errlen)
{
    if (c->nranks <= PDBX_RUN_MAX_RANKS)
        return 0;
    pdbx_errf(err, errlen, "%s event (point %d): field \"ranks\" has %d entries; at most %d "
              "(PDBX_RUN_MAX_RANKS)", ev, point, c->nranks, PDBX_RUN_MAX_RANKS);
    free(c->rank);
    *c = (pdbx_cell){0};
    return -1;
}

static int apply_op(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    pdbx_ev_op op;
    memset(&op, 0, sizeof op);
    if (pdbx_event_decode_op(ev, &op, err, errlen) != 0 ||
        cap_ranks(&op.cell, "op", op.point, err, errlen) != 0)
        return -1;
    pdbx_point *p = event_point(run, op.point, PDBX_EV_OP, err, errlen);
    /* an op this build does not know is skipped */
    pdbx_cell *cells = p ? (op.pass == PDBX_PASS_BWD ? p->bwd : p->op) : NULL;
    take_cell(cells && op.op >= 0 ? &cells[op.op] : NULL, &op.cell);
    return p ? 0 : -1;
}

static int apply_step(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    pdbx_ev_step st;
    memset(&st, 0, sizeof st);
    if (pdbx_event_decode_step(ev, &st, err, errlen) != 0)
        return -1;
    if (cap_ranks(&st.layer, "step", st.point, err, errlen) != 0 ||
        cap_ranks(&st.total, "step", st.point, err, errlen) != 0) {
        free(st.layer.rank);
        free(st.total.rank);
        return -1;
    }
    pdbx_point *p = event_point(run, st.point, PDBX_EV_STEP, err, errlen);
    take_cell(p && st.layer.valid ? &p->layer : NULL, &st.layer);
    take_cell(p && st.total.valid ? &p->total : NULL, &st.total);
    return p ? 0 : -1;
}

static int apply_comm(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    pdbx_ev_comm c;
    if (pdbx_event_decode_comm(ev, &c, err, errlen) != 0)
        return -1;
    pdbx_point *p = event_point(run, c.point, PDBX_EV_COMM, err, errlen);
    if (!p)
        return -1;
    pdbx_comm_cell *dst[PDBX_COMM_KINDS] = {&p->tp_allreduce, &p->pp_sendrecv, &p->dp_allreduce};
    *dst[c.kind] = c.cell;
    return 0;
}

/* Grows *arr (elements of size sz) to hold need; 0 ok, -1 out of memory. */
static int reserve(void **arr, size_t *cap, size_t need, size_t sz, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : first;
    while (n < need)
        n *= 2;
    void *na = realloc(*arr, n * sz);
    if (!na)
        return -1;
    *arr = na;
    *cap = n;
    return 0;
}

static int apply_trace(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    pdbx_ev_trace tr;
    int rc = pdbx_event_decode_trace(ev, &tr, err, errlen);
    /* a malformed entry is reported, the well formed ones are kept */
    if (tr.n > PDBX_RUN_MAX_TRACE_OPS - run->ntrace) {
        pdbx_errf(err, errlen, "trace event (point %d): %zu more entries would pass %d in the run "
                  "(PDBX_RUN_MAX_TRACE_OPS)", tr.point, tr.n, PDBX_RUN_MAX_TRACE_OPS);
        rc = -1;
    } else if (tr.n && reserve((void **)&run->trace, &run->trace_cap, run->ntrace + tr.n,
                        sizeof *run->trace, 256) != 0) {
        pdbx_errf(err, errlen, "trace event (point %d): out of memory", tr.point);
        rc = -1;
    } else if (tr.n) {
        memcpy(run->trace + run->ntrace, tr.ops, tr.n * sizeof *tr.ops);
        run->ntrace += tr.n;
    }
    free(tr.ops);
    return rc;
}

static int apply_point_end(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen)
{
    pdbx_ev_point_end pe;
    if (pdbx_event_decode_point_end(ev, &pe, err, errlen) != 0)
        return -1;
    pdbx_point *p = event_point(run, pe.point, PDBX_EV_POINT_END, err, errlen);
    if (!p)
        return -1;
    /* the progress model counts a point's work once, when it first ends */
    if (p->status == PDBX_POINT_PENDING || p->status == PDBX_POINT_RUNNING)
        pdbx_progress_fold_done(run, pdbx_progress_point_work(p),
                                pe.status != PDBX_POINT_SKIPPED && pe.status != PDBX_POINT_PREDICTED_OOM, t);
    p->status = pe.status;
    free(p->message);
    p->message = pe.message ? strndup(pe.message, PDBX_RUN_MAX_MESSAGE) : NULL;
    if (pe.message && strnlen(pe.message, PDBX_RUN_MAX_MESSAGE + 1) > PDBX_RUN_MAX_MESSAGE)
        pdbx_run_warn(run, "point_end event (point %d): field \"message\" cut to %d bytes "
                      "(PDBX_RUN_MAX_MESSAGE)", pe.point, PDBX_RUN_MAX_MESSAGE);
    if (t > 0)
        p->ended = t;
    if (pe.status == PDBX_POINT_PREDICTED_OOM)
        p->predicted_oom = 1;
    if (isfinite(pe.profile_mem_bytes))
        p->profile_mem_bytes = pe.profile_mem_bytes;
    if (isfinite(pe.mem_peak_bytes)) {
        p->mem_peak_bytes = pe.mem_peak_bytes;
        p->mem_base_bytes = pe.mem_base_bytes;
    }
    if (isfinite(pe.setup_s))
        p->setup_s = pe.setup_s;
    if (pe.noise.valid)
        p->noise = pe.noise;
    if (run->current_point == p->index) {
        run->current_point = -1;
        run->current_op[0] = '\0';
    }
    return 0;
}

static int apply_coll(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen)
{
    pdbx_coll_result r;
    if (pdbx_event_decode_coll(ev, &r, err, errlen) != 0)
        return -1;
    if (run->ncoll >= PDBX_RUN_MAX_COLLS)
        return pdbx_fail(err, errlen, "coll event (%s): the run already holds %d entries; at most "
                         "%d (PDBX_RUN_MAX_COLLS)", r.coll, PDBX_RUN_MAX_COLLS, PDBX_RUN_MAX_COLLS);
    if (reserve((void **)&run->coll, &run->coll_cap, run->ncoll + 1, sizeof *run->coll, 32) != 0) {
        pdbx_errf(err, errlen, "coll event (%s): out of memory", r.coll);
        return -1;
    }
    run->coll[run->ncoll++] = r;
    pdbx_progress_fold_coll(run, t);
    return 0;
}

/* Inference rows: a row of a key already held (a later launch measured it again) replaces it. */
static int apply_infer_tokens(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen)
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
    if (reserve((void **)&run->infer_tokens, &run->infer_tokens_cap, run->ninfer_tokens + 1,
                sizeof *run->infer_tokens, 16) != 0)
        return pdbx_fail(err, errlen, "infer_tokens event (tp %d, tokens %d): out of memory", r.tp, r.tokens);
    run->infer_tokens[run->ninfer_tokens++] = r;
    return 0;
}

static int apply_infer_attn(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen)
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
    if (reserve((void **)&run->infer_attn, &run->infer_attn_cap, run->ninfer_attn + 1,
                sizeof *run->infer_attn, 16) != 0)
        return pdbx_fail(err, errlen, "infer_attn event (tp %d): out of memory", r.tp);
    run->infer_attn[run->ninfer_attn++] = r;
    return 0;
}

static int apply_progress(pdbx_run *run, const cJSON *ev)
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

static int apply_warning(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    const char *msg;
    if (pdbx_event_decode_warning(ev, &msg, err, errlen) != 0)
        return -1;
    pdbx_run_warn(run, "%s", msg);
    return 0;
}

static int apply_run_end(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
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

int pdbx_run_apply(pdbx_run *run, const cJSON *event, char *err, size_t errlen)
{
    if (!cJSON_IsObject(event)) {
        pdbx_errf(err, errlen, "event: not a JSON object");
        return -1;
    }
    if (!pdbx_event_type_str(event)) {
        pdbx_errf(err, errlen, "event: field \"type\" missing or not a string");
        return -1;
    }
    double t = 0.0;
    if (pdbx_event_time(event, &t) && t > run->last_event)
        run->last_event = t;
    switch (pdbx_event_type_of(event)) {
    case PDBX_EV_RUN_START: return apply_run_start(run, event, t, err, errlen);
    case PDBX_EV_LAUNCH: return apply_launch(run, event, err, errlen);
    case PDBX_EV_POINT_START: return apply_point_start(run, event, t, err, errlen);
    case PDBX_EV_OP: return apply_op(run, event, err, errlen);
    case PDBX_EV_STEP: return apply_step(run, event, err, errlen);
    case PDBX_EV_COMM: return apply_comm(run, event, err, errlen);
    case PDBX_EV_TRACE: return apply_trace(run, event, err, errlen);
    case PDBX_EV_POINT_END: return apply_point_end(run, event, t, err, errlen);
    case PDBX_EV_COLL: return apply_coll(run, event, t, err, errlen);
    case PDBX_EV_PROGRESS: return apply_progress(run, event);
    case PDBX_EV_WARNING: return apply_warning(run, event, err, errlen);
    case PDBX_EV_RUN_END: return apply_run_end(run, event, err, errlen);
    case PDBX_EV_INFER_TOKENS: return apply_infer_tokens(run, event, t, err, errlen);
    case PDBX_EV_INFER_ATTN: return apply_infer_attn(run, event, t, err, errlen);
    default: return 0;    /* unknown type: ignored (forward compatible) */
    }
}
