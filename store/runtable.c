/* runtable.c: the one builder of the run table (runtable.h). */
#include "store/runtable.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/util/err.h"

static const pdbx_stats no_stats = { 0, NAN, NAN, NAN, NAN, NAN, NAN };

/* A measured cell keeps its statistics; anything else reads NaN, so no view can mistake an
 * unmeasured cell for a 0 ms one. */
static pdbx_rt_cell cell_of(const pdbx_cell *c)
{
    pdbx_rt_cell r = { 0, no_stats, NAN, NAN, 0, -1, 0, PDBX_OP_EMBED, 0, PDBX_OP_EMBED, NAN };
    if (c->valid) {
        r.valid = 1;
        r.stats = c->stats;
        r.flops = c->flops;
        r.bytes = c->bytes;
        r.reused = c->reused;
        r.source_point = c->reused ? c->source_point : -1;
        r.shared = c->shared;
        r.shared_op = c->shared_op;
        r.fused = c->fused;
        r.fused_op = c->fused_op;
        r.fused_share = c->fused ? c->fused_share : NAN;
    }
    return r;
}

static void point_of(const pdbx_point *p, pdbx_pass_sel sel, pdbx_rt_point *out)
{
    static const pdbx_cell unmeasured;
    out->point = p;
    out->mbs = p->mbs;
    out->status = p->status;
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        pdbx_cell c;
        pdbx_point_cell_pass(p, (pdbx_op)op, sel, &c);
        out->op[op] = cell_of(&c);
    }
    /* measured forward sums, never a sum of op cells; no forward figure in a bwd table */
    out->layer = cell_of(sel == PDBX_PASS_SEL_FWD ? &p->layer : &unmeasured);
    out->total = cell_of(sel == PDBX_PASS_SEL_FWD ? &p->total : &unmeasured);
    out->comm[PDBX_RT_COMM_TP] = &p->tp_allreduce;
    out->comm[PDBX_RT_COMM_PP] = &p->pp_sendrecv;
    out->comm[PDBX_RT_COMM_DP] = &p->dp_allreduce;
}

int pdbx_rt_config_build(const pdbx_run *run, int tp, int pp, int dp, int ep, pdbx_rt_config *out)
{
    return pdbx_rt_config_build_pass(run, tp, pp, dp, ep, PDBX_PASS_SEL_FWD, out);
}

int pdbx_rt_config_build_pass(const pdbx_run *run, int tp, int pp, int dp, int ep, pdbx_pass_sel sel,
                              pdbx_rt_config *out)
{
    memset(out, 0, sizeof *out);
    out->pass = sel;
    out->tp = tp;
    out->pp = pp;
    out->dp = dp;
    out->ep = ep > 1 ? ep : 1;
    size_t cap = 0;                /* exactly the config's points: no npoints-sized row per config */
    for (size_t i = 0; i < run->npoints; i++) {
        const pdbx_point *p = &run->points[i];
        cap += p->tp == tp && p->pp == pp && p->dp == dp && pdbx_point_ep(p) == out->ep;
    }
    cap = cap ? cap : 1;
    const pdbx_point **pts = malloc(cap * sizeof *pts);
    out->points = calloc(cap, sizeof *out->points);
    if (!pts || !out->points) {
        free(pts);
        pdbx_rt_config_free(out);
        return -1;
    }
    out->npoints = pdbx_run_config_points(run, tp, pp, dp, out->ep, pts, cap);
    for (size_t i = 0; i < out->npoints; i++) {
        point_of(pts[i], sel, &out->points[i]);
        for (int op = 0; op < PDBX_OP_COUNT; op++)
            out->op_present[op] |= out->points[i].op[op].valid;
    }
    free(pts);
    return 0;
}

void pdbx_rt_config_free(pdbx_rt_config *c)
{
    free(c->points);
    c->points = NULL;
    c->npoints = 0;
}

