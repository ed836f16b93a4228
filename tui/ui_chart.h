/* ui_chart.h: chart scaling and rendering into a text canvas. Pure: no curses, no I/O, so
 * scaling and rendering are unit-tested against plain text.
 *
 * A canvas is a grid of cells; each holds one Unicode code point and a style class
 * (UI_CLS_TEXT, UI_CLS_AXIS, or UI_CLS_SERIES + i for series/segment i). The view maps the
 * classes to theme attributes; the glyphs alone keep every chart readable in monochrome:
 * each stacked segment has its own fill character and each line series its own marker
 * (htop's "|#*@$%&." bars). `unicode` selects block/box glyphs (UTF-8 locales); 0 gives
 * plain ASCII.
 *
 * Values that are NaN (never measured) are not drawn; labels print "N/A" for them.
 */
#ifndef PDBX_UI_CHART_H
#define PDBX_UI_CHART_H

#include <stddef.h>
#include <stdint.h>

enum { UI_CLS_TEXT = 0, UI_CLS_AXIS = 1, UI_CLS_SERIES = 2 };
#define UI_CHART_MAX_SERIES 16

typedef struct {
    int w, h;
    uint32_t *cp;            /* w*h code points */
    unsigned char *cls;      /* w*h style classes */
} ui_canvas;

int ui_canvas_init(ui_canvas *c, int w, int h);     /* 0, or -1 when out of memory */
void ui_canvas_free(ui_canvas *c);
void ui_canvas_clear(ui_canvas *c);
void ui_canvas_put(ui_canvas *c, int y, int x, uint32_t cp, int cls);   /* clipped */
/* Writes UTF-8 text (clipped at the canvas edge). Returns the columns written. */
int ui_canvas_text(ui_canvas *c, int y, int x, const char *utf8, int cls);
/* One row as UTF-8 with trailing blanks removed. Returns the byte length (truncated to len-1). */
size_t ui_canvas_row_utf8(const ui_canvas *c, int y, char *buf, size_t len);
/* Every row joined with '\n' (trailing blanks removed). */
size_t ui_canvas_to_text(const ui_canvas *c, char *buf, size_t len);

/* Encodes one code point as UTF-8 into out (>= 5 bytes); returns the byte count. */
int ui_utf8_encode(uint32_t cp, char *out);

/* ---- scales ------------------------------------------------------------------------------ */
typedef struct {
    int log;                 /* 1: logarithmic (decades) */
    double lo, hi;           /* axis ends after rounding */
} ui_scale;

/* Smallest of 1, 2, 5 x 10^k that is >= v (v > 0); 0 for v <= 0. */
double ui_nice_ceil(double v);
/* Axis for data in [min, max]. Linear: lo = 0 for non-negative data, hi = ui_nice_ceil(max).
 * Log: lo/hi rounded out to whole decades; needs min > 0 (else falls back to linear and
 * returns 1). NaN inputs are the caller's to skip. Returns 0, or 1 on the fallback. */
int ui_scale_init(ui_scale *s, double min, double max, int log);
/* Position of v on the axis in [0, 1] (clamped); NaN when v is NaN or, in log, v <= 0. */
double ui_scale_frac(const ui_scale *s, double v);
/* Compact number: 3 significant digits, k/M/G for large, exponent for tiny; "N/A" for NaN. */
void ui_format_value(double v, char *buf, size_t len);

/* ---- glyphs ----------------------------------------------------------------------------- */
uint32_t ui_segment_fill(int seg, int unicode);     /* distinct per segment 0..15 */
uint32_t ui_series_marker(int series, int unicode); /* distinct per series 0..15 */

/* ---- charts ------------------------------------------------------------------------------ */
/* A horizontal bar of fraction frac (0..1) in w columns at (y, x); Unicode uses eighth blocks
 * for the partial cell. NaN draws "N/A". */
void ui_chart_hbar(ui_canvas *c, int y, int x, int w, double frac, int cls, int unicode);

/* Stacked horizontal bars, one per row: `labels[r]` (right-aligned in label_w columns), then a
 * bar of w columns whose segments are values[r*nseg + s] (NaN or <= 0 segments are empty).
 * normalise = 1 scales every bar to the full width (shares); 0 scales to the largest total.
 * Segment edges are placed at the rounded cumulative sums, so the segments of a bar always
 * fill exactly its rounded length. Rows start at y; returns the rows drawn. */
int ui_chart_stacked(ui_canvas *c, int y, int x, int label_w, int w,
                     const char *const *labels, const double *values, int nrows, int nseg,
                     int normalise, int unicode);

/* A line chart of nseries series over npts categorical x positions (evenly spaced, labelled
 * xlabels[i]) in the canvas area (y, x, h, w): y-axis tick labels on the left, the x axis and
 * its labels at the bottom (2 rows). values[s*npts + i], NaN = missing. Points are the series
 * marker; consecutive points are joined with dots in the series' class.
 * Returns 0, or -1 when the area is too small (nothing drawn) or no value is drawable. */
int ui_chart_lines(ui_canvas *c, int y, int x, int h, int w, const double *values, int nseries,
                   int npts, const char *const *xlabels, int log, int unicode);

#endif
