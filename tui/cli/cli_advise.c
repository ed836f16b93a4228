/* cli_advise.c: `pdbx advise RUN --gpus N --gbs B`: every (TP, PP, DP, MBS) of N GPUs that
 * divides the layers and the global batch, with its estimated training iteration from the
 * run's own cells (engine/advise/advise.h, docs/advise.md), ranked by time, the Pareto front
 * of time vs memory per GPU among those that fit, and every cell the model had to interpolate,
 * extrapolate or could not find; as a table or JSON. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engine/advise/advise.h"
#include "store/util/fmt.h"
#include "tui/cli/cli.h"

static const char *const advise_formats[] = { "table", "json", NULL };

static const pdbx_cli_opt advise_opts[] = {
    PDBX_CLI_OPT_STORE,
    { "gpus", "N", "GPUs (ranks) of the training job (required)" },
    { "gbs", "B", "global batch in sequences (required)" },
    { "nodes", "K", "nodes the GPUs are spread over (default: from the run's GPUs per node)" },
    { "layers", "L", "decoder layers of the job (default: the model's)" },
    { "mbs-max", "M", "largest micro-batch size tried (default: twice the largest measured)" },
    { "stat", "STAT", "statistic of the cells: median (default), mean, min, max" },
    { "recompute", "R", "activation recomputation: none, full, selective or all (default: the run spec's)" },
    { "zero1", "Z", "distributed optimizer (ZeRO-1): off, on or all (both; default: the run spec's)" },
    { "top", "N", "only the N fastest configurations (default: all)" },
    { "format", "FMT", "table (default) or json" },
    { NULL, NULL, NULL },
};

static const pdbx_cli_spec advise_spec = {
    .name = "advise", .args = "RUN", .opts = advise_opts, .min_args = 1, .max_args = 1,
    .about = "Estimates one training iteration for every (TP, PP, DP, MBS) with TP x PP x DP = N\n"
             "that divides the layers and the global batch, from the run's own cells: forward and\n"
             "backward per stage (measured bwd cells, else 2 x forward), 1F1B with its bubble, the\n"
             "TP all-reduces, PP send/recv and the DP gradient all-reduce from the measured\n"
             "collectives at their message size and placement, and the training memory per GPU\n"
             "against the run's GPU. Ranked by time; '*' marks the Pareto front of time vs memory\n"
             "among the configurations that fit; '~' a row with interpolated or extrapolated\n"
             "cells (listed under notes). docs/advise.md states the model.\n" PDBX_CLI_ABOUT_RUN,
};

typedef struct {
    const char *store;
    int gpus, gbs, nodes, layers, mbs_max, stat, format, top;
    unsigned recompute_set, zero1_set;   /* 0: the run spec's */
    int have_gpus, have_gbs;
} advise_args;

/* --recompute none|full|selective|all, --zero1 off|on|all into a set of PDBX_ADV_RECOMPUTE_BIT or
 * PDBX_ADV_ZERO1_BIT (the choice's index is the layout's bit) */
static int layout_set(const char *opt, const char *value, int zero1, unsigned *out, char *err, size_t errlen)
{
    static const char *const recompute[] = { "none", "full", "selective", "all", NULL };   /* pdbx_recompute's order */
    static const char *const zero1s[] = { "off", "on", "all", NULL };
    const int all = zero1 ? 2 : 3;
    int k;
    if (pdbx_cli_choice(opt, value, zero1 ? zero1s : recompute, &k, err, errlen) != 0)
        return -1;
    *out = k == all ? (1u << all) - 1 : 1u << k;
    return 0;
}

