/* cli_diff.c: `pdbx diff RUN_A RUN_B`: the ratio B/A of every cell the two runs have in common
 * (same config, MBS and op, ok in both), per config as a table MBS x ops, then the geometric
 * mean of the ratios per op over all common cells. */
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
    { NULL, NULL, NULL },
};

static const pdbx_cli_spec diff_spec = {
    .name = "diff", .args = "RUN_A RUN_B", .opts = diff_opts, .min_args = 2, .max_args = 2,
    .about = "Compares two runs cell by cell: for every (config, MBS, op) measured ok in both, the\n"
             "ratio B/A of the statistic (below 1: B is faster), then the geometric mean of the\n"
             "ratios per op over all common cells. 'layer' and 'total' compare the measured\n"
             "layer and step cells (N/A in a run recorded without them).\n"
             PDBX_CLI_ABOUT_RUN,
};


typedef struct {
    const char *store;
    int stat, format, attribution;
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
    return 0;
}

#define MAX_DCOLS (PDBX_RT_MAX_COLS + 2)   /* ops..., layer, total */

/* One common cell: A's and B's values of column `col` at (config, MBS). */
typedef struct {
    int cfg[3], mbs;
    size_t col;
    double a, b;
} diff_cell;

typedef struct {
    char names[MAX_DCOLS][32];
    size_t ncols;              /* including layer and total */
    diff_cell *cells;
    size_t ncells, cap;
    double logsum[MAX_DCOLS];
    size_t count[MAX_DCOLS];
} diff_result;

static int add_cell(diff_result *d, const int cfg[3], int mbs, size_t col, double a, double b)
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

