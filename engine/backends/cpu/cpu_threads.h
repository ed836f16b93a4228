/* cpu_threads.h: the cpu backend's persistent thread pool for its own kernels (norms, SiLU x up,
 * attention core) and for filling a point's buffers.
 *
 * Contract:
 *  - A pool of `threads` threads is the caller plus threads - 1 workers created once (init) and
 *    joined by destroy; the backend sizes it like OpenBLAS (its blas_threads), whose threads are
 *    idle while the backend's own kernels run, so the two never compete for cores.
 *  - pdbx_cpu_pool_run(pool, fn, arg) calls fn(arg, part, parts) once for every part in
 *    [0, parts) with parts = the pool's threads, part 0 on the calling thread, and returns when
 *    every call has returned (memory written by any part is visible to the caller afterwards).
 *    Calls are not reentrant: one run at a time per pool, from one thread.
 *  - A NULL pool (or one of 1 thread) runs fn(arg, 0, 1) on the caller: kernels take a pool
 *    and need no separate single-threaded entry point.
 *  - Idle workers sleep on a condition variable (no spinning between runs: on a shared machine
 *    a spinning worker takes a core from OpenBLAS's threads and from other processes); the
 *    caller spins briefly for the workers' last parts before it sleeps.
 *  - pdbx_cpu_pool_create returns NULL when no worker could be started (the backend then runs
 *    its kernels on one thread, as the pool's NULL contract allows, and says so nowhere: the
 *    thread count it records is OpenBLAS's).
 */
#ifndef PDBX_CPU_THREADS_H
#define PDBX_CPU_THREADS_H

typedef struct pdbx_cpu_pool pdbx_cpu_pool;
typedef void (*pdbx_cpu_task)(void *arg, int part, int parts);

pdbx_cpu_pool *pdbx_cpu_pool_create(int threads);
void pdbx_cpu_pool_destroy(pdbx_cpu_pool *pool);
/* Threads a run uses, the caller included (1 for NULL). */
int pdbx_cpu_pool_threads(const pdbx_cpu_pool *pool);
void pdbx_cpu_pool_run(pdbx_cpu_pool *pool, pdbx_cpu_task fn, void *arg);

/* Dynamic split: fn(arg, chunk, part) for every chunk in [0, nchunks), each exactly once; the
 * pool's parts take the next chunk from a shared counter until none is left, so a part whose
 * thread starts late or is preempted (a core busy with another process) takes fewer chunks and
 * the run does not wait a time slice for it. `part` (0 .. threads - 1) names the calling
 * thread's share of a per-thread scratch. NULL pool: every chunk in order on the caller. */
typedef void (*pdbx_cpu_chunk_task)(void *arg, long long chunk, int part);
void pdbx_cpu_pool_for(pdbx_cpu_pool *pool, long long nchunks, pdbx_cpu_chunk_task fn, void *arg);

#endif
