/* test_export_npz.c: FASOP NPZ export. Runs are built from real events; the files are checked
 * byte by byte here (ZIP + npy v1.0) and read by numpy through tests/npz_check.py. */
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
#include "store/export/export_zip.h"
#include "store/profiledb.h"
#include "test_export_util.h"

/* FASOP's columns and the ops each holds, written out here independently of store/ops.c. */
static const pdbx_op fasop_cols[10][5] = {
    { PDBX_OP_EMBED, PDBX_OP_COUNT },
    { PDBX_OP_INPUT_NORM, PDBX_OP_ATTN_Q, PDBX_OP_TP_ALLREDUCE_MLP, PDBX_OP_MLP_RESIDUAL, PDBX_OP_COUNT },
    { PDBX_OP_ATTN_K, PDBX_OP_COUNT },
    { PDBX_OP_ATTN_V, PDBX_OP_COUNT },
    { PDBX_OP_ATTN_ROPE, PDBX_OP_ATTN_CORE, PDBX_OP_ATTN_O, PDBX_OP_COUNT },
    { PDBX_OP_TP_ALLREDUCE_ATTN, PDBX_OP_ATTN_RESIDUAL, PDBX_OP_POST_ATTN_NORM, PDBX_OP_MLP_GATE,
      PDBX_OP_COUNT },
    { PDBX_OP_MLP_ACT_FN, PDBX_OP_COUNT },
    { PDBX_OP_MLP_UP, PDBX_OP_COUNT },
    { PDBX_OP_MLP_DOWN, PDBX_OP_COUNT },
    { PDBX_OP_FINAL_NORM, PDBX_OP_LM_HEAD, PDBX_OP_COUNT },
};
static const pdbx_op pure_cols[10] = {
    PDBX_OP_EMBED, PDBX_OP_ATTN_Q, PDBX_OP_ATTN_K, PDBX_OP_ATTN_V, PDBX_OP_ATTN_O,
    PDBX_OP_MLP_GATE, PDBX_OP_MLP_ACT_FN, PDBX_OP_MLP_UP, PDBX_OP_MLP_DOWN, PDBX_OP_LM_HEAD,
};

static double stat_of(int point, int op, const tx_point *p, pdbx_stat_kind k)
{
    pdbx_stats s;
    tx_stats_default(point, op, p->mbs, p->tp, 0, &s);
    return pdbx_stats_get(&s, k);
}

/* Expected row of plan point `point` (an ok point), computed from the stats function. */
static void expected_row(const tx_point *pts, int point, pdbx_attribution attr, pdbx_stat_kind k,
                         double out[10])
{
    const tx_point *p = &pts[point];
    pdbx_opmask measured = tx_point_ops(p);
    for (int c = 0; c < 10; c++) {
        out[c] = 0.0;
        if (attr == PDBX_ATTR_PURE) {
            out[c] = stat_of(point, pure_cols[c], p, k);
            continue;
        }
        for (int i = 0; fasop_cols[c][i] != PDBX_OP_COUNT; i++)
            if (measured & PDBX_OP_BIT(fasop_cols[c][i]))
                out[c] += stat_of(point, fasop_cols[c][i], p, k);
    }
}

/* ---- byte-level checks of the archive and the npy member ---------------------------------- */

static uint32_t rd32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

