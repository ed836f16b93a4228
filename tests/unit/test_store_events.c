/* test_store_events.c: the event schema (store/events.h): every type encodes, survives the
 * trip through JSON text, and decodes to what was encoded; a malformed field of each type
 * fails its decoder with a message naming the event and the field; raw prefixes match what
 * the encoders print; the fold fills pdbx_point.layer/.total from step events. The run's own
 * events (coll, infer, progress, warning, run_end) are tested in test_store_events_run.c. */
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

#include "store/events.h"
#include "store/profiledb.h"
#include "test_store_util.h"
#include "test_events_util.h"

static void test_type_names(void **state)
{
    (void)state;
    for (int t = 1; t < PDBX_EV_COUNT; t++) {
        const char *name = pdbx_event_type_name((pdbx_event_type)t);
        assert_int_equal(pdbx_event_type_from_name(name), t);
    }
    assert_int_equal(pdbx_event_type_from_name("nope"), PDBX_EV_UNKNOWN);
    assert_int_equal(pdbx_event_type_from_name(NULL), PDBX_EV_UNKNOWN);
    assert_string_equal(pdbx_event_type_name(PDBX_EV_STEP), "step");
    assert_string_equal(pdbx_event_type_name(PDBX_EV_COUNT), "?");
}

static void test_raw_prefix_matches_encoders(void **state)
{
    (void)state;
    cJSON *ev = pdbx_event_warning("w");
    char *text = cJSON_PrintUnformatted(ev);
    assert_true(pdbx_event_raw_is(text, strlen(text), PDBX_EV_WARNING));
    assert_false(pdbx_event_raw_is(text, strlen(text), PDBX_EV_OP));
    assert_false(pdbx_event_raw_is(text, 5, PDBX_EV_WARNING));
    assert_int_equal(pdbx_event_type_of(ev), PDBX_EV_WARNING);
    free(text);
    cJSON_Delete(ev);
    pdbx_trace_event none[1];
    ev = pdbx_event_trace(1, 0, none, 0);
    text = cJSON_PrintUnformatted(ev);
    assert_true(pdbx_event_raw_is(text, strlen(text), PDBX_EV_TRACE));
    free(text);
    cJSON_Delete(ev);
}

static void test_stamp_and_time(void **state)
{
    (void)state;
    cJSON *ev = pdbx_event_warning("w");
    double t = 0;
    assert_false(pdbx_event_time(ev, &t));
    assert_int_equal(pdbx_event_stamp(ev, 12.5), 0);
    assert_true(pdbx_event_time(ev, &t));
    assert_double_equal(t, 12.5, 0);
    assert_int_equal(pdbx_event_stamp(ev, 99.0), 0);   /* an existing t is kept */
    assert_true(pdbx_event_time(ev, &t));
    assert_double_equal(t, 12.5, 0);
    cJSON_Delete(ev);
}

/* A run_start header of 4 ranks on two hosts, as the engine fills it. */
static void fill_run_start(pdbx_ev_run_start *h)
{
    memset(h, 0, sizeof *h);
    snprintf(h->who.id, sizeof h->who.id, "2026-01-01__00-00-00_abcdef01");
    snprintf(h->who.host, sizeof h->who.host, "node1");
    h->who.pid = 4242;
    h->who.world_size = 4;
    h->who.ranks_per_node = 2;
    snprintf(h->backend, sizeof h->backend, "cpu");
    snprintf(h->model.name, sizeof h->model.name, "Tiny");
    h->model.hidden = 64;
    h->model.vocab = 1000;
    h->layers_profiled = 2;
    h->seq_len = 128;
    h->warmup = 1;
    h->steps = 3;
    snprintf(h->dtype, sizeof h->dtype, "fp32");
    snprintf(h->who.launcher, sizeof h->who.launcher, "mpirun on 2 hosts");
    snprintf(h->who.command, sizeof h->who.command, "mpirun --host a:2,b:2 -np 3 pdbx-engine");
}

/* h's run_start event with its env (three ranks' places) and two plan points (the second at
 * EP 2), through JSON text and back. */
