/* ui_layout.h: screen regions computed from the terminal size. Pure: no curses, no I/O, so it
 * is unit-tested without a terminal (nvtop's compute_sizes_from_layout).
 *
 * Every screen has the same frame:
 *   row 0            title bar (screen name, store, clock-free status)
 *   rows 1..H-3      body (the screen's own content; tables, charts, forms)
 *   row H-2          message line (one-line errors and confirmations)
 *   row H-1          key bar (generated from the key table)
 * Below UI_MIN_COLS x UI_MIN_LINES the layout is marked too_small and the screen shows only a
 * centred "terminal too small" message (ui_layout_too_small_text).
 */
#ifndef PDBX_UI_LAYOUT_H
#define PDBX_UI_LAYOUT_H

#include <stddef.h>

#define UI_MIN_COLS 80
#define UI_MIN_LINES 24

typedef struct { int y, x, h, w; } ui_rect;

typedef struct {
    int lines, cols;
    int too_small;          /* 1: draw only the too-small message */
    ui_rect title, body, message, keybar;
} ui_layout;

/* Fills *out for a terminal of lines x cols (any values, negatives treated as 0). */
void ui_layout_compute(int lines, int cols, ui_layout *out);

/* Splits r horizontally: the left part gets `left_w` columns (clamped), then a 1-column gap,
 * the right part the rest. */
void ui_rect_split_cols(ui_rect r, int left_w, ui_rect *left, ui_rect *right);
/* Splits r vertically: the top part gets `top_h` rows (clamped), the bottom part the rest. */
void ui_rect_split_rows(ui_rect r, int top_h, ui_rect *top, ui_rect *bottom);

/* The lines of the too-small message for a lines x cols terminal, each at most cols wide
 * (truncated when even that does not fit). Returns the number of lines written (<= cap). */
int ui_layout_too_small_text(int lines, int cols, char (*out)[128], int cap);

/* Scroll helper for lists: keeps `sel` visible in a window of `rows` rows starting at *top;
 * clamps sel into [0, n). Returns the clamped selection. */
int ui_list_scroll(int n, int rows, int sel, int *top);

/* ---- text cut to a width (columns: one per UTF-8 character, as ui_put counts) ------------ */
/* s fitted into width columns: whole when it fits, else cut after the last whole word that
 * fits with "..." appended (a first word longer than the width is cut inside). Written to out
 * (capacity len, always terminated). Returns 1 when s was cut, else 0. */
int ui_text_fit(const char *s, int width, char *out, size_t len);
/* s wrapped at word boundaries onto at most cap lines of width columns; the last line is cut
 * as ui_text_fit cuts when the rest does not fit. Returns the number of lines written. */
int ui_text_wrap(const char *s, int width, char (*lines)[256], int cap);

/* ---- table columns ------------------------------------------------------------------------ */
typedef struct {
    int want;                /* width that shows every cell whole */
    int min;                 /* narrowest useful width (cells are cut to it) */
    int keep;                /* priority: lower is shrunk first, then dropped first */
} ui_col;
/* Widths for n columns in `width` columns with a 1-column gap between shown columns: every
 * column gets `want` when that fits, the space left over goes to column `flex` (-1: none);
 * otherwise columns shrink towards `min`, lowest `keep` first, and when even that is too
 * wide, the lowest `keep` are dropped (width 0). Returns the number of columns shown. */
int ui_columns_fit(const ui_col *cols, int n, int width, int flex, int *out);

#endif
