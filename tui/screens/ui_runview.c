/* ui_runview.c: one run's results. A tab per (TP, PP, DP) config plus a collectives tab; views:
 * MBS x ops table in ms (with the total per MBS), the same table as shares, op shares per MBS
 * as stacked bars, cost vs MBS per op (log option), and efficiency against the GPU preset's
 * roofline, memory per rank (the two predictions beside the measured peak), and the cells of
 * each point (samples, CI, CV, bwd/fwd, where the samples came from; the point's setup time,
 * host load and GPU clocks). `p` picks the pass (fwd, bwd, both) of a run with backward cells;
 * a cell with CV > 5% is marked '!'; a run measured under load says so on the info line. `m`
 * marks a config and `c` compares it with the current one; `A` opens the advise screen over the
 * run. This file: open, close, keys and the frame; the views are ui_runview_tables.c and
 * ui_runview_details.c (ui_runview_internal.h). */
#include "tui/screens/ui_runview_internal.h"

#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/plan/plan.h"
#include "store/runtable.h"
#include "store/util/fmt.h"
#include "tui/ui_app.h"
#include "tui/ui_data.h"

static const char *const view_names[VIEW_COUNT] = {
    "table (ms)", "table (share of total)", "op shares per MBS", "cost vs MBS", "roofline efficiency",
    "memory per rank", "cells (n, CI, CV, source)"
};

static void runview_close(void *st)
{
    rv_state *v = st;
    if (!v)
        return;
    pdbx_run_free(&v->run);
    free(v);
}

/* Says why the table may show less than the user expects. */
static void open_message(ui_app *app, const rv_state *v)
{
    if (v->run.status == PDBX_RUN_CORRUPT)
        ui_app_message(app, 1, "corrupt run: showing the events before the damage (%s)", v->run.end_reason);
    else if (v->nconfigs == 0)
        ui_app_message(app, 1, "run %s has no planned points", v->run.id);
    else if ((v->run.status == PDBX_RUN_FAILED || v->run.status == PDBX_RUN_CANCELLED) && v->run.end_reason[0])
        /* why the table has pending or missing points (r on home replays the whole story) */
        ui_app_message(app, v->run.status == PDBX_RUN_FAILED, "%s: %s", pdbx_run_status_name(v->run.status),
                       v->run.end_reason);
}

static void *runview_open(ui_app *app, const void *arg)
{
    const char *id = arg;
    rv_state *v = ui_screen_state_new(app, sizeof(*v), "the run view");
    char err[256];
    if (!v)
        return NULL;
    if (pdbx_run_load(app->store, id, &v->run, err, sizeof(err)) != 0) {
        ui_app_message(app, 1, "%s", err);
        free(v);
        return NULL;
    }
    v->nconfigs = (int)pdbx_run_configs(&v->run, v->configs, PDBX_MAX_CONFIGS);
    v->marked_tab = -1;
    v->op = -1;
    v->stat = PDBX_STAT_MEAN;
    v->has_bwd = pdbx_run_has_bwd(&v->run);
    if (v->run.spec) {
        char serr[256];
        pdbx_spec_defaults(&v->spec);
        v->have_spec = pdbx_spec_from_json(v->run.spec, v->run.id, &v->spec, serr, sizeof(serr)) == 0;
    }
    open_message(app, v);
    return v;
}

/* p: the next pass (fwd, bwd, both), refused with a message for a run without backward cells. */
static void next_pass(ui_app *app, rv_state *v)
{
    pdbx_pass_sel next = (pdbx_pass_sel)((v->pass + 1) % PDBX_PASS_SEL_COUNT);
    char err[256];
    if (pdbx_pass_sel_check(&v->run, next, "pass", err, sizeof(err)) != 0) {
        ui_app_message(app, 1, "pass: '%s' needs backward cells; this run measured forward only "
                       "(allowed: fwd)", pdbx_pass_sel_name(next));
        return;
    }
    v->pass = next;
    ui_app_message(app, 0, "pass: %s%s", pdbx_pass_sel_name(next),
                   next == PDBX_PASS_SEL_FWD ? "" : next == PDBX_PASS_SEL_BOTH
                   ? " (fwd + bwd per op; layer and total are forward: N/A)"
                   : " (layer and total are forward: N/A)");
}

