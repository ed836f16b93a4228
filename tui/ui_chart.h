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

/* ---- units ------------------------------------------------------------------------------ */
typedef enum {
    UI_UNIT_NONE = 0,        /* plain number (ui_format_value) */
    UI_UNIT_MS,              /* a time in ms: "0.1 ms", "10 ms"; "us" below 1 us... "s" from 1000 ms */
    UI_UNIT_GBS,             /* "0.5 GB/s" */
    UI_UNIT_BYTES,           /* binary prefixes: "4 KiB", "64 KiB", "1 MiB" */
    UI_UNIT_PERCENT,         /* a fraction 0..1 shown as "25%" */
    UI_UNIT_GB,              /* decimal gigabytes (1e9 bytes, the advise model's unit): "12 GB" */
} ui_unit;

/* v with its unit, at most 3 significant digits and no trailing zeros ("N/A" for NaN). */
void ui_format_unit(double v, ui_unit u, char *buf, size_t len);

/* ---- ticks ------------------------------------------------------------------------------- */
typedef struct {
    double v;
    int major;               /* 1: a decade (log) or a step (linear); 0: a 2 or 5 sub-tick */
} ui_tick;

/* The labelled ticks of scale s on an axis of `rows` rows (one label per row, a blank row between
 * labels). Log: every decade from lo to hi (every 2nd, 3rd... decade when the decades are closer
 * than 2 rows), plus 2 and 5 x each decade when a decade spans >= 7 rows. Linear: multiples of
 * the largest 1/2/5 x 10^k step that keeps labels 2 rows apart, from lo. Ascending; returns the
 * count (<= cap). */
int ui_scale_ticks(const ui_scale *s, int rows, ui_tick *out, int cap);

/* ---- glyphs ----------------------------------------------------------------------------- */
uint32_t ui_segment_fill(int seg, int unicode);     /* distinct per segment 0..15 */
uint32_t ui_series_marker(int series, int unicode); /* distinct per series 0..15, never a digit */
/* The glyph that joins a series' consecutive points: distinct per series 0..15 and from every
 * marker, so the lines tell apart in monochrome. */
uint32_t ui_series_connector(int series, int unicode);
/* The marker of a cell where k >= 2 series have a point: the digit k ('2'..'9'), '*' above 9. */
uint32_t ui_overlap_marker(int k);

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
/* The share axis under normalised stacked bars (2 rows at y): a rule from x over w columns with
 * ticks at 0, 25, 50, 75 and 100% and their labels; `name` (e.g. "share") right-aligned in the
 * label_w columns left of it on the label row. */
void ui_chart_share_axis(ui_canvas *c, int y, int x, int label_w, int w, const char *name, int unicode);

/* A line chart of nseries series over npts categorical x positions (evenly spaced). */
typedef struct {
    const double *values;            /* values[s*npts + i], NaN = missing */
    int nseries, npts;
    const char *const *xlabels;      /* npts labels under the x ticks (with their unit) */
    const char *xname;               /* the x axis' name (and unit), e.g. "MBS"; NULL: none */
    ui_unit yunit;                   /* unit of the y tick labels */
    int log, unicode;
} ui_lines_spec;

typedef struct {
    int overlaps;                    /* cells where markers of >= 2 series coincide */
} ui_lines_info;

/* Draws the chart in the canvas area (y, x, h, w): y tick labels (ui_scale_ticks, with the unit)
 * right-aligned left of the y axis, the x axis with a tick per point and the labels that fit,
 * and the x axis' name left of the x labels (2 rows under the plot). Each series' points are
 * its marker, joined by its connector glyph (class UI_CLS_SERIES + s); a cell where points of
 * k >= 2 series coincide shows ui_overlap_marker(k) (class UI_CLS_TEXT) instead of hiding all
 * but one. info (may be NULL) says what the legend must explain.
 * Returns 0, or -1 when the area is too small (nothing drawn) or no value is drawable. */
int ui_chart_lines(ui_canvas *c, int y, int x, int h, int w, const ui_lines_spec *spec, ui_lines_info *info);

/* A scatter chart of n points (xs[i], ys[i]) on two linear axes from 0 (the advise screen's
 * step time vs memory per GPU). Point i is drawn with series[i]'s marker (class UI_CLS_SERIES +
 * series[i]); where points fall on one cell the highest series wins (a later series is the more
 * important mark), and the highlighted point is drawn over all of them with highlight_glyph.
 * The points line[0..nline-1] are joined in that order with line_series' connector (a front).
 * vline (NaN: none) draws a vertical rule of vline_glyph where it falls inside the x axis (a
 * limit, e.g. the GPU's memory). Axes as ui_chart_lines: y tick labels with yunit left of the
 * y axis, x ticks with xunit under the plot (labels that would overlap skipped) and xname left
 * of them. NaN coordinates are not drawn. */
typedef struct {
    const double *xs, *ys;
    int xtight, ytight;              /* 1: that axis spans the data (rounded out to a 1/2/5
                                      * step) rather than starting at 0 */
    const int *series;
    int n;
    const uint32_t *markers;         /* per series, NULL: ui_series_marker */
    const int *line;
    int nline, line_series;
    int highlight;                   /* index of the point to mark, -1: none */
    uint32_t highlight_glyph;
    double vline;
    uint32_t vline_glyph;
    const char *xname;
    ui_unit xunit, yunit;
    int unicode;
} ui_scatter_spec;

typedef struct {
    int vline_shown;                 /* the rule fell inside the x axis */
    int hidden;                      /* points drawn under another point's mark */
} ui_scatter_info;

/* Returns 0, or -1 when the area is too small or no point is drawable (nothing drawn). */
int ui_chart_scatter(ui_canvas *c, int y, int x, int h, int w, const ui_scatter_spec *sp,
                     ui_scatter_info *info);

/* ---- legend ------------------------------------------------------------------------------ */
/* Lays out legend entries widths[first..n-1] (columns each, gap included) left to right in rows
 * of w columns, at most maxrows rows. When not all of them fit on one page (first = 0 and the
 * rest does not fit, or first > 0: a later page), the last row keeps more_w columns free for a
 * note ("+N more", or the way back to the first page), so no entry is ever dropped silently:
 * the caller shows the note and pages on from first + the returned count. col[k], row[k] receive the place of entry
 * first + k. Returns the entries placed (at least 1 when any is left and maxrows >= 1, even if
 * it has to be cut at w). */
int ui_legend_layout(const int *widths, int n, int first, int w, int maxrows, int more_w, int *col, int *row);

#endif
