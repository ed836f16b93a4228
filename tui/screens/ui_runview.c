/* ui_runview.c: one run's results. A tab per (TP, PP, DP) config plus a collectives tab; views:
 * MBS x ops table in ms (with the total per MBS), the same table as shares, op shares per MBS
 * as stacked bars, cost vs MBS per op (log option), and efficiency against the GPU preset's
 * roofline, memory per rank (the two predictions beside the measured peak), and the cells of
 * each point (samples, CI, CV, bwd/fwd, where the samples came from; the point's setup time,
 * host load and GPU clocks). `p` picks the pass (fwd, bwd, both) of a run with backward cells;
 * a cell with CV > 5% is marked '!'; a run measured under load says so on the info line. `m`
 * marks a config and `c` compares it with the current one; `A` opens the advise screen over the
 * run. */
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/plan/plan.h"
#include "store/runtable.h"
#include "store/util/fmt.h"
#include "tui/ui_app.h"
#include "tui/ui_data.h"

typedef enum {
    VIEW_TABLE = 0, VIEW_SHARE_TABLE, VIEW_SHARES, VIEW_COST, VIEW_ROOFLINE, VIEW_MEMORY, VIEW_CELLS,
    VIEW_COUNT
} view_kind;

typedef struct {
    pdbx_run run;
    int configs[PDBX_MAX_CONFIGS][3];
    int nconfigs;
    int tab;                 /* 0..nconfigs-1 configs, nconfigs = collectives */
    view_kind view;
    pdbx_stat_kind stat;
    int log;
    int op;                  /* -1 = all ops in the cost chart */
    int marked_tab;          /* -1 none */
    int scroll;
    int legend_page;         /* page of a chart legend too long for its rows (L) */
    int coll_chart_only;     /* collectives tab: v shows the busbw chart alone */
    pdbx_spec spec;          /* the run's spec (GPU peaks for the roofline) */
    int have_spec;
    pdbx_pass_sel pass;      /* the cells every view shows (p) */
    int has_bwd;             /* the run measured backward cells: the pass and bwd/fwd show */
} rv_state;

static const char *const view_names[VIEW_COUNT] = {
    "table (ms)", "table (share of total)", "op shares per MBS", "cost vs MBS", "roofline efficiency",
    "memory per rank", "cells (n, CI, CV, source)"
};

static void runview_close(void *st)
{
    rv_state *v = st;
    if (!v)
        return;
    pdbx_run_free(&v->run);
    free(v);
}

/* Says why the table may show less than the user expects. */
static void open_message(ui_app *app, const rv_state *v)
{
    if (v->run.status == PDBX_RUN_CORRUPT)
        ui_app_message(app, 1, "corrupt run: showing the events before the damage (%s)", v->run.end_reason);
    else if (v->nconfigs == 0)
        ui_app_message(app, 1, "run %s has no planned points", v->run.id);
    else if ((v->run.status == PDBX_RUN_FAILED || v->run.status == PDBX_RUN_CANCELLED) && v->run.end_reason[0])
        /* why the table has pending or missing points (r on home replays the whole story) */
        ui_app_message(app, v->run.status == PDBX_RUN_FAILED, "%s: %s", pdbx_run_status_name(v->run.status),
                       v->run.end_reason);
}

static void *runview_open(ui_app *app, const void *arg)
{
    const char *id = arg;
    rv_state *v = ui_screen_state_new(app, sizeof(*v), "the run view");
    char err[256];
    if (!v)
        return NULL;
    if (pdbx_run_load(app->store, id, &v->run, err, sizeof(err)) != 0) {
        ui_app_message(app, 1, "%s", err);
        free(v);
        return NULL;
    }
    v->nconfigs = (int)pdbx_run_configs(&v->run, v->configs, PDBX_MAX_CONFIGS);
    v->marked_tab = -1;
    v->op = -1;
    v->stat = PDBX_STAT_MEAN;
    v->has_bwd = pdbx_run_has_bwd(&v->run);
    if (v->run.spec) {
        char serr[256];
        pdbx_spec_defaults(&v->spec);
        v->have_spec = pdbx_spec_from_json(v->run.spec, v->run.id, &v->spec, serr, sizeof(serr)) == 0;
    }
    open_message(app, v);
    return v;
}

