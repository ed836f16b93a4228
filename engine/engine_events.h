/* engine_events.h: rank 0's event stream (docs/events.md) and its progress heartbeat.
 *
 * Only rank 0 writes; one mutex serialises the main thread and the heartbeat thread so every
 * event is one whole frame. pdbx_events_append() takes ownership of the cJSON object. The
 * heartbeat thread writes a `progress` event every second while the sweep runs (the schema
 * asks for at least every 2 s), from the state set by pdbx_events_progress_*(). ETA weights
 * the remaining points by MBS / TP (pdbx_progress_work, store/progress.h): a point's cost grows
 * with MBS and shrinks with the TP ranks that share it.
 */
#ifndef PDBX_ENGINE_EVENTS_H
#define PDBX_ENGINE_EVENTS_H

#include <cjson/cJSON.h>

#include "store/store.h"

typedef struct pdbx_events pdbx_events;

/* Creates runs/<run_id>.pdbx (append == 0) or opens it to append (append == 1). */
int pdbx_events_open(const char *store_dir, const char *run_id, int append, pdbx_events **out,
                     char *err, size_t errlen);
/* Appends and frees event (always freed). 0, or -1 with err. After the first failed append
 * (disk full, ...) every later one fails at once without writing: the stream stops there. */
int pdbx_events_append(pdbx_events *ev, cJSON *event, char *err, size_t errlen);
/* run_end: written even after a failed append, into the space the writer kept for it. */
int pdbx_events_append_end(pdbx_events *ev, cJSON *event, char *err, size_t errlen);
/* 0 while every append succeeded; else 1, or 2 when the failure was lack of space (disk or
 * quota full, file-size limit), with the first failure's message in why. */
int pdbx_events_failed(pdbx_events *ev, char *why, size_t len);
/* A warning event with message msg. */
int pdbx_events_warning(pdbx_events *ev, const char *msg);
void pdbx_events_close(pdbx_events *ev);
/* Appends event (NULL: it could not be built) and reports a failure on stderr. A failed write
 * makes the sweep stop at its next step (pdbx_events_failed); an event that could not be
 * built does not. 0 or -1. */
int pdbx_events_emit(pdbx_events *ev, cJSON *event);


/* Progress state: total work is the sum of `work` over the points this launch measures, plus
 * its collectives measurements (each pdbx_progress_coll_work(layers), store/progress.h). */
void pdbx_events_progress_plan(pdbx_events *ev, int total_points, int already_done,
                               double total_work, int layers);
/* The collectives measurements of the whole run (every launch), those earlier launches made,
 * and this launch's share (added to the total work). */
void pdbx_events_progress_colls(pdbx_events *ev, int run_total, int done_before, int this_launch);
/* The inference phase's work units of the whole run (every launch) and this launch's share
 * (added to the total work); an inference row of `work` units ended (engine_infer.h). */
void pdbx_events_progress_infer(pdbx_events *ev, double run_total, double this_launch);
void pdbx_events_progress_infer_done(pdbx_events *ev, double work);
void pdbx_events_progress_point(pdbx_events *ev, int point);
void pdbx_events_progress_op(pdbx_events *ev, const char *op);
/* A point ended after measuring (`work` done), or without (skipped, predicted OOM: its work
 * leaves the total); one collectives measurement ended. */
void pdbx_events_progress_done(pdbx_events *ev, double work);
void pdbx_events_progress_skipped(pdbx_events *ev, double work);
void pdbx_events_progress_coll_done(pdbx_events *ev);
int pdbx_events_heartbeat_start(pdbx_events *ev);
void pdbx_events_heartbeat_stop(pdbx_events *ev);
/* Writes one progress event now (also used right before run_end). */
int pdbx_events_progress_now(pdbx_events *ev);

/* Whether the run file at path already holds a run_end (a rank that reports a timeout checks
 * this so the run gets exactly one). */
int pdbx_events_file_has_end(const char *path);
/* How many coll events the run file at path holds (0 when unreadable). */
int pdbx_events_file_colls(const char *path);

#endif
