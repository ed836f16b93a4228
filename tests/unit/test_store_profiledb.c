/* test_store_profiledb.c: statistics helpers, names, and folding every event type of
 * docs/events.md into a pdbx_run (including malformed and unknown events). */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/profiledb.h"
#include "store/runtable.h"
#include "test_store_util.h"

static void test_stats_from_samples(void **state)
{
    (void)state;
    double s[] = {3.0, 1.0, 2.0, 4.0};
    pdbx_stats st;
    pdbx_stats_from_samples(s, 4, &st);
    assert_int_equal(st.count, 4);
    assert_double_equal(st.min, 1.0, 0);
    assert_double_equal(st.max, 4.0, 0);
    assert_double_equal(st.mean, 2.5, 1e-15);
    assert_double_equal(st.median, 2.5, 1e-15);
    assert_double_equal(st.std, sqrt(1.25), 1e-15);   /* ddof 0 */
    double odd[] = {5.0, 9.0, 1.0};
    pdbx_stats_from_samples(odd, 3, &st);
    assert_double_equal(st.median, 5.0, 0);
    pdbx_stats_from_samples(NULL, 0, &st);
    assert_int_equal(st.count, 0);
    assert_true(isnan(st.mean) && isnan(st.median) && isnan(st.min) && isnan(st.max) && isnan(st.std));
    for (int k = 0; k < PDBX_STAT_COUNT_KINDS; k++)
        assert_int_equal(pdbx_stat_from_name(pdbx_stat_name((pdbx_stat_kind)k)), k);
    assert_int_equal(pdbx_stat_from_name("average"), -1);
    assert_int_equal(pdbx_stat_from_name(NULL), -1);
    assert_string_equal(pdbx_stat_name(PDBX_STAT_MEDIAN), "median");
    double v[] = {10.0, 20.0, 30.0};
    pdbx_stats_from_samples(v, 3, &st);
    assert_double_equal(pdbx_stats_get(&st, PDBX_STAT_MAX), 30.0, 0);
    assert_double_equal(pdbx_stats_get(&st, PDBX_STAT_MIN), 10.0, 0);
    assert_double_equal(pdbx_stats_get(&st, PDBX_STAT_MEAN), 20.0, 0);
}

static void test_stats_json(void **state)
{
    (void)state;
    double s[] = {1.5, 2.5, 4.0};
    pdbx_stats st, back;
    pdbx_stats_from_samples(s, 3, &st);
    cJSON *j = pdbx_stats_to_json(&st);
    assert_non_null(j);
    char *txt = cJSON_PrintUnformatted(j);
    cJSON *parsed = cJSON_Parse(txt);
    assert_int_equal(pdbx_stats_from_json(parsed, &back), 0);
    assert_int_equal(back.count, 3);
    assert_double_equal(back.mean, st.mean, 1e-12 * st.mean);
    assert_double_equal(back.std, st.std, 1e-12);
    cJSON_Delete(j);
    cJSON_Delete(parsed);
    free(txt);

    /* unmeasured values round trip as null -> NaN */
    pdbx_stats_from_samples(NULL, 0, &st);
    j = pdbx_stats_to_json(&st);
    txt = cJSON_PrintUnformatted(j);
    assert_non_null(strstr(txt, "\"mean\":null"));
    parsed = cJSON_Parse(txt);
    assert_int_equal(pdbx_stats_from_json(parsed, &back), 0);
    assert_true(isnan(back.mean));
    cJSON_Delete(j);
    cJSON_Delete(parsed);
    free(txt);

    const char *bad[] = {"[]", "{\"count\":1}", "{\"count\":\"1\",\"min\":1,\"max\":1,\"mean\":1,\"median\":1,\"std\":0}",
                         "{\"count\":-1,\"min\":1,\"max\":1,\"mean\":1,\"median\":1,\"std\":0}",
                         "{\"count\":1,\"min\":1,\"max\":\"x\",\"mean\":1,\"median\":1,\"std\":0}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        parsed = cJSON_Parse(bad[i]);
        assert_int_equal(pdbx_stats_from_json(parsed, &back), -1);
        cJSON_Delete(parsed);
    }
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(pdbx_point_status_name(PDBX_POINT_PENDING), "pending");
    assert_string_equal(pdbx_point_status_name(PDBX_POINT_PREDICTED_OOM), "predicted_oom");
    assert_string_equal(pdbx_point_status_name(PDBX_POINT_SKIPPED), "skipped");
    assert_string_equal(pdbx_run_status_name(PDBX_RUN_COMPLETE), "complete");
    assert_string_equal(pdbx_run_status_name(PDBX_RUN_CORRUPT), "corrupt");
    assert_string_equal(pdbx_run_status_name((pdbx_run_status)99), "?");
}

