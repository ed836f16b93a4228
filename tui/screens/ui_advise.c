/* ui_advise.c: the advise screen over a run (`A` in the run view): which (TP, PP, DP, MBS) to
 * train with, estimated from the run's own measurements by the advise cost model
 * (engine/advise/advise.h, the one `pdbx advise` prints). The ranked list of configurations
 * (step time order, Pareto and estimated-cell marks, scrolled with the selection), the Pareto
 * chart of step time vs memory per GPU, the time breakdown of the selected configuration as a
 * stacked bar, and the model's notes (interpolated or extrapolated cells, the x3 rule). g/G and
 * b/B halve or double the GPUs and the global batch and recompute at once; v shows the chart
 * alone (the only way to see it where the list leaves it no room). The run is borrowed from
 * the run view below, which outlives this screen. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/advise/advise.h"
#include "engine/plan/plan.h"
#include "tui/ui_app.h"

#define ADVISE_MAX_GPUS 65536
#define ADVISE_MAX_GBS (1 << 24)

typedef struct {
    const pdbx_run *run;
    pdbx_advise_query q;
    pdbx_advise_result res;
    int have_res;
    char err[256];           /* the last query's error ("" none) */
    int sel, top;            /* selected row, first row shown */
    int chart_only;          /* v: the chart over the whole middle */
    int gpus_per_node;       /* for the query line: the query's, else the run's */
    double gpu_mem_gb;       /* the run's GPU memory (NaN unknown): the chart's limit */
    char gpu_name[64];
} adv_state;

/* The breakdown's segments, in the bar's order. */
enum { SEG_COMPUTE, SEG_TP, SEG_PP, SEG_DP, SEG_BUBBLE, SEG_COUNT };
static const char *const seg_names[SEG_COUNT] = { "compute", "TP comm", "PP comm", "DP comm", "bubble" };

static void seg_values(const pdbx_advise_row *r, double *v)
{
    v[SEG_COMPUTE] = r->compute_ms;
    v[SEG_TP] = r->tp_comm_ms;
    v[SEG_PP] = r->pp_comm_ms;
    v[SEG_DP] = r->dp_comm_ms;
    v[SEG_BUBBLE] = r->bubble_ms;
}

/* Runs the query again; keeps the selected configuration selected when it is still a row. */
static void recompute(ui_app *app, adv_state *s)
{
    int keep[5] = { 0, 0, 0, 0, 0 }, had = 0;   /* tp, pp, dp, mbs, ep (an EP run's rows differ by it) */
    if (s->have_res && s->sel >= 0 && (size_t)s->sel < s->res.nrows) {
        const pdbx_advise_row *r = &s->res.rows[s->sel];
        keep[0] = r->tp; keep[1] = r->pp; keep[2] = r->dp; keep[3] = r->mbs; keep[4] = r->ep;
        had = 1;
    }
    if (s->have_res)
        pdbx_advise_free(&s->res);
    memset(&s->res, 0, sizeof(s->res));
    s->have_res = 0;
    s->err[0] = '\0';
    if (pdbx_advise(s->run, &s->q, &s->res, s->err, sizeof(s->err)) != 0) {
        if (!s->err[0])
            snprintf(s->err, sizeof(s->err), "advise failed for %d GPUs, global batch %d", s->q.gpus, s->q.gbs);
        ui_app_message(app, 1, "%s", s->err);
        s->sel = s->top = 0;
        return;
    }
    s->have_res = 1;
    s->sel = 0;
    for (size_t i = 0; had && i < s->res.nrows; i++) {
        const pdbx_advise_row *r = &s->res.rows[i];
        if (r->tp == keep[0] && r->pp == keep[1] && r->dp == keep[2] && r->mbs == keep[3] &&
            r->ep == keep[4]) {
            s->sel = (int)i;
            break;
        }
    }
}

/* The first query: the GPUs the run was planned for (its world size, the spec's nodes x GPUs
 * per node, its largest config, whichever is largest), and a global batch that every MBS the
 * run measured divides with all of them in data parallel: GPUs x the largest MBS x 2. */
