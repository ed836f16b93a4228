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

#include "engine/engine_args.h"
#include "engine/engine_env.h"
#include "engine/engine_events.h"
#include "engine/engine_stats.h"
#include "engine/engine_watch.h"
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
    static const char *const fields[] = { "done", "total", "point", "op", "elapsed_s", "eta_s" };
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
    pdbx_events_progress_plan(ev, 4, 1, 10.0);
    pdbx_events_progress_point(ev, 2);
    pdbx_events_progress_op(ev, "attn_q");
    pdbx_events_progress_done(ev, 3.0);
    cJSON_Hooks hooks = { failing_malloc, free };
    cJSON_InitHooks(&hooks);
    int failed = 0, written = 0;
    for (int n = 0; n < 40; n++) {
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
    pdbx_events_progress_plan(ev, 2, 0, 2.0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_fault_syntax),
        cmocka_unit_test(test_stats_rows_and_max),
        cmocka_unit_test(test_blas_threads),
        cmocka_unit_test(test_progress_event_under_oom),
        cmocka_unit_test(test_heartbeat_ticks),
    };
    return cmocka_run_group_tests_name("engine_misc", tests, NULL, NULL);
}
