/* events.h: the run-event schema (docs/events.md): the one place that knows event type names
 * and event field names. Writers build events with the encoders, readers take them apart with
 * the decoders; nothing else in pdbx spells a field name.
 *
 * Contract:
 *  - Encoders return a new cJSON object whose first member is "type" (the raw-prefix matching
 *    below relies on it), or NULL when out of memory (never an event with fields missing).
 *    cJSON arguments an encoder "takes" are attached to the event, or deleted when the event
 *    cannot be built: the caller never frees them.
 *  - Encoders do not add "t": pdbx_run_writer_append stamps it (pdbx_event_stamp).
 *  - Decoders return 0, or -1 with a one-line message naming the event and the field
 *    ("op event (point 3, op attn_q): field \"stats\" must be a stats object").
 *  - Decoding overlays: an optional field that is absent leaves its member of *out as it was,
 *    so callers initialise *out (zero, or the values to keep). Required fields are named in
 *    each decoder's comment. Unknown fields are ignored (forward compatible).
 *  - Strings a decoder returns as `const char *` point into the event (valid while it lives);
 *    arrays it allocates are named in its comment and freed by the caller with free().
 */
#ifndef PDBX_EVENTS_H
#define PDBX_EVENTS_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "store/ops.h"
#include "store/profiledb.h"

typedef enum {
    PDBX_EV_UNKNOWN = 0, PDBX_EV_RUN_START, PDBX_EV_LAUNCH, PDBX_EV_POINT_START, PDBX_EV_OP,
    PDBX_EV_STEP, PDBX_EV_COMM, PDBX_EV_TRACE, PDBX_EV_POINT_END, PDBX_EV_COLL,
    PDBX_EV_PROGRESS, PDBX_EV_WARNING, PDBX_EV_RUN_END, PDBX_EV_INFER_TOKENS, PDBX_EV_INFER_ATTN,
    PDBX_EV_COUNT
} pdbx_event_type;

const char *pdbx_event_type_name(pdbx_event_type t);          /* "run_start", ...; "?" */
pdbx_event_type pdbx_event_type_from_name(const char *name);   /* UNKNOWN when not a type */
/* The event's type (UNKNOWN when "type" is missing, not a string, or a type this build does
 * not know); the raw "type" string (NULL when missing or not a string). */
pdbx_event_type pdbx_event_type_of(const cJSON *ev);
const char *pdbx_event_type_str(const cJSON *ev);
/* 1 and *t set when the event has a numeric "t" (unix seconds). */
int pdbx_event_time(const cJSON *ev, double *t);
/* Adds "t" = t to ev when it has none; -1 when out of memory. */
int pdbx_event_stamp(cJSON *ev, double t);

/* Cheap matching of a serialised event without parsing it: 1 when json[0..len) starts with
 * the bytes an encoder's event of type t starts with ({"type":"op",). An event spelled
 * otherwise simply does not match (callers then parse it). */
int pdbx_event_raw_is(const char *json, size_t len, pdbx_event_type t);

/* ---- run_start and launch -------------------------------------------------------------- */

/* Who launched: shared by run_start and launch. pid -1 / world_size 0 when unknown. */
typedef struct {
    char id[PDBX_RUN_ID_MAX];
    char pdbx_version[32], git_rev[64];
    char host[64];
    long pid;                    /* launcher pid on host */
    /* The launcher's identity beyond its pid (store/util/proc.h): its start time in clock
     * ticks since boot and the boot id. 0 / "" when unknown (runs written before them). */
    double pid_start;
    char boot_id[40];
    int world_size, ranks_per_node;
    /* How the ranks were started, written only when known (runs before them lack both):
     * "launcher" one phrase ("local", "mpirun on 2 hosts", "srun (pmix) in job 41",
     * "simulated 2 nodes": every rank on one machine standing in for 2 nodes); "command" the
     * launcher's command line as executed, shell-quoted. */
    char launcher[64];
    char command[2048];
} pdbx_ev_launcher;

typedef struct {
    pdbx_ev_launcher who;
    char backend[8];
    pdbx_model_info model;
    int layers_profiled, seq_len, warmup, steps;
    char dtype[8], gpu[32], gpu_tag[32];
    const cJSON *spec, *env;     /* decoded: borrowed from the event (NULL when absent) */
} pdbx_ev_run_start;

/* One planned point of run_start's "points" (seq_len 0: the run's). */
typedef struct {
    int index, tp, pp, dp, mbs, seq_len;
    double predicted_mem_bytes;
    int predicted_oom;
    int ep;                  /* 1 when absent; written only when > 1 */
} pdbx_ev_plan_point;

