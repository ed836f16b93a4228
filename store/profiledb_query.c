/* profiledb_query.c: queries over a folded run: its configs, a config's points, progress
 * (see profiledb.h).
 */
#include "store/profiledb.h"

size_t pdbx_run_config_points(const pdbx_run *run, int tp, int pp, int dp,
                              const pdbx_point **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < run->npoints && n < cap; i++) {
        const pdbx_point *p = &run->points[i];
        if (p->tp != tp || p->pp != pp || p->dp != dp)
            continue;
        /* insertion sort by MBS (stable: plan order among equal MBS) */
        size_t j = n++;
        while (j > 0 && out[j - 1]->mbs > p->mbs) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = p;
    }
    return n;
}

size_t pdbx_run_configs(const pdbx_run *run, int (*out)[3], size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < run->npoints; i++) {
        const pdbx_point *p = &run->points[i];
        size_t j;
        for (j = 0; j < n; j++)
            if (out[j][0] == p->tp && out[j][1] == p->pp && out[j][2] == p->dp)
                break;
        if (j < n)
            continue;
        if (n == cap)
            break;
        out[n][0] = p->tp;
        out[n][1] = p->pp;
        out[n][2] = p->dp;
        n++;
    }
    return n;
}

size_t pdbx_run_points_done(const pdbx_run *run)
{
    size_t n = 0;
    for (size_t i = 0; i < run->npoints; i++)
        if (run->points[i].status != PDBX_POINT_PENDING && run->points[i].status != PDBX_POINT_RUNNING)
            n++;
    return n;
}
