/* test_advise.c: the advise cost model (engine/advise/advise.h, docs/advise.md) pinned on
 * hand-computed cases over a synthetic run folded from real events (pdbx_run_apply): the 1F1B
 * step and bubble for PP 2 and 4, the PP send/recv rule, the TP all-reduces per layer, the DP
 * all-reduce scaled from a bucket or interpolated in the collectives sweep, the x3 rule without
 * bwd cells, MBS interpolation and extrapolation with their notes, the refusal of a TP degree
 * the run did not sweep, the order and the Pareto front.
 *
 * Op cells are generated per part (store/ops.h iterated through pdbx_adv_op_part, so a new op
 * changes the counts, not the test): every compute op of a part has the median
 *   fwd(mbs) = scale(part) x mbs^2   (first 0.5, layer 1.0, last 2.0; the mean is 10% higher
 *                                     so that a test of the median fails on the mean)
 *   bwd(mbs) = 1.5 x fwd(mbs)        (runs with backward cells)
 * so that interpolation in MBS (linear) differs from the cells' own curve. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engine/advise/advise.h"
#include "engine/advise/advise_cells.h"
#include "store/profiledb.h"
#include "tests/unit/test_advise_util.h"

#define assert_close(a, b)                                                                       \
    do {                                                                                         \
        double a_ = (a), b_ = (b);                                                               \
        if (!(fabs(a_ - b_) <= 1e-9 * (fabs(b_) > 1 ? fabs(b_) : 1)))                            \
            fail_msg("%s = %.17g, expected %s = %.17g", #a, a_, #b, b_);                         \
    } while (0)

static const double part_scale[PDBX_ADV_NPARTS] = { 0.5, 1.0, 2.0 };

/* How many ops of store/ops.h fall in a part (the toy model is dense: no moe_* cells, which
 * the advisor counts on MoE layers only; test_advise_ep.c has those). */
static int ops_in(int part)
{
    int n = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        n += pdbx_adv_op_part((pdbx_op)op) == part && !pdbx_op_is_moe((pdbx_op)op);
    return n;
}

/* The part's fwd at a measured mbs, as the run holds it (a sum of its ops' medians). */
static double part_fwd(int part, double mbs)
{
    return ops_in(part) * part_scale[part] * mbs * mbs;
}


/* Model: hidden 1024, intermediate 4096, 8 heads of 128, 8 kv heads, 4 layers, vocab 1000,
 * untied; seq_len 16, fp32: one activation message [mbs x 16, 1024] x 4 B = mbs x 64 KiB. */
static void run_start(pdbx_run *run, int bwd, double gpu_mem)
{
    pdbx_run_init(run);
    apply(run,
          "{\"type\":\"run_start\",\"t\":1000,\"id\":\"advise-test\",\"spec\":{\"name\":\"t\","
          "\"model\":{\"pdbx_name\":\"toy\",\"pdbx_tag\":\"toy\",\"hidden_size\":1024,"
          "\"intermediate_size\":4096,\"num_attention_heads\":8,\"num_key_value_heads\":8,"
          "\"head_dim\":128,\"num_hidden_layers\":4,\"vocab_size\":1000,\"tie_word_embeddings\":false},"
          "\"gpu\":{\"name\":\"toy\",\"tag\":\"toy\",\"mem_bytes\":%.17g,\"bw_gbs\":0,"
          "\"peak_tflops_bf16\":0,\"peak_tflops_fp16\":0,\"peak_tflops_fp32\":0},"
          "\"layers\":1,\"seq_len\":16,\"dtype\":\"fp32\",\"backend\":\"cpu\",\"gpus_per_node\":4,"
          "\"nodes\":1,\"passes\":%s,\"bytes_per_param\":16,\"flash_attention\":false},"
          "\"model\":{\"name\":\"toy\",\"tag\":\"toy\",\"hidden\":1024,\"intermediate\":4096,"
          "\"heads\":8,\"kv_heads\":8,\"head_dim\":128,\"layers\":4,\"vocab\":1000},"
          "\"layers_profiled\":1,\"seq_len\":16,\"dtype\":\"fp32\",\"backend\":\"cpu\",\"gpu\":\"toy\","
          "\"world_size\":4,\"ranks_per_node\":4}",
          gpu_mem, bwd ? "[\"fwd\",\"bwd\"]" : "[\"fwd\"]");
}