#define STATS(m) "{\"count\":10,\"min\":" #m ",\"max\":" #m ",\"mean\":" #m ",\"median\":" #m ",\"std\":0}"

static const char *const full_run[] = {
    "{\"type\":\"run_start\",\"t\":1000.5,\"id\":\"2026-11-21__23-59-01_1a2b3c4d\",\"pdbx_version\":\"0.1.0\","
    "\"host\":\"node1\",\"pid\":1234,\"spec\":{\"model\":\"tiny\"},"
    "\"model\":{\"name\":\"TinyLlama-1.1B\",\"tag\":\"tinyllama\",\"hidden\":2048,\"intermediate\":5632,"
    "\"heads\":32,\"kv_heads\":4,\"head_dim\":64,\"layers\":22,\"vocab\":32000},"
    "\"layers_profiled\":2,\"seq_len\":128,\"dtype\":\"fp32\",\"backend\":\"cpu\",\"gpu\":\"cpu\",\"gpu_tag\":\"CPU\","
    "\"warmup\":1,\"steps\":3,\"world_size\":2,\"ranks_per_node\":2,"
    "\"env\":{\"hosts\":[\"node1\"],\"device\":\"AMD EPYC 7B13\",\"nccl\":null},"
    "\"points\":[{\"index\":0,\"tp\":1,\"pp\":2,\"dp\":1,\"mbs\":2,\"seq_len\":128,\"predicted_mem_bytes\":1e9,\"predicted_oom\":false},"
    "{\"index\":1,\"tp\":1,\"pp\":2,\"dp\":1,\"mbs\":1,\"seq_len\":128,\"predicted_mem_bytes\":5e8,\"predicted_oom\":false},"
    "{\"index\":2,\"tp\":2,\"pp\":1,\"dp\":1,\"mbs\":1,\"seq_len\":128,\"predicted_mem_bytes\":6e10,\"predicted_oom\":true}]}",
    "{\"type\":\"point_start\",\"t\":1001,\"point\":0,\"tp\":1,\"pp\":2,\"dp\":1,\"mbs\":2}",
    "{\"type\":\"op\",\"t\":1002,\"point\":0,\"op\":\"attn_q\",\"stats\":" STATS(1.5) ",\"ranks\":[" STATS(1.5) "," STATS(1.25) "],"
    "\"flops\":1.2e9,\"bytes\":3.4e6,\"future_field\":[1,2]}",
    "{\"type\":\"op\",\"t\":1002,\"point\":0,\"op\":\"lm_head\",\"stats\":" STATS(7) "}",
    "{\"type\":\"op\",\"t\":1002,\"point\":0,\"op\":\"op_from_the_future\",\"stats\":" STATS(7) "}",
    "{\"type\":\"comm\",\"t\":1003,\"point\":0,\"kind\":\"pp_sendrecv\",\"bytes\":524288,\"group_size\":2,"
    "\"stats\":" STATS(0.25) ",\"algbw\":2.0,\"busbw\":2.0}",
    "{\"type\":\"trace\",\"t\":1003,\"point\":0,\"rank\":1,\"ops\":[[\"embed\",-1,0,12.5],[\"attn_q\",0,12.5,803.1]]}",
    "{\"type\":\"progress\",\"t\":1003.5,\"done\":0,\"total\":3,\"point\":0,\"op\":\"mlp_up\",\"elapsed_s\":3,\"eta_s\":9}",
    "{\"type\":\"point_end\",\"t\":1004,\"point\":0,\"status\":\"ok\"}",
    "{\"type\":\"point_start\",\"t\":1005,\"point\":1}",
    "{\"type\":\"point_end\",\"t\":1006,\"point\":1,\"status\":\"oom\",\"message\":\"allocation of 1 GiB failed\"}",
    "{\"type\":\"point_end\",\"t\":1006,\"point\":2,\"status\":\"predicted_oom\",\"message\":\"needs 60 GB\"}",
    "{\"type\":\"coll\",\"t\":1007,\"coll\":\"all_reduce\",\"bytes\":1048576,\"nranks\":2,\"ranks_per_node\":2,"
    "\"stats\":" STATS(0.5) ",\"algbw\":2.097152,\"busbw\":2.097152}",
    "{\"type\":\"some_future_event\",\"t\":1007.5}",
    "{\"type\":\"run_end\",\"t\":1008,\"status\":\"complete\",\"reason\":\"\",\"elapsed_s\":7.5}",
};

