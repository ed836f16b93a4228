/* launch_supervisor.h: the supervisor process of a launched sweep (see launch.h for the whole
 * picture) and the two run-file queries that both the launching caller and the supervisor make.
 * Internal to engine/launch: the CLI and the explorer use launch.h only.
 *
 * The supervisor runs one mpirun per distinct rank count of the plan, forwards a cancel to the
 * ranks, and whenever mpirun ends without the run having a run_end it appends one (failed or
 * cancelled, with the reason). When the engine never created the run it records the attempt
 * as a failed run of its own, so every launch shows up in the store.
 */
#ifndef PDBX_LAUNCH_SUPERVISOR_H
#define PDBX_LAUNCH_SUPERVISOR_H

#include <stddef.h>

#include "engine/launch/launch_argv.h"
#include "engine/plan/plan.h"
#include "store/store.h"

/* OpenMPI's shared-memory segments of run ID live in PDBX_SHM_DIR_PREFIX ID while it runs. */
#define PDBX_SHM_DIR_PREFIX "/dev/shm/pdbx-"

/* Everything the supervisor needs, filled by the launching caller before the fork. */
typedef struct {
    char id[PDBX_RUN_ID_MAX];
    char store_dir[PDBX_PATH_MAX];
    char spec_path[PDBX_PATH_MAX];   /* the validated spec, as the engine reads it */
    char run_path[PDBX_PATH_MAX];    /* runs/<id>.pdbx, written by the engine */
    char log_path[PDBX_PATH_MAX];    /* the supervisor's, mpirun's and the engine's stderr */
    char engine[PDBX_PATH_MAX];
    int sizes[PDBX_MAX_CONFIGS];     /* distinct rank counts, one mpirun each, in config order */
    int nsizes;
    pdbx_spec spec;
    pdbx_launch_opts opts;           /* launcher, hosts, launcher args (launch_argv.h) */
    char srun_mpi_list[4096];        /* `srun --mpi=list` as the launching caller read it */
    int have_mpi_list;
} pdbx_sup_job;

/* The launch environment for the job's command lines (pdbx_launch_env_probe) with the `srun
 * --mpi=list` answer read once when the job was prepared, not asked again. */
void pdbx_sup_job_env(const pdbx_sup_job *job, const pdbx_spec *spec, const pdbx_launch_opts *opts,
                      pdbx_launch_env *env);
/* Runs the sweep to its end in the calling process (already detached, stderr on the log). */
void pdbx_sup_run(const pdbx_sup_job *job);
/* How many run_start (or launch) events the run file at path holds; 0 when it does not exist. */
int pdbx_sup_run_starts(const char *path);
/* The last message pdbx wrote to the log at path ("" when none): the reason a sweep stopped. */
void pdbx_sup_log_tail(const char *path, char *out, size_t len);

#endif