static int runview_key(ui_app *app, void *st, int key, ui_action act)
{
    (void)key;
    rv_state *v = st;
    int ntabs = v->nconfigs + (v->run.ncoll > 0);
    switch (act) {
    case UI_ACT_BACK:
        ui_app_pop(app);
        return UI_H_HANDLED;
    case UI_ACT_NEXT_TAB:
        if (ntabs) v->tab = (v->tab + 1) % ntabs;
        v->scroll = 0;
        v->legend_page = 0;
        return UI_H_HANDLED;
    case UI_ACT_PREV_TAB:
        if (ntabs) v->tab = (v->tab + ntabs - 1) % ntabs;
        v->scroll = 0;
        v->legend_page = 0;
        return UI_H_HANDLED;
    case UI_ACT_VIEW:
        if (v->tab >= v->nconfigs)
            v->coll_chart_only = !v->coll_chart_only;
        else
            v->view = (v->view + 1) % VIEW_COUNT;
        v->legend_page = 0;
        return UI_H_HANDLED;
    case UI_ACT_LEGEND:
        v->legend_page++;          /* the drawing wraps it back to 0 after the last page */
        return UI_H_HANDLED;
    case UI_ACT_STAT:
        v->stat = (v->stat + 1) % PDBX_STAT_COUNT_KINDS;
        ui_app_message(app, 0, "statistic: %s", pdbx_stat_name(v->stat));
        return UI_H_HANDLED;
    case UI_ACT_LOG:
        v->log = !v->log;
        ui_app_message(app, 0, "log scale %s", v->log ? "on" : "off");
        return UI_H_HANDLED;
    case UI_ACT_PASS: {
        pdbx_pass_sel next = (pdbx_pass_sel)((v->pass + 1) % PDBX_PASS_SEL_COUNT);
        char err[256];
        if (pdbx_pass_sel_check(&v->run, next, "pass", err, sizeof(err)) != 0) {
            ui_app_message(app, 1, "pass: '%s' needs backward cells; this run measured forward only "
                           "(allowed: fwd)", pdbx_pass_sel_name(next));
            return UI_H_HANDLED;
        }
        v->pass = next;
        ui_app_message(app, 0, "pass: %s%s", pdbx_pass_sel_name(next),
                       next == PDBX_PASS_SEL_FWD ? "" : next == PDBX_PASS_SEL_BOTH
                       ? " (fwd + bwd per op; layer and total are forward: N/A)"
                       : " (layer and total are forward: N/A)");
        return UI_H_HANDLED;
    }
    case UI_ACT_OP:
        v->op = v->op + 1 >= PDBX_OP_COUNT ? -1 : v->op + 1;
        v->legend_page = 0;
        ui_app_message(app, 0, "cost chart: %s", v->op < 0 ? "largest ops" : pdbx_op_name(v->op));
        return UI_H_HANDLED;
    case UI_ACT_UP: if (v->scroll > 0) v->scroll--; return UI_H_HANDLED;
    case UI_ACT_DOWN: v->scroll++; return UI_H_HANDLED;
    case UI_ACT_MARK:
        if (v->tab >= v->nconfigs) return UI_H_HANDLED;
        v->marked_tab = v->marked_tab == v->tab ? -1 : v->tab;
        ui_app_message(app, 0, v->marked_tab < 0 ? "unmarked" : "marked this config: switch tabs and press c to compare");
        return UI_H_HANDLED;
    case UI_ACT_COMPARE:
        if (v->marked_tab < 0 || v->marked_tab == v->tab || v->tab >= v->nconfigs) {
            ui_app_message(app, 1, "mark a config with m, switch to another tab, then press c");
            return UI_H_HANDLED;
        }
        ui_app_push(app, UI_SCREEN_COMPARE, &(ui_compare_arg){ .run = &v->run, .cfg_a = v->configs[v->marked_tab],
                                                                .cfg_b = v->configs[v->tab] });
        return UI_H_HANDLED;
    case UI_ACT_EXPORT:
        ui_app_push(app, UI_SCREEN_EXPORT, &(ui_export_arg){ .run = &v->run });
        return UI_H_HANDLED;
    case UI_ACT_ADVISE:
        ui_app_push(app, UI_SCREEN_ADVISE, &(ui_advise_arg){ .run = &v->run });
        return UI_H_HANDLED;
    default:
        return UI_H_NONE;
    }
}

/* One row of measured sums in ms under the op rows; returns the next row. */
static int draw_sum_row(int y, int opw, int cw, int ncols, const char *name, const double *v)
{
    ui_put(y, 1, opw, UI_C_HEADER, 1, "%s", name);
    for (int i = 0; i < ncols; i++) {
        char s[32];
        ui_format_value(v[i], s, sizeof(s));
        ui_put(y, 1 + opw + i * cw, cw, UI_C_HEADER, 1, "%*s", cw - 1, s);
    }
    return y + 1;
}

/* The geometric mean over the config's points of an op's measured bwd/fwd (NaN: none). */
static double op_bwd_ratio(const ui_matrix *m, int op)
{
    return ui_geomean(m->bwd_ratio[op], m->n);
}