static int next_point;
static double point_factor = 1;   /* every compute cell of the next points x this */

/* One ok point with every compute op (and, tp > 1, the layer's TP all-reduce ops). */
static int point(pdbx_run *run, int tp, int pp, int dp, int mbs, int bwd)
{
    int idx = next_point++;
    apply(run, "{\"type\":\"point_start\",\"t\":1001,\"point\":%d,\"tp\":%d,\"pp\":%d,\"dp\":%d,\"mbs\":%d,"
               "\"seq_len\":16}", idx, tp, pp, dp, mbs);
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        int part = pdbx_adv_op_part((pdbx_op)op);
        if (pdbx_op_is_moe((pdbx_op)op))
            continue;
        if (part < 0) {
            if (tp > 1)   /* as the engine writes them: bytes is the message, [mbs x 16, 1024] fp32 */
                apply(run, "{\"type\":\"op\",\"point\":%d,\"op\":\"%s\",\"bytes\":%d,\"flops\":0,"
                           "\"stats\":" STATS "}", idx, pdbx_op_name((pdbx_op)op), mbs * 65536,
                      STATS_ARGS(0.2 * mbs));
            continue;
        }
        double f = point_factor * part_scale[part] * mbs * mbs;
        apply(run, "{\"type\":\"op\",\"point\":%d,\"op\":\"%s\",\"stats\":" STATS "}", idx,
              pdbx_op_name((pdbx_op)op), STATS_ARGS(f));
        if (bwd)
            apply(run, "{\"type\":\"op\",\"point\":%d,\"op\":\"%s\",\"pass\":\"bwd\",\"stats\":" STATS "}",
                  idx, pdbx_op_name((pdbx_op)op), STATS_ARGS(1.5 * f));
    }
    return idx;
}

static void point_end(pdbx_run *run, int idx)
{
    apply(run, "{\"type\":\"point_end\",\"t\":1002,\"point\":%d,\"status\":\"ok\"}", idx);
}

static void comm(pdbx_run *run, int idx, const char *kind, double bytes, int group, double ms)
{
    apply(run, "{\"type\":\"comm\",\"point\":%d,\"kind\":\"%s\",\"bytes\":%.17g,\"group_size\":%d,"
               "\"stats\":" STATS ",\"algbw\":1,\"busbw\":1}", idx, kind, bytes, group, STATS_ARGS(ms));
}

static void coll(pdbx_run *run, const char *name, double bytes, int nranks, double ms)
{
    apply(run, "{\"type\":\"coll\",\"coll\":\"%s\",\"bytes\":%.17g,\"nranks\":%d,\"ranks_per_node\":4,"
               "\"stats\":" STATS ",\"algbw\":1,\"busbw\":1,\"nodes\":1,\"spans_nodes\":false}",
          name, bytes, nranks, STATS_ARGS(ms));
}

#define KIB 1024.0
#define MIB (1024.0 * 1024.0)

/* Run A: configs 1x1x1 (mbs 1, 2, 4), 2x1x1 (mbs 1, 2, 4; TP all-reduce 0.1 ms per 64 KiB),
 * 1x2x1 (mbs 1; send/recv 64 KiB 0.3 ms), 1x1x2 (mbs 1; one 4 MiB DP bucket 10 ms); the sweep:
 * send_recv 64 KiB 0.25 ms, 128 KiB 0.4 ms; all_reduce 2 ranks 1 MiB 1 ms. */
static void run_a(pdbx_run *run, int bwd, double gpu_mem, int big_sweep)
{
    next_point = 0;
    run_start(run, bwd, gpu_mem);
    for (int m = 1; m <= 4; m *= 2)
        point_end(run, point(run, 1, 1, 1, m, bwd));
    for (int m = 1; m <= 4; m *= 2) {
        int i = point(run, 2, 1, 1, m, bwd);
        comm(run, i, "tp_allreduce", m * 64 * KIB, 2, 0.1 * m);
        point_end(run, i);
    }
    int i = point(run, 1, 2, 1, 1, bwd);
    comm(run, i, "pp_sendrecv", 64 * KIB, 2, 0.3);
    point_end(run, i);
    i = point(run, 1, 1, 2, 1, bwd);
    comm(run, i, "dp_allreduce", 4 * MIB, 2, 10);
    point_end(run, i);
    coll(run, "send_recv", 64 * KIB, 2, 0.25);
    coll(run, "send_recv", 128 * KIB, 2, 0.4);
    coll(run, "all_reduce", 1 * MIB, 2, 1);
    if (big_sweep) {
        coll(run, "all_reduce", 128 * MIB, 2, 100);
        coll(run, "all_reduce", 512 * MIB, 2, 400);
    }
}

