/* launch.c: starting, watching and cancelling a sweep in the background (launch.h).
 *
 * Process layout of one sweep:
 *   caller (pdbx run / the explorer)
 *     `- (intermediate, exits at once: the supervisor is adopted by init, never a zombie)
 *          `- supervisor: setsid() -> its pid is the session and process group id
 *               `- mpirun (own process group)  `- pdbx-engine ranks
 * Cancel sends SIGTERM to the supervisor's process group. mpirun is kept out of that group on
 * purpose: mpirun answers SIGTERM by killing its ranks after one second, which would lose the
 * measurement in flight and the run_end; the supervisor instead forwards SIGUSR1, which mpirun
 * passes to every rank, and the engine ends the run `cancelled`. If the engine has not ended
 * within CANCEL_GRACE_S the supervisor escalates (SIGTERM, then SIGKILL) and writes run_end.
 * Whenever mpirun ends without the run having a run_end (a rank killed, a crash), the
 * supervisor appends run_end "failed" (or "cancelled") with the reason.
 */
#include "engine/launch/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/util/fs.h"

#define CANCEL_GRACE_S 60
#define START_WAIT_S 120

static void msleep(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

const char *pdbx_engine_path(void)
{
    static char path[PDBX_PATH_MAX];
    const char *env = getenv("PDBX_ENGINE");
    if (env && *env) {
        snprintf(path, sizeof path, "%s", env);
        return path;
    }
    char exe[PDBX_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(path, sizeof path, "pdbx-engine");
        return path;
    }
    exe[n] = '\0';
    snprintf(path, sizeof path, "%s/pdbx-engine", dirname(exe));
    return path;
}

static const char *mpirun_path(void)
{
    const char *env = getenv("PDBX_MPIRUN");
    return env && *env ? env : "mpirun";
}

/* ---- run-file queries ------------------------------------------------------------------ */
typedef struct {
    int events, starts, has_end;
} file_state;

static int note_event(const cJSON *ev, void *ctx)
{
    file_state *fs = ctx;
    fs->events++;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(ev, "type");
    if (cJSON_IsString(t) && strcmp(t->valuestring, "run_end") == 0)
        fs->has_end = 1;
    if (cJSON_IsString(t) && (strcmp(t->valuestring, "run_start") == 0 ||
                              strcmp(t->valuestring, "launch") == 0))
        fs->starts++;
    return 0;
}

static file_state read_state(const char *path)
{
    file_state fs = { 0, 0, 0 };
    pdbx_scan_result res;
    char err[256];
    if (access(path, F_OK) == 0)
        pdbx_scan_file(path, 0, note_event, &fs, &res, err, sizeof err);
    return fs;
}

/* ---- the supervisor --------------------------------------------------------------------- */
static volatile sig_atomic_t sup_cancel;

static void sup_on_signal(int sig)
{
    (void)sig;
    sup_cancel = 1;
}

static void append_end(const char *store_dir, const char *id, const char *status,
                       const char *reason)
{
    pdbx_store *st = NULL;
    pdbx_run_writer *w = NULL;
    char err[512];
    if (pdbx_store_open(store_dir, 1, &st, err, sizeof err) != 0)
        goto fail;
    /* only a run the engine created gets a run_end: a sweep that never started has no run */
    if (pdbx_run_writer_open(st, id, &w, err, sizeof err) != 0)
        goto fail;
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "type", "run_end");
    cJSON_AddStringToObject(ev, "status", status);
    cJSON_AddStringToObject(ev, "reason", reason);
    cJSON_AddStringToObject(ev, "by", "supervisor");
    int rc = pdbx_run_writer_append(w, ev, err, sizeof err);
    cJSON_Delete(ev);
    if (rc != 0)
        goto fail;
    pdbx_run_writer_close(w, err, sizeof err);
    pdbx_store_close(st);
    fprintf(stderr, "pdbx supervisor: run_end %s: %s\n", status, reason);
    return;
fail:
    fprintf(stderr, "pdbx supervisor: cannot write run_end: %s\n", err);
    if (w)
        pdbx_run_writer_close(w, err, sizeof err);
    if (st)
        pdbx_store_close(st);
}

