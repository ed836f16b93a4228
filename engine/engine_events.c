/* engine_events.c: rank 0's event writer and progress heartbeat (engine_events.h). */
#include "engine/engine_events.h"
#include "store/events.h"
#include "store/progress.h"
#include "store/util/clock.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct pdbx_events {
    pthread_mutex_t mu;
    pdbx_store *store;
    pdbx_run_writer *w;
    /* progress */
    int total, done, point;
    char op[32];
    double total_work, done_work;
    int coll_done, coll_total;        /* whole run (progress.h counts them as work) */
    double coll_work;                 /* work units of one collectives measurement */
    double infer_done, infer_total;   /* work units of the inference phase, whole run */
    double t0;                 /* monotonic seconds at plan time */
    double t_done;             /* seconds after t0 when the last point ended */
    pthread_t hb;
    int hb_running, hb_stop;
    pthread_cond_t hb_cv;
    /* The first append that failed stops all others but the run's end: the sweep stops at the
     * next step (engine_agree.c) and run_end says why, from the writer's reserve. */
    int failed, full;
    char failed_why[512];
};

int pdbx_events_open(const char *store_dir, const char *run_id, int append, pdbx_events **out,
                     char *err, size_t errlen)
{
    pdbx_events *ev = calloc(1, sizeof *ev);
    if (!ev) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&ev->mu, NULL);
    /* the heartbeat's 1 s wait on the monotonic clock: a wall-clock step back (NTP) would
     * otherwise hold progress events back by as long, and the run could read as dead */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ev->hb_cv, &ca);
    pthread_condattr_destroy(&ca);
    ev->point = -1;
    ev->t0 = pdbx_mono_s();
    if (pdbx_store_open(store_dir, 1, &ev->store, err, errlen) != 0)
        goto fail;
    int rc = append ? pdbx_run_writer_open(ev->store, run_id, &ev->w, err, errlen)
                    : pdbx_run_writer_create(ev->store, run_id, &ev->w, err, errlen);
    if (rc != 0)
        goto fail;
    *out = ev;
    return 0;
fail:
    if (ev->store)
        pdbx_store_close(ev->store);
    pthread_mutex_destroy(&ev->mu);
    pthread_cond_destroy(&ev->hb_cv);
    free(ev);
    return -1;
}

/* Under ev->mu: appends event unless an earlier append failed; the first failure is kept. */
static int append_locked(pdbx_events *ev, const cJSON *event, int last, char *err, size_t errlen)
{
    if (ev->failed && !last) {
        snprintf(err, errlen, "not written: %s", ev->failed_why);
        return -1;
    }
    int rc = last ? pdbx_run_writer_append_last(ev->w, event, err, errlen)
                  : pdbx_run_writer_append(ev->w, event, err, errlen);
    pdbx_append_failure why = pdbx_run_writer_failure(ev->w);
    /* an event that could not be built is lost alone; a file that cannot be written stops all */
    if (rc != 0 && !ev->failed && why != PDBX_APPEND_ENCODE) {
        ev->failed = 1;
        ev->full = why == PDBX_APPEND_NO_SPACE;
        snprintf(ev->failed_why, sizeof ev->failed_why, "%s", err);
        fprintf(stderr, "pdbx-engine: %s: the sweep stops\n", err);
    }
    return rc;
}

static int append_owned(pdbx_events *ev, cJSON *event, int last, char *err, size_t errlen)
{
    if (!event) {
        snprintf(err, errlen, "out of memory building an event");
        return -1;
    }
    pthread_mutex_lock(&ev->mu);
    int rc = append_locked(ev, event, last, err, errlen);
    pthread_mutex_unlock(&ev->mu);
    cJSON_Delete(event);
    return rc;
}

int pdbx_events_append(pdbx_events *ev, cJSON *event, char *err, size_t errlen)
{
    return append_owned(ev, event, 0, err, errlen);
}

int pdbx_events_append_end(pdbx_events *ev, cJSON *event, char *err, size_t errlen)
{
    return append_owned(ev, event, 1, err, errlen);
}