static void query(pdbx_advise_query *q, int gpus, int gbs)
{
    pdbx_advise_query_defaults(q);
    q->gpus = gpus;
    q->gbs = gbs;
}

/* One micro-batch of a stage holding `layers` layers, first/last as flagged, at a measured
 * mbs: fwd + bwd (1.5 x fwd measured, or 2 x fwd). */
static double stage_t(int layers, int first, int last, double mbs, double bwd_factor)
{
    double f = layers * part_fwd(PDBX_ADV_LAYER, mbs) + (first ? part_fwd(PDBX_ADV_FIRST, mbs) : 0)
               + (last ? part_fwd(PDBX_ADV_LAST, mbs) : 0);
    return f * (1 + bwd_factor);
}

static void test_pp2_bubble_and_p2p(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 2, 8);
    pdbx_advise_row r;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 2, 1, 1, &r, err, sizeof err), 0);
    /* 4 layers / PP 2 = 2 per stage; the last stage (final_norm, lm_head: 2.0 per op) is
     * slower than the first (embed: 0.5) */
    double t = stage_t(2, 0, 1, 1, 1.5);
    assert_int_equal(r.num_mb, 8);
    assert_int_equal(r.slowest_stage, 1);
    assert_int_equal(r.bwd_measured, 1);
    assert_close(r.stage_fwd_ms + r.stage_bwd_ms, t);
    /* 1F1B: the slowest stage's num_mb micro-batches, plus one of the other stage (the fill and
     * drain), not (pp - 1) x t */
    double t0 = stage_t(2, 1, 0, 1, 1.5);
    assert_true(t0 < t);
    assert_close(r.bubble_ms, t0);
    assert_close(r.compute_ms, 8 * t);                      /* num_mb x t */
    /* the sweep covers 64 KiB (0.25 ms; the point's own cell says 0.3: the sweep comes first) */
    assert_close(r.p2p_ms, 0.25);
    assert_close(r.pp_comm_ms, 2 * (8 + 2 - 2) * 0.25);     /* 2 (num_mb + pp - 2) p2p */
    assert_close(r.step_ms, 8 * t + t0 + 2 * (8 + 2 - 2) * 0.25);
    assert_close(r.step_ms, r.compute_ms + r.comm_ms + r.bubble_ms);
    assert_close(r.pp_msg_bytes, 64 * KIB);
    assert_int_equal(r.estimated_cells, 0);
    assert_string_equal(r.note, "");
    /* mbs 2: 128 KiB, the sweep's 0.4 ms */
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 2, 1, 2, &r, err, sizeof err), 0);
    assert_close(r.p2p_ms, 0.4);
    assert_close(r.pp_comm_ms, 2 * (4 + 2 - 2) * 0.4);
    /* mbs 4: 256 KiB, beyond both: the nearest measured size (the sweep's 128 KiB, not the
     * points' 64 KiB) scaled by bytes, noted */
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 2, 1, 4, &r, err, sizeof err), 0);
    assert_close(r.p2p_ms, 0.4 * 2);
    assert_string_equal(r.note, "pp send/recv of 256 KiB scaled linearly by bytes from the collectives "
                                "sweep's send_recv of 128 KiB");
    pdbx_run_free(&run);
}

static void test_pp4_bubble(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 4, 8);
    pdbx_advise_row r;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 4, 1, 1, &r, err, sizeof err), 0);
    double t = stage_t(1, 0, 1, 1, 1.5);
    assert_int_equal(r.slowest_stage, 3);
    double others = stage_t(1, 1, 0, 1, 1.5) + 2 * stage_t(1, 0, 0, 1, 1.5);
    assert_close(r.bubble_ms, others);
    assert_close(r.pp_comm_ms, 2 * (8 + 4 - 2) * 0.25);
    assert_close(r.step_ms, 8 * t + others + 2 * (8 + 4 - 2) * 0.25);
    /* PP 1 has no bubble and no send/recv */
    query(&q, 1, 8);
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 1, 1, &r, err, sizeof err), 0);
    assert_close(r.bubble_ms, 0);
    assert_close(r.comm_ms, 0);
    assert_close(r.step_ms, 8 * stage_t(4, 1, 1, 1, 1.5));
    pdbx_run_free(&run);
}

