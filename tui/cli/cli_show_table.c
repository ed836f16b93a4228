/* cli_show_table.c: `pdbx show`'s aligned table: the run's header lines, and per parallel
 * config the op table, the bwd/fwd ratios, the --stats table, the comm cells and the memory
 * (cli_show.h). */
#include "tui/cli/cli_show.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/events.h"
#include "store/util/fmt.h"

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

/* A mixture-of-experts run's routing (spec moe_routing); nothing for a dense model's run. */
static void print_moe_routing(const pdbx_run *run, FILE *out)
{
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(run->spec, "model");
    const cJSON *moe = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(model, "arch"), "moe");
    if (!cJSON_IsObject(moe))
        return;
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(run->spec, "moe_routing");
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(r, "imbalance");
    if (cJSON_IsNumber(f))
        pdbx_cli_line(out, "moe routing: imbalance %g (the busiest expert gets %g x its balanced rows; EP 1)",
                      f->valuedouble, f->valuedouble);
    else
        pdbx_cli_line(out, "moe routing: %s (EP 1)", cJSON_IsString(r) ? r->valuestring : "balanced");
}

void show_print_header(const pdbx_run *run, const show_args *a, FILE *out)
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
    print_moe_routing(run, out);
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
              || pdbx_table_set(t, 1, "%s", show_status_text(run, p->point));
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

int show_print_config_table(const pdbx_run *run, const pdbx_rt_config *cfg, const show_args *a,
                            const pdbx_rt_col *cols, size_t ncols, FILE *out)
{
    int noisy = 0;
    pdbx_table *t = op_table(run, cfg, a, cols, ncols, &noisy);
    if (!t)
        return -1;
    char head[64];   /* EP only when > 1: a dense run's header reads as before */
    fprintf(out, "\n%s\n", pdbx_fmt_config(PDBX_CFG_LABEL_HEADER, cfg->tp, cfg->pp, cfg->dp, cfg->ep, head, sizeof head));
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
            pdbx_cli_line(out, "  MBS %d %s: %s", p->mbs, show_status_text(run, p), p->message);
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
