/* engine_watch.h: cancellation signals, the per-rank watchdog and test-only fault injection.
 *
 * Signals: SIGTERM, SIGINT, SIGUSR1 and SIGUSR2 only set a flag (mpirun forwards SIGUSR1 and
 * SIGUSR2 to every rank, which is how the supervisor reaches the ranks: it turns a cancel into
 * SIGUSR1 for mpirun, because mpirun answers SIGTERM by killing the ranks after one second;
 * mpirun gets SIGUSR2 from the kernel when the supervisor dies (PR_SET_PDEATHSIG): the
 * supervisor is lost and the run ends failed). The engine polls pdbx_watch_stop_code() between
 * steps and agrees on the highest code across ranks.
 *
 * Watchdog: every potentially blocking thing (an op, a collective, a barrier, a consensus) is
 * bracketed by pdbx_watch_begin()/pdbx_watch_end(). A thread per rank checks twice a second;
 * when one bracket has been open longer than the timeout it calls on_timeout once (from the
 * watchdog thread) with the bracket's name, point and age. The callback is expected to record
 * the failure and MPI_Abort. Ranks other than 0 wait `grace_s` longer, so rank 0, which owns the
 * run file, normally reports first.
 *
 * Fault injection (TESTS ONLY): PDBX_FAULT=KIND:rank=R:point=P makes world rank R misbehave at
 * plan point P. KIND is `hang` (sleeps forever inside its first op: exercises the timeout),
 * `oom` (prepare reports an allocation failure: exercises the OOM stop) or `exit` (_exit(3)
 * inside its first op: a rank that dies) or `group` (creating the collectives sweep's group
 * of P ranks fails on rank R: P is the group size there, not a plan point) or `fatal` (its
 * compute ops return PDBX_EFATAL, as the cuda backend does on a sticky CUDA error: the point
 * ends `error` and the run `failed`). Unset, nothing changes.
 */
#ifndef PDBX_ENGINE_WATCH_H
#define PDBX_ENGINE_WATCH_H

#include <stddef.h>

int pdbx_watch_install_signals(void);

/* Why the sweep stops, in rising precedence (ranks agree on the highest): a signal to a rank
 * (SIGINT, SIGTERM), the supervisor's cancel (SIGUSR1 through mpirun), rank 0 could not write
 * the run file (disk full), the supervisor died (SIGUSR2 through mpirun). */
typedef enum {
    PDBX_STOP_NONE = 0, PDBX_STOP_SIGINT, PDBX_STOP_SIGTERM, PDBX_STOP_CANCEL, PDBX_STOP_WRITE,
    PDBX_STOP_SUPERVISOR_LOST,
} pdbx_stop_code;
/* This rank's code from the signal received (never PDBX_STOP_WRITE: the caller adds it). */
pdbx_stop_code pdbx_watch_stop_code(void);

void pdbx_watch_begin(const char *what, int point);
void pdbx_watch_end(void);

typedef void (*pdbx_timeout_fn)(const char *what, int point, double age_s, void *ctx);
int pdbx_watch_start(double timeout_s, double grace_s, pdbx_timeout_fn fn, void *ctx);
void pdbx_watch_stop(void);

typedef enum { PDBX_FAULT_NONE = 0, PDBX_FAULT_HANG, PDBX_FAULT_OOM, PDBX_FAULT_EXIT,
               PDBX_FAULT_GROUP, PDBX_FAULT_FATAL } pdbx_fault_kind;
typedef struct {
    pdbx_fault_kind kind;
    int rank, point;
} pdbx_fault;
/* Parses PDBX_FAULT's value (NULL or "" -> kind NONE). -1 with a message on a bad value. */
int pdbx_fault_parse(const char *s, pdbx_fault *out, char *err, size_t errlen);
/* 1 when f fires on (rank, point). */
int pdbx_fault_hits(const pdbx_fault *f, pdbx_fault_kind kind, int rank, int point);

#endif
