/* ui_costchart.c: the cost vs MBS line chart of one or more ui_matrix overlaid, drawn by the
 * run view (one config) and by compare (A and B). See ui_app.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/ui_app.h"

/* The ops with the largest value at the largest measured MBS, at most cap. */
static int top_ops(const ui_matrix *m, int *ops, int cap)
{
    int n = 0;
    int used[PDBX_OP_COUNT] = { 0 };
    while (n < cap) {
        int best = -1;
        double bv = -1;
        for (int op = 0; op < PDBX_OP_COUNT; op++) {
            if (used[op] || !m->op_present[op]) continue;
            double v = -1;
            for (int i = m->n - 1; i >= 0; i--)
                if (isfinite(m->v[op][i])) { v = m->v[op][i]; break; }
            if (v > bv) { bv = v; best = op; }
        }
        if (best < 0) break;
        used[best] = 1;
        ops[n++] = best;
    }
    return n;
}

void ui_draw_cost_chart(ui_app *app, ui_rect b, const ui_matrix *const *ms, const char *const *names,
                        int nm, int op_sel, int log, const char *title, int *legend_page)
{
    /* x positions: the union of MBS values, in order (the first matrix's order) */
    const ui_matrix *m0 = ms[0];
    int npts = m0->n;
    const char *xl[UI_MAX_MBS];
    char xlab[UI_MAX_MBS][12];
    for (int i = 0; i < npts; i++) {
        snprintf(xlab[i], sizeof(xlab[i]), "%d", m0->mbs[i]);
        xl[i] = xlab[i];
    }
    int ops[8], nops;
    if (op_sel >= 0) { ops[0] = op_sel; nops = 1; }
    else nops = top_ops(m0, ops, nm > 1 ? 4 : 8);
    int nseries = nm > 1 ? nm * (nops ? nops : 1) : nops;
    if (npts == 0 || nseries == 0) {
        ui_put(b.y, 1, b.w - 2, UI_C_DIM, 0, "nothing measured in this config yet");
        return;
    }
    const int legend_rows = 2;
    double *vals = malloc(sizeof(double) * (size_t)nseries * npts);
    ui_canvas c;
    if (!vals || ui_canvas_init(&c, b.w - 2, b.h - 1 - legend_rows) != 0) {
        free(vals);
        ui_app_message(app, 1, "out of memory drawing the chart");
        return;
    }
    int unicode = app->unicode && !app->force_ascii;
    ui_legend_entry legend[UI_CHART_MAX_SERIES + 1];
    int s = 0;
    for (int k = 0; k < nm; k++)
        for (int o = 0; o < nops; o++, s++) {
            for (int i = 0; i < npts; i++) {
                int j = ui_matrix_find(ms[k], m0->mbs[i]);
                vals[s * npts + i] = j >= 0 ? ms[k]->v[ops[o]][j] : NAN;
            }
            char name[64];
            if (nm > 1) snprintf(name, sizeof(name), "%s %s", names[k], pdbx_op_name(ops[o]));
            else snprintf(name, sizeof(name), "%s", pdbx_op_name(ops[o]));
            ui_legend_set(&legend[s], ui_series_marker(s, unicode), s, name);
        }
    ui_put(b.y, 1, b.w - 2, UI_C_HEADER, 0, "%s: time (ms, %s scale) vs MBS", title, log ? "log" : "linear");
    ui_lines_spec spec = { .values = vals, .nseries = nseries, .npts = npts, .xlabels = xl, .xname = "MBS",
                           .yunit = UI_UNIT_MS, .log = log, .unicode = unicode };
    ui_lines_info info;
    int nlegend = nseries;
    if (ui_chart_lines(&c, 0, 0, c.h, c.w, &spec, &info) != 0) {
        ui_put(b.y + 1, 1, b.w - 2, UI_C_DIM, 0, "not enough room or no values to plot");
    } else {
        ui_draw_canvas(&c, b.y + 1, 1);
        if (info.overlaps) {
            /* a digit on the chart counts the series whose points share that cell */
            ui_legend_overlap(&legend[nlegend++]);
        }
    }
    ui_draw_legend(b.y + b.h - legend_rows, 1, b.w - 2, legend_rows, legend, nlegend, legend_page);
    ui_canvas_free(&c);
    free(vals);
}
