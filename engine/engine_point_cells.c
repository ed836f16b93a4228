/* engine_point_cells.c: the op phase of an adaptive point: each cell repeated alone until
 * engine_adaptive.h's rule says it is done on every rank (engine_point.h,
 * engine_point_internal.h). */
#include "engine/engine_point_internal.h"

#include "engine/engine_adaptive.h"
#include "engine/engine_agree.h"
#include "engine/engine_noise.h"
#include "store/util/clock.h"

/* The ranks agree after a batch of executions of about this many seconds: their agreement (an
 * all-reduce, tens of microseconds) stays a small share of an op of microseconds. */
#define BATCH_S 0.005

/* One cell of the op phase: runs `exec` until the rule says the cell is done on every rank.
 * The ranks agree on whether to go on and on the batch (the collectives must match). */
typedef void (*cell_exec)(point_run *pr, int arg, int rep);

/* share: the fraction of one execution a sample of row holds (a fused leader's FLOP share;
 * else 1): batches are sized on whole executions. */
static void adaptive_cell(point_run *pr, int row, cell_exec exec, int arg, double share)
{
    const pdbx_spec *sp = &pr->e->spec;
    const pdbx_adaptive_rule rule = { sp->target_rel_ci, sp->min_reps, sp->max_reps, sp->max_seconds_per_op };
    const double t0 = pdbx_mono_s();
    int rep = 0;
    for (;;) {
        samples *sm = &pr->sm;
        long mine[2] = { 0, 0 }, all[2];
        pdbx_cell_state st = PDBX_CELL_MORE;
        if (!pr->failed && !sm->oom &&
            (st = pdbx_adaptive_state(&rule, sm->s[row], sm->n[row], pdbx_mono_s() - t0)) ==
                PDBX_CELL_MORE) {
            mine[0] = 1;
            mine[1] = pdbx_adaptive_batch(&rule, sm->n[row], pt_mean_of(sm, row) / share, BATCH_S);
        }
        MPI_Allreduce(mine, all, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
        if (!all[0]) {
            sm->stop[row] = (signed char)st;   /* this rank's reason (rank 0's is recorded) */
            return;
        }
        for (long b = 0; b < all[1]; b++)
            exec(pr, arg, rep++);
    }
}

/* Executions of the op phase: a compute op's pass (arg = op | pass << 8) on the layers that run
 * it in turn (a MoE model's dense layers run mlp_*, its MoE layers moe_*: pdbx_layer_for_rep);
 * the TP all-reduce; PP and DP. */
static void exec_op(point_run *pr, int arg, int rep)
{
    pdbx_op op = (pdbx_op)(arg & 0xff);
    pdbx_pass pass = (pdbx_pass)(arg >> 8);
    const pdbx_spec *sp = &pr->e->spec;
    pt_run_one(pr, op, pass, pdbx_op_is_per_layer(op) ? pdbx_layer_for_rep(&sp->model, sp->layers_profiled, op, rep)
                                                      : -1, 0, 0);
}

static void exec_comm(point_run *pr, int row, int rep)
{
    (void)rep;
    pt_step_comm(pr, row == PDBX_ROW_PP ? PDBX_GRID_PP : PDBX_GRID_DP, -1);
}

/* The op phase (adaptive): every cell the step phase left short of its target. Returns 0, or
 * 1 when cancelled. */
int pt_run_cells(point_run *pr)
{
    pdbx_engine *e = pr->e;
    const pdbx_spec *sp = &e->spec;
    for (int pass = 0; pr->compute && pass < PDBX_PASS_COUNT; pass++) {
        if (!(sp->passes & PDBX_PASS_BIT(pass)))
            continue;
        for (int op = 0; op < PDBX_OP_COUNT; op++) {
            if (!(pdbx_spec_ops(sp) & PDBX_OP_BIT(op)) || pr->sample_op[op] != (pdbx_op)op ||
                (pass == PDBX_PASS_BWD && !pdbx_op_has_bwd((pdbx_op)op)) ||
                (pr->fused_leader[op] != PDBX_OP_COUNT && pr->fused_leader[op] != (pdbx_op)op) ||
                (pdbx_op_is_comm((pdbx_op)op) && !pt_ep_alltoall((pdbx_op)op) &&
                 (!pdbx_op_is_tp_allreduce((pdbx_op)op) || pass != PDBX_PASS_FWD || pr->cg->tp < 2)) ||
                (pt_ep_alltoall((pdbx_op)op) && pr->cg->ep < 2))
                continue;
            if (pdbx_agree_cancel(e, pr->pt->index))
                return 1;
            adaptive_cell(pr, PDBX_ROW_OP(pass, op), exec_op, op | pass << 8,
                          pr->fused_leader[op] == (pdbx_op)op ? pr->fused_share[op] : 1);
            pdbx_noise_device_sample(&e->noise, e->be.compute, e->compute);
        }
    }
    static const int comm_rows[2] = { PDBX_ROW_PP, PDBX_ROW_DP };
    for (int i = 0; i < 2; i++) {
        if ((comm_rows[i] == PDBX_ROW_PP ? pr->cg->pp : pr->cg->dp) < 2)
            continue;
        if (pdbx_agree_cancel(e, pr->pt->index))
            return 1;
        adaptive_cell(pr, comm_rows[i], exec_comm, comm_rows[i], 1);
    }
    return 0;
}