/* run_start: takes spec and env (either may be NULL: left out); pts[0..n) is the plan. The
 * h->spec/h->env members are ignored. */
cJSON *pdbx_event_run_start(const pdbx_ev_run_start *h, cJSON *spec, cJSON *env,
                            const pdbx_ev_plan_point *pts, size_t n);
/* Overlays the header (no required field: never fails). */
void pdbx_event_decode_run_start(const cJSON *ev, pdbx_ev_run_start *out);
/* The plan of a run_start: *pts malloc'ed (NULL when n == 0); *n = 0 and 0 when the event has
 * no "points". Points without "index" get their position. */
int pdbx_event_decode_plan(const cJSON *ev, pdbx_ev_plan_point **pts, size_t *n,
                           char *err, size_t errlen);

/* launch: a later launch appending to a run; takes env; configs[0..n) are its (tp, pp, dp). */
cJSON *pdbx_event_launch(const pdbx_ev_launcher *who, cJSON *env, const int (*configs)[3], size_t n);
/* Overlays (never fails). */
void pdbx_event_decode_launch(const cJSON *ev, pdbx_ev_launcher *out);

/* ---- the env object of run_start/launch (opaque beyond these fields) ------------------- */
/* Where one rank ran (env.placement[rank]): its host, its rank on that host (MPI's shared-memory
 * split, the one that picks the device), the device index (-1: none, the cpu backend) and the
 * device's UUID ("" when the backend has none). */
typedef struct {
    char host[64];
    int local_rank, device;
    char uuid[48];
} pdbx_ev_rank_place;

typedef struct {
    const char *const *hosts;    /* one per rank, in rank order */
    size_t nhosts;
    int blas_threads;            /* written when the backend did not describe it */
    const char *cpu;             /* idem */
    const char *mpi, *comm;      /* comm library version and name */
    const char *pdbx_version, *git_rev;
    int ranks_per_node, cores_per_node;
    const char *rank_order, *timing;
    const pdbx_ev_rank_place *places;   /* one per rank, NULL: not written */
    size_t nplaces;
} pdbx_ev_env;

/* Adds the common fields to env (an object a backend may already have described itself in:
 * its cpu/blas_threads/nccl/cuda win). -1 when out of memory. */
int pdbx_event_env_fill(cJSON *env, const pdbx_ev_env *e);
/* For backends describing their device: env.device. -1 when out of memory. */
int pdbx_event_env_set_device(cJSON *env, const char *device);
/* Readers: env.device (NULL when absent); env.hosts (the first cap strings, one per rank,
 * possibly repeated; returns how many were written). */
const char *pdbx_event_env_device(const cJSON *env);
size_t pdbx_event_env_hosts(const cJSON *env, const char **out, size_t cap);
/* env.placement into out[0..cap): how many were written (0 when absent: older runs). */
size_t pdbx_event_env_placement(const cJSON *env, pdbx_ev_rank_place *out, size_t cap);

/* ---- one point ------------------------------------------------------------------------- */
typedef struct {
    int point;
    int tp, pp, dp, mbs, seq_len;   /* 0 when absent */
    int has_shape;                  /* the event carries "tp" */
    int ep;                         /* expert-parallel degree: 1 when absent (runs before ep,
                                     * dense configs: "ep" is written only when > 1) */
} pdbx_ev_point_start;

cJSON *pdbx_event_point_start(int point, int tp, int pp, int dp, int ep, int mbs);
/* Required: point (>= 0). */
int pdbx_event_decode_point_start(const cJSON *ev, pdbx_ev_point_start *out, char *err, size_t errlen);

typedef struct {
    int point;
    int op;                  /* pdbx_op, or -1: an op this build does not know (skip it) */
    const char *name;        /* the op's name as written */
    pdbx_pass pass;          /* "pass" ("fwd" when absent); an unknown pass decodes op -1 */
    pdbx_cell cell;          /* cell.rank malloc'ed (NULL when no ranks); valid = 1 */
} pdbx_ev_op;

/* op: c->stats, c->rank[0..c->nranks), c->flops, c->bytes; "pass" when bwd; "reused_from"
 * (c->source_point) when c->reused, "shared_with" (the op's name) when c->shared. */
cJSON *pdbx_event_op(int point, pdbx_op op, pdbx_pass pass, const pdbx_cell *c);
/* Required: point, op (a string; unknown names decode with op -1 and nothing else), stats;
 * ranks optional (each a stats object); pass, reused_from, shared_with optional. */
int pdbx_event_decode_op(const cJSON *ev, pdbx_ev_op *out, char *err, size_t errlen);

typedef struct {
    int point;
    pdbx_cell layer, total;  /* valid = 0 when absent; .rank malloc'ed */
} pdbx_ev_step;

