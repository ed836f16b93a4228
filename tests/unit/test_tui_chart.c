/* Unit tests of tui/ui_chart: scales (linear, log, nice numbers), value formatting, and charts
 * rendered into a text canvas compared with the exact expected text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>
#include <cmocka.h>

#include "tui/ui_chart.h"

static void test_nice_ceil(void **state)
{
    (void)state;
    assert_float_equal(ui_nice_ceil(0.7), 1.0, 1e-12);
    assert_float_equal(ui_nice_ceil(1.0), 1.0, 1e-12);
    assert_float_equal(ui_nice_ceil(1.01), 2.0, 1e-12);
    assert_float_equal(ui_nice_ceil(3.0), 5.0, 1e-12);
    assert_float_equal(ui_nice_ceil(7.2), 10.0, 1e-12);
    assert_float_equal(ui_nice_ceil(0.031), 0.05, 1e-12);
    assert_float_equal(ui_nice_ceil(420), 500, 1e-9);
    assert_float_equal(ui_nice_ceil(0), 0, 0);
    assert_float_equal(ui_nice_ceil(-3), 0, 0);
}

static void test_linear_scale(void **state)
{
    (void)state;
    ui_scale s;
    assert_int_equal(ui_scale_init(&s, 0.5, 42, 0), 0);
    assert_float_equal(s.lo, 0, 0);
    assert_float_equal(s.hi, 50, 1e-12);
    assert_float_equal(ui_scale_frac(&s, 25), 0.5, 1e-12);
    assert_float_equal(ui_scale_frac(&s, 100), 1.0, 0);     /* clamped */
    assert_float_equal(ui_scale_frac(&s, -1), 0.0, 0);
    assert_true(isnan(ui_scale_frac(&s, NAN)));
    /* all-equal data still gets a non-empty axis */
    ui_scale_init(&s, 0, 0, 0);
    assert_true(s.hi > s.lo);
}

static void test_log_scale(void **state)
{
    (void)state;
    ui_scale s;
    assert_int_equal(ui_scale_init(&s, 0.03, 420, 1), 0);
    assert_int_equal(s.log, 1);
    assert_float_equal(s.lo, 0.01, 1e-15);
    assert_float_equal(s.hi, 1000, 1e-9);
    /* five decades: each one a fifth of the axis */
    assert_float_equal(ui_scale_frac(&s, 0.1), 0.2, 1e-12);
    assert_float_equal(ui_scale_frac(&s, 10), 0.6, 1e-12);
    assert_true(isnan(ui_scale_frac(&s, 0)));
    assert_true(isnan(ui_scale_frac(&s, -2)));
    /* one exact decade value still spans a decade */
    ui_scale_init(&s, 10, 10, 1);
    assert_float_equal(s.lo, 10, 1e-12);
    assert_float_equal(s.hi, 100, 1e-12);
    /* log of non-positive data falls back to linear and says so */
    assert_int_equal(ui_scale_init(&s, 0, 5, 1), 1);
    assert_int_equal(s.log, 0);
}

static void test_format_value(void **state)
{
    (void)state;
    char b[32];
    ui_format_value(NAN, b, sizeof(b));
    assert_string_equal(b, "N/A");
    ui_format_value(0, b, sizeof(b));
    assert_string_equal(b, "0");
    ui_format_value(1.234, b, sizeof(b));
    assert_string_equal(b, "1.23");
    ui_format_value(12.34, b, sizeof(b));
    assert_string_equal(b, "12.3");
    ui_format_value(123.4, b, sizeof(b));
    assert_string_equal(b, "123");
    ui_format_value(0.0456, b, sizeof(b));
    assert_string_equal(b, "0.046");
    ui_format_value(0.00012, b, sizeof(b));
    assert_string_equal(b, "1.2e-04");
    ui_format_value(25600, b, sizeof(b));
    assert_string_equal(b, "25.6k");
    ui_format_value(3.5e9, b, sizeof(b));
    assert_string_equal(b, "3.5G");
    ui_format_value(1.14e12, b, sizeof(b));
    assert_string_equal(b, "1.14T");
}

