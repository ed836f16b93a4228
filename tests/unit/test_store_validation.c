/* test_store_validation.c: the validations record of a run (store/validation.c): appended
 * lines read back in order with every field, a torn last line skipped and counted, a record
 * missing a required field refused, no file = no validations, and pdbx_store_delete removing
 * the record with the run. */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_store_util.h"

#include <unistd.h>

#include "store/layout.h"
#include "store/store.h"
#include "store/validation.h"

#define ID "2026-11-25__04-00-00_abcdef12"

static pdbx_validation sample(int dp, double measured, double estimated)
{
    pdbx_validation v;
    memset(&v, 0, sizeof v);
    v.time = 1790000000;
    v.tp = 1;
    v.pp = 1;
    v.dp = dp;
    v.mbs = 2;
    v.gbs = 8;
    v.layers = 2;
    v.num_mb = 8 / (2 * dp);
    v.iters = 3;
    snprintf(v.backend, sizeof v.backend, "cpu");
    v.measured_ms = measured;
    v.measured_min_ms = measured - 1;
    v.measured_max_ms = measured + 1;
    v.estimated_ms = estimated;
    v.error_pct = 100 * (estimated - measured) / measured;
    v.est_compute_ms = estimated * 0.9;
    v.est_bubble_ms = 0;
    v.est_tp_comm_ms = 0;
    v.est_pp_comm_ms = 0;
    v.est_dp_comm_ms = estimated * 0.1;
    v.bwd_measured = 1;
    snprintf(v.note, sizeof v.note, "MBS 2 interpolated");
    return v;
}

static void test_append_and_list(void **state)
{
    const char *dir = *state;
    char err[512] = "";
    pdbx_validation *vs = NULL;
    size_t n = 99, skipped = 99;
    /* no record yet: none, not an error */
    assert_int_equal(pdbx_validation_list(dir, ID, &vs, &n, &skipped, err, sizeof err), 0);
    assert_int_equal(n, 0);
    assert_null(vs);
    char runs[1024];
    snprintf(runs, sizeof runs, "%s/runs", dir);
    assert_int_equal(mkdir(runs, 0755), 0);
    pdbx_validation a = sample(2, 100, 104), b = sample(1, 50, NAN);
    a.ep = 2, a.est_ep_comm_ms = 3.5;   /* an EP 2 validation; b's ep 0 reads back as 1 */
    assert_int_equal(pdbx_validation_append(dir, ID, &a, err, sizeof err), 0);
    assert_int_equal(pdbx_validation_append(dir, ID, &b, err, sizeof err), 0);
    assert_int_equal(pdbx_validation_list(dir, ID, &vs, &n, &skipped, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(skipped, 0);
    assert_int_equal(vs[0].dp, 2);
    assert_int_equal(vs[0].num_mb, 2);
    assert_int_equal(vs[0].iters, 3);
    assert_string_equal(vs[0].backend, "cpu");
    assert_double_equal(vs[0].measured_ms, 100, 1e-9);
    assert_double_equal(vs[0].estimated_ms, 104, 1e-9);
    assert_double_equal(vs[0].error_pct, 4, 1e-9);
    assert_double_equal(vs[0].est_dp_comm_ms, 10.4, 1e-9);
    assert_int_equal(vs[0].bwd_measured, 1);
    assert_string_equal(vs[0].note, "MBS 2 interpolated");
    assert_int_equal(vs[0].ep, 2);
    assert_double_equal(vs[0].est_ep_comm_ms, 3.5, 1e-9);
    assert_int_equal(vs[1].ep, 1);
    assert_int_equal(vs[1].dp, 1);
    assert_true(isnan(vs[1].estimated_ms));   /* null in the file */
    free(vs);

    /* a torn last line (a crash in the middle of a write) is skipped and counted */
    char path[1024];
    assert_int_equal(pdbx_layout_path(PDBX_PATH_VALIDATIONS, dir, ID, path, sizeof path), 0);
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fputs("{\"config\":\"1x1x2\",\"tp\":1,\"pp\":1,\"dp\":2,\"mbs\":2,\"gb", f);
    fclose(f);
    assert_int_equal(pdbx_validation_list(dir, ID, &vs, &n, &skipped, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(skipped, 1);
    free(vs);
}

static void test_from_json_requires_fields(void **state)
{
    (void)state;
    pdbx_validation v;
    cJSON *o = cJSON_Parse("{\"tp\":1,\"pp\":1,\"dp\":2,\"mbs\":1,\"gbs\":4,\"layers\":2}");
    assert_int_equal(pdbx_validation_from_json(o, &v), -1);   /* no measured_ms */
    cJSON_AddNumberToObject(o, "measured_ms", 12.5);
    assert_int_equal(pdbx_validation_from_json(o, &v), 0);
    assert_double_equal(v.measured_ms, 12.5, 0);
    assert_true(isnan(v.estimated_ms));
    cJSON_Delete(o);
    char err[256] = "";
    pdbx_validation *vs;
    size_t n;
    assert_int_equal(pdbx_validation_list("/tmp", "../x", &vs, &n, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a valid run id"));
}

static void test_delete_removes_record(void **state)
{
    const char *dir = *state;
    char err[512] = "";
    pdbx_store *st = NULL;
    assert_int_equal(pdbx_store_open(dir, 1, &st, err, sizeof err), 0);
    char run[1024], path[1024];
    assert_int_equal(pdbx_store_run_path(st, ID, run, sizeof run), 0);
    FILE *f = fopen(run, "w");
    assert_non_null(f);
    fclose(f);
    pdbx_validation a = sample(2, 100, 104);
    assert_int_equal(pdbx_validation_append(dir, ID, &a, err, sizeof err), 0);
    assert_int_equal(pdbx_layout_path(PDBX_PATH_VALIDATIONS, dir, ID, path, sizeof path), 0);
    assert_int_equal(access(path, F_OK), 0);
    assert_int_equal(pdbx_store_delete(st, ID, err, sizeof err), 0);
    assert_int_not_equal(access(path, F_OK), 0);
    pdbx_store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_append_and_list, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test(test_from_json_requires_fields),
        cmocka_unit_test_setup_teardown(test_delete_removes_record, test_setup_tmpdir, test_teardown_tmpdir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
