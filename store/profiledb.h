/* profiledb.h: the in-memory ProfileDB of one run, folded from its event stream.
 *
 * Contract:
 *  - A pdbx_run is built by pdbx_run_init() then pdbx_run_apply() once per event, in file
 *    order (docs/events.md defines the events). The same folding serves a finished run, a
 *    run still being written (the monitor applies new events as they arrive) and a replayed
 *    recording. Unknown event types and unknown fields are ignored (forward compatible).
 *  - Times are milliseconds; bandwidths GB/s (1e9 bytes/s); sizes bytes.
 *  - A value that was never measured has valid == 0: views print N/A for it, never 0.
 *  - pdbx_run_free() releases everything the run owns; the struct may then be re-inited.
 *  - No I/O here: store.h reads files and calls these.
 *  - A run file is untrusted: the PDBX_RUN_MAX_* caps below bound what one file can make a
 *    load allocate or an export produce. An event beyond a cap is refused (or its field left
 *    unset) with a one-line message naming the cap; the rest of the run still folds. Loading
 *    is linear in the number of events: a point is found by its plan index through a hash
 *    index, never by a scan.
 */
#ifndef PDBX_PROFILEDB_H
#define PDBX_PROFILEDB_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "store/ops.h"

/* Per-cell statistics over the measured samples (Vidur keeps exactly these). */
typedef struct {
    int64_t count;
    double min, max, mean, median, std;
    /* Half-width of the 95% confidence interval of the mean: t(0.975, n-1) * s / sqrt(n) with
     * s the sample std (ddof 1). NaN when count < 2 or in runs recorded before it. */
    double ci95;
} pdbx_stats;

/* A cell whose coefficient of variation (std / mean) exceeds this is marked noisy by the
 * views (show, the run view, compare). */
#define PDBX_CV_NOISY 0.05
/* std / mean; NaN without both. */
double pdbx_stats_cv(const pdbx_stats *s);
/* ci95 / mean: the relative CI half-width the adaptive loop targets; NaN without both. */
double pdbx_stats_rel_ci(const pdbx_stats *s);
/* Student's t quantile t(0.975, dof) (dof >= 1; large dof tends to 1.96). */
double pdbx_student_t975(int64_t dof);

typedef enum {
    PDBX_STAT_MEAN = 0, PDBX_STAT_MEDIAN, PDBX_STAT_MIN, PDBX_STAT_MAX, PDBX_STAT_STD,
    PDBX_STAT_COUNT_KINDS
} pdbx_stat_kind;

const char *pdbx_stat_name(pdbx_stat_kind k);          /* "mean", "median", ... */
int pdbx_stat_from_name(const char *name);              /* -1 when unknown */
double pdbx_stats_get(const pdbx_stats *s, pdbx_stat_kind k);
/* Fills *out from n samples (sorts `samples` in place). std is the population std (ddof 0,
 * numpy's default, as Vidur). n == 0 gives count 0 and NaNs. */
void pdbx_stats_from_samples(double *samples, size_t n, pdbx_stats *out);
cJSON *pdbx_stats_to_json(const pdbx_stats *s);

/* Is the difference between a cell of run A and the same cell of run B real, or noise?
 * Welch's rule at z = 1.96 (about 95%): B differs from A when
 *     |b - a| > z * sqrt(var_a + var_b),   var = std^2 / (count - 1)
 * the variance of each cell's mean (std is stored with ddof 0, so std^2 * n / (n - 1) is the
 * sample variance, / n that of its mean). The same threshold applies to whichever statistic is
 * compared (mean, median, min, max). A cell without a noise estimate (count < 2, or std not
 * finite) gives UNKNOWN: the difference is shown but not judged. */
typedef enum { PDBX_NOISE_SAME = 0, PDBX_NOISE_BETTER, PDBX_NOISE_WORSE, PDBX_NOISE_UNKNOWN } pdbx_noise_verdict;
#define PDBX_NOISE_Z 1.96
/* std^2 / (count - 1): the variance of the cell's mean; NaN without a noise estimate. */
double pdbx_stats_mean_var(const pdbx_stats *s);
/* The verdict on b against a given the variances of their means (NaN: unknown). BETTER: b is
 * lower (faster) by more than the threshold; WORSE: higher. *threshold (may be NULL) receives
 * z * sqrt(var_a + var_b), NaN when unknown. a or b not finite: UNKNOWN. */