static void test_glyphs_distinct(void **state)
{
    (void)state;
    for (int u = 0; u < 2; u++)
        for (int i = 0; i < UI_CHART_MAX_SERIES; i++)
            for (int j = 0; j < i; j++) {
                assert_true(ui_segment_fill(i, u) != ui_segment_fill(j, u));
                assert_true(ui_series_marker(i, u) != ui_series_marker(j, u));
            }
    /* ASCII mode is ASCII */
    for (int i = 0; i < UI_CHART_MAX_SERIES; i++) {
        assert_true(ui_segment_fill(i, 0) < 128);
        assert_true(ui_series_marker(i, 0) < 128);
    }
    assert_int_equal(ui_segment_fill(0, 1), 0x2588);
}

static void test_stacked_ascii(void **state)
{
    (void)state;
    ui_canvas c;
    assert_int_equal(ui_canvas_init(&c, 20, 3), 0);
    const char *labels[] = { "1", "2", "64" };
    const double v[] = {
        1, 1, 2,          /* 25% 25% 50% */
        3, 0, 1,          /* 75%  0% 25% */
        NAN, NAN, NAN,    /* never measured */
    };
    ui_chart_stacked(&c, 0, 0, 3, 16, labels, v, 3, 3, 1, 0);
    char text[512];
    ui_canvas_to_text(&c, text, sizeof(text));
    assert_string_equal(text,
                        "  1 ####@@@@%%%%%%%%\n"
                        "  2 ############%%%%\n"
                        " 64 N/A\n");
    /* the class of a cell names its segment (for colour) */
    assert_int_equal(c.cls[0 * 20 + 4], UI_CLS_SERIES + 0);
    assert_int_equal(c.cls[0 * 20 + 8], UI_CLS_SERIES + 1);
    assert_int_equal(c.cls[0 * 20 + 19], UI_CLS_SERIES + 2);
    /* not normalised: bars scale to the largest total */
    ui_canvas_clear(&c);
    const double w[] = { 2, 2, 4, 1, 0, 1, 0, 0, 0 };
    ui_chart_stacked(&c, 0, 0, 3, 16, labels, w, 2, 3, 0, 0);
    ui_canvas_to_text(&c, text, sizeof(text));
    assert_string_equal(text,
                        "  1 ####@@@@%%%%%%%%\n"
                        "  2 ##%%\n"
                        "\n");
    ui_canvas_free(&c);
}

static void test_stacked_unicode_and_segments_sum(void **state)
{
    (void)state;
    ui_canvas c;
    assert_int_equal(ui_canvas_init(&c, 40, 1), 0);
    const double v[] = { 1, 1, 1 };      /* thirds: rounding must still fill exactly 30 */
    ui_chart_stacked(&c, 0, 0, 2, 30, (const char *const[]){ "x" }, v, 1, 3, 1, 1);
    int filled = 0;
    for (int x = 3; x < 40; x++)
        filled += c.cp[x] != ' ';
    assert_int_equal(filled, 30);
    char row[256];
    ui_canvas_row_utf8(&c, 0, row, sizeof(row));
    assert_non_null(strstr(row, "\xe2\x96\x88"));   /* U+2588 full block */
    assert_non_null(strstr(row, "\xe2\x96\x93"));   /* U+2593 dark shade */
    ui_canvas_free(&c);
}

static void test_hbar(void **state)
{
    (void)state;
    ui_canvas c;
    assert_int_equal(ui_canvas_init(&c, 10, 3), 0);
    ui_chart_hbar(&c, 0, 0, 10, 0.55, UI_CLS_SERIES, 0);
    ui_chart_hbar(&c, 1, 0, 10, 0.55, UI_CLS_SERIES, 1);
    ui_chart_hbar(&c, 2, 0, 10, NAN, UI_CLS_SERIES, 1);
    char text[256];
    ui_canvas_to_text(&c, text, sizeof(text));
    /* ASCII rounds 5.5 cells up; Unicode shows 5 full cells and a half block (U+258C) */
    assert_string_equal(text, "######\n"
                              "\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x8c\n"
                              "N/A\n");
    ui_canvas_free(&c);
}

static int lines(ui_canvas *c, int h, int w, const double *v, int ns, int np, const char *const *xl, int log,
                 int unicode, ui_lines_info *info)
{
    ui_lines_spec sp = { .values = v, .nseries = ns, .npts = np, .xlabels = xl, .xname = "MBS",
                         .yunit = UI_UNIT_MS, .log = log, .unicode = unicode };
    return ui_chart_lines(c, 0, 0, h, w, &sp, info);
}

