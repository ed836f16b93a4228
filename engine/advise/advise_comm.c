/* advise_comm.c: a collective's time at a size and placement (advise_comm.h). */
#include "engine/advise/advise_comm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/runtable.h"
#include "store/util/fmt.h"

int pdbx_adv_spans(long last_rank, int per_node)
{
    return per_node > 0 && last_rank / per_node != 0;
}

typedef struct {
    double bytes, ms;
    int sweep;   /* 1: from the collectives sweep, 0: from the points' cells */
} comm_sample;

typedef struct {
    size_t n, cap;
    comm_sample *s;
} sample_set;

static void set_add(sample_set *set, double bytes, double ms, int sweep)
{
    if (!(bytes > 0) || !isfinite(ms) || ms < 0 || set->n == set->cap)
        return;
    set->s[set->n++] = (comm_sample){ bytes, ms, sweep };
}

static int by_bytes_ms(const void *a, const void *b)
{
    const comm_sample *x = a, *y = b;
    if (x->bytes != y->bytes)
        return (x->bytes > y->bytes) - (x->bytes < y->bytes);
    return (x->ms > y->ms) - (x->ms < y->ms);
}

/* Sorts by size and folds the measurements of one size into their median: the DP bucket is
 * measured at every point of a config (one per MBS), and one noisy point should not decide. */
static void set_collapse(sample_set *set)
{
    qsort(set->s, set->n, sizeof *set->s, by_bytes_ms);
    size_t out = 0;
    for (size_t i = 0; i < set->n;) {
        size_t j = i;
        while (j < set->n && set->s[j].bytes == set->s[i].bytes)
            j++;
        size_t k = j - i;
        double med = k % 2 ? set->s[i + k / 2].ms : (set->s[i + k / 2 - 1].ms + set->s[i + k / 2].ms) / 2;
        set->s[out++] = (comm_sample){ set->s[i].bytes, med, set->s[i].sweep };
        i = j;
    }
    set->n = out;
}

/* The last rank of the kind's group in a (tp, pp, dp) config of Megatron's rank order. */
static long group_last_rank(int kind, int tp, int dp)
{
    if (kind == PDBX_RT_COMM_TP)
        return tp - 1;
    if (kind == PDBX_RT_COMM_PP)
        return (long)tp * dp;          /* stage 1's first rank */
    return (long)tp * (dp - 1);        /* DP: ranks 0, tp, ..., tp (dp - 1) */
}

static const pdbx_comm_cell *point_comm(const pdbx_point *p, int kind)
{
    return kind == PDBX_RT_COMM_TP ? &p->tp_allreduce : kind == PDBX_RT_COMM_PP ? &p->pp_sendrecv
                                                                               : &p->dp_allreduce;
}

static void point_cells(const pdbx_run *run, int kind, int group, int inter, pdbx_stat_kind stat,
                        double factor, sample_set *set)
{
    for (size_t i = 0; i < run->npoints; i++) {
        const pdbx_point *p = &run->points[i];
        const pdbx_comm_cell *c = point_comm(p, kind);
        if (p->status != PDBX_POINT_OK
            || pdbx_adv_spans(group_last_rank(kind, p->tp, p->dp), run->ranks_per_node) != inter)
            continue;
        if (c->valid && c->group_size == group) {
            set_add(set, c->bytes, factor * pdbx_stats_get(&c->time, stat), 0);
            continue;
        }
        /* a run recorded before comm events: the layer's TP all-reduce op cells (their bytes
         * are the message size) */
        if (kind != PDBX_RT_COMM_TP || c->valid || p->tp != group)
            continue;
        for (int op = 0; op < PDBX_OP_COUNT; op++)
            if (pdbx_op_is_tp_allreduce((pdbx_op)op) && p->op[op].valid && p->op[op].bytes > 0) {
                set_add(set, p->op[op].bytes, factor * pdbx_stats_get(&p->op[op].stats, stat), 0);
                break;
            }
    }
}

static int coll_spans(const pdbx_coll_result *c)
{
    return c->spans_nodes || (c->ranks_per_node > 0 && c->nranks > c->ranks_per_node);
}

static void sweep_cells(const pdbx_run *run, int kind, int group, int inter, pdbx_stat_kind stat,
                        double factor, sample_set *set)
{
    const char *coll = kind == PDBX_RT_COMM_PP ? "send_recv" : "all_reduce";
    for (size_t i = 0; i < run->ncoll; i++) {
        const pdbx_coll_result *c = &run->coll[i];
        if (strcmp(c->coll, coll) != 0 || c->nranks != group || !c->in_place)
            continue;
        if (coll_spans(c) != inter)
            continue;
        set_add(set, c->bytes, factor * pdbx_stats_get(&c->time, stat), 1);
    }
}

