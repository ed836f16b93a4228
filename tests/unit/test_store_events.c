/* test_store_events.c: the event schema (store/events.h): every type encodes, survives the
 * trip through JSON text, and decodes to what was encoded; a malformed field of each type
 * fails its decoder with a message naming the event and the field; raw prefixes match what
 * the encoders print; the fold fills pdbx_point.layer/.total from step events. */
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

/* Prints ev, frees it, parses the text back: what a reader of the run file sees. */
static cJSON *through_text(cJSON *ev)
{
    assert_non_null(ev);
    char *text = cJSON_PrintUnformatted(ev);
    cJSON_Delete(ev);
    assert_non_null(text);
    cJSON *back = cJSON_Parse(text);
    free(text);
    assert_non_null(back);
    return back;
}

/* Replaces ev[name] by the JSON value text (NULL: removes it). */
static void set_field(cJSON *ev, const char *name, const char *text)
{
    cJSON_DeleteItemFromObjectCaseSensitive(ev, name);
    if (text) {
        cJSON *v = cJSON_Parse(text);
        assert_non_null(v);
        cJSON_AddItemToObject(ev, name, v);
    }
}

static void assert_mentions(const char *err, const char *a, const char *b)
{
    if (!strstr(err, a) || !strstr(err, b))
        fail_msg("message \"%s\" should name \"%s\" and \"%s\"", err, a, b);
}

static pdbx_stats stats_of(double base)
{
    pdbx_stats s = {5, base, base + 2, base + 1, base + 0.5, 0.25, NAN};
    return s;
}

static void assert_stats_equal(const pdbx_stats *a, const pdbx_stats *b)
{
    assert_int_equal(a->count, b->count);
    assert_double_equal(a->min, b->min, 0);
    assert_double_equal(a->max, b->max, 0);
    assert_double_equal(a->mean, b->mean, 0);
    assert_double_equal(a->median, b->median, 0);
    assert_double_equal(a->std, b->std, 0);
}

static void assert_cell_equal(const pdbx_cell *a, const pdbx_cell *b)
{
    assert_int_equal(a->valid, 1);
    assert_stats_equal(&a->stats, &b->stats);
    assert_int_equal(a->nranks, b->nranks);
    for (int i = 0; i < a->nranks; i++)
        assert_stats_equal(&a->rank[i], &b->rank[i]);
}

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

