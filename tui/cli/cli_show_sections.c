/* cli_show_sections.c: the run-wide sections after `pdbx show`'s config tables: the
 * inference phase per TP degree, the collectives sweep and the run's validations
 * (cli_show.h). */
#include "tui/cli/cli_show.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/events.h"
#include "store/util/fmt.h"

/* One summary line per TP degree of the inference phase (store/profiledb.h pdbx_infer_*): its
 * tokens rows (range, and the per-token ops' sum at the smallest and largest), its prefill and
 * decode rows (count and time range). The rows themselves are in `pdbx export --csv`. */
typedef struct {
    int tp, ntok, tmin, tmax, npre, ndec;
    double ops_at_min, ops_at_max, pre_lo, pre_hi, dec_lo, dec_hi;
} infer_summary;

static double tokens_row_sum(const pdbx_infer_tokens *r, pdbx_stat_kind stat)
{
    double sum = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        if (r->op[op].count > 0)
            sum += pdbx_stats_get(&r->op[op], stat);
    return sum;
}

static infer_summary *infer_tp(infer_summary *s, int *n, int tp)
{
    for (int i = 0; i < *n; i++)
        if (s[i].tp == tp)
            return &s[i];
    if (*n >= PDBX_MAX_CONFIGS)
        return NULL;
    infer_summary *x = &s[(*n)++];
    memset(x, 0, sizeof *x);
    x->tp = tp;
    x->pre_lo = x->dec_lo = INFINITY;
    x->pre_hi = x->dec_hi = -INFINITY;
    return x;
}

int show_print_inference(const pdbx_run *run, const show_args *a, FILE *out)
{
    if (run->ninfer_tokens == 0 && run->ninfer_attn == 0)
        return 0;
    const pdbx_stat_kind stat = (pdbx_stat_kind)a->stat;
    infer_summary s[PDBX_MAX_CONFIGS];
    int n = 0;
    for (size_t i = 0; i < run->ninfer_tokens; i++) {
        const pdbx_infer_tokens *r = &run->infer_tokens[i];
        infer_summary *x = infer_tp(s, &n, r->tp);
        if (!x)
            continue;
        const double sum = tokens_row_sum(r, stat);
        if (x->ntok == 0 || r->tokens < x->tmin) {
            x->tmin = r->tokens;
            x->ops_at_min = sum;
        }
        if (x->ntok == 0 || r->tokens > x->tmax) {
            x->tmax = r->tokens;
            x->ops_at_max = sum;
        }
        x->ntok++;
    }
    for (size_t i = 0; i < run->ninfer_attn; i++) {
        const pdbx_infer_attn *r = &run->infer_attn[i];
        infer_summary *x = infer_tp(s, &n, r->tp);
        if (!x)
            continue;
        const double v = pdbx_stats_get(&r->time, stat);
        const int pre = r->chunk > 0;
        *(pre ? &x->npre : &x->ndec) += 1;
        double *lo = pre ? &x->pre_lo : &x->dec_lo, *hi = pre ? &x->pre_hi : &x->dec_hi;
        *lo = v < *lo ? v : *lo;
        *hi = v > *hi ? v : *hi;
    }
    pdbx_table *t = pdbx_table_new(5);
    if (!t)
        return -1;
    static const char *const ct[] = { "tp", "tokens rows", "per-token ops (ms)", "prefill rows (ms)",
                                      "decode rows (ms)" };
    for (size_t c = 0; c < 5; c++)
        if (pdbx_table_header(t, c, ct[c], c == 0 ? PDBX_ALIGN_RIGHT : PDBX_ALIGN_LEFT))
            goto fail;
    for (int i = 0; i < n; i++) {
        const infer_summary *x = &s[i];
        char a1[32], a2[32], b1[32], b2[32], c1[32], c2[32];
        if (pdbx_table_add_row(t) || pdbx_table_set(t, 0, "%d", x->tp))
            goto fail;
        if ((x->ntok ? pdbx_table_set(t, 1, "%d (%d..%d tokens)", x->ntok, x->tmin, x->tmax)
                     : pdbx_table_set(t, 1, "-"))
            || (x->ntok ? pdbx_table_set(t, 2, "%s at %d .. %s at %d",
                                         pdbx_fmt_ms(x->ops_at_min, 1, a1, sizeof a1), x->tmin,
                                         pdbx_fmt_ms(x->ops_at_max, 1, a2, sizeof a2), x->tmax)
                        : pdbx_table_set(t, 2, "-"))
            || (x->npre ? pdbx_table_set(t, 3, "%d, %s .. %s", x->npre, pdbx_fmt_ms(x->pre_lo, 1, b1, sizeof b1),
                                         pdbx_fmt_ms(x->pre_hi, 1, b2, sizeof b2))
                        : pdbx_table_set(t, 3, "-"))
            || (x->ndec ? pdbx_table_set(t, 4, "%d, %s .. %s", x->ndec, pdbx_fmt_ms(x->dec_lo, 1, c1, sizeof c1),
                                         pdbx_fmt_ms(x->dec_hi, 1, c2, sizeof c2))
                        : pdbx_table_set(t, 4, "-")))
            goto fail;
    }
    fprintf(out, "\ninference phase (one TP shard, forward, %s; rows in `pdbx export --csv`):\n",
            pdbx_stat_name(stat));
    pdbx_table_print(t, out, "  ");
    pdbx_table_free(t);
    return 0;
fail:
    pdbx_table_free(t);
    return -1;
}

