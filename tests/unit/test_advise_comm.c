/* test_advise_comm.c: the advise cost model's communication (engine/advise/advise_comm.c) on
 * the synthetic run of test_advise_fixture.h: the TP all-reduces per layer (from comm events,
 * or from a run recorded before them: the layer's all-reduce op cells), the DP all-reduce scaled
 * from a bucket or interpolated in the collectives sweep, a DP group no cell measured, and the
 * bucket's median. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engine/advise/advise.h"
#include "engine/advise/advise_cells.h"
#include "store/profiledb.h"
#include "tests/unit/test_advise_fixture.h"

static void test_tp_comm_per_layer(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 2, 8);
    pdbx_advise_row r;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 1, 1, 1, &r, err, sizeof err), 0);
    /* 4 layers x 2 all-reduces x (fwd + bwd) x 0.1 ms per micro-batch, 8 micro-batches */
    assert_close(r.tp_msg_bytes, 64 * KIB);
    assert_close(r.tp_allreduce_ms, 0.1);
    assert_close(r.stage_tp_comm_ms, 4 * 2 * 2 * 0.1);
    assert_close(r.tp_comm_ms, 8 * 4 * 2 * 2 * 0.1);
    assert_close(r.comm_ms, r.tp_comm_ms);
    assert_close(r.step_ms, 8 * (stage_t(4, 1, 1, 1, 1.5) + 4 * 2 * 2 * 0.1));
    /* mbs 3 (192 KiB): between the 128 and 256 KiB cells, linear in bytes, noted */
    query(&q, 2, 6);
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 1, 1, 3, &r, err, sizeof err), 0);
    assert_close(r.tp_allreduce_ms, 0.3);
    assert_int_equal(r.estimated_cells, 2);   /* the op cells and the all-reduce */
    pdbx_run_free(&run);
}

static void test_tp_comm_from_op_cells(void **state)
{
    (void)state;
    /* a run recorded before comm events: the layer's all-reduce op cells (0.2 ms per 64 KiB) */
    pdbx_run run;
    next_point = 0;
    run_start(&run, 1, 1e12);
    for (int m = 1; m <= 2; m *= 2)
        point_end(&run, point(&run, 2, 1, 1, m, 1));
    pdbx_advise_query q;
    query(&q, 2, 8);
    pdbx_advise_row r;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 1, 1, 2, &r, err, sizeof err), 0);
    assert_close(r.tp_allreduce_ms, 0.4);
    assert_close(r.stage_tp_comm_ms, 4 * 2 * 2 * 0.4);
    pdbx_run_free(&run);
}

static void test_dp_allreduce_from_bucket_and_sweep(void **state)
{
    (void)state;
    /* stage params of 1x1x1 on one TP rank: per layer 2ha d + 2h kv d + 3hI + 2h
     * = 2*1024*1024 + 2*1024*1024 + 3*1024*4096 + 2048 = 16779264; x 4 layers + embedding
     * 1000*1024 + final norm 1024 + lm_head 1000*1024 = 69166080 params, in fp32 */
    const double dp_bytes = 69166080.0 * 4;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 2, 8);
    pdbx_advise_row r;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 2, 1, &r, err, sizeof err), 0);
    assert_close(r.dp_msg_bytes, dp_bytes);
    /* the sweep's all_reduce stops at 1 MiB: the 4 MiB bucket (10 ms) scaled linearly */
    assert_close(r.dp_comm_ms, 10 * dp_bytes / (4 * MIB));
    assert_non_null(strstr(r.note, "dp 2 all-reduce of"));
    assert_non_null(strstr(r.note, "scaled linearly by bytes from the points' dp_allreduce of 4.0 MiB"));
    assert_close(r.step_ms, 4 * stage_t(4, 1, 1, 1, 1.5) + r.dp_comm_ms);
    pdbx_run_free(&run);

    /* a sweep that covers the size: interpolated between its 128 MiB and 512 MiB entries */
    run_a(&run, 1, 1e12, 1);
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 2, 1, &r, err, sizeof err), 0);
    assert_close(r.dp_comm_ms, 100 + 300 * (dp_bytes - 128 * MIB) / (384 * MIB));
    assert_non_null(strstr(r.note, "interpolated between the collectives sweep's all_reduce of 128 MiB and 512 MiB"));
    pdbx_run_free(&run);
}