/* The time at bytes from a set (sorted here); NONE when empty. *a, *b: the sizes used. */
static pdbx_adv_how set_at(sample_set *set, double bytes, double *ms, double *a, double *b)
{
    if (set->n == 0)
        return PDBX_ADV_NONE;
    const comm_sample *s = set->s;   /* collapsed: one entry per size, ascending */
    size_t n = set->n;
    for (size_t i = 0; i < n; i++)
        if (s[i].bytes == bytes) {
            *ms = s[i].ms, *a = *b = bytes;
            return PDBX_ADV_EXACT;
        }
    if (bytes > s[n - 1].bytes || bytes < s[0].bytes) {
        const comm_sample *near = bytes > s[n - 1].bytes ? &s[n - 1] : &s[0];
        *ms = near->ms * bytes / near->bytes;
        *a = *b = near->bytes;
        return PDBX_ADV_EXTRAPOLATED;
    }
    size_t hi = 0;
    while (s[hi].bytes < bytes)
        hi++;
    const comm_sample *x = &s[hi - 1], *y = &s[hi];
    *ms = x->ms + (y->ms - x->ms) * (bytes - x->bytes) / (y->bytes - x->bytes);
    *a = x->bytes, *b = y->bytes;
    return PDBX_ADV_INTERPOLATED;
}

static int covers(sample_set *set, double bytes)
{
    if (set->n == 0)
        return 0;
    double lo = set->s[0].bytes, hi = lo;
    for (size_t i = 1; i < set->n; i++) {
        if (set->s[i].bytes < lo)
            lo = set->s[i].bytes;
        if (set->s[i].bytes > hi)
            hi = set->s[i].bytes;
    }
    return bytes >= lo && bytes <= hi;
}

/* The all-reduce group size nearest to `group` (by ratio; the larger on a tie) that the points
 * or the sweep measured at placement inter, other than group itself; 0 when none. */
static int nearest_group(const pdbx_run *run, int kind, int group, int inter)
{
    int best = 0;
    double bd = INFINITY;
    for (size_t i = 0; i < run->npoints + run->ncoll; i++) {
        int g;
        if (i < run->npoints) {
            const pdbx_point *p = &run->points[i];
            const pdbx_comm_cell *c = point_comm(p, kind);
            if (p->status != PDBX_POINT_OK || !c->valid
                || pdbx_adv_spans(group_last_rank(kind, p->tp, p->dp), run->ranks_per_node) != inter)
                continue;
            g = c->group_size;
        } else {
            const pdbx_coll_result *c = &run->coll[i - run->npoints];
            if (strcmp(c->coll, "all_reduce") != 0 || !c->in_place || coll_spans(c) != inter)
                continue;
            g = c->nranks;
        }
        if (g < 2 || g == group)
            continue;
        double d = fabs(log((double)g / group));
        if (d < bd || (d == bd && g > best))
            best = g, bd = d;
    }
    return best;
}

/* A ring all-reduce moves 2 (n - 1) / n of the message per rank: at the same bus bandwidth the
 * time scales by that factor (nccl-tests' busbw). */
static double ring_factor(int n)
{
    return 2.0 * (n - 1) / n;
}

/* |log(bytes / size)| of the set's nearest size; INFINITY when empty */
static double nearest(const sample_set *set, double bytes)
{
    double best = INFINITY;
    for (size_t i = 0; i < set->n; i++) {
        double d = fabs(log(bytes / set->s[i].bytes));
        if (d < best)
            best = d;
    }
    return best;
}

/* Neither source covers bytes alone but the two together do (the collectives sweep's small
 * sizes below it, a point's DP bucket above it, say): the time interpolated over both, rather
 * than one source scaled linearly across orders of magnitude. 1 with *ms, *how and the two
 * sizes read (and which source each came from) in *src; 0 when it does not apply. */
typedef struct comm_source comm_source;
static int union_at(sample_set *pts, sample_set *swp, sample_set *both, double bytes, double *ms,
                    pdbx_adv_how *how, comm_source *src);

/* Where a communication time came from: the kind, the source (the points' cells or the
 * collectives sweep), the group size measured and asked, the ring scaling between them, the
 * placement measured and asked, the two sizes read and the one asked. */
struct comm_source {
    int kind, sweep, have, group;   /* sweep 2: both sources, a from sweep_a's, b from sweep_b's */
    double factor;
    int at, inter;
    double a, b, bytes;
    int sweep_a, sweep_b;
};

static const char *source_from(int sweep)
{
    return sweep ? "the collectives sweep's" : "the points'";
}