static void default_query(adv_state *s, const pdbx_spec *spec, int have_spec)
{
    int gpus = s->run->world_size > 0 ? s->run->world_size : 1;
    if (have_spec && spec->gpus_per_node > 0 && spec->nodes > 0 && spec->gpus_per_node * spec->nodes > gpus)
        gpus = spec->gpus_per_node * spec->nodes;
    int mbs_max = 1;
    for (size_t i = 0; i < s->run->npoints; i++) {
        const pdbx_point *p = &s->run->points[i];
        if (p->tp * p->pp * p->dp > gpus) gpus = p->tp * p->pp * p->dp;
        if (p->status == PDBX_POINT_OK && p->mbs > mbs_max) mbs_max = p->mbs;
    }
    s->q.gpus = gpus;
    s->q.gbs = gpus * mbs_max * 2;
}

static void *advise_open(ui_app *app, const void *arg)
{
    const ui_advise_arg *a = arg;
    if (!a || !a->run) {
        ui_app_message(app, 1, "advise: no run to advise from");
        return NULL;
    }
    adv_state *s = ui_screen_state_new(app, sizeof(*s), "the advise screen");
    if (!s)
        return NULL;
    s->run = a->run;
    pdbx_advise_query_defaults(&s->q);
    pdbx_spec spec;
    int have_spec = 0;
    pdbx_spec_defaults(&spec);
    if (s->run->spec) {
        char serr[256];
        have_spec = pdbx_spec_from_json(s->run->spec, s->run->id, &spec, serr, sizeof(serr)) == 0;
    }
    s->gpu_mem_gb = have_spec && spec.gpu.mem_bytes > 0 ? spec.gpu.mem_bytes / 1e9 : NAN;
    snprintf(s->gpu_name, sizeof(s->gpu_name), "%s", s->run->gpu);
    s->gpus_per_node = s->q.gpus_per_node > 0 ? s->q.gpus_per_node
                     : have_spec && spec.gpus_per_node > 0 ? spec.gpus_per_node
                     : s->run->ranks_per_node > 0 ? s->run->ranks_per_node : 1;
    default_query(s, &spec, have_spec);
    if (a->gpus > 0) s->q.gpus = a->gpus;
    if (a->gbs > 0) s->q.gbs = a->gbs;
    recompute(app, s);
    return s;
}

static void advise_close(void *st)
{
    adv_state *s = st;
    if (!s)
        return;
    if (s->have_res)
        pdbx_advise_free(&s->res);
    free(s);
}

/* Halves (dir < 0) or doubles *v within [1, max]; 0 when it cannot move. */
static int scale_value(int *v, int dir, int max)
{
    if (dir < 0 && *v > 1) { *v /= 2; return 1; }
    if (dir > 0 && *v <= max / 2) { *v *= 2; return 1; }
    return 0;
}

static int advise_key(ui_app *app, void *st, int key, ui_action act)
{
    (void)key;
    adv_state *s = st;
    int n = s->have_res ? (int)s->res.nrows : 0;
    switch (act) {
    case UI_ACT_BACK:
        ui_app_pop(app);
        return UI_H_HANDLED;
    case UI_ACT_GPUS_LESS:
    case UI_ACT_GPUS_MORE:
        if (!scale_value(&s->q.gpus, act == UI_ACT_GPUS_LESS ? -1 : 1, ADVISE_MAX_GPUS)) {
            ui_app_message(app, 1, "GPUs: %d is the %s (allowed: 1 to %d)", s->q.gpus,
                           act == UI_ACT_GPUS_LESS ? "least" : "most", ADVISE_MAX_GPUS);
            return UI_H_HANDLED;
        }
        recompute(app, s);
        return UI_H_HANDLED;
    case UI_ACT_GBS_LESS:
    case UI_ACT_GBS_MORE:
        if (!scale_value(&s->q.gbs, act == UI_ACT_GBS_LESS ? -1 : 1, ADVISE_MAX_GBS)) {
            ui_app_message(app, 1, "global batch: %d is the %s (allowed: 1 to %d)", s->q.gbs,
                           act == UI_ACT_GBS_LESS ? "least" : "most", ADVISE_MAX_GBS);
            return UI_H_HANDLED;
        }
        recompute(app, s);
        return UI_H_HANDLED;
    case UI_ACT_VIEW:
        s->chart_only = !s->chart_only;
        return UI_H_HANDLED;
    case UI_ACT_UP: if (s->sel > 0) s->sel--; return UI_H_HANDLED;
    case UI_ACT_DOWN: if (s->sel + 1 < n) s->sel++; return UI_H_HANDLED;
    case UI_ACT_PGUP: s->sel = s->sel > 10 ? s->sel - 10 : 0; return UI_H_HANDLED;
    case UI_ACT_PGDN: s->sel = s->sel + 10 < n ? s->sel + 10 : (n > 0 ? n - 1 : 0); return UI_H_HANDLED;
    case UI_ACT_HOME: s->sel = 0; return UI_H_HANDLED;
    case UI_ACT_END: s->sel = n > 0 ? n - 1 : 0; return UI_H_HANDLED;
    default:
        return UI_H_NONE;
    }
}

