/* export_csv.c: Vidur-style profiling CSVs (export.h, docs/exports.md, design.md section 6).
 *
 *  mlp.csv         one row per tokens row of the inference phase (num_tokens = its T) when the
 *                  run has them, else one per ok point (num_tokens = MBS x seq_len):
 *                  time_stats.<op>.{min,max,mean,median,std} for Vidur's ten ops (emb,
 *                  input_layernorm, attn_pre_proj, attn_rope, attn_post_proj,
 *                  post_attention_layernorm, mlp_up_proj, mlp_act, mlp_down_proj, add: always
 *                  written, empty where the op was not measured) and pdbx's attn_qk_norm, attn_core,
 *                  final_norm, lm_head where measured, then n_head, n_kv_head, n_embd,
 *                  n_expanded_embd, vocab_size, use_gated_mlp, num_tokens,
 *                  num_tensor_parallel_workers (Vidur's MlpWrapper.profile() keys, in its order).
 *  attention.csv   (runs with kv_cache rows only) one row per infer_attn row:
 *                  time_stats.attn_prefill.* filled on prefill rows, time_stats.attn_decode.* on
 *                  decode rows, then Vidur's AttentionWrapper keys n_embd, n_q_head, n_kv_head,
 *                  block_size (16), num_tensor_parallel_workers, max_model_len (max_kv),
 *                  batch_size, prefill_chunk_size (0: decode), kv_cache_size (prefix or K),
 *                  is_prefill, attention_backend. No attn_kv_cache_save (Vidur fills 0).
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
/* A column and the pdbx ops summed into it, by name: an op this build does not know (attn_rope
 * and mlp_residual before they were added) is simply never measured, so its column is empty. */
#define MAX_PARTS 3
typedef struct {
    const char *name;                 /* column name: Vidur's where it has one */
    const char *parts[MAX_PARTS];     /* pdbx op names summed into it (NULL-terminated) */
    int vidur;                        /* 1: one of Vidur's columns (written even when empty) */
} csv_op;

static const csv_op mlp_ops[] = {
    { "emb", { "embed" }, 1 },
    { "input_layernorm", { "input_norm" }, 1 },
    { "attn_pre_proj", { "attn_q", "attn_k", "attn_v" }, 1 },
    { "attn_rope", { "attn_rope" }, 1 },
    { "attn_post_proj", { "attn_o" }, 1 },
    { "post_attention_layernorm", { "post_attn_norm" }, 1 },
    { "mlp_up_proj", { "mlp_gate", "mlp_up" }, 1 },
    { "mlp_act", { "mlp_act_fn" }, 1 },
    { "mlp_down_proj", { "mlp_down" }, 1 },
    /* Vidur's add is the residual add after the MLP only (its mlp_impl.py) */
    { "add", { "mlp_residual" }, 1 },
    { "attn_qk_norm", { "attn_qk_norm" }, 0 },
    { "attn_core", { "attn_core" }, 0 },
    { "final_norm", { "final_norm" }, 0 },
    { "lm_head", { "lm_head" }, 0 },
    /* a mixture-of-experts layer's ops (Vidur has no columns for them): pdbx's names */
    { "moe_router", { "moe_router" }, 0 },
    { "moe_permute", { "moe_permute" }, 0 },
    { "moe_expert_gate", { "moe_expert_gate" }, 0 },
    { "moe_expert_up", { "moe_expert_up" }, 0 },
    { "moe_expert_act", { "moe_expert_act" }, 0 },
    { "moe_expert_down", { "moe_expert_down" }, 0 },
    { "moe_unpermute", { "moe_unpermute" }, 0 },
    { "moe_shared_gate", { "moe_shared_gate" }, 0 },
    { "moe_shared_up", { "moe_shared_up" }, 0 },
    { "moe_shared_act", { "moe_shared_act" }, 0 },
    { "moe_shared_down", { "moe_shared_down" }, 0 },
};
#define N_MLP_OPS (sizeof mlp_ops / sizeof mlp_ops[0])

/* One mlp.csv row: a tokens row of the inference phase (infer set), or an ok point. */
typedef struct {
    const pdbx_infer_tokens *infer;
    const pdbx_rt_point *pt;
    pdbx_opmask absent;      /* ops the model does not have (pdbx_run_absent_ops) */
} mlp_src;

