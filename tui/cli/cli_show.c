/* cli_show.c: `pdbx show RUN`: per parallel config a table MBS x ops (ms) of one pass (fwd,
 * bwd or both: store/profiledb.h pdbx_point_cell_pass) with the measured layer and total cells
 * (store/runtable.h, the table every view reads) and each point's status, noisy cells marked
 * '!', the measured bwd/fwd ratio when the run has backward cells, each cell's samples, CI, CV
 * and provenance (--stats), whether the run was measured under load, the point's parallelism
 * traffic (comm), its predicted profile memory beside the measured peak, and the collectives
 * sweep; as an aligned table, JSON or CSV. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "store/events.h"
#include "store/validation.h"
#include "tui/cli/cli.h"
#include "store/util/fmt.h"

static const pdbx_cli_opt show_opts[] = {
    PDBX_CLI_OPT_STORE,
    { "tp", "N", "only the configs with this TP degree" },
    PDBX_CLI_OPT_STAT,
    { "format", "FMT", "table (default), json or csv (csv: the op table only)" },
    PDBX_CLI_OPT_ATTRIBUTION,
    PDBX_CLI_OPT_PASS,
    { "stats", NULL, "add per config a table of each cell's samples (n), 95% CI and CV (% of the "
                     "mean) and where it was measured" },
    { NULL, NULL, NULL },
};

static const pdbx_cli_spec show_spec = {
    .name = "show", .args = "RUN", .opts = show_opts, .min_args = 1, .max_args = 1,
    .about = "Prints a run: per parallel config (TP, PP, DP) a table of MBS x ops in ms per\n"
             "execution on one TP rank (the max across TP ranks), with 'layer' (one layer's\n"
             "forward) and 'total' (the whole step's forward), both measured by the engine (N/A\n"
             "in runs recorded without them, never a sum of the ops), each point's status (ok,\n"
             "oom, predicted_oom, skipped ...), the comm cells, each point's predicted profile\n"
             "memory (what the engine allocates on one rank) beside its measured peak, and the\n"
             "collectives. A value marked '!' is noisy (CV > 5%). Runs measured with passes\n"
             "fwd,bwd also print the measured bwd/fwd ratio per op; --pass picks the cells.\n"
             PDBX_CLI_ABOUT_RUN,
};


typedef struct {
    const char *store;
    int tp, stat, format, attribution, pass, stats;
    /* the run's `pdbx validate` records (store/validation.h), oldest first */
    const pdbx_validation *vals;
    size_t nvals, vals_skipped;
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
        return pdbx_cli_choice(opt->name, value, pdbx_cli_formats, &a->format, err, errlen);
    if (strcmp(opt->name, "attribution") == 0)
        return pdbx_cli_choice(opt->name, value, pdbx_cli_attributions, &a->attribution, err, errlen);
    if (strcmp(opt->name, "pass") == 0)
        return pdbx_cli_pass(opt->name, value, &a->pass, err, errlen);
    if (strcmp(opt->name, "stats") == 0)
        a->stats = 1;
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

/* ---- table ----------------------------------------------------------------------------- */
/* Where the ranks ran, from run_start's env.placement: "ranks 0 vm/0 gpu0, 1 vm/1 gpu1"
 * (rank host/local rank, device index when there is one). Nothing for runs without it. */
static void print_placement(const pdbx_run *run, FILE *out)
{
    size_t cap = run->world_size > 0 ? (size_t)run->world_size : 1;
    pdbx_ev_rank_place *pl = calloc(cap, sizeof *pl);
    size_t n = pl ? pdbx_event_env_placement(run->env, pl, cap) : 0;
    size_t len = 64 + n * 96, used = 0;
    char *line = n ? malloc(len) : NULL;
    if (line) {
        used += (size_t)snprintf(line, len, "ranks (host/local rank):");
        for (size_t i = 0; i < n && used < len; i++) {
            char dev[24] = "";
            if (pl[i].device >= 0)
                snprintf(dev, sizeof dev, " gpu%d", pl[i].device);
            used += (size_t)snprintf(line + used, len - used, "%s %zu %s/%d%s", i ? "," : "", i,
                                     pl[i].host, pl[i].local_rank, dev);
        }
        pdbx_cli_line(out, "%s", line);
    }
    free(line);
    free(pl);
}

/* How the GEMMs ran, from run_start's env (fp32_math, gemm_api) and spec (fused_projections):
 * "gemm: fp32 math ieee, api openblas, projections fused (...)". Nothing for runs recorded
 * before these were (a run file is never rewritten: its env is what it is). */
