/* export_trace.c: Chrome trace JSON (Trace Event Format) of one measured step per rank
 * (export.h, docs/exports.md); Perfetto and chrome://tracing open it.
 *
 * {"traceEvents":[...], "displayTimeUnit":"ms", "metadata":{...}}
 *  - one complete event {"ph":"X","name":op,"cat":class,"pid":rank+1,"tid":track,"ts":us,
 *    "dur":us,"args":{"point","layer","mbs","tp","pp","dp"[,"ep"]}} per entry of run->trace, i.e. per op
 *    (per layer for layer ops; the TP all-reduces after attn_o and mlp_down) and per PP
 *    send/recv and DP all-reduce of the step the engine recorded on each rank (category
 *    "comm"); ts is relative to that step's start, so every point's step starts at 0 on its
 *    own track: tid = pid x T + point + 1, T the power of ten above the largest point index,
 *    so rank 0's point 5 is tid 16 in a run of 8 points (Perfetto's importer names a thread
 *    by its tid alone: a tid reused under two pids could take the other's name); "ep" only at a
 *    point with expert parallelism > 1 (a dense run's trace is what it was);
 *  - metadata events ("ph":"M"), before the complete events, name the processes "rank N"
 *    (process_name, and process_sort_index N for chrome://tracing's order) and the threads
 *    after the point. pid is rank + 1: Perfetto reserves pid 0 (the idle process).
 * A run without trace events (an older or CPU-less recording) gets a synthesized step instead:
 * for each ok point and each TP rank, the per-rank medians of the ops laid back to back in
 * execution order (embed, layers_profiled x the layer ops, final_norm, lm_head, then the PP
 * send/recv and DP all-reduce medians), and the metadata says "synthesized": true. Nothing
 * there was measured as a timeline.
 */
#include "store/util/err.h"
#include "store/export/export.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "store/util/fs.h"
#include "store/util/text.h"
#include "store/events.h"
#include "store/export/export_common.h"
#include "store/version.h"

static const char *op_category(pdbx_op op)
{
    if (pdbx_op_is_gemm(op))
        return "gemm";
    if (pdbx_op_is_comm(op))
        return "comm";
    switch (op) {
    case PDBX_OP_EMBED: return "embedding";
    case PDBX_OP_ATTN_CORE: return "attention";
    case PDBX_OP_MLP_ACT_FN: case PDBX_OP_MOE_EXPERT_ACT: case PDBX_OP_MOE_SHARED_ACT: return "activation";
    case PDBX_OP_MOE_PERMUTE: case PDBX_OP_MOE_UNPERMUTE: return "moe";   /* the routed rows' moves */
    default: return "norm";
    }
}

/* The trace's process id of a rank (pid 0 is the idle process to Perfetto). */
static int rank_pid(int rank)
{
    return rank < 0 ? 0 : rank + 1;
}

/* The power of ten above the largest point index of run: track ids are pid x it + point + 1
 * (file comment). */
static double tid_scale_for(const pdbx_run *run)
{
    int top = 0;
    for (size_t i = 0; i < run->npoints; i++)
        if (run->points[i].index > top)
            top = run->points[i].index;
    for (size_t i = 0; i < run->ntrace; i++)
        if (run->trace[i].point > top)
            top = run->trace[i].point;
    double scale = 10;
    while (scale <= top + 1.0)
        scale *= 10;
    return scale;
}

static double track_tid(double scale, int rank, int point)
{
    return rank_pid(rank) * scale + point + 1;
}

/* Appends one complete event of op (or, op PDBX_OP_COUNT, of the step collective comm);
 * returns 0 or -1 when cJSON ran out of memory. */
