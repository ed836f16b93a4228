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
    if (op == PDBX_OP_OPTIMIZER)
        return PDBX_ADV_OPT;
    if (op == PDBX_OP_LOSS)
        return PDBX_ADV_LOSS;
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

/* The part a per-layer op's cell adds to: the dense MLP and the MoE ops apart (advise_cells.h). */
static int layer_part(pdbx_op op)
{
    if (op == PDBX_OP_MLP_GATE || op == PDBX_OP_MLP_UP || op == PDBX_OP_MLP_ACT_FN || op == PDBX_OP_MLP_DOWN)
        return PDBX_ADV_DENSE;
    return pdbx_op_is_moe(op) ? PDBX_ADV_MOE : PDBX_ADV_LAYER;
}

/* The EP all-to-alls of point i into A2A (fwd; bwd when measured, else the forward's: the
 * backward moves the same rows back). */
static void point_a2a(const pdbx_rt_config *fc, const pdbx_rt_config *bc, size_t i, pdbx_stat_kind stat,
                      pdbx_adv_sample *s)
{
    static const pdbx_op a2a[] = { PDBX_OP_EP_DISPATCH, PDBX_OP_EP_COMBINE };
    for (size_t k = 0; k < sizeof a2a / sizeof a2a[0]; k++) {
        double f = pdbx_rt_value(&fc->points[i].op[a2a[k]], stat);
        double b = pdbx_rt_value(&bc->points[i].op[a2a[k]], stat);
        if (!isfinite(f))
            continue;
        s->fwd[PDBX_ADV_A2A] += f;
        s->bwd[PDBX_ADV_A2A] += isfinite(b) ? b : f;
    }
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
    s->tp = fc->tp, s->pp = fc->pp, s->dp = fc->dp, s->ep = fc->ep;
    *bwd_ok = 1;
    int any = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        int part = pdbx_adv_op_part((pdbx_op)op);
        if (part < 0 || !fc->op_present[op])
            continue;
        if (part == PDBX_ADV_LAYER)
            part = layer_part((pdbx_op)op);
        double f = pdbx_rt_value(&fp->op[op], stat);
        if (!isfinite(f))
            return 0;
        s->fwd[part] += f;
        if (op == PDBX_OP_ATTN_CORE)
            s->core_fwd = f;
        any = 1;
        if (!pdbx_op_has_bwd((pdbx_op)op))
            continue;
        double b = pdbx_rt_value(&bp->op[op], stat);
        if (isfinite(b))
            s->bwd[part] += b;
        else
            *bwd_ok = 0;
    }
    if (fc->ep > 1)
        point_a2a(fc, bc, i, stat, s);
    return any;
}

/* How well config k stands in for (tp, pp, dp): 0 the same config, 1 the same rank count, 2
 * another (lower is preferred). */
static int config_rank(const pdbx_rt_config *cfg, int pp, int dp)
{
    if (cfg->pp == pp && cfg->dp == dp)
        return 0;
    return (long)cfg->pp * cfg->dp == (long)pp * dp ? 1 : 2;
}

int pdbx_adv_cells_build(const pdbx_run *run, int tp, pdbx_stat_kind stat, pdbx_adv_tp_cells *out)
{
    return pdbx_adv_cells_build_for(run, tp, 0, 0, 1, stat, out);
}

/* The samples of the configs of table fwd (bwd: the same configs, the backward cells) at
 * (tp, ep), the preferred configs first (config_rank). *all_bwd: every sample's bwd measured. */
static void take_samples(const pdbx_runtable *fwd, const pdbx_runtable *bwd, int ep, int pp, int dp,
                         pdbx_stat_kind stat, pdbx_adv_tp_cells *out, int *all_bwd)
{
    for (int want = 0; want < 3; want++)
    for (size_t k = 0; k < fwd->nconfigs && k < bwd->nconfigs; k++) {
        const pdbx_rt_config *fc = &fwd->configs[k], *bc = &bwd->configs[k];
        if (fc->ep != ep || config_rank(fc, pp, dp) != want)
            continue;
        for (size_t i = 0; i < fc->npoints && i < bc->npoints; i++) {
            pdbx_adv_sample s;
            int bwd_ok;
            if (have_mbs(out, fc->points[i].mbs) || !point_parts(fc, bc, i, stat, &s, &bwd_ok))
                continue;
            *all_bwd &= bwd_ok;
            out->s[out->n++] = s;
        }
    }
}