static void check_npz_bytes(const char *path, int rows, const double *values)
{
    size_t len = 0;
    unsigned char *f = (unsigned char *)test_slurp(path, &len);
    assert_non_null(f);
    /* end of central directory: 2 entries, no comment */
    assert_true(len > 22 + 30);
    const unsigned char *eocd = f + len - 22;
    assert_int_equal(rd32(eocd), 0x06054b50u);
    assert_int_equal(rd16(eocd + 8), 2);
    assert_int_equal(rd16(eocd + 10), 2);
    assert_int_equal(rd32(eocd + 12) + rd32(eocd + 16), len - 22);   /* directory ends at EOCD */
    /* first local header: data.npy, stored, sizes equal */
    assert_int_equal(rd32(f), 0x04034b50u);
    assert_int_equal(rd16(f + 8), 0);                 /* method: stored */
    uint32_t csize = rd32(f + 18), usize = rd32(f + 22);
    assert_int_equal(csize, usize);
    uint16_t name_len = rd16(f + 26), extra = rd16(f + 28);
    assert_int_equal(name_len, 8);
    assert_memory_equal(f + 30, "data.npy", 8);
    const unsigned char *npy = f + 30 + name_len + extra;
    assert_int_equal(pdbx_crc32(0, npy, usize), rd32(f + 14));
    /* npy v1.0 */
    assert_memory_equal(npy, "\x93NUMPY\x01\x00", 8);
    uint16_t hlen = rd16(npy + 8);
    size_t data_start = 10 + (size_t)hlen;
    assert_int_equal(data_start % 64, 0);
    char want[128];
    int wl = snprintf(want, sizeof want, "{'descr': '<f8', 'fortran_order': False, 'shape': (%d, 10), }", rows);
    assert_memory_equal(npy + 10, want, (size_t)wl);
    for (size_t i = 10 + (size_t)wl; i < data_start - 1; i++)
        assert_int_equal(npy[i], ' ');
    assert_int_equal(npy[data_start - 1], '\n');
    assert_int_equal(usize, data_start + (size_t)rows * 10 * 8);
    for (int i = 0; i < rows * 10; i++) {
        uint64_t bits = 0;
        for (int b = 0; b < 8; b++)
            bits |= (uint64_t)npy[data_start + 8 * (size_t)i + b] << (8 * b);
        double v;
        memcpy(&v, &bits, sizeof v);
        assert_true(v == values[i]);                  /* bit-exact: the same doubles */
    }
    free(f);
}

/* Writes EXPECTED.json and runs tests/npz_check.py on the file with the system numpy. */
static void numpy_check(const char *dir, const char *npz, const double *values, int rows,
                        const char *attr, const char *stat, int tp, int pp, int dp,
                        const char *const *not_measured)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *vals = cJSON_AddArrayToObject(o, "values");
    for (int r = 0; r < rows; r++)
        cJSON_AddItemToArray(vals, cJSON_CreateDoubleArray(values + 10 * r, 10));
    cJSON_AddStringToObject(o, "attribution", attr);
    cJSON_AddStringToObject(o, "stat", stat);
    cJSON_AddNumberToObject(o, "tp", tp);
    cJSON_AddNumberToObject(o, "pp", pp);
    cJSON_AddNumberToObject(o, "dp", dp);
    cJSON *nm = cJSON_AddArrayToObject(o, "ops_not_measured");
    for (int i = 0; not_measured && not_measured[i]; i++)
        cJSON_AddItemToArray(nm, cJSON_CreateString(not_measured[i]));
    char *text = cJSON_Print(o);   /* %.17g where needed: the doubles survive exactly */
    cJSON_Delete(o);
    char exp_path[512], cmd[2048];
    snprintf(exp_path, sizeof exp_path, "%s/expected-tp%d.json", dir, tp);
    FILE *f = fopen(exp_path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    free(text);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/tests/npz_check.py' '%s' '%s'",
             PDBX_SOURCE_DIR, npz, exp_path);
    int rc = system(cmd);
    if (rc != 0)
        fail_msg("numpy check failed (status %d): %s", rc, cmd);
}

/* ---- the shared run: two TP degrees, OOM truncation, two configs sharing TP 2 ------------- */

static const tx_point main_pts[] = {
    { 1, 2, 1, 1, "ok", 0 },
    { 1, 2, 1, 2, "ok", 0 },
    { 1, 2, 1, 4, "ok", 0 },
    { 1, 2, 1, 8, "oom", 0 },
    { 1, 2, 1, 16, "skipped", 0 },
    { 2, 1, 2, 1, "ok", 0 },              /* TP 2, fewer ok rows: not the one exported */
    { 2, 1, 2, 2, "predicted_oom", 0 },
    { 2, 2, 1, 1, "ok", 0 },
    { 2, 2, 1, 2, "ok", 0 },
    { 2, 2, 1, 4, "ok", 0 },
};
#define N_MAIN ((int)(sizeof main_pts / sizeof main_pts[0]))