static void test_run_start(void **state)
{
    (void)state;
    pdbx_ev_run_start h;
    memset(&h, 0, sizeof h);
    snprintf(h.who.id, sizeof h.who.id, "2026-01-01__00-00-00_abcdef01");
    snprintf(h.who.host, sizeof h.who.host, "node1");
    h.who.pid = 4242;
    h.who.world_size = 4;
    h.who.ranks_per_node = 2;
    snprintf(h.backend, sizeof h.backend, "cpu");
    snprintf(h.model.name, sizeof h.model.name, "Tiny");
    h.model.hidden = 64;
    h.model.vocab = 1000;
    h.layers_profiled = 2;
    h.seq_len = 128;
    h.warmup = 1;
    h.steps = 3;
    snprintf(h.dtype, sizeof h.dtype, "fp32");
    cJSON *env = cJSON_CreateObject();
    const char *hosts[] = {"node1", "node1", "node2"};
    const pdbx_ev_rank_place places[] = {
        {"node1", 0, 0, "GPU-0a"}, {"node1", 1, 1, "GPU-1b"}, {"node2", 0, -1, ""},
    };
    pdbx_ev_env e = {hosts, 3, 1, "cpu0", "Open MPI", "mpi", "0.1", "abc", 2, 8, "tp first", "clock",
                     places, 3};
    snprintf(h.who.launcher, sizeof h.who.launcher, "mpirun on 2 hosts");
    snprintf(h.who.command, sizeof h.who.command, "mpirun --host a:2,b:2 -np 3 pdbx-engine");
    assert_int_equal(pdbx_event_env_set_device(env, "AMD EPYC"), 0);
    assert_int_equal(pdbx_event_env_fill(env, &e), 0);
    pdbx_ev_plan_point pts[2] = {{0, 1, 2, 2, 1, 128, 1e9, 0, 1}, {1, 2, 1, 2, 4, 0, 2e9, 1, 2}};
    cJSON *ev = through_text(pdbx_event_run_start(&h, cJSON_CreateObject(), env, pts, 2));
    assert_int_equal(pdbx_event_type_of(ev), PDBX_EV_RUN_START);

    pdbx_ev_run_start d;
    memset(&d, 0, sizeof d);
    char err[200];
    pdbx_event_decode_run_start(ev, &d);
    assert_string_equal(d.who.id, h.who.id);
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

static void test_coll(void **state)
{
    (void)state;
    char err[200];
    pdbx_coll_result r = {"all_gather", 1 << 20, 4, 2, 2, 1, stats_of(2.0), 3.0, 2.25, 0};
    cJSON *ev = through_text(pdbx_event_coll(&r));
    pdbx_coll_result d;
    assert_int_equal(pdbx_event_decode_coll(ev, &d, err, sizeof err), 0);
    assert_int_equal(d.in_place, 0);         /* out of place, said so */
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(ev, "in_place")));
    r.in_place = 1;
    cJSON *inp = through_text(pdbx_event_coll(&r));
    assert_int_equal(pdbx_event_decode_coll(inp, &d, err, sizeof err), 0);
    assert_int_equal(d.in_place, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(inp, "in_place");   /* a run recorded before it */
    assert_int_equal(pdbx_event_decode_coll(inp, &d, err, sizeof err), 0);
    assert_int_equal(d.in_place, 1);
    cJSON_Delete(inp);
    assert_int_equal(pdbx_event_decode_coll(ev, &d, err, sizeof err), 0);
    assert_string_equal(d.coll, "all_gather");
    assert_double_equal(d.bytes, 1 << 20, 0);
    assert_int_equal(d.nranks, 4);
    assert_int_equal(d.ranks_per_node, 2);
    assert_int_equal(d.nodes, 2);            /* its group crossed nodes */
    assert_int_equal(d.spans_nodes, 1);
    assert_stats_equal(&d.time, &r.time);
    assert_double_equal(d.algbw, 3.0, 0);
    assert_double_equal(d.busbw, 2.25, 0);
    set_field(ev, "stats", "[]");
    assert_int_equal(pdbx_event_decode_coll(ev, &d, err, sizeof err), -1);
    assert_mentions(err, "coll event (all_gather)", "\"stats\"");
    set_field(ev, "coll", "\"\"");
    assert_int_equal(pdbx_event_decode_coll(ev, &d, err, sizeof err), -1);
    assert_mentions(err, "coll event", "\"coll\"");
    cJSON_Delete(ev);
}