static void test_lines_ascii(void **state)
{
    (void)state;
    ui_canvas c;
    assert_int_equal(ui_canvas_init(&c, 30, 7), 0);
    const char *xl[] = { "1", "2", "4" };
    const double v[] = { 1, 2, 4,       /* series 0 */
                         4, NAN, 1 };   /* series 1 with a missing point */
    ui_lines_info info;
    assert_int_equal(lines(&c, 7, 30, v, 2, 3, xl, 0, 0, &info), 0);
    char text[1024];
    ui_canvas_to_text(&c, text, sizeof(text));
    /* 5 plot rows over 0..5 ms: ticks at least 2 rows apart, with the unit; each series its
       own marker (o, x) and connector ('.' for series 0; series 1 has a gap, so none); the x
       axis' name left of its labels */
    assert_string_equal(text,
                        "5 ms+\n"
                        "    |x                  .....o\n"
                        "    |           .o......\n"
                        "    |o..........             x\n"
                        "0 ms+\n"
                        "    ++-----------+-----------+\n"
                        " MBS 1           2           4\n");
    assert_int_equal(info.overlaps, 0);
    ui_canvas_free(&c);
}

static void test_lines_log_and_labels(void **state)
{
    (void)state;
    ui_canvas c;
    assert_int_equal(ui_canvas_init(&c, 40, 8), 0);
    const char *xl[] = { "1", "2", "4", "8" };
    const double v[] = { 0.1, 1, 10, 100 };      /* one decade per step: a straight line */
    assert_int_equal(lines(&c, 8, 40, v, 1, 4, xl, 1, 0, NULL), 0);
    /* markers sit on rows 5, ~3.3, ~1.7, 0 of the 6 plot rows: evenly spaced */
    int rows[4], k = 0;
    for (int x = 0; x < 40; x++)
        for (int y = 0; y < 6; y++)
            if (c.cp[y * 40 + x] == 'o') rows[k++] = y;
    assert_int_equal(k, 4);
    assert_int_equal(rows[0], 5);
    assert_int_equal(rows[3], 0);
    assert_true(rows[1] == 3 || rows[1] == 4);
    assert_true(rows[2] == 1 || rows[2] == 2);
    char row[256];
    /* 3 decades in 6 rows: decades closer than 2 rows, so every 2nd is labelled */
    ui_canvas_row_utf8(&c, 2, row, sizeof(row));
    assert_non_null(strstr(row, "10 ms"));
    ui_canvas_row_utf8(&c, 5, row, sizeof(row));
    assert_non_null(strstr(row, "0.1 ms"));
    ui_canvas_row_utf8(&c, 7, row, sizeof(row));     /* x labels under their ticks */
    assert_non_null(strstr(row, "1"));
    assert_non_null(strstr(row, "8"));
    /* too small an area draws nothing and says so */
    ui_canvas_clear(&c);
    assert_int_equal(lines(&c, 4, 40, v, 1, 4, xl, 1, 0, NULL), -1);
    assert_int_equal(lines(&c, 8, 12, v, 1, 4, xl, 1, 0, NULL), -1);
    /* nothing drawable */
    const double none[] = { NAN, NAN, NAN, NAN };
    assert_int_equal(lines(&c, 8, 40, none, 1, 4, xl, 0, 0, NULL), -1);
    ui_canvas_free(&c);
}

