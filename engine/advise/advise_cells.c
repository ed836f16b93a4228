/* advise_cells.c: a TP degree's compute cells at any MBS (advise_cells.h). */
#include "engine/advise/advise_cells.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/runtable.h"

int pdbx_adv_op_part(pdbx_op op)
{
    if (pdbx_op_is_comm(op))
        return -1;
    if (pdbx_op_is_per_layer(op))
        return PDBX_ADV_LAYER;
    /* once per step: before the first per-layer op (embed) or after the layers */
    for (int o = 0; o < (int)op; o++)
        if (pdbx_op_is_per_layer((pdbx_op)o))
            return PDBX_ADV_LAST;
    return PDBX_ADV_FIRST;
}

void pdbx_adv_cells_free(pdbx_adv_tp_cells *c)
{
    free(c->s);
    memset(c, 0, sizeof *c);
}

static int have_mbs(const pdbx_adv_tp_cells *c, int mbs)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->s[i].mbs == mbs)
            return 1;
    return 0;
}

static int by_mbs(const void *a, const void *b)
{
    const pdbx_adv_sample *x = a, *y = b;
    return (x->mbs > y->mbs) - (x->mbs < y->mbs);
}

/* One point's parts; 0 when a compute op the config measured is missing here. *bwd_ok: every
 * compute op has a measured bwd cell. */
static int point_parts(const pdbx_rt_config *fc, const pdbx_rt_config *bc, size_t i,
                       pdbx_stat_kind stat, pdbx_adv_sample *s, int *bwd_ok)
{
    const pdbx_rt_point *fp = &fc->points[i], *bp = &bc->points[i];
    if (fp->status != PDBX_POINT_OK)
        return 0;
    memset(s, 0, sizeof *s);
    s->mbs = fp->mbs;
    s->tp = fc->tp, s->pp = fc->pp, s->dp = fc->dp;
    *bwd_ok = 1;
    int any = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        int part = pdbx_adv_op_part((pdbx_op)op);
        if (part < 0 || !fc->op_present[op])
            continue;
        double f = pdbx_rt_value(&fp->op[op], stat);
        if (!isfinite(f))
            return 0;
        s->fwd[part] += f;
        any = 1;
        double b = pdbx_rt_value(&bp->op[op], stat);
        if (isfinite(b))
            s->bwd[part] += b;
        else
            *bwd_ok = 0;
    }
    return any;
}

/* How well config k stands in for (tp, pp, dp): 0 the same config, 1 the same rank count, 2
 * another (lower is preferred). */
static int config_rank(const int cfg[3], int pp, int dp)
{
    if (cfg[1] == pp && cfg[2] == dp)
        return 0;
    return (long)cfg[0] * cfg[1] * cfg[2] == (long)cfg[0] * pp * dp ? 1 : 2;
}

int pdbx_adv_cells_build(const pdbx_run *run, int tp, pdbx_stat_kind stat, pdbx_adv_tp_cells *out)
{
    return pdbx_adv_cells_build_for(run, tp, 0, 0, stat, out);
}

