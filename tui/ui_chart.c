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

/* ---- glyphs ----------------------------------------------------------------------------- */
static const char ascii_fills[] = "#@%*+=o:x&$~^-/.";
static const uint32_t unicode_fills[] = { 0x2588, 0x2593, 0x2592, 0x2591 };
static const char ascii_markers[] = "*o+x#@%&$=~^sdvz";
static const uint32_t unicode_markers[] = { 0x25CF, 0x25CB, 0x25A0, 0x25A1, 0x25B2, 0x25B3, 0x25C6, 0x25C7 };

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

/* The line chart's frame: the y axis with three ticks (top, middle, bottom) in a column of
 * width lw, the x axis with a tick and a label per point (labels that would overlap skipped). */
static void lines_axes(ui_canvas *c, int y, int x, int lw, int ph, int pw, const ui_scale *sc, const int *col,
                       int npts, const char *const *xlabels, int unicode)
{
    int px = x + lw + 1;
    uint32_t vbar = unicode ? 0x2502 : '|', hbar = unicode ? 0x2500 : '-';
    uint32_t corner = unicode ? 0x2514 : '+', tick = unicode ? 0x253C : '+';
    for (int r = 0; r < ph; r++)
        ui_canvas_put(c, y + r, x + lw, vbar, UI_CLS_AXIS);
    double mid = sc->log ? sqrt(sc->lo * sc->hi) : (sc->lo + sc->hi) / 2;
    const double ticks[3] = { sc->hi, mid, sc->lo };
    const int trow[3] = { 0, (ph - 1) / 2, ph - 1 };
    for (int t = 0; t < 3; t++) {
        char lab[32], pad[32];
        ui_format_value(ticks[t], lab, sizeof(lab));
        snprintf(pad, sizeof(pad), "%*.*s", lw, lw, lab);
        ui_canvas_text(c, y + trow[t], x, pad, UI_CLS_AXIS);
    }
    ui_canvas_put(c, y + ph, x + lw, corner, UI_CLS_AXIS);
    for (int i = 0; i < pw; i++)
        ui_canvas_put(c, y + ph, px + i, hbar, UI_CLS_AXIS);
    int label_end = -1;
    for (int i = 0; i < npts; i++) {
        ui_canvas_put(c, y + ph, px + col[i], tick, UI_CLS_AXIS);
        const char *l = xlabels && xlabels[i] ? xlabels[i] : "";
        int len = (int)strlen(l);
        int lx = col[i] - len / 2;
        if (lx < 0) lx = 0;
        if (lx + len > pw) lx = pw - len;
        if (lx <= label_end) continue;      /* would overlap the previous label */
        ui_canvas_text(c, y + ph + 1, px + lx, l, UI_CLS_AXIS);
        label_end = lx + len;
    }
}

int ui_chart_lines(ui_canvas *c, int y, int x, int h, int w, const double *values, int nseries,
                   int npts, const char *const *xlabels, int log, int unicode)
{
    const int lw = 8;                      /* y tick label width */
    int ph = h - 2, pw = w - lw - 1;
    if (ph < 3 || npts < 1 || pw < 2 * npts || nseries < 1)
        return -1;
    double mn = INFINITY, mx = -INFINITY;
    for (int i = 0; i < nseries * npts; i++) {
        double v = values[i];
        if (isnan(v) || (log && v <= 0)) continue;
        if (v < mn) mn = v;
        if (v > mx) mx = v;
    }
    if (!(mx >= mn))
        return -1;
    ui_scale sc;
    ui_scale_init(&sc, mn, mx, log);
    int px = x + lw + 1;
    int col[64];
    if (npts > 64) npts = 64;
    for (int i = 0; i < npts; i++)
        col[i] = npts == 1 ? pw / 2 : (int)lround((double)i * (pw - 1) / (npts - 1));
    lines_axes(c, y, x, lw, ph, pw, &sc, col, npts, xlabels, unicode);
    /* joins first, markers over them */
    uint32_t dot = unicode ? 0x00B7 : '.';
    for (int s = 0; s < nseries; s++) {
        int prev = -1;
        double prow = 0;
        for (int i = 0; i < npts; i++) {
            double f = ui_scale_frac(&sc, values[s * npts + i]);
            if (isnan(f)) { prev = -1; continue; }
            double row = (ph - 1) - f * (ph - 1);
            if (prev >= 0) {
                for (int cx = col[prev] + 1; cx < col[i]; cx++) {
                    double t = (double)(cx - col[prev]) / (col[i] - col[prev]);
                    int ry = (int)lround(prow + t * (row - prow));
                    if (at(c, y + ry, px + cx) == ' ')
                        ui_canvas_put(c, y + ry, px + cx, dot, UI_CLS_SERIES + s);
                }
            }
            prev = i;
            prow = row;
        }
    }
    for (int s = 0; s < nseries; s++)
        for (int i = 0; i < npts; i++) {
            double f = ui_scale_frac(&sc, values[s * npts + i]);
            if (isnan(f)) continue;
            int ry = (int)lround((ph - 1) - f * (ph - 1));
            ui_canvas_put(c, y + ry, px + col[i], ui_series_marker(s, unicode), UI_CLS_SERIES + s);
        }
    return 0;
}
