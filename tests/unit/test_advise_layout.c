/* test_advise_layout.c: the advise cost model's training layouts (engine/advise/advise.h,
 * recompute_set and zero1_set; docs/advise.md "Layouts"), on a synthetic dense run folded from
 * real events: a tiny Llama (4 layers) measured at TP 1 DP 2 and TP 2 DP 1, MBS 1 and 2, with
 * an optimizer cell, its DP and TP all-reduces, and a collectives sweep that has
 * reduce_scatter and all_gather. Checked by hand:
 *  - the query's sets enumerate every layout: all x all gives four rows per configuration;
 *  - full recomputation adds each stage layer's forward to its backward (recompute_ms, in
 *    compute_ms), its TP all-reduces once more (3 per layer and kind instead of 2), and needs
 *    less memory; selective adds each layer's attention core forward alone, no comm, and drops
 *    the attention scores from the memory;
 *  - the distributed optimizer steps 1/DP of the parameters (optimizer_ms / dp), reduces the
 *    gradients by the sweep's reduce_scatter and all_gather at their sizes (fp32 gradients;
 *    the parameters in the run's dtype), and needs less memory; without those sweep entries
 *    each is half an all-reduce of its bytes, with a note;
 *  - the run spec's layout is the default; one configuration takes a set of one each. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engine/advise/advise.h"
#include "engine/plan/plan.h"
#include "store/profiledb.h"
#include "tests/unit/test_advise_util.h"

static void run_start(pdbx_run *run)
{
    pdbx_run_init(run);
    apply(run,
          "{\"type\":\"run_start\",\"t\":1000,\"id\":\"advise-layout-test\",\"spec\":{\"name\":\"t\","
          "\"model\":{\"pdbx_name\":\"tinyllama4\",\"pdbx_tag\":\"tinyllama4\",\"model_type\":\"llama\","
          "\"hidden_act\":\"silu\",\"hidden_size\":256,\"intermediate_size\":512,\"num_attention_heads\":4,"
          "\"num_key_value_heads\":4,\"num_hidden_layers\":4,\"vocab_size\":8192,\"tie_word_embeddings\":false},"
          "\"gpu\":{\"name\":\"toy\",\"tag\":\"toy\",\"mem_bytes\":1e12,\"bw_gbs\":0,"
          "\"peak_tflops_bf16\":0,\"peak_tflops_fp16\":0,\"peak_tflops_fp32\":0},"
          "\"layers\":2,\"seq_len\":32,\"dtype\":\"bf16\",\"backend\":\"cpu\",\"gpus_per_node\":2,"
          "\"nodes\":1,\"passes\":[\"fwd\",\"bwd\"],\"bytes_per_param\":16,\"flash_attention\":false},"
          "\"model\":{\"name\":\"tinyllama4\",\"tag\":\"tinyllama4\",\"hidden\":256,\"intermediate\":512,"
          "\"heads\":4,\"kv_heads\":4,\"head_dim\":64,\"layers\":4,\"vocab\":8192},"
          "\"layers_profiled\":2,\"seq_len\":32,\"dtype\":\"bf16\",\"backend\":\"cpu\",\"gpu\":\"toy\","
          "\"world_size\":2,\"ranks_per_node\":2}");
}

/* ms per op at MBS m: x m; bwd 2 x fwd. embed 0.5, final_norm 1, lm_head 3; each per-layer op 1;
 * the optimizer 8 (fwd only, any MBS). */
static const pdbx_op layer_ops[] = { PDBX_OP_INPUT_NORM, PDBX_OP_ATTN_Q, PDBX_OP_ATTN_CORE, PDBX_OP_ATTN_O,
                                     PDBX_OP_MLP_GATE, PDBX_OP_MLP_DOWN };
#define NLAYER ((int)(sizeof layer_ops / sizeof layer_ops[0]))
#define OPT_MS 8.0

