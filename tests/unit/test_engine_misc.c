/* test_engine_misc.c: pdbx-engine's pure pieces: command line, fault-injection syntax,
 * statistics rows and their max across ranks, BLAS thread split, progress events under
 * allocation failure. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine_adaptive.h"
#include "engine/engine_args.h"
#include "engine/engine_collsweep.h"
#include "engine/engine_env.h"
#include "engine/engine_events.h"
#include "engine/engine_point_events.h"
#include "engine/engine_stats.h"
#include "engine/engine_watch.h"
#include "store/events.h"
#include "store/progress.h"
#include "store/store.h"

static void test_args(void **state)
{
    (void)state;
    pdbx_engine_args a;
    char err[256];
    char *ok[] = { "pdbx-engine", "--spec", "s.json", "--store", "/tmp/x", "--run-id", "abc", NULL };
    assert_int_equal(pdbx_engine_args_parse(7, ok, &a, err, sizeof err), 0);
    assert_string_equal(a.spec_path, "s.json");
    assert_string_equal(a.store_dir, "/tmp/x");
    assert_string_equal(a.run_id, "abc");
    assert_null(a.backend);
    char *help[] = { "pdbx-engine", "--help", NULL };
    assert_int_equal(pdbx_engine_args_parse(2, help, &a, err, sizeof err), 0);
    assert_true(a.help);
    char *version[] = { "pdbx-engine", "--version", NULL };
    assert_int_equal(pdbx_engine_args_parse(2, version, &a, err, sizeof err), 0);
    assert_true(a.version && !a.help);
    struct { int argc; char *argv[8]; const char *msg; } bad[] = {
        { 3, { "e", "--store", "d" }, "--spec FILE is required" },
        { 3, { "e", "--spec", "s" }, "--store DIR is required" },
        { 2, { "e", "--spec" }, "--spec needs a value" },
        { 6, { "e", "--spec", "s", "--store", "d", "--x" }, "unknown argument '--x'" },
        { 7, { "e", "--spec", "s", "--store", "d", "--backend", "tpu" }, "'tpu' is not a backend" },
        { 7, { "e", "--spec", "s", "--store", "d", "--run-id", "a/b" }, "is not a run id" },
        { 7, { "e", "--spec", "s", "--store", "d", "--run-id", ".hidden" }, "is not a run id" },
        { 7, { "e", "--spec", "s", "--store", "d", "--run-id", "a b" }, "is not a run id" },
        { 7, { "e", "--spec", "s", "--store", "d", "--run-id", ".." }, "is not a run id" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(pdbx_engine_args_parse(bad[i].argc, bad[i].argv, &a, err, sizeof err), -1);
        assert_non_null(strstr(err, bad[i].msg));
    }
}

/* Validate mode's arguments (engine_args.c) and their resolution against the spec and the
 * world size (engine_validate.c): defaults, the layer rounding, one-line refusals. */
