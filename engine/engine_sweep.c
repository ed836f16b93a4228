/* engine_sweep.c: the sweep of one launch: its configs in spec order, each config's points in
 * MBS order, then the collectives sweep (engine_sweep.h). */
#include "engine/engine_sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_agree.h"
#include "engine/engine_collsweep.h"
#include "engine/engine_infer.h"
#include "engine/engine_groups.h"
#include "engine/engine_point.h"
#include "engine/engine_point_events.h"
#include "engine/plan/plan_comm.h"
#include "engine/engine_watch.h"
#include "store/events.h"
#include "store/progress.h"

#define MSG_LEN PDBX_MSG_LEN

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

/* State of one config's MBS sweep: after an OOM or an error the rest is skipped. */
typedef struct {
    char stop[MSG_LEN];        /* why the remaining points are skipped ("" while measuring) */
    int warned_dp;
    char fatal[MSG_LEN];       /* a device became unusable (PDBX_ST_FATAL): the run ends */
} config_run;

/* Measure once, use everywhere (engine_point.h): the ok points measured so far, by TP, EP and
 * MBS (EP changes the experts' rows and adds the all-to-alls; every rank keeps the table: the
 * ranks agree on each point's status; rank 0 keeps the rows). */
typedef struct {
    int tp, ep, mbs, point;
    double *rows;
} measured_point;

typedef struct {
    measured_point *at;
    size_t n, cap;
} measured_table;

static const measured_point *measured_find(const measured_table *t, int tp, int ep, int mbs)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->at[i].tp == tp && t->at[i].ep == ep && t->at[i].mbs == mbs)
            return &t->at[i];
    return NULL;
}

/* Keeps rows (rank 0's, may be NULL elsewhere) as the source of tp x ep x mbs; takes them. */
static void measured_add(measured_table *t, int tp, int ep, int mbs, int point, double *rows)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        measured_point *at = realloc(t->at, cap * sizeof *at);
        if (!at) {          /* no reuse for this point: it is measured again where it recurs */
            free(rows);
            return;
        }
        t->at = at;
        t->cap = cap;
    }
    t->at[t->n++] = (measured_point){ tp, ep, mbs, point, rows };
}

static void measured_free(measured_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->at[i].rows);
    free(t->at);
    memset(t, 0, sizeof *t);
}

static void progress_done(pdbx_engine *e, double work)
{
    if (e->ev)
        pdbx_events_progress_done(e->ev, work);
}

static void progress_skipped(pdbx_engine *e, double work)
{
    if (e->ev)
        pdbx_events_progress_skipped(e->ev, work);
}

/* Rank 0: the cpu backend's DP message cap, said once per config when it bites. */
static void warn_dp_cap(pdbx_engine *e, const pdbx_plan_point *pt, config_run *cr)
{
    if (e->rank != 0 || pt->dp < 2 || cr->warned_dp || pdbx_engine_backend_kind(e) != PDBX_BACKEND_CPU)
        return;
    pdbx_plan_comm capped, bucket;
    pdbx_plan_comm_bytes(&e->spec.model, pt->tp, pt->pp, pt->dp, pt->mbs, e->spec.seq_len,
                         e->spec.dtype, PDBX_BACKEND_CPU, &capped);
    pdbx_plan_comm_bytes(&e->spec.model, pt->tp, pt->pp, pt->dp, pt->mbs, e->spec.seq_len,
                         e->spec.dtype, PDBX_BACKEND_CUDA, &bucket);
    if (capped.dp_bytes >= bucket.dp_bytes)
        return;
    char m[MSG_LEN], a[32], b[32];
    snprintf(m, sizeof m, "dp_allreduce: cpu backend caps the DP gradient message at 64 MiB (one "
             "fp32 bucket is %s of the stage's %s); the comm event records the bytes measured",
             gib(bucket.dp_bytes, a, sizeof a), gib(bucket.dp_full_bytes, b, sizeof b));
    pdbx_events_warning(e->ev, m);
    cr->warned_dp = 1;
}

/* One point of the config: skipped, predicted OOM (its profile memory, what the engine would
 * allocate, exceeds the GPU's: the training prediction never stops a sweep), or measured. 1 when the sweep must stop
 * (cancelled while measuring, or a device became unusable: cr->fatal says why), else 0. */
