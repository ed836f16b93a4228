/* progress.c: the progress model of a sweep (progress.h). */
#include "store/progress.h"

#include <math.h>
#include <string.h>

#include "store/ops.h"

/* An ETA beyond this (about three years) is not an estimate any more: unknown. */
#define ETA_MAX_S 1e8

double pdbx_progress_coll_work(int layers)
{
    if (layers < 1)
        layers = 1;
    if (layers > PDBX_RUN_MAX_LAYERS)
        layers = PDBX_RUN_MAX_LAYERS;
    int once = 0, per_layer = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        if (!pdbx_op_in_model_fwd((pdbx_op)op))   /* loss, optimizer: the weight stays a step's ops' */
            continue;
        if (pdbx_op_is_per_layer((pdbx_op)op))
            per_layer++;
        else
            once++;
    }
    return 1.0 / (once + (double)per_layer * layers);
}

double pdbx_progress_work(int mbs, int tp)
{
    return (mbs > 0 ? (double)mbs : 1.0) / (tp > 0 ? (double)tp : 1.0);
}

double pdbx_progress_point_work(const pdbx_point *p)
{
    return pdbx_progress_work(p->mbs, p->tp);
}

void pdbx_progress_fold_beat(pdbx_run *run, double coll_total)
{
    if (isfinite(coll_total) && coll_total >= 0 && coll_total <= PDBX_RUN_MAX_COLLS)
        run->progress.coll_total = floor(coll_total);
}

void pdbx_progress_fold_done(pdbx_run *run, double work, int measured, double t)
{
    pdbx_run_progress *pr = &run->progress;
    if (!measured || !isfinite(work) || work <= 0)
        return;
    pr->measured_work += work;
    /* the rate needs a time after the run's start; a hostile or missing "t" just leaves it */
    double since = t - run->created;
    if (!isfinite(t) || !isfinite(run->created) || run->created <= 0 || !(since > 0))
        return;
    double r = pr->measured_work / since;
    if (!isfinite(r) || r <= 0)
        return;
    pr->rate = pr->rate > 0 ? pr->rate + PDBX_PROGRESS_ALPHA * (r - pr->rate) : r;
    pr->rate_at = t;
}

void pdbx_progress_fold_coll(pdbx_run *run, double t)
{
    run->progress.coll_done++;
    pdbx_progress_fold_done(run, pdbx_progress_coll_work(run->layers_profiled), 1, t);
}

void pdbx_progress_fold_infer_beat(pdbx_run *run, double infer_total)
{
    if (isfinite(infer_total) && infer_total >= 0 && infer_total < 1e9)
        run->progress.infer_total = infer_total;
}

void pdbx_progress_fold_infer(pdbx_run *run, double work, double t)
{
    if (!isfinite(work) || work <= 0)
        return;
    run->progress.infer_done += work;
    pdbx_progress_fold_done(run, work, 1, t);
}

double pdbx_progress_infer_ops_work(int layers, int nops)
{
    return pdbx_progress_coll_work(layers) * (nops > 0 ? nops : 1);
}

double pdbx_progress_infer_tokens_work(int layers, const pdbx_infer_tokens *r)
{
    int n = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        n += r->op[op].count > 0;
    return pdbx_progress_infer_ops_work(layers, n);
}

static int point_ended(const pdbx_point *p)
{
    return p->status != PDBX_POINT_PENDING && p->status != PDBX_POINT_RUNNING;
}

/* Points and their work: from the plan, or (a run without one) from the heartbeat's counts. */
static void count_points(const pdbx_run *run, pdbx_progress *o)
{
    for (size_t i = 0; i < run->npoints; i++) {
        double w = pdbx_progress_point_work(&run->points[i]);
        o->work_total += w;
        if (point_ended(&run->points[i])) {
            o->points_done++;
            o->work_done += w;
        }
    }
    o->points_total = run->npoints;
    double total = run->progress_total, done = run->progress_done;
    if (run->npoints == 0 && isfinite(total) && total >= 1 && total <= PDBX_RUN_MAX_POINTS) {
        if (!isfinite(done) || done < 0)
            done = 0;
        if (done > total)
            done = total;
        o->points_total = (size_t)total;
        o->points_done = (size_t)done;
        o->work_total = (double)o->points_total;
        o->work_done = (double)o->points_done;
    }
}

void pdbx_progress_of(const pdbx_run *run, double now, pdbx_progress *o)
{
    memset(o, 0, sizeof *o);
    o->op = "";
    o->fraction = o->elapsed_s = o->eta_s = NAN;
    o->ended = run->have_end || run->status != PDBX_RUN_RUNNING;
    int complete = run->have_end && run->status == PDBX_RUN_COMPLETE;

    count_points(run, o);
    double cw = pdbx_progress_coll_work(run->layers_profiled);
    /* counted by the fold (a summary counts the coll events it does not parse) */
    double seen = run->progress.coll_done > 0 && run->progress.coll_done <= PDBX_RUN_MAX_COLLS
                      ? run->progress.coll_done : 0;
    o->coll_done = (size_t)seen;
    double announced = run->progress.coll_total;
    o->coll_total = announced > seen ? (size_t)announced : o->coll_done;
    o->work_done += cw * (double)o->coll_done;
    o->work_total += cw * (double)o->coll_total;
    /* the inference phase: what its events hold, within what the heartbeat announced */
    double idone = run->progress.infer_done, itotal = run->progress.infer_total;
    if (!(isfinite(idone) && idone > 0 && idone < 1e9))
        idone = 0;
    if (!(isfinite(itotal) && itotal > idone))
        itotal = idone;
    o->infer_done = idone;
    o->infer_total = itotal;
    o->work_done += idone;
    o->work_total += itotal;
    if (o->work_total > 0) {
        o->fraction = o->work_done / o->work_total;
        if (o->fraction > 1)
            o->fraction = 1;
    }
    if (complete)
        o->fraction = 1;
    if (!isnan(o->fraction)) {
        o->percent = (int)floor(o->fraction * 100.0);
        if (!o->ended && o->percent > 99)
            o->percent = 99;
    }
    o->collectives = !o->ended && o->points_total > 0 && o->points_done == o->points_total &&
                     o->coll_total > 0 && !(o->infer_total > o->infer_done);

    if (!o->ended) {
        o->point = run->current_point >= 0 ? pdbx_run_point(run, run->current_point) : NULL;
        o->op = run->current_op;
    }

    double t0 = run->created, t1 = o->ended && run->last_event > 0 ? run->last_event : now;
    if (isfinite(t0) && t0 > 0 && isfinite(t1) && t1 - t0 < ETA_MAX_S)
        o->elapsed_s = t1 > t0 ? t1 - t0 : 0;

    if (o->ended) {
        o->eta_s = complete ? 0 : NAN;
        return;
    }
    const pdbx_run_progress *pr = &run->progress;
    if (pr->rate > 0) {
        double left = o->work_total - o->work_done, since = now - pr->rate_at;
        if (!(since > 0))
            since = 0;
        if (!(left > 0))
            left = 0;
        /* counting down, but never below the time the work after the one in flight takes: a
         * point that runs longer than expected holds the ETA instead of letting it reach 0 and
         * jump back up when it ends */
        double in_flight = o->point ? pdbx_progress_point_work(o->point) : o->collectives ? cw : 0;
        double after = left > in_flight ? (left - in_flight) / pr->rate : 0;
        double eta = left / pr->rate - since;
        if (eta < after)
            eta = after;
        if (isfinite(eta) && eta < ETA_MAX_S)
            o->eta_s = eta > 0 ? eta : 0;
    }
}
