/* cli_diff.c: `pdbx diff RUN_A RUN_B`: every cell the two runs have in common (same config, MBS
 * and op, ok in both) with A's and B's time in ms, the ratio B/A and whether the difference is
 * real: beyond both cells' noise (pdbx_stats_judge: Welch at 95% from the stored std and count),
 * else "same" within noise, "unknown" without std/count. Then per op the geometric mean of the
 * ratios over all common cells and how many cells were better, worse or the same. --pass picks
 * the cells (fwd, bwd, both: store/profiledb.h); a run measured under load is said so beside
 * the verdicts, which its noise makes less trustworthy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tui/cli/cli.h"
#include "store/util/fmt.h"

static const pdbx_cli_opt diff_opts[] = {
    PDBX_CLI_OPT_STORE,
    PDBX_CLI_OPT_STAT,
    { "format", "FMT", "table (default), json or csv (csv: one row per common cell)" },
    PDBX_CLI_OPT_ATTRIBUTION,
    PDBX_CLI_OPT_PASS,
    { NULL, NULL, NULL },
};

static const pdbx_cli_spec diff_spec = {
    .name = "diff", .args = "RUN_A RUN_B", .opts = diff_opts, .min_args = 2, .max_args = 2,
    .about = "Compares two runs cell by cell: for every (config, MBS, op) measured ok in both, A\n"
             "and B in ms, the ratio B/A of the statistic (below 1: B is faster) and a verdict:\n"
             "better or worse only when |B - A| exceeds both cells' noise (Welch, 95%: 1.96 x\n"
             "sqrt(stdA^2/(nA-1) + stdB^2/(nB-1))), else 'same' (within noise), 'unknown'\n"
             "without std/count. Then the geometric mean of the ratios per op over all common\n"
             "cells. A config is TP, PP, DP and EP: an EP 2 config compares with EP 2 only, under\n"
             "its own heading (TP 1  PP 1  DP 2  EP 2). 'layer' and 'total' compare the measured\n"
             "layer and step cells (N/A in a run recorded without them; and with --pass bwd or\n"
             "both, which they are forward). A run measured under load (other processes busy,\n"
             "steal) is named above the verdicts.\n"
             PDBX_CLI_ABOUT_RUN,
};


typedef struct {
    const char *store;
    int stat, format, attribution, pass;
} diff_args;

static int diff_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err, size_t errlen)
{
    diff_args *a = ctx;
    if (strcmp(opt->name, "store") == 0) {
        a->store = value;
        return 0;
    }
    if (strcmp(opt->name, "stat") == 0)
        return pdbx_cli_stat(opt->name, value, &a->stat, err, errlen);
    if (strcmp(opt->name, "format") == 0)
        return pdbx_cli_choice(opt->name, value, pdbx_cli_formats, &a->format, err, errlen);
    if (strcmp(opt->name, "attribution") == 0)
        return pdbx_cli_choice(opt->name, value, pdbx_cli_attributions, &a->attribution, err, errlen);
    if (strcmp(opt->name, "pass") == 0)
        return pdbx_cli_pass(opt->name, value, &a->pass, err, errlen);
    return 0;
}

#define MAX_DCOLS (PDBX_RT_MAX_COLS + 2)   /* ops..., layer, total */

/* One common cell: A's and B's values of column `col` at (config, MBS). */
typedef struct {
    int cfg[PDBX_CFG_DIMS], mbs;   /* tp, pp, dp, ep: EP 2 of a (tp, pp, dp) is its own config */
    size_t col;
    double a, b;
    double threshold;          /* |b - a| beyond this is real; NaN: no noise estimate */
    pdbx_noise_verdict verdict;
} diff_cell;

typedef struct {
    char names[MAX_DCOLS][32];
    size_t ncols;              /* including layer and total */
    diff_cell *cells;
    size_t ncells, cap;
    double logsum[MAX_DCOLS];
    size_t count[MAX_DCOLS];
    size_t verdicts[MAX_DCOLS][4];   /* per column, cells per pdbx_noise_verdict */
} diff_result;

/* The variance of a column's statistic: the sum of its measured ops' (independent) variances of
 * the mean; NaN when any of them has no noise estimate. */
static double col_var(const pdbx_rt_point *p, const pdbx_rt_col *col)
{
    double var = 0.0;
    int valid = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        if (!(col->ops & PDBX_OP_BIT(op)) || !p->op[op].valid)
            continue;
        var += pdbx_stats_mean_var(&p->op[op].stats);
        valid = 1;
    }
    return valid ? var : NAN;
}