static int advise_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err, size_t errlen)
{
    advise_args *a = ctx;
    const char *n = opt->name;
    if (strcmp(n, "store") == 0) {
        a->store = value;
        return 0;
    }
    if (strcmp(n, "gpus") == 0)
        return a->have_gpus = 1, pdbx_cli_int(n, value, 1, PDBX_RUN_MAX_RANKS, &a->gpus, err, errlen);
    if (strcmp(n, "gbs") == 0)
        return a->have_gbs = 1, pdbx_cli_int(n, value, 1, 1 << 24, &a->gbs, err, errlen);
    if (strcmp(n, "nodes") == 0)
        return pdbx_cli_int(n, value, 1, PDBX_RUN_MAX_RANKS, &a->nodes, err, errlen);
    if (strcmp(n, "layers") == 0)
        return pdbx_cli_int(n, value, 1, PDBX_RUN_MAX_LAYERS, &a->layers, err, errlen);
    if (strcmp(n, "mbs-max") == 0)
        return pdbx_cli_int(n, value, 1, 4096, &a->mbs_max, err, errlen);
    if (strcmp(n, "stat") == 0) {
        if (pdbx_cli_stat(n, value, &a->stat, err, errlen) != 0)
            return -1;
        if (a->stat == PDBX_STAT_STD) {
            snprintf(err, errlen, "--stat: 'std' is not a time (allowed: mean, median, min, max)");
            return -1;
        }
        return 0;
    }
    if (strcmp(n, "format") == 0)
        return pdbx_cli_choice(n, value, advise_formats, &a->format, err, errlen);
    if (strcmp(n, "recompute") == 0 || strcmp(n, "zero1") == 0)
        return layout_set(n, value, strcmp(n, "zero1") == 0,
                                   strcmp(n, "zero1") == 0 ? &a->zero1_set : &a->recompute_set, err, errlen);
    if (strcmp(n, "top") == 0)
        return pdbx_cli_int(n, value, 1, 1 << 30, &a->top, err, errlen);
    return 0;
}

/* How many rows have measured backward cells. */
static size_t rows_bwd_measured(const pdbx_advise_result *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->nrows; i++)
        n += r->rows[i].bwd_measured != 0;
    return n;
}

static int all_bwd_measured(const pdbx_advise_result *r)
{
    return r->nrows > 0 && rows_bwd_measured(r) == r->nrows;
}

/* "-", "full", "selective", "zero1", "full+zero1" or "selective+zero1" */
static const char *row_layout(const pdbx_advise_row *w)
{
    static const char *const names[3][2] = { { "-", "zero1" }, { "full", "full+zero1" },
                                             { "selective", "selective+zero1" } };
    const int r = w->recompute >= PDBX_RECOMPUTE_NONE && w->recompute <= PDBX_RECOMPUTE_SELECTIVE ? w->recompute : 0;
    return names[r][w->zero1 != 0];
}

