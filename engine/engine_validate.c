/* engine_validate.c: pdbx-engine's validate mode (engine_validate.h). */
#include "engine/engine_validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_agree.h"
#include "engine/engine_groups.h"
#include "engine/plan/plan_comm.h"
#include "engine/plan/plan_pipeline.h"
#include "store/util/clock.h"
#include "store/util/err.h"
#include "store/util/fs.h"

#define ERR_LEN 512

int pdbx_validate_parse_config(const char *text, pdbx_validate_args *v, char *err, size_t errlen)
{
    int t = 0, p = 0, d = 0, x = 1, used = 0, more = 0;
    int ok = text && sscanf(text, "%d%*[xX]%d%*[xX]%d%n", &t, &p, &d, &used) == 3;
    if (ok && text[used] != '\0')   /* the optional EP degree */
        ok = sscanf(text + used, "%*[xX]%d%n", &x, &more) == 1 && text[used + more] == '\0';
    if (!ok || t < 1 || p < 1 || d < 1 || x < 1 || t > 4096 || p > 4096 || d > 4096 || x > 4096)
        return pdbx_fail(err, errlen, "--config: '%s' is not TPxPPxDP or TPxPPxDPxEP (degrees of "
                         "1..4096, e.g. 2x1x2 or 1x1x2x2)", text ? text : "");
    v->tp = t;
    v->pp = p;
    v->dp = d;
    v->ep = x;
    return 0;
}

int pdbx_validate_num_mb(const pdbx_validate_args *v)
{
    return v->mbs > 0 && v->dp > 0 ? v->gbs / (v->mbs * v->dp) : 0;
}

int pdbx_validate_resolve(pdbx_validate_args *v, const pdbx_spec *spec, int world, char *err,
                          size_t errlen)
{
    if (v->tp * v->pp * v->dp != world)
        return pdbx_fail(err, errlen, "--config: %dx%dx%d needs %d ranks, launched with %d (allowed: "
                         "tp*pp*dp = the rank count)", v->tp, v->pp, v->dp, v->tp * v->pp * v->dp,
                         world);
    if (v->ep < 1)
        v->ep = 1;
    const int experts = spec->model.arch.moe.experts;
    if (v->ep > 1 && (experts < 2 || experts % v->ep != 0 || (v->tp * v->dp) % v->ep != 0))
        return pdbx_fail(err, errlen, "--config: ep %d needs a mixture-of-experts model whose experts "
                         "(%d) and tp x dp (%d) it divides (allowed: such a divisor, or 1)", v->ep,
                         experts, v->tp * v->dp);
    if (v->mbs < 1)
        return pdbx_fail(err, errlen, "--mbs: %d (allowed: 1 or more)", v->mbs);
    if (v->gbs < 1 || v->gbs % (v->mbs * v->dp) != 0)
        return pdbx_fail(err, errlen, "--gbs: %d is not a multiple of mbs x dp = %d (allowed: "
                         "k x %d, k >= 1)", v->gbs, v->mbs * v->dp, v->mbs * v->dp);
    if (v->layers == 0) {
        int l = spec->layers_profiled > v->pp ? spec->layers_profiled : v->pp;
        v->layers = (l + v->pp - 1) / v->pp * v->pp;
    }
    if (v->layers < 1 || v->layers % v->pp != 0 || v->layers > PDBX_RUN_MAX_LAYERS)
        return pdbx_fail(err, errlen, "--layers: %d is not a multiple of pp = %d (allowed: k x %d "
                         "up to %d)", v->layers, v->pp, v->pp, PDBX_RUN_MAX_LAYERS);
    if (v->iters == 0)
        v->iters = PDBX_VALIDATE_ITERS_DEFAULT;
    if (v->iters < 1 || v->iters > PDBX_VALIDATE_ITERS_MAX)
        return pdbx_fail(err, errlen, "--iters: %d (allowed: 1..%d)", v->iters, PDBX_VALIDATE_ITERS_MAX);
    return 0;
}