static cJSON *run_start_event(const pdbx_ev_run_start *h)
{
    cJSON *env = cJSON_CreateObject();
    const char *hosts[] = {"node1", "node1", "node2"};
    const pdbx_ev_rank_place places[] = {
        {"node1", 0, 0, "GPU-0a"}, {"node1", 1, 1, "GPU-1b"}, {"node2", 0, -1, ""},
    };
    pdbx_ev_env e = {hosts, 3, 1, "cpu0", "Open MPI", "mpi", "0.1", "abc", 2, 8, "tp first", "clock",
                     places, 3};
    assert_int_equal(pdbx_event_env_set_device(env, "AMD EPYC"), 0);
    assert_int_equal(pdbx_event_env_fill(env, &e), 0);
    pdbx_ev_plan_point pts[2] = {{0, 1, 2, 2, 1, 128, 1e9, 0, 1}, {1, 2, 1, 2, 4, 0, 2e9, 1, 2}};
    return through_text(pdbx_event_run_start(h, cJSON_CreateObject(), env, pts, 2));
}

/* The decoded header and env equal what run_start_event wrote. */
static void check_run_start_header(const cJSON *ev, const pdbx_ev_run_start *h)
{
    pdbx_ev_run_start d;
    memset(&d, 0, sizeof d);
    pdbx_event_decode_run_start(ev, &d);
    assert_string_equal(d.who.id, h->who.id);
    assert_string_equal(d.who.host, "node1");
    assert_int_equal(d.who.pid, 4242);
    assert_int_equal(d.who.world_size, 4);
    assert_int_equal(d.who.ranks_per_node, 2);
    assert_string_equal(d.backend, "cpu");
    assert_string_equal(d.model.name, "Tiny");
    assert_int_equal(d.model.hidden, 64);
    assert_int_equal(d.model.vocab, 1000);
    assert_int_equal(d.layers_profiled, 2);
    assert_int_equal(d.seq_len, 128);
    assert_int_equal(d.steps, 3);
    assert_string_equal(d.dtype, "fp32");
    assert_non_null(d.spec);
    assert_string_equal(pdbx_event_env_device(d.env), "AMD EPYC");
    const char *got[4];
    assert_int_equal(pdbx_event_env_hosts(d.env, got, 4), 3);
    assert_string_equal(got[2], "node2");
    assert_int_equal(pdbx_event_env_hosts(d.env, got, 1), 1);
    /* where every rank ran, and how it was launched */
    pdbx_ev_rank_place pl[4];
    assert_int_equal(pdbx_event_env_placement(d.env, pl, 4), 3);
    assert_string_equal(pl[1].host, "node1");
    assert_int_equal(pl[1].local_rank, 1);
    assert_int_equal(pl[1].device, 1);
    assert_string_equal(pl[1].uuid, "GPU-1b");
    assert_string_equal(pl[2].host, "node2");
    assert_int_equal(pl[2].device, -1);
    assert_string_equal(d.who.launcher, "mpirun on 2 hosts");
    assert_string_equal(d.who.command, "mpirun --host a:2,b:2 -np 3 pdbx-engine");
}

