/* cli_show.c: `pdbx show RUN`: per parallel config a table MBS x ops (ms) with row totals and
 * each point's status, the point's parallelism traffic (comm) and the collectives sweep; as an
 * aligned table, JSON or CSV. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tui/cli/cli.h"
#include "store/util/fmt.h"

static const pdbx_cli_opt show_opts[] = {
    { "store", "DIR", "the store (default: $PDBX_STORE, $XDG_DATA_HOME/pdbx, ~/.local/share/pdbx)" },
    { "tp", "N", "only the configs with this TP degree" },
    { "stat", "STAT", "statistic shown: mean (default), median, min, max, std" },
    { "format", "FMT", "table (default), json or csv (csv: the op table only)" },
    { "attribution", "ATTR", "pure (default: one column per op) or fasop (FASOP's 10 columns)" },
    { NULL, NULL, NULL },
};

static const pdbx_cli_spec show_spec = {
    .name = "show", .args = "RUN", .opts = show_opts, .min_args = 1, .max_args = 1,
    .about = "Prints a run: per parallel config (TP, PP, DP) a table of MBS x ops in ms per\n"
             "execution on one TP rank (the max across TP ranks), with 'layer' (one layer's\n"
             "forward: the per-layer ops) and 'total' (every cell of the row), each point's\n"
             "status (ok, oom, predicted_oom, skipped ...), the comm cells and the collectives.\n"
             "RUN is a unique prefix of a run id, or a path to a run file or recording.",
};

enum { FMT_TABLE = 0, FMT_JSON, FMT_CSV };
static const char *const formats[] = { "table", "json", "csv", NULL };

typedef struct {
    const char *store;
    int tp, stat, format, attribution;
} show_args;

static int show_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err, size_t errlen)
{
    show_args *a = ctx;
    if (strcmp(opt->name, "store") == 0) {
        a->store = value;
        return 0;
    }
    if (strcmp(opt->name, "tp") == 0)
        return pdbx_cli_int(opt->name, value, 1, 1 << 20, &a->tp, err, errlen);
    if (strcmp(opt->name, "stat") == 0)
        return pdbx_cli_stat(opt->name, value, &a->stat, err, errlen);
    if (strcmp(opt->name, "format") == 0)
        return pdbx_cli_choice(opt->name, value, formats, &a->format, err, errlen);
    if (strcmp(opt->name, "attribution") == 0)
        return pdbx_cli_choice(opt->name, value, pdbx_cli_attributions, &a->attribution, err, errlen);
    return 0;
}

/* A point left "running" by a run that is no longer running (crash, corruption) never finished:
 * say so rather than suggest it is still being measured. */
static const char *status_text(const pdbx_run *run, const pdbx_point *p)
{
    if (p->status == PDBX_POINT_RUNNING && run->status != PDBX_RUN_RUNNING)
        return "unfinished";
    return pdbx_point_status_name(p->status);
}

static const pdbx_comm_cell *comm_of(const pdbx_point *p, int kind, const char **name)
{
    static const char *const names[] = { "tp_allreduce", "pp_sendrecv", "dp_allreduce" };
    *name = names[kind];
    return kind == 0 ? &p->tp_allreduce : kind == 1 ? &p->pp_sendrecv : &p->dp_allreduce;
}

static size_t config_points(const pdbx_run *run, const int cfg[3], const pdbx_point ***out)
{
    size_t cap = run->npoints ? run->npoints : 1;
    *out = calloc(cap, sizeof **out);
    if (!*out)
        return 0;
    return pdbx_run_config_points(run, cfg[0], cfg[1], cfg[2], *out, cap);
}

/* ---- table ----------------------------------------------------------------------------- */
static void print_header(const pdbx_run *run, const show_args *a, FILE *out)
{
    char created[32];
    pdbx_fmt_time(run->created, created, sizeof created);
    fprintf(out, "run %s  %s  created %s", run->id, pdbx_run_status_name(run->status), created);
    if (run->end_reason[0])
        fprintf(out, "  (%s)", run->end_reason);
    fputc('\n', out);
    fprintf(out, "model %s%s%s%s, %d of %d layers profiled, seq_len %d, %s\n",
            run->model.name[0] ? run->model.name : PDBX_NA, run->model.tag[0] ? " (" : "",
            run->model.tag, run->model.tag[0] ? ")" : "", run->layers_profiled, run->model.layers,
            run->seq_len, run->dtype[0] ? run->dtype : PDBX_NA);
    fprintf(out, "backend %s, gpu %s, device %s, %d ranks (%d per node), warmup %d, steps %d\n",
            run->backend[0] ? run->backend : PDBX_NA, run->gpu[0] ? run->gpu : PDBX_NA,
            run->device_name[0] ? run->device_name : PDBX_NA, run->world_size, run->ranks_per_node,
            run->warmup, run->steps);
    fprintf(out, "times: ms per execution on one TP rank (max across TP ranks), stat %s, "
                 "attribution %s\n",
            pdbx_stat_name((pdbx_stat_kind)a->stat), pdbx_cli_attributions[a->attribution]);
}