static void apply_texts(pdbx_run *run, const char *const *texts, size_t n)
{
    char err[256];
    for (size_t i = 0; i < n; i++) {
        cJSON *ev = cJSON_Parse(texts[i]);
        assert_non_null(ev);
        err[0] = '\0';
        int rc = pdbx_run_apply(run, ev, err, sizeof err);
        if (rc != 0)
            fail_msg("event %zu: %s", i, err);
        cJSON_Delete(ev);
    }
}

/* full_run's header as folded: run_start's fields, the spec and env kept, the times. */
static void check_full_run_header(const pdbx_run *run)
{
    assert_string_equal(run->id, "2026-11-21__23-59-01_1a2b3c4d");
    assert_string_equal(run->model.name, "TinyLlama-1.1B");
    assert_string_equal(run->model.tag, "tinyllama");
    assert_int_equal(run->model.hidden, 2048);
    assert_int_equal(run->model.kv_heads, 4);
    assert_int_equal(run->model.vocab, 32000);
    assert_int_equal(run->layers_profiled, 2);
    assert_int_equal(run->seq_len, 128);
    assert_int_equal(run->warmup, 1);
    assert_int_equal(run->steps, 3);
    assert_string_equal(run->dtype, "fp32");
    assert_string_equal(run->backend, "cpu");
    assert_string_equal(run->gpu_tag, "CPU");
    assert_string_equal(run->device_name, "AMD EPYC 7B13");
    assert_string_equal(run->host, "node1");
    assert_int_equal(run->pid, 1234);
    assert_int_equal(run->world_size, 2);
    assert_non_null(run->spec);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(run->spec, "model")->valuestring, "tiny");
    assert_non_null(run->env);
    assert_double_equal(run->created, 1000.5, 0);
    assert_double_equal(run->last_event, 1008, 0);
}

/* full_run's points: point 0's cells (per-rank, flops, bytes; N/A never 0) and PP traffic,
 * point 1 a real OOM, point 2 a predicted one. */
