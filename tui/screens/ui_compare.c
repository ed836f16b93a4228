/* ui_compare.c: two runs (configs matched by TP/PP/DP/EP) or two configs of one run side by side.
 * Views (v): per op and MBS the A and B times in ms and the ratio B/A; the ratios alone; the
 * cost vs MBS of both overlaid. A ratio is marked better (v) or worse (^) only when the
 * difference exceeds the two cells' own noise (pdbx_stats_judge: Welch at 95%), else '~'
 * (same within noise) or '?' (a cell without std/count); the last column is the geometric
 * mean of the ratios over the MBS both measured. `p` picks the pass (fwd, bwd, both) when both
 * runs have backward cells; a run measured under load is named beside the verdicts. */
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/util/fmt.h"
#include "tui/ui_app.h"
#include "tui/ui_data.h"

typedef enum { VIEW_DETAIL = 0, VIEW_RATIO, VIEW_COST, VIEW_COUNT } view_kind;

typedef struct {
    pdbx_run a, b;           /* b unused when comparing two configs of one run */
    int have_a, have_b, same_run;
    int pairs[PDBX_MAX_CONFIGS][2 * PDBX_CFG_DIMS];   /* config of A (tp,pp,dp,ep), config of B */
    int npairs;
    int tab;
    pdbx_stat_kind stat;
    int log;
    int op;                  /* -1: the total */
    view_kind view;          /* DETAIL (A, B, B/A), RATIO (B/A) or COST (overlaid chart) */
    int scroll;              /* op rows scrolled off the top of the table */
    int legend_page;         /* page of the chart legend (L) */
    pdbx_pass_sel pass;
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
    int ca[PDBX_MAX_CONFIGS][PDBX_CFG_DIMS], cb[PDBX_MAX_CONFIGS][PDBX_CFG_DIMS];
    size_t na = pdbx_run_configs(&c->a, ca, PDBX_MAX_CONFIGS);
    size_t nb = pdbx_run_configs(&c->b, cb, PDBX_MAX_CONFIGS);
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++)
            if (memcmp(ca[i], cb[j], sizeof(ca[i])) == 0 && c->npairs < PDBX_MAX_CONFIGS) {
                memcpy(c->pairs[c->npairs], ca[i], sizeof(ca[i]));
                memcpy(c->pairs[c->npairs] + PDBX_CFG_DIMS, cb[j], sizeof(cb[j]));
                c->npairs++;
            }
    if (c->npairs == 0 && na > 0 && nb > 0) {
        /* no config in common: compare the first of each, and say so */
        memcpy(c->pairs[0], ca[0], sizeof(ca[0]));
        memcpy(c->pairs[0] + PDBX_CFG_DIMS, cb[0], sizeof(cb[0]));
        c->npairs = 1;
        ui_app_message(app, 0, "no TP/PP/DP/EP config in common: comparing the first config of each");
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

static int open_configs(ui_app *app, cmp_state *c, const pdbx_run *run, const int cfg_a[PDBX_CFG_DIMS],
                        const int cfg_b[PDBX_CFG_DIMS])
{
    char err[256];
    /* a private copy of the run, so the run view can be closed independently */
    if (pdbx_run_load(app->store, run->id, &c->a, err, sizeof(err)) != 0) {
        ui_app_message(app, 1, "%s", err);
        return -1;
    }
    c->have_a = 1;
    c->same_run = 1;
    memcpy(c->pairs[0], cfg_a, PDBX_CFG_DIMS * sizeof(int));
    memcpy(c->pairs[0] + PDBX_CFG_DIMS, cfg_b, PDBX_CFG_DIMS * sizeof(int));
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
    case UI_ACT_VIEW: c->view = (c->view + 1) % VIEW_COUNT; c->legend_page = 0; return UI_H_HANDLED;
    case UI_ACT_LEGEND: c->legend_page++; return UI_H_HANDLED;
    case UI_ACT_STAT: c->stat = (c->stat + 1) % PDBX_STAT_COUNT_KINDS; return UI_H_HANDLED;
    case UI_ACT_LOG: c->log = !c->log; return UI_H_HANDLED;
    case UI_ACT_PASS: {
        pdbx_pass_sel next = (pdbx_pass_sel)((c->pass + 1) % PDBX_PASS_SEL_COUNT);
        const pdbx_run *rb = c->same_run ? &c->a : &c->b;
        char err[256];
        if (pdbx_pass_sel_check(&c->a, next, "pass", err, sizeof(err)) != 0
            || pdbx_pass_sel_check(rb, next, "pass", err, sizeof(err)) != 0) {
            ui_app_message(app, 1, "pass: '%s' needs backward cells in both runs; %s measured forward only "
                           "(allowed: fwd)", pdbx_pass_sel_name(next), pdbx_run_has_bwd(&c->a) ? "B" : "A");
            return UI_H_HANDLED;
        }
        c->pass = next;
        ui_app_message(app, 0, "pass: %s%s", pdbx_pass_sel_name(next),
                       next == PDBX_PASS_SEL_BOTH ? " (fwd + bwd per op)" : "");
        return UI_H_HANDLED;
    }
    case UI_ACT_UP: if (c->scroll > 0) c->scroll--; return UI_H_HANDLED;
    case UI_ACT_DOWN: c->scroll++; return UI_H_HANDLED;   /* clamped when drawn */
    case UI_ACT_HOME: c->scroll = 0; return UI_H_HANDLED;
    case UI_ACT_END: c->scroll = PDBX_OP_COUNT; return UI_H_HANDLED;
    case UI_ACT_OP:
        c->op = c->op + 1 >= PDBX_OP_COUNT ? -1 : c->op + 1;
        c->legend_page = 0;
        return UI_H_HANDLED;
    default: return UI_H_NONE;
    }
}

