/* ui_chart_scatter.c: the scatter chart of ui_chart.h (ui_chart_scatter): tight axes, the
 * limit line, the front's joins and one mark per cell. */
#include "tui/ui_chart.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/ui_chart_internal.h"

/* The scatter chart's x axis: a rule under the plot with a tick and a label per tick of sc
 * (labels that would overlap skipped), and the axis' name left of the labels. */
static void scatter_x_axis(ui_canvas *c, int y, int x, int lw, int pw, const ui_scale *sc,
                           const ui_scatter_spec *sp)
{
    int px = x + lw + 1;
    uint32_t hbar = sp->unicode ? 0x2500 : '-', corner = sp->unicode ? 0x2514 : '+';
    uint32_t tick = sp->unicode ? 0x252C : '+';
    ui_canvas_put(c, y, x + lw, corner, UI_CLS_AXIS);
    for (int i = 0; i < pw; i++)
        ui_canvas_put(c, y, px + i, hbar, UI_CLS_AXIS);
    /* ui_scale_ticks spaces labels 2 "rows" apart: a row of it is 5 columns here, so labels
       sit about 10 columns apart */
    ui_tick ticks[64];
    int nt = ui_scale_ticks(sc, pw / 5 > 1 ? pw / 5 : 1, ticks, 64);
    int label_end = -1;
    for (int t = 0; t < nt; t++) {
        int col = (int)lround(ui_scale_frac(sc, ticks[t].v) * (pw - 1));
        if (col > 0)             /* the corner marks the origin */
            ui_canvas_put(c, y, px + col, tick, UI_CLS_AXIS);
        char lab[32];
        ui_format_unit(ticks[t].v, sp->xunit, lab, sizeof(lab));
        chart_axis_label(c, y + 1, px, pw, col, lab, &label_end);
    }
    if (sp->xname) {
        char pad[40];
        snprintf(pad, sizeof(pad), "%*.*s", lw, lw, sp->xname);
        ui_canvas_text(c, y + 1, x, pad, UI_CLS_AXIS);
    }
}

/* A linear axis over [min, max] rounded out to a 1/2/5 x 10^k step (about 4 steps). */
static void scale_tight(ui_scale *s, double min, double max)
{
    double range = max - min > 0 ? max - min : (fabs(max) > 0 ? fabs(max) * 0.1 : 1);
    double step = ui_nice_ceil(range / 4);
    s->log = 0;
    s->lo = floor(min / step) * step;
    s->hi = ceil(max / step) * step;
    if (s->hi <= s->lo) s->hi = s->lo + step;
}

/* The scatter's plot: its scales, ph rows and pw columns from column px. */
typedef struct {
    ui_scale sx, sy;
    int ph, pw, px;
} scatter_plot;

/* The ranges of the points with both coordinates finite: 0, or -1 when there are none. */
static int scatter_bounds(const ui_scatter_spec *sp, double *xmin, double *xmax, double *ymin,
                          double *ymax)
{
    *xmin = INFINITY, *xmax = -INFINITY, *ymin = INFINITY, *ymax = -INFINITY;
    for (int i = 0; i < sp->n; i++) {
        if (!isfinite(sp->xs[i]) || !isfinite(sp->ys[i])) continue;
        if (sp->xs[i] < *xmin) *xmin = sp->xs[i];
        if (sp->xs[i] > *xmax) *xmax = sp->xs[i];
        if (sp->ys[i] < *ymin) *ymin = sp->ys[i];
        if (sp->ys[i] > *ymax) *ymax = sp->ys[i];
    }
    if (!(*xmax >= *xmin) || !(*ymax >= *ymin))
        return -1;
    return 0;
}

/* The y axis and its labels: a rule left of the plot, a labelled tick per row of ticks. */
static void scatter_y_axis(ui_canvas *c, int y, int x, int lw, const scatter_plot *p,
                           const ui_tick *ticks, int nticks, const ui_scatter_spec *sp)
{
    const int ph = p->ph;
    uint32_t vbar = sp->unicode ? 0x2502 : '|', ytick = sp->unicode ? 0x2524 : '+';
    for (int r = 0; r < ph; r++)
        ui_canvas_put(c, y + r, x + lw, vbar, UI_CLS_AXIS);
    int last_row = -2;
    for (int t = 0; t < nticks; t++) {
        int r = chart_frac_row(ui_scale_frac(&p->sy, ticks[t].v), ph);
        if (r == last_row) continue;
        last_row = r;
        char lab[32], pad[40];
        ui_format_unit(ticks[t].v, sp->yunit, lab, sizeof(lab));
        snprintf(pad, sizeof(pad), "%*.*s", lw, lw, lab);
        ui_canvas_text(c, y + r, x, pad, UI_CLS_AXIS);
        ui_canvas_put(c, y + r, x + lw, ytick, UI_CLS_AXIS);
    }
}

