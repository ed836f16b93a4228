/* ui_replay.h: recordings played back through the monitor. A recording is a run file (the
 * same zstd event stream); playback applies its events to a pdbx_run on a virtual clock
 * running `speed` times faster than real time, so the monitor shows the sweep as it happened.
 * Idle gaps longer than UI_REPLAY_MAX_GAP_S of event time (a sweep resumed hours later) are
 * shortened to that. Pure apart from reading the file. */
#ifndef PDBX_UI_REPLAY_H
#define PDBX_UI_REPLAY_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "store/profiledb.h"

#define UI_REPLAY_MAX_GAP_S 5.0

typedef struct {
    cJSON **events;          /* owned */
    size_t n, next;
    double t0;               /* event time of the first event */
    double vt;               /* virtual clock, event seconds */
    double speed;
    int corrupt;             /* the recording has a damaged frame; events before it play */
    char corrupt_msg[256];
} ui_replay;

/* Reads every event of a recording. Returns 0, or -1 with err naming the file. */
int ui_replay_load(const char *path, double speed, ui_replay *rp, char *err, size_t errlen);
/* Advances the virtual clock by wall_dt seconds x speed and applies the events that are due
 * to run. Returns the number of events applied. */
size_t ui_replay_advance(ui_replay *rp, double wall_dt, pdbx_run *run);
int ui_replay_done(const ui_replay *rp);
void ui_replay_free(ui_replay *rp);

#endif