static int config_point(pdbx_engine *e, const pdbx_plan_point *pt, pdbx_cfg_groups *cg,
                        config_run *cr, measured_table *measured)
{
    if (cr->stop[0]) {
        pdbx_point_end_event(e, pt->index, PDBX_POINT_SKIPPED, cr->stop);
        progress_skipped(e, pdbx_progress_work(pt->mbs, pt->tp));
        return 0;
    }
    if (e->ev)
        pdbx_events_progress_point(e->ev, pt->index);
    pdbx_point_end_figures none = { { NAN, NAN }, NAN, { 0 } };
    if (pt->profile_oom && e->spec.predict_oom) {
        char a[32], b[32], m[MSG_LEN];
        snprintf(m, sizeof m, "predicted profile memory %s > %s of %s",
                 gb(pt->profile_bytes, a, sizeof a), gb(e->spec.gpu.mem_bytes, b, sizeof b),
                 e->spec.gpu.name);
        pdbx_point_end_mem_event(e, pt, PDBX_POINT_PREDICTED_OOM, m, &none);
        snprintf(cr->stop, sizeof cr->stop, "after the predicted OOM at MBS %d", pt->mbs);
        progress_skipped(e, pdbx_progress_work(pt->mbs, pt->tp));
        return 0;
    }
    pdbx_point_start_event(e, pt);
    warn_dp_cap(e, pt, cr);
    char msg[MSG_LEN];
    const measured_point *same = measured_find(measured, pt->tp, pt->ep, pt->mbs);
    pdbx_point_source source = { same ? same->point : -1, same ? same->rows : NULL };
    pdbx_point_outcome out;
    memset(&out, 0, sizeof out);
    int st = pdbx_point_measure(e, pt, cg, same ? &source : NULL, msg, &out);
    pdbx_point_end_figures fig = { out.mem, out.setup_s, out.noise };
    if (st < 0) {
        pdbx_point_end_event(e, pt->index, PDBX_POINT_SKIPPED, "cancelled while measuring: dropped");
        e->in_flight = PDBX_IN_FLIGHT_DROPPED;
        e->in_flight_point = pt->index;
        return 1;
    }
    /* asked to stop during its last step: the point finished and is kept (the sweep stops at
     * the next point's agreement) */
    if (!e->in_flight && pdbx_agree_local_stop(e) != PDBX_STOP_NONE) {
        e->in_flight = PDBX_IN_FLIGHT_FINISHED;
        e->in_flight_point = pt->index;
    }
    if (st == PDBX_ST_OK && !same)
        measured_add(measured, pt->tp, pt->ep, pt->mbs, pt->index, out.rows);
    else
        free(out.rows);
    if (st == PDBX_ST_OK) {
        pdbx_point_end_mem_event(e, pt, PDBX_POINT_OK, NULL, &fig);
    } else if (st == PDBX_ST_OOM) {
        pdbx_point_end_mem_event(e, pt, PDBX_POINT_OOM, msg, &none);
        snprintf(cr->stop, sizeof cr->stop, "after the OOM at MBS %d", pt->mbs);
    } else {
        pdbx_point_end_event(e, pt->index, PDBX_POINT_ERROR, msg);
        snprintf(cr->stop, sizeof cr->stop, "config stopped after the error at MBS %d", pt->mbs);
    }
    progress_done(e, pdbx_progress_work(pt->mbs, pt->tp));
    if (st == PDBX_ST_FATAL) {   /* no later number from this device could be trusted */
        snprintf(cr->fatal, sizeof cr->fatal, "point %d: %.*s", pt->index, MSG_LEN - 32, msg);
        return 1;
    }
    return 0;
}

/* Frees the comm buffer (backend.h: comm_buffer with 0 bytes): it was sized for the config
 * just measured and must not count against the next config's (or the collectives sweep's)
 * memory. */
static void release_comm_buffer(pdbx_engine *e)
{
    void *buf = NULL;
    char err[MSG_LEN];
    (void)e->be.compute->comm_buffer(e->compute, 0, &buf, err, sizeof err);
}

/* The config's points in MBS order. 0, or -1 with the reason in err when a device became
 * unusable (the run ends failed). */
static int measure_config(pdbx_engine *e, int config, measured_table *measured, char *err_out,
                          size_t errlen)
{
    const pdbx_parallel *par = &e->spec.configs[config];
    pdbx_cfg_groups cg;
    char err[MSG_LEN] = "";
    /* a communicator that cannot get its buffers (nccl: warmed at creation) is an OOM of the
     * config's points; an unusable device ends the run */
    int rc = pdbx_groups_build(e, &cg, par, err, sizeof err);
    int st = rc == 0 ? PDBX_ST_OK : rc == PDBX_EOOM ? PDBX_ST_OOM
           : rc == PDBX_EFATAL ? PDBX_ST_FATAL : PDBX_ST_ERROR;
    /* a rank whose groups failed must not leave the others waiting in the first point */
    int agreed = pdbx_agree_status(e, st, err, -1);
    if (agreed != PDBX_ST_OK) {
        if (st == PDBX_ST_OK)
            pdbx_groups_free(e, &cg);
        for (size_t i = 0; i < e->npoints; i++)
            if (e->points[i].config == config)
                pdbx_point_end_event(e, e->points[i].index,
                                     agreed == PDBX_ST_OOM ? PDBX_POINT_OOM : PDBX_POINT_ERROR, err);
        if (agreed == PDBX_ST_FATAL) {
            snprintf(err_out, errlen, "creating the groups of config %d: %s", config, err);
            return -1;
        }
        return 0;
    }
    config_run cr;
    memset(&cr, 0, sizeof cr);
    for (size_t i = 0; i < e->npoints; i++) {
        const pdbx_plan_point *pt = &e->points[i];
        if (pt->config != config)
            continue;
        if (e->cancelled || pdbx_agree_cancel(e, pt->index))
            break;
        if (config_point(e, pt, &cg, &cr, measured))
            break;
    }
    release_comm_buffer(e);
    pdbx_groups_free(e, &cg);
    if (cr.fatal[0]) {
        snprintf(err_out, errlen, "%s", cr.fatal);
        return -1;
    }
    return 0;
}

int pdbx_engine_sweep(pdbx_engine *e, char *err, size_t errlen)
{
    measured_table measured = { 0 };
    for (int c = 0; c < e->spec.nconfigs && !e->cancelled; c++) {
        const pdbx_parallel *par = &e->spec.configs[c];
        if (par->tp * par->pp * par->dp == e->size && measure_config(e, c, &measured, err, errlen) != 0) {
            measured_free(&measured);
            return -1;   /* a device is unusable: run_end failed with the reason */
        }
    }
    measured_free(&measured);
    /* the inference phase (engine_infer.h), then the collectives sweep */
    if (!e->cancelled && pdbx_infer_sweep(e, err, errlen) != 0)
        return -1;
    if (!e->cancelled) {
        if (e->ev)
            pdbx_events_progress_point(e->ev, -1);
        int rc = pdbx_coll_sweep(e);
        release_comm_buffer(e);
        if (rc != 0) {
            snprintf(err, errlen, "collectives sweep failed");
            return -1;
        }
    }
    return 0;
}