static int add_cell(diff_result *d, const int cfg[PDBX_CFG_DIMS], int mbs, size_t col, double a, double b,
                    double var_a, double var_b)
{
    if (!(a > 0.0) || !(b > 0.0) || !isfinite(a) || !isfinite(b))
        return 0;              /* a ratio needs two positive times */
    if (d->ncells == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 256;
        diff_cell *c = realloc(d->cells, cap * sizeof *c);
        if (!c)
            return -1;
        d->cells = c;
        d->cap = cap;
    }
    diff_cell *c = &d->cells[d->ncells++];
    memcpy(c->cfg, cfg, sizeof c->cfg);
    c->mbs = mbs;
    c->col = col;
    c->a = a;
    c->b = b;
    c->verdict = pdbx_noise_judge(a, var_a, b, var_b, &c->threshold);
    d->verdicts[col][c->verdict]++;
    d->logsum[col] += log(b / a);
    d->count[col]++;
    return 0;
}

static const pdbx_rt_point *find_point(const pdbx_rt_config *c, int mbs)
{
    for (size_t i = 0; i < c->npoints; i++)
        if (c->points[i].mbs == mbs)
            return &c->points[i];
    return NULL;
}

/* The common ok points of config a (run A) and b (the same config, EP included, in run B). 0 or
 * -1 (OOM). */
static int compare_config(const pdbx_rt_config *a, const pdbx_rt_config *b, const pdbx_rt_col *cols,
                          size_t nc, pdbx_stat_kind stat, diff_result *d)
{
    const int cfg[PDBX_CFG_DIMS] = { a->tp, a->pp, a->dp, a->ep };
    for (size_t k = 0; k < a->npoints; k++) {
        const pdbx_rt_point *p = &a->points[k], *q = find_point(b, p->mbs);
        if (!q || p->status != PDBX_POINT_OK || q->status != PDBX_POINT_OK)
            continue;
        pdbx_cli_row x, y;
        pdbx_cli_row_fill(p, cols, nc, stat, &x);
        pdbx_cli_row_fill(q, cols, nc, stat, &y);
        /* add_cell skips the cells that are N/A (NaN) on either side */
        for (size_t c = 0; c < nc; c++)
            if (add_cell(d, cfg, p->mbs, c, x.v[c], y.v[c], col_var(p, &cols[c]), col_var(q, &cols[c])))
                return -1;
        if (add_cell(d, cfg, p->mbs, nc, x.layer, y.layer, pdbx_stats_mean_var(&p->layer.stats),
                     pdbx_stats_mean_var(&q->layer.stats))
            || add_cell(d, cfg, p->mbs, nc + 1, x.total, y.total, pdbx_stats_mean_var(&p->total.stats),
                        pdbx_stats_mean_var(&q->total.stats)))
            return -1;
    }
    return 0;
}

static int compute(const pdbx_run *ra, const pdbx_run *rb, const diff_args *args, diff_result *d)
{
    pdbx_rt_col cols[PDBX_RT_MAX_COLS];
    size_t nc = pdbx_rt_columns(pdbx_cli_attr(args->attribution), cols);
    for (size_t c = 0; c < nc; c++)
        memcpy(d->names[c], cols[c].name, sizeof d->names[c]);   /* both char[32] */
    snprintf(d->names[nc], sizeof d->names[nc], "layer");
    snprintf(d->names[nc + 1], sizeof d->names[nc + 1], "total");
    d->ncols = nc + 2;

    pdbx_runtable ta;
    const pdbx_pass_sel pass = (pdbx_pass_sel)args->pass;
    if (pdbx_runtable_build_pass(ra, 0, pass, &ta) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < ta.nconfigs && rc == 0; i++) {
        const pdbx_rt_config *a = &ta.configs[i];
        pdbx_rt_config b;
        if (pdbx_rt_config_build_pass(rb, a->tp, a->pp, a->dp, a->ep, pass, &b) != 0) {
            rc = -1;
            break;
        }
        rc = compare_config(a, &b, cols, nc, (pdbx_stat_kind)args->stat, d);
        pdbx_rt_config_free(&b);
    }
    pdbx_runtable_free(&ta);
    return rc;
}

static double geomean(const diff_result *d, size_t col)
{
    return d->count[col] ? exp(d->logsum[col] / (double)d->count[col]) : NAN;
}

