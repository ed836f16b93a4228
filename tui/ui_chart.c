/* ui_chart.c: see ui_chart.h. */
#include "tui/ui_chart.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ui_canvas_init(ui_canvas *c, int w, int h)
{
    memset(c, 0, sizeof(*c));
    if (w < 0) w = 0;
    if (h < 0) h = 0;
    size_t n = (size_t)w * (size_t)h;
    c->cp = malloc((n ? n : 1) * sizeof(*c->cp));
    c->cls = malloc(n ? n : 1);
    if (!c->cp || !c->cls) {
        ui_canvas_free(c);
        return -1;
    }
    c->w = w;
    c->h = h;
    ui_canvas_clear(c);
    return 0;
}

void ui_canvas_free(ui_canvas *c)
{
    free(c->cp);
    free(c->cls);
    memset(c, 0, sizeof(*c));
}

void ui_canvas_clear(ui_canvas *c)
{
    size_t n = (size_t)c->w * (size_t)c->h;
    for (size_t i = 0; i < n; i++) {
        c->cp[i] = ' ';
        c->cls[i] = UI_CLS_TEXT;
    }
}

void ui_canvas_put(ui_canvas *c, int y, int x, uint32_t cp, int cls)
{
    if (y < 0 || x < 0 || y >= c->h || x >= c->w)
        return;
    c->cp[(size_t)y * c->w + x] = cp;
    c->cls[(size_t)y * c->w + x] = (unsigned char)cls;
}

static uint32_t at(const ui_canvas *c, int y, int x)
{
    if (y < 0 || x < 0 || y >= c->h || x >= c->w)
        return 0;
    return c->cp[(size_t)y * c->w + x];
}

/* Decodes one UTF-8 sequence; invalid bytes decode as '?' and consume one byte. */
static uint32_t utf8_next(const char **s)
{
    const unsigned char *p = (const unsigned char *)*s;
    uint32_t cp;
    int extra;
    if (p[0] < 0x80) { cp = p[0]; extra = 0; }
    else if ((p[0] & 0xE0) == 0xC0) { cp = p[0] & 0x1F; extra = 1; }
    else if ((p[0] & 0xF0) == 0xE0) { cp = p[0] & 0x0F; extra = 2; }
    else if ((p[0] & 0xF8) == 0xF0) { cp = p[0] & 0x07; extra = 3; }
    else { *s += 1; return '?'; }
    for (int i = 1; i <= extra; i++) {
        if ((p[i] & 0xC0) != 0x80) { *s += 1; return '?'; }
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    *s += 1 + extra;
    return cp;
}

int ui_canvas_text(ui_canvas *c, int y, int x, const char *utf8, int cls)
{
    int n = 0;
    while (*utf8) {
        uint32_t cp = utf8_next(&utf8);
        ui_canvas_put(c, y, x + n, cp, cls);
        n++;
    }
    return n;
}

int ui_utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) { out[0] = (char)cp; out[1] = 0; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        out[2] = 0;
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        out[3] = 0;
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    out[4] = 0;
    return 4;
}

size_t ui_canvas_row_utf8(const ui_canvas *c, int y, char *buf, size_t len)
{
    if (len == 0)
        return 0;
    buf[0] = '\0';
    if (y < 0 || y >= c->h)
        return 0;
    int last = c->w - 1;
    while (last >= 0 && c->cp[(size_t)y * c->w + last] == ' ')
        last--;
    size_t n = 0;
    for (int x = 0; x <= last; x++) {
        char enc[5];
        int k = ui_utf8_encode(c->cp[(size_t)y * c->w + x], enc);
        if (n + (size_t)k >= len)
            break;
        memcpy(buf + n, enc, (size_t)k);
        n += (size_t)k;
    }
    buf[n] = '\0';
    return n;
}

