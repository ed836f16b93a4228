/* launch_argv.h: the launcher's command line for one rank count, as a pure function of its
 * inputs (the spec, the launcher options, the hosts, the environment values that matter), so
 * `pdbx run --dry-run`, the supervisor that execs it and the unit tests all build the same
 * argv. Nothing here reads the environment, runs a program or touches a file, except
 * pdbx_launch_hostfile_read (reads the file it is given) and pdbx_launch_env_probe (the one
 * place that reads getenv and runs `srun --mpi=list`).
 *
 * The launchers (docs/launch.md):
 *   local   mpirun on this machine only; nodes > 1 is refused unless simulate_nodes (then all
 *           ranks share this machine, --oversubscribe where cores are short, and the run says
 *           "simulated N nodes").
 *   mpirun  mpirun over the hosts of --hosts a:8,b:8 or --hostfile FILE: ranks_per_node =
 *           gpus_per_node ranks on each host in turn (--map-by ppr:N:node), never
 *           --oversubscribe; PDBX_* and LD_LIBRARY_PATH exported to remote ranks with -x.
 *   srun    srun --nodes K --ntasks N --ntasks-per-node R --mpi=P with P from `srun --mpi=list`
 *           (pmix, else pmi2, else none with a warning); inside an allocation its nodes.
 *   auto    srun when SLURM_JOB_ID is set, mpirun when hosts are given, else local.
 * launcher_args ("--mca btl tcp,self") are split as a shell splits words (spaces separate;
 * '...' keeps everything literally; "..." keeps spaces, backslash escapes " \ $ `; a backslash
 * outside quotes escapes the next character), no shell involved, and go right after the
 * launcher's name.
 */
#ifndef PDBX_LAUNCH_ARGV_H
#define PDBX_LAUNCH_ARGV_H

#include <stddef.h>

#include "engine/plan/plan.h"

#define PDBX_LAUNCH_MAX_HOSTS 256
#define PDBX_LAUNCH_HOST_MAX 64
#define PDBX_LAUNCH_MAX_ARGS 128
#define PDBX_LAUNCH_MAX_ENV 64
#define PDBX_LAUNCH_ARGS_MAX 1024      /* bytes of --launcher-args */

typedef struct {
    char name[PDBX_LAUNCH_HOST_MAX];
    int slots;
} pdbx_launch_host;

/* What the user chose beyond the spec (CLI options, the explorer's form). */
typedef struct {
    pdbx_launcher_kind kind;          /* overrides spec->launcher when not AUTO */
    int simulate_nodes;               /* local: all nodes on this machine, recorded as such */
    char hostfile[PDBX_PATH_MAX];     /* absolute path, "" none */
    pdbx_launch_host hosts[PDBX_LAUNCH_MAX_HOSTS];   /* --hosts, or read from the hostfile */
    int nhosts;
    char launcher_args[PDBX_LAUNCH_ARGS_MAX];
} pdbx_launch_opts;

/* The environment values the command line depends on (pdbx_launch_env_probe fills them; tests
 * give them). */
typedef struct {
    const char *slurm_job_id;         /* NULL/"" outside an allocation */
    int slurm_nodes;                  /* SLURM_JOB_NUM_NODES, 0 unknown */
    const char *srun_mpi_list;        /* the output of `srun --mpi=list`, NULL: not available */
    int is_root;                      /* mpirun needs --allow-run-as-root */
    long cpus;                        /* this machine's cores (local: --oversubscribe) */
    const char *mpirun, *srun;        /* the programs' names or paths */
    const char *env_names[PDBX_LAUNCH_MAX_ENV];   /* variables to export to remote ranks */
    int nenv;
} pdbx_launch_env;

/* Where the engine finds its inputs: --spec, then --store and --run-id (each left out when
 * NULL), then the nextra words of extra (a foreground mode's own arguments: `pdbx validate`). */
typedef struct {
    const char *engine, *spec_path, *store_dir, *run_id;
    char *const *extra;
    int nextra;
} pdbx_launch_target;