static void export_and_check(const char *dir, pdbx_attribution attr, pdbx_stat_kind stat)
{
    pdbx_run run;
    tx_build_run(&run, main_pts, N_MAIN, NULL, 0);
    tx_end_run(&run);
    char out[512], err[512] = "";
    snprintf(out, sizeof out, "%s/npz/%s-%s", dir, attr == PDBX_ATTR_FASOP ? "fasop" : "pure",
             pdbx_stat_name(stat));
    pdbx_npz_options opt = { NULL, NULL, attr, stat, PDBX_PASS_SEL_FWD };
    tx_wrote_log log = { 0 };
    int rc = pdbx_export_npz(&run, out, &opt, tx_wrote, &log, err, sizeof err);
    if (rc != 0)
        fail_msg("pdbx_export_npz: %s", err);
    assert_int_equal(log.n, 2);
    char p1[600], p2[600];
    snprintf(p1, sizeof p1, "%s/llamatest_A40_1.npz", out);
    snprintf(p2, sizeof p2, "%s/llamatest_A40_2.npz", out);
    assert_string_equal(log.paths[0], p1);
    assert_string_equal(log.paths[1], p2);

    const char *attr_name = attr == PDBX_ATTR_FASOP ? "fasop" : "pure";
    const char *tp1_missing[] = { "tp_allreduce_attn", "tp_allreduce_mlp", NULL };
    const char *none[] = { NULL };
    struct { const char *path; int tp, pp, dp; int first_point; const char *const *nm; } files[2] = {
        { p1, 1, 2, 1, 0, attr == PDBX_ATTR_FASOP ? tp1_missing : none },
        { p2, 2, 2, 1, 7, none },
    };
    for (int f = 0; f < 2; f++) {
        double want[3 * 10], got[3 * 10];
        for (int r = 0; r < 3; r++)
            expected_row(main_pts, files[f].first_point + r, attr, stat, want + 10 * r);
        int rows = pdbx_fasop_rows(&run, files[f].tp, files[f].pp, files[f].dp, attr, stat,
                                   got, 3, err, sizeof err);
        if (rows != 3)
            fail_msg("pdbx_fasop_rows TP %d: %d rows (%s)", files[f].tp, rows, err);
        for (int i = 0; i < 30; i++)
            assert_double_equal(got[i], want[i], 1e-12 * fabs(want[i]));
        check_npz_bytes(files[f].path, 3, got);
        numpy_check(dir, files[f].path, want, 3, attr_name, pdbx_stat_name(stat), files[f].tp,
                    files[f].pp, files[f].dp, files[f].nm);
    }
    pdbx_run_free(&run);
}

static void test_npz_fasop_mean_numpy(void **state)
{
    export_and_check(*state, PDBX_ATTR_FASOP, PDBX_STAT_MEAN);
}

static void test_npz_pure_median_numpy(void **state)
{
    export_and_check(*state, PDBX_ATTR_PURE, PDBX_STAT_MEDIAN);
}

