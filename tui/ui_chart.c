/* ui_chart.c: the charts of ui_chart.h: bars, stacked bars, the share axis, line charts and
 * the legend layout (the scatter chart is ui_chart_scatter.c; the canvas and glyphs
 * ui_canvas.c; scales, units and ticks ui_scale.c). */
#include "tui/ui_chart.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/ui_chart_internal.h"

/* ---- charts ------------------------------------------------------------------------------ */
void ui_chart_hbar(ui_canvas *c, int y, int x, int w, double frac, int cls, int unicode)
{
    if (w <= 0)
        return;
    if (isnan(frac)) {
        ui_canvas_text(c, y, x, "N/A", UI_CLS_TEXT);
        return;
    }
    if (frac < 0) frac = 0;
    if (frac > 1) frac = 1;
    double cells = frac * w;
    if (!unicode) {
        int n = (int)lround(cells);
        for (int i = 0; i < n; i++)
            ui_canvas_put(c, y, x + i, '#', cls);
        return;
    }
    int full = (int)floor(cells);
    int eighths = (int)lround((cells - full) * 8);
    if (eighths == 8) { full++; eighths = 0; }
    for (int i = 0; i < full && i < w; i++)
        ui_canvas_put(c, y, x + i, 0x2588, cls);
    if (eighths > 0 && full < w)
        ui_canvas_put(c, y, x + full, 0x2590 - (uint32_t)eighths, cls);
}

int ui_chart_stacked(ui_canvas *c, int y, int x, int label_w, int w,
                     const char *const *labels, const double *values, int nrows, int nseg,
                     int normalise, int unicode)
{
    double maxtotal = 0;
    for (int r = 0; r < nrows; r++) {
        double t = 0;
        for (int s = 0; s < nseg; s++) {
            double v = values[r * nseg + s];
            if (v > 0) t += v;
        }
        if (t > maxtotal) maxtotal = t;
    }
    for (int r = 0; r < nrows; r++) {
        char lab[64];
        snprintf(lab, sizeof(lab), "%*.*s", label_w, label_w, labels && labels[r] ? labels[r] : "");
        ui_canvas_text(c, y + r, x, lab, UI_CLS_TEXT);
        double total = 0;
        for (int s = 0; s < nseg; s++) {
            double v = values[r * nseg + s];
            if (v > 0) total += v;
        }
        int bx = x + label_w + 1;
        if (!(total > 0)) {
            ui_canvas_text(c, y + r, bx, "N/A", UI_CLS_TEXT);
            continue;
        }
        int len = normalise ? w : (int)lround(total / maxtotal * w);
        double cum = 0;
        int edge = 0;
        for (int s = 0; s < nseg; s++) {
            double v = values[r * nseg + s];
            if (!(v > 0)) continue;
            cum += v;
            int next = (int)lround(cum / total * len);
            for (int i = edge; i < next; i++)
                ui_canvas_put(c, y + r, bx + i, ui_segment_fill(s, unicode), UI_CLS_SERIES + s);
            edge = next;
        }
    }
    return nrows;
}

/* An x-axis label centred under column col of an axis w columns wide starting at x0, kept
 * inside it; skipped when it would touch the previous label (*label_end, -1 before the first). */
void chart_axis_label(ui_canvas *c, int y, int x0, int w, int col, const char *lab, int *label_end)
{
    int len = (int)strlen(lab);
    int lx = col - len / 2;
    if (lx < 0) lx = 0;
    if (lx + len > w) lx = w - len;
    if (lx <= *label_end)
        return;
    ui_canvas_text(c, y, x0 + lx, lab, UI_CLS_AXIS);
    *label_end = lx + len;
}

void ui_chart_share_axis(ui_canvas *c, int y, int x, int label_w, int w, const char *name, int unicode)
{
    if (w < 2)
        return;
    int bx = x + label_w + 1;
    uint32_t hbar = unicode ? 0x2500 : '-', tick = unicode ? 0x252C : '+';
    for (int i = 0; i < w; i++)
        ui_canvas_put(c, y, bx + i, hbar, UI_CLS_AXIS);
    int label_end = -1;
    for (int q = 0; q <= 4; q++) {
        int col = (int)lround(q * (w - 1) / 4.0);
        ui_canvas_put(c, y, bx + col, tick, UI_CLS_AXIS);
        char lab[8];
        snprintf(lab, sizeof(lab), "%d%%", 25 * q);
        chart_axis_label(c, y + 1, bx, w, col, lab, &label_end);
    }
    if (name) {
        char pad[64];
        snprintf(pad, sizeof(pad), "%*.*s", label_w, label_w, name);
        ui_canvas_text(c, y + 1, x, pad, UI_CLS_AXIS);
    }
}