typedef struct {
    pdbx_launcher_kind kind;          /* resolved: LOCAL, MPIRUN or SRUN */
    int argc;
    char *argv[PDBX_LAUNCH_MAX_ARGS + 1];   /* into buf, NULL-terminated */
    char buf[8192];
    char mode[64];                    /* what the run records: "local", "mpirun on 2 hosts",
                                         "srun (pmix) on 2 nodes", "simulated 2 nodes" */
    char warning[256];                /* "" or one line for the user (srun without a plugin) */
} pdbx_launch_cmd;

/* The launcher that runs spec under opts and env: opts->kind, else spec->launcher, else auto's
 * rule. */
pdbx_launcher_kind pdbx_launch_resolve(const pdbx_spec *spec, const pdbx_launch_opts *opts,
                                       const pdbx_launch_env *env);
/* Checks that the launch can run every config of spec: local with nodes > 1 needs hosts, srun
 * or simulate_nodes; mpirun needs hosts with enough slots for the largest rank count. 0, or
 * -1 with one line (exit 2 for the CLI). */
int pdbx_launch_plan_check(const pdbx_spec *spec, const pdbx_launch_opts *opts,
                           const pdbx_launch_env *env, char *err, size_t errlen);
/* The command line for np ranks. 0, or -1 with one line. */
int pdbx_launch_argv(const pdbx_spec *spec, const pdbx_launch_opts *opts,
                     const pdbx_launch_env *env, const pdbx_launch_target *t, int np,
                     pdbx_launch_cmd *out, char *err, size_t errlen);
/* The MPI plugin to use from `srun --mpi=list` output: "pmix" (or its only versioned form
 * "pmix_vN"), else "pmi2", else "none". */
const char *pdbx_launch_srun_plugin(const char *mpi_list, char *buf, size_t len);

/* "a:8,b:8" (a host without ":N" has gpus_per_node slots; default_slots) into opts->hosts. 0,
 * or -1 with one line naming the bad entry. */
int pdbx_launch_hosts_parse(const char *text, int default_slots, pdbx_launch_opts *opts,
                            char *err, size_t errlen);
/* Reads an OpenMPI hostfile ("name [slots=N] ..." per line, # comments) into opts->hosts and
 * keeps its absolute path in opts->hostfile. 0, or -1 naming the file, line and entry. */
int pdbx_launch_hostfile_read(const char *path, int default_slots, pdbx_launch_opts *opts,
                              char *err, size_t errlen);
/* Splits text into words as a shell would (see above); the words go into buf. Returns the
 * word count, or -1 with one line (an unterminated quote, too many words). */
int pdbx_launch_split_words(const char *text, char *buf, size_t buflen, char **words, int max,
                            char *err, size_t errlen);
/* argv as one line a shell reads back into the same words ('...' where needed). */
void pdbx_launch_quote(char *const *argv, int argc, char *out, size_t len);

/* The batch script of `pdbx run --sbatch` (docs/launch.md): #SBATCH lines (--job-name, --nodes,
 * --ntasks-per-node, --gpus-per-node when the sweep uses GPUs, --time, --output on the store's
 * logs/<id>.log), the spec written from spec_json by a quoted here-document, then one srun
 * line per rank count (ranks[0..nranks)), each with PDBX_LAUNCH_MODE/PDBX_LAUNCH_COMMAND so
 * the run records it. The batch shell is the run's launcher (PDBX_LAUNCHER_PID=$$): a SIGTERM
 * to it (pdbx cancel on that node, scancel --batch --signal=TERM) is forwarded to srun as
 * SIGUSR1 and the engine ends the run cancelled. Absolute paths only (t's). Returns a malloc'ed
 * text, or NULL with err. */
char *pdbx_launch_sbatch_script(const pdbx_spec *spec, const pdbx_launch_env *env,
                                const pdbx_launch_target *t, const int *ranks, int nranks,
                                const char *time_limit, const char *log_path,
                                const char *spec_json, char *err, size_t errlen);
/* A Slurm --time value: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (digits). 1 when it is one. */
int pdbx_launch_valid_time(const char *t);

/* Fills env from this process's environment (getenv) and, when srun is needed, `srun
 * --mpi=list` (kept in mpi_list, which must outlive env). */
void pdbx_launch_env_probe(pdbx_launch_env *env, const pdbx_spec *spec,
                           const pdbx_launch_opts *opts, char *mpi_list, size_t len);

#endif
