/* engine_stats.c: statistics rows and their max across ranks (engine_stats.h). */
#include "engine/engine_stats.h"

#include <math.h>

void pdbx_estats_pack(double *row, double *x, size_t n)
{
    pdbx_stats st;
    pdbx_stats_from_samples(x, n, &st);
    row[0] = (double)st.count;
    row[1] = n ? st.min : 0;
    row[2] = n ? st.max : 0;
    row[3] = n ? st.mean : 0;
    row[4] = n ? st.median : 0;
    row[5] = n ? st.std : 0;
    row[6] = n > 1 ? st.ci95 : 0;
}

void pdbx_estats_unpack(const double *row, pdbx_stats *st)
{
    st->count = (int64_t)row[0];
    st->min = row[1];
    st->max = row[2];
    st->mean = row[3];
    st->median = row[4];
    st->std = row[5];
    st->ci95 = st->count > 1 ? row[6] : NAN;
}

cJSON *pdbx_estats_json(const double *row)
{
    pdbx_stats st;
    pdbx_estats_unpack(row, &st);
    return pdbx_stats_to_json(&st);
}

void pdbx_estats_max(const double *all, int nrows, const int *ranks, int n, int row, double *out)
{
    for (int k = 0; k < PDBX_ESTAT; k++)
        out[k] = all[((size_t)ranks[0] * (size_t)nrows + (size_t)row) * PDBX_ESTAT + (size_t)k];
    for (int i = 1; i < n; i++)
        for (int k = 1; k < PDBX_ESTAT; k++) {
            double v = all[((size_t)ranks[i] * (size_t)nrows + (size_t)row) * PDBX_ESTAT + (size_t)k];
            if (v > out[k])
                out[k] = v;
        }
}
