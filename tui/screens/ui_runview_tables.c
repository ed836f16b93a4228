/* ui_runview_tables.c: the run view's config views over the config's matrix (ui_data.h): the
 * MBS x ops table in ms or as shares, op shares per MBS as stacked bars, and efficiency against
 * the GPU preset's roofline (ui_runview_internal.h). */
#include "tui/screens/ui_runview_internal.h"

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

/* The table's header row (MBS per column, bwd/fwd in column rx when ratio_col) and, only where
 * a point is not ok, the status row; returns the next row. The first ncols MBS show. */
static int table_head(int y, int opw, int cw, int ncols, int rx, int ratio_col, const ui_matrix *m,
                      int share)
{
    const int first = 0;
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
    return y;
}

/* The point's PP and DP communication rows in ms from row y, while rows of b remain. */
static void draw_comm_rows(int y, ui_rect b, int opw, int cw, int ncols, const ui_matrix *m)
{
    const int first = 0;
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

void rv_draw_table(rv_state *v, ui_rect b, const ui_matrix *m, int share)
{
    const int opw = 17, cw = 9;
    /* the measured bwd/fwd per op (geometric mean over the MBS) takes the last column */
    const int ratio_col = !share && m->have_ratio;
    int ncols = (b.w - opw - 2 - (ratio_col ? cw : 0)) / cw;
    if (ncols > m->n) ncols = m->n;
    const int rx = 1 + opw + ncols * cw;
    const int first = 0;       /* the widest terminals show every MBS; narrow ones the smallest */
    int y = table_head(b.y, opw, cw, ncols, rx, ratio_col, m, share);
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
    draw_comm_rows(y, b, opw, cw, ncols, m);
}

void rv_draw_shares(ui_app *app, rv_state *v, ui_rect b, const ui_matrix *m)
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

void rv_draw_roofline(ui_app *app, rv_state *v, ui_rect b, const ui_matrix *m)
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