static int print_config_table(const pdbx_run *run, const int cfg[3], const show_args *a,
                              const pdbx_cli_col *cols, size_t ncols, FILE *out)
{
    const pdbx_point **pts = NULL;
    size_t np = config_points(run, cfg, &pts);
    size_t tcols = ncols + 4;           /* mbs, status, ops..., layer, total */
    pdbx_table *t = pdbx_table_new(tcols);
    int *any = calloc(ncols, sizeof *any);
    if (!t || !any || (!pts && run->npoints))
        goto fail;
    if (pdbx_table_header(t, 0, "mbs", PDBX_ALIGN_RIGHT) || pdbx_table_header(t, 1, "status", PDBX_ALIGN_LEFT))
        goto fail;
    for (size_t c = 0; c < ncols; c++)
        if (pdbx_table_header(t, 2 + c, cols[c].name, PDBX_ALIGN_RIGHT))
            goto fail;
    if (pdbx_table_header(t, 2 + ncols, "layer", PDBX_ALIGN_RIGHT)
        || pdbx_table_header(t, 3 + ncols, "total", PDBX_ALIGN_RIGHT))
        goto fail;
    for (size_t i = 0; i < np; i++) {
        pdbx_cli_row r;
        char buf[64];
        pdbx_cli_row_fill(pts[i], cols, ncols, (pdbx_stat_kind)a->stat, &r);
        if (pdbx_table_add_row(t) || pdbx_table_set(t, 0, "%d", pts[i]->mbs)
            || pdbx_table_set(t, 1, "%s", status_text(run, pts[i])))
            goto fail;
        for (size_t c = 0; c < ncols; c++) {
            any[c] |= r.valid[c];
            if (pdbx_table_set(t, 2 + c, "%s", pdbx_fmt_ms(r.v[c], r.valid[c], buf, sizeof buf)))
                goto fail;
        }
        if (pdbx_table_set(t, 2 + ncols, "%s", pdbx_fmt_ms(r.layer, r.layer_valid, buf, sizeof buf))
            || pdbx_table_set(t, 3 + ncols, "%s", pdbx_fmt_ms(r.total, r.total_valid, buf, sizeof buf)))
            goto fail;
    }
    /* Ops never measured in this config (e.g. TP all-reduces at TP 1) would be N/A columns. */
    for (size_t c = 0; c < ncols; c++)
        pdbx_table_hide(t, 2 + c, !any[c]);
    fprintf(out, "\nTP %d  PP %d  DP %d\n", cfg[0], cfg[1], cfg[2]);
    pdbx_table_print(t, out, "  ");
    for (size_t i = 0; i < np; i++)
        if (pts[i]->message && pts[i]->message[0])
            fprintf(out, "  MBS %d %s: %s\n", pts[i]->mbs, status_text(run, pts[i]),
                    pts[i]->message);

    /* The point's parallelism traffic, long format: one row per (MBS, kind). */
    pdbx_table_free(t);
    t = pdbx_table_new(7);
    if (!t)
        goto fail;
    static const char *const ct[] = { "mbs", "comm", "size", "ranks", "time_ms", "algbw", "busbw" };
    for (size_t c = 0; c < 7; c++)
        if (pdbx_table_header(t, c, ct[c], c == 1 ? PDBX_ALIGN_LEFT : PDBX_ALIGN_RIGHT))
            goto fail;
    for (size_t i = 0; i < np; i++) {
        for (int k = 0; k < 3; k++) {
            const char *name;
            const pdbx_comm_cell *cc = comm_of(pts[i], k, &name);
            if (!cc->valid)
                continue;
            char sz[32], tm[32], ab[32], bb[32];
            if (pdbx_table_add_row(t) || pdbx_table_set(t, 0, "%d", pts[i]->mbs)
                || pdbx_table_set(t, 1, "%s", name)
                || pdbx_table_set(t, 2, "%s", pdbx_fmt_size(cc->bytes, sz, sizeof sz))
                || pdbx_table_set(t, 3, "%d", cc->group_size)
                || pdbx_table_set(t, 4, "%s", pdbx_fmt_ms(pdbx_stats_get(&cc->time, (pdbx_stat_kind)a->stat), 1, tm, sizeof tm))
                || pdbx_table_set(t, 5, "%s", pdbx_fmt_gbs(cc->algbw, 1, ab, sizeof ab))
                || pdbx_table_set(t, 6, "%s", pdbx_fmt_gbs(cc->busbw, 1, bb, sizeof bb)))
                goto fail;
        }
    }
    if (pdbx_table_rows(t) > 0) {
        fprintf(out, "  comm (GB/s from the mean time):\n");
        pdbx_table_print(t, out, "  ");
    }
    pdbx_table_free(t);
    free(any);
    free(pts);
    return 0;
fail:
    pdbx_table_free(t);
    free(any);
    free(pts);
    return -1;
}

