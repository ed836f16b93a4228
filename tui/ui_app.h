/* ui_app.h: the explorer's application state, screens and main loop (internal to tui/).
 *
 * One loop (ui_app_run): apply the resize flag, tick the current screen when its refresh
 * interval elapsed, draw only when dirty, then timeout(ms until the next tick) + getch.
 * Signal handlers only set flags. Screen handlers return a UI_H_* bit mask instead of
 * drawing (htop's HandlerResult); the loop acts on the bits.
 *
 * Screens read model structs (pdbx_run, pdbx_run_summary) and never write the store except
 * through store.h calls the user asked for (delete, export) and launch.h (launch, cancel).
 */
#ifndef PDBX_UI_APP_H
#define PDBX_UI_APP_H

#include <stddef.h>
#include <stdint.h>

#include "engine/plan/plan.h"
#include "store/store.h"
#include "tui/ui_chart.h"
#include "tui/ui_config.h"
#include "tui/ui_data.h"
#include "tui/ui_keys.h"
#include "tui/ui_layout.h"
#include "tui/ui_replay.h"
#include "tui/ui_theme.h"

/* Handler results (bit mask). */
enum {
    UI_H_NONE = 0,
    UI_H_HANDLED = 1 << 0,   /* the key was consumed */
    UI_H_REDRAW = 1 << 1,    /* something visible changed */
    UI_H_RESIZE = 1 << 2,    /* recompute the layout */
    UI_H_QUIT = 1 << 3,      /* leave the explorer */
    UI_H_CLEAR = 1 << 4,     /* full repaint (clearok) */
};

typedef enum {
    UI_SCREEN_RUNS = 0, UI_SCREEN_FORM, UI_SCREEN_MONITOR, UI_SCREEN_RUNVIEW, UI_SCREEN_COMPARE,
    UI_SCREEN_EXPORT, UI_SCREEN_HELP, UI_SCREEN_COUNT
} ui_screen_id;

typedef struct ui_app ui_app;

typedef struct {
    const char *name;                                   /* title bar */
    unsigned keymask;                                   /* UI_SCR_* of its bindings */
    int tick_ms;                                        /* refresh interval, 0 = none */
    int (*tick)(ui_app *app);                           /* refresh data: UI_H_* */
    int (*key)(ui_app *app, int key, ui_action act);    /* UI_H_* */
    void (*draw)(ui_app *app, ui_rect body);
} ui_screen;

/* ---- per-screen state --------------------------------------------------------------- */
typedef struct {
    pdbx_run_summary *all;
    size_t nall;
    size_t *view;            /* indices into all after filter and sort */
    size_t nview;
    int sel, top;
    int sort_col, sort_rev;
    char filter[128];
    int editing_filter;
    char marked[PDBX_RUN_ID_MAX];
    double runs_dir_mtime;
    int any_running;
    double last_list;        /* monotonic seconds of the last listing */
    double list_ms;          /* how long the last listing took */
    int loaded;              /* a listing arrived */
    char pending_delete[PDBX_RUN_ID_MAX];   /* the run a delete confirmation is about */
    struct ui_lister *lister;   /* lists on a worker thread (ui_lister.h) */
} ui_runs_state;

#define UI_FORM_FIELDS 24
typedef struct {
    const char *label;
    const char *field;       /* pdbx_spec_set field name */
    char value[256];
    char error[256];         /* planner message for this field, "" when fine */
    const char *const *choices;   /* NULL: free text */
} ui_form_field;

typedef struct {
    ui_form_field f[UI_FORM_FIELDS];
    int nf;
    int sel;
    int cursor;              /* byte offset in the selected field */
    char preset[64];
    pdbx_spec spec;          /* the spec the current values give */
    int spec_ok;
    char spec_error[256];    /* pdbx_spec_validate's message */
    pdbx_plan_point *points;
    size_t npoints;
    char combos[512];        /* valid TP/PP/DP combinations for the GPU count */
    int preview_top;
} ui_form_state;

typedef struct {
    char id[PDBX_RUN_ID_MAX];
    char path[PDBX_PATH_MAX];
    pdbx_run run;
    int have_run;
    uint64_t offset;
    char corrupt[256];
    double opened;           /* monotonic */
    double last_liveness;
    /* replay */
    int replay;
    ui_replay rp;
    double last_wall;
    int paused;
    int scroll;
    long drawn_second;       /* the elapsed second last drawn (redraw when it moves) */
} ui_monitor_state;

typedef enum { UI_VIEW_TABLE = 0, UI_VIEW_SHARE_TABLE, UI_VIEW_SHARES, UI_VIEW_COST, UI_VIEW_ROOFLINE,
               UI_VIEW_COUNT } ui_view_kind;

typedef struct {
    pdbx_run run;
    int have_run;
    int configs[PDBX_MAX_CONFIGS][3];
    int nconfigs;
    int tab;                 /* 0..nconfigs-1 configs, nconfigs = collectives */
    ui_view_kind view;
    pdbx_stat_kind stat;
    int log;
    int op;                  /* -1 = all ops in the cost chart */
    int marked_tab;          /* -1 none */
    int scroll;
    pdbx_spec spec;          /* the run's spec (GPU peaks for the roofline) */
    int have_spec;
} ui_runview_state;

