/* ui_runs.c: the home screen: every run of the store, listed from the store index (runs are
 * never loaded here, so 10,000 runs list instantly), with sort, filter, delete, open
 * (running runs reattach the monitor), compare, export, replay and new sweep. */
#include <curses.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "store/util/clock.h"
#include "store/util/fmt.h"
#include "store/layout.h"
#include "tui/ui_app.h"
#include "tui/ui_lister.h"

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
    char form_preset[64];    /* sweep preset the new-sweep form starts from */
} runs_state;

/* Replays started here play at the recorded speed. */
#define REPLAY_SPEED 1.0

enum { COL_CREATED, COL_MODEL, COL_BACKEND, COL_TP, COL_MBS, COL_STATUS, NCOLS };
static const char *const col_names[NCOLS] = { "created", "model", "backend/GPU", "TP", "MBS", "status" };

static void tp_text(const pdbx_run_summary *s, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->ntp && n + 1 < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%d", i ? "," : "", s->tp[i]);
    if (s->ntp == 0)
        snprintf(buf, len, "N/A");
}

/* "complete", "running 20%"; " !load" after it when points were measured under load (the run
 * view and pdbx show say how much). */
static void status_text(const pdbx_run_summary *s, char *buf, size_t len)
{
    const char *load = s->busy_points > 0 ? " !load" : "";
    if (s->status == PDBX_RUN_RUNNING && s->points_total > 0)
        snprintf(buf, len, "running %d%%%s", s->percent, load);
    else
        snprintf(buf, len, "%s%s", pdbx_run_status_name(s->status), load);
}

static const pdbx_run_summary *sort_all;
static int sort_col, sort_rev;

static int cmp_int(long a, long b) { return a < b ? -1 : a > b; }

static int cmp_runs(const void *pa, const void *pb)
{
    const pdbx_run_summary *a = &sort_all[*(const size_t *)pa], *b = &sort_all[*(const size_t *)pb];
    int c = 0;
    switch (sort_col) {
    case COL_CREATED: c = a->created < b->created ? 1 : a->created > b->created ? -1 : 0; break;
    case COL_MODEL: c = strcasecmp(a->model, b->model); break;
    case COL_BACKEND:
        c = strcmp(a->backend, b->backend);
        if (!c) c = strcmp(a->gpu, b->gpu);
        break;
    case COL_TP:
        c = cmp_int(a->ntp ? a->tp[0] : 0, b->ntp ? b->tp[0] : 0);
        if (!c) c = cmp_int(a->ntp, b->ntp);
        break;
    case COL_MBS:
        c = cmp_int(a->mbs_min, b->mbs_min);
        if (!c) c = cmp_int(a->mbs_max, b->mbs_max);
        break;
    case COL_STATUS:
        c = strcmp(pdbx_run_status_name(a->status), pdbx_run_status_name(b->status));
        if (!c) c = cmp_int(a->percent, b->percent);
        break;
    }
    if (!c) c = strcmp(b->id, a->id);   /* newest first as the tie-break */
    return sort_rev ? -c : c;
}

/* Case-insensitive substring test (strcasestr is a GNU extension). */
static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0) return 1;
    return n == 0;
}

static int matches(const pdbx_run_summary *s, const char *f)
{
    if (!*f) return 1;
    char st[32], tp[64];
    status_text(s, st, sizeof(st));
    tp_text(s, tp, sizeof(tp));
    const char *fields[] = { s->id, s->model, s->backend, s->gpu, st, tp, s->message };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (contains_nocase(fields[i], f)) return 1;
    return 0;
}

/* Id of the selected run, "" when none. */
static void selected_id(const runs_state *r, char out[PDBX_RUN_ID_MAX])
{
    out[0] = '\0';
    if (r->nview > 0 && r->sel >= 0 && (size_t)r->sel < r->nview)
        snprintf(out, PDBX_RUN_ID_MAX, "%s", r->all[r->view[r->sel]].id);
}

