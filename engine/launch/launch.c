/* launch.c: starting and cancelling a sweep in the background (launch.h).
 *
 * Process layout of one sweep:
 *   caller (pdbx run / the explorer)
 *     `- (intermediate, exits at once: the supervisor is adopted by init, never a zombie)
 *          `- supervisor: setsid() -> its pid is the session and process group id
 *               `- mpirun (own process group)  `- pdbx-engine ranks
 * Cancel sends SIGTERM to the supervisor's process group; what the supervisor does then, and
 * how it records a sweep that ended without run_end, is in launch_supervisor.c.
 */
#include "engine/launch/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/launch/launch_check.h"
#include "engine/launch/launch_supervisor.h"
#include "store/layout.h"
#include "store/stop_request.h"
#include "store/util/clock.h"
#include "store/util/err.h"
#include "store/util/fs.h"
#include "store/util/proc.h"
#include "store/util/text.h"

#define START_WAIT_S 120

const char *pdbx_engine_path(void)
{
    static char path[PDBX_PATH_MAX];
    const char *env = getenv("PDBX_ENGINE");
    char dir[PDBX_PATH_MAX];
    if (env && *env)
        pdbx_strcopy(path, sizeof path, env);
    else if (pdbx_exe_dir(dir, sizeof dir) != 0)
        pdbx_strcopy(path, sizeof path, "pdbx-engine");
    else
        snprintf(path, sizeof path, "%.*s/pdbx-engine", (int)(sizeof path - 16), dir);
    return path;
}

/* ---- a foreground launch ---------------------------------------------------------------------- */
static volatile sig_atomic_t fg_signal;

static void fg_on_signal(int sig)
{
    fg_signal = sig;
}

int pdbx_launch_foreground(const pdbx_spec *spec, const pdbx_launch_opts *opts,
                           const pdbx_launch_target *t, int np, int *status, int *usage,
                           char *err, size_t errlen)
{
    pdbx_launch_opts none;
    memset(&none, 0, sizeof none);
    if (!opts)
        opts = &none;
    pdbx_launch_env env;
    char mpi_list[4096];
    pdbx_launch_env_probe(&env, spec, opts, mpi_list, sizeof mpi_list);
    if (pdbx_launch_plan_check(spec, opts, &env, err, errlen) != 0) {
        if (usage)
            *usage = 1;
        return -1;
    }
    pdbx_launch_target tt = *t;
    if (!tt.engine)
        tt.engine = pdbx_engine_path();
    pdbx_launch_cmd *cmd = malloc(sizeof *cmd);
    if (!cmd)
        return pdbx_fail(err, errlen, "out of memory");
    if (pdbx_launch_argv(spec, opts, &env, &tt, np, cmd, err, errlen) != 0) {
        free(cmd);
        return -1;
    }
    char line[4096];
    pdbx_launch_quote(cmd->argv, cmd->argc, line, sizeof line);
    setenv("PDBX_LAUNCH_COMMAND", line, 1);
    setenv("PDBX_LAUNCH_MODE", cmd->mode, 1);
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fg_on_signal;
    sigemptyset(&sa.sa_mask);
    fg_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        pdbx_errf(err, errlen, "cannot start %s: %s", cmd->argv[0], strerror(e));
        free(cmd);
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        return -1;
    }
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        setpgid(0, 0);          /* the terminal's Ctrl-C reaches us, and we forward it once */
        dup2(STDERR_FILENO, STDOUT_FILENO);   /* the caller's stdout is for its own result */
        execvp(cmd->argv[0], cmd->argv);
        fprintf(stderr, "pdbx: could not start %s: %s\n", cmd->argv[0], strerror(errno));
        _exit(127);
    }
    free(cmd);
    int ws = 0, forwarded = 0;
    for (;;) {
        pid_t r = waitpid(pid, &ws, 0);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            ws = 0;
            break;
        }
        if (fg_signal && !forwarded) {
            kill(pid, SIGTERM);     /* mpirun forwards it to the ranks and ends */
            forwarded = 1;
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : 1;
    if (forwarded && *status == 0)
        *status = 128 + (int)fg_signal;
    return 0;
}

/* ---- starting ------------------------------------------------------------------------------ */