/* The front's joins, on cells nothing else marks. */
static void scatter_joins(ui_canvas *c, int y, const scatter_plot *p, const ui_scatter_spec *sp)
{
    const int ph = p->ph, pw = p->pw, px = p->px;
    uint32_t join = ui_series_connector(sp->line_series, sp->unicode);
    for (int k = 1; k < sp->nline; k++) {
        int a = sp->line[k - 1], b = sp->line[k];
        if (a < 0 || b < 0 || a >= sp->n || b >= sp->n) continue;
        double ca = ui_scale_frac(&p->sx, sp->xs[a]) * (pw - 1), cb = ui_scale_frac(&p->sx, sp->xs[b]) * (pw - 1);
        double ra = (ph - 1) - ui_scale_frac(&p->sy, sp->ys[a]) * (ph - 1);
        double rb = (ph - 1) - ui_scale_frac(&p->sy, sp->ys[b]) * (ph - 1);
        if (isnan(ca) || isnan(cb) || isnan(ra) || isnan(rb)) continue;
        /* step along the longer of the two spans so the join has no gaps */
        int steps = (int)ceil(fmax(fabs(cb - ca), fabs(rb - ra)));
        for (int s = 1; s < steps; s++) {
            double t = (double)s / steps;
            int cx = (int)lround(ca + t * (cb - ca)), ry = (int)lround(ra + t * (rb - ra));
            uint32_t here = chart_at(c, y + ry, px + cx);
            if (here == ' ' || here == sp->vline_glyph)
                ui_canvas_put(c, y + ry, px + cx, join, UI_CLS_SERIES + sp->line_series);
        }
    }
}

/* The marks: per cell the highest series wins; the highlight last. 0, or -1 out of memory. */
static int scatter_marks(ui_canvas *c, int y, const scatter_plot *p, const ui_scatter_spec *sp,
                         ui_scatter_info *info)
{
    const int ph = p->ph, pw = p->pw, px = p->px;
    int maxs = 0;
    for (int i = 0; i < sp->n; i++)
        if (sp->series[i] > maxs) maxs = sp->series[i];
    int *owner = malloc(sizeof(int) * (size_t)pw * (size_t)ph);
    if (!owner)
        return -1;
    for (int i = 0; i < pw * ph; i++) owner[i] = -1;
    for (int i = 0; i < sp->n; i++) {
        double fx = ui_scale_frac(&p->sx, sp->xs[i]), fy = ui_scale_frac(&p->sy, sp->ys[i]);
        if (isnan(fx) || isnan(fy) || !isfinite(sp->xs[i]) || !isfinite(sp->ys[i])) continue;
        int cx = (int)lround(fx * (pw - 1)), ry = chart_frac_row(fy, ph);
        int *o = &owner[ry * pw + cx];
        if (*o >= 0) {
            if (info) info->hidden++;
            if (sp->series[*o] >= sp->series[i]) continue;
        }
        *o = i;
    }
    for (int r = 0; r < ph; r++)
        for (int cx = 0; cx < pw; cx++) {
            int i = owner[r * pw + cx];
            if (i >= 0)
                ui_canvas_put(c, y + r, px + cx, sp->markers ? sp->markers[sp->series[i]]
                              : ui_series_marker(sp->series[i], sp->unicode), UI_CLS_SERIES + sp->series[i]);
        }
    int hl = sp->highlight;
    if (hl >= 0 && hl < sp->n && isfinite(sp->xs[hl]) && isfinite(sp->ys[hl])) {
        int cx = (int)lround(ui_scale_frac(&p->sx, sp->xs[hl]) * (pw - 1));
        int ry = chart_frac_row(ui_scale_frac(&p->sy, sp->ys[hl]), ph);
        ui_canvas_put(c, y + ry, px + cx, sp->highlight_glyph, UI_CLS_SERIES + maxs + 1);
    }
    free(owner);
    return 0;
}

int ui_chart_scatter(ui_canvas *c, int y, int x, int h, int w, const ui_scatter_spec *sp,
                     ui_scatter_info *info)
{
    if (info) memset(info, 0, sizeof(*info));
    scatter_plot p;
    p.ph = h - 2;
    if (p.ph < 3 || sp->n < 1)
        return -1;
    double xmin, xmax, ymin, ymax;
    if (scatter_bounds(sp, &xmin, &xmax, &ymin, &ymax) != 0)
        return -1;
    ui_scale_init(&p.sx, xmin < 0 ? xmin : 0, xmax, 0);
    ui_scale_init(&p.sy, ymin < 0 ? ymin : 0, ymax, 0);
    /* configurations often differ by a few percent: an axis from 0 would put them all on one
       row or column */
    if (sp->xtight) scale_tight(&p.sx, xmin, xmax);
    if (sp->ytight) scale_tight(&p.sy, ymin, ymax);
    ui_tick ticks[64];
    int nticks = ui_scale_ticks(&p.sy, p.ph, ticks, 64);
    int lw = chart_label_width(ticks, nticks, sp->yunit, sp->xname);
    p.pw = w - lw - 1;
    if (p.pw < 10)
        return -1;
    p.px = x + lw + 1;
    scatter_y_axis(c, y, x, lw, &p, ticks, nticks, sp);
    scatter_x_axis(c, y + p.ph, x, lw, p.pw, &p.sx, sp);
    /* the limit first: every mark draws over it */
    if (!isnan(sp->vline) && sp->vline >= p.sx.lo && sp->vline <= p.sx.hi) {
        int col = (int)lround(ui_scale_frac(&p.sx, sp->vline) * (p.pw - 1));
        for (int r = 0; r < p.ph; r++)
            ui_canvas_put(c, y + r, p.px + col, sp->vline_glyph, UI_CLS_AXIS);
        if (info) info->vline_shown = 1;
    }
    scatter_joins(c, y, &p, sp);
    return scatter_marks(c, y, &p, sp, info);
}