int pdbx_adv_cells_build_for(const pdbx_run *run, int tp, int pp, int dp, pdbx_stat_kind stat,
                             pdbx_adv_tp_cells *out)
{
    memset(out, 0, sizeof *out);
    out->tp = tp;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        if (pdbx_op_is_tp_allreduce((pdbx_op)op))
            out->comm_ops_per_layer++;
    size_t cap = run->npoints ? run->npoints : 1;
    int (*cfgs)[3] = malloc(sizeof *cfgs * cap);
    out->s = malloc(sizeof *out->s * cap);
    if (!cfgs || !out->s) {
        free(cfgs);
        pdbx_adv_cells_free(out);
        return -1;
    }
    size_t ncfg = pdbx_run_configs(run, cfgs, cap);
    int has_bwd = pdbx_run_has_bwd(run), all_bwd = 1, rc = 0;
    /* the same config's points first, then those of the same rank count, then the rest, each
     * group in plan order: an MBS takes its cells from the first group that measured it */
    for (int want = 0; want < 3 && rc == 0; want++)
    for (size_t k = 0; k < ncfg && rc == 0; k++) {
        if (cfgs[k][0] != tp || config_rank(cfgs[k], pp, dp) != want)
            continue;
        pdbx_rt_config fc, bc;
        if (pdbx_rt_config_build_pass(run, cfgs[k][0], cfgs[k][1], cfgs[k][2], PDBX_PASS_SEL_FWD, &fc) != 0)
            rc = -1;
        else if (pdbx_rt_config_build_pass(run, cfgs[k][0], cfgs[k][1], cfgs[k][2], PDBX_PASS_SEL_BWD, &bc) != 0) {
            pdbx_rt_config_free(&fc);
            rc = -1;
        } else {
            for (size_t i = 0; i < fc.npoints && i < bc.npoints; i++) {
                pdbx_adv_sample s;
                int bwd_ok;
                if (have_mbs(out, fc.points[i].mbs) || !point_parts(&fc, &bc, i, stat, &s, &bwd_ok))
                    continue;
                all_bwd &= bwd_ok;
                out->s[out->n++] = s;
            }
            pdbx_rt_config_free(&fc);
            pdbx_rt_config_free(&bc);
        }
    }
    free(cfgs);
    if (rc != 0) {
        pdbx_adv_cells_free(out);
        return -1;
    }
    qsort(out->s, out->n, sizeof *out->s, by_mbs);
    out->bwd_measured = has_bwd && all_bwd && out->n > 0;
    if (!out->bwd_measured)   /* FASOP's x3 rule: backward = 2 x forward */
        for (size_t i = 0; i < out->n; i++)
            for (int p = 0; p < PDBX_ADV_NPARTS; p++)
                out->s[i].bwd[p] = 2 * out->s[i].fwd[p];
    return 0;
}

/* value at m on the line through (m1, v1) and (m2, v2); m1 == m2: proportional to m */
static double line_at(double m1, double v1, double m2, double v2, double m)
{
    double v = m1 == m2 ? v1 * m / m1 : v1 + (v2 - v1) * (m - m1) / (m2 - m1);
    return v > 0 ? v : 0;
}

pdbx_adv_how pdbx_adv_cells_at(const pdbx_adv_tp_cells *c, int mbs, pdbx_adv_sample *out,
                               char *note, size_t len)
{
    if (len)
        note[0] = '\0';
    if (c->n == 0) {
        snprintf(note, len, "tp %d: no measured point", c->tp);
        return PDBX_ADV_NONE;
    }
    size_t lo = 0, hi = 0;   /* the two samples the line goes through */
    pdbx_adv_how how;
    for (size_t i = 0; i < c->n; i++)
        if (c->s[i].mbs == mbs) {
            *out = c->s[i];
            return PDBX_ADV_EXACT;
        }
    if (mbs > c->s[c->n - 1].mbs) {
        hi = c->n - 1;
        lo = c->n >= 2 ? c->n - 2 : hi;
        how = PDBX_ADV_EXTRAPOLATED;
    } else if (mbs < c->s[0].mbs) {
        lo = 0;
        hi = c->n >= 2 ? 1 : 0;
        how = PDBX_ADV_EXTRAPOLATED;
    } else {
        while (c->s[hi].mbs < mbs)
            hi++;
        lo = hi - 1;
        how = PDBX_ADV_INTERPOLATED;
    }
    const pdbx_adv_sample *a = &c->s[lo], *b = &c->s[hi];
    *out = *b;
    out->mbs = mbs;
    for (int p = 0; p < PDBX_ADV_NPARTS; p++) {
        out->fwd[p] = line_at(a->mbs, a->fwd[p], b->mbs, b->fwd[p], mbs);
        out->bwd[p] = line_at(a->mbs, a->bwd[p], b->mbs, b->bwd[p], mbs);
    }
    if (how == PDBX_ADV_INTERPOLATED)
        snprintf(note, len, "tp %d mbs %d: op cells interpolated between mbs %d and %d", c->tp, mbs,
                 a->mbs, b->mbs);
    else if (lo == hi)
        snprintf(note, len, "tp %d mbs %d: op cells scaled from mbs %d, the only one measured",
                 c->tp, mbs, a->mbs);
    else
        snprintf(note, len, "tp %d mbs %d: op cells extrapolated from mbs %d and %d", c->tp, mbs,
                 a->mbs, b->mbs);
    return how;
}
