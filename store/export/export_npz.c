/* export_npz.c: FASOP profile files, one `{model}_{gpu}_{tp}.npz` per TP degree (export.h,
 * docs/exports.md).
 *
 * A row is one micro-batch size: row i is MBS 2^i, consecutive ok points from MBS 1. A column
 * is the sum of the chosen statistic of the ops pdbx_fasop_col_ops() puts in it. Layer ops are
 * sampled once per profiled layer, so their statistic already is the per-layer value; embed
 * and lm_head are sampled once per step, i.e. once per micro-batch forward.
 *
 * Missing cells: the op that names a column (a GEMM, embed, the activation, lm_head) must be
 * measured in every row, else the export fails naming the op and the MBS. An op that FASOP's
 * timing only folds into a column (norms, attention core, TP all-reduces, final norm) is
 * either measured in every row (added), or in none (adds 0, e.g. the all-reduces at TP 1 do
 * not exist; listed under "ops_not_measured" in meta.json), never in some rows only. An op the
 * model does not have (pdbx_run_absent_ops: gpt2's mlp_gate and attn_rope) adds 0 wherever it
 * would go, its own column included (listed under "ops_not_in_model").
 */
#include "store/util/err.h"
#include "store/export/export.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "store/util/fs.h"
#include "store/util/text.h"
#include "store/export/export_common.h"
#include "store/version.h"
#include "store/export/export_zip.h"

/* FASOP sweeps MBS 1..128; 2^30 is far beyond any real sweep and keeps 2^i in an int. */
#define FASOP_MAX_ROWS 31

/* One config's matrix and what went into it. */
typedef struct {
    int tp, pp, dp;
    int rows;
    double values[FASOP_MAX_ROWS * PDBX_FASOP_COLS];
    pdbx_opmask not_measured;    /* folded ops measured in none of the rows (they add 0) */
    pdbx_opmask not_in_model;    /* ops the model does not have (they add 0) */
    double layer[FASOP_MAX_ROWS], total[FASOP_MAX_ROWS];   /* measured cells, NaN = N/A */
} fasop_matrix;

static const char *config_str(char *buf, size_t len, int tp, int pp, int dp)
{
    snprintf(buf, len, "TP %d PP %d DP %d", tp, pp, dp);
    return buf;
}

static int cell_ok(const pdbx_rt_point *pt, pdbx_op op, pdbx_stat_kind stat)
{
    return isfinite(pdbx_rt_value(&pt->op[op], stat));
}

static void no_rows_error(const pdbx_rt_config *c, const char *cfg, char *err, size_t errlen)
{
    const pdbx_rt_point *first = NULL;
    for (size_t i = 0; i < c->npoints && !first; i++)
        if (c->points[i].mbs == 1)
            first = &c->points[i];
    if (!first)
        pdbx_errf(err, errlen, "no ok point at MBS 1 for TP %d (%s): the run has no MBS 1 point "
                  "there; FASOP rows must start at MBS 1", c->tp, cfg);
    else
        pdbx_errf(err, errlen, "no ok point at MBS 1 for TP %d (%s): MBS 1 is %s%s%s; FASOP rows "
                  "must start at MBS 1", c->tp, cfg, pdbx_point_status_name(first->status),
                  first->point->message ? ": " : "",
                  first->point->message ? first->point->message : "");
}

/* The leading run of ok points at MBS 1, 2, 4, ...; returns its length or -1 with err. */
static int leading_rows(const pdbx_run *run, const pdbx_rt_config *c,
                        const pdbx_rt_point **rows, char *err, size_t errlen)
{
    char cfg[64];
    config_str(cfg, sizeof cfg, c->tp, c->pp, c->dp);
    if (c->npoints == 0) {
        pdbx_errf(err, errlen, "run %s has no points with %s", run->id, cfg);
        return -1;
    }
    int count = 0;
    long want = 1;
    for (size_t i = 0; i < c->npoints && count < FASOP_MAX_ROWS; i++) {
        const pdbx_rt_point *p = &c->points[i];
        if (p->mbs < want)
            continue;                 /* a duplicate of an MBS already taken */
        if (p->mbs != want || p->status != PDBX_POINT_OK)
            break;
        rows[count++] = p;
        want *= 2;
    }
    if (count == 0)
        no_rows_error(c, cfg, err, errlen);
    return count ? count : -1;
}