/* Neither source covers the size alone (the sweep's all_reduce stops at 1 MiB, the DP bucket
 * is 512 MiB): interpolated between the two, not one scaled linearly across decades. */
static void test_dp_allreduce_between_sources(void **state)
{
    (void)state;
    const double dp_bytes = 69166080.0 * 4;   /* as above: the whole model on one TP rank */
    pdbx_run run;
    next_point = 0;
    run_start(&run, 1, 1e12);
    point_end(&run, point(&run, 1, 1, 1, 1, 1));
    int i = point(&run, 1, 1, 2, 1, 1);
    comm(&run, i, "dp_allreduce", 512 * MIB, 2, 400);
    point_end(&run, i);
    coll(&run, "all_reduce", 1 * MIB, 2, 1);
    pdbx_advise_query q;
    query(&q, 2, 8);
    pdbx_advise_row r;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 2, 1, &r, err, sizeof err), 0);
    assert_close(r.dp_comm_ms, 1 + 399 * (dp_bytes - MIB) / (511 * MIB));
    assert_non_null(strstr(r.note, "dp 2 all-reduce of 264 MiB interpolated between the collectives sweep's "
                                   "all_reduce of 1.0 MiB and the points' dp_allreduce of 512 MiB"));
    pdbx_run_free(&run);
}

static void test_dp_group_not_measured(void **state)
{
    (void)state;
    const double dp_bytes = 69166080.0 * 4;   /* as above: the whole model on one TP rank */
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 4, 8);
    pdbx_advise_row r;
    char err[256];
    /* dp 4: only 2-rank all-reduces measured: the bucket scaled by bytes and by the ring
     * factor 2(n-1)/n, 1.5 for 4 ranks against 1 for 2 */
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 4, 1, &r, err, sizeof err), 0);
    assert_close(r.dp_comm_ms, 10 * dp_bytes / (4 * MIB) * 1.5);
    assert_string_equal(r.note, "dp 4 all-reduce of 264 MiB scaled linearly by bytes from the points' "
                                "dp_allreduce of 4.0 MiB; 2-rank cells x 1.5 (ring 2(n-1)/n)");
    pdbx_run_free(&run);
}

static void test_dp_bucket_median(void **state)
{
    (void)state;
    const double dp_bytes = 69166080.0 * 4;
    pdbx_run run;
    next_point = 0;
    run_start(&run, 1, 1e12);
    /* one 4 MiB bucket per point: 10, 30 (a noisy one) and 12 ms: their median, 12 */
    const double ms[3] = { 10, 30, 12 };
    for (int k = 0, m = 1; k < 3; k++, m *= 2) {
        int i = point(&run, 1, 1, 2, m, 1);
        comm(&run, i, "dp_allreduce", 4 * MIB, 2, ms[k]);
        point_end(&run, i);
    }
    pdbx_advise_query q;
    query(&q, 2, 8);
    pdbx_advise_row r;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 2, 1, &r, err, sizeof err), 0);
    assert_close(r.dp_comm_ms, 12 * dp_bytes / (4 * MIB));
    pdbx_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tp_comm_per_layer),
        cmocka_unit_test(test_tp_comm_from_op_cells),
        cmocka_unit_test(test_dp_allreduce_from_bucket_and_sweep),
        cmocka_unit_test(test_dp_allreduce_between_sources),
        cmocka_unit_test(test_dp_group_not_measured),
        cmocka_unit_test(test_dp_bucket_median),
    };
    return cmocka_run_group_tests_name("advise_comm", tests, NULL, NULL);
}
