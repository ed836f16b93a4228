/* fmt.c: number and table formatting (see fmt.h). */
#include "store/util/fmt.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/util/text.h"

char *pdbx_fmt_ms(double ms, int valid, char *buf, size_t len)
{
    if (!valid || !isfinite(ms)) {
        snprintf(buf, len, "%s", PDBX_NA);
        return buf;
    }
    double a = fabs(ms);
    if (a == 0.0) {
        snprintf(buf, len, "0");
    } else if (a < 1e-4) {
        snprintf(buf, len, "%.2e", ms);       /* sub-100ns: keep it visible, not "0.0000" */
    } else {
        /* About four significant digits: decimals = 3 - floor(log10 |v|), within 0..4. */
        int decimals = 3 - (int)floor(log10(a));
        if (decimals < 0)
            decimals = 0;
        if (decimals > 4)
            decimals = 4;
        snprintf(buf, len, "%.*f", decimals, ms);
    }
    return buf;
}

char *pdbx_fmt_pct(double frac, char *buf, size_t len)
{
    double pct = frac * 100.0;
    if (!isfinite(pct) || pct < 0)
        snprintf(buf, len, "%s", PDBX_NA);
    else
        snprintf(buf, len, "%.*f%%", pct < 1.0 ? 2 : pct < 10.0 ? 1 : 0, pct);
    return buf;
}

/* v with fewer decimals as it grows: `small` below 10, `mid` below 100, `large` above. */
static char *fixed_by_magnitude(double v, int valid, int small, int mid, int large, char *buf, size_t len)
{
    if (!valid || !isfinite(v)) {
        snprintf(buf, len, "%s", PDBX_NA);
        return buf;
    }
    double a = fabs(v);
    snprintf(buf, len, "%.*f", a >= 100.0 ? large : (a >= 10.0 ? mid : small), v);
    return buf;
}

char *pdbx_fmt_ratio(double r, int valid, char *buf, size_t len)
{
    return fixed_by_magnitude(r, valid, 3, 2, 1, buf, len);
}

char *pdbx_fmt_size(double bytes, char *buf, size_t len)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    if (!isfinite(bytes) || bytes < 0) {
        snprintf(buf, len, "%s", PDBX_NA);
        return buf;
    }
    size_t u = 0;
    double v = bytes;
    while (v >= 1024.0 && u + 1 < sizeof unit / sizeof unit[0]) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%.0f B", v);
    else if (v < 10.0)
        snprintf(buf, len, "%.1f %s", v, unit[u]);
    else
        snprintf(buf, len, "%.0f %s", v, unit[u]);
    return buf;
}

char *pdbx_fmt_gb(double bytes, char *buf, size_t len)
{
    if (!isfinite(bytes))
        snprintf(buf, len, "%s", PDBX_NA);
    else
        snprintf(buf, len, "%.1f", bytes / 1e9);
    return buf;
}

char *pdbx_fmt_gbs(double gbs, int valid, char *buf, size_t len)
{
    return fixed_by_magnitude(gbs, valid, 1, 1, 0, buf, len);
}

char *pdbx_fmt_time(double unix_s, char *buf, size_t len)
{
    /* The range is checked before the conversion: converting a double that time_t cannot hold
     * (a recorded 1e300) is undefined behaviour, not just a wrong year. */
    struct tm tm;
    if (!(unix_s > 0 && unix_s < PDBX_FMT_TIME_MAX)) {      /* NaN fails too */
        snprintf(buf, len, "%s", PDBX_NA);
        return buf;
    }
    time_t t = (time_t)unix_s;
    if (!localtime_r(&t, &tm) || strftime(buf, len, "%Y-%m-%d %H:%M", &tm) == 0)
        snprintf(buf, len, "%s", PDBX_NA);
    return buf;
}

char *pdbx_fmt_duration(double s, char *buf, size_t len)
{
    if (!(s >= 0 && s < PDBX_FMT_DURATION_MAX)) {          /* NaN fails too */
        snprintf(buf, len, "%s", PDBX_NA);
        return buf;
    }
    long long t = llround(s);                 /* in range: checked above */
    if (t < 60)
        snprintf(buf, len, "%llds", t);
    else if (t < 3600)
        snprintf(buf, len, "%lldm%02llds", t / 60, t % 60);
    else
        snprintf(buf, len, "%lldh%02lldm", t / 3600, (t % 3600) / 60);
    return buf;
}