/* ---- one validation ---------------------------------------------------------------------- */
enum { PART_FWD = 0, PART_BWD, PART_TP, PART_PP, PART_DP, PART_EP, PART_OPT, PART_LOSS, PART_RECOMP,
       PART_COUNT };
static const char *const part_names[PART_COUNT] = { "fwd_ms", "bwd_ms", "tp_comm_ms", "pp_comm_ms",
                                                    "dp_comm_ms", "ep_comm_ms", "optimizer_ms",
                                                    "loss_ms", "recompute_ms" };

/* A two-rank group of one stage boundary and direction: group rank 0 sends. */
typedef struct {
    MPI_Comm mpi;
    pdbx_group *g;
} pair_group;

typedef struct {
    pdbx_engine *e;
    const pdbx_validate_args *v;
    pdbx_cfg_groups cg;
    pdbx_grid_coords me;
    MPI_Comm world_mpi;
    pdbx_group *world;
    pair_group act_up, act_down, grad_up, grad_down;   /* send act / recv act / recv grad / send grad */
    int stage_layers, num_mb;
    int opt_reps;                 /* optimizer op executions: the rank's parameters / the op's */
    int recomputing;              /* a layer's forward run again before its backward (full) */
    void *buf;
    double act_bytes, dp_bytes, bucket_bytes, ep_bytes;
    double edp_bytes, edp_bucket_bytes;   /* the routed experts' gradients over the EDP group */
    pdbx_pipe_step *steps;
    int nsteps;
    double part[PART_COUNT];
    int failed;
    char msg[PDBX_MSG_LEN];
} vrun;

static void fail_once(vrun *r, const char *what)
{
    if (!r->failed) {
        r->failed = 1;
        snprintf(r->msg, sizeof r->msg, "%.250s", what);
    }
}

/* The pair groups of every boundary: a collective over the world (every rank splits 2 (pp - 1)
 * times, MPI_UNDEFINED when the boundary is not its own). */
static int build_pairs(vrun *r, char *err, size_t errlen)
{
    pdbx_engine *e = r->e;
    const int s = r->me.pp_rank, chain = r->me.tp_rank + r->v->tp * r->me.dp_rank;
    int rc = 0;
    for (int b = 0; b + 1 < r->v->pp; b++) {
        for (int dir = 0; dir < 2; dir++) {                 /* 0: activations up, 1: grads down */
            const int sender = dir == 0 ? b : b + 1, receiver = dir == 0 ? b + 1 : b;
            const int in = s == sender || s == receiver;
            MPI_Comm mc = MPI_COMM_NULL;
            if (MPI_Comm_split(MPI_COMM_WORLD, in ? chain : MPI_UNDEFINED, s == sender ? 0 : 1, &mc) !=
                MPI_SUCCESS) {
                rc = pdbx_fail(err, errlen, "MPI_Comm_split for the stage %d/%d pair failed", b, b + 1);
                continue;
            }
            if (!in)
                continue;
            pair_group *pg = dir == 0 ? (s == sender ? &r->act_up : &r->act_down)
                                      : (s == sender ? &r->grad_down : &r->grad_up);
            pg->mpi = mc;
            if (rc == 0 && pdbx_group_open(e, &pg->mpi, s == sender ? 0 : 1, 2, &pg->g, err, errlen) != 0)
                rc = -1;
        }
    }
    return rc;
}

static void free_pair(vrun *r, pair_group *pg)
{
    if (pg->g)
        r->e->be.comm->group_destroy(r->e->comm, pg->g);
    if (pg->mpi != MPI_COMM_NULL)
        MPI_Comm_free(&pg->mpi);
    pg->g = NULL;
    pg->mpi = MPI_COMM_NULL;
}

static double now_ms(void)
{
    return pdbx_mono_s() * 1e3;
}