static void test_validate_args(void **state)
{
    (void)state;
    pdbx_engine_args a;
    char err[256] = "";
    char *ok[] = { "e", "--spec", "s", "--validate", "1x2x1", "--mbs", "2", "--gbs", "8", "--out", "/tmp/r.json", NULL };
    assert_int_equal(pdbx_engine_args_parse(11, ok, &a, err, sizeof err), 0);
    assert_true(a.validate);
    assert_int_equal(a.v.tp, 1);
    assert_int_equal(a.v.pp, 2);
    assert_int_equal(a.v.dp, 1);
    assert_int_equal(a.v.mbs, 2);
    assert_int_equal(a.v.gbs, 8);
    assert_string_equal(a.v.out_path, "/tmp/r.json");
    assert_null(a.store_dir);                       /* not needed in validate mode */
    pdbx_spec spec;
    pdbx_spec_defaults(&spec);
    spec.layers_profiled = 3;
    pdbx_validate_args v = a.v;
    assert_int_equal(pdbx_validate_resolve(&v, &spec, 2, err, sizeof err), 0);
    assert_int_equal(v.layers, 4);                  /* 3 rounded up to a multiple of pp 2 */
    assert_int_equal(v.iters, PDBX_VALIDATE_ITERS_DEFAULT);
    assert_int_equal(pdbx_validate_num_mb(&v), 4);
    spec.layers_profiled = 1;
    v = a.v;
    assert_int_equal(pdbx_validate_resolve(&v, &spec, 2, err, sizeof err), 0);
    assert_int_equal(v.layers, 2);                  /* at least one layer per stage */
    assert_int_equal(v.ep, 1);                      /* TPxPPxDP: no expert parallelism */
    pdbx_validate_args e4;
    memset(&e4, 0, sizeof e4);
    assert_int_equal(pdbx_validate_parse_config("1x1x2x2", &e4, err, sizeof err), 0);
    assert_true(e4.tp == 1 && e4.pp == 1 && e4.dp == 2 && e4.ep == 2);
    struct { pdbx_validate_args v; int world; const char *msg; } bad[] = {
        { { 1, 2, 1, 2, 8, 0, 0, "o", 0 }, 4, "--config: 1x2x1 needs 2 ranks, launched with 4" },
        { { 1, 1, 2, 2, 6, 0, 0, "o", 0 }, 2, "--gbs: 6 is not a multiple of mbs x dp = 4" },
        { { 1, 2, 1, 1, 4, 3, 0, "o", 0 }, 2, "--layers: 3 is not a multiple of pp = 2" },
        { { 1, 1, 1, 1, 4, 0, 5000, "o", 0 }, 1, "--iters: 5000" },
        /* EP on the default (dense) model: no experts to split */
        { { 1, 1, 2, 1, 4, 0, 0, "o", 2 }, 2, "--config: ep 2 needs a mixture-of-experts model" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(pdbx_validate_resolve(&bad[i].v, &spec, bad[i].world, err, sizeof err), -1);
        if (!strstr(err, bad[i].msg))
            fail_msg("case %zu: '%s' lacks '%s'", i, err, bad[i].msg);
    }
    struct { int argc; char *argv[14]; const char *msg; } badargs[] = {
        { 9, { "e", "--spec", "s", "--validate", "2x2", "--mbs", "1", "--gbs", "4" }, "--config: '2x2' is not TPxPPxDP" },
        { 9, { "e", "--spec", "s", "--validate", "1x1x2x", "--mbs", "1", "--gbs", "4" }, "is not TPxPPxDP or TPxPPxDPxEP" },
        { 9, { "e", "--spec", "s", "--validate", "1x1x2x2x2", "--mbs", "1", "--gbs", "4" }, "is not TPxPPxDP or TPxPPxDPxEP" },
        { 7, { "e", "--spec", "s", "--validate", "1x1x2", "--mbs", "1" }, "--validate needs --mbs M, --gbs B and --out FILE" },
        { 7, { "e", "--spec", "s", "--mbs", "1", "--gbs", "4" }, "--validate TPxPPxDP is required" },
        { 11, { "e", "--spec", "s", "--validate", "1x1x2", "--mbs", "0", "--gbs", "4", "--out", "o" }, "--mbs: '0'" },
        { 13, { "e", "--spec", "s", "--validate", "1x1x2", "--mbs", "1", "--gbs", "4", "--out", "o", "--run-id", "x" }, "--run-id" },
    };
    for (size_t i = 0; i < sizeof badargs / sizeof badargs[0]; i++) {
        err[0] = '\0';
        assert_int_equal(pdbx_engine_args_parse(badargs[i].argc, badargs[i].argv, &a, err, sizeof err), -1);
        if (!strstr(err, badargs[i].msg))
            fail_msg("args case %zu: '%s' lacks '%s'", i, err, badargs[i].msg);
    }
}

static void test_fault_syntax(void **state)
{
    (void)state;
    pdbx_fault f;
    char err[256];
    assert_int_equal(pdbx_fault_parse(NULL, &f, err, sizeof err), 0);
    assert_int_equal(f.kind, PDBX_FAULT_NONE);
    assert_false(pdbx_fault_hits(&f, PDBX_FAULT_NONE, -1, -1) && 0);
    assert_int_equal(pdbx_fault_parse("hang:rank=1:point=3", &f, err, sizeof err), 0);
    assert_int_equal(f.kind, PDBX_FAULT_HANG);
    assert_true(pdbx_fault_hits(&f, PDBX_FAULT_HANG, 1, 3));
    assert_false(pdbx_fault_hits(&f, PDBX_FAULT_HANG, 0, 3));
    assert_false(pdbx_fault_hits(&f, PDBX_FAULT_OOM, 1, 3));
    assert_int_equal(pdbx_fault_parse("oom:rank=0:point=0", &f, err, sizeof err), 0);
    assert_int_equal(f.kind, PDBX_FAULT_OOM);
    assert_int_equal(pdbx_fault_parse("exit:rank=2:point=1", &f, err, sizeof err), 0);
    assert_int_equal(f.kind, PDBX_FAULT_EXIT);
    assert_int_equal(pdbx_fault_parse("group:rank=1:point=2", &f, err, sizeof err), 0);
    assert_int_equal(f.kind, PDBX_FAULT_GROUP);
    assert_true(pdbx_fault_hits(&f, PDBX_FAULT_GROUP, 1, 2));
    const char *bad[] = { "hang", "hang:rank=1", "boom:rank=1:point=0", "hang:rank=-1:point=0",
                          "hang:rank=1:point=0:extra" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(pdbx_fault_parse(bad[i], &f, err, sizeof err), -1);
}

static void test_stats_rows_and_max(void **state)
{
    (void)state;
    double a[] = { 3, 1, 2, 4 }, b[] = { 10, 0.5, 2, 2 }, none[1];
    double all[3 * 2 * PDBX_ESTAT];   /* 3 ranks x 2 rows */
    memset(all, 0, sizeof all);
    pdbx_estats_pack(all + (0 * 2 + 1) * PDBX_ESTAT, a, 4);
    pdbx_estats_pack(all + (1 * 2 + 1) * PDBX_ESTAT, b, 4);
    pdbx_estats_pack(all + (2 * 2 + 1) * PDBX_ESTAT, none, 0);
    const double *ra = all + 1 * PDBX_ESTAT;
    assert_true(ra[0] == 4 && ra[1] == 1 && ra[2] == 4 && ra[3] == 2.5 && ra[4] == 2.5);
    assert_true(fabs(ra[5] - sqrt(1.25)) < 1e-12);         /* population std */
    const double *rn = all + 5 * PDBX_ESTAT;
    assert_true(rn[0] == 0 && rn[1] == 0 && rn[3] == 0);     /* empty: count 0, no NaN */
    int ranks[2] = { 0, 1 };
    double mx[PDBX_ESTAT];
    pdbx_estats_max(all, 2, ranks, 2, 1, mx);
    assert_true(mx[0] == 4);                 /* count of the first rank */
    assert_true(mx[1] == 1);                 /* max of the minima (1, 0.5) */
    assert_true(mx[2] == 10 && mx[3] == 3.625 && mx[4] == 2.5);
    pdbx_stats st;
    pdbx_estats_unpack(mx, &st);
    assert_int_equal(st.count, 4);
    assert_true(st.max == 10 && st.mean == 3.625);
    int one[1] = { 1 };
    pdbx_estats_max(all, 2, one, 1, 1, mx);
    assert_true(mx[1] == 0.5 && mx[2] == 10);
}

static void test_blas_threads(void **state)
{
    (void)state;
    char note[256];
    int t1 = pdbx_env_blas_threads(1, note, sizeof note);
    assert_true(t1 >= 1);
    assert_int_equal(pdbx_env_blas_threads(100000, note, sizeof note), 1);   /* never 0 */
    int t2 = pdbx_env_blas_threads(2, note, sizeof note);
    assert_true(t2 >= 1 && t2 <= t1);
}

/* Only the n-th cJSON allocation fails (n < 0: none): the later ones (serialising the event)
 * succeed, as they may when memory comes back. */
static int alloc_budget = -1;
static void *failing_malloc(size_t size)
{
    if (alloc_budget >= 0 && alloc_budget-- == 0)
        return NULL;
    return malloc(size);
}

static int check_progress(const cJSON *ev, void *ctx)
{
    int *complete = ctx;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(ev, "type");
    if (!cJSON_IsString(t) || strcmp(t->valuestring, "progress") != 0)
        return 0;
    static const char *const fields[] = { "done", "total", "point", "op", "elapsed_s", "eta_s",
                                          "coll_done", "coll_total" };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!cJSON_GetObjectItemCaseSensitive(ev, fields[i]))
            return *complete = 0, 1;
    return 0;
}

/* Whatever allocation fails while a progress event is built, what reaches the run file is a
 * whole event or nothing (it used to be written with the fields after the failure missing). */
static void test_progress_event_under_oom(void **state)
{
    (void)state;
    char dir[] = "/tmp/pdbx-engine-misc-XXXXXX", err[256] = "";
    assert_non_null(mkdtemp(dir));
    pdbx_events *ev = NULL;
    assert_int_equal(pdbx_events_open(dir, "oom-run", 0, &ev, err, sizeof err), 0);
    pdbx_events_progress_plan(ev, 4, 1, 10.0, 2);
    pdbx_events_progress_colls(ev, 24, 0, 12);
    pdbx_events_progress_point(ev, 2);
    pdbx_events_progress_op(ev, "attn_q");
    pdbx_events_progress_done(ev, 3.0);
    cJSON_Hooks hooks = { failing_malloc, free };
    cJSON_InitHooks(&hooks);
    int failed = 0, written = 0;
    for (int n = 0; n < 80; n++) {
        alloc_budget = n;
        if (pdbx_events_progress_now(ev) != 0)
            failed++;
        else
            written++;
    }
    alloc_budget = -1;
    cJSON_InitHooks(NULL);
    pdbx_events_close(ev);
    assert_true(failed > 0 && written > 0);      /* both paths were taken */

    char path[512];
    snprintf(path, sizeof path, "%s/runs/oom-run.pdbx", dir);
    int complete = 1;
    pdbx_scan_result res;
    assert_int_equal(pdbx_scan_file(path, 0, check_progress, &complete, &res, err, sizeof err), 0);
    assert_false(res.corrupt);
    assert_int_equal((int)res.events, written);
    assert_true(complete);
    char runs[512];
    snprintf(runs, sizeof runs, "%s/runs", dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(runs), 0);
    assert_int_equal(rmdir(dir), 0);
}

static int count_progress(const cJSON *ev, void *ctx)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(ev, "type");
    if (cJSON_IsString(t) && strcmp(t->valuestring, "progress") == 0)
        ++*(int *)ctx;
    return 0;
}