static void check_full_run_points(const pdbx_run *run)
{
    assert_int_equal(run->npoints, 3);
    const pdbx_point *p0 = &run->points[0];
    assert_int_equal(p0->status, PDBX_POINT_OK);
    assert_int_equal(p0->mbs, 2);
    assert_double_equal(p0->started, 1001, 0);
    assert_double_equal(p0->ended, 1004, 0);
    assert_true(p0->op[PDBX_OP_ATTN_Q].valid);
    assert_double_equal(p0->op[PDBX_OP_ATTN_Q].stats.mean, 1.5, 0);
    assert_int_equal(p0->op[PDBX_OP_ATTN_Q].nranks, 2);
    assert_double_equal(p0->op[PDBX_OP_ATTN_Q].rank[1].mean, 1.25, 0);
    assert_double_equal(p0->op[PDBX_OP_ATTN_Q].flops, 1.2e9, 0);
    assert_double_equal(p0->op[PDBX_OP_ATTN_Q].bytes, 3.4e6, 0);
    assert_true(p0->op[PDBX_OP_LM_HEAD].valid);
    assert_int_equal(p0->op[PDBX_OP_LM_HEAD].nranks, 0);
    assert_false(p0->op[PDBX_OP_ATTN_K].valid);    /* never measured: N/A, not 0 */
    assert_true(p0->pp_sendrecv.valid);
    assert_false(p0->tp_allreduce.valid);
    assert_double_equal(p0->pp_sendrecv.bytes, 524288, 0);
    assert_int_equal(p0->pp_sendrecv.group_size, 2);
    assert_double_equal(p0->pp_sendrecv.time.mean, 0.25, 0);
    assert_double_equal(p0->pp_sendrecv.busbw, 2.0, 0);
    assert_int_equal(run->points[1].status, PDBX_POINT_OOM);
    assert_string_equal(run->points[1].message, "allocation of 1 GiB failed");
    assert_int_equal(run->points[2].status, PDBX_POINT_PREDICTED_OOM);
    assert_true(run->points[2].predicted_oom);
    assert_double_equal(run->points[2].predicted_mem_bytes, 6e10, 0);
    assert_null(run->points[0].message);
}

static void test_fold_full_run(void **state)
{
    (void)state;
    pdbx_run run;
    pdbx_run_init(&run);
    assert_int_equal(run.status, PDBX_RUN_RUNNING);
    assert_int_equal(run.current_point, -1);
    apply_texts(&run, full_run, 8);   /* up to the progress heartbeat */
    assert_int_equal(run.status, PDBX_RUN_RUNNING);
    assert_int_equal(run.current_point, 0);
    assert_string_equal(run.current_op, "mlp_up");
    assert_double_equal(run.progress_total, 3, 0);
    assert_int_equal(run.points[0].status, PDBX_POINT_RUNNING);
    assert_int_equal(pdbx_run_points_done(&run), 0);
    apply_texts(&run, full_run + 8, sizeof full_run / sizeof full_run[0] - 8);
    check_full_run_header(&run);
    check_full_run_points(&run);

    assert_int_equal(run.ntrace, 2);
    assert_int_equal(run.trace[1].op, PDBX_OP_ATTN_Q);
    assert_int_equal(run.trace[1].rank, 1);
    assert_int_equal(run.trace[0].layer, -1);
    assert_double_equal(run.trace[1].dur_us, 803.1, 0);
    assert_int_equal(run.ncoll, 1);
    assert_string_equal(run.coll[0].coll, "all_reduce");
    assert_int_equal(run.coll[0].nranks, 2);
    assert_double_equal(run.coll[0].time.mean, 0.5, 0);

    assert_true(run.have_end);
    assert_int_equal(run.status, PDBX_RUN_COMPLETE);
    assert_int_equal(run.current_point, -1);
    assert_int_equal(pdbx_run_points_done(&run), 3);

    /* configs in plan order, points of a config in MBS order */
    int cfg[8][PDBX_CFG_DIMS];
    assert_int_equal(pdbx_run_configs(&run, cfg, 8), 2);
    assert_int_equal(cfg[0][0], 1);
    assert_int_equal(cfg[0][1], 2);
    assert_int_equal(cfg[1][0], 2);
    assert_int_equal(pdbx_run_configs(&run, cfg, 1), 1);
    const pdbx_point *pts[8];
    assert_int_equal(pdbx_run_config_points(&run, 1, 2, 1, 1, pts, 8), 2);
    assert_int_equal(pts[0]->mbs, 1);
    assert_int_equal(pts[1]->mbs, 2);
    assert_int_equal(pdbx_run_config_points(&run, 4, 1, 1, 1, pts, 8), 0);

    pdbx_run_free(&run);
    /* re-init after free works */
    pdbx_run_init(&run);
    pdbx_run_free(&run);
}

