/* progress.h: the one progress model of a sweep, read from its folded run (profiledb.h).
 *
 * `pdbx run` / `pdbx attach` (tui/cli) and the explorer's monitor (tui/screens) both print what
 * pdbx_progress_of() gives, so they show the same percentage, counts and ETA for the same run
 * file at the same time. Pure: no I/O and no clock (the caller passes `now`, unix seconds; a
 * replay passes its virtual time).
 *
 * Work units. A point weighs MBS / TP (pdbx_progress_work: the tokens per step one TP rank
 * computes its share of, seq_len being the run's; a point's cost is mostly that: on a CPU a
 * TP2 point takes about half the time of the TP1 point of the same MBS; a bad MBS or TP counts
 * as 1). One collectives measurement (one collective at one size on one group, warmup +
 * steps repetitions) weighs as one timed op of an MBS-1 point: 1 / (ops timed in one step,
 * pdbx_progress_coll_work). The total is every planned point plus the collectives measurements
 * the engine announced in its heartbeat (`coll_total`, all launches of the run); done is every
 * ended point, whatever its status (a skipped point has nothing left to do), plus the
 * collectives measured (the run's `coll` events).
 * The inference phase (spec tokens / kv_cache) adds its rows' work: a tokens row weighs one
 * collectives measurement per op it times (pdbx_progress_infer_tokens_work), an attention row
 * one; the total is what the heartbeat announced (`infer_total`, work units of the whole run),
 * done what the run's infer_tokens / infer_attn events hold.
 *
 * Fraction = done / total in [0, 1]; percent = floor(100 x fraction), at most 99 until the run
 * has ended (100 only when it completed or everything, collectives included, is done and the
 * run ended), 0 when nothing is planned yet.
 *
 * ETA = remaining work / rate, counting down from the completion the rate was measured at.
 * The rate is measured over the whole run: at each completion (a point_end or coll event), the
 * work of what was really measured (ok, oom and error points and the collectives; a skipped or
 * predicted-OOM point costs no time) over the time since run_start; successive measurements are
 * smoothed exponentially (PDBX_PROGRESS_ALPHA) so one uneven point moves it little. NaN (shown
 * as "--") until the first measured completion; 0 once the run completed; NaN when it ended
 * any other way (its remaining points will not run).
 *
 * Hostile values (NaN, inf, 1e300, negative, done > total) from a run file never reach an
 * integer conversion: every output is finite and in range, or NaN where documented.
 */
#ifndef PDBX_PROGRESS_H
#define PDBX_PROGRESS_H

#include <stddef.h>

#include "store/profiledb.h"

#define PDBX_PROGRESS_ALPHA 0.5   /* weight of the newest rate measurement */

typedef struct {
    double fraction;          /* work done / total in [0, 1]; NaN when nothing is planned */
    int percent;              /* 0..100 (see above) */
    double work_done, work_total;        /* work units */
    size_t points_done, points_total;
    size_t coll_done, coll_total;        /* collectives measurements (total 0: not announced) */
    double infer_done, infer_total;      /* work units of the inference phase (0: none) */
    int collectives;          /* every point ended, collectives are announced, the run goes on:
                               * the collectives sweep */
    int ended;                /* run_end seen, or the run is known dead */
    const pdbx_point *point;  /* the point in flight, NULL between points and once ended */
    const char *op;           /* the op (or collective) in flight, "" when none */
    double elapsed_s;         /* since run_start (to the last event once ended); NaN unknown */
    double eta_s;             /* NaN: unknown (print "--") */
} pdbx_progress;

/* The progress of `run` at unix time `now`. */
void pdbx_progress_of(const pdbx_run *run, double now, pdbx_progress *out);

/* The weight of one collectives measurement in a run profiling `layers` layers. */
double pdbx_progress_coll_work(int layers);

/* Folding (profiledb.c calls these; nothing else writes run->progress):
 * a heartbeat announced coll_total collectives measurements (ignored unless finite and in
 * 0..PDBX_RUN_MAX_COLLS); */
void pdbx_progress_fold_beat(pdbx_run *run, double coll_total);
/* something of `work` units ended at unix time t; measured: it took measuring time (a skipped
 * or predicted-OOM point did not); */
void pdbx_progress_fold_done(pdbx_run *run, double work, int measured, double t);
/* one collectives measurement (a coll event) ended at t. */
void pdbx_progress_fold_coll(pdbx_run *run, double t);
/* the heartbeat announced infer_total work units of inference rows (ignored unless finite,
 * >= 0 and below 1e9); an inference row of `work` units ended at t. */
void pdbx_progress_fold_infer_beat(pdbx_run *run, double infer_total);
void pdbx_progress_fold_infer(pdbx_run *run, double work, double t);
/* The work of a tokens row timing nops ops (the engine's announcement uses the same), of a
 * folded row. */
double pdbx_progress_infer_ops_work(int layers, int nops);
double pdbx_progress_infer_tokens_work(int layers, const pdbx_infer_tokens *r);
/* The work units of a point of micro-batch size mbs on tp TP ranks (mbs / tp; a value that
 * is not positive counts as 1); of a folded point. The engine's heartbeat uses the same. */
double pdbx_progress_work(int mbs, int tp);
double pdbx_progress_point_work(const pdbx_point *p);

#endif
