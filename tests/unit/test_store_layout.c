/* test_store_layout.c: the paths of a store directory (store/layout.h), run ids and the
 * run-file names of runs/. */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "store/layout.h"

static void test_paths(void **state)
{
    (void)state;
    char buf[128];
    const struct { pdbx_layout_what what; const char *want; } cases[] = {
        {PDBX_PATH_RUNS, "/s/runs"}, {PDBX_PATH_INDEX, "/s/index.json"}, {PDBX_PATH_LOGS, "/s/logs"},
        {PDBX_PATH_RUN, "/s/runs/r1.pdbx"}, {PDBX_PATH_LOG, "/s/logs/r1.log"},
        {PDBX_PATH_SPEC, "/s/logs/r1.spec.json"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(pdbx_layout_path(cases[i].what, "/s", "r1", buf, sizeof buf), 0);
        assert_string_equal(buf, cases[i].want);
        char *p = pdbx_layout_path_alloc(cases[i].what, "/s", "r1");
        assert_non_null(p);
        assert_string_equal(p, cases[i].want);
        free(p);
    }
    assert_int_equal(pdbx_layout_path(PDBX_PATH_RUN, "/store", "r1", buf, 8), -1);   /* too long */
}

static void test_ids_and_names(void **state)
{
    (void)state;
    assert_true(pdbx_layout_valid_id("2026-11-21__23-59-01_1a2b3c4d"));
    assert_false(pdbx_layout_valid_id(""));
    assert_false(pdbx_layout_valid_id(NULL));
    assert_false(pdbx_layout_valid_id(".hidden"));
    assert_false(pdbx_layout_valid_id("a/b"));
    char id[PDBX_RUN_ID_MAX];
    assert_true(pdbx_layout_run_id_of_name("abc.pdbx", id));
    assert_string_equal(id, "abc");
    assert_false(pdbx_layout_run_id_of_name(".pdbx", id));
    assert_false(pdbx_layout_run_id_of_name("abc.log", id));
    assert_false(pdbx_layout_run_id_of_name(".import-1-2-3", id));
    assert_true(pdbx_layout_is_run_path("rec.pdbx"));
    assert_true(pdbx_layout_is_run_path("./rec"));
    assert_false(pdbx_layout_is_run_path("2026-11"));
    assert_false(pdbx_layout_is_run_path(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_ids_and_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
