/* ui_monitor.c: live progress of a sweep, by tailing its run file with pdbx_scan_file from the
 * last offset (the explorer is never in the data path), or of a recording played back by
 * ui_replay. Esc leaves the sweep running; `c` cancels it after confirmation. */
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/launch/launch.h"
#include "store/util/clock.h"
#include "store/util/fmt.h"
#include "store/events.h"
#include "store/progress.h"
#include "tui/ui_app.h"
#include "tui/ui_replay.h"

static int apply_event(const cJSON *ev, void *ctx)
{
    char err[256];
    pdbx_run_apply(ctx, ev, err, sizeof(err));      /* malformed events are skipped */
    return 0;
}

typedef struct {
    char id[PDBX_RUN_ID_MAX];
    char path[PDBX_PATH_MAX];
    pdbx_run run;
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
} mon_state;

/* The time the progress is read at: the replay's virtual clock, else the wall clock. */
static double monitor_now(const mon_state *m)
{
    return m->replay ? m->rp.vt : pdbx_wall_s();
}

static void monitor_close(void *st)
{
    mon_state *m = st;
    if (!m)
        return;
    pdbx_run_free(&m->run);
    if (m->replay)
        ui_replay_free(&m->rp);
    free(m);
}

static int tail(ui_app *app, mon_state *m)
{
    pdbx_scan_result res;
    char err[256];
    if (pdbx_scan_file(m->path, m->offset, apply_event, &m->run, &res, err, sizeof(err)) != 0) {
        ui_app_message(app, 1, "%s", err);
        return -1;
    }
    m->offset = res.next_offset;
    if (res.corrupt)
        snprintf(m->corrupt, sizeof(m->corrupt), "%s", res.corrupt_msg);
    return (int)res.events;
}

static int open_run(ui_app *app, mon_state *m, const char *id)
{
    snprintf(m->id, sizeof(m->id), "%s", id);
    if (pdbx_store_run_path(app->store, id, m->path, sizeof(m->path)) != 0) {
        ui_app_message(app, 1, "cannot locate run %s", id);
        return -1;
    }
    m->opened = pdbx_mono_s();
    if (tail(app, m) < 0)
        return -1;
    pdbx_run_refresh_liveness(&m->run);
    m->last_liveness = pdbx_mono_s();
    return 0;
}

static int open_replay(ui_app *app, mon_state *m, const char *path, double speed)
{
    char err[256];
    if (ui_replay_load(path, speed, &m->rp, err, sizeof(err)) != 0) {
        ui_app_message(app, 1, "%s", err);
        return -1;
    }
    m->replay = 1;
    snprintf(m->path, sizeof(m->path), "%s", path);
    m->opened = m->last_wall = pdbx_mono_s();
    ui_replay_advance(&m->rp, 0, &m->run);
    snprintf(m->id, sizeof(m->id), "%s", m->run.id);
    if (m->rp.corrupt)
        snprintf(m->corrupt, sizeof(m->corrupt), "%s", m->rp.corrupt_msg);
    return 0;
}

static void *monitor_open(ui_app *app, const void *arg)
{
    const ui_monitor_arg *a = arg;
    mon_state *m = ui_screen_state_new(app, sizeof(*m), "the monitor");
    if (!m)
        return NULL;
    pdbx_run_init(&m->run);
    int rc = a->id ? open_run(app, m, a->id) : open_replay(app, m, a->replay_path, a->speed);
    if (rc != 0) {
        monitor_close(m);
        return NULL;
    }
    return m;
}

static unsigned monitor_keys(const void *st)
{
    const mon_state *m = st;
    return m->replay ? UI_SCR_REPLAY : UI_SCR_MONITOR;
}