static void test_tp_comm_per_layer(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 2, 8);
    pdbx_advise_row r;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 1, 1, 1, &r, err, sizeof err), 0);
    /* 4 layers x 2 all-reduces x (fwd + bwd) x 0.1 ms per micro-batch, 8 micro-batches */
    assert_close(r.tp_msg_bytes, 64 * KIB);
    assert_close(r.tp_allreduce_ms, 0.1);
    assert_close(r.stage_tp_comm_ms, 4 * 2 * 2 * 0.1);
    assert_close(r.tp_comm_ms, 8 * 4 * 2 * 2 * 0.1);
    assert_close(r.comm_ms, r.tp_comm_ms);
    assert_close(r.step_ms, 8 * (stage_t(4, 1, 1, 1, 1.5) + 4 * 2 * 2 * 0.1));
    /* mbs 3 (192 KiB): between the 128 and 256 KiB cells, linear in bytes, noted */
    query(&q, 2, 6);
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 1, 1, 3, &r, err, sizeof err), 0);
    assert_close(r.tp_allreduce_ms, 0.3);
    assert_int_equal(r.estimated_cells, 2);   /* the op cells and the all-reduce */
    pdbx_run_free(&run);
}

static void test_tp_comm_from_op_cells(void **state)
{
    (void)state;
    /* a run recorded before comm events: the layer's all-reduce op cells (0.2 ms per 64 KiB) */
    pdbx_run run;
    next_point = 0;
    run_start(&run, 1, 1e12);
    for (int m = 1; m <= 2; m *= 2)
        point_end(&run, point(&run, 2, 1, 1, m, 1));
    pdbx_advise_query q;
    query(&q, 2, 8);
    pdbx_advise_row r;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 1, 1, 2, &r, err, sizeof err), 0);
    assert_close(r.tp_allreduce_ms, 0.4);
    assert_close(r.stage_tp_comm_ms, 4 * 2 * 2 * 0.4);
    pdbx_run_free(&run);
}

static void test_dp_allreduce_from_bucket_and_sweep(void **state)
{
    (void)state;
    /* stage params of 1x1x1 on one TP rank: per layer 2ha d + 2h kv d + 3hI + 2h
     * = 2*1024*1024 + 2*1024*1024 + 3*1024*4096 + 2048 = 16779264; x 4 layers + embedding
     * 1000*1024 + final norm 1024 + lm_head 1000*1024 = 69166080 params, in fp32 */
    const double dp_bytes = 69166080.0 * 4;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 2, 8);
    pdbx_advise_row r;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 2, 1, &r, err, sizeof err), 0);
    assert_close(r.dp_msg_bytes, dp_bytes);
    /* the sweep's all_reduce stops at 1 MiB: the 4 MiB bucket (10 ms) scaled linearly */
    assert_close(r.dp_comm_ms, 10 * dp_bytes / (4 * MIB));
    assert_non_null(strstr(r.note, "dp 2 all-reduce of"));
    assert_non_null(strstr(r.note, "scaled linearly by bytes from the points' dp_allreduce of 4.0 MiB"));
    assert_close(r.step_ms, 4 * stage_t(4, 1, 1, 1, 1.5) + r.dp_comm_ms);
    pdbx_run_free(&run);

    /* a sweep that covers the size: interpolated between its 128 MiB and 512 MiB entries */
    run_a(&run, 1, 1e12, 1);
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 2, 1, &r, err, sizeof err), 0);
    assert_close(r.dp_comm_ms, 100 + 300 * (dp_bytes - 128 * MIB) / (384 * MIB));
    assert_non_null(strstr(r.note, "interpolated between the collectives sweep's all_reduce of 128 MiB and 512 MiB"));
    pdbx_run_free(&run);
}