static void draw_table(rv_state *v, ui_rect b, const ui_matrix *m, int share)
{
    const int opw = 17, cw = 9;
    /* the measured bwd/fwd per op (geometric mean over the MBS) takes the last column */
    const int ratio_col = !share && m->have_ratio;
    int ncols = (b.w - opw - 2 - (ratio_col ? cw : 0)) / cw;
    if (ncols > m->n) ncols = m->n;
    const int rx = 1 + opw + ncols * cw;
    const int first = 0;       /* the widest terminals show every MBS; narrow ones the smallest */
    int y = b.y;
    ui_put(y, 1, opw, UI_C_HEADER, 1, "%s", share ? "op \\ MBS (share)" : "op \\ MBS (ms)");
    for (int i = 0; i < ncols; i++)
        ui_put(y, 1 + opw + i * cw, cw, UI_C_HEADER, 1, "%*d", cw - 1, m->mbs[first + i]);
    if (ratio_col)
        ui_put(y, rx, cw, UI_C_HEADER, 1, "%*s", cw - 1, "bwd/fwd");
    y++;
    /* point status row, only where a point is not ok */
    int any_bad = 0;
    for (int i = 0; i < m->n; i++)
        any_bad |= m->status[i] != PDBX_POINT_OK;
    if (any_bad) {
        ui_put(y, 1, opw, UI_C_DIM, 1, "status");
        for (int i = 0; i < ncols; i++)
            ui_put(y, 1 + opw + i * cw, cw, ui_role_point_status(m->status[first + i]), 1, "%*.*s", cw - 1, cw - 1,
                   pdbx_point_status_name(m->status[first + i]));
        y++;
    }
    int rows_left = b.y + b.h - y - 2;   /* the layer and total rows always show */
    int present = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        present += m->op_present[op] != 0;
    if (v->scroll > 0 && v->scroll >= present)
        v->scroll = present > 0 ? present - 1 : 0;
    /* more op rows than room (a run with every op at 80x24): the last row says how many show,
     * never a table that silently ends before lm_head */
    const int cut = v->scroll > 0 || present - v->scroll > rows_left;
    if (cut)
        rows_left--;
    const int room = rows_left;
    int skipped = 0;
    for (int op = 0; op < PDBX_OP_COUNT && rows_left > 0; op++) {
        if (!m->op_present[op]) continue;
        if (skipped++ < v->scroll) continue;
        ui_put(y, 1, opw, UI_C_NORMAL, 1, "%s", pdbx_op_name(op));
        for (int i = 0; i < ncols; i++) {
            double x = m->v[op][first + i];
            char s[32];
            if (share) {
                double sh = m->share[op][first + i];   /* op / measured layer or total */
                if (isnan(sh)) snprintf(s, sizeof(s), "N/A");
                else snprintf(s, sizeof(s), "%.1f%%", 100 * sh);
            } else {
                ui_format_value(x, s, sizeof(s));
                if (m->noisy[op][first + i])     /* CV > 5%: readable in monochrome too */
                    strncat(s, "!", sizeof(s) - strlen(s) - 1);
            }
            ui_put(y, 1 + opw + i * cw, cw, isnan(x) ? UI_C_DIM : m->noisy[op][first + i] && !share
                   ? UI_C_WARNING : UI_C_NORMAL, 1, "%*s", cw - 1, s);
        }
        if (ratio_col) {
            double r = op_bwd_ratio(m, op);
            char s[32];
            if (isfinite(r)) snprintf(s, sizeof(s), "%.2f", r);
            else snprintf(s, sizeof(s), "N/A");
            ui_put(y, rx, cw, isfinite(r) ? UI_C_INFO : UI_C_DIM, 1, "%*s", cw - 1, s);
        }
        y++;
        rows_left--;
    }
    if (v->scroll > skipped) v->scroll = skipped;
    if (cut) {
        const int shown = room - rows_left;
        ui_put(y++, 1, b.w - 2, UI_C_DIM, 0, "ops %d-%d of %d: Up/Down scroll", v->scroll + (shown > 0),
               v->scroll + shown, present);
    }
    /* The measured layer and step sums (never the ops added up). In the share view they are
       the denominators: per-layer ops are shares of layer, embed/final_norm/lm_head of total. */
    y = draw_sum_row(y, opw, cw, ncols, share ? "layer (ms)" : "layer", m->layer);
    y = draw_sum_row(y, opw, cw, ncols, share ? "total (ms)" : "total", m->total);
    /* the point's PP and DP communication, measured but outside the layer total: shown in ms
       under it where there is room (the share view has no place for them) */
    if (share) return;
    const struct { const char *name; const double *v; int present; } comm[] = {
        { "pp_sendrecv", m->pp_sendrecv, m->pp_present },
        { "dp_allreduce", m->dp_allreduce, m->dp_present },
    };
    for (size_t k = 0; k < sizeof(comm) / sizeof(comm[0]) && y < b.y + b.h; k++) {
        if (!comm[k].present) continue;
        ui_put(y, 1, opw, UI_C_DIM, 1, "%s", comm[k].name);
        for (int i = 0; i < ncols; i++) {
            char s[32];
            ui_format_value(comm[k].v[first + i], s, sizeof(s));
            ui_put(y, 1 + opw + i * cw, cw, isnan(comm[k].v[first + i]) ? UI_C_DIM : UI_C_NORMAL, 1, "%*s", cw - 1, s);
        }
        y++;
    }
}