/* The cells of one op row (PDBX_OP_COUNT: the total) at A's MBS: A and B in ms, B/A and the
 * noise verdict on B against A. */
typedef struct {
    double a[UI_MAX_MBS], b[UI_MAX_MBS], ratio[UI_MAX_MBS];
    pdbx_noise_verdict verdict[UI_MAX_MBS];
    double geomean;
    pdbx_noise_verdict overall;   /* all judged cells agree on better/worse, else SAME; none: UNKNOWN */
} cmp_row;

static void row_cells(int op, const ui_matrix *ma, const ui_matrix *mb, pdbx_stat_kind stat, cmp_row *r)
{
    int is_total = op == PDBX_OP_COUNT;
    int better = 0, worse = 0, judged = 0;
    for (int i = 0; i < ma->n; i++) {
        int j = ui_matrix_find(mb, ma->mbs[i]);
        const pdbx_stats *sa = is_total ? &ma->total_st[i] : &ma->st[op][i];
        const pdbx_stats *sb = j < 0 ? NULL : is_total ? &mb->total_st[j] : &mb->st[op][j];
        r->a[i] = is_total ? ma->total[i] : ma->v[op][i];
        r->b[i] = j < 0 ? NAN : (is_total ? mb->total[j] : mb->v[op][j]);
        r->ratio[i] = (r->a[i] > 0 && isfinite(r->b[i])) ? r->b[i] / r->a[i] : NAN;
        r->verdict[i] = sb && isfinite(r->ratio[i]) ? pdbx_stats_judge(sa, sb, stat, NULL) : PDBX_NOISE_UNKNOWN;
        if (r->verdict[i] != PDBX_NOISE_UNKNOWN) judged++;
        better += r->verdict[i] == PDBX_NOISE_BETTER;
        worse += r->verdict[i] == PDBX_NOISE_WORSE;
    }
    r->geomean = ui_geomean(r->ratio, ma->n);
    r->overall = !judged ? PDBX_NOISE_UNKNOWN : better == judged ? PDBX_NOISE_BETTER
               : worse == judged ? PDBX_NOISE_WORSE : PDBX_NOISE_SAME;
}

/* "1.50^": the ratio and its mark (v better, ^ worse, ~ same within noise, ? no noise data). */
static ui_role ratio_text(double r, pdbx_noise_verdict v, char *s, size_t len)
{
    if (!isfinite(r)) {
        snprintf(s, len, "N/A");
        return UI_C_DIM;
    }
    snprintf(s, len, "%.2f%c", r, pdbx_noise_mark(v));
    return v == PDBX_NOISE_BETTER ? UI_C_BETTER : v == PDBX_NOISE_WORSE ? UI_C_WORSE
         : v == PDBX_NOISE_UNKNOWN ? UI_C_DIM : UI_C_NORMAL;
}