static int runview_key(ui_app *app, void *st, int key, ui_action act)
{
    (void)key;
    rv_state *v = st;
    int ntabs = v->nconfigs + (v->run.ncoll > 0);
    switch (act) {
    case UI_ACT_BACK:
        ui_app_pop(app);
        return UI_H_HANDLED;
    case UI_ACT_NEXT_TAB:
        if (ntabs) v->tab = (v->tab + 1) % ntabs;
        v->scroll = 0;
        v->legend_page = 0;
        return UI_H_HANDLED;
    case UI_ACT_PREV_TAB:
        if (ntabs) v->tab = (v->tab + ntabs - 1) % ntabs;
        v->scroll = 0;
        v->legend_page = 0;
        return UI_H_HANDLED;
    case UI_ACT_VIEW:
        if (v->tab >= v->nconfigs)
            v->coll_chart_only = !v->coll_chart_only;
        else
            v->view = (v->view + 1) % VIEW_COUNT;
        v->legend_page = 0;
        return UI_H_HANDLED;
    case UI_ACT_LEGEND:
        v->legend_page++;          /* the drawing wraps it back to 0 after the last page */
        return UI_H_HANDLED;
    case UI_ACT_STAT:
        v->stat = (v->stat + 1) % PDBX_STAT_COUNT_KINDS;
        ui_app_message(app, 0, "statistic: %s", pdbx_stat_name(v->stat));
        return UI_H_HANDLED;
    case UI_ACT_LOG:
        v->log = !v->log;
        ui_app_message(app, 0, "log scale %s", v->log ? "on" : "off");
        return UI_H_HANDLED;
    case UI_ACT_PASS:
        next_pass(app, v);
        return UI_H_HANDLED;
    case UI_ACT_OP:
        v->op = v->op + 1 >= PDBX_OP_COUNT ? -1 : v->op + 1;
        v->legend_page = 0;
        ui_app_message(app, 0, "cost chart: %s", v->op < 0 ? "largest ops" : pdbx_op_name(v->op));
        return UI_H_HANDLED;
    case UI_ACT_UP: if (v->scroll > 0) v->scroll--; return UI_H_HANDLED;
    case UI_ACT_DOWN: v->scroll++; return UI_H_HANDLED;
    case UI_ACT_MARK:
        if (v->tab >= v->nconfigs) return UI_H_HANDLED;
        v->marked_tab = v->marked_tab == v->tab ? -1 : v->tab;
        ui_app_message(app, 0, v->marked_tab < 0 ? "unmarked" : "marked this config: switch tabs and press c to compare");
        return UI_H_HANDLED;
    case UI_ACT_COMPARE:
        if (v->marked_tab < 0 || v->marked_tab == v->tab || v->tab >= v->nconfigs) {
            ui_app_message(app, 1, "mark a config with m, switch to another tab, then press c");
            return UI_H_HANDLED;
        }
        ui_app_push(app, UI_SCREEN_COMPARE, &(ui_compare_arg){ .run = &v->run, .cfg_a = v->configs[v->marked_tab],
                                                                .cfg_b = v->configs[v->tab] });
        return UI_H_HANDLED;
    case UI_ACT_EXPORT:
        ui_app_push(app, UI_SCREEN_EXPORT, &(ui_export_arg){ .run = &v->run });
        return UI_H_HANDLED;
    case UI_ACT_ADVISE:
        ui_app_push(app, UI_SCREEN_ADVISE, &(ui_advise_arg){ .run = &v->run });
        return UI_H_HANDLED;
    default:
        return UI_H_NONE;
    }
}