/* ---- the list ------------------------------------------------------------------------------ */
/* Narrow: the JSON fields that rank (tp pp dp mbs num_mb step_ms mem_gb fits) and the marks;
 * wide adds the parts of the step. */
#define LIST_NARROW_W 58
#define LIST_WIDE_W 91

static void list_line(char *buf, size_t len, int wide, const pdbx_advise_row *r, int rank, int selected)
{
    char marks[4] = "";
    if (r->pareto) strcat(marks, "*");
    if (r->estimated_cells > 0) strcat(marks, "~");
    /* '>' marks the selection where reverse video does not show (a text capture) */
    int k = snprintf(buf, len, "%c%3d %3d %3d %3d %4d %6d %10.2f %8.2f %5s %-3s", selected ? '>' : ' ', rank, r->tp, r->pp, r->dp,
                     r->mbs, r->num_mb, r->step_ms, r->mem_gb, r->fits ? "yes" : "no", marks);
    if (wide && k > 0 && (size_t)k < len)
        snprintf(buf + k, len - (size_t)k, "%10.2f %10.2f %10.2f", r->compute_ms, r->comm_ms, r->bubble_ms);
}

static void draw_list(adv_state *s, ui_rect b, int wide)
{
    char hdr[160];
    int k = snprintf(hdr, sizeof(hdr), "%4s %3s %3s %3s %4s %6s %10s %8s %5s %-3s", "#", "tp", "pp", "dp", "mbs",
                     "num_mb", "step_ms", "mem_gb", "fits", "");
    if (wide && k > 0)
        snprintf(hdr + k, sizeof(hdr) - (size_t)k, "%10s %10s %10s", "compute_ms", "comm_ms", "bubble_ms");
    ui_put(b.y, b.x, b.w, UI_C_HEADER, 1, "%s", hdr);
    int rows = b.h - 1;
    int n = (int)s->res.nrows;
    if (n == 0 || rows <= 0)
        return;
    s->sel = ui_list_scroll(n, rows, s->sel, &s->top);
    for (int i = 0; i < rows && s->top + i < n; i++) {
        int idx = s->top + i;
        const pdbx_advise_row *r = &s->res.rows[idx];
        char line[160];
        list_line(line, sizeof(line), wide, r, idx + 1, idx == s->sel);
        ui_role role = idx == s->sel ? UI_C_SELECTED : !r->fits ? UI_C_WARNING : r->pareto ? UI_C_BETTER : UI_C_NORMAL;
        ui_put(b.y + 1 + i, b.x, b.w, role, 1, "%s", line);
    }
}

/* ---- the Pareto chart ------------------------------------------------------------------------ */
enum { SER_NOFIT, SER_FITS, SER_PARETO, SER_SELECTED };

