/* ui_compare.c: two runs (configs matched by TP/PP/DP) or two configs of one run side by side.
 * Table: ratio B/A per op and MBS (below 1: B is faster, coloured better; above: worse), the
 * geometric mean per op over the MBS both measured; chart: cost vs MBS of both overlaid. */
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/ui_app.h"
#include "tui/ui_data.h"

typedef enum { VIEW_TABLE = 0, VIEW_COST } view_kind;

typedef struct {
    pdbx_run a, b;           /* b unused when comparing two configs of one run */
    int have_a, have_b, same_run;
    int pairs[PDBX_MAX_CONFIGS][6];     /* config of A (tp,pp,dp), config of B */
    int npairs;
    int tab;
    pdbx_stat_kind stat;
    int log;
    int op;                  /* -1: the total */
    view_kind view;          /* TABLE (ratios) or COST (overlaid chart) */
    int scroll;              /* op rows scrolled off the top of the ratio table */
} cmp_state;

static void compare_close(void *st)
{
    cmp_state *c = st;
    if (!c)
        return;
    if (c->have_a) pdbx_run_free(&c->a);
    if (c->have_b) pdbx_run_free(&c->b);
    free(c);
}

/* Pairs the configs A and B have in common; else the first of each, saying so. */
static int pair_configs(ui_app *app, cmp_state *c)
{
    int ca[PDBX_MAX_CONFIGS][3], cb[PDBX_MAX_CONFIGS][3];
    size_t na = pdbx_run_configs(&c->a, ca, PDBX_MAX_CONFIGS);
    size_t nb = pdbx_run_configs(&c->b, cb, PDBX_MAX_CONFIGS);
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++)
            if (memcmp(ca[i], cb[j], sizeof(ca[i])) == 0 && c->npairs < PDBX_MAX_CONFIGS) {
                memcpy(c->pairs[c->npairs], ca[i], sizeof(ca[i]));
                memcpy(c->pairs[c->npairs] + 3, cb[j], sizeof(cb[j]));
                c->npairs++;
            }
    if (c->npairs == 0 && na > 0 && nb > 0) {
        /* no config in common: compare the first of each, and say so */
        memcpy(c->pairs[0], ca[0], sizeof(ca[0]));
        memcpy(c->pairs[0] + 3, cb[0], sizeof(cb[0]));
        c->npairs = 1;
        ui_app_message(app, 0, "no TP/PP/DP config in common: comparing the first config of each");
    }
    if (c->npairs == 0) {
        ui_app_message(app, 1, "nothing to compare: a run has no configs");
        return -1;
    }
    return 0;
}

static int open_runs(ui_app *app, cmp_state *c, const char *id_a, const char *id_b)
{
    char err[256];
    if (pdbx_run_load(app->store, id_a, &c->a, err, sizeof(err)) != 0) {
        ui_app_message(app, 1, "%s", err);
        return -1;
    }
    c->have_a = 1;
    if (pdbx_run_load(app->store, id_b, &c->b, err, sizeof(err)) != 0) {
        ui_app_message(app, 1, "%s", err);
        return -1;
    }
    c->have_b = 1;
    return pair_configs(app, c);
}

static int open_configs(ui_app *app, cmp_state *c, const pdbx_run *run, const int cfg_a[3], const int cfg_b[3])
{
    char err[256];
    /* a private copy of the run, so the run view can be closed independently */
    if (pdbx_run_load(app->store, run->id, &c->a, err, sizeof(err)) != 0) {
        ui_app_message(app, 1, "%s", err);
        return -1;
    }
    c->have_a = 1;
    c->same_run = 1;
    memcpy(c->pairs[0], cfg_a, 3 * sizeof(int));
    memcpy(c->pairs[0] + 3, cfg_b, 3 * sizeof(int));
    c->npairs = 1;
    return 0;
}