static int add_complete(cJSON *events, double scale, const pdbx_point *pt, int point_index,
                        int rank, int layer, pdbx_op op, int comm, double ts_us, double dur_us)
{
    int ok = 1;
    const int step_comm = op == PDBX_OP_COUNT;
    cJSON *e = cJSON_CreateObject(), *args = cJSON_CreateObject();
    if (e) {
        pdbx_json_str(&ok, e, "name", step_comm ? pdbx_comm_kind_name((pdbx_comm_kind)comm)
                                                : pdbx_op_name(op));
        pdbx_json_str(&ok, e, "cat", step_comm ? "comm" : op_category(op));
        pdbx_json_str(&ok, e, "ph", "X");
        pdbx_json_num(&ok, e, "pid", rank_pid(rank));
        pdbx_json_num(&ok, e, "tid", track_tid(scale, rank, point_index));
        pdbx_json_num(&ok, e, "ts", ts_us);
        pdbx_json_num(&ok, e, "dur", dur_us);
    }
    if (args) {
        pdbx_json_num(&ok, args, "point", point_index);
        pdbx_json_num(&ok, args, "layer", layer);
        if (pt) {
            pdbx_json_num(&ok, args, "mbs", pt->mbs);
            pdbx_json_num(&ok, args, "tp", pt->tp);
            pdbx_json_num(&ok, args, "pp", pt->pp);
            pdbx_json_num(&ok, args, "dp", pt->dp);
            if (pt->ep > 1)
                pdbx_json_num(&ok, args, "ep", pt->ep);
        }
    }
    pdbx_json_put(&ok, e, "args", args);
    pdbx_json_put(&ok, events, NULL, e);
    return ok ? 0 : -1;
}

/* A metadata event naming a process (tid < 0) or a thread, or (name NULL) giving a process
 * its sort index. */
static int add_name_meta(cJSON *events, const char *what, int pid, double tid, const char *name,
                         int sort_index)
{
    int ok = 1;
    cJSON *e = cJSON_CreateObject(), *args = cJSON_CreateObject();
    if (e) {
        pdbx_json_str(&ok, e, "name", what);
        pdbx_json_str(&ok, e, "ph", "M");
        pdbx_json_num(&ok, e, "pid", pid);
        if (tid >= 0)
            pdbx_json_num(&ok, e, "tid", tid);
    }
    if (args && name)
        pdbx_json_str(&ok, args, "name", name);
    else if (args)
        pdbx_json_num(&ok, args, "sort_index", sort_index);
    pdbx_json_put(&ok, e, "args", args);
    pdbx_json_put(&ok, events, NULL, e);
    return ok ? 0 : -1;
}

/* The (rank, point) tracks the events use, collected, then named once each. */
typedef struct {
    int rank, point;
} track;

typedef struct {
    track *v;
    size_t n, cap;
} track_set;

static int track_add(track_set *s, int rank, int point)
{
    if (s->n > 0 && s->v[s->n - 1].rank == rank && s->v[s->n - 1].point == point)
        return 0;                 /* events of one track come together: skip the common repeat */
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        track *p = realloc(s->v, cap * sizeof *p);
        if (!p)
            return -1;
        s->v = p;
        s->cap = cap;
    }
    s->v[s->n].rank = rank;
    s->v[s->n].point = point;
    s->n++;
    return 0;
}

static int track_cmp(const void *a, const void *b)
{
    const track *x = a, *y = b;
    if (x->rank != y->rank)
        return (x->rank > y->rank) - (x->rank < y->rank);
    return (x->point > y->point) - (x->point < y->point);
}

static int name_tracks(cJSON *events, double scale, const pdbx_run *run, track_set *s)
{
    if (s->n == 0)
        return 0;
    qsort(s->v, s->n, sizeof *s->v, track_cmp);
    char name[128];
    for (size_t i = 0; i < s->n; i++) {
        if (i > 0 && track_cmp(&s->v[i - 1], &s->v[i]) == 0)
            continue;
        int rank = s->v[i].rank, point = s->v[i].point;
        if (i == 0 || s->v[i - 1].rank != rank) {
            snprintf(name, sizeof name, "rank %d", rank);
            if (add_name_meta(events, "process_name", rank_pid(rank), -1, name, 0) != 0 ||
                add_name_meta(events, "process_sort_index", rank_pid(rank), -1, NULL, rank) != 0)
                return -1;
        }
        const pdbx_point *pt = pdbx_run_point(run, point);
        if (pt && pt->ep > 1)
            snprintf(name, sizeof name, "point %d: TP %d PP %d DP %d EP %d MBS %d", point, pt->tp,
                     pt->pp, pt->dp, pt->ep, pt->mbs);
        else if (pt)
            snprintf(name, sizeof name, "point %d: TP %d PP %d DP %d MBS %d", point, pt->tp,
                     pt->pp, pt->dp, pt->mbs);
        else
            snprintf(name, sizeof name, "point %d", point);
        if (add_name_meta(events, "thread_name", rank_pid(rank), track_tid(scale, rank, point), name, 0) != 0)
            return -1;
    }
    return 0;
}