static void draw_shares(ui_app *app, rv_state *v, ui_rect b, const ui_matrix *m)
{
    int ops[PDBX_OP_COUNT], nops = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        if (m->op_present[op]) ops[nops++] = op;
    const int legend_rows = 3;
    /* title, bars, the share axis (2 rows), a blank row, the legend */
    int rows = m->n < b.h - 4 - legend_rows ? m->n : b.h - 4 - legend_rows;
    if (rows <= 0 || nops == 0) {
        ui_put(b.y, 1, b.w - 2, UI_C_DIM, 0, nops == 0 ? "nothing measured in this config yet"
                                                       : "not enough room for the bars: a taller terminal shows them");
        return;
    }
    int unicode = app->unicode && !app->force_ascii;
    double *vals = calloc((size_t)rows * nops, sizeof(double));
    const char **labels = calloc((size_t)rows, sizeof(char *));
    char (*lab)[16] = calloc((size_t)rows, sizeof(*lab));
    ui_legend_entry legend[PDBX_OP_COUNT];
    ui_canvas c;
    if (!vals || !labels || !lab || ui_canvas_init(&c, b.w - 2, rows + 2) != 0) {
        ui_app_message(app, 1, "out of memory drawing the chart");
        goto done;
    }
    for (int r = 0; r < rows; r++) {
        snprintf(lab[r], sizeof(lab[r]), "MBS %d", m->mbs[r]);
        labels[r] = lab[r];
        for (int s = 0; s < nops; s++)
            vals[r * nops + s] = m->v[ops[s]][r];
    }
    ui_chart_stacked(&c, 0, 0, 8, b.w - 12, labels, vals, rows, nops, 1, unicode);
    ui_chart_share_axis(&c, rows, 0, 8, b.w - 12, "share", unicode);
    ui_put(b.y, 1, b.w - 2, UI_C_HEADER, 0, "share of each op in the point's total (%s), one bar per MBS",
           pdbx_stat_name(v->stat));
    ui_draw_canvas(&c, b.y + 1, 1);
    for (int s = 0; s < nops; s++)
        ui_legend_set(&legend[s], ui_segment_fill(s, unicode), s, pdbx_op_name(ops[s]));
    /* the legend takes every row left (at least legend_rows) */
    ui_draw_legend(b.y + rows + 4, 1, b.w - 2, b.h - rows - 4, legend, nops, &v->legend_page);
    ui_canvas_free(&c);
done:
    free(vals);
    free(labels);
    free(lab);
}

static void draw_roofline(ui_app *app, rv_state *v, ui_rect b, const ui_matrix *m)
{
    if (!v->have_spec) {
        ui_put(b.y, 1, b.w - 2, UI_C_DIM, 0, "the run has no readable spec: no GPU preset to compare with");
        return;
    }
    const pdbx_gpu *g = &v->spec.gpu;
    double peak = ui_gpu_peak_tflops(g, v->run.dtype);
    /* a preset without a peak (the cpu one) has no roofline: say N/A, not 0 */
    char peak_s[32], bw_s[32];
    if (peak > 0) snprintf(peak_s, sizeof(peak_s), "%.1f TFLOP/s", peak);
    else snprintf(peak_s, sizeof(peak_s), "peak N/A");
    if (g->bw_gbs > 0) snprintf(bw_s, sizeof(bw_s), "%.0f GB/s", g->bw_gbs);
    else snprintf(bw_s, sizeof(bw_s), "bandwidth N/A");
    ui_put(b.y, 1, b.w - 2, UI_C_HEADER, 1, "efficiency = bound / measured (%s): %s %s, %s, %s",
           pdbx_stat_name(v->stat), g->name, v->run.dtype, peak_s, bw_s);
    const int opw = 17, cw = 8;
    int ncols = (b.w - opw - 30) / cw;
    if (ncols > m->n) ncols = m->n;
    int y = b.y + 1;
    ui_put(y, 1, opw, UI_C_HEADER, 1, "op \\ MBS");
    for (int i = 0; i < ncols; i++)
        ui_put(y, 1 + opw + i * cw, cw, UI_C_HEADER, 1, "%*d", cw - 1, m->mbs[i]);
    int last = m->n - 1;
    while (last >= 0 && m->status[last] != PDBX_POINT_OK) last--;
    int bx = 1 + opw + ncols * cw + 1;
    if (last >= 0)
        ui_put(y, bx, b.w - bx - 1, UI_C_HEADER, 1, "MBS %d TFLOP/s | eff. 0-100%%", m->mbs[last]);
    y++;
    ui_canvas c;
    int barw = b.w - bx - 10;
    if (barw < 4) barw = 4;
    if (ui_canvas_init(&c, barw, 1) != 0) return;
    for (int op = 0; op < PDBX_OP_COUNT && y < b.y + b.h - 1; op++) {
        if (!m->op_present[op]) continue;
        ui_put(y, 1, opw, UI_C_NORMAL, 1, "%s", pdbx_op_name(op));
        for (int i = 0; i < ncols; i++) {
            double bound = ui_roofline_ms(g, v->run.dtype, m->flops[op][i], m->bytes[op][i]);
            double eff = bound / m->v[op][i];
            char s[32];
            if (isfinite(eff)) snprintf(s, sizeof(s), "%.1f%%", 100 * eff);
            else snprintf(s, sizeof(s), "N/A");
            ui_put(y, 1 + opw + i * cw, cw, isfinite(eff) ? UI_C_NORMAL : UI_C_DIM, 1, "%*s", cw - 1, s);
        }
        if (last >= 0) {
            double t = m->v[op][last];
            double tf = (m->flops[op][last] > 0 && t > 0) ? m->flops[op][last] / (t * 1e-3) / 1e12 : NAN;
            double eff = ui_roofline_ms(g, v->run.dtype, m->flops[op][last], m->bytes[op][last]) / t;
            char s[32];
            ui_format_value(tf, s, sizeof(s));
            ui_put(y, bx, 7, UI_C_NORMAL, 1, "%6s", s);
            ui_canvas_clear(&c);
            ui_chart_hbar(&c, 0, 0, barw, isfinite(eff) ? (eff > 1 ? 1 : eff) : NAN, UI_CLS_SERIES,
                          app->unicode && !app->force_ascii);
            ui_draw_canvas(&c, y, bx + 8);
        }
        y++;
    }
    ui_canvas_free(&c);
    if (peak <= 0 && g->bw_gbs <= 0)
        ui_put(b.y + b.h - 1, 1, b.w - 2, UI_C_DIM, 0,
               "N/A: the GPU preset %s gives no peak or bandwidth to compare with", g->name);
    else
        ui_put(b.y + b.h - 1, 1, b.w - 2, UI_C_DIM, 0,
               "bound = max(flops/peak, bytes/bandwidth) per TP rank; N/A: op has no model");
}

