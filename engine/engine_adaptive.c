/* engine_adaptive.c: the adaptive repetition rule (engine_adaptive.h). */
#include "engine/engine_adaptive.h"

#include <math.h>

#include "store/profiledb.h"

double pdbx_adaptive_rel_ci(const double *x, size_t n)
{
    if (n < 2)
        return NAN;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    double mean = sum / (double)n, ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - mean) * (x[i] - mean);
    if (!(mean > 0))
        return NAN;
    double half = pdbx_student_t975((int64_t)n - 1) * sqrt(ss / (double)(n - 1)) / sqrt((double)n);
    return half / mean;
}

const char *pdbx_cell_state_name(pdbx_cell_state s)
{
    switch (s) {
    case PDBX_CELL_CONVERGED: return "ci";
    case PDBX_CELL_MAX_REPS: return "max_reps";
    case PDBX_CELL_MAX_TIME: return "max_time";
    default: return NULL;
    }
}

pdbx_cell_state pdbx_adaptive_state(const pdbx_adaptive_rule *r, const double *x, size_t n, double seconds)
{
    if ((long)n >= r->min_reps) {
        double rel = pdbx_adaptive_rel_ci(x, n);
        if (rel <= r->target_rel_ci)
            return PDBX_CELL_CONVERGED;
    }
    if ((long)n >= r->max_reps)
        return PDBX_CELL_MAX_REPS;
    /* the time bound never leaves a cell without an interval (two samples) */
    if (n >= 2 && seconds >= r->max_seconds)
        return PDBX_CELL_MAX_TIME;
    return PDBX_CELL_MORE;
}

long pdbx_adaptive_batch(const pdbx_adaptive_rule *r, size_t n, double mean_ms, double batch_s)
{
    long left = r->max_reps - (long)n;
    if (left < 1)
        return 1;
    long b = mean_ms > 0 ? (long)ceil(batch_s * 1e3 / mean_ms) : 1;
    /* never far past min_reps in one batch while the cell may converge there */
    if ((long)n < r->min_reps && b > r->min_reps - (long)n)
        b = r->min_reps - (long)n;
    if (b < 1)
        b = 1;
    return b < left ? b : left;
}

int pdbx_adaptive_stable(double prev_ms, double cur_ms)
{
    double hi = prev_ms > cur_ms ? prev_ms : cur_ms;
    return hi > 0 && fabs(prev_ms - cur_ms) <= PDBX_WARM_TOL * hi;
}
