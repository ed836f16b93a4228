/* ui_draw.c: small curses drawing helpers shared by the screens (see ui_app.h). */
#include <curses.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tui/ui_app.h"
#include "store/util/text.h"

/* Bytes of the first `cols` UTF-8 characters of s. */
static size_t utf8_prefix(const char *s, int cols, int *used)
{
    size_t i = 0;
    int n = 0;
    while (s[i] && n < cols) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
        for (size_t j = 1; j < k; j++)
            if (!s[i + j]) { k = j; break; }
        i += k;
        n++;
    }
    *used = n;
    return i;
}

void ui_put(int y, int x, int w, ui_role role, int pad, const char *fmt, ...)
{
    if (w <= 0 || y < 0 || y >= LINES || x >= COLS)
        return;
    if (x + w > COLS) w = COLS - x;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\t' || *p == '\r') *p = ' ';
    /* Every screen's text reaches curses here, run-file strings included: no control or
     * invalid UTF-8 goes to the terminal (text.h). */
    pdbx_text_safe(buf, sizeof buf, buf);
    int used;
    size_t bytes = utf8_prefix(buf, w, &used);
    int attr = ui_theme_attr(role);
    attron(attr);
    mvaddnstr(y, x, buf, (int)bytes);
    if (pad)
        for (int i = used; i < w; i++)
            addch(' ');
    attroff(attr);
}