typedef struct {
    int opw, subw, cw, ncols, gx;   /* op name, sub-label, column widths, MBS columns, geomean x */
    int wide;                       /* detail: A, B and B/A side by side per MBS, one row per op */
    int rows_per_op;                /* 1 (ratio view, wide detail) or 3 (narrow detail) */
    view_kind view;
} cmp_layout;

static void layout_for(view_kind view, int w, int nmbs, cmp_layout *L)
{
    memset(L, 0, sizeof(*L));
    L->view = view;
    L->opw = 17;
    L->cw = 8;
    L->rows_per_op = 1;
    if (view == VIEW_DETAIL && 1 + L->opw + nmbs * 3 * L->cw + 10 <= w - 1) {
        L->wide = 1;
        L->ncols = nmbs;
        L->gx = 1 + L->opw + nmbs * 3 * L->cw;
        return;
    }
    if (view == VIEW_DETAIL) {
        L->subw = 5;
        L->rows_per_op = 3;
    }
    L->ncols = (w - L->opw - L->subw - 12) / L->cw;
    if (L->ncols > nmbs) L->ncols = nmbs;
    if (L->ncols < 0) L->ncols = 0;
    L->gx = 1 + L->opw + L->subw + L->ncols * L->cw;
}

static void put_ms(int y, int x, int w, double v)
{
    char s[32];
    ui_format_value(v, s, sizeof(s));
    ui_put(y, x, w, isnan(v) ? UI_C_DIM : UI_C_NORMAL, 0, "%*s", w - 1, s);
}

static void put_ratio(int y, int x, int w, double r, pdbx_noise_verdict v)
{
    char s[32];
    ui_role role = ratio_text(r, v, s, sizeof(s));
    ui_put(y, x, w, role, 0, "%*s", w - 1, s);
}

/* The header row(s) over the op rows; returns the first op row. */
static int draw_header(int y, const cmp_layout *L, const ui_matrix *ma)
{
    ui_put(y, 1, L->opw + L->subw, UI_C_HEADER, 1, "op \\ MBS");
    if (L->wide) {
        for (int i = 0; i < L->ncols; i++) {
            int x = 1 + L->opw + i * 3 * L->cw;
            ui_put(y, x, 3 * L->cw, UI_C_HEADER, 1, "%*d", 3 * L->cw - 1, ma->mbs[i]);
            ui_put(y + 1, x, 3 * L->cw, UI_C_HEADER, 1, "%*s%*s%*s", L->cw - 1, "A ms", L->cw, "B ms",
                   L->cw, "B/A");
        }
        ui_put(y, L->gx, 10, UI_C_HEADER, 1, "%9s", "geomean");
        ui_put(y + 1, 1, L->opw, UI_C_HEADER, 1, " ");
        ui_put(y + 1, L->gx, 10, UI_C_HEADER, 1, "%9s", "B/A");
        return y + 2;
    }
    for (int i = 0; i < L->ncols; i++)
        ui_put(y, 1 + L->opw + L->subw + i * L->cw, L->cw, UI_C_HEADER, 1, "%*d", L->cw - 1, ma->mbs[i]);
    ui_put(y, L->gx, 10, UI_C_HEADER, 1, "%9s", "geomean");
    return y + 1;
}