/* The y label column of a chart: the widest tick label and the x axis' name, at most 12. */
int chart_label_width(const ui_tick *ticks, int nticks, ui_unit yunit, const char *xname)
{
    int lw = xname ? (int)strlen(xname) : 0;
    for (int t = 0; t < nticks; t++) {
        char lab[32];
        ui_format_unit(ticks[t].v, yunit, lab, sizeof(lab));
        if ((int)strlen(lab) > lw) lw = (int)strlen(lab);
    }
    return lw > 12 ? 12 : lw;
}

/* Row of value fraction f on a plot of ph rows (row 0 at the top). */
int chart_frac_row(double f, int ph)
{
    return (int)lround((ph - 1) - f * (ph - 1));
}

/* The line chart's frame: the y axis with its labelled ticks in a column of width lw, the x
 * axis with a tick and a label per point (labels that would overlap skipped) and its name. */
static void lines_axes(ui_canvas *c, int y, int x, int lw, int ph, int pw, const ui_scale *sc,
                       const ui_tick *ticks, int nticks, const int *col, const ui_lines_spec *sp)
{
    int px = x + lw + 1, unicode = sp->unicode;
    uint32_t vbar = unicode ? 0x2502 : '|', hbar = unicode ? 0x2500 : '-';
    uint32_t corner = unicode ? 0x2514 : '+', tick = unicode ? 0x253C : '+', ytick = unicode ? 0x2524 : '+';
    for (int r = 0; r < ph; r++)
        ui_canvas_put(c, y + r, x + lw, vbar, UI_CLS_AXIS);
    int last_row = -2;
    for (int t = 0; t < nticks; t++) {
        int r = chart_frac_row(ui_scale_frac(sc, ticks[t].v), ph);
        if (r == last_row) continue;
        last_row = r;
        char lab[32], pad[40];
        ui_format_unit(ticks[t].v, sp->yunit, lab, sizeof(lab));
        snprintf(pad, sizeof(pad), "%*.*s", lw, lw, lab);
        ui_canvas_text(c, y + r, x, pad, UI_CLS_AXIS);
        ui_canvas_put(c, y + r, x + lw, ytick, UI_CLS_AXIS);
    }
    ui_canvas_put(c, y + ph, x + lw, corner, UI_CLS_AXIS);
    for (int i = 0; i < pw; i++)
        ui_canvas_put(c, y + ph, px + i, hbar, UI_CLS_AXIS);
    int label_end = -1;
    for (int i = 0; i < sp->npts; i++) {
        ui_canvas_put(c, y + ph, px + col[i], tick, UI_CLS_AXIS);
        const char *l = sp->xlabels && sp->xlabels[i] ? sp->xlabels[i] : "";
        int len = (int)strlen(l);
        int lx = col[i] - len / 2;
        if (lx < 0) lx = 0;
        if (lx + len > pw) lx = pw - len;
        if (lx <= label_end) continue;      /* would overlap the previous label */
        ui_canvas_text(c, y + ph + 1, px + lx, l, UI_CLS_AXIS);
        label_end = lx + len;
    }
    if (sp->xname) {
        char pad[40];
        snprintf(pad, sizeof(pad), "%*.*s", lw, lw, sp->xname);
        ui_canvas_text(c, y + ph + 1, x, pad, UI_CLS_AXIS);
    }
}

#define LINES_MAX_PTS 64

