/* launch_supervisor.c: the supervisor of a launched sweep (launch_supervisor.h).
 *
 * mpirun runs in a process group of its own: mpirun answers SIGTERM by killing its ranks after
 * one second, which would lose the measurement in flight and the run_end. A cancel (SIGTERM to
 * the supervisor's group) is instead forwarded as SIGUSR1, which mpirun passes to every rank,
 * and the engine ends the run `cancelled`. If the engine has not ended within CANCEL_GRACE_S
 * the supervisor escalates (SIGTERM, then SIGKILL) and writes run_end itself.
 *
 * Who stopped the sweep: pdbx cancel, the explorer and Ctrl-C write the stop request
 * (store/stop_request.h) before their SIGTERM; a SIGTERM or SIGINT that comes without one is a
 * foreign signal, and the supervisor writes the request itself naming the sender's pid, so the
 * engine's run_end says who. mpirun gets SIGUSR2 from the kernel if the supervisor dies
 * (PR_SET_PDEATHSIG) and forwards it: the engine ends the run failed, "supervisor lost".
 *
 * Shared memory: OpenMPI's shared-memory transport backs its segments with files in /dev/shm
 * (vader_segment.*), which stay behind when mpirun is killed. Each mpirun gets a directory of
 * its own there (PDBX_SHM_DIR_PREFIX + the run id) and the supervisor removes it after mpirun
 * ends, whatever the ending; a sweep killed whole leaves it to the store's next launch.
 */
#include "engine/launch/launch_supervisor.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/plan/plan_event.h"
#include "store/events.h"
#include "store/layout.h"
#include "store/stop_request.h"
#include "store/version.h"
#include "store/util/clock.h"
#include "store/util/err.h"
#include "store/util/proc.h"
#include "store/util/text.h"

#define CANCEL_GRACE_S 60

/* ---- run-file and log queries ------------------------------------------------------------ */
typedef struct {
    int starts, has_end;
} file_state;

static int note_event(const cJSON *ev, void *ctx)
{
    file_state *fs = ctx;
    pdbx_event_type t = pdbx_event_type_of(ev);
    if (t == PDBX_EV_RUN_END)
        fs->has_end = 1;
    if (t == PDBX_EV_RUN_START || t == PDBX_EV_LAUNCH)
        fs->starts++;
    return 0;
}

static file_state read_state(const char *path)
{
    file_state fs = { 0, 0 };
    pdbx_scan_result res;
    char err[256];
    if (access(path, F_OK) == 0)
        pdbx_scan_file(path, 0, note_event, &fs, &res, err, sizeof err);
    return fs;
}

int pdbx_sup_run_starts(const char *path)
{
    return read_state(path).starts;
}

void pdbx_sup_log_tail(const char *path, char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[512], last[512] = "";
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        /* the engine's and the supervisor's own messages are the useful ones; mpirun's
         * banners, the launch command and the closing summary are not */
        if ((strncmp(line, "pdbx", 4) == 0 && !strstr(line, ": launching ") &&
             !strstr(line, "pdbx supervisor: warning: ") &&
             !strstr(line, "cannot record the failed start")) ||
            strncmp(line, "srun: fatal: ", 13) == 0)   /* why srun could not start at all */
            pdbx_strcopy(last, sizeof last, line);
    }
    fclose(f);
    pdbx_strcopy(out, len, last);
}

/* ---- writing run ends -------------------------------------------------------------------- */
/* Appends ev (and frees it); 0 or -1 with err. */
static int append_event(pdbx_run_writer *w, cJSON *ev, char *err, size_t errlen)
{
    /* the supervisor writes a run's start and end only: the end may use the writer's reserve */
    int last = ev && pdbx_event_type_of(ev) == PDBX_EV_RUN_END;
    int rc = !ev ? pdbx_fail(err, errlen, "out of memory building an event")
             : last ? pdbx_run_writer_append_last(w, ev, err, errlen)
                    : pdbx_run_writer_append(w, ev, err, errlen);
    cJSON_Delete(ev);
    return rc;
}

static void close_run(pdbx_store *st, pdbx_run_writer *w)
{
    char err[256];
    if (w)
        pdbx_run_writer_close(w, err, sizeof err);
    if (st)
        pdbx_store_close(st);
}