/* One op (or the total) in L's rows from y. */
static void draw_op(int y, int op, const cmp_row *r, const cmp_layout *L)
{
    int is_total = op == PDBX_OP_COUNT;
    ui_put(y, 1, L->opw, is_total ? UI_C_HEADER : UI_C_NORMAL, 1, "%s", is_total ? "total" : pdbx_op_name(op));
    int x0 = 1 + L->opw + L->subw;
    if (L->view == VIEW_RATIO) {
        for (int i = 0; i < L->ncols; i++)
            put_ratio(y, x0 + i * L->cw, L->cw, r->ratio[i], r->verdict[i]);
    } else if (L->wide) {
        for (int i = 0; i < L->ncols; i++) {
            int x = x0 + i * 3 * L->cw;
            put_ms(y, x, L->cw, r->a[i]);
            put_ms(y, x + L->cw, L->cw, r->b[i]);
            put_ratio(y, x + 2 * L->cw, L->cw, r->ratio[i], r->verdict[i]);
        }
    } else {
        ui_put(y, 1 + L->opw, L->subw, UI_C_DIM, 1, "A ms");
        ui_put(y + 1, 1, L->opw + L->subw, UI_C_DIM, 1, "%*s", L->opw + 4, "B ms");
        ui_put(y + 2, 1, L->opw + L->subw, UI_C_DIM, 1, "%*s", L->opw + 3, "B/A");
        for (int i = 0; i < L->ncols; i++) {
            put_ms(y, x0 + i * L->cw, L->cw, r->a[i]);
            put_ms(y + 1, x0 + i * L->cw, L->cw, r->b[i]);
            put_ratio(y + 2, x0 + i * L->cw, L->cw, r->ratio[i], r->verdict[i]);
        }
        y += 2;
    }
    put_ratio(y, L->gx, 10, r->geomean, r->overall);
}

/* The tabs (one per pair of configs, labelled with EP where > 1) and the A and B lines. */
static void draw_heading(const cmp_state *c, const pdbx_run *ra, const pdbx_run *rb, ui_rect b)
{
    const char *names[PDBX_MAX_CONFIGS];
    char nb[PDBX_MAX_CONFIGS][52];
    char la_s[PDBX_MAX_CONFIGS][24], lb_s[PDBX_MAX_CONFIGS][24];   /* each pair's A and B labels */
    for (int i = 0; i < c->npairs; i++) {
        const int *p = c->pairs[i], *q = p + PDBX_CFG_DIMS;
        pdbx_fmt_config(PDBX_CFG_LABEL_TAB, p[0], p[1], p[2], p[3], la_s[i], sizeof la_s[i]);
        pdbx_fmt_config(PDBX_CFG_LABEL_TAB, q[0], q[1], q[2], q[3], lb_s[i], sizeof lb_s[i]);
        if (c->same_run)
            snprintf(nb[i], sizeof(nb[i]), "%.23s vs %.23s", la_s[i], lb_s[i]);
        else
            snprintf(nb[i], sizeof(nb[i]), "%.23s", la_s[i]);
        names[i] = nb[i];
    }
    ui_draw_tabs(b.y, 1, b.w - 2, names, c->npairs, c->tab);
    pdbx_run_noise_summary la, lb;
    pdbx_run_noise_of(ra, &la);
    pdbx_run_noise_of(rb, &lb);
    ui_put(b.y + 1, 1, b.w - 2, UI_C_NORMAL, 1, "A: %s %s %s%s", ra->id, ra->model.name, la_s[c->tab],
           la.busy ? "  (under load)" : "");
    ui_put(b.y + 2, 1, b.w - 2, UI_C_NORMAL, 1, "B: %s %s %s%s", rb->id, rb->model.name, lb_s[c->tab],
           lb.busy ? "  (under load)" : "");
}

/* The line over the table: what it shows, the statistic and pass, the marks, and which run was
 * measured under load (a run measured under load makes its verdicts less sure). */
static void draw_caption(const cmp_state *c, const pdbx_run *ra, const pdbx_run *rb, ui_rect b)
{
    char stat[48];
    snprintf(stat, sizeof(stat), "%s%s%s", pdbx_stat_name(c->stat), c->pass == PDBX_PASS_SEL_FWD ? "" : ", pass ",
             c->pass == PDBX_PASS_SEL_FWD ? "" : pdbx_pass_sel_name(c->pass));
    const char *what = c->view == VIEW_DETAIL ? "A and B (ms), B/A" : "B/A";
    pdbx_run_noise_summary na, nbs;
    pdbx_run_noise_of(ra, &na);
    pdbx_run_noise_of(rb, &nbs);
    char load[96] = "";
    if (na.busy || (nbs.busy && !c->same_run))
        snprintf(load, sizeof(load), "; %s under load (%d of %d points%s)",
                 c->same_run ? "run measured" : na.busy && nbs.busy ? "A and B measured"
                 : na.busy ? "A measured" : "B measured",
                 na.busy ? na.busy : nbs.busy, na.busy ? na.points : nbs.points,
                 na.busy && nbs.busy && !c->same_run ? " of A" : "");
    if (b.w >= 110)
        ui_put(b.y + 3, 1, b.w - 2, UI_C_INFO, 1, "%s of the %s: v B faster, ^ B slower (beyond both cells' noise: "
               "Welch, 95%%), ~ same within noise, ? no std%s", what, stat, load);
    else if (load[0])       /* the load is the news: the marks are explained at 110 columns and in help */
        ui_put(b.y + 3, 1, b.w - 2, UI_C_INFO, 1, "%s of the %s: v^~?%s", what, stat, load);
    else
        ui_put(b.y + 3, 1, b.w - 2, UI_C_INFO, 1, "%s of the %s: v faster ^ slower ~ within noise ? no std",
               what, stat);
}