/* step: the measured per-step sums of a point (profiledb.h, pdbx_point.layer/.total); a cell
 * with valid == 0 is left out. Stats and ranks as in op (no flops/bytes). */
cJSON *pdbx_event_step(int point, const pdbx_cell *layer, const pdbx_cell *total);
/* Required: point; each present cell needs stats. */
int pdbx_event_decode_step(const cJSON *ev, pdbx_ev_step *out, char *err, size_t errlen);

/* ep_alltoall: a MoE layer's expert-parallel all-to-all at EP > 1 (ep_dispatch's forward cell
 * as a collective: its S, the EP group's size, algbw and nccl-tests' all_to_all busbw). */
typedef enum { PDBX_COMM_TP_ALLREDUCE = 0, PDBX_COMM_PP_SENDRECV, PDBX_COMM_DP_ALLREDUCE,
               PDBX_COMM_EP_ALLTOALL, PDBX_COMM_KINDS } pdbx_comm_kind;
const char *pdbx_comm_kind_name(pdbx_comm_kind k);   /* "tp_allreduce", ... "ep_alltoall" */

typedef struct {
    int point;
    pdbx_comm_kind kind;
    pdbx_comm_cell cell;     /* algbw/busbw NaN when absent; valid = 1 */
} pdbx_ev_comm;

cJSON *pdbx_event_comm(int point, pdbx_comm_kind kind, const pdbx_comm_cell *c);
/* Required: point, kind, stats. */
int pdbx_event_decode_comm(const cJSON *ev, pdbx_ev_comm *out, char *err, size_t errlen);

typedef struct {
    int point, rank;
    pdbx_trace_event *ops;   /* malloc'ed, n entries (point/rank filled); unknown ops dropped */
    size_t n;
} pdbx_ev_trace;

/* trace: ops[i].op/.layer/.start_us/.dur_us (their point and rank are not read). */
cJSON *pdbx_event_trace(int point, int rank, const pdbx_trace_event *ops, size_t n);
/* Required: point, ops. A malformed entry fails the decode, but *out still holds the well
 * formed entries (callers may keep them). */
int pdbx_event_decode_trace(const cJSON *ev, pdbx_ev_trace *out, char *err, size_t errlen);

typedef struct {
    int point;
    pdbx_point_status status;   /* ok, oom, predicted_oom, error or skipped */
    const char *message;        /* NULL when absent or empty */
    /* Optional, NaN when absent (runs recorded before, backends that do not measure):
     *  profile_mem_bytes: the predicted profile memory of the point on one rank (what the
     *                     engine allocates, engine/plan's profile memory);
     *  mem_peak_bytes:    the measured peak of the point, max over ranks (cpu: the RSS
     *                     high-water mark above the rank's baseline before the point);
     *  mem_base_bytes:    that rank's baseline (its RSS before the point, less the buffers
     *                     it kept for this point). */
    double profile_mem_bytes, mem_peak_bytes, mem_base_bytes;
    /* Optional: setup_s (NaN when absent) the seconds allocating and filling the point's
     * buffers took; noise (valid 0 when absent) what else loaded the machine (profiledb.h). */
    double setup_s;
    pdbx_point_noise noise;
} pdbx_ev_point_end;

cJSON *pdbx_event_point_end(int point, pdbx_point_status status, const char *message);
/* The same with the optional fields of pe (numbers not NaN, noise when valid). */
cJSON *pdbx_event_point_end_mem(const pdbx_ev_point_end *pe);
/* Required: point, status. */
int pdbx_event_decode_point_end(const cJSON *ev, pdbx_ev_point_end *out, char *err, size_t errlen);

/* ---- the run --------------------------------------------------------------------------- */
/* coll: r->coll, bytes, nranks, ranks_per_node, time, algbw, busbw, nodes, spans_nodes,
 * in_place (read as 1 when absent). */
cJSON *pdbx_event_coll(const pdbx_coll_result *r);
/* Required: coll (non-empty), stats; algbw/busbw NaN when absent. */
int pdbx_event_decode_coll(const cJSON *ev, pdbx_coll_result *out, char *err, size_t errlen);

/* infer_tokens: tp, tokens, ops {<op name>: stats} (the measured ops only).
 * Required: tp >= 1, tokens >= 1, ops an object (unknown op names ignored, a bad stats object
 * an error). */
cJSON *pdbx_event_infer_tokens(const pdbx_infer_tokens *r);
int pdbx_event_decode_infer_tokens(const cJSON *ev, pdbx_infer_tokens *out, char *err, size_t errlen);
/* infer_attn: tp, batch, chunk, kv, heads, kv_heads, phase ("prefill" when chunk > 0, else
 * "decode"; informative), stats. Required: tp, batch >= 1, chunk >= 0, kv >= 0, stats. */