size_t ui_canvas_to_text(const ui_canvas *c, char *buf, size_t len)
{
    size_t n = 0;
    if (len == 0)
        return 0;
    buf[0] = '\0';
    for (int y = 0; y < c->h && n + 1 < len; y++) {
        n += ui_canvas_row_utf8(c, y, buf + n, len - n);
        if (n + 1 < len) {
            buf[n++] = '\n';
            buf[n] = '\0';
        }
    }
    return n;
}

/* ---- scales ------------------------------------------------------------------------------ */
double ui_nice_ceil(double v)
{
    if (!(v > 0) || !isfinite(v))
        return 0;
    double e = floor(log10(v));
    double base = pow(10.0, e);
    static const double steps[] = { 1, 2, 5, 10 };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        double cand = steps[i] * base;
        if (cand >= v * (1 - 1e-12))
            return cand;
    }
    return 10 * base;
}

int ui_scale_init(ui_scale *s, double min, double max, int log)
{
    int fell_back = 0;
    if (max < min) { double t = max; max = min; min = t; }
    if (log && !(min > 0)) {
        log = 0;
        fell_back = 1;
    }
    s->log = log;
    if (log) {
        s->lo = pow(10.0, floor(log10(min)));
        s->hi = pow(10.0, ceil(log10(max)));
        if (s->hi <= s->lo)
            s->hi = s->lo * 10;
        return fell_back;
    }
    s->lo = min >= 0 ? 0 : -ui_nice_ceil(-min);
    s->hi = max > 0 ? ui_nice_ceil(max) : 0;
    if (s->hi <= s->lo)
        s->hi = s->lo + 1;
    return fell_back;
}

double ui_scale_frac(const ui_scale *s, double v)
{
    if (isnan(v))
        return NAN;
    double f;
    if (s->log) {
        if (v <= 0)
            return NAN;
        f = (log10(v) - log10(s->lo)) / (log10(s->hi) - log10(s->lo));
    } else {
        f = (v - s->lo) / (s->hi - s->lo);
    }
    return f < 0 ? 0 : (f > 1 ? 1 : f);
}

void ui_format_value(double v, char *buf, size_t len)
{
    double a = fabs(v);
    if (isnan(v)) snprintf(buf, len, "N/A");
    else if (isinf(v)) snprintf(buf, len, v > 0 ? "inf" : "-inf");
    else if (a == 0) snprintf(buf, len, "0");
    else if (a >= 1e15) snprintf(buf, len, "%.1e", v);
    else if (a >= 1e12) snprintf(buf, len, "%.3gT", v / 1e12);
    else if (a >= 1e9) snprintf(buf, len, "%.3gG", v / 1e9);
    else if (a >= 1e6) snprintf(buf, len, "%.3gM", v / 1e6);
    else if (a >= 1e4) snprintf(buf, len, "%.3gk", v / 1e3);
    else if (a >= 100) snprintf(buf, len, "%.0f", v);
    else if (a >= 10) snprintf(buf, len, "%.1f", v);
    else if (a >= 1) snprintf(buf, len, "%.2f", v);
    else if (a >= 0.01) snprintf(buf, len, "%.3f", v);
    else snprintf(buf, len, "%.1e", v);
}

/* ---- units ------------------------------------------------------------------------------ */
/* %.3g without an exponent for the magnitudes an axis shows (1e-3 .. 1e6) */
static void fmt3(double v, char *buf, size_t len)
{
    double a = fabs(v);
    if (a >= 1000 && a < 1e6)
        snprintf(buf, len, "%.0f", v);
    else
        snprintf(buf, len, "%.3g", v);
}

