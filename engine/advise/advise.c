/* advise.c: the advise cost model (advise.h, docs/advise.md): enumeration of the
 * configurations, one configuration's estimate, ranking and the Pareto front. The cells come
 * from advise_cells.c (compute, any MBS) and advise_comm.c (collectives, any size). */
#include "engine/advise/advise.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/advise/advise_cells.h"
#include "engine/advise/advise_comm.h"
#include "engine/advise/advise_internal.h"
#include "engine/plan/plan.h"
#include "engine/plan/plan_comm.h"
#include "store/runtable.h"
#include "store/util/fmt.h"

#define ADV_MAX_GPUS PDBX_RUN_MAX_RANKS
#define ADV_MAX_GBS (1 << 24)
#define ADV_MAX_MBS 4096

void pdbx_advise_query_defaults(pdbx_advise_query *q)
{
    memset(q, 0, sizeof *q);
    q->stat = PDBX_STAT_MEDIAN;
}

int adv_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ---- notes: every estimate once, and refusals counted by reason ------------------------- */

adv_note *adv_notes_find_or_add(adv_notes *ns, const char *text)
{
    if (!ns)
        return NULL;
    for (size_t i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i].text, text) == 0)
            return &ns->v[i];
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 16;
        adv_note *v = realloc(ns->v, sizeof *v * cap);
        if (!v) {
            ns->oom = 1;
            return NULL;
        }
        ns->v = v, ns->cap = cap;
    }
    adv_note *n = &ns->v[ns->n++];
    snprintf(n->text, sizeof n->text, "%s", text);
    n->count = -1;
    return n;
}

/* ---- the resolved query and the per-TP cells ------------------------------------------- */

void adv_ctx_free(adv_ctx *c)
{
    for (size_t i = 0; i < c->ncells; i++)
        pdbx_adv_cells_free(&c->cells[i]);
    free(c->cells);
    free(c->cells_key);
    memset(c, 0, sizeof *c);
}

static int largest_measured_mbs(const pdbx_run *run)
{
    int m = 0;
    for (size_t i = 0; i < run->npoints; i++)
        if (run->points[i].status == PDBX_POINT_OK && run->points[i].mbs > m)
            m = run->points[i].mbs;
    return m;
}

/* The distinct EP degrees of the run's points, 1 always first (a run without EP points: 1). */
static void ctx_eps(adv_ctx *c)
{
    c->eps[0] = 1, c->neps = 1;
    for (size_t i = 0; i < c->run->npoints; i++) {
        int ep = c->run->points[i].ep, seen = 0;
        for (int k = 0; k < c->neps; k++)
            seen |= c->eps[k] == ep;
        if (ep > 1 && !seen && c->neps < (int)(sizeof c->eps / sizeof c->eps[0]))
            c->eps[c->neps++] = ep;
    }
}

/* The layouts' sets resolved: 0 is the spec's own; bits outside the layouts refused. */
static int ctx_layouts(adv_ctx *c, char *err, size_t errlen)
{
    const unsigned rall = PDBX_ADV_RECOMPUTE_BIT(PDBX_RECOMPUTE_NONE) | PDBX_ADV_RECOMPUTE_BIT(PDBX_RECOMPUTE_FULL) |
                          PDBX_ADV_RECOMPUTE_BIT(PDBX_RECOMPUTE_SELECTIVE);
    const unsigned zall = PDBX_ADV_ZERO1_BIT(0) | PDBX_ADV_ZERO1_BIT(1);
    if (c->q.recompute_set & ~rall)
        return adv_fail(err, errlen, "recompute: set 0x%x has no such layout (allowed: none, full, selective)",
                        c->q.recompute_set);
    if (c->q.zero1_set & ~zall)
        return adv_fail(err, errlen, "zero1: set 0x%x has no such layout (allowed: off, on)", c->q.zero1_set);
    if (c->q.recompute_set == 0)
        c->q.recompute_set = PDBX_ADV_RECOMPUTE_BIT(c->spec.recompute);
    if (c->q.zero1_set == 0)
        c->q.zero1_set = PDBX_ADV_ZERO1_BIT(c->spec.zero1);
    return 0;
}