/* One collective of the comm backend on the shared buffer, its time added to `part`. */
static void coll(vrun *r, pdbx_group *g, pdbx_coll c, pdbx_dtype dtype, double bytes, int part)
{
    pdbx_engine *e = r->e;
    char err[ERR_LEN];
    const pdbx_coll_call call = { c, dtype, (size_t)bytes, 1, 0 };
    double t0 = now_ms(), ms = 0;
    if (e->be.comm->run(e->comm, g, &call, r->buf, &ms, err, sizeof err) != 0)
        fail_once(r, err);
    r->part[part] += now_ms() - t0;
}

static int op_runs(const vrun *r, pdbx_op op)
{
    const pdbx_spec *sp = &r->e->spec;
    if (!(pdbx_spec_ops(sp) & PDBX_OP_BIT(op)))
        return 0;
    if (sp->fused_projections) {
        pdbx_op leader = pdbx_fused_leader(op);
        if (leader != PDBX_OP_COUNT && leader != op)
            return 0;      /* runs inside its leader's fused GEMM */
    }
    return 1;
}

static void compute(vrun *r, pdbx_op op, pdbx_pass pass, int layer)
{
    if (r->failed || !op_runs(r, op))
        return;
    pdbx_engine *e = r->e;
    char err[ERR_LEN];
    double ms = 0, t0 = now_ms();
    if (e->be.compute->run_op(e->compute, op, pass, layer, &ms, err, sizeof err) != 0)
        fail_once(r, err);
    r->part[op == PDBX_OP_OPTIMIZER ? PART_OPT : op == PDBX_OP_LOSS ? PART_LOSS
            : r->recomputing ? PART_RECOMP : pass == PDBX_PASS_FWD ? PART_FWD : PART_BWD] += now_ms() - t0;
}

/* A layer op, or its TP all-reduce (comm ops: the two of the layer, fwd and bwd alike), or an
 * EP all-to-all (ep_dispatch, ep_combine: on the MoE layers at EP > 1, fwd and bwd alike; at EP
 * 1 they move nothing); a MoE model's layer runs its kind's ops (pdbx_layer_has_op: mlp_* on
 * dense layers, moe_* and ep_* on MoE layers). */
static void layer_op(vrun *r, pdbx_op op, pdbx_pass pass, int layer)
{
    const int in_spec = (pdbx_spec_ops(&r->e->spec) & PDBX_OP_BIT(op)) != 0;
    if (!pdbx_layer_has_op(&r->e->spec.model, r->stage_layers, layer, op))
        return;
    if (pdbx_op_is_comm(op)) {
        if (pdbx_op_is_tp_allreduce(op) && r->v->tp > 1 && in_spec)
            coll(r, r->cg.g[PDBX_GRID_TP], PDBX_COLL_ALL_REDUCE, r->e->spec.dtype, r->act_bytes, PART_TP);
        else if (!pdbx_op_is_tp_allreduce(op) && r->v->ep > 1 && in_spec)
            coll(r, r->cg.g[PDBX_GRID_EP], PDBX_COLL_ALL_TO_ALL, r->e->spec.dtype, r->ep_bytes, PART_EP);
        return;
    }
    compute(r, op, pass, layer);
}

/* The loss on the last stage (a training sweep's op): its local work, then under TP the
 * all-reduces of Megatron's vocab_parallel_cross_entropy over the tokens, the row max and then
 * the sums of exponentials and target logits together (2 T fp32), in the TP part. */
static void loss_forward(vrun *r)
{
    if (!(pdbx_spec_ops(&r->e->spec) & PDBX_OP_BIT(PDBX_OP_LOSS)))
        return;
    compute(r, PDBX_OP_LOSS, PDBX_PASS_FWD, -1);
    if (r->v->tp > 1) {
        const double tokens = (double)r->v->mbs * r->e->spec.seq_len;
        coll(r, r->cg.g[PDBX_GRID_TP], PDBX_COLL_ALL_REDUCE, PDBX_DTYPE_FP32, 4 * tokens, PART_TP);
        coll(r, r->cg.g[PDBX_GRID_TP], PDBX_COLL_ALL_REDUCE, PDBX_DTYPE_FP32, 8 * tokens, PART_TP);
    }
}