static void *compare_open(ui_app *app, const void *arg)
{
    const ui_compare_arg *a = arg;
    cmp_state *c = ui_screen_state_new(app, sizeof(*c), "the comparison");
    if (!c)
        return NULL;
    int rc = a->run ? open_configs(app, c, a->run, a->cfg_a, a->cfg_b) : open_runs(app, c, a->id_a, a->id_b);
    if (rc != 0) {
        compare_close(c);
        return NULL;
    }
    c->op = -1;
    return c;
}

static int compare_key(ui_app *app, void *st, int key, ui_action act)
{
    (void)key;
    cmp_state *c = st;
    switch (act) {
    case UI_ACT_BACK:
        ui_app_pop(app);
        return UI_H_HANDLED;
    case UI_ACT_NEXT_TAB: c->tab = (c->tab + 1) % c->npairs; c->scroll = 0; return UI_H_HANDLED;
    case UI_ACT_PREV_TAB: c->tab = (c->tab + c->npairs - 1) % c->npairs; c->scroll = 0; return UI_H_HANDLED;
    case UI_ACT_VIEW: c->view = c->view == VIEW_TABLE ? VIEW_COST : VIEW_TABLE; return UI_H_HANDLED;
    case UI_ACT_STAT: c->stat = (c->stat + 1) % PDBX_STAT_COUNT_KINDS; return UI_H_HANDLED;
    case UI_ACT_LOG: c->log = !c->log; return UI_H_HANDLED;
    case UI_ACT_UP: if (c->scroll > 0) c->scroll--; return UI_H_HANDLED;
    case UI_ACT_DOWN: c->scroll++; return UI_H_HANDLED;   /* clamped when drawn */
    case UI_ACT_HOME: c->scroll = 0; return UI_H_HANDLED;
    case UI_ACT_END: c->scroll = PDBX_OP_COUNT; return UI_H_HANDLED;
    case UI_ACT_OP: c->op = c->op + 1 >= PDBX_OP_COUNT ? -1 : c->op + 1; return UI_H_HANDLED;
    default: return UI_H_NONE;
    }
}

/* One row of ratios B/A per MBS and their geometric mean; op PDBX_OP_COUNT is the total. */
static void draw_ratio_row(int y, int op, const ui_matrix *ma, const ui_matrix *mb, int ncols, int opw, int cw)
{
    int is_total = op == PDBX_OP_COUNT;
    double ratios[UI_MAX_MBS];
    for (int i = 0; i < ma->n; i++) {
        int j = ui_matrix_find(mb, ma->mbs[i]);
        double a = is_total ? ma->total[i] : ma->v[op][i];
        double bv = j < 0 ? NAN : (is_total ? mb->total[j] : mb->v[op][j]);
        ratios[i] = (a > 0 && isfinite(bv)) ? bv / a : NAN;
    }
    ui_put(y, 1, opw, is_total ? UI_C_HEADER : UI_C_NORMAL, 1, "%s", is_total ? "total" : pdbx_op_name(op));
    for (int i = 0; i <= ncols; i++) {
        double r = i < ncols ? ratios[i] : ui_geomean(ratios, ma->n);
        char s[32];
        if (isfinite(r)) snprintf(s, sizeof(s), "%.2f%s", r, r < 0.995 ? "v" : r > 1.005 ? "^" : "=");
        else snprintf(s, sizeof(s), "N/A");
        ui_role role = !isfinite(r) ? UI_C_DIM : r < 0.995 ? UI_C_BETTER : r > 1.005 ? UI_C_WORSE : UI_C_NORMAL;
        int x = 1 + opw + i * cw;
        ui_put(y, x, i < ncols ? cw : 10, role, 0, "%*s", i < ncols ? cw - 1 : 9, s);
    }
}

