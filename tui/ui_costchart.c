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
                        int nm, int op_sel, int log, const char *title)
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
    double *vals = malloc(sizeof(double) * (size_t)nseries * npts);
    ui_canvas c;
    if (!vals || ui_canvas_init(&c, b.w - 2, b.h - 3) != 0) {
        free(vals);
        ui_app_message(app, 1, "out of memory drawing the chart");
        return;
    }
    int s = 0;
    char snames[16][64];
    for (int k = 0; k < nm; k++)
        for (int o = 0; o < nops; o++, s++) {
            for (int i = 0; i < npts; i++) {
                int j = ui_matrix_find(ms[k], m0->mbs[i]);
                vals[s * npts + i] = j >= 0 ? ms[k]->v[ops[o]][j] : NAN;
            }
            if (nm > 1) snprintf(snames[s], sizeof(snames[s]), "%s %s", names[k], pdbx_op_name(ops[o]));
            else snprintf(snames[s], sizeof(snames[s]), "%s", pdbx_op_name(ops[o]));
        }
    ui_put(b.y, 1, b.w - 2, UI_C_HEADER, 0, "%s (ms, %s scale) vs MBS", title, log ? "log" : "linear");
    if (ui_chart_lines(&c, 0, 0, c.h, c.w, vals, nseries, npts, xl, log, app->unicode && !app->force_ascii) != 0)
        ui_put(b.y + 1, 1, b.w - 2, UI_C_DIM, 0, "not enough room or no values to plot");
    else
        ui_draw_canvas(&c, b.y + 1, 1);
    /* legend with the series markers */
    int unicode = app->unicode && !app->force_ascii;
    int cx = 1, ly = b.y + b.h - 2;
    for (int k = 0; k < nseries; k++) {
        int len = (int)strlen(snames[k]) + 4;
        if (cx + len > b.w - 1) { ly++; cx = 1; }
        if (ly >= b.y + b.h) break;
        char g[8];
        ui_utf8_encode(ui_series_marker(k, unicode), g);
        ui_put(ly, cx, 2, (ui_role)(UI_C_SERIES0 + k % 8), 0, "%s", g);
        ui_put(ly, cx + 2, len - 2, UI_C_NORMAL, 0, "%s", snames[k]);
        cx += len;
    }
    ui_canvas_free(&c);
    free(vals);
}