typedef struct {
    char id[PDBX_RUN_ID_MAX];
    char store_dir[PDBX_PATH_MAX];
    char spec_path[PDBX_PATH_MAX];
    char run_path[PDBX_PATH_MAX];
    char engine[PDBX_PATH_MAX];
    int sizes[PDBX_MAX_CONFIGS];
    int nsizes;
    pdbx_spec spec;
    char log_path[PDBX_PATH_MAX];
} sup_job;

static void log_tail(const char *path, char *out, size_t len);

/* The engine never created the run (mpirun missing, the backend refused the spec ...): record
 * the attempt as a run of its own, run_start from the plan and run_end failed with the reason,
 * so every launch shows up in the store with why it failed. */
static void record_failed_start(const sup_job *job, const char *fallback)
{
    char reason[512], err[512];
    fflush(stderr);
    log_tail(job->log_path, reason, sizeof reason);
    const char *own = "pdbx supervisor: ";
    if (strncmp(reason, own, strlen(own)) == 0)
        memmove(reason, reason + strlen(own), strlen(reason + strlen(own)) + 1);
    if (!reason[0])
        snprintf(reason, sizeof reason, "%s", fallback);
    pdbx_store *st = NULL;
    pdbx_run_writer *w = NULL;
    pdbx_plan_point *pts = NULL;
    size_t npts = 0;
    if (pdbx_store_open(job->store_dir, 1, &st, err, sizeof err) != 0 ||
        pdbx_run_writer_create(st, job->id, &w, err, sizeof err) != 0) {
        fprintf(stderr, "pdbx supervisor: cannot record the failed start: %s\n", err);
        goto out;
    }
    const pdbx_spec *sp = &job->spec;
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "type", "run_start");
    cJSON_AddStringToObject(ev, "id", job->id);
    cJSON_AddStringToObject(ev, "host", host);
    cJSON_AddNumberToObject(ev, "pid", (double)getpid());
    cJSON_AddStringToObject(ev, "backend", pdbx_backend_name(sp->backend));
    if (pdbx_plan_expand(sp, &pts, &npts, err, sizeof err) != 0)
        npts = 0;   /* the spec was valid when launched; record the run even without points */
    pdbx_plan_describe(ev, sp, pts, npts);
    int rc = pdbx_run_writer_append(w, ev, err, sizeof err);
    cJSON_Delete(ev);
    if (rc == 0) {
        ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "type", "run_end");
        cJSON_AddStringToObject(ev, "status", "failed");
        cJSON_AddStringToObject(ev, "reason", reason);
        cJSON_AddStringToObject(ev, "by", "supervisor");
        cJSON_AddNumberToObject(ev, "elapsed_s", 0);
        rc = pdbx_run_writer_append(w, ev, err, sizeof err);
        cJSON_Delete(ev);
    }
    if (rc != 0)
        fprintf(stderr, "pdbx supervisor: cannot record the failed start: %s\n", err);
out:
    free(pts);
    if (w)
        pdbx_run_writer_close(w, err, sizeof err);
    if (st)
        pdbx_store_close(st);
}

/* Runs one mpirun to its end; returns its wait status. */
static int run_mpirun(const sup_job *job, int np, int *cancelled)
{
    char npbuf[16];
    snprintf(npbuf, sizeof npbuf, "%d", np);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char *argv[24];
    int a = 0;
    argv[a++] = mpirun_path();
    if (geteuid() == 0)
        argv[a++] = "--allow-run-as-root";
    if (cores < np)
        argv[a++] = "--oversubscribe";
    /* the engine sets BLAS threads per rank itself (cores / ranks per node): no binding */
    argv[a++] = "--bind-to";
    argv[a++] = "none";
    argv[a++] = "-np";
    argv[a++] = npbuf;
    argv[a++] = job->engine;
    argv[a++] = "--spec";
    argv[a++] = job->spec_path;
    argv[a++] = "--store";
    argv[a++] = job->store_dir;
    argv[a++] = "--run-id";
    argv[a++] = job->id;
    argv[a] = NULL;
    fprintf(stderr, "pdbx supervisor: launching");
    for (int i = 0; i < a; i++)
        fprintf(stderr, " %s", argv[i]);
    fprintf(stderr, "\n");
    pid_t supervisor = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setpgid(0, 0);
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        /* If the supervisor dies (kill -9), mpirun tears the sweep down: otherwise the ranks
         * go on writing a run that the store already shows as failed (launcher gone) and that
         * `pdbx cancel` can no longer reach. */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != supervisor)
            _exit(127);
        execvp(argv[0], (char *const *)argv);
        fprintf(stderr, "pdbx supervisor: could not start %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0, forwarded = 0;
    time_t cancel_at = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return -1;
        if (sup_cancel && !forwarded) {
            kill(pid, SIGUSR1);       /* mpirun forwards SIGUSR1 to every rank */
            forwarded = 1;
            cancel_at = time(NULL);
            *cancelled = 1;
        }
        if (forwarded && cancel_at && time(NULL) - cancel_at > CANCEL_GRACE_S) {
            kill(pid, SIGTERM);
            msleep(5000);
            kill(-pid, SIGKILL);
            cancel_at = 0;
        }
        msleep(100);
    }
    return status;
}