static void describe(const char *label, const pdbx_run *r, FILE *out)
{
    /* model, gpu, device: strings from the run file, made safe by pdbx_cli_line */
    pdbx_cli_line(out, "%s %s  %s, %s/%s, %s, seq_len %d, %s", label, r->id,
                  r->model.name[0] ? r->model.name : PDBX_NA, r->backend[0] ? r->backend : PDBX_NA,
                  r->gpu[0] ? r->gpu : PDBX_NA, r->device_name[0] ? r->device_name : PDBX_NA,
                  r->seq_len, pdbx_run_status_name(r->status));
}

/* "1.50 ^": the ratio with its verdict mark (v better, ^ worse, ~ same within noise, ? unknown) */
static const char *ratio_cell(const diff_cell *c, char *buf, size_t len)
{
    char r[32];
    snprintf(buf, len, "%s %c", pdbx_fmt_ratio(c->b / c->a, 1, r, sizeof r), pdbx_noise_mark(c->verdict));
    return buf;
}

static int print_table(const pdbx_run *ra, const pdbx_run *rb, const diff_args *args,
                       const diff_result *d, FILE *out)
{
    describe("A", ra, out);
    describe("B", rb, out);
    fprintf(out, "A and B: the %s time per cell in ms; B/A below 1: B is faster. Attribution %s, "
            "pass %s.\n"
            "v better, ^ worse: |B - A| beyond both cells' noise (Welch, 95%%); ~ same within noise;\n"
            "? no std/count to tell\n",
            pdbx_stat_name((pdbx_stat_kind)args->stat), pdbx_cli_attributions[args->attribution],
            pdbx_pass_sel_name((pdbx_pass_sel)args->pass));
    char load[256];
    if (pdbx_run_load_text(ra, load, sizeof load))
        fprintf(out, "A was %s: its verdicts carry that noise\n", load);
    if (pdbx_run_load_text(rb, load, sizeof load))
        fprintf(out, "B was %s: its verdicts carry that noise\n", load);
    pdbx_table *t = NULL;
    size_t i = 0;
    while (i < d->ncells) {
        const int *cfg = d->cells[i].cfg;
        t = pdbx_table_new(6);
        if (!t || pdbx_table_header(t, 0, "mbs", PDBX_ALIGN_RIGHT) || pdbx_table_header(t, 1, "op", PDBX_ALIGN_LEFT)
            || pdbx_table_header(t, 2, "A ms", PDBX_ALIGN_RIGHT) || pdbx_table_header(t, 3, "B ms", PDBX_ALIGN_RIGHT)
            || pdbx_table_header(t, 4, "B/A", PDBX_ALIGN_RIGHT) || pdbx_table_header(t, 5, "verdict", PDBX_ALIGN_LEFT))
            goto fail;
        /* Cells come grouped by config, then MBS, in plan order: one row each. */
        for (; i < d->ncells && memcmp(d->cells[i].cfg, cfg, sizeof d->cells[i].cfg) == 0; i++) {
            const diff_cell *c = &d->cells[i];
            char ra_s[32], rb_s[32], rr[48];
            if (pdbx_table_add_row(t) || pdbx_table_set(t, 0, "%d", c->mbs)
                || pdbx_table_set(t, 1, "%s", d->names[c->col])
                || pdbx_table_set(t, 2, "%s", pdbx_fmt_ms(c->a, 1, ra_s, sizeof ra_s))
                || pdbx_table_set(t, 3, "%s", pdbx_fmt_ms(c->b, 1, rb_s, sizeof rb_s))
                || pdbx_table_set(t, 4, "%s", ratio_cell(c, rr, sizeof rr))
                || pdbx_table_set(t, 5, "%s", c->verdict == PDBX_NOISE_SAME ? "same within noise"
                                               : pdbx_noise_name(c->verdict)))
                goto fail;
        }
        char head[64];   /* the heading pdbx show gives the config */
        fprintf(out, "\n%s\n", pdbx_fmt_config(PDBX_CFG_LABEL_HEADER, cfg[0], cfg[1], cfg[2], cfg[3], head,
                                               sizeof head));
        pdbx_table_print(t, out, "  ");
        pdbx_table_free(t);
        t = NULL;
    }
    t = pdbx_table_new(7);
    if (!t || pdbx_table_header(t, 0, "op", PDBX_ALIGN_LEFT) || pdbx_table_header(t, 1, "cells", PDBX_ALIGN_RIGHT)
        || pdbx_table_header(t, 2, "geomean", PDBX_ALIGN_RIGHT) || pdbx_table_header(t, 3, "better", PDBX_ALIGN_RIGHT)
        || pdbx_table_header(t, 4, "worse", PDBX_ALIGN_RIGHT) || pdbx_table_header(t, 5, "same", PDBX_ALIGN_RIGHT)
        || pdbx_table_header(t, 6, "unknown", PDBX_ALIGN_RIGHT))
        goto fail;
    for (size_t c = 0; c < d->ncols; c++) {
        char buf[32];
        if (!d->count[c])
            continue;
        if (pdbx_table_add_row(t) || pdbx_table_set(t, 0, "%s", d->names[c])
            || pdbx_table_set(t, 1, "%zu", d->count[c])
            || pdbx_table_set(t, 2, "%s", pdbx_fmt_ratio(geomean(d, c), 1, buf, sizeof buf))
            || pdbx_table_set(t, 3, "%zu", d->verdicts[c][PDBX_NOISE_BETTER])
            || pdbx_table_set(t, 4, "%zu", d->verdicts[c][PDBX_NOISE_WORSE])
            || pdbx_table_set(t, 5, "%zu", d->verdicts[c][PDBX_NOISE_SAME])
            || pdbx_table_set(t, 6, "%zu", d->verdicts[c][PDBX_NOISE_UNKNOWN]))
            goto fail;
    }
    fprintf(out, "\ngeometric mean of B/A per op over the common cells, and the cells' verdicts:\n");
    pdbx_table_print(t, out, "  ");
    pdbx_table_free(t);
    return 0;
fail:
    pdbx_table_free(t);
    return -1;
}

