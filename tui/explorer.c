/* explorer.c: terminal setup and teardown of the explorer around the loop (see explorer.h). */
#include "tui/explorer.h"

#include <curses.h>
#include <dirent.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/layout.h"
#include "store/util/text.h"
#include "tui/ui_app.h"

/* 1 when DIR/runs holds no run file (a quick readdir, not a listing). */
static int store_is_empty(const char *dir)
{
    char path[PDBX_PATH_MAX + 8], id[PDBX_RUN_ID_MAX];
    if (pdbx_layout_path(PDBX_PATH_RUNS, dir, NULL, path, sizeof(path)) != 0)
        return 1;
    DIR *d = opendir(path);
    if (!d)
        return 1;
    int empty = 1;
    struct dirent *e;
    while (empty && (e = readdir(d)))
        empty = !pdbx_layout_run_id_of_name(e->d_name, id);
    closedir(d);
    return empty;
}

static int curses_active;

static void restore_terminal(void)
{
    if (curses_active) {
        endwin();
        curses_active = 0;
    }
}

/* Theme from --theme, else the saved choice, else default-dark; monochrome when asked. */
static void choose_theme(ui_app *app, const pdbx_explorer_opts *o)
{
    char err[256];
    ui_theme_warnings w = { 0 };
    const char *name = o->theme ? o->theme : (app->cfg.theme[0] ? app->cfg.theme : "default-dark");
    if (app->mono && !o->theme)
        name = "monochrome";
    if (ui_theme_load(name, &app->theme, &w, err, sizeof(err)) != 0) {
        ui_app_message(app, 1, "default theme used: %s", err);
        if (app->mono) ui_theme_builtin_mono(&app->theme);
    } else if (w.n > 0) {
        ui_app_message(app, 1, "%s", w.msg[0]);
    }
    if (o->theme && ui_theme_load(o->theme, &(ui_theme){ 0 }, NULL, err, sizeof(err)) == 0) {
        /* an explicit choice is remembered */
        snprintf(app->cfg.theme, sizeof(app->cfg.theme), "%s", app->theme.name);
        if (ui_config_save_if_changed(&app->cfg, err, sizeof(err)) != 0)
            ui_app_message(app, 1, "theme not saved: %s", err);
    }
}

/* Everything before curses: locale, settings, colour choice and the store (whose errors wait
 * on the message line). Returns 0, or 1 when there is no terminal to run on. */
static int prepare(ui_app *app, const pdbx_explorer_opts *o)
{
    char err[512];
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr, "pdbx: the explorer needs a terminal; in scripts use the subcommands (pdbx --help)\n");
        return 1;
    }
    setlocale(LC_ALL, "");
    app->unicode = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
    if (ui_config_load(&app->cfg, err, sizeof(err)) != 0)
        ui_app_message(app, 1, "config: %s", err);
    app->force_ascii = o->ascii || app->cfg.ascii;
    const char *nc = getenv("NO_COLOR");
    app->mono = o->no_color || (nc && *nc);
    /* the store: open (creating it) when we can; errors show on the message line */
    if (o->store)
        snprintf(app->store_dir, sizeof(app->store_dir), "%s", o->store);
    else if (pdbx_store_default_dir(app->store_dir, sizeof(app->store_dir), err, sizeof(err)) != 0)
        ui_app_message(app, 1, "%s", err);
    if (app->store_dir[0] && pdbx_store_open(app->store_dir, 1, &app->store, err, sizeof(err)) != 0) {
        ui_app_message(app, 1, "%s", err);
        app->store = NULL;
    }
    return 0;
}

/* Home and End in every form terminals send them (ui_keys_sequences): a sequence terminfo
 * does not bind, or binds to another key (\e[1~ is Find to an xterm description), is bound. */
static void define_home_end(void)
{
    size_t n;
    const ui_key_sequence *q = ui_keys_sequences(&n);
    for (size_t i = 0; i < n; i++) {
        int have = key_defined(q[i].seq);
        if (have == q[i].key || have < 0)     /* < 0: a prefix of a longer sequence */
            continue;
        if (have > 0)
            define_key(q[i].seq, 0);
        define_key(q[i].seq, q[i].key);
    }
}

/* curses on the terminal; NULL (said on stderr) when the terminal type cannot be driven. */
static SCREEN *start_curses(ui_app *app, const pdbx_explorer_opts *o)
{
    SCREEN *scr = newterm(NULL, stdout, stdin);
    if (!scr) {
        fprintf(stderr, "pdbx: cannot drive terminal type '%s' (set TERM, e.g. TERM=xterm-256color)\n",
                getenv("TERM") ? getenv("TERM") : "");
        return NULL;
    }
    curses_active = 1;
    atexit(restore_terminal);
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    define_home_end();
    set_escdelay(25);
    curs_set(0);
    if (!app->mono && has_colors()) {
        start_color();
        use_default_colors();
    } else if (!app->mono) {
        app->mono = 1;
    }
    choose_theme(app, o);
    ui_theme_apply(&app->theme, app->mono);
    return scr;
}

/* The first screens: the replay's monitor alone, or the runs (with the new-sweep form on top
 * for a store without runs). Returns 0, or 1 when the replay cannot start. */
static int open_first(ui_app *app, const pdbx_explorer_opts *o, int replay)
{
    if (replay) {
        if (ui_app_push(app, UI_SCREEN_MONITOR, &(ui_monitor_arg){ .replay_path = o->replay_file,
                                                                     .speed = o->speed }) != 0) {
            char err[sizeof(app->message)];
            pdbx_text_safe(err, sizeof(err), app->message);   /* it may quote the file's bytes */
            restore_terminal();
            fprintf(stderr, "pdbx replay: %s\n", err);
            return 1;
        }
        return 0;
    }
    const char *preset = o->preset ? o->preset : "quick";
    if (ui_app_push(app, UI_SCREEN_RUNS, preset) != 0)
        return 1;
    /* a store without runs (a new user): start on the new-sweep form, ready to launch */
    if (app->store && store_is_empty(app->store_dir) && ui_app_push(app, UI_SCREEN_FORM, preset) == 0)
        ui_app_message(app, 0, "no runs yet: F5 launches this sweep, Esc shows the runs");
    return 0;
}

static int run_explorer(const pdbx_explorer_opts *o, int replay, const ui_screen_ops *const *screens)
{
    static ui_app app;            /* one per process */
    int rc = 1;
    memset(&app, 0, sizeof(app));
    app.screens = screens;
    app.cursor_y = -1;
    if (prepare(&app, o) != 0)
        return 1;
    SCREEN *scr = start_curses(&app, o);
    if (scr && open_first(&app, o, replay) == 0)
        rc = ui_app_run(&app);
    restore_terminal();
    ui_app_close_all(&app);
    if (app.store)
        pdbx_store_close(app.store);
    if (scr)
        delscreen(scr);
    return rc;
}

int pdbx_explorer_run(const pdbx_explorer_opts *o, const ui_screen_ops *const *screens)
{
    return run_explorer(o, o->replay_file != NULL, screens);
}