static void test_fold_status_and_warnings(void **state)
{
    (void)state;
    pdbx_run run;
    pdbx_run_init(&run);
    char err[256];
    for (int i = 0; i < 20; i++) {
        char txt[128];
        snprintf(txt, sizeof txt, "{\"type\":\"warning\",\"t\":1,\"message\":\"warn %d\"}", i);
        apply_texts(&run, (const char *[]){txt}, 1);
    }
    assert_int_equal(run.nwarnings, 20);
    assert_string_equal(run.warnings[19 % PDBX_WARN_RING], "warn 19");
    assert_string_equal(run.warnings[4 % PDBX_WARN_RING], "warn 4");

    apply_texts(&run, (const char *[]){"{\"type\":\"run_end\",\"status\":\"cancelled\",\"reason\":\"SIGTERM\"}"}, 1);
    assert_int_equal(run.status, PDBX_RUN_CANCELLED);
    assert_string_equal(run.end_reason, "SIGTERM");
    /* a second launch appending to the run makes it running again with the new launcher */
    apply_texts(&run, (const char *[]){"{\"type\":\"launch\",\"world_size\":16,\"ranks_per_node\":8,"
                                       "\"host\":\"n2\",\"pid\":77,\"configs\":[[8,2,1]]}"}, 1);
    assert_int_equal(run.status, PDBX_RUN_RUNNING);
    assert_false(run.have_end);
    assert_int_equal(run.world_size, 16);
    assert_int_equal(run.pid, 77);
    assert_string_equal(run.host, "n2");
    apply_texts(&run, (const char *[]){"{\"type\":\"run_end\",\"status\":\"failed\",\"reason\":\"rank 1 died\"}"}, 1);
    assert_int_equal(run.status, PDBX_RUN_FAILED);

    cJSON *ev = cJSON_Parse("{\"type\":\"run_end\",\"status\":\"exploded\"}");
    assert_int_equal(pdbx_run_apply(&run, ev, err, sizeof err), -1);
    assert_non_null(strstr(err, "status"));
    assert_non_null(strstr(err, "exploded"));
    cJSON_Delete(ev);
    pdbx_run_free(&run);
}

/* Malformed events fail with a message naming the event and field; the run stays usable. */
static void test_fold_malformed(void **state)
{
    (void)state;
    struct { const char *json, *expect; } bad[] = {
        {"[1,2]", "not a JSON object"},
        {"{\"t\":1}", "\"type\""},
        {"{\"type\":7}", "\"type\""},
        {"{\"type\":\"op\",\"op\":\"attn_q\",\"stats\":" STATS(1) "}", "\"point\""},
        {"{\"type\":\"op\",\"point\":-3,\"op\":\"attn_q\",\"stats\":" STATS(1) "}", "\"point\""},
        {"{\"type\":\"op\",\"point\":0,\"op\":\"attn_q\",\"stats\":{\"count\":1}}", "\"stats\""},
        {"{\"type\":\"op\",\"point\":0,\"op\":\"attn_q\",\"stats\":" STATS(1) ",\"ranks\":[3]}", "\"ranks\""},
        {"{\"type\":\"comm\",\"point\":0,\"kind\":\"cp_alltoall\",\"stats\":" STATS(1) "}", "\"kind\""},
        {"{\"type\":\"comm\",\"point\":0,\"kind\":\"tp_allreduce\"}", "\"stats\""},
        {"{\"type\":\"trace\",\"point\":0,\"ops\":7}", "\"ops\""},
        {"{\"type\":\"trace\",\"point\":0,\"ops\":[[\"attn_q\",0,\"x\",1]]}", "\"ops\"[0]"},
        {"{\"type\":\"point_end\",\"point\":0,\"status\":\"great\"}", "\"status\""},
        {"{\"type\":\"coll\",\"stats\":" STATS(1) "}", "\"coll\""},
        {"{\"type\":\"coll\",\"coll\":\"all_reduce\",\"stats\":5}", "\"stats\""},
        {"{\"type\":\"warning\"}", "\"message\""},
        {"{\"type\":\"run_start\",\"points\":{}}", "\"points\""},
        {"{\"type\":\"run_start\",\"points\":[5]}", "points[0]"},
    };
    pdbx_run run;
    pdbx_run_init(&run);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        cJSON *ev = cJSON_Parse(bad[i].json);
        assert_non_null(ev);
        if (pdbx_run_apply(&run, ev, err, sizeof err) != -1)
            fail_msg("accepted: %s", bad[i].json);
        if (!strstr(err, bad[i].expect))
            fail_msg("%s: message \"%s\" lacks %s", bad[i].json, err, bad[i].expect);
        cJSON_Delete(ev);
    }
    /* still consistent: a good event applies after all the bad ones */
    apply_texts(&run, (const char *[]){"{\"type\":\"op\",\"point\":0,\"op\":\"mlp_up\",\"stats\":" STATS(2) "}"}, 1);
    assert_true(run.npoints >= 1);
    pdbx_run_free(&run);
}