void ui_format_unit(double v, ui_unit u, char *buf, size_t len)
{
    char num[32];
    double a = fabs(v);
    if (isnan(v)) {
        snprintf(buf, len, "N/A");
        return;
    }
    switch (u) {
    case UI_UNIT_MS:
        if (a == 0) snprintf(buf, len, "0 ms");
        else if (a < 1e-3) { fmt3(v * 1e3, num, sizeof(num)); snprintf(buf, len, "%s us", num); }
        else if (a >= 1e3) { fmt3(v / 1e3, num, sizeof(num)); snprintf(buf, len, "%s s", num); }
        else { fmt3(v, num, sizeof(num)); snprintf(buf, len, "%s ms", num); }
        return;
    case UI_UNIT_GBS:
        fmt3(v, num, sizeof(num));
        snprintf(buf, len, "%s GB/s", num);
        return;
    case UI_UNIT_BYTES: {
        static const char *const pre[] = { "B", "KiB", "MiB", "GiB", "TiB" };
        int k = 0;
        while (k < 4 && a >= 1024) { a /= 1024; v /= 1024; k++; }
        fmt3(v, num, sizeof(num));
        snprintf(buf, len, "%s %s", num, pre[k]);
        return;
    }
    case UI_UNIT_GB:
        fmt3(v, num, sizeof(num));
        snprintf(buf, len, "%s GB", num);
        return;
    case UI_UNIT_PERCENT:
        fmt3(100 * v, num, sizeof(num));
        snprintf(buf, len, "%s%%", num);
        return;
    default:
        ui_format_value(v, buf, len);
        return;
    }
}

/* ---- ticks ------------------------------------------------------------------------------- */
int ui_scale_ticks(const ui_scale *s, int rows, ui_tick *out, int cap)
{
    int n = 0;
    if (rows < 1 || cap < 1)
        return 0;
    double span_rows = rows - 1 > 0 ? rows - 1 : 1;
    if (s->log) {
        int d0 = (int)lround(log10(s->lo)), d1 = (int)lround(log10(s->hi));
        int decades = d1 - d0 > 0 ? d1 - d0 : 1;
        double per = span_rows / decades;          /* rows per decade */
        int every = per >= 2 ? 1 : (int)ceil(2 / per);
        int minor = per >= 7;
        for (int d = d0; d <= d1 && n < cap; d++) {
            if ((d - d0) % every != 0) continue;
            double base = pow(10.0, d);
            out[n++] = (ui_tick){ base, 1 };
            if (minor && d < d1) {
                if (n < cap) out[n++] = (ui_tick){ 2 * base, 0 };
                if (n < cap) out[n++] = (ui_tick){ 5 * base, 0 };
            }
        }
        return n;
    }
    double range = s->hi - s->lo;
    /* the smallest 1/2/5 x 10^k step that puts labels 2 rows apart (multiples of it from lo) */
    double step = ui_nice_ceil(2 * range / span_rows);
    if (!(step > 0))
        return 0;
    for (int k = 0; n < cap; k++) {
        double v = s->lo + k * step;
        if (v > s->hi * (1 + 1e-12) + 1e-300) break;
        if (fabs(v) < step * 1e-9) v = 0;
        out[n++] = (ui_tick){ v, 1 };
    }
    return n;
}

/* ---- glyphs ----------------------------------------------------------------------------- */
static const char ascii_fills[] = "#@%*+=o:x&$~^-/.";
static const uint32_t unicode_fills[] = { 0x2588, 0x2593, 0x2592, 0x2591 };
/* markers never use digits (the overlap counts), '*' (many overlaps) or a connector glyph */
static const char ascii_markers[] = "ox#@%&$svzAHMWXY";
static const uint32_t unicode_markers[] = { 0x25CF, 0x25CB, 0x25A0, 0x25A1, 0x25B2, 0x25B3, 0x25C6, 0x25C7 };
static const char ascii_connectors[] = ".-:~',`_;=!\"^<>/";
/* middle dot, dashed and dotted box lines, ratio, tilde... then the ASCII ones */
static const uint32_t unicode_connectors[] = { 0x00B7, 0x254C, 0x2508, 0x2236, '~', 0x2025, '\'', ',' };

uint32_t ui_segment_fill(int seg, int unicode)
{
    if (seg < 0) seg = 0;
    seg %= 16;
    if (unicode) {
        int nu = (int)(sizeof(unicode_fills) / sizeof(unicode_fills[0]));
        if (seg < nu)
            return unicode_fills[seg];
        /* the rest continue with ASCII fills that are not block-like */
        return (uint32_t)(unsigned char)ascii_fills[seg - nu + 1];
    }
    return (uint32_t)(unsigned char)ascii_fills[seg];
}