int ui_chart_lines(ui_canvas *c, int y, int x, int h, int w, const ui_lines_spec *sp, ui_lines_info *info)
{
    int nseries = sp->nseries, npts = sp->npts;
    const double *values = sp->values;
    if (info) memset(info, 0, sizeof(*info));
    if (nseries > UI_CHART_MAX_SERIES) nseries = UI_CHART_MAX_SERIES;
    if (npts > LINES_MAX_PTS) npts = LINES_MAX_PTS;
    int ph = h - 2;
    if (ph < 3 || npts < 1 || nseries < 1)
        return -1;
    double mn = INFINITY, mx = -INFINITY;
    for (int i = 0; i < nseries * npts; i++) {
        double v = values[i];
        if (isnan(v) || (sp->log && v <= 0)) continue;
        if (v < mn) mn = v;
        if (v > mx) mx = v;
    }
    if (!(mx >= mn))
        return -1;
    ui_scale sc;
    ui_scale_init(&sc, mn, mx, sp->log);
    ui_tick ticks[64];
    int nticks = ui_scale_ticks(&sc, ph, ticks, 64);
    int lw = chart_label_width(ticks, nticks, sp->yunit, sp->xname);
    int pw = w - lw - 1;
    if (pw < 2 * npts)
        return -1;
    int px = x + lw + 1;
    int col[LINES_MAX_PTS];
    for (int i = 0; i < npts; i++)
        col[i] = npts == 1 ? pw / 2 : (int)lround((double)i * (pw - 1) / (npts - 1));
    lines_axes(c, y, x, lw, ph, pw, &sc, ticks, nticks, col, sp);
    /* joins first, each series with its own glyph; markers over them */
    for (int s = 0; s < nseries; s++) {
        uint32_t join = ui_series_connector(s, sp->unicode);
        int prev = -1;
        double prow = 0;
        for (int i = 0; i < npts; i++) {
            double f = ui_scale_frac(&sc, values[s * sp->npts + i]);
            if (isnan(f)) { prev = -1; continue; }
            double row = (ph - 1) - f * (ph - 1);
            if (prev >= 0) {
                for (int cx = col[prev] + 1; cx < col[i]; cx++) {
                    double t = (double)(cx - col[prev]) / (col[i] - col[prev]);
                    int ry = (int)lround(prow + t * (row - prow));
                    if (chart_at(c, y + ry, px + cx) == ' ')
                        ui_canvas_put(c, y + ry, px + cx, join, UI_CLS_SERIES + s);
                }
            }
            prev = i;
            prow = row;
        }
    }
    /* markers: count the series on each (row, point) so coinciding points show as one count */
    for (int i = 0; i < npts; i++) {
        int rows[UI_CHART_MAX_SERIES];
        for (int s = 0; s < nseries; s++) {
            double f = ui_scale_frac(&sc, values[s * sp->npts + i]);
            rows[s] = isnan(f) ? -1 : chart_frac_row(f, ph);
        }
        for (int s = 0; s < nseries; s++) {
            if (rows[s] < 0) continue;
            int k = 0, first = s;
            for (int t = 0; t < nseries; t++)
                if (rows[t] == rows[s]) {
                    k++;
                    if (t < first) first = t;
                }
            if (first != s) continue;           /* drawn with the first series on this cell */
            if (k == 1) {
                ui_canvas_put(c, y + rows[s], px + col[i], ui_series_marker(s, sp->unicode), UI_CLS_SERIES + s);
            } else {
                ui_canvas_put(c, y + rows[s], px + col[i], ui_overlap_marker(k), UI_CLS_TEXT);
                if (info) info->overlaps++;
            }
        }
    }
    return 0;
}

/* Places entries from first while they fit, the last row keeping `keep` columns free. */
static int legend_fill(const int *widths, int n, int first, int w, int maxrows, int keep, int *col, int *row)
{
    int placed = 0, cx = 0, r = 0;
    for (int k = first; k < n; k++) {
        int limit = r == maxrows - 1 ? w - keep : w;
        if (cx > 0 && cx + widths[k] > limit) {
            if (r + 1 >= maxrows) break;
            r++;
            cx = 0;
            limit = r == maxrows - 1 ? w - keep : w;
        }
        if (cx == 0 && widths[k] > limit && placed > 0) break;   /* only the first may be cut */
        col[placed] = cx;
        row[placed] = r;
        placed++;
        cx += widths[k];
    }
    return placed;
}

int ui_legend_layout(const int *widths, int n, int first, int w, int maxrows, int more_w, int *col, int *row)
{
    if (first < 0) first = 0;
    if (first >= n || maxrows < 1 || w < 1)
        return 0;
    int placed;
    if (first == 0) {
        placed = legend_fill(widths, n, first, w, maxrows, 0, col, row);
        if (placed == n - first)
            return placed;             /* everything fits: no note, no room kept for one */
    }
    /* paging: every page keeps room for its note ("+N more", or on the last the way back) */
    placed = legend_fill(widths, n, first, w, maxrows, more_w, col, row);
    if (placed == 0) {                 /* not even one beside the note: one entry, cut */
        col[0] = row[0] = 0;
        placed = 1;
    }
    return placed;
}
