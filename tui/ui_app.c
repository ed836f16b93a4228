/* ui_app.c: the main loop, the frame around every screen (title, message line, key bar),
 * confirmations, the help screen and terminal setup/restore. See ui_app.h. */
#include <curses.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/util/clock.h"
#include "store/version.h"
#include "tui/ui_app.h"

static volatile sig_atomic_t g_quit_signal;

static void on_quit_signal(int sig)
{
    g_quit_signal = sig;
}

void ui_app_message(ui_app *app, int error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(app->message, sizeof(app->message), fmt, ap);
    va_end(ap);
    app->message_error = error;
}

void ui_app_confirm(ui_app *app, void (*fn)(ui_app *, void *), void *st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(app->confirm, sizeof(app->confirm), fmt, ap);
    va_end(ap);
    app->on_confirm = fn;
    app->confirm_state = st;
}

static void draw(ui_app *app);

void ui_app_busy(ui_app *app, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(app->message, sizeof(app->message), fmt, ap);
    va_end(ap);
    app->message_error = 0;
    draw(app);
}

/* ---- the screen stack ---------------------------------------------------------------------- */
static ui_frame *top(ui_app *app)
{
    return app->depth > 0 ? &app->stack[app->depth - 1] : NULL;
}

/* Opens ops over arg; 0 and the frame filled, or -1 (the screen said why). */
static int open_frame(ui_app *app, const ui_screen_ops *ops, const void *arg, ui_frame *f)
{
    void *st = ops->open ? ops->open(app, arg) : NULL;
    if (ops->open && !st)
        return -1;
    f->ops = ops;
    f->state = st;
    app->generation++;
    return 0;
}

static void close_frame(ui_frame *f)
{
    if (f->ops && f->ops->close)
        f->ops->close(f->state);
    f->ops = NULL;
    f->state = NULL;
}

static int push_ops(ui_app *app, const ui_screen_ops *ops, const void *arg)
{
    if (app->depth >= UI_STACK_MAX) {
        ui_app_message(app, 1, "too many screens open: press Esc first");
        return -1;
    }
    ui_frame f;
    if (open_frame(app, ops, arg, &f) != 0)
        return -1;
    app->stack[app->depth++] = f;
    return 0;
}

int ui_app_push(ui_app *app, ui_screen_id id, const void *arg)
{
    return push_ops(app, app->screens[id], arg);
}

int ui_app_replace(ui_app *app, ui_screen_id id, const void *arg)
{
    ui_frame f;
    if (app->depth == 0)
        return ui_app_push(app, id, arg);
    if (open_frame(app, app->screens[id], arg, &f) != 0)
        return -1;
    close_frame(top(app));
    *top(app) = f;
    return 0;
}

/* Closes the top screen; `resume` tells the one below that it shows again. */
static void pop(ui_app *app, int resume)
{
    if (app->depth == 0)
        return;
    close_frame(top(app));
    app->depth--;
    app->generation++;
    ui_frame *f = top(app);
    if (resume && f && f->ops->resume)
        f->ops->resume(app, f->state);
}

void ui_app_pop(ui_app *app)
{
    pop(app, 1);
}

void ui_app_close_all(ui_app *app)
{
    while (app->depth > 0)
        pop(app, 0);
}

/* Key-table screens of a frame: the monitor has different keys in a replay. */
static unsigned keymask(const ui_frame *f)
{
    return f->ops->keys ? f->ops->keys(f->state) : f->ops->keymask;
}

