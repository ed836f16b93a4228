/* test_store_caps.c: a run file is untrusted (issue 10 item 2). Folding is linear in the
 * points (a plan of "{}" points created each point after a scan of all the others: a 100-byte
 * file took 10 s), and what one file may declare is capped, each cap named in the message. */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/profiledb.h"
#include "test_store_util.h"

#define STATS "{\"count\":3,\"min\":1,\"max\":2,\"mean\":1.5,\"median\":1.5,\"std\":0.5}"

/* Applies one event (JSON text); returns pdbx_run_apply's result, message in err. */
static int apply(pdbx_run *run, const char *json, char *err, size_t errlen)
{
    cJSON *ev = cJSON_Parse(json);
    if (!ev)
        fail_msg("test event does not parse: %.80s", json);
    err[0] = '\0';
    int rc = pdbx_run_apply(run, ev, err, errlen);
    cJSON_Delete(ev);
    return rc;
}

/* A run_start planning n points written as {} (each gets its position as index). */
static cJSON *plan_of_empty_points(size_t n)
{
    size_t cap = 64 + 3 * n;
    char *text = malloc(cap);
    assert_non_null(text);
    size_t off = (size_t)snprintf(text, cap, "{\"type\":\"run_start\",\"id\":\"caps\",\"points\":[");
    for (size_t i = 0; i < n; i++)
        off += (size_t)snprintf(text + off, cap - off, "%s{}", i ? "," : "");
    snprintf(text + off, cap - off, "]}");
    cJSON *ev = cJSON_Parse(text);
    free(text);
    assert_non_null(ev);
    return ev;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds to fold the plan and one point_end per point, in reverse order (best of 3). */
static double fold_seconds(size_t n)
{
    cJSON *plan = plan_of_empty_points(n);
    cJSON *end = cJSON_Parse("{\"type\":\"point_end\",\"point\":0,\"status\":\"ok\"}");
    cJSON *pt = cJSON_GetObjectItem(end, "point");
    double best = 1e9;
    char err[256];
    for (int rep = 0; rep < 3; rep++) {
        pdbx_run run;
        pdbx_run_init(&run);
        double t = now_s();
        assert_int_equal(pdbx_run_apply(&run, plan, err, sizeof err), 0);
        for (size_t i = n; i-- > 0;) {
            cJSON_SetNumberValue(pt, (double)i);
            assert_int_equal(pdbx_run_apply(&run, end, err, sizeof err), 0);
        }
        t = now_s() - t;
        best = t < best ? t : best;
        assert_int_equal(run.npoints, n);
        for (size_t i = 0; i < n; i += n / 7) {
            assert_int_equal(run.points[i].index, (int)i);
            assert_ptr_equal(pdbx_run_point(&run, (int)i), &run.points[i]);
            assert_int_equal(run.points[i].status, PDBX_POINT_OK);
        }
        pdbx_run_free(&run);
    }
    cJSON_Delete(plan);
    cJSON_Delete(end);
    return best;
}

static void test_fold_is_linear(void **state)
{
    (void)state;
    /* 4x the points: about 4x the time when linear, 16x when quadratic (before: 0.4 s for
     * 20000 points and 6.4 s for 80000). A floor on the small time keeps clock granularity out
     * of the ratio. 5000 and 20000 points: a quadratic fold shows as clearly as at 80000, and the
     * test allocates 16x less (a point is 10.8 kB: 80000 of them took 17 s here, 50 s under ASan). */
    double small = fold_seconds(5000), big = fold_seconds(20000);
    double ratio = big / (small > 0.002 ? small : 0.002);
    print_message("fold of 5000 points %.4f s, of 20000 %.4f s: ratio %.1f\n", small, big, ratio);
    if (ratio > 8.0)
        fail_msg("folding 4x the points took %.1fx the time (quadratic?)", ratio);
}

static void test_point_cap(void **state)
{
    (void)state;
    pdbx_run run;
    pdbx_run_init(&run);
    char err[256];
    cJSON *plan = plan_of_empty_points(PDBX_RUN_MAX_POINTS + 1);
    assert_int_equal(pdbx_run_apply(&run, plan, err, sizeof err), -1);
    assert_non_null(strstr(err, "PDBX_RUN_MAX_POINTS"));
    assert_non_null(strstr(err, "\"points\""));
    assert_int_equal(run.npoints, 0);
    cJSON_Delete(plan);
    char ev[256];
    snprintf(ev, sizeof ev, "{\"type\":\"point_start\",\"point\":%d}", PDBX_RUN_MAX_POINTS);
    assert_int_equal(apply(&run, ev, err, sizeof err), -1);
    assert_non_null(strstr(err, "PDBX_RUN_MAX_POINTS"));
    snprintf(ev, sizeof ev, "{\"type\":\"point_start\",\"point\":%d}", PDBX_RUN_MAX_POINTS - 1);
    assert_int_equal(apply(&run, ev, err, sizeof err), 0);
    assert_int_equal(run.npoints, 1);
    assert_int_equal(run.points[0].status, PDBX_POINT_RUNNING);
    assert_ptr_equal(pdbx_run_point(&run, PDBX_RUN_MAX_POINTS - 1), &run.points[0]);
    assert_null(pdbx_run_point(&run, 3));
    pdbx_run_free(&run);
}

static void test_header_caps(void **state)
{
    (void)state;
    pdbx_run run;
    pdbx_run_init(&run);
    char err[256];
    assert_int_equal(apply(&run, "{\"type\":\"run_start\",\"id\":\"x\",\"layers_profiled\":2147483647,"
                           "\"model\":{\"name\":\"m\",\"layers\":22},\"world_size\":8,"
                           "\"points\":[{\"tp\":2,\"mbs\":1}]}", err, sizeof err), -1);
    assert_non_null(strstr(err, "\"layers_profiled\""));
    assert_non_null(strstr(err, "PDBX_RUN_MAX_LAYERS"));
    assert_int_equal(run.layers_profiled, 0);          /* unknown, not 2^31 - 1 */
    assert_int_equal(run.model.layers, 22);            /* the rest of the header folds */
    assert_int_equal(run.world_size, 8);
    assert_int_equal(run.npoints, 1);                  /* and so does the plan */
    assert_int_equal(apply(&run, "{\"type\":\"launch\",\"world_size\":-4}", err, sizeof err), -1);
    assert_non_null(strstr(err, "PDBX_RUN_MAX_RANKS"));
    assert_int_equal(run.world_size, 0);
    pdbx_run_free(&run);
}

static void test_rank_cap(void **state)
{
    (void)state;
    pdbx_run run;
    pdbx_run_init(&run);
    size_t n = PDBX_RUN_MAX_RANKS + 1, cap = 128 + n * (sizeof STATS + 1);
    char *text = malloc(cap), err[256];
    assert_non_null(text);
    size_t off = (size_t)snprintf(text, cap, "{\"type\":\"op\",\"point\":0,\"op\":\"attn_q\","
                                  "\"stats\":" STATS ",\"ranks\":[");
    for (size_t i = 0; i < n; i++)
        off += (size_t)snprintf(text + off, cap - off, "%s" STATS, i ? "," : "");
    snprintf(text + off, cap - off, "]}");
    assert_int_equal(apply(&run, text, err, sizeof err), -1);
    assert_non_null(strstr(err, "PDBX_RUN_MAX_RANKS"));
    assert_true(run.npoints == 0 || !run.points[0].op[PDBX_OP_ATTN_Q].valid);
    free(text);
    pdbx_run_free(&run);
}

static void test_coll_and_message_caps(void **state)
{
    (void)state;
    pdbx_run run;
    pdbx_run_init(&run);
    char err[256];
    cJSON *coll = cJSON_Parse("{\"type\":\"coll\",\"coll\":\"all_reduce\",\"bytes\":8,\"stats\":" STATS "}");
    assert_non_null(coll);
    for (int i = 0; i < PDBX_RUN_MAX_COLLS; i++)
        assert_int_equal(pdbx_run_apply(&run, coll, err, sizeof err), 0);
    assert_int_equal(pdbx_run_apply(&run, coll, err, sizeof err), -1);
    assert_non_null(strstr(err, "PDBX_RUN_MAX_COLLS"));
    assert_int_equal(run.ncoll, PDBX_RUN_MAX_COLLS);
    cJSON_Delete(coll);

    /* the inference rows: distinct keys up to the cap, then refused naming it; a key already
     * held replaces its row even at the cap */
    for (int i = 0; i <= PDBX_RUN_MAX_INFER; i++) {
        char ev[256];
        snprintf(ev, sizeof ev, "{\"type\":\"infer_attn\",\"tp\":1,\"batch\":%d,\"chunk\":0,\"kv\":8,"
                 "\"stats\":" STATS "}", i + 1);
        cJSON *a = cJSON_Parse(ev);
        assert_non_null(a);
        assert_int_equal(pdbx_run_apply(&run, a, err, sizeof err), i < PDBX_RUN_MAX_INFER ? 0 : -1);
        cJSON_Delete(a);
    }
    assert_non_null(strstr(err, "PDBX_RUN_MAX_INFER"));
    assert_int_equal(run.ninfer_attn, PDBX_RUN_MAX_INFER);
    cJSON *again = cJSON_Parse("{\"type\":\"infer_attn\",\"tp\":1,\"batch\":7,\"chunk\":0,\"kv\":8,"
                               "\"stats\":" STATS "}");
    assert_int_equal(pdbx_run_apply(&run, again, err, sizeof err), 0);
    assert_int_equal(run.ninfer_attn, PDBX_RUN_MAX_INFER);
    cJSON_Delete(again);

    size_t len = PDBX_RUN_MAX_MESSAGE + 100;
    char *text = malloc(len + 128);
    assert_non_null(text);
    int off = snprintf(text, 128, "{\"type\":\"point_end\",\"point\":1,\"status\":\"error\",\"message\":\"");
    memset(text + off, 'x', len);
    strcpy(text + off + len, "\"}");
    assert_int_equal(apply(&run, text, err, sizeof err), 0);     /* the status is kept */
    const pdbx_point *p = pdbx_run_point(&run, 1);
    assert_non_null(p);
    assert_int_equal(p->status, PDBX_POINT_ERROR);
    assert_int_equal(strlen(p->message), PDBX_RUN_MAX_MESSAGE);
    assert_int_equal(run.nwarnings, 1);
    assert_non_null(strstr(run.warnings[0], "PDBX_RUN_MAX_MESSAGE"));
    free(text);
    pdbx_run_free(&run);
}

/* store_list.c rebuilds a growing run's points[] itself (exact size, no index): lookups and
 * new points still work. */
static void test_hand_built_points(void **state)
{
    (void)state;
    pdbx_run run;
    pdbx_run_init(&run);
    run.points = calloc(3, sizeof *run.points);
    assert_non_null(run.points);
    for (int i = 0; i < 3; i++) {
        run.points[i].index = 10 - i;
        run.points[i].status = PDBX_POINT_PENDING;
    }
    run.npoints = 3;
    assert_ptr_equal(pdbx_run_point(&run, 9), &run.points[1]);
    assert_null(pdbx_run_point(&run, 0));
    char err[256];
    assert_int_equal(apply(&run, "{\"type\":\"point_end\",\"point\":8,\"status\":\"ok\"}", err, sizeof err), 0);
    assert_int_equal(run.points[2].status, PDBX_POINT_OK);
    assert_int_equal(apply(&run, "{\"type\":\"point_start\",\"point\":4}", err, sizeof err), 0);
    assert_int_equal(run.npoints, 4);
    assert_int_equal(run.points[3].index, 4);
    assert_ptr_equal(pdbx_run_point(&run, 10), &run.points[0]);
    assert_ptr_equal(pdbx_run_point(&run, 4), &run.points[3]);
    pdbx_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fold_is_linear),
        cmocka_unit_test(test_point_cap),
        cmocka_unit_test(test_header_caps),
        cmocka_unit_test(test_rank_cap),
        cmocka_unit_test(test_coll_and_message_caps),
        cmocka_unit_test(test_hand_built_points),
    };
    return cmocka_run_group_tests_name("store_caps", tests, NULL, NULL);
}
