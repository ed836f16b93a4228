/* engine_infer.c: the inference phase (engine_infer.h). */
#include "engine/engine_infer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_adaptive.h"
#include "engine/engine_agree.h"
#include "engine/engine_stats.h"
#include "store/progress.h"
#include "store/util/clock.h"

#define NSTAT PDBX_ESTAT
#define MSG_LEN PDBX_MSG_LEN
#define BATCH_S 0.005

int pdbx_infer_tps(const pdbx_spec *sp, int world, int *tps)
{
    int n = 0;
    for (int c = 0; c < sp->nconfigs && c < PDBX_MAX_CONFIGS; c++) {
        const pdbx_parallel *p = &sp->configs[c];
        if (p->tp * p->pp * p->dp != world)
            continue;
        int i = 0;
        while (i < n && tps[i] != p->tp)
            i++;
        if (i < n)
            continue;
        /* insertion keeps them ascending */
        int j = n++;
        while (j > 0 && tps[j - 1] > p->tp) {
            tps[j] = tps[j - 1];
            j--;
        }
        tps[j] = p->tp;
    }
    return n;
}

/* The ops a tokens row times alone: those of pdbx_tokens_ops that are not timed inside their
 * fused leader's GEMM. */
static int timed_alone(const pdbx_spec *sp, pdbx_op op)
{
    if (!(pdbx_tokens_ops(sp) & PDBX_OP_BIT(op)))
        return 0;
    return !sp->fused_projections || pdbx_fused_leader(op) == PDBX_OP_COUNT || pdbx_fused_leader(op) == op;
}

static int tokens_row_ops(const pdbx_spec *sp)
{
    int n = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        n += (pdbx_tokens_ops(sp) & PDBX_OP_BIT(op)) != 0;
    return n;
}

double pdbx_infer_work(const pdbx_spec *sp, int world)
{
    int tps[PDBX_MAX_CONFIGS];
    const int ntp = pdbx_infer_tps(sp, world, tps);
    const double row = pdbx_progress_infer_ops_work(sp->layers_profiled, tokens_row_ops(sp));
    const double attn = pdbx_progress_coll_work(sp->layers_profiled);
    return ntp * (sp->ntokens * row + (double)pdbx_kv_rows(sp, NULL, 0) * attn);
}

/* ---- repetition of one cell ---------------------------------------------------------------- */
typedef int (*exec_fn)(void *ctx, double *ms, char *err, size_t errlen);

typedef struct {
    double *s;
    size_t n, cap;
} sample_set;

static int sample_push(sample_set *ss, double ms)
{
    if (ss->n == ss->cap) {
        size_t cap = ss->cap ? 2 * ss->cap : 64;
        double *s = realloc(ss->s, cap * sizeof *s);
        if (!s)
            return -1;
        ss->s = s;
        ss->cap = cap;
    }
    ss->s[ss->n++] = ms;
    return 0;
}

/* Runs exec under the spec's repetition rule into ss (warm-up executions dropped). 0, or the
 * backend's failure code with err. */
static int repeat_cell(const pdbx_spec *sp, exec_fn exec, void *ctx, sample_set *ss, char *err, size_t errlen)
{
    double ms;
    int rc;
    ss->n = 0;
    if (sp->repetition == PDBX_REP_FIXED) {
        for (int i = 0; i < sp->warmup + sp->steps; i++) {
            if ((rc = exec(ctx, &ms, err, errlen)) != 0)
                return rc;
            if (i >= sp->warmup && sample_push(ss, ms) != 0)
                goto oom;
        }
        return 0;
    }
    const pdbx_adaptive_rule rule = { sp->target_rel_ci, sp->min_reps, sp->max_reps, sp->max_seconds_per_op };
    if ((rc = exec(ctx, &ms, err, errlen)) != 0)     /* the warm-up execution */
        return rc;
    const double t0 = pdbx_mono_s();
    while (pdbx_adaptive_state(&rule, ss->s, ss->n, pdbx_mono_s() - t0) == PDBX_CELL_MORE) {
        double sum = 0;
        for (size_t i = 0; i < ss->n; i++)
            sum += ss->s[i];
        long batch = pdbx_adaptive_batch(&rule, ss->n, ss->n ? sum / (double)ss->n : 0, BATCH_S);
        for (long b = 0; b < batch; b++) {
            if ((rc = exec(ctx, &ms, err, errlen)) != 0)
                return rc;
            if (sample_push(ss, ms) != 0)
                goto oom;
        }
    }
    return 0;
oom:
    snprintf(err, errlen, "out of memory for the samples");
    return PDBX_EOOM;
}

