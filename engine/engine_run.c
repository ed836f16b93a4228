/* engine_run.c: the lifecycle of one launch (engine_run.h). */
#include "engine/engine_run.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "engine/engine_agree.h"
#include "engine/engine_collsweep.h"
#include "engine/engine_infer.h"
#include "engine/engine_env.h"
#include "engine/engine_validate.h"
#include "engine/engine_watch.h"
#include "store/events.h"
#include "store/stop_request.h"
#include "store/progress.h"
#include "store/store.h"
#include "store/util/clock.h"
#include "store/version.h"

#define ERR_LEN 1024

/* ---- configure ------------------------------------------------------------------------- */

/* Rank 0: the spec (with --backend applied) and PDBX_FAULT; 0, or 1 after printing why. */
static int load_spec(pdbx_engine *e, const pdbx_engine_args *args)
{
    char err[ERR_LEN] = "";
    if (pdbx_spec_load(args->spec_path, &e->spec, err, sizeof err) != 0 ||
        (args->backend && pdbx_spec_set(&e->spec, "backend", args->backend, err, sizeof err) != 0) ||
        pdbx_spec_validate(&e->spec, err, sizeof err) != 0) {
        /* the planner's messages usually name the file already */
        if (strstr(err, args->spec_path))
            fprintf(stderr, "pdbx-engine: %s\n", err);
        else
            fprintf(stderr, "pdbx-engine: %s: %s\n", args->spec_path, err);
        return 1;
    }
    if (pdbx_fault_parse(getenv("PDBX_FAULT"), &e->fault, err, sizeof err) != 0) {
        fprintf(stderr, "pdbx-engine: %s\n", err);
        return 1;
    }
    return 0;
}

/* Whether some config needs this launch's rank count; else rank 0 says which counts do. */
static int configs_fit(const pdbx_engine *e, const char *spec_path)
{
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
    if (mine == 0 && e->rank == 0)
        fprintf(stderr, "pdbx-engine: %s: no config needs %d ranks (the configs need: %s); "
                "launch with mpirun -np set to one of those\n", spec_path, e->size, sizes);
    return mine > 0;
}

