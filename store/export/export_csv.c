/* export_csv.c: Vidur-style profiling CSVs (export.h, docs/exports.md, design.md section 6).
 *
 *  mlp.csv         one row per ok point per config: time_stats.<op>.{min,max,mean,median,std}
 *                  for every op measured in some row, then n_head, n_kv_head, n_embd,
 *                  n_expanded_embd, vocab_size, use_gated_mlp, num_tokens,
 *                  num_tensor_parallel_workers (Vidur's MlpWrapper.profile() keys, in its order).
 *  all_reduce.csv  the collectives sweep's all_reduce entries (resp. its send_recv
 *  send_recv.csv   entries of 2 ranks): time_stats.<coll>.{min,max,mean,median,std}, rank,
 *                  num_workers, size, collective, devices_per_node, max_devices_per_node.
 *                  Only the sweep: Vidur's loader fits one model per (num_workers,
 *                  devices_per_node) on every all_reduce row it finds, so any other row would
 *                  be mixed into that fit.
 *  step_comm.csv   the points' own TP all-reduce, PP send/recv and DP all-reduce, kept apart
 *                  (the same columns, then kind, tp, pp, dp, mbs, num_tokens).
 * `size` is Vidur's: bytes of each rank's buffer at 2 bytes per element (its profiler writes
 * elements x 2 whatever it measured, and its predictor reads num_tokens = size / n_embd / 2),
 * i.e. 2 x S / (the run's element size), S the nccl-tests message size the run records.
 *
 * Ops use Vidur's names where Vidur times the same work (q, k and v fused into attn_pre_proj,
 * gate and up fused into mlp_up_proj, as Vidur's fused GEMMs do) and pdbx's names otherwise.
 * A fused op's min, max, mean and median are the sums of its parts' (the mean exactly, the
 * others as an estimate: per-sample sums are not kept) and its std is the root of the summed
 * variances (parts taken as independent). Unmeasured cells are empty (pandas reads NaN).
 * Fields follow RFC 4180: a string holding a comma, quote, CR or LF is quoted, quotes doubled.
 *
 *  meta.json       the run's identity and how its GEMMs were measured (export_common.h,
 *                  pdbx_export_gemm_modes): with fused_projections, attn_pre_proj and
 *                  mlp_up_proj are the fused GEMMs' own measurements (their parts are FLOP-share
 *                  splits of the same samples, so min, max and median sum exactly too).
 */
#include "store/util/err.h"
#include "store/export/export.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "store/util/fs.h"
#include "store/util/text.h"
#include "store/export/export_common.h"

/* ---- a growable text buffer; the first failed append sticks (checked once at the end) -- */
typedef struct {
    char *data;
    size_t len, cap;
    int oom;
} csv_buf;

static void buf_put(csv_buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void buf_str(csv_buf *b, const char *s) { buf_put(b, s, strlen(s)); }

/* A string field under RFC 4180. */
static void buf_field(csv_buf *b, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        buf_str(b, s);
        return;
    }
    buf_put(b, "\"", 1);
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            buf_put(b, "\"", 1);
        buf_put(b, p, 1);
    }
    buf_put(b, "\"", 1);
}

/* The shortest "%.Ng" that reads back to the same double (what Python's repr does, so the
 * file matches what pandas would have written); integral values without an exponent. */
static void buf_num(csv_buf *b, double v)
{
    char s[64];
    if (!isfinite(v))
        return;                                   /* empty field: not measured */
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(s, sizeof s, "%.0f", v);
        buf_str(b, s);
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, v);
        if (strtod(s, NULL) == v)
            break;
    }
    buf_str(b, s);
}

static void buf_int(csv_buf *b, long v)
{
    char s[32];
    snprintf(s, sizeof s, "%ld", v);
    buf_str(b, s);
}

static const char *const stat_cols[5] = { "min", "max", "mean", "median", "std" };

static void stats_values(const pdbx_stats *s, double out[5])
{
    out[0] = s->min;
    out[1] = s->max;
    out[2] = s->mean;
    out[3] = s->median;
    out[4] = s->std;
}

static void header_stats(csv_buf *b, const char *name, int *first)
{
    for (int i = 0; i < 5; i++) {
        if (!*first)
            buf_put(b, ",", 1);
        *first = 0;
        char col[96];
        snprintf(col, sizeof col, "time_stats.%s.%s", name, stat_cols[i]);
        buf_field(b, col);
    }
}