/* key: null, or what loaded the machine while the run was measured ("measured under load: ..."). */
static int load_json(cJSON *root, const char *key, const pdbx_run *r)
{
    char load[256];
    int busy = pdbx_run_load_text(r, load, sizeof load);
    return !(busy ? cJSON_AddStringToObject(root, key, load) : cJSON_AddNullToObject(root, key));
}

static int print_json(const pdbx_run *ra, const pdbx_run *rb, const diff_args *args,
                      const diff_result *d, FILE *out)
{
    /* root owns every node from its creation on: one delete on any failure */
    cJSON *root = cJSON_CreateObject(), *cells = NULL, *geo = NULL;
    if (!root || !cJSON_AddStringToObject(root, "a", ra->id) || !cJSON_AddStringToObject(root, "b", rb->id)
        || !cJSON_AddStringToObject(root, "stat", pdbx_stat_name((pdbx_stat_kind)args->stat))
        || !cJSON_AddStringToObject(root, "attribution", pdbx_cli_attributions[args->attribution])
        || !cJSON_AddStringToObject(root, "pass", pdbx_pass_sel_name((pdbx_pass_sel)args->pass))
        || load_json(root, "a_load", ra) || load_json(root, "b_load", rb)
        || !(cells = cJSON_AddArrayToObject(root, "cells")) || !(geo = cJSON_AddObjectToObject(root, "geomean")))
        goto fail;
    for (size_t i = 0; i < d->ncells; i++) {
        const diff_cell *c = &d->cells[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(cells, o)) {
            cJSON_Delete(o);
            goto fail;
        }
        if (!cJSON_AddNumberToObject(o, "tp", c->cfg[0]) || !cJSON_AddNumberToObject(o, "pp", c->cfg[1])
            || !cJSON_AddNumberToObject(o, "dp", c->cfg[2])
            || (c->cfg[3] > 1 && !cJSON_AddNumberToObject(o, "ep", c->cfg[3]))   /* as pdbx show: > 1 only */
            || !cJSON_AddNumberToObject(o, "mbs", c->mbs)
            || !cJSON_AddStringToObject(o, "op", d->names[c->col]) || !cJSON_AddNumberToObject(o, "a", c->a)
            || !cJSON_AddNumberToObject(o, "b", c->b) || !cJSON_AddNumberToObject(o, "ratio", c->b / c->a)
            || !(isfinite(c->threshold) ? cJSON_AddNumberToObject(o, "noise_ms", c->threshold)
                                        : cJSON_AddNullToObject(o, "noise_ms"))
            || !cJSON_AddStringToObject(o, "verdict", pdbx_noise_name(c->verdict)))
            goto fail;
    }
    for (size_t c = 0; c < d->ncols; c++) {
        if (!d->count[c])
            continue;
        cJSON *o = cJSON_AddObjectToObject(geo, d->names[c]);
        if (!o || !cJSON_AddNumberToObject(o, "geomean", geomean(d, c))
            || !cJSON_AddNumberToObject(o, "cells", (double)d->count[c]))
            goto fail;
        for (int v = 0; v < 4; v++)
            if (!cJSON_AddNumberToObject(o, pdbx_noise_name((pdbx_noise_verdict)v), (double)d->verdicts[c][v]))
                goto fail;
    }
    return pdbx_cli_emit_json(out, root);
fail:
    cJSON_Delete(root);
    return -1;
}