static void test_dp_group_not_measured(void **state)
{
    (void)state;
    const double dp_bytes = 69166080.0 * 4;   /* as above: the whole model on one TP rank */
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 4, 8);
    pdbx_advise_row r;
    char err[256];
    /* dp 4: only 2-rank all-reduces measured: the bucket scaled by bytes and by the ring
     * factor 2(n-1)/n, 1.5 for 4 ranks against 1 for 2 */
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 4, 1, &r, err, sizeof err), 0);
    assert_close(r.dp_comm_ms, 10 * dp_bytes / (4 * MIB) * 1.5);
    assert_string_equal(r.note, "dp 4 all-reduce of 264 MiB scaled linearly by bytes from the points' "
                                "dp_allreduce of 4.0 MiB; 2-rank cells x 1.5 (ring 2(n-1)/n)");
    pdbx_run_free(&run);
}

static void test_dp_bucket_median(void **state)
{
    (void)state;
    const double dp_bytes = 69166080.0 * 4;
    pdbx_run run;
    next_point = 0;
    run_start(&run, 1, 1e12);
    /* one 4 MiB bucket per point: 10, 30 (a noisy one) and 12 ms: their median, 12 */
    const double ms[3] = { 10, 30, 12 };
    for (int k = 0, m = 1; k < 3; k++, m *= 2) {
        int i = point(&run, 1, 1, 2, m, 1);
        comm(&run, i, "dp_allreduce", 4 * MIB, 2, ms[k]);
        point_end(&run, i);
    }
    pdbx_advise_query q;
    query(&q, 2, 8);
    pdbx_advise_row r;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 2, 1, &r, err, sizeof err), 0);
    assert_close(r.dp_comm_ms, 12 * dp_bytes / (4 * MIB));
    pdbx_run_free(&run);
}

static void test_x3_rule_without_bwd(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 0, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 2, 8);
    pdbx_advise_row r;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 2, 1, 1, &r, err, sizeof err), 0);
    assert_int_equal(r.bwd_measured, 0);
    assert_close(r.stage_bwd_ms, 2 * r.stage_fwd_ms);
    assert_close(r.stage_fwd_ms + r.stage_bwd_ms, stage_t(2, 0, 1, 1, 2.0));
    pdbx_advise_result res;
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), 0);
    int found = 0;
    for (size_t i = 0; i < res.nnotes; i++)
        found |= strcmp(res.notes[i], "tp 1: bwd not measured: backward = 2 x forward (FASOP's x3 rule)") == 0;
    assert_true(found);
    pdbx_advise_free(&res);
    pdbx_run_free(&run);
}

static void test_mbs_interpolation_and_extrapolation(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 1, 24);
    pdbx_advise_row r;
    char err[256];
    /* mbs 3: between mbs 2 (4 x scale) and 4 (16 x scale): 10 x scale, not 9 (the cells' curve) */
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 1, 3, &r, err, sizeof err), 0);
    double f3 = 4 * ops_in(PDBX_ADV_LAYER) * 1.0 * 10 + ops_in(PDBX_ADV_FIRST) * 0.5 * 10
                + ops_in(PDBX_ADV_LAST) * 2.0 * 10;
    assert_close(r.stage_fwd_ms, f3);
    assert_close(r.stage_bwd_ms, 1.5 * f3);
    assert_int_equal(r.estimated_cells, 1);
    assert_string_equal(r.note, "tp 1 mbs 3: op cells interpolated between mbs 2 and 4");
    /* mbs 8: on the line through mbs 2 and 4: 16 + 6 x 4 = 40 x scale */
    query(&q, 1, 8);
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 1, 8, &r, err, sizeof err), 0);
    double f8 = 4 * ops_in(PDBX_ADV_LAYER) * 1.0 * 40 + ops_in(PDBX_ADV_FIRST) * 0.5 * 40
                + ops_in(PDBX_ADV_LAST) * 2.0 * 40;
    assert_close(r.stage_fwd_ms, f8);
    assert_string_equal(r.note, "tp 1 mbs 8: op cells extrapolated from mbs 2 and 4");
    /* the same notes in pdbx_advise's list, once each */
    query(&q, 1, 24);
    q.mbs_max = 24;
    pdbx_advise_result res;
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), 0);
    int interp = 0, extrap = 0;
    for (size_t i = 0; i < res.nnotes; i++) {
        interp += strcmp(res.notes[i], "tp 1 mbs 3: op cells interpolated between mbs 2 and 4") == 0;
        extrap += strcmp(res.notes[i], "tp 1 mbs 24: op cells extrapolated from mbs 2 and 4") == 0;
    }
    assert_int_equal(interp, 1);
    assert_int_equal(extrap, 1);
    pdbx_advise_free(&res);
    pdbx_run_free(&run);
}