static void forward(vrun *r)
{
    const int first = r->me.pp_rank == 0, last = r->me.pp_rank == r->v->pp - 1;
    if (first)
        compute(r, PDBX_OP_EMBED, PDBX_PASS_FWD, -1);
    for (int l = 0; l < r->stage_layers; l++)
        for (int op = 0; op < PDBX_OP_COUNT; op++)
            if (pdbx_op_is_per_layer((pdbx_op)op))
                layer_op(r, (pdbx_op)op, PDBX_PASS_FWD, l);
    if (last) {
        compute(r, PDBX_OP_FINAL_NORM, PDBX_PASS_FWD, -1);
        compute(r, PDBX_OP_LM_HEAD, PDBX_PASS_FWD, -1);
        loss_forward(r);
    }
}

static void backward(vrun *r)
{
    const int first = r->me.pp_rank == 0, last = r->me.pp_rank == r->v->pp - 1;
    if (last) {
        compute(r, PDBX_OP_LOSS, PDBX_PASS_BWD, -1);
        compute(r, PDBX_OP_LM_HEAD, PDBX_PASS_BWD, -1);
        compute(r, PDBX_OP_FINAL_NORM, PDBX_PASS_BWD, -1);
    }
    const pdbx_recompute rc = r->e->spec.recompute;
    for (int l = r->stage_layers - 1; l >= 0; l--) {
        /* the layer's forward again, its comm too (full), or its attention core's (selective) */
        r->recomputing = 1;
        for (int op = 0; op < PDBX_OP_COUNT && rc != PDBX_RECOMPUTE_NONE; op++)
            if (pdbx_op_is_per_layer((pdbx_op)op) && (rc == PDBX_RECOMPUTE_FULL || op == PDBX_OP_ATTN_CORE))
                layer_op(r, (pdbx_op)op, PDBX_PASS_FWD, l);
        r->recomputing = 0;
        for (int op = PDBX_OP_COUNT - 1; op >= 0; op--)
            if (pdbx_op_is_per_layer((pdbx_op)op))
                layer_op(r, (pdbx_op)op, PDBX_PASS_BWD, l);
    }
    if (first)
        compute(r, PDBX_OP_EMBED, PDBX_PASS_BWD, -1);
}

static void p2p(vrun *r, pair_group *pg)
{
    if (!pg->g) {
        fail_once(r, "internal: a send/recv without its pair group");
        return;
    }
    coll(r, pg->g, PDBX_COLL_SEND_RECV, r->e->spec.dtype, r->act_bytes, PART_PP);
}

/* total bytes of fp32 gradients reduced over g in Megatron's buckets, one after the other:
 * all-reduced, or with the distributed optimizer (spec zero1) reduce-scattered, then the
 * parameters all-gathered in the run's dtype (the same elements), bucket by bucket */
static void bucketed_grad_reduce(vrun *r, pdbx_group *g, double total, double bucket)
{
    const pdbx_spec *sp = &r->e->spec;
    const double esz = pdbx_dtype_bytes(sp->dtype);
    for (double left = total; left > 0; left -= bucket) {
        double bytes = floor((left < bucket ? left : bucket) / 4) * 4;
        if (!sp->zero1) {
            coll(r, g, PDBX_COLL_ALL_REDUCE, PDBX_DTYPE_FP32, bytes, PART_DP);
            continue;
        }
        coll(r, g, PDBX_COLL_REDUCE_SCATTER, PDBX_DTYPE_FP32, bytes, PART_DP);
        coll(r, g, PDBX_COLL_ALL_GATHER, sp->dtype, bytes / 4 * esz, PART_DP);
    }
}

/* The stage's gradients over DP in fp32, a MoE model's routed experts' over their EDP group
 * instead (plan_comm.h), both in the DP part. */
