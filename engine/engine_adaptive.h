/* engine_adaptive.h: when to stop sampling one cell (nvbench-style adaptive repetition) and
 * when the warm-up of a point is over. Pure functions over sample sets, no MPI, no backend: the
 * point loop (engine_point.c) calls them on every rank and the ranks agree on the result.
 *
 * A cell is done when
 *     n >= min_reps  and  ci95(mean) / mean <= target_rel_ci     (converged), or
 *     n >= max_reps, or its sampling has taken max_seconds_per_op and it has two samples
 *     (bounded: its CI is kept as measured and may be above the target; views show it).
 * ci95 is Student's t(0.975, n-1) * s / sqrt(n), s the sample std (ddof 1), as pdbx_stats. */
#ifndef PDBX_ENGINE_ADAPTIVE_H
#define PDBX_ENGINE_ADAPTIVE_H

#include <stddef.h>

typedef struct {
    double target_rel_ci;
    long min_reps, max_reps;
    double max_seconds;
} pdbx_adaptive_rule;

typedef enum { PDBX_CELL_MORE = 0, PDBX_CELL_CONVERGED, PDBX_CELL_MAX_REPS, PDBX_CELL_MAX_TIME } pdbx_cell_state;

/* "ci", "max_reps", "max_time" (the op event's "stop"); NULL for PDBX_CELL_MORE. */
const char *pdbx_cell_state_name(pdbx_cell_state s);
/* The relative CI half-width of the mean of x[0..n) (NaN when n < 2 or the mean is not > 0). */
double pdbx_adaptive_rel_ci(const double *x, size_t n);
/* Whether a cell with samples x[0..n), sampled for `seconds`, needs more. */
pdbx_cell_state pdbx_adaptive_state(const pdbx_adaptive_rule *r, const double *x, size_t n, double seconds);
/* How many executions the next batch should hold: enough for about `batch_s` seconds at the
 * mean so far (mean_ms), at least 1, at most what is left to max_reps. Batching bounds the cost
 * of the ranks' agreement after each batch for ops of microseconds. */
long pdbx_adaptive_batch(const pdbx_adaptive_rule *r, size_t n, double mean_ms, double batch_s);

/* Warm-up: a point's steps are warm once a step's time is within PDBX_WARM_TOL of the step
 * before it (the caches, page tables and thread pools are in their steady state); at most
 * `max_warmup` steps are discarded (then the next step counts whatever its time). */
#define PDBX_WARM_TOL 0.05
int pdbx_adaptive_stable(double prev_ms, double cur_ms);

#endif
