/* cpu_threads.c: the cpu backend's persistent thread pool (see cpu_threads.h).
 *
 * A run bumps a generation counter under the mutex and broadcasts; each worker runs its part
 * for every generation it has not seen and counts itself done. Creating threads per kernel
 * call (what the attention kernel did) costs tens of microseconds per call and per thread,
 * more than a norm over a short batch takes. */
#include "engine/backends/cpu/cpu_threads.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* Pause iterations the caller spins for the workers' parts before it sleeps (up to about 100
 * microseconds: parts of one kernel end within that of each other when the cores are free). */
#define DONE_SPINS 5000

typedef struct {
    pdbx_cpu_pool *pool;
    int part;
} worker_arg;

struct pdbx_cpu_pool {
    int threads;                 /* the caller plus the workers that started */
    pthread_t *tid;
    worker_arg *args;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    uint64_t gen;                /* under mu */
    int stop;                    /* under mu */
    atomic_int pending;          /* workers not done with the current generation */
    pdbx_cpu_task fn;            /* the current run's task (written before gen, under mu) */
    void *arg;
};

static void *worker_main(void *p)
{
    worker_arg *w = p;
    pdbx_cpu_pool *pool = w->pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&pool->mu);
    for (;;) {
        while (pool->gen == seen && !pool->stop)
            pthread_cond_wait(&pool->wake, &pool->mu);
        if (pool->stop)
            break;
        seen = pool->gen;
        pdbx_cpu_task fn = pool->fn;
        void *arg = pool->arg;
        int parts = pool->threads;
        pthread_mutex_unlock(&pool->mu);
        fn(arg, w->part, parts);
        int last = atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel) == 1;
        pthread_mutex_lock(&pool->mu);
        if (last)
            pthread_cond_signal(&pool->done);
    }
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

pdbx_cpu_pool *pdbx_cpu_pool_create(int threads)
{
    if (threads < 2)
        return NULL;
    pdbx_cpu_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    pool->tid = calloc((size_t)threads, sizeof *pool->tid);
    pool->args = calloc((size_t)threads, sizeof *pool->args);
    if (!pool->tid || !pool->args || pthread_mutex_init(&pool->mu, NULL) != 0) {
        free(pool->tid);
        free(pool->args);
        free(pool);
        return NULL;
    }
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    atomic_init(&pool->pending, 0);
    pool->threads = 1;
    /* workers get consecutive part numbers 1.. in the order they started; pool->threads is
     * read by a worker only after a run began, when every creation below has returned */
    for (int t = 1; t < threads; t++) {
        pool->args[pool->threads] = (worker_arg){ .pool = pool, .part = pool->threads };
        if (pthread_create(&pool->tid[pool->threads], NULL, worker_main, &pool->args[pool->threads]) != 0)
            break;
        pool->threads++;
    }
    if (pool->threads == 1) {
        pdbx_cpu_pool_destroy(pool);
        return NULL;
    }
    return pool;
}

void pdbx_cpu_pool_destroy(pdbx_cpu_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mu);
    pool->stop = 1;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);
    for (int t = 1; t < pool->threads; t++)
        pthread_join(pool->tid[t], NULL);
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->done);
    pthread_mutex_destroy(&pool->mu);
    free(pool->tid);
    free(pool->args);
    free(pool);
}

int pdbx_cpu_pool_threads(const pdbx_cpu_pool *pool)
{
    return pool ? pool->threads : 1;
}

void pdbx_cpu_pool_run(pdbx_cpu_pool *pool, pdbx_cpu_task fn, void *arg)
{
    if (!pool) {
        fn(arg, 0, 1);
        return;
    }
    pthread_mutex_lock(&pool->mu);
    pool->fn = fn;
    pool->arg = arg;
    atomic_store_explicit(&pool->pending, pool->threads - 1, memory_order_relaxed);
    pool->gen++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);
    fn(arg, 0, pool->threads);
    for (int spin = 0; spin < DONE_SPINS; spin++) {
        if (atomic_load_explicit(&pool->pending, memory_order_acquire) == 0)
            return;
        CPU_RELAX();
    }
    pthread_mutex_lock(&pool->mu);
    while (atomic_load_explicit(&pool->pending, memory_order_acquire) != 0)
        pthread_cond_wait(&pool->done, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
}

typedef struct {
    atomic_llong next;
    long long nchunks;
    pdbx_cpu_chunk_task fn;
    void *arg;
} chunk_run;

static void chunk_part(void *arg, int part, int parts)
{
    (void)parts;
    chunk_run *R = arg;
    for (;;) {
        long long chunk = atomic_fetch_add_explicit(&R->next, 1, memory_order_relaxed);
        if (chunk >= R->nchunks)
            return;
        R->fn(R->arg, chunk, part);
    }
}

void pdbx_cpu_pool_for(pdbx_cpu_pool *pool, long long nchunks, pdbx_cpu_chunk_task fn, void *arg)
{
    if (nchunks <= 0)
        return;
    if (!pool || nchunks == 1) {
        for (long long chunk = 0; chunk < nchunks; chunk++)
            fn(arg, chunk, 0);
        return;
    }
    chunk_run R = { .nchunks = nchunks, .fn = fn, .arg = arg };
    atomic_init(&R.next, 0);
    pdbx_cpu_pool_run(pool, chunk_part, &R);
}
