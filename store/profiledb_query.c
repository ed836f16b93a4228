/* profiledb_query.c: queries over a folded run: its configs, a config's points, progress
 * (see profiledb.h).
 */
#include "store/profiledb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/util/err.h"

/* Both queries sort pointers to the points instead of scanning once per config or
 * insertion-sorting: a hostile run file (a distinct config per point, MBS descending) must not
 * make them quadratic. Ties keep plan order (the pointer's position in points[]). */
static int by_config_mbs(const void *pa, const void *pb)
{
    const pdbx_point *a = *(const pdbx_point *const *)pa, *b = *(const pdbx_point *const *)pb;
    const int ka[5] = { a->tp, a->pp, a->dp, pdbx_point_ep(a), a->mbs };
    const int kb[5] = { b->tp, b->pp, b->dp, pdbx_point_ep(b), b->mbs };
    for (int i = 0; i < 5; i++)
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

size_t pdbx_run_config_points(const pdbx_run *run, int tp, int pp, int dp, int ep,
                              const pdbx_point **out, size_t cap)
{
    size_t n = 0;
    ep = ep > 1 ? ep : 1;
    for (size_t i = 0; i < run->npoints && n < cap; i++) {
        const pdbx_point *p = &run->points[i];
        if (p->tp == tp && p->pp == pp && p->dp == dp && pdbx_point_ep(p) == ep)
            out[n++] = p;
    }
    qsort(out, n, sizeof *out, by_config_mbs);
    return n;
}

size_t pdbx_run_configs(const pdbx_run *run, int (*out)[PDBX_CFG_DIMS], size_t cap)
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
        if (f && f->tp == p->tp && f->pp == p->pp && f->dp == p->dp && pdbx_point_ep(f) == pdbx_point_ep(p)) {
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
        out[i][3] = pdbx_point_ep(all[i]);
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

/* ---- the pass selector ------------------------------------------------------------------ */
const char *pdbx_pass_sel_name(pdbx_pass_sel sel)
{
    static const char *const names[PDBX_PASS_SEL_COUNT] = { "fwd", "bwd", "both" };
    return (int)sel >= 0 && sel < PDBX_PASS_SEL_COUNT ? names[sel] : "?";
}

int pdbx_pass_sel_from_name(const char *name)
{
    for (int s = 0; name && s < PDBX_PASS_SEL_COUNT; s++)
        if (strcmp(name, pdbx_pass_sel_name((pdbx_pass_sel)s)) == 0)
            return s;
    return -1;
}

static void cell_unmeasured(pdbx_cell *out)
{
    memset(out, 0, sizeof *out);
    out->stats.min = out->stats.max = out->stats.mean = out->stats.median = NAN;
    out->stats.std = out->stats.ci95 = NAN;
}

/* sqrt(a^2 + b^2): the spread of a sum of two independent quantities; NaN when either is. */
static double quad_sum(double a, double b)
{
    return isfinite(a) && isfinite(b) ? sqrt(a * a + b * b) : NAN;
}

int pdbx_point_cell_pass(const pdbx_point *p, pdbx_op op, pdbx_pass_sel sel, pdbx_cell *out)
{
    cell_unmeasured(out);
    if (!p || (int)op < 0 || op >= PDBX_OP_COUNT)
        return 0;
    const pdbx_cell *f = &p->op[op], *b = &p->bwd[op];
    if (sel == PDBX_PASS_SEL_FWD || sel == PDBX_PASS_SEL_BWD) {
        const pdbx_cell *c = sel == PDBX_PASS_SEL_FWD ? f : b;
        if (!c->valid)
            return 0;
        *out = *c;
        return 1;
    }
    if (sel != PDBX_PASS_SEL_BOTH || !f->valid || !b->valid)
        return 0;
    pdbx_stats *s = &out->stats;
    s->count = f->stats.count < b->stats.count ? f->stats.count : b->stats.count;
    s->min = f->stats.min + b->stats.min;
    s->max = f->stats.max + b->stats.max;
    s->mean = f->stats.mean + b->stats.mean;
    s->median = f->stats.median + b->stats.median;
    s->std = quad_sum(f->stats.std, b->stats.std);
    s->ci95 = quad_sum(f->stats.ci95, b->stats.ci95);
    out->valid = 1;
    out->flops = f->flops + b->flops;
    out->bytes = f->bytes + b->bytes;
    const pdbx_cell *r = f->reused ? f : b->reused ? b : NULL;
    if (r) {
        out->reused = 1;
        out->source_point = r->source_point;
    }
    const pdbx_cell *sh = f->shared ? f : b->shared ? b : NULL;
    if (sh) {
        out->shared = 1;
        out->shared_op = sh->shared_op;
    }
    const pdbx_cell *fu = f->fused ? f : b->fused ? b : NULL;
    if (fu) {   /* fwd and bwd of a fused op share their group and FLOP share */
        out->fused = 1;
        out->fused_op = fu->fused_op;
        out->fused_share = fu->fused_share;
    }
    return 1;
}

static int spec_lists_bwd(const cJSON *spec)
{
    const cJSON *passes = spec ? cJSON_GetObjectItemCaseSensitive(spec, "passes") : NULL;
    if (cJSON_IsString(passes) && passes->valuestring)
        return strstr(passes->valuestring, "bwd") != NULL;
    const cJSON *list = cJSON_IsArray(passes) ? passes : NULL, *it;
    cJSON_ArrayForEach(it, list)
        if (cJSON_IsString(it) && it->valuestring && strcmp(it->valuestring, "bwd") == 0)
            return 1;
    return 0;
}

int pdbx_run_has_bwd(const pdbx_run *run)
{
    if (spec_lists_bwd(run->spec))
        return 1;
    for (size_t i = 0; i < run->npoints; i++)
        for (int op = 0; op < PDBX_OP_COUNT; op++)
            if (run->points[i].bwd[op].valid)
                return 1;
    return 0;
}

static int arch_is(const cJSON *arch, const char *key, const char *value)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(arch, key);
    return cJSON_IsString(v) && strcmp(v->valuestring, value) == 0;
}

static double arch_num(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* MLA replaces attn_k and attn_v by the latent's ops (and attn_q by q_a, q_norm, q_b with a q
 * low rank); a MoE model's layers have moe_* (shared experts only when it has them) and keep
 * mlp_* only for its first dense layers (the planner's pdbx_model_ops, from the stored arch). */
static pdbx_opmask absent_mla_moe_ops(const cJSON *arch)
{
    pdbx_opmask absent = 0;
    const pdbx_opmask q_low = PDBX_OP_BIT(PDBX_OP_ATTN_Q_A) | PDBX_OP_BIT(PDBX_OP_ATTN_Q_NORM) |
                              PDBX_OP_BIT(PDBX_OP_ATTN_Q_B);
    if (arch_is(arch, "attention", "mla")) {
        absent |= PDBX_OP_BIT(PDBX_OP_ATTN_K) | PDBX_OP_BIT(PDBX_OP_ATTN_V);
        const cJSON *mla = cJSON_GetObjectItemCaseSensitive(arch, "mla");
        absent |= arch_num(mla, "q_lora_rank") > 0 ? PDBX_OP_BIT(PDBX_OP_ATTN_Q) : q_low;
    } else {
        absent |= PDBX_OPS_MLA;
    }
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(arch, "moe");
    if (!cJSON_IsObject(m) || arch_num(m, "experts") <= 0)
        return absent | PDBX_OPS_MOE;
    if (arch_num(m, "shared_experts") <= 0 && arch_num(m, "shared_expert_intermediate") <= 0)
        absent |= PDBX_OPS_MOE_SHARED;
    if (arch_num(m, "first_dense_layers") <= 0)
        absent |= PDBX_OP_BIT(PDBX_OP_MLP_GATE) | PDBX_OP_BIT(PDBX_OP_MLP_UP) | PDBX_OP_BIT(PDBX_OP_MLP_ACT_FN) |
                  PDBX_OP_BIT(PDBX_OP_MLP_DOWN);
    return absent;
}

pdbx_opmask pdbx_run_absent_ops(const pdbx_run *run)
{
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(run->spec, "model");
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(model, "arch");
    pdbx_opmask absent = 0;
    if (arch_is(arch, "mlp", "plain"))
        absent |= PDBX_OP_BIT(PDBX_OP_MLP_GATE);
    if (arch_is(arch, "position", "learned"))
        absent |= PDBX_OP_BIT(PDBX_OP_ATTN_ROPE);
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(arch, "qk_norm")))
        absent |= PDBX_OP_BIT(PDBX_OP_ATTN_QK_NORM);
    return absent | absent_mla_moe_ops(arch);
}