static void compare_draw(ui_app *app, void *st, ui_rect b)
{
    cmp_state *c = st;
    const pdbx_run *ra = &c->a, *rb = c->same_run ? &c->a : &c->b;
    const char *names[PDBX_MAX_CONFIGS];
    char nb[PDBX_MAX_CONFIGS][48];
    for (int i = 0; i < c->npairs; i++) {
        int *p = c->pairs[i];
        if (c->same_run)
            snprintf(nb[i], sizeof(nb[i]), "TP%d PP%d DP%d vs TP%d PP%d DP%d", p[0], p[1], p[2], p[3], p[4], p[5]);
        else
            snprintf(nb[i], sizeof(nb[i]), "TP%d PP%d DP%d", p[0], p[1], p[2]);
        names[i] = nb[i];
    }
    ui_draw_tabs(b.y, 1, b.w - 2, names, c->npairs, c->tab);
    int *p = c->pairs[c->tab];
    ui_put(b.y + 1, 1, b.w - 2, UI_C_NORMAL, 1, "A: %s %s TP%d PP%d DP%d", ra->id, ra->model.name, p[0], p[1], p[2]);
    ui_put(b.y + 2, 1, b.w - 2, UI_C_NORMAL, 1, "B: %s %s TP%d PP%d DP%d", rb->id, rb->model.name, p[3], p[4], p[5]);
    ui_matrix ma, mb;
    ui_matrix_build(ra, p[0], p[1], p[2], c->stat, &ma);
    ui_matrix_build(rb, p[3], p[4], p[5], c->stat, &mb);
    ui_rect body = { b.y + 4, b.x, b.h - 4, b.w };
    if (c->view == VIEW_COST) {
        const ui_matrix *ms[2] = { &ma, &mb };
        const char *nm[2] = { "A", "B" };
        ui_draw_cost_chart(app, body, ms, nm, 2, c->op, c->log, c->op < 0 ? "A vs B, largest ops" : pdbx_op_name(c->op));
        return;
    }
    ui_put(b.y + 3, 1, b.w - 2, UI_C_INFO, 1, "ratio B/A of the %s (ms): %s < 1 B faster, %s > 1 B slower", pdbx_stat_name(c->stat),
           app->mono ? "bold" : "green", app->mono ? "underlined" : "red");
    const int opw = 17, cw = 8;
    int ncols = (b.w - opw - 12) / cw;
    if (ncols > ma.n) ncols = ma.n;
    int y = body.y;
    ui_put(y, 1, opw, UI_C_HEADER, 1, "op \\ MBS");
    for (int i = 0; i < ncols; i++)
        ui_put(y, 1 + opw + i * cw, cw, UI_C_HEADER, 1, "%*d", cw - 1, ma.mbs[i]);
    ui_put(y, 1 + opw + ncols * cw, 10, UI_C_HEADER, 1, "%9s", "geomean");
    y++;
    /* op rows scroll (Up/Down) above a total row that always shows: at 80x24 a TP>1 pair has
       more ops than rows, and the total is the ratio a reader wants first */
    int rows = b.y + b.h - 1 - y, present = 0, shown = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        present += ma.op_present[op] || mb.op_present[op];
    if (c->scroll > present - rows) c->scroll = present - rows;
    if (c->scroll < 0) c->scroll = 0;
    int skip = c->scroll;
    for (int op = 0; op < PDBX_OP_COUNT && shown < rows; op++) {
        if (!ma.op_present[op] && !mb.op_present[op]) continue;
        if (skip-- > 0) continue;
        draw_ratio_row(y++, op, &ma, &mb, ncols, opw, cw);
        shown++;
    }
    draw_ratio_row(y, PDBX_OP_COUNT, &ma, &mb, ncols, opw, cw);
    if (present > shown)
        ui_put(y, 1 + opw + (ncols + 1) * cw + 3, b.w - (opw + (ncols + 1) * cw + 5), UI_C_DIM, 0,
               "Up/Down: more ops");
}

const ui_screen_ops ui_screen_compare = { "compare", UI_SCR_COMPARE, 0, compare_open, compare_close, compare_draw,
                                          compare_key, NULL, NULL, NULL };