/* meta.json of a CSV export; 0, or -1 out of memory. */
static int csv_meta(const pdbx_run *run, csv_buf *b)
{
    int ok = 1;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return -1;
    pdbx_json_str(&ok, o, "format", "pdbx Vidur CSV profile");
    pdbx_export_run_identity(&ok, o, run);
    pdbx_export_gemm_modes(&ok, o, run);
    char *raw = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    char *text = pdbx_json_text_safe(raw);   /* valid UTF-8 whatever the run held */
    cJSON_free(raw);
    if (!text)
        return -1;
    b->data = text;
    b->len = strlen(text);
    return 0;
}

/* ---- the mlp.csv op table ------------------------------------------------------------- */
typedef struct {
    const char *name;     /* column name: Vidur's where it has one */
    uint32_t parts;       /* pdbx ops summed into it */
} csv_op;

static const csv_op mlp_ops[] = {
    { "emb", PDBX_OP_BIT(PDBX_OP_EMBED) },
    { "input_layernorm", PDBX_OP_BIT(PDBX_OP_INPUT_NORM) },
    { "attn_pre_proj", PDBX_OP_BIT(PDBX_OP_ATTN_Q) | PDBX_OP_BIT(PDBX_OP_ATTN_K)
                       | PDBX_OP_BIT(PDBX_OP_ATTN_V) },
    { "attn_core", PDBX_OP_BIT(PDBX_OP_ATTN_CORE) },
    { "attn_post_proj", PDBX_OP_BIT(PDBX_OP_ATTN_O) },
    { "post_attention_layernorm", PDBX_OP_BIT(PDBX_OP_POST_ATTN_NORM) },
    { "mlp_up_proj", PDBX_OP_BIT(PDBX_OP_MLP_GATE) | PDBX_OP_BIT(PDBX_OP_MLP_UP) },
    { "mlp_act", PDBX_OP_BIT(PDBX_OP_MLP_ACT_FN) },
    { "mlp_down_proj", PDBX_OP_BIT(PDBX_OP_MLP_DOWN) },
    { "final_norm", PDBX_OP_BIT(PDBX_OP_FINAL_NORM) },
    { "lm_head", PDBX_OP_BIT(PDBX_OP_LM_HEAD) },
};
#define N_MLP_OPS (sizeof mlp_ops / sizeof mlp_ops[0])

/* Fills the five statistics of a (possibly fused) op; 0 when some part was not measured. */
static int csv_op_stats(const pdbx_rt_point *pt, const csv_op *c, double out[5])
{
    double var = 0.0;
    for (int i = 0; i < 5; i++)
        out[i] = 0.0;
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        if (!(c->parts & PDBX_OP_BIT(op)))
            continue;
        const pdbx_rt_cell *cell = &pt->op[op];
        if (!cell->valid)
            return 0;
        double v[5];
        stats_values(&cell->stats, v);
        for (int i = 0; i < 4; i++)
            out[i] += v[i];
        var += v[4] * v[4];
    }
    out[4] = sqrt(var);
    return 1;
}

/* The model columns after the op statistics (Vidur's MlpWrapper.profile() keys). */
static void mlp_model_fields(const pdbx_run *run, const pdbx_rt_point *pt, csv_buf *b)
{
    int seq_len = pt->point->seq_len > 0 ? pt->point->seq_len : run->seq_len;
    const long v[] = { run->model.heads, run->model.kv_heads, run->model.hidden,
                       run->model.intermediate, run->model.vocab };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        buf_int(b, v[i]);
        buf_put(b, ",", 1);
    }
    buf_field(b, "True");                 /* Llama's SwiGLU MLP is gated */
    buf_put(b, ",", 1);
    buf_int(b, (long)pt->mbs * seq_len);
    buf_put(b, ",", 1);
    buf_int(b, pt->point->tp);
    buf_put(b, "\n", 1);
}

static void mlp_row(const pdbx_run *run, const pdbx_rt_point *pt, const int *present, csv_buf *b)
{
    for (size_t c = 0; c < N_MLP_OPS; c++) {
        if (!present[c])
            continue;
        double v[5];
        int ok = csv_op_stats(pt, &mlp_ops[c], v);
        for (int s = 0; s < 5; s++) {
            if (ok)
                buf_num(b, v[s]);
            buf_put(b, ",", 1);
        }
    }
    mlp_model_fields(run, pt, b);
}

