/* test_export_csv.c: Vidur-style CSV export. Runs are built from real events with statistics
 * that are short binary fractions, so every expected line is written out exactly. */
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

#include "store/export/export.h"
#include "store/profiledb.h"
#include "test_export_util.h"

static double op_std(int op)
{
    switch (op) {
    case PDBX_OP_ATTN_Q: case PDBX_OP_MLP_GATE: return 0.375;
    case PDBX_OP_ATTN_K: case PDBX_OP_MLP_UP: return 0.5;
    case PDBX_OP_ATTN_V: return 0.0;
    default: return 0.25;
    }
}

/* Exact binary fractions: sums print the same under every formatting. */
static void csv_stats(int point, int op, int mbs, int tp, int rank, pdbx_stats *s)
{
    (void)point;
    (void)rank;
    double v = 0.25 * (op + 1) * mbs + 0.5 * tp;
    s->count = 20;
    s->mean = v;
    s->median = v + 0.125;
    s->min = v - 0.0625;
    s->max = v + 1.0;
    s->std = op_std(op);
}

#define TS(n) "time_stats." n ".min,time_stats." n ".max,time_stats." n ".mean,time_stats." n \
              ".median,time_stats." n ".std,"
#define E5 ",,,,,"
/* Vidur's ten mlp.csv ops, always written in its order (its shipped mlp.csv) */
#define VIDUR_COLS TS("emb") TS("input_layernorm") TS("attn_pre_proj") TS("attn_rope") TS("attn_post_proj") \
                   TS("post_attention_layernorm") TS("mlp_up_proj") TS("mlp_act") TS("mlp_down_proj") TS("add")
#define MODEL_COLS "n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens," \
                   "num_tensor_parallel_workers"
#define COLL_COLS(c) "time_stats." c ".min,time_stats." c ".max,time_stats." c ".mean,time_stats." \
                     c ".median,time_stats." c ".std,rank,num_workers,size,collective," \
                     "devices_per_node,max_devices_per_node"

static char **split_lines(char *text, int *n)
{
    char **lines = calloc(64, sizeof *lines);
    assert_non_null(lines);
    *n = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && *n < 64; l = strtok_r(NULL, "\n", &save))
        lines[(*n)++] = l;
    return lines;
}

static int count_fields(const char *line)
{
    int n = 1;
    for (const char *p = line; *p; p++)
        n += *p == ',';
    return n;
}

static void test_mlp_csv_fused_op_exact(void **state)
{
    const char *dir = *state;
    pdbx_opmask qkv = PDBX_OP_BIT(PDBX_OP_ATTN_Q) | PDBX_OP_BIT(PDBX_OP_ATTN_K) | PDBX_OP_BIT(PDBX_OP_ATTN_V);
    const tx_point pts[] = { { 1, 1, 1, 1, "ok", qkv }, { 1, 1, 1, 2, "oom", qkv } };
    pdbx_run run;
    tx_build_run(&run, pts, 2, csv_stats, 0);
    char out[512], path[600], err[512] = "";
    snprintf(out, sizeof out, "%s/csv", dir);
    tx_wrote_log log = { 0 };
    if (pdbx_export_csv(&run, out, tx_wrote, &log, err, sizeof err) != 0)
        fail_msg("pdbx_export_csv: %s", err);
    assert_int_equal(log.n, 5);
    const char *names[5] = { "mlp.csv", "all_reduce.csv", "send_recv.csv", "step_comm.csv",
                             "meta.json" };
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", out, names[i]);
        assert_string_equal(log.paths[i], path);
    }
    snprintf(path, sizeof path, "%s/mlp.csv", out);
    char *text = test_slurp(path, NULL);
    assert_non_null(text);
    /* q, k, v (ops 2, 6, 7) at MBS 1, TP 1: means 1.25, 2.25, 2.5; std sqrt(0.375^2 + 0.5^2 + 0) = 0.625;
     * Vidur's other nine columns are written, empty (never an invented number) */
    assert_string_equal(text,
        VIDUR_COLS MODEL_COLS "\n"
        E5 E5 "5.8125,9,6,6.375,0.625," E5 E5 E5 E5 E5 E5 E5 "8,4,256,688,1000,True,128,1\n");
    free(text);
    /* nothing measured: header lines only */
    snprintf(path, sizeof path, "%s/all_reduce.csv", out);
    text = test_slurp(path, NULL);
    assert_string_equal(text, COLL_COLS("all_reduce") "\n");
    free(text);
    snprintf(path, sizeof path, "%s/send_recv.csv", out);
    text = test_slurp(path, NULL);
    assert_string_equal(text, COLL_COLS("send_recv") "\n");
    free(text);
    pdbx_run_free(&run);
}