static void cell(pdbx_run *run, int idx, pdbx_op op, double f)
{
    apply(run, "{\"type\":\"op\",\"point\":%d,\"op\":\"%s\",\"stats\":" STATS "}", idx, pdbx_op_name(op),
          STATS_ARGS(f));
    if (op != PDBX_OP_OPTIMIZER)
        apply(run, "{\"type\":\"op\",\"point\":%d,\"op\":\"%s\",\"pass\":\"bwd\",\"stats\":" STATS "}", idx,
              pdbx_op_name(op), STATS_ARGS(2 * f));
}

static void point(pdbx_run *run, int idx, int tp, int dp, int mbs)
{
    apply(run, "{\"type\":\"point_start\",\"t\":1001,\"point\":%d,\"tp\":%d,\"pp\":1,\"dp\":%d,\"mbs\":%d,"
               "\"seq_len\":32}", idx, tp, dp, mbs);
    cell(run, idx, PDBX_OP_EMBED, 0.5 * mbs);
    cell(run, idx, PDBX_OP_FINAL_NORM, 1.0 * mbs);
    cell(run, idx, PDBX_OP_LM_HEAD, 3.0 * mbs);
    for (int i = 0; i < NLAYER; i++)
        cell(run, idx, layer_ops[i], 1.0 * mbs);
    cell(run, idx, PDBX_OP_OPTIMIZER, OPT_MS);
    if (dp > 1)   /* 20 ms per 32 MB */
        apply(run, "{\"type\":\"comm\",\"point\":%d,\"kind\":\"dp_allreduce\",\"bytes\":32e6,\"group_size\":2,"
                   "\"stats\":" STATS ",\"algbw\":1,\"busbw\":1}", idx, STATS_ARGS(20.0));
    if (tp > 1) {  /* 0.25 ms per all-reduce of the [mbs x 32, 256] bf16 activations */
        apply(run, "{\"type\":\"comm\",\"point\":%d,\"kind\":\"tp_allreduce\",\"bytes\":%d,\"group_size\":2,"
                   "\"stats\":" STATS ",\"algbw\":1,\"busbw\":1}", idx, mbs * 32 * 256 * 2, STATS_ARGS(0.25));
        apply(run, "{\"type\":\"op\",\"point\":%d,\"op\":\"tp_allreduce_attn\",\"bytes\":%d,\"stats\":" STATS "}",
              idx, mbs * 32 * 256 * 2, STATS_ARGS(0.25));
        apply(run, "{\"type\":\"op\",\"point\":%d,\"op\":\"tp_allreduce_mlp\",\"bytes\":%d,\"stats\":" STATS "}",
              idx, mbs * 32 * 256 * 2, STATS_ARGS(0.25));
    }
    apply(run, "{\"type\":\"point_end\",\"t\":1002,\"point\":%d,\"status\":\"ok\"}", idx);
}

/* a sweep entry of coll over 2 ranks: ms_per_mb per MiB at 1 MiB and 64 MiB (linear in bytes) */
static void sweep(pdbx_run *run, const char *coll, double ms_per_mb)
{
    for (int mib = 1; mib <= 64; mib *= 64)
        apply(run, "{\"type\":\"coll\",\"coll\":\"%s\",\"bytes\":%d,\"nranks\":2,\"ranks_per_node\":2,"
                   "\"in_place\":true,\"stats\":" STATS ",\"algbw\":1,\"busbw\":1,\"nodes\":1,\"spans_nodes\":false}",
              coll, mib << 20, STATS_ARGS(ms_per_mb * mib));
}

static void build(pdbx_run *run, int with_rs_ag)
{
    run_start(run);
    int idx = 0;
    for (int m = 1; m <= 2; m++) {
        point(run, idx++, 1, 2, m);
        point(run, idx++, 2, 1, m);
    }
    if (with_rs_ag) {
        sweep(run, "reduce_scatter", 0.3);
        sweep(run, "all_gather", 0.2);
    }
}

static const pdbx_advise_row *find(const pdbx_advise_result *r, int tp, int dp, int mbs, int rc, int z)
{
    for (size_t i = 0; i < r->nrows; i++) {
        const pdbx_advise_row *w = &r->rows[i];
        if (w->tp == tp && w->pp == 1 && w->dp == dp && w->mbs == mbs && w->recompute == rc && w->zero1 == z)
            return w;
    }
    return NULL;
}