pdbx_noise_verdict pdbx_noise_judge(double a, double var_a, double b, double var_b, double *threshold);
/* pdbx_noise_judge on statistic k of two cells. */
pdbx_noise_verdict pdbx_stats_judge(const pdbx_stats *a, const pdbx_stats *b, pdbx_stat_kind k, double *threshold);
/* "same", "better", "worse", "unknown" */
const char *pdbx_noise_name(pdbx_noise_verdict v);
/* The verdict's mark beside a ratio, readable in monochrome: '~' same, 'v' better, '^' worse,
 * '?' unknown. */
char pdbx_noise_mark(pdbx_noise_verdict v);
int pdbx_stats_from_json(const cJSON *obj, pdbx_stats *out);   /* 0 ok, -1 malformed */

typedef struct {
    int valid;
    pdbx_stats stats;        /* element-wise max across the TP ranks of the point */
    int nranks;
    pdbx_stats *rank;        /* per TP rank, nranks entries (owned), may be NULL */
    double flops;            /* per TP rank, one execution of the op (0 when not a compute op) */
    double bytes;            /* per TP rank, bytes moved by one execution (estimate from shapes) */
    /* Where the samples came from (measure once, use everywhere):
     *  reused: 1 when they were measured at point source_point (the same backend, dtype, TP,
     *          MBS, seq_len and op shape: PP and DP do not change a compute op), not here;
     *  shared: 1 when they are those of op shared_op of the same point (same shape and kernel,
     *          e.g. attn_v of attn_k under GQA, mlp_up of mlp_gate);
     *  fused:  1 when the op ran inside one fused GEMM with the other ops of its group (spec
     *          fused_projections: QKV, fc1), which fused_op's backend call timed; each sample
     *          is that GEMM's time x fused_share, the op's FLOP share of it, so the cells of a
     *          group sum to the fused measurement (0 in runs recorded before it). */
    int reused, source_point;
    int shared;
    pdbx_op shared_op;
    int fused;
    pdbx_op fused_op;
    double fused_share;
} pdbx_cell;

/* What else ran on the machine while a point was measured (point_end's "noise"; valid == 0 in
 * runs recorded before it). Host figures are the largest over the run's nodes. */
typedef struct {
    int valid;
    int cores;               /* online cores of the node */
    double load1;            /* /proc/loadavg's 1-minute load at the point's end */
    double other_busy;       /* cores' worth of CPU time used by other processes during the
                              * point (the node's busy time less this run's ranks') */
    double steal_pct;        /* % of the node's CPU time the hypervisor stole during the point */
    int busy;                /* the engine judged the point measured under load */
    int gpu_valid;           /* cuda: NVML samples during the point */
    double sm_clock_min_mhz, sm_clock_max_mhz, temp_max_c;
    double throttle_reasons; /* NVML clock-event reason bits OR-ed over the samples (a double
                              * so that it survives JSON exactly up to 2^53) */
} pdbx_point_noise;

typedef struct {
    int valid;
    double bytes;            /* message size S as nccl-tests defines it */
    int group_size;
    pdbx_stats time;         /* ms */
    double algbw, busbw;     /* GB/s, from the mean time */
    /* the element type moved ("bf16", "fp16", "fp32"; the DP gradient all-reduce runs in
     * fp32); "" in runs recorded before it was written */
    char dtype[8];
} pdbx_comm_cell;

typedef enum {
    PDBX_POINT_PENDING = 0, PDBX_POINT_RUNNING, PDBX_POINT_OK, PDBX_POINT_OOM,
    PDBX_POINT_PREDICTED_OOM, PDBX_POINT_ERROR, PDBX_POINT_SKIPPED
} pdbx_point_status;
const char *pdbx_point_status_name(pdbx_point_status s);   /* "pending", "ok", "oom", ... */