/* The heartbeat writes a progress event about once a second (its wait and its deadline on the
 * same, monotonic, clock: a mismatch would wait for decades or spin). */
static void test_heartbeat_ticks(void **state)
{
    (void)state;
    char dir[] = "/tmp/pdbx-engine-hb-XXXXXX", err[256] = "";
    assert_non_null(mkdtemp(dir));
    pdbx_events *ev = NULL;
    assert_int_equal(pdbx_events_open(dir, "hb-run", 0, &ev, err, sizeof err), 0);
    pdbx_events_progress_plan(ev, 2, 0, 2.0, 1);
    assert_int_equal(pdbx_events_heartbeat_start(ev), 0);
    struct timespec wait = { 2, 500 * 1000 * 1000 };
    nanosleep(&wait, NULL);
    pdbx_events_heartbeat_stop(ev);
    pdbx_events_close(ev);
    char path[512], runs[512];
    snprintf(path, sizeof path, "%s/runs/hb-run.pdbx", dir);
    snprintf(runs, sizeof runs, "%s/runs", dir);
    int n = 0;
    pdbx_scan_result res;
    assert_int_equal(pdbx_scan_file(path, 0, count_progress, &n, &res, err, sizeof err), 0);
    assert_true(n >= 1 && n <= 4);         /* 2 on time; slack for a loaded host */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(runs), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* The step event of a point: per TP rank the stats of its layer and total rows, and as the
 * point's cell their element-wise max (a step is as slow as its slowest TP rank), the same
 * rule as the op cells; never a sum of the op cells. */
typedef struct {
    int steps, ops;
    pdbx_ev_step step;
    pdbx_stats op_mlp_up;
    int up_shared_with_gate;
} step_seen;

static int collect_step(const cJSON *ev, void *ctx)
{
    step_seen *s = ctx;
    char err[256];
    if (pdbx_event_type_of(ev) == PDBX_EV_STEP) {
        assert_int_equal(pdbx_event_decode_step(ev, &s->step, err, sizeof err), 0);
        s->steps++;
    } else if (pdbx_event_type_of(ev) == PDBX_EV_OP) {
        pdbx_ev_op op;
        memset(&op, 0, sizeof op);
        assert_int_equal(pdbx_event_decode_op(ev, &op, err, sizeof err), 0);
        if (op.op == PDBX_OP_MLP_UP) {
            s->op_mlp_up = op.cell.stats;
            s->up_shared_with_gate = op.cell.shared && op.cell.shared_op == PDBX_OP_MLP_GATE;
        }
        free(op.cell.rank);
        s->ops++;
    }
    return 0;
}

static void fill_row(double *all, int rank, int row, double base)
{
    double *r = all + ((size_t)rank * PDBX_NROWS + row) * PDBX_ESTAT;
    r[0] = 4;                 /* count */
    r[1] = base;              /* min */
    r[2] = base + 3;          /* max */
    r[3] = base + 1;          /* mean */
    r[4] = base + 1.5;        /* median */
    r[5] = 0.25 * base;       /* std */
}

static void test_step_event_cells(void **state)
{
    (void)state;
    char dir[] = "/tmp/pdbx-engine-step-XXXXXX", err[256] = "";
    assert_non_null(mkdtemp(dir));
    pdbx_engine e;
    memset(&e, 0, sizeof e);
    e.rank = 0;
    e.size = 2;
    assert_int_equal(pdbx_spec_load("quick", &e.spec, err, sizeof err), 0);
    e.spec.ops = PDBX_OP_BIT(PDBX_OP_MLP_UP) | PDBX_OP_BIT(PDBX_OP_MLP_GATE);
    assert_int_equal(pdbx_events_open(dir, "step-run", 0, &e.ev, err, sizeof err), 0);
    pdbx_plan_point pt;
    memset(&pt, 0, sizeof pt);
    pt.index = 3;
    pt.tp = 2;
    pt.pp = pt.dp = pt.mbs = 1;
    double all[2 * PDBX_NROWS * PDBX_ESTAT];
    memset(all, 0, sizeof all);
    fill_row(all, 0, PDBX_ROW_LAYER, 10);
    fill_row(all, 1, PDBX_ROW_LAYER, 12);
    fill_row(all, 0, PDBX_ROW_TOTAL, 40);
    fill_row(all, 1, PDBX_ROW_TOTAL, 38);
    /* mlp_up pools its samples with mlp_gate (same shape and kernel): the gate's row */
    fill_row(all, 0, PDBX_ROW_OP(PDBX_PASS_FWD, PDBX_OP_MLP_GATE), 1);
    fill_row(all, 1, PDBX_ROW_OP(PDBX_PASS_FWD, PDBX_OP_MLP_GATE), 2);
    double traces[2 * 4] = { 0 };
    int ntrace[2] = { 0, 0 };
    pdbx_point_bytes bytes = { 4096, 4096, 4096, 0, PDBX_DTYPE_FP32 };
    pdbx_point_results res = { all, traces, ntrace, 1, all, -1, NULL };
    pdbx_point_results_events(&e, &pt, &bytes, &res);
    pdbx_events_close(e.ev);

    char path[512];
    snprintf(path, sizeof path, "%s/runs/step-run.pdbx", dir);
    step_seen seen;
    memset(&seen, 0, sizeof seen);
    pdbx_scan_result sr;
    assert_int_equal(pdbx_scan_file(path, 0, collect_step, &seen, &sr, err, sizeof err), 0);
    assert_int_equal(seen.steps, 1);
    assert_int_equal(seen.ops, 2);                /* mlp_gate and mlp_up, one cell */
    assert_true(seen.up_shared_with_gate);
    const pdbx_ev_step *st = &seen.step;
    assert_int_equal(st->point, 3);
    assert_true(st->layer.valid && st->total.valid);
    assert_int_equal(st->layer.nranks, 2);
    assert_int_equal(st->total.nranks, 2);
    /* element-wise max over the TP ranks; count from the first rank */
    assert_int_equal((int)st->layer.stats.count, 4);
    assert_true(st->layer.stats.min == 12 && st->layer.stats.max == 15 &&
                st->layer.stats.mean == 13 && st->layer.stats.std == 3);
    assert_true(st->total.stats.min == 40 && st->total.stats.max == 43 &&
                st->total.stats.mean == 41 && st->total.stats.std == 10);
    assert_true(st->layer.rank[0].mean == 11 && st->layer.rank[1].mean == 13);
    assert_true(st->total.rank[0].min == 40 && st->total.rank[1].min == 38);
    /* the op cell by the same rule */
    assert_true(seen.op_mlp_up.min == 2 && seen.op_mlp_up.max == 5);
    free(st->layer.rank);
    free(st->total.rank);
    char runs[512];
    snprintf(runs, sizeof runs, "%s/runs", dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(runs), 0);
    assert_int_equal(rmdir(dir), 0);
}

static int last_progress(const cJSON *ev, void *ctx)
{
    if (pdbx_event_type_of(ev) == PDBX_EV_PROGRESS) {
        pdbx_ev_progress *p = ctx;
        pdbx_event_decode_progress(ev, p);
    }
    return 0;
}

/* The heartbeat counts the collectives sweep: its measurements over the whole run (the size
 * rule and the power-of-two groups of the sweep), how many are made, and their work in the
 * ETA, so the engine's own estimate does not reach 0 while the collectives still run. */
/* The adaptive rule: converged only with min_reps samples and the Student-t CI within target;
 * bounded by max_reps, and by time only once an interval exists. */
static void test_adaptive_rule(void **state)
{
    (void)state;
    const pdbx_adaptive_rule r = { 0.01, 5, 50, 1.0 };
    /* 5 samples of 100 +- 0.1: CI = 2.776 * 0.158 / sqrt(5) = 0.196, 0.2% of the mean */
    double quiet[5] = { 100.0, 100.1, 99.9, 100.2, 99.8 };
    assert_int_equal(pdbx_adaptive_state(&r, quiet, 5, 0.1), PDBX_CELL_CONVERGED);
    assert_true(fabs(pdbx_adaptive_rel_ci(quiet, 5) - 2.7764 * sqrt(0.025) / sqrt(5.0) / 100) < 1e-6);
    /* the same spread with 4 samples: below min_reps, more */
    assert_int_equal(pdbx_adaptive_state(&r, quiet, 4, 0.1), PDBX_CELL_MORE);
    /* 5 samples spread by 10%: not converged; the time bound ends it */
    double noisy[5] = { 100, 110, 90, 105, 95 };
    assert_int_equal(pdbx_adaptive_state(&r, noisy, 5, 0.5), PDBX_CELL_MORE);
    assert_int_equal(pdbx_adaptive_state(&r, noisy, 5, 1.0), PDBX_CELL_MAX_TIME);
    /* one sample past the time bound still gets a second (an interval needs two) */
    assert_int_equal(pdbx_adaptive_state(&r, noisy, 1, 5.0), PDBX_CELL_MORE);
    assert_int_equal(pdbx_adaptive_state(&r, noisy, 2, 5.0), PDBX_CELL_MAX_TIME);
    double many[50];
    for (int i = 0; i < 50; i++)
        many[i] = i % 2 ? 150 : 50;
    assert_int_equal(pdbx_adaptive_state(&r, many, 50, 0.0), PDBX_CELL_MAX_REPS);
    /* batches: about batch_s of work, never past min_reps while short of it, nor max_reps */
    assert_int_equal(pdbx_adaptive_batch(&r, 0, 0, 0.005), 1);
    assert_int_equal(pdbx_adaptive_batch(&r, 1, 0.01, 0.005), 4);     /* up to min_reps */
    assert_int_equal(pdbx_adaptive_batch(&r, 5, 0.01, 0.005), 45);    /* 500 wanted, 45 left */
    assert_int_equal(pdbx_adaptive_batch(&r, 5, 100, 0.005), 1);
    /* warm-up: within 5% of the step before */
    assert_true(pdbx_adaptive_stable(100, 104));
    assert_false(pdbx_adaptive_stable(100, 120));
    assert_false(pdbx_adaptive_stable(-1, -1));
    /* Student's t: the table, then the expansion converging to 1.96 */
    assert_true(fabs(pdbx_student_t975(1) - 12.7062) < 1e-4);
    assert_true(fabs(pdbx_student_t975(60) - 2.0003) < 1e-3);
    assert_true(fabs(pdbx_student_t975(100000) - 1.95998) < 1e-3);
}

static void test_progress_counts_collectives(void **state)
{
    (void)state;
    pdbx_spec *sp = calloc(1, sizeof *sp);
    assert_non_null(sp);
    sp->collectives = 1;
    sp->ncoll_sizes = 3;
    sp->coll_sizes[0] = 4;          /* below 4 bytes per rank of every group: skipped */
    sp->coll_sizes[1] = 8;          /* a group of 2 only */
    sp->coll_sizes[2] = 4096;
    /* per size: the 5 collectives, all_gather and reduce_scatter also out of place */
    const int per_size = PDBX_COLL_COUNT + 2;
    assert_int_equal(pdbx_coll_sweep_count(sp, 1, 1), 0);
    assert_int_equal(pdbx_coll_sweep_count(sp, 2, 1), 2 * per_size);
    assert_int_equal(pdbx_coll_sweep_count(sp, 4, 1), 3 * per_size);   /* g = 2, 4 */
    /* two nodes of two ranks: plus the one-rank-per-node group of 2 */
    assert_int_equal(pdbx_coll_sweep_count(sp, 4, 2), 5 * per_size);
    assert_int_equal(pdbx_coll_sweep_count(sp, 4, 4), 3 * per_size);   /* one rank a node */
    assert_int_equal(pdbx_coll_sweep_count(sp, 6, 1), 3 * per_size);   /* no group of 6 */
    sp->collectives = 0;
    assert_int_equal(pdbx_coll_sweep_count(sp, 4, 1), 0);
    free(sp);

    char dir[] = "/tmp/pdbx-engine-coll-XXXXXX", err[256] = "";
    assert_non_null(mkdtemp(dir));
    pdbx_events *ev = NULL;
    assert_int_equal(pdbx_events_open(dir, "coll-run", 0, &ev, err, sizeof err), 0);
    pdbx_events_progress_plan(ev, 2, 0, 3.0, 1);            /* MBS 1 and 2 */
    pdbx_events_progress_colls(ev, 20, 4, 16);
    struct timespec measuring = { 0, 100 * 1000 * 1000 };
    nanosleep(&measuring, NULL);
    pdbx_events_progress_done(ev, 1.0);
    pdbx_events_progress_done(ev, 2.0);
    pdbx_events_progress_coll_done(ev);
    assert_int_equal(pdbx_events_progress_now(ev), 0);
    pdbx_events_close(ev);
    char path[512], runs[512];
    snprintf(path, sizeof path, "%s/runs/coll-run.pdbx", dir);
    snprintf(runs, sizeof runs, "%s/runs", dir);
    pdbx_ev_progress p = { .done = NAN, .total = NAN, .point = -1, .eta_s = NAN };
    pdbx_scan_result res;
    assert_int_equal(pdbx_scan_file(path, 0, last_progress, &p, &res, err, sizeof err), 0);
    assert_true(p.done == 2 && p.coll_done == 5 && p.coll_total == 20);
    /* 15 of this launch's 16 measurements are left: the ETA is not 0 */
    assert_true(p.eta_s > 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(runs), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* Executions per collectives-sweep sample: a sample of >= 1 ms from the group's slowest
 * calibration execution, at least 1, at most 100. */
static void test_coll_sweep_iters(void **state)
{
    (void)state;
    assert_int_equal(pdbx_coll_sweep_iters(0.010), 100);   /* 10 us: capped */
    assert_int_equal(pdbx_coll_sweep_iters(0.0), 100);     /* not measured: the cap */
    assert_int_equal(pdbx_coll_sweep_iters(NAN), 100);
    assert_int_equal(pdbx_coll_sweep_iters(0.05), 20);     /* 20 x 50 us = 1 ms */
    assert_int_equal(pdbx_coll_sweep_iters(0.3), 4);       /* rounded up: 4 x 0.3 >= 1 ms */
    assert_int_equal(pdbx_coll_sweep_iters(1.0), 1);
    assert_int_equal(pdbx_coll_sweep_iters(25.0), 1);      /* a long one: one per sample */
    for (double ms = 0.011; ms < 2; ms *= 1.37) {
        int n = pdbx_coll_sweep_iters(ms);
        assert_true(n >= 1 && n <= 100);
        assert_true(n == 100 || n == 1 || (n * ms >= 1.0 && (n - 1) * ms < 1.0));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_args), cmocka_unit_test(test_validate_args),
        cmocka_unit_test(test_fault_syntax),
        cmocka_unit_test(test_stats_rows_and_max),
        cmocka_unit_test(test_blas_threads),
        cmocka_unit_test(test_progress_event_under_oom),
        cmocka_unit_test(test_heartbeat_ticks),
        cmocka_unit_test(test_progress_counts_collectives),
        cmocka_unit_test(test_coll_sweep_iters),
        cmocka_unit_test(test_step_event_cells),
        cmocka_unit_test(test_adaptive_rule),
    };
    return cmocka_run_group_tests_name("engine_misc", tests, NULL, NULL);
}