/* Every op a column wants is measured in every row (added), in none (adds 0, listed in
 * meta.json), or the config cannot be exported: a column's own op missing, or a folded op
 * in some rows only. Returns the added mask, or 0 with err. */
static pdbx_opmask decide_ops(const pdbx_rt_point **rows, int nrows, pdbx_attribution attr,
                           pdbx_stat_kind stat, const char *cfg, fasop_matrix *m, pdbx_opmask absent,
                           char *err, size_t errlen)
{
    pdbx_opmask wanted = 0, own = 0, added = 0;
    for (int col = 0; col < PDBX_FASOP_COLS; col++) {
        wanted |= pdbx_fasop_col_ops(col, attr == PDBX_ATTR_FASOP);
        own |= pdbx_fasop_col_ops(col, 0);
    }
    m->not_in_model = wanted & absent;
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        if (!(wanted & ~absent & PDBX_OP_BIT(op)))
            continue;
        int miss = -1, have = -1;
        for (int r = 0; r < nrows; r++) {
            int ok = cell_ok(rows[r], (pdbx_op)op, stat);
            if (ok && have < 0)
                have = r;
            if (!ok && miss < 0)
                miss = r;
        }
        if (miss < 0) {
            added |= PDBX_OP_BIT(op);
            continue;
        }
        if (own & PDBX_OP_BIT(op)) {
            int col = 0;
            while (col < PDBX_FASOP_COLS && !(pdbx_fasop_col_ops(col, 0) & PDBX_OP_BIT(op)))
                col++;
            pdbx_errf(err, errlen, "FASOP column %s needs op %s, which has no %s value at MBS %d "
                      "(%s): measure it or drop MBS >= %d", pdbx_fasop_col_name(col),
                      pdbx_op_name((pdbx_op)op), pdbx_stat_name(stat), rows[miss]->mbs, cfg,
                      rows[miss]->mbs);
            return 0;
        }
        if (have >= 0) {
            pdbx_errf(err, errlen, "op %s has a %s value at MBS %d but none at MBS %d (%s): a "
                      "FASOP column cannot mix rows with and without it", pdbx_op_name((pdbx_op)op),
                      pdbx_stat_name(stat), rows[have]->mbs, rows[miss]->mbs, cfg);
            return 0;
        }
        m->not_measured |= PDBX_OP_BIT(op);
    }
    return added;
}

static int build_matrix(const pdbx_run *run, const pdbx_rt_config *c, pdbx_attribution attr,
                        pdbx_stat_kind stat, fasop_matrix *m, char *err, size_t errlen)
{
    char cfg[64];
    config_str(cfg, sizeof cfg, c->tp, c->pp, c->dp);
    memset(m, 0, sizeof *m);
    m->tp = c->tp;
    m->pp = c->pp;
    m->dp = c->dp;
    if (pdbx_rt_check_time_stat(stat, err, errlen) != 0)
        return -1;
    if (attr != PDBX_ATTR_FASOP && attr != PDBX_ATTR_PURE) {
        pdbx_errf(err, errlen, "attribution: %d is not one (allowed: fasop, pure)", (int)attr);
        return -1;
    }
    const pdbx_rt_point *rows[FASOP_MAX_ROWS];
    int nrows = leading_rows(run, c, rows, err, errlen);
    if (nrows < 0)
        return -1;
    pdbx_opmask added = decide_ops(rows, nrows, attr, stat, cfg, m, pdbx_run_absent_ops(run), err, errlen);
    if (!added)
        return -1;
    /* The run table's columns over the ops measured in every row: the same values `pdbx show
       --attribution` prints for these points. */
    pdbx_rt_col cols[PDBX_FASOP_COLS];
    pdbx_rt_fasop_columns(attr, cols);
    for (int col = 0; col < PDBX_FASOP_COLS; col++) {
        cols[col].ops &= added;
        /* a column left with no op (a plain MLP's mlp_gate under pure attribution) is 0 */
        for (int r = 0; r < nrows; r++)
            m->values[r * PDBX_FASOP_COLS + col] = cols[col].ops ? pdbx_rt_col_value(rows[r], &cols[col], stat) : 0.0;
    }
    for (int r = 0; r < nrows; r++) {
        m->layer[r] = pdbx_rt_value(&rows[r]->layer, stat);
        m->total[r] = pdbx_rt_value(&rows[r]->total, stat);
    }
    m->rows = nrows;
    return 0;
}