static double rank_median(const pdbx_cell *c, int rank)
{
    if (c->rank && rank < c->nranks)
        return c->rank[rank].median;
    return c->stats.median;
}

/* layers_profiled comes from the file: at least 1, at most the fold's cap (a run built
 * otherwise than by the fold may hold anything). */
static int synth_layers(const pdbx_run *run)
{
    int layers = run->layers_profiled > 0 ? run->layers_profiled : 1;
    return layers < PDBX_RUN_MAX_LAYERS ? layers : PDBX_RUN_MAX_LAYERS;
}

/* TP ranks a synthesized point gets a track for: the most per-rank entries of its cells. */
static int synth_ranks(const pdbx_point *pt)
{
    int nranks = 1;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        if (pt->op[op].valid && pt->op[op].rank && pt->op[op].nranks > nranks)
            nranks = pt->op[op].nranks;
    return nranks;
}

/* How many complete events the export would write (an upper bound for a synthesized step:
 * a cell with a NaN median is skipped later). Counted in double: no overflow. */
static double count_events(const pdbx_run *run)
{
    if (run->ntrace > 0)
        return (double)run->ntrace;
    double n = 0.0, layers = synth_layers(run);
    for (size_t i = 0; i < run->npoints; i++) {
        const pdbx_point *pt = &run->points[i];
        if (pt->status != PDBX_POINT_OK)
            continue;
        double per_rank = 0.0;
        for (int op = 0; op < PDBX_OP_COUNT; op++)
            if (pt->op[op].valid && pdbx_op_in_model_fwd((pdbx_op)op))   /* loss, optimizer: not in it */
                per_rank += pdbx_op_is_per_layer((pdbx_op)op) ? layers : 1.0;
        per_rank += pt->pp_sendrecv.valid + pt->dp_allreduce.valid;
        n += per_rank * synth_ranks(pt);
    }
    return n;
}

/* The synthesized step of one point on one rank: medians back to back, execution order. */
static int synthesize_point(cJSON *events, double scale, const pdbx_run *run,
                            const pdbx_point *pt, int rank, size_t *count)
{
    double t = 0.0;
    int layers = synth_layers(run);
    for (int pass = 0; pass < 3; pass++) {
        /* pass 0: embed; pass 1: the layer ops, once per profiled layer; pass 2: the tail */
        int nlayers = pass == 1 ? layers : 1;
        for (int layer = 0; layer < nlayers; layer++) {
            for (int op = 0; op < PDBX_OP_COUNT; op++) {
                int per_layer = pdbx_op_is_per_layer((pdbx_op)op);
                if ((pass == 1) != per_layer || (pass == 0 && op != PDBX_OP_EMBED)
                    || (pass == 2 && op == PDBX_OP_EMBED) || !pdbx_op_in_model_fwd((pdbx_op)op))
                    continue;
                const pdbx_cell *c = &pt->op[op];
                double ms = c->valid ? rank_median(c, rank) : NAN;
                if (!isfinite(ms))
                    continue;
                if (add_complete(events, scale, pt, pt->index, rank, per_layer ? layer : -1,
                                 (pdbx_op)op, 0, t, ms * 1000.0) != 0)
                    return -1;
                t += ms * 1000.0;
                (*count)++;
            }
        }
    }
    /* the step's PP send/recv and DP all-reduce close it, as the engine runs them */
    const struct { pdbx_comm_kind kind; const pdbx_comm_cell *cell; } tail[] = {
        { PDBX_COMM_PP_SENDRECV, &pt->pp_sendrecv }, { PDBX_COMM_DP_ALLREDUCE, &pt->dp_allreduce },
    };
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++) {
        double ms = tail[i].cell->valid ? tail[i].cell->time.median : NAN;
        if (!isfinite(ms))
            continue;
        if (add_complete(events, scale, pt, pt->index, rank, -1, PDBX_OP_COUNT, (int)tail[i].kind,
                         t, ms * 1000.0) != 0)
            return -1;
        t += ms * 1000.0;
        (*count)++;
    }
    return 0;
}

/* The complete events: the recorded ones, else a synthesized step per ok point and rank.
 * 0, or -1 out of memory. */
