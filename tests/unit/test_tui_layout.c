/* Unit tests of tui/ui_layout: regions from the terminal size, the too-small rule, scrolling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tui/ui_layout.h"

static void test_regions_tile_the_screen(void **state)
{
    (void)state;
    const int sizes[][2] = { { 24, 80 }, { 30, 100 }, { 50, 200 }, { 1000, 1000 } };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        ui_layout l;
        ui_layout_compute(sizes[i][0], sizes[i][1], &l);
        assert_int_equal(l.too_small, 0);
        assert_int_equal(l.title.y, 0);
        assert_int_equal(l.title.h, 1);
        assert_int_equal(l.body.y, 1);
        /* title + body + message + keybar cover every row exactly once */
        assert_int_equal(l.title.h + l.body.h + l.message.h + l.keybar.h, sizes[i][0]);
        assert_int_equal(l.body.y + l.body.h, l.message.y);
        assert_int_equal(l.message.y + 1, l.keybar.y);
        assert_int_equal(l.keybar.y, sizes[i][0] - 1);
        assert_int_equal(l.body.w, sizes[i][1]);
    }
}

static void test_too_small(void **state)
{
    (void)state;
    ui_layout l;
    ui_layout_compute(23, 80, &l);
    assert_int_equal(l.too_small, 1);
    ui_layout_compute(24, 79, &l);
    assert_int_equal(l.too_small, 1);
    ui_layout_compute(0, 0, &l);
    assert_int_equal(l.too_small, 1);
    ui_layout_compute(-5, -5, &l);
    assert_int_equal(l.too_small, 1);
    assert_int_equal(l.lines, 0);
    ui_layout_compute(24, 80, &l);
    assert_int_equal(l.too_small, 0);
}

static void test_too_small_text(void **state)
{
    (void)state;
    char lines[4][128];
    int n = ui_layout_too_small_text(10, 40, lines, 4);
    assert_int_equal(n, 3);
    assert_string_equal(lines[0], "terminal too small");
    assert_string_equal(lines[1], "40x10, need 80x24");
    /* every line fits the width, even a tiny one */
    n = ui_layout_too_small_text(3, 8, lines, 4);
    for (int i = 0; i < n; i++)
        assert_true(strlen(lines[i]) <= 8);
    assert_string_equal(lines[0], "terminal");
    n = ui_layout_too_small_text(3, 8, lines, 1);
    assert_int_equal(n, 1);
}

static void test_splits(void **state)
{
    (void)state;
    ui_rect r = { 1, 0, 20, 100 }, a, b;
    ui_rect_split_cols(r, 30, &a, &b);
    assert_int_equal(a.w, 30);
    assert_int_equal(b.x, 31);
    assert_int_equal(b.w, 69);
    ui_rect_split_cols(r, 500, &a, &b);
    assert_int_equal(a.w, 100);
    assert_int_equal(b.w, 0);
    ui_rect_split_rows(r, 5, &a, &b);
    assert_int_equal(a.h, 5);
    assert_int_equal(b.y, 6);
    assert_int_equal(b.h, 15);
    ui_rect_split_rows(r, -3, &a, &b);
    assert_int_equal(a.h, 0);
    assert_int_equal(b.h, 20);
}

static void test_list_scroll(void **state)
{
    (void)state;
    int top = 0;
    assert_int_equal(ui_list_scroll(100, 10, 15, &top), 15);
    assert_int_equal(top, 6);                  /* selection is the last visible row */
    assert_int_equal(ui_list_scroll(100, 10, 3, &top), 3);
    assert_int_equal(top, 3);
    assert_int_equal(ui_list_scroll(100, 10, 500, &top), 99);
    assert_int_equal(top, 90);
    assert_int_equal(ui_list_scroll(100, 10, -4, &top), 0);
    assert_int_equal(top, 0);
    assert_int_equal(ui_list_scroll(0, 10, 5, &top), 0);
    assert_int_equal(top, 0);
    top = 50;                                  /* list shrank under the window */
    assert_int_equal(ui_list_scroll(5, 10, 2, &top), 2);
    assert_int_equal(top, 0);
}

/* Prose is cut after a whole word with "...", never inside one; a single long word (a path)
 * is cut inside; UTF-8 counts one column per character. */
