/* engine_point_steps.c: the step phase of a point: whole steps, forward, backward and the
 * step's PP/DP collectives, warm-up steps dropped (engine_point.h, engine_point_internal.h). */
#include "engine/engine_point_internal.h"

#include "engine/engine_adaptive.h"
#include "engine/engine_agree.h"
#include "engine/engine_noise.h"
#include "store/util/clock.h"

/* One layer's ops in forward order: the per-layer ops of ops.h, whose enum is that order (a
 * new op joins the layer span, the backward and the trace by being added there). */
static pdbx_op layer_ops[PDBX_OP_COUNT];
static size_t NLAYER_OPS;

void pt_layer_ops_init(void)
{
    if (NLAYER_OPS)
        return;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        if (pdbx_op_is_per_layer((pdbx_op)op))
            layer_ops[NLAYER_OPS++] = (pdbx_op)op;
}

/* One step's forward: embed, every profiled layer, final_norm, lm_head, with the layer and
 * step spans measured around them (the sums of profiledb.h's layer and total cells), then the
 * loss (a training sweep's; outside the span: the model's forward ends with the logits).
 * Returns the step's time in ms (-1: not measured). */
static double run_forward(point_run *pr, double step0)
{
    const pdbx_spec *sp = &pr->e->spec;
    double ms = 0, total = -1;
    pt_span(pr, PDBX_SPAN_STEP, 0, &ms);
    pt_run_one(pr, PDBX_OP_EMBED, PDBX_PASS_FWD, -1, step0, 1);
    for (int l = 0; l < sp->layers_profiled; l++) {
        pt_span(pr, PDBX_SPAN_LAYER, 0, &ms);
        for (size_t i = 0; i < NLAYER_OPS; i++)   /* the ops of the layer's kind (dense or MoE) */
            if (pdbx_layer_has_op(&sp->model, sp->layers_profiled, l, layer_ops[i]))
                pt_run_one(pr, layer_ops[i], PDBX_PASS_FWD, l, step0, 1);
        pt_span(pr, PDBX_SPAN_LAYER, 1, &ms);
        if (ms >= 0)
            pt_push(&pr->sm, PDBX_ROW_LAYER, ms);
    }
    pt_run_one(pr, PDBX_OP_FINAL_NORM, PDBX_PASS_FWD, -1, step0, 1);
    pt_run_one(pr, PDBX_OP_LM_HEAD, PDBX_PASS_FWD, -1, step0, 1);
    pt_span(pr, PDBX_SPAN_STEP, 1, &total);
    if (total >= 0)
        pt_push(&pr->sm, PDBX_ROW_TOTAL, total);
    pt_run_one(pr, PDBX_OP_LOSS, PDBX_PASS_FWD, -1, step0, 0);
    return total;
}

/* One step's backward: each op's bwd in reverse order of the forward (the TP all-reduces have
 * none here; the EP all-to-alls run again, combine's before dispatch's). */
static void run_backward(point_run *pr)
{
    const pdbx_spec *sp = &pr->e->spec;
    pt_run_one(pr, PDBX_OP_LOSS, PDBX_PASS_BWD, -1, 0, 0);
    pt_run_one(pr, PDBX_OP_LM_HEAD, PDBX_PASS_BWD, -1, 0, 0);
    pt_run_one(pr, PDBX_OP_FINAL_NORM, PDBX_PASS_BWD, -1, 0, 0);
    for (int l = sp->layers_profiled - 1; l >= 0; l--)
        for (size_t i = NLAYER_OPS; i-- > 0;)
            if ((!pdbx_op_is_comm(layer_ops[i]) || pt_ep_alltoall(layer_ops[i])) &&
                pdbx_layer_has_op(&sp->model, sp->layers_profiled, l, layer_ops[i]))
                pt_run_one(pr, layer_ops[i], PDBX_PASS_BWD, l, 0, 0);
    pt_run_one(pr, PDBX_OP_EMBED, PDBX_PASS_BWD, -1, 0, 0);
}

static void pp_dp_comm(point_run *pr, double step0)
{
    if (pr->cg->pp > 1)
        pt_step_comm(pr, PDBX_GRID_PP, step0);
    if (pr->cg->dp > 1)
        pt_step_comm(pr, PDBX_GRID_DP, step0);
}

static int has_bwd(const point_run *pr)
{
    return (pr->e->spec.passes & PDBX_PASS_BIT(PDBX_PASS_BWD)) != 0;
}

/* Whether every rank keeps the step it just ran (a warm-up step is dropped by all). */
static int agree_keep(int keep)
{
    int all = keep;
    MPI_Allreduce(&keep, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* The step phase (engine_point.h). Returns 0, or 1 when cancelled. */
int pt_run_steps(point_run *pr)
{
    pdbx_engine *e = pr->e;
    const pdbx_spec *sp = &e->spec;
    const int adaptive = sp->repetition == PDBX_REP_ADAPTIVE;
    const int max_warm = adaptive ? (sp->warmup > 1 ? sp->warmup : 1) : sp->warmup;
    int kept = 0, warm = 0;
    double prev = -1;
    while (kept < sp->steps) {
        if (pdbx_agree_cancel(e, pr->pt->index))
            return 1;
        double total = -1, step0 = pdbx_mono_s() * 1e3;
        pr->sm.ntrace = 0;        /* the trace keeps the latest step */
        if (pr->compute) {
            total = run_forward(pr, step0);
            if (has_bwd(pr))
                run_backward(pr);
        }
        pp_dp_comm(pr, step0);
        if (pr->compute && has_bwd(pr))   /* after the gradients' reduction, as a step runs it */
            pt_run_one(pr, PDBX_OP_OPTIMIZER, PDBX_PASS_FWD, -1, 0, 0);
        pdbx_noise_device_sample(&e->noise, e->be.compute, e->compute);
        int keep = warm >= max_warm || (adaptive && warm > 0 && pdbx_adaptive_stable(prev, total));
        keep = agree_keep(keep);
        pt_steps_settle(&pr->sm, keep);
        kept += keep;
        warm += !keep;
        prev = total;
    }
    return 0;
}