void ui_put_text(int y, int x, int w, ui_role role, int pad, const char *fmt, ...)
{
    char buf[1024], cut[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    ui_text_fit(buf, w, cut, sizeof(cut));
    ui_put(y, x, w, role, pad, "%s", cut);
}

int ui_put_wrapped(int y, int x, int w, int max_rows, ui_role role, const char *fmt, ...)
{
    char buf[1024], lines[8][256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    int n = ui_text_wrap(buf, w, lines, max_rows < 8 ? max_rows : 8);
    for (int i = 0; i < n; i++)
        ui_put(y + i, x, w, role, 1, "%s", lines[i]);
    return n;
}

void ui_draw_canvas(const ui_canvas *c, int y, int x)
{
    for (int r = 0; r < c->h; r++) {
        if (y + r >= LINES) break;
        int cx = 0;
        while (cx < c->w) {
            int cls = c->cls[(size_t)r * c->w + cx];
            char run[1024];
            size_t n = 0;
            int start = cx;
            while (cx < c->w && c->cls[(size_t)r * c->w + cx] == cls && n + 5 < sizeof(run)) {
                uint32_t cp = c->cp[(size_t)r * c->w + cx];   /* labels can be op names */
                n += (size_t)ui_utf8_encode(pdbx_text_cp_safe(cp) ? cp : '?', run + n);
                cx++;
            }
            run[n] = '\0';
            ui_role role = cls == UI_CLS_AXIS ? UI_C_AXIS
                         : cls >= UI_CLS_SERIES ? (ui_role)(UI_C_SERIES0 + (cls - UI_CLS_SERIES) % 8)
                         : UI_C_NORMAL;
            int attr = ui_theme_attr(role);
            attron(attr);
            mvaddstr(y + r, x + start, run);
            attroff(attr);
        }
    }
}

void ui_draw_tabs(int y, int x, int w, const char *const *names, int n, int active)
{
    int cx = x;
    /* keep the active tab visible: skip tabs from the left while it would not fit */
    int first = 0;
    for (;;) {
        int need = 0;
        for (int i = first; i <= active && i < n; i++)
            need += (int)strlen(names[i]) + 3;
        if (need <= w || first >= active) break;
        first++;
    }
    if (first > 0) {
        ui_put(y, cx, 2, UI_C_DIM, 0, "< ");
        cx += 2;
    }
    for (int i = first; i < n && cx < x + w; i++) {
        int len = (int)strlen(names[i]) + 2;
        ui_put(y, cx, x + w - cx, i == active ? UI_C_TAB_ACTIVE : UI_C_TAB, 0, " %s ", names[i]);
        cx += len + 1;
    }
}

ui_role ui_role_run_status(pdbx_run_status s)
{
    switch (s) {
    case PDBX_RUN_RUNNING: return UI_C_RUNNING;
    case PDBX_RUN_COMPLETE: return UI_C_OK;
    case PDBX_RUN_CANCELLED: return UI_C_WARNING;
    case PDBX_RUN_FAILED: return UI_C_BAD;
    case PDBX_RUN_CORRUPT: return UI_C_BAD;
    case PDBX_RUN_UNREADABLE: return UI_C_BAD;
    }
    return UI_C_NORMAL;
}

ui_role ui_role_point_status(pdbx_point_status s)
{
    switch (s) {
    case PDBX_POINT_PENDING: return UI_C_PENDING;
    case PDBX_POINT_RUNNING: return UI_C_RUNNING;
    case PDBX_POINT_OK: return UI_C_OK;
    case PDBX_POINT_OOM: return UI_C_WARNING;
    case PDBX_POINT_PREDICTED_OOM: return UI_C_WARNING;
    case PDBX_POINT_ERROR: return UI_C_BAD;
    case PDBX_POINT_SKIPPED: return UI_C_DIM;
    }
    return UI_C_NORMAL;
}

void ui_legend_set(ui_legend_entry *e, uint32_t glyph, int series, const char *name)
{
    ui_utf8_encode(glyph, e->glyph);
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->role = series < 0 ? UI_C_NORMAL : (ui_role)(UI_C_SERIES0 + series % 8);
}

void ui_legend_overlap(ui_legend_entry *e)
{
    snprintf(e->glyph, sizeof(e->glyph), "2-9");
    snprintf(e->name, sizeof(e->name), "that many series at one point");
    e->role = UI_C_NORMAL;
}

#define LEGEND_MAX 64

int ui_draw_legend(int y, int x, int w, int maxrows, const ui_legend_entry *e, int n, int *page)
{
    int widths[LEGEND_MAX], col[LEGEND_MAX], row[LEGEND_MAX];
    if (n > LEGEND_MAX) n = LEGEND_MAX;
    if (n <= 0 || maxrows <= 0 || w <= 0)
        return 0;
    for (int i = 0; i < n; i++)   /* glyph, a blank, the name, two blanks */
        widths[i] = (int)pdbx_text_width(e[i].glyph) + 1 + (int)pdbx_text_width(e[i].name) + 2;
    const int more_w = 16;        /* "+NN more (L)" and a blank */
    int first = 0, placed = 0;
    for (int p = 0;; p++) {
        placed = ui_legend_layout(widths, n, first, w, maxrows, more_w, col, row);
        if (p == *page)
            break;
        if (first + placed >= n) {    /* past the last page: back to the first */
            *page = 0;
            first = 0;
            placed = ui_legend_layout(widths, n, 0, w, maxrows, more_w, col, row);
            break;
        }
        first += placed;
    }
    int rows = 0;
    for (int k = 0; k < placed; k++) {
        const ui_legend_entry *en = &e[first + k];
        int cx = x + col[k], gw = (int)pdbx_text_width(en->glyph);
        ui_put(y + row[k], cx, gw, en->role, 0, "%s", en->glyph);
        ui_put(y + row[k], cx + gw + 1, x + w - (cx + gw + 1), UI_C_NORMAL, 0, "%s", en->name);
        if (row[k] + 1 > rows) rows = row[k] + 1;
    }
    int left = n - first - placed;
    if (left > 0 || first > 0) {
        int last = placed ? row[placed - 1] : 0;
        int end = 0;
        for (int k = 0; k < placed; k++)
            if (row[k] == last && col[k] + widths[first + k] > end) end = col[k] + widths[first + k];
        if (left > 0)
            ui_put(y + last, x + end, x + w - (x + end), UI_C_DIM, 0, "+%d more (L)", left);
        else
            ui_put(y + last, x + end, x + w - (x + end), UI_C_DIM, 0, "(L: first)");
    }
    return rows;
}