typedef struct {
    int index;               /* position in the planned point list */
    int tp, pp, dp, mbs;
    int seq_len;
    int ep;                  /* expert-parallel degree, 1 unless the run says more */
    pdbx_point_status status;
    char *message;           /* owned; reason for oom/error/skipped, else NULL */
    double predicted_mem_bytes;   /* run_start's prediction: training memory of the full model */
    int predicted_oom;            /* run_start's training-OOM mark, or the point ended predicted_oom */
    /* From point_end, NaN when not recorded: the predicted profile memory (what the engine
     * allocates at this point on one rank), the measured peak (max over ranks) and the baseline
     * that rank's peak is counted above (store/events.h). */
    double profile_mem_bytes, mem_peak_bytes, mem_base_bytes;
    double started, ended;   /* unix seconds, 0 when unknown */
    pdbx_cell op[PDBX_OP_COUNT];    /* forward */
    pdbx_cell bwd[PDBX_OP_COUNT];   /* backward (valid only for runs with passes fwd,bwd) */
    double setup_s;          /* allocating and filling the point's buffers (NaN: unknown) */
    pdbx_point_noise noise;
    /* Measured sums, never added up from the op cells (so std/min/max are real):
     *  layer: one sample per profiled layer per measured step, the wall time of that layer's
     *         forward (its ops and TP all-reduces back to back);
     *  total: one sample per measured step, the wall time of the whole step's forward (embed,
     *         every profiled layer, final_norm, lm_head).
     * valid == 0 for runs recorded before the engine measured them: views print N/A. */
    pdbx_cell layer, total;
    pdbx_comm_cell tp_allreduce, pp_sendrecv, dp_allreduce;
    pdbx_comm_cell ep_alltoall;   /* EP > 1: the MoE layers' all-to-all (events.h) */
} pdbx_point;

/* A point's EP degree: ep 0 (a point a caller built before EP existed) is EP 1. */
static inline int pdbx_point_ep(const pdbx_point *p)
{
    return p->ep > 1 ? p->ep : 1;
}

/* One entry of the collectives sweep. */
typedef struct {
    char coll[16];           /* all_reduce, all_gather, reduce_scatter, send_recv, all_to_all */
    double bytes;
    int nranks, ranks_per_node;
    /* The distinct hosts of the group's ranks (their real host names) and whether that is
     * more than one: an inter-node result. 0 / 0 in runs recorded before them. */
    int nodes, spans_nodes;
    pdbx_stats time;         /* ms */
    double algbw, busbw;     /* GB/s */
    /* all_gather / reduce_scatter: 1 in place (Megatron's TP/SP buffers), 0 out of place (a
     * separate output, as nccl-tests' out-of-place column). Always 1 for all_reduce and
     * send_recv, and in runs recorded before the field. */
    int in_place;
} pdbx_coll_result;

/* One row of the inference phase (docs/engine.md "Inference phase"), forward only on one TP
 * shard of tp ranks (heads / tp, kv heads / tp):
 *  tokens: the per-token ops (every op but attn_core and the TP all-reduces) at `tokens`
 *          tokens; op[o].count 0 where op o was not measured. With fused_projections attn_q and
 *          mlp_gate hold their fused group's FLOP-share parts as in the points.
 *  attn:   attention with a KV cache: chunk > 0 prefill (batch 1, chunk query tokens after a
 *          cached prefix of kv keys), chunk 0 decode (batch sequences, one query token each
 *          attending to kv cached keys); heads and kv_heads per rank. */
typedef struct {
    int tp, tokens;
    pdbx_stats op[PDBX_OP_COUNT];
} pdbx_infer_tokens;

typedef struct {
    int tp, batch, chunk, kv, heads, kv_heads;
    pdbx_stats time;
} pdbx_infer_attn;

/* Rows of the inference phase of each kind: a folded row replaces one of the same key, found by
 * a scan, so the cap also bounds the fold's cost (16384^2 / 2 comparisons at worst); the
 * planner refuses grids that would exceed it (64 tokens x 64 TP degrees is 4096). */