static void draw_chart(ui_app *app, adv_state *s, ui_rect b)
{
    int n = (int)s->res.nrows;
    int unicode = app->unicode && !app->force_ascii;
    if (b.h < 8 || b.w < 30) {
        ui_put_text(b.y, b.x, b.w, UI_C_DIM, 0, "Pareto chart: no room at this size");
        return;
    }
    double *xs = calloc((size_t)n + 1, sizeof(double)), *ys = calloc((size_t)n + 1, sizeof(double));
    int *series = calloc((size_t)n + 1, sizeof(int)), *front = calloc((size_t)n + 1, sizeof(int));
    ui_canvas c;
    int canvas_ok = 0;
    if (!xs || !ys || !series || !front || (canvas_ok = ui_canvas_init(&c, b.w, b.h - 2) == 0) == 0) {
        ui_app_message(app, 1, "out of memory drawing the Pareto chart");
        goto done;
    }
    int nfront = 0;
    for (int i = 0; i < n; i++) {
        const pdbx_advise_row *r = &s->res.rows[i];
        xs[i] = r->mem_gb;
        ys[i] = r->step_ms;
        series[i] = r->pareto ? SER_PARETO : r->fits ? SER_FITS : SER_NOFIT;
        if (r->pareto) front[nfront++] = i;
    }
    /* the front from the least memory to the most, so the join runs along it */
    for (int i = 1; i < nfront; i++)
        for (int j = i; j > 0 && xs[front[j - 1]] > xs[front[j]]; j--) {
            int t = front[j]; front[j] = front[j - 1]; front[j - 1] = t;
        }
    /* hollow: does not fit; filled: fits; square: on the front; diamond: selected */
    const uint32_t uni[] = { 0x25CB, 0x25CF, 0x25A0 }, asc[] = { 'x', 'o', '#' };
    const uint32_t hl = unicode ? 0x25C6 : '@', rule = unicode ? 0x2506 : '|';
    ui_scatter_spec sp = { .xs = xs, .ys = ys, .xtight = 1, .ytight = 1, .series = series, .n = n, .markers = unicode ? uni : asc,
                           .line = front, .nline = nfront, .line_series = SER_PARETO, .highlight = s->sel,
                           .highlight_glyph = hl, .vline = s->gpu_mem_gb, .vline_glyph = rule, .xname = "mem/GPU",
                           .xunit = UI_UNIT_GB, .yunit = UI_UNIT_MS, .unicode = unicode };
    ui_scatter_info info;
    char hidden[64] = "";
    int drawn = n > 0 && ui_chart_scatter(&c, 0, 0, c.h, c.w, &sp, &info) == 0;
    if (drawn && info.hidden > 0)
        snprintf(hidden, sizeof(hidden), "; %d under another mark", info.hidden);
    ui_put_text(b.y, b.x, b.w, UI_C_HEADER, 0, "Pareto chart: step time (ms) vs memory per GPU (GB), %d configs%s",
                n, hidden);
    if (!drawn) {
        ui_put_text(b.y + 1, b.x, b.w, UI_C_DIM, 0, n ? "not enough room for the chart" : "no configuration to plot");
        goto done;
    }
    ui_draw_canvas(&c, b.y + 1, b.x);
    ui_legend_entry legend[5];
    int nl = 0;
    ui_legend_set(&legend[nl++], sp.markers[SER_NOFIT], SER_NOFIT, "does not fit");
    ui_legend_set(&legend[nl++], sp.markers[SER_FITS], SER_FITS, "fits");
    ui_legend_set(&legend[nl++], sp.markers[SER_PARETO], SER_PARETO, "Pareto front");
    ui_legend_set(&legend[nl++], hl, SER_SELECTED, "selected");
    if (info.vline_shown) {
        char gm[48];
        snprintf(gm, sizeof(gm), "GPU memory %.0f GB", s->gpu_mem_gb);
        ui_legend_set(&legend[nl++], rule, -1, gm);
    }
    int page = 0;
    ui_draw_legend(b.y + b.h - 1, b.x, b.w, 1, legend, nl, &page);
done:
    if (canvas_ok) ui_canvas_free(&c);
    free(xs);
    free(ys);
    free(series);
    free(front);
}

/* ---- the breakdown of the selected configuration ---------------------------------------------- */
#define BREAKDOWN_ROWS 4

/* BREAKDOWN_ROWS rows at b: the configuration in words, its stacked bar, the legend with the
 * values (ms), and where its backward time and its estimated cells came from. */
