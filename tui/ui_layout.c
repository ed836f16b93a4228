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

/* ---- text cut to a width -------------------------------------------------------------------- */
static int cont(unsigned char c) { return (c & 0xC0) == 0x80; }

/* Bytes of s that fill at most cols columns. */
static size_t prefix_bytes(const char *s, int cols)
{
    size_t i = 0;
    int n = 0;
    while (s[i]) {
        if (!cont((unsigned char)s[i]) && n++ == cols)
            break;
        i++;
    }
    return i;
}

static int columns(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += !cont((unsigned char)*s);
    return n;
}

/* Bytes of the longest run of whole words of s that fits in cols columns (0 when the first
 * word alone is too long); trailing blanks left out. */
static size_t word_prefix(const char *s, int cols)
{
    size_t fit = prefix_bytes(s, cols), best = 0;
    if (s[fit] == '\0')
        return fit;
    for (size_t i = 1; i <= fit; i++)
        if ((s[i] == ' ' || s[i] == '\0') && s[i - 1] != ' ')
            best = i;
    return best;
}

int ui_text_fit(const char *s, int width, char *out, size_t len)
{
    if (len == 0)
        return 0;
    if (width < 0) width = 0;
    if (columns(s) <= width) {
        snprintf(out, len, "%s", s);
        return 0;
    }
    if (width <= 3) {
        snprintf(out, len, "%.*s", width, "...");
        return 1;
    }
    size_t b = word_prefix(s, width - 3);
    if (b == 0)
        b = prefix_bytes(s, width - 3);        /* one long word (a path): cut inside it */
    snprintf(out, len, "%.*s...", (int)(b < len ? b : len - 1), s);
    return 1;
}

int ui_text_wrap(const char *s, int width, char (*lines)[256], int cap)
{
    int n = 0;
    if (width < 1) width = 1;
    if (width > 255) width = 255;
    while (*s == ' ') s++;
    while (*s && n < cap) {
        if (n == cap - 1 || columns(s) <= width) {
            ui_text_fit(s, width, lines[n++], 256);
            break;
        }
        size_t b = word_prefix(s, width);
        if (b == 0)
            b = prefix_bytes(s, width);
        snprintf(lines[n++], 256, "%.*s", (int)b, s);
        s += b;
        while (*s == ' ') s++;
    }
    return n;
}

/* ---- table columns -------------------------------------------------------------------------- */
static int total_width(const int *w, int n)
{
    int t = 0, shown = 0;
    for (int i = 0; i < n; i++)
        if (w[i] > 0) {
            t += w[i];
            shown++;
        }
    return t + (shown > 1 ? shown - 1 : 0);
}

/* Index of the shown column with the lowest keep that can still give up space (shrink: above
 * its min; else any shown column), -1 when none. */
static int lowest(const ui_col *c, const int *w, int n, int shrink)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (w[i] > 0 && (!shrink || w[i] > c[i].min) && (best < 0 || c[i].keep < c[best].keep))
            best = i;
    return best;
}

/* Shrinks the shown columns (out[i] > 0 on entry marks them) from want towards min, lowest
 * keep first; 1 when they then fit. */
static int shrink_to_fit(const ui_col *cols, int n, int width, int *out)
{
    for (int k = 0; k < n; k++)
        if (out[k] > 0)
            out[k] = cols[k].want > 0 ? cols[k].want : 1;
    int i;
    while (total_width(out, n) > width && (i = lowest(cols, out, n, 1)) >= 0) {
        int over = total_width(out, n) - width, room = out[i] - (cols[i].min > 0 ? cols[i].min : 1);
        out[i] -= over < room ? over : room;
    }
    return total_width(out, n) <= width;
}

int ui_columns_fit(const ui_col *cols, int n, int width, int flex, int *out)
{
    for (int i = 0; i < n; i++)
        out[i] = 1;
    /* drop the least important column while even the narrowest widths do not fit, then
       shrink again from the wanted widths (a dropped column may leave room to spare) */
    int i;
    while (!shrink_to_fit(cols, n, width, out) && (i = lowest(cols, out, n, 0)) >= 0)
        out[i] = 0;
    int shown = 0;
    for (int k = 0; k < n; k++)
        shown += out[k] > 0;
    if (flex >= 0 && flex < n && out[flex] > 0 && total_width(out, n) < width)
        out[flex] += width - total_width(out, n);
    return shown;
}