/* ---- tokens rows --------------------------------------------------------------------------- */
typedef struct {
    pdbx_engine *e;
    pdbx_op op;
} op_ctx;

static int exec_op(void *vctx, double *ms, char *err, size_t errlen)
{
    op_ctx *c = vctx;
    return c->e->be.compute->run_op(c->e->compute, c->op, PDBX_PASS_FWD, 0, ms, err, errlen);
}

/* The spec a tokens row of T tokens is shaped by (seq_len T, one layer). */
static pdbx_spec row_spec(const pdbx_spec *sp, int tokens)
{
    pdbx_spec r = *sp;
    r.seq_len = tokens;
    r.layers_profiled = 1;
    r.ops = pdbx_tokens_ops(sp);
    r.passes = PDBX_PASS_BIT(PDBX_PASS_FWD);
    return r;
}

/* Measures one tokens row on this rank into rows[op * NSTAT]. Returns a PDBX_ST_* status. */
static int tokens_row_local(pdbx_engine *e, const pdbx_spec *rs, int tp, double *rows, char *msg)
{
    pdbx_point_shapes ps;
    memset(&ps, 0, sizeof ps);
    ps.model = rs->model;
    ps.tp = tp;
    ps.mbs = 1;
    ps.seq_len = rs->seq_len;
    ps.layers = 1;
    ps.ops = rs->ops;
    ps.passes = rs->passes;
    ps.fused_projections = rs->fused_projections;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        pdbx_op_shape_for(rs, tp, 1, (pdbx_op)op, &ps.shape[op]);
    char err[MSG_LEN] = "";
    if (e->ev)
        pdbx_events_progress_op(e->ev, "prepare");
    int rc = e->be.compute->prepare(e->compute, &ps, err, sizeof err);
    sample_set ss = { 0 };
    for (int op = 0; rc == 0 && op < PDBX_OP_COUNT; op++) {
        if (!timed_alone(rs, (pdbx_op)op))
            continue;
        if (e->ev)
            pdbx_events_progress_op(e->ev, pdbx_op_name((pdbx_op)op));
        op_ctx c = { e, (pdbx_op)op };
        rc = repeat_cell(rs, exec_op, &c, &ss, err, sizeof err);
        if (rc != 0)
            break;
        const int fused = rs->fused_projections && pdbx_fused_leader((pdbx_op)op) == (pdbx_op)op;
        for (int m = 0; m < PDBX_OP_COUNT; m++) {
            if (m != op && !(fused && pdbx_fused_leader((pdbx_op)m) == (pdbx_op)op &&
                             (rs->ops & PDBX_OP_BIT(m))))
                continue;
            /* a fused group: each op's FLOP share of every sample, as the points attribute it */
            double share = fused ? pdbx_fused_share(rs, tp, 1, (pdbx_op)m) : 1.0;
            double *part = malloc((ss.n ? ss.n : 1) * sizeof *part);
            if (!part) {
                rc = PDBX_EOOM;
                snprintf(err, sizeof err, "out of memory for the samples");
                break;
            }
            for (size_t i = 0; i < ss.n; i++)
                part[i] = ss.s[i] * share;
            pdbx_estats_pack(rows + (size_t)m * NSTAT, part, ss.n);
            free(part);
        }
    }
    free(ss.s);
    if (rc == 0) {
        volatile double sink = e->be.compute->checksum(e->compute);
        (void)sink;
    }
    e->be.compute->release(e->compute);
    snprintf(msg, MSG_LEN, "%s", err);
    return rc == 0 ? PDBX_ST_OK : rc == PDBX_EOOM ? PDBX_ST_OOM : rc == PDBX_EFATAL ? PDBX_ST_FATAL
                                                                                    : PDBX_ST_ERROR;
}