/* Memory per rank of the points of config cfg: the profile prediction (what the engine
 * allocates at the point; it decides the OOM stop) beside the measured peak, and the training
 * prediction of the full model with its verdict against the GPU preset (planning only). */
static void draw_memory(rv_state *v, ui_rect b, const int cfg[3])
{
    const pdbx_point *pts[UI_MAX_MBS];
    size_t n = pdbx_run_config_points(&v->run, cfg[0], cfg[1], cfg[2], pts, UI_MAX_MBS);
    double gpu_mem = v->have_spec ? v->spec.gpu.mem_bytes : NAN;
    char g[32];
    ui_put_text(b.y, 1, b.w - 2, UI_C_HEADER, 0, "memory per rank, GPU preset %s: %s", v->run.gpu,
                gpu_mem > 0 ? pdbx_fmt_size(gpu_mem, g, sizeof g) : "N/A");
    ui_put(b.y + 1, 1, b.w - 2, UI_C_HEADER, 1, "%5s %13s %13s %9s %13s %6s", "MBS", "profile pred.",
           "peak meas.", "meas/pred", "train (full)", "train");
    int y = b.y + 2;
    for (size_t i = (size_t)v->scroll; i < n && y < b.y + b.h - 2; i++) {
        const pdbx_point *p = pts[i];
        char pr[32] = "N/A", pk[32] = "N/A", ratio[32] = "N/A", tr[32] = "N/A";
        if (isfinite(p->profile_mem_bytes)) pdbx_fmt_size(p->profile_mem_bytes, pr, sizeof pr);
        if (isfinite(p->mem_peak_bytes)) pdbx_fmt_size(p->mem_peak_bytes, pk, sizeof pk);
        if (isfinite(p->profile_mem_bytes) && isfinite(p->mem_peak_bytes) && p->profile_mem_bytes > 0)
            snprintf(ratio, sizeof ratio, "%.3f", p->mem_peak_bytes / p->profile_mem_bytes);
        if (p->predicted_mem_bytes > 0) pdbx_fmt_size(p->predicted_mem_bytes, tr, sizeof tr);
        const char *verdict = p->predicted_mem_bytes > 0 ? (p->predicted_oom ? "OOM" : "fits") : "N/A";
        ui_put(y++, 1, b.w - 2, p->predicted_oom ? UI_C_WARNING : UI_C_NORMAL, 1, "%5d %13s %13s %9s %13s %6s",
               p->mbs, pr, pk, ratio, tr, verdict);
    }
    ui_put_text(b.y + b.h - 2, 1, b.w - 2, UI_C_DIM, 0,
                "profile: what the engine allocates at the point (it decides the OOM stop)");
    ui_put_text(b.y + b.h - 1, 1, b.w - 2, UI_C_DIM, 0,
                "train: the full model's training memory per rank (planning information)");
}

/* v with `decimals` decimals, N/A when a run file left it out (NaN). */
static const char *num_or_na(double v, int decimals, char *buf, size_t len)
{
    if (isfinite(v)) snprintf(buf, len, "%.*f", decimals, v);
    else snprintf(buf, len, "N/A");
    return buf;
}

/* The host's load and the GPU's clocks while a point was measured: one line each (the GPU's
 * only when recorded). */