static int same_config(const pdbx_point *a, const pdbx_point *b)
{
    return a->tp == b->tp && a->pp == b->pp && a->dp == b->dp && pdbx_point_ep(a) == pdbx_point_ep(b);
}

typedef struct {
    const pdbx_point *first;       /* the config's first point in plan order */
    pdbx_rt_config config;
} keyed_config;

static int by_first_point(const void *pa, const void *pb)
{
    const pdbx_point *fa = ((const keyed_config *)pa)->first, *fb = ((const keyed_config *)pb)->first;
    return fa < fb ? -1 : fa > fb;
}

/* Puts t's configs in plan order; -1 when out of memory (t unchanged). */
static int order_configs(pdbx_runtable *t)
{
    keyed_config *k = malloc((t->nconfigs ? t->nconfigs : 1) * sizeof *k);
    if (!k)
        return -1;
    for (size_t i = 0; i < t->nconfigs; i++) {
        k[i].config = t->configs[i];
        k[i].first = t->configs[i].points[0].point;
        for (size_t j = 1; j < t->configs[i].npoints; j++)
            if (t->configs[i].points[j].point < k[i].first)
                k[i].first = t->configs[i].points[j].point;
    }
    qsort(k, t->nconfigs, sizeof *k, by_first_point);
    for (size_t i = 0; i < t->nconfigs; i++)
        t->configs[i] = k[i].config;
    free(k);
    return 0;
}

/* One sort groups the points by config (MBS order inside), so building the table is
 * O(n log n) whatever the run file declares; configs then go in plan order (their first point). */
int pdbx_runtable_build(const pdbx_run *run, int only_tp, pdbx_runtable *t)
{
    return pdbx_runtable_build_pass(run, only_tp, PDBX_PASS_SEL_FWD, t);
}

int pdbx_runtable_build_pass(const pdbx_run *run, int only_tp, pdbx_pass_sel sel, pdbx_runtable *t)
{
    memset(t, 0, sizeof *t);
    t->run = run;
    t->pass = sel;
    size_t cap = run->npoints ? run->npoints : 1, n = 0;
    const pdbx_point **all = malloc(cap * sizeof *all);
    t->configs = calloc(cap, sizeof *t->configs);
    if (!all || !t->configs)
        goto fail;
    for (size_t i = 0; i < run->npoints; i++)
        if (only_tp <= 0 || run->points[i].tp == only_tp)
            all[n++] = &run->points[i];
    pdbx_run_sort_by_config(all, n);
    for (size_t s = 0, e; s < n; s = e) {
        for (e = s + 1; e < n && same_config(all[s], all[e]); e++)
            ;
        pdbx_rt_config *c = &t->configs[t->nconfigs];
        c->tp = all[s]->tp;
        c->pp = all[s]->pp;
        c->dp = all[s]->dp;
        c->ep = pdbx_point_ep(all[s]);
        c->pass = sel;
        if (!(c->points = calloc(e - s, sizeof *c->points)))
            goto fail;
        t->nconfigs++;
        for (size_t i = s; i < e; i++) {
            point_of(all[i], sel, &c->points[c->npoints]);
            for (int op = 0; op < PDBX_OP_COUNT; op++)
                c->op_present[op] |= c->points[c->npoints].op[op].valid;
            c->npoints++;
        }
    }
    if (order_configs(t) != 0)
        goto fail;
    free(all);
    return 0;
fail:
    free(all);
    pdbx_runtable_free(t);
    return -1;
}

void pdbx_runtable_free(pdbx_runtable *t)
{
    for (size_t i = 0; t->configs && i < t->nconfigs; i++)
        pdbx_rt_config_free(&t->configs[i]);
    free(t->configs);
    t->configs = NULL;
    t->nconfigs = 0;
}

double pdbx_rt_value(const pdbx_rt_cell *c, pdbx_stat_kind stat)
{
    return c->valid ? pdbx_stats_get(&c->stats, stat) : NAN;
}