int pdbx_run_fasop_shaped(const pdbx_run *run, const char *what, char *err, size_t errlen)
{
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(run->spec, "model");
    const cJSON *moe = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(model, "arch"), "moe");
    if (!cJSON_IsObject(moe) || arch_num(moe, "experts") <= 0)
        return 0;
    return pdbx_fail(err, errlen, "run %s's model is a mixture of experts and FASOP's profile is Llama-shaped "
                     "(embed, attn_q .. mlp_down, lm_head: no router or expert columns), so %s makes none (allowed "
                     "for this run: --csv, Vidur's mlp.csv with the moe_* ops as pdbx columns; pdbx show --format "
                     "json or csv)", run->id[0] ? run->id : "?", what);
}

int pdbx_pass_sel_check(const pdbx_run *run, pdbx_pass_sel sel, const char *what, char *err,
                        size_t errlen)
{
    if ((int)sel < 0 || sel >= PDBX_PASS_SEL_COUNT)
        return pdbx_fail(err, errlen, "%s: %d is not a pass (allowed: fwd, bwd, both)", what, (int)sel);
    if (sel == PDBX_PASS_SEL_FWD || pdbx_run_has_bwd(run))
        return 0;
    return pdbx_fail(err, errlen, "%s: '%s' needs backward cells, run %s measured forward only "
                     "(allowed: fwd; measure with passes fwd,bwd)", what, pdbx_pass_sel_name(sel),
                     run->id[0] ? run->id : "?");
}