int pdbx_fasop_rows(const pdbx_run *run, int tp, int pp, int dp, pdbx_attribution attr,
                    pdbx_stat_kind stat, double *out, int cap, char *err, size_t errlen)
{
    fasop_matrix *m = malloc(sizeof *m);
    if (!m) {
        pdbx_errf(err, errlen, "out of memory for the FASOP rows of TP %d", tp);
        return -1;
    }
    pdbx_rt_config c;
    if (pdbx_rt_config_build(run, tp, pp, dp, 1, &c) != 0) {   /* FASOP has no EP: its rows are EP 1 */
        free(m);
        pdbx_errf(err, errlen, "out of memory for the FASOP rows of TP %d", tp);
        return -1;
    }
    int bad = build_matrix(run, &c, attr, stat, m, err, errlen);
    pdbx_rt_config_free(&c);
    if (bad) {
        free(m);
        return -1;
    }
    /* out == NULL asks for the row count only; otherwise at most cap rows are written. */
    int rows = m->rows;
    if (out) {
        if (rows > cap)
            rows = cap < 0 ? 0 : cap;
        memcpy(out, m->values, (size_t)rows * PDBX_FASOP_COLS * sizeof *out);
    }
    free(m);
    return rows;
}

/* A row's measured cells as a JSON array: numbers, null where not measured. */
static cJSON *ms_array(const double *v, int n)
{
    int ok = 1;
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < n; i++)
        pdbx_json_put(&ok, arr, NULL, isfinite(v[i]) ? cJSON_CreateNumber(v[i]) : cJSON_CreateNull());
    if (!ok) {
        cJSON_Delete(arr);
        return NULL;
    }
    return arr;
}

static cJSON *string_array_of_ops(pdbx_opmask mask)
{
    int ok = 1;
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return NULL;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        if (mask & PDBX_OP_BIT(op))
            pdbx_json_put(&ok, arr, NULL, cJSON_CreateString(pdbx_op_name((pdbx_op)op)));
    if (!ok) {
        cJSON_Delete(arr);
        return NULL;
    }
    return arr;
}