static int mlp_csv(const pdbx_runtable *t, csv_buf *b, char *err, size_t errlen)
{
    /* Columns: ops measured in at least one exported row. */
    int present[N_MLP_OPS] = { 0 };
    size_t nrows = 0;
    for (size_t k = 0; k < t->nconfigs; k++)
        for (size_t i = 0; i < t->configs[k].npoints; i++) {
            const pdbx_rt_point *pt = &t->configs[k].points[i];
            if (pt->status != PDBX_POINT_OK)
                continue;
            nrows++;
            for (size_t c = 0; c < N_MLP_OPS; c++) {
                double v[5];
                present[c] |= csv_op_stats(pt, &mlp_ops[c], v);
            }
        }
    if (nrows == 0) {
        pdbx_errf(err, errlen, "run %s has no ok point: nothing to write to mlp.csv", t->run->id);
        return -1;
    }
    int first = 1;
    for (size_t c = 0; c < N_MLP_OPS; c++)
        if (present[c])
            header_stats(b, mlp_ops[c].name, &first);
    buf_str(b, first ? "" : ",");
    buf_str(b, "n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,"
               "num_tensor_parallel_workers\n");
    for (size_t k = 0; k < t->nconfigs; k++)
        for (size_t i = 0; i < t->configs[k].npoints; i++)
            if (t->configs[k].points[i].status == PDBX_POINT_OK)
                mlp_row(t->run, &t->configs[k].points[i], present, b);
    return 0;
}

/* ---- collectives ---------------------------------------------------------------------- */

/* Ranks of one group that share a node: a group of n ranks spaced `stride` apart, on nodes of
 * rpn consecutive ranks. The engine places ranks as Megatron does (engine/engine_grid.h:
 * world_rank = tp_rank + TP * (dp_rank + DP * pp_rank)): TP stride 1, DP stride TP, PP TP*DP.
 * The stride comes from a file (tp, dp may be 0 or huge): it is a 64-bit product, and one below
 * 1 is taken as 1, so no value divides by zero or overflows. */
static int group_devices_per_node(int n, long long stride, int rpn)
{
    if (rpn <= 0)
        return n;
    if (stride < 1)
        stride = 1;
    if (stride >= rpn)
        return 1;
    long long per = rpn / stride;
    return per < n ? (int)per : n;
}

static void coll_header(csv_buf *b, const char *coll)
{
    int first = 1;
    header_stats(b, coll, &first);
    buf_str(b, ",rank,num_workers,size,collective,devices_per_node,max_devices_per_node\n");
}

/* Vidur's `size` of a message of S bytes in a run of dtype (file comment). */
static double vidur_size(const pdbx_run *run, double bytes)
{
    double elem = strcmp(run->dtype, "fp32") == 0 ? 4.0 : 2.0;
    return 2.0 * floor(bytes / elem);
}

static void coll_row(csv_buf *b, const pdbx_stats *t, int num_workers, double size,
                     const char *coll, int devices_per_node, int max_devices_per_node)
{
    double v[5];
    stats_values(t, v);
    for (int s = 0; s < 5; s++) {
        buf_num(b, v[s]);
        buf_put(b, ",", 1);
    }
    buf_str(b, "0,");                 /* rank 0's timing, as Vidur keeps */
    buf_int(b, num_workers);
    buf_put(b, ",", 1);
    buf_num(b, size);
    buf_put(b, ",", 1);
    buf_field(b, coll);
    buf_put(b, ",", 1);
    buf_int(b, devices_per_node);
    buf_put(b, ",", 1);
    buf_int(b, max_devices_per_node);      /* the caller ends the line */
}

/* kind: "all_reduce" or "send_recv": the collectives sweep's entries.
 * The engine's ranks_per_node is how many of the group's ranks share rank 0's node, i.e.
 * Vidur's devices_per_node; max_devices_per_node is the launch's ranks per node. The engine's
 * send_recv pairs neighbours (0-1, 2-3, ...) of a group; only the group of 2 is one pair
 * alone, as Vidur measures it, so larger groups (concurrent pairs) are left out. */
static void coll_csv(const pdbx_run *run, const char *kind, csv_buf *b)
{
    coll_header(b, kind);
    int send_recv = strcmp(kind, "send_recv") == 0;
    for (size_t i = 0; i < run->ncoll; i++) {
        const pdbx_coll_result *c = &run->coll[i];
        if (strcmp(c->coll, kind) != 0 || (send_recv && c->nranks != 2))
            continue;
        int together = c->ranks_per_node > 0 ? c->ranks_per_node : c->nranks;
        if (together > c->nranks)
            together = c->nranks;
        int max_dev = run->ranks_per_node > together ? run->ranks_per_node : together;
        coll_row(b, &c->time, c->nranks, vidur_size(run, c->bytes), kind, together, max_dev);
        buf_put(b, "\n", 1);
    }
}

