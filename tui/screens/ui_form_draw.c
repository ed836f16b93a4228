/* ui_form_draw.c: the new-sweep form's drawing (ui_form_internal.h): the fields with their
 * messages, and the preview of the points with their memory predictions. */
#include "tui/screens/ui_form_internal.h"

#include <curses.h>
#include <stdio.h>

#include "store/util/fmt.h"

/* The marker after a field's value: its choices cycle with Left/Right (<>) or ^N (^N). */
static const char *field_hint(const form_field *x)
{
    return x->kind == F_CHOICE ? "<>" : x->kind == F_PRESETS ? "^N" : "";
}

/* One field's row: '!' when a message is about it, the label, the value (the selected one
 * scrolled to its cursor, the others from their start, cut with "..."). */
static void draw_field(ui_app *app, form_state *f, int i, int y, int lw, int vw)
{
    const form_field *x = &f->f[i];
    int active = i == f->sel;
    ui_put(y, 1, 1, UI_C_BAD, 1, "%s", x->error[0] ? "!" : " ");
    ui_put(y, 2, lw, x->error[0] ? UI_C_BAD : UI_C_NORMAL, 1, "%s", x->label);
    if (active) {
        int col = ui_keys_field_view(x->value, f->cursor, vw, &f->first);
        ui_put(y, 2 + lw, vw, UI_C_FIELD_ACTIVE, 1, "%s", x->value + f->first);
        app->cursor_y = y;
        app->cursor_x = 2 + lw + col;
    } else {
        ui_put_text(y, 2 + lw, vw, UI_C_FIELD, 1, "%s", x->value);
    }
    ui_put(y, 3 + lw + vw, 2, UI_C_DIM, 0, "%s", field_hint(x));
}

/* The messages under the fields, full width, wrapped: the selected field's first, then the
 * other fields', what no field takes, then what the engine said and what will be measured. */
static void draw_messages(const form_state *f, int y, int end, int w)
{
    const form_field *sx = &f->f[f->sel];
    if (sx->error[0] && y < end)
        y += ui_put_wrapped(y, 1, w, end - y, UI_C_BAD, "%s", sx->error);
    for (int i = 0; i < f->nf && y < end; i++)
        if (i != f->sel && f->f[i].error[0])
            y += ui_put_wrapped(y, 1, w, end - y, UI_C_BAD, "%s", f->f[i].error);
    if (f->spec_error[0] && y < end)
        y += ui_put_wrapped(y, 1, w, end - y, UI_C_BAD, "%s", f->spec_error);
    if (!f->spec_ok)
        return;
    if (y < end)
        y += ui_put_wrapped(y, 1, w, end - y, UI_C_OK, "%s",
                            "valid: F5 launches the sweep in the background and opens the monitor");
    if (f->check.measures[0] && y < end)
        y += ui_put_wrapped(y, 1, w, end - y, UI_C_WARNING, "%s", f->check.measures);
    if (f->check.notice[0] && y < end)
        ui_put_wrapped(y, 1, w, end - y, UI_C_INFO, "%s", f->check.notice);
}

/* The fields (left column) with the text cursor in the selected one, then the messages under
 * them, full width, and the key hint on the last row; returns the row below the fields. */
static int draw_fields(ui_app *app, form_state *f, ui_rect b, int left_w)
{
    const int lw = 19;
    int vw = left_w - lw - 4;           /* value, a blank, the 2-column hint */
    int y = b.y;
    ui_put(y++, 1, left_w, UI_C_HEADER, 1, "New sweep");
    /* rows for the fields: the rest keeps a blank, two message rows and the hint; when they
     * do not all fit, the list scrolls to keep the selected field in view */
    int rows = b.h - 1 - 4, top = 0;
    if (rows < 1)
        rows = 1;
    if (f->nf > rows && f->sel >= rows)
        top = f->sel - rows + 1;
    for (int i = top; i < f->nf && i < top + rows && y < b.y + b.h; i++, y++)
        draw_field(app, f, i, y, lw, vw);
    int preview_end = y;
    draw_messages(f, y + 1, b.y + b.h - 1, b.w - 2);
    ui_put_text(b.y + b.h - 1, 1, b.w - 2, UI_C_DIM, 1,
                "Up/Down field  Left/Right cursor/choice  ^N preset  ^U clear  PgUp/Dn preview");
    return preview_end;
}