static void append_end(const char *store_dir, const char *id, pdbx_run_status status,
                       const char *reason, pdbx_end_cause cause)
{
    pdbx_store *st = NULL;
    pdbx_run_writer *w = NULL;
    char err[512];
    pdbx_ev_run_end re = { .status = status, .reason = reason, .elapsed_s = NAN,
                           .by = pdbx_event_by_supervisor, .cause = cause, .in_flight_point = -1 };
    /* only a run the engine created gets a run_end: a sweep that never started has no run */
    if (pdbx_store_open(store_dir, 1, &st, err, sizeof err) != 0 ||
        pdbx_run_writer_open(st, id, &w, err, sizeof err) != 0 ||
        append_event(w, pdbx_event_run_end_ex(&re), err, sizeof err) != 0)
        /* the store shows this line for a run without run_end (store_run.c) */
        fprintf(stderr, "pdbx supervisor: run_end not written: %s: %s (%s)\n",
                pdbx_run_status_name(status), reason, err);
    else
        fprintf(stderr, "pdbx supervisor: run_end %s: %s\n", pdbx_run_status_name(status), reason);
    close_run(st, w);
}

/* run_start of a run the engine never created: from the plan, with this process as launcher. */
static cJSON *planned_start_event(const pdbx_sup_job *job)
{
    pdbx_ev_launcher who;
    memset(&who, 0, sizeof who);
    pdbx_strcopy(who.id, sizeof who.id, job->id);
    pdbx_strcopy(who.pdbx_version, sizeof who.pdbx_version, pdbx_version());
    pdbx_strcopy(who.git_rev, sizeof who.git_rev, pdbx_git_rev());
    pdbx_hostname(who.host, sizeof who.host, "unknown");
    who.pid = (long)getpid();
    unsigned long long ticks = 0;
    who.pid_start = pdbx_proc_start_ticks(who.pid, &ticks) == 0 ? (double)ticks : 0;
    pdbx_boot_id(who.boot_id, sizeof who.boot_id);
    char err[256];
    pdbx_plan_point *pts = NULL;
    size_t npts = 0;
    if (pdbx_plan_expand(&job->spec, &pts, &npts, err, sizeof err) != 0)
        npts = 0;   /* the spec was valid when launched; record the run even without points */
    cJSON *ev = pdbx_plan_run_start(&who, NULL, NULL, &job->spec, pts, npts);
    free(pts);
    return ev;
}

/* The engine never created the run (mpirun missing, the backend refused the spec ...): record
 * the attempt as a run of its own, run_start from the plan and run_end failed with the reason,
 * so every launch shows up in the store with why it failed. */
static void record_failed_start(const pdbx_sup_job *job, const char *fallback)
{
    char reason[512], err[512];
    fflush(stderr);
    pdbx_sup_log_tail(job->log_path, reason, sizeof reason);
    const char *own = "pdbx supervisor: ";
    if (strncmp(reason, own, strlen(own)) == 0)
        memmove(reason, reason + strlen(own), strlen(reason + strlen(own)) + 1);
    if (!reason[0])
        pdbx_strcopy(reason, sizeof reason, fallback);
    pdbx_store *st = NULL;
    pdbx_run_writer *w = NULL;
    int rc = pdbx_store_open(job->store_dir, 1, &st, err, sizeof err) == 0 &&
             pdbx_run_writer_create(st, job->id, &w, err, sizeof err) == 0 ? 0 : -1;
    if (rc == 0)
        rc = append_event(w, planned_start_event(job), err, sizeof err);
    if (rc == 0)
        rc = append_event(w, pdbx_event_run_end(PDBX_RUN_FAILED, reason, 0, pdbx_event_by_supervisor),
                          err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "pdbx supervisor: cannot record the failed start: %s\n", err);
    close_run(st, w);
}

/* ---- running mpirun ---------------------------------------------------------------------- */
static volatile sig_atomic_t sup_cancel, sup_signal, sup_sender;

static void sup_on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (!sup_cancel) {
        sup_signal = sig;
        sup_sender = si ? (sig_atomic_t)si->si_pid : 0;
    }
    sup_cancel = 1;
}

/* A stop that nobody in pdbx announced (no stop request): name the signal and its sender. */
static void note_foreign_stop(const pdbx_sup_job *job)
{
    char detail[PDBX_STOP_DETAIL_MAX], comm[64] = "", path[64], err[256];
    if (sup_sender > 0) {
        snprintf(path, sizeof path, "/proc/%ld/comm", (long)sup_sender);
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(comm, sizeof comm, f))
                comm[0] = '\0';
            fclose(f);
            comm[strcspn(comm, "\n")] = '\0';
        }
        snprintf(detail, sizeof detail, "a signal (%s from pid %ld%s%s)",
                 sup_signal == SIGINT ? "SIGINT" : "SIGTERM", (long)sup_sender, comm[0] ? ", " : "",
                 comm);
    } else {
        snprintf(detail, sizeof detail, "a signal (%s)", sup_signal == SIGINT ? "SIGINT" : "SIGTERM");
    }
    if (pdbx_stop_request_write(job->store_dir, job->id, PDBX_CAUSE_SIGNAL, detail, err,
                                sizeof err) != 0)
        fprintf(stderr, "pdbx supervisor: %s\n", err);
}