static void advise(const pdbx_run *run, unsigned rset, unsigned zset, pdbx_advise_result *r)
{
    pdbx_advise_query q;
    pdbx_advise_query_defaults(&q);
    q.gpus = 2, q.gbs = 4, q.layers = 4, q.mbs_max = 2;
    q.recompute_set = rset, q.zero1_set = zset;
    char err[256] = "";
    if (pdbx_advise(run, &q, r, err, sizeof err) != 0)
        fail_msg("advise: %s", err);
}

static int has_note(const pdbx_advise_result *r, const char *part)
{
    for (size_t i = 0; i < r->nnotes; i++)
        if (strstr(r->notes[i], part))
            return 1;
    return 0;
}

static void test_enumeration_and_default(void **state)
{
    (void)state;
    pdbx_run run;
    build(&run, 1);
    pdbx_advise_result def, all;
    advise(&run, 0, 0, &def);   /* the spec's: none, off */
    advise(&run, 3, 3, &all);
    assert_int_equal(all.nrows, 4 * def.nrows);
    for (size_t i = 0; i < def.nrows; i++)
        assert_true(def.rows[i].recompute == PDBX_RECOMPUTE_NONE && def.rows[i].zero1 == 0);
    assert_int_equal(def.nrows, 4);   /* 1x1x2 and 2x1x1 at MBS 1, 2 (gbs 4: mbs x dp divides it) */
    pdbx_advise_free(&all);
    advise(&run, 7, 3, &all);   /* none, full, selective */
    assert_int_equal(all.nrows, 6 * def.nrows);
    pdbx_advise_free(&def);
    pdbx_advise_free(&all);
    pdbx_run_free(&run);
}

static void test_selective_recompute(void **state)
{
    (void)state;
    pdbx_run run;
    build(&run, 1);
    pdbx_advise_result r;
    advise(&run, PDBX_ADV_RECOMPUTE_BIT(PDBX_RECOMPUTE_NONE) | PDBX_ADV_RECOMPUTE_BIT(PDBX_RECOMPUTE_SELECTIVE), 1, &r);
    for (int tp = 1; tp <= 2; tp++) {
        const pdbx_advise_row *n = find(&r, tp, 3 - tp, 1, PDBX_RECOMPUTE_NONE, 0);
        const pdbx_advise_row *s = find(&r, tp, 3 - tp, 1, PDBX_RECOMPUTE_SELECTIVE, 0);
        assert_non_null(n);
        assert_non_null(s);
        assert_close(s->stage_bwd_ms, n->stage_bwd_ms + 4 * 1.0);   /* attn_core's 1 ms x 4 layers */
        assert_close(s->recompute_ms, s->num_mb * 4 * 1.0);
        assert_close(s->stage_tp_comm_ms, n->stage_tp_comm_ms);      /* the core has no comm */
        assert_true(s->mem_gb < n->mem_gb);                           /* no scores kept */
    }
    pdbx_advise_free(&r);
    pdbx_run_free(&run);
}

static void test_full_recompute(void **state)
{
    (void)state;
    pdbx_run run;
    build(&run, 1);
    pdbx_advise_result r;
    advise(&run, 3, 1, &r);
    const pdbx_advise_row *n = find(&r, 1, 2, 1, PDBX_RECOMPUTE_NONE, 0), *f = find(&r, 1, 2, 1, PDBX_RECOMPUTE_FULL, 0);
    assert_non_null(n);
    assert_non_null(f);
    const double layers_fwd = 4 * NLAYER * 1.0;   /* 4 layers on one stage, MBS 1 */
    assert_close(f->stage_fwd_ms, n->stage_fwd_ms);
    assert_close(f->stage_bwd_ms, n->stage_bwd_ms + layers_fwd);
    assert_int_equal(f->num_mb, 2);
    assert_close(f->recompute_ms, 2 * layers_fwd);
    assert_close(f->compute_ms, n->compute_ms + f->recompute_ms);
    assert_close(n->recompute_ms, 0);
    assert_true(f->mem_gb < n->mem_gb);   /* only each layer's input is kept */
    /* TP 2: 2 all-reduces per layer forward, 2 backward, and 2 again recomputed */
    const pdbx_advise_row *tn = find(&r, 2, 1, 1, PDBX_RECOMPUTE_NONE, 0), *tf = find(&r, 2, 1, 1, PDBX_RECOMPUTE_FULL, 0);
    assert_non_null(tn);
    assert_non_null(tf);
    assert_close(tn->stage_tp_comm_ms, 4 * 2 * 2 * 0.25);
    assert_close(tf->stage_tp_comm_ms, 4 * 2 * 3 * 0.25);
    assert_close(tf->step_ms - tn->step_ms, tf->num_mb * (4 * NLAYER * 1.0 + 4 * 2 * 0.25));
    pdbx_advise_free(&r);
    pdbx_run_free(&run);
}

