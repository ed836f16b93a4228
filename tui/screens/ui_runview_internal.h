/* ui_runview_internal.h: the run view's state and views, shared by its files only
 * (tui/screens/ui_runview*.c; other screens reach it through its id, screens.h).
 *
 *   ui_runview.c          open, close, keys, the tabs and info lines, the view switch
 *   ui_runview_tables.c   the config's table (ms or shares), op shares, roofline
 *   ui_runview_details.c  memory per rank, each point's cells, the collectives tab
 * Every view draws into its rect b from row b.y and never past b.y + b.h.
 */
#ifndef PDBX_UI_RUNVIEW_INTERNAL_H
#define PDBX_UI_RUNVIEW_INTERNAL_H

#include "engine/plan/plan.h"
#include "store/profiledb.h"
#include "tui/ui_app.h"
#include "tui/ui_data.h"

typedef enum {
    VIEW_TABLE = 0, VIEW_SHARE_TABLE, VIEW_SHARES, VIEW_COST, VIEW_ROOFLINE, VIEW_MEMORY, VIEW_CELLS,
    VIEW_COUNT
} view_kind;

typedef struct {
    pdbx_run run;
    int configs[PDBX_MAX_CONFIGS][PDBX_CFG_DIMS];   /* pdbx_run_configs: tp, pp, dp, ep */
    int nconfigs;
    int tab;                 /* 0..nconfigs-1 configs, nconfigs = collectives */
    view_kind view;
    pdbx_stat_kind stat;
    int log;
    int op;                  /* -1 = all ops in the cost chart */
    int marked_tab;          /* -1 none */
    int scroll;
    int legend_page;         /* page of a chart legend too long for its rows (L) */
    int coll_chart_only;     /* collectives tab: v shows the busbw chart alone */
    pdbx_spec spec;          /* the run's spec (GPU peaks for the roofline) */
    int have_spec;
    pdbx_pass_sel pass;      /* the cells every view shows (p) */
    int has_bwd;             /* the run measured backward cells: the pass and bwd/fwd show */
} rv_state;

/* ui_runview_tables.c, over the matrix m of the current config. share: the table as shares
 * of the measured layer and total. draw_table clamps v->scroll to the op rows. */
void rv_draw_table(rv_state *v, ui_rect b, const ui_matrix *m, int share);
void rv_draw_shares(ui_app *app, rv_state *v, ui_rect b, const ui_matrix *m);
void rv_draw_roofline(ui_app *app, rv_state *v, ui_rect b, const ui_matrix *m);

/* ui_runview_details.c: of config cfg (TP, PP, DP, EP); the collectives tab. */
void rv_draw_memory(rv_state *v, ui_rect b, const int cfg[PDBX_CFG_DIMS]);
void rv_draw_cells(rv_state *v, ui_rect b, const int cfg[PDBX_CFG_DIMS]);
void rv_draw_collectives(ui_app *app, rv_state *v, ui_rect b);

#endif