uint32_t ui_series_marker(int series, int unicode)
{
    if (series < 0) series = 0;
    series %= 16;
    if (unicode && series < (int)(sizeof(unicode_markers) / sizeof(unicode_markers[0])))
        return unicode_markers[series];
    return (uint32_t)(unsigned char)ascii_markers[series];
}

uint32_t ui_series_connector(int series, int unicode)
{
    if (series < 0) series = 0;
    series %= 16;
    int nu = (int)(sizeof(unicode_connectors) / sizeof(unicode_connectors[0]));
    if (unicode && series < nu)
        return unicode_connectors[series];
    return (uint32_t)(unsigned char)ascii_connectors[series];
}

uint32_t ui_overlap_marker(int k)
{
    return k >= 2 && k <= 9 ? (uint32_t)('0' + k) : '*';
}

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
static void axis_label(ui_canvas *c, int y, int x0, int w, int col, const char *lab, int *label_end)
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
        axis_label(c, y + 1, bx, w, col, lab, &label_end);
    }
    if (name) {
        char pad[64];
        snprintf(pad, sizeof(pad), "%*.*s", label_w, label_w, name);
        ui_canvas_text(c, y + 1, x, pad, UI_CLS_AXIS);
    }
}

/* Row of value fraction f on a plot of ph rows (row 0 at the top). */
/* The y label column of a chart: the widest tick label and the x axis' name, at most 12. */
static int label_width(const ui_tick *ticks, int nticks, ui_unit yunit, const char *xname)
{
    int lw = xname ? (int)strlen(xname) : 0;
    for (int t = 0; t < nticks; t++) {
        char lab[32];
        ui_format_unit(ticks[t].v, yunit, lab, sizeof(lab));
        if ((int)strlen(lab) > lw) lw = (int)strlen(lab);
    }
    return lw > 12 ? 12 : lw;
}

static int frac_row(double f, int ph)
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
        int r = frac_row(ui_scale_frac(sc, ticks[t].v), ph);
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
    int lw = label_width(ticks, nticks, sp->yunit, sp->xname);
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
                    if (at(c, y + ry, px + cx) == ' ')
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
            rows[s] = isnan(f) ? -1 : frac_row(f, ph);
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
        axis_label(c, y + 1, px, pw, col, lab, &label_end);
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