double pdbx_point_bwd_ratio(const pdbx_point *p, pdbx_op op, pdbx_stat_kind stat)
{
    pdbx_cell f, b;
    if (!pdbx_point_cell_pass(p, op, PDBX_PASS_SEL_FWD, &f) || !pdbx_point_cell_pass(p, op, PDBX_PASS_SEL_BWD, &b))
        return NAN;
    double fv = pdbx_stats_get(&f.stats, stat), bv = pdbx_stats_get(&b.stats, stat);
    return isfinite(fv) && isfinite(bv) && fv > 0 ? bv / fv : NAN;
}

/* ---- noise ------------------------------------------------------------------------------- */
void pdbx_run_noise_of(const pdbx_run *run, pdbx_run_noise_summary *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < run->npoints; i++) {
        const pdbx_point_noise *n = &run->points[i].noise;
        if (!n->valid)
            continue;
        out->points++;
        if (!n->busy)
            continue;
        out->busy++;
        if (isfinite(n->other_busy) && n->other_busy > out->other_busy_max)
            out->other_busy_max = n->other_busy;
        if (isfinite(n->steal_pct) && n->steal_pct > out->steal_max)
            out->steal_max = n->steal_pct;
    }
}

int pdbx_run_load_text(const pdbx_run *run, char *buf, size_t len)
{
    pdbx_run_noise_summary l;
    pdbx_run_noise_of(run, &l);
    if (len)
        buf[0] = '\0';
    if (l.busy == 0)
        return 0;
    snprintf(buf, len, "measured under load: %d of %d point%s; other processes used up to %.1f "
             "cores, steal up to %.0f%%", l.busy, l.points, l.points == 1 ? "" : "s",
             l.other_busy_max, l.steal_max);
    return 1;
}

void pdbx_throttle_text(double bits, char *buf, size_t len)
{
    /* NVML's nvmlClocksEventReason* bits, in bit order */
    static const char *const names[] = { "gpu_idle", "app_clocks", "sw_power_cap", "hw_slowdown",
        "sync_boost", "sw_thermal", "hw_thermal", "hw_power_brake", "display_clocks" };
    const int nnames = (int)(sizeof names / sizeof names[0]);
    size_t used = 0;
    if (len)
        buf[0] = '\0';
    if (!isfinite(bits) || bits < 0 || bits >= 9007199254740992.0) {
        snprintf(buf, len, "N/A");
        return;
    }
    uint64_t v = (uint64_t)bits;
    if (v == 0) {
        snprintf(buf, len, "none");
        return;
    }
    for (int b = 0; b < 64 && used < len; b++) {
        if (!(v & (UINT64_C(1) << b)))
            continue;
        int n = b < nnames ? snprintf(buf + used, len - used, "%s%s", used ? ", " : "", names[b])
                           : snprintf(buf + used, len - used, "%s0x%llx", used ? ", " : "",
                                      (unsigned long long)(UINT64_C(1) << b));
        used += n > 0 ? (size_t)n : 0;
    }
}

/* A number of the run's spec, or def when absent (runs recorded before the field). */
static double spec_num(const pdbx_run *run, const char *field, double def)
{
    const cJSON *v = run->spec ? cJSON_GetObjectItemCaseSensitive(run->spec, field) : NULL;
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : def;
}

void pdbx_run_repetition_text(const pdbx_run *run, char *buf, size_t len)
{
    const cJSON *rep = run->spec ? cJSON_GetObjectItemCaseSensitive(run->spec, "repetition") : NULL;
    if (!cJSON_IsString(rep) || !rep->valuestring || strcmp(rep->valuestring, "adaptive") != 0) {
        snprintf(buf, len, "fixed: warmup %d, steps %d", run->warmup, run->steps);
        return;
    }
    snprintf(buf, len, "adaptive to a %.3g%% CI (%.0f..%.0f samples, at most %.3g s per cell; steps %d "
             "after at most %d warm-up)", 100 * spec_num(run, "target_rel_ci", NAN),
             spec_num(run, "min_reps", NAN), spec_num(run, "max_reps", NAN),
             spec_num(run, "max_seconds_per_op", NAN), run->steps, run->warmup > 1 ? run->warmup : 1);
}