static void noise_lines(const pdbx_point *p, char *host, size_t hlen, char *gpu, size_t glen)
{
    const pdbx_point_noise *n = &p->noise;
    char a[32], b[32], c[32];
    host[0] = gpu[0] = '\0';
    if (!n->valid) {
        snprintf(host, hlen, "host load not recorded");
        return;
    }
    snprintf(host, hlen, "%s: others %s/%d cores, load %s, steal %s%%", n->busy ? "BUSY" : "quiet",
             num_or_na(n->other_busy, 1, a, sizeof(a)), n->cores, num_or_na(n->load1, 2, b, sizeof(b)),
             num_or_na(n->steal_pct, 0, c, sizeof(c)));
    if (n->gpu_valid) {
        char why[160], t[32];
        pdbx_throttle_text(n->throttle_reasons, why, sizeof(why));
        snprintf(gpu, glen, "gpu: SM clock %s-%s MHz, max %s C, throttle: %s",
                 num_or_na(n->sm_clock_min_mhz, 0, a, sizeof(a)), num_or_na(n->sm_clock_max_mhz, 0, b, sizeof(b)),
                 num_or_na(n->temp_max_c, 0, t, sizeof(t)), why);
    }
}

/* Every point of config cfg: its status, setup time, load and GPU figures, then per measured op
 * (of the view's pass) the samples, mean, 95% CI and CV as % of the mean (noisy marked '!'),
 * the measured bwd/fwd and where the samples came from. Scrolls by line (Up/Down). */
static void draw_cells(rv_state *v, ui_rect b, const int cfg[3])
{
    pdbx_rt_config c;
    if (pdbx_rt_config_build_pass(&v->run, cfg[0], cfg[1], cfg[2], v->pass, &c) != 0) {
        ui_put(b.y, 1, b.w - 2, UI_C_ERROR, 0, "out of memory building the cells");
        return;
    }
    int y = b.y, line = 0, bottom = b.y + b.h - 1;
    ui_put(y++, 1, b.w - 2, UI_C_HEADER, 1, "%-17s %5s %9s %7s %7s %7s  %s", "op", "n", "ms", "+-ci95",
           "cv", "bwd/fwd", "source");
#define CELLS_LINE(role, bold, ...) do { \
        if (line++ >= v->scroll && y < bottom) ui_put(y++, 1, b.w - 2, role, bold, __VA_ARGS__); \
    } while (0)
    for (size_t i = 0; i < c.npoints; i++) {
        const pdbx_rt_point *p = &c.points[i];
        char setup[32] = "N/A", host[192], gpu[512];
        if (isfinite(p->point->setup_s)) snprintf(setup, sizeof(setup), "%.2f s", p->point->setup_s);
        noise_lines(p->point, host, sizeof(host), gpu, sizeof(gpu));
        CELLS_LINE(p->point->noise.busy ? UI_C_WARNING : UI_C_INFO, 1, "MBS %d point %d %s, setup %s; %s", p->mbs, p->point->index,
                   pdbx_point_status_name(p->status), setup, host);
        if (gpu[0])
            CELLS_LINE(UI_C_INFO, 1, "  %s", gpu);
        for (int op = 0; op < PDBX_OP_COUNT; op++) {
            const pdbx_rt_cell *cell = &p->op[op];
            if (!cell->valid) continue;
            char ms[32], ci[32], cv[32], ratio[32] = "", src[96];
            ui_format_value(cell->stats.mean, ms, sizeof(ms));
            pdbx_fmt_pct(pdbx_stats_rel_ci(&cell->stats), ci, sizeof(ci));
            pdbx_fmt_pct(pdbx_stats_cv(&cell->stats), cv, sizeof(cv));
            int noisy = pdbx_rt_cell_noisy(cell);
            if (noisy) strncat(cv, "!", sizeof(cv) - strlen(cv) - 1);
            double r = pdbx_point_bwd_ratio(p->point, (pdbx_op)op, v->stat);
            if (isfinite(r)) snprintf(ratio, sizeof(ratio), "%.2f", r);
            pdbx_rt_cell_source(cell, src, sizeof(src));
            CELLS_LINE(noisy ? UI_C_WARNING : UI_C_NORMAL, 1, "%-17s %5lld %9s %7s %7s %7s  %s",
                       pdbx_op_name((pdbx_op)op), (long long)cell->stats.count, ms, ci, cv, ratio,
                       src[0] ? src : "here");
        }
    }
#undef CELLS_LINE
    if (v->scroll > line - 1) v->scroll = line > 0 ? line - 1 : 0;
    ui_put_text(bottom, 1, b.w - 2, UI_C_DIM, 0, "ms: the %s of pass %s; ! noisy: CV > 5%%; Up/Down scroll",
                pdbx_stat_name(PDBX_STAT_MEAN), pdbx_pass_sel_name(v->pass));
    pdbx_rt_config_free(&c);
}

/* busbw vs message size, one series per collective (in place: the out-of-place rows are in
 * the table only), in the rect b. */