#define PDBX_RUN_MAX_INFER 16384

/* One op, or one of the step's PP/DP collectives, of one measured step on one rank, for the
 * Chrome trace export. */
typedef struct {
    int point, rank, layer;
    pdbx_op op;              /* PDBX_OP_COUNT: a step collective, named by comm */
    int comm;                /* with op PDBX_OP_COUNT only: the collective (events.h
                              * pdbx_comm_kind: pp_sendrecv or dp_allreduce) */
    double start_us, dur_us; /* start relative to the step's start */
} pdbx_trace_event;

typedef enum {
    PDBX_RUN_RUNNING = 0, PDBX_RUN_COMPLETE, PDBX_RUN_CANCELLED, PDBX_RUN_FAILED, PDBX_RUN_CORRUPT,
    PDBX_RUN_UNREADABLE       /* listing only: the file cannot be read (permission, not a file) */
} pdbx_run_status;
const char *pdbx_run_status_name(pdbx_run_status s);

typedef struct {
    char name[64];           /* e.g. Llama-3.3-70B-Instruct */
    char tag[32];            /* FASOP model type, e.g. llama70b */
    int hidden, intermediate, heads, kv_heads, head_dim, layers, vocab;
} pdbx_model_info;

#define PDBX_RUN_ID_MAX 64
#define PDBX_WARN_RING 16

/* Caps on what one run file may declare (see the contract above). */
#define PDBX_RUN_MAX_POINTS 100000      /* point indices 0 .. PDBX_RUN_MAX_POINTS - 1 (a point
                                         * holds ~2 KB: 200 MB at most) */
#define PDBX_RUN_MAX_RANKS 65536        /* world_size, ranks_per_node, a cell's per-rank entries */
#define PDBX_RUN_MAX_LAYERS 4096        /* layers_profiled and model layers (the spec's limit) */
#define PDBX_RUN_MAX_TRACE_OPS 4000000  /* trace entries (op timings) in one run */
#define PDBX_RUN_MAX_COLLS 100000       /* entries of the collectives sweep */
#define PDBX_RUN_MAX_MESSAGE 4096       /* bytes of a point's message (longer ones are cut) */

/* The progress model's state folded from the events (store/progress.h owns it: it is updated
 * only through pdbx_progress_fold_* and read through pdbx_progress_of). */
typedef struct {
    double coll_total;        /* collectives measurements of the whole run, from the heartbeat
                               * (0: not announced) */
    double coll_done;         /* coll events folded (a summary counts those it skips too) */
    double measured_work;     /* work units of the points and collectives measured so far */
    double infer_total;       /* work units of the inference phase of the whole run, from the
                               * heartbeat (0: none announced) */
    double infer_done;        /* work units of the inference rows folded */
    double rate;              /* smoothed work units per second (0: nothing measured yet) */
    double rate_at;           /* unix time of the completion the rate was last updated at */
} pdbx_run_progress;