static void dp_allreduce(vrun *r)
{
    if (r->v->dp > 1)
        bucketed_grad_reduce(r, r->cg.g[PDBX_GRID_DP], r->dp_bytes, r->bucket_bytes);
    if (r->edp_bytes > 0)
        bucketed_grad_reduce(r, r->cg.g[PDBX_GRID_EDP], r->edp_bytes, r->edp_bucket_bytes);
}

/* The optimizer step once the gradients are reduced: the engine's op (one layer's parameters)
 * as many times as the rank holds layers' worth, advise's scaling (sizes()). */
static void optimizer_step(vrun *r)
{
    for (int i = 0; i < r->opt_reps; i++)
        compute(r, PDBX_OP_OPTIMIZER, PDBX_PASS_FWD, -1);
}

/* One iteration from an aligned start: this rank's time in *ms. */
static void iteration(vrun *r, double *ms)
{
    pdbx_engine *e = r->e;
    char err[ERR_LEN];
    memset(r->part, 0, sizeof r->part);
    if (e->be.comm->barrier(e->comm, r->world, e->spec.timeout_s, err, sizeof err) != 0)
        fail_once(r, err);
    if (e->be.compute->span_begin(e->compute, PDBX_SPAN_STEP, err, sizeof err) != 0)
        fail_once(r, err);
    for (int i = 0; i < r->nsteps; i++) {
        const pdbx_pipe_step *st = &r->steps[i];
        switch (st->kind) {
        case PDBX_PIPE_FWD: forward(r); break;
        case PDBX_PIPE_BWD: backward(r); break;
        case PDBX_PIPE_SEND_ACT: p2p(r, &r->act_up); break;
        case PDBX_PIPE_RECV_ACT: p2p(r, &r->act_down); break;
        case PDBX_PIPE_SEND_GRAD: p2p(r, &r->grad_down); break;
        case PDBX_PIPE_RECV_GRAD: p2p(r, &r->grad_up); break;
        default: break;
        }
    }
    dp_allreduce(r);
    optimizer_step(r);
    *ms = -1;
    if (e->be.compute->span_end(e->compute, PDBX_SPAN_STEP, ms, err, sizeof err) != 0)
        fail_once(r, err);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The index of the median of n iteration times (for an even n the upper of the two middle
 * ones; ties: the earliest): the iteration whose parts the result reports. */
static int median_iteration(const double *iters, int n)
{
    double sorted[PDBX_VALIDATE_ITERS_MAX];
    memcpy(sorted, iters, sizeof(double) * (size_t)n);
    qsort(sorted, (size_t)n, sizeof(double), cmp_double);
    for (int i = 0; i < n; i++)
        if (iters[i] == sorted[n / 2])
            return i;
    return n - 1;
}

/* Rank 0: the result document at v->out_path. */
static int write_result(vrun *r, const double *iters, const double *parts, char *err, size_t errlen)
{
    const pdbx_validate_args *v = r->v;
    pdbx_engine *e = r->e;
    double sorted[PDBX_VALIDATE_ITERS_MAX];
    memcpy(sorted, iters, sizeof(double) * (size_t)v->iters);
    qsort(sorted, (size_t)v->iters, sizeof(double), cmp_double);
    const int n = v->iters;
    double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = o ? cJSON_AddArrayToObject(o, "iterations_ms") : NULL;
    cJSON *po = o ? cJSON_AddObjectToObject(o, "parts") : NULL;
    int ok = arr && po;
    for (int i = 0; ok && i < n; i++)
        ok = cJSON_AddItemToArray(arr, cJSON_CreateNumber(iters[i]));
    for (int p = 0; ok && p < PART_COUNT; p++)
        ok = cJSON_AddNumberToObject(po, part_names[p], parts[p]) != NULL;
    ok = ok && cJSON_AddNumberToObject(o, "tp", v->tp) && cJSON_AddNumberToObject(o, "pp", v->pp) &&
         cJSON_AddNumberToObject(o, "dp", v->dp) && cJSON_AddNumberToObject(o, "mbs", v->mbs) &&
         cJSON_AddNumberToObject(o, "gbs", v->gbs) && cJSON_AddNumberToObject(o, "layers", v->layers) &&
         cJSON_AddNumberToObject(o, "num_mb", r->num_mb) &&
         cJSON_AddNumberToObject(o, "iters", v->iters) && cJSON_AddNumberToObject(o, "warmup", 1) &&
         cJSON_AddNumberToObject(o, "median_ms", median) &&
         cJSON_AddNumberToObject(o, "min_ms", sorted[0]) &&
         cJSON_AddNumberToObject(o, "max_ms", sorted[n - 1]) &&
         cJSON_AddNumberToObject(o, "dp_bytes", v->dp > 1 ? r->dp_bytes : 0) &&
         (r->edp_bytes <= 0 || cJSON_AddNumberToObject(o, "edp_bytes", r->edp_bytes)) &&
         cJSON_AddNumberToObject(o, "act_bytes", r->act_bytes) &&
         (v->ep <= 1 || (cJSON_AddNumberToObject(o, "ep", v->ep) && cJSON_AddNumberToObject(o, "ep_bytes", r->ep_bytes))) &&
         cJSON_AddStringToObject(o, "backend", e->be.compute->name) &&
         cJSON_AddStringToObject(o, "device", e->be.compute->device_name(e->compute));
    char *text = ok ? cJSON_Print(o) : NULL;
    cJSON_Delete(o);
    if (!text)
        return pdbx_fail(err, errlen, "out of memory writing the result");
    int rc = pdbx_durable_write(v->out_path, text, strlen(text), err, errlen);
    free(text);
    return rc;
}

static void fill_shapes(const vrun *r, pdbx_point_shapes *ps)
{
    const pdbx_spec *sp = &r->e->spec;
    memset(ps, 0, sizeof *ps);
    ps->model = sp->model;
    ps->tp = r->v->tp;
    ps->mbs = r->v->mbs;
    ps->seq_len = sp->seq_len;
    ps->layers = r->stage_layers;
    ps->ops = pdbx_spec_ops(sp);
    ps->passes = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD);
    ps->fused_projections = sp->fused_projections;
    ps->moe_imbalance = sp->moe_imbalance;
    ps->ep = r->v->ep > 1 ? r->v->ep : 1;   /* E / ep experts on this rank, as a sweep's point */
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        pdbx_op_shape_ep(sp, r->v->tp, ps->ep, r->v->mbs, (pdbx_op)op, &ps->shape[op]);
}