static void draw_coll_chart(ui_app *app, rv_state *v, ui_rect b)
{
    const pdbx_run *run = &v->run;
    char names[8][16];
    double sizes[UI_MAX_MBS];
    int nn = 0, ns = 0;
    for (size_t i = 0; i < run->ncoll; i++) {
        const pdbx_coll_result *r = &run->coll[i];
        if (!r->in_place) continue;
        int k = 0;
        while (k < nn && strcmp(names[k], r->coll) != 0) k++;
        if (k == nn && nn < 8) snprintf(names[nn++], sizeof(names[0]), "%s", r->coll);
        int j = 0;
        while (j < ns && sizes[j] != r->bytes) j++;
        if (j == ns && ns < UI_MAX_MBS) sizes[ns++] = r->bytes;
    }
    for (int i = 1; i < ns; i++)            /* sizes ascending */
        for (int j = i; j > 0 && sizes[j - 1] > sizes[j]; j--) {
            double t = sizes[j]; sizes[j] = sizes[j - 1]; sizes[j - 1] = t;
        }
    if (nn == 0 || ns == 0)
        return;
    double vals[8 * UI_MAX_MBS];
    for (int i = 0; i < nn * ns; i++) vals[i] = NAN;
    for (size_t i = 0; i < run->ncoll; i++) {
        const pdbx_coll_result *r = &run->coll[i];
        if (!r->in_place) continue;
        int k = 0, j = 0;
        while (k < nn && strcmp(names[k], r->coll) != 0) k++;
        while (j < ns && sizes[j] != r->bytes) j++;
        if (k < nn && j < ns) vals[k * ns + j] = r->busbw;
    }
    char xlab[UI_MAX_MBS][16];
    const char *xl[UI_MAX_MBS];
    for (int j = 0; j < ns; j++) {
        ui_format_unit(sizes[j], UI_UNIT_BYTES, xlab[j], sizeof(xlab[j]));
        xl[j] = xlab[j];
    }
    const int legend_rows = 1;
    ui_canvas c;
    if (ui_canvas_init(&c, b.w - 2, b.h - 1 - legend_rows) != 0) return;
    int unicode = app->unicode && !app->force_ascii;
    ui_put(b.y, 1, b.w - 2, UI_C_HEADER, 0, "busbw (GB/s, %s scale) vs message size (bytes)", v->log ? "log" : "linear");
    ui_lines_spec spec = { .values = vals, .nseries = nn, .npts = ns, .xlabels = xl, .xname = "size",
                           .yunit = UI_UNIT_GBS, .log = v->log, .unicode = unicode };
    ui_lines_info info;
    ui_legend_entry legend[9];
    int nlegend = 0;
    for (int k = 0; k < nn; k++)
        ui_legend_set(&legend[nlegend++], ui_series_marker(k, unicode), k, names[k]);
    if (ui_chart_lines(&c, 0, 0, c.h, c.w, &spec, &info) == 0) {
        ui_draw_canvas(&c, b.y + 1, 1);
        if (info.overlaps) {
            ui_legend_overlap(&legend[nlegend++]);
        }
    } else {
        ui_put(b.y + 1, 1, b.w - 2, UI_C_DIM, 0, "not enough room for the busbw chart at this size");
    }
    ui_canvas_free(&c);
    ui_draw_legend(b.y + b.h - legend_rows, 1, b.w - 2, legend_rows, legend, nlegend, &v->legend_page);
}

static void draw_collectives(ui_app *app, rv_state *v, ui_rect b)
{
    const pdbx_run *run = &v->run;
    const int chart_min_h = 9;           /* title, 5 plot rows, axis, labels, legend */
    if (v->coll_chart_only) {
        ui_rect cr = { b.y, b.x, b.h - 1, b.w };
        draw_coll_chart(app, v, cr);
        ui_put(b.y + b.h - 1, 1, b.w - 2, UI_C_DIM, 0, "v: back to the table");
        return;
    }
    ui_put(b.y, 1, b.w - 2, UI_C_HEADER, 1, "%-15s %10s %6s %6s %11s %10s %10s", "collective", "size",
           "ranks", "/node", "time (us)", "algbw GB/s", "busbw GB/s");
    int y = b.y + 1;
    int rows = b.h - 2;
    int table_rows = (int)run->ncoll;
    int with_chart = rows - table_rows >= chart_min_h + 1;
    if (!with_chart && table_rows > rows - 1) table_rows = rows - 1;
    size_t first = (size_t)v->scroll;
    if (first >= run->ncoll) first = run->ncoll ? run->ncoll - 1 : 0;
    for (size_t i = first; i < run->ncoll && table_rows > 0; i++, table_rows--) {
        const pdbx_coll_result *r = &run->coll[i];
        char sz[32], t[32], a[32], bb[32];
        ui_format_unit(r->bytes, UI_UNIT_BYTES, sz, sizeof(sz));
        ui_format_value(pdbx_stats_get(&r->time, v->stat) * 1e3, t, sizeof(t));
        ui_format_value(r->algbw, a, sizeof(a));
        ui_format_value(r->busbw, bb, sizeof(bb));
        char name[24];   /* out of place marked, within the column's 15 */
        snprintf(name, sizeof name, r->in_place ? "%s" : "%.11s oop", r->coll);
        ui_put(y++, 1, b.w - 2, UI_C_NORMAL, 1, "%-15s %10s %6d %6d %11s %10s %10s", name, sz, r->nranks,
               r->ranks_per_node, t, a, bb);
    }
    if (with_chart) {
        ui_rect cr = { y + 1, b.x, b.y + b.h - 1 - (y + 1), b.w };
        draw_coll_chart(app, v, cr);
    } else {
        /* no room under the table: say so, and how to see it (an earlier 80x24 showed nothing) */
        ui_put_text(b.y + b.h - 2, 1, b.w - 2, UI_C_DIM, 0,
                    "busbw chart: no room under the table at this size; v shows it alone");
    }
    ui_put(b.y + b.h - 1, 1, b.w - 2, UI_C_DIM, 0, "busbw (nccl-tests): all_reduce x 2(n-1)/n, all_gather/reduce_scatter x (n-1)/n");
}