int adv_ctx_init(adv_ctx *c, const pdbx_run *run, const pdbx_advise_query *q, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->run = run;
    c->q = *q;
    if (q->gpus < 1 || q->gpus > ADV_MAX_GPUS)
        return adv_fail(err, errlen, "gpus: %d is not a number of GPUs (allowed: 1..%d)", q->gpus, ADV_MAX_GPUS);
    if (q->gbs < 1 || q->gbs > ADV_MAX_GBS)
        return adv_fail(err, errlen, "gbs: %d is not a global batch (allowed: 1..%d sequences)", q->gbs, ADV_MAX_GBS);
    if (q->nodes < 0 || q->nodes > q->gpus || (q->nodes > 0 && q->gpus % q->nodes != 0))
        return adv_fail(err, errlen, "nodes: %d does not divide gpus %d (allowed: a divisor of %d, or 0: "
                    "from the run's GPUs per node)", q->nodes, q->gpus, q->gpus);
    if (q->gpus_per_node < 0 || q->gpus_per_node > ADV_MAX_GPUS)
        return adv_fail(err, errlen, "gpus_per_node: %d is not a number of GPUs (allowed: 0..%d)",
                    q->gpus_per_node, ADV_MAX_GPUS);
    if (q->layers < 0 || q->layers > PDBX_RUN_MAX_LAYERS)
        return adv_fail(err, errlen, "layers: %d is not a number of layers (allowed: 1..%d, or 0: the "
                    "model's)", q->layers, PDBX_RUN_MAX_LAYERS);
    if (q->mbs_max < 0 || q->mbs_max > ADV_MAX_MBS)
        return adv_fail(err, errlen, "mbs_max: %d is not a micro-batch size (allowed: 1..%d, or 0: twice "
                    "the largest measured)", q->mbs_max, ADV_MAX_MBS);
    if (pdbx_rt_check_time_stat(q->stat, err, errlen) != 0)
        return -1;
    if (!run->spec)
        return adv_fail(err, errlen, "run: %s has no spec (allowed: a run whose run_start recorded its "
                    "spec: advise needs its model and GPU)", run->id);
    char serr[256];
    pdbx_spec_defaults(&c->spec);
    if (pdbx_spec_from_json(run->spec, run->id, &c->spec, serr, sizeof serr) != 0)
        return adv_fail(err, errlen, "run: %s: its spec does not read back: %s", run->id, serr);
    int measured = largest_measured_mbs(run);
    if (measured < 1)
        return adv_fail(err, errlen, "run: %s has no measured point (allowed: a run with at least one "
                    "point of status ok)", run->id);
    if (c->q.layers == 0)
        c->q.layers = c->spec.model.layers;
    if (c->q.layers < 1)
        return adv_fail(err, errlen, "layers: the model of run %s has %d layers (allowed: --layers 1..%d)",
                    run->id, c->q.layers, PDBX_RUN_MAX_LAYERS);
    c->spec.model.layers = c->q.layers;
    if (c->q.nodes > 0)
        c->q.gpus_per_node = c->q.gpus / c->q.nodes;
    if (c->q.gpus_per_node == 0)
        c->q.gpus_per_node = c->spec.gpus_per_node > 0 ? c->spec.gpus_per_node
                             : run->ranks_per_node > 0 ? run->ranks_per_node : c->q.gpus;
    if (c->q.nodes == 0)
        c->q.nodes = (c->q.gpus + c->q.gpus_per_node - 1) / c->q.gpus_per_node;
    if (c->q.mbs_max == 0)
        c->q.mbs_max = measured * 2 < ADV_MAX_MBS ? measured * 2 : ADV_MAX_MBS;
    c->dtype_bytes = pdbx_dtype_bytes(c->spec.dtype);
    ctx_eps(c);
    return ctx_layouts(c, err, errlen);
}

static const pdbx_adv_tp_cells *ctx_cells(adv_ctx *c, int tp, int pp, int dp, int ep)
{
    for (size_t i = 0; i < c->ncells; i++)
        if (c->cells_key[i][0] == tp && c->cells_key[i][1] == pp && c->cells_key[i][2] == dp &&
            c->cells_key[i][3] == ep)
            return &c->cells[i];
    if (c->ncells == c->cells_cap) {
        size_t cap = c->cells_cap ? 2 * c->cells_cap : 16;
        pdbx_adv_tp_cells *cells = realloc(c->cells, cap * sizeof *cells);
        if (!cells)
            return NULL;
        c->cells = cells;
        int (*keys)[4] = realloc(c->cells_key, cap * sizeof *keys);
        if (!keys)
            return NULL;
        c->cells_key = keys;
        c->cells_cap = cap;
    }
    if (pdbx_adv_cells_build_for(c->run, tp, pp, dp, ep, c->q.stat, &c->cells[c->ncells]) != 0)
        return NULL;
    c->cells_key[c->ncells][0] = tp, c->cells_key[c->ncells][1] = pp, c->cells_key[c->ncells][2] = dp;
    c->cells_key[c->ncells][3] = ep;
    return &c->cells[c->ncells++];
}