static void print_gemm_modes(const pdbx_run *run, FILE *out)
{
    const cJSON *math = run->env ? cJSON_GetObjectItemCaseSensitive(run->env, "fp32_math") : NULL;
    const cJSON *api = run->env ? cJSON_GetObjectItemCaseSensitive(run->env, "gemm_api") : NULL;
    const cJSON *fused = run->spec ? cJSON_GetObjectItemCaseSensitive(run->spec, "fused_projections") : NULL;
    const char *m = math && cJSON_IsString(math) ? math->valuestring : NULL;
    const char *g = api && cJSON_IsString(api) ? api->valuestring : NULL;
    if (!m && !g && !cJSON_IsTrue(fused))
        return;
    pdbx_cli_line(out, "gemm: fp32 math %s, api %s, projections %s", m ? m : PDBX_NA, g ? g : PDBX_NA,
                  cJSON_IsTrue(fused) ? "fused (QKV, fc1; times split by FLOP share)" : "separate");
}

static void print_header(const pdbx_run *run, const show_args *a, FILE *out)
{
    char created[32];
    pdbx_fmt_time(run->created, created, sizeof created);
    /* Every string here comes from the run file: pdbx_cli_line makes each line safe. */
    pdbx_cli_line(out, "run %s  %s  created %s%s%s%s", run->id, pdbx_run_status_name(run->status),
                  created, run->end_reason[0] ? "  (" : "", run->end_reason,
                  run->end_reason[0] ? ")" : "");
    pdbx_cli_line(out, "model %s%s%s%s, %d of %d layers profiled, seq_len %d, %s",
                  run->model.name[0] ? run->model.name : PDBX_NA, run->model.tag[0] ? " (" : "",
                  run->model.tag, run->model.tag[0] ? ")" : "", run->layers_profiled,
                  run->model.layers, run->seq_len, run->dtype[0] ? run->dtype : PDBX_NA);
    char rep[160];
    pdbx_run_repetition_text(run, rep, sizeof rep);
    pdbx_cli_line(out, "backend %s, gpu %s, device %s, %d ranks (%d per node)",
                  run->backend[0] ? run->backend : PDBX_NA, run->gpu[0] ? run->gpu : PDBX_NA,
                  run->device_name[0] ? run->device_name : PDBX_NA, run->world_size,
                  run->ranks_per_node);
    pdbx_cli_line(out, "repetition %s", rep);
    print_gemm_modes(run, out);
    if (run->launcher[0])
        pdbx_cli_line(out, "launched %s: %s", run->launcher, run->command[0] ? run->command : PDBX_NA);
    print_placement(run, out);
    char load[256];
    if (pdbx_run_load_text(run, load, sizeof load))
        fprintf(out, "%s\n", load);
    fprintf(out, "times: ms per execution on one TP rank (max across TP ranks), stat %s, "
                 "attribution %s, pass %s%s\n",
            pdbx_stat_name((pdbx_stat_kind)a->stat), pdbx_cli_attributions[a->attribution],
            pdbx_pass_sel_name((pdbx_pass_sel)a->pass),
            a->pass == PDBX_PASS_SEL_BOTH ? " (fwd + bwd per op; no layer/total: they are forward)"
            : a->pass == PDBX_PASS_SEL_BWD ? " (no layer/total: they are forward)" : "");
}

/* The op table of one config: mbs, status, the columns, layer, total. NULL out of memory. */
static pdbx_table *op_table(const pdbx_run *run, const pdbx_rt_config *cfg, const show_args *a,
                            const pdbx_rt_col *cols, size_t ncols, int *any_noisy)
{
    pdbx_table *t = pdbx_table_new(ncols + 4);       /* mbs, status, ops..., layer, total */
    int any[PDBX_RT_MAX_COLS] = { 0 };
    int bad = !t || pdbx_table_header(t, 0, "mbs", PDBX_ALIGN_RIGHT)
              || pdbx_table_header(t, 1, "status", PDBX_ALIGN_LEFT)
              || pdbx_table_header(t, 2 + ncols, "layer", PDBX_ALIGN_RIGHT)
              || pdbx_table_header(t, 3 + ncols, "total", PDBX_ALIGN_RIGHT);
    for (size_t c = 0; c < ncols && !bad; c++)
        bad = pdbx_table_header(t, 2 + c, cols[c].name, PDBX_ALIGN_RIGHT);
    for (size_t i = 0; i < cfg->npoints && !bad; i++) {
        const pdbx_rt_point *p = &cfg->points[i];
        pdbx_cli_row r;
        char buf[64];
        pdbx_cli_row_fill(p, cols, ncols, (pdbx_stat_kind)a->stat, &r);
        bad = pdbx_table_add_row(t) || pdbx_table_set(t, 0, "%d", p->mbs)
              || pdbx_table_set(t, 1, "%s", status_text(run, p->point));
        for (size_t c = 0; c < ncols && !bad; c++) {
            any[c] |= r.valid[c];
            *any_noisy |= r.valid[c] && r.noisy[c];
            bad = pdbx_table_set(t, 2 + c, "%s%s", pdbx_fmt_ms(r.v[c], r.valid[c], buf, sizeof buf),
                                 r.valid[c] && r.noisy[c] ? "!" : "");
        }
        bad = bad
              || pdbx_table_set(t, 2 + ncols, "%s", pdbx_fmt_ms(r.layer, r.layer_valid, buf, sizeof buf))
              || pdbx_table_set(t, 3 + ncols, "%s", pdbx_fmt_ms(r.total, r.total_valid, buf, sizeof buf));
    }
    if (bad) {
        pdbx_table_free(t);
        return NULL;
    }
    /* Ops never measured in this config (e.g. TP all-reduces at TP 1) would be N/A columns. */
    for (size_t c = 0; c < ncols; c++)
        pdbx_table_hide(t, 2 + c, !any[c]);
    /* layer and total are forward sums: N/A in every row of a bwd or both table */
    pdbx_table_hide(t, 2 + ncols, cfg->pass != PDBX_PASS_SEL_FWD);
    pdbx_table_hide(t, 3 + ncols, cfg->pass != PDBX_PASS_SEL_FWD);
    return t;
}