static const char *source_cell(int kind, int sweep)
{
    return sweep ? (kind == PDBX_RT_COMM_PP ? "send_recv" : "all_reduce") : pdbx_rt_comm_name(kind);
}

/* The note for a time read from src by `how` in pass `pass` (none for an exact cell of the
 * asked group and placement). */
static void comm_note(const comm_source *src, pdbx_adv_how how, int pass, const char *who, char *note, size_t len)
{
    char size[24], sa[24], sb[24], where[160] = "";
    const char *from = source_from(src->sweep), *cell = source_cell(src->kind, src->sweep);
    if (src->have != src->group)
        snprintf(where, sizeof where, "; %d-rank cells x %.3g (ring 2(n-1)/n)", src->have, src->factor);
    if (src->at != src->inter)
        snprintf(where + strlen(where), sizeof where - strlen(where), "%s",
                 src->inter ? "; intra-node cells, the group spans nodes" : "; inter-node cells, the group is in one node");
    pdbx_fmt_size(src->bytes, size, sizeof size);
    pdbx_fmt_size(src->a, sa, sizeof sa);
    pdbx_fmt_size(src->b, sb, sizeof sb);
    if ((src->a != src->bytes && strcmp(sa, size) == 0) || (src->b != src->bytes && strcmp(sb, size) == 0)) {
        /* two sizes within the formatting's rounding: exact bytes */
        snprintf(size, sizeof size, "%.0f B", src->bytes);
        snprintf(sa, sizeof sa, "%.0f B", src->a);
        snprintf(sb, sizeof sb, "%.0f B", src->b);
    }
    if (how == PDBX_ADV_INTERPOLATED && src->sweep == 2)
        snprintf(note, len, "%s of %s interpolated between %s %s of %s and %s %s of %s%s", who, size,
                 source_from(src->sweep_a), source_cell(src->kind, src->sweep_a), sa,
                 source_from(src->sweep_b), source_cell(src->kind, src->sweep_b), sb, where);
    else if (how == PDBX_ADV_INTERPOLATED)
        snprintf(note, len, "%s of %s interpolated between %s %s of %s and %s%s", who, size, from, cell, sa, sb,
                 where);
    else if (how == PDBX_ADV_EXTRAPOLATED)
        snprintf(note, len, "%s of %s scaled linearly by bytes from %s %s of %s%s", who, size, from, cell, sa,
                 where);
    else if (pass > 0)
        snprintf(note, len, "%s of %s from %s %s%s", who, size, from, cell, where);
}

static int union_at(sample_set *pts, sample_set *swp, sample_set *both, double bytes, double *ms,
                    pdbx_adv_how *how, comm_source *src)
{
    if (pts->n == 0 || swp->n == 0 || covers(pts, bytes) || covers(swp, bytes))
        return 0;
    both->n = 0;
    for (size_t i = 0; i < pts->n; i++)
        both->s[both->n++] = pts->s[i];
    for (size_t i = 0; i < swp->n; i++)
        both->s[both->n++] = swp->s[i];
    if (!covers(both, bytes))
        return 0;
    set_collapse(both);
    *how = set_at(both, bytes, ms, &src->a, &src->b);
    for (size_t i = 0; i < both->n; i++) {
        if (both->s[i].bytes == src->a)
            src->sweep_a = both->s[i].sweep;
        if (both->s[i].bytes == src->b)
            src->sweep_b = both->s[i].sweep;
    }
    return 1;
}