/* The inference phase's rows (issue 14): encoded, read back, refused with the field named. */
static void test_infer_events(void **state)
{
    (void)state;
    pdbx_infer_tokens t;
    memset(&t, 0, sizeof t);
    t.tp = 2;
    t.tokens = 48;
    t.op[PDBX_OP_MLP_DOWN] = (pdbx_stats){ .count = 5, .min = 1, .max = 3, .mean = 2, .median = 2.5, .std = 0.5,
                                          .ci95 = NAN };
    cJSON *ev = through_text(pdbx_event_infer_tokens(&t));
    assert_int_equal(pdbx_event_type_of(ev), PDBX_EV_INFER_TOKENS);
    pdbx_infer_tokens d;
    char err[256] = "";
    assert_int_equal(pdbx_event_decode_infer_tokens(ev, &d, err, sizeof err), 0);
    assert_int_equal(d.tp, 2);
    assert_int_equal(d.tokens, 48);
    assert_int_equal(d.op[PDBX_OP_MLP_DOWN].count, 5);
    assert_double_equal(d.op[PDBX_OP_MLP_DOWN].median, 2.5, 0);
    assert_int_equal(d.op[PDBX_OP_ATTN_Q].count, 0);         /* not measured: not written */
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ev, "ops"), "attn_q"));
    cJSON_Delete(ev);
    pdbx_infer_attn a = { 1, 4, 0, 128, 8, 2, { .count = 3, .min = 1, .max = 1, .mean = 1, .median = 1, .std = 0,
                                               .ci95 = NAN } };
    ev = through_text(pdbx_event_infer_attn(&a));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(ev, "phase")->valuestring, "decode");
    pdbx_infer_attn b;
    assert_int_equal(pdbx_event_decode_infer_attn(ev, &b, err, sizeof err), 0);
    assert_memory_equal(&b, &a, offsetof(pdbx_infer_attn, time));
    cJSON_Delete(ev);
    ev = cJSON_Parse("{\"type\":\"infer_attn\",\"tp\":1,\"batch\":1,\"kv\":3,\"stats\":{}}");
    assert_int_equal(pdbx_event_decode_infer_attn(ev, &b, err, sizeof err), -1);
    assert_string_equal(err, "infer_attn event: fields tp, batch (>= 1), chunk and kv (>= 0) must be integers, "
                             "got tp 1 batch 1 chunk -1 kv 3");
    cJSON_Delete(ev);
    ev = cJSON_Parse("{\"type\":\"infer_tokens\",\"tp\":1,\"tokens\":8,\"ops\":{\"embed\":3}}");
    assert_int_equal(pdbx_event_decode_infer_tokens(ev, &d, err, sizeof err), -1);
    assert_string_equal(err, "infer_tokens event (tp 1, tokens 8, op embed): must be a stats object");
    cJSON_Delete(ev);
}

static void test_progress(void **state)
{
    (void)state;
    pdbx_ev_progress p = {5, 16, 5, "mlp_up", 12.3, NAN, 3, 12, 0.5, 2.25};
    cJSON *ev = through_text(pdbx_event_progress(&p));
    pdbx_ev_progress d = {NAN, NAN, -1, NULL, NAN, 0, 0, 0, 0, 0};
    pdbx_event_decode_progress(ev, &d);
    assert_double_equal(d.done, 5, 0);
    assert_double_equal(d.total, 16, 0);
    assert_int_equal(d.point, 5);
    assert_string_equal(d.op, "mlp_up");
    assert_double_equal(d.elapsed_s, 12.3, 0);
    assert_true(isnan(d.eta_s));                   /* null: unknown */
    assert_double_equal(d.coll_done, 3, 0);
    assert_double_equal(d.coll_total, 12, 0);
    assert_double_equal(d.infer_done, 0.5, 0);     /* the inference phase's work units */
    assert_double_equal(d.infer_total, 2.25, 0);
    cJSON_Delete(ev);
    p.point = -1;
    p.eta_s = 30;
    ev = through_text(pdbx_event_progress(&p));
    d.point = -1;
    pdbx_event_decode_progress(ev, &d);
    assert_int_equal(d.point, -1);                 /* null: between points */
    assert_double_equal(d.eta_s, 30, 0);
    cJSON_Delete(ev);
}

static void test_warning(void **state)
{
    (void)state;
    char err[200];
    cJSON *ev = through_text(pdbx_event_warning("BLAS threads capped"));
    const char *msg;
    assert_int_equal(pdbx_event_decode_warning(ev, &msg, err, sizeof err), 0);
    assert_string_equal(msg, "BLAS threads capped");
    set_field(ev, "message", "1");
    assert_int_equal(pdbx_event_decode_warning(ev, &msg, err, sizeof err), -1);
    assert_mentions(err, "warning event", "\"message\"");
    cJSON_Delete(ev);
}