static void draw_breakdown(ui_app *app, adv_state *s, ui_rect b)
{
    if (!s->have_res || s->res.nrows == 0 || b.h < BREAKDOWN_ROWS)
        return;
    const pdbx_advise_row *r = &s->res.rows[s->sel];
    int unicode = app->unicode && !app->force_ascii;
    char fit[64];
    if (r->fits) snprintf(fit, sizeof(fit), "fits");
    else if (isfinite(s->gpu_mem_gb)) snprintf(fit, sizeof(fit), "does not fit in %.0f GB", s->gpu_mem_gb);
    else snprintf(fit, sizeof(fit), "does not fit");
    ui_put_text(b.y, b.x, b.w, UI_C_HEADER, 1, "#%d tp %d pp %d dp %d mbs %d num_mb %d: step %.2f ms, %.2f GB/GPU, %s",
                s->sel + 1, r->tp, r->pp, r->dp, r->mbs, r->num_mb, r->step_ms, r->mem_gb, fit);
    double v[SEG_COUNT];
    seg_values(r, v);
    ui_canvas c;
    if (ui_canvas_init(&c, b.w, 1) == 0) {
        const char *label[1] = { "ms" };
        ui_chart_stacked(&c, 0, 0, 2, b.w - 3, label, v, 1, SEG_COUNT, 1, unicode);
        ui_draw_canvas(&c, b.y + 1, b.x);
        ui_canvas_free(&c);
    }
    /* "TP comm" where the legend has the room, "TP" at 80 columns: one row either way */
    static const char *const short_names[SEG_COUNT] = { "compute", "TP", "PP", "DP", "bubble" };
    ui_legend_entry legend[SEG_COUNT];
    for (int k = 0; k < SEG_COUNT; k++) {
        char name[64];
        snprintf(name, sizeof(name), "%s %.2f", b.w >= 100 ? seg_names[k] : short_names[k], v[k]);
        ui_legend_set(&legend[k], ui_segment_fill(k, unicode), k, name);
    }
    int page = 0;
    ui_draw_legend(b.y + 2, b.x, b.w, 1, legend, SEG_COUNT, &page);
    char est[PDBX_ADVISE_NOTE_MAX + 64] = "";
    if (r->estimated_cells > 0)
        snprintf(est, sizeof(est), "; ~ %d cell%s estimated: %s", r->estimated_cells,
                 r->estimated_cells == 1 ? "" : "s", r->note);
    ui_put_text(b.y + 3, b.x, b.w, r->estimated_cells > 0 ? UI_C_WARNING : UI_C_DIM, 1, "bwd %s%s",
                r->bwd_measured ? "measured" : "= 2 x fwd (x3 rule)", est);
}

/* ---- notes ------------------------------------------------------------------------------------ */
/* Configurations whose backward time is 2 x forward (the run has no backward cells for them). */
static size_t x3_configs(const adv_state *s)
{
    size_t x3 = 0;
    for (size_t i = 0; s->have_res && i < s->res.nrows; i++)
        x3 += !s->res.rows[i].bwd_measured;
    return x3;
}

static void draw_notes(adv_state *s, ui_rect b)
{
    if (b.h <= 0)
        return;
    int y = b.y, end = b.y + b.h;
    size_t x3 = x3_configs(s);
    size_t nnotes = s->have_res ? s->res.nnotes : 0;
    ui_put_text(y++, b.x, b.w, UI_C_HEADER, 0, "notes (%zu)%s", nnotes + (x3 > 0),
                (nnotes + (x3 > 0)) ? ":" : ": every cell measured, bwd measured");
    if (x3 > 0 && y < end)
        ui_put_text(y++, b.x, b.w, UI_C_DIM, 0, "x3 rule (bwd = 2 x fwd, no backward cells) in %zu of %zu configs",
                    x3, s->res.nrows);
    for (size_t i = 0; i < nnotes && y < end; i++) {
        if (y == end - 1 && i + 1 < nnotes) {
            ui_put_text(y++, b.x, b.w, UI_C_DIM, 0, "+%zu more notes: pdbx advise prints them all", nnotes - i);
            break;
        }
        ui_put_text(y++, b.x, b.w, UI_C_DIM, 0, "%s", s->res.notes[i]);
    }
}

