/* test_cli_common.c: option parsing, value checks and table columns shared by the `pdbx`
 * subcommands (tui/cli/cli_common.c). stderr messages are checked by tests/e2e/cli_usage.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/util/fmt.h"
#include "tui/cli/cli.h"

typedef struct {
    int tp, json, calls;
    const char *store;
} seen_opts;

static const pdbx_cli_opt opts[] = {
    { "store", "DIR", "the store" },
    { "tp", "N", "TP degree" },
    { "json", NULL, "JSON" },
    { NULL, NULL, NULL },
};

static const pdbx_cli_spec spec = {
    .name = "t", .args = "RUN [RUN]", .opts = opts, .min_args = 1, .max_args = 2, .about = "test",
};

static int on_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err, size_t errlen)
{
    seen_opts *s = ctx;
    s->calls++;
    if (strcmp(opt->name, "tp") == 0)
        return pdbx_cli_int(opt->name, value, 1, 64, &s->tp, err, errlen);
    if (strcmp(opt->name, "json") == 0)
        s->json = 1;
    if (strcmp(opt->name, "store") == 0)
        s->store = value;
    return 0;
}

/* Runs pdbx_cli_parse on a NULL-terminated list of words (copied: getopt permutes argv). */
static int parse(seen_opts *s, char ***pos, int *npos, char **words)
{
    static char buf[16][64];
    static char *argv[17];
    int argc = 0;
    for (; words[argc]; argc++) {
        snprintf(buf[argc], sizeof buf[argc], "%s", words[argc]);
        argv[argc] = buf[argc];
    }
    argv[argc] = NULL;
    memset(s, 0, sizeof *s);
    return pdbx_cli_parse(&spec, argc, argv, on_opt, s, pos, npos);
}

static void test_parse_ok(void **state)
{
    (void)state;
    seen_opts s;
    char **pos;
    int npos;
    /* Options before and after positionals, --opt=value and --opt value. */
    assert_int_equal(parse(&s, &pos, &npos, (char *[]){ "t", "abc", "--tp", "4", "--store=/x", "def", "--json", NULL }), 0);
    assert_int_equal(npos, 2);
    assert_string_equal(pos[0], "abc");
    assert_string_equal(pos[1], "def");
    assert_int_equal(s.tp, 4);
    assert_int_equal(s.json, 1);
    assert_string_equal(s.store, "/x");
    /* A second parse in the same process starts afresh; "--" ends the options. */
    assert_int_equal(parse(&s, &pos, &npos, (char *[]){ "t", "--", "--tp", NULL }), 0);
    assert_int_equal(npos, 1);
    assert_string_equal(pos[0], "--tp");
    assert_int_equal(s.calls, 0);
}

static void test_parse_errors(void **state)
{
    (void)state;
    seen_opts s;
    char **pos;
    int npos;
    assert_int_equal(parse(&s, &pos, &npos, (char *[]){ "t", NULL }), PDBX_EXIT_USAGE);           /* missing RUN */
    assert_int_equal(parse(&s, &pos, &npos, (char *[]){ "t", "a", "b", "c", NULL }), PDBX_EXIT_USAGE);
    assert_int_equal(parse(&s, &pos, &npos, (char *[]){ "t", "a", "--nope", NULL }), PDBX_EXIT_USAGE);
    assert_int_equal(parse(&s, &pos, &npos, (char *[]){ "t", "a", "-q", NULL }), PDBX_EXIT_USAGE);
    assert_int_equal(parse(&s, &pos, &npos, (char *[]){ "t", "a", "--tp", NULL }), PDBX_EXIT_USAGE);  /* no value */
    assert_int_equal(parse(&s, &pos, &npos, (char *[]){ "t", "a", "--json=1", NULL }), PDBX_EXIT_USAGE);
    assert_int_equal(parse(&s, &pos, &npos, (char *[]){ "t", "a", "--tp", "65", NULL }), PDBX_EXIT_USAGE);
    assert_int_equal(parse(&s, &pos, &npos, (char *[]){ "t", "a", "--tp", "4x", NULL }), PDBX_EXIT_USAGE);
    assert_int_equal(pdbx_cli_parse_exit(PDBX_EXIT_USAGE), PDBX_EXIT_USAGE);
}