static int add_events(cJSON *events, double scale, const pdbx_run *run, track_set *tracks,
                      size_t *count)
{
    for (size_t i = 0; i < run->ntrace; i++) {
        const pdbx_trace_event *ev = &run->trace[i];
        if (track_add(tracks, ev->rank, ev->point) != 0
            || add_complete(events, scale, pdbx_run_point(run, ev->point), ev->point, ev->rank,
                            ev->layer, ev->op, ev->comm, ev->start_us, ev->dur_us) != 0)
            return -1;
        (*count)++;
    }
    for (size_t i = 0; run->ntrace == 0 && i < run->npoints; i++) {
        const pdbx_point *pt = &run->points[i];
        if (pt->status != PDBX_POINT_OK)
            continue;
        int nranks = synth_ranks(pt);
        for (int r = 0; r < nranks; r++)
            if (track_add(tracks, r, pt->index) != 0
                || synthesize_point(events, scale, run, pt, r, count) != 0)
                return -1;
    }
    return 0;
}

/* The "metadata" object; 0 when out of memory. */
static int add_metadata(cJSON *root, const pdbx_run *run, int synthesized)
{
    int ok = 1;
    pdbx_json_str(&ok, root, "displayTimeUnit", "ms");
    cJSON *meta = cJSON_CreateObject();
    if (meta) {
        pdbx_export_run_identity(&ok, meta, run);
        pdbx_json_bool(&ok, meta, "synthesized", synthesized);
        pdbx_json_str(&ok, meta, "note", synthesized
            ? "synthesized: the run recorded no trace events; each track lays the per-rank "
              "medians of the ops back to back in execution order (not a measured timeline)"
            : "one measured step per rank as the engine recorded it; pid = rank + 1, one track (tid) "
              "per rank and point, args.point the point; "
              "ts and dur in microseconds relative to the step start");
        char source[128];
        snprintf(source, sizeof source, "pdbx %s (git %s)", pdbx_version(), pdbx_git_rev());
        pdbx_json_str(&ok, meta, "source", source);
    }
    pdbx_json_put(&ok, root, "metadata", meta);
    return ok;
}

int pdbx_export_trace(const pdbx_run *run, const char *file,
                      pdbx_wrote_fn wrote, void *ctx, char *err, size_t errlen)
{
    int rc = -1;
    track_set tracks = { 0 };
    cJSON *complete = NULL;
    char *text = NULL;
    size_t count = 0;
    double planned = count_events(run);
    if (planned > PDBX_TRACE_MAX_EVENTS) {
        pdbx_errf(err, errlen, "%s: run %s would give a trace of %.0f events (%s); at most %d "
                  "(PDBX_TRACE_MAX_EVENTS)", file, run->id, planned, run->ntrace ? "recorded" :
                  "points x ranks x layers_profiled x ops", PDBX_TRACE_MAX_EVENTS);
        return -1;
    }
    const double scale = tid_scale_for(run);
    cJSON *root = cJSON_CreateObject();
    /* the names first, then the complete events (the importer meets a track's name before
     * its events) */
    cJSON *events = root ? cJSON_AddArrayToObject(root, "traceEvents") : NULL;
    complete = cJSON_CreateArray();
    if (!events || !complete || add_events(complete, scale, run, &tracks, &count) != 0) {
        pdbx_errf(err, errlen, "%s: out of memory building the trace", file);
        goto out;
    }
    if (count == 0) {
        pdbx_errf(err, errlen, "run %s has neither trace events nor an ok point: nothing "
                        "to write to %s", run->id, file);
        goto out;
    }
    if (name_tracks(events, scale, run, &tracks) != 0 || !add_metadata(root, run, run->ntrace == 0)) {
        pdbx_errf(err, errlen, "%s: out of memory building the trace", file);
        goto out;
    }
    for (cJSON *e; (e = cJSON_DetachItemFromArray(complete, 0)) != NULL;)
        cJSON_AddItemToArray(events, e);
    char *raw = cJSON_PrintUnformatted(root);
    text = pdbx_json_text_safe(raw);    /* valid UTF-8 whatever the run file held (text.h) */
    cJSON_free(raw);
    if (!text) {
        pdbx_errf(err, errlen, "%s: out of memory printing the trace", file);
        goto out;
    }
    if (pdbx_export_publish(file, text, strlen(text), wrote, ctx, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    cJSON_Delete(root);
    cJSON_Delete(complete);
    free(text);
    free(tracks.v);
    return rc;
}
