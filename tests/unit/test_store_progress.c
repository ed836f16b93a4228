/* test_store_progress.c: the progress model (store/progress.h) over hand-made event sequences,
 * folded the way `pdbx run`/`pdbx attach` and the explorer's monitor fold a run file. */
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

#include "store/profiledb.h"
#include "store/progress.h"
#include "test_store_util.h"

#define T0 1800000000.0   /* run_start's unix time */

/* Folds one event given as JSON text (printf format), as a run file would hold it. */
static void ev(pdbx_run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ev(pdbx_run *run, const char *fmt, ...)
{
    char text[4096], err[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    cJSON *e = cJSON_Parse(text);
    assert_non_null(e);
    pdbx_run_apply(run, e, err, sizeof err);
    cJSON_Delete(e);
}

/* run_start at T0 with one point per entry of mbs[], TP1/PP1/DP1, one layer profiled. */
static void start(pdbx_run *run, const int *mbs, int n)
{
    char pts[2048];
    size_t k = 0;
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(pts + k, sizeof pts - k, "%s{\"index\":%d,\"tp\":1,\"pp\":1,\"dp\":1,\"mbs\":%d}",
                              i ? "," : "", i, mbs[i]);
    pdbx_run_init(run);
    ev(run, "{\"type\":\"run_start\",\"t\":%.3f,\"id\":\"r\",\"layers_profiled\":1,\"points\":[%s]}", T0, pts);
}

static void point(pdbx_run *run, int i, double t_start, double t_end, const char *status)
{
    ev(run, "{\"type\":\"point_start\",\"t\":%.3f,\"point\":%d}", T0 + t_start, i);
    ev(run, "{\"type\":\"point_end\",\"t\":%.3f,\"point\":%d,\"status\":\"%s\"}", T0 + t_end, i, status);
}

static void coll(pdbx_run *run, double t)
{
    ev(run, "{\"type\":\"coll\",\"t\":%.3f,\"coll\":\"all_reduce\",\"bytes\":4096,\"nranks\":2,"
        "\"stats\":{\"count\":3,\"min\":1,\"max\":1,\"mean\":1,\"median\":1,\"std\":0}}", T0 + t);
}

static void beat(pdbx_run *run, double t, double done, double total, double coll_done, double coll_total)
{
    ev(run, "{\"type\":\"progress\",\"t\":%.3f,\"done\":%g,\"total\":%g,\"point\":null,\"op\":\"all_reduce\","
        "\"elapsed_s\":%g,\"eta_s\":null,\"coll_done\":%g,\"coll_total\":%g}", T0 + t, done, total, t,
        coll_done, coll_total);
}

/* The collectives sweep is work: once every point has ended the run is not done, the bar is
 * not full and the ETA is not 0 while collectives remain; 100% only with run_end. */
static void test_collectives_counted(void **state)
{
    (void)state;
    pdbx_run run;
    const int mbs[] = { 1, 2 };
    start(&run, mbs, 2);
    beat(&run, 0.5, 0, 2, 0, 32);
    point(&run, 0, 0, 1, "ok");
    point(&run, 1, 1, 3, "ok");
    pdbx_progress p;
    pdbx_progress_of(&run, T0 + 3, &p);
    double cw = pdbx_progress_coll_work(1);
    /* embed, final_norm, lm_head + 36 per layer: a unit of op work per op pdbx knows (whether
     * or not a given model has it, e.g. attn_qk_norm, MLA's and the MoE ops); the loss and the
     * optimizer, around the model's forward, are not among them */
    assert_int_equal(PDBX_OP_COUNT, 41);
    assert_double_equal(cw, 1.0 / 39, 1e-12);
    assert_int_equal(p.points_done, 2);
    assert_int_equal(p.coll_total, 32);
    assert_int_equal(p.coll_done, 0);
    assert_true(p.collectives);
    assert_double_equal(p.work_total, 3 + 32 * cw, 1e-12);
    assert_double_equal(p.fraction, 3 / (3 + 32 * cw), 1e-12);
    assert_int_equal(p.percent, 78);               /* 3 / (3 + 32/39) */
    assert_true(p.eta_s > 0);                      /* 32/39 units at 1 unit/s */
    assert_double_equal(p.eta_s, 32.0 / 39, 1e-9);
    for (int i = 0; i < 31; i++)
        coll(&run, 3 + 0.1 * (i + 1));
    pdbx_progress_of(&run, T0 + 6.2, &p);
    assert_int_equal(p.coll_done, 31);
    assert_true(p.fraction < 1);
    assert_int_equal(p.percent, 99);               /* (3 + 31/39) / (3 + 32/39), floored */
    coll(&run, 6.3);
    pdbx_progress_of(&run, T0 + 6.3, &p);
    assert_double_equal(p.fraction, 1, 0);
    assert_int_equal(p.percent, 99);              /* everything measured, no run_end yet */
    assert_false(p.ended);
    ev(&run, "{\"type\":\"run_end\",\"t\":%.3f,\"status\":\"complete\"}", T0 + 6.4);
    pdbx_progress_of(&run, T0 + 100, &p);
    assert_int_equal(p.percent, 100);
    assert_true(p.ended);
    assert_double_equal(p.eta_s, 0, 0);
    assert_double_equal(p.elapsed_s, 6.4, 1e-6);   /* to the last event, not to `now` */
    pdbx_run_free(&run);
}

/* The inference phase is work too (issue 14): the heartbeat's infer_total counts, each
 * infer_tokens row weighs one collectives measurement per op it timed, an infer_attn row one;
 * while rows remain the monitor does not say "collectives", the bar is not full, the ETA not 0. */
static void test_inference_counted(void **state)
{
    (void)state;
    pdbx_run run;
    const int mbs[] = { 1 };
    start(&run, mbs, 1);
    const double cw = pdbx_progress_coll_work(1);
    ev(&run, "{\"type\":\"progress\",\"t\":%.3f,\"done\":0,\"total\":1,\"point\":null,\"op\":\"\","
        "\"elapsed_s\":0.5,\"eta_s\":null,\"coll_done\":0,\"coll_total\":4,\"infer_done\":0,"
        "\"infer_total\":%.17g}", T0 + 0.5, 5 * cw);
    point(&run, 0, 0, 1, "ok");
    pdbx_progress p;
    pdbx_progress_of(&run, T0 + 1, &p);
    assert_double_equal(p.infer_total, 5 * cw, 1e-12);
    assert_double_equal(p.work_total, 1 + 9 * cw, 1e-12);   /* the point, 5 inference, 4 colls */
    assert_false(p.collectives);                           /* the inference phase runs first */
    assert_true(p.eta_s > 0);
    const char *st = "{\"count\":3,\"min\":1,\"max\":1,\"mean\":1,\"median\":1,\"std\":0}";
    ev(&run, "{\"type\":\"infer_tokens\",\"t\":%.3f,\"tp\":1,\"tokens\":16,\"ops\":{\"embed\":%s,"
        "\"input_norm\":%s,\"lm_head\":%s}}", T0 + 1.5, st, st, st);
    ev(&run, "{\"type\":\"infer_attn\",\"t\":%.3f,\"tp\":1,\"batch\":1,\"chunk\":16,\"kv\":0,"
        "\"stats\":%s}", T0 + 1.6, st);
    pdbx_progress_of(&run, T0 + 1.6, &p);
    assert_double_equal(p.infer_done, 4 * cw, 1e-12);
    assert_true(p.fraction < 1 && !p.collectives);
    ev(&run, "{\"type\":\"infer_attn\",\"t\":%.3f,\"tp\":1,\"batch\":2,\"chunk\":0,\"kv\":64,"
        "\"stats\":%s}", T0 + 1.7, st);
    pdbx_progress_of(&run, T0 + 1.7, &p);
    assert_double_equal(p.infer_done, 5 * cw, 1e-12);
    assert_true(p.collectives);                            /* now the collectives sweep */
    assert_int_equal(run.ninfer_tokens, 1);
    assert_int_equal(run.ninfer_attn, 2);
    assert_int_equal(run.infer_attn[1].batch, 2);
    pdbx_run_free(&run);
}

/* Without run_end the percentage stops at 99 even when every planned point ended and no
 * collectives were announced; a cancelled run keeps its fraction and has no ETA. */
static void test_not_100_before_end(void **state)
{
    (void)state;
    pdbx_run run;
    const int mbs[] = { 1, 1, 1 };
    start(&run, mbs, 3);
    pdbx_progress p;
    pdbx_progress_of(&run, T0, &p);
    assert_int_equal(p.percent, 0);
    assert_true(isnan(p.eta_s));                    /* "--": nothing measured yet */
    for (int i = 0; i < 3; i++)
        point(&run, i, i, i + 1, "ok");
    pdbx_progress_of(&run, T0 + 3, &p);
    assert_int_equal(p.percent, 99);
    assert_false(p.collectives);                    /* none announced: no collectives sweep */
    ev(&run, "{\"type\":\"run_end\",\"t\":%.3f,\"status\":\"cancelled\",\"reason\":\"x\"}", T0 + 3.5);
    pdbx_progress_of(&run, T0 + 4, &p);
    assert_true(p.ended);
    assert_true(isnan(p.eta_s));
    pdbx_run_free(&run);

    /* skipped and predicted-OOM points are done (nothing left of them) but cost no time */
    const int mbs4[] = { 1, 1, 1, 1 };
    start(&run, mbs4, 4);
    point(&run, 0, 0, 2, "ok");
    ev(&run, "{\"type\":\"point_end\",\"t\":%.3f,\"point\":1,\"status\":\"predicted_oom\"}", T0 + 2);
    ev(&run, "{\"type\":\"point_end\",\"t\":%.3f,\"point\":2,\"status\":\"skipped\"}", T0 + 2);
    ev(&run, "{\"type\":\"point_end\",\"t\":%.3f,\"point\":2,\"status\":\"skipped\"}", T0 + 2);  /* twice */
    pdbx_progress_of(&run, T0 + 2, &p);
    assert_int_equal(p.points_done, 3);
    assert_int_equal(p.percent, 75);
    assert_double_equal(p.eta_s, 2.0, 1e-9);        /* one unit left at 0.5 unit/s */
    pdbx_run_free(&run);
}

/* Points of equal work whose durations alternate 1 s and 4 s: the ETA, sampled every 0.5 s,
 * (a measured rate over the whole run, smoothed; a long point holds it rather than letting it
 * run down and jump back) counts down and, once a third of the points is measured, never rises
 * by more than 1.5 s; one from the last point's duration alone would swing by 3 s x the points
 * left at every point. */
static void test_eta_monotone_on_uneven_points(void **state)
{
    (void)state;
    enum { N = 24 };
    int mbs[N];
    for (int i = 0; i < N; i++)
        mbs[i] = 2;
    pdbx_run run;
    start(&run, mbs, N);
    double t = 0, prev = NAN, rise_max = 0;
    int samples = 0;
    for (int i = 0; i < N; i++) {
        double d = i % 2 ? 4 : 1;
        ev(&run, "{\"type\":\"point_start\",\"t\":%.3f,\"point\":%d}", T0 + t, i);
        for (double s = 0.5; s < d; s += 0.5) {
            pdbx_progress p;
            pdbx_progress_of(&run, T0 + t + s, &p);
            if (i >= 8) {
                assert_false(isnan(p.eta_s));
                if (!isnan(prev) && p.eta_s - prev > rise_max)
                    rise_max = p.eta_s - prev;
                samples++;
            }
            prev = p.eta_s;
        }
        t += d;
        ev(&run, "{\"type\":\"point_end\",\"t\":%.3f,\"point\":%d,\"status\":\"ok\"}", T0 + t, i);
        pdbx_progress p;
        pdbx_progress_of(&run, T0 + t, &p);
        if (i >= 8 && !isnan(prev) && p.eta_s - prev > rise_max)
            rise_max = p.eta_s - prev;
        prev = p.eta_s;
        /* the true time left is 2.5 s a point: the estimate stays within a third of it */
        int left = N - 1 - i;
        if (i >= 7 && left > 0)
            assert_true(fabs(p.eta_s - 2.5 * left) <= 2.5 * left / 3 + 1);
    }
    assert_true(samples > 30);
    assert_true(rise_max <= 1.5);
    pdbx_progress p;
    pdbx_progress_of(&run, T0 + t, &p);
    assert_int_equal(p.percent, 99);
    pdbx_run_free(&run);
}

/* The CLI and the monitor fold the same file in different chunks (each scans from its own
 * offset at its own pace) and ask at the same time: the same numbers. The percentage is the
 * floor: 3 of 8 units is 37%, never 38%. */
static void test_same_numbers_for_both_callers(void **state)
{
    (void)state;
    const int mbs[] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    pdbx_run a, b;
    start(&a, mbs, 8);
    start(&b, mbs, 8);
    for (int i = 0; i < 3; i++) {
        point(&a, i, i * 2, i * 2 + 2, "ok");
        beat(&a, i * 2 + 1.5, i + 1, 8, 0, 0);
    }
    /* b: the same events, folded in another order of scans (all at once) */
    for (int i = 0; i < 3; i++) {
        point(&b, i, i * 2, i * 2 + 2, "ok");
        beat(&b, i * 2 + 1.5, i + 1, 8, 0, 0);
    }
    pdbx_progress pa, pb;
    pdbx_progress_of(&a, T0 + 7, &pa);
    pdbx_progress_of(&b, T0 + 7, &pb);
    assert_int_equal(pa.percent, 37);               /* 3/8 = 37.5 */
    assert_int_equal(pa.percent, pb.percent);
    assert_double_equal(pa.eta_s, pb.eta_s, 0);
    assert_double_equal(pa.fraction, pb.fraction, 0);
    assert_double_equal(pa.elapsed_s, 7, 1e-6);
    pdbx_run_free(&a);
    pdbx_run_free(&b);
}

/* Hostile values from a run file: every output finite and in range (or NaN where the contract
 * says unknown); run under UBSan (float-cast-overflow) in build-san. */
static void test_hostile_values(void **state)
{
    (void)state;
    static const char *const nums[] = { "1e999", "-1e999", "1e300", "-1e300", "-5", "0", "2147483648",
                                        "1e-300" };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        for (size_t j = 0; j < sizeof nums / sizeof nums[0]; j++) {
            pdbx_run run;
            pdbx_run_init(&run);      /* no plan: the heartbeat's counts are all there is */
            ev(&run, "{\"type\":\"run_start\",\"t\":%s,\"id\":\"h\",\"layers_profiled\":1}", nums[j]);
            ev(&run, "{\"type\":\"progress\",\"t\":%s,\"done\":%s,\"total\":%s,\"point\":%s,\"op\":\"x\","
               "\"elapsed_s\":%s,\"eta_s\":%s,\"coll_done\":%s,\"coll_total\":%s}", nums[j], nums[i],
               nums[j], nums[i], nums[i], nums[j], nums[i], nums[i]);
            ev(&run, "{\"type\":\"coll\",\"t\":%s,\"coll\":\"all_reduce\",\"bytes\":%s,\"nranks\":2,"
               "\"stats\":{\"count\":3,\"min\":1,\"max\":1,\"mean\":1,\"median\":1,\"std\":0}}", nums[i], nums[j]);
            for (int k = 0; k < 3; k++) {
                double now = k == 0 ? T0 : k == 1 ? 1e300 : -1e300;
                pdbx_progress p;
                pdbx_progress_of(&run, now, &p);
                assert_true(p.percent >= 0 && p.percent <= 99);
                assert_true(isnan(p.fraction) || (p.fraction >= 0 && p.fraction <= 1));
                assert_true(isnan(p.eta_s) || (p.eta_s >= 0 && p.eta_s < 1e9));
                assert_true(isnan(p.elapsed_s) || (p.elapsed_s >= 0 && p.elapsed_s < 1e9));
                assert_true(p.points_done <= p.points_total);
                assert_true(p.coll_done <= p.coll_total);
            }
            pdbx_run_free(&run);
        }
    /* done > total and a plan with hostile MBS */
    pdbx_run run;
    const int mbs[] = { -7, 0, 2147483647 };
    start(&run, mbs, 3);
    beat(&run, 1, 50, 3, 9, 1e300);
    point(&run, 0, 0, 1, "ok");
    pdbx_progress p;
    pdbx_progress_of(&run, T0 + 2, &p);
    assert_true(p.fraction > 0 && p.fraction < 1e-6);
    assert_int_equal(p.coll_total, 0);              /* 1e300: not a count */
    assert_true(isnan(p.eta_s));                    /* 2^31 units at 1 a second: no estimate */
    pdbx_run_free(&run);
}

/* A point's work is MBS / TP: a TP2 point costs about half its TP1 twin (the quick preset on a
 * CPU: 9.6 s against 18.8 s at MBS 8), so one TP1 and one TP2 point of MBS 2 are 2 + 1 units. */
static void test_tp_shares_work(void **state)
{
    (void)state;
    pdbx_run run;
    pdbx_run_init(&run);
    ev(&run, "{\"type\":\"run_start\",\"t\":%.3f,\"id\":\"r\",\"layers_profiled\":1,\"points\":["
       "{\"index\":0,\"tp\":1,\"pp\":1,\"dp\":2,\"mbs\":2},{\"index\":1,\"tp\":2,\"pp\":1,\"dp\":1,\"mbs\":2}]}", T0);
    point(&run, 0, 0, 4, "ok");
    pdbx_progress p;
    pdbx_progress_of(&run, T0 + 4, &p);
    assert_double_equal(p.work_total, 3, 0);
    assert_int_equal(p.percent, 66);
    assert_double_equal(p.eta_s, 2.0, 1e-9);         /* 1 unit at 0.5 unit/s */
    assert_double_equal(pdbx_progress_work(8, 0), 8, 0);
    assert_double_equal(pdbx_progress_work(-3, 4), 0.25, 0);
    pdbx_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collectives_counted),
        cmocka_unit_test(test_inference_counted),
        cmocka_unit_test(test_not_100_before_end),
        cmocka_unit_test(test_eta_monotone_on_uneven_points),
        cmocka_unit_test(test_same_numbers_for_both_callers),
        cmocka_unit_test(test_hostile_values),
        cmocka_unit_test(test_tp_shares_work),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