/* ---- one configuration ------------------------------------------------------------------ */
static void row_estimate_note(pdbx_advise_row *row, adv_notes *ns, const char *text)
{
    if (!text[0])
        return;
    row->estimated_cells++;
    if (!row->note[0])
        snprintf(row->note, sizeof row->note, "%s", text);
    adv_notes_find_or_add(ns, text);
}

/* Every stage's compute (and TP and EP comm) for one micro-batch: a stage's layers each run
 * the common per-layer ops and their kind's MLP (the job's layers, pdbx_layer_is_moe: dense
 * first layers on the first stage), the MoE layers their all-to-alls. Fills the slowest stage's
 * fields of row; returns the sum over the stages (the bubble is it less the slowest). */
static double stages(const adv_ctx *c, const pdbx_adv_sample *s, pdbx_advise_row *row)
{
    const int pp = row->pp, lps = c->q.layers / pp;
    double worst = -1, sum = 0;
    for (int st = 0; st < pp; st++) {
        int moe = 0;
        for (int l = st * lps; l < (st + 1) * lps; l++)
            moe += pdbx_layer_is_moe(&c->spec.model, c->q.layers, l);
        const int dense = lps - moe;
        double f = lps * s->fwd[PDBX_ADV_LAYER] + dense * s->fwd[PDBX_ADV_DENSE] + moe * s->fwd[PDBX_ADV_MOE];
        double b = lps * s->bwd[PDBX_ADV_LAYER] + dense * s->bwd[PDBX_ADV_DENSE] + moe * s->bwd[PDBX_ADV_MOE];
        double a2a = moe * (s->fwd[PDBX_ADV_A2A] + s->bwd[PDBX_ADV_A2A]);
        /* full recomputation: each layer's forward again before its backward (compute here, its
         * all-to-alls with the stage's, its TP all-reduces in stage_tp_comm_ms); selective: the
         * attention core's forward of each layer */
        const double rc = row->recompute == PDBX_RECOMPUTE_FULL ? f
                          : row->recompute == PDBX_RECOMPUTE_SELECTIVE ? lps * s->core_fwd : 0;
        b += rc;
        a2a += row->recompute == PDBX_RECOMPUTE_FULL ? moe * s->fwd[PDBX_ADV_A2A] : 0;
        if (st == 0)
            f += s->fwd[PDBX_ADV_FIRST], b += s->bwd[PDBX_ADV_FIRST];
        if (st == pp - 1)
            f += s->fwd[PDBX_ADV_LAST] + s->fwd[PDBX_ADV_LOSS], b += s->bwd[PDBX_ADV_LAST] + s->bwd[PDBX_ADV_LOSS];
        double t = f + b + row->stage_tp_comm_ms + a2a;
        sum += t;
        if (t > worst) {
            worst = t, row->slowest_stage = st, row->stage_fwd_ms = f, row->stage_bwd_ms = b;
            row->stage_ep_comm_ms = a2a;
            row->recompute_ms = rc;   /* one micro-batch's, until adv_estimate() scales it */
        }
    }
    return sum;
}

/* One collective's time into *ms (noted when estimated); 1 with reason when the run cannot give it. */
static int comm_time(const adv_ctx *c, int kind, int group, double bytes, int spans, double *ms,
                     pdbx_advise_row *row, adv_notes *ns, char *reason, size_t rlen)
{
    char note[PDBX_ADVISE_NOTE_MAX];
    if (pdbx_adv_comm_time(c->run, kind, group, bytes, spans, c->q.stat, ms, note, sizeof note) == PDBX_ADV_NONE) {
        snprintf(reason, rlen, "%s", note);
        return 1;
    }
    row_estimate_note(row, ns, note);
    return 0;
}

/* The gradients of `bytes` (fp32) over a group of n ranks into *ms: one all-reduce, or with the
 * distributed optimizer a reduce-scatter of them and an all-gather of the parameters (in the
 * run's dtype), each from the collectives sweep where it measured them, else half an
 * all-reduce of its bytes (a ring all-reduce is the two), noted. 1 with reason when the run
 * cannot give a time. */