/* The message sizes: activations [mbs, seq, h] in the run's dtype; the stage's gradients in
 * fp32 from the planner's parameter count of a model of `layers` layers (stage 0's: its layers
 * and the vocab-parallel embedding), all-reduced in Megatron's buckets, a MoE model's routed
 * experts over their EDP group (plan_comm.h). */
static void sizes(vrun *r)
{
    const pdbx_spec *sp = &r->e->spec;
    pdbx_spec one = *sp;
    one.model.layers = r->v->layers;
    pdbx_plan_comm pc;
    const pdbx_parallel par = { r->v->tp, r->v->pp, r->v->dp, r->v->ep > 1 ? r->v->ep : 1 };
    pdbx_plan_comm_point(&one.model, &par, r->v->mbs, sp->seq_len, sp->dtype,
                         PDBX_BACKEND_CUDA /* no cap: the whole stage */, sp->moe_imbalance, &pc);
    r->edp_bytes = pc.edp_full_bytes;
    r->edp_bucket_bytes = pdbx_plan_dp_bucket_elems(pc.edp) * pdbx_dtype_bytes(PDBX_DTYPE_FP32);
    r->act_bytes = (double)r->v->mbs * sp->seq_len * sp->model.hidden * pdbx_dtype_bytes(sp->dtype);
    r->dp_bytes = pc.dp_full_bytes;
    r->bucket_bytes = pdbx_plan_dp_bucket_elems(r->v->dp) * pdbx_dtype_bytes(PDBX_DTYPE_FP32);
    r->ep_bytes = pdbx_plan_ep_bytes(&sp->model, r->v->tp, r->v->ep, r->v->mbs, sp->seq_len, sp->dtype,
                                     sp->moe_imbalance);
    /* the stage's parameters in optimizer ops of one layer's (the embedding and lm_head in
     * layers' worth, rounded: TinyLlama's 2-layer stage is 4.98 layers' worth) */
    pdbx_memory mem;
    pdbx_memory_predict(&one, &par, r->v->mbs, &mem);
    const double n = pdbx_optimizer_params(&sp->model, r->v->tp, par.ep);
    /* the distributed optimizer steps the rank's 1/DP shard */
    const double shard = sp->zero1 ? r->v->dp : 1;
    r->opt_reps = (pdbx_spec_ops(sp) & PDBX_OP_BIT(PDBX_OP_OPTIMIZER)) && n > 0
                      ? (int)lround(mem.params_per_rank / shard / n) : 0;
}

