/* ui_app.h: the explorer's shared state, screen stack and main loop (internal to tui/).
 *
 * One loop (ui_app_run): apply the resize flag, tick the current screen when its refresh
 * interval elapsed, draw only when dirty, then timeout(ms until the next tick) + getch.
 * Signal handlers only set flags. Screen handlers return a UI_H_* bit mask instead of
 * drawing (htop's HandlerResult); the loop acts on the bits. The screens themselves sit
 * behind tables of functions (screen.h) on a stack; the loop knows none of them by name.
 *
 * Screens read model structs (pdbx_run, pdbx_run_summary) and never write the store except
 * through store.h calls the user asked for (delete, export) and launch.h (launch, cancel).
 */
#ifndef PDBX_UI_APP_H
#define PDBX_UI_APP_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "tui/ui_chart.h"
#include "tui/ui_config.h"
#include "tui/ui_data.h"
#include "tui/ui_keys.h"
#include "tui/ui_layout.h"
#include "tui/screen.h"
#include "tui/ui_theme.h"

#define UI_STACK_MAX 8

/* One open screen: its table and the state its open returned. */
typedef struct {
    const ui_screen_ops *ops;
    void *state;
} ui_frame;

/* What the loop and every screen share: the terminal, the theme, the store, the screen stack
 * and the message line. Each screen's own state lives in its file (see screen.h). */
struct ui_app {
    ui_layout layout;
    const ui_screen_ops *const *screens;   /* the registry, indexed by ui_screen_id */
    ui_frame stack[UI_STACK_MAX];
    int depth;
    unsigned generation;     /* counts stack changes: a new top screen ticks at once */
    pdbx_store *store;
    char store_dir[PDBX_PATH_MAX];
    int unicode, force_ascii, mono;
    ui_theme theme;
    ui_config cfg;
    char message[256];
    int message_error;
    /* a y/n confirmation on the message line, about the state of the screen that asked */
    char confirm[256];
    void (*on_confirm)(ui_app *app, void *st);
    void *confirm_state;
    int cursor_y, cursor_x;  /* where a screen wants the text cursor, -1: hidden */
};

/* ---- app services (ui_app.c) ------------------------------------------------------------ */
/* A screen's zeroed state for its open(): calloc, or NULL after telling the user
 * "out of memory opening <what>". */
void *ui_screen_state_new(ui_app *app, size_t size, const char *what);
void ui_app_message(ui_app *app, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Asks y/n on the message line; y calls fn(app, st). */
void ui_app_confirm(ui_app *app, void (*fn)(ui_app *, void *), void *st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Shows a message at once (redraws now): for the one call that may block, a launch waiting
 * for the engine's first event. */
void ui_app_busy(ui_app *app, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ui_app_run(ui_app *app);
/* Closes every open screen (top first), at the end of the program. */
void ui_app_close_all(ui_app *app);

/* ---- drawing helpers (ui_draw.c) ---------------------------------------------------------- */
/* Text with a role, clipped to w columns (UTF-8 aware), padded with blanks when pad. */
void ui_put(int y, int x, int w, ui_role role, int pad, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* ui_put for prose (messages, errors, hints): cut at a word boundary with "..." when longer
 * than w (ui_text_fit), never mid-word. */
void ui_put_text(int y, int x, int w, ui_role role, int pad, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* The same wrapped onto up to max_rows rows from y (ui_text_wrap); returns the rows used. */
int ui_put_wrapped(int y, int x, int w, int max_rows, ui_role role, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* A canvas at (y, x): class UI_CLS_SERIES+i draws with role UI_C_SERIES0 + i % 8. */
void ui_draw_canvas(const ui_canvas *c, int y, int x);
/* One legend entry: a glyph (UTF-8, drawn in role) and the name it stands for. */
typedef struct {
    char glyph[16];
    char name[64];
    ui_role role;
} ui_legend_entry;
/* The glyph of series/segment i in the chart's glyph set, with its series role. */
void ui_legend_set(ui_legend_entry *e, uint32_t glyph, int series, const char *name);
/* The entry that explains a line chart's overlap counts (a digit where 2-9 series share a
 * point; ui_lines_info.overlaps). */
void ui_legend_overlap(ui_legend_entry *e);
/* A legend in rows y..y+maxrows-1, columns x..x+w-1 (ui_legend_layout): page *page of it, and
 * "+N more (L)" when entries are left over, so none is dropped silently. A page past the end
 * wraps to 0 (*page is updated). Returns the rows used. */
int ui_draw_legend(int y, int x, int w, int maxrows, const ui_legend_entry *e, int n, int *page);
/* Tabs "[ a ] [ b ]" on one row; returns nothing. */
void ui_draw_tabs(int y, int x, int w, const char *const *names, int n, int active);
/* Role for a run/point status. */
ui_role ui_role_run_status(pdbx_run_status s);
ui_role ui_role_point_status(pdbx_point_status s);
/* Times and durations a person reads: store/util/fmt.h (pdbx_fmt_time: local time). */

/* ---- cost chart (ui_costchart.c) ------------------------------------------------------------ */
/* Cost vs MBS line chart of nm matrices overlaid: op_sel >= 0 plots that op, else the largest
 * ops; series are named "<names[k]> <op>" when nm > 1. Shared by the run view and compare. */
void ui_draw_cost_chart(ui_app *app, ui_rect b, const ui_matrix *const *ms, const char *const *names,
                        int nm, int op_sel, int log, const char *title, int *legend_page);

#endif
