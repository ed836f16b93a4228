/* ui_canvas.c: the text canvas of ui_chart.h (cells, UTF-8 in and out) and the glyphs of
 * segments and series. */
#include "tui/ui_chart.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/ui_chart_internal.h"

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

uint32_t chart_at(const ui_canvas *c, int y, int x)
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

/* ---- glyphs ----------------------------------------------------------------------------- */
static const char ascii_fills[] = "#@%*+=o:x&$~^-/.";
static const uint32_t unicode_fills[] = { 0x2588, 0x2593, 0x2592, 0x2591 };
/* markers never use digits (the overlap counts), '*' (many overlaps) or a connector glyph */
static const char ascii_markers[] = "ox#@%&$svzAHMWXY";
static const uint32_t unicode_markers[] = { 0x25CF, 0x25CB, 0x25A0, 0x25A1, 0x25B2, 0x25B3, 0x25C6, 0x25C7 };
static const char ascii_connectors[] = ".-:~',`_;=!\"^<>/";
/* middle dot, dashed and dotted box lines, ratio, tilde... then the ASCII ones */
static const uint32_t unicode_connectors[] = { 0x00B7, 0x254C, 0x2508, 0x2236, '~', 0x2025, '\'', ',' };

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

uint32_t ui_series_connector(int series, int unicode)
{
    if (series < 0) series = 0;
    series %= 16;
    int nu = (int)(sizeof(unicode_connectors) / sizeof(unicode_connectors[0]));
    if (unicode && series < nu)
        return unicode_connectors[series];
    return (uint32_t)(unsigned char)ascii_connectors[series];
}

uint32_t ui_overlap_marker(int k)
{
    return k >= 2 && k <= 9 ? (uint32_t)('0' + k) : '*';
}