/* Vidur's op -> the pdbx ops it sums, as docs/exports.md documents it (independent table), by
 * name: attn_rope and mlp_residual exist once the ops that time them do (an unknown name: the
 * column is empty). */
static const struct { const char *name; const char *parts[3]; int nparts; } vidur_ops[] = {
    { "emb", { "embed" }, 1 },
    { "input_layernorm", { "input_norm" }, 1 },
    { "attn_pre_proj", { "attn_q", "attn_k", "attn_v" }, 3 },
    { "attn_rope", { "attn_rope" }, 1 },
    { "attn_post_proj", { "attn_o" }, 1 },
    { "post_attention_layernorm", { "post_attn_norm" }, 1 },
    { "mlp_up_proj", { "mlp_gate", "mlp_up" }, 2 },
    { "mlp_act", { "mlp_act_fn" }, 1 },
    { "mlp_down_proj", { "mlp_down" }, 1 },
    { "add", { "mlp_residual" }, 1 },
    { "attn_core", { "attn_core" }, 1 },
    { "final_norm", { "final_norm" }, 1 },
    { "lm_head", { "lm_head" }, 1 },
};

static void expected_mlp_line(char *buf, size_t len, const tx_point *p, int point)
{
    size_t o = 0;
    for (size_t i = 0; i < sizeof vidur_ops / sizeof vidur_ops[0]; i++) {
        double mn = 0, mx = 0, mean = 0, med = 0, var = 0;
        int known = 1;
        for (int k = 0; k < vidur_ops[i].nparts; k++)
            known &= pdbx_op_from_name(vidur_ops[i].parts[k]) >= 0;
        if (!known) {
            o += (size_t)snprintf(buf + o, len - o, ",,,,,");
            continue;
        }
        for (int k = 0; k < vidur_ops[i].nparts; k++) {
            pdbx_stats s;
            csv_stats(point, pdbx_op_from_name(vidur_ops[i].parts[k]), p->mbs, p->tp, 0, &s);
            mn += s.min;
            mx += s.max;
            mean += s.mean;
            med += s.median;
            var += s.std * s.std;
        }
        o += (size_t)snprintf(buf + o, len - o, "%g,%g,%g,%g,%g,", mn, mx, mean, med, sqrt(var));
    }
    snprintf(buf + o, len - o, "8,4,256,688,1000,True,%d,%d", p->mbs * TX_SEQ_LEN, p->tp);
}

