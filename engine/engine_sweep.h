/* engine_sweep.h: the state of one pdbx-engine launch and the sweep it runs.
 *
 * Every rank runs every point of this launch (the points whose tp*pp*dp equals the world
 * size) in lockstep: per point the ranks build the config's TP/DP/PP communicators (Megatron
 * order, engine_grid.h), prepare buffers, agree on the outcome (ok, oom, error), run warmup and
 * measured steps, and send their per-op statistics to rank 0, which writes the events.
 * Ranks agree on cancellation (any rank's SIGTERM/SIGINT/SIGUSR1) at every step boundary.
 */
#ifndef PDBX_ENGINE_SWEEP_H
#define PDBX_ENGINE_SWEEP_H

#include <mpi.h>
#include <string.h>

#include "engine/backends/backend.h"
#include "engine/backends/registry.h"
#include "engine/engine_events.h"
#include "engine/engine_noise.h"
#include "engine/engine_watch.h"
#include "engine/plan/plan.h"
#include "store/events.h"

#define PDBX_HOST_MAX 64

typedef struct {
    int rank, size;               /* world */
    int local_rank, local_size;   /* this node */
    int ranks_per_node;           /* max over nodes */
    char (*hosts)[PDBX_HOST_MAX]; /* every rank's host name (all ranks hold the list) */
    pdbx_ev_rank_place *places;   /* rank 0: every rank's placement (engine_env.h) */
    int blas_threads;

    pdbx_spec spec;
    pdbx_plan_point *points;
    size_t npoints;

    pdbx_noise noise;             /* each point's load figures (engine_noise.h; set up by
                                   * pdbx_env_discover, closed by pdbx_run_close) */
    pdbx_backend_choice be;
    pdbx_compute *compute;
    pdbx_comm *comm;

    pdbx_events *ev;              /* rank 0 only */
    char run_id[PDBX_RUN_ID_MAX];
    char store_dir[PDBX_PATH_MAX];
    char run_path[PDBX_PATH_MAX];
    int append;                   /* this launch appends to an existing run */
    pdbx_fault fault;
    size_t already;               /* rank 0: points earlier launches of this run ended */
    double t_start;               /* monotonic seconds at start */
    int cancelled;                /* agreed across ranks */
    int stop;                     /* why (pdbx_stop_code, engine_watch.h), agreed */
    /* rank 0: what became of the point being measured when the sweep stopped
     * (pdbx_in_flight of store/events.h) and which point that was (-1: none) */
    int in_flight, in_flight_point;
} pdbx_engine;

/* The loaded compute backend as the planner names it (cpu, or cuda for any device backend). */
static inline pdbx_backend_kind pdbx_engine_backend_kind(const pdbx_engine *e)
{
    return e->be.compute && strcmp(e->be.compute->name, "cpu") == 0 ? PDBX_BACKEND_CPU
                                                                      : PDBX_BACKEND_CUDA;
}

/* Runs this launch's points and (when the spec asks) the collectives sweep. Returns 0 when the
 * sweep ran to its end or was cancelled (e->cancelled), -1 on a fatal error (err). */
int pdbx_engine_sweep(pdbx_engine *e, char *err, size_t errlen);

#endif