static int reduce_grads(const adv_ctx *c, pdbx_advise_row *row, int n, double bytes, int spans, double *ms,
                        adv_notes *ns, char *reason, size_t rlen)
{
    if (!row->zero1)
        return comm_time(c, PDBX_RT_COMM_DP, n, bytes, spans, ms, row, ns, reason, rlen);
    /* the collectives sweep's reduce_scatter and all_gather where it measured them */
    const char *const colls[2] = { "reduce_scatter", "all_gather" };
    const double sizes[2] = { bytes, bytes * c->dtype_bytes / 4 };
    *ms = 0;
    for (int k = 0; k < 2; k++) {
        char note[PDBX_ADVISE_NOTE_MAX];
        double t;
        if (pdbx_adv_sweep_time(c->run, colls[k], n, sizes[k], spans, c->q.stat, &t, note, sizeof note) !=
            PDBX_ADV_NONE) {
            row_estimate_note(row, ns, note);
        } else {
            if (comm_time(c, PDBX_RT_COMM_DP, n, sizes[k], spans, &t, row, ns, reason, rlen))
                return 1;
            snprintf(note, sizeof note, "dp %d %s: not in the collectives sweep: half an all-reduce of its bytes",
                     n, colls[k]);
            row_estimate_note(row, ns, note);
            t *= 0.5;
        }
        *ms += t;
    }
    return 0;
}

/* The gradient reduction after the last backward into row->dp_comm_ms: the stage's fp32
 * gradients over DP, a MoE model's routed experts' over their EDP group (plan_comm.h). 1 with
 * reason when the run cannot give a time. */
static int grad_comm(const adv_ctx *c, const pdbx_plan_comm *sizes, pdbx_advise_row *row, adv_notes *ns,
                     char *reason, size_t rlen)
{
    const int tp = row->tp, dp = row->dp, ep = row->ep, gpn = c->q.gpus_per_node;
    if (dp > 1) {
        row->dp_msg_bytes = sizes->dp_full_bytes;   /* stage 0's (the largest) fp32 gradients */
        if (reduce_grads(c, row, dp, row->dp_msg_bytes, pdbx_adv_spans((long)tp * (dp - 1), gpn),
                         &row->dp_comm_ms, ns, reason, rlen))
            return 1;
    }
    if (sizes->edp_full_bytes > 0) {
        row->edp_msg_bytes = sizes->edp_full_bytes;
        if (reduce_grads(c, row, sizes->edp, row->edp_msg_bytes, pdbx_adv_spans((long)tp * dp - ep, gpn),
                         &row->edp_comm_ms, ns, reason, rlen))
            return 1;
        row->dp_comm_ms += row->edp_comm_ms;
    }
    return 0;
}

/* The row's totals from its stages and comm: per micro-batch times x num_mb, the bubble
 * (given), the optimizer step and the loss, the memory of its layout. */
static void finish_row(adv_ctx *c, const pdbx_adv_sample *s, double bubble_ms, pdbx_advise_row *row)
{
    const pdbx_parallel par = { row->tp, row->pp, row->dp, row->ep };
    pdbx_memory mem;
    const pdbx_recompute spec_recompute = c->spec.recompute;   /* the row's layout, for the planner */
    const int spec_zero1 = c->spec.zero1;
    c->spec.recompute = (pdbx_recompute)row->recompute, c->spec.zero1 = row->zero1;
    pdbx_memory_predict(&c->spec, &par, row->mbs, &mem);
    c->spec.recompute = spec_recompute, c->spec.zero1 = spec_zero1;
    row->tp_comm_ms = row->num_mb * row->stage_tp_comm_ms;
    row->ep_comm_ms = row->num_mb * row->stage_ep_comm_ms;
    row->compute_ms = row->num_mb * (row->stage_fwd_ms + row->stage_bwd_ms);
    row->recompute_ms *= row->num_mb;
    /* 1F1B: the slowest stage works num_mb micro-batches back to back; filling and draining
     * the pipeline costs one micro-batch of every other stage (forward on the way in, backward
     * on the way out). With equal stages this is FASOP's (pp - 1) x t; with uneven ones (embed
     * on the first, lm_head on the last) it is what a real 1F1B step takes (bench/advise_validate.sh:
     * (pp - 1) x the slowest stage overestimated TP1/PP2 by 13-16%). */
    row->bubble_ms = bubble_ms;
    row->comm_ms = row->tp_comm_ms + row->pp_comm_ms + row->dp_comm_ms + row->ep_comm_ms;
    /* AdamW is linear in the parameters it steps: the cell's layer scaled to the rank's stage,
     * its 1/DP shard with the distributed optimizer */
    const double opt_n = pdbx_optimizer_params(&c->spec.model, row->tp, row->ep);
    if (s->fwd[PDBX_ADV_OPT] > 0 && opt_n > 0)
        row->optimizer_ms = s->fwd[PDBX_ADV_OPT] * mem.params_per_rank / opt_n / (row->zero1 ? row->dp : 1);
    /* the last stage's loss, each micro-batch (in compute_ms with the stage's other ops) */
    row->loss_ms = row->num_mb * (s->fwd[PDBX_ADV_LOSS] + s->bwd[PDBX_ADV_LOSS]);
    row->step_ms = row->compute_ms + row->comm_ms + row->bubble_ms + row->optimizer_ms;
    row->mem_gb = mem.total / 1e9;
    row->fits = mem.total <= c->spec.gpu.mem_bytes;
}