typedef struct pdbx_run {
    char id[PDBX_RUN_ID_MAX];
    pdbx_model_info model;
    int layers_profiled, seq_len, warmup, steps;
    char dtype[8], backend[8], gpu[32], gpu_tag[32];
    char device_name[128];    /* from the environment, e.g. "AMD EPYC 7B13" or "NVIDIA H100" */
    int world_size, ranks_per_node;
    cJSON *spec, *env;        /* owned copies of run_start's spec and env */
    double created, last_event;   /* unix seconds */
    char host[64];
    long pid;                 /* launcher pid on `host` (liveness of a run without run_end) */
    double pid_start;         /* its start (clock ticks since boot); 0: not recorded */
    char boot_id[40];         /* the boot it started in; "": not recorded */
    char launcher[64];        /* how the last launch started the ranks ("" not recorded) */
    char command[2048];       /* its command line, shell-quoted ("" not recorded) */
    size_t npoints, points_cap;
    pdbx_point *points;
    /* Plan index -> position + 1 in points[] (0: none), a direct table over indices
     * 0..nslots-1 (profiledb.c owns it; a caller that fills points[] itself leaves it NULL
     * and the first lookup builds it). The first nindexed points are in it. */
    uint32_t *point_pos;
    size_t nslots, nindexed;
    size_t ncoll, coll_cap;
    pdbx_coll_result *coll;
    /* the inference phase's rows in the order measured; a row measured again (a later
     * launch) replaces the earlier one of the same key */
    size_t ninfer_tokens, infer_tokens_cap;
    pdbx_infer_tokens *infer_tokens;
    size_t ninfer_attn, infer_attn_cap;
    pdbx_infer_attn *infer_attn;
    size_t ntrace, trace_cap;
    pdbx_trace_event *trace;
    int have_end;
    pdbx_run_status status;   /* RUNNING until run_end (store.h decides running vs failed) */
    char end_reason[256];
    int end_cause;            /* run_end's cause: a pdbx_end_cause (store/events.h), 0 none */
    int in_flight;            /* run_end's in_flight: a pdbx_in_flight, 0 unknown */
    int in_flight_point;      /* the point it speaks of, -1 none */
    int current_point;        /* -1 when none */
    char current_op[32];
    double progress_done, progress_total;   /* points, from the progress heartbeat */
    pdbx_run_progress progress;             /* see store/progress.h */
    char warnings[PDBX_WARN_RING][256];
    int nwarnings;            /* total seen; the ring holds the last PDBX_WARN_RING */
    int torn_tail;            /* the file ended in a partial frame (ignored) */
} pdbx_run;

void pdbx_run_init(pdbx_run *run);
/* Applies one event. Returns 0, or -1 with a message naming the event and field when the
 * event is malformed (the run stays consistent; callers may go on). */