/* Filters and sorts into r->view, keeping `selected` (an id, may be "") selected. */
static void rebuild_view_keep(runs_state *r, const char *selected)
{
    r->nview = 0;
    for (size_t i = 0; i < r->nall; i++)
        if (matches(&r->all[i], r->filter))
            r->view[r->nview++] = i;
    sort_all = r->all;
    sort_col = r->sort_col;
    sort_rev = r->sort_rev;
    qsort(r->view, r->nview, sizeof(r->view[0]), cmp_runs);
    /* keep the same run selected across refreshes */
    if (selected[0])
        for (size_t i = 0; i < r->nview; i++)
            if (strcmp(r->all[r->view[i]].id, selected) == 0) { r->sel = (int)i; break; }
    if (r->sel >= (int)r->nview) r->sel = (int)r->nview - 1;
    if (r->sel < 0) r->sel = 0;
}

static void rebuild_view(runs_state *r)
{
    char selected[PDBX_RUN_ID_MAX];
    selected_id(r, selected);
    rebuild_view_keep(r, selected);
}

/* Swaps in a listing the worker finished, keeping the selection. Returns UI_H_REDRAW when one
 * arrived. */
static int take_listing(ui_app *app, runs_state *r)
{
    pdbx_run_summary *list = NULL;
    size_t n = 0;
    double ms = 0;
    char err[256];
    if (!ui_lister_take(r->lister, &list, &n, &ms, err, sizeof(err)))
        return UI_H_NONE;
    if (err[0]) {
        ui_app_message(app, 1, "%s", err);
        free(list);
        return UI_H_REDRAW;
    }
    size_t *view = malloc((n ? n : 1) * sizeof(*view));
    if (!view) {
        free(list);
        ui_app_message(app, 1, "out of memory listing %zu runs", n);
        return UI_H_REDRAW;
    }
    char keep[PDBX_RUN_ID_MAX];
    selected_id(r, keep);
    free(r->all);
    free(r->view);
    r->all = list;
    r->nall = n;
    r->view = view;
    r->nview = 0;
    r->list_ms = ms;
    r->loaded = 1;
    r->any_running = 0;
    for (size_t i = 0; i < n; i++)
        r->any_running |= list[i].status == PDBX_RUN_RUNNING;
    rebuild_view_keep(r, keep);
    return UI_H_REDRAW;
}

static int list_refresh(ui_app *app, runs_state *r, int force)
{
    if (!app->store)
        return UI_H_NONE;
    char err[256];
    if (!r->lister && ui_lister_start(app->store_dir, &r->lister, err, sizeof(err)) != 0) {
        ui_app_message(app, 1, "%s", err);
        return UI_H_REDRAW;
    }
    int res = take_listing(app, r);
    /* a new listing when runs/ changed (a run added or removed), and every 2 s while a run is
     * running (its progress); listings run on the worker, never here */
    char dir[PDBX_PATH_MAX + 8];
    struct stat stt;
    double mtime = pdbx_layout_path(PDBX_PATH_RUNS, app->store_dir, NULL, dir, sizeof(dir)) == 0
                   && stat(dir, &stt) == 0 ? (double)stt.st_mtim.tv_sec + stt.st_mtim.tv_nsec * 1e-9 : 0;
    double now = pdbx_mono_s();
    if ((force || mtime != r->runs_dir_mtime || (r->any_running && now - r->last_list >= 2.0))
        && !ui_lister_busy(r->lister)) {
        ui_lister_request(r->lister);
        r->runs_dir_mtime = mtime;
        r->last_list = now;
    } else if (force) {
        r->runs_dir_mtime = -1;         /* busy: ask again on the next tick */
    }
    return res;
}

static int runs_tick(ui_app *app, void *st)
{
    return list_refresh(app, st, 0);
}

static void runs_resume(ui_app *app, void *st)
{
    list_refresh(app, st, 1);
}

static void runs_close(void *st)
{
    runs_state *r = st;
    if (!r)
        return;
    ui_lister_stop(r->lister);
    free(r->all);
    free(r->view);
    free(r);
}

static void *runs_open(ui_app *app, const void *arg)
{
    const char *preset = arg;
    runs_state *r = ui_screen_state_new(app, sizeof(*r), "the runs");
    if (!r)
        return NULL;
    snprintf(r->form_preset, sizeof(r->form_preset), "%s", preset && *preset ? preset : "quick");
    list_refresh(app, r, 1);
    return r;
}