static void test_fasop_rows_sum_to_layer_time(void **state)
{
    (void)state;
    pdbx_run run;
    tx_build_run(&run, main_pts, N_MAIN, NULL, 0);
    double fasop[3 * 10], pure[3 * 10];
    char err[512];
    assert_int_equal(pdbx_fasop_rows(&run, 2, 2, 1, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, fasop, 3,
                                     err, sizeof err), 3);
    assert_int_equal(pdbx_fasop_rows(&run, 2, 2, 1, PDBX_ATTR_PURE, PDBX_STAT_MEAN, pure, 3,
                                     err, sizeof err), 3);
    for (int r = 0; r < 3; r++) {
        const pdbx_point *pt = &run.points[7 + r];
        assert_int_equal(pt->mbs, 1 << r);
        double layer = 0.0, pure_layer = 0.0, fasop_layer = 0.0;
        for (int op = 0; op < PDBX_OP_COUNT; op++)
            if (pdbx_op_is_per_layer((pdbx_op)op))
                layer += pt->op[op].stats.mean;
        for (int c = 1; c <= 8; c++) {
            fasop_layer += fasop[10 * r + c];
            pure_layer += pure[10 * r + c];
        }
        assert_double_equal(fasop_layer, layer, 1e-12 * layer);
        assert_true(pure_layer < fasop_layer);       /* norms, core and all-reduces left out */
        assert_double_equal(fasop[10 * r + 0], pt->op[PDBX_OP_EMBED].stats.mean, 0);
        assert_double_equal(fasop[10 * r + 9], pt->op[PDBX_OP_FINAL_NORM].stats.mean
                            + pt->op[PDBX_OP_LM_HEAD].stats.mean, 1e-15);
        for (int c = 0; c < 10; c++)
            assert_double_equal(pure[10 * r + c], pt->op[pure_cols[c]].stats.mean, 0);
    }
    /* out == NULL counts; a small cap truncates */
    assert_int_equal(pdbx_fasop_rows(&run, 2, 2, 1, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, NULL, 0,
                                     err, sizeof err), 3);
    double two[2 * 10];
    assert_int_equal(pdbx_fasop_rows(&run, 2, 2, 1, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, two, 2,
                                     err, sizeof err), 2);
    assert_memory_equal(two, fasop, sizeof two);
    assert_int_equal(pdbx_fasop_rows(&run, 8, 1, 1, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, NULL, 0,
                                     err, sizeof err), -1);
    assert_non_null(strstr(err, "no points with TP 8 PP 1 DP 1"));
    /* the exported TP 2 config is the one with more rows */
    assert_int_equal(pdbx_fasop_rows(&run, 2, 1, 2, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, NULL, 0,
                                     err, sizeof err), 1);
    pdbx_run_free(&run);
}

static void test_rows_stop_at_gap_and_failures(void **state)
{
    (void)state;
    const tx_point pts[] = {
        { 1, 1, 1, 1, "ok", 0 }, { 1, 1, 1, 2, "ok", 0 }, { 1, 1, 1, 8, "ok", 0 },  /* no MBS 4 */
        { 2, 1, 1, 1, "ok", 0 }, { 2, 1, 1, 2, "ok", 0 }, { 2, 1, 1, 4, "error", 0 },
        { 2, 1, 1, 8, "ok", 0 },
        { 4, 1, 1, 1, "ok", 0 }, { 4, 1, 1, 2, "predicted_oom", 0 }, { 4, 1, 1, 4, "skipped", 0 },
    };
    pdbx_run run;
    tx_build_run(&run, pts, 10, NULL, 0);
    char err[512];
    double v[8 * 10];
    assert_int_equal(pdbx_fasop_rows(&run, 1, 1, 1, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, v, 8, err, sizeof err), 2);
    assert_int_equal(pdbx_fasop_rows(&run, 2, 1, 1, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, v, 8, err, sizeof err), 2);
    assert_int_equal(pdbx_fasop_rows(&run, 4, 1, 1, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, v, 8, err, sizeof err), 1);
    double want[10];
    expected_row(pts, 7, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, want);
    for (int c = 0; c < 10; c++)
        assert_double_equal(v[c], want[c], 1e-12 * want[c]);
    pdbx_run_free(&run);
}