pdbx_adv_how pdbx_adv_comm_time(const pdbx_run *run, int kind, int group, double bytes, int inter,
                                pdbx_stat_kind stat, double *ms, char *note, size_t len)
{
    if (len)
        note[0] = '\0';
    *ms = NAN;
    size_t cap = run->npoints + run->ncoll + 1;
    sample_set pts = { 0, cap, malloc(sizeof(comm_sample) * cap) };
    sample_set swp = { 0, cap, malloc(sizeof(comm_sample) * cap) };
    sample_set both = { 0, 2 * cap, malloc(sizeof(comm_sample) * 2 * cap) };
    comm_source src_both;
    char who[40];
    if (kind == PDBX_RT_COMM_PP)
        snprintf(who, sizeof who, "pp send/recv");
    else
        snprintf(who, sizeof who, "%s %d all-reduce", kind == PDBX_RT_COMM_TP ? "tp" : "dp", group);
    pdbx_adv_how how = PDBX_ADV_NONE;
    if (!pts.s || !swp.s || !both.s) {
        snprintf(note, len, "%s: out of memory", who);
        goto done;
    }
    /* the asked placement first, then the other one; within each the group's own size, then
     * (all-reduce) the nearest measured group size at the same bus bandwidth */
    for (int pass = 0; pass < 4 && how == PDBX_ADV_NONE; pass++) {
        int at = pass < 2 ? inter : !inter, have = group;
        double factor = 1;
        if (pass % 2 == 1) {
            if (kind == PDBX_RT_COMM_PP || (have = nearest_group(run, kind, group, at)) == 0)
                continue;
            factor = ring_factor(group) / ring_factor(have);
        }
        pts.n = swp.n = 0;
        point_cells(run, kind, have, at, stat, factor, &pts);
        sweep_cells(run, kind, have, at, stat, factor, &swp);
        set_collapse(&pts);
        set_collapse(&swp);
        if (union_at(&pts, &swp, &both, bytes, ms, &how, &src_both)) {
            src_both = (comm_source){ kind, 2, have, group, factor, at, inter, src_both.a, src_both.b, bytes,
                                      src_both.sweep_a, src_both.sweep_b };
            comm_note(&src_both, how, pass, who, note, len);
            break;
        }
        /* a source that covers the size (TP: the points first; PP, DP: the sweep first);
         * when none does, the one with the nearest measured size (same preference on a tie) */
        sample_set *order[2] = { &pts, &swp };
        int sweep_first;
        if (covers(&pts, bytes) || covers(&swp, bytes))
            sweep_first = kind == PDBX_RT_COMM_TP ? !covers(&pts, bytes) : covers(&swp, bytes);
        else {
            double dp_ = nearest(&pts, bytes), ds = nearest(&swp, bytes);
            sweep_first = kind == PDBX_RT_COMM_TP ? ds < dp_ : ds <= dp_;
        }
        if (sweep_first)
            order[0] = &swp, order[1] = &pts;
        for (int k = 0; k < 2 && how == PDBX_ADV_NONE; k++) {
            double a = 0, b = 0;
            how = set_at(order[k], bytes, ms, &a, &b);
            if (how == PDBX_ADV_NONE)
                continue;
            const comm_source src = { kind, order[k] == &swp, have, group, factor, at, inter, a, b, bytes, 0, 0 };
            comm_note(&src, how, pass, who, note, len);
            if (pass > 0 && how == PDBX_ADV_EXACT)
                how = PDBX_ADV_EXTRAPOLATED;   /* another placement's or group's cell: an estimate */
        }
    }
    if (how == PDBX_ADV_NONE)
        snprintf(note, len, "%s not measured (no %s cell of %d ranks, no collectives sweep entry)", who,
                 pdbx_rt_comm_name(kind), group);
done:
    free(pts.s);
    free(swp.s);
    free(both.s);
    return how;
}

pdbx_adv_how pdbx_adv_sweep_time(const pdbx_run *run, const char *coll, int group, double bytes, int inter,
                                 pdbx_stat_kind stat, double *ms, char *note, size_t len)
{
    if (len)
        note[0] = '\0';
    *ms = NAN;
    sample_set set = { 0, run->ncoll + 1, malloc(sizeof(comm_sample) * (run->ncoll + 1)) };
    pdbx_adv_how how = PDBX_ADV_NONE;
    if (!set.s) {
        snprintf(note, len, "dp %d %s: out of memory", group, coll);
        return how;
    }
    for (int pass = 0; pass < 2 && how == PDBX_ADV_NONE; pass++) {   /* the asked placement first */
        const int at = pass == 0 ? inter : !inter;
        set.n = 0;
        for (size_t i = 0; i < run->ncoll; i++) {
            const pdbx_coll_result *c = &run->coll[i];
            if (strcmp(c->coll, coll) == 0 && c->nranks == group && c->in_place && coll_spans(c) == at)
                set_add(&set, c->bytes, pdbx_stats_get(&c->time, stat), 1);
        }
        set_collapse(&set);
        double a, b;
        how = set_at(&set, bytes, ms, &a, &b);
        if (how == PDBX_ADV_NONE || (how == PDBX_ADV_EXACT && at == inter))
            continue;
        char where[48] = "";
        if (at != inter)
            snprintf(where, sizeof where, " (measured %s only)", at ? "across nodes" : "within a node");
        if (how == PDBX_ADV_EXACT)
            snprintf(note, len, "dp %d %s of %.0f MiB from the collectives sweep%s", group, coll, bytes / 1048576,
                     where);
        else
            snprintf(note, len, "dp %d %s of %.0f MiB %s from the collectives sweep's %.0f..%.0f MiB%s", group,
                     coll, bytes / 1048576, how == PDBX_ADV_INTERPOLATED ? "interpolated" : "scaled linearly by bytes",
                     a / 1048576, b / 1048576, where);
    }
    free(set.s);
    return how;
}
