/* engine_agree.h: how the ranks of a launch agree before they go on.
 *
 * Every call is a collective over MPI_COMM_WORLD that every rank must make, in the same order,
 * whatever its own outcome: a rank that skipped one would leave the others waiting forever. A
 * step that may fail on some ranks only (prepare, group creation, a gather's buffers) ends with
 * one of these, and the ranks act on the agreed outcome, not on their own.
 */
#ifndef PDBX_ENGINE_AGREE_H
#define PDBX_ENGINE_AGREE_H

#include "engine/engine_sweep.h"

#define PDBX_MSG_LEN 256

/* Outcomes, ordered by severity: the agreed one is the max over the ranks. FATAL: a backend
 * said its device is unusable (PDBX_EFATAL): the point ends `error`, the run `failed`. */
enum { PDBX_ST_OK = 0, PDBX_ST_OOM = 1, PDBX_ST_ERROR = 2, PDBX_ST_FATAL = 3 };

/* Max of every rank's status. When it is not OK, rank 0's msg (PDBX_MSG_LEN bytes) gets the
 * message of the lowest rank that has that status and a message ("rank R: ..." when R != 0). */
int pdbx_agree_status(pdbx_engine *e, int status, char *msg, int point);
/* Whether any rank asked to stop (a signal, or rank 0 could not write the run file); sets
 * e->cancelled and e->stop (the highest pdbx_stop_code over the ranks) when so. */
int pdbx_agree_cancel(pdbx_engine *e, int point);
/* The same over the communicator comm (the collectives sweep's group). */
int pdbx_agree_cancel_in(pdbx_engine *e, MPI_Comm comm);
/* This rank's own reason to stop (a pdbx_stop_code, engine_watch.h), without asking the
 * others: its signal, or (rank 0) a run file it can no longer write. */
int pdbx_agree_local_stop(const pdbx_engine *e);
/* Whether any rank passed a non-zero `mine` (start-up steps that may fail on one rank). */
int pdbx_agree_any(int mine);

#endif