static void test_run_end(void **state)
{
    (void)state;
    char err[200];
    cJSON *ev = through_text(pdbx_event_run_end(PDBX_RUN_CANCELLED, "by user", 61.2, NULL));
    pdbx_ev_run_end d;
    assert_int_equal(pdbx_event_decode_run_end(ev, &d, err, sizeof err), 0);
    assert_int_equal(d.status, PDBX_RUN_CANCELLED);
    assert_string_equal(d.reason, "by user");
    assert_double_equal(d.elapsed_s, 61.2, 0);
    assert_null(d.by);
    cJSON_Delete(ev);
    ev = through_text(pdbx_event_run_end(PDBX_RUN_FAILED, "rank died", NAN, pdbx_event_by_supervisor));
    assert_int_equal(pdbx_event_decode_run_end(ev, &d, err, sizeof err), 0);
    assert_string_equal(d.by, "supervisor");
    assert_true(isnan(d.elapsed_s));
    set_field(ev, "status", "\"done\"");
    assert_int_equal(pdbx_event_decode_run_end(ev, &d, err, sizeof err), -1);
    assert_mentions(err, "run_end event", "\"status\"");
    assert_int_equal(d.status, PDBX_RUN_FAILED);
    assert_string_equal(d.reason, "rank died");
    cJSON_Delete(ev);
}

/* Who stopped a run and what became of the point in flight: written only when known, read
 * back by name, unknown names read as not recorded. */
static void test_run_end_cause(void **state)
{
    (void)state;
    char err[200];
    pdbx_ev_run_end e = { .status = PDBX_RUN_CANCELLED, .reason = "cancelled by Ctrl-C",
                          .elapsed_s = NAN, .cause = PDBX_CAUSE_CTRL_C,
                          .in_flight = PDBX_IN_FLIGHT_DROPPED, .in_flight_point = 3 };
    cJSON *ev = through_text(pdbx_event_run_end_ex(&e));
    pdbx_ev_run_end d;
    assert_int_equal(pdbx_event_decode_run_end(ev, &d, err, sizeof err), 0);
    assert_int_equal(d.cause, PDBX_CAUSE_CTRL_C);
    assert_string_equal(cJSON_GetObjectItem(ev, "cause")->valuestring, "ctrl_c");
    assert_int_equal(d.in_flight, PDBX_IN_FLIGHT_DROPPED);
    assert_string_equal(cJSON_GetObjectItem(ev, "in_flight")->valuestring, "dropped");
    assert_int_equal(d.in_flight_point, 3);
    set_field(ev, "cause", "\"gremlins\"");
    set_field(ev, "in_flight", "\"lost\"");
    assert_int_equal(pdbx_event_decode_run_end(ev, &d, err, sizeof err), 0);
    assert_int_equal(d.cause, PDBX_CAUSE_NONE);
    assert_int_equal(d.in_flight, PDBX_IN_FLIGHT_UNKNOWN);
    cJSON_Delete(ev);
    /* the plain encoder writes none of them */
    ev = through_text(pdbx_event_run_end(PDBX_RUN_COMPLETE, "", 1.0, NULL));
    assert_null(cJSON_GetObjectItem(ev, "cause"));
    assert_null(cJSON_GetObjectItem(ev, "in_flight"));
    assert_null(cJSON_GetObjectItem(ev, "in_flight_point"));
    assert_int_equal(pdbx_event_decode_run_end(ev, &d, err, sizeof err), 0);
    assert_int_equal(d.in_flight_point, -1);
    cJSON_Delete(ev);
    for (int c = PDBX_CAUSE_CANCEL; c < PDBX_CAUSE_COUNT; c++)
        assert_int_equal(pdbx_end_cause_from_name(pdbx_end_cause_name((pdbx_end_cause)c)), c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_end_cause),
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
        cmocka_unit_test(test_coll),
        cmocka_unit_test(test_progress),
        cmocka_unit_test(test_infer_events),
        cmocka_unit_test(test_warning),
        cmocka_unit_test(test_run_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