/* meta.json: what the numbers in data.npy are. NULL when out of memory. */
static char *meta_json(const pdbx_run *run, const fasop_matrix *m, const char *model_tag,
                       const char *gpu_tag, pdbx_attribution attr, pdbx_stat_kind stat,
                       pdbx_pass_sel pass)
{
    int ok = 1;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    pdbx_json_str(&ok, o, "format", "pdbx FASOP profile");
    pdbx_json_num(&ok, o, "format_version", 1);
    pdbx_json_str(&ok, o, "attribution", attr == PDBX_ATTR_FASOP ? "fasop" : "pure");
    pdbx_json_str(&ok, o, "attribution_note", attr == PDBX_ATTR_FASOP
        ? "FASOP module timing: each column also holds the unnamed work before its module "
          "(input norm and the previous layer's MLP all-reduce in attn_q, attention core in "
          "attn_o, attention all-reduce and post-attention norm in mlp_gate, final norm in "
          "lm_head); the layer columns sum to the layer's forward time"
        : "pure: each column is its own op only");
    pdbx_json_str(&ok, o, "stat", pdbx_stat_name(stat));
    pdbx_json_str(&ok, o, "units", "ms");
    pdbx_json_str(&ok, o, "pass", pdbx_pass_sel_name(pass));
    pdbx_json_str(&ok, o, "per", pass == PDBX_PASS_SEL_BOTH
                  ? "forward + backward (both measured, added per op), one micro-batch; layer "
                    "columns per layer (averaged over the profiled layers); embed and lm_head once. "
                    "NOT what FASOP expects: FASOP multiplies its columns by 3 as if forward; "
                    "layer_ms and total_ms are forward sums and null here"
                  : "forward only, one micro-batch; layer columns per layer "
                    "(averaged over the profiled layers); embed and lm_head once");
    pdbx_export_run_identity(&ok, o, run);
    pdbx_export_gemm_modes(&ok, o, run);
    pdbx_json_str(&ok, o, "model_tag", model_tag);
    pdbx_json_str(&ok, o, "gpu_tag", gpu_tag);
    pdbx_json_num(&ok, o, "tp", m->tp);
    pdbx_json_num(&ok, o, "pp", m->pp);
    pdbx_json_num(&ok, o, "dp", m->dp);
    pdbx_json_num(&ok, o, "layers", run->model.layers);
    cJSON *mbs = cJSON_CreateArray();
    for (int r = 0; mbs && r < m->rows; r++)
        pdbx_json_put(&ok, mbs, NULL, cJSON_CreateNumber((double)(1L << r)));
    pdbx_json_put(&ok, o, "mbs", mbs);
    /* the run table's measured layer and total per row (not columns: FASOP reads data.npy) */
    pdbx_json_put(&ok, o, "layer_ms", ms_array(m->layer, m->rows));
    pdbx_json_put(&ok, o, "total_ms", ms_array(m->total, m->rows));
    cJSON *cols = cJSON_CreateArray(), *col_ops = cJSON_CreateObject();
    for (int c = 0; cols && col_ops && c < PDBX_FASOP_COLS; c++) {
        pdbx_json_put(&ok, cols, NULL, cJSON_CreateString(pdbx_fasop_col_name(c)));
        pdbx_opmask ops = pdbx_fasop_col_ops(c, attr == PDBX_ATTR_FASOP) & ~m->not_measured & ~m->not_in_model;
        pdbx_json_put(&ok, col_ops, pdbx_fasop_col_name(c), string_array_of_ops(ops));
    }
    pdbx_json_put(&ok, o, "columns", cols);
    pdbx_json_put(&ok, o, "column_ops", col_ops);
    pdbx_json_put(&ok, o, "ops_not_measured", string_array_of_ops(m->not_measured));
    pdbx_json_put(&ok, o, "ops_not_in_model", string_array_of_ops(m->not_in_model));
    char source[128];
    snprintf(source, sizeof source, "pdbx %s (git %s)", pdbx_version(), pdbx_git_rev());
    pdbx_json_str(&ok, o, "source", source);
    char *raw = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    char *text = pdbx_json_text_safe(raw);   /* valid UTF-8 whatever the run held (text.h) */
    cJSON_free(raw);
    return text;
}

