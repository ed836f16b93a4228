/* test_export_trace.c: Chrome trace export. The file is parsed back with cJSON: exactly one
 * complete event per op (per layer for layer ops) per rank of each recorded step. */
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
#include <unistd.h>

#include "store/export/export.h"
#include "store/profiledb.h"
#include "test_export_util.h"

static const tx_point trace_pts[] = {
    { 2, 1, 1, 1, "ok", 0 }, { 2, 1, 1, 2, "ok", 0 }, { 2, 1, 1, 4, "oom", 0 },
    { 1, 1, 1, 1, "ok", 0 },
};
#define N_TRACE_PTS 4

/* Events one rank's step holds: embed, the layer ops per layer, final_norm, lm_head. */
static int ops_per_step(const tx_point *p)
{
    int per_layer = 0;
    pdbx_opmask ops = tx_point_ops(p);
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        if ((ops & PDBX_OP_BIT(op)) && pdbx_op_is_per_layer((pdbx_op)op))
            per_layer++;
    return 3 + TX_LAYERS * per_layer;
}

static int expected_events(void)
{
    int n = 0;
    for (int i = 0; i < N_TRACE_PTS; i++)
        if (strcmp(trace_pts[i].status, "ok") == 0)
            n += trace_pts[i].tp * ops_per_step(&trace_pts[i]);
    return n;
}

static cJSON *load_trace(const char *path)
{
    size_t len = 0;
    char *text = test_slurp(path, &len);
    assert_non_null(text);
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!root)
        fail_msg("%s does not parse as JSON", path);
    assert_true(cJSON_IsObject(root));
    const cJSON *unit = cJSON_GetObjectItemCaseSensitive(root, "displayTimeUnit");
    assert_true(cJSON_IsString(unit));
    assert_string_equal(unit->valuestring, "ms");
    assert_true(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "traceEvents")));
    assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "metadata")));
    return root;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(it))
        fail_msg("field %s missing or not a number", k);
    return it->valuedouble;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(it))
        fail_msg("field %s missing or not a string", k);
    return it->valuestring;
}

typedef struct {
    int pid, tid, layer, op;
    double ts, dur;
} seen_event;

/* Checks the complete events against the plan: one per (rank, point, op, layer), args right.
 * Returns them (count in *n) for the caller's timing checks. */
static seen_event *check_complete_events(const cJSON *root, int *n)
{
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    int want = expected_events();
    seen_event *seen = calloc((size_t)want + 1, sizeof *seen);
    assert_non_null(seen);
    int count = 0, process_names = 0, thread_names = 0, sort_indexes = 0;
    const cJSON *e;
    int x_seen = 0;
    cJSON_ArrayForEach(e, events) {
        const char *ph = str(e, "ph");
        if (strcmp(ph, "M") == 0) {
            if (x_seen)
                fail_msg("a metadata event after a complete event (names come first)");
            const char *what = str(e, "name");
            process_names += strcmp(what, "process_name") == 0;
            thread_names += strcmp(what, "thread_name") == 0;
            if (strcmp(what, "process_sort_index") == 0) {   /* rank r is pid r + 1, index r */
                const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
                assert_int_equal((int)num(args, "sort_index") + 1, (int)num(e, "pid"));
                sort_indexes++;
            }
            assert_true(num(e, "pid") >= 1);                 /* pid 0 is Perfetto's idle */
            continue;
        }
        assert_string_equal(ph, "X");
        if (count == want)
            fail_msg("more complete events than the %d expected", want);
        int op = pdbx_op_from_name(str(e, "name"));
        assert_true(op >= 0);
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        assert_true(cJSON_IsObject(args));
        x_seen = 1;
        /* pid = rank + 1 (pid 0 is Perfetto's idle process): s.pid holds the rank, s.tid the
         * point; the track id is unique in the file: pid x 10 + point + 1 (4 points) */
        assert_double_equal(num(e, "tid"), num(e, "pid") * 10 + num(args, "point") + 1, 0);
        seen_event s = { (int)num(e, "pid") - 1, (int)num(args, "point"), (int)num(args, "layer"), op,
                         num(e, "ts"), num(e, "dur") };
        assert_true(s.tid >= 0 && s.tid < N_TRACE_PTS);
        const tx_point *p = &trace_pts[s.tid];
        assert_string_equal(p->status, "ok");
        assert_true(s.pid >= 0 && s.pid < p->tp);
        assert_int_equal((int)num(args, "mbs"), p->mbs);
        assert_int_equal((int)num(args, "tp"), p->tp);
        assert_int_equal((int)num(args, "pp"), p->pp);
        assert_int_equal((int)num(args, "dp"), p->dp);
        if (pdbx_op_is_per_layer((pdbx_op)op))
            assert_true(s.layer >= 0 && s.layer < TX_LAYERS);
        else
            assert_int_equal(s.layer, -1);
        assert_true(s.dur > 0.0 && s.ts >= 0.0);
        for (int i = 0; i < count; i++)
            if (seen[i].pid == s.pid && seen[i].tid == s.tid && seen[i].op == s.op && seen[i].layer == s.layer)
                fail_msg("two events for rank %d point %d op %s layer %d", s.pid, s.tid,
                         pdbx_op_name((pdbx_op)op), s.layer);
        seen[count++] = s;
    }
    assert_int_equal(count, want);     /* none missing: want distinct keys were seen */
    assert_int_equal(process_names, 2);                  /* ranks 0 and 1 */
    assert_int_equal(sort_indexes, 2);
    assert_int_equal(thread_names, 2 + 2 + 1);           /* (rank, point) tracks */
    *n = count;
    return seen;
}

