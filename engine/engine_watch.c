/* engine_watch.c: signals, watchdog thread and fault injection (engine_watch.h). */
#include "engine/engine_watch.h"
#include "store/util/clock.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t cancel_signal;

static pdbx_stop_code code_of(int sig)
{
    switch (sig) {
    case 0: return PDBX_STOP_NONE;
    case SIGINT: return PDBX_STOP_SIGINT;
    case SIGUSR1: return PDBX_STOP_CANCEL;
    case SIGUSR2: return PDBX_STOP_SUPERVISOR_LOST;
    default: return PDBX_STOP_SIGTERM;
    }
}

/* A later signal of higher precedence wins (a cancel, then the supervisor's death). */
static void on_signal(int sig)
{
    if (code_of(sig) > code_of(cancel_signal))
        cancel_signal = sig;
}

int pdbx_watch_install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) || sigaction(SIGINT, &sa, NULL) ||
        sigaction(SIGUSR1, &sa, NULL) || sigaction(SIGUSR2, &sa, NULL))
        return -1;
    return 0;
}

pdbx_stop_code pdbx_watch_stop_code(void)
{
    return code_of(cancel_signal);
}

/* ---- watchdog ---------------------------------------------------------------------------- */
static struct {
    pthread_mutex_t mu;
    pthread_t thread;
    int running, stop;
    double timeout_s, grace_s;
    pdbx_timeout_fn fn;
    void *ctx;
    int open;                   /* a bracket is open */
    char what[64];
    int point;
    double since;               /* monotonic seconds */
} wd = { .mu = PTHREAD_MUTEX_INITIALIZER };

void pdbx_watch_begin(const char *what, int point)
{
    pthread_mutex_lock(&wd.mu);
    wd.open = 1;
    snprintf(wd.what, sizeof wd.what, "%s", what);
    wd.point = point;
    wd.since = pdbx_mono_s();
    pthread_mutex_unlock(&wd.mu);
}

void pdbx_watch_end(void)
{
    pthread_mutex_lock(&wd.mu);
    wd.open = 0;
    pthread_mutex_unlock(&wd.mu);
}

static void *watch_main(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec half = { 0, 200 * 1000 * 1000 };
        nanosleep(&half, NULL);
        pthread_mutex_lock(&wd.mu);
        if (wd.stop) {
            pthread_mutex_unlock(&wd.mu);
            return NULL;
        }
        double age = wd.open ? pdbx_mono_s() - wd.since : 0.0;
        int fire = wd.open && age > wd.timeout_s + wd.grace_s;
        char what[64];
        int point = wd.point;
        memcpy(what, wd.what, sizeof what);
        pthread_mutex_unlock(&wd.mu);
        if (fire) {
            wd.fn(what, point, age, wd.ctx);
            return NULL;     /* the callback aborts; if it returns, watch no more */
        }
    }
}

int pdbx_watch_start(double timeout_s, double grace_s, pdbx_timeout_fn fn, void *ctx)
{
    if (timeout_s <= 0 || !fn)
        return 0;            /* no timeout configured */
    wd.timeout_s = timeout_s;
    wd.grace_s = grace_s;
    wd.fn = fn;
    wd.ctx = ctx;
    wd.stop = 0;
    if (pthread_create(&wd.thread, NULL, watch_main, NULL) != 0)
        return -1;
    wd.running = 1;
    return 0;
}

void pdbx_watch_stop(void)
{
    if (!wd.running)
        return;
    pthread_mutex_lock(&wd.mu);
    wd.stop = 1;
    pthread_mutex_unlock(&wd.mu);
    pthread_join(wd.thread, NULL);
    wd.running = 0;
}

/* ---- fault injection (tests only) -------------------------------------------------------- */
int pdbx_fault_parse(const char *s, pdbx_fault *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->rank = out->point = -1;
    if (!s || !*s)
        return 0;
    char kind[16] = "";
    int rank = -1, point = -1, used = 0;
    if (sscanf(s, "%15[a-z]:rank=%d:point=%d%n", kind, &rank, &point, &used) != 3 ||
        s[used] != '\0' || rank < 0 || point < 0) {
        snprintf(err, errlen, "PDBX_FAULT: '%s' is not KIND:rank=R:point=P "
                 "(KIND: hang, oom, exit, group, fatal; test use only)", s);
        return -1;
    }
    static const struct { const char *name; pdbx_fault_kind kind; } kinds[] = {
        { "hang", PDBX_FAULT_HANG }, { "oom", PDBX_FAULT_OOM }, { "exit", PDBX_FAULT_EXIT },
        { "group", PDBX_FAULT_GROUP }, { "fatal", PDBX_FAULT_FATAL },
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0] && !out->kind; i++)
        if (strcmp(kind, kinds[i].name) == 0)
            out->kind = kinds[i].kind;
    if (!out->kind) {
        snprintf(err, errlen, "PDBX_FAULT: unknown kind '%s' (allowed: hang, oom, exit, group, fatal)",
                 kind);
        return -1;
    }
    out->rank = rank;
    out->point = point;
    return 0;
}

int pdbx_fault_hits(const pdbx_fault *f, pdbx_fault_kind kind, int rank, int point)
{
    return f->kind == kind && f->rank == rank && f->point == point;
}