/* 0 with *row; 1 refused (reason: why, a note's text); -1 out of memory (reason set). */
int adv_estimate(adv_ctx *c, const adv_cfg *k, pdbx_advise_row *row, adv_notes *ns, char *reason,
                 size_t rlen)
{
    const int tp = k->tp, pp = k->pp, dp = k->dp, ep = k->ep, mbs = k->mbs;
    memset(row, 0, sizeof *row);
    row->tp = tp, row->pp = pp, row->dp = dp, row->ep = ep, row->mbs = mbs;
    row->recompute = k->recompute, row->zero1 = k->zero1;
    row->num_mb = c->q.gbs / (mbs * dp);
    const pdbx_adv_tp_cells *cells = ctx_cells(c, tp, pp, dp, ep);
    if (!cells) {
        snprintf(reason, rlen, "out of memory");
        return -1;
    }
    char note[PDBX_ADVISE_NOTE_MAX];
    pdbx_adv_sample s;
    if (pdbx_adv_cells_at(cells, mbs, &s, note, sizeof note) == PDBX_ADV_NONE) {
        if (ep > 1)
            snprintf(reason, rlen, "tp %d ep %d not measured", tp, ep);
        else
            snprintf(reason, rlen, "tp %d not measured", tp);
        return 1;
    }
    row_estimate_note(row, ns, note);
    row->bwd_measured = cells->bwd_measured;
    if (!cells->bwd_measured) {
        char x3[PDBX_ADVISE_NOTE_MAX];
        snprintf(x3, sizeof x3, "tp %d: bwd not measured: backward = 2 x forward (FASOP's x3 rule)", tp);
        adv_notes_find_or_add(ns, x3);
    }

    const int gpn = c->q.gpus_per_node;
    /* the engine's own sizing of the step's messages (plan_comm.h): activations [mbs x seq,
     * hidden] in the run's dtype; the stage's whole gradients in fp32 */
    pdbx_plan_comm sizes;
    const pdbx_parallel par = { tp, pp, dp, ep };
    pdbx_plan_comm_point(&c->spec.model, &par, mbs, c->spec.seq_len, c->spec.dtype, PDBX_BACKEND_CUDA,
                         c->spec.moe_imbalance, &sizes);
    const double act_bytes = (double)mbs * c->spec.seq_len * c->spec.model.hidden * c->dtype_bytes;
    const double lps = (double)c->q.layers / pp;
    if (tp > 1) {
        row->tp_msg_bytes = act_bytes;
        if (comm_time(c, PDBX_RT_COMM_TP, tp, act_bytes, pdbx_adv_spans(tp - 1, gpn), &row->tp_allreduce_ms,
                      row, ns, reason, rlen))
            return 1;
        /* each layer's TP all-reduces in the forward, and the same again in the backward
         * (Megatron's row/column-parallel layers all-reduce the input gradient); full
         * recomputation runs the forward's once more */
        const int passes = row->recompute == PDBX_RECOMPUTE_FULL ? 3 : 2;
        row->stage_tp_comm_ms = lps * cells->comm_ops_per_layer * passes * row->tp_allreduce_ms;
    }
    const double stages_sum = stages(c, &s, row);
    const double worst = row->stage_fwd_ms + row->stage_bwd_ms + row->stage_tp_comm_ms + row->stage_ep_comm_ms;
    if (pp > 1) {
        row->pp_msg_bytes = act_bytes;
        if (comm_time(c, PDBX_RT_COMM_PP, 2, act_bytes, pdbx_adv_spans((long)tp * dp, gpn), &row->p2p_ms,
                      row, ns, reason, rlen))
            return 1;
        /* 1F1B with blocking send/recv: 2 (pp - 1) transfers carry the first micro-batch through
         * the pipeline and back, each further micro-batch adds one forward and one backward */
        row->pp_comm_ms = 2.0 * (row->num_mb + pp - 2) * row->p2p_ms;
    }
    if (grad_comm(c, &sizes, row, ns, reason, rlen))
        return 1;
    finish_row(c, &s, stages_sum - worst, row);
    return 0;
}