static void test_trace_recorded_steps(void **state)
{
    const char *dir = *state;
    pdbx_run run;
    tx_build_run(&run, trace_pts, N_TRACE_PTS, NULL, 1);
    tx_end_run(&run);
    assert_int_equal((int)run.ntrace, expected_events());
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/trace.json", dir);
    tx_wrote_log log = { 0 };
    if (pdbx_export_trace(&run, path, tx_wrote, &log, err, sizeof err) != 0)
        fail_msg("pdbx_export_trace: %s", err);
    assert_int_equal(log.n, 1);
    assert_string_equal(log.paths[0], path);
    cJSON *root = load_trace(path);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(meta, "synthesized")));
    assert_string_equal(str(meta, "run_id"), "2026-11-22__00-00-00_deadbeef");
    int n;
    seen_event *ev = check_complete_events(root, &n);
    /* times as the engine recorded them (the generator's layout) */
    for (int i = 0; i < n; i++) {
        double dur = 10.0 + ev[i].op + 100.0 * (ev[i].layer < 0 ? 0 : ev[i].layer) + 0.5 * ev[i].pid;
        assert_double_equal(ev[i].dur, dur, 1e-9);
        if (ev[i].op == PDBX_OP_EMBED)
            assert_double_equal(ev[i].ts, 0.0, 0);
    }
    free(ev);
    cJSON_Delete(root);
    pdbx_run_free(&run);
}

/* A point with expert parallelism: its events carry "ep" and its track says EP; the others'
 * carry none (a dense run's trace is unchanged). */
static void test_trace_ep_point(void **state)
{
    const char *dir = *state;
    pdbx_run run;
    tx_build_run(&run, trace_pts, N_TRACE_PTS, NULL, 1);
    tx_end_run(&run);
    const pdbx_point *at = pdbx_run_point(&run, 3);
    assert_non_null(at);
    run.points[at - run.points].ep = 2;   /* as a point_start with "ep": 2 folds it */
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/trace_ep.json", dir);
    tx_wrote_log log = { 0 };
    if (pdbx_export_trace(&run, path, tx_wrote, &log, err, sizeof err) != 0)
        fail_msg("pdbx_export_trace: %s", err);
    cJSON *root = load_trace(path);
    int with_ep = 0, without = 0, named = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents")) {
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        if (strcmp(str(e, "ph"), "M") == 0) {
            const cJSON *nm = cJSON_GetObjectItemCaseSensitive(args, "name");
            if (cJSON_IsString(nm) && strstr(nm->valuestring, "point 3:"))
                named += strcmp(nm->valuestring, "point 3: TP 1 PP 1 DP 1 EP 2 MBS 1") == 0;
            continue;
        }
        const cJSON *ep = cJSON_GetObjectItemCaseSensitive(args, "ep");
        if ((int)num(args, "point") == 3) {
            assert_true(cJSON_IsNumber(ep));
            assert_int_equal(ep->valueint, 2);
            with_ep++;
        } else {
            assert_null(ep);
            without++;
        }
    }
    assert_int_equal(named, 1);
    assert_true(with_ep > 0 && without > 0);
    cJSON_Delete(root);
    pdbx_run_free(&run);
}

