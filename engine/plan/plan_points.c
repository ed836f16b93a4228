/* plan_points.c: expands a validated spec into sweep points in FASOP's order (configurations as
 * given, MBS ascending over the powers of two mbs_min..mbs_max), each with its two memory
 * predictions: the profile memory (what the engine allocates; its OOM mark stops a config's
 * MBS sweep when predict_oom is on, the engine's decision) and the training memory of the full
 * model (planning information only). The plan lists every point. */
#include "engine/plan/plan_internal.h"

#include <stdlib.h>

int pdbx_plan_expand(const pdbx_spec *spec, pdbx_plan_point **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (pdbx_spec_validate(spec, err, errlen) != 0)
        return -1;
    size_t per_config = 0;
    for (int mbs = spec->mbs_min; mbs <= spec->mbs_max; mbs *= 2)
        per_config++;
    size_t total = per_config * (size_t)spec->nconfigs;
    pdbx_plan_point *pts = calloc(total, sizeof *pts);
    if (!pts)
        return pdbx_fail(err, errlen, "plan: out of memory for %zu points", total);
    size_t k = 0;
    for (int c = 0; c < spec->nconfigs; c++) {
        const pdbx_parallel *par = &spec->configs[c];
        for (int mbs = spec->mbs_min; mbs <= spec->mbs_max; mbs *= 2, k++) {
            pdbx_plan_point *p = &pts[k];
            p->index = (int)k;
            p->config = c;
            p->tp = par->tp;
            p->pp = par->pp;
            p->dp = par->dp;
            p->ep = pdbx_par_ep(par);
            p->mbs = mbs;
            p->ranks = par->tp * par->pp * par->dp;
            pdbx_memory_predict(spec, par, mbs, &p->mem);
            /* mem_bytes 0: unknown memory (no /proc/meminfo), nothing is predicted to OOM */
            p->train_oom = spec->gpu.mem_bytes > 0 && p->mem.total > spec->gpu.mem_bytes;
            if (pdbx_plan_point_profile(spec, p, spec->backend, 1, err, errlen) != 0) {
                free(pts);
                return -1;
            }
        }
    }
    *out = pts;
    *n = k;
    return 0;
}