static void test_mbs1_not_ok_is_an_error(void **state)
{
    const char *dir = *state;
    const tx_point pts[] = {
        { 1, 1, 1, 1, "oom", 0 }, { 1, 1, 1, 2, "ok", 0 },
        { 2, 1, 1, 1, "ok", 0 }, { 2, 1, 1, 2, "ok", 0 },
        { 4, 1, 1, 2, "ok", 0 }, { 4, 1, 1, 4, "ok", 0 },      /* the sweep began at MBS 2 */
    };
    pdbx_run run;
    tx_build_run(&run, pts, 6, NULL, 0);
    char err[512] = "";
    double v[10 * 10];
    assert_int_equal(pdbx_fasop_rows(&run, 1, 1, 1, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, v, 10, err, sizeof err), -1);
    assert_non_null(strstr(err, "no ok point at MBS 1 for TP 1"));
    assert_non_null(strstr(err, "oom"));
    assert_null(strchr(err, '\n'));
    assert_int_equal(pdbx_fasop_rows(&run, 4, 1, 1, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, v, 10, err, sizeof err), -1);
    assert_non_null(strstr(err, "no ok point at MBS 1 for TP 4"));
    assert_non_null(strstr(err, "no MBS 1 point"));

    /* The export writes every TP that can be written and fails naming the first that cannot. */
    char out[512], path[600];
    snprintf(out, sizeof out, "%s/npz-bad", dir);
    pdbx_npz_options opt = { "llama1b", "H100", PDBX_ATTR_FASOP, PDBX_STAT_MEAN, PDBX_PASS_SEL_FWD };
    tx_wrote_log log = { 0 };
    assert_int_equal(pdbx_export_npz(&run, out, &opt, tx_wrote, &log, err, sizeof err), -1);
    assert_non_null(strstr(err, "no ok point at MBS 1 for TP 1"));
    assert_int_equal(log.n, 1);
    snprintf(path, sizeof path, "%s/llama1b_H100_2.npz", out);
    assert_string_equal(log.paths[0], path);
    assert_true(tx_exists(path));
    snprintf(path, sizeof path, "%s/llama1b_H100_1.npz", out);
    assert_false(tx_exists(path));
    snprintf(path, sizeof path, "%s/llama1b_H100_4.npz", out);
    assert_false(tx_exists(path));
    pdbx_run_free(&run);
}

static void test_missing_cells(void **state)
{
    const char *dir = *state;
    pdbx_opmask all2 = PDBX_OPS_ALL;
    pdbx_opmask no_k = all2 & ~PDBX_OP_BIT(PDBX_OP_ATTN_K);
    pdbx_opmask no_post_norm = all2 & ~PDBX_OP_BIT(PDBX_OP_POST_ATTN_NORM);
    pdbx_opmask no_input_norm = all2 & ~PDBX_OP_BIT(PDBX_OP_INPUT_NORM);
    const tx_point pts[] = {
        { 2, 1, 1, 1, "ok", all2 }, { 2, 1, 1, 2, "ok", no_k },            /* GEMM missing */
        { 2, 2, 1, 1, "ok", all2 }, { 2, 2, 1, 2, "ok", no_post_norm },    /* folded op, mixed */
        { 2, 4, 1, 1, "ok", no_input_norm }, { 2, 4, 1, 2, "ok", no_input_norm },   /* never */
    };
    pdbx_run run;
    tx_build_run(&run, pts, 6, NULL, 0);
    char err[512] = "";
    double v[4 * 10];
    assert_int_equal(pdbx_fasop_rows(&run, 2, 1, 1, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, v, 4, err, sizeof err), -1);
    assert_non_null(strstr(err, "attn_k"));
    assert_non_null(strstr(err, "MBS 2"));
    assert_int_equal(pdbx_fasop_rows(&run, 2, 1, 1, PDBX_ATTR_PURE, PDBX_STAT_MEAN, v, 4, err, sizeof err), -1);
    assert_non_null(strstr(err, "attn_k"));
    assert_int_equal(pdbx_fasop_rows(&run, 2, 2, 1, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, v, 4, err, sizeof err), -1);
    assert_non_null(strstr(err, "post_attn_norm"));
    assert_non_null(strstr(err, "MBS 2"));
    /* pure attribution does not need the norm */
    assert_int_equal(pdbx_fasop_rows(&run, 2, 2, 1, PDBX_ATTR_PURE, PDBX_STAT_MEAN, v, 4, err, sizeof err), 2);
    /* never measured: adds 0 and is named in meta.json */
    assert_int_equal(pdbx_fasop_rows(&run, 2, 4, 1, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, v, 4, err, sizeof err), 2);
    double want[2 * 10];
    expected_row(pts, 4, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, want);
    expected_row(pts, 5, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, want + 10);
    for (int i = 0; i < 20; i++)
        assert_double_equal(v[i], want[i], 1e-12 * want[i]);

    /* The export takes the only TP 2 config that works: PP 4, with input_norm not measured. */
    char out[512], path[600];
    snprintf(out, sizeof out, "%s/npz-missing", dir);
    tx_wrote_log log = { 0 };
    if (pdbx_export_npz(&run, out, NULL, tx_wrote, &log, err, sizeof err) != 0)
        fail_msg("pdbx_export_npz: %s", err);
    assert_int_equal(log.n, 1);
    snprintf(path, sizeof path, "%s/llamatest_A40_2.npz", out);
    const char *nm[] = { "input_norm", NULL };
    numpy_check(dir, path, want, 2, "fasop", "mean", 2, 4, 1, nm);
    pdbx_run_free(&run);
}

