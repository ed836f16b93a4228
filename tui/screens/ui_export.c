/* ui_export.c: the export dialog of the run in the run view: FASOP NPZ (model/GPU tags
 * prefilled from the run's presets, editable), Vidur CSV or a Chrome trace, into a chosen
 * directory, then a report of every file written. A run with backward cells gets one more
 * field, the NPZ's pass: fwd (FASOP's) or both (fwd + bwd per cell, said in meta.json). */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/export/export.h"
#include "store/util/fs.h"
#include "tui/ui_app.h"

enum { F_FORMAT, F_DIR, F_MODEL, F_GPU, F_ATTR, F_STAT, F_PASS, NFIELDS };
static const char *const field_labels[NFIELDS] = { "format", "directory", "FASOP model tag", "FASOP GPU tag",
                                                   "attribution", "statistic", "pass" };
static const char *const npz_passes[2] = { "fwd (what FASOP reads)", "both (fwd + bwd per cell)" };
static const char *const formats[3] = { "npz (FASOP)", "csv (Vidur)", "trace (Chrome JSON)" };
static const char *const attrs[2] = { "fasop (rows sum to the layer)", "pure (each op alone)" };

typedef struct {
    const pdbx_run *run;     /* the run exported: `own` below, or the screen's under this one */
    pdbx_run own;
    int have_own;
    int sel;
    int format;              /* 0 npz, 1 csv, 2 trace */
    char dir[PDBX_PATH_MAX];
    char model_tag[32], gpu_tag[32];
    int attribution;         /* pdbx_attribution */
    int stat;
    int pass_both;           /* NPZ cells fwd + bwd (F_PASS, shown only when has_bwd) */
    int has_bwd;
    char report[16][PDBX_PATH_MAX + 8];
    int nreport;
    int cursor;
} export_state;

static void export_close(void *st)
{
    export_state *e = st;
    if (e && e->have_own)
        pdbx_run_free(&e->own);
    free(e);
}

static void *export_open(ui_app *app, const void *arg)
{
    const ui_export_arg *a = arg;
    export_state *e = ui_screen_state_new(app, sizeof(*e), "the export dialog");
    char err[256];
    if (!e)
        return NULL;
    if (!a->run) {
        if (pdbx_run_load(app->store, a->id, &e->own, err, sizeof(err)) != 0) {
            ui_app_message(app, 1, "%s", err);
            free(e);
            return NULL;
        }
        e->have_own = 1;
    }
    e->run = a->run ? a->run : &e->own;
    const pdbx_run *run = e->run;
    char cwd[PDBX_PATH_MAX - 64];
    if (!getcwd(cwd, sizeof(cwd)))
        snprintf(cwd, sizeof(cwd), ".");
    snprintf(e->dir, sizeof(e->dir), "%s/pdbx-export", cwd);
    snprintf(e->model_tag, sizeof(e->model_tag), "%s", run->model.tag);
    snprintf(e->gpu_tag, sizeof(e->gpu_tag), "%s", run->gpu_tag[0] ? run->gpu_tag : run->gpu);
    e->attribution = PDBX_ATTR_FASOP;
    e->stat = PDBX_STAT_MEAN;
    e->has_bwd = pdbx_run_has_bwd(run);
    e->sel = F_DIR;
    e->cursor = (int)strlen(e->dir);
    return e;
}

/* The fields shown: the pass only for a run that has backward cells. */
static int nfields(const export_state *e)
{
    return e->has_bwd ? NFIELDS : F_PASS;
}

static char *text_of(export_state *e, int f, size_t *cap)
{
    switch (f) {
    case F_DIR: *cap = sizeof(e->dir); return e->dir;
    case F_MODEL: *cap = sizeof(e->model_tag); return e->model_tag;
    case F_GPU: *cap = sizeof(e->gpu_tag); return e->gpu_tag;
    default: *cap = 0; return NULL;
    }
}

static void wrote(const char *path, void *ctx)
{
    export_state *e = ctx;
    if (e->nreport < 16)
        snprintf(e->report[e->nreport++], sizeof(e->report[0]), "%s", path);
}

static void do_export(ui_app *app, export_state *e)
{
    const pdbx_run *run = e->run;
    char err[512];
    e->nreport = 0;
    if (!e->dir[0]) {
        ui_app_message(app, 1, "directory: empty (give a directory to write into)");
        return;
    }
    /* the NPZ refuses std exactly as `pdbx export` does (store/runtable.h), before any mkdir */
    if ((e->format == 0 && pdbx_rt_check_time_stat((pdbx_stat_kind)e->stat, err, sizeof(err)) != 0)
        || pdbx_mkdirs(e->dir, err, sizeof(err)) != 0) {
        ui_app_message(app, 1, "%s", err);
        return;
    }
    int rc;
    if (e->format == 0) {
        pdbx_npz_options o = { e->model_tag[0] ? e->model_tag : NULL, e->gpu_tag[0] ? e->gpu_tag : NULL,
                               (pdbx_attribution)e->attribution, (pdbx_stat_kind)e->stat,
                               e->pass_both ? PDBX_PASS_SEL_BOTH : PDBX_PASS_SEL_FWD };
        rc = pdbx_export_npz(run, e->dir, &o, wrote, e, err, sizeof(err));
    } else if (e->format == 1) {
        rc = pdbx_export_csv(run, e->dir, wrote, e, err, sizeof(err));
    } else {
        char file[PDBX_PATH_MAX + 80];
        snprintf(file, sizeof(file), "%s/%s.trace.json", e->dir, run->id);
        rc = pdbx_export_trace(run, file, wrote, e, err, sizeof(err));
    }
    if (rc != 0)
        ui_app_message(app, 1, "%s", err);
    else
        ui_app_message(app, 0, "wrote %d file%s to %s", e->nreport, e->nreport == 1 ? "" : "s", e->dir);
}