static void print_csv(const diff_result *d, FILE *out)
{
    /* an ep column only when a cell has EP > 1 (as pdbx advise's): a dense diff reads as before */
    int has_ep = 0;
    for (size_t i = 0; i < d->ncells; i++)
        has_ep |= d->cells[i].cfg[3] > 1;
    fprintf(out, "tp,pp,dp,%smbs,op,a,b,ratio,noise_ms,verdict\n", has_ep ? "ep," : "");
    for (size_t i = 0; i < d->ncells; i++) {
        const diff_cell *c = &d->cells[i];
        fprintf(out, "%d,%d,%d,", c->cfg[0], c->cfg[1], c->cfg[2]);
        if (has_ep)
            fprintf(out, "%d,", c->cfg[3]);
        fprintf(out, "%d,", c->mbs);
        pdbx_csv_field(out, d->names[c->col]);         /* an op name can come from a run file */
        fprintf(out, ",%.17g,%.17g,%.17g,", c->a, c->b, c->b / c->a);
        if (isfinite(c->threshold))
            fprintf(out, "%.17g", c->threshold);      /* empty: no noise estimate */
        fprintf(out, ",%s\n", pdbx_noise_name(c->verdict));
    }
}

int pdbx_cmd_diff(int argc, char **argv)
{
    diff_args a = { .stat = PDBX_STAT_MEAN, .format = PDBX_CLI_FMT_TABLE, .attribution = PDBX_CLI_ATTR_PURE };
    char **pos;
    int npos;
    int rc = pdbx_cli_parse(&diff_spec, argc, argv, diff_opt, &a, &pos, &npos);
    if (rc != 0)
        return pdbx_cli_parse_exit(rc);
    pdbx_store *st = NULL;
    pdbx_run ra, rb;
    diff_result d;
    memset(&d, 0, sizeof d);
    pdbx_run_init(&ra);
    pdbx_run_init(&rb);
    if ((!strchr(pos[0], '/') || !strchr(pos[1], '/'))
        && (rc = pdbx_cli_open_store(diff_spec.name, a.store, 0, &st)) != 0)
        return rc;
    if ((rc = pdbx_cli_load_run(diff_spec.name, st, pos[0], &ra)) != 0
        || (rc = pdbx_cli_load_run(diff_spec.name, st, pos[1], &rb)) != 0)
        goto done;
    char perr[256];
    if (pdbx_pass_sel_check(&ra, (pdbx_pass_sel)a.pass, "--pass", perr, sizeof perr) != 0
        || pdbx_pass_sel_check(&rb, (pdbx_pass_sel)a.pass, "--pass", perr, sizeof perr) != 0) {
        rc = pdbx_cli_fail(PDBX_EXIT_USAGE, diff_spec.name, "%s", perr);
        goto done;
    }
    if (compute(&ra, &rb, &a, &d) != 0) {
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, diff_spec.name, "out of memory");
        goto done;
    }
    if (d.ncells == 0) {
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, diff_spec.name,
                           "runs %s and %s have no cell in common (same TP/PP/DP/EP, MBS and op, ok in both)",
                           ra.id, rb.id);
        goto done;
    }
    int err = 0;
    if (a.format == PDBX_CLI_FMT_JSON)
        err = print_json(&ra, &rb, &a, &d, stdout);
    else if (a.format == PDBX_CLI_FMT_CSV)
        print_csv(&d, stdout);
    else
        err = print_table(&ra, &rb, &a, &d, stdout);
    rc = err ? pdbx_cli_fail(PDBX_EXIT_FAIL, diff_spec.name, "out of memory") : PDBX_EXIT_OK;
done:
    free(d.cells);
    pdbx_run_free(&ra);
    pdbx_run_free(&rb);
    if (st)
        pdbx_store_close(st);
    return rc;
}
