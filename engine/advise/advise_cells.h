/* advise_cells.h: a TP degree's compute cells at any micro-batch size, from a run's table.
 *
 * Contract:
 *  - A compute op's cell depends on TP and MBS, not on PP or DP (docs/events.md,
 *    "reused_from"): the cells of TP t are pooled over the run's configs with tp == t, one
 *    point per MBS (the first in plan order whose status is ok and whose every compute op of
 *    the config is measured). pdbx_adv_cells_build_for prefers, per MBS, the points of the
 *    config (tp, pp, dp) itself, then those of a config with the same rank count: on a CPU
 *    host (or any shared node) a compute cell also depends on how many ranks shared the host
 *    while it was measured (4 ranks on 2 cores double every cell of 2), not only on TP and MBS.
 *  - Ops are iterated generically over store/ops.h (never named): a per-layer op that is not a
 *    TP all-reduce (pdbx_op_is_comm) is layer compute; a once-per-step op before the first
 *    per-layer op in execution order runs on the first stage (embed), one after it on the last
 *    (final_norm, lm_head). Each part is the sum of its ops' cells (the chosen statistic).
 *  - bwd: the measured backward cells when every usable point of the TP degree has them for
 *    every compute op; otherwise the degree's bwd is 2 x fwd (FASOP's x3 rule) and
 *    bwd_measured is 0.
 *  - At an MBS the run did not measure: linear interpolation between the two nearest measured
 *    MBS, linear extrapolation from the two largest (or two smallest) outside them, scaled
 *    in proportion to the MBS when only one was measured; never below 0. The note says which.
 *  - Pure: borrows the run; 0, or -1 out of memory.
 */
#ifndef PDBX_ADVISE_CELLS_H
#define PDBX_ADVISE_CELLS_H

#include <stddef.h>

#include "store/profiledb.h"

/* A sample's parts: FIRST, LAYER and LAST are pdbx_adv_op_part's; a per-layer op that only one
 * kind of layer runs (pdbx_layer_has_op) is kept apart from LAYER, so that a model with dense
 * first layers and MoE ones (DeepSeek) counts each where it runs instead of one layer running
 * both: DENSE the dense MLP (mlp_gate/up/act_fn/down), MOE the moe_* ops, A2A the EP
 * all-to-alls (ep_dispatch + ep_combine, EP > 1 only). One layer of a kind is LAYER + its part.
 * OPT the optimizer op's cell (one layer's parameters, store/ops.h; fwd only, bwd 0): not part
 * of a stage's passes, advise scales it to the stage's parameters. LOSS the loss op's cells (the
 * last stage's, after lm_head; kept apart so that a row can say what it costs). */
enum { PDBX_ADV_FIRST = 0, PDBX_ADV_LAYER, PDBX_ADV_LAST, PDBX_ADV_DENSE, PDBX_ADV_MOE, PDBX_ADV_A2A,
       PDBX_ADV_OPT, PDBX_ADV_LOSS, PDBX_ADV_NPARTS };

typedef struct {
    int mbs;
    double fwd[PDBX_ADV_NPARTS];   /* ms: first-stage ops, one layer's compute, last-stage ops... */
    double bwd[PDBX_ADV_NPARTS];   /* measured, or 2 x fwd (see bwd_measured of the set) */
    double core_fwd;               /* the attention core's forward alone (within LAYER): what
                                    * selective recomputation runs again */
    int tp, pp, dp, ep;            /* the config the point belongs to */
} pdbx_adv_sample;

typedef struct {
    int tp, ep;
    int bwd_measured;
    int comm_ops_per_layer;        /* the layer's TP all-reduces (store/ops.h: 2) */
    size_t n;
    pdbx_adv_sample *s;            /* MBS ascending (owned) */
} pdbx_adv_tp_cells;

/* Which part op belongs to: PDBX_ADV_FIRST/LAYER/LAST (OPT for the optimizer, LOSS for the
 * loss), or -1 for a TP all-reduce op. */
int pdbx_adv_op_part(pdbx_op op);
/* The compute cells of TP tp at EP 1 in run (n == 0 when the run has none). 0, or -1 out of
 * memory. */
int pdbx_adv_cells_build(const pdbx_run *run, int tp, pdbx_stat_kind stat, pdbx_adv_tp_cells *out);
/* The same at EP ep (the configs measured with that ep only: an expert GEMM's cell depends on
 * the experts a rank holds and the rows it receives), preferring the points of config (tp, pp,
 * dp), then of its rank count (pp, dp 0: plan order only). */
int pdbx_adv_cells_build_for(const pdbx_run *run, int tp, int pp, int dp, int ep, pdbx_stat_kind stat,
                             pdbx_adv_tp_cells *out);
void pdbx_adv_cells_free(pdbx_adv_tp_cells *c);

typedef enum { PDBX_ADV_EXACT = 0, PDBX_ADV_INTERPOLATED, PDBX_ADV_EXTRAPOLATED, PDBX_ADV_NONE } pdbx_adv_how;
/* The cells at mbs into *out (mbs set). Returns how they were obtained; for anything but
 * EXACT, note receives "tp 2 mbs 3: op cells interpolated between mbs 2 and 4" (NONE: "tp 2:
 * no measured point"). */
pdbx_adv_how pdbx_adv_cells_at(const pdbx_adv_tp_cells *c, int mbs, pdbx_adv_sample *out,
                               char *note, size_t len);

#endif