int pdbx_rt_cell_noisy(const pdbx_rt_cell *c)
{
    double cv = c->valid ? pdbx_stats_cv(&c->stats) : NAN;
    return isfinite(cv) && cv > PDBX_CV_NOISY;
}

char *pdbx_rt_cell_source(const pdbx_rt_cell *c, char *buf, size_t len)
{
    int n = 0;
    if (len)
        buf[0] = '\0';
    if (c->valid && c->reused)
        n = snprintf(buf, len, "measured at point %d", c->source_point);
    if (c->valid && c->shared && n >= 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "%sshared with %s", n ? ", " : "", pdbx_op_name(c->shared_op));
    if (c->valid && c->fused && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "%sfused in %s x%.2f", n ? ", " : "", pdbx_op_name(c->fused_op),
                 c->fused_share);
    return buf;
}

const char *pdbx_rt_comm_name(int kind)
{
    static const char *const names[PDBX_RT_NCOMM] = { "tp_allreduce", "pp_sendrecv", "dp_allreduce" };
    return kind >= 0 && kind < PDBX_RT_NCOMM ? names[kind] : "?";
}

/* ---- attribution -------------------------------------------------------------------------- */
static void set_col(pdbx_rt_col *c, const char *name, pdbx_opmask ops)
{
    snprintf(c->name, sizeof c->name, "%s", name);
    c->ops = ops;
    c->per_layer = 1;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        if ((ops & PDBX_OP_BIT(op)) && !pdbx_op_is_per_layer((pdbx_op)op))
            c->per_layer = 0;
}

size_t pdbx_rt_fasop_columns(pdbx_attribution attr, pdbx_rt_col *out)
{
    for (int c = 0; c < PDBX_FASOP_COLS; c++)
        set_col(&out[c], pdbx_fasop_col_name(c), pdbx_fasop_col_ops(c, attr == PDBX_ATTR_FASOP));
    return PDBX_FASOP_COLS;
}

size_t pdbx_rt_columns(pdbx_attribution attr, pdbx_rt_col *out)
{
    if (attr == PDBX_ATTR_FASOP)
        return pdbx_rt_fasop_columns(attr, out);
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        set_col(&out[op], pdbx_op_name((pdbx_op)op), PDBX_OP_BIT(op));
    return PDBX_OP_COUNT;
}

double pdbx_rt_col_value(const pdbx_rt_point *p, const pdbx_rt_col *col, pdbx_stat_kind stat)
{
    int nops = 0, valid = 0;
    double sum = 0.0;
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        if (!(col->ops & PDBX_OP_BIT(op)))
            continue;
        nops++;
        if (!p->op[op].valid)
            continue;
        sum += pdbx_stats_get(&p->op[op].stats, stat);
        valid = 1;
    }
    if (!valid || (stat == PDBX_STAT_STD && nops > 1))
        return NAN;
    return sum;
}

int pdbx_rt_check_time_stat(pdbx_stat_kind stat, char *err, size_t errlen)
{
    if ((int)stat >= 0 && stat < PDBX_STAT_COUNT_KINDS && stat != PDBX_STAT_STD)
        return 0;
    if (stat == PDBX_STAT_STD)
        pdbx_errf(err, errlen, "--stat: 'std' is not a time (allowed: mean, median, min, max)");
    else
        pdbx_errf(err, errlen, "--stat: %d is not a statistic (allowed: mean, median, min, max)",
                  (int)stat);
    return -1;
}

double pdbx_rt_share(const pdbx_rt_point *p, pdbx_op op, pdbx_stat_kind stat)
{
    if (!pdbx_op_in_model_fwd(op))   /* loss, optimizer: no share of the measured forward */
        return NAN;
    const pdbx_rt_cell *whole = pdbx_op_is_per_layer(op) ? &p->layer : &p->total;
    double part = pdbx_rt_value(&p->op[op], stat), den = pdbx_rt_value(whole, stat);
    if (!isfinite(part) || !(den > 0))
        return NAN;
    return part / den;
}