void pdbx_sup_job_env(const pdbx_sup_job *job, const pdbx_spec *spec, const pdbx_launch_opts *opts,
                      pdbx_launch_env *env)
{
    pdbx_launch_env_probe(env, spec, opts, NULL, 0);
    env->srun_mpi_list = job->have_mpi_list ? job->srun_mpi_list : NULL;
}

/* The launcher's command line for np ranks (launch_argv.h), with this process's environment. */
static int build_cmd(const pdbx_sup_job *job, int np, pdbx_launch_cmd *cmd, char *err, size_t errlen)
{
    pdbx_launch_env env;
    pdbx_sup_job_env(job, &job->spec, &job->opts, &env);
    pdbx_launch_target t = { job->engine, job->spec_path, job->store_dir, job->id, NULL, 0 };
    return pdbx_launch_argv(&job->spec, &job->opts, &env, &t, np, cmd, err, errlen);
}

/* In the forked child: mpirun (or srun) in a process group of its own, tied to the supervisor's
 * life. */
static void exec_mpirun(char *const *argv, pid_t supervisor)
{
    setpgid(0, 0);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    /* If the supervisor dies (kill -9), the sweep ends: otherwise the ranks go on writing a run
     * that the store already shows as failed (launcher gone) and that `pdbx cancel` can no
     * longer reach. SIGUSR2, which mpirun forwards to every rank, tells the engine why (a
     * SIGTERM would read as a cancel and kill the ranks before they record it). */
    if (prctl(PR_SET_PDEATHSIG, SIGUSR2) != 0 || getppid() != supervisor)
        _exit(127);
    execvp(argv[0], argv);
    fprintf(stderr, "pdbx supervisor: could not start %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Waits for mpirun, forwarding a cancel and escalating after the grace; its wait status. */
static int wait_mpirun(const pdbx_sup_job *job, pid_t pid, int *cancelled)
{
    int status = 0, forwarded = 0;
    double cancel_at = -1;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        if (r < 0 && errno != EINTR)
            return -1;
        if (sup_cancel && !forwarded) {
            pdbx_end_cause cause;
            char detail[PDBX_STOP_DETAIL_MAX];
            if (pdbx_stop_request_read(job->store_dir, job->id, &cause, detail) != 0)
                note_foreign_stop(job);
            kill(pid, SIGUSR1);       /* mpirun forwards SIGUSR1 to every rank */
            forwarded = 1;
            cancel_at = pdbx_mono_s();
            *cancelled = 1;
        }
        if (cancel_at >= 0 && pdbx_mono_s() - cancel_at > CANCEL_GRACE_S) {
            kill(pid, SIGTERM);
            pdbx_sleep_ms(5000);
            kill(-pid, SIGKILL);
            cancel_at = -1;
        }
        pdbx_sleep_ms(100);
    }
}

/* ---- shared memory ------------------------------------------------------------------------ */
/* The directory OpenMPI's shared-memory transport backs its segments in for this run. */
static void shm_dir(const pdbx_sup_job *job, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s", PDBX_SHM_DIR_PREFIX, job->id);
}

/* Points mpirun (and through it every rank) at a directory of the run's own. Where /dev/shm
 * is missing or not writable, OpenMPI's default stays. */
static void use_shm_dir(const pdbx_sup_job *job)
{
    char dir[PDBX_PATH_MAX];
    shm_dir(job, dir, sizeof dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return;
    /* OpenMPI 4 calls the transport vader, OpenMPI 5 sm: an unknown name is ignored */
    setenv("OMPI_MCA_btl_vader_backing_directory", dir, 1);
    setenv("OMPI_MCA_btl_sm_backing_directory", dir, 1);
}

/* Removes a shared-memory directory and what the ranks left in it. */
static void remove_dir_files(const char *dir)
{
    char path[PDBX_PATH_MAX + 300];
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (unlink(path) != 0)
            fprintf(stderr, "pdbx supervisor: cannot remove %s: %s\n", path, strerror(errno));
    }
    closedir(d);
    if (rmdir(dir) != 0)
        fprintf(stderr, "pdbx supervisor: cannot remove %s: %s\n", dir, strerror(errno));
}

static void remove_shm_dir(const pdbx_sup_job *job)
{
    char dir[PDBX_PATH_MAX];
    shm_dir(job, dir, sizeof dir);
    remove_dir_files(dir);
}

/* The directories of earlier runs of this store whose supervisor was killed with everything
 * else (nobody was left to remove them): removed once their run is no longer running. */
static void remove_stale_shm_dirs(const pdbx_sup_job *job)
{
    const char *prefix = strrchr(PDBX_SHM_DIR_PREFIX, '/') + 1;
    char parent[PDBX_PATH_MAX], run_path[PDBX_PATH_MAX], dir[PDBX_PATH_MAX];
    snprintf(parent, sizeof parent, "%.*s", (int)(prefix - PDBX_SHM_DIR_PREFIX), PDBX_SHM_DIR_PREFIX);
    DIR *d = opendir(parent);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *id = de->d_name + strlen(prefix);
        if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 || !pdbx_layout_valid_id(id) ||
            strcmp(id, job->id) == 0 ||
            pdbx_layout_path(PDBX_PATH_RUN, job->store_dir, id, run_path, sizeof run_path) != 0 ||
            access(run_path, F_OK) != 0)
            continue;            /* not a run of this store */
        pdbx_run run;
        char err[256];
        int running = pdbx_run_load_file(run_path, &run, err, sizeof err) != 0 ||
                      run.status == PDBX_RUN_RUNNING;
        pdbx_run_free(&run);
        if (running)
            continue;
        snprintf(dir, sizeof dir, "%s%s", PDBX_SHM_DIR_PREFIX, id);
        remove_dir_files(dir);
    }
    closedir(d);
}