/* Decade ticks: 0.03..700 ms spans 0.01..1000; every decade labelled, 2 and 5 only with room. */
static void test_log_ticks_decades(void **state)
{
    (void)state;
    ui_scale s;
    ui_scale_init(&s, 0.03, 700, 1);
    ui_tick t[64];
    int n = ui_scale_ticks(&s, 21, t, 64);          /* 4 rows a decade: decades only */
    const double want[] = { 0.01, 0.1, 1, 10, 100, 1000 };
    assert_int_equal(n, 6);
    for (int i = 0; i < n; i++) {
        assert_float_equal(t[i].v, want[i], want[i] * 1e-12);
        assert_int_equal(t[i].major, 1);
    }
    n = ui_scale_ticks(&s, 41, t, 64);              /* 8 rows a decade: 1, 2, 5 x each decade */
    assert_int_equal(n, 6 + 2 * 5);
    assert_float_equal(t[1].v, 0.02, 1e-15);
    assert_int_equal(t[1].major, 0);
    assert_float_equal(t[2].v, 0.05, 1e-15);
    assert_float_equal(t[3].v, 0.1, 1e-15);
    assert_int_equal(t[3].major, 1);
    n = ui_scale_ticks(&s, 6, t, 64);               /* 1 row a decade: every 2nd decade */
    assert_int_equal(n, 3);
    assert_float_equal(t[0].v, 0.01, 1e-15);
    assert_float_equal(t[1].v, 1, 1e-12);
    assert_float_equal(t[2].v, 100, 1e-9);
    /* every tick is a decade or 2/5 of one */
    n = ui_scale_ticks(&s, 41, t, 64);
    for (int i = 0; i < n; i++) {
        double m = t[i].v / pow(10, floor(log10(t[i].v) + 1e-9));
        assert_true(fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 5) < 1e-9);
    }
    /* the labels carry the unit */
    char b[32];
    ui_format_unit(0.1, UI_UNIT_MS, b, sizeof(b));
    assert_string_equal(b, "0.1 ms");
    ui_format_unit(1, UI_UNIT_MS, b, sizeof(b));
    assert_string_equal(b, "1 ms");
    ui_format_unit(10, UI_UNIT_MS, b, sizeof(b));
    assert_string_equal(b, "10 ms");
    ui_format_unit(1000, UI_UNIT_MS, b, sizeof(b));
    assert_string_equal(b, "1 s");
    ui_format_unit(0.0005, UI_UNIT_MS, b, sizeof(b));
    assert_string_equal(b, "0.5 us");
    ui_format_unit(4096, UI_UNIT_BYTES, b, sizeof(b));
    assert_string_equal(b, "4 KiB");
    ui_format_unit(65536, UI_UNIT_BYTES, b, sizeof(b));
    assert_string_equal(b, "64 KiB");
    ui_format_unit(1048576, UI_UNIT_BYTES, b, sizeof(b));
    assert_string_equal(b, "1 MiB");
    ui_format_unit(512, UI_UNIT_BYTES, b, sizeof(b));
    assert_string_equal(b, "512 B");
    ui_format_unit(0.5, UI_UNIT_GBS, b, sizeof(b));
    assert_string_equal(b, "0.5 GB/s");
    ui_format_unit(NAN, UI_UNIT_GBS, b, sizeof(b));
    assert_string_equal(b, "N/A");
    /* linear ticks: 1/2/5 steps from 0, two rows apart at least */
    ui_scale_init(&s, 0, 42, 0);                     /* 0..50 */
    n = ui_scale_ticks(&s, 11, t, 64);
    assert_int_equal(n, 6);
    assert_float_equal(t[5].v, 50, 1e-12);
    n = ui_scale_ticks(&s, 5, t, 64);                /* 4 row steps: 0 and 50 only */
    assert_int_equal(n, 2);
    assert_float_equal(t[1].v, 50, 1e-12);
}

/* Every series its own marker and connector, none a digit or '*' (the overlap marks). */
static void test_markers_connectors_distinct(void **state)
{
    (void)state;
    for (int u = 0; u < 2; u++) {
        uint32_t all[2 * UI_CHART_MAX_SERIES];
        for (int i = 0; i < UI_CHART_MAX_SERIES; i++) {
            all[i] = ui_series_marker(i, u);
            all[UI_CHART_MAX_SERIES + i] = ui_series_connector(i, u);
        }
        for (int i = 0; i < 2 * UI_CHART_MAX_SERIES; i++) {
            assert_false(all[i] >= '0' && all[i] <= '9');
            assert_true(all[i] != '*' && all[i] != ' ' && all[i] != '|' && all[i] != '+');
            for (int j = 0; j < i; j++)
                assert_true(all[i] != all[j]);
            if (!u) assert_true(all[i] < 128);
        }
    }
    assert_int_equal(ui_overlap_marker(2), '2');
    assert_int_equal(ui_overlap_marker(9), '9');
    assert_int_equal(ui_overlap_marker(12), '*');
}