int show_print_collectives(const pdbx_run *run, const show_args *a, FILE *out)
{
    if (run->ncoll == 0)
        return 0;
    pdbx_table *t = pdbx_table_new(8);
    if (!t)
        return -1;
    /* nodes: the group's distinct hosts, "2 inter" when it crossed nodes (hidden for runs
     * recorded without it) */
    static const char *const ct[] = { "coll", "size", "ranks", "per_node", "time_ms", "algbw", "busbw",
                                      "nodes" };
    int any_nodes = 0;
    for (size_t c = 0; c < 8; c++)
        if (pdbx_table_header(t, c, ct[c], c == 0 ? PDBX_ALIGN_LEFT : PDBX_ALIGN_RIGHT))
            goto fail;
    for (size_t i = 0; i < run->ncoll; i++) {
        const pdbx_coll_result *r = &run->coll[i];
        char sz[32], tm[32], ab[32], bb[32];
        /* out of place (all_gather, reduce_scatter): its own row, marked */
        if (pdbx_table_add_row(t) || pdbx_table_set(t, 0, "%s%s", r->coll, r->in_place ? "" : " oop")
            || pdbx_table_set(t, 1, "%s", pdbx_fmt_size(r->bytes, sz, sizeof sz))
            || pdbx_table_set(t, 2, "%d", r->nranks) || pdbx_table_set(t, 3, "%d", r->ranks_per_node)
            || pdbx_table_set(t, 4, "%s", pdbx_fmt_ms(pdbx_stats_get(&r->time, (pdbx_stat_kind)a->stat), 1, tm, sizeof tm))
            || pdbx_table_set(t, 5, "%s", pdbx_fmt_gbs(r->algbw, 1, ab, sizeof ab))
            || pdbx_table_set(t, 6, "%s", pdbx_fmt_gbs(r->busbw, 1, bb, sizeof bb))
            || pdbx_table_set(t, 7, "%d %s", r->nodes, r->spans_nodes ? "inter" : "intra"))
            goto fail;
        any_nodes |= r->nodes > 0;
    }
    pdbx_table_hide(t, 7, !any_nodes);
    fprintf(out, "\ncollectives (nccl-tests definitions, GB/s from the mean time):\n");
    pdbx_table_print(t, out, "  ");
    pdbx_table_free(t);
    return 0;
fail:
    pdbx_table_free(t);
    return -1;
}

/* The run's validations: one line each (pdbx validate; estimate vs a measured iteration). */
void show_print_validations(const show_args *a, FILE *out)
{
    if (a->nvals == 0 && a->vals_skipped == 0)
        return;
    fprintf(out, "\nvalidations (pdbx validate: a measured training iteration vs the advise estimate)\n");
    fprintf(out, "  %-16s %-9s %5s %6s %6s %12s %12s %8s\n", "when", "config", "mbs", "gbs", "layers",
            "measured ms", "estimated ms", "error");
    for (size_t i = 0; i < a->nvals; i++) {
        const pdbx_validation *v = &a->vals[i];
        char when[32] = "N/A", cfg[32], est[32] = "N/A", errp[32] = "N/A";
        if (isfinite(v->time))
            pdbx_fmt_time(v->time, when, sizeof when);
        pdbx_fmt_config(PDBX_CFG_LABEL_DIMS, v->tp, v->pp, v->dp, v->ep, cfg, sizeof cfg);   /* as --config */
        if (isfinite(v->estimated_ms))
            snprintf(est, sizeof est, "%.2f", v->estimated_ms);
        if (isfinite(v->error_pct))
            snprintf(errp, sizeof errp, "%+.1f%%", v->error_pct);
        fprintf(out, "  %-16s %-9s %5d %6d %6d %12.2f %12s %8s\n", when, cfg, v->mbs, v->gbs,
                v->layers, v->measured_ms, est, errp);
    }
    if (a->vals_skipped)
        fprintf(out, "  (%zu unreadable line%s skipped: a write cut short)\n", a->vals_skipped,
                a->vals_skipped == 1 ? "" : "s");
}