int pdbx_adv_cells_build_for(const pdbx_run *run, int tp, int pp, int dp, int ep, pdbx_stat_kind stat,
                             pdbx_adv_tp_cells *out)
{
    memset(out, 0, sizeof *out);
    out->tp = tp;
    out->ep = ep;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        if (pdbx_op_is_tp_allreduce((pdbx_op)op))
            out->comm_ops_per_layer++;
    size_t cap = run->npoints ? run->npoints : 1;
    out->s = malloc(sizeof *out->s * cap);
    /* both tables group the same points by (tp, pp, dp, ep) in plan order: config k of one is
     * config k of the other */
    pdbx_runtable fwd, bwd;
    int rf = pdbx_runtable_build_pass(run, tp, PDBX_PASS_SEL_FWD, &fwd);
    int rb = pdbx_runtable_build_pass(run, tp, PDBX_PASS_SEL_BWD, &bwd);
    int all_bwd = 1, rc = (!out->s || rf != 0 || rb != 0) ? -1 : 0;
    if (rc == 0)
        take_samples(&fwd, &bwd, ep, pp, dp, stat, out, &all_bwd);
    if (rf == 0)
        pdbx_runtable_free(&fwd);
    if (rb == 0)
        pdbx_runtable_free(&bwd);
    if (rc != 0) {
        pdbx_adv_cells_free(out);
        return -1;
    }
    qsort(out->s, out->n, sizeof *out->s, by_mbs);
    out->bwd_measured = pdbx_run_has_bwd(run) && all_bwd && out->n > 0;
    if (!out->bwd_measured)   /* FASOP's x3 rule: backward = 2 x forward (the all-to-all: 1 x) */
        for (size_t i = 0; i < out->n; i++)
            for (int p = 0; p < PDBX_ADV_NPARTS; p++)
                out->s[i].bwd[p] = p == PDBX_ADV_OPT ? 0 : (p == PDBX_ADV_A2A ? 1 : 2) * out->s[i].fwd[p];
    return 0;
}

/* value at m on the line through (m1, v1) and (m2, v2), m1 < m2; m1 == m2: proportional to m.
 * A cell's time does not shrink with more tokens nor vanish with fewer, but two noisy samples
 * can tilt the line so (an all-to-all of 4 rows measured below its 2-row time put MBS 8 at 0
 * ms): where the line falls below the nearest measured value beyond the larger MBS, or to 0
 * below the smaller, the nearest measured value in proportion to m. */
static double line_at(double m1, double v1, double m2, double v2, double m)
{
    if (m1 == m2)
        return v1 * m / m1;
    double v = v1 + (v2 - v1) * (m - m1) / (m2 - m1);
    if (m > m2 && v < v2)
        return v2 * m / m2;
    if (m < m1 && !(v > 0))
        return v1 * m / m1;
    return v > 0 ? v : 0;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The optimizer's cell does not depend on the MBS (one layer's parameters): the median over the
 * samples that have one (0 when none), never a line through two MBS, so that one noisy point
 * (two ranks stepping 880 MB each at once on this VM: 112-818 ms for a 120 ms step) does not
 * stand for its MBS alone and an extrapolated MBS does not scale it. */
static double optimizer_cell(const pdbx_adv_tp_cells *c)
{
    double v[64];
    size_t n = 0;
    for (size_t i = 0; i < c->n && n < sizeof v / sizeof v[0]; i++)
        if (c->s[i].fwd[PDBX_ADV_OPT] > 0)
            v[n++] = c->s[i].fwd[PDBX_ADV_OPT];
    if (n == 0)
        return 0;
    qsort(v, n, sizeof v[0], by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

pdbx_adv_how pdbx_adv_cells_at(const pdbx_adv_tp_cells *c, int mbs, pdbx_adv_sample *out,
                               char *note, size_t len)
{
    if (len)
        note[0] = '\0';
    char who[32];   /* "tp 2", "tp 2 ep 2": an EP degree's cells are its own */
    if (c->ep > 1)
        snprintf(who, sizeof who, "tp %d ep %d", c->tp, c->ep);
    else
        snprintf(who, sizeof who, "tp %d", c->tp);
    if (c->n == 0) {
        snprintf(note, len, "%s: no measured point", who);
        return PDBX_ADV_NONE;
    }
    size_t lo = 0, hi = 0;   /* the two samples the line goes through */
    pdbx_adv_how how;
    for (size_t i = 0; i < c->n; i++)
        if (c->s[i].mbs == mbs) {
            *out = c->s[i];
            out->fwd[PDBX_ADV_OPT] = optimizer_cell(c);
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
    out->core_fwd = line_at(a->mbs, a->core_fwd, b->mbs, b->core_fwd, mbs);
    out->fwd[PDBX_ADV_OPT] = optimizer_cell(c);
    if (how == PDBX_ADV_INTERPOLATED)
        snprintf(note, len, "%s mbs %d: op cells interpolated between mbs %d and %d", who, mbs,
                 a->mbs, b->mbs);
    else if (lo == hi)
        snprintf(note, len, "%s mbs %d: op cells scaled from mbs %d, the only one measured",
                 who, mbs, a->mbs);
    else
        snprintf(note, len, "%s mbs %d: op cells extrapolated from mbs %d and %d", who, mbs,
                 a->mbs, b->mbs);
    return how;
}