/* The distinct rank counts (tp*pp*dp) of the spec's configs, in config order: one mpirun each. */
static void plan_rank_counts(const pdbx_spec *spec, pdbx_sup_job *job)
{
    for (int c = 0; c < spec->nconfigs; c++) {
        int n = spec->configs[c].tp * spec->configs[c].pp * spec->configs[c].dp, seen = 0;
        for (int k = 0; k < job->nsizes; k++)
            seen |= job->sizes[k] == n;
        if (!seen)
            job->sizes[job->nsizes++] = n;
    }
}

static int write_spec(const pdbx_spec *spec, const char *path, char *err, size_t errlen)
{
    cJSON *js = pdbx_spec_to_json(spec);
    char *text = js ? cJSON_Print(js) : NULL;
    cJSON_Delete(js);
    if (!text)
        return pdbx_fail(err, errlen, "out of memory writing the spec");
    int rc = pdbx_durable_write(path, text, strlen(text), err, errlen);
    free(text);
    return rc;
}

/* Registers the run: a fresh id in the store, its run-file path, and the log and spec paths of
 * store/layout.h with the validated spec written. */
static int register_run(const pdbx_spec *spec, const char *store_dir, pdbx_sup_job *job,
                        char *err, size_t errlen)
{
    pdbx_store *st = NULL;
    if (pdbx_store_open(store_dir, 1, &st, err, errlen) != 0)
        return -1;
    pdbx_strcopy(job->store_dir, sizeof job->store_dir, pdbx_store_dir(st));
    pdbx_store_new_id(job->id);
    pdbx_store_run_path(st, job->id, job->run_path, sizeof job->run_path);
    pdbx_store_close(st);
    char logdir[PDBX_PATH_MAX];
    if (pdbx_layout_path(PDBX_PATH_LOGS, job->store_dir, NULL, logdir, sizeof logdir) != 0 ||
        pdbx_layout_path(PDBX_PATH_SPEC, job->store_dir, job->id, job->spec_path,
                         sizeof job->spec_path) != 0 ||
        pdbx_layout_path(PDBX_PATH_LOG, job->store_dir, job->id, job->log_path,
                         sizeof job->log_path) != 0)
        return pdbx_fail(err, errlen, "store path too long: %s", job->store_dir);
    if (pdbx_mkdirs(logdir, err, errlen) != 0)
        return -1;
    return write_spec(spec, job->spec_path, err, errlen);
}

/* The launcher part of the job: options kept, the plan checked against them (hosts, slots,
 * nodes), srun's MPI plugins asked once. 0, or -1 with *usage = 1. */
static int prepare_launcher(const pdbx_spec *spec, const pdbx_launch_opts *opts, pdbx_sup_job *job,
                            int *usage, char *err, size_t errlen)
{
    if (opts)
        job->opts = *opts;
    pdbx_launch_env env;
    pdbx_launch_env_probe(&env, spec, &job->opts, job->srun_mpi_list, sizeof job->srun_mpi_list);
    job->have_mpi_list = env.srun_mpi_list != NULL;
    if (pdbx_launch_plan_check(spec, &job->opts, &env, err, errlen) != 0) {
        if (usage)
            *usage = 1;
        return -1;
    }
    return 0;
}

/* The job for spec: validated, engine found, launcher checked, run registered (register 0:
 * the id and paths only, nothing created: --dry-run). */
static int prepare_job(const pdbx_spec *spec, const pdbx_launch_opts *opts, const char *store_dir,
                       pdbx_sup_job *job, int do_register, int *usage, char *err, size_t errlen)
{
    memset(job, 0, sizeof *job);
    if (pdbx_spec_validate(spec, err, errlen) != 0) {
        if (usage)
            *usage = 1;
        return -1;
    }
    if (prepare_launcher(spec, opts, job, usage, err, errlen) != 0)
        return -1;
    /* the explorer's form runs the same check: what it calls valid starts here */
    if (do_register && pdbx_launch_check(spec, NULL, err, errlen) != 0)
        return -1;
    plan_rank_counts(spec, job);
    pdbx_strcopy(job->engine, sizeof job->engine, pdbx_engine_path());
    job->spec = *spec;
    if (do_register)
        return register_run(spec, store_dir, job, err, errlen);
    pdbx_strcopy(job->store_dir, sizeof job->store_dir, store_dir);
    pdbx_store_new_id(job->id);
    if (pdbx_layout_path(PDBX_PATH_SPEC, store_dir, job->id, job->spec_path,
                         sizeof job->spec_path) != 0)
        return pdbx_fail(err, errlen, "store path too long: %s", store_dir);
    return 0;
}

