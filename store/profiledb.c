/* profiledb.c: the folding of run events into a pdbx_run (see profiledb.h), and the queries
 * over the folded points. Events are taken apart by the schema's decoders (events.h); this
 * file decides only what each one does to the run. No I/O. This file: the run's init and
 * free, the point index and the dispatch; the folds are profiledb_fold_run.c and
 * profiledb_fold_point.c (profiledb_internal.h).
 */
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
    p->ep = 1;
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
pdbx_point *pdb_find_point(pdbx_run *run, int idx, int create)
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
pdbx_point *pdb_event_point(pdbx_run *run, int idx, pdbx_event_type t, char *err, size_t errlen)
{
    pdbx_point *p = pdb_find_point(run, idx, 1);
    if (!p && (idx < 0 || idx >= PDBX_RUN_MAX_POINTS))
        pdbx_errf(err, errlen, "%s event: field \"point\" is %d; allowed 0..%d (PDBX_RUN_MAX_POINTS)",
                  pdbx_event_type_name(t), idx, PDBX_RUN_MAX_POINTS - 1);
    else if (!p)
        pdbx_errf(err, errlen, "%s event (point %d): out of memory", pdbx_event_type_name(t), idx);
    return p;
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
    case PDBX_EV_RUN_START: return pdb_apply_run_start(run, event, t, err, errlen);
    case PDBX_EV_LAUNCH: return pdb_apply_launch(run, event, err, errlen);
    case PDBX_EV_POINT_START: return pdb_apply_point_start(run, event, t, err, errlen);
    case PDBX_EV_OP: return pdb_apply_op(run, event, err, errlen);
    case PDBX_EV_STEP: return pdb_apply_step(run, event, err, errlen);
    case PDBX_EV_COMM: return pdb_apply_comm(run, event, err, errlen);
    case PDBX_EV_TRACE: return pdb_apply_trace(run, event, err, errlen);
    case PDBX_EV_POINT_END: return pdb_apply_point_end(run, event, t, err, errlen);
    case PDBX_EV_COLL: return pdb_apply_coll(run, event, t, err, errlen);
    case PDBX_EV_PROGRESS: return pdb_apply_progress(run, event);
    case PDBX_EV_WARNING: return pdb_apply_warning(run, event, err, errlen);
    case PDBX_EV_RUN_END: return pdb_apply_run_end(run, event, err, errlen);
    case PDBX_EV_INFER_TOKENS: return pdb_apply_infer_tokens(run, event, t, err, errlen);
    case PDBX_EV_INFER_ATTN: return pdb_apply_infer_attn(run, event, t, err, errlen);
    default: return 0;    /* unknown type: ignored (forward compatible) */
    }
}