static int cmp_ts(const void *a, const void *b)
{
    const seen_event *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid - y->pid;
    if (x->tid != y->tid)
        return x->tid - y->tid;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

static void test_trace_synthesized_without_events(void **state)
{
    const char *dir = *state;
    pdbx_run run;
    tx_build_run(&run, trace_pts, N_TRACE_PTS, NULL, 0);
    assert_int_equal((int)run.ntrace, 0);
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/synth.json", dir);
    if (pdbx_export_trace(&run, path, NULL, NULL, err, sizeof err) != 0)
        fail_msg("pdbx_export_trace: %s", err);
    cJSON *root = load_trace(path);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(meta, "synthesized")));
    int n;
    seen_event *ev = check_complete_events(root, &n);
    qsort(ev, (size_t)n, sizeof *ev, cmp_ts);
    for (int i = 0; i < n; i++) {
        /* each op lasts its rank's median; ops follow each other without gaps */
        pdbx_stats s;
        const tx_point *p = &trace_pts[ev[i].tid];
        tx_stats_default(ev[i].tid, ev[i].op, p->mbs, p->tp, ev[i].pid, &s);
        assert_double_equal(ev[i].dur, s.median * 1000.0, 1e-9 * s.median * 1000.0);
        int first = i == 0 || ev[i - 1].pid != ev[i].pid || ev[i - 1].tid != ev[i].tid;
        if (first) {
            assert_int_equal(ev[i].op, PDBX_OP_EMBED);
            assert_double_equal(ev[i].ts, 0.0, 0);
        } else {
            assert_double_equal(ev[i].ts, ev[i - 1].ts + ev[i - 1].dur, 1e-9 * ev[i].ts);
            /* execution order: layer by layer, ops in pdbx_op order within a layer */
            int a = ev[i - 1].layer, b = ev[i].layer;
            assert_true(b == -1 || a == -1 || b > a || (b == a && ev[i].op > ev[i - 1].op));
        }
    }
    assert_int_equal(ev[n - 1].op, PDBX_OP_LM_HEAD);
    free(ev);
    cJSON_Delete(root);
    pdbx_run_free(&run);
}

static void test_trace_errors(void **state)
{
    const char *dir = *state;
    const tx_point none_ok[] = { { 1, 1, 1, 1, "oom", 0 } };
    pdbx_run run;
    tx_build_run(&run, none_ok, 1, NULL, 0);
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/none.json", dir);
    assert_int_equal(pdbx_export_trace(&run, path, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "nothing to write"));
    assert_false(tx_exists(path));
    pdbx_run_free(&run);

    tx_build_run(&run, trace_pts, N_TRACE_PTS, NULL, 1);
    snprintf(path, sizeof path, "%s/no/such/dir/trace.json", dir);
    assert_int_equal(pdbx_export_trace(&run, path, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "no/such/dir"));
    pdbx_run_free(&run);
}

/* Issue 10 item 4: layers_profiled (from the file) multiplied the synthesized events without
 * bound: 2^31 - 1 layers allocated until the process died. Now the trace is counted first and
 * refused past PDBX_TRACE_MAX_EVENTS, before anything is built or written. */
static void test_trace_bounded(void **state)
{
    const char *dir = *state;
    const tx_point pts[] = { { 1, 1, 1, 1, "ok", 0 }, { 2, 1, 1, 2, "ok", 0 } };
    pdbx_run run;
    tx_build_run(&run, pts, 2, NULL, 0);
    run.layers_profiled = 2147483647;    /* a run not built by the fold (which caps it) */
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/huge.json", dir);
    assert_int_equal(pdbx_export_trace(&run, path, NULL, NULL, err, sizeof err), 0);
    /* clamped to PDBX_RUN_MAX_LAYERS: 2 points, 3 ranks, 4096 layers: ~10^5 events, written */
    assert_true(tx_exists(path));
    unlink(path);
    /* 40 points x 4096 layers x the layer ops pass the cap: refused, nothing written */
    tx_point many[40];
    for (int i = 0; i < 40; i++)
        many[i] = (tx_point){ 1, 1, 1, i + 1, "ok", 0 };
    pdbx_run big;
    tx_build_run(&big, many, 40, NULL, 0);
    big.layers_profiled = PDBX_RUN_MAX_LAYERS;
    assert_int_equal(pdbx_export_trace(&big, path, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "PDBX_TRACE_MAX_EVENTS"));
    assert_false(tx_exists(path));
    pdbx_run_free(&big);
    pdbx_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_trace_ep_point, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_trace_recorded_steps, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_trace_synthesized_without_events, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_trace_errors, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_trace_bounded, test_setup_tmpdir, test_teardown_tmpdir),
    };
    return cmocka_run_group_tests_name("export_trace", tests, NULL, NULL);
}