static int monitor_tick(ui_app *app, void *st)
{
    mon_state *m = st;
    double now = pdbx_mono_s();
    int changed = 0;
    if (m->replay) {
        double dt = m->paused ? 0 : now - m->last_wall;
        m->last_wall = now;
        int was_done = ui_replay_done(&m->rp);
        changed = ui_replay_advance(&m->rp, dt, &m->run) > 0;
        if (!was_done && ui_replay_done(&m->rp)) {
            ui_app_message(app, 0, "replay finished: %s", m->run.have_end ? pdbx_run_status_name(m->run.status) : "no run end in the recording");
            changed = 1;
        }
        if (m->run.id[0] && !m->id[0])
            snprintf(m->id, sizeof(m->id), "%s", m->run.id);
    } else {
        int before = m->run.status;
        changed = tail(app, m) != 0;
        if (!m->run.have_end && now - m->last_liveness >= 1.0) {
            pdbx_run_refresh_liveness(&m->run);
            m->last_liveness = now;
        }
        changed |= (int)m->run.status != before;
    }
    /* draw only when events arrived or the elapsed time shown moved to the next second */
    long second = m->replay ? (long)m->rp.vt : (long)time(NULL);
    if (!m->run.have_end && second != m->drawn_second) {
        m->drawn_second = second;
        changed = 1;
    }
    return changed ? UI_H_REDRAW : UI_H_NONE;
}

static void do_cancel(ui_app *app, void *st)
{
    const mon_state *m = st;
    char err[256];
    if (pdbx_launch_cancel(app->store, m->id, PDBX_CAUSE_EXPLORER, err, sizeof(err)) != 0)
        ui_app_message(app, 1, "%s", err);
    else
        ui_app_message(app, 0, "cancel sent: the point being measured is dropped at its next step, then the run ends 'cancelled'");
}

static int monitor_key(ui_app *app, void *st, int key, ui_action act)
{
    (void)key;
    mon_state *m = st;
    switch (act) {
    case UI_ACT_BACK:
        if (app->depth == 1)     /* `pdbx replay`: nothing below, leaving the monitor quits */
            return UI_H_QUIT;
        ui_app_pop(app);
        ui_app_message(app, 0, "the sweep keeps running in the background; Enter on it reattaches");
        return UI_H_HANDLED;
    case UI_ACT_CANCEL_SWEEP:
        if (m->replay) {
            ui_app_message(app, 1, "this is a replay: nothing to cancel");
            return UI_H_HANDLED;
        }
        if (m->run.have_end || m->run.status != PDBX_RUN_RUNNING) {
            ui_app_message(app, 1, "run %s is not running (%s)", m->id, pdbx_run_status_name(m->run.status));
            return UI_H_HANDLED;
        }
        ui_app_confirm(app, do_cancel, m, "cancel sweep %s?", m->id);
        return UI_H_HANDLED;
    case UI_ACT_OPEN:
        /* a key in the bar never does nothing silently: say when the results can open */
        if (m->replay)
            return UI_H_HANDLED;   /* not bound on the replay screen */
        if (!m->run.have_end)
            ui_app_message(app, 1, "the results open when the sweep ends (Esc leaves it running)");
        else {
            char id[PDBX_RUN_ID_MAX];
            snprintf(id, sizeof(id), "%s", m->id);   /* m is freed when the run view replaces it */
            ui_app_replace(app, UI_SCREEN_RUNVIEW, id);
        }
        return UI_H_HANDLED;
    case UI_ACT_FASTER:
        if (m->replay && m->rp.speed < 1024) m->rp.speed *= 2;
        ui_app_message(app, 0, "replay speed x%g", m->rp.speed);
        return UI_H_HANDLED;
    case UI_ACT_SLOWER:
        if (m->replay && m->rp.speed > 1.0 / 64) m->rp.speed /= 2;
        ui_app_message(app, 0, "replay speed x%g", m->rp.speed);
        return UI_H_HANDLED;
    case UI_ACT_PAUSE:
        m->paused = !m->paused;
        return UI_H_HANDLED;
    case UI_ACT_UP: if (m->scroll > 0) m->scroll--; return UI_H_HANDLED;
    case UI_ACT_DOWN: m->scroll++; return UI_H_HANDLED;
    default:
        return UI_H_NONE;
    }
}