static void supervise(const sup_job *job)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sup_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    char pidbuf[32];
    snprintf(pidbuf, sizeof pidbuf, "%ld", (long)getpid());
    setenv("PDBX_LAUNCHER_PID", pidbuf, 1);
    int cancelled = 0;
    for (int i = 0; i < job->nsizes; i++) {
        int status = run_mpirun(job, job->sizes[i], &cancelled);
        file_state fs = read_state(job->run_path);
        if (fs.has_end)
            return;                                   /* the engine ended the run */
        if (fs.starts == 0) {
            char why[128];
            snprintf(why, sizeof why, "the engine did not start (mpirun -np %d exit status %d)",
                     job->sizes[i], status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            record_failed_start(job, why);
            return;
        }
        int ok = status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (ok && !cancelled && !sup_cancel)
            continue;                                 /* more rank counts to launch */
        char reason[256];
        if (status < 0)
            snprintf(reason, sizeof reason, "could not run mpirun: %s", strerror(errno));
        else if (WIFSIGNALED(status))
            snprintf(reason, sizeof reason, "mpirun (-np %d) was killed by signal %d",
                     job->sizes[i], WTERMSIG(status));
        else
            snprintf(reason, sizeof reason, "mpirun (-np %d) exited with status %d without a "
                     "run end (a rank died or was killed)", job->sizes[i], WEXITSTATUS(status));
        append_end(job->store_dir, job->id, cancelled || sup_cancel ? "cancelled" : "failed", reason);
        return;
    }
    if (!read_state(job->run_path).has_end)
        append_end(job->store_dir, job->id, "failed", "the launches ended before every point was done");
}

/* ---- starting ------------------------------------------------------------------------------ */
static int mkdir_p(const char *dir)
{
    if (mkdir(dir, 0755) == 0 || errno == EEXIST)
        return 0;
    return -1;
}

static void log_tail(const char *path, char *out, size_t len)
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
        if (strncmp(line, "pdbx", 4) == 0 && !strstr(line, ": launching ") &&
            !strstr(line, "cannot record the failed start"))
            snprintf(last, sizeof last, "%s", line);
    }
    fclose(f);
    snprintf(out, len, "%s", last);
}