typedef struct {
    pdbx_run a, b;           /* b unused when comparing two configs of one run */
    int have_a, have_b, same_run;
    int pairs[PDBX_MAX_CONFIGS][6];     /* config of A (tp,pp,dp), config of B */
    int npairs;
    int tab;
    pdbx_stat_kind stat;
    int log;
    int op;                  /* -1: the total */
    ui_view_kind view;       /* TABLE (ratios) or COST (overlaid chart) */
    int scroll;              /* op rows scrolled off the top of the ratio table */
} ui_compare_state;

typedef struct {
    int sel;
    int format;              /* 0 npz, 1 csv, 2 trace */
    char dir[PDBX_PATH_MAX];
    char model_tag[32], gpu_tag[32];
    int attribution;         /* pdbx_attribution */
    int stat;
    char report[16][PDBX_PATH_MAX + 8];
    int nreport;
    int cursor;
    ui_screen_id back;
} ui_export_state;

struct ui_app {
    ui_layout layout;
    ui_screen_id screen, help_back;
    const ui_screen *screens[UI_SCREEN_COUNT];
    pdbx_store *store;
    char store_dir[PDBX_PATH_MAX];
    int unicode, force_ascii, mono;
    ui_theme theme;
    ui_config cfg;
    char message[256];
    int message_error;
    /* a y/n confirmation on the message line */
    char confirm[256];
    void (*on_confirm)(ui_app *app);
    int help_top;
    int cursor_y, cursor_x;  /* where a screen wants the text cursor, -1: hidden */
    ui_runs_state runs;
    ui_form_state form;
    ui_monitor_state mon;
    ui_runview_state rv;
    ui_compare_state cmp;
    ui_export_state exp;
    ui_screen_id monitor_back;
    char form_preset[64];    /* sweep preset the new-sweep form starts from */
    double replay_speed;     /* speed of replays started from the home screen */
    int replay_only;         /* `pdbx replay`: quitting the monitor leaves the program */
};

extern const ui_screen ui_screen_runs, ui_screen_form, ui_screen_monitor, ui_screen_runview,
    ui_screen_compare, ui_screen_export, ui_screen_help;

/* ---- app services (ui_app.c) ------------------------------------------------------------ */
double ui_now(void);                                  /* monotonic seconds */
void ui_app_message(ui_app *app, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ui_app_confirm(ui_app *app, void (*fn)(ui_app *), const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ui_app_switch(ui_app *app, ui_screen_id to);
/* Shows a message at once (redraws now): for the one call that may block, a launch waiting
 * for the engine's first event. */
void ui_app_busy(ui_app *app, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ui_app_run(ui_app *app);

/* ---- screen entry points ---------------------------------------------------------------- */
int ui_runs_refresh(ui_app *app, int force);
int ui_form_open(ui_app *app, const char *preset);
void ui_form_free(ui_form_state *f);
int ui_monitor_open(ui_app *app, const char *id);                 /* tail a run of the store */
int ui_monitor_open_replay(ui_app *app, const char *path, double speed);
void ui_monitor_close(ui_app *app);
int ui_runview_open(ui_app *app, const char *id);
void ui_runview_close(ui_app *app);
int ui_compare_open_runs(ui_app *app, const char *id_a, const char *id_b);
int ui_compare_open_configs(ui_app *app, const pdbx_run *run, const int cfg_a[3], const int cfg_b[3]);
void ui_compare_close(ui_app *app);
void ui_export_open(ui_app *app, ui_screen_id back);

/* Cost vs MBS line chart of nm matrices overlaid (ui_runview.c): op_sel >= 0 plots that op,
 * else the largest ops; series are named "<names[k]> <op>" when nm > 1. */
void ui_draw_cost_chart(ui_app *app, ui_rect b, const ui_matrix *const *ms, const char *const *names,
                        int nm, int op_sel, int log, const char *title);

/* ---- drawing helpers (ui_draw.c) ---------------------------------------------------------- */
/* Text with a role, clipped to w columns (UTF-8 aware), padded with blanks when pad. */
void ui_put(int y, int x, int w, ui_role role, int pad, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* A canvas at (y, x): class UI_CLS_SERIES+i draws with role UI_C_SERIES0 + i % 8. */
void ui_draw_canvas(const ui_canvas *c, int y, int x);
/* Tabs "[ a ] [ b ]" on one row; returns nothing. */
void ui_draw_tabs(int y, int x, int w, const char *const *names, int n, int active);
/* Role for a run/point status. */
ui_role ui_role_run_status(pdbx_run_status s);
ui_role ui_role_point_status(pdbx_point_status s);
/* "2026-11-21 23:59" (UTC) */
void ui_format_time(double unix_s, char *buf, size_t len);
/* "1h02m", "3m05s", "12s", "N/A" */
void ui_format_duration(double s, char *buf, size_t len);

#endif