int ui_chart_scatter(ui_canvas *c, int y, int x, int h, int w, const ui_scatter_spec *sp,
                     ui_scatter_info *info)
{
    if (info) memset(info, 0, sizeof(*info));
    int ph = h - 2;
    if (ph < 3 || sp->n < 1)
        return -1;
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (int i = 0; i < sp->n; i++) {
        if (!isfinite(sp->xs[i]) || !isfinite(sp->ys[i])) continue;
        if (sp->xs[i] < xmin) xmin = sp->xs[i];
        if (sp->xs[i] > xmax) xmax = sp->xs[i];
        if (sp->ys[i] < ymin) ymin = sp->ys[i];
        if (sp->ys[i] > ymax) ymax = sp->ys[i];
    }
    if (!(xmax >= xmin) || !(ymax >= ymin))
        return -1;
    ui_scale sx, sy;
    ui_scale_init(&sx, xmin < 0 ? xmin : 0, xmax, 0);
    ui_scale_init(&sy, ymin < 0 ? ymin : 0, ymax, 0);
    /* configurations often differ by a few percent: an axis from 0 would put them all on one
       row or column */
    if (sp->xtight) scale_tight(&sx, xmin, xmax);
    if (sp->ytight) scale_tight(&sy, ymin, ymax);
    ui_tick ticks[64];
    int nticks = ui_scale_ticks(&sy, ph, ticks, 64);
    int lw = label_width(ticks, nticks, sp->yunit, sp->xname);
    int pw = w - lw - 1;
    if (pw < 10)
        return -1;
    int px = x + lw + 1;
    /* the y axis and its labels */
    uint32_t vbar = sp->unicode ? 0x2502 : '|', ytick = sp->unicode ? 0x2524 : '+';
    for (int r = 0; r < ph; r++)
        ui_canvas_put(c, y + r, x + lw, vbar, UI_CLS_AXIS);
    int last_row = -2;
    for (int t = 0; t < nticks; t++) {
        int r = frac_row(ui_scale_frac(&sy, ticks[t].v), ph);
        if (r == last_row) continue;
        last_row = r;
        char lab[32], pad[40];
        ui_format_unit(ticks[t].v, sp->yunit, lab, sizeof(lab));
        snprintf(pad, sizeof(pad), "%*.*s", lw, lw, lab);
        ui_canvas_text(c, y + r, x, pad, UI_CLS_AXIS);
        ui_canvas_put(c, y + r, x + lw, ytick, UI_CLS_AXIS);
    }
    scatter_x_axis(c, y + ph, x, lw, pw, &sx, sp);
    /* the limit first: every mark draws over it */
    if (!isnan(sp->vline) && sp->vline >= sx.lo && sp->vline <= sx.hi) {
        int col = (int)lround(ui_scale_frac(&sx, sp->vline) * (pw - 1));
        for (int r = 0; r < ph; r++)
            ui_canvas_put(c, y + r, px + col, sp->vline_glyph, UI_CLS_AXIS);
        if (info) info->vline_shown = 1;
    }
    /* the front's joins, on cells nothing else marks */
    uint32_t join = ui_series_connector(sp->line_series, sp->unicode);
    for (int k = 1; k < sp->nline; k++) {
        int a = sp->line[k - 1], b = sp->line[k];
        if (a < 0 || b < 0 || a >= sp->n || b >= sp->n) continue;
        double ca = ui_scale_frac(&sx, sp->xs[a]) * (pw - 1), cb = ui_scale_frac(&sx, sp->xs[b]) * (pw - 1);
        double ra = (ph - 1) - ui_scale_frac(&sy, sp->ys[a]) * (ph - 1);
        double rb = (ph - 1) - ui_scale_frac(&sy, sp->ys[b]) * (ph - 1);
        if (isnan(ca) || isnan(cb) || isnan(ra) || isnan(rb)) continue;
        /* step along the longer of the two spans so the join has no gaps */
        int steps = (int)ceil(fmax(fabs(cb - ca), fabs(rb - ra)));
        for (int s = 1; s < steps; s++) {
            double t = (double)s / steps;
            int cx = (int)lround(ca + t * (cb - ca)), ry = (int)lround(ra + t * (rb - ra));
            uint32_t here = at(c, y + ry, px + cx);
            if (here == ' ' || here == sp->vline_glyph)
                ui_canvas_put(c, y + ry, px + cx, join, UI_CLS_SERIES + sp->line_series);
        }
    }
    /* marks: per cell the highest series wins; the highlight last */
    int maxs = 0;
    for (int i = 0; i < sp->n; i++)
        if (sp->series[i] > maxs) maxs = sp->series[i];
    int *owner = malloc(sizeof(int) * (size_t)pw * (size_t)ph);
    if (!owner)
        return -1;
    for (int i = 0; i < pw * ph; i++) owner[i] = -1;
    for (int i = 0; i < sp->n; i++) {
        double fx = ui_scale_frac(&sx, sp->xs[i]), fy = ui_scale_frac(&sy, sp->ys[i]);
        if (isnan(fx) || isnan(fy) || !isfinite(sp->xs[i]) || !isfinite(sp->ys[i])) continue;
        int cx = (int)lround(fx * (pw - 1)), ry = frac_row(fy, ph);
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
        int cx = (int)lround(ui_scale_frac(&sx, sp->xs[hl]) * (pw - 1));
        int ry = frac_row(ui_scale_frac(&sy, sp->ys[hl]), ph);
        ui_canvas_put(c, y + ry, px + cx, sp->highlight_glyph, UI_CLS_SERIES + maxs + 1);
    }
    free(owner);
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
