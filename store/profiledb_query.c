/* profiledb_query.c: queries over a folded run: its configs, a config's points, progress
 * (see profiledb.h).
 */
#include "store/profiledb.h"

#include <stdlib.h>

/* Both queries sort pointers to the points instead of scanning once per config or
 * insertion-sorting: a hostile run file (a distinct config per point, MBS descending) must not
 * make them quadratic. Ties keep plan order (the pointer's position in points[]). */
static int by_config_mbs(const void *pa, const void *pb)
{
    const pdbx_point *a = *(const pdbx_point *const *)pa, *b = *(const pdbx_point *const *)pb;
    const int ka[4] = { a->tp, a->pp, a->dp, a->mbs }, kb[4] = { b->tp, b->pp, b->dp, b->mbs };
    for (int i = 0; i < 4; i++)
        if (ka[i] != kb[i])
            return ka[i] < kb[i] ? -1 : 1;
    return a < b ? -1 : a > b;
}

static int by_position(const void *pa, const void *pb)
{
    const pdbx_point *a = *(const pdbx_point *const *)pa, *b = *(const pdbx_point *const *)pb;
    return a < b ? -1 : a > b;
}

void pdbx_run_sort_by_config(const pdbx_point **pts, size_t n)
{
    qsort(pts, n, sizeof *pts, by_config_mbs);
}

size_t pdbx_run_config_points(const pdbx_run *run, int tp, int pp, int dp,
                              const pdbx_point **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < run->npoints && n < cap; i++) {
        const pdbx_point *p = &run->points[i];
        if (p->tp == tp && p->pp == pp && p->dp == dp)
            out[n++] = p;
    }
    qsort(out, n, sizeof *out, by_config_mbs);
    return n;
}

size_t pdbx_run_configs(const pdbx_run *run, int (*out)[3], size_t cap)
{
    if (run->npoints == 0 || cap == 0)
        return 0;
    const pdbx_point **all = malloc(run->npoints * sizeof *all);
    if (!all)
        return 0;
    for (size_t i = 0; i < run->npoints; i++)
        all[i] = &run->points[i];
    qsort(all, run->npoints, sizeof *all, by_config_mbs);
    /* the first point (in plan order) of each config, then those firsts in plan order */
    size_t nfirst = 0;
    for (size_t i = 0; i < run->npoints; i++) {
        const pdbx_point *p = all[i], *f = nfirst ? all[nfirst - 1] : NULL;
        if (f && f->tp == p->tp && f->pp == p->pp && f->dp == p->dp) {
            if (p < f)
                all[nfirst - 1] = p;
            continue;
        }
        all[nfirst++] = p;
    }
    qsort(all, nfirst, sizeof *all, by_position);
    size_t n = nfirst < cap ? nfirst : cap;
    for (size_t i = 0; i < n; i++) {
        out[i][0] = all[i]->tp;
        out[i][1] = all[i]->pp;
        out[i][2] = all[i]->dp;
    }
    free(all);
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