/* ---- the frame -------------------------------------------------------------------------- */
static void draw_frame(ui_app *app)
{
    const ui_layout *l = &app->layout;
    const ui_frame *s = top(app);
    char store[96];
    size_t dl = strlen(app->store_dir);
    /* the tail of a long store path is the informative part */
    snprintf(store, sizeof(store), "%s%.63s", dl > 60 ? "..." : "", app->store_dir + (dl > 60 ? dl - 60 : 0));
    ui_put(l->title.y, 0, l->cols, UI_C_TITLE, 1, " pdbx %s | %s", pdbx_version(), s->ops->name);
    int sl = (int)strlen(store) + 1;
    if (sl < l->cols / 2)
        ui_put(l->title.y, l->cols - sl, sl, UI_C_TITLE, 0, "%s ", store);
    /* message line: confirmation first, then the last message */
    if (app->confirm[0]) {
        /* the question may be cut, never the [y/N] that says how to answer it */
        char q[sizeof(app->confirm)];
        ui_text_fit(app->confirm, l->cols - 8, q, sizeof(q));
        ui_put(l->message.y, 0, l->cols, UI_C_ERROR, 1, " %s [y/N]", q);
    }
    else if (app->message[0])   /* cut at a word, "..." saying there was more */
        ui_put_text(l->message.y, 0, l->cols, app->message_error ? UI_C_ERROR : UI_C_INFO, 1, " %s",
                    app->message);
    else
        ui_put(l->message.y, 0, l->cols, UI_C_NORMAL, 1, "%s", "");
    /* key bar: generated from the key table; key names highlighted */
    char bar[512];
    unsigned mask = keymask(s);
    ui_keys_bar(mask, l->cols - 1, bar, sizeof(bar));
    ui_put(l->keybar.y, 0, l->cols, UI_C_KEYBAR, 1, " %s", bar);
    /* re-draw each key name in the key role: pairs are "KEY label" separated by two blanks */
    int x = 1;
    const char *p = bar;
    while (*p) {
        const char *sp = strchr(p, ' ');
        if (!sp) break;
        ui_put(l->keybar.y, x, (int)(sp - p), UI_C_KEY, 0, "%.*s", (int)(sp - p), p);
        const char *next = strstr(sp + 1, "  ");
        if (!next) break;
        x += (int)(next + 2 - p);
        p = next + 2;
    }
}

static void draw_too_small(ui_app *app)
{
    char lines[4][128];
    int n = ui_layout_too_small_text(app->layout.lines, app->layout.cols, lines, 4);
    int y0 = app->layout.lines / 2 - n / 2;
    for (int i = 0; i < n; i++) {
        int len = (int)strlen(lines[i]);
        int x = (app->layout.cols - len) / 2;
        ui_put(y0 + i, x < 0 ? 0 : x, app->layout.cols, i == 0 ? UI_C_ERROR : UI_C_NORMAL, 0, "%s", lines[i]);
    }
}

static void draw(ui_app *app)
{
    erase();
    if (app->layout.too_small) {
        draw_too_small(app);
    } else {
        app->cursor_y = -1;
        top(app)->ops->draw(app, top(app)->state, app->layout.body);
        draw_frame(app);
    }
    if (!app->layout.too_small && app->cursor_y >= 0 && !app->confirm[0]) {
        move(app->cursor_y, app->cursor_x);
        curs_set(1);
    } else {
        curs_set(0);
    }
    refresh();
}

/* ---- help screen: generated from the key table of the screen below it ---------------------- */
typedef struct {
    int top;                 /* first line shown */
} help_state;

static void *help_open(ui_app *app, const void *arg)
{
    (void)app;
    (void)arg;
    return calloc(1, sizeof(help_state));
}