int pdbx_run_configure(pdbx_engine *e, int argc, char **argv, pdbx_engine_args *args)
{
    char err[ERR_LEN] = "";
    if (pdbx_engine_args_parse(argc, argv, args, err, sizeof err) != 0) {
        if (e->rank == 0)
            fprintf(stderr, "pdbx-engine: %s (see --help)\n", err);
        return 2;
    }
    if (args->help) {
        if (e->rank == 0)
            fputs(pdbx_engine_usage(), stdout);
        return 0;
    }
    if (args->version) {   /* what a carried binary prints to show it starts (gpu_first_light.sh) */
        if (e->rank == 0)
            printf("pdbx-engine %s (%s)\n", pdbx_version(), pdbx_git_rev());
        return 0;
    }
    int bad = e->rank == 0 ? load_spec(e, args) : 0;
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (bad)
        return 2;
    /* pdbx_spec and pdbx_fault are plain data (no pointers): the same binary on every rank */
    MPI_Bcast(&e->spec, (int)sizeof e->spec, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Bcast(&e->fault, (int)sizeof e->fault, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (args->validate) {
        /* a validation measures its own configuration, not the spec's points */
        if (pdbx_validate_resolve(&args->v, &e->spec, e->size, err, sizeof err) != 0) {
            if (e->rank == 0)
                fprintf(stderr, "pdbx-engine: %s\n", err);
            return 2;
        }
        return PDBX_RUN_GO;
    }
    if (pdbx_plan_expand(&e->spec, &e->points, &e->npoints, err, sizeof err) != 0) {
        if (e->rank == 0)
            fprintf(stderr, "pdbx-engine: %s: %s\n", args->spec_path, err);
        return 2;
    }
    return configs_fit(e, args->spec_path) ? PDBX_RUN_GO : 2;
}

/* ---- start ----------------------------------------------------------------------------- */

/* Compute and comm backends on every rank; 0, 1 when any rank failed (it says why), or 2 when
 * the loaded backend cannot run the spec's fp32_math / gemm_api (the same on every rank). */
static int start_backends(pdbx_engine *e, char *notice, size_t nlen)
{
    char err[ERR_LEN] = "";
    int rc = pdbx_backend_choose(e->spec.backend, &e->be, notice, nlen, err, sizeof err);
    if (pdbx_agree_any(rc != 0)) {
        if (e->rank == 0)
            fprintf(stderr, "pdbx-engine: %s\n", rc ? err : "backend selection failed on another rank");
        return 1;
    }
    if (e->rank == 0 && notice[0])
        fprintf(stderr, "pdbx-engine: %s\n", notice);
    pdbx_compute_config cfg = {
        .local_rank = e->local_rank, .local_size = e->local_size, .world_rank = e->rank,
        .world_size = e->size, .blas_threads = e->blas_threads, .dtype = e->spec.dtype,
        .flush_l2 = e->spec.flush_l2, .flash_attention = e->spec.flash_attention,
        .fp32_math = e->spec.fp32_math, .gemm_api = e->spec.gemm_api,
    };
    /* backend auto is resolved now: a mode the loaded backend cannot run is a usage error */
    if (pdbx_backend_modes_check(pdbx_engine_backend_kind(e), e->spec.fp32_math, e->spec.gemm_api,
                                 err, sizeof err) != 0 ||
        pdbx_backend_model_check(pdbx_engine_backend_kind(e), &e->spec.model, err, sizeof err) != 0) {
        if (e->rank == 0)
            fprintf(stderr, "pdbx-engine: %s\n", err);
        return 2;
    }
    rc = e->be.compute->init(&cfg, &e->compute, err, sizeof err);
    if (rc == 0)
        rc = e->be.comm->init(e->compute, &e->comm, err, sizeof err);
    if (pdbx_agree_any(rc != 0)) {
        if (rc != 0 && (e->rank == 0 || e->local_rank == 0))
            fprintf(stderr, "pdbx-engine: rank %d: %s\n", e->rank, err);
        return 1;
    }
    return 0;
}

/* The profile memory of every point as the loaded backend with this engine's BLAS threads
 * allocates it (the plan assumed the spec's backend and one thread): the OOM stop and the
 * point_end events use these. 0, or 1 when a point's shape cannot be planned (said once). */
static int replan_profile(pdbx_engine *e)
{
    char err[ERR_LEN] = "";
    int bad = 0;
    for (size_t i = 0; i < e->npoints && !bad; i++)
        bad = pdbx_plan_point_profile(&e->spec, &e->points[i], pdbx_engine_backend_kind(e),
                                      e->blas_threads, err, sizeof err) != 0;
    if (bad && e->rank == 0)
        fprintf(stderr, "pdbx-engine: %s\n", err);
    return bad;
}

/* Rank 0, append mode: which points earlier launches already ended. */
typedef struct {
    unsigned char *ended;
    size_t n;
} ended_ctx;

static int collect_ended(const cJSON *event, void *ctx)
{
    ended_ctx *c = ctx;
    pdbx_ev_point_end pe = { .point = -1 };
    char err[256];
    if (pdbx_event_type_of(event) == PDBX_EV_POINT_END &&
        pdbx_event_decode_point_end(event, &pe, err, sizeof err) == 0 && (size_t)pe.point < c->n)
        c->ended[pe.point] = 1;
    return 0;
}

/* How many distinct plan points the run file has ended (0 when unreadable). */
static size_t count_ended(const char *path, size_t n)
{
    unsigned char *ended = calloc(n ? n : 1, 1);
    ended_ctx c = { ended, n };
    pdbx_scan_result res;
    char err[ERR_LEN];
    size_t k = 0;
    if (ended && pdbx_scan_file(path, 0, collect_ended, &c, &res, err, sizeof err) == 0)
        for (size_t i = 0; i < n; i++)
            k += ended[i];
    free(ended);
    return k;
}

/* Rank 0: the run file, run_start (or launch) and the start-up warnings. 0 or -1 (err). */
static int open_run(pdbx_engine *e, const pdbx_engine_args *args, const char *note,
                    const char *notice, char *err, size_t errlen)
{
    if (args->run_id)
        snprintf(e->run_id, sizeof e->run_id, "%s", args->run_id);
    else
        pdbx_store_new_id(e->run_id);
    pdbx_store *st = NULL;
    if (pdbx_store_open(e->store_dir, 1, &st, err, errlen) != 0)
        return -1;
    pdbx_store_run_path(st, e->run_id, e->run_path, sizeof e->run_path);
    pdbx_store_close(st);
    e->append = access(e->run_path, F_OK) == 0;
    if (e->append) {
        e->already = count_ended(e->run_path, e->npoints);
        if (pdbx_events_file_has_end(e->run_path)) {
            snprintf(err, errlen, "run %.63s already ended", e->run_id);
            return -1;
        }
    }
    if (pdbx_events_open(e->store_dir, e->run_id, e->append, &e->ev, err, errlen) != 0 ||
        pdbx_events_append(e->ev, pdbx_env_start_event(e), err, errlen) != 0)
        return -1;
    if (note[0])
        pdbx_events_warning(e->ev, note);
    if (notice[0])
        pdbx_events_warning(e->ev, notice);
    return 0;
}

int pdbx_run_start(pdbx_engine *e, const pdbx_engine_args *args)
{
    pdbx_watch_install_signals();
    if (pdbx_agree_any(pdbx_env_discover(e) != 0)) {
        if (e->rank == 0)
            fprintf(stderr, "pdbx-engine: discovering nodes and hosts failed\n");
        return 1;
    }
    char note[256], notice[ERR_LEN] = "";
    e->blas_threads = pdbx_env_blas_threads(e->local_size, note, sizeof note);
    int started = start_backends(e, notice, sizeof notice);
    if (started != 0)
        return started;
    if (pdbx_env_gather_placement(e) != 0) {
        if (e->rank == 0)
            fprintf(stderr, "pdbx-engine: out of memory gathering the rank placement\n");
        return 1;
    }
    if (args->validate) {
        if (e->rank == 0)
            fprintf(stderr, "pdbx-engine: validating %dx%dx%d MBS %d GBS %d, %d layers (%s, %d "
                    "BLAS threads per rank)\n", args->v.tp, args->v.pp, args->v.dp, args->v.mbs,
                    args->v.gbs, args->v.layers, e->be.compute->name, e->blas_threads);
        return PDBX_RUN_GO;
    }
    if (replan_profile(e) != 0)
        return 1;
    snprintf(e->store_dir, sizeof e->store_dir, "%s", args->store_dir);
    int rc = 0;
    if (e->rank == 0) {
        char err[ERR_LEN] = "";
        rc = open_run(e, args, note, notice, err, sizeof err);
        if (rc != 0)
            fprintf(stderr, "pdbx-engine: %s\n", err);
        else
            fprintf(stderr, "pdbx-engine: run %s (%s, %d ranks, %d BLAS threads per rank)\n",
                    e->run_id, e->be.compute->name, e->size, e->blas_threads);
    }
    if (pdbx_agree_any(e->rank == 0 && rc != 0))
        return 1;
    MPI_Bcast(e->run_id, sizeof e->run_id, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Bcast(e->run_path, sizeof e->run_path, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Bcast(&e->append, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return PDBX_RUN_GO;
}

/* ---- sweep ----------------------------------------------------------------------------- */

/* run_end through ev_w (the engine's writer, or the watchdog's own: see on_timeout); written
 * into the space the writer keeps for it, so it lands even when the disk filled up. If even
 * that fails, the log says how the run ended (the store shows it for a run without run_end).
 * Exactly one per run: every writer of a run_end (rank 0 at the end; any rank's watchdog, whose
 * timeouts can fire in the same millisecond) holds an exclusive flock on the run file while it
 * checks that the file has none and appends it. */
static void write_end_ex(pdbx_events *ev_w, const char *run_path, double t_start,
                         pdbx_ev_run_end *re)
{
    if (!ev_w)
        return;
    pdbx_events_heartbeat_stop(ev_w);
    int lock = open(run_path, O_RDONLY | O_CLOEXEC);
    if (lock >= 0 && flock(lock, LOCK_EX) != 0) {
        close(lock);
        lock = -1;          /* no lock (a file system without flock): write as before */
    }
    if (pdbx_events_file_has_end(run_path)) {
        if (lock >= 0)
            close(lock);    /* closing releases the lock */
        return;
    }
    if (!pdbx_events_failed(ev_w, NULL, 0))
        pdbx_events_progress_now(ev_w);
    re->elapsed_s = pdbx_mono_s() - t_start;
    if (!re->reason)
        re->reason = "";
    cJSON *ev = pdbx_event_run_end_ex(re);
    char err[ERR_LEN];
    if (pdbx_events_append_end(ev_w, ev, err, sizeof err) != 0)
        fprintf(stderr, "pdbx-engine: run_end not written: %s: %s (%s)\n",
                pdbx_run_status_name(re->status), re->reason, err);
    if (lock >= 0)
        close(lock);
}

static void write_end_to(pdbx_events *ev_w, const char *run_path, double t_start,
                         pdbx_run_status status, const char *reason)
{
    pdbx_ev_run_end re = { .status = status, .reason = reason, .in_flight_point = -1 };
    write_end_ex(ev_w, run_path, t_start, &re);
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
        write_end_to(e->ev, e->run_path, e->t_start, PDBX_RUN_FAILED, reason);
    } else if (!pdbx_events_file_has_end(e->run_path)) {
        /* rank 0 did not report (it may be the one stuck outside MPI): this rank does */
        pdbx_events *ev = NULL;
        char err[ERR_LEN];
        /* its own writer: e->ev belongs to the main thread, which may still be reading it */
        if (pdbx_events_open(e->store_dir, e->run_id, 1, &ev, err, sizeof err) == 0)
            write_end_to(ev, e->run_path, e->t_start, PDBX_RUN_FAILED, reason);
    }
    MPI_Abort(MPI_COMM_WORLD, 4);
    _exit(4);
}

/* Rank 0: the collectives measurements of the whole run for the heartbeat: the supervisor
 * launches once per distinct rank count of the plan, and each launch sweeps its world. */
static void progress_colls(pdbx_engine *e)
{
    int run_total = 0, worlds[PDBX_MAX_CONFIGS];
    size_t nworlds = 0;
    for (size_t i = 0; i < e->npoints; i++) {
        size_t k = 0;
        while (k < nworlds && worlds[k] != e->points[i].ranks)
            k++;
        if (k < nworlds || nworlds == PDBX_MAX_CONFIGS)
            continue;
        worlds[nworlds++] = e->points[i].ranks;
        /* another launch's placement is not known here: its inter-node group, if any, is
         * counted when it runs (the total only grows to done + mine below) */
        run_total += pdbx_coll_sweep_count(&e->spec, e->points[i].ranks, 1);
    }
    int nodes = pdbx_coll_sweep_nodes(e);
    int mine = pdbx_coll_sweep_count(&e->spec, e->size, nodes);
    if (nodes >= 2 && nodes < e->size)
        run_total += mine - pdbx_coll_sweep_count(&e->spec, e->size, 1);
    int before = e->append ? pdbx_events_file_colls(e->run_path) : 0;
    if (run_total < before + mine)
        run_total = before + mine;
    pdbx_events_progress_colls(e->ev, run_total, before, mine);
    /* the inference phase: every launch's share (engine_infer.h); one launched before this
     * one is counted at its planned work */
    double infer_total = 0;
    for (size_t k = 0; k < nworlds; k++)
        infer_total += pdbx_infer_work(&e->spec, worlds[k]);
    double infer_mine = pdbx_infer_work(&e->spec, e->size);
    if (infer_total < infer_mine)
        infer_total = infer_mine;
    if (infer_total > 0)
        pdbx_events_progress_infer(e->ev, infer_total, infer_mine);
}

/* Rank 0: progress plan and heartbeat; every rank: the watchdog. */
static void start_watching(pdbx_engine *e)
{
    if (e->ev) {
        double work = 0;
        for (size_t i = 0; i < e->npoints; i++) {
            const pdbx_plan_point *p = &e->points[i];
            if (p->ranks == e->size)
                work += pdbx_progress_work(p->mbs, p->tp);
        }
        pdbx_events_progress_plan(e->ev, (int)e->npoints, (int)e->already, work,
                                  e->spec.layers_profiled);
        progress_colls(e);
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
}

/* Rank 0 after a sweep that ran to its end: run_end complete once every plan point has ended
 * (over all launches of the run), else a line saying how to continue. */
static void end_or_continue(pdbx_engine *e)
{
    size_t done = count_ended(e->run_path, e->npoints);
    if (done >= e->npoints) {
        write_end_to(e->ev, e->run_path, e->t_start, PDBX_RUN_COMPLETE, "");
        return;
    }
    pdbx_events_heartbeat_stop(e->ev);
    pdbx_events_progress_now(e->ev);
    fprintf(stderr, "pdbx-engine: run %s: %zu of %zu points done; the others need another rank "
            "count (continue with --run-id %s)\n", e->run_id, done, e->npoints, e->run_id);
}

/* Who stopped the sweep (e->stop, agreed): the stop request next to the run names pdbx
 * cancel, the explorer or Ctrl-C; a signal nobody announced is a signal. */
static pdbx_end_cause stop_cause(const pdbx_engine *e, char *who, size_t len)
{
    char detail[PDBX_STOP_DETAIL_MAX];
    pdbx_end_cause cause;
    if (e->stop == PDBX_STOP_SUPERVISOR_LOST) {
        const char *pid = getenv("PDBX_LAUNCHER_PID");
        if (pid)
            snprintf(who, len, "supervisor lost: the pdbx run supervisor (pid %.20s) died", pid);
        else
            snprintf(who, len, "supervisor lost: the pdbx run supervisor died");
        return PDBX_CAUSE_SUPERVISOR_LOST;
    }
    if (pdbx_stop_request_read(e->store_dir, e->run_id, &cause, detail) == 0) {
        snprintf(who, len, "cancelled by %s", detail[0] ? detail : pdbx_end_cause_text(cause));
        return cause;
    }
    static const char *const unannounced[] = {
        [PDBX_STOP_SIGINT] = "SIGINT to a rank", [PDBX_STOP_SIGTERM] = "SIGTERM to a rank",
        [PDBX_STOP_CANCEL] = "SIGUSR1 to mpirun",
    };
    int code = e->stop >= PDBX_STOP_SIGINT && e->stop <= PDBX_STOP_CANCEL ? e->stop : PDBX_STOP_SIGTERM;
    snprintf(who, len, "cancelled by a signal (%s)", unannounced[code]);
    return PDBX_CAUSE_SIGNAL;
}

/* "; point 3 (TP2 PP1 DP1 MBS 4) in flight dropped" and the like. */
static void fate_text(const pdbx_engine *e, char *buf, size_t len)
{
    const pdbx_plan_point *p = NULL;
    for (size_t i = 0; i < e->npoints && e->in_flight_point >= 0; i++)
        if (e->points[i].index == e->in_flight_point)
            p = &e->points[i];
    char which[96] = "";
    if (p)
        snprintf(which, sizeof which, "point %d (TP%d PP%d DP%d MBS %d)", p->index, p->tp, p->pp,
                 p->dp, p->mbs);
    switch (e->in_flight) {
    case PDBX_IN_FLIGHT_DROPPED:
        snprintf(buf, len, "; %s in flight dropped", which);
        break;
    case PDBX_IN_FLIGHT_FINISHED:
        snprintf(buf, len, "; %s in flight finished and kept", which);
        break;
    default:
        snprintf(buf, len, "; no point in flight");
        break;
    }
}

/* Rank 0: run_end of a sweep that was stopped before its end. */
static void write_stopped_end(pdbx_engine *e)
{
    char who[256], fate[128], reason[640], why[512];
    pdbx_ev_run_end re = { .status = PDBX_RUN_CANCELLED, .in_flight_point = -1 };
    if (!e->in_flight)
        e->in_flight = PDBX_IN_FLIGHT_NONE;
    fate_text(e, fate, sizeof fate);
    int failed = pdbx_events_failed(e->ev, why, sizeof why);
    if (failed) {
        re.status = PDBX_RUN_FAILED;
        re.cause = PDBX_CAUSE_WRITE;
        /* the run file is the run itself: its path adds nothing to the reason */
        size_t n = strlen(e->run_path);
        const char *what = strncmp(why, e->run_path, n) == 0 && strncmp(why + n, ": ", 2) == 0
                               ? why + n + 2 : why;
        snprintf(reason, sizeof reason, "%s (%.500s); the events written before it are kept",
                 failed == 2 ? "disk full" : "writing the run file failed", what);
    } else {
        re.cause = stop_cause(e, who, sizeof who);
        if (re.cause == PDBX_CAUSE_SUPERVISOR_LOST)
            re.status = PDBX_RUN_FAILED;
        snprintf(reason, sizeof reason, "%.256s%.128s", who, fate);
        re.in_flight = (pdbx_in_flight)e->in_flight;
        re.in_flight_point = e->in_flight == PDBX_IN_FLIGHT_NONE ? -1 : e->in_flight_point;
    }
    re.reason = reason;
    write_end_ex(e->ev, e->run_path, e->t_start, &re);
}

int pdbx_run_validate(pdbx_engine *e, const pdbx_engine_args *args)
{
    char err[ERR_LEN] = "";
    if (pdbx_validate_run(e, &args->v, err, sizeof err) != 0) {
        if (e->rank == 0)
            fprintf(stderr, "pdbx-engine: validate: %s\n", err);
        return 1;
    }
    return 0;
}

int pdbx_run_sweep(pdbx_engine *e)
{
    char err[ERR_LEN] = "";
    start_watching(e);
    int rc = pdbx_engine_sweep(e, err, sizeof err);
    pdbx_watch_stop();
    int code = 0;
    if (e->rank == 0) {
        if (rc != 0) {
            write_end_to(e->ev, e->run_path, e->t_start, PDBX_RUN_FAILED, err);
            code = 1;
        } else if (e->cancelled || pdbx_events_failed(e->ev, NULL, 0)) {
            write_stopped_end(e);
            code = pdbx_events_failed(e->ev, NULL, 0) || e->stop == PDBX_STOP_SUPERVISOR_LOST;
        } else {
            end_or_continue(e);
        }
        printf("%s\n", e->run_id);
    }
    return code;
}

void pdbx_run_close(pdbx_engine *e)
{
    if (e->ev)
        pdbx_events_close(e->ev);
    if (e->comm)
        e->be.comm->fini(e->comm);
    if (e->compute)
        e->be.compute->fini(e->compute);
    pdbx_backend_unload(&e->be);
    pdbx_noise_fini(&e->noise);
    free(e->hosts);
    free(e->places);
    free(e->points);
}