/* A difference is real only beyond both cells' noise: Welch at z = 1.96 on the means' variances
 * std^2 / (count - 1). A 3% difference with a 10% std over 6 samples is noise; a 1% difference
 * with a 0.1% std is real; no std/count: unknown. */
static void test_noise_judge(void **state)
{
    (void)state;
    pdbx_stats a = { 6, 0.9, 1.1, 1.00, 1.00, 0.10, NAN }, b = { 6, 0.93, 1.13, 1.03, 1.03, 0.10, NAN };
    double thr;
    assert_int_equal(pdbx_stats_judge(&a, &b, PDBX_STAT_MEAN, &thr), PDBX_NOISE_SAME);
    assert_float_equal(thr, 1.96 * sqrt(0.01 / 5 + 0.01 / 5), 1e-12);
    pdbx_stats c = { 6, 0.999, 1.001, 1.00, 1.00, 0.001, NAN }, d = { 6, 1.009, 1.011, 1.01, 1.01, 0.001, NAN };
    assert_int_equal(pdbx_stats_judge(&c, &d, PDBX_STAT_MEAN, &thr), PDBX_NOISE_WORSE);
    assert_int_equal(pdbx_stats_judge(&d, &c, PDBX_STAT_MEAN, &thr), PDBX_NOISE_BETTER);
    /* the old fixed 0.5% rule would call the 3% one real and is gone */
    assert_true(fabs(b.mean / a.mean - 1) > 0.005);
    /* the median uses the same threshold */
    assert_int_equal(pdbx_stats_judge(&c, &d, PDBX_STAT_MEDIAN, NULL), PDBX_NOISE_WORSE);
    /* no noise estimate: one sample, a NaN std, a missing cell */
    pdbx_stats one = { 1, 1.5, 1.5, 1.5, 1.5, 0, NAN }, nostd = { 6, 1, 1, 1, 1, NAN, NAN }, none = { 0, NAN, NAN, NAN, NAN, NAN, NAN };
    assert_int_equal(pdbx_stats_judge(&a, &one, PDBX_STAT_MEAN, &thr), PDBX_NOISE_UNKNOWN);
    assert_true(isnan(thr));
    assert_int_equal(pdbx_stats_judge(&nostd, &a, PDBX_STAT_MEAN, NULL), PDBX_NOISE_UNKNOWN);
    assert_int_equal(pdbx_stats_judge(&none, &a, PDBX_STAT_MEAN, NULL), PDBX_NOISE_UNKNOWN);
    /* equal cells with no spread are the same; a difference with zero noise is real */
    pdbx_stats z1 = { 4, 2, 2, 2, 2, 0, NAN }, z2 = { 4, 2.001, 2.001, 2.001, 2.001, 0, NAN };
    assert_int_equal(pdbx_stats_judge(&z1, &z1, PDBX_STAT_MEAN, NULL), PDBX_NOISE_SAME);
    assert_int_equal(pdbx_stats_judge(&z1, &z2, PDBX_STAT_MEAN, NULL), PDBX_NOISE_WORSE);
    assert_string_equal(pdbx_noise_name(PDBX_NOISE_SAME), "same");
    assert_string_equal(pdbx_noise_name(PDBX_NOISE_WORSE), "worse");
    assert_string_equal(pdbx_noise_name(PDBX_NOISE_BETTER), "better");
    assert_string_equal(pdbx_noise_name(PDBX_NOISE_UNKNOWN), "unknown");
}