static void test_unswept_tp_refused(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 4, 8);
    pdbx_advise_result res;
    char err[256];
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), 0);
    /* tp 4: pp 1, dp 1, mbs 1, 2, 4, 8 (mbs_max: twice the largest measured, 4): 4 left out */
    int found = 0;
    for (size_t i = 0; i < res.nnotes; i++)
        found |= strcmp(res.notes[i], "tp 4 not measured: 4 configurations left out") == 0;
    assert_true(found);
    for (size_t i = 0; i < res.nrows; i++)
        assert_int_not_equal(res.rows[i].tp, 4);
    pdbx_advise_free(&res);
    /* one configuration: refused with the reason, never another TP's cells */
    pdbx_advise_row r;
    assert_int_equal(pdbx_advise_one(&run, &q, 4, 1, 1, 1, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "tp 4 not measured"));
    pdbx_run_free(&run);
}

static void test_order_and_pareto(void **state)
{
    (void)state;
    pdbx_run run;
    /* 1 GB per GPU: the 1x1x2 rows (the whole model: 1.1 GB of weights, grads and optimizer)
     * do not fit; 2x1x1 and 1x2x1 (half of it, 0.55 GB, + activations) do */
    run_a(&run, 1, 1e9, 1);
    pdbx_advise_query q;
    query(&q, 2, 8);
    pdbx_advise_result res;
    char err[256];
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), 0);
    assert_true(res.nrows > 4);
    int fit = 0, nofit = 0, front = 0;
    for (size_t i = 0; i < res.nrows; i++) {
        const pdbx_advise_row *a = &res.rows[i];
        if (i > 0)
            assert_true(res.rows[i - 1].step_ms <= a->step_ms);
        assert_int_equal(a->fits, a->mem_gb * 1e9 <= 1e9);
        assert_int_equal(a->fits, a->dp == 1);
        fit += a->fits, nofit += !a->fits, front += a->pareto;
        if (!a->fits) {
            assert_int_equal(a->pareto, 0);
            continue;
        }
        /* on the front exactly when no other fitting row is as fast and as small, one better */
        int dominated = 0;
        for (size_t j = 0; j < res.nrows; j++) {
            const pdbx_advise_row *b = &res.rows[j];
            if (j != i && b->fits && b->step_ms <= a->step_ms && b->mem_gb <= a->mem_gb
                && (b->step_ms < a->step_ms || b->mem_gb < a->mem_gb))
                dominated = 1;
        }
        assert_int_equal(a->pareto, !dominated);
    }
    assert_true(fit > 0 && nofit > 0 && front > 0);
    /* the fastest fitting row is on the front */
    for (size_t i = 0; i < res.nrows; i++)
        if (res.rows[i].fits) {
            assert_int_equal(res.rows[i].pareto, 1);
            break;
        }
    pdbx_advise_free(&res);
    pdbx_run_free(&run);
}

static void test_bad_queries(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    pdbx_advise_result res;
    pdbx_advise_row r;
    char err[256];
    query(&q, 0, 8);
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), -1);
    assert_string_equal(err, "gpus: 0 is not a number of GPUs (allowed: 1..65536)");
    query(&q, 2, 0);
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), -1);
    assert_non_null(strstr(err, "gbs: 0"));
    query(&q, 4, 8);
    q.nodes = 3;
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), -1);
    assert_non_null(strstr(err, "nodes: 3 does not divide gpus 4"));
    query(&q, 2, 8);
    q.stat = PDBX_STAT_STD;
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), -1);
    assert_non_null(strstr(err, "std"));
    query(&q, 2, 8);
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 2, 1, 1, &r, err, sizeof err), -1);
    assert_string_equal(err, "config: 2x2x1 uses 4 GPUs, the query has 2 (allowed: tp x pp x dp == 2)");
    /* products that overflow are refused before they are formed (UBSan in build-san) */
    assert_int_equal(pdbx_advise_one(&run, &q, 2147483647, 2147483647, 2147483647, 1, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "is not a configuration (allowed: tp, pp, dp 1..2, mbs 1..4096)"));
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 2, 3, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "gbs: 8 is not divisible by mbs x dp = 3 x 2"));
    query(&q, 3, 9);
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 3, 1, 1, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "pp: 3 does not divide the 4 layers"));
    pdbx_run_free(&run);
    /* a run without a measured point */
    pdbx_run_init(&run);
    run_start(&run, 0, 1e12);
    query(&q, 2, 8);
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), -1);
    assert_non_null(strstr(err, "has no measured point"));
    pdbx_run_free(&run);
}