static int setup(vrun *r, char *err, size_t errlen)
{
    pdbx_engine *e = r->e;
    const pdbx_validate_args *v = r->v;
    if (pdbx_grid_coords_of(e->rank, v->tp, v->pp, v->dp, &r->me) != 0)
        return pdbx_fail(err, errlen, "rank %d is outside the %dx%dx%d grid", e->rank, v->tp, v->pp, v->dp);
    r->stage_layers = v->layers / v->pp;
    r->num_mb = pdbx_validate_num_mb(v);
    size_t cap = pdbx_pipe_max_steps(r->num_mb);
    r->steps = malloc(cap * sizeof *r->steps);
    if (!r->steps)
        return pdbx_fail(err, errlen, "out of memory for the schedule of %d micro-batches", r->num_mb);
    r->nsteps = pdbx_pipe_schedule(v->pp, r->me.pp_rank, r->num_mb, r->steps, cap);
    if (r->nsteps < 0)
        return pdbx_fail(err, errlen, "no 1F1B schedule for pp %d, %d micro-batches", v->pp, r->num_mb);
    pdbx_point_shapes ps;
    fill_shapes(r, &ps);
    if (e->be.compute->prepare(e->compute, &ps, err, errlen) != 0)
        return -1;
    double buf = r->act_bytes;
    if (v->dp > 1) {
        double b = r->dp_bytes < r->bucket_bytes ? r->dp_bytes : r->bucket_bytes;
        buf = b > buf ? b : buf;
    }
    if (r->edp_bytes > 0) {
        double b = r->edp_bytes < r->edp_bucket_bytes ? r->edp_bytes : r->edp_bucket_bytes;
        buf = b > buf ? b : buf;
    }
    if (2 * r->ep_bytes > buf)   /* the all-to-all is out of place: S sent, S received after it */
        buf = 2 * r->ep_bytes;
    return e->be.compute->comm_buffer(e->compute, (size_t)buf + 64, &r->buf, err, errlen);
}

/* Everything a validation set up, whatever happened (built: the config's groups exist); frees r. */
static void teardown(vrun *r, int built)
{
    pdbx_engine *e = r->e;
    if (r->buf) {
        char e2[64];
        e->be.compute->comm_buffer(e->compute, 0, &r->buf, e2, sizeof e2);
    }
    e->be.compute->release(e->compute);
    free_pair(r, &r->act_up);
    free_pair(r, &r->act_down);
    free_pair(r, &r->grad_up);
    free_pair(r, &r->grad_down);
    if (r->world)
        e->be.comm->group_destroy(e->comm, r->world);
    if (r->world_mpi != MPI_COMM_NULL)
        MPI_Comm_free(&r->world_mpi);
    if (built)
        pdbx_groups_free(e, &r->cg);
    free(r->steps);
    free(r);
}

