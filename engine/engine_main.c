/* engine_main.c: main() of pdbx-engine, the MPI profiling engine.
 *
 *   mpirun -np N pdbx-engine --spec FILE --store DIR [--run-id ID] [--backend B]
 *
 * Order of events on every rank: parse args; rank 0 loads and validates the spec and sends it
 * to the others (a bad spec: one message from rank 0, exit 2 everywhere); discover nodes and
 * hosts; pick and start the backends; rank 0 creates (or, with an existing --run-id, opens)
 * the run and writes run_start (or launch); run the sweep; rank 0 writes run_end when the
 * whole plan is done or the run was cancelled. Exit codes: 0 done or cancelled, 1 runtime
 * failure, 2 usage error (bad arguments, bad spec, no config for this rank count).
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/backends/registry.h"
#include "engine/engine_args.h"
#include "engine/engine_env.h"
#include "engine/engine_events.h"
#include "engine/engine_sweep.h"
#include "engine/engine_watch.h"
#include "engine/plan/plan.h"
#include "store/store.h"

#define ERR_LEN 1024

/* Every rank learns whether any rank failed (start-up steps that may fail on one rank). */
static int any_failed(int mine)
{
    int any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

static int finish(int code)
{
    MPI_Finalize();
    return code;
}

/* run_end through ev (the engine's writer, or the watchdog's own: see on_timeout) */
static void write_end_to(pdbx_events *ev_w, double t_start, const char *status, const char *reason)
{
    if (!ev_w)
        return;
    pdbx_events_heartbeat_stop(ev_w);
    pdbx_events_progress_now(ev_w);
    cJSON *ev = cJSON_CreateObject();
    if (!cJSON_AddStringToObject(ev, "type", "run_end") ||
        !cJSON_AddStringToObject(ev, "status", status) ||
        !cJSON_AddStringToObject(ev, "reason", reason ? reason : "") ||
        !cJSON_AddNumberToObject(ev, "elapsed_s", pdbx_engine_now() - t_start)) {
        cJSON_Delete(ev);          /* pdbx_events_append reports the NULL event */
        ev = NULL;
    }
    char err[ERR_LEN];
    if (pdbx_events_append(ev_w, ev, err, sizeof err) != 0)
        fprintf(stderr, "pdbx-engine: writing run_end: %s\n", err);
}

static void write_end(pdbx_engine *e, const char *status, const char *reason)
{
    write_end_to(e->ev, e->t_start, status, reason);
}

static void on_timeout(const char *what, int point, double age_s, void *ctx)
{
    pdbx_engine *e = ctx;
    char reason[256];
    if (point >= 0)
        snprintf(reason, sizeof reason, "timeout: %s on point %d after %.1f s (rank %d)", what,
                 point, age_s, e->rank);
    else
        snprintf(reason, sizeof reason, "timeout: %s after %.1f s (rank %d)", what, age_s, e->rank);
    fprintf(stderr, "pdbx-engine: %s: aborting\n", reason);
    if (e->rank == 0 && e->ev) {
        write_end(e, "failed", reason);
    } else if (!pdbx_events_file_has_end(e->run_path)) {
        /* rank 0 did not report (it may be the one stuck outside MPI): this rank does */
        pdbx_events *ev = NULL;
        char err[ERR_LEN];
        /* its own writer: e->ev belongs to the main thread, which may still be reading it */
        if (pdbx_events_open(e->store_dir, e->run_id, 1, &ev, err, sizeof err) == 0)
            write_end_to(ev, e->t_start, "failed", reason);
    }
    MPI_Abort(MPI_COMM_WORLD, 4);
    _exit(4);
}

/* Rank 0, append mode: which points earlier launches already ended. */
typedef struct {
    unsigned char *ended;
    size_t n;
} ended_ctx;

static int collect_ended(const cJSON *event, void *ctx)
{
    ended_ctx *c = ctx;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(event, "type");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(event, "point");
    if (cJSON_IsString(t) && strcmp(t->valuestring, "point_end") == 0 && cJSON_IsNumber(p) &&
        p->valuedouble >= 0 && p->valuedouble < (double)c->n)   /* in range before the cast */
        c->ended[(size_t)p->valuedouble] = 1;
    return 0;
}

static size_t count_ended(const char *path, unsigned char *ended, size_t n)
{
    ended_ctx c = { ended, n };
    pdbx_scan_result res;
    char err[ERR_LEN];
    memset(ended, 0, n);
    if (pdbx_scan_file(path, 0, collect_ended, &c, &res, err, sizeof err) != 0)
        return 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ended[i];
    return k;
}

int main(int argc, char **argv)
{
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "pdbx-engine: MPI_Init_thread failed\n");
        return 1;
    }
    pdbx_engine eng;
    pdbx_engine *e = &eng;
    memset(e, 0, sizeof *e);
    MPI_Comm_rank(MPI_COMM_WORLD, &e->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &e->size);
    e->t_start = pdbx_engine_now();
    char err[ERR_LEN] = "";
    int rc = 0, code = 0;

    /* ---- arguments and spec (rank 0 speaks) ---- */
    pdbx_engine_args args;
    if (pdbx_engine_args_parse(argc, argv, &args, err, sizeof err) != 0) {
        if (e->rank == 0)
            fprintf(stderr, "pdbx-engine: %s (see --help)\n", err);
        return finish(2);
    }
    if (args.help) {
        if (e->rank == 0)
            fputs(pdbx_engine_usage(), stdout);
        return finish(0);
    }
    int bad = 0;
    if (e->rank == 0) {
        if (pdbx_spec_load(args.spec_path, &e->spec, err, sizeof err) != 0 ||
            (args.backend && pdbx_spec_set(&e->spec, "backend", args.backend, err, sizeof err) != 0) ||
            pdbx_spec_validate(&e->spec, err, sizeof err) != 0) {
            /* the planner's messages usually name the file already */
            if (strstr(err, args.spec_path))
                fprintf(stderr, "pdbx-engine: %s\n", err);
            else
                fprintf(stderr, "pdbx-engine: %s: %s\n", args.spec_path, err);
            bad = 1;
        }
        const char *fault = getenv("PDBX_FAULT");
        if (!bad && pdbx_fault_parse(fault, &e->fault, err, sizeof err) != 0) {
            fprintf(stderr, "pdbx-engine: %s\n", err);
            bad = 1;
        }
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (bad)
        return finish(2);
    /* pdbx_spec and pdbx_fault are plain data (no pointers): the same binary on every rank */
    MPI_Bcast(&e->spec, (int)sizeof e->spec, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Bcast(&e->fault, (int)sizeof e->fault, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (pdbx_plan_expand(&e->spec, &e->points, &e->npoints, err, sizeof err) != 0) {
        if (e->rank == 0)
            fprintf(stderr, "pdbx-engine: %s: %s\n", args.spec_path, err);
        return finish(2);
    }
    size_t mine = 0;
    char sizes[256] = "";
    for (int c = 0; c < e->spec.nconfigs; c++) {
        const pdbx_parallel *p = &e->spec.configs[c];
        int n = p->tp * p->pp * p->dp;
        mine += n == e->size;
        int seen = 0;          /* each rank count once, in config order */
        for (int k = 0; k < c; k++) {
            const pdbx_parallel *q = &e->spec.configs[k];
            seen |= q->tp * q->pp * q->dp == n;
        }
        char one[32];
        snprintf(one, sizeof one, "%s%d", sizes[0] ? ", " : "", n);
        if (!seen && strlen(sizes) + strlen(one) < sizeof sizes)
            strcat(sizes, one);
    }
    if (mine == 0) {
        if (e->rank == 0)
            fprintf(stderr, "pdbx-engine: %s: no config needs %d ranks (the configs need: %s); "
                    "launch with mpirun -np set to one of those\n", args.spec_path, e->size, sizes);
        free(e->points);
        return finish(2);
    }

    /* ---- nodes, threads, backends ---- */
    pdbx_watch_install_signals();
    if (any_failed(pdbx_env_discover(e) != 0)) {
        if (e->rank == 0)
            fprintf(stderr, "pdbx-engine: discovering nodes and hosts failed\n");
        code = 1;
        goto out;
    }
    char note[256];
    e->blas_threads = pdbx_env_blas_threads(e->local_size, note, sizeof note);
    char notice[ERR_LEN];
    rc = pdbx_backend_choose(e->spec.backend, &e->be, notice, sizeof notice, err, sizeof err);
    if (any_failed(rc != 0)) {
        if (e->rank == 0)
            fprintf(stderr, "pdbx-engine: %s\n", rc ? err : "backend selection failed on another rank");
        code = 1;
        goto out;
    }
    if (e->rank == 0 && notice[0])
        fprintf(stderr, "pdbx-engine: %s\n", notice);
    pdbx_compute_config cfg = {
        .local_rank = e->local_rank, .local_size = e->local_size, .world_rank = e->rank,
        .world_size = e->size, .blas_threads = e->blas_threads, .dtype = e->spec.dtype,
        .flush_l2 = e->spec.flush_l2,
    };
    rc = e->be.compute->init(&cfg, &e->compute, err, sizeof err);
    if (rc == 0)
        rc = e->be.comm->init(e->compute, &e->comm, err, sizeof err);
    if (any_failed(rc != 0)) {
        if (rc != 0 && (e->rank == 0 || e->local_rank == 0))
            fprintf(stderr, "pdbx-engine: rank %d: %s\n", e->rank, err);
        code = 1;
        goto out;
    }

    /* ---- the run file (rank 0) ---- */
    snprintf(e->store_dir, sizeof e->store_dir, "%s", args.store_dir);
    int append = 0;
    unsigned char *ended = NULL;
    size_t already = 0;
    if (e->rank == 0) {
        rc = 0;
        if (args.run_id)
            snprintf(e->run_id, sizeof e->run_id, "%s", args.run_id);
        else
            pdbx_store_new_id(e->run_id);
        pdbx_store *st = NULL;
        if (pdbx_store_open(e->store_dir, 1, &st, err, sizeof err) != 0) {
            rc = -1;
        } else {
            pdbx_store_run_path(st, e->run_id, e->run_path, sizeof e->run_path);
            pdbx_store_close(st);
            append = access(e->run_path, F_OK) == 0;
            if (append) {
                ended = calloc(e->npoints ? e->npoints : 1, 1);
                already = ended ? count_ended(e->run_path, ended, e->npoints) : 0;
                if (pdbx_events_file_has_end(e->run_path)) {
                    snprintf(err, sizeof err, "run %.63s already ended", e->run_id);
                    rc = -1;
                }
            }
            e->append = append;
            if (rc == 0)
                rc = pdbx_events_open(e->store_dir, e->run_id, append, &e->ev, err, sizeof err);
            if (rc == 0 && pdbx_events_append(e->ev, pdbx_env_start_event(e), err, sizeof err) != 0)
                rc = -1;
            if (rc == 0 && note[0])
                pdbx_events_warning(e->ev, note);
            if (rc == 0 && notice[0])
                pdbx_events_warning(e->ev, notice);
        }
        if (rc != 0)
            fprintf(stderr, "pdbx-engine: %s\n", err);
        else
            fprintf(stderr, "pdbx-engine: run %s (%s, %d ranks, %d BLAS threads per rank)\n",
                    e->run_id, e->be.compute->name, e->size, e->blas_threads);
    }
    if (any_failed(e->rank == 0 && rc != 0)) {
        code = 1;
        goto out;
    }
    MPI_Bcast(e->run_id, sizeof e->run_id, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Bcast(e->run_path, sizeof e->run_path, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Bcast(&e->append, 1, MPI_INT, 0, MPI_COMM_WORLD);

    /* ---- sweep ---- */
    if (e->ev) {
        double work = 0;
        for (size_t i = 0; i < e->npoints; i++) {
            const pdbx_plan_point *p = &e->points[i];
            if (p->ranks == e->size)
                work += p->mbs;
        }
        pdbx_events_progress_plan(e->ev, (int)e->npoints, (int)already, work);
        if (pdbx_events_heartbeat_start(e->ev) != 0)
            pdbx_events_warning(e->ev, "progress heartbeat thread not started: no progress "
                                "events until the run ends");
    }
    if (pdbx_watch_start(e->spec.timeout_s, e->rank == 0 ? 0.0 : 3.0, on_timeout, e) != 0) {
        fprintf(stderr, "pdbx-engine: rank %d: watchdog thread not started: timeout_s is not "
                "enforced on this rank\n", e->rank);
        if (e->ev)
            pdbx_events_warning(e->ev, "watchdog thread not started on rank 0: timeout_s is not "
                                "enforced there");
    }
    rc = pdbx_engine_sweep(e, err, sizeof err);
    pdbx_watch_stop();

    if (e->rank == 0) {
        if (rc != 0) {
            write_end(e, "failed", err);
            code = 1;
        } else if (e->cancelled) {
            char why[128];
            int sig = pdbx_watch_signal();
            snprintf(why, sizeof why, "cancelled by %s",
                     sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : sig == SIGUSR1 ? "SIGUSR1 (pdbx cancel)"
                                                                              : "a signal on another rank");
            write_end(e, "cancelled", why);
        } else {
            size_t done = ended ? count_ended(e->run_path, ended, e->npoints) : 0;
            if (!ended) {
                ended = calloc(e->npoints ? e->npoints : 1, 1);
                done = ended ? count_ended(e->run_path, ended, e->npoints) : 0;
            }
            if (done >= e->npoints) {
                write_end(e, "complete", "");
            } else {
                pdbx_events_heartbeat_stop(e->ev);
                pdbx_events_progress_now(e->ev);
                fprintf(stderr, "pdbx-engine: run %s: %zu of %zu points done; the others need "
                        "another rank count (continue with --run-id %s)\n", e->run_id, done,
                        e->npoints, e->run_id);
            }
        }
    }
    free(ended);
    if (e->rank == 0)
        printf("%s\n", e->run_id);
out:
    if (e->ev)
        pdbx_events_close(e->ev);
    if (e->comm)
        e->be.comm->fini(e->comm);
    if (e->compute)
        e->be.compute->fini(e->compute);
    pdbx_backend_unload(&e->be);
    free(e->hosts);
    free(e->points);
    return finish(code);
}