/* The run of pts (6 points) with the points' parallelism traffic and the collectives sweep. */
static void build_csv_run(pdbx_run *run, const tx_point *pts)
{
    tx_build_run(run, pts, 6, csv_stats, 0);
    tx_apply(run, "{\"type\":\"comm\",\"point\":3,\"kind\":\"tp_allreduce\",\"bytes\":65536,\"group_size\":2,"
             "\"stats\":{\"count\":20,\"min\":0.03125,\"max\":0.0625,\"mean\":0.046875,\"median\":0.046875,"
             "\"std\":0.0078125},\"algbw\":1.4,\"busbw\":1.4}");
    tx_apply(run, "{\"type\":\"comm\",\"point\":4,\"kind\":\"tp_allreduce\",\"bytes\":131072,\"group_size\":2,"
             "\"stats\":{\"count\":20,\"min\":1,\"max\":2,\"mean\":1.5,\"median\":1.5,\"std\":0.5}}");
    tx_apply(run, "{\"type\":\"comm\",\"point\":5,\"kind\":\"dp_allreduce\",\"bytes\":2097152,\"group_size\":2,"
             "\"stats\":{\"count\":5,\"min\":2.5,\"max\":3.5,\"mean\":3,\"median\":2.75,\"std\":0.25}}");
    tx_apply(run, "{\"type\":\"comm\",\"point\":5,\"kind\":\"pp_sendrecv\",\"bytes\":65536,\"group_size\":2,"
             "\"stats\":{\"count\":20,\"min\":0.125,\"max\":0.25,\"mean\":0.1875,\"median\":0.1875,\"std\":0.03125}}");
    tx_apply(run, "{\"type\":\"coll\",\"coll\":\"all_reduce\",\"bytes\":1048576,\"nranks\":2,\"ranks_per_node\":2,"
             "\"stats\":{\"count\":5,\"min\":0.5,\"max\":0.75,\"mean\":0.625,\"median\":0.625,\"std\":0.0625},"
             "\"algbw\":1.6,\"busbw\":1.6}");
    tx_apply(run, "{\"type\":\"coll\",\"coll\":\"all_gather\",\"bytes\":1048576,\"nranks\":2,\"ranks_per_node\":2,"
             "\"stats\":{\"count\":5,\"min\":9,\"max\":9,\"mean\":9,\"median\":9,\"std\":0}}");
    tx_apply(run, "{\"type\":\"coll\",\"coll\":\"all_reduce\",\"bytes\":4194304,\"nranks\":4,\"ranks_per_node\":2,"
             "\"stats\":{\"count\":5,\"min\":1.5,\"max\":2.25,\"mean\":1.75,\"median\":1.625,\"std\":0.125}}");
    tx_apply(run, "{\"type\":\"coll\",\"coll\":\"send_recv\",\"bytes\":4096,\"nranks\":4,\"ranks_per_node\":1,"
             "\"stats\":{\"count\":5,\"min\":7,\"max\":7,\"mean\":7,\"median\":7,\"std\":0}}");   /* two pairs: left out */
    tx_apply(run, "{\"type\":\"coll\",\"coll\":\"send_recv\",\"bytes\":1024,\"nranks\":2,\"ranks_per_node\":1,"
             "\"stats\":{\"count\":5,\"min\":0.015625,\"max\":0.03125,\"mean\":0.0234375,\"median\":0.0234375,"
             "\"std\":0.00390625}}");
    tx_end_run(run);
}

/* mlp.csv: Vidur's columns, one row per ok point, by config in plan order, MBS ascending. */
static void check_mlp_csv(const char *out, const tx_point *pts)
{
    char path[600];
    snprintf(path, sizeof path, "%s/mlp.csv", out);
    char *text = test_slurp(path, NULL);
    assert_non_null(text);
    int n;
    char **lines = split_lines(text, &n);
    assert_int_equal(n, 1 + 4);                          /* header + the 4 ok points */
    assert_string_equal(lines[0], VIDUR_COLS TS("attn_core") TS("final_norm") TS("lm_head") MODEL_COLS);
    /* rows by config in plan order, MBS ascending: points 0, 1 (TP 1), 3 (TP 2), 5 (TP 1 PP 2) */
    const int rows[4] = { 0, 1, 3, 5 };
    for (int i = 0; i < 4; i++) {
        char want[4096];
        expected_mlp_line(want, sizeof want, &pts[rows[i]], rows[i]);
        assert_string_equal(lines[1 + i], want);
        assert_int_equal(count_fields(lines[1 + i]), count_fields(lines[0]));
    }
    free(lines);
    free(text);
}

/* The collectives sweep only, with Vidur's size: bytes at 2 bytes per element of each rank's
 * buffer, 2 x S / 4 in this fp32 run (Vidur reads num_tokens = size / n_embd / 2); then the
 * points' own traffic, apart. */