int pdbx_validate_run(pdbx_engine *e, const pdbx_validate_args *v, char *err, size_t errlen)
{
    vrun *r = calloc(1, sizeof *r);
    if (!r)
        return pdbx_fail(err, errlen, "out of memory");
    r->e = e;
    r->v = v;
    r->world_mpi = MPI_COMM_NULL;
    r->act_up.mpi = r->act_down.mpi = r->grad_up.mpi = r->grad_down.mpi = MPI_COMM_NULL;
    char msg[PDBX_MSG_LEN] = "";
    /* groups: collectives every rank makes whatever happened before */
    const pdbx_parallel par = { v->tp, v->pp, v->dp, v->ep > 1 ? v->ep : 1 };
    int rc = pdbx_groups_build(e, &r->cg, &par, msg, sizeof msg);
    int built = rc == 0;
    sizes(r);   /* the same on every rank: whether the EDP group is built is agreed */
    if (rc == 0 && r->edp_bytes > 0)
        rc = pdbx_groups_build_edp(e, &r->cg, msg, sizeof msg);
    if (pdbx_grid_coords_of(e->rank, v->tp, v->pp, v->dp, &r->me) != 0 && rc == 0)
        rc = pdbx_fail(msg, sizeof msg, "rank %d is outside the grid", e->rank);
    char later[PDBX_MSG_LEN] = "";      /* the first failure's message is the one kept */
    MPI_Comm_dup(MPI_COMM_WORLD, &r->world_mpi);
    if (pdbx_group_open(e, &r->world_mpi, e->rank, e->size, &r->world, later, sizeof later) != 0 &&
        rc == 0) {
        rc = -1;
        snprintf(msg, sizeof msg, "%s", later);
    }
    if (build_pairs(r, later, sizeof later) != 0 && rc == 0) {
        rc = -1;
        snprintf(msg, sizeof msg, "%s", later);
    }
    int status = pdbx_agree_status(e, rc == 0 ? PDBX_ST_OK : PDBX_ST_ERROR, msg, -1);
    if (status == PDBX_ST_OK) {
        rc = setup(r, msg, sizeof msg);
        status = pdbx_agree_status(e, rc == 0 ? PDBX_ST_OK : PDBX_ST_ERROR, msg, -1);
    }
    double iters[PDBX_VALIDATE_ITERS_MAX], parts_max[PART_COUNT] = { 0 };
    double iter_parts[PDBX_VALIDATE_ITERS_MAX][PART_COUNT];
    for (int it = -1; status == PDBX_ST_OK && it < v->iters; it++) {   /* -1: the warm-up */
        double mine = 0, all = 0;
        iteration(r, &mine);
        MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        status = pdbx_agree_status(e, r->failed ? PDBX_ST_ERROR : PDBX_ST_OK, r->msg, -1);
        if (status != PDBX_ST_OK)
            snprintf(msg, sizeof msg, "%s", r->msg);
        if (it >= 0) {
            iters[it] = all;
            memcpy(iter_parts[it], r->part, sizeof r->part);
        }
    }
    if (status == PDBX_ST_OK) {
        /* the split of the median iteration (every rank picks the same: iters is agreed), per
         * kind on the rank that took longest in it */
        MPI_Allreduce(iter_parts[median_iteration(iters, v->iters)], parts_max, PART_COUNT, MPI_DOUBLE,
                      MPI_MAX, MPI_COMM_WORLD);
        volatile double sink = e->be.compute->checksum(e->compute);
        (void)sink;
        int wrc = 0;
        if (e->rank == 0)
            wrc = write_result(r, iters, parts_max, msg, sizeof msg);
        status = pdbx_agree_status(e, wrc == 0 ? PDBX_ST_OK : PDBX_ST_ERROR, msg, -1);
    }
    if (status != PDBX_ST_OK)
        pdbx_errf(err, errlen, "%s", msg[0] ? msg : "validation failed on another rank");
    teardown(r, built);
    return status == PDBX_ST_OK ? 0 : -1;
}