static const pdbx_run_summary *selected(const runs_state *r)
{
    if (r->nview == 0 || r->sel < 0 || (size_t)r->sel >= r->nview)
        return NULL;
    return &r->all[r->view[r->sel]];
}

static void do_delete(ui_app *app, void *st)
{
    runs_state *r = st;
    char err[256];
    const char *id = r->pending_delete;
    if (pdbx_store_delete(app->store, id, err, sizeof(err)) != 0)
        ui_app_message(app, 1, "%s", err);
    else
        ui_app_message(app, 0, "deleted %s", id);
    list_refresh(app, r, 1);
}

static int filter_key(runs_state *r, int key)
{
    size_t len = strlen(r->filter);
    if (key == 27) {
        r->filter[0] = '\0';
        r->editing_filter = 0;
    } else if (key == '\n' || key == '\r' || key == KEY_ENTER) {
        r->editing_filter = 0;
    } else if (key == KEY_BACKSPACE || key == 127 || key == 8) {
        if (len > 0) r->filter[len - 1] = '\0';
    } else if (ui_keys_is_text_key(key)) {
        if (len + 1 < sizeof(r->filter)) {
            r->filter[len] = (char)key;
            r->filter[len + 1] = '\0';
        }
    } else if (key == KEY_F(10)) {
        return UI_H_QUIT;
    } else {
        return UI_H_HANDLED;
    }
    r->sel = 0;
    rebuild_view(r);
    return UI_H_HANDLED | UI_H_REDRAW;
}

/* Moves, filter and sort: the keys that only change this list. UI_H_NONE for the others. */
static int list_key(ui_app *app, runs_state *r, ui_action act, int rows)
{
    switch (act) {
    case UI_ACT_UP: r->sel--; break;
    case UI_ACT_DOWN: r->sel++; break;
    case UI_ACT_PGUP: r->sel -= rows; break;
    case UI_ACT_PGDN: r->sel += rows; break;
    case UI_ACT_HOME: r->sel = 0; break;
    case UI_ACT_END: r->sel = (int)r->nview - 1; break;
    case UI_ACT_FILTER:
        r->editing_filter = 1;
        break;
    case UI_ACT_SORT:
        r->sort_col = (r->sort_col + 1) % NCOLS;
        r->sort_rev = 0;
        rebuild_view(r);
        ui_app_message(app, 0, "sorted by %s", col_names[r->sort_col]);
        break;
    case UI_ACT_SORT_REVERSE:
        r->sort_rev = !r->sort_rev;
        rebuild_view(r);
        break;
    default:
        return UI_H_NONE;
    }
    return UI_H_HANDLED;
}

/* Enter: a running run reattaches the monitor, an ended one opens its results. */
static void open_selected(ui_app *app, const pdbx_run_summary *s)
{
    if (s->status == PDBX_RUN_RUNNING)
        ui_app_push(app, UI_SCREEN_MONITOR, &(ui_monitor_arg){ .id = s->id });
    else
        ui_app_push(app, UI_SCREEN_RUNVIEW, s->id);
}

static void delete_selected(ui_app *app, runs_state *r, const pdbx_run_summary *s)
{
    if (s->status == PDBX_RUN_RUNNING) {
        ui_app_message(app, 1, "%s is running: open it and cancel the sweep first", s->id);
        return;
    }
    snprintf(r->pending_delete, sizeof(r->pending_delete), "%s", s->id);
    ui_app_confirm(app, do_delete, r, "delete the file of run %s (%s)?", s->id, s->model);
}

static void mark_selected(ui_app *app, runs_state *r, const pdbx_run_summary *s)
{
    if (strcmp(r->marked, s->id) == 0) {
        r->marked[0] = '\0';
        ui_app_message(app, 0, "unmarked");
    } else {
        snprintf(r->marked, sizeof(r->marked), "%s", s->id);
        ui_app_message(app, 0, "marked %s: select another run and press c to compare", s->id);
    }
}

static void replay_selected(ui_app *app, const pdbx_run_summary *s)
{
    char path[PDBX_PATH_MAX];
    if (pdbx_store_run_path(app->store, s->id, path, sizeof(path)) != 0) {
        ui_app_message(app, 1, "cannot locate %s", s->id);
        return;
    }
    ui_app_push(app, UI_SCREEN_MONITOR, &(ui_monitor_arg){ .replay_path = path, .speed = REPLAY_SPEED });
}