static void test_parse_help(void **state)
{
    (void)state;
    seen_opts s;
    char **pos;
    int npos;
    /* --help wins even where arguments are missing, and exits 0. */
    assert_int_equal(parse(&s, &pos, &npos, (char *[]){ "t", "--help", NULL }), PDBX_CLI_HELP_SHOWN);
    assert_int_equal(parse(&s, &pos, &npos, (char *[]){ "t", "x", "-h", NULL }), PDBX_CLI_HELP_SHOWN);
    assert_int_equal(pdbx_cli_parse_exit(PDBX_CLI_HELP_SHOWN), PDBX_EXIT_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    pdbx_cli_print_help(&spec, f);
    fclose(f);
    assert_non_null(strstr(buf, "usage: pdbx t RUN [RUN] [options]\n"));
    assert_non_null(strstr(buf, "  --store DIR  the store\n"));
    assert_non_null(strstr(buf, "  --json       JSON\n"));
    assert_non_null(strstr(buf, "  -h, --help   print this help and exit\n"));
    free(buf);
}

static void test_values(void **state)
{
    (void)state;
    char err[256];
    int v = -1;
    assert_int_equal(pdbx_cli_int("tp", "8", 1, 64, &v, err, sizeof err), 0);
    assert_int_equal(v, 8);
    assert_int_equal(pdbx_cli_int("tp", "0", 1, 64, &v, err, sizeof err), -1);
    assert_string_equal(err, "--tp: 0 is out of range (allowed: 1..64)");
    assert_int_equal(pdbx_cli_int("tp", "", 1, 64, &v, err, sizeof err), -1);
    assert_string_equal(err, "--tp: '' is not an integer");
    assert_int_equal(pdbx_cli_int("tp", "99999999999999999999999", 1, 64, &v, err, sizeof err), -1);
    assert_string_equal(err, "--tp: '99999999999999999999999' is not an integer");
    assert_int_equal(v, 8);                       /* untouched on error */
    int k = -1;
    assert_int_equal(pdbx_cli_stat("stat", "median", &k, err, sizeof err), 0);
    assert_int_equal(k, PDBX_STAT_MEDIAN);
    assert_int_equal(pdbx_cli_stat("stat", "avg", &k, err, sizeof err), -1);
    assert_string_equal(err, "--stat: 'avg' is not one of mean, median, min, max, std");
    assert_int_equal(pdbx_cli_choice("attribution", "fasop", pdbx_cli_attributions, &k, err, sizeof err), 0);
    assert_int_equal(k, PDBX_CLI_ATTR_FASOP);
    /* A short buffer truncates, still terminated. */
    char small[12];
    assert_int_equal(pdbx_cli_stat("stat", "avg", &k, small, sizeof small), -1);
    assert_int_equal(strlen(small), sizeof small - 1);
}

static void set_cell(pdbx_point *p, pdbx_op op, double mean)
{
    p->op[op].valid = 1;
    p->op[op].stats = (pdbx_stats){ .count = 3, .min = mean * 0.9, .max = mean * 1.1,
                                    .mean = mean, .median = mean, .std = mean * 0.1 };
}

/* A one-point run: the run table reads its points through pdbx_run_config_points. */
static void one_point_run(pdbx_run *run, pdbx_point *p)
{
    memset(run, 0, sizeof *run);
    p->tp = p->pp = p->dp = p->mbs = 1;
    p->status = PDBX_POINT_OK;
    run->npoints = 1;
    run->points = p;
}

static void test_columns_and_rows(void **state)
{
    (void)state;
    pdbx_rt_col cols[PDBX_RT_MAX_COLS];
    size_t n = pdbx_rt_columns(PDBX_ATTR_PURE, cols);
    assert_int_equal(n, PDBX_OP_COUNT);
    assert_string_equal(cols[PDBX_OP_ATTN_Q].name, "attn_q");
    assert_false(cols[PDBX_OP_EMBED].per_layer);
    assert_true(cols[PDBX_OP_INPUT_NORM].per_layer);
    size_t nf = pdbx_rt_columns(pdbx_cli_attr(PDBX_CLI_ATTR_FASOP), cols);
    assert_int_equal(nf, PDBX_FASOP_COLS);
    assert_string_equal(cols[1].name, "attn_q");
    assert_true(cols[1].ops & PDBX_OP_BIT(PDBX_OP_INPUT_NORM));   /* FASOP folds the norm in */
    assert_false(cols[9].per_layer);                              /* lm_head */

    /* A point at TP 1: no all-reduces measured. Every layer op 1 ms, embed 0.5, lm_head 2. */
    static pdbx_point p;
    memset(&p, 0, sizeof p);
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        if (!pdbx_op_is_comm((pdbx_op)op) && (PDBX_OPS_LLAMA & PDBX_OP_BIT(op)))   /* a Llama's */
            set_cell(&p, (pdbx_op)op, 1.0);
    set_cell(&p, PDBX_OP_EMBED, 0.5);
    set_cell(&p, PDBX_OP_LM_HEAD, 2.0);
    pdbx_run run;
    one_point_run(&run, &p);
    pdbx_rt_config c;
    assert_int_equal(pdbx_rt_config_build(&run, 1, 1, 1, 1, &c), 0);
    assert_int_equal(c.npoints, 1);
    pdbx_cli_row r;
    n = pdbx_rt_columns(PDBX_ATTR_PURE, cols);
    pdbx_cli_row_fill(&c.points[0], cols, n, PDBX_STAT_MEAN, &r);
    assert_false(r.valid[PDBX_OP_TP_ALLREDUCE_ATTN]);
    /* No measured layer/total cells: N/A, never the sum of the ops. */
    assert_false(r.layer_valid || r.total_valid);
    pdbx_rt_config_free(&c);
    p.layer.valid = p.total.valid = 1;
    p.layer.stats = (pdbx_stats){ .count = 8, .min = 9, .max = 13, .mean = 11.5, .median = 11, .std = 0.7 };
    p.total.stats = (pdbx_stats){ .count = 2, .min = 14, .max = 16, .mean = 15, .median = 15, .std = 1 };
    assert_int_equal(pdbx_rt_config_build(&run, 1, 1, 1, 1, &c), 0);
    pdbx_cli_row_fill(&c.points[0], cols, n, PDBX_STAT_STD, &r);
    assert_true(r.layer_valid && r.total_valid);
    assert_true(fabs(r.layer - 0.7) < 1e-12 && fabs(r.total - 1.0) < 1e-12);
    assert_true(r.valid[PDBX_OP_ATTN_Q]);                         /* one op: its std */
    /* FASOP attribution moves ops between columns; a folded column has no std. */
    nf = pdbx_rt_columns(PDBX_ATTR_FASOP, cols);
    pdbx_cli_row rf;
    pdbx_cli_row_fill(&c.points[0], cols, nf, PDBX_STAT_MEAN, &rf);
    assert_true(fabs(rf.v[1] - 3.0) < 1e-12);   /* attn_q + input_norm + mlp_residual */
    assert_true(fabs(rf.v[4] - 3.0) < 1e-12);   /* attn_o + attn_core + attn_rope */
    assert_true(fabs(rf.v[5] - 3.0) < 1e-12);   /* mlp_gate + post_attn_norm + attn_residual */
    assert_true(fabs(rf.v[9] - 3.0) < 1e-12);                     /* lm_head + final_norm */
    assert_true(fabs(rf.layer - 11.5) < 1e-12);
    pdbx_cli_row_fill(&c.points[0], cols, nf, PDBX_STAT_STD, &rf);
    assert_false(rf.valid[1]);
    assert_true(rf.valid[2]);                                     /* attn_k: one op */
    /* The run-view share: per-layer ops over the layer, once-per-step ops over the total. */
    assert_true(fabs(pdbx_rt_share(&c.points[0], PDBX_OP_ATTN_Q, PDBX_STAT_MEAN) - 1.0 / 11.5) < 1e-12);
    assert_true(fabs(pdbx_rt_share(&c.points[0], PDBX_OP_LM_HEAD, PDBX_STAT_MEAN) - 2.0 / 15) < 1e-12);
    pdbx_rt_config_free(&c);
    /* An unmeasured point has no valid cell, no totals. */
    static pdbx_point empty;
    one_point_run(&run, &empty);
    assert_int_equal(pdbx_rt_config_build(&run, 1, 1, 1, 1, &c), 0);
    pdbx_cli_row_fill(&c.points[0], cols, nf, PDBX_STAT_MEAN, &rf);
    for (size_t k = 0; k < nf; k++)
        assert_false(rf.valid[k]);
    assert_false(rf.total_valid);
    assert_true(isnan(pdbx_rt_share(&c.points[0], PDBX_OP_ATTN_Q, PDBX_STAT_MEAN)));
    pdbx_rt_config_free(&c);
    char err[128];
    assert_int_equal(pdbx_rt_check_time_stat(PDBX_STAT_STD, err, sizeof err), -1);
    assert_string_equal(err, "--stat: 'std' is not a time (allowed: mean, median, min, max)");
    assert_int_equal(pdbx_rt_check_time_stat(PDBX_STAT_MEDIAN, err, sizeof err), 0);
}

/* The pass selector on p's cells: fwd and bwd are the stored cells; both adds means,
 * medians, mins and maxes, takes the smaller count and combines std and CI in quadrature; a
 * missing half makes both unmeasured; provenance comes along. */
static void check_cells_by_pass(const pdbx_point *p)
{
    pdbx_cell c;
    assert_int_equal(pdbx_point_cell_pass(p, PDBX_OP_LM_HEAD, PDBX_PASS_SEL_FWD, &c), 1);
    assert_true(c.stats.mean == 1.0 && c.stats.count == 12 && !c.reused);
    assert_int_equal(pdbx_point_cell_pass(p, PDBX_OP_LM_HEAD, PDBX_PASS_SEL_BWD, &c), 1);
    assert_true(c.stats.mean == 2.0 && c.reused && c.source_point == 3);
    assert_int_equal(pdbx_point_cell_pass(p, PDBX_OP_LM_HEAD, PDBX_PASS_SEL_BOTH, &c), 1);
    assert_true(fabs(c.stats.mean - 3.0) < 1e-12 && fabs(c.stats.median - 3.0) < 1e-12);
    assert_true(fabs(c.stats.min - 2.7) < 1e-12 && fabs(c.stats.max - 3.7) < 1e-12);
    assert_int_equal(c.stats.count, 7);
    assert_true(fabs(c.stats.std - 0.05) < 1e-12 && fabs(c.stats.ci95 - 0.05) < 1e-12);   /* 3-4-5 */
    assert_true(c.flops == 30 && c.bytes == 12 && c.rank == NULL);
    assert_true(c.reused && c.source_point == 3);            /* the reused half names its source */
    assert_true(fabs(pdbx_point_bwd_ratio(p, PDBX_OP_LM_HEAD, PDBX_STAT_MEAN) - 2.0) < 1e-12);
    /* attn_v has no bwd cell: bwd and both are unmeasured (NaN, valid 0), no ratio */
    assert_int_equal(pdbx_point_cell_pass(p, PDBX_OP_ATTN_V, PDBX_PASS_SEL_BOTH, &c), 0);
    assert_true(!c.valid && isnan(c.stats.mean) && c.stats.count == 0);
    assert_int_equal(pdbx_point_cell_pass(p, PDBX_OP_ATTN_V, PDBX_PASS_SEL_BWD, &c), 0);
    assert_true(isnan(pdbx_point_bwd_ratio(p, PDBX_OP_ATTN_V, PDBX_STAT_MEAN)));
    assert_int_equal(pdbx_point_cell_pass(p, (pdbx_op)PDBX_OP_COUNT, PDBX_PASS_SEL_FWD, &c), 0);
    assert_int_equal(pdbx_point_cell_pass(p, PDBX_OP_ATTN_V, (pdbx_pass_sel)7, &c), 0);
}

/* The run table of each pass over a one-point run; layer and total are forward only. */
static void check_runtable_by_pass(const pdbx_run *run)
{
    pdbx_rt_config cf;
    assert_int_equal(pdbx_rt_config_build_pass(run, 1, 1, 1, 1, PDBX_PASS_SEL_BOTH, &cf), 0);
    assert_true(cf.pass == PDBX_PASS_SEL_BOTH && cf.points[0].op[PDBX_OP_LM_HEAD].valid);
    assert_true(fabs(cf.points[0].op[PDBX_OP_LM_HEAD].stats.mean - 3.0) < 1e-12);
    assert_false(cf.points[0].op[PDBX_OP_ATTN_V].valid || cf.points[0].layer.valid);
    pdbx_rt_config_free(&cf);
    assert_int_equal(pdbx_rt_config_build_pass(run, 1, 1, 1, 1, PDBX_PASS_SEL_FWD, &cf), 0);
    const pdbx_rt_cell *v = &cf.points[0].op[PDBX_OP_ATTN_V];
    char src[96];
    assert_string_equal(pdbx_rt_cell_source(v, src, sizeof src), "shared with attn_k");
    assert_string_equal(pdbx_rt_cell_source(&cf.points[0].op[PDBX_OP_LM_HEAD], src, sizeof src), "");
    assert_true(pdbx_rt_cell_noisy(v));                        /* CV 0.2 > 0.05 */
    assert_false(pdbx_rt_cell_noisy(&cf.points[0].op[PDBX_OP_LM_HEAD]));   /* CV 0.03 */
    assert_false(pdbx_rt_cell_noisy(&cf.points[0].op[PDBX_OP_EMBED]));    /* not measured */
    assert_true(cf.points[0].layer.valid);
    pdbx_rt_config_free(&cf);
    assert_int_equal(pdbx_rt_config_build_pass(run, 1, 1, 1, 1, PDBX_PASS_SEL_BWD, &cf), 0);
    assert_string_equal(pdbx_rt_cell_source(&cf.points[0].op[PDBX_OP_LM_HEAD], src, sizeof src),
                        "measured at point 3");
    pdbx_rt_config_free(&cf);
}

/* A run has bwd when a point holds a bwd cell or its spec lists "bwd"; --pass is checked
 * against it and named as pdbx_pass_sel_name spells it. */
static void check_run_has_bwd(pdbx_run *run, pdbx_point *p)
{
    char err[256];
    snprintf(run->id, sizeof run->id, "R1");
    assert_true(pdbx_run_has_bwd(run));
    assert_int_equal(pdbx_pass_sel_check(run, PDBX_PASS_SEL_BOTH, "--pass", err, sizeof err), 0);
    p->bwd[PDBX_OP_LM_HEAD].valid = 0;
    assert_false(pdbx_run_has_bwd(run));
    assert_int_equal(pdbx_pass_sel_check(run, PDBX_PASS_SEL_FWD, "--pass", err, sizeof err), 0);
    assert_int_equal(pdbx_pass_sel_check(run, PDBX_PASS_SEL_BWD, "--pass", err, sizeof err), -1);
    assert_string_equal(err, "--pass: 'bwd' needs backward cells, run R1 measured forward only "
                             "(allowed: fwd; measure with passes fwd,bwd)");
    run->spec = cJSON_Parse("{\"passes\": [\"fwd\", \"bwd\"]}");
    assert_true(pdbx_run_has_bwd(run));
    cJSON_Delete(run->spec);
    run->spec = cJSON_Parse("{\"passes\": \"fwd\"}");
    assert_false(pdbx_run_has_bwd(run));
    cJSON_Delete(run->spec);
    run->spec = NULL;
    assert_string_equal(pdbx_pass_sel_name(PDBX_PASS_SEL_BOTH), "both");
    assert_int_equal(pdbx_pass_sel_from_name("bwd"), PDBX_PASS_SEL_BWD);
    assert_int_equal(pdbx_pass_sel_from_name("fwd+bwd"), -1);
    int sel = -1;
    assert_int_equal(pdbx_cli_pass("pass", "both", &sel, err, sizeof err), 0);
    assert_int_equal(sel, PDBX_PASS_SEL_BOTH);
    assert_int_equal(pdbx_cli_pass("pass", "all", &sel, err, sizeof err), -1);
    assert_string_equal(err, "--pass: 'all' is not one of fwd, bwd, both");
}

/* The pass selector (store/profiledb_query.c): cells, the run table and the run of each pass. */
static void test_pass_selector(void **state)
{
    (void)state;
    static pdbx_point p;
    memset(&p, 0, sizeof p);
    p.op[PDBX_OP_LM_HEAD] = (pdbx_cell){ .valid = 1, .flops = 10, .bytes = 4,
        .stats = { .count = 12, .min = 0.9, .max = 1.2, .mean = 1.0, .median = 0.98, .std = 0.03, .ci95 = 0.03 } };
    p.bwd[PDBX_OP_LM_HEAD] = (pdbx_cell){ .valid = 1, .flops = 20, .bytes = 8, .reused = 1, .source_point = 3,
        .stats = { .count = 7, .min = 1.8, .max = 2.5, .mean = 2.0, .median = 2.02, .std = 0.04, .ci95 = 0.04 } };
    p.op[PDBX_OP_ATTN_V] = (pdbx_cell){ .valid = 1, .shared = 1, .shared_op = PDBX_OP_ATTN_K,
        .stats = { .count = 5, .min = 1, .max = 1, .mean = 1, .median = 1, .std = 0.2, .ci95 = NAN } };
    check_cells_by_pass(&p);
    p.layer = (pdbx_cell){ .valid = 1, .stats = { .count = 2, .mean = 9, .median = 9, .min = 9, .max = 9, .std = 0 } };
    pdbx_run run;
    one_point_run(&run, &p);
    check_runtable_by_pass(&run);
    check_run_has_bwd(&run, &p);
}

/* CI and CV as show and the run view print them, the load line and the throttle words. */
static void test_ci_cv_and_noise_text(void **state)
{
    (void)state;
    char buf[128];
    assert_string_equal(pdbx_fmt_pct(0.0084, buf, sizeof buf), "0.84%");
    assert_string_equal(pdbx_fmt_pct(0.032, buf, sizeof buf), "3.2%");
    assert_string_equal(pdbx_fmt_pct(0.126, buf, sizeof buf), "13%");
    assert_string_equal(pdbx_fmt_pct(NAN, buf, sizeof buf), "N/A");
    assert_string_equal(pdbx_fmt_pct(-0.1, buf, sizeof buf), "N/A");
    pdbx_stats s = { .count = 10, .mean = 2.0, .std = 0.1, .ci95 = 0.07 };
    assert_string_equal(pdbx_fmt_pct(pdbx_stats_cv(&s), buf, sizeof buf), "5.0%");
    assert_string_equal(pdbx_fmt_pct(pdbx_stats_rel_ci(&s), buf, sizeof buf), "3.5%");
    s.ci95 = NAN;                                   /* a run recorded before ci95 */
    assert_string_equal(pdbx_fmt_pct(pdbx_stats_rel_ci(&s), buf, sizeof buf), "N/A");

    static pdbx_point pts[3];
    memset(pts, 0, sizeof pts);
    pdbx_run run;
    memset(&run, 0, sizeof run);
    run.points = pts;
    run.npoints = 3;
    assert_int_equal(pdbx_run_load_text(&run, buf, sizeof buf), 0);    /* no noise recorded */
    assert_string_equal(buf, "");
    for (int i = 0; i < 3; i++)
        pts[i].noise = (pdbx_point_noise){ .valid = 1, .cores = 4, .other_busy = 0.1, .steal_pct = 0 };
    assert_int_equal(pdbx_run_load_text(&run, buf, sizeof buf), 0);    /* quiet */
    pts[0].noise.busy = pts[2].noise.busy = 1;
    pts[0].noise.other_busy = 1.8;
    pts[2].noise.other_busy = 1.2;
    pts[2].noise.steal_pct = 3.4;
    pts[1].noise.other_busy = 2.5;                  /* not busy by the engine's verdict: not counted */
    assert_int_equal(pdbx_run_load_text(&run, buf, sizeof buf), 1);
    assert_string_equal(buf, "measured under load: 2 of 3 points; other processes used up to 1.8 "
                             "cores, steal up to 3%");
    pdbx_throttle_text(0, buf, sizeof buf);
    assert_string_equal(buf, "none");
    pdbx_throttle_text(0x4 | 0x40, buf, sizeof buf);
    assert_string_equal(buf, "sw_power_cap, hw_thermal");
    pdbx_throttle_text((double)(1u << 12), buf, sizeof buf);
    assert_string_equal(buf, "0x1000");
    pdbx_throttle_text(NAN, buf, sizeof buf);
    assert_string_equal(buf, "N/A");
}

/* Every spec-field option of plan/run says its value syntax, what is allowed and its default,
 * all from the planner's field table; the default shown is the one pdbx_spec_defaults sets
 * (setting it again changes nothing), and the range shown is the one the reader enforces. */
static void test_spec_field_help(void **state)
{
    (void)state;
    setenv("PDBX_CONFIGS", PDBX_SOURCE_DIR "/configs", 1);
    pdbx_cli_spec_opts so;
    static const pdbx_cli_opt extra[] = { { "json", NULL, "JSON" }, { NULL, NULL, NULL } };
    assert_int_equal(pdbx_cli_spec_opts_init(&so, extra), 0);
    assert_int_equal(so.nextra, 1);
    pdbx_spec d;
    pdbx_spec_defaults(&d);
    d.model.source[0] = '\0';
    cJSON *dj = pdbx_spec_to_json(&d);
    char *want = cJSON_PrintUnformatted(dj), err[512];
    cJSON_Delete(dj);
    size_t n = 0;
    for (const pdbx_cli_opt *o = so.opts + so.nextra; o->name; o++, n++) {
        assert_non_null(o->arg);
        assert_string_not_equal(o->arg, "VALUE");
        assert_non_null(strstr(o->help, "; allowed: "));
        char field[64];
        snprintf(field, sizeof field, "%s", o->name);
        for (char *p = field; *p; p++)
            *p = *p == '-' ? '_' : *p;
        char text[512];
        assert_int_equal(pdbx_spec_field_text(&d, field, text, sizeof text), 0);
        if (!text[0])
            continue;           /* derived from another field ("from configs") */
        char dflt[600];
        snprintf(dflt, sizeof dflt, "; default: %s", text);
        assert_non_null(strstr(o->help, dflt));
        pdbx_spec t = d;
        assert_int_equal(pdbx_spec_set(&t, field, text, err, sizeof err), 0);
        t.model.source[0] = '\0';   /* where a model preset was read from is not its value */
        cJSON *j = pdbx_spec_to_json(&t);
        char *got = cJSON_PrintUnformatted(j);
        if (strcmp(got, want) != 0)
            fail_msg("--%s %s changes the default spec:\n%s\n%s", o->name, text, got, want);
        cJSON_free(got);
        cJSON_Delete(j);
    }
    size_t nfields = 0;             /* every field of the planner's table has its option */
    for (const char *const *f = pdbx_spec_field_names(); *f; f++)
        nfields++;
    assert_true(nfields >= 29);
    assert_int_equal(n, nfields);
    const pdbx_cli_opt *seq = NULL;
    for (const pdbx_cli_opt *o = so.opts; o->name; o++)
        if (strcmp(o->name, "seq-len") == 0)
            seq = o;
    assert_non_null(seq);
    assert_string_equal(seq->arg, "N");
    assert_string_equal(seq->help, "sequence length; allowed: 1..131072; default: 128");
    assert_int_equal(pdbx_spec_set(&d, "seq_len", "131072", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&d, "seq_len", "131073", err, sizeof err), -1);
    /* the help fits 80 columns */
    pdbx_cli_spec cs = { .name = "plan", .args = "SPEC|PRESET", .opts = so.opts, .max_args = 1 };
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    pdbx_cli_print_help(&cs, f);
    fclose(f);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
        if (strlen(line) > 79)
            fail_msg("help line longer than 79 columns: %s", line);
    free(buf);
    cJSON_free(want);
    pdbx_cli_spec_opts_free(&so);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_ok),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_parse_help),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_columns_and_rows),
        cmocka_unit_test(test_pass_selector),
        cmocka_unit_test(test_ci_cv_and_noise_text),
        cmocka_unit_test(test_spec_field_help),
    };
    return cmocka_run_group_tests_name("cli_common", tests, NULL, NULL);
}