/* The statistics of pdbx op `name` in a row, or NULL when it was not measured there. */
static const pdbx_stats *src_op(const mlp_src *r, const char *name)
{
    int op = pdbx_op_from_name(name);
    if (op < 0)
        return NULL;
    if (r->infer)
        return r->infer->op[op].count > 0 ? &r->infer->op[op] : NULL;
    return r->pt->op[op].valid ? &r->pt->op[op].stats : NULL;
}

/* Fills the five statistics of a (possibly fused) op; 0 when some part was not measured. A
 * part the model does not have costs nothing: a plain MLP's mlp_up_proj is its one fc1 GEMM
 * (mlp_up), a model with learned positions has an attn_rope of 0 (its position add is inside
 * emb), so Vidur's forests, which need every column, fit. */
static int csv_op_stats(const mlp_src *r, const csv_op *c, double out[5])
{
    double var = 0.0;
    int measured = 0;
    for (int i = 0; i < 5; i++)
        out[i] = 0.0;
    for (int k = 0; k < MAX_PARTS && c->parts[k]; k++) {
        int op = pdbx_op_from_name(c->parts[k]);
        if (op >= 0 && (r->absent & PDBX_OP_BIT(op)))
            continue;
        const pdbx_stats *st = src_op(r, c->parts[k]);
        if (!st)
            return 0;
        double v[5];
        stats_values(st, v);
        for (int i = 0; i < 4; i++)
            out[i] += v[i];
        var += v[4] * v[4];
        measured++;
    }
    out[4] = sqrt(var);
    /* a column of ops the model lacks altogether: Vidur's get zeros, pdbx's own are not written */
    return measured > 0 || c->vidur;
}

/* The model columns after the op statistics (Vidur's MlpWrapper.profile() keys). */
static void mlp_model_fields(const pdbx_run *run, long num_tokens, int tp, csv_buf *b)
{
    const long v[] = { run->model.heads, run->model.kv_heads, run->model.hidden,
                       run->model.intermediate, run->model.vocab };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        buf_int(b, v[i]);
        buf_put(b, ",", 1);
    }
    /* Vidur's use_gated_mlp: SiLU-and-mul over a 2I up projection, or a plain GELU MLP */
    buf_field(b, pdbx_run_absent_ops(run) & PDBX_OP_BIT(PDBX_OP_MLP_GATE) ? "False" : "True");
    buf_put(b, ",", 1);
    buf_int(b, num_tokens);
    buf_put(b, ",", 1);
    buf_int(b, tp);
    buf_put(b, "\n", 1);
}

static void mlp_row(const pdbx_run *run, const mlp_src *r, const int *present, csv_buf *b)
{
    for (size_t c = 0; c < N_MLP_OPS; c++) {
        if (!present[c])
            continue;
        double v[5];
        int ok = csv_op_stats(r, &mlp_ops[c], v);
        for (int s = 0; s < 5; s++) {
            if (ok)
                buf_num(b, v[s]);
            buf_put(b, ",", 1);
        }
    }
    if (r->infer) {
        mlp_model_fields(run, r->infer->tokens, r->infer->tp, b);
    } else {
        int seq_len = r->pt->point->seq_len > 0 ? r->pt->point->seq_len : run->seq_len;
        mlp_model_fields(run, (long)r->pt->mbs * seq_len, r->pt->point->tp, b);
    }
}

/* Calls fn on every row mlp.csv holds: the inference phase's tokens rows when the run has
 * them (the token counts Vidur interpolates over), else every ok point (num_tokens = MBS x
 * seq_len). Returns the count. */
typedef void (*mlp_visit)(const mlp_src *r, void *ctx);
static size_t mlp_rows(const pdbx_runtable *t, mlp_visit fn, void *ctx)
{
    size_t n = 0;
    const pdbx_run *run = t->run;
    const pdbx_opmask absent = pdbx_run_absent_ops(run);
    if (run->ninfer_tokens > 0) {
        for (size_t i = 0; i < run->ninfer_tokens; i++, n++) {
            mlp_src r = { &run->infer_tokens[i], NULL, absent };
            fn(&r, ctx);
        }
        return n;
    }
    for (size_t k = 0; k < t->nconfigs; k++)
        for (size_t i = 0; i < t->configs[k].npoints; i++) {
            if (t->configs[k].points[i].status != PDBX_POINT_OK)
                continue;
            mlp_src r = { NULL, &t->configs[k].points[i], absent };
            fn(&r, ctx);
            n++;
        }
    return n;
}

