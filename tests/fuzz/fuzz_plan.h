/* fuzz_plan.h: the planner's walk that the spec and model targets share (header-only: only
 * targets that link engine/plan include it, fuzz_common.c links the store alone). */
#ifndef PDBX_FUZZ_PLAN_H
#define PDBX_FUZZ_PLAN_H

#include <stdlib.h>

#include "engine/plan/plan.h"

/* Expands a validated spec's points and computes every op shape of the first few: what
 * `pdbx plan` does with a spec after reading it. */
static inline void fuzz_plan_points(const pdbx_spec *spec)
{
    char err[1024];
    pdbx_plan_point *pts = NULL;
    size_t n = 0;
    if (pdbx_plan_expand(spec, &pts, &n, err, sizeof err) != 0)
        return;
    for (size_t i = 0; i < n && i < 4; i++) {
        pdbx_op_shape shape;
        for (int op = 0; op < PDBX_OP_COUNT; op++)
            (void)pdbx_op_shape_for(spec, pts[i].tp, pts[i].mbs, (pdbx_op)op, &shape);
    }
    free(pts);
}

#endif
