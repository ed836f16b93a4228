/* test_store_runtable_scale.c: the run table of a hostile run (issue 10 item 2, the part after
 * loading). A run file may declare 100000 points; before, the table scanned every point once
 * per config and gave every config a row for every point of the run (a run with one config
 * per point asked for npoints^2 rows and failed), and sorted a config's points by insertion
 * (MBS descending: quadratic). Both now sort once; this checks the result's order, and that
 * the distinct-config run builds at all. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <time.h>

#include "store/profiledb.h"
#include "store/runtable.h"

static void hand_built(pdbx_run *run, size_t n)
{
    pdbx_run_init(run);
    run->points = calloc(n, sizeof *run->points);
    assert_non_null(run->points);
    run->npoints = n;
    run->points_cap = n;
    for (size_t i = 0; i < n; i++) {
        run->points[i].index = (int)i;
        run->points[i].status = PDBX_POINT_PENDING;
    }
}

/* 20000 points, each its own config, declared in descending TP: configs come out in plan
 * order, one point each. */
static void test_config_per_point(void **state)
{
    (void)state;
    const size_t n = 20000;
    pdbx_run run;
    hand_built(&run, n);
    for (size_t i = 0; i < n; i++) {
        run.points[i].tp = (int)(n - i);
        run.points[i].pp = run.points[i].dp = run.points[i].mbs = 1;
    }
    pdbx_runtable t;
    assert_int_equal(pdbx_runtable_build(&run, 0, &t), 0);
    assert_int_equal(t.nconfigs, n);
    for (size_t i = 0; i < n; i += 997) {
        assert_int_equal(t.configs[i].tp, (int)(n - i));
        assert_int_equal(t.configs[i].npoints, 1);
        assert_ptr_equal(t.configs[i].points[0].point, &run.points[i]);
    }
    pdbx_runtable_free(&t);
    int cfg[4][PDBX_CFG_DIMS];
    assert_int_equal(pdbx_run_configs(&run, cfg, 4), 4);
    assert_int_equal(cfg[3][0], (int)(n - 3));
    pdbx_run_free(&run);
}

/* One config whose points were declared MBS descending, interleaved with a second config:
 * MBS ascending in the table, equal MBS in plan order, configs in order of first point. */
static void test_mbs_descending(void **state)
{
    (void)state;
    const size_t n = 60000;
    pdbx_run run;
    hand_built(&run, n);
    for (size_t i = 0; i < n; i++) {
        run.points[i].tp = i % 3 == 0 ? 2 : 1;
        run.points[i].pp = run.points[i].dp = 1;
        run.points[i].mbs = (int)((n - i) / 2);       /* pairs of equal MBS */
    }
    pdbx_runtable t;
    assert_int_equal(pdbx_runtable_build(&run, 0, &t), 0);
    assert_int_equal(t.nconfigs, 2);
    assert_int_equal(t.configs[0].tp, 2);             /* point 0 is tp 2 */
    for (size_t c = 0; c < 2; c++)
        for (size_t i = 1; i < t.configs[c].npoints; i++) {
            const pdbx_rt_point *a = &t.configs[c].points[i - 1], *b = &t.configs[c].points[i];
            assert_true(a->mbs < b->mbs || (a->mbs == b->mbs && a->point < b->point));
        }
    assert_int_equal(t.configs[0].npoints + t.configs[1].npoints, n);
    pdbx_runtable_free(&t);
    assert_int_equal(pdbx_runtable_build(&run, 1, &t), 0);   /* only_tp keeps one config */
    assert_int_equal(t.nconfigs, 1);
    assert_int_equal(t.configs[0].tp, 1);
    pdbx_runtable_free(&t);
    pdbx_run_free(&run);
}

static double build_seconds(size_t n)
{
    pdbx_run run;
    hand_built(&run, n);
    for (size_t i = 0; i < n; i++) {
        run.points[i].tp = (int)(i / 2 + 1);          /* n/2 configs ... */
        run.points[i].pp = run.points[i].dp = 1;
        run.points[i].mbs = (int)(n - i);             /* ... each declared MBS descending */
    }
    struct timespec a, b;
    pdbx_runtable t;
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(pdbx_runtable_build(&run, 0, &t), 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    assert_int_equal(t.nconfigs, n / 2);
    pdbx_runtable_free(&t);
    pdbx_run_free(&run);
    return (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
}

/* A complexity check, not a speed goal: a quarter of the largest run a file may declare
 * (PDBX_RUN_MAX_POINTS), configs of two points each declared MBS descending, against a
 * sixteenth. Sorting once grows as n log n (about 4.5x for 4x the points); the per-config scan
 * it replaced grew as n^2 (16x), as clearly at these sizes as at the largest, whose 1 GB of
 * points (10.8 kB each) took 15 s here and 17 s under ASan. The ratio, unlike a time bound,
 * does not move with the machine's load or with the size of a point's cells (PDBX_OP_COUNT). */
static void test_largest_run_builds_fast(void **state)
{
    (void)state;
    const int big = PDBX_RUN_MAX_POINTS / 4, small = PDBX_RUN_MAX_POINTS / 16;
    const double quarter = build_seconds(small);
    const double t = build_seconds(big);
    const double ratio = t / (quarter > 1e-4 ? quarter : 1e-4);
    print_message("run table of %d points: %.3f s, of %d: %.3f s (x%.1f)\n", big, t, small, quarter, ratio);
    if (ratio > 9.0)
        fail_msg("the run table of %d points took %.1fx the time of %d (quadratic?)", big, ratio, small);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_per_point),
        cmocka_unit_test(test_mbs_descending),
        cmocka_unit_test(test_largest_run_builds_fast),
    };
    return cmocka_run_group_tests_name("store_runtable_scale", tests, NULL, NULL);
}