/* The op rows (scrolled) and the total of the detail or ratio view, from body.y down. */
static void draw_table(cmp_state *c, ui_rect b, ui_rect body, const ui_matrix *ma, const ui_matrix *mb)
{
    cmp_layout L;
    layout_for(c->view, b.w, ma->n, &L);
    int y = draw_header(body.y, &L, ma);
    /* op rows scroll (Up/Down) above a total that always shows: at 80x24 a TP>1 pair has more
       ops than rows, and the total is the ratio a reader wants first */
    int fit = (b.y + b.h - y) / L.rows_per_op - 1, present = 0, shown = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        present += ma->op_present[op] || mb->op_present[op];
    if (fit < 0) fit = 0;
    if (c->scroll > present - fit) c->scroll = present - fit;
    if (c->scroll < 0) c->scroll = 0;
    int skip = c->scroll;
    cmp_row r;
    for (int op = 0; op < PDBX_OP_COUNT && shown < fit; op++) {
        if (!ma->op_present[op] && !mb->op_present[op]) continue;
        if (skip-- > 0) continue;
        row_cells(op, ma, mb, c->stat, &r);
        draw_op(y, op, &r, &L);
        y += L.rows_per_op;
        shown++;
    }
    row_cells(PDBX_OP_COUNT, ma, mb, c->stat, &r);
    draw_op(y, PDBX_OP_COUNT, &r, &L);
    if (present > shown) {
        if (L.rows_per_op == 3)     /* under "total", in its otherwise empty name column */
            ui_put(y + 1, 1, L.opw, UI_C_DIM, 0, "(Up/Down: more)");
        else
            ui_put(y, L.gx + 12, b.w - (L.gx + 13), UI_C_DIM, 0, "Up/Down: more ops");
    }
}

static void compare_draw(ui_app *app, void *st, ui_rect b)
{
    cmp_state *c = st;
    const pdbx_run *ra = &c->a, *rb = c->same_run ? &c->a : &c->b;
    draw_heading(c, ra, rb, b);
    const int *p = c->pairs[c->tab];
    /* two matrices of ~40 KB each: on the heap, not the stack */
    ui_matrix *mm = malloc(2 * sizeof(ui_matrix));
    if (!mm) {
        ui_put(b.y + 4, 1, b.w - 2, UI_C_ERROR, 0, "out of memory drawing the comparison");
        return;
    }
    ui_matrix *ma = &mm[0], *mb = &mm[1];
    ui_matrix_build_pass(ra, p, c->stat, c->pass, ma);
    ui_matrix_build_pass(rb, p + PDBX_CFG_DIMS, c->stat, c->pass, mb);
    ui_rect body = { b.y + 4, b.x, b.h - 4, b.w };
    if (c->view == VIEW_COST) {
        const ui_matrix *ms[2] = { ma, mb };
        const char *nm[2] = { "A", "B" };
        ui_draw_cost_chart(app, body, ms, nm, 2, c->op, c->log, c->op < 0 ? "A vs B, largest ops" : pdbx_op_name(c->op),
                           &c->legend_page);
    } else {
        draw_caption(c, ra, rb, b);
        draw_table(c, b, body, ma, mb);
    }
    free(mm);
}

const ui_screen_ops ui_screen_compare = { "compare", UI_SCR_COMPARE, 0, compare_open, compare_close, compare_draw,
                                          compare_key, NULL, NULL, NULL };