int pdbx_launch_start(const pdbx_spec *spec, const char *store_dir, pdbx_launch *out,
                      char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (pdbx_spec_validate(spec, err, errlen) != 0)
        return -1;
    sup_job job;
    memset(&job, 0, sizeof job);
    for (int c = 0; c < spec->nconfigs; c++) {
        int n = spec->configs[c].tp * spec->configs[c].pp * spec->configs[c].dp, seen = 0;
        for (int k = 0; k < job.nsizes; k++)
            seen |= job.sizes[k] == n;
        if (!seen)
            job.sizes[job.nsizes++] = n;
    }
    snprintf(job.engine, sizeof job.engine, "%s", pdbx_engine_path());
    if (access(job.engine, X_OK) != 0) {
        snprintf(err, errlen, "pdbx-engine not found at %s (set PDBX_ENGINE)", job.engine);
        return -1;
    }
    pdbx_store *st = NULL;
    if (pdbx_store_open(store_dir, 1, &st, err, errlen) != 0)
        return -1;
    snprintf(job.store_dir, sizeof job.store_dir, "%s", pdbx_store_dir(st));
    pdbx_store_new_id(job.id);
    pdbx_store_run_path(st, job.id, job.run_path, sizeof job.run_path);
    pdbx_store_close(st);
    job.spec = *spec;
    char logdir[PDBX_PATH_MAX];
    snprintf(logdir, sizeof logdir, "%.1000s/logs", job.store_dir);
    if (mkdir_p(logdir) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", logdir, strerror(errno));
        return -1;
    }
    snprintf(job.spec_path, sizeof job.spec_path, "%.900s/%.63s.spec.json", logdir, job.id);
    snprintf(out->log_path, sizeof out->log_path, "%.900s/%.63s.log", logdir, job.id);
    snprintf(job.log_path, sizeof job.log_path, "%s", out->log_path);
    cJSON *js = pdbx_spec_to_json(spec);
    char *text = js ? cJSON_Print(js) : NULL;
    cJSON_Delete(js);
    if (!text) {
        snprintf(err, errlen, "out of memory writing the spec");
        return -1;
    }
    int rc = pdbx_durable_write(job.spec_path, text, strlen(text), err, errlen);
    free(text);
    if (rc != 0)
        return -1;

    int pipefd[2];
    if (pipe(pipefd) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t mid = fork();
    if (mid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(pipefd[0]);
        close(pipefd[1]);
        return -1;
    }
    if (mid == 0) {
        close(pipefd[0]);
        pid_t sup = fork();
        if (sup == 0) {
            close(pipefd[1]);
            setsid();
            int in = open("/dev/null", O_RDONLY);
            int log = open(out->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (in >= 0)
                dup2(in, 0);
            if (log >= 0) {
                dup2(log, 1);
                dup2(log, 2);
            }
            for (int fd = 3; fd < 1024; fd++)
                close(fd);
            supervise(&job);
            _exit(0);
        }
        pid_t v = sup;
        ssize_t wr = write(pipefd[1], &v, sizeof v);
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
    if (rd != (ssize_t)sizeof sup || sup <= 0) {
        snprintf(err, errlen, "could not start the sweep supervisor");
        return -1;
    }
    out->supervisor = sup;
    snprintf(out->run_id, sizeof out->run_id, "%s", job.id);

    /* Return once run_start is on disk, or fail with the engine's message. */
    for (int waited = 0; waited < START_WAIT_S * 20; waited++) {
        if (read_state(job.run_path).starts > 0)
            return 0;
        if (!pdbx_process_alive(sup)) {
            if (read_state(job.run_path).starts > 0)
                return 0;     /* a failed start is recorded as a failed run */
            char tail[512];
            log_tail(out->log_path, tail, sizeof tail);
            snprintf(err, errlen, "the sweep did not start: %s (log: %s)",
                     tail[0] ? tail : "no message", out->log_path);
            return -1;
        }
        msleep(50);
    }
    snprintf(err, errlen, "the sweep did not write run_start within %d s (log: %s)", START_WAIT_S,
             out->log_path);
    return -1;
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
    snprintf(path, sizeof path, "%.900s/logs/%.63s.log", store_dir, run_id);
    if (stat(path, &sb) == 0)
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

int pdbx_launch_cancel(pdbx_store *st, const char *run_id, char *err, size_t errlen)
{
    pdbx_run run;
    if (pdbx_run_load(st, run_id, &run, err, errlen) != 0)
        return -1;
    int rc = -1;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    if (run.status != PDBX_RUN_RUNNING) {
        snprintf(err, errlen, "run %s is not running (%s)", run.id, pdbx_run_status_name(run.status));
    } else if (run.host[0] && strcmp(run.host, host) != 0) {
        snprintf(err, errlen, "run %s runs on host %s, not here (%s): cancel it there", run.id,
                 run.host, host);
    } else if (run.pid <= 1) {
        snprintf(err, errlen, "run %s has no launcher pid", run.id);
    } else if (!launched_here(pdbx_store_dir(st), run_id, run.pid)) {
        snprintf(err, errlen, "run %s was not launched from this store (an imported copy?): its "
                 "launcher pid %ld is not its sweep; cancel the sweep where it was started",
                 run_id, run.pid);
    } else if (kill(-(pid_t)run.pid, SIGTERM) != 0 && kill((pid_t)run.pid, SIGTERM) != 0) {
        snprintf(err, errlen, "cannot signal pid %ld of run %s: %s", run.pid, run.id, strerror(errno));
    } else {
        rc = 0;
    }
    pdbx_run_free(&run);
    return rc;
}