static void runview_draw(ui_app *app, void *st, ui_rect b)
{
    rv_state *v = st;
    const char *names[PDBX_MAX_CONFIGS + 1];
    char nb[PDBX_MAX_CONFIGS + 1][32];
    int ntabs = 0;
    for (int i = 0; i < v->nconfigs; i++) {
        snprintf(nb[i], sizeof(nb[i]), "%sTP%d PP%d DP%d", i == v->marked_tab ? "*" : "", v->configs[i][0],
                 v->configs[i][1], v->configs[i][2]);
        names[ntabs++] = nb[i];
    }
    if (v->run.ncoll > 0)
        names[ntabs++] = "collectives";
    if (v->tab >= ntabs) v->tab = 0;
    ui_draw_tabs(b.y, 1, b.w - 2, names, ntabs, v->tab);
    /* the long id last: at 80 columns it is the part that goes (whole, "..." in its place),
     * not the status */
    /* a run whose nodes were all this machine says so (its numbers are not multi-node ones) */
    const char *sim = strncmp(v->run.launcher, "simulated", 9) == 0 ? v->run.launcher : "";
    ui_put_text(b.y + 1, 1, b.w - 2, UI_C_DIM, 1, "%s  %s/%s %s  seq %d  layers %d of %d  %s%s%s  %s",
           v->run.model.name, v->run.backend, v->run.gpu, v->run.dtype, v->run.seq_len,
           v->run.layers_profiled, v->run.model.layers, pdbx_run_status_name(v->run.status),
           sim[0] ? "  " : "", sim, v->run.id);
    ui_rect body = { b.y + 3, b.x, b.h - 3, b.w };
    if (ntabs == 0) {
        ui_put(body.y, 1, b.w - 2, UI_C_DIM, 0, "no configs in this run");
        return;
    }
    if (v->tab >= v->nconfigs) {
        draw_collectives(app, v, body);
        return;
    }
    ui_matrix m;
    ui_matrix_build_pass(&v->run, v->configs[v->tab][0], v->configs[v->tab][1], v->configs[v->tab][2], v->stat,
                         v->pass, &m);
    int any_noisy = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        for (int i = 0; i < m.n; i++)
            any_noisy |= m.noisy[op][i];
    /* the pass only for runs that have a choice; the noisy legend when a mark shows; the load
       when the engine judged points measured under load (whole at 200 columns) */
    char pass[32] = "", load[256];
    if (v->has_bwd)
        snprintf(pass, sizeof(pass), "  pass: %s", pdbx_pass_sel_name(v->pass));
    pdbx_run_load_text(&v->run, load, sizeof(load));     /* "" when no point was loaded */
    ui_put_text(b.y + 2, 1, b.w - 2, UI_C_INFO, 1, "view: %s  stat: %s%s%s%s%s%s", view_names[v->view],
                pdbx_stat_name(v->stat), v->log && v->view == VIEW_COST ? "  log scale" : "",  /* the one view it changes */
                pass, any_noisy ? "  ! CV > 5%" : "", load[0] ? "  " : "", load);
    switch (v->view) {
    case VIEW_TABLE: draw_table(v, body, &m, 0); break;
    case VIEW_SHARE_TABLE: draw_table(v, body, &m, 1); break;
    case VIEW_SHARES: draw_shares(app, v, body, &m); break;
    case VIEW_COST: {
        const ui_matrix *ms[1] = { &m };
        const char *nm[1] = { "" };
        ui_draw_cost_chart(app, body, ms, nm, 1, v->op, v->log, v->op < 0 ? "largest ops" : pdbx_op_name(v->op),
                           &v->legend_page);
        break;
    }
    case VIEW_ROOFLINE: draw_roofline(app, v, body, &m); break;
    case VIEW_MEMORY: draw_memory(v, body, v->configs[v->tab]); break;
    case VIEW_CELLS: draw_cells(v, body, v->configs[v->tab]); break;
    default: break;
    }
}

const ui_screen_ops ui_screen_runview = { "run", UI_SCR_RUNVIEW, 0, runview_open, runview_close, runview_draw,
                                          runview_key, NULL, NULL, NULL };
