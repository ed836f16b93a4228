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

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
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
typedef struct {
    char text[PDBX_ADVISE_NOTE_MAX];
    long count;             /* refusals: configurations left out for this reason */
} adv_note;

typedef struct {
    size_t n, cap;
    adv_note *v;
    int oom;
} adv_notes;

static adv_note *notes_find_or_add(adv_notes *ns, const char *text)
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
typedef struct {
    const pdbx_run *run;
    pdbx_advise_query q;      /* resolved: nodes, gpus_per_node, layers, mbs_max set */
    pdbx_spec spec;           /* the run's spec, model.layers = q.layers */
    double dtype_bytes;
    /* compute cells per configuration, built on first use (advise_cells.h: a config prefers
     * its own points, then those of its rank count) */
    pdbx_adv_tp_cells *cells;
    int (*cells_key)[4];
    int eps[8];               /* the EP degrees the run measured (1 first), neps of them */
    int neps;
    size_t ncells, cells_cap;
} adv_ctx;

static void ctx_free(adv_ctx *c)
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

static int ctx_init(adv_ctx *c, const pdbx_run *run, const pdbx_advise_query *q, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->run = run;
    c->q = *q;
    if (q->gpus < 1 || q->gpus > ADV_MAX_GPUS)
        return fail(err, errlen, "gpus: %d is not a number of GPUs (allowed: 1..%d)", q->gpus, ADV_MAX_GPUS);
    if (q->gbs < 1 || q->gbs > ADV_MAX_GBS)
        return fail(err, errlen, "gbs: %d is not a global batch (allowed: 1..%d sequences)", q->gbs, ADV_MAX_GBS);
    if (q->nodes < 0 || q->nodes > q->gpus || (q->nodes > 0 && q->gpus % q->nodes != 0))
        return fail(err, errlen, "nodes: %d does not divide gpus %d (allowed: a divisor of %d, or 0: "
                    "from the run's GPUs per node)", q->nodes, q->gpus, q->gpus);
    if (q->gpus_per_node < 0 || q->gpus_per_node > ADV_MAX_GPUS)
        return fail(err, errlen, "gpus_per_node: %d is not a number of GPUs (allowed: 0..%d)",
                    q->gpus_per_node, ADV_MAX_GPUS);
    if (q->layers < 0 || q->layers > PDBX_RUN_MAX_LAYERS)
        return fail(err, errlen, "layers: %d is not a number of layers (allowed: 1..%d, or 0: the "
                    "model's)", q->layers, PDBX_RUN_MAX_LAYERS);
    if (q->mbs_max < 0 || q->mbs_max > ADV_MAX_MBS)
        return fail(err, errlen, "mbs_max: %d is not a micro-batch size (allowed: 1..%d, or 0: twice "
                    "the largest measured)", q->mbs_max, ADV_MAX_MBS);
    if (pdbx_rt_check_time_stat(q->stat, err, errlen) != 0)
        return -1;
    if (!run->spec)
        return fail(err, errlen, "run: %s has no spec (allowed: a run whose run_start recorded its "
                    "spec: advise needs its model and GPU)", run->id);
    char serr[256];
    pdbx_spec_defaults(&c->spec);
    if (pdbx_spec_from_json(run->spec, run->id, &c->spec, serr, sizeof serr) != 0)
        return fail(err, errlen, "run: %s: its spec does not read back: %s", run->id, serr);
    int measured = largest_measured_mbs(run);
    if (measured < 1)
        return fail(err, errlen, "run: %s has no measured point (allowed: a run with at least one "
                    "point of status ok)", run->id);
    if (c->q.layers == 0)
        c->q.layers = c->spec.model.layers;
    if (c->q.layers < 1)
        return fail(err, errlen, "layers: the model of run %s has %d layers (allowed: --layers 1..%d)",
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
    return 0;
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
    notes_find_or_add(ns, text);
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
        if (st == 0)
            f += s->fwd[PDBX_ADV_FIRST], b += s->bwd[PDBX_ADV_FIRST];
        if (st == pp - 1)
            f += s->fwd[PDBX_ADV_LAST] + s->fwd[PDBX_ADV_LOSS], b += s->bwd[PDBX_ADV_LAST] + s->bwd[PDBX_ADV_LOSS];
        double t = f + b + row->stage_tp_comm_ms + a2a;
        sum += t;
        if (t > worst) {
            worst = t, row->slowest_stage = st, row->stage_fwd_ms = f, row->stage_bwd_ms = b;
            row->stage_ep_comm_ms = a2a;
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

/* The gradient reduction after the last backward into row->dp_comm_ms: the stage's fp32
 * gradients over DP, a MoE model's routed experts' over their EDP group (plan_comm.h). 1 with
 * reason when the run cannot give a time. */
static int grad_comm(const adv_ctx *c, const pdbx_plan_comm *sizes, pdbx_advise_row *row, adv_notes *ns,
                     char *reason, size_t rlen)
{
    const int tp = row->tp, dp = row->dp, ep = row->ep, gpn = c->q.gpus_per_node;
    if (dp > 1) {
        row->dp_msg_bytes = sizes->dp_full_bytes;   /* stage 0's (the largest) fp32 gradients */
        if (comm_time(c, PDBX_RT_COMM_DP, dp, row->dp_msg_bytes, pdbx_adv_spans((long)tp * (dp - 1), gpn),
                      &row->dp_comm_ms, row, ns, reason, rlen))
            return 1;
    }
    if (sizes->edp_full_bytes > 0) {
        row->edp_msg_bytes = sizes->edp_full_bytes;
        if (comm_time(c, PDBX_RT_COMM_DP, sizes->edp, row->edp_msg_bytes,
                      pdbx_adv_spans((long)tp * dp - ep, gpn), &row->edp_comm_ms, row, ns, reason, rlen))
            return 1;
        row->dp_comm_ms += row->edp_comm_ms;
    }
    return 0;
}

/* 0 with *row; 1 refused (reason: why, a note's text); -1 out of memory (reason set). */
static int estimate(adv_ctx *c, int tp, int pp, int dp, int ep, int mbs, pdbx_advise_row *row,
                    adv_notes *ns, char *reason, size_t rlen)
{
    memset(row, 0, sizeof *row);
    row->tp = tp, row->pp = pp, row->dp = dp, row->ep = ep, row->mbs = mbs;
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
        notes_find_or_add(ns, x3);
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
         * (Megatron's row/column-parallel layers all-reduce the input gradient) */
        row->stage_tp_comm_ms = lps * cells->comm_ops_per_layer * 2 * row->tp_allreduce_ms;
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
    pdbx_memory mem;
    pdbx_memory_predict(&c->spec, &par, mbs, &mem);
    if (grad_comm(c, &sizes, row, ns, reason, rlen))
        return 1;
    row->tp_comm_ms = row->num_mb * row->stage_tp_comm_ms;
    row->ep_comm_ms = row->num_mb * row->stage_ep_comm_ms;
    row->compute_ms = row->num_mb * (row->stage_fwd_ms + row->stage_bwd_ms);
    /* 1F1B: the slowest stage works num_mb micro-batches back to back; filling and draining
     * the pipeline costs one micro-batch of every other stage (forward on the way in, backward
     * on the way out). With equal stages this is FASOP's (pp - 1) x t; with uneven ones (embed
     * on the first, lm_head on the last) it is what a real 1F1B step takes (bench/advise_validate.sh:
     * (pp - 1) x the slowest stage overestimated TP1/PP2 by 13-16%). */
    row->bubble_ms = stages_sum - worst;
    row->comm_ms = row->tp_comm_ms + row->pp_comm_ms + row->dp_comm_ms + row->ep_comm_ms;
    /* AdamW is linear in the parameters it steps: the cell's layer scaled to the rank's stage */
    const double opt_n = pdbx_optimizer_params(&c->spec.model, tp, ep);
    if (s.fwd[PDBX_ADV_OPT] > 0 && opt_n > 0)
        row->optimizer_ms = s.fwd[PDBX_ADV_OPT] * mem.params_per_rank / opt_n;
    /* the last stage's loss, each micro-batch (in compute_ms with the stage's other ops) */
    row->loss_ms = row->num_mb * (s.fwd[PDBX_ADV_LOSS] + s.bwd[PDBX_ADV_LOSS]);
    row->step_ms = row->compute_ms + row->comm_ms + row->bubble_ms + row->optimizer_ms;
    row->mem_gb = mem.total / 1e9;
    row->fits = mem.total <= c->spec.gpu.mem_bytes;
    return 0;
}

static int check_config(const adv_ctx *c, int tp, int pp, int dp, int mbs, char *err, size_t errlen)
{
    if (tp < 1 || pp < 1 || dp < 1 || tp > c->q.gpus || pp > c->q.gpus || dp > c->q.gpus || mbs < 1
        || mbs > ADV_MAX_MBS)
        return fail(err, errlen, "config: %dx%dx%d mbs %d is not a configuration (allowed: tp, pp, dp "
                    "1..%d, mbs 1..%d)", tp, pp, dp, mbs, c->q.gpus, ADV_MAX_MBS);
    if ((long)tp * pp * dp != c->q.gpus)
        return fail(err, errlen, "config: %dx%dx%d uses %ld GPUs, the query has %d (allowed: tp x pp x "
                    "dp == %d)", tp, pp, dp, (long)tp * pp * dp, c->q.gpus, c->q.gpus);
    if (c->q.layers % pp != 0)
        return fail(err, errlen, "pp: %d does not divide the %d layers (allowed: a divisor of %d)", pp,
                    c->q.layers, c->q.layers);
    if (c->q.gbs % (mbs * dp) != 0)
        return fail(err, errlen, "gbs: %d is not divisible by mbs x dp = %d x %d (allowed: a multiple "
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
    if (ctx_init(&c, run, q, err, errlen) != 0)
        return -1;
    int rc = check_config(&c, tp, pp, dp, mbs, err, errlen);
    if (rc == 0 && (ep < 1 || (tp * dp) % ep != 0))
        rc = fail(err, errlen, "config: ep %d does not divide tp x dp = %d (allowed: a divisor of %d)", ep,
                  tp * dp, tp * dp);
    if (rc == 0) {
        char reason[PDBX_ADVISE_NOTE_MAX], epx[16] = "";
        int r = estimate(&c, tp, pp, dp, ep, mbs, row, NULL, reason, sizeof reason);
        if (ep > 1)
            snprintf(epx, sizeof epx, "x%d", ep);
        if (r != 0)
            rc = fail(err, errlen, "config: %dx%dx%d%s mbs %d cannot be estimated from run %s: %s", tp,
                      pp, dp, epx, mbs, run->id, reason);
    }
    ctx_free(&c);
    return rc;
}

/* ---- every configuration --------------------------------------------------------------- */
static int by_step(const void *a, const void *b)
{
    const pdbx_advise_row *x = a, *y = b;
    if (x->step_ms != y->step_ms)
        return x->step_ms < y->step_ms ? -1 : 1;
    if (x->mem_gb != y->mem_gb)
        return x->mem_gb < y->mem_gb ? -1 : 1;
    int kx[5] = { x->tp, x->pp, x->dp, x->ep, x->mbs }, ky[5] = { y->tp, y->pp, y->dp, y->ep, y->mbs };
    for (int i = 0; i < 5; i++)
        if (kx[i] != ky[i])
            return kx[i] < ky[i] ? -1 : 1;
    return 0;
}

/* Rows in step order: a fitting row is on the front when every faster fitting row needs
 * strictly more memory. */
static void mark_pareto(pdbx_advise_row *rows, size_t n)
{
    double best_mem = INFINITY;
    for (size_t i = 0; i < n; i++) {
        rows[i].pareto = 0;
        if (!rows[i].fits)
            continue;
        if (rows[i].mem_gb < best_mem) {
            rows[i].pareto = 1;
            best_mem = rows[i].mem_gb;
        }
    }
}

void pdbx_advise_free(pdbx_advise_result *r)
{
    if (!r)
        return;
    free(r->rows);
    for (size_t i = 0; i < r->nnotes; i++)
        free(r->notes[i]);
    free(r->notes);
    memset(r, 0, sizeof *r);
}

static int push_row(pdbx_advise_result *out, size_t *cap, const pdbx_advise_row *row)
{
    if (out->nrows == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        pdbx_advise_row *v = realloc(out->rows, sizeof *v * nc);
        if (!v)
            return -1;
        out->rows = v, *cap = nc;
    }
    out->rows[out->nrows++] = *row;
    return 0;
}

/* The notes (estimates first, in the order met, then refusals with their counts) as owned
 * strings. */
static int take_notes(adv_notes *ns, pdbx_advise_result *out)
{
    out->notes = calloc(ns->n ? ns->n : 1, sizeof *out->notes);
    if (!out->notes)
        return -1;
    for (int refusals = 0; refusals < 2; refusals++)
        for (size_t i = 0; i < ns->n; i++) {
            const adv_note *n = &ns->v[i];
            if ((n->count >= 0) != refusals)
                continue;
            char buf[PDBX_ADVISE_NOTE_MAX + 64];
            if (n->count >= 0)
                snprintf(buf, sizeof buf, "%s: %ld configuration%s left out", n->text, n->count,
                         n->count == 1 ? "" : "s");
            else
                snprintf(buf, sizeof buf, "%s", n->text);
            if (!(out->notes[out->nnotes] = strdup(buf)))
                return -1;
            out->nnotes++;
        }
    return 0;
}

/* One candidate: its row kept (its estimates noted) or its refusal counted. 0, or -1 OOM. */
static int add_row(adv_ctx *c, int tp, int pp, int dp, int ep, int mbs, pdbx_advise_result *out,
                   size_t *cap, adv_notes *ns, adv_notes *row_notes, char *err, size_t errlen)
{
    pdbx_advise_row row;
    char reason[PDBX_ADVISE_NOTE_MAX];
    /* a row's estimates are noted only when the row is kept */
    row_notes->n = 0;
    int r = estimate(c, tp, pp, dp, ep, mbs, &row, row_notes, reason, sizeof reason);
    if (r == 0)
        for (size_t k = 0; k < row_notes->n; k++)
            notes_find_or_add(ns, row_notes->v[k].text);
    if (r < 0 || row_notes->oom || (r == 0 && push_row(out, cap, &row) != 0))
        return fail(err, errlen, "out of memory");
    if (r == 1) {
        adv_note *n = notes_find_or_add(ns, reason);
        if (n)
            n->count = n->count < 0 ? 1 : n->count + 1;
    }
    return 0;
}

int pdbx_advise(const pdbx_run *run, const pdbx_advise_query *q, pdbx_advise_result *out,
                char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    adv_ctx c;
    if (ctx_init(&c, run, q, err, errlen) != 0)
        return -1;
    adv_notes ns = { 0 }, row_notes = { 0 };
    size_t cap = 0;
    int rc = 0;
    long candidates = 0;
    const int g = c.q.gpus;
    for (int tp = 1; tp <= g && rc == 0; tp++) {
        if (g % tp)
            continue;
        for (int pp = 1; pp <= g / tp && rc == 0; pp++) {
            if ((g / tp) % pp || c.q.layers % pp)
                continue;
            int dp = g / tp / pp;
            /* the EP group lies within tp x dp (Megatron's expert layout) */
            for (int e = 0; e < c.neps && rc == 0; e++) {
                if ((tp * dp) % c.eps[e])
                    continue;
                for (int mbs = 1; mbs <= c.q.mbs_max && rc == 0; mbs++) {
                    if (c.q.gbs % (mbs * dp))
                        continue;
                    candidates++;
                    rc = add_row(&c, tp, pp, dp, c.eps[e], mbs, out, &cap, &ns, &row_notes, err, errlen);
                }
            }
        }
    }
    if (rc == 0 && candidates == 0) {
        char why[PDBX_ADVISE_NOTE_MAX];
        snprintf(why, sizeof why, "no (tp, pp, dp, mbs) of %d GPUs divides gbs %d with mbs <= %d and "
                 "pp dividing %d layers", g, c.q.gbs, c.q.mbs_max, c.q.layers);
        notes_find_or_add(&ns, why);
    }
    if (rc == 0 && ns.oom)
        rc = fail(err, errlen, "out of memory");
    if (rc == 0) {
        if (out->nrows > 0) {   /* no rows: rows is NULL, which qsort may not be given */
            qsort(out->rows, out->nrows, sizeof *out->rows, by_step);
            mark_pareto(out->rows, out->nrows);
        }
        if (take_notes(&ns, out) != 0)
            rc = fail(err, errlen, "out of memory");
    }
    if (rc == 0)
        out->query = c.q;
    free(ns.v);
    free(row_notes.v);
    ctx_free(&c);
    if (rc != 0)
        pdbx_advise_free(out);
    return rc;
}