int pdbx_events_failed(pdbx_events *ev, char *why, size_t len)
{
    pthread_mutex_lock(&ev->mu);
    int failed = ev->failed, full = ev->full;
    if (why && len)
        snprintf(why, len, "%s", ev->failed ? ev->failed_why : "");
    pthread_mutex_unlock(&ev->mu);
    return failed ? (full ? 2 : 1) : 0;
}

int pdbx_events_emit(pdbx_events *ev, cJSON *event)
{
    char err[600];
    if (pdbx_events_append(ev, event, err, sizeof err) != 0) {
        /* a writer that failed stays failed, and append_locked said so once */
        if (!pdbx_events_failed(ev, NULL, 0))
            fprintf(stderr, "pdbx-engine: writing an event: %s\n", err);
        return -1;
    }
    return 0;
}

int pdbx_events_warning(pdbx_events *ev, const char *msg)
{
    char err[256];
    cJSON *e = pdbx_event_warning(msg);
    if (!e)
        return -1;
    return pdbx_events_append(ev, e, err, sizeof err);
}

void pdbx_events_close(pdbx_events *ev)
{
    if (!ev)
        return;
    pdbx_events_heartbeat_stop(ev);
    char err[256];
    if (ev->w && pdbx_run_writer_close(ev->w, err, sizeof err) != 0)
        fprintf(stderr, "pdbx-engine: closing the run file: %s\n", err);
    pdbx_store_close(ev->store);
    pthread_mutex_destroy(&ev->mu);
    pthread_cond_destroy(&ev->hb_cv);
    free(ev);
}

void pdbx_events_progress_plan(pdbx_events *ev, int total_points, int already_done,
                               double total_work, int layers)
{
    pthread_mutex_lock(&ev->mu);
    ev->total = total_points;
    ev->done = already_done;
    ev->total_work = total_work;
    ev->coll_work = pdbx_progress_coll_work(layers);
    ev->coll_done = ev->coll_total = 0;
    ev->done_work = 0;
    ev->t_done = 0;
    ev->t0 = pdbx_mono_s();
    pthread_mutex_unlock(&ev->mu);
}

void pdbx_events_progress_colls(pdbx_events *ev, int run_total, int done_before, int this_launch)
{
    pthread_mutex_lock(&ev->mu);
    ev->coll_total = run_total;
    ev->coll_done = done_before;
    ev->total_work += this_launch * ev->coll_work;
    pthread_mutex_unlock(&ev->mu);
}

void pdbx_events_progress_infer(pdbx_events *ev, double run_total, double this_launch)
{
    pthread_mutex_lock(&ev->mu);
    ev->infer_total = run_total;
    ev->total_work += this_launch;
    pthread_mutex_unlock(&ev->mu);
}

void pdbx_events_progress_infer_done(pdbx_events *ev, double work)
{
    pthread_mutex_lock(&ev->mu);
    ev->infer_done += work;
    ev->done_work += work;
    ev->t_done = pdbx_mono_s() - ev->t0;
    pthread_mutex_unlock(&ev->mu);
}

void pdbx_events_progress_skipped(pdbx_events *ev, double work)
{
    pthread_mutex_lock(&ev->mu);
    ev->done++;
    ev->total_work -= work;         /* nothing of it will be measured */
    pthread_mutex_unlock(&ev->mu);
}

void pdbx_events_progress_coll_done(pdbx_events *ev)
{
    pthread_mutex_lock(&ev->mu);
    ev->coll_done++;
    ev->done_work += ev->coll_work;
    ev->t_done = pdbx_mono_s() - ev->t0;
    pthread_mutex_unlock(&ev->mu);
}

void pdbx_events_progress_point(pdbx_events *ev, int point)
{
    pthread_mutex_lock(&ev->mu);
    ev->point = point;
    ev->op[0] = '\0';
    pthread_mutex_unlock(&ev->mu);
}

void pdbx_events_progress_op(pdbx_events *ev, const char *op)
{
    pthread_mutex_lock(&ev->mu);
    snprintf(ev->op, sizeof ev->op, "%s", op);
    pthread_mutex_unlock(&ev->mu);
}

