/* launch.h: starting, watching and cancelling a sweep in the background. Shared by the CLI
 * (`pdbx run/attach/cancel`) and the explorer (new-sweep form, monitor). Uses only
 * engine/plan/plan.h and store/: the engine is a separate program started with mpirun.
 *
 * A launch forks a supervisor process that becomes its own session/process-group leader
 * (setsid), so closing the terminal or the explorer never stops the sweep. The supervisor
 * writes the validated spec to a file, runs `mpirun -np N pdbx-engine --spec S --store D
 * --run-id ID` once per distinct rank count of the plan (adding --allow-run-as-root and
 * --oversubscribe when needed), and exports PDBX_LAUNCHER_PID so the engine records the
 * supervisor's pid and host in run_start. If mpirun or an engine dies without writing run_end,
 * the supervisor appends run_end "failed" with the reason. Cancel = SIGTERM to that process
 * group: the engine finishes or drops the measurement in flight and ends the run `cancelled`.
 */
#ifndef PDBX_LAUNCH_H
#define PDBX_LAUNCH_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "engine/launch/launch_argv.h"
#include "engine/plan/plan.h"
#include "store/events.h"
#include "store/store.h"

typedef struct {
    char run_id[PDBX_RUN_ID_MAX];
    pid_t supervisor;            /* pid == process group id of the sweep */
    char log_path[PDBX_PATH_MAX];/* mpirun/engine stderr, kept next to the store */
} pdbx_launch;

/* Validates spec, creates the run id, starts the supervisor and returns at once (the run file
 * exists with run_start, or the call fails, when it returns). */
int pdbx_launch_start(const pdbx_spec *spec, const char *store_dir, pdbx_launch *out,
                      char *err, size_t errlen);
/* The same with the launcher options of launch_argv.h (NULL: the spec's launcher, no hosts).
 * A launch that cannot run as asked (local with nodes > 1, too few slots ...) fails with the
 * one line of pdbx_launch_plan_check before anything is created; *usage is then set to 1
 * (usage may be NULL). */
int pdbx_launch_start_ex(const pdbx_spec *spec, const pdbx_launch_opts *opts,
                         const char *store_dir, pdbx_launch *out, int *usage, char *err,
                         size_t errlen);
/* --dry-run: writes to out the command line (shell-quoted) that each launch of the sweep would
 * exec, one per distinct rank count, with a run id chosen now and nothing created. 0, or -1
 * with err (*usage set as above). */
int pdbx_launch_dry_run(const pdbx_spec *spec, const pdbx_launch_opts *opts,
                        const char *store_dir, FILE *out, int *usage, char *err, size_t errlen);
/* --sbatch: writes the batch script (launch_argv.h, pdbx_launch_sbatch_script) to script_path
 * for a run id chosen now (run_id), the srun launcher forced; creates the store (and its logs/)
 * so that the job's output has somewhere to go, but no run: the engine creates it when the job
 * starts. The script's absolute path goes to abs_script. 0, or -1 with err (*usage set when the
 * request itself is wrong). */
int pdbx_launch_sbatch(const pdbx_spec *spec, const pdbx_launch_opts *opts, const char *store_dir,
                       const char *time_limit, const char *script_path,
                       char run_id[PDBX_RUN_ID_MAX], char abs_script[PDBX_PATH_MAX], int *usage,
                       char *err, size_t errlen);
/* A sweep of the store at store_dir that runs on this host now (its launcher is alive, the
 * store's liveness rule) and that a sweep for spec would share devices with: the same backend
 * on the same host (cpu: the host's cores; cuda: its GPUs, which every sweep numbers from 0;
 * backend auto: either).
 * Two such sweeps disturb each other's numbers. 1 with its id and a one-line description in
 * what (model, backend, progress), 0 when there is none, -1 with err. */
int pdbx_launch_find_running(const pdbx_spec *spec, const char *store_dir,
                             char running_id[PDBX_RUN_ID_MAX], char *what, size_t whatlen,
                             char *err, size_t errlen);

/* Stops a running sweep: writes the stop request naming cause (pdbx cancel, the explorer,
 * Ctrl-C; store/stop_request.h), then SIGTERM to the sweep's process group (found from
 * run_start's host, pid and pid start time). Fails with a one-line message and signals nothing
 * when the run is not running, runs on another host, or its launcher is gone (the pid now
 * belongs to another process: pid reuse). */
int pdbx_launch_cancel(pdbx_store *st, const char *run_id, pdbx_end_cause cause, char *err,
                       size_t errlen);
/* Runs pdbx-engine in a foreground mode (`pdbx validate`) for np ranks, launched as a sweep
 * would be (spec's launcher and opts, launch_argv.h; spec's configs should be the one being
 * run, as pdbx_launch_plan_check checks the slots for them): the engine gets --spec
 * spec_path and t's other arguments (t->engine NULL: pdbx_engine_path()). The launcher's stdout
 * and stderr go to the caller's stderr (its stdout stays for the caller's own result). Waits for it; SIGINT and SIGTERM to the caller while it runs are
 * forwarded to the launcher (the ranks then exit). Returns 0 with *status = the launcher's exit
 * status (128 + N when a signal N ended it), or -1 with one line (*usage set when the launch
 * cannot run as asked: pdbx_launch_plan_check; usage may be NULL). */
int pdbx_launch_foreground(const pdbx_spec *spec, const pdbx_launch_opts *opts,
                           const pdbx_launch_target *t, int np, int *status, int *usage,
                           char *err, size_t errlen);
/* Path of the pdbx-engine and mpirun binaries used ($PDBX_ENGINE, else next to pdbx). */
const char *pdbx_engine_path(void);

#endif