/* Points of two series on one cell show as '2', three as '3'; the others keep their marker. */
static void test_lines_overlap_marker(void **state)
{
    (void)state;
    ui_canvas c;
    assert_int_equal(ui_canvas_init(&c, 30, 7), 0);
    const char *xl[] = { "1", "2", "4" };
    const double v[] = { 1, 2, 4,
                         1, 5, 5,
                         1, 2, 0.5 };
    ui_lines_info info;
    assert_int_equal(lines(&c, 7, 30, v, 3, 3, xl, 0, 1, &info), 0);
    assert_int_equal(info.overlaps, 2);              /* x=1: all three; x=2: series 0 and 2 */
    int found3 = 0, found2 = 0, found_m1 = 0;
    for (int i = 0; i < 30 * 5; i++) {
        found3 += c.cp[i] == '3';
        found2 += c.cp[i] == '2';
        found_m1 += c.cp[i] == ui_series_marker(1, 1);
    }
    assert_int_equal(found3, 1);
    assert_int_equal(found2, 1);
    assert_int_equal(found_m1, 2);                   /* series 1 alone at x=2 and x=4 */
    ui_canvas_free(&c);
}

/* The scatter chart (the advise screen's Pareto chart): points on linear axes from 0, the
 * higher series winning a shared cell, the front joined, the limit rule and the highlight. */
static void test_scatter_ascii(void **state)
{
    (void)state;
    ui_canvas c;
    assert_int_equal(ui_canvas_init(&c, 34, 8), 0);
    /* x: GB, y: ms; series 0 = does not fit, 1 = fits, 2 = front */
    const double xs[] = { 2, 8, 4, 9, 4.1 };
    const double ys[] = { 40, 10, 20, 38, 20 };
    const int series[] = { 2, 2, 2, 0, 1 };
    const uint32_t markers[] = { 'x', 'o', '#' };
    const int front[] = { 0, 2, 1 };
    ui_scatter_spec sp = { .xs = xs, .ys = ys, .series = series, .n = 5, .markers = markers,
                           .line = front, .nline = 3, .line_series = 2, .highlight = 1,
                           .highlight_glyph = '@', .vline = 8.5, .vline_glyph = '|',
                           .xname = "mem", .xunit = UI_UNIT_GB, .yunit = UI_UNIT_MS, .unicode = 0 };
    ui_scatter_info info;
    assert_int_equal(ui_chart_scatter(&c, 0, 0, 8, 34, &sp, &info), 0);
    assert_int_equal(info.vline_shown, 1);
    assert_int_equal(info.hidden, 1);                /* (4.1, 20) shares the cell of (4, 20) */
    char buf[1024];
    ui_canvas_to_text(&c, buf, sizeof(buf));
    const char *want =
        "     |                       |\n"
        "40 ms+     #:                |x\n"
        "     |       :::             |\n"
        "20 ms+          :#:::::      |\n"
        "     |                 :::::@|\n"
        " 0 ms+                       |\n"
        "     +--------------+------------+\n"
        "  mem 0 GB        5 GB       10 GB\n";
    assert_string_equal(buf, want);
    /* too small: nothing drawn */
    assert_int_equal(ui_chart_scatter(&c, 0, 0, 5, 34, &sp, NULL), 0);
    assert_int_equal(ui_chart_scatter(&c, 0, 0, 4, 34, &sp, NULL), -1);
    assert_int_equal(ui_chart_scatter(&c, 0, 0, 8, 15, &sp, NULL), -1);
    /* tight axes: configurations within a few percent spread over the plot (an axis from 0
       would put them on one row); the limit outside the data is not drawn */
    const double tx[] = { 10.5, 11.1, 14.8 }, ty[] = { 4368, 4289, 4229 };
    const int ts[] = { 2, 2, 1 };
    ui_scatter_spec tsp = { .xs = tx, .ys = ty, .series = ts, .n = 3, .markers = markers, .highlight = -1,
                            .vline = 80, .vline_glyph = '|', .xname = "mem", .xunit = UI_UNIT_GB,
                            .yunit = UI_UNIT_MS, .xtight = 1, .ytight = 1 };
    ui_canvas_clear(&c);
    assert_int_equal(ui_chart_scatter(&c, 0, 0, 8, 34, &tsp, &info), 0);
    assert_int_equal(info.vline_shown, 0);
    ui_canvas_to_text(&c, buf, sizeof(buf));
    const char *want_tight =
        "4.4 s+\n"
        "     |  #\n"
        "     |\n"
        "4.3 s+     #\n"
        "     |                      o\n"
        "4.2 s+\n"
        "     +-----------------------+----\n"
        "  mem 10 GB                15 GB\n";
    assert_string_equal(buf, want_tight);
    ui_canvas_free(&c);
}