/* The measured bwd/fwd ratio per op (the stat's): mbs x the ops measured in both passes. NULL
 * out of memory; no rows when no op has both. */
static pdbx_table *ratio_table(const pdbx_rt_config *cfg, const show_args *a)
{
    int any[PDBX_OP_COUNT] = { 0 };
    for (size_t i = 0; i < cfg->npoints; i++)
        for (int op = 0; op < PDBX_OP_COUNT; op++)
            any[op] |= isfinite(pdbx_point_bwd_ratio(cfg->points[i].point, (pdbx_op)op, (pdbx_stat_kind)a->stat));
    pdbx_table *t = pdbx_table_new(1 + PDBX_OP_COUNT);
    int bad = !t || pdbx_table_header(t, 0, "mbs", PDBX_ALIGN_RIGHT);
    for (int op = 0; op < PDBX_OP_COUNT && !bad; op++) {
        bad = pdbx_table_header(t, 1 + (size_t)op, pdbx_op_name((pdbx_op)op), PDBX_ALIGN_RIGHT);
        pdbx_table_hide(t, 1 + (size_t)op, !any[op]);
    }
    for (size_t i = 0; i < cfg->npoints && !bad; i++) {
        const pdbx_point *p = cfg->points[i].point;
        int row = 0;
        for (int op = 0; op < PDBX_OP_COUNT && !bad; op++) {
            double r = pdbx_point_bwd_ratio(p, (pdbx_op)op, (pdbx_stat_kind)a->stat);
            if (!any[op])
                continue;
            if (!row++)
                bad = pdbx_table_add_row(t) || pdbx_table_set(t, 0, "%d", p->mbs);
            char buf[32];
            bad = bad || pdbx_table_set(t, 1 + (size_t)op, "%s", pdbx_fmt_ratio(r, isfinite(r), buf, sizeof buf));
        }
    }
    if (bad) {
        pdbx_table_free(t);
        return NULL;
    }
    return t;
}

/* --stats: one row per measured cell of the table's pass: samples, mean, 95% CI and CV as a
 * percentage of the mean, the noisy mark and where the samples came from. NULL out of memory. */
static pdbx_table *stats_table(const pdbx_rt_config *cfg, int *any_noisy)
{
    static const char *const st[] = { "mbs", "op", "n", "mean", "+-ci95", "cv", "source" };
    pdbx_table *t = pdbx_table_new(7);
    int bad = !t;
    for (size_t c = 0; c < 7 && !bad; c++)
        bad = pdbx_table_header(t, c, st[c], c == 1 || c == 6 ? PDBX_ALIGN_LEFT : PDBX_ALIGN_RIGHT);
    for (size_t i = 0; i < cfg->npoints && !bad; i++) {
        const pdbx_rt_point *p = &cfg->points[i];
        for (int op = 0; op < PDBX_OP_COUNT && !bad; op++) {
            const pdbx_rt_cell *c = &p->op[op];
            if (!c->valid)
                continue;
            char m[32], ci[32], cv[32], src[96];
            int noisy = pdbx_rt_cell_noisy(c);
            *any_noisy |= noisy;
            pdbx_rt_cell_source(c, src, sizeof src);
            bad = pdbx_table_add_row(t) || pdbx_table_set(t, 0, "%d", p->mbs)
                  || pdbx_table_set(t, 1, "%s", pdbx_op_name((pdbx_op)op))
                  || pdbx_table_set(t, 2, "%lld", (long long)c->stats.count)
                  || pdbx_table_set(t, 3, "%s", pdbx_fmt_ms(c->stats.mean, 1, m, sizeof m))
                  || pdbx_table_set(t, 4, "%s", pdbx_fmt_pct(pdbx_stats_rel_ci(&c->stats), ci, sizeof ci))
                  || pdbx_table_set(t, 5, "%s%s", pdbx_fmt_pct(pdbx_stats_cv(&c->stats), cv, sizeof cv),
                                    noisy ? "!" : "")
                  || pdbx_table_set(t, 6, "%s", src[0] ? src : "here");
        }
    }
    if (bad) {
        pdbx_table_free(t);
        return NULL;
    }
    return t;
}