/* The keys that act on the selected run (or open another screen). UI_H_NONE for the others. */
static int run_key(ui_app *app, runs_state *r, const pdbx_run_summary *s, ui_action act)
{
    if (act == UI_ACT_NEW) {
        ui_app_push(app, UI_SCREEN_FORM, r->form_preset);
        return UI_H_HANDLED;
    }
    if (act != UI_ACT_OPEN && act != UI_ACT_DELETE && act != UI_ACT_MARK && act != UI_ACT_COMPARE
        && act != UI_ACT_EXPORT && act != UI_ACT_REPLAY)
        return UI_H_NONE;
    if (!s)
        return UI_H_HANDLED;
    switch (act) {
    case UI_ACT_OPEN: open_selected(app, s); break;
    case UI_ACT_DELETE: delete_selected(app, r, s); break;
    case UI_ACT_MARK: mark_selected(app, r, s); break;
    case UI_ACT_COMPARE:
        if (!r->marked[0])
            ui_app_message(app, 1, "mark a run with Space first, then select another and press c");
        else
            ui_app_push(app, UI_SCREEN_COMPARE, &(ui_compare_arg){ .id_a = r->marked, .id_b = s->id });
        break;
    case UI_ACT_EXPORT: ui_app_push(app, UI_SCREEN_EXPORT, &(ui_export_arg){ .id = s->id }); break;
    default: replay_selected(app, s); break;
    }
    return UI_H_HANDLED;
}

static int runs_key(ui_app *app, void *st, int key, ui_action act)
{
    runs_state *r = st;
    if (r->editing_filter)
        return filter_key(r, key);
    int rows = app->layout.body.h - 4;
    if (list_key(app, r, act, rows) == UI_H_NONE && run_key(app, r, selected(r), act) == UI_H_NONE)
        return UI_H_NONE;
    r->sel = ui_list_scroll((int)r->nview, rows, r->sel, &r->top);
    return UI_H_HANDLED | UI_H_REDRAW;
}

/* The cells of one run, in column order. */
typedef struct {
    char created[32], be[64], tp[64], mbs[32], st[32];
    const char *cells[NCOLS];
} run_cells;

static void cells_of(const pdbx_run_summary *s, run_cells *c)
{
    pdbx_fmt_time(s->created, c->created, sizeof(c->created));
    snprintf(c->be, sizeof(c->be), "%s/%s", s->backend, s->gpu);
    tp_text(s, c->tp, sizeof(c->tp));
    if (s->mbs_min > 0) snprintf(c->mbs, sizeof(c->mbs), "%d-%d", s->mbs_min, s->mbs_max);
    else snprintf(c->mbs, sizeof(c->mbs), "N/A");
    status_text(s, c->st, sizeof(c->st));
    const char *cells[NCOLS] = { c->created, s->model[0] ? s->model : "N/A", c->be, c->tp, c->mbs, c->st };
    memcpy(c->cells, cells, sizeof(cells));
}

/* Column widths for w columns: each column wants its longest cell (and its header with the
 * sort mark); at 80 columns the model keeps its width and TP, MBS, then backend/GPU shrink
 * and go first (ui_columns_fit); a wide terminal leaves the rest blank. */
static void column_widths(const runs_state *r, int w, int *widths)
{
    /* keep: model > created > status > backend/GPU > MBS > TP */
    static const int keep[NCOLS] = { 5, 6, 3, 1, 2, 4 }, min[NCOLS] = { 16, 10, 8, 2, 3, 9 };
    ui_col cols[NCOLS];
    for (int c = 0; c < NCOLS; c++)
        cols[c] = (ui_col){ .want = (int)strlen(col_names[c]) + 2, .min = min[c], .keep = keep[c] };
    for (size_t i = 0; i < r->nview; i++) {
        run_cells rc;
        cells_of(&r->all[r->view[i]], &rc);
        for (int c = 0; c < NCOLS; c++) {
            int len = (int)strlen(rc.cells[c]);
            if (len > cols[c].want) cols[c].want = len;
        }
    }
    if (cols[COL_MODEL].want > 48) cols[COL_MODEL].want = 48;   /* a long path: room for the rest */
    ui_columns_fit(cols, NCOLS, w, -1, widths);
}