static void test_text_fit(void **state)
{
    (void)state;
    char out[128];
    assert_int_equal(ui_text_fit("launch failed: disk full", 40, out, sizeof out), 0);
    assert_string_equal(out, "launch failed: disk full");
    assert_int_equal(ui_text_fit("launch failed: disk full", 20, out, sizeof out), 1);
    assert_string_equal(out, "launch failed:...");             /* not "launch failed: di..." */
    assert_true(strlen(out) <= 20);
    ui_text_fit("/a/very/long/path/without/blanks", 12, out, sizeof out);
    assert_string_equal(out, "/a/very/l...");
    ui_text_fit("fix the field", 2, out, sizeof out);
    assert_string_equal(out, "..");
    ui_text_fit("h\xc3\xa9llo w\xc3\xb6rld again", 14, out, sizeof out);   /* 17 columns */
    assert_string_equal(out, "h\xc3\xa9llo w\xc3\xb6rld...");
    /* exactly the width fits whole */
    assert_int_equal(ui_text_fit("abc def", 7, out, sizeof out), 0);
    /* a small buffer is never overrun */
    char tiny[6];
    ui_text_fit("one two three four", 16, tiny, sizeof tiny);
    assert_true(strlen(tiny) < sizeof tiny);
}

static void test_text_wrap(void **state)
{
    (void)state;
    char lines[4][256];
    int n = ui_text_wrap("dtype: bf16 needs cblas_sbgemm, which this OpenBLAS does not provide", 30, lines, 4);
    assert_int_equal(n, 3);
    assert_string_equal(lines[0], "dtype: bf16 needs");
    assert_string_equal(lines[1], "cblas_sbgemm, which this");
    assert_string_equal(lines[2], "OpenBLAS does not provide");
    /* out of lines: the last is cut with "..." */
    n = ui_text_wrap("dtype: bf16 needs cblas_sbgemm, which this OpenBLAS does not provide", 30, lines, 2);
    assert_int_equal(n, 2);
    assert_string_equal(lines[1], "cblas_sbgemm, which this...");
    assert_int_equal(ui_text_wrap("", 10, lines, 4), 0);
}

/* The runs list at 80 columns: created, model, backend/GPU, TP, MBS, status. */
static void test_columns_fit(void **state)
{
    (void)state;
    const ui_col c[6] = { { 16, 16, 5 }, { 22, 10, 6 }, { 13, 8, 3 }, { 9, 2, 1 }, { 7, 3, 2 }, { 13, 9, 4 } };
    int w[6];
    /* wide: everything as wanted, the rest to the flexible column */
    assert_int_equal(ui_columns_fit(c, 6, 120, 1, w), 6);
    assert_int_equal(w[0], 16);
    assert_int_equal(w[1], 22 + 120 - (16 + 22 + 13 + 9 + 7 + 13 + 5));
    /* 78 columns: TP shrinks first, the model keeps its 22 */
    assert_int_equal(ui_columns_fit(c, 6, 78, -1, w), 6);
    assert_int_equal(w[1], 22);
    assert_int_equal(w[0] + w[1] + w[2] + w[3] + w[4] + w[5] + 5, 78);
    assert_true(w[3] < 9);
    assert_int_equal(w[5], 13);
    /* 60 columns: the less important columns shrink to their minimum first, then the model */
    assert_int_equal(ui_columns_fit(c, 6, 60, -1, w), 6);
    assert_int_equal(w[3], 2);
    assert_int_equal(w[4], 3);
    assert_int_equal(w[1], 17);
    assert_int_equal(w[0], 16);
    /* 50 columns: even the minimums do not fit, so TP (least kept) goes and the rest shrink
       again from what they want */
    assert_int_equal(ui_columns_fit(c, 6, 50, -1, w), 5);
    assert_int_equal(w[3], 0);
    assert_int_equal(w[1], 10);
    int total = 0, shown = 0;
    for (int i = 0; i < 6; i++)
        if (w[i]) { total += w[i]; shown++; }
    assert_int_equal(total + shown - 1, 50);
    /* too narrow for anything: nothing shown, no negative widths */
    assert_int_equal(ui_columns_fit(c, 6, 5, -1, w), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regions_tile_the_screen),
        cmocka_unit_test(test_too_small),
        cmocka_unit_test(test_too_small_text),
        cmocka_unit_test(test_splits),
        cmocka_unit_test(test_list_scroll),
        cmocka_unit_test(test_text_fit),
        cmocka_unit_test(test_text_wrap),
        cmocka_unit_test(test_columns_fit),
    };
    return cmocka_run_group_tests_name("tui_layout", tests, NULL, NULL);
}
