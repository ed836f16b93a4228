/* ui_layout.c: see ui_layout.h. */
#include "tui/ui_layout.h"

#include <stdio.h>
#include <string.h>

static int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

void ui_layout_compute(int lines, int cols, ui_layout *out)
{
    memset(out, 0, sizeof(*out));
    if (lines < 0) lines = 0;
    if (cols < 0) cols = 0;
    out->lines = lines;
    out->cols = cols;
    out->too_small = lines < UI_MIN_LINES || cols < UI_MIN_COLS;
    if (out->too_small)
        return;
    out->title = (ui_rect){ 0, 0, 1, cols };
    out->body = (ui_rect){ 1, 0, lines - 3, cols };
    out->message = (ui_rect){ lines - 2, 0, 1, cols };
    out->keybar = (ui_rect){ lines - 1, 0, 1, cols };
}

void ui_rect_split_cols(ui_rect r, int left_w, ui_rect *left, ui_rect *right)
{
    left_w = clampi(left_w, 0, r.w);
    *left = (ui_rect){ r.y, r.x, r.h, left_w };
    int rest = r.w - left_w - 1;
    if (rest < 0) rest = 0;
    *right = (ui_rect){ r.y, r.x + left_w + 1, r.h, rest };
}

void ui_rect_split_rows(ui_rect r, int top_h, ui_rect *top, ui_rect *bottom)
{
    top_h = clampi(top_h, 0, r.h);
    *top = (ui_rect){ r.y, r.x, top_h, r.w };
    *bottom = (ui_rect){ r.y + top_h, r.x, r.h - top_h, r.w };
}

int ui_layout_too_small_text(int lines, int cols, char (*out)[128], int cap)
{
    char text[4][128];
    int n = 0;
    snprintf(text[n++], sizeof(text[0]), "terminal too small");
    snprintf(text[n++], sizeof(text[0]), "%dx%d, need %dx%d", cols < 0 ? 0 : cols,
             lines < 0 ? 0 : lines, UI_MIN_COLS, UI_MIN_LINES);
    snprintf(text[n++], sizeof(text[0]), "enlarge the window or press q");
    int w = cols < 0 ? 0 : (cols > 127 ? 127 : cols);
    int k = 0;
    for (int i = 0; i < n && k < cap; i++) {
        memcpy(out[k], text[i], sizeof(text[i]));
        out[k][w] = '\0';
        k++;
    }
    return k;
}

int ui_list_scroll(int n, int rows, int sel, int *top)
{
    if (n <= 0) { *top = 0; return 0; }
    sel = clampi(sel, 0, n - 1);
    if (rows < 1) rows = 1;
    if (sel < *top) *top = sel;
    if (sel >= *top + rows) *top = sel - rows + 1;
    if (*top > n - rows) *top = n - rows;
    if (*top < 0) *top = 0;
    return sel;
}