static void test_bad_options(void **state)
{
    const char *dir = *state;
    pdbx_run run;
    tx_build_run(&run, main_pts, N_MAIN, NULL, 0);
    char err[512] = "", out[512];
    snprintf(out, sizeof out, "%s/npz-opts", dir);
    pdbx_npz_options opt = { "llama/70b", NULL, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, PDBX_PASS_SEL_FWD };
    assert_int_equal(pdbx_export_npz(&run, out, &opt, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "model tag"));
    assert_non_null(strstr(err, "llama/70b"));
    opt.model_tag = NULL;
    opt.gpu_tag = "";
    assert_int_equal(pdbx_export_npz(&run, out, &opt, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "gpu tag"));
    opt.gpu_tag = NULL;
    opt.stat = (pdbx_stat_kind)17;
    assert_int_equal(pdbx_export_npz(&run, out, &opt, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "stat"));
    char path[600];
    snprintf(path, sizeof path, "%s/llamatest_A40_1.npz", out);
    assert_false(tx_exists(path));
    /* a file where the directory should be */
    snprintf(out, sizeof out, "%s/plainfile", dir);
    FILE *f = fopen(out, "w");
    assert_non_null(f);
    fclose(f);
    opt.stat = PDBX_STAT_MEAN;
    assert_int_equal(pdbx_export_npz(&run, out, &opt, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, out));
    pdbx_run_free(&run);
}