/* The launcher program of the last launch ("mpirun", "srun"): what end reasons name. */
static const char *sup_launcher_name = "mpirun";

/* Runs one mpirun (srun) to its end; returns its wait status, -1 when it could not be started.
 * The command line goes to the log and, through PDBX_LAUNCH_COMMAND/PDBX_LAUNCH_MODE, into the
 * engine's run_start or launch event. */
static int run_mpirun(const pdbx_sup_job *job, int np, int *cancelled)
{
    pdbx_launch_cmd *cmd = malloc(sizeof *cmd);
    char err[512], line[4096];
    if (!cmd)
        return -1;
    if (build_cmd(job, np, cmd, err, sizeof err) != 0) {
        fprintf(stderr, "pdbx supervisor: %s\n", err);
        free(cmd);
        return -1;
    }
    pdbx_launch_quote(cmd->argv, cmd->argc, line, sizeof line);
    sup_launcher_name = cmd->kind == PDBX_LAUNCHER_SRUN ? "srun" : "mpirun";
    fprintf(stderr, "pdbx supervisor: launching %s\n", line);
    if (cmd->warning[0])
        fprintf(stderr, "pdbx supervisor: warning: %s\n", cmd->warning);
    setenv("PDBX_LAUNCH_COMMAND", line, 1);
    setenv("PDBX_LAUNCH_MODE", cmd->mode, 1);
    pid_t supervisor = getpid();
    /* the run's shared-memory directory exists on this machine only */
    if (cmd->kind != PDBX_LAUNCHER_SRUN && job->opts.nhosts == 0)
        use_shm_dir(job);
    pid_t pid = fork();
    if (pid < 0) {
        remove_shm_dir(job);
        free(cmd);
        return -1;
    }
    if (pid == 0)
        exec_mpirun(cmd->argv, supervisor);
    free(cmd);
    int status = wait_mpirun(job, pid, cancelled);
    remove_shm_dir(job);
    return status;
}

/* ---- the sweep ---------------------------------------------------------------------------- */
static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sup_on_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
}

/* The rank and node the launcher says it lost, from its messages in the log (mpirun: "mpirun
 * noticed that process rank 1 with PID 812 on node node2 exited on signal 9", or, when the
 * node's daemon died with its ranks, "Remote daemon: [[58347,0],1] on node node2" or a surviving
 * rank's "Peer host:  node2"; srun: "srun: error: node2: task 1: Killed"): "rank 1 on node
 * node2", "node node2 (its daemon)", "node node2 (its ranks hung up)", or "" when it said none
 * of these (mpirun does not always name the node). The last such line counts: the log holds
 * every launch of the run. */