/* step_comm.csv: each ok point's in-step collectives, one row per kind measured. */
static void step_comm_csv(const pdbx_run *run, csv_buf *b)
{
    int first = 1;
    header_stats(b, "step_comm", &first);
    buf_str(b, ",rank,num_workers,size,collective,devices_per_node,max_devices_per_node,"
               "kind,tp,pp,dp,mbs,num_tokens\n");
    int rpn = run->ranks_per_node;
    for (size_t i = 0; i < run->npoints; i++) {
        const pdbx_point *pt = &run->points[i];
        if (pt->status != PDBX_POINT_OK)
            continue;
        const struct {
            const pdbx_comm_cell *cell;
            const char *kind, *coll;
            long long stride;      /* Megatron placement: TP 1, DP TP, PP TP x DP */
        } step[] = {
            { &pt->tp_allreduce, "tp_allreduce", "all_reduce", 1 },
            { &pt->pp_sendrecv, "pp_sendrecv", "send_recv", (long long)pt->tp * pt->dp },
            { &pt->dp_allreduce, "dp_allreduce", "all_reduce", pt->tp },
        };
        int seq_len = pt->seq_len > 0 ? pt->seq_len : run->seq_len;
        for (size_t k = 0; k < sizeof step / sizeof step[0]; k++) {
            const pdbx_comm_cell *cc = step[k].cell;
            if (!cc->valid)
                continue;
            int n = cc->group_size > 0 ? cc->group_size : 2;
            int max_dev = rpn > 0 ? rpn : n;
            coll_row(b, &cc->time, n, vidur_size(run, cc->bytes), step[k].coll,
                     group_devices_per_node(n, step[k].stride, max_dev), max_dev);
            buf_put(b, ",", 1);
            buf_field(b, step[k].kind);
            const long v[] = { pt->tp, pt->pp, pt->dp, pt->mbs, (long)pt->mbs * seq_len };
            for (size_t j = 0; j < sizeof v / sizeof v[0]; j++) {
                buf_put(b, ",", 1);
                buf_int(b, v[j]);
            }
            buf_put(b, "\n", 1);
        }
    }
}

static int publish(const char *dir, const char *name, csv_buf *b, pdbx_wrote_fn wrote,
                   void *ctx, char *err, size_t errlen)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
        pdbx_errf(err, errlen, "%s: path too long", dir);
        return -1;
    }
    if (b->oom) {
        pdbx_errf(err, errlen, "%s: out of memory building the file", path);
        return -1;
    }
    return pdbx_export_publish(path, b->data ? b->data : "", b->len, wrote, ctx, err, errlen);
}

int pdbx_export_csv(const pdbx_run *run, const char *dir,
                    pdbx_wrote_fn wrote, void *ctx, char *err, size_t errlen)
{
    int rc = -1;
    csv_buf mlp = { 0 }, ar = { 0 }, sr = { 0 }, step = { 0 }, meta = { 0 };
    pdbx_runtable t;
    if (pdbx_runtable_build(run, 0, &t) != 0) {
        pdbx_errf(err, errlen, "out of memory exporting run %s", run->id);
        return -1;
    }
    /* Build all three first, so a run with nothing to export writes no file at all. */
    if (mlp_csv(&t, &mlp, err, errlen) != 0)
        goto out;
    coll_csv(run, "all_reduce", &ar);
    coll_csv(run, "send_recv", &sr);
    step_comm_csv(run, &step);
    if (csv_meta(run, &meta) != 0) {
        pdbx_errf(err, errlen, "out of memory building meta.json of run %s", run->id);
        goto out;
    }
    if (pdbx_export_mkdirs(dir, err, errlen) != 0)
        goto out;
    if (publish(dir, "mlp.csv", &mlp, wrote, ctx, err, errlen) != 0
        || publish(dir, "all_reduce.csv", &ar, wrote, ctx, err, errlen) != 0
        || publish(dir, "send_recv.csv", &sr, wrote, ctx, err, errlen) != 0
        || publish(dir, "step_comm.csv", &step, wrote, ctx, err, errlen) != 0
        || publish(dir, "meta.json", &meta, wrote, ctx, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    pdbx_runtable_free(&t);
    free(mlp.data);
    free(ar.data);
    free(sr.data);
    free(step.data);
    free(meta.data);
    return rc;
}