static void runview_draw(ui_app *app, void *st, ui_rect b)
{
    rv_state *v = st;
    const char *names[PDBX_MAX_CONFIGS + 1];
    char nb[PDBX_MAX_CONFIGS + 1][32];
    int ntabs = 0;
    for (int i = 0; i < v->nconfigs; i++) {
        const int *c = v->configs[i];
        char label[30];
        pdbx_fmt_config(PDBX_CFG_LABEL_TAB, c[0], c[1], c[2], c[3], label, sizeof label);
        snprintf(nb[i], sizeof(nb[i]), "%s%.30s", i == v->marked_tab ? "*" : "", label);
        names[ntabs++] = nb[i];
    }
    if (v->run.ncoll > 0)
        names[ntabs++] = "collectives";
    if (v->tab >= ntabs) v->tab = 0;
    ui_draw_tabs(b.y, 1, b.w - 2, names, ntabs, v->tab);
    /* the long id last: at 80 columns it is the part that goes (whole, "..." in its place),
     * not the status */
    /* a run whose nodes were all this machine says so (its numbers are not multi-node ones) */
    const char *sim = strncmp(v->run.launcher, "simulated", 9) == 0 ? v->run.launcher : "";
    ui_put_text(b.y + 1, 1, b.w - 2, UI_C_DIM, 1, "%s  %s/%s %s  seq %d  layers %d of %d  %s%s%s  %s",
           v->run.model.name, v->run.backend, v->run.gpu, v->run.dtype, v->run.seq_len,
           v->run.layers_profiled, v->run.model.layers, pdbx_run_status_name(v->run.status),
           sim[0] ? "  " : "", sim, v->run.id);
    ui_rect body = { b.y + 3, b.x, b.h - 3, b.w };
    if (ntabs == 0) {
        ui_put(body.y, 1, b.w - 2, UI_C_DIM, 0, "no configs in this run");
        return;
    }
    if (v->tab >= v->nconfigs) {
        rv_draw_collectives(app, v, body);
        return;
    }
    ui_matrix m;
    ui_matrix_build_pass(&v->run, v->configs[v->tab], v->stat, v->pass, &m);
    int any_noisy = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        for (int i = 0; i < m.n; i++)
            any_noisy |= m.noisy[op][i];
    /* the pass only for runs that have a choice; the noisy legend when a mark shows; the load
       when the engine judged points measured under load (whole at 200 columns) */
    char pass[32] = "", load[256];
    if (v->has_bwd)
        snprintf(pass, sizeof(pass), "  pass: %s", pdbx_pass_sel_name(v->pass));
    pdbx_run_load_text(&v->run, load, sizeof(load));     /* "" when no point was loaded */
    ui_put_text(b.y + 2, 1, b.w - 2, UI_C_INFO, 1, "view: %s  stat: %s%s%s%s%s%s", view_names[v->view],
                pdbx_stat_name(v->stat), v->log && v->view == VIEW_COST ? "  log scale" : "",  /* the one view it changes */
                pass, any_noisy ? "  ! CV > 5%" : "", load[0] ? "  " : "", load);
    switch (v->view) {
    case VIEW_TABLE: rv_draw_table(v, body, &m, 0); break;
    case VIEW_SHARE_TABLE: rv_draw_table(v, body, &m, 1); break;
    case VIEW_SHARES: rv_draw_shares(app, v, body, &m); break;
    case VIEW_COST: {
        const ui_matrix *ms[1] = { &m };
        const char *nm[1] = { "" };
        ui_draw_cost_chart(app, body, ms, nm, 1, v->op, v->log, v->op < 0 ? "largest ops" : pdbx_op_name(v->op),
                           &v->legend_page);
        break;
    }
    case VIEW_ROOFLINE: rv_draw_roofline(app, v, body, &m); break;
    case VIEW_MEMORY: rv_draw_memory(v, body, v->configs[v->tab]); break;
    case VIEW_CELLS: rv_draw_cells(v, body, v->configs[v->tab]); break;
    default: break;
    }
}

const ui_screen_ops ui_screen_runview = { "run", UI_SCR_RUNVIEW, 0, runview_open, runview_close, runview_draw,
                                          runview_key, NULL, NULL, NULL };