static char point_glyph(pdbx_point_status s)
{
    switch (s) {
    case PDBX_POINT_OK: return '#';
    case PDBX_POINT_OOM: return 'O';
    case PDBX_POINT_PREDICTED_OOM: return 'P';
    case PDBX_POINT_ERROR: return '!';
    case PDBX_POINT_RUNNING: return '>';
    case PDBX_POINT_SKIPPED: return '-';
    case PDBX_POINT_PENDING: return '.';
    }
    return '?';
}

/* Rows `text` takes wrapped at width w (ASCII engine messages; a UTF-8 sequence is never split). */
static int wrap_cut(const char *text, int w)
{
    int len = (int)strlen(text);
    if (len <= w || w < 2) return len;
    int cut = w;
    while (cut > w / 2 && text[cut] != ' ') cut--;   /* break at a space in the right half */
    if (text[cut] != ' ') cut = w;
    while (cut > 1 && ((unsigned char)text[cut] & 0xC0) == 0x80) cut--;
    return cut;
}

static int wrapped_rows(const char *text, int w)
{
    int rows = 0;
    do {
        int cut = wrap_cut(text, w);
        text += cut;
        while (*text == ' ') text++;
        rows++;
    } while (*text);
    return rows;
}

/* Draws text wrapped over at most max_rows rows from (y, x); returns the rows used. */
static int put_wrapped(int y, int x, int w, int max_rows, ui_role role, const char *text)
{
    int rows = 0;
    while (rows < max_rows) {
        int cut = wrap_cut(text, w);
        ui_put(y + rows, x, w, role, 1, "%.*s", cut, text);
        text += cut;
        while (*text == ' ') text++;
        rows++;
        if (!*text) break;
    }
    return rows;
}

/* The run's header row and the progress bar with points, elapsed time and ETA. */
static int draw_progress(ui_app *app, const mon_state *m, const pdbx_progress *pp, int y, int w)
{
    const pdbx_run *run = &m->run;
    const char *status = m->replay && !ui_replay_done(&m->rp) ? "replaying" : pdbx_run_status_name(run->status);
    ui_put(y++, 1, w, UI_C_HEADER, 1, "%s  %s  %s/%s  %s", m->id[0] ? m->id : "(waiting for run_start)",
           run->model.name[0] ? run->model.name : "N/A", run->backend[0] ? run->backend : "N/A",
           run->gpu[0] ? run->gpu : "N/A", status);
    const pdbx_progress p = *pp;
    char el[32], et[32];
    if (isnan(p.elapsed_s)) snprintf(el, sizeof(el), "--"); else pdbx_fmt_duration(p.elapsed_s, el, sizeof(el));
    if (isnan(p.eta_s)) snprintf(et, sizeof(et), "--"); else pdbx_fmt_duration(p.eta_s, et, sizeof(et));
    char coll[48] = "", text[160];
    if (p.coll_total > 0)
        snprintf(coll, sizeof(coll), "  coll %zu/%zu", p.coll_done, p.coll_total);
    int len = snprintf(text, sizeof(text), "%zu/%zu points %3d%%%s  elapsed %s  ETA %s", p.points_done,
                       p.points_total, p.percent, coll, el, et);
    /* the bar takes what the text leaves (the text as it was laid out before: 44 columns) */
    int barw = w - 4 - (len > 44 ? len : 44);
    if (barw < 10) barw = 10;
    ui_canvas c;
    if (ui_canvas_init(&c, barw, 1) == 0) {
        /* a full bar means done, as 100% does */
        double frac = p.fraction, most = (barw - 0.6) / barw;
        if (p.percent < 100 && frac > most) frac = most;
        ui_chart_hbar(&c, 0, 0, barw, frac, UI_CLS_SERIES, app->unicode && !app->force_ascii);
        ui_put(y, 1, 1, UI_C_AXIS, 0, "[");
        ui_draw_canvas(&c, y, 2);
        ui_put(y, 2 + barw, 1, UI_C_AXIS, 0, "]");
        ui_canvas_free(&c);
    }
    ui_put(y++, 4 + barw, w - barw - 3, UI_C_NORMAL, 0, "%s", text);
    return y;
}

