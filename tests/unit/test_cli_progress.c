/* test_cli_progress.c: the progress line of `pdbx run`/`pdbx attach` (tui/cli/cli_progress.h):
 * it never reaches the terminal's last column, and drops the op first, the percentage last. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tui/cli/cli_progress.h"

static pdbx_point pt = { .index = 3, .tp = 2, .pp = 1, .dp = 1, .mbs = 16 };

static pdbx_progress rich(void)
{
    pdbx_progress p;
    memset(&p, 0, sizeof p);
    p.fraction = 0.379;
    p.percent = 37;
    p.points_done = 3;
    p.points_total = 8;
    p.coll_total = 24;
    p.point = &pt;
    p.op = "tp_allreduce_attn";
    p.elapsed_s = 62;
    p.eta_s = 105;
    return p;
}

static void test_fits_every_width(void **state)
{
    (void)state;
    pdbx_progress p = rich();
    char line[512];
    for (int w = 0; w <= 200; w++) {
        size_t n = pdbx_cli_progress_line(&p, w, line, sizeof line);
        assert_int_equal(n, strlen(line));
        assert_true(w < 2 ? n == 0 : (int)n <= w - 1);
        if (w >= 5)
            assert_non_null(strstr(line, "37%"));     /* the percentage is the last to go */
    }
}

static void test_drops_in_order(void **state)
{
    (void)state;
    pdbx_progress p = rich();
    char line[512];
    pdbx_cli_progress_line(&p, 200, line, sizeof line);
    assert_string_equal(line, "[#########...............] 37%  3/8 points  collectives 0/24  elapsed 1m02s  "
                              "ETA 1m45s  point 3 TP2 PP1 DP1 MBS 16 tp_allreduce_attn");
    /* the op goes first (and the collectives' count with it while points run) */
    pdbx_cli_progress_line(&p, 120, line, sizeof line);
    assert_string_equal(line, "[#########...............] 37%  3/8 points  elapsed 1m02s  ETA 1m45s  "
                              "point 3 TP2 PP1 DP1 MBS 16");
    pdbx_cli_progress_line(&p, 80, line, sizeof line);     /* then the point */
    assert_string_equal(line, "[#########...............] 37%  3/8 points  elapsed 1m02s  ETA 1m45s");
    pdbx_cli_progress_line(&p, 60, line, sizeof line);     /* then the elapsed time */
    assert_string_equal(line, "[#########...............] 37%  3/8 points  ETA 1m45s");
    pdbx_cli_progress_line(&p, 50, line, sizeof line);     /* the bar shrinks */
    assert_string_equal(line, "[#######.............] 37%  3/8 points  ETA 1m45s");
    pdbx_cli_progress_line(&p, 30, line, sizeof line);     /* the words and the bar go */
    assert_string_equal(line, "37%  3/8  ETA 1m45s");
    pdbx_cli_progress_line(&p, 12, line, sizeof line);     /* the ETA goes */
    assert_string_equal(line, "37%  3/8");
    pdbx_cli_progress_line(&p, 4, line, sizeof line);
    assert_string_equal(line, "37%");
}

/* The collectives phase says so; an unknown ETA is "--"; a bar is full only at 100%. */
static void test_collectives_and_unknowns(void **state)
{
    (void)state;
    pdbx_progress p = rich();
    p.point = NULL;
    p.collectives = 1;
    p.points_done = 8;
    p.coll_done = 23;
    p.op = "all_gather";
    p.fraction = 0.9999;
    p.percent = 99;
    p.eta_s = NAN;
    p.elapsed_s = NAN;
    char line[512];
    pdbx_cli_progress_line(&p, 200, line, sizeof line);
    assert_string_equal(line, "[#######################.] 99%  8/8 points  collectives 23/24  elapsed --  "
                              "ETA --  collectives sweep all_gather");
    pdbx_cli_progress_line(&p, 80, line, sizeof line);
    assert_string_equal(line, "[#######################.] 99%  8/8 points  collectives 23/24  ETA --");
    pdbx_cli_progress_line(&p, 50, line, sizeof line);
    assert_string_equal(line, "[#################.] 99%  8/8  coll 23/24  ETA --");
    /* out-of-range values from a caller: no overflow, the bar stays inside its brackets */
    p.fraction = 1e300;
    p.percent = 100;
    pdbx_cli_progress_line(&p, 200, line, sizeof line);
    assert_non_null(strstr(line, "[########################] 100%"));
    p.fraction = -1e300;
    pdbx_cli_progress_line(&p, 200, line, sizeof line);
    assert_non_null(strstr(line, "[........................] 100%"));
    p.fraction = NAN;
    pdbx_cli_progress_line(&p, 200, line, sizeof line);
    assert_non_null(strstr(line, "[........................]"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fits_every_width),
        cmocka_unit_test(test_drops_in_order),
        cmocka_unit_test(test_collectives_and_unknowns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