static int write_npz(const pdbx_run *run, const fasop_matrix *m, const char *dir,
                     const char *model_tag, const char *gpu_tag, pdbx_attribution attr,
                     pdbx_stat_kind stat, pdbx_pass_sel pass, pdbx_wrote_fn wrote, void *ctx,
                     char *err, size_t errlen)
{
    int rc = -1;
    unsigned char *npy = NULL, *zip = NULL;
    size_t npy_len = 0, zip_len = 0;
    char *meta = NULL;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s_%s_%d.npz", dir, model_tag, gpu_tag, m->tp)
        >= (int)sizeof path) {
        pdbx_errf(err, errlen, "%s: path too long", dir);
        goto out;
    }
    if (pdbx_npy_f64(m->values, (size_t)m->rows, PDBX_FASOP_COLS, &npy, &npy_len, err, errlen) != 0)
        goto out;
    meta = meta_json(run, m, model_tag, gpu_tag, attr, stat, pass);
    if (!meta) {
        pdbx_errf(err, errlen, "%s: out of memory building meta.json", path);
        goto out;
    }
    pdbx_zip_member members[2] = {
        { "data.npy", npy, npy_len },
        { "meta.json", meta, strlen(meta) },
    };
    if (pdbx_zip_stored(members, 2, &zip, &zip_len, err, errlen) != 0)
        goto out;
    if (pdbx_export_publish(path, zip, zip_len, wrote, ctx, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    free(npy);
    free(zip);
    free(meta);
    return rc;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The config of TP degree tp with the most rows into *best (ties: the first in plan order).
 * 1 when one could be built, else 0 with the first config's reason in err. */
static int best_of_tp(const pdbx_runtable *t, int tp, const pdbx_npz_options *opt,
                      fasop_matrix **best, fasop_matrix **cand, char *err, size_t errlen)
{
    int have = 0;
    err[0] = '\0';
    for (size_t i = 0; i < t->nconfigs; i++) {
        if (t->configs[i].tp != tp)
            continue;
        char e[512];
        if (build_matrix(t->run, &t->configs[i], opt->attribution, opt->stat, *cand, e,
                         sizeof e) != 0) {
            if (!err[0])
                snprintf(err, errlen, "%s", e);
            continue;
        }
        if (!have || (*cand)->rows > (*best)->rows) {
            fasop_matrix *tmp = *best;
            *best = *cand;
            *cand = tmp;
            have = 1;
        }
    }
    return have;
}

/* The distinct TP degrees of the table, ascending; returns the count. */
static size_t tp_degrees(const pdbx_runtable *t, int *tps)
{
    size_t ntp = 0;
    for (size_t i = 0; i < t->nconfigs; i++) {
        size_t j = 0;
        while (j < ntp && tps[j] != t->configs[i].tp)
            j++;
        if (j == ntp)
            tps[ntp++] = t->configs[i].tp;
    }
    qsort(tps, ntp, sizeof *tps, cmp_int);
    return ntp;
}

int pdbx_export_npz(const pdbx_run *run, const char *dir, const pdbx_npz_options *opt,
                    pdbx_wrote_fn wrote, void *ctx, char *err, size_t errlen)
{
    pdbx_npz_options defaults = { NULL, NULL, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, PDBX_PASS_SEL_FWD };
    if (!opt)
        opt = &defaults;
    const char *model_tag = opt->model_tag ? opt->model_tag : run->model.tag;
    const char *gpu_tag = opt->gpu_tag ? opt->gpu_tag : run->gpu_tag;
    if (pdbx_rt_check_time_stat(opt->stat, err, errlen) != 0
        || pdbx_export_check_tag("model tag", model_tag, err, errlen) != 0
        || pdbx_export_check_tag("gpu tag", gpu_tag, err, errlen) != 0)
        return -1;
    if (opt->pass == PDBX_PASS_SEL_BWD)
        return pdbx_fail(err, errlen, "pass: 'bwd' makes no FASOP profile (FASOP reads forward "
                         "times and multiplies them by 3; allowed: fwd, or both for fwd + bwd per cell)");
    if (pdbx_pass_sel_check(run, opt->pass, "pass", err, errlen) != 0 ||
        pdbx_run_fasop_shaped(run, "--npz", err, errlen) != 0)
        return -1;

    int rc = -1;
    pdbx_runtable t;
    int tbad = pdbx_runtable_build_pass(run, 0, opt->pass, &t);
    int *tps = malloc((t.nconfigs ? t.nconfigs : 1) * sizeof *tps);
    fasop_matrix *best = malloc(sizeof *best), *cand = malloc(sizeof *cand);
    if (tbad || !tps || !best || !cand) {
        pdbx_errf(err, errlen, "out of memory exporting run %s", run->id);
        goto out;
    }
    if (t.nconfigs == 0) {
        pdbx_errf(err, errlen, "run %s has no points: nothing to export", run->id);
        goto out;
    }
    size_t ntp = tp_degrees(&t, tps);
    if (pdbx_export_mkdirs(dir, err, errlen) != 0)
        goto out;
    /* Every TP that can be written is written; the first TP that cannot is the error. */
    char first_err[512] = "";
    for (size_t i = 0; i < ntp; i++) {
        char tp_err[512];
        if (!best_of_tp(&t, tps[i], opt, &best, &cand, tp_err, sizeof tp_err)) {
            if (!first_err[0])
                snprintf(first_err, sizeof first_err, "%s", tp_err);
            continue;
        }
        if (write_npz(run, best, dir, model_tag, gpu_tag, opt->attribution, opt->stat, opt->pass,
                      wrote, ctx, err, errlen) != 0)
            goto out;
    }
    if (first_err[0]) {
        pdbx_errf(err, errlen, "%s", first_err);
        goto out;
    }
    rc = 0;
out:
    pdbx_runtable_free(&t);
    free(tps);
    free(best);
    free(cand);
    return rc;
}