/* The point and op in flight, or how the run ended (the reason may take two rows). */
static int draw_now(const mon_state *m, const pdbx_progress *pp, int y, int w)
{
    const pdbx_run *run = &m->run;
    const pdbx_progress pg = *pp;
    if (!run->have_end && pg.point) {
        const pdbx_point *p = pg.point;
        ui_put(y++, 1, w, UI_C_RUNNING, 1, "now: point %d  TP%d PP%d DP%d  MBS %d  op %s", p->index, p->tp,
               p->pp, p->dp, p->mbs, pg.op[0] ? pg.op : "N/A");
    } else if (!run->have_end && pg.collectives) {
        ui_put(y++, 1, w, UI_C_RUNNING, 1, "now: collectives sweep  %zu/%zu  %s", pg.coll_done, pg.coll_total,
               pg.op[0] ? pg.op : "");
    } else if (run->have_end) {
        char ended[sizeof(run->end_reason) + 32];
        snprintf(ended, sizeof(ended), "ended %s%s%s", pdbx_run_status_name(run->status),
                 run->end_reason[0] ? ": " : "", run->end_reason);
        y += put_wrapped(y, 1, w, 2, ui_role_run_status(run->status), ended);
    } else {
        ui_put(y++, 1, w, UI_C_DIM, 1, "now: %s", run->npoints ? "between points" : "waiting for the engine");
    }
    return y;
}

/* Ranks, the distinct hosts (the engine lists a host once per rank) and the device. */
static int draw_ranks(const pdbx_run *run, int y, int w)
{
    char hosts[256] = "";
    size_t hn = 0;
    const char *rank_host[64];
    size_t nh = run->env ? pdbx_event_env_hosts(run->env, rank_host, 64) : 0;
    for (size_t i = 0; i < nh && hn + 2 < sizeof(hosts); i++) {
        int seen = 0;
        for (size_t j = 0; j < i; j++)
            seen |= strcmp(rank_host[j], rank_host[i]) == 0;
        if (!seen)
            hn += (size_t)snprintf(hosts + hn, sizeof(hosts) - hn, "%s%s", hn ? ", " : "", rank_host[i]);
    }
    char ranks[48];
    if (run->world_size > 0)
        snprintf(ranks, sizeof(ranks), "%d (%d per node)", run->world_size, run->ranks_per_node);
    else
        snprintf(ranks, sizeof(ranks), "N/A");
    ui_put(y++, 1, w, UI_C_NORMAL, 1, "ranks: %s  hosts: %s  device: %s", ranks,
           hosts[0] ? hosts : (run->host[0] ? run->host : "N/A"), run->device_name[0] ? run->device_name : "N/A");
    return y;
}

/* One row per config with each point's MBS and status glyph, under a header with the legend
 * (beside it when it fits, else on its own line, so 80 columns still explain every glyph). */
