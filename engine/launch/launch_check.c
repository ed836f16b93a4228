/* launch_check.c: the pre-launch check (launch_check.h). */
#include "engine/launch/launch_check.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/launch/launch.h"
#include "store/util/clock.h"
#include "store/util/cpuload.h"
#include "store/util/err.h"
#include "store/util/text.h"

/* cuda's first initialisation can take seconds on a large node; a hung driver must not hang
 * the explorer */
#define CHECK_WAIT_S 30
#define CACHE_N 8

typedef struct {
    char engine[PDBX_PATH_MAX];
    pdbx_backend_kind backend;
    pdbx_dtype dtype;
    int ok;
    char line1[512], line2[512];
} check_answer;

static check_answer cache[CACHE_N];
static int ncache, next_slot;

/* The child: stdout on the pipe, stdin and stderr on /dev/null, then the engine. */
static void exec_check(const char *engine, const pdbx_spec *spec, int out)
{
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 2);
    }
    dup2(out, 1);
    execl(engine, engine, "--check", pdbx_backend_name(spec->backend), pdbx_dtype_name(spec->dtype),
          (char *)NULL);
    _exit(127);
}

/* Reads the child's output until EOF or the deadline; 0, or -1 on timeout. */
static int read_answer(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    double end = pdbx_mono_s() + CHECK_WAIT_S;
    for (;;) {
        int left = (int)((end - pdbx_mono_s()) * 1000);
        if (left <= 0)
            return -1;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = poll(&p, 1, left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        ssize_t k = read(fd, buf + n, cap - 1 - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0 || (n += (size_t)k) + 1 >= cap)
            break;
    }
    buf[n] = '\0';
    return 0;
}

/* Splits the answer into its first two lines. */
static void split_lines(const char *text, check_answer *a)
{
    const char *nl = strchr(text, '\n');
    size_t n1 = nl ? (size_t)(nl - text) : strlen(text);
    snprintf(a->line1, sizeof a->line1, "%.*s", (int)(n1 < 511 ? n1 : 511), text);
    a->line2[0] = '\0';
    if (nl && nl[1]) {
        const char *l2 = nl + 1, *nl2 = strchr(l2, '\n');
        size_t n2 = nl2 ? (size_t)(nl2 - l2) : strlen(l2);
        snprintf(a->line2, sizeof a->line2, "%.*s", (int)(n2 < 511 ? n2 : 511), l2);
    }
}

/* Runs `engine --check BACKEND DTYPE`; 0 with *a filled (ok or refused), -1 when the engine
 * could not be asked (err says why). */
static int ask_engine(const char *engine, const pdbx_spec *spec, check_answer *a, char *err,
                      size_t errlen)
{
    int fds[2];
    if (pipe(fds) != 0)
        return pdbx_fail(err, errlen, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return pdbx_fail(err, errlen, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        exec_check(engine, spec, fds[1]);
    }
    close(fds[1]);
    char text[2048];
    int timed_out = read_answer(fds[0], text, sizeof text) != 0;
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (timed_out)
        return pdbx_fail(err, errlen, "%s --check did not answer within %d s", engine, CHECK_WAIT_S);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    split_lines(text, a);
    if ((code != 0 && code != 1) || (code == 0 && strncmp(a->line1, "ok ", 3) != 0))
        return pdbx_fail(err, errlen, "%s --check failed (%s%d): %s", engine,
                         WIFEXITED(status) ? "exit " : "signal ",
                         WIFEXITED(status) ? code : WTERMSIG(status), a->line1[0] ? a->line1 : "no output");
    a->ok = code == 0;
    return 0;
}

/* The cached answer for spec's engine, backend and dtype, asking the engine on a miss. */
static const check_answer *answer_for(const pdbx_spec *spec, char *err, size_t errlen)
{
    const char *engine = pdbx_engine_path();
    for (int i = 0; i < ncache; i++)
        if (cache[i].backend == spec->backend && cache[i].dtype == spec->dtype &&
            strcmp(cache[i].engine, engine) == 0)
            return &cache[i];
    if (access(engine, X_OK) != 0) {
        pdbx_fail(err, errlen, "pdbx-engine not found at %s (set PDBX_ENGINE)", engine);
        return NULL;
    }
    check_answer a;
    memset(&a, 0, sizeof a);
    pdbx_strcopy(a.engine, sizeof a.engine, engine);
    a.backend = spec->backend;
    a.dtype = spec->dtype;
    if (ask_engine(engine, spec, &a, err, errlen) != 0)
        return NULL;        /* not cached: a timeout may not repeat */
    int slot = ncache < CACHE_N ? ncache++ : (next_slot++ % CACHE_N);
    cache[slot] = a;
    return &cache[slot];
}

/* What the numbers will be of when the GPU preset names something else. */
static void describe_measures(const pdbx_spec *spec, const char *backend, char *out, size_t len)
{
    int cpu_preset = strcmp(spec->gpu.tag, "cpu") == 0;
    out[0] = '\0';
    if (strcmp(backend, "cpu") == 0 && !cpu_preset)
        snprintf(out, len, "cpu backend: measures this CPU; the %s preset sets only the memory "
                 "model", spec->gpu.name);
    else if (strcmp(backend, "cuda") == 0 && cpu_preset)
        snprintf(out, len, "cuda backend with the cpu preset: measures this host's GPU; the "
                 "memory model uses the host's RAM (choose the GPU's preset)");
}

int pdbx_launch_check(const pdbx_spec *spec, pdbx_launch_check_info *info, char *err,
                      size_t errlen)
{
    const check_answer *a = answer_for(spec, err, errlen);
    if (!a)
        return -1;
    if (!a->ok)
        return pdbx_fail(err, errlen, "%s", a->line1);
    if (info) {
        memset(info, 0, sizeof *info);
        pdbx_strcopy(info->backend, sizeof info->backend, a->line1 + 3);
        pdbx_strcopy(info->notice, sizeof info->notice, a->line2);
        describe_measures(spec, info->backend, info->measures, sizeof info->measures);
    }
    return 0;
}

int pdbx_launch_busy_warning(const pdbx_spec *spec, const pdbx_launch_opts *opts, char *line,
                             size_t len)
{
    if (len)
        line[0] = '\0';
    pdbx_launch_env env = { .slurm_job_id = getenv("SLURM_JOB_ID") };
    if (pdbx_launch_resolve(spec, opts, &env) != PDBX_LAUNCHER_LOCAL)
        return 0;
    return pdbx_cpu_busy_check(PDBX_LAUNCH_BUSY_CHECK_S, line, len);
}
