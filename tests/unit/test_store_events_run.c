/* test_store_events_run.c: the run's own events of the schema (store/events_run.c): coll,
 * infer, progress, warning and run_end encode, survive the trip through JSON text and decode
 * to what was encoded; a malformed field fails its decoder naming the event and the field. */
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
        cmocka_unit_test(test_coll),
        cmocka_unit_test(test_infer_events),
        cmocka_unit_test(test_progress),
        cmocka_unit_test(test_warning),
        cmocka_unit_test(test_run_end),
        cmocka_unit_test(test_run_end_cause),
    };
    return cmocka_run_group_tests_name("store_events_run", tests, NULL, NULL);
}