int pdbx_launch_dry_run(const pdbx_spec *spec, const pdbx_launch_opts *opts,
                        const char *store_dir, FILE *out, int *usage, char *err, size_t errlen)
{
    pdbx_sup_job *job = malloc(sizeof *job);
    pdbx_launch_cmd *cmd = malloc(sizeof *cmd);
    int rc = job && cmd ? 0 : pdbx_fail(err, errlen, "out of memory");
    if (rc == 0)
        rc = prepare_job(spec, opts, store_dir, job, 0, usage, err, errlen);
    pdbx_launch_env env;
    if (rc == 0) {
        pdbx_sup_job_env(job, spec, &job->opts, &env);
    }
    pdbx_launch_target t = { job ? job->engine : NULL, job ? job->spec_path : NULL, store_dir,
                             job ? job->id : NULL, NULL, 0 };
    for (int i = 0; rc == 0 && i < job->nsizes; i++) {
        char line[4096];
        rc = pdbx_launch_argv(spec, &job->opts, &env, &t, job->sizes[i], cmd, err, errlen);
        if (rc == 0) {
            pdbx_launch_quote(cmd->argv, cmd->argc, line, sizeof line);
            fprintf(out, "%s\n", line);
            if (cmd->warning[0] && i == 0)
                fprintf(stderr, "pdbx run: warning: %s\n", cmd->warning);
        }
    }
    free(cmd);
    free(job);
    return rc;
}

/* In the grandchild: a session of its own, stdin from /dev/null, stdout and stderr on the log,
 * no inherited descriptors; runs the sweep and exits. */
static void become_supervisor(const pdbx_sup_job *job)
{
    setsid();
    int in = open("/dev/null", O_RDONLY);
    int log = open(job->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in >= 0)
        dup2(in, 0);
    if (log >= 0) {
        dup2(log, 1);
        dup2(log, 2);
    }
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    pdbx_sup_run(job);
    _exit(0);
}

/* Forks the supervisor through an intermediate that exits at once (so init adopts it); the
 * intermediate passes the supervisor's pid back through a pipe. Returns that pid or -1. */