/* The point's parallelism traffic, long format: one row per (MBS, kind). NULL out of memory. */
static pdbx_table *comm_table(const pdbx_rt_config *cfg, const show_args *a)
{
    static const char *const ct[] = { "mbs", "comm", "size", "ranks", "time_ms", "algbw", "busbw" };
    pdbx_table *t = pdbx_table_new(7);
    int bad = !t;
    for (size_t c = 0; c < 7 && !bad; c++)
        bad = pdbx_table_header(t, c, ct[c], c == 1 ? PDBX_ALIGN_LEFT : PDBX_ALIGN_RIGHT);
    for (size_t i = 0; i < cfg->npoints && !bad; i++) {
        for (int k = 0; k < PDBX_RT_NCOMM && !bad; k++) {
            const pdbx_comm_cell *cc = cfg->points[i].comm[k];
            if (!cc->valid)
                continue;
            char sz[32], tm[32], ab[32], bb[32];
            double ms = pdbx_stats_get(&cc->time, (pdbx_stat_kind)a->stat);
            bad = pdbx_table_add_row(t) || pdbx_table_set(t, 0, "%d", cfg->points[i].mbs)
                  || pdbx_table_set(t, 1, "%s", pdbx_rt_comm_name(k))
                  || pdbx_table_set(t, 2, "%s", pdbx_fmt_size(cc->bytes, sz, sizeof sz))
                  || pdbx_table_set(t, 3, "%d", cc->group_size)
                  || pdbx_table_set(t, 4, "%s", pdbx_fmt_ms(ms, 1, tm, sizeof tm))
                  || pdbx_table_set(t, 5, "%s", pdbx_fmt_gbs(cc->algbw, 1, ab, sizeof ab))
                  || pdbx_table_set(t, 6, "%s", pdbx_fmt_gbs(cc->busbw, 1, bb, sizeof bb));
        }
    }
    if (bad) {
        pdbx_table_free(t);
        return NULL;
    }
    return t;
}

/* Per point: the predicted profile memory (what the engine allocates on one rank) beside the
 * measured peak (max over ranks) and their ratio; N/A where one is not recorded. NULL out of
 * memory; no rows when the run recorded neither (runs from before, or no point measured). */
static pdbx_table *memory_table(const pdbx_rt_config *cfg)
{
    static const char *const mt[] = { "mbs", "predicted", "measured", "measured/predicted" };
    pdbx_table *t = pdbx_table_new(4);
    int bad = !t;
    for (size_t c = 0; c < 4 && !bad; c++)
        bad = pdbx_table_header(t, c, mt[c], PDBX_ALIGN_RIGHT);
    for (size_t i = 0; i < cfg->npoints && !bad; i++) {
        const pdbx_point *p = cfg->points[i].point;
        int have_pred = isfinite(p->profile_mem_bytes), have_peak = isfinite(p->mem_peak_bytes);
        if (!have_pred && !have_peak)
            continue;
        char pr[32], pk[32];
        bad = pdbx_table_add_row(t) || pdbx_table_set(t, 0, "%d", p->mbs)
              || pdbx_table_set(t, 1, "%s", have_pred ? pdbx_fmt_size(p->profile_mem_bytes, pr, sizeof pr) : "N/A")
              || pdbx_table_set(t, 2, "%s", have_peak ? pdbx_fmt_size(p->mem_peak_bytes, pk, sizeof pk) : "N/A");
        if (!bad && have_pred && have_peak && p->profile_mem_bytes > 0)
            bad = pdbx_table_set(t, 3, "%.3f", p->mem_peak_bytes / p->profile_mem_bytes);
        else if (!bad)
            bad = pdbx_table_set(t, 3, "N/A");
    }
    if (bad) {
        pdbx_table_free(t);
        return NULL;
    }
    return t;
}

