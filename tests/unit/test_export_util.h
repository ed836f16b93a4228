/* test_export_util.h: builds pdbx_run values for the export tests the way the store does,
 * by applying real events (JSON text -> cJSON -> pdbx_run_apply), plus temp directories and
 * file helpers. Include after <cmocka.h>; the including file defines _XOPEN_SOURCE 700 first.
 *
 * A test run is a list of planned points (tp, pp, dp, mbs, status, ops measured). Every op
 * cell's statistics come from a stats function of (point, op, mbs, tp, rank), so tests can
 * compute what the exports must hold without reading it back from the run.
 */
#ifndef PDBX_TEST_EXPORT_UTIL_H
#define PDBX_TEST_EXPORT_UTIL_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "test_store_util.h"   /* temp dirs, slurp, assert_double_equal */

#include "store/profiledb.h"
#include "store/store.h"

/* ---- files ------------------------------------------------------------------------------ */

static inline int tx_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Collects the paths an export reports through its `wrote` callback. */
typedef struct {
    int n;
    char paths[16][512];
} tx_wrote_log;

static inline void tx_wrote(const char *path, void *ctx)
{
    tx_wrote_log *log = ctx;
    if (log->n < 16)
        snprintf(log->paths[log->n], sizeof log->paths[0], "%s", path);
    log->n++;
}

/* ---- events ----------------------------------------------------------------------------- */

/* When set, every event tx_apply folds is also appended to this run file, so a test can load
 * the same run back through the store. */
static pdbx_run_writer *tx_sink;

static inline void tx_apply(pdbx_run *run, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    assert_true(n > 0);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    va_start(ap, fmt);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    va_end(ap);
    cJSON *ev = cJSON_ParseWithLength(text, (size_t)n);
    if (!ev)
        fail_msg("test event does not parse: %s", text);
    char err[256] = "";
    if (pdbx_run_apply(run, ev, err, sizeof err) != 0)
        fail_msg("pdbx_run_apply: %s (event %s)", err, text);
    if (tx_sink && pdbx_run_writer_append(tx_sink, ev, err, sizeof err) != 0)
        fail_msg("pdbx_run_writer_append: %s", err);
    cJSON_Delete(ev);
    free(text);
}

typedef struct {
    int tp, pp, dp, mbs;
    const char *status;       /* "ok", "oom", "predicted_oom", "skipped", "error" */
    pdbx_opmask ops;          /* ops measured; 0: every op the point has (no TP all-reduce at TP 1) */
} tx_point;

typedef void (*tx_stats_fn)(int point, int op, int mbs, int tp, int rank, pdbx_stats *out);

/* The default statistics: distinct, irregular values (not binary fractions), rank r a bit
 * faster than rank 0 so the cell (max across ranks) is rank 0's. */
static inline void tx_stats_default(int point, int op, int mbs, int tp, int rank, pdbx_stats *s)
{
    double v = (0.0123 * (op + 1) + 0.00071 * point) * mbs / (tp > 0 ? tp : 1) + 0.0337 / (op + 3);
    v *= 1.0 - 0.01 * rank;
    s->count = 20;
    s->mean = v;
    s->median = 0.97 * v;
    s->min = 0.91 * v;
    s->max = 1.23 * v;
    s->std = 0.047 * v;
}

static inline pdbx_opmask tx_point_ops(const tx_point *p)
{
    if (p->ops)
        return p->ops;
    pdbx_opmask ops = PDBX_OPS_LLAMA;   /* a Llama's ops */
    if (p->tp <= 1)
        ops &= ~(PDBX_OP_BIT(PDBX_OP_TP_ALLREDUCE_ATTN) | PDBX_OP_BIT(PDBX_OP_TP_ALLREDUCE_MLP));
    return ops;
}

static inline void tx_stats_json(char *buf, size_t len, const pdbx_stats *s)
{
    snprintf(buf, len, "{\"count\":%lld,\"min\":%.17g,\"max\":%.17g,\"mean\":%.17g,"
             "\"median\":%.17g,\"std\":%.17g}", (long long)s->count, s->min, s->max, s->mean,
             s->median, s->std);
}

#define TX_LAYERS 2           /* layers profiled in the test runs */
#define TX_SEQ_LEN 128

/* run_start with the plan, then every point's events. With `trace`, each ok point also gets
 * one trace event per TP rank: the point's ops laid out with layer ops once per layer. */