static void check_coll_csvs(const char *out)
{
    char path[600];
    snprintf(path, sizeof path, "%s/all_reduce.csv", out);
    char *text = test_slurp(path, NULL);
    assert_string_equal(text,
        COLL_COLS("all_reduce") "\n"
        "0.5,0.75,0.625,0.625,0.0625,0,2,524288,all_reduce,2,2\n"
        "1.5,2.25,1.75,1.625,0.125,0,4,2097152,all_reduce,2,2\n");
    free(text);
    snprintf(path, sizeof path, "%s/send_recv.csv", out);
    text = test_slurp(path, NULL);
    assert_string_equal(text,
        COLL_COLS("send_recv") "\n"
        "0.015625,0.03125,0.0234375,0.0234375,0.00390625,0,2,512,send_recv,1,2\n");
    free(text);
    /* the points' own traffic, apart: point 4 is oom (not exported); point 5's PP stages are
     * 2 ranks apart (TP 1 x DP 2), its DP group neighbours */
    snprintf(path, sizeof path, "%s/step_comm.csv", out);
    text = test_slurp(path, NULL);
    assert_string_equal(text,
        COLL_COLS("step_comm") ",kind,tp,pp,dp,mbs,num_tokens\n"
        "0.03125,0.0625,0.046875,0.046875,0.0078125,0,2,32768,all_reduce,2,2,tp_allreduce,2,1,1,1,128\n"
        "0.125,0.25,0.1875,0.1875,0.03125,0,2,32768,send_recv,1,2,pp_sendrecv,1,2,2,1,128\n"
        "2.5,3.5,3,2.75,0.25,0,2,1048576,all_reduce,2,2,dp_allreduce,1,2,2,1,128\n");
    free(text);
}

static void test_all_three_csvs_exact(void **state)
{
    const char *dir = *state;
    const tx_point pts[] = {
        { 1, 1, 1, 1, "ok", 0 }, { 1, 1, 1, 2, "ok", 0 }, { 1, 1, 1, 4, "predicted_oom", 0 },
        { 2, 1, 1, 1, "ok", 0 }, { 2, 1, 1, 2, "oom", 0 },
        { 1, 2, 2, 1, "ok", 0 },
    };
    pdbx_run run;
    build_csv_run(&run, pts);
    char out[512], err[512] = "";
    snprintf(out, sizeof out, "%s/csv/nested", dir);     /* created with its parents */
    if (pdbx_export_csv(&run, out, NULL, NULL, err, sizeof err) != 0)
        fail_msg("pdbx_export_csv: %s", err);
    check_mlp_csv(out, pts);
    check_coll_csvs(out);
    pdbx_run_free(&run);
}

static double irregular(int point, int op)
{
    return 0.1 * (op + 1) + 0.0123456789 * point;    /* not short in binary */
}

static void irregular_stats(int point, int op, int mbs, int tp, int rank, pdbx_stats *s)
{
    (void)mbs; (void)tp; (void)rank;
    double v = irregular(point, op);
    s->count = 3;
    s->mean = s->median = s->min = s->max = v;
    s->std = 0.0;
}