static int print_config_table(const pdbx_run *run, const pdbx_rt_config *cfg, const show_args *a,
                              const pdbx_rt_col *cols, size_t ncols, FILE *out)
{
    int noisy = 0;
    pdbx_table *t = op_table(run, cfg, a, cols, ncols, &noisy);
    if (!t)
        return -1;
    fprintf(out, "\nTP %d  PP %d  DP %d\n", cfg->tp, cfg->pp, cfg->dp);
    pdbx_table_print(t, out, "  ");
    pdbx_table_free(t);
    if (noisy)
        fprintf(out, "  %s\n", PDBX_CLI_NOISY_LEGEND);
    if (pdbx_run_has_bwd(run)) {
        if (!(t = ratio_table(cfg, a)))
            return -1;
        if (pdbx_table_rows(t) > 0) {
            fprintf(out, "  bwd/fwd (measured, %s):\n", pdbx_stat_name((pdbx_stat_kind)a->stat));
            pdbx_table_print(t, out, "  ");
        }
        pdbx_table_free(t);
    }
    if (a->stats) {
        noisy = 0;
        if (!(t = stats_table(cfg, &noisy)))
            return -1;
        fprintf(out, "  cells (pass %s): samples n, 95%% CI and CV as %% of the mean, source:\n",
                pdbx_pass_sel_name((pdbx_pass_sel)a->pass));
        pdbx_table_print(t, out, "  ");
        pdbx_table_free(t);
        if (noisy)
            fprintf(out, "  %s\n", PDBX_CLI_NOISY_LEGEND);
    }
    for (size_t i = 0; i < cfg->npoints; i++) {
        const pdbx_point *p = cfg->points[i].point;
        if (p->message && p->message[0])
            pdbx_cli_line(out, "  MBS %d %s: %s", p->mbs, status_text(run, p), p->message);
    }
    if (!(t = comm_table(cfg, a)))
        return -1;
    if (pdbx_table_rows(t) > 0) {
        fprintf(out, "  comm (GB/s from the mean time):\n");
        pdbx_table_print(t, out, "  ");
    }
    pdbx_table_free(t);
    if (!(t = memory_table(cfg)))
        return -1;
    if (pdbx_table_rows(t) > 0) {
        fprintf(out, "  memory per rank (predicted profile memory; measured peak, max over ranks):\n");
        pdbx_table_print(t, out, "  ");
    }
    pdbx_table_free(t);
    return 0;
}

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

static int print_inference(const pdbx_run *run, const show_args *a, FILE *out)
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

static int print_collectives(const pdbx_run *run, const show_args *a, FILE *out)
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

/* The time and bandwidths every comm cell and collective carries; 0 or -1 out of memory. */
static int add_timing(cJSON *c, const pdbx_stats *time, pdbx_stat_kind stat, double algbw,
                      double busbw)
{
    return !cJSON_AddNumberToObject(c, "time_ms", pdbx_stats_get(time, stat))
           || !cJSON_AddNumberToObject(c, "algbw", algbw) || !cJSON_AddNumberToObject(c, "busbw", busbw)
               ? -1 : 0;
}

static cJSON *comm_json(const pdbx_rt_point *p, pdbx_stat_kind stat)
{
    cJSON *comm = cJSON_CreateObject();
    for (int k = 0; comm && k < PDBX_RT_NCOMM; k++) {
        const pdbx_comm_cell *cc = p->comm[k];
        if (!cc->valid)
            continue;
        cJSON *c = cJSON_CreateObject();
        if (add_item(comm, pdbx_rt_comm_name(k), c) || !cJSON_AddNumberToObject(c, "bytes", cc->bytes)
            || !cJSON_AddNumberToObject(c, "group_size", cc->group_size)
            || add_timing(c, &cc->time, stat, cc->algbw, cc->busbw)) {
            cJSON_Delete(comm);
            return NULL;
        }
    }
    return comm;
}

/* Per measured op cell of the table's pass: n, ci95 (ms, null when unknown), cv, rel_ci,
 * noisy, and reused_from / shared_with when the samples came from elsewhere. */
static cJSON *cells_json(const pdbx_rt_point *p)
{
    cJSON *cells = cJSON_CreateObject();
    for (int op = 0; cells && op < PDBX_OP_COUNT; op++) {
        const pdbx_rt_cell *c = &p->op[op];
        if (!c->valid)
            continue;
        cJSON *o = cJSON_CreateObject();
        if (add_item(cells, pdbx_op_name((pdbx_op)op), o)
            || !cJSON_AddNumberToObject(o, "n", (double)c->stats.count)
            || add_item(o, "ci95", num_or_null(c->stats.ci95, 1))
            || add_item(o, "cv", num_or_null(pdbx_stats_cv(&c->stats), 1))
            || add_item(o, "rel_ci", num_or_null(pdbx_stats_rel_ci(&c->stats), 1))
            || !cJSON_AddBoolToObject(o, "noisy", pdbx_rt_cell_noisy(c))
            || (c->reused && !cJSON_AddNumberToObject(o, "reused_from", c->source_point))
            || (c->shared && !cJSON_AddStringToObject(o, "shared_with", pdbx_op_name(c->shared_op)))
            || (c->fused && (!cJSON_AddStringToObject(o, "fused_with", pdbx_op_name(c->fused_op))
                             || !cJSON_AddNumberToObject(o, "fused_share", c->fused_share)))) {
            cJSON_Delete(cells);
            return NULL;
        }
    }
    return cells;
}