/* The element-wise max over the ranks of rows (n doubles) to rank 0. */
static void reduce_max(pdbx_engine *e, double *rows, int n)
{
    if (e->rank == 0)
        MPI_Reduce(MPI_IN_PLACE, rows, n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    else
        MPI_Reduce(rows, NULL, n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
}

static void warn_row(pdbx_engine *e, const char *what, const char *msg)
{
    if (e->rank != 0 || !e->ev)
        return;
    char m[2 * MSG_LEN];   /* what (< 128) and msg (< MSG_LEN) always fit */
    snprintf(m, sizeof m, "inference phase: %s left out: %s", what, msg);
    pdbx_events_warning(e->ev, m);
}

static void row_done(pdbx_engine *e, double work)
{
    if (e->ev)
        pdbx_events_progress_infer_done(e->ev, work);
}

/* 1: stop the phase (cancelled, or fatal with err set). */
static int tokens_rows(pdbx_engine *e, int tp, char *err, size_t errlen)
{
    const pdbx_spec *sp = &e->spec;
    const double work = pdbx_progress_infer_ops_work(sp->layers_profiled, tokens_row_ops(sp));
    int oom_at = 0;
    for (int i = 0; i < sp->ntokens; i++) {
        const int T = sp->tokens[i];
        char what[96];
        snprintf(what, sizeof what, "tokens row TP %d, %d tokens", tp, T);
        if (pdbx_agree_cancel(e, -1))
            return 1;
        if (oom_at) {
            char m[MSG_LEN];
            snprintf(m, sizeof m, "after the OOM at %d tokens", oom_at);
            warn_row(e, what, m);
            row_done(e, work);
            continue;
        }
        const pdbx_spec rs = row_spec(sp, T);
        double rows[PDBX_OP_COUNT * NSTAT];
        memset(rows, 0, sizeof rows);
        char msg[MSG_LEN] = "";
        int st = tokens_row_local(e, &rs, tp, rows, msg);
        st = pdbx_agree_status(e, st, msg, -1);
        if (st == PDBX_ST_FATAL) {
            snprintf(err, errlen, "%s: %s", what, msg);
            return 1;
        }
        if (st != PDBX_ST_OK) {
            warn_row(e, what, msg);
            if (st == PDBX_ST_OOM)
                oom_at = T;
            row_done(e, work);
            continue;
        }
        reduce_max(e, rows, PDBX_OP_COUNT * NSTAT);
        if (e->rank == 0 && e->ev) {
            pdbx_infer_tokens r;
            memset(&r, 0, sizeof r);
            r.tp = tp;
            r.tokens = T;
            for (int op = 0; op < PDBX_OP_COUNT; op++)
                pdbx_estats_unpack(rows + (size_t)op * NSTAT, &r.op[op]);
            pdbx_events_emit(e->ev, pdbx_event_infer_tokens(&r));
        }
        row_done(e, work);
    }
    return 0;
}

/* ---- kv rows ------------------------------------------------------------------------------- */
typedef struct {
    pdbx_engine *e;
    pdbx_attn_kv_shape s;
} kv_ctx;

static int exec_kv(void *vctx, double *ms, char *err, size_t errlen)
{
    kv_ctx *c = vctx;
    return c->e->be.compute->attn_kv(c->e->compute, &c->s, ms, err, errlen);
}

static int kv_rows(pdbx_engine *e, int tp, const pdbx_kv_row *rows, size_t nrows, char *err, size_t errlen)
{
    const pdbx_spec *sp = &e->spec;
    const pdbx_model *m = &sp->model;
    const double work = pdbx_progress_coll_work(sp->layers_profiled);
    const int heads = m->heads / tp, kvh = m->kv_heads >= tp ? m->kv_heads / tp : 1;
    int oom_prefill = 0, oom_decode = 0;
    for (size_t i = 0; i < nrows; i++) {
        const pdbx_kv_row *r = &rows[i];
        const int prefill = r->chunk > 0;
        char what[128];
        snprintf(what, sizeof what, "%s row TP %d, batch %d, chunk %d, kv %d", prefill ? "prefill" : "decode",
                 tp, r->batch, r->chunk, r->kv);
        if (pdbx_agree_cancel(e, -1)) {
            e->be.compute->release(e->compute);
            return 1;
        }
        if (prefill ? oom_prefill : oom_decode) {
            warn_row(e, what, "after an OOM of a smaller row");
            row_done(e, work);
            continue;
        }
        if (e->ev)
            pdbx_events_progress_op(e->ev, prefill ? "attn_prefill" : "attn_decode");
        kv_ctx c = { e, { r->batch, prefill ? r->chunk : 1, prefill ? r->kv + r->chunk : r->kv, heads, kvh,
                          m->head_dim } };
        sample_set ss = { 0 };
        char msg[MSG_LEN] = "";
        int rc = repeat_cell(sp, exec_kv, &c, &ss, msg, sizeof msg);
        double row[NSTAT] = { 0 };
        if (rc == 0)
            pdbx_estats_pack(row, ss.s, ss.n);
        free(ss.s);
        int st = rc == 0 ? PDBX_ST_OK : rc == PDBX_EOOM ? PDBX_ST_OOM : rc == PDBX_EFATAL ? PDBX_ST_FATAL
                                                                                        : PDBX_ST_ERROR;
        st = pdbx_agree_status(e, st, msg, -1);
        if (st == PDBX_ST_FATAL) {
            snprintf(err, errlen, "%s: %s", what, msg);
            e->be.compute->release(e->compute);
            return 1;
        }
        if (st != PDBX_ST_OK) {
            warn_row(e, what, msg);
            if (st == PDBX_ST_OOM)
                *(prefill ? &oom_prefill : &oom_decode) = 1;
            row_done(e, work);
            continue;
        }
        reduce_max(e, row, NSTAT);
        if (e->rank == 0 && e->ev) {
            pdbx_infer_attn a = { tp, r->batch, r->chunk, r->kv, heads, kvh, { 0 } };
            pdbx_estats_unpack(row, &a.time);
            pdbx_events_emit(e->ev, pdbx_event_infer_attn(&a));
        }
        row_done(e, work);
    }
    e->be.compute->release(e->compute);   /* attn_kv's buffers */
    return 0;
}

int pdbx_infer_sweep(pdbx_engine *e, char *err, size_t errlen)
{
    const pdbx_spec *sp = &e->spec;
    const size_t nkv = pdbx_kv_rows(sp, NULL, 0);
    if (sp->ntokens == 0 && nkv == 0)
        return 0;
    pdbx_kv_row *rows = nkv ? calloc(nkv, sizeof *rows) : NULL;
    if (nkv && !rows) {
        snprintf(err, errlen, "inference phase: out of memory for %zu kv rows", nkv);
        return -1;
    }
    pdbx_kv_rows(sp, rows, nkv);
    int tps[PDBX_MAX_CONFIGS];
    const int ntp = pdbx_infer_tps(sp, e->size, tps);
    if (e->ev)
        pdbx_events_progress_point(e->ev, -1);
    err[0] = '\0';
    int stop = 0;
    for (int i = 0; i < ntp && !stop; i++)
        stop = tokens_rows(e, tps[i], err, errlen) || kv_rows(e, tps[i], rows, nkv, err, errlen);
    free(rows);
    return stop && err[0] ? -1 : 0;
}