void pdbx_events_progress_done(pdbx_events *ev, double work)
{
    pthread_mutex_lock(&ev->mu);
    ev->done++;
    ev->done_work += work;
    ev->t_done = pdbx_mono_s() - ev->t0;
    pthread_mutex_unlock(&ev->mu);
}

/* The progress event, or NULL when out of memory (never one with fields missing). */
static cJSON *progress_event_locked(pdbx_events *ev)
{
    double elapsed = pdbx_mono_s() - ev->t0;
    pdbx_ev_progress p = { .done = ev->done, .total = ev->total, .point = ev->point, .op = ev->op,
                           .elapsed_s = elapsed, .eta_s = NAN, .coll_done = ev->coll_done,
                           .coll_total = ev->coll_total, .infer_done = ev->infer_done,
                           .infer_total = ev->infer_total };
    /* rate from the finished points only, minus the time already spent on the current one:
     * the ETA then counts down while a point runs instead of growing */
    if (ev->done_work > 0 && ev->total_work >= ev->done_work) {
        double eta = ev->t_done / ev->done_work * (ev->total_work - ev->done_work) -
                     (elapsed - ev->t_done);
        p.eta_s = eta > 0 ? eta : 0;
    }
    return pdbx_event_progress(&p);
}

int pdbx_events_progress_now(pdbx_events *ev)
{
    char err[256];
    pthread_mutex_lock(&ev->mu);
    cJSON *e = progress_event_locked(ev);
    int rc = e ? append_locked(ev, e, 0, err, sizeof err) : -1;
    pthread_mutex_unlock(&ev->mu);
    cJSON_Delete(e);
    return rc;
}

static void *heartbeat_main(void *arg)
{
    pdbx_events *ev = arg;
    pthread_mutex_lock(&ev->mu);
    while (!ev->hb_stop) {
        struct timespec until = pdbx_mono_deadline(1.0);
        pthread_cond_timedwait(&ev->hb_cv, &ev->mu, &until);
        if (ev->hb_stop)
            break;
        cJSON *e = progress_event_locked(ev);
        char err[512];
        if (e && !ev->failed && append_locked(ev, e, 0, err, sizeof err) != 0)
            fprintf(stderr, "pdbx-engine: progress event: %s\n", err);
        cJSON_Delete(e);
    }
    pthread_mutex_unlock(&ev->mu);
    return NULL;
}

int pdbx_events_heartbeat_start(pdbx_events *ev)
{
    ev->hb_stop = 0;
    if (pthread_create(&ev->hb, NULL, heartbeat_main, ev) != 0)
        return -1;
    ev->hb_running = 1;
    return 0;
}

void pdbx_events_heartbeat_stop(pdbx_events *ev)
{
    if (!ev->hb_running)
        return;
    pthread_mutex_lock(&ev->mu);
    ev->hb_stop = 1;
    pthread_cond_signal(&ev->hb_cv);
    pthread_mutex_unlock(&ev->mu);
    pthread_join(ev->hb, NULL);
    ev->hb_running = 0;
}

static int count_colls(const cJSON *event, void *ctx)
{
    if (pdbx_event_type_of(event) == PDBX_EV_COLL)
        ++*(int *)ctx;
    return 0;
}

int pdbx_events_file_colls(const char *path)
{
    int n = 0;
    pdbx_scan_result res;
    char err[256];
    if (pdbx_scan_file(path, 0, count_colls, &n, &res, err, sizeof err) != 0)
        return 0;
    return n;
}

static int find_end(const cJSON *event, void *ctx)
{
    if (pdbx_event_type_of(event) == PDBX_EV_RUN_END) {
        *(int *)ctx = 1;
        return 1;
    }
    return 0;
}

int pdbx_events_file_has_end(const char *path)
{
    int found = 0;
    pdbx_scan_result res;
    char err[256];
    if (pdbx_scan_file(path, 0, find_end, &found, &res, err, sizeof err) != 0)
        return 0;
    return found;
}