static void draw_configs(mon_state *m, ui_rect b, int y, int rows_below)
{
    const pdbx_run *run = &m->run;
    int w = b.w - 2;
    static const char legend[] = "# ok  O oom  P predicted OOM  ! error  > running  . pending  - skipped";
    if (w >= 28 + (int)sizeof(legend) - 1) {
        ui_put(y++, 1, w, UI_C_HEADER, 1, "%-14s MBS points   %s", "config", legend);
    } else {
        ui_put(y++, 1, w, UI_C_HEADER, 1, "%-14s MBS points", "config");
        ui_put(y++, 1, w, UI_C_DIM, 1, "legend: %s", legend);
    }
    int cfg[PDBX_MAX_CONFIGS][PDBX_CFG_DIMS];
    size_t ncfg = pdbx_run_configs(run, cfg, PDBX_MAX_CONFIGS);
    int rows = b.y + b.h - y - rows_below;
    if (m->scroll > (int)ncfg - 1) m->scroll = ncfg ? (int)ncfg - 1 : 0;
    for (size_t i = (size_t)m->scroll; i < ncfg && rows > 0; i++, rows--) {
        const pdbx_point *pts[64];
        size_t np = pdbx_run_config_points(run, cfg[i][0], cfg[i][1], cfg[i][2], cfg[i][3], pts, 64);
        char label[48];
        ui_put(y, 1, 15, UI_C_NORMAL, 1, "%s",
               pdbx_fmt_config(PDBX_CFG_LABEL_TAB, cfg[i][0], cfg[i][1], cfg[i][2], cfg[i][3], label, sizeof label));
        int x = 16;
        for (size_t k = 0; k < np && x < b.w - 6; k++) {
            char cell[16];
            int len = snprintf(cell, sizeof(cell), "%d%c", pts[k]->mbs, point_glyph(pts[k]->status));
            ui_put(y, x, len, ui_role_point_status(pts[k]->status), 0, "%s", cell);
            x += len + 2;
        }
        y++;
    }
}

/* The newest warnings that fit in 3 rows at the bottom, each wrapped rather than cut. */
static void draw_warnings(const mon_state *m, ui_rect b, int warn_rows)
{
    const pdbx_run *run = &m->run;
    int w = b.w - 2, wy = b.y + b.h - warn_rows;
    if (m->corrupt[0])
        ui_put(wy - 1, 1, w, UI_C_BAD, 1, "corrupt: %s", m->corrupt);
    if (!run->nwarnings) {
        ui_put(wy, 1, w, UI_C_DIM, 1, "no warnings%s", run->have_end && !m->replay ? "  (Enter opens the results)" : "");
        return;
    }
    ui_put(wy++, 1, w, UI_C_HEADER, 1, "warnings (%d)", run->nwarnings);
    int held = run->nwarnings < PDBX_WARN_RING ? run->nwarnings : PDBX_WARN_RING;
    int first = run->nwarnings, budget = 3;
    while (first > run->nwarnings - held && budget > 0) {
        int need = wrapped_rows(run->warnings[(first - 1) % PDBX_WARN_RING], w);
        if (need > budget && first < run->nwarnings)
            break;   /* an older one that does not fit would push the newest off */
        budget -= need;
        first--;
    }
    for (int i = first; i < run->nwarnings && wy < b.y + b.h; i++)
        wy += put_wrapped(wy, 1, w, b.y + b.h - wy, UI_C_WARNING, run->warnings[i % PDBX_WARN_RING]);
}

static void monitor_draw(ui_app *app, void *st, ui_rect b)
{
    mon_state *m = st;
    int w = b.w - 2;
    /* the store's progress model, once a frame: `pdbx run` and `pdbx attach` print the same */
    pdbx_progress p;
    pdbx_progress_of(&m->run, monitor_now(m), &p);
    int y = draw_progress(app, m, &p, b.y, w);
    y = draw_now(m, &p, y, w);
    y = draw_ranks(&m->run, y, w);
    /* the replay speed on the spare row, not over the header's right end (which it hid at 80
       columns) */
    if (m->replay)
        ui_put(y, 1, w, UI_C_INFO, 1, "replay x%g%s", m->rp.speed, m->paused ? " (paused)" : "");
    y++;
    int warn_rows = m->run.nwarnings ? 4 : 1;
    draw_configs(m, b, y, warn_rows + 1);
    draw_warnings(m, b, warn_rows);
}

const ui_screen_ops ui_screen_monitor = { "monitor", UI_SCR_MONITOR, 250, monitor_open, monitor_close, monitor_draw,
                                          monitor_key, monitor_tick, NULL, monitor_keys };