/* The common ok points of config a (run A) and b (the same config in run B). 0 or -1 (OOM). */
static int compare_config(const pdbx_rt_config *a, const pdbx_rt_config *b, const pdbx_rt_col *cols,
                          size_t nc, pdbx_stat_kind stat, diff_result *d)
{
    const int cfg[3] = { a->tp, a->pp, a->dp };
    for (size_t k = 0; k < a->npoints; k++) {
        const pdbx_rt_point *p = &a->points[k], *q = find_point(b, p->mbs);
        if (!q || p->status != PDBX_POINT_OK || q->status != PDBX_POINT_OK)
            continue;
        pdbx_cli_row x, y;
        pdbx_cli_row_fill(p, cols, nc, stat, &x);
        pdbx_cli_row_fill(q, cols, nc, stat, &y);
        /* add_cell skips the cells that are N/A (NaN) on either side */
        for (size_t c = 0; c < nc; c++)
            if (add_cell(d, cfg, p->mbs, c, x.v[c], y.v[c]))
                return -1;
        if (add_cell(d, cfg, p->mbs, nc, x.layer, y.layer)
            || add_cell(d, cfg, p->mbs, nc + 1, x.total, y.total))
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
    if (pdbx_runtable_build(ra, 0, &ta) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < ta.nconfigs && rc == 0; i++) {
        const pdbx_rt_config *a = &ta.configs[i];
        pdbx_rt_config b;
        if (pdbx_rt_config_build(rb, a->tp, a->pp, a->dp, &b) != 0) {
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

static int print_table(const pdbx_run *ra, const pdbx_run *rb, const diff_args *args,
                       const diff_result *d, FILE *out)
{
    describe("A", ra, out);
    describe("B", rb, out);
    fprintf(out, "ratio B/A of the %s time per cell (below 1: B is faster), attribution %s\n",
            pdbx_stat_name((pdbx_stat_kind)args->stat), pdbx_cli_attributions[args->attribution]);
    pdbx_table *t = NULL;
    size_t i = 0;
    while (i < d->ncells) {
        const int *cfg = d->cells[i].cfg;
        t = pdbx_table_new(d->ncols + 1);
        int used[MAX_DCOLS] = { 0 };
        if (!t || pdbx_table_header(t, 0, "mbs", PDBX_ALIGN_RIGHT))
            goto fail;
        for (size_t c = 0; c < d->ncols; c++)
            if (pdbx_table_header(t, 1 + c, d->names[c], PDBX_ALIGN_RIGHT))
                goto fail;
        /* Cells come grouped by config, then MBS, in plan order. */
        int mbs = -1;
        for (; i < d->ncells && memcmp(d->cells[i].cfg, cfg, sizeof d->cells[i].cfg) == 0; i++) {
            const diff_cell *c = &d->cells[i];
            char buf[32];
            if (c->mbs != mbs) {
                if (pdbx_table_add_row(t) || pdbx_table_set(t, 0, "%d", c->mbs))
                    goto fail;
                for (size_t k = 0; k < d->ncols; k++)
                    if (pdbx_table_set(t, 1 + k, "%s", PDBX_NA))
                        goto fail;
                mbs = c->mbs;
            }
            used[c->col] = 1;
            if (pdbx_table_set(t, 1 + c->col, "%s", pdbx_fmt_ratio(c->b / c->a, 1, buf, sizeof buf)))
                goto fail;
        }
        for (size_t k = 0; k < d->ncols; k++)
            pdbx_table_hide(t, 1 + k, !used[k]);
        fprintf(out, "\nTP %d  PP %d  DP %d\n", cfg[0], cfg[1], cfg[2]);
        pdbx_table_print(t, out, "  ");
        pdbx_table_free(t);
        t = NULL;
    }
    t = pdbx_table_new(3);
    if (!t || pdbx_table_header(t, 0, "op", PDBX_ALIGN_LEFT) || pdbx_table_header(t, 1, "cells", PDBX_ALIGN_RIGHT)
        || pdbx_table_header(t, 2, "geomean", PDBX_ALIGN_RIGHT))
        goto fail;
    for (size_t c = 0; c < d->ncols; c++) {
        char buf[32];
        if (!d->count[c])
            continue;
        if (pdbx_table_add_row(t) || pdbx_table_set(t, 0, "%s", d->names[c])
            || pdbx_table_set(t, 1, "%zu", d->count[c])
            || pdbx_table_set(t, 2, "%s", pdbx_fmt_ratio(geomean(d, c), 1, buf, sizeof buf)))
            goto fail;
    }
    fprintf(out, "\ngeometric mean of B/A per op over the common cells:\n");
    pdbx_table_print(t, out, "  ");
    pdbx_table_free(t);
    return 0;
fail:
    pdbx_table_free(t);
    return -1;
}

static int print_json(const pdbx_run *ra, const pdbx_run *rb, const diff_args *args,
                      const diff_result *d, FILE *out)
{
    /* root owns every node from its creation on: one delete on any failure */
    cJSON *root = cJSON_CreateObject(), *cells = NULL, *geo = NULL;
    if (!root || !cJSON_AddStringToObject(root, "a", ra->id) || !cJSON_AddStringToObject(root, "b", rb->id)
        || !cJSON_AddStringToObject(root, "stat", pdbx_stat_name((pdbx_stat_kind)args->stat))
        || !cJSON_AddStringToObject(root, "attribution", pdbx_cli_attributions[args->attribution])
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
            || !cJSON_AddNumberToObject(o, "dp", c->cfg[2]) || !cJSON_AddNumberToObject(o, "mbs", c->mbs)
            || !cJSON_AddStringToObject(o, "op", d->names[c->col]) || !cJSON_AddNumberToObject(o, "a", c->a)
            || !cJSON_AddNumberToObject(o, "b", c->b) || !cJSON_AddNumberToObject(o, "ratio", c->b / c->a))
            goto fail;
    }
    for (size_t c = 0; c < d->ncols; c++) {
        if (!d->count[c])
            continue;
        cJSON *o = cJSON_AddObjectToObject(geo, d->names[c]);
        if (!o || !cJSON_AddNumberToObject(o, "geomean", geomean(d, c))
            || !cJSON_AddNumberToObject(o, "cells", (double)d->count[c]))
            goto fail;
    }
    return pdbx_cli_emit_json(out, root);
fail:
    cJSON_Delete(root);
    return -1;
}

static void print_csv(const diff_result *d, FILE *out)
{
    fputs("tp,pp,dp,mbs,op,a,b,ratio\n", out);
    for (size_t i = 0; i < d->ncells; i++) {
        const diff_cell *c = &d->cells[i];
        fprintf(out, "%d,%d,%d,%d,", c->cfg[0], c->cfg[1], c->cfg[2], c->mbs);
        pdbx_csv_field(out, d->names[c->col]);         /* an op name can come from a run file */
        fprintf(out, ",%.17g,%.17g,%.17g\n", c->a, c->b, c->b / c->a);
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
    if (compute(&ra, &rb, &a, &d) != 0) {
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, diff_spec.name, "out of memory");
        goto done;
    }
    if (d.ncells == 0) {
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, diff_spec.name,
                           "runs %s and %s have no cell in common (same TP/PP/DP, MBS and op, ok in both)",
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