cJSON *pdbx_event_infer_attn(const pdbx_infer_attn *r);
int pdbx_event_decode_infer_attn(const cJSON *ev, pdbx_infer_attn *out, char *err, size_t errlen);

typedef struct {
    double done, total;      /* points */
    int point;               /* -1: between points (null) */
    const char *op;          /* NULL when absent */
    double elapsed_s;
    double eta_s;            /* NaN: unknown (null) */
    /* collectives measurements of the whole run (every launch): made so far, and planned
     * (0 and 0 from writers that predate them; store/progress.h counts them as work) */
    double coll_done, coll_total;
    /* work units of the inference phase, whole run: done so far and planned (0 and 0 from
     * writers that predate it; store/progress.h counts them) */
    double infer_done, infer_total;
} pdbx_ev_progress;

cJSON *pdbx_event_progress(const pdbx_ev_progress *p);
/* Overlays (never fails): callers initialise done/total/elapsed_s/op/point (point -1: none)
 * and coll_done/coll_total; eta_s is NaN unless the event has a number. */
void pdbx_event_decode_progress(const cJSON *ev, pdbx_ev_progress *out);

cJSON *pdbx_event_warning(const char *message);
/* Required: message. */
int pdbx_event_decode_warning(const cJSON *ev, const char **message, char *err, size_t errlen);

/* Who or what ended a run that did not complete (run_end "cause"): the user through
 * `pdbx cancel`, the explorer's cancel or Ctrl-C in `pdbx run`/`pdbx attach`; a signal nobody
 * in pdbx sent (kill, a batch system); the `pdbx run` supervisor died (kill -9); the run file
 * could not be written (disk full). */
typedef enum {
    PDBX_CAUSE_NONE = 0, PDBX_CAUSE_CANCEL, PDBX_CAUSE_EXPLORER, PDBX_CAUSE_CTRL_C,
    PDBX_CAUSE_SIGNAL, PDBX_CAUSE_SUPERVISOR_LOST, PDBX_CAUSE_WRITE, PDBX_CAUSE_COUNT
} pdbx_end_cause;
/* "pdbx_cancel", "explorer", "ctrl_c", "signal", "supervisor_lost", "write_failed"; "" for NONE */
const char *pdbx_end_cause_name(pdbx_end_cause c);
pdbx_end_cause pdbx_end_cause_from_name(const char *name);   /* NONE when unknown */
/* How a person reads it: "pdbx cancel", "the explorer's cancel", "Ctrl-C", "a signal",
 * "supervisor lost", "a failed write" */
const char *pdbx_end_cause_text(pdbx_end_cause c);

/* What became of the point being measured when the run was stopped (run_end "in_flight"). */
typedef enum {
    PDBX_IN_FLIGHT_UNKNOWN = 0,  /* not recorded (older runs, or nobody could tell) */
    PDBX_IN_FLIGHT_NONE,         /* no point was being measured */
    PDBX_IN_FLIGHT_FINISHED,     /* it finished and is kept */
    PDBX_IN_FLIGHT_DROPPED,      /* it was dropped (point_end skipped) */
} pdbx_in_flight;
const char *pdbx_in_flight_name(pdbx_in_flight f);           /* "", "none", "finished", "dropped" */

typedef struct {
    pdbx_run_status status;  /* complete, cancelled or failed */
    const char *reason;      /* NULL when absent */
    double elapsed_s;        /* NaN when absent */
    const char *by;          /* "supervisor" when pdbx run wrote it, else NULL */
    pdbx_end_cause cause;    /* NONE when absent */
    pdbx_in_flight in_flight;/* UNKNOWN when absent */
    int in_flight_point;     /* the point in_flight speaks of; -1 when absent */
} pdbx_ev_run_end;

/* run_end: elapsed_s NaN and by NULL are left out. */
cJSON *pdbx_event_run_end(pdbx_run_status status, const char *reason, double elapsed_s,
                          const char *by);
/* run_end with who ended the run and what became of the point in flight (cause NONE,
 * in_flight UNKNOWN and in_flight_point < 0 are left out); e->status, reason, elapsed_s and by
 * as above. */
cJSON *pdbx_event_run_end_ex(const pdbx_ev_run_end *e);
extern const char pdbx_event_by_supervisor[];     /* the "by" of the pdbx run supervisor */
/* Required: status (complete, cancelled, failed). On a bad status *out still holds the
 * reason and status FAILED. */
int pdbx_event_decode_run_end(const cJSON *ev, pdbx_ev_run_end *out, char *err, size_t errlen);

#endif