/* The run as the store loads it from its run file exports the values the events carried. */
static void test_npz_from_store_round_trip(void **state)
{
    const char *dir = *state;
    char store_dir[512], err[512] = "";
    snprintf(store_dir, sizeof store_dir, "%s/store", dir);
    pdbx_store *st = NULL;
    if (pdbx_store_open(store_dir, 1, &st, err, sizeof err) != 0)
        fail_msg("pdbx_store_open: %s", err);
    pdbx_run_writer *w = NULL;
    if (pdbx_run_writer_create(st, "2026-11-22__00-00-00_deadbeef", &w, err, sizeof err) != 0)
        fail_msg("pdbx_run_writer_create: %s", err);
    pdbx_run direct, loaded;
    tx_sink = w;
    tx_build_run(&direct, main_pts, N_MAIN, NULL, 1);
    tx_end_run(&direct);
    tx_sink = NULL;
    assert_int_equal(pdbx_run_writer_close(w, err, sizeof err), 0);
    if (pdbx_run_load(st, "2026-11-22__00-00", &loaded, err, sizeof err) != 0)
        fail_msg("pdbx_run_load: %s", err);
    assert_int_equal(loaded.status, PDBX_RUN_COMPLETE);

    /* cJSON prints a double with 15 digits when that reads back within an ulp, so the file
     * holds the values to ~1e-16 relative, not bit for bit: compare with a tolerance. */
    char out[512], path[600];
    snprintf(out, sizeof out, "%s/loaded", dir);
    tx_wrote_log log = { 0 };
    if (pdbx_export_npz(&loaded, out, NULL, tx_wrote, &log, err, sizeof err) != 0)
        fail_msg("pdbx_export_npz: %s", err);
    assert_int_equal(log.n, 2);
    const int first_point[3] = { 0, 0, 7 };
    const int pp[3] = { 0, 2, 2 };
    const char *tp1_missing[] = { "tp_allreduce_attn", "tp_allreduce_mlp", NULL };
    const char *none[] = { NULL };
    for (int tp = 1; tp <= 2; tp++) {
        double from_file[3 * 10], from_events[3 * 10], want[3 * 10];
        assert_int_equal(pdbx_fasop_rows(&loaded, tp, pp[tp], 1, PDBX_ATTR_FASOP, PDBX_STAT_MEAN,
                                         from_file, 3, err, sizeof err), 3);
        assert_int_equal(pdbx_fasop_rows(&direct, tp, pp[tp], 1, PDBX_ATTR_FASOP, PDBX_STAT_MEAN,
                                         from_events, 3, err, sizeof err), 3);
        for (int r = 0; r < 3; r++)
            expected_row(main_pts, first_point[tp] + r, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, want + 10 * r);
        for (int i = 0; i < 30; i++)
            assert_double_equal(from_file[i], from_events[i], 1e-14 * from_events[i]);
        snprintf(path, sizeof path, "%s/llamatest_A40_%d.npz", out, tp);
        check_npz_bytes(path, 3, from_file);
        numpy_check(dir, path, want, 3, "fasop", "mean", tp, pp[tp], 1, tp == 1 ? tp1_missing : none);
    }
    pdbx_run_free(&direct);
    pdbx_run_free(&loaded);
    pdbx_store_close(st);
}

static void test_zip_and_npy_primitives(void **state)
{
    (void)state;
    /* the CRC-32 check value of the ZIP/zlib polynomial */
    assert_int_equal(pdbx_crc32(0, "123456789", 9), 0xCBF43926u);
    assert_int_equal(pdbx_crc32(pdbx_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
    unsigned char *npy = NULL;
    size_t len = 0;
    char err[256];
    /* a header that would end exactly on 64 still gets its '\n' and a multiple of 64 */
    for (size_t rows = 0; rows < 2000; rows += 97) {
        double *v = calloc(rows * 10 + 1, sizeof *v);
        assert_non_null(v);
        assert_int_equal(pdbx_npy_f64(v, rows, 10, &npy, &len, err, sizeof err), 0);
        size_t start = 10 + (size_t)rd16(npy + 8);
        assert_int_equal(start % 64, 0);
        assert_int_equal(npy[start - 1], '\n');
        assert_int_equal(len, start + rows * 80);
        free(npy);
        free(v);
    }
    pdbx_zip_member none[1] = { { "", "", 0 } };
    unsigned char *zip = NULL;
    assert_int_equal(pdbx_zip_stored(none, 1, &zip, &len, err, sizeof err), -1);
    assert_null(zip);
    assert_int_equal(pdbx_zip_stored(NULL, 0, &zip, &len, err, sizeof err), 0);
    assert_int_equal(len, 22);                        /* an empty archive: just the EOCD */
    free(zip);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_npz_fasop_mean_numpy, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_npz_pure_median_numpy, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test(test_fasop_rows_sum_to_layer_time),
        cmocka_unit_test(test_rows_stop_at_gap_and_failures),
        cmocka_unit_test_setup_teardown(test_mbs1_not_ok_is_an_error, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_missing_cells, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_bad_options, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_npz_from_store_round_trip, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test(test_zip_and_npy_primitives),
    };
    return cmocka_run_group_tests_name("export_npz", tests, NULL, NULL);
}