/* A config is (tp, pp, dp, ep): TP1 PP1 DP2 at EP 2 is a config of its own beside EP 1's, in
 * the config list, the point query and the run table (ep 0, a point built before EP existed,
 * is EP 1). */
static void test_configs_by_ep(void **state)
{
    (void)state;
    static pdbx_point pts[5];
    const int def[5][5] = {   /* tp, pp, dp, ep, mbs in plan order */
        { 1, 1, 2, 1, 2 }, { 1, 1, 2, 0, 1 }, { 2, 1, 1, 1, 1 }, { 1, 1, 2, 2, 2 }, { 1, 1, 2, 2, 1 },
    };
    pdbx_run run;
    memset(&run, 0, sizeof run);
    for (int i = 0; i < 5; i++) {
        memset(&pts[i], 0, sizeof pts[i]);
        pts[i].index = i;
        pts[i].tp = def[i][0], pts[i].pp = def[i][1], pts[i].dp = def[i][2], pts[i].ep = def[i][3];
        pts[i].mbs = def[i][4];
        pts[i].status = PDBX_POINT_OK;
    }
    run.points = pts;
    run.npoints = 5;
    int cfg[8][PDBX_CFG_DIMS];
    assert_int_equal(pdbx_run_configs(&run, cfg, 8), 3);
    const int want[3][PDBX_CFG_DIMS] = { { 1, 1, 2, 1 }, { 2, 1, 1, 1 }, { 1, 1, 2, 2 } };
    for (int i = 0; i < 3; i++)
        assert_memory_equal(cfg[i], want[i], sizeof want[i]);
    const pdbx_point *got[8];
    assert_int_equal(pdbx_run_config_points(&run, 1, 1, 2, 1, got, 8), 2);
    assert_true(got[0] == &pts[1] && got[1] == &pts[0]);      /* MBS order; ep 0 is EP 1 */
    assert_int_equal(pdbx_run_config_points(&run, 1, 1, 2, 0, got, 8), 2);
    assert_int_equal(pdbx_run_config_points(&run, 1, 1, 2, 2, got, 8), 2);
    assert_true(got[0] == &pts[4] && got[1] == &pts[3]);
    assert_int_equal(pdbx_run_config_points(&run, 1, 1, 2, 4, got, 8), 0);
    pdbx_rt_config c;
    assert_int_equal(pdbx_rt_config_build(&run, 1, 1, 2, 2, &c), 0);
    assert_int_equal(c.ep, 2);
    assert_int_equal(c.npoints, 2);
    assert_ptr_equal(c.points[0].point, &pts[4]);
    pdbx_rt_config_free(&c);
    pdbx_runtable t;
    assert_int_equal(pdbx_runtable_build(&run, 0, &t), 0);
    assert_int_equal(t.nconfigs, 3);
    assert_true(t.configs[0].ep == 1 && t.configs[0].npoints == 2 && t.configs[2].ep == 2);
    assert_ptr_equal(t.configs[2].points[1].point, &pts[3]);
    pdbx_runtable_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats_from_samples),
        cmocka_unit_test(test_stats_json),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_noise_judge),
        cmocka_unit_test(test_fold_full_run),
        cmocka_unit_test(test_configs_by_ep),
        cmocka_unit_test(test_fold_status_and_warnings),
        cmocka_unit_test(test_fold_malformed),
    };
    return cmocka_run_group_tests_name("store_profiledb", tests, NULL, NULL);
}