static int check_config(const adv_ctx *c, int tp, int pp, int dp, int mbs, char *err, size_t errlen)
{
    if (tp < 1 || pp < 1 || dp < 1 || tp > c->q.gpus || pp > c->q.gpus || dp > c->q.gpus || mbs < 1
        || mbs > ADV_MAX_MBS)
        return adv_fail(err, errlen, "config: %dx%dx%d mbs %d is not a configuration (allowed: tp, pp, dp "
                    "1..%d, mbs 1..%d)", tp, pp, dp, mbs, c->q.gpus, ADV_MAX_MBS);
    if ((long)tp * pp * dp != c->q.gpus)
        return adv_fail(err, errlen, "config: %dx%dx%d uses %ld GPUs, the query has %d (allowed: tp x pp x "
                    "dp == %d)", tp, pp, dp, (long)tp * pp * dp, c->q.gpus, c->q.gpus);
    if (c->q.layers % pp != 0)
        return adv_fail(err, errlen, "pp: %d does not divide the %d layers (allowed: a divisor of %d)", pp,
                    c->q.layers, c->q.layers);
    if (c->q.gbs % (mbs * dp) != 0)
        return adv_fail(err, errlen, "gbs: %d is not divisible by mbs x dp = %d x %d (allowed: a multiple "
                    "of %d)", c->q.gbs, mbs, dp, mbs * dp);
    return 0;
}

int pdbx_advise_one(const pdbx_run *run, const pdbx_advise_query *q, int tp, int pp, int dp, int mbs,
                    pdbx_advise_row *row, char *err, size_t errlen)
{
    return pdbx_advise_one_ep(run, q, tp, pp, dp, 1, mbs, row, err, errlen);
}

int pdbx_advise_one_ep(const pdbx_run *run, const pdbx_advise_query *q, int tp, int pp, int dp, int ep,
                       int mbs, pdbx_advise_row *row, char *err, size_t errlen)
{
    adv_ctx c;
    if (adv_ctx_init(&c, run, q, err, errlen) != 0)
        return -1;
    int rc = check_config(&c, tp, pp, dp, mbs, err, errlen);
    if (rc == 0 && (ep < 1 || (tp * dp) % ep != 0))
        rc = adv_fail(err, errlen, "config: ep %d does not divide tp x dp = %d (allowed: a divisor of %d)", ep,
                  tp * dp, tp * dp);
    const unsigned rs = c.q.recompute_set, zs = c.q.zero1_set;
    if (rc == 0 && ((rs & (rs - 1)) || (zs & (zs - 1))))
        rc = adv_fail(err, errlen, "layout: one configuration takes one recompute and one zero1 setting "
                  "(allowed: a set of one each)");
    if (rc == 0) {
        char reason[PDBX_ADVISE_NOTE_MAX], epx[16] = "";
        int recompute = PDBX_RECOMPUTE_NONE;
        while (rs && !(rs & PDBX_ADV_RECOMPUTE_BIT(recompute)))   /* the set's one member */
            recompute++;
        const adv_cfg k = { tp, pp, dp, ep, mbs, recompute, zs == PDBX_ADV_ZERO1_BIT(1) };
        int r = adv_estimate(&c, &k, row, NULL, reason, sizeof reason);
        if (ep > 1)
            snprintf(epx, sizeof epx, "x%d", ep);
        if (r != 0)
            rc = adv_fail(err, errlen, "config: %dx%dx%d%s mbs %d cannot be estimated from run %s: %s", tp,
                      pp, dp, epx, mbs, run->id, reason);
    }
    adv_ctx_free(&c);
    return rc;
}
