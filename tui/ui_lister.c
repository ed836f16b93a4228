/* ui_lister.c: see ui_lister.h. */
#include "tui/ui_lister.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/util/clock.h"

struct ui_lister {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char dir[1024];
    int requested, running, stop;
    /* the finished listing, until taken */
    int ready;
    pdbx_run_summary *list;
    size_t n;
    double ms;
    char err[256];
};

static void *worker(void *arg)
{
    ui_lister *l = arg;
    pdbx_store *st = NULL;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->requested && !l->stop)
            pthread_cond_wait(&l->cv, &l->mu);
        if (l->stop)
            break;
        l->requested = 0;
        l->running = 1;
        pthread_mutex_unlock(&l->mu);

        pdbx_run_summary *list = NULL;
        size_t n = 0;
        char err[256] = "";
        double t0 = pdbx_mono_s();
        if (!st && pdbx_store_open(l->dir, 0, &st, err, sizeof(err)) != 0)
            st = NULL;
        if (st && pdbx_store_list(st, &list, &n, err, sizeof(err)) != 0) {
            free(list);
            list = NULL;
            n = 0;
        }
        double ms = (pdbx_mono_s() - t0) * 1e3;

        pthread_mutex_lock(&l->mu);
        free(l->list);                  /* a listing nobody took is superseded */
        l->list = list;
        l->n = n;
        l->ms = ms;
        snprintf(l->err, sizeof(l->err), "%s", err);
        l->ready = 1;
        l->running = 0;
    }
    pthread_mutex_unlock(&l->mu);
    if (st)
        pdbx_store_close(st);
    return NULL;
}

int ui_lister_start(const char *dir, ui_lister **out, char *err, size_t errlen)
{
    ui_lister *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(l->dir, sizeof(l->dir), "%s", dir);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    int rc = pthread_create(&l->thread, NULL, worker, l);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the listing thread: %s", strerror(rc));
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        free(l);
        return -1;
    }
    *out = l;
    return 0;
}

void ui_lister_request(ui_lister *l)
{
    pthread_mutex_lock(&l->mu);
    l->requested = 1;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

int ui_lister_take(ui_lister *l, pdbx_run_summary **list, size_t *n, double *ms, char *err, size_t errlen)
{
    int got = 0;
    pthread_mutex_lock(&l->mu);
    if (l->ready) {
        *list = l->list;
        *n = l->n;
        *ms = l->ms;
        snprintf(err, errlen, "%s", l->err);
        l->list = NULL;
        l->n = 0;
        l->ready = 0;
        got = 1;
    }
    pthread_mutex_unlock(&l->mu);
    return got;
}

int ui_lister_busy(ui_lister *l)
{
    pthread_mutex_lock(&l->mu);
    int busy = l->requested || l->running;
    pthread_mutex_unlock(&l->mu);
    return busy;
}

void ui_lister_stop(ui_lister *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    free(l->list);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}
