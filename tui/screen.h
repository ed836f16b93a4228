/* screen.h: the contract between the explorer's loop (tui/ui_app.c) and its screens
 * (tui/screens/).
 *
 * A screen is a table of functions (ui_screen_ops) over a state it allocates in open and frees
 * in close; nothing outside the screen's file sees that state. Screens never include or call
 * each other: to show another screen they ask the loop to push, replace or pop one, naming it
 * by its ui_screen_id and passing the argument its open takes (the argument types are below,
 * so caller and callee agree without knowing each other). The loop does not know the screens
 * either: the program (tui/cli/pdbx_main.c) hands it the registry of tui/screens/screens.h.
 * That keeps the libraries acyclic: tui/screens depends on tui, never the other way round.
 */
#ifndef PDBX_SCREEN_H
#define PDBX_SCREEN_H

#include "store/store.h"
#include "tui/ui_keys.h"
#include "tui/ui_layout.h"

typedef struct ui_app ui_app;

/* Handler results (bit mask, htop's HandlerResult): screens return these instead of drawing. */
enum {
    UI_H_NONE = 0,
    UI_H_HANDLED = 1 << 0,   /* the key was consumed */
    UI_H_REDRAW = 1 << 1,    /* something visible changed */
    UI_H_RESIZE = 1 << 2,    /* recompute the layout */
    UI_H_QUIT = 1 << 3,      /* leave the explorer */
    UI_H_CLEAR = 1 << 4,     /* full repaint (clearok) */
};

/* The screens a registry provides, and what each one's open takes as `arg`. */
typedef enum {
    UI_SCREEN_RUNS = 0,      /* const char *: the preset the new-sweep form starts from */
    UI_SCREEN_FORM,          /* const char *: the sweep preset to fill the form from */
    UI_SCREEN_MONITOR,       /* const ui_monitor_arg * */
    UI_SCREEN_RUNVIEW,       /* const char *: the run id */
    UI_SCREEN_COMPARE,       /* const ui_compare_arg * */
    UI_SCREEN_EXPORT,        /* const ui_export_arg * */
    UI_SCREEN_ADVISE,        /* const ui_advise_arg * */
    UI_SCREEN_COUNT
} ui_screen_id;

typedef struct {
    const char *id;          /* a run of the store to tail, or NULL for a replay */
    const char *replay_path; /* a recording (run file) to play back */
    double speed;            /* replay speed */
} ui_monitor_arg;

typedef struct {
    const char *id_a, *id_b; /* two runs of the store, configs matched by TP/PP/DP/EP; or */
    const pdbx_run *run;     /* one run (loaded again, a private copy) and two of its configs */
    const int *cfg_a, *cfg_b;   /* PDBX_CFG_DIMS ints each: tp, pp, dp, ep (pdbx_run_configs) */
} ui_compare_arg;

typedef struct {
    const char *id;          /* the run to export, loaded by the dialog; or */
    const pdbx_run *run;     /* a run the screen below owns (it outlives the dialog) */
} ui_export_arg;

typedef struct {
    const pdbx_run *run;     /* the run to advise from, owned by the screen below (it outlives
                              * the advise screen) */
    int gpus, gbs;           /* the first query; 0: the screen's defaults */
} ui_advise_arg;

typedef struct ui_screen_ops {
    const char *name;        /* title bar */
    unsigned keymask;        /* UI_SCR_* of its bindings */
    int tick_ms;             /* refresh interval, 0 = none */
    /* Returns the new state, or NULL with the reason on the message line (ui_app_message). */
    void *(*open)(ui_app *app, const void *arg);
    void (*close)(void *st);
    void (*draw)(ui_app *app, void *st, ui_rect body);
    int (*key)(ui_app *app, void *st, int key, ui_action act);   /* UI_H_* */
    int (*tick)(ui_app *app, void *st);                          /* optional: UI_H_* */
    void (*resume)(ui_app *app, void *st);   /* optional: the screen above it closed */
    unsigned (*keys)(const void *st);        /* optional: keymask when it depends on the state */
} ui_screen_ops;

/* The loop's screen stack. Each returns 0, or -1 when the new screen did not open (its reason
 * is on the message line and the stack is unchanged). Popping the last screen ends the loop. */
int ui_app_push(ui_app *app, ui_screen_id id, const void *arg);
int ui_app_replace(ui_app *app, ui_screen_id id, const void *arg);
void ui_app_pop(ui_app *app);

#endif