/* The decoded plan points (ep 1 unwritten, EP 2 kept), then malformed points named. */
static void check_run_start_plan(cJSON *ev)
{
    char err[200];
    pdbx_ev_plan_point *dp;
    size_t n;
    assert_int_equal(pdbx_event_decode_plan(ev, &dp, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(dp[1].index, 1);
    assert_int_equal(dp[1].tp, 2);
    assert_int_equal(dp[1].mbs, 4);
    assert_double_equal(dp[1].predicted_mem_bytes, 2e9, 0);
    assert_int_equal(dp[1].predicted_oom, 1);
    assert_int_equal(dp[0].seq_len, 128);
    assert_int_equal(dp[0].ep, 1);   /* ep 1 is not written and reads as 1 */
    assert_int_equal(dp[1].ep, 2);
    free(dp);

    set_field(ev, "points", "{}");
    assert_int_equal(pdbx_event_decode_plan(ev, &dp, &n, err, sizeof err), -1);
    assert_mentions(err, "run_start", "\"points\"");
    free(dp);
    set_field(ev, "points", "[3]");
    assert_int_equal(pdbx_event_decode_plan(ev, &dp, &n, err, sizeof err), -1);
    assert_mentions(err, "run_start", "points[0]");
    free(dp);
}

static void test_run_start(void **state)
{
    (void)state;
    pdbx_ev_run_start h;
    fill_run_start(&h);
    cJSON *ev = run_start_event(&h);
    assert_int_equal(pdbx_event_type_of(ev), PDBX_EV_RUN_START);
    check_run_start_header(ev, &h);
    check_run_start_plan(ev);
    cJSON_Delete(ev);
}

static void test_launch(void **state)
{
    (void)state;
    pdbx_ev_launcher w;
    memset(&w, 0, sizeof w);
    snprintf(w.host, sizeof w.host, "node9");
    w.pid = 7;
    w.world_size = 16;
    w.ranks_per_node = 8;
    const int cfg[1][3] = {{8, 2, 1}};
    cJSON *ev = through_text(pdbx_event_launch(&w, NULL, cfg, 1));
    pdbx_ev_launcher d;
    memset(&d, 0, sizeof d);
    pdbx_event_decode_launch(ev, &d);
    assert_string_equal(d.host, "node9");
    assert_int_equal(d.pid, 7);
    assert_int_equal(d.world_size, 16);
    assert_int_equal(d.ranks_per_node, 8);
    /* an id too long to be a run id is not cut down to one */
    set_field(ev, "id", "\"0123456789012345678901234567890123456789012345678901234567890123456789\"");
    pdbx_event_decode_launch(ev, &d);
    assert_string_equal(d.id, "");
    cJSON_Delete(ev);
}

static void test_point_start_and_end(void **state)
{
    (void)state;
    char err[200];
    cJSON *ev = through_text(pdbx_event_point_start(3, 2, 4, 1, 1, 8));
    pdbx_ev_point_start ps;
    memset(&ps, 0, sizeof ps);
    assert_int_equal(pdbx_event_decode_point_start(ev, &ps, err, sizeof err), 0);
    assert_int_equal(ps.point, 3);
    assert_true(ps.has_shape);
    assert_int_equal(ps.tp, 2);
    assert_int_equal(ps.pp, 4);
    assert_int_equal(ps.dp, 1);
    assert_int_equal(ps.mbs, 8);
    assert_int_equal(ps.ep, 1);
    assert_null(cJSON_GetObjectItemCaseSensitive(ev, "ep"));   /* a dense point's event as before */
    cJSON *ev2 = through_text(pdbx_event_point_start(4, 1, 1, 2, 2, 1));
    assert_int_equal(pdbx_event_decode_point_start(ev2, &ps, err, sizeof err), 0);
    assert_int_equal(ps.ep, 2);
    cJSON_Delete(ev2);
    set_field(ev, "point", "-1");
    assert_int_equal(pdbx_event_decode_point_start(ev, &ps, err, sizeof err), -1);
    assert_mentions(err, "point_start event", "\"point\"");
    cJSON_Delete(ev);

    ev = through_text(pdbx_event_point_end(3, PDBX_POINT_OOM, "out of memory"));
    pdbx_ev_point_end pe;
    assert_int_equal(pdbx_event_decode_point_end(ev, &pe, err, sizeof err), 0);
    assert_int_equal(pe.point, 3);
    assert_int_equal(pe.status, PDBX_POINT_OOM);
    assert_string_equal(pe.message, "out of memory");
    set_field(ev, "status", "\"running\"");
    assert_int_equal(pdbx_event_decode_point_end(ev, &pe, err, sizeof err), -1);
    assert_mentions(err, "point_end event (point 3)", "\"status\"");
    cJSON_Delete(ev);
    ev = through_text(pdbx_event_point_end(4, PDBX_POINT_OK, ""));
    assert_int_equal(pdbx_event_decode_point_end(ev, &pe, err, sizeof err), 0);
    assert_null(pe.message);
    /* without memory figures (runs recorded before them) they read NaN and are not written */
    assert_true(isnan(pe.profile_mem_bytes) && isnan(pe.mem_peak_bytes) && isnan(pe.mem_base_bytes));
    assert_null(cJSON_GetObjectItem(ev, "mem_peak_bytes"));
    cJSON_Delete(ev);
    /* the optional memory figures: predicted profile memory, measured peak and its baseline */
    pdbx_ev_point_end mem = { .point = 5, .status = PDBX_POINT_OK, .profile_mem_bytes = 775745664,
                              .mem_peak_bytes = 810446848, .mem_base_bytes = 17645568 };
    ev = through_text(pdbx_event_point_end_mem(&mem));
    assert_int_equal(pdbx_event_decode_point_end(ev, &pe, err, sizeof err), 0);
    assert_int_equal(pe.point, 5);
    assert_true(pe.profile_mem_bytes == 775745664 && pe.mem_peak_bytes == 810446848 &&
                pe.mem_base_bytes == 17645568);
    cJSON_Delete(ev);
    /* a point predicted to OOM has a prediction and no peak */
    mem.status = PDBX_POINT_PREDICTED_OOM;
    mem.mem_peak_bytes = mem.mem_base_bytes = NAN;
    ev = through_text(pdbx_event_point_end_mem(&mem));
    assert_int_equal(pdbx_event_decode_point_end(ev, &pe, err, sizeof err), 0);
    assert_true(pe.profile_mem_bytes == 775745664 && isnan(pe.mem_peak_bytes));
    assert_null(cJSON_GetObjectItem(ev, "mem_base_bytes"));
    cJSON_Delete(ev);
}

static void test_op(void **state)
{
    (void)state;
    char err[200];
    pdbx_stats ranks[2] = {stats_of(1.0), stats_of(1.5)};
    pdbx_cell c = {.valid = 1, .stats = stats_of(1.5), .nranks = 2, .rank = ranks, .flops = 1.2e12, .bytes = 3.4e8};
    cJSON *ev = through_text(pdbx_event_op(3, PDBX_OP_ATTN_Q, PDBX_PASS_FWD, &c));
    pdbx_ev_op d;
    memset(&d, 0, sizeof d);
    assert_int_equal(pdbx_event_decode_op(ev, &d, err, sizeof err), 0);
    assert_int_equal(d.point, 3);
    assert_int_equal(d.op, PDBX_OP_ATTN_Q);
    assert_cell_equal(&d.cell, &c);
    assert_double_equal(d.cell.flops, 1.2e12, 0);
    assert_double_equal(d.cell.bytes, 3.4e8, 0);
    free(d.cell.rank);

    set_field(ev, "ranks", "{\"a\":{\"count\":1}}");       /* not an array: no ranks */
    assert_int_equal(pdbx_event_decode_op(ev, &d, err, sizeof err), 0);
    assert_int_equal(d.cell.nranks, 0);
    assert_null(d.cell.rank);
    set_field(ev, "ranks", "[{\"count\":1}]");
    assert_int_equal(pdbx_event_decode_op(ev, &d, err, sizeof err), -1);
    assert_mentions(err, "op event (point 3, op attn_q)", "\"ranks\"[0]");
    assert_null(d.cell.rank);
    set_field(ev, "stats", "7");
    assert_int_equal(pdbx_event_decode_op(ev, &d, err, sizeof err), -1);
    assert_mentions(err, "op event (point 3, op attn_q)", "\"stats\"");
    set_field(ev, "op", "\"future_op\"");          /* unknown op: decodes, op -1 */
    assert_int_equal(pdbx_event_decode_op(ev, &d, err, sizeof err), 0);
    assert_int_equal(d.op, -1);
    cJSON_Delete(ev);
}

static void test_step(void **state)
{
    (void)state;
    char err[200];
    pdbx_stats lr[2] = {stats_of(10.0), stats_of(11.0)};
    pdbx_stats tr[2] = {stats_of(100.0), stats_of(101.0)};
    pdbx_cell layer = {.valid = 1, .stats = stats_of(11.0), .nranks = 2, .rank = lr},
              total = {.valid = 1, .stats = stats_of(101.0), .nranks = 2, .rank = tr};
    cJSON *ev = through_text(pdbx_event_step(5, &layer, &total));
    assert_int_equal(pdbx_event_type_of(ev), PDBX_EV_STEP);
    pdbx_ev_step d;
    assert_int_equal(pdbx_event_decode_step(ev, &d, err, sizeof err), 0);
    assert_int_equal(d.point, 5);
    assert_cell_equal(&d.layer, &layer);
    assert_cell_equal(&d.total, &total);
    free(d.layer.rank);
    free(d.total.rank);

    set_field(ev, "total", "{\"stats\":\"x\"}");
    assert_int_equal(pdbx_event_decode_step(ev, &d, err, sizeof err), -1);
    assert_mentions(err, "step event (point 5)", "\"total\": field \"stats\"");
    assert_null(d.layer.rank);                     /* released on failure */
    set_field(ev, "layer", "[]");
    assert_int_equal(pdbx_event_decode_step(ev, &d, err, sizeof err), -1);
    assert_mentions(err, "step event (point 5)", "\"layer\"");
    cJSON_Delete(ev);

    /* a cell that was not measured is left out and decodes as invalid */
    pdbx_cell none = {0};
    ev = through_text(pdbx_event_step(6, &layer, &none));
    assert_int_equal(pdbx_event_decode_step(ev, &d, err, sizeof err), 0);
    assert_int_equal(d.layer.valid, 1);
    assert_int_equal(d.total.valid, 0);
    free(d.layer.rank);
    cJSON_Delete(ev);
}

static void test_step_folds_into_point(void **state)
{
    (void)state;
    char err[200];
    pdbx_stats lr[1] = {stats_of(10.0)};
    pdbx_cell layer = {.valid = 1, .stats = stats_of(10.0), .nranks = 1, .rank = lr},
              total = {.valid = 1, .stats = stats_of(90.0), .nranks = 1, .rank = lr};
    pdbx_run run;
    pdbx_run_init(&run);
    cJSON *ev = through_text(pdbx_event_step(2, &layer, &total));
    assert_int_equal(pdbx_run_apply(&run, ev, err, sizeof err), 0);
    cJSON_Delete(ev);
    assert_int_equal(run.npoints, 1);
    assert_cell_equal(&run.points[0].layer, &layer);
    assert_cell_equal(&run.points[0].total, &total);
    ev = through_text(pdbx_event_step(2, &layer, &total));   /* a second one replaces */
    assert_int_equal(pdbx_run_apply(&run, ev, err, sizeof err), 0);
    cJSON_Delete(ev);
    assert_int_equal(run.points[0].layer.nranks, 1);
    pdbx_run_free(&run);
}

static void test_comm(void **state)
{
    (void)state;
    char err[200];
    pdbx_comm_cell c = {1, 4096, 2, stats_of(0.5), 8.0, 8.0, "fp32"};
    cJSON *ev = through_text(pdbx_event_comm(3, PDBX_COMM_PP_SENDRECV, &c));
    pdbx_ev_comm d;
    assert_int_equal(pdbx_event_decode_comm(ev, &d, err, sizeof err), 0);
    assert_int_equal(d.point, 3);
    assert_int_equal(d.kind, PDBX_COMM_PP_SENDRECV);
    assert_double_equal(d.cell.bytes, 4096, 0);
    assert_int_equal(d.cell.group_size, 2);
    assert_stats_equal(&d.cell.time, &c.time);
    assert_double_equal(d.cell.busbw, 8.0, 0);
    assert_string_equal(d.cell.dtype, "fp32");
    /* a run recorded before comm events said their dtype: none, no error */
    cJSON_DeleteItemFromObjectCaseSensitive(ev, "dtype");
    assert_int_equal(pdbx_event_decode_comm(ev, &d, err, sizeof err), 0);
    assert_string_equal(d.cell.dtype, "");
    set_field(ev, "kind", "\"ep_alltoall\"");   /* the MoE layers' all-to-all at EP > 1 */
    assert_int_equal(pdbx_event_decode_comm(ev, &d, err, sizeof err), 0);
    assert_int_equal(d.kind, PDBX_COMM_EP_ALLTOALL);
    set_field(ev, "kind", "\"cp_alltoall\"");
    assert_int_equal(pdbx_event_decode_comm(ev, &d, err, sizeof err), -1);
    assert_mentions(err, "comm event (point 3)", "\"kind\"");
    set_field(ev, "kind", "\"tp_allreduce\"");
    set_field(ev, "stats", NULL);
    assert_int_equal(pdbx_event_decode_comm(ev, &d, err, sizeof err), -1);
    assert_mentions(err, "comm event (point 3, tp_allreduce)", "\"stats\"");
    cJSON_Delete(ev);
}

static void test_trace(void **state)
{
    (void)state;
    char err[200];
    /* two ops, then the step's DP all-reduce (op slot PDBX_OP_COUNT, named by its kind) */
    pdbx_trace_event ops[3] = {
        {.op = PDBX_OP_ATTN_Q, .start_us = 12.5, .dur_us = 803.0},
        {.op = PDBX_OP_LM_HEAD, .layer = -1, .start_us = 900, .dur_us = 40},
        {.op = PDBX_OP_COUNT, .comm = PDBX_COMM_DP_ALLREDUCE, .layer = -1, .start_us = 950,
         .dur_us = 7},
    };
    cJSON *ev = through_text(pdbx_event_trace(3, 1, ops, 3));
    cJSON *third = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ev, "ops"), 2);
    assert_string_equal(cJSON_GetArrayItem(third, 0)->valuestring, "dp_allreduce");
    pdbx_ev_trace d;
    assert_int_equal(pdbx_event_decode_trace(ev, &d, err, sizeof err), 0);
    assert_int_equal(d.point, 3);
    assert_int_equal(d.rank, 1);
    assert_int_equal(d.n, 3);
    assert_int_equal(d.ops[1].op, PDBX_OP_LM_HEAD);
    assert_int_equal(d.ops[1].layer, -1);
    assert_int_equal(d.ops[1].point, 3);
    assert_double_equal(d.ops[0].start_us, 12.5, 0);
    assert_double_equal(d.ops[0].dur_us, 803.0, 0);
    assert_int_equal(d.ops[2].op, PDBX_OP_COUNT);
    assert_int_equal(d.ops[2].comm, PDBX_COMM_DP_ALLREDUCE);
    assert_double_equal(d.ops[2].start_us, 950, 0);
    free(d.ops);
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(ev, "ops");
    /* "tp_allreduce" is no step collective (the TP all-reduces are ops): dropped as unknown */
    cJSON *tp = cJSON_CreateArray();
    cJSON_AddItemToArray(tp, cJSON_CreateString("tp_allreduce"));
    for (int i = 0; i < 3; i++)
        cJSON_AddItemToArray(tp, cJSON_CreateNumber(1));
    cJSON_AddItemToArray(arr, tp);
    cJSON_AddItemToArray(arr, cJSON_CreateString("bad"));
    assert_int_equal(pdbx_event_decode_trace(ev, &d, err, sizeof err), -1);
    assert_mentions(err, "trace event (point 3)", "\"ops\"[4]");
    assert_int_equal(d.n, 3);                      /* the good entries are kept */
    free(d.ops);
    set_field(ev, "ops", "3");
    assert_int_equal(pdbx_event_decode_trace(ev, &d, err, sizeof err), -1);
    assert_mentions(err, "trace event (point 3)", "\"ops\"");
    cJSON_Delete(ev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type_names),
        cmocka_unit_test(test_raw_prefix_matches_encoders),
        cmocka_unit_test(test_stamp_and_time),
        cmocka_unit_test(test_run_start),
        cmocka_unit_test(test_launch),
        cmocka_unit_test(test_point_start_and_end),
        cmocka_unit_test(test_op),
        cmocka_unit_test(test_step),
        cmocka_unit_test(test_step_folds_into_point),
        cmocka_unit_test(test_comm),
        cmocka_unit_test(test_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