static void advise_draw(ui_app *app, void *st, ui_rect b)
{
    adv_state *s = st;
    /* the query as the model resolved it (nodes, GPUs per node, layers), else as asked */
    const pdbx_advise_query *rq = s->have_res ? &s->res.query : &s->q;
    int gpn = rq->gpus_per_node > 0 ? rq->gpus_per_node : s->gpus_per_node;
    int nodes = rq->nodes > 0 ? rq->nodes : (s->q.gpus + gpn - 1) / gpn;
    char layers[32] = "";
    if (rq->layers > 0) snprintf(layers, sizeof(layers), " (%d layers)", rq->layers);
    ui_rect in = { b.y, b.x + 1, b.h, b.w - 2 };
    ui_put_text(in.y, in.x, in.w, UI_C_INFO, 1, "query: %d GPUs  global batch %d  %d node%s x %d GPUs  %s%s %s  stat %s",
                s->q.gpus, s->q.gbs, nodes, nodes == 1 ? "" : "s", gpn, s->run->model.name, layers, s->gpu_name,
                pdbx_stat_name(rq->stat));
    if (!s->have_res) {
        /* the model's one-line error, whole (it names the field, the value and what is allowed) */
        int rows = ui_put_wrapped(in.y + 1, in.x, in.w, 4, UI_C_ERROR, "%s", s->err);
        ui_put_text(in.y + 2 + rows, in.x, in.w, UI_C_DIM, 0, "g/G and b/B change the query; Esc goes back");
        return;
    }
    int n = (int)s->res.nrows;
    size_t nfit = 0, npareto = 0, nest = 0;
    for (int i = 0; i < n; i++) {
        nfit += s->res.rows[i].fits != 0;
        npareto += s->res.rows[i].pareto != 0;
        nest += s->res.rows[i].estimated_cells > 0;
    }
    /* the chart beside the list where both fit (the narrow list first), else v shows it alone */
    int wide = in.w >= LIST_WIDE_W;
    int beside = in.h >= 30 && in.w - LIST_NARROW_W - 2 >= 60;
    if (beside && in.w - LIST_WIDE_W - 2 < 60)
        wide = 0;
    ui_put_text(in.y + 1, in.x, in.w, n ? UI_C_NORMAL : UI_C_WARNING, 1,
                "%d configs by step time: %zu fit, %zu Pareto (*), %zu estimated (~)%s", n, nfit, npareto,
                nest, beside || s->chart_only ? "" : "; v: chart");
    /* rows: the query and summary (2), the middle, a blank, the breakdown, the notes (at least
       2). The list takes the rows it needs; the chart (beside it or alone) at least 16 and what
       the notes leave. */
    int rest = in.h - 2 - 1 - BREAKDOWN_ROWS;
    int notes_need = 1 + (x3_configs(s) > 0) + (int)s->res.nnotes;
    int mid_h = n + 1;
    if (beside || s->chart_only) {
        int chart_h = rest - notes_need;
        if (chart_h < 16) chart_h = 16;
        if (chart_h > mid_h) mid_h = chart_h;
    }
    if (mid_h > rest - 2) mid_h = rest - 2;
    if (mid_h < 2) mid_h = 2;
    ui_rect mid = { in.y + 2, in.x, mid_h, in.w };
    if (n == 0) {
        /* the model said why in its notes */
        ui_put_text(mid.y, mid.x, mid.w, UI_C_WARNING, 0, "no configuration for %d GPUs and global batch %d "
                    "(tp x pp x dp = GPUs, layers %% pp = 0, gbs %% (mbs x dp) = 0): g/G, b/B change them",
                    s->q.gpus, s->q.gbs);
    } else if (s->chart_only) {
        ui_rect cr = { mid.y, mid.x, mid.h - 1, mid.w };
        draw_chart(app, s, cr);
        ui_put(mid.y + mid.h - 1, mid.x, mid.w, UI_C_DIM, 0, "v: back to the list");
    } else if (beside) {
        int lw = wide ? LIST_WIDE_W : LIST_NARROW_W;
        ui_rect lr = { mid.y, mid.x, mid.h, lw }, cr = { mid.y, mid.x + lw + 2, mid.h, mid.w - lw - 2 };
        draw_list(s, lr, wide);
        draw_chart(app, s, cr);
    } else {
        ui_rect lr = { mid.y, mid.x, mid.h, wide ? LIST_WIDE_W : LIST_NARROW_W };
        draw_list(s, lr, wide);
    }
    ui_rect bd = { mid.y + mid.h + 1, in.x, BREAKDOWN_ROWS, in.w };
    draw_breakdown(app, s, bd);
    ui_rect nr = { bd.y + BREAKDOWN_ROWS, in.x, in.y + in.h - (bd.y + BREAKDOWN_ROWS), in.w };
    draw_notes(s, nr);
}

const ui_screen_ops ui_screen_advise = { "advise", UI_SCR_ADVISE, 0, advise_open, advise_close, advise_draw,
                                         advise_key, NULL, NULL, NULL };
