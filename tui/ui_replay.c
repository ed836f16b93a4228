/* ui_replay.c: see ui_replay.h. */
#include "tui/ui_replay.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/events.h"
#include "store/store.h"

typedef struct {
    ui_replay *rp;
    size_t cap;
    int oom;
} collect_ctx;

static int collect(const cJSON *ev, void *vctx)
{
    collect_ctx *c = vctx;
    if (c->rp->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        cJSON **ne = realloc(c->rp->events, cap * sizeof(*ne));
        if (!ne) { c->oom = 1; return 1; }
        c->rp->events = ne;
        c->cap = cap;
    }
    cJSON *dup = cJSON_Duplicate(ev, 1);
    if (!dup) { c->oom = 1; return 1; }
    c->rp->events[c->rp->n++] = dup;
    return 0;
}

static double event_time(const cJSON *ev)
{
    double t;
    return pdbx_event_time(ev, &t) ? t : NAN;
}

int ui_replay_load(const char *path, double speed, ui_replay *rp, char *err, size_t errlen)
{
    memset(rp, 0, sizeof(*rp));
    rp->speed = speed > 0 ? speed : 1;
    collect_ctx c = { rp, 0, 0 };
    pdbx_scan_result res;
    if (pdbx_scan_file(path, 0, collect, &c, &res, err, errlen) != 0)
        goto fail;
    if (c.oom) {
        snprintf(err, errlen, "%s: out of memory reading the recording", path);
        goto fail;
    }
    if (rp->n == 0) {
        snprintf(err, errlen, "%s: no events (not a pdbx recording?)%s%s", path,
                 res.corrupt ? ": " : "", res.corrupt ? res.corrupt_msg : "");
        goto fail;
    }
    rp->corrupt = res.corrupt;
    snprintf(rp->corrupt_msg, sizeof(rp->corrupt_msg), "%s", res.corrupt_msg);
    rp->t0 = event_time(rp->events[0]);
    if (isnan(rp->t0)) rp->t0 = 0;
    rp->vt = rp->t0;
    return 0;
fail:
    ui_replay_free(rp);
    return -1;
}

size_t ui_replay_advance(ui_replay *rp, double wall_dt, pdbx_run *run)
{
    size_t applied = 0;
    if (wall_dt > 0)
        rp->vt += wall_dt * rp->speed;
    while (rp->next < rp->n) {
        double t = event_time(rp->events[rp->next]);
        if (!isnan(t) && t > rp->vt) {
            if (t - rp->vt > UI_REPLAY_MAX_GAP_S)
                rp->vt = t - UI_REPLAY_MAX_GAP_S;     /* shorten long idle gaps */
            break;
        }
        char err[256];
        pdbx_run_apply(run, rp->events[rp->next], err, sizeof(err));   /* bad events are skipped */
        rp->next++;
        applied++;
    }
    return applied;
}

int ui_replay_done(const ui_replay *rp)
{
    return rp->next >= rp->n;
}

void ui_replay_free(ui_replay *rp)
{
    for (size_t i = 0; i < rp->n; i++)
        cJSON_Delete(rp->events[i]);
    free(rp->events);
    memset(rp, 0, sizeof(*rp));
}