static void print_table(const pdbx_run *run, const pdbx_advise_result *r, size_t shown, FILE *out)
{
    const pdbx_advise_query *q = &r->query;
    pdbx_cli_line(out, "advise run %s: model %s, %d layers, %d GPUs (%d node%s x %d), gbs %d, mbs <= %d, "
                  "stat %s", run->id, run->model.name[0] ? run->model.name : PDBX_NA, q->layers, q->gpus,
                  q->nodes, q->nodes == 1 ? "" : "s", q->gpus_per_node, q->gbs, q->mbs_max,
                  pdbx_stat_name(q->stat));
    size_t nb = rows_bwd_measured(r);
    fprintf(out, "bwd: %s\n", nb == r->nrows ? "measured (the run's backward cells)"
                              : nb == 0 ? "not measured: backward = 2 x forward (FASOP's x3 rule)"
                                        : "measured for some TP degrees, 2 x forward for the others "
                                          "(see notes)");
    fprintf(out, "times: ms per iteration; step = compute + comm + bubble; mem_gb: training memory "
                 "per GPU (the planner's)\n\n");
    /* an "ep" column only when a row has EP > 1, a "layout" one only when a row recomputes or
     * shards its optimizer: a dense run's default table is unchanged */
    int has_ep = 0, has_layout = 0;
    for (size_t i = 0; i < shown; i++) {
        has_ep |= r->rows[i].ep > 1;
        has_layout |= r->rows[i].recompute != 0 || r->rows[i].zero1;
    }
    static const char *const all[] = { "rank", "tp", "pp", "dp", "ep", "mbs", "layout", "num_mb", "step_ms",
                                       "compute_ms", "comm_ms", "bubble_ms", "mem_gb", "fits", "" };
    const char *head[sizeof all / sizeof all[0]];
    size_t ncol = 0;
    for (size_t h = 0; h < sizeof all / sizeof all[0]; h++)
        if ((h != 4 || has_ep) && (h != 6 || has_layout))
            head[ncol++] = all[h];
    pdbx_table *t = pdbx_table_new(ncol);
    if (!t)
        return;
    for (size_t c = 0; c < ncol; c++)
        pdbx_table_header(t, c, head[c], c == ncol - 1 || strcmp(head[c], "layout") == 0 ? PDBX_ALIGN_LEFT
                                                                                          : PDBX_ALIGN_RIGHT);
    for (size_t i = 0; i < shown; i++) {
        const pdbx_advise_row *w = &r->rows[i];
        char ms[4][24];
        size_t c = 0;
        pdbx_table_add_row(t);
        pdbx_table_set(t, c++, "%zu", i + 1);
        pdbx_table_set(t, c++, "%d", w->tp);
        pdbx_table_set(t, c++, "%d", w->pp);
        pdbx_table_set(t, c++, "%d", w->dp);
        if (has_ep)
            pdbx_table_set(t, c++, "%d", w->ep > 1 ? w->ep : 1);
        pdbx_table_set(t, c++, "%d", w->mbs);
        if (has_layout)
            pdbx_table_set(t, c++, "%s", row_layout(w));
        pdbx_table_set(t, c++, "%d", w->num_mb);
        pdbx_table_set(t, c++, "%s", pdbx_fmt_ms(w->step_ms, 1, ms[0], sizeof ms[0]));
        pdbx_table_set(t, c++, "%s", pdbx_fmt_ms(w->compute_ms, 1, ms[1], sizeof ms[1]));
        pdbx_table_set(t, c++, "%s", pdbx_fmt_ms(w->comm_ms, 1, ms[2], sizeof ms[2]));
        pdbx_table_set(t, c++, "%s", pdbx_fmt_ms(w->bubble_ms, 1, ms[3], sizeof ms[3]));
        pdbx_table_set(t, c++, "%.2f", w->mem_gb);
        pdbx_table_set(t, c++, "%s", w->fits ? "yes" : "no");
        pdbx_table_set(t, c, "%s%s", w->pareto ? "*" : "", w->estimated_cells ? "~" : "");
    }
    pdbx_table_print(t, out, "  ");
    pdbx_table_free(t);
    if (shown < r->nrows)
        fprintf(out, "  (%zu of %zu configurations shown: --top)\n", shown, r->nrows);
    fprintf(out, "\n  * Pareto front of step time vs memory per GPU among the configurations that fit\n"
                 "  ~ estimated cells (interpolated or extrapolated: see notes)\n");
    if (r->nnotes) {
        fprintf(out, "\nnotes:\n");
        for (size_t i = 0; i < r->nnotes; i++)
            pdbx_cli_line(out, "  %s", r->notes[i]);
    }
}