static void help_draw(ui_app *app, void *st, ui_rect body)
{
    help_state *h = st;
    const ui_frame *back = &app->stack[app->depth - 2];
    char lines[96][128];
    int n = ui_keys_help(keymask(back), lines, 96);
    int rows = body.h - 3;
    if (h->top > n - rows) h->top = n - rows;
    if (h->top < 0) h->top = 0;
    if (n > rows) /* say that there is more, or the last keys stay unseen */
        ui_put(body.y, 1, body.w - 2, UI_C_HEADER, 0, "Keys on the %s screen  (%d-%d of %d, Up/Down scroll)",
               back->ops->name, h->top + 1, h->top + rows, n);
    else
        ui_put(body.y, 1, body.w - 2, UI_C_HEADER, 0, "Keys on the %s screen", back->ops->name);
    for (int i = 0; i < rows && h->top + i < n; i++)
        ui_put(body.y + 2 + i, 1, body.w - 2, UI_C_NORMAL, 0, "%s", lines[h->top + i]);
    ui_put(body.y + body.h - 1, 1, body.w - 2, UI_C_DIM, 0,
           "Text fields take every printable key; F10 quits, Esc goes back, from anywhere.");
}

static int help_key(ui_app *app, void *st, int key, ui_action act)
{
    help_state *h = st;
    (void)key;
    switch (act) {
    case UI_ACT_UP: h->top--; return UI_H_HANDLED | UI_H_REDRAW;
    case UI_ACT_DOWN: h->top++; return UI_H_HANDLED | UI_H_REDRAW;
    case UI_ACT_PGUP: h->top -= 10; return UI_H_HANDLED | UI_H_REDRAW;
    case UI_ACT_PGDN: h->top += 10; return UI_H_HANDLED | UI_H_REDRAW;
    case UI_ACT_BACK:
        pop(app, 0);         /* the screen below shows as it was left */
        return UI_H_HANDLED | UI_H_REDRAW;
    default: return UI_H_NONE;
    }
}

static const ui_screen_ops help_screen = { "help", UI_SCR_HELP, 0, help_open, free, help_draw, help_key,
                                           NULL, NULL, NULL };

/* ---- dispatch ----------------------------------------------------------------------------- */
static void cycle_theme(ui_app *app)
{
    char names[32][64];
    int n = ui_theme_names(names, 32);
    if (n == 0) {
        ui_app_message(app, 1, "no theme files in %s", ui_themes_dir());
        return;
    }
    int cur = -1;
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], app->theme.name) == 0) cur = i;
    char err[256];
    for (int k = 1; k <= n; k++) {
        const char *next = names[(cur + k) % n];
        ui_theme t;
        ui_theme_warnings w;
        if (ui_theme_load(next, &t, &w, err, sizeof(err)) != 0) {
            ui_app_message(app, 1, "%s", err);
            continue;
        }
        app->theme = t;
        ui_theme_apply(&app->theme, app->mono);
        snprintf(app->cfg.theme, sizeof(app->cfg.theme), "%s", t.name);
        if (ui_config_save_if_changed(&app->cfg, err, sizeof(err)) != 0)
            ui_app_message(app, 1, "theme %s (not saved: %s)", t.name, err);
        else
            ui_app_message(app, 0, "theme: %s%s", t.name, app->mono ? " (monochrome terminal: attributes only)" : "");
        return;
    }
}