static void draw_header(const runs_state *r, int y, const int *widths)
{
    int x = 1;
    for (int c = 0; c < NCOLS; c++) {
        if (!widths[c]) continue;
        char h[64];
        snprintf(h, sizeof(h), "%s%s", col_names[c], c == r->sort_col ? (r->sort_rev ? " ^" : " v") : "");
        ui_put(y, x, widths[c], UI_C_HEADER, 1, "%s", h);
        x += widths[c] + 1;
    }
}

static void draw_row(const runs_state *r, int i, int y, int w, const int *widths)
{
    const pdbx_run_summary *s = &r->all[r->view[r->top + i]];
    int sel = r->top + i == r->sel;
    int marked = strcmp(s->id, r->marked) == 0;
    ui_role base = sel ? UI_C_SELECTED : (marked ? UI_C_MARKED : UI_C_NORMAL);
    run_cells rc;
    cells_of(s, &rc);
    ui_put(y, 0, w, base, 1, "%s", marked ? "*" : " ");
    int x = 1;
    for (int c = 0; c < NCOLS; c++) {
        if (!widths[c]) continue;
        ui_role role = (c == COL_STATUS && !sel) ? ui_role_run_status(s->status) : base;
        ui_put_text(y, x, widths[c], role, 1, "%s", rc.cells[c]);
        ui_put(y, x + widths[c], 1, base, 1, "%s", "");
        x += widths[c] + 1;
    }
}

static void runs_draw(ui_app *app, void *st, ui_rect b)
{
    runs_state *r = st;
    int widths[NCOLS];
    column_widths(r, b.w - 2, widths);
    draw_header(r, b.y, widths);
    int rows = b.h - 4;
    if (!app->store) {
        ui_put(b.y + 2, 2, b.w - 4, UI_C_ERROR, 0, "no store open (see the message below)");
    } else if (!r->loaded) {
        ui_put(b.y + 2, 2, b.w - 4, UI_C_DIM, 0, "listing the runs of %s ...", app->store_dir);
    } else if (r->nall == 0) {
        ui_put(b.y + 2, 2, b.w - 4, UI_C_NORMAL, 0, "No runs yet in %s.", app->store_dir);
        ui_put(b.y + 3, 2, b.w - 4, UI_C_NORMAL, 0,
               "Press n for a new sweep: the quick preset is ready to launch with F5.");
    } else if (r->nview == 0) {
        ui_put(b.y + 2, 2, b.w - 4, UI_C_NORMAL, 0, "No run matches '%s' (Esc on / clears the filter).", r->filter);
    }
    r->sel = ui_list_scroll((int)r->nview, rows, r->sel, &r->top);
    for (int i = 0; i < rows && (size_t)(r->top + i) < r->nview; i++)
        draw_row(r, i, b.y + 1 + i, b.w, widths);
    /* detail of the selected run and list statistics */
    const pdbx_run_summary *s = selected(r);
    if (s)
        ui_put_text(b.y + b.h - 2, 1, b.w - 2, s->message[0] ? UI_C_WARNING : UI_C_DIM, 1, "%s  %.1f kB  %d/%d points%s%s",
               s->id, s->size / 1024.0, s->points_done, s->points_total, s->message[0] ? "  " : "", s->message);
    if (r->editing_filter)
        ui_put(b.y + b.h - 1, 1, b.w - 2, UI_C_FIELD_ACTIVE, 1, "filter: %s_  (Enter keeps, Esc clears)", r->filter);
    else if (r->filter[0])   /* how many it hides, and how to get them back */
        ui_put(b.y + b.h - 1, 1, b.w - 2, UI_C_INFO, 1, "filter: %s  (%zu of %zu runs; / then Esc clears)", r->filter,
               r->nview, r->nall);
    else
        ui_put(b.y + b.h - 1, 1, b.w - 2, UI_C_DIM, 1, "%zu run%s%s%s", r->nall, r->nall == 1 ? "" : "s",
               r->marked[0] ? "  marked: " : "", r->marked);
}

const ui_screen_ops ui_screen_runs = { "runs", UI_SCR_RUNS, 250, runs_open, runs_close, runs_draw, runs_key,
                                       runs_tick, runs_resume, NULL };