static cJSON *row_json(const pdbx_advise_row *w)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    const struct { const char *k; double v; } num[] = {
        { "tp", w->tp }, { "pp", w->pp }, { "dp", w->dp }, { "mbs", w->mbs }, { "num_mb", w->num_mb },
        { "step_ms", w->step_ms }, { "compute_ms", w->compute_ms }, { "comm_ms", w->comm_ms },
        { "bubble_ms", w->bubble_ms }, { "mem_gb", w->mem_gb },
        { "tp_comm_ms", w->tp_comm_ms }, { "pp_comm_ms", w->pp_comm_ms }, { "dp_comm_ms", w->dp_comm_ms },
        { "stage_fwd_ms", w->stage_fwd_ms }, { "stage_bwd_ms", w->stage_bwd_ms },
        { "optimizer_ms", w->optimizer_ms },
        { "loss_ms", w->loss_ms }, { "recompute_ms", w->recompute_ms },
        { "stage_tp_comm_ms", w->stage_tp_comm_ms }, { "slowest_stage", w->slowest_stage },
        { "tp_allreduce_ms", w->tp_allreduce_ms }, { "p2p_ms", w->p2p_ms },
        { "tp_msg_bytes", w->tp_msg_bytes }, { "pp_msg_bytes", w->pp_msg_bytes },
        { "dp_msg_bytes", w->dp_msg_bytes }, { "estimated_cells", w->estimated_cells },
    };
    int ok = 1;
    for (size_t i = 0; i < sizeof num / sizeof num[0] && ok; i++)
        ok = cJSON_AddNumberToObject(o, num[i].k, isfinite(num[i].v) ? num[i].v : 0) != NULL;
    if (ok && w->ep > 1)   /* only with EP, as pdbx show's configs: a dense run's JSON is unchanged */
        ok = cJSON_AddNumberToObject(o, "ep", w->ep) && cJSON_AddNumberToObject(o, "ep_comm_ms", w->ep_comm_ms)
             && cJSON_AddNumberToObject(o, "stage_ep_comm_ms", w->stage_ep_comm_ms);
    if (ok && w->edp_msg_bytes > 0)   /* a MoE model's expert gradients (in dp_comm_ms) */
        ok = cJSON_AddNumberToObject(o, "edp_comm_ms", w->edp_comm_ms)
             && cJSON_AddNumberToObject(o, "edp_msg_bytes", w->edp_msg_bytes);
    if (ok)
        ok = cJSON_AddStringToObject(o, "recompute", pdbx_recompute_name((pdbx_recompute)w->recompute))
             && cJSON_AddBoolToObject(o, "zero1", w->zero1);
    if (ok)
        ok = cJSON_AddBoolToObject(o, "fits", w->fits) && cJSON_AddBoolToObject(o, "pareto", w->pareto)
             && cJSON_AddBoolToObject(o, "bwd_measured", w->bwd_measured)
             && (w->note[0] ? cJSON_AddStringToObject(o, "note", w->note) != NULL
                            : cJSON_AddNullToObject(o, "note") != NULL);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int print_json(const pdbx_run *run, const pdbx_advise_result *r, size_t shown, FILE *out)
{
    cJSON *root = cJSON_CreateObject(), *q = cJSON_CreateObject(), *rows = cJSON_CreateArray(),
          *notes = cJSON_CreateArray();
    int ok = root && q && rows && notes;
    if (ok) {
        cJSON_AddItemToObject(root, "query", q);
        cJSON_AddItemToObject(root, "rows", rows);
        cJSON_AddItemToObject(root, "notes", notes);
    } else {
        cJSON_Delete(q);
        cJSON_Delete(rows);
        cJSON_Delete(notes);
    }
    const pdbx_advise_query *rq = &r->query;
    ok = ok && cJSON_AddStringToObject(root, "run", run->id) && cJSON_AddNumberToObject(q, "gpus", rq->gpus)
         && cJSON_AddNumberToObject(q, "gbs", rq->gbs) && cJSON_AddNumberToObject(q, "nodes", rq->nodes)
         && cJSON_AddNumberToObject(q, "gpus_per_node", rq->gpus_per_node)
         && cJSON_AddNumberToObject(q, "layers", rq->layers) && cJSON_AddNumberToObject(q, "mbs_max", rq->mbs_max)
         && cJSON_AddStringToObject(q, "stat", pdbx_stat_name(rq->stat))
         && cJSON_AddBoolToObject(root, "bwd_measured", all_bwd_measured(r))
         && cJSON_AddNumberToObject(root, "rows_total", (double)r->nrows);
    for (size_t i = 0; ok && i < shown; i++) {
        cJSON *o = row_json(&r->rows[i]);
        ok = o && cJSON_AddItemToArray(rows, o);
    }
    for (size_t i = 0; ok && i < r->nnotes; i++) {
        cJSON *s = cJSON_CreateString(r->notes[i]);
        ok = s && cJSON_AddItemToArray(notes, s);
    }
    if (!ok) {
        cJSON_Delete(root);
        return -1;
    }
    return pdbx_cli_emit_json(out, root);
}