static int dispatch(ui_app *app, int ch)
{
    if (app->confirm[0]) {
        void (*fn)(ui_app *, void *) = app->on_confirm;
        void *st = app->confirm_state;
        app->confirm[0] = '\0';
        app->on_confirm = NULL;
        app->confirm_state = NULL;
        if ((ch == 'y' || ch == 'Y') && fn)
            fn(app, st);
        else
            ui_app_message(app, 0, "cancelled");
        return UI_H_REDRAW;
    }
    ui_frame *s = top(app);
    ui_action act = ui_keys_action(keymask(s), ch);
    if (app->layout.too_small)
        return act == UI_ACT_QUIT ? UI_H_QUIT : UI_H_NONE;
    if (ch != ERR)
        app->message[0] = '\0';
    int r = s->ops->key(app, s->state, ch, act);
    if (r & UI_H_HANDLED)
        return r | UI_H_REDRAW;
    switch (act) {
    case UI_ACT_QUIT: return UI_H_QUIT;
    case UI_ACT_HELP:
        if (s->ops != &help_screen)
            push_ops(app, &help_screen, NULL);
        return UI_H_REDRAW;
    case UI_ACT_REDRAW: return UI_H_CLEAR | UI_H_REDRAW;
    case UI_ACT_THEME: cycle_theme(app); return UI_H_CLEAR | UI_H_REDRAW;
    case UI_ACT_ASCII:
        app->force_ascii = !app->force_ascii;
        app->cfg.ascii = app->force_ascii;
        ui_app_message(app, 0, "charts: %s", app->force_ascii || !app->unicode ? "ASCII" : "Unicode");
        return UI_H_REDRAW;
    default: return r | UI_H_REDRAW;
    }
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_quit_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Ticks the top screen when its interval elapsed; returns its UI_H_* bits. */
static int tick_top(ui_app *app, double now, double *next_tick)
{
    ui_frame *f = top(app);
    if (!f->ops->tick || f->ops->tick_ms <= 0 || now < *next_tick)
        return UI_H_NONE;
    int r = f->ops->tick(app, f->state);
    *next_tick = now + f->ops->tick_ms / 1000.0;
    return r;
}

/* Milliseconds getch may wait: until the top screen's next tick, else a second. */
static int wait_ms(ui_app *app, double next_tick)
{
    const ui_screen_ops *ops = top(app)->ops;
    if (!ops->tick || ops->tick_ms <= 0)
        return 1000;
    double left = next_tick - pdbx_mono_s();
    int ms = left <= 0 ? 0 : (int)(left * 1000) + 1;
    return ms > ops->tick_ms ? ops->tick_ms : ms;
}

int ui_app_run(ui_app *app)
{
    install_signals();
    int resized = 1, dirty = 1;
    double next_tick = 0;
    /* PDBX_TUI_KEYLOG=FILE: one line per key, the milliseconds from getch() returning it to the
     * screen showing its effect (refresh done), to verify the 50 ms budget on real stores. */
    FILE *keylog = NULL;
    const char *kl = getenv("PDBX_TUI_KEYLOG");
    if (kl && *kl)
        keylog = fopen(kl, "a");
    double key_t0 = -1;
    int key_code = 0;
    while (!g_quit_signal && app->depth > 0) {
        if (resized) {
            resized = 0;
            ui_layout_compute(LINES, COLS, &app->layout);
            dirty = 1;
        }
        int r = tick_top(app, pdbx_mono_s(), &next_tick);
        if (r & UI_H_REDRAW) dirty = 1;
        if (r & UI_H_QUIT) break;
        if (dirty) {
            draw(app);
            dirty = 0;
        }
        if (keylog && key_t0 >= 0) {
            fprintf(keylog, "key %d ms %.3f\n", key_code, (pdbx_mono_s() - key_t0) * 1000);
            fflush(keylog);
            key_t0 = -1;
        }
        timeout(wait_ms(app, next_tick));
        int ch = getch();
        if (ch == ERR)
            continue;
        ch = ui_keys_canonical(ch);
        key_t0 = pdbx_mono_s();
        key_code = ch;
        if (ch == KEY_RESIZE) {
            resized = 1;
            continue;
        }
        unsigned before = app->generation;
        r = dispatch(app, ch);
        if (app->generation != before)
            next_tick = 0;              /* a new screen ticks at once */
        if ((r & UI_H_QUIT) || app->depth == 0) break;
        if (r & UI_H_CLEAR) clearok(curscr, TRUE);
        if (r & UI_H_RESIZE) resized = 1;
        if (r & (UI_H_REDRAW | UI_H_HANDLED)) dirty = 1;
    }
    if (keylog)
        fclose(keylog);
    return 0;
}

void *ui_screen_state_new(ui_app *app, size_t size, const char *what)
{
    void *st = calloc(1, size);
    if (!st)
        ui_app_message(app, 1, "out of memory opening %s", what);
    return st;
}
