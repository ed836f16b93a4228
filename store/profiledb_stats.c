/* profiledb_stats.c: statistics over samples and the names of stats and statuses
 * (see profiledb.h). The JSON form of a stats object is part of the event schema (events.c).
 */
#include "store/profiledb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/json_fields.h"

/* ---- statistics ---------------------------------------------------------------------- */

static const char *const stat_names[PDBX_STAT_COUNT_KINDS] = {
    [PDBX_STAT_MEAN] = "mean", [PDBX_STAT_MEDIAN] = "median", [PDBX_STAT_MIN] = "min",
    [PDBX_STAT_MAX] = "max", [PDBX_STAT_STD] = "std",
};

const char *pdbx_stat_name(pdbx_stat_kind k)
{
    return (k >= 0 && k < PDBX_STAT_COUNT_KINDS) ? stat_names[k] : "?";
}

int pdbx_stat_from_name(const char *name)
{
    return jf_name_index(name, stat_names, PDBX_STAT_COUNT_KINDS);
}

double pdbx_stats_get(const pdbx_stats *s, pdbx_stat_kind k)
{
    switch (k) {
    case PDBX_STAT_MEAN: return s->mean;
    case PDBX_STAT_MEDIAN: return s->median;
    case PDBX_STAT_MIN: return s->min;
    case PDBX_STAT_MAX: return s->max;
    case PDBX_STAT_STD: return s->std;
    default: return NAN;
    }
}

double pdbx_stats_mean_var(const pdbx_stats *s)
{
    if (s->count < 2 || !isfinite(s->std) || s->std < 0)
        return NAN;
    return s->std * s->std / (double)(s->count - 1);
}

pdbx_noise_verdict pdbx_noise_judge(double a, double var_a, double b, double var_b, double *threshold)
{
    double thr = PDBX_NOISE_Z * sqrt(var_a + var_b);     /* NaN when either is unknown */
    if (threshold)
        *threshold = thr;
    if (!isfinite(a) || !isfinite(b) || !isfinite(thr)) {
        if (threshold)
            *threshold = NAN;
        return PDBX_NOISE_UNKNOWN;
    }
    if (fabs(b - a) <= thr)
        return PDBX_NOISE_SAME;
    return b < a ? PDBX_NOISE_BETTER : PDBX_NOISE_WORSE;
}

pdbx_noise_verdict pdbx_stats_judge(const pdbx_stats *a, const pdbx_stats *b, pdbx_stat_kind k, double *threshold)
{
    return pdbx_noise_judge(pdbx_stats_get(a, k), pdbx_stats_mean_var(a), pdbx_stats_get(b, k),
                            pdbx_stats_mean_var(b), threshold);
}

const char *pdbx_noise_name(pdbx_noise_verdict v)
{
    switch (v) {
    case PDBX_NOISE_SAME: return "same";
    case PDBX_NOISE_BETTER: return "better";
    case PDBX_NOISE_WORSE: return "worse";
    default: return "unknown";
    }
}

char pdbx_noise_mark(pdbx_noise_verdict v)
{
    switch (v) {
    case PDBX_NOISE_SAME: return '~';
    case PDBX_NOISE_BETTER: return 'v';
    case PDBX_NOISE_WORSE: return '^';
    default: return '?';
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void pdbx_stats_from_samples(double *samples, size_t n, pdbx_stats *out)
{
    out->count = (int64_t)n;
    out->ci95 = NAN;
    if (n == 0) {
        out->min = out->max = out->mean = out->median = out->std = NAN;
        return;
    }
    qsort(samples, n, sizeof *samples, cmp_double);
    out->min = samples[0];
    out->max = samples[n - 1];
    out->median = (n % 2) ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += samples[i];
    double mean = sum / (double)n;
    double ss = 0.0;   /* two-pass variance: stable for samples far from zero */
    for (size_t i = 0; i < n; i++)
        ss += (samples[i] - mean) * (samples[i] - mean);
    out->mean = mean;
    out->std = sqrt(ss / (double)n);
    if (n >= 2)
        out->ci95 = pdbx_student_t975((int64_t)n - 1) * sqrt(ss / (double)(n - 1)) / sqrt((double)n);
}

double pdbx_student_t975(int64_t dof)
{
    /* t(0.975, dof) for dof 1..30, then the Cornish-Fisher expansion around 1.96 (within 1e-4
     * of the exact quantile from dof 30 on) */
    static const double t[31] = { NAN, 12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646,
        2.3060, 2.2622, 2.2281, 2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009,
        2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452,
        2.0423 };
    if (dof < 1)
        return NAN;
    if (dof <= 30)
        return t[dof];
    const double z = 1.959964, z3 = z * z * z, z5 = z3 * z * z, v = (double)dof;
    return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v);
}

double pdbx_stats_cv(const pdbx_stats *s)
{
    return s->count > 0 && s->mean > 0 && isfinite(s->std) ? s->std / s->mean : NAN;
}

double pdbx_stats_rel_ci(const pdbx_stats *s)
{
    return s->count > 1 && s->mean > 0 && isfinite(s->ci95) ? s->ci95 / s->mean : NAN;
}

/* ---- names --------------------------------------------------------------------------- */

static const char *const point_status_names[] = {
    [PDBX_POINT_PENDING] = "pending", [PDBX_POINT_RUNNING] = "running", [PDBX_POINT_OK] = "ok",
    [PDBX_POINT_OOM] = "oom", [PDBX_POINT_PREDICTED_OOM] = "predicted_oom",
    [PDBX_POINT_ERROR] = "error", [PDBX_POINT_SKIPPED] = "skipped",
};
#define N_POINT_STATUS ((int)(sizeof point_status_names / sizeof point_status_names[0]))

const char *pdbx_point_status_name(pdbx_point_status s)
{
    return ((int)s >= 0 && (int)s < N_POINT_STATUS) ? point_status_names[s] : "?";
}

static const char *const run_status_names[] = {
    [PDBX_RUN_RUNNING] = "running", [PDBX_RUN_COMPLETE] = "complete",
    [PDBX_RUN_CANCELLED] = "cancelled", [PDBX_RUN_FAILED] = "failed", [PDBX_RUN_CORRUPT] = "corrupt",
    [PDBX_RUN_UNREADABLE] = "unreadable",
};
#define N_RUN_STATUS ((int)(sizeof run_status_names / sizeof run_status_names[0]))

const char *pdbx_run_status_name(pdbx_run_status s)
{
    return ((int)s >= 0 && (int)s < N_RUN_STATUS) ? run_status_names[s] : "?";
}