static void mark_present(const mlp_src *r, void *ctx)
{
    int *present = ctx;
    for (size_t c = 0; c < N_MLP_OPS; c++) {
        double v[5];
        present[c] |= mlp_ops[c].vidur || csv_op_stats(r, &mlp_ops[c], v);
    }
}

typedef struct {
    const pdbx_run *run;
    const int *present;
    csv_buf *b;
} row_ctx;

static void write_row(const mlp_src *r, void *vctx)
{
    row_ctx *c = vctx;
    mlp_row(c->run, r, c->present, c->b);
}

static int mlp_csv(const pdbx_runtable *t, csv_buf *b, char *err, size_t errlen)
{
    /* Columns: Vidur's ten always (empty where not measured), pdbx's others where measured. */
    int present[N_MLP_OPS] = { 0 };
    if (mlp_rows(t, mark_present, present) == 0) {
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
    row_ctx rc = { t->run, present, b };
    mlp_rows(t, write_row, &rc);
    return 0;
}

/* ---- attention.csv ---------------------------------------------------------------------- */

/* The kv_cache grid's max_kv of the run's spec (0 or absent: seq_len). */
static int run_max_kv(const pdbx_run *run)
{
    const cJSON *kv = run->spec ? cJSON_GetObjectItemCaseSensitive(run->spec, "kv_cache") : NULL;
    const cJSON *mx = kv ? cJSON_GetObjectItemCaseSensitive(kv, "max_kv") : NULL;
    if (cJSON_IsNumber(mx) && mx->valuedouble >= 1 && mx->valuedouble <= 1e9)
        return (int)mx->valuedouble;
    return run->seq_len;
}

/* Vidur's AttentionWrapper keys after the two phases' statistics: one row per infer_attn
 * row, its phase's statistics filled and the other phase's empty. */
static void attention_csv(const pdbx_run *run, csv_buf *b)
{
    int first = 1;
    header_stats(b, "attn_prefill", &first);
    header_stats(b, "attn_decode", &first);
    buf_str(b, ",n_embd,n_q_head,n_kv_head,block_size,num_tensor_parallel_workers,max_model_len,"
               "batch_size,prefill_chunk_size,kv_cache_size,is_prefill,attention_backend\n");
    const int max_len = run_max_kv(run);
    for (size_t i = 0; i < run->ninfer_attn; i++) {
        const pdbx_infer_attn *a = &run->infer_attn[i];
        const int prefill = a->chunk > 0;
        double v[5];
        stats_values(&a->time, v);
        for (int phase = 0; phase < 2; phase++)
            for (int s = 0; s < 5; s++) {
                if (phase == !prefill)
                    buf_num(b, v[s]);
                buf_put(b, ",", 1);
            }
        /* block_size: Vidur's default paged-KV block (its loader filters on the scheduler's) */
        const long keys[] = { run->model.hidden, run->model.heads, run->model.kv_heads, 16, a->tp,
                              max_len, a->batch, a->chunk, a->kv };
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            buf_int(b, keys[k]);
            buf_put(b, ",", 1);
        }
        buf_str(b, prefill ? "True," : "False,");
        buf_field(b, run->backend[0] ? run->backend : "pdbx");
        buf_put(b, "\n", 1);
    }
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
    csv_buf mlp = { 0 }, attn = { 0 }, ar = { 0 }, sr = { 0 }, step = { 0 }, meta = { 0 };
    pdbx_runtable t;
    if (pdbx_runtable_build(run, 0, &t) != 0) {
        pdbx_errf(err, errlen, "out of memory exporting run %s", run->id);
        return -1;
    }
    /* Build all three first, so a run with nothing to export writes no file at all. */
    if (mlp_csv(&t, &mlp, err, errlen) != 0)
        goto out;
    if (run->ninfer_attn > 0)
        attention_csv(run, &attn);
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
        || (run->ninfer_attn > 0 && publish(dir, "attention.csv", &attn, wrote, ctx, err, errlen) != 0)
        || publish(dir, "all_reduce.csv", &ar, wrote, ctx, err, errlen) != 0
        || publish(dir, "send_recv.csv", &sr, wrote, ctx, err, errlen) != 0
        || publish(dir, "step_comm.csv", &step, wrote, ctx, err, errlen) != 0
        || publish(dir, "meta.json", &meta, wrote, ctx, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    pdbx_runtable_free(&t);
    free(mlp.data);
    free(attn.data);
    free(ar.data);
    free(sr.data);
    free(step.data);
    free(meta.data);
    return rc;
}