static int export_key(ui_app *app, void *st, int key, ui_action act)
{
    export_state *e = st;
    size_t cap;
    char *text = text_of(e, e->sel, &cap);
    if (act == UI_ACT_BACK) {
        ui_app_pop(app);
        return UI_H_HANDLED;
    }
    if (act == UI_ACT_LAUNCH || key == '\n' || key == '\r' || key == KEY_ENTER) {
        do_export(app, e);
        return UI_H_HANDLED;
    }
    if (act == UI_ACT_UP) {
        e->sel = (e->sel + nfields(e) - 1) % nfields(e);
    } else if (act == UI_ACT_DOWN) {
        e->sel = (e->sel + 1) % nfields(e);
    } else if (!text && (act == UI_ACT_CHOICE_PREV || act == UI_ACT_CHOICE_NEXT || key == ' ')) {
        int d = act == UI_ACT_CHOICE_PREV ? -1 : 1;
        if (e->sel == F_FORMAT) e->format = (e->format + 3 + d) % 3;
        if (e->sel == F_ATTR) e->attribution = !e->attribution;
        if (e->sel == F_STAT) e->stat = (e->stat + PDBX_STAT_COUNT_KINDS + d) % PDBX_STAT_COUNT_KINDS;
        if (e->sel == F_PASS) e->pass_both = !e->pass_both;
        return UI_H_HANDLED;
    } else if (text) {
        return ui_keys_edit(text, cap, &e->cursor, key, act) == UI_EDIT_NONE ? UI_H_NONE : UI_H_HANDLED;
    } else {
        return UI_H_NONE;
    }
    text = text_of(e, e->sel, &cap);
    e->cursor = text ? (int)strlen(text) : 0;
    return UI_H_HANDLED;
}

static void export_draw(ui_app *app, void *st, ui_rect b)
{
    export_state *e = st;
    const pdbx_run *run = e->run;
    ui_put(b.y, 1, b.w - 2, UI_C_HEADER, 1, "Export %s (%s, %s/%s)", run->id, run->model.name, run->backend, run->gpu);
    int y = b.y + 2;
    for (int f = 0; f < nfields(e); f++, y++) {
        int active = f == e->sel;
        int npz_only = (f == F_MODEL || f == F_GPU || f == F_ATTR || f == F_STAT || f == F_PASS) && e->format != 0;
        ui_put(y, 2, 18, npz_only ? UI_C_DIM : UI_C_NORMAL, 1, "%s", field_labels[f]);
        ui_role role = active ? UI_C_FIELD_ACTIVE : UI_C_FIELD;
        int fw = b.w - 24;
        size_t cap;
        const char *text = text_of(e, f, &cap);
        if (text) {
            ui_put(y, 21, fw, role, 1, "%s", text);
        } else {
            const char *v = f == F_FORMAT ? formats[e->format] : f == F_ATTR ? attrs[e->attribution]
                          : f == F_PASS ? npz_passes[e->pass_both] : pdbx_stat_name((pdbx_stat_kind)e->stat);
            ui_put(y, 21, fw, role, 1, "< %s >", v);
        }
        if (active && text && 21 + e->cursor < 21 + fw) {
            app->cursor_y = y;
            app->cursor_x = 21 + e->cursor;
        }
    }
    y++;
    ui_put(y++, 2, b.w - 4, UI_C_DIM, 0, "Up/Down field, Left/Right change a choice, Enter or F5 writes, Esc back.");
    if (e->format == 0)
        ui_put(y++, 2, b.w - 4, UI_C_DIM, 0, "NPZ files: {model}_{gpu}_{tp}.npz, one per TP degree, rows MBS 1, 2, 4, ...");
    y++;
    if (e->nreport) {
        ui_put(y++, 2, b.w - 4, UI_C_HEADER, 0, "files written:");
        for (int i = 0; i < e->nreport && y < b.y + b.h; i++)
            ui_put(y++, 4, b.w - 6, UI_C_OK, 0, "%s", e->report[i]);
    }
}

const ui_screen_ops ui_screen_export = { "export", UI_SCR_EXPORT, 0, export_open, export_close, export_draw,
                                         export_key, NULL, NULL, NULL };