static void lost_rank(const char *log_path, char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen(log_path, "r");
    if (!f)
        return;
    char line[1024], node[128];
    int rank, pid;
    while (fgets(line, sizeof line, f)) {
        const char *m = strstr(line, "noticed that process rank ");
        const char *s = strstr(line, "srun: error: ");
        const char *d = strstr(line, "Remote daemon: ");
        const char *peer = strstr(line, "Peer host: ");
        if (m && sscanf(m, "noticed that process rank %d with PID %d on node %127s", &rank, &pid,
                        node) == 3)
            snprintf(out, len, "rank %d on node %s", rank, node);
        else if (s && sscanf(s, "srun: error: %127[^:]: task %d", node, &rank) == 2)
            snprintf(out, len, "rank %d on node %s", rank, node);
        else if (d && sscanf(d, "Remote daemon: %*s on node %127s", node) == 1)
            snprintf(out, len, "node %s (its daemon)", node);
        else if (peer && sscanf(peer, "Peer host: %127s", node) == 1)
            snprintf(out, len, "node %s (its ranks hung up)", node);
    }
    fclose(f);
}

/* Why the launcher (mpirun or srun) for np ranks ended without a run_end, from its wait status
 * and what it logged. */
static void end_reason(const pdbx_sup_job *job, int status, int np, char *buf, size_t len)
{
    const char *name = sup_launcher_name;
    int saved = errno;         /* why the launch could not run; reading the log may change it */
    char lost[200];
    fflush(stderr);
    lost_rank(job->log_path, lost, sizeof lost);
    if (status < 0)
        snprintf(buf, len, "could not run %s: %s", name, strerror(saved));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "%s (-np %d) was killed by signal %d", name, np, WTERMSIG(status));
    else if (lost[0])
        snprintf(buf, len, "%s (-np %d) exited with status %d without a run end: it lost %.120s",
                 name, np, WEXITSTATUS(status), lost);
    else
        snprintf(buf, len, "%s (-np %d) exited with status %d without a run end (a rank "
                 "died or was killed)", name, np, WEXITSTATUS(status));
}

void pdbx_sup_run(const pdbx_sup_job *job)
{
    install_handlers();
    remove_stale_shm_dirs(job);
    char pidbuf[32];
    snprintf(pidbuf, sizeof pidbuf, "%ld", (long)getpid());
    setenv("PDBX_LAUNCHER_PID", pidbuf, 1);
    /* rank 0 may run on another host: the run's launcher is this process, on this host */
    char host[256];
    pdbx_hostname(host, sizeof host, "");
    if (host[0])
        setenv("PDBX_LAUNCHER_HOST", host, 1);
    char boot[64];
    pdbx_boot_id(boot, sizeof boot);
    if (boot[0])
        setenv("PDBX_LAUNCHER_BOOT_ID", boot, 1);
    unsigned long long ticks = 0;
    if (pdbx_proc_start_ticks((long)getpid(), &ticks) == 0) {
        snprintf(pidbuf, sizeof pidbuf, "%llu", ticks);
        setenv("PDBX_LAUNCHER_START", pidbuf, 1);
    }
    int cancelled = 0;
    for (int i = 0; i < job->nsizes; i++) {
        int status = run_mpirun(job, job->sizes[i], &cancelled);
        file_state fs = read_state(job->run_path);
        if (fs.has_end)
            return;                                   /* the engine ended the run */
        if (fs.starts == 0) {
            char why[128];
            snprintf(why, sizeof why, "the engine did not start (%s -np %d exit status %d)",
                     sup_launcher_name, job->sizes[i], status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            record_failed_start(job, why);
            return;
        }
        int ok = status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (ok && !cancelled && !sup_cancel)
            continue;                                 /* more rank counts to launch */
        char reason[512], why[256];
        end_reason(job, status, job->sizes[i], why, sizeof why);
        pdbx_end_cause cause = PDBX_CAUSE_NONE;
        char detail[PDBX_STOP_DETAIL_MAX] = "";
        int stopped = cancelled || sup_cancel;
        if (stopped && pdbx_stop_request_read(job->store_dir, job->id, &cause, detail) == 0)
            snprintf(reason, sizeof reason, "cancelled by %s; %s", detail, why);
        else
            snprintf(reason, sizeof reason, "%s", why);
        append_end(job->store_dir, job->id, stopped ? PDBX_RUN_CANCELLED : PDBX_RUN_FAILED, reason,
                   cause);
        return;
    }
    if (!read_state(job->run_path).has_end)
        append_end(job->store_dir, job->id, PDBX_RUN_FAILED,
                   "the launches ended before every point was done", PDBX_CAUSE_NONE);
}