static void test_median_is_the_default(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 1, 1);
    pdbx_advise_row med, mean;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 1, 1, &med, err, sizeof err), 0);
    q.stat = PDBX_STAT_MEAN;
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 1, 1, &mean, err, sizeof err), 0);
    assert_close(med.step_ms, stage_t(4, 1, 1, 1, 1.5));
    assert_close(mean.step_ms, 1.1 * med.step_ms);
    pdbx_run_free(&run);
}

/* A config's own points first, then those of its rank count: a 4-rank launch on a shared host
 * measured every cell 2x a 2-rank one (bench/advise_validate.sh FOUR=1). */
static void test_cells_prefer_config_then_rank_count(void **state)
{
    (void)state;
    pdbx_run run;
    next_point = 0;
    run_start(&run, 1, 1e12);
    int i = point(&run, 2, 1, 1, 1, 1);
    comm(&run, i, "tp_allreduce", 64 * KIB, 2, 0.1);
    point_end(&run, i);
    point_factor = 2;
    i = point(&run, 2, 1, 2, 1, 1);
    comm(&run, i, "tp_allreduce", 64 * KIB, 2, 0.1);
    comm(&run, i, "dp_allreduce", 4 * MIB, 2, 10);
    point_end(&run, i);
    point_factor = 1;
    coll(&run, "send_recv", 64 * KIB, 2, 0.25);
    pdbx_advise_query q;
    pdbx_advise_row r;
    char err[256];
    double one = stage_t(4, 1, 1, 1, 1.5) / 2.5;   /* fwd of the 2-rank cells, PP 1 */
    query(&q, 2, 8);
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 1, 1, 1, &r, err, sizeof err), 0);
    assert_close(r.stage_fwd_ms, one);
    query(&q, 4, 8);
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 1, 2, 1, &r, err, sizeof err), 0);
    assert_close(r.stage_fwd_ms, 2 * one);
    /* 2x2x1 was not swept: the 4-rank 2x1x2 cells, not the 2-rank ones of plan order */
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 2, 1, 1, &r, err, sizeof err), 0);
    assert_close(r.stage_fwd_ms, 2 * (2 * part_fwd(PDBX_ADV_LAYER, 1) + part_fwd(PDBX_ADV_LAST, 1)));
    /* 8 ranks, no config of that count: plan order (the 2-rank cells) */
    query(&q, 8, 8);
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 1, 4, 1, &r, err, sizeof err), 0);
    assert_close(r.stage_fwd_ms, one);
    pdbx_run_free(&run);
}

/* No configuration divides the query: 0 rows and a note, no sort of an empty (NULL) array
 * (UBSan stopped the explorer's Advise screen at 65536 GPUs, and `pdbx advise --gpus 3 --gbs 5`). */
static void test_no_configuration(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 3, 5);
    pdbx_advise_result res;
    char err[256];
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), 0);
    assert_int_equal(res.nrows, 0);
    assert_true(res.nnotes >= 1);
    pdbx_advise_free(&res);
    pdbx_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pp2_bubble_and_p2p),
        cmocka_unit_test(test_pp4_bubble),
        cmocka_unit_test(test_tp_comm_per_layer),
        cmocka_unit_test(test_tp_comm_from_op_cells),
        cmocka_unit_test(test_dp_allreduce_from_bucket_and_sweep),
        cmocka_unit_test(test_dp_group_not_measured),
        cmocka_unit_test(test_dp_bucket_median),
        cmocka_unit_test(test_x3_rule_without_bwd),
        cmocka_unit_test(test_mbs_interpolation_and_extrapolation),
        cmocka_unit_test(test_unswept_tp_refused),
        cmocka_unit_test(test_order_and_pareto),
        cmocka_unit_test(test_bad_queries),
        cmocka_unit_test(test_median_is_the_default),
        cmocka_unit_test(test_cells_prefer_config_then_rank_count),
        cmocka_unit_test(test_no_configuration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