static pid_t fork_supervisor(const pdbx_sup_job *job, char *err, size_t errlen)
{
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return pdbx_fail(err, errlen, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t mid = fork();
    if (mid < 0) {
        pdbx_errf(err, errlen, "fork: %s", strerror(errno));
        close(pipefd[0]);
        close(pipefd[1]);
        return -1;
    }
    if (mid == 0) {
        close(pipefd[0]);
        pid_t sup = fork();
        if (sup == 0) {
            close(pipefd[1]);
            become_supervisor(job);
        }
        ssize_t wr = write(pipefd[1], &sup, sizeof sup);
        (void)wr;
        _exit(sup > 0 ? 0 : 1);
    }
    close(pipefd[1]);
    pid_t sup = -1;
    ssize_t rd;
    do
        rd = read(pipefd[0], &sup, sizeof sup);
    while (rd < 0 && errno == EINTR);
    close(pipefd[0]);
    int st_mid = 0;
    while (waitpid(mid, &st_mid, 0) < 0 && errno == EINTR)
        ;
    if (rd != (ssize_t)sizeof sup || sup <= 0)
        return pdbx_fail(err, errlen, "could not start the sweep supervisor");
    return sup;
}

/* Returns once run_start is on disk, or fails with the engine's message. */
static int wait_for_start(const pdbx_sup_job *job, pid_t sup, char *err, size_t errlen)
{
    for (int waited = 0; waited < START_WAIT_S * 20; waited++) {
        if (pdbx_sup_run_starts(job->run_path) > 0)
            return 0;
        if (!pdbx_process_alive(sup)) {
            if (pdbx_sup_run_starts(job->run_path) > 0)
                return 0;     /* a failed start is recorded as a failed run */
            char tail[512];
            pdbx_sup_log_tail(job->log_path, tail, sizeof tail);
            return pdbx_fail(err, errlen, "the sweep did not start: %s (log: %s)",
                             tail[0] ? tail : "no message", job->log_path);
        }
        pdbx_sleep_ms(50);
    }
    return pdbx_fail(err, errlen, "the sweep did not write run_start within %d s (log: %s)",
                     START_WAIT_S, job->log_path);
}

/* The batch job's launch options (srun on its allocation) and job: the store (created now: the
 * job's output goes to its logs/), the run id and the log path. */
static int sbatch_job(const pdbx_spec *spec, const pdbx_launch_opts *opts, const char *store_dir,
                      pdbx_launch_opts *o, pdbx_sup_job *job, int *usage, char *err, size_t errlen)
{
    if (opts && (opts->nhosts > 0 || opts->simulate_nodes ||
                 (opts->kind != PDBX_LAUNCHER_AUTO && opts->kind != PDBX_LAUNCHER_SRUN))) {
        *usage = 1;
        return pdbx_fail(err, errlen, "sbatch: the batch job runs srun on its allocation: no hosts, "
                         "--simulate-nodes or other launcher");
    }
    if (opts)
        *o = *opts;
    o->kind = PDBX_LAUNCHER_SRUN;
    pdbx_store *st = NULL;
    if (pdbx_store_open(store_dir, 1, &st, err, errlen) != 0)
        return -1;
    char abs[PDBX_PATH_MAX];
    pdbx_strcopy(abs, sizeof abs, pdbx_store_dir(st));
    pdbx_store_close(st);
    char *real = realpath(abs, NULL);
    if (real) {
        pdbx_strcopy(abs, sizeof abs, real);
        free(real);
    }
    if (prepare_job(spec, o, abs, job, 0, usage, err, errlen) != 0)
        return -1;
    char logdir[PDBX_PATH_MAX];
    if (pdbx_layout_path(PDBX_PATH_LOGS, job->store_dir, NULL, logdir, sizeof logdir) != 0 ||
        pdbx_layout_path(PDBX_PATH_LOG, job->store_dir, job->id, job->log_path,
                         sizeof job->log_path) != 0)
        return pdbx_fail(err, errlen, "store path too long: %s", job->store_dir);
    return pdbx_mkdirs(logdir, err, errlen);
}

int pdbx_launch_sbatch(const pdbx_spec *spec, const pdbx_launch_opts *opts, const char *store_dir,
                       const char *time_limit, const char *script_path,
                       char run_id[PDBX_RUN_ID_MAX], char abs_script[PDBX_PATH_MAX], int *usage,
                       char *err, size_t errlen)
{
    pdbx_launch_opts *o = calloc(1, sizeof *o);
    pdbx_sup_job *job = malloc(sizeof *job);
    char *script = NULL, *json_text = NULL;
    int rc = o && job ? 0 : pdbx_fail(err, errlen, "out of memory");
    if (rc == 0)
        rc = sbatch_job(spec, opts, store_dir, o, job, usage, err, errlen);
    if (rc == 0) {
        cJSON *js = pdbx_spec_to_json(spec);
        json_text = js ? cJSON_Print(js) : NULL;
        cJSON_Delete(js);
        if (!json_text)
            rc = pdbx_fail(err, errlen, "out of memory writing the spec");
    }
    if (rc == 0) {
        pdbx_launch_env env;
        pdbx_sup_job_env(job, spec, o, &env);
        env.slurm_job_id = NULL;             /* the job's, not this shell's allocation */
        env.slurm_nodes = 0;
        pdbx_launch_target t = { job->engine, job->spec_path, job->store_dir, job->id, NULL, 0 };
        script = pdbx_launch_sbatch_script(spec, &env, &t, job->sizes, job->nsizes,
                                           time_limit ? time_limit : "1:00:00", job->log_path,
                                           json_text, err, errlen);
        if (!script) {
            rc = -1;
            if (strncmp(err, "time:", 5) == 0)
                *usage = 1;
        }
    }
    if (rc == 0)
        rc = pdbx_durable_write(script_path, script, strlen(script), err, errlen);
    if (rc == 0) {
        chmod(script_path, 0755);
        char *real = realpath(script_path, NULL);
        pdbx_strcopy(abs_script, PDBX_PATH_MAX, real ? real : script_path);
        free(real);
        pdbx_strcopy(run_id, PDBX_RUN_ID_MAX, job->id);
        char plugin[32];
        pdbx_launch_srun_plugin(job->have_mpi_list ? job->srun_mpi_list : NULL, plugin, sizeof plugin);
        if (strcmp(plugin, "none") == 0)    /* what --dry-run says too: the user decides */
            fprintf(stderr, "pdbx run: warning: srun offers neither pmix nor pmi2 here (srun "
                    "--mpi=list%s): the script uses --mpi=none; edit it or write it where Slurm "
                    "answers\n", job->have_mpi_list ? "" : " failed");
    }
    free(script);
    free(json_text);
    free(job);
    free(o);
    return rc;
}

int pdbx_launch_start(const pdbx_spec *spec, const char *store_dir, pdbx_launch *out,
                      char *err, size_t errlen)
{
    return pdbx_launch_start_ex(spec, NULL, store_dir, out, NULL, err, errlen);
}

int pdbx_launch_start_ex(const pdbx_spec *spec, const pdbx_launch_opts *opts,
                         const char *store_dir, pdbx_launch *out, int *usage, char *err,
                         size_t errlen)
{
    memset(out, 0, sizeof *out);
    pdbx_sup_job *job = malloc(sizeof *job);     /* a spec is large: not on the stack */
    if (!job)
        return pdbx_fail(err, errlen, "out of memory starting the sweep");
    int rc = prepare_job(spec, opts, store_dir, job, 1, usage, err, errlen);
    if (rc == 0)
        pdbx_strcopy(out->log_path, sizeof out->log_path, job->log_path);
    pid_t sup = rc == 0 ? fork_supervisor(job, err, errlen) : -1;
    if (sup > 0) {
        out->supervisor = sup;
        pdbx_strcopy(out->run_id, sizeof out->run_id, job->id);
        rc = wait_for_start(job, sup, err, errlen);
    } else {
        rc = -1;
    }
    free(job);
    return rc;
}

/* ---- a sweep already running ------------------------------------------------------------ */
int pdbx_launch_find_running(const pdbx_spec *spec, const char *store_dir,
                             char running_id[PDBX_RUN_ID_MAX], char *what, size_t whatlen,
                             char *err, size_t errlen)
{
    pdbx_store *st = NULL;
    pdbx_run_summary *runs = NULL;
    size_t n = 0;
    char host[256];
    int found = 0;
    pdbx_hostname(host, sizeof host, "");
    running_id[0] = '\0';
    if (pdbx_store_open(store_dir, 0, &st, err, errlen) != 0)
        return access(store_dir, F_OK) == 0 ? -1 : 0;   /* no store yet: nothing runs in it */
    if (pdbx_store_list(st, &runs, &n, err, errlen) != 0) {
        pdbx_store_close(st);
        return -1;
    }
    /* "auto" becomes cuda or cpu when the engine starts: it may share either */
    const char *backend = pdbx_backend_name(spec->backend);
    int any_backend = strcmp(backend, "auto") == 0;
    for (size_t i = 0; i < n && !found; i++) {
        if (runs[i].status != PDBX_RUN_RUNNING ||
            (!any_backend && strcmp(runs[i].backend, backend) != 0))
            continue;
        pdbx_run run;
        char lerr[256];
        if (pdbx_run_load(st, runs[i].id, &run, lerr, sizeof lerr) != 0)
            continue;
        if (run.status == PDBX_RUN_RUNNING && run.host[0] && strcmp(run.host, host) == 0) {
            found = 1;
            pdbx_strcopy(running_id, PDBX_RUN_ID_MAX, run.id);
            snprintf(what, whatlen, "%s, %s backend, %zu of %zu points done", run.model.name,
                     run.backend, pdbx_run_points_done(&run), run.npoints);
        }
        pdbx_run_free(&run);
    }
    free(runs);
    pdbx_store_close(st);
    return found;
}

/* ---- cancelling ------------------------------------------------------------------------------ */
/* 1 when pid is the launcher of run_id in store_dir: a supervisor started from this store
 * (it wrote logs/<id>.log), or rank 0 of a `pdbx-engine --run-id <id>` launched directly. An
 * imported copy of a running sweep carries the original's pid: signalling it would cancel
 * another run. */
static int launched_here(const char *store_dir, const char *run_id, long pid)
{
    char path[PDBX_PATH_MAX];
    struct stat sb;
    if (pdbx_layout_path(PDBX_PATH_LOG, store_dir, run_id, path, sizeof path) == 0 &&
        stat(path, &sb) == 0)
        return 1;
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    char args[8192];
    ssize_t n = read(fd, args, sizeof args - 1);
    close(fd);
    if (n <= 0)
        return 0;
    args[n] = '\0';
    for (const char *a = args; a < args + n; a += strlen(a) + 1)
        if (strcmp(a, "--run-id") == 0 && a + strlen(a) + 1 < args + n
            && strcmp(a + strlen(a) + 1, run_id) == 0)
            return 1;
    return 0;
}

/* One line on who asks, for run_end: "pdbx cancel (pid 812)". */
static void requester(pdbx_end_cause cause, char *buf, size_t len)
{
    snprintf(buf, len, "%s (pid %ld)", pdbx_end_cause_text(cause), (long)getpid());
}

int pdbx_launch_cancel(pdbx_store *st, const char *run_id, pdbx_end_cause cause, char *err,
                       size_t errlen)
{
    pdbx_run run;
    if (pdbx_run_load(st, run_id, &run, err, errlen) != 0)
        return -1;
    int rc = -1;
    char host[256], who[PDBX_STOP_DETAIL_MAX];
    pdbx_hostname(host, sizeof host, "");
    if (run.status != PDBX_RUN_RUNNING) {
        snprintf(err, errlen, "run %s is not running (%s%s%s): nothing signalled", run.id,
                 pdbx_run_status_name(run.status), run.end_reason[0] ? ": " : "", run.end_reason);
    } else if (run.host[0] && strcmp(run.host, host) != 0 && strstr(run.launcher, "sbatch job ")) {
        /* a batch job: Slurm reaches its nodes from here; its shell forwards the TERM */
        snprintf(err, errlen, "run %s runs in a Slurm batch job on %s: cancel it with scancel "
                 "--batch --signal=TERM %s", run.id, run.host,
                 strstr(run.launcher, "sbatch job ") + strlen("sbatch job "));
    } else if (run.host[0] && strcmp(run.host, host) != 0) {
        snprintf(err, errlen, "run %s runs on host %s, not here (%s): cancel it there", run.id,
                 run.host, host);
    } else if (run.pid <= 1) {
        snprintf(err, errlen, "run %s has no launcher pid", run.id);
    } else if (!pdbx_process_is(run.pid, run.pid_start, run.boot_id)) {
        /* the liveness rule read it as running a moment ago: it just ended, or the heartbeat
         * rule of a run without host decided; either way pid is not its launcher */
        snprintf(err, errlen, "run %s: its launcher (pid %ld on %s) is gone; pid %ld is another "
                 "process now: nothing signalled", run.id, run.pid, run.host, run.pid);
    } else if (!launched_here(pdbx_store_dir(st), run_id, run.pid)) {
        snprintf(err, errlen, "run %s was not launched from this store (an imported copy?): its "
                 "launcher pid %ld is not its sweep; cancel the sweep where it was started",
                 run_id, run.pid);
    } else {
        requester(cause, who, sizeof who);
        char werr[256];
        /* the request goes first: the supervisor reads it when the signal arrives */
        if (pdbx_stop_request_write(pdbx_store_dir(st), run.id, cause, who, werr, sizeof werr) != 0)
            fprintf(stderr, "pdbx: %s (the run end will name a signal, not %s)\n", werr,
                    pdbx_end_cause_text(cause));
        /* the supervisor leads its own group (mpirun has another); a batch job's shell does
         * not: srun shares its group and must not get the TERM, which would kill the step
         * instead of the shell forwarding it as SIGUSR1 to every rank */
        int batch = strstr(run.launcher, "sbatch job ") != NULL;
        if ((batch || kill(-(pid_t)run.pid, SIGTERM) != 0) && kill((pid_t)run.pid, SIGTERM) != 0)
            snprintf(err, errlen, "cannot signal pid %ld of run %s: %s", run.pid, run.id,
                     strerror(errno));
        else
            rc = 0;
    }
    pdbx_run_free(&run);
    return rc;
}