char *pdbx_fmt_int_list(const int *v, size_t n, char *buf, size_t len)
{
    if (len == 0)
        return buf;
    if (n == 0) {
        snprintf(buf, len, "-");
        return buf;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%d", i ? "," : "", v[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return buf;
}

char *pdbx_fmt_config(pdbx_cfg_label style, int tp, int pp, int dp, int ep, char *buf, size_t len)
{
    /* the three styles in one table, so EP's "only when > 1" rule is written once */
    static const char *const fmt[3][2] = {
        { "TP%d PP%d DP%d", "TP%d PP%d DP%d EP%d" },
        { "TP %d  PP %d  DP %d", "TP %d  PP %d  DP %d  EP %d" },
        { "%dx%dx%d", "%dx%dx%dx%d" },
    };
    int s = (int)style >= 0 && style <= PDBX_CFG_LABEL_DIMS ? (int)style : 0;
    if (len > 0)
        snprintf(buf, len, fmt[s][ep > 1], tp, pp, dp, ep);
    return buf;
}

/* ---- tables ---------------------------------------------------------------------------- */
struct pdbx_table {
    size_t ncols;
    char **header;           /* ncols titles */
    pdbx_align *align;
    int *hidden;
    char **cells;            /* rows * ncols, row-major; NULL = empty */
    size_t rows, cap;
};

pdbx_table *pdbx_table_new(size_t ncols)
{
    pdbx_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ncols = ncols;
    t->header = calloc(ncols ? ncols : 1, sizeof *t->header);
    t->align = calloc(ncols ? ncols : 1, sizeof *t->align);
    t->hidden = calloc(ncols ? ncols : 1, sizeof *t->hidden);
    if (!t->header || !t->align || !t->hidden) {
        pdbx_table_free(t);
        return NULL;
    }
    return t;
}

void pdbx_table_free(pdbx_table *t)
{
    if (!t)
        return;
    if (t->header)
        for (size_t c = 0; c < t->ncols; c++)
            free(t->header[c]);
    for (size_t i = 0; i < t->rows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t->header);
    free(t->align);
    free(t->hidden);
    free(t);
}

int pdbx_table_header(pdbx_table *t, size_t col, const char *title, pdbx_align align)
{
    if (!t || col >= t->ncols)
        return -1;
    char *copy = strdup(title ? title : "");
    if (!copy)
        return -1;
    pdbx_text_safe(copy, strlen(copy) + 1, copy);      /* an op name can come from a run file */
    free(t->header[col]);
    t->header[col] = copy;
    t->align[col] = align;
    return 0;
}

int pdbx_table_add_row(pdbx_table *t)
{
    if (!t)
        return -1;
    if (t->rows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **cells = realloc(t->cells, cap * t->ncols * sizeof *cells);
        if (!cells && cap * t->ncols != 0)
            return -1;
        t->cells = cells;
        t->cap = cap;
    }
    for (size_t c = 0; c < t->ncols; c++)
        t->cells[t->rows * t->ncols + c] = NULL;
    t->rows++;
    return 0;
}

int pdbx_table_set(pdbx_table *t, size_t col, const char *fmt, ...)
{
    if (!t || t->rows == 0 || col >= t->ncols)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return -1;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    /* Cells carry strings from run files (model, messages): the table is where they leave
     * for a terminal, so this is where they are made safe (text.h). */
    pdbx_text_safe(s, (size_t)n + 1, s);
    char **cell = &t->cells[(t->rows - 1) * t->ncols + col];
    free(*cell);
    *cell = s;
    return 0;
}

size_t pdbx_table_rows(const pdbx_table *t)
{
    return t ? t->rows : 0;
}

size_t pdbx_table_col_width(const pdbx_table *t, size_t col)
{
    if (!t || col >= t->ncols)
        return 0;
    size_t w = pdbx_text_width(t->header[col]);
    for (size_t r = 0; r < t->rows; r++) {
        size_t cw = pdbx_text_width(t->cells[r * t->ncols + col]);
        if (cw > w)
            w = cw;
    }
    return w;
}

void pdbx_table_hide(pdbx_table *t, size_t col, int hidden)
{
    if (t && col < t->ncols)
        t->hidden[col] = hidden;
}

/* Blanks are held back until something visible follows, so no line ends in blanks. */
static void print_line(const pdbx_table *t, FILE *out, const char *indent, char *const *cells,
                       const size_t *width)
{
    fputs(indent ? indent : "", out);
    size_t pending = 0;
    int first = 1;
    for (size_t c = 0; c < t->ncols; c++) {
        if (t->hidden[c])
            continue;
        const char *s = cells[c] ? cells[c] : "";
        size_t len = strlen(s), cw = pdbx_text_width(s), pad = width[c] > cw ? width[c] - cw : 0;
        if (!first)
            pending += 2;
        first = 0;
        if (t->align[c] == PDBX_ALIGN_RIGHT)
            pending += pad;
        if (len) {
            fprintf(out, "%*s%s", (int)pending, "", s);
            pending = 0;
        }
        if (t->align[c] == PDBX_ALIGN_LEFT)
            pending += pad;
    }
    fputc('\n', out);
}

void pdbx_table_print(const pdbx_table *t, FILE *out, const char *indent)
{
    if (!t || t->ncols == 0)
        return;
    size_t *width = calloc(t->ncols, sizeof *width);
    if (!width)
        return;
    for (size_t c = 0; c < t->ncols; c++)
        width[c] = pdbx_table_col_width(t, c);
    print_line(t, out, indent, t->header, width);
    for (size_t r = 0; r < t->rows; r++)
        print_line(t, out, indent, t->cells + r * t->ncols, width);
    free(width);
}
