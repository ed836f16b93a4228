/* profiledb_internal.h: what the fold of run events into a pdbx_run shares (store/profiledb.c,
 * profiledb_fold_run.c, profiledb_fold_point.c only; everyone else uses profiledb.h).
 *
 *   profiledb.c             init and free, the point index, pdbx_run_apply's dispatch
 *   profiledb_fold_run.c    run_start (with the plan), launch, coll, infer_*, progress,
 *                           warning, run_end
 *   profiledb_fold_point.c  point_start, op, step, comm, trace, point_end
 * Every pdb_apply_<type> folds one event of its type (pdbx_run_apply's contract: 0, or -1 with
 * a one-line message in err; t is the event's time, 0 when it has none).
 */
#ifndef PDBX_PROFILEDB_INTERNAL_H
#define PDBX_PROFILEDB_INTERNAL_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "store/events.h"
#include "store/profiledb.h"

/* The point with plan index idx; created on demand when create != 0 (events for points the
 * plan did not list still fold). NULL when absent, beyond the cap, or out of memory. */
pdbx_point *pdb_find_point(pdbx_run *run, int idx, int create);
/* The point an event names (created when the plan did not list it); NULL with err set. */
pdbx_point *pdb_event_point(pdbx_run *run, int idx, pdbx_event_type t, char *err, size_t errlen);
/* Shape fields an event carries (0: absent) onto p. */
void pdb_set_shape(pdbx_point *p, int tp, int pp, int dp, int mbs, int seq_len);
/* Grows *arr (elements of size sz) to hold need; 0 ok, -1 out of memory. */
int pdb_reserve(void **arr, size_t *cap, size_t need, size_t sz, size_t first);

int pdb_apply_run_start(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen);
int pdb_apply_launch(pdbx_run *run, const cJSON *ev, char *err, size_t errlen);
int pdb_apply_coll(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen);
int pdb_apply_infer_tokens(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen);
int pdb_apply_infer_attn(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen);
int pdb_apply_progress(pdbx_run *run, const cJSON *ev);
int pdb_apply_warning(pdbx_run *run, const cJSON *ev, char *err, size_t errlen);
int pdb_apply_run_end(pdbx_run *run, const cJSON *ev, char *err, size_t errlen);

int pdb_apply_point_start(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen);
int pdb_apply_op(pdbx_run *run, const cJSON *ev, char *err, size_t errlen);
int pdb_apply_step(pdbx_run *run, const cJSON *ev, char *err, size_t errlen);
int pdb_apply_comm(pdbx_run *run, const cJSON *ev, char *err, size_t errlen);
int pdb_apply_trace(pdbx_run *run, const cJSON *ev, char *err, size_t errlen);
int pdb_apply_point_end(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen);

#endif