int pdbx_run_apply(pdbx_run *run, const cJSON *event, char *err, size_t errlen);
void pdbx_run_free(pdbx_run *run);
/* Adds a line to the run's warnings ring (printf format). */
void pdbx_run_warn(pdbx_run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The point with plan index `index`, or NULL: constant time once the run's index is built
 * (every folded run), a scan for a run whose points[] a caller filled itself. */
const pdbx_point *pdbx_run_point(const pdbx_run *run, int index);

/* A parallel config as the views key it: PDBX_CFG_DIMS ints tp, pp, dp, ep in that order. ep is
 * 1 for a dense config (a point recorded before EP existed reads as 1): EP 2 of the same
 * (tp, pp, dp) is another config, with its own table, tab and diff rows. */
enum { PDBX_CFG_TP = 0, PDBX_CFG_PP, PDBX_CFG_DP, PDBX_CFG_EP, PDBX_CFG_DIMS };
/* Points of one parallel config (tp, pp, dp, ep; ep <= 1 means EP 1) in MBS order; returns the
 * count written. */
size_t pdbx_run_config_points(const pdbx_run *run, int tp, int pp, int dp, int ep,
                              const pdbx_point **out, size_t cap);
/* Distinct (tp, pp, dp, ep) configs in plan order; returns the count written (PDBX_CFG_DIMS
 * ints each), 0 when out of memory. */
size_t pdbx_run_configs(const pdbx_run *run, int (*out)[PDBX_CFG_DIMS], size_t cap);
/* Sorts pointers into one run's points[] by (tp, pp, dp, ep, mbs), ties in plan order: the
 * O(n log n) grouping every per-config view is built on. */
void pdbx_run_sort_by_config(const pdbx_point **pts, size_t n);
size_t pdbx_run_points_done(const pdbx_run *run);   /* points no longer pending/running */

/* ---- the pass selector (profiledb_query.c): the one place a view picks a cell by pass ----
 * fwd: p->op[op]; bwd: p->bwd[op]; both: forward + backward of the op, one execution of each:
 *   mean, median, min, max, flops and bytes add (the median of a sum is not the sum of the
 *   medians: this is the approximation FASOP's x3 makes too, but measured); count is the
 *   smaller of the two; std and ci95 combine as sqrt(a^2 + b^2) (independent samples: an
 *   approximation, NaN when either is unknown). Provenance: reused/shared as the forward
 *   cell's when the backward cell agrees, else as whichever of the two is reused/shared.
 * Returns 1 and fills *out when the selected cell (both: both cells) is measured; 0 with
 * out->valid == 0 and NaN statistics otherwise. out->rank is the stored cell's (borrowed) for
 * fwd and bwd, NULL for both. */
typedef enum { PDBX_PASS_SEL_FWD = 0, PDBX_PASS_SEL_BWD, PDBX_PASS_SEL_BOTH, PDBX_PASS_SEL_COUNT } pdbx_pass_sel;
const char *pdbx_pass_sel_name(pdbx_pass_sel sel);   /* "fwd", "bwd", "both"; "?" */
int pdbx_pass_sel_from_name(const char *name);        /* -1 when unknown */
int pdbx_point_cell_pass(const pdbx_point *p, pdbx_op op, pdbx_pass_sel sel, pdbx_cell *out);
/* 1 when the run measures backward cells: run_start's spec lists "bwd" in passes, or any
 * point holds a measured bwd cell (a recording without the spec). */
int pdbx_run_has_bwd(const pdbx_run *run);
/* The ops the run's model does not have, from run_start's spec.model.arch: mlp_gate for a
 * plain MLP ("mlp": "plain", gpt2), attn_rope for learned positions ("position": "learned"),
 * attn_qk_norm unless "qk_norm" is true, MLA's ops unless "attention" is "mla" (with it
 * attn_k and attn_v, and attn_q or q_a/q_norm/q_b by "mla"."q_lora_rank"), the MoE ops unless
 * "moe" has experts (with it moe_shared_* without shared experts, mlp_* without
 * first_dense_layers). A run without the arch is a Llama's: every op but attn_qk_norm, MLA's
 * and the MoE ops. Consumers that need a value per op
 * (exports) take these as costing 0 rather than as missing measurements. */
pdbx_opmask pdbx_run_absent_ops(const pdbx_run *run);
/* 0 when run's model has FASOP's Llama-shaped layer (the NPZ and .npy exports' columns); else -1
 * with one line in err: a mixture-of-experts run has router and expert ops no FASOP column
 * holds, so those exports refuse it and name what to export instead. `what` names the export. */
int pdbx_run_fasop_shaped(const pdbx_run *run, const char *what, char *err, size_t errlen);
/* 0 when sel can be shown for run; -1 with "<what>: 'bwd' needs backward cells, run X has
 * forward only (allowed: fwd)" otherwise (what: "--pass", "pass" ...). */
int pdbx_pass_sel_check(const pdbx_run *run, pdbx_pass_sel sel, const char *what, char *err,
                        size_t errlen);
/* The measured bwd/fwd ratio of op at p for stat; NaN unless both cells are measured. */
double pdbx_point_bwd_ratio(const pdbx_point *p, pdbx_op op, pdbx_stat_kind stat);

/* ---- noise: what loaded the machine while a run was measured (profiledb_query.c) ------- */
typedef struct {
    int points;                 /* points that recorded noise */
    int busy;                   /* of those, measured under load (the engine's verdict) */
    double other_busy_max;      /* cores' worth other processes used, largest over busy points */
    double steal_max;           /* steal %, largest over busy points */
} pdbx_run_noise_summary;
void pdbx_run_noise_of(const pdbx_run *run, pdbx_run_noise_summary *out);
/* "measured under load: 2 of 3 points; other processes used up to 1.8 cores, steal up to 0%"
 * into buf; returns 1 when the run has a busy point, 0 (buf "") otherwise. */
int pdbx_run_load_text(const pdbx_run *run, char *buf, size_t len);
/* How the run repeated its ops, from its spec: "adaptive to a 1% CI (5..1000 samples, at most
 * 1 s per cell; steps 1 after at most 2 warm-up)" or "fixed: warmup 2, steps 5" (runs recorded
 * before repetition existed are fixed). */
void pdbx_run_repetition_text(const pdbx_run *run, char *buf, size_t len);
/* NVML clock-event reason bits as words ("sw_power_cap, hw_thermal"; "none" for 0; an
 * unknown bit as its hex value). */
void pdbx_throttle_text(double bits, char *buf, size_t len);

#endif