static inline void tx_build_run(pdbx_run *run, const tx_point *pts, int n, tx_stats_fn fn,
                                int trace)
{
    if (!fn)
        fn = tx_stats_default;
    pdbx_run_init(run);
    char *plan = malloc(256 * (size_t)(n + 1));
    assert_non_null(plan);
    size_t off = 0;
    plan[0] = '\0';
    for (int i = 0; i < n; i++)
        off += (size_t)sprintf(plan + off, "%s{\"index\":%d,\"tp\":%d,\"pp\":%d,\"dp\":%d,\"mbs\":%d,"
                               "\"seq_len\":%d,\"predicted_mem_bytes\":1e9,\"predicted_oom\":false}",
                               i ? "," : "", i, pts[i].tp, pts[i].pp, pts[i].dp, pts[i].mbs, TX_SEQ_LEN);
    tx_apply(run, "{\"type\":\"run_start\",\"t\":1763769600.5,\"id\":\"2026-11-22__00-00-00_deadbeef\","
             "\"pdbx_version\":\"0.1.0\",\"host\":\"testhost\",\"pid\":4242,\"spec\":{\"name\":\"test\"},"
             "\"model\":{\"name\":\"Test-Llama\",\"tag\":\"llamatest\",\"hidden\":256,"
             "\"intermediate\":688,\"heads\":8,\"kv_heads\":4,\"head_dim\":32,\"layers\":4,"
             "\"vocab\":1000},\"layers_profiled\":%d,\"seq_len\":%d,\"dtype\":\"fp32\","
             "\"backend\":\"cpu\",\"gpu\":\"A40\",\"gpu_tag\":\"A40\",\"warmup\":1,\"steps\":10,"
             "\"world_size\":4,\"ranks_per_node\":2,\"env\":{\"device\":\"Test CPU\"},"
             "\"points\":[%s]}", TX_LAYERS, TX_SEQ_LEN, plan);
    free(plan);

    for (int i = 0; i < n; i++) {
        const tx_point *p = &pts[i];
        tx_apply(run, "{\"type\":\"point_start\",\"point\":%d,\"tp\":%d,\"pp\":%d,\"dp\":%d,\"mbs\":%d}",
                 i, p->tp, p->pp, p->dp, p->mbs);
        int ok = strcmp(p->status, "ok") == 0;
        pdbx_opmask ops = tx_point_ops(p);
        for (int op = 0; ok && op < PDBX_OP_COUNT; op++) {
            if (!(ops & PDBX_OP_BIT(op)))
                continue;
            pdbx_stats s;
            char cell[256], ranks[2048] = "";
            fn(i, op, p->mbs, p->tp, 0, &s);
            tx_stats_json(cell, sizeof cell, &s);
            size_t roff = 0;
            for (int r = 0; r < p->tp; r++) {
                pdbx_stats rs;
                char rj[256];
                fn(i, op, p->mbs, p->tp, r, &rs);
                tx_stats_json(rj, sizeof rj, &rs);
                roff += (size_t)snprintf(ranks + roff, sizeof ranks - roff, "%s%s", r ? "," : "", rj);
            }
            tx_apply(run, "{\"type\":\"op\",\"point\":%d,\"op\":\"%s\",\"stats\":%s,\"ranks\":[%s],"
                     "\"flops\":1e9,\"bytes\":1e6}", i, pdbx_op_name((pdbx_op)op), cell, ranks);
        }
        if (ok && trace) {
            for (int r = 0; r < p->tp; r++) {
                char ops_json[8192];
                size_t o = 0;
                double t = 0.0;
                for (int pass = 0; pass < 3; pass++) {
                    int nl = pass == 1 ? TX_LAYERS : 1;
                    for (int layer = 0; layer < nl; layer++)
                        for (int op = 0; op < PDBX_OP_COUNT; op++) {
                            int per_layer = pdbx_op_is_per_layer((pdbx_op)op);
                            if (!(ops & PDBX_OP_BIT(op)) || (pass == 1) != per_layer
                                || (pass == 0 && op != PDBX_OP_EMBED)
                                || (pass == 2 && op == PDBX_OP_EMBED)
                                || !pdbx_op_in_model_fwd((pdbx_op)op))   /* the engine's trace: the forward */
                                continue;
                            double dur = 10.0 + op + 100.0 * layer + 0.5 * r;
                            o += (size_t)snprintf(ops_json + o, sizeof ops_json - o,
                                                  "%s[\"%s\",%d,%.17g,%.17g]", o ? "," : "",
                                                  pdbx_op_name((pdbx_op)op), per_layer ? layer : -1,
                                                  t, dur);
                            t += dur + 1.0;
                        }
                }
                tx_apply(run, "{\"type\":\"trace\",\"point\":%d,\"rank\":%d,\"ops\":[%s]}", i, r, ops_json);
            }
        }
        tx_apply(run, "{\"type\":\"point_end\",\"point\":%d,\"status\":\"%s\"%s}", i, p->status,
                 ok ? "" : ",\"message\":\"test: not measured\"");
    }
}

static inline void tx_end_run(pdbx_run *run)
{
    tx_apply(run, "{\"type\":\"run_end\",\"t\":1763769700.0,\"status\":\"complete\",\"reason\":\"\","
             "\"elapsed_s\":99.5}");
}

#endif