static void test_distributed_optimizer(void **state)
{
    (void)state;
    for (int sweep_has = 1; sweep_has >= 0; sweep_has--) {
        pdbx_run run;
        build(&run, sweep_has);
        pdbx_advise_result r;
        advise(&run, 1, 3, &r);
        const pdbx_advise_row *off = find(&r, 1, 2, 1, 0, 0), *on = find(&r, 1, 2, 1, 0, 1);
        assert_non_null(off);
        assert_non_null(on);
        assert_true(off->optimizer_ms > 0);
        assert_close(on->optimizer_ms, off->optimizer_ms / 2);   /* the rank's 1/DP shard */
        assert_true(on->mem_gb < off->mem_gb);
        assert_close(on->dp_msg_bytes, off->dp_msg_bytes);
        const double g = off->dp_msg_bytes, mib = 1048576.0;
        assert_close(off->dp_comm_ms, 20.0 * g / 32e6);
        if (sweep_has)   /* fp32 gradients reduce-scattered, bf16 parameters all-gathered */
            assert_close(on->dp_comm_ms, 0.3 * g / mib + 0.2 * (g / 2) / mib);
        else             /* half an all-reduce of each's bytes */
            assert_close(on->dp_comm_ms, 0.5 * 20.0 * g / 32e6 + 0.5 * 20.0 * (g / 2) / 32e6);
        assert_int_equal(has_note(&r, "not in the collectives sweep"), !sweep_has);
        assert_close(on->step_ms, on->compute_ms + on->comm_ms + on->bubble_ms + on->optimizer_ms);
        /* TP 2 DP 1: nothing to shard */
        assert_close(find(&r, 2, 1, 1, 0, 1)->step_ms, find(&r, 2, 1, 1, 0, 0)->step_ms);
        pdbx_advise_free(&r);
        pdbx_run_free(&run);
    }
}

static void test_one_takes_one_layout(void **state)
{
    (void)state;
    pdbx_run run;
    build(&run, 1);
    pdbx_advise_query q;
    pdbx_advise_query_defaults(&q);
    q.gpus = 2, q.gbs = 4, q.layers = 4;
    pdbx_advise_row row;
    char err[256] = "";
    q.recompute_set = 3;
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 2, 1, &row, err, sizeof err), -1);
    assert_non_null(strstr(err, "a set of one each"));
    q.recompute_set = PDBX_ADV_RECOMPUTE_BIT(PDBX_RECOMPUTE_FULL), q.zero1_set = PDBX_ADV_ZERO1_BIT(1);
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 2, 1, &row, err, sizeof err), 0);
    assert_int_equal(row.recompute, PDBX_RECOMPUTE_FULL);
    assert_int_equal(row.zero1, 1);
    q.zero1_set = 4;
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 2, 1, &row, err, sizeof err), -1);
    assert_non_null(strstr(err, "zero1: set 0x4"));
    pdbx_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enumeration_and_default),
        cmocka_unit_test(test_full_recompute),
        cmocka_unit_test(test_selective_recompute),
        cmocka_unit_test(test_distributed_optimizer),
        cmocka_unit_test(test_one_takes_one_layout),
    };
    return cmocka_run_group_tests_name("advise_layout", tests, NULL, NULL);
}