/* The measured bwd/fwd ratio of each op measured in both passes. */
static cJSON *ratio_json(const pdbx_point *p, pdbx_stat_kind stat)
{
    cJSON *o = cJSON_CreateObject();
    for (int op = 0; o && op < PDBX_OP_COUNT; op++) {
        double r = pdbx_point_bwd_ratio(p, (pdbx_op)op, stat);
        if (isfinite(r) && !cJSON_AddNumberToObject(o, pdbx_op_name((pdbx_op)op), r)) {
            cJSON_Delete(o);
            return NULL;
        }
    }
    return o;
}

/* point_end's noise as recorded (null when the point recorded none). */
static cJSON *noise_json(const pdbx_point_noise *n)
{
    if (!n->valid)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    int bad = !o || !cJSON_AddBoolToObject(o, "busy", n->busy) || !cJSON_AddNumberToObject(o, "cores", n->cores)
              || add_item(o, "load1", num_or_null(n->load1, 1))
              || add_item(o, "other_busy", num_or_null(n->other_busy, 1))
              || add_item(o, "steal_pct", num_or_null(n->steal_pct, 1));
    if (!bad && n->gpu_valid) {
        char why[256];
        pdbx_throttle_text(n->throttle_reasons, why, sizeof why);
        bad = add_item(o, "sm_clock_min_mhz", num_or_null(n->sm_clock_min_mhz, 1))
              || add_item(o, "sm_clock_max_mhz", num_or_null(n->sm_clock_max_mhz, 1))
              || add_item(o, "temp_max_c", num_or_null(n->temp_max_c, 1))
              || !cJSON_AddNumberToObject(o, "throttle_reasons", n->throttle_reasons)
              || !cJSON_AddStringToObject(o, "throttle", why);
    }
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *point_json(const pdbx_run *run, const pdbx_rt_point *p, const show_args *a,
                         const pdbx_rt_col *cols, size_t ncols)
{
    pdbx_cli_row r;
    pdbx_cli_row_fill(p, cols, ncols, (pdbx_stat_kind)a->stat, &r);
    cJSON *o = cJSON_CreateObject(), *cells = cJSON_CreateObject();
    int bad = !o || add_item(o, "ms", cells)
              || !cJSON_AddNumberToObject(o, "mbs", p->mbs)
              || !cJSON_AddStringToObject(o, "status", status_text(run, p->point))
              || (p->point->message && add_item(o, "message", cJSON_CreateString(p->point->message)));
    for (size_t c = 0; c < ncols && !bad; c++)
        bad = add_item(cells, cols[c].name, num_or_null(r.v[c], r.valid[c]));
    bad = bad || add_item(o, "comm", comm_json(p, (pdbx_stat_kind)a->stat))
          || add_item(o, "layer", num_or_null(r.layer, r.layer_valid))
          || add_item(o, "total", num_or_null(r.total, r.total_valid))
          || add_item(o, "profile_mem_bytes", num_or_null(p->point->profile_mem_bytes, 1))
          || add_item(o, "mem_peak_bytes", num_or_null(p->point->mem_peak_bytes, 1))
          || add_item(o, "mem_base_bytes", num_or_null(p->point->mem_base_bytes, 1))
          || add_item(o, "cells", cells_json(p))
          || (pdbx_run_has_bwd(run) && add_item(o, "bwd_fwd_ratio", ratio_json(p->point, (pdbx_stat_kind)a->stat)))
          || add_item(o, "setup_s", num_or_null(p->point->setup_s, 1))
          || add_item(o, "noise", noise_json(&p->point->noise));
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *config_json(const pdbx_run *run, const pdbx_rt_config *cfg, const show_args *a,
                          const pdbx_rt_col *cols, size_t ncols)
{
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    int bad = !o || add_item(o, "points", arr) || !cJSON_AddNumberToObject(o, "tp", cfg->tp)
              || !cJSON_AddNumberToObject(o, "pp", cfg->pp)
              || !cJSON_AddNumberToObject(o, "dp", cfg->dp);
    for (size_t k = 0; k < cfg->npoints && !bad; k++) {
        cJSON *pj = point_json(run, &cfg->points[k], a, cols, ncols);
        bad = !pj || !cJSON_AddItemToArray(arr, pj);
        if (bad)
            cJSON_Delete(pj);
    }
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *collectives_json(const pdbx_run *run, pdbx_stat_kind stat)
{
    cJSON *colls = cJSON_CreateArray();
    for (size_t i = 0; colls && i < run->ncoll; i++) {
        const pdbx_coll_result *r = &run->coll[i];
        cJSON *c = cJSON_CreateObject();
        if (!c || !cJSON_AddItemToArray(colls, c)) {
            cJSON_Delete(c);
            cJSON_Delete(colls);
            return NULL;
        }
        if (!cJSON_AddStringToObject(c, "coll", r->coll)
            || !cJSON_AddNumberToObject(c, "bytes", r->bytes)
            || !cJSON_AddNumberToObject(c, "nranks", r->nranks)
            || !cJSON_AddNumberToObject(c, "ranks_per_node", r->ranks_per_node)
            || !cJSON_AddBoolToObject(c, "in_place", r->in_place)
            || (r->nodes > 0 && (!cJSON_AddNumberToObject(c, "nodes", r->nodes)
                                 || !cJSON_AddBoolToObject(c, "spans_nodes", r->spans_nodes)))
            || add_timing(c, &r->time, stat, r->algbw, r->busbw)) {
            cJSON_Delete(colls);
            return NULL;
        }
    }
    return colls;
}

static int print_json(const pdbx_runtable *t, const show_args *a, const pdbx_rt_col *cols,
                      size_t ncols, FILE *out)
{
    const pdbx_run *run = t->run;
    cJSON *root = cJSON_CreateObject(), *configs = cJSON_CreateArray();
    int bad = !root || add_item(root, "configs", configs)
              || !cJSON_AddStringToObject(root, "id", run->id)
              || !cJSON_AddStringToObject(root, "status", pdbx_run_status_name(run->status))
              || !cJSON_AddStringToObject(root, "reason", run->end_reason)
              || !cJSON_AddStringToObject(root, "cause", pdbx_end_cause_name((pdbx_end_cause)run->end_cause))
              || !cJSON_AddStringToObject(root, "in_flight", pdbx_in_flight_name((pdbx_in_flight)run->in_flight))
              || !cJSON_AddNumberToObject(root, "in_flight_point", run->in_flight_point)
              || !cJSON_AddStringToObject(root, "model", run->model.name)
              || !cJSON_AddStringToObject(root, "model_tag", run->model.tag)
              || !cJSON_AddNumberToObject(root, "layers_profiled", run->layers_profiled)
              || !cJSON_AddNumberToObject(root, "seq_len", run->seq_len)
              || !cJSON_AddStringToObject(root, "dtype", run->dtype)
              || !cJSON_AddStringToObject(root, "backend", run->backend)
              || !cJSON_AddStringToObject(root, "gpu", run->gpu)
              || !cJSON_AddStringToObject(root, "stat", pdbx_stat_name((pdbx_stat_kind)a->stat))
              || !cJSON_AddStringToObject(root, "attribution", pdbx_cli_attributions[a->attribution])
              || !cJSON_AddStringToObject(root, "pass", pdbx_pass_sel_name((pdbx_pass_sel)a->pass))
              || !cJSON_AddBoolToObject(root, "has_bwd", pdbx_run_has_bwd(run))
              || !cJSON_AddStringToObject(root, "unit", "ms")
              || (run->launcher[0] && !cJSON_AddStringToObject(root, "launcher", run->launcher))
              || (run->command[0] && !cJSON_AddStringToObject(root, "command", run->command));
    pdbx_run_noise_summary ns;
    pdbx_run_noise_of(run, &ns);
    cJSON *load = cJSON_CreateObject();
    bad = bad || add_item(root, "load", load) || !cJSON_AddNumberToObject(load, "points", ns.points)
          || !cJSON_AddNumberToObject(load, "busy", ns.busy)
          || !cJSON_AddNumberToObject(load, "other_busy_max", ns.other_busy_max)
          || !cJSON_AddNumberToObject(load, "steal_max", ns.steal_max);
    const cJSON *placement = run->env ? cJSON_GetObjectItemCaseSensitive(run->env, "placement") : NULL;
    if (!bad && cJSON_IsArray(placement))
        bad = !cJSON_AddItemToObject(root, "placement", cJSON_Duplicate(placement, 1));
    for (size_t i = 0; i < t->nconfigs && !bad; i++) {
        cJSON *cj = config_json(run, &t->configs[i], a, cols, ncols);
        bad = !cj || !cJSON_AddItemToArray(configs, cj);
        if (bad)
            cJSON_Delete(cj);
    }
    bad = bad || add_item(root, "collectives", collectives_json(run, (pdbx_stat_kind)a->stat));
    cJSON *vals = bad ? NULL : cJSON_AddArrayToObject(root, "validations");
    bad = bad || !vals;
    for (size_t i = 0; i < a->nvals && !bad; i++) {
        cJSON *vj = pdbx_validation_to_json(&a->vals[i]);
        bad = !vj || !cJSON_AddItemToArray(vals, vj);
        if (bad)
            cJSON_Delete(vj);
    }
    if (bad) {
        cJSON_Delete(root);
        return -1;
    }
    return pdbx_cli_emit_json(out, root);
}

/* ---- CSV: one row per point, every column (empty = not measured) ------------------------- */
static void csv_num(FILE *out, double v, int valid)
{
    valid ? fprintf(out, ",%.17g", v) : fputs(",", out);
}

static int print_csv(const pdbx_runtable *t, const show_args *a, const pdbx_rt_col *cols,
                     size_t ncols, FILE *out)
{
    fputs("tp,pp,dp,mbs,status", out);
    for (size_t c = 0; c < ncols; c++) {
        fputc(',', out);
        pdbx_csv_field(out, cols[c].name);
    }
    fputs(",layer,total\n", out);
    for (size_t i = 0; i < t->nconfigs; i++) {
        const pdbx_rt_config *cfg = &t->configs[i];
        for (size_t k = 0; k < cfg->npoints; k++) {
            pdbx_cli_row r;
            pdbx_cli_row_fill(&cfg->points[k], cols, ncols, (pdbx_stat_kind)a->stat, &r);
            fprintf(out, "%d,%d,%d,%d,%s", cfg->tp, cfg->pp, cfg->dp, cfg->points[k].mbs,
                    status_text(t->run, cfg->points[k].point));
            for (size_t c = 0; c < ncols; c++)
                csv_num(out, r.v[c], r.valid[c]);
            csv_num(out, r.layer, r.layer_valid);
            csv_num(out, r.total, r.total_valid);
            fputc('\n', out);
        }
    }
    return 0;
}

/* "--tp: run X has no TP N (has: ...)" */
static int no_such_tp(const pdbx_run *run, int tp)
{
    int all[256][3], tps[256];
    size_t n = pdbx_cli_run_configs(run, 0, all, 256), ntp = 0;
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        for (size_t j = 0; j < ntp; j++)
            seen |= tps[j] == all[i][0];
        if (!seen)
            tps[ntp++] = all[i][0];
    }
    char list[256];
    pdbx_fmt_int_list(tps, ntp, list, sizeof list);
    return pdbx_cli_fail(PDBX_EXIT_USAGE, show_spec.name, "--tp: run %s has no TP %d (has: %s)",
                         run->id, tp, list);
}

/* The run's validations: one line each (pdbx validate; estimate vs a measured iteration). */
static void print_validations(const show_args *a, FILE *out)
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
        snprintf(cfg, sizeof cfg, "%dx%dx%d", v->tp, v->pp, v->dp);
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

static int show_table(const pdbx_runtable *t, const show_args *a, FILE *out)
{
    pdbx_rt_col cols[PDBX_RT_MAX_COLS];
    size_t ncols = pdbx_rt_columns(pdbx_cli_attr(a->attribution), cols);
    if (a->format == PDBX_CLI_FMT_JSON)
        return print_json(t, a, cols, ncols, out);
    if (a->format == PDBX_CLI_FMT_CSV)
        return print_csv(t, a, cols, ncols, out);
    int err = 0;
    print_header(t->run, a, out);
    for (size_t i = 0; i < t->nconfigs && !err; i++)
        err = print_config_table(t->run, &t->configs[i], a, cols, ncols, out);
    if (!err && t->nconfigs == 0)
        fprintf(out, "\nno points in this run\n");
    if (!err)
        err = print_inference(t->run, a, out);
    if (!err)
        err = print_collectives(t->run, a, out);
    if (!err)
        print_validations(a, out);
    return err;
}

int pdbx_cmd_show(int argc, char **argv)
{
    show_args a = { .stat = PDBX_STAT_MEAN, .format = PDBX_CLI_FMT_TABLE, .attribution = PDBX_CLI_ATTR_PURE };
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
    pdbx_runtable t = { 0 };
    pdbx_run_init(&run);
    if (!strchr(pos[0], '/') && (rc = pdbx_cli_open_store(show_spec.name, a.store, 0, &st)) != 0)
        return rc;
    if ((rc = pdbx_cli_load_run(show_spec.name, st, pos[0], &run)) != 0
        || (rc = pdbx_cli_runtable(show_spec.name, &run, a.tp, (pdbx_pass_sel)a.pass, &t)) != 0)
        goto done;
    pdbx_validation *vals = NULL;
    if (st) {
        char verr[512];
        if (pdbx_validation_list(pdbx_store_dir(st), run.id, &vals, &a.nvals, &a.vals_skipped, verr,
                                 sizeof verr) != 0)
            fprintf(stderr, "pdbx show: warning: validations not read: %s\n", verr);
        a.vals = vals;
    }
    if (a.tp > 0 && t.nconfigs == 0)
        rc = no_such_tp(&run, a.tp);
    else if (show_table(&t, &a, stdout) != 0)
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, show_spec.name, "out of memory");
    free(vals);
done:
    pdbx_runtable_free(&t);
    pdbx_run_free(&run);
    if (st)
        pdbx_store_close(st);
    return rc;
}
