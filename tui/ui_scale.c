/* ui_scale.c: the value axes of ui_chart.h: nice bounds, linear and log scales, value and
 * unit formatting, tick placement. */
#include "tui/ui_chart.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