static void test_numbers_round_trip(void **state)
{
    const char *dir = *state;
    pdbx_opmask ops = PDBX_OP_BIT(PDBX_OP_EMBED) | PDBX_OP_BIT(PDBX_OP_MLP_ACT_FN);
    const tx_point pts[] = { { 1, 1, 1, 1, "ok", ops }, { 1, 1, 1, 2, "ok", ops } };
    pdbx_run run;
    tx_build_run(&run, pts, 2, irregular_stats, 0);
    char out[512], path[600], err[512] = "";
    snprintf(out, sizeof out, "%s/csv-rt", dir);
    assert_int_equal(pdbx_export_csv(&run, out, NULL, NULL, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/mlp.csv", out);
    char *text = test_slurp(path, NULL);
    int n;
    char **lines = split_lines(text, &n);
    assert_int_equal(n, 3);
    assert_string_equal(lines[0], VIDUR_COLS MODEL_COLS);
    for (int r = 0; r < 2; r++) {
        double emb = strtod(lines[1 + r], NULL);
        const char *field = lines[1 + r];
        for (int i = 0; i < 7 * 5; i++)            /* mlp_act: Vidur's 8th column */
            field = strchr(field, ',') + 1;
        double act = strtod(field, NULL);
        assert_true(emb == irregular(r, PDBX_OP_EMBED));      /* exact: shortest round trip */
        assert_true(act == irregular(r, PDBX_OP_MLP_ACT_FN));
        assert_true(strlen(lines[1 + r]) < 240);              /* and short, not %.17g noise */
    }
    free(lines);
    free(text);
    pdbx_run_free(&run);
}

static void test_no_ok_point_writes_nothing(void **state)
{
    const char *dir = *state;
    const tx_point pts[] = { { 1, 1, 1, 1, "oom", 0 }, { 2, 1, 1, 1, "predicted_oom", 0 } };
    pdbx_run run;
    tx_build_run(&run, pts, 2, csv_stats, 0);
    char out[512], path[600], err[512] = "";
    snprintf(out, sizeof out, "%s/csv-none", dir);
    tx_wrote_log log = { 0 };
    assert_int_equal(pdbx_export_csv(&run, out, tx_wrote, &log, err, sizeof err), -1);
    assert_non_null(strstr(err, "no ok point"));
    assert_non_null(strstr(err, "mlp.csv"));
    assert_int_equal(log.n, 0);
    snprintf(path, sizeof path, "%s/mlp.csv", out);
    assert_false(tx_exists(path));
    pdbx_run_free(&run);
}

/* Issue 10 item 1: a point's TP and DP come from the file. TP 0 made the DP all-reduce's
 * stride 0 and TP*DP = 65536*65536 wrapped to 0 for the PP send/recv: both divided by zero
 * (SIGFPE). The export must write the rows instead. */
static void test_zero_and_overflowing_degrees(void **state)
{
    const char *dir = *state;
    pdbx_opmask ops = PDBX_OP_BIT(PDBX_OP_EMBED);
    const tx_point pts[] = { { 1, 1, 2, 1, "ok", ops }, { 1, 2, 1, 1, "ok", ops } };
    pdbx_run run;
    tx_build_run(&run, pts, 2, csv_stats, 0);
    /* the degrees as a hostile file declares them (the fold keeps what the plan says) */
    run.points[0].tp = 0;
    run.points[1].tp = 65536;
    run.points[1].dp = 65536;
    const char *st = "{\"count\":3,\"min\":1,\"max\":1,\"mean\":1,\"median\":1,\"std\":0}";
    tx_apply(&run, "{\"type\":\"comm\",\"point\":0,\"kind\":\"dp_allreduce\",\"stats\":%s,"
             "\"bytes\":1024,\"group_size\":2}", st);
    tx_apply(&run, "{\"type\":\"comm\",\"point\":1,\"kind\":\"pp_sendrecv\",\"stats\":%s,"
             "\"bytes\":2048,\"group_size\":2}", st);
    char out[512], path[600], err[512] = "";
    snprintf(out, sizeof out, "%s/csv-degrees", dir);
    assert_int_equal(pdbx_export_csv(&run, out, NULL, NULL, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/step_comm.csv", out);
    char *text = test_slurp(path, NULL);
    /* stride 0 is taken as 1: both ranks of the DP group fit a node of 2; PP stages 2^32 ranks
     * apart: one rank per node */
    assert_string_equal(text, COLL_COLS("step_comm") ",kind,tp,pp,dp,mbs,num_tokens\n"
                        "1,1,1,1,0,0,2,512,all_reduce,2,2,dp_allreduce,0,1,2,1,128\n"
                        "1,1,1,1,0,0,2,1024,send_recv,1,2,pp_sendrecv,65536,2,65536,1,128\n");
    free(text);
    pdbx_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mlp_csv_fused_op_exact, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_all_three_csvs_exact, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_numbers_round_trip, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_no_ok_point_writes_nothing, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_zero_and_overflowing_degrees, test_setup_tmpdir, test_teardown_tmpdir),
    };
    return cmocka_run_group_tests_name("export_csv", tests, NULL, NULL);
}