int pdbx_cmd_advise(int argc, char **argv)
{
    advise_args a = { .stat = PDBX_STAT_MEDIAN, .format = 0 };
    char **pos;
    int npos;
    int rc = pdbx_cli_parse(&advise_spec, argc, argv, advise_opt, &a, &pos, &npos);
    if (rc != 0)
        return pdbx_cli_parse_exit(rc);
    if (!a.have_gpus)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, advise_spec.name, "--gpus: missing (allowed: 1..%d GPUs)",
                             PDBX_RUN_MAX_RANKS);
    if (!a.have_gbs)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, advise_spec.name, "--gbs: missing (allowed: 1..%d sequences)",
                             1 << 24);
    if (a.nodes && a.gpus % a.nodes != 0)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, advise_spec.name,
                             "--nodes: %d does not divide --gpus %d (allowed: a divisor of %d)", a.nodes,
                             a.gpus, a.gpus);
    pdbx_store *st = NULL;
    pdbx_run run;
    pdbx_run_init(&run);
    if (!strchr(pos[0], '/') && (rc = pdbx_cli_open_store(advise_spec.name, a.store, 0, &st)) != 0)
        return rc;
    pdbx_advise_result res = { 0 };
    if ((rc = pdbx_cli_load_run(advise_spec.name, st, pos[0], &run)) != 0)
        goto done;
    pdbx_advise_query q;
    pdbx_advise_query_defaults(&q);
    q.gpus = a.gpus, q.gbs = a.gbs, q.nodes = a.nodes, q.layers = a.layers, q.mbs_max = a.mbs_max;
    q.stat = (pdbx_stat_kind)a.stat;
    q.recompute_set = a.recompute_set, q.zero1_set = a.zero1_set;
    char err[512];
    if (pdbx_advise(&run, &q, &res, err, sizeof err) != 0) {
        /* the query's fields are the options (gpus -> --gpus); the run's are about RUN */
        int opt = strncmp(err, "run:", 4) != 0 && strncmp(err, "out of memory", 13) != 0;
        rc = pdbx_cli_fail(strcmp(err, "out of memory") == 0 ? PDBX_EXIT_FAIL : PDBX_EXIT_USAGE,
                           advise_spec.name, "%s%s", opt ? "--" : "", err);
        goto done;
    }
    if (res.nrows == 0) {
        pdbx_cli_fail(PDBX_EXIT_USAGE, advise_spec.name,
                      "--gpus: %d: no configuration can be estimated from run %s (see the notes)",
                      a.gpus, run.id);
        for (size_t i = 0; i < res.nnotes; i++)
            pdbx_cli_line(stderr, "  %s", res.notes[i]);
        rc = PDBX_EXIT_USAGE;
        goto done;
    }
    size_t shown = a.top > 0 && (size_t)a.top < res.nrows ? (size_t)a.top : res.nrows;
    if (a.format == 1) {
        if (print_json(&run, &res, shown, stdout) != 0)
            rc = pdbx_cli_fail(PDBX_EXIT_FAIL, advise_spec.name, "out of memory");
    } else {
        print_table(&run, &res, shown, stdout);
    }
done:
    pdbx_advise_free(&res);
    pdbx_run_free(&run);
    if (st)
        pdbx_store_close(st);
    return rc;
}