/* The legend never drops an entry: pages cover every entry exactly once, each page within its
 * rows, and a page that is not the last keeps room for "+N more". */
static void test_legend_never_drops(void **state)
{
    (void)state;
    int widths[40], col[40], row[40];
    for (int w = 10; w <= 120; w += 7)
        for (int n = 1; n <= 40; n += 3)
            for (int maxrows = 1; maxrows <= 3; maxrows++) {
                for (int i = 0; i < n; i++)
                    widths[i] = 4 + (i * 7) % 13;
                int first = 0, pages = 0;
                while (first < n) {
                    int k = ui_legend_layout(widths, n, first, w, maxrows, 14, col, row);
                    assert_true(k >= 1);
                    for (int j = 0; j < k; j++) {
                        assert_true(row[j] >= 0 && row[j] < maxrows);
                        /* within the row, or a lone first entry cut at the edge */
                        if (!(j == 0 && col[j] == 0))
                            assert_true(col[j] + widths[first + j] <= w);
                        /* any page of a paged legend keeps room for its note */
                        if ((first > 0 || first + k < n) && row[j] == maxrows - 1 && !(j == 0 && col[j] == 0))
                            assert_true(col[j] + widths[first + j] <= w - 14);
                    }
                    first += k;
                    pages++;
                    assert_true(pages <= n);
                }
                assert_int_equal(first, n);
            }
    /* everything that fits is on one page, with no room kept for a note */
    int ws[3] = { 10, 10, 10 };
    assert_int_equal(ui_legend_layout(ws, 3, 0, 30, 1, 14, col, row), 3);
    assert_int_equal(ui_legend_layout(ws, 3, 0, 29, 1, 14, col, row), 1);
}

static void test_canvas_clip_and_utf8(void **state)
{
    (void)state;
    ui_canvas c;
    assert_int_equal(ui_canvas_init(&c, 5, 1), 0);
    assert_int_equal(ui_canvas_text(&c, 0, 3, "abcdef", UI_CLS_TEXT), 6);
    ui_canvas_put(&c, 4, 4, 'z', 0);           /* outside: ignored */
    ui_canvas_put(&c, 0, -1, 'z', 0);
    ui_canvas_text(&c, 0, 0, "\xc3\xa9", UI_CLS_TEXT);    /* e acute is one cell */
    char row[64];
    ui_canvas_row_utf8(&c, 0, row, sizeof(row));
    assert_string_equal(row, "\xc3\xa9  ab");
    /* a short buffer truncates on a whole character */
    ui_canvas_row_utf8(&c, 0, row, 2);
    assert_string_equal(row, "");
    ui_canvas_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nice_ceil),
        cmocka_unit_test(test_linear_scale),
        cmocka_unit_test(test_log_scale),
        cmocka_unit_test(test_format_value),
        cmocka_unit_test(test_glyphs_distinct),
        cmocka_unit_test(test_stacked_ascii),
        cmocka_unit_test(test_stacked_unicode_and_segments_sum),
        cmocka_unit_test(test_hbar),
        cmocka_unit_test(test_lines_ascii),
        cmocka_unit_test(test_lines_log_and_labels),
        cmocka_unit_test(test_canvas_clip_and_utf8),
        cmocka_unit_test(test_log_ticks_decades),
        cmocka_unit_test(test_markers_connectors_distinct),
        cmocka_unit_test(test_lines_overlap_marker),
        cmocka_unit_test(test_legend_never_drops),
        cmocka_unit_test(test_scatter_ascii),
    };
    return cmocka_run_group_tests_name("tui_chart", tests, NULL, NULL);
}