static int print_collectives(const pdbx_run *run, const show_args *a, FILE *out)
{
    if (run->ncoll == 0)
        return 0;
    pdbx_table *t = pdbx_table_new(7);
    if (!t)
        return -1;
    static const char *const ct[] = { "coll", "size", "ranks", "per_node", "time_ms", "algbw", "busbw" };
    for (size_t c = 0; c < 7; c++)
        if (pdbx_table_header(t, c, ct[c], c == 0 ? PDBX_ALIGN_LEFT : PDBX_ALIGN_RIGHT))
            goto fail;
    for (size_t i = 0; i < run->ncoll; i++) {
        const pdbx_coll_result *r = &run->coll[i];
        char sz[32], tm[32], ab[32], bb[32];
        if (pdbx_table_add_row(t) || pdbx_table_set(t, 0, "%s", r->coll)
            || pdbx_table_set(t, 1, "%s", pdbx_fmt_size(r->bytes, sz, sizeof sz))
            || pdbx_table_set(t, 2, "%d", r->nranks) || pdbx_table_set(t, 3, "%d", r->ranks_per_node)
            || pdbx_table_set(t, 4, "%s", pdbx_fmt_ms(pdbx_stats_get(&r->time, (pdbx_stat_kind)a->stat), 1, tm, sizeof tm))
            || pdbx_table_set(t, 5, "%s", pdbx_fmt_gbs(r->algbw, 1, ab, sizeof ab))
            || pdbx_table_set(t, 6, "%s", pdbx_fmt_gbs(r->busbw, 1, bb, sizeof bb)))
            goto fail;
    }
    fprintf(out, "\ncollectives (nccl-tests definitions, GB/s from the mean time):\n");
    pdbx_table_print(t, out, "  ");
    pdbx_table_free(t);
    return 0;
fail:
    pdbx_table_free(t);
    return -1;
}