/* A prediction in a few columns: decimal GB, '!' when over the GPU's memory. */
static void mem_short(double bytes, int oom, char *buf, size_t len)
{
    snprintf(buf, len, bytes >= 100e9 ? "%.0fG%s" : "%.1fG%s", bytes / 1e9, oom ? "!" : "");
}

/* The preview beside the fields: the points, their two memory predictions and OOM marks. */
static void draw_preview(form_state *f, ui_rect b, int left_w)
{
    int px = left_w + 2, pw = b.w - px - 1;
    int y = b.y;
    if (!f->spec_ok) {
        ui_put(y, px, pw, UI_C_HEADER, 1, "Preview");
        int marked = 0;
        for (int i = 0; i < f->nf; i++)
            marked |= f->f[i].error[0] != 0;
        if (marked)
            ui_put_wrapped(y + 1, px, pw, b.h - 1, UI_C_DIM, "%s", "fix the fields marked ! (their messages are below)");
        else
            ui_put_wrapped(y + 1, px, pw, b.h - 1, UI_C_BAD, "%s", f->spec_error);
        return;
    }
    int ranks_max = 0, poom = 0, toom = 0, cw = 6;   /* config column: 8 wide only with EP */
    for (size_t i = 0; i < f->npoints; i++) {
        if (f->points[i].ranks > ranks_max) ranks_max = f->points[i].ranks;
        if (f->points[i].ep > 1) cw = 8;
        poom += f->points[i].profile_oom;
        toom += f->points[i].train_oom;
    }
    /* short lines: the 80-column preview pane is about 30 wide. Two predictions per point:
       'prof.' what the engine allocates (its OOM, in the warning colour, stops the MBS sweep
       when predict_oom is on) and 'train' the full model's training memory (planning only);
       '!' marks a prediction over the GPU's memory */
    ui_put(y++, px, pw, UI_C_HEADER, 1, "Preview: %zu points, %d OOM", f->npoints, poom);
    ui_put(y++, px, pw, UI_C_DIM, 1, "%s on %s (%.0f GB)", f->spec.model.name, f->spec.gpu.name,
           f->spec.gpu.mem_bytes / 1e9);
    ui_put(y++, px, pw, UI_C_DIM, 1, "%s, <= %d ranks, %d train OOM", pdbx_dtype_name(f->spec.dtype),
           ranks_max, toom);
    if (f->combos[0]) {
        ui_put(y++, px, pw, UI_C_INFO, 1, "valid for that GPU count (F6 uses them):");
        ui_put(y++, px, pw, UI_C_INFO, 1, "%s", f->combos);
    }
    ui_put(y++, px, pw, UI_C_HEADER, 1, "%3s %-*s%5s %6s %6s", "#", cw, "config", "MBS", "prof.", "train");
    int rows = b.y + b.h - y;
    if (f->preview_top > (int)f->npoints - rows) f->preview_top = (int)f->npoints - rows;
    if (f->preview_top < 0) f->preview_top = 0;
    for (int i = 0; i < rows && (size_t)(f->preview_top + i) < f->npoints; i++) {
        const pdbx_plan_point *p = &f->points[f->preview_top + i];
        char cfg[32], prof[32], train[32];
        pdbx_fmt_config(PDBX_CFG_LABEL_DIMS, p->tp, p->pp, p->dp, p->ep, cfg, sizeof cfg);
        mem_short(p->profile_bytes, p->profile_oom, prof, sizeof prof);
        mem_short(p->mem.total, p->train_oom, train, sizeof train);
        ui_put(y++, px, pw, p->profile_oom ? UI_C_WARNING : UI_C_NORMAL, 1, "%3d %-*s%5d %6s %6s",
               p->index, cw, cfg, p->mbs, prof, train);
    }
}

void ui_form_draw(ui_app *app, void *st, ui_rect b)
{
    form_state *f = st;
    int left_w = b.w * 52 / 100;
    if (left_w < 46) left_w = 46;
    int end = draw_fields(app, f, b, left_w);
    b.h = end - b.y;
    draw_preview(f, b, left_w);
}
