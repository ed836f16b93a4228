/* fmt.h: number and table formatting shared by the CLI and the explorer. Pure: no curses, no
 * store access; every function writes into the caller's buffer and never fails on odd input.
 *
 * Conventions:
 *  - A value that is not valid (never measured, NaN, infinite) prints "N/A", never 0.
 *  - Times are milliseconds printed with about four significant digits ("812.3", "12.35",
 *    "1.235", "0.1235") and a fixed upper bound on decimals, so columns stay readable.
 *  - Byte sizes are IEC ("1.5 MiB", "512 B"): message and file sizes are powers of two.
 *    Memory-model figures are decimal GB (1e9) like GPU datasheets ("47.9").
 *  - One time-zone rule: a moment shown to people is local time (pdbx_fmt_time), in the CLI
 *    and the explorer alike, so the two never disagree. UTC appears only in text a machine reads
 *    back (the stamp inside run ids, stored timestamps), never through this module.
 *  - Tables are built cell by cell and printed with each column as wide as its widest cell
 *    (in characters, not bytes), numbers right-aligned, text left-aligned, two spaces between
 *    columns. Every header and cell is made terminal-safe when set (pdbx_text_safe, text.h):
 *    cells carry strings from run files, and the table is where they leave for a terminal.
 */
#ifndef PDBX_FMT_H
#define PDBX_FMT_H

#include <stddef.h>
#include <stdio.h>

#define PDBX_NA "N/A"

/* Milliseconds; valid == 0 or a non-finite value gives "N/A". Returns buf. */
char *pdbx_fmt_ms(double ms, int valid, char *buf, size_t len);
/* A ratio such as B/A: three decimals ("0.512", "12.30"); invalid -> N/A. */
char *pdbx_fmt_ratio(double r, int valid, char *buf, size_t len);
/* A fraction as a percentage: "0.84%" below 1%, "3.2%" below 10%, "12%" above; N/A when NaN
 * or negative (a CI or CV that is not known). */
char *pdbx_fmt_pct(double frac, char *buf, size_t len);
/* IEC size: "512 B", "4.0 KiB", "1.5 MiB", "12 GiB". Negative/non-finite -> N/A. */
char *pdbx_fmt_size(double bytes, char *buf, size_t len);
/* Decimal gigabytes with one decimal ("47.9"); non-finite -> N/A. */
char *pdbx_fmt_gb(double bytes, char *buf, size_t len);
/* GB/s with one decimal below 100, none above; invalid -> N/A. */
char *pdbx_fmt_gbs(double gbs, int valid, char *buf, size_t len);
/* Local time (the TZ of the process) "YYYY-MM-DD HH:MM"; 0, negative, non-finite or from
 * the year 10000 on (PDBX_FMT_TIME_MAX: no recorded time is; a time_t may not hold it) -> N/A. */
#define PDBX_FMT_TIME_MAX 253402300800.0          /* 10000-01-01T00:00:00Z */
char *pdbx_fmt_time(double unix_s, char *buf, size_t len);
/* Duration "42s", "3m05s", "2h07m"; negative, non-finite or from PDBX_FMT_DURATION_MAX (about
 * 31,700 years: a corrupt field, and beyond what an integer of seconds holds safely) -> N/A. */
#define PDBX_FMT_DURATION_MAX 1e12
char *pdbx_fmt_duration(double s, char *buf, size_t len);
/* A list of ints joined with ',' ("1,2,4"); n == 0 gives "-". */
char *pdbx_fmt_int_list(const int *v, size_t n, char *buf, size_t len);
/* A parallel config as people read it, with EP only when ep > 1, so that a dense config reads
 * as it did before EP existed: TAB "TP1 PP1 DP2 EP2" (the explorer's tabs and rows), HEADER
 * "TP 1  PP 1  DP 2  EP 2" (the headings of pdbx show and diff), DIMS "1x1x2x2" (the form the
 * configs field and --config take back). Returns buf. */
typedef enum { PDBX_CFG_LABEL_TAB = 0, PDBX_CFG_LABEL_HEADER, PDBX_CFG_LABEL_DIMS } pdbx_cfg_label;
char *pdbx_fmt_config(pdbx_cfg_label style, int tp, int pp, int dp, int ep, char *buf, size_t len);

/* ---- tables ---------------------------------------------------------------------------- */
typedef enum { PDBX_ALIGN_LEFT = 0, PDBX_ALIGN_RIGHT } pdbx_align;

typedef struct pdbx_table pdbx_table;

/* A table of ncols columns; NULL when out of memory. */
pdbx_table *pdbx_table_new(size_t ncols);
void pdbx_table_free(pdbx_table *t);
/* Header text and alignment of a column. Returns 0, -1 on a bad column or no memory. */
int pdbx_table_header(pdbx_table *t, size_t col, const char *title, pdbx_align align);
/* Starts a new row with every cell empty. Returns 0 or -1 (no memory). */
int pdbx_table_add_row(pdbx_table *t);
/* Sets a cell of the last row (printf-style). Returns 0 or -1. */
int pdbx_table_set(pdbx_table *t, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
size_t pdbx_table_rows(const pdbx_table *t);
/* Printed width of a column: the widest of its header and cells. */
size_t pdbx_table_col_width(const pdbx_table *t, size_t col);
/* Hides a column (still settable) so callers can drop all-N/A columns after filling. */
void pdbx_table_hide(pdbx_table *t, size_t col, int hidden);
/* Prints header then rows, each line prefixed by indent (may be NULL). No line ends in
 * blanks (empty trailing cells print nothing). */
void pdbx_table_print(const pdbx_table *t, FILE *out, const char *indent);

#endif