/* ---- JSON ------------------------------------------------------------------------------- */
static cJSON *num_or_null(double v, int valid)
{
    return valid && isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static int add_item(cJSON *obj, const char *key, cJSON *item)
{
    if (!item)
        return -1;
    if (!cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        return -1;
    }
    return 0;
}

static cJSON *point_json(const pdbx_run *run, const pdbx_point *p, const show_args *a,
                         const pdbx_cli_col *cols, size_t ncols)
{
    pdbx_cli_row r;
    pdbx_cli_row_fill(p, cols, ncols, (pdbx_stat_kind)a->stat, &r);
    cJSON *o = cJSON_CreateObject();
    cJSON *cells = cJSON_CreateObject();
    cJSON *comm = cJSON_CreateObject();
    if (!o || !cells || !comm)
        goto fail;
    if (!cJSON_AddNumberToObject(o, "mbs", p->mbs)
        || !cJSON_AddStringToObject(o, "status", status_text(run, p)))
        goto fail;
    if (p->message && add_item(o, "message", cJSON_CreateString(p->message)))
        goto fail;
    for (size_t c = 0; c < ncols; c++)
        if (add_item(cells, cols[c].name, num_or_null(r.v[c], r.valid[c])))
            goto fail;
    for (int k = 0; k < 3; k++) {
        const char *name;
        const pdbx_comm_cell *cc = comm_of(p, k, &name);
        if (!cc->valid)
            continue;
        cJSON *c = cJSON_CreateObject();
        if (add_item(comm, name, c) || !cJSON_AddNumberToObject(c, "bytes", cc->bytes)
            || !cJSON_AddNumberToObject(c, "group_size", cc->group_size)
            || !cJSON_AddNumberToObject(c, "time_ms", pdbx_stats_get(&cc->time, (pdbx_stat_kind)a->stat))
            || !cJSON_AddNumberToObject(c, "algbw", cc->algbw)
            || !cJSON_AddNumberToObject(c, "busbw", cc->busbw))
            goto fail;
    }
    if (add_item(o, "ms", cells)) {
        cells = NULL;
        goto fail;
    }
    cells = NULL;
    if (add_item(o, "comm", comm)) {
        comm = NULL;
        goto fail;
    }
    comm = NULL;
    if (add_item(o, "layer", num_or_null(r.layer, r.layer_valid))
        || add_item(o, "total", num_or_null(r.total, r.total_valid)))
        goto fail;
    return o;
fail:
    cJSON_Delete(cells);
    cJSON_Delete(comm);
    cJSON_Delete(o);
    return NULL;
}

static int print_json(const pdbx_run *run, int (*cfgs)[3], size_t ncfg, const show_args *a,
                      const pdbx_cli_col *cols, size_t ncols, FILE *out)
{
    const pdbx_point **pts = NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON *configs = cJSON_CreateArray();
    cJSON *colls = cJSON_CreateArray();
    if (!root || !configs || !colls)
        goto fail;
    if (!cJSON_AddStringToObject(root, "id", run->id)
        || !cJSON_AddStringToObject(root, "status", pdbx_run_status_name(run->status))
        || !cJSON_AddStringToObject(root, "reason", run->end_reason)
        || !cJSON_AddStringToObject(root, "model", run->model.name)
        || !cJSON_AddStringToObject(root, "model_tag", run->model.tag)
        || !cJSON_AddNumberToObject(root, "layers_profiled", run->layers_profiled)
        || !cJSON_AddNumberToObject(root, "seq_len", run->seq_len)
        || !cJSON_AddStringToObject(root, "dtype", run->dtype)
        || !cJSON_AddStringToObject(root, "backend", run->backend)
        || !cJSON_AddStringToObject(root, "gpu", run->gpu)
        || !cJSON_AddStringToObject(root, "stat", pdbx_stat_name((pdbx_stat_kind)a->stat))
        || !cJSON_AddStringToObject(root, "attribution", pdbx_cli_attributions[a->attribution])
        || !cJSON_AddStringToObject(root, "unit", "ms"))
        goto fail;
    for (size_t i = 0; i < ncfg; i++) {
        cJSON *cfg = cJSON_CreateObject();
        if (!cfg || !cJSON_AddItemToArray(configs, cfg)) {
            cJSON_Delete(cfg);
            goto fail;
        }
        cJSON *arr = cJSON_CreateArray();
        if (add_item(cfg, "points", arr) || !cJSON_AddNumberToObject(cfg, "tp", cfgs[i][0])
            || !cJSON_AddNumberToObject(cfg, "pp", cfgs[i][1])
            || !cJSON_AddNumberToObject(cfg, "dp", cfgs[i][2]))
            goto fail;
        size_t np = config_points(run, cfgs[i], &pts);
        if (!pts && run->npoints)
            goto fail;
        for (size_t k = 0; k < np; k++) {
            cJSON *pj = point_json(run, pts[k], a, cols, ncols);
            if (!pj || !cJSON_AddItemToArray(arr, pj)) {
                cJSON_Delete(pj);
                goto fail;
            }
        }
        free(pts);
        pts = NULL;
    }
    for (size_t i = 0; i < run->ncoll; i++) {
        const pdbx_coll_result *r = &run->coll[i];
        cJSON *c = cJSON_CreateObject();
        if (!c || !cJSON_AddItemToArray(colls, c)) {
            cJSON_Delete(c);
            goto fail;
        }
        if (!cJSON_AddStringToObject(c, "coll", r->coll) || !cJSON_AddNumberToObject(c, "bytes", r->bytes)
            || !cJSON_AddNumberToObject(c, "nranks", r->nranks)
            || !cJSON_AddNumberToObject(c, "ranks_per_node", r->ranks_per_node)
            || !cJSON_AddNumberToObject(c, "time_ms", pdbx_stats_get(&r->time, (pdbx_stat_kind)a->stat))
            || !cJSON_AddNumberToObject(c, "algbw", r->algbw)
            || !cJSON_AddNumberToObject(c, "busbw", r->busbw))
            goto fail;
    }
    if (add_item(root, "configs", configs)) {
        configs = NULL;
        goto fail;
    }
    configs = NULL;
    if (add_item(root, "collectives", colls)) {
        colls = NULL;
        goto fail;
    }
    colls = NULL;
    if (pdbx_cli_print_json(out, root) != 0)
        goto fail;
    cJSON_Delete(root);
    return 0;
fail:
    free(pts);
    cJSON_Delete(configs);
    cJSON_Delete(colls);
    cJSON_Delete(root);
    return -1;
}

/* ---- CSV: one row per point, every column (empty = not measured) ------------------------- */
static int print_csv(const pdbx_run *run, int (*cfgs)[3], size_t ncfg, const show_args *a,
                     const pdbx_cli_col *cols, size_t ncols, FILE *out)
{
    fputs("tp,pp,dp,mbs,status", out);
    for (size_t c = 0; c < ncols; c++) {
        fputc(',', out);
        pdbx_csv_field(out, cols[c].name);
    }
    fputs(",layer,total\n", out);
    for (size_t i = 0; i < ncfg; i++) {
        const pdbx_point **pts = NULL;
        size_t np = config_points(run, cfgs[i], &pts);
        if (!pts && run->npoints)
            return -1;
        for (size_t k = 0; k < np; k++) {
            pdbx_cli_row r;
            pdbx_cli_row_fill(pts[k], cols, ncols, (pdbx_stat_kind)a->stat, &r);
            fprintf(out, "%d,%d,%d,%d,%s", cfgs[i][0], cfgs[i][1], cfgs[i][2], pts[k]->mbs,
                    status_text(run, pts[k]));
            for (size_t c = 0; c < ncols; c++)
                r.valid[c] ? fprintf(out, ",%.17g", r.v[c]) : fputs(",", out);
            r.layer_valid ? fprintf(out, ",%.17g", r.layer) : fputs(",", out);
            r.total_valid ? fprintf(out, ",%.17g\n", r.total) : fputs(",\n", out);
        }
        free(pts);
    }
    return 0;
}

int pdbx_cmd_show(int argc, char **argv)
{
    show_args a = { .stat = PDBX_STAT_MEAN, .format = FMT_TABLE, .attribution = PDBX_CLI_ATTR_PURE };
    char **pos;
    int npos;
    int rc = pdbx_cli_parse(&show_spec, argc, argv, show_opt, &a, &pos, &npos);
    if (rc != 0)
        return pdbx_cli_parse_exit(rc);
    if (a.attribution == PDBX_CLI_ATTR_FASOP && a.stat == PDBX_STAT_STD)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, show_spec.name,
                             "--stat: 'std' cannot be summed into FASOP columns (use --attribution pure)");
    pdbx_store *st = NULL;
    pdbx_run run;
    pdbx_run_init(&run);
    if (!strchr(pos[0], '/') && (rc = pdbx_cli_open_store(show_spec.name, a.store, 0, &st)) != 0)
        return rc;
    if ((rc = pdbx_cli_load_run(show_spec.name, st, pos[0], &run)) != 0)
        goto done;
    int cfgs[256][3];
    size_t ncfg = pdbx_cli_run_configs(&run, a.tp, cfgs, 256);
    if (a.tp > 0 && ncfg == 0) {
        int all[256][3], tps[256];
        size_t n = pdbx_cli_run_configs(&run, 0, all, 256), ntp = 0;
        for (size_t i = 0; i < n; i++) {
            int seen = 0;
            for (size_t j = 0; j < ntp; j++)
                seen |= tps[j] == all[i][0];
            if (!seen)
                tps[ntp++] = all[i][0];
        }
        char list[256];
        pdbx_fmt_int_list(tps, ntp, list, sizeof list);
        rc = pdbx_cli_fail(PDBX_EXIT_USAGE, show_spec.name, "--tp: run %s has no TP %d (has: %s)",
                           run.id, a.tp, list);
        goto done;
    }
    pdbx_cli_col cols[PDBX_CLI_MAX_COLS];
    size_t ncols = pdbx_cli_columns(a.attribution == PDBX_CLI_ATTR_FASOP, cols);
    int err = 0;
    if (a.format == FMT_JSON) {
        err = print_json(&run, cfgs, ncfg, &a, cols, ncols, stdout);
    } else if (a.format == FMT_CSV) {
        err = print_csv(&run, cfgs, ncfg, &a, cols, ncols, stdout);
    } else {
        print_header(&run, &a, stdout);
        for (size_t i = 0; i < ncfg && !err; i++)
            err = print_config_table(&run, cfgs[i], &a, cols, ncols, stdout);
        if (!err && ncfg == 0)
            printf("\nno points in this run\n");
        if (!err)
            err = print_collectives(&run, &a, stdout);
    }
    rc = err ? pdbx_cli_fail(PDBX_EXIT_FAIL, show_spec.name, "out of memory") : PDBX_EXIT_OK;
done:
    pdbx_run_free(&run);
    if (st)
        pdbx_store_close(st);
    return rc;
}
