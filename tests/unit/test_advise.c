/* test_advise.c: the advise cost model (engine/advise/advise.h, docs/advise.md) pinned on
 * hand-computed cases over a synthetic run folded from real events (pdbx_run_apply): the 1F1B
 * step and bubble for PP 2 and 4, the PP send/recv rule (the TP and DP all-reduces: test_advise_comm.c),
 * the x3 rule without
 * bwd cells, MBS interpolation and extrapolation with their notes, the refusal of a TP degree
 * the run did not sweep, the order and the Pareto front.
 *
 * Op cells are generated per part (store/ops.h iterated through pdbx_adv_op_part, so a new op
 * changes the counts, not the test): every compute op of a part has the median
 *   fwd(mbs) = scale(part) x mbs^2   (first 0.5, layer 1.0, last 2.0; the mean is 10% higher
 *                                     so that a test of the median fails on the mean)
 *   bwd(mbs) = 1.5 x fwd(mbs)        (runs with backward cells)
 * so that interpolation in MBS (linear) differs from the cells' own curve. */
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

static void test_pp2_bubble_and_p2p(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 2, 8);
    pdbx_advise_row r;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 2, 1, 1, &r, err, sizeof err), 0);
    /* 4 layers / PP 2 = 2 per stage; the last stage (final_norm, lm_head: 2.0 per op) is
     * slower than the first (embed: 0.5) */
    double t = stage_t(2, 0, 1, 1, 1.5);
    assert_int_equal(r.num_mb, 8);
    assert_int_equal(r.slowest_stage, 1);
    assert_int_equal(r.bwd_measured, 1);
    assert_close(r.stage_fwd_ms + r.stage_bwd_ms, t);
    /* 1F1B: the slowest stage's num_mb micro-batches, plus one of the other stage (the fill and
     * drain), not (pp - 1) x t */
    double t0 = stage_t(2, 1, 0, 1, 1.5);
    assert_true(t0 < t);
    assert_close(r.bubble_ms, t0);
    assert_close(r.compute_ms, 8 * t);                      /* num_mb x t */
    /* the sweep covers 64 KiB (0.25 ms; the point's own cell says 0.3: the sweep comes first) */
    assert_close(r.p2p_ms, 0.25);
    assert_close(r.pp_comm_ms, 2 * (8 + 2 - 2) * 0.25);     /* 2 (num_mb + pp - 2) p2p */
    assert_close(r.step_ms, 8 * t + t0 + 2 * (8 + 2 - 2) * 0.25);
    assert_close(r.step_ms, r.compute_ms + r.comm_ms + r.bubble_ms);
    assert_close(r.pp_msg_bytes, 64 * KIB);
    assert_int_equal(r.estimated_cells, 0);
    assert_string_equal(r.note, "");
    /* mbs 2: 128 KiB, the sweep's 0.4 ms */
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 2, 1, 2, &r, err, sizeof err), 0);
    assert_close(r.p2p_ms, 0.4);
    assert_close(r.pp_comm_ms, 2 * (4 + 2 - 2) * 0.4);
    /* mbs 4: 256 KiB, beyond both: the nearest measured size (the sweep's 128 KiB, not the
     * points' 64 KiB) scaled by bytes, noted */
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 2, 1, 4, &r, err, sizeof err), 0);
    assert_close(r.p2p_ms, 0.4 * 2);
    assert_string_equal(r.note, "pp send/recv of 256 KiB scaled linearly by bytes from the collectives "
                                "sweep's send_recv of 128 KiB");
    pdbx_run_free(&run);
}

static void test_pp4_bubble(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 4, 8);
    pdbx_advise_row r;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 4, 1, 1, &r, err, sizeof err), 0);
    double t = stage_t(1, 0, 1, 1, 1.5);
    assert_int_equal(r.slowest_stage, 3);
    double others = stage_t(1, 1, 0, 1, 1.5) + 2 * stage_t(1, 0, 0, 1, 1.5);
    assert_close(r.bubble_ms, others);
    assert_close(r.pp_comm_ms, 2 * (8 + 4 - 2) * 0.25);
    assert_close(r.step_ms, 8 * t + others + 2 * (8 + 4 - 2) * 0.25);
    /* PP 1 has no bubble and no send/recv */
    query(&q, 1, 8);
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 1, 1, &r, err, sizeof err), 0);
    assert_close(r.bubble_ms, 0);
    assert_close(r.comm_ms, 0);
    assert_close(r.step_ms, 8 * stage_t(4, 1, 1, 1, 1.5));
    pdbx_run_free(&run);
}

static void test_x3_rule_without_bwd(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 0, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 2, 8);
    pdbx_advise_row r;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 2, 1, 1, &r, err, sizeof err), 0);
    assert_int_equal(r.bwd_measured, 0);
    assert_close(r.stage_bwd_ms, 2 * r.stage_fwd_ms);
    assert_close(r.stage_fwd_ms + r.stage_bwd_ms, stage_t(2, 0, 1, 1, 2.0));
    pdbx_advise_result res;
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), 0);
    int found = 0;
    for (size_t i = 0; i < res.nnotes; i++)
        found |= strcmp(res.notes[i], "tp 1: bwd not measured: backward = 2 x forward (FASOP's x3 rule)") == 0;
    assert_true(found);
    pdbx_advise_free(&res);
    pdbx_run_free(&run);
}

static void test_mbs_interpolation_and_extrapolation(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 1, 24);
    pdbx_advise_row r;
    char err[256];
    /* mbs 3: between mbs 2 (4 x scale) and 4 (16 x scale): 10 x scale, not 9 (the cells' curve) */
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 1, 3, &r, err, sizeof err), 0);
    double f3 = 4 * ops_in(PDBX_ADV_LAYER) * 1.0 * 10 + ops_in(PDBX_ADV_FIRST) * 0.5 * 10
                + ops_in(PDBX_ADV_LAST) * 2.0 * 10;
    assert_close(r.stage_fwd_ms, f3);
    assert_close(r.stage_bwd_ms, 1.5 * f3);
    assert_int_equal(r.estimated_cells, 1);
    assert_string_equal(r.note, "tp 1 mbs 3: op cells interpolated between mbs 2 and 4");
    /* mbs 8: on the line through mbs 2 and 4: 16 + 6 x 4 = 40 x scale */
    query(&q, 1, 8);
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 1, 8, &r, err, sizeof err), 0);
    double f8 = 4 * ops_in(PDBX_ADV_LAYER) * 1.0 * 40 + ops_in(PDBX_ADV_FIRST) * 0.5 * 40
                + ops_in(PDBX_ADV_LAST) * 2.0 * 40;
    assert_close(r.stage_fwd_ms, f8);
    assert_string_equal(r.note, "tp 1 mbs 8: op cells extrapolated from mbs 2 and 4");
    /* the same notes in pdbx_advise's list, once each */
    query(&q, 1, 24);
    q.mbs_max = 24;
    pdbx_advise_result res;
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), 0);
    int interp = 0, extrap = 0;
    for (size_t i = 0; i < res.nnotes; i++) {
        interp += strcmp(res.notes[i], "tp 1 mbs 3: op cells interpolated between mbs 2 and 4") == 0;
        extrap += strcmp(res.notes[i], "tp 1 mbs 24: op cells extrapolated from mbs 2 and 4") == 0;
    }
    assert_int_equal(interp, 1);
    assert_int_equal(extrap, 1);
    pdbx_advise_free(&res);
    pdbx_run_free(&run);
}

/* Two noisy samples that tilt the line down (a 4-row cell measured below its 2-row one) do
 * not take a larger MBS to 0, nor a smaller one below 0: the nearest measured value in
 * proportion to the MBS there; between them, the line. */
static void test_extrapolation_never_vanishes(void **state)
{
    (void)state;
    pdbx_adv_sample s[2] = { { .mbs = 2 }, { .mbs = 4 } };
    s[0].fwd[PDBX_ADV_A2A] = 3.0, s[1].fwd[PDBX_ADV_A2A] = 1.0;   /* the line: 0 at MBS 5 */
    s[0].bwd[PDBX_ADV_A2A] = 1.0, s[1].bwd[PDBX_ADV_A2A] = 3.0;   /* the line: 0 at MBS 1 */
    const pdbx_adv_tp_cells c = { .tp = 2, .ep = 2, .n = 2, .s = s };
    pdbx_adv_sample out;
    char note[PDBX_ADVISE_NOTE_MAX];
    assert_int_equal(pdbx_adv_cells_at(&c, 8, &out, note, sizeof note), PDBX_ADV_EXTRAPOLATED);
    assert_close(out.fwd[PDBX_ADV_A2A], 1.0 * 8 / 4);   /* not max(3 - 6, 0) = 0 */
    assert_close(out.bwd[PDBX_ADV_A2A], 3.0 + 2.0 * 4 / 2);   /* a rising line as it is */
    assert_int_equal(pdbx_adv_cells_at(&c, 1, &out, note, sizeof note), PDBX_ADV_EXTRAPOLATED);
    assert_close(out.fwd[PDBX_ADV_A2A], 3.0 + 2.0 / 2);   /* falling towards larger: 4 at MBS 1 */
    assert_close(out.bwd[PDBX_ADV_A2A], 1.0 * 1 / 2);    /* not the line's 0 */
    assert_int_equal(pdbx_adv_cells_at(&c, 3, &out, note, sizeof note), PDBX_ADV_INTERPOLATED);
    assert_close(out.fwd[PDBX_ADV_A2A], 2.0);
    assert_string_equal(note, "tp 2 ep 2 mbs 3: op cells interpolated between mbs 2 and 4");
}

static void test_unswept_tp_refused(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 4, 8);
    pdbx_advise_result res;
    char err[256];
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), 0);
    /* tp 4: pp 1, dp 1, mbs 1, 2, 4, 8 (mbs_max: twice the largest measured, 4): 4 left out */
    int found = 0;
    for (size_t i = 0; i < res.nnotes; i++)
        found |= strcmp(res.notes[i], "tp 4 not measured: 4 configurations left out") == 0;
    assert_true(found);
    for (size_t i = 0; i < res.nrows; i++)
        assert_int_not_equal(res.rows[i].tp, 4);
    pdbx_advise_free(&res);
    /* one configuration: refused with the reason, never another TP's cells */
    pdbx_advise_row r;
    assert_int_equal(pdbx_advise_one(&run, &q, 4, 1, 1, 1, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "tp 4 not measured"));
    pdbx_run_free(&run);
}

static void test_order_and_pareto(void **state)
{
    (void)state;
    pdbx_run run;
    /* 1 GB per GPU: the 1x1x2 rows (the whole model: 1.1 GB of weights, grads and optimizer)
     * do not fit; 2x1x1 and 1x2x1 (half of it, 0.55 GB, + activations) do */
    run_a(&run, 1, 1e9, 1);
    pdbx_advise_query q;
    query(&q, 2, 8);
    pdbx_advise_result res;
    char err[256];
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), 0);
    assert_true(res.nrows > 4);
    int fit = 0, nofit = 0, front = 0;
    for (size_t i = 0; i < res.nrows; i++) {
        const pdbx_advise_row *a = &res.rows[i];
        if (i > 0)
            assert_true(res.rows[i - 1].step_ms <= a->step_ms);
        assert_int_equal(a->fits, a->mem_gb * 1e9 <= 1e9);
        assert_int_equal(a->fits, a->dp == 1);
        fit += a->fits, nofit += !a->fits, front += a->pareto;
        if (!a->fits) {
            assert_int_equal(a->pareto, 0);
            continue;
        }
        /* on the front exactly when no other fitting row is as fast and as small, one better */
        int dominated = 0;
        for (size_t j = 0; j < res.nrows; j++) {
            const pdbx_advise_row *b = &res.rows[j];
            if (j != i && b->fits && b->step_ms <= a->step_ms && b->mem_gb <= a->mem_gb
                && (b->step_ms < a->step_ms || b->mem_gb < a->mem_gb))
                dominated = 1;
        }
        assert_int_equal(a->pareto, !dominated);
    }
    assert_true(fit > 0 && nofit > 0 && front > 0);
    /* the fastest fitting row is on the front */
    for (size_t i = 0; i < res.nrows; i++)
        if (res.rows[i].fits) {
            assert_int_equal(res.rows[i].pareto, 1);
            break;
        }
    pdbx_advise_free(&res);
    pdbx_run_free(&run);
}

static void test_bad_queries(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    pdbx_advise_result res;
    pdbx_advise_row r;
    char err[256];
    query(&q, 0, 8);
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), -1);
    assert_string_equal(err, "gpus: 0 is not a number of GPUs (allowed: 1..65536)");
    query(&q, 2, 0);
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), -1);
    assert_non_null(strstr(err, "gbs: 0"));
    query(&q, 4, 8);
    q.nodes = 3;
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), -1);
    assert_non_null(strstr(err, "nodes: 3 does not divide gpus 4"));
    query(&q, 2, 8);
    q.stat = PDBX_STAT_STD;
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), -1);
    assert_non_null(strstr(err, "std"));
    query(&q, 2, 8);
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 2, 1, 1, &r, err, sizeof err), -1);
    assert_string_equal(err, "config: 2x2x1 uses 4 GPUs, the query has 2 (allowed: tp x pp x dp == 2)");
    /* products that overflow are refused before they are formed (UBSan in build-san) */
    assert_int_equal(pdbx_advise_one(&run, &q, 2147483647, 2147483647, 2147483647, 1, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "is not a configuration (allowed: tp, pp, dp 1..2, mbs 1..4096)"));
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 2, 3, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "gbs: 8 is not divisible by mbs x dp = 3 x 2"));
    query(&q, 3, 9);
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 3, 1, 1, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "pp: 3 does not divide the 4 layers"));
    pdbx_run_free(&run);
    /* a run without a measured point */
    pdbx_run_init(&run);
    run_start(&run, 0, 1e12);
    query(&q, 2, 8);
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), -1);
    assert_non_null(strstr(err, "has no measured point"));
    pdbx_run_free(&run);
}

static void test_median_is_the_default(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 1, 1);
    pdbx_advise_row med, mean;
    char err[256];
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 1, 1, &med, err, sizeof err), 0);
    q.stat = PDBX_STAT_MEAN;
    assert_int_equal(pdbx_advise_one(&run, &q, 1, 1, 1, 1, &mean, err, sizeof err), 0);
    assert_close(med.step_ms, stage_t(4, 1, 1, 1, 1.5));
    assert_close(mean.step_ms, 1.1 * med.step_ms);
    pdbx_run_free(&run);
}

/* A config's own points first, then those of its rank count: a 4-rank launch on a shared host
 * measured every cell 2x a 2-rank one (bench/advise_validate.sh FOUR=1). */
static void test_cells_prefer_config_then_rank_count(void **state)
{
    (void)state;
    pdbx_run run;
    next_point = 0;
    run_start(&run, 1, 1e12);
    int i = point(&run, 2, 1, 1, 1, 1);
    comm(&run, i, "tp_allreduce", 64 * KIB, 2, 0.1);
    point_end(&run, i);
    point_factor = 2;
    i = point(&run, 2, 1, 2, 1, 1);
    comm(&run, i, "tp_allreduce", 64 * KIB, 2, 0.1);
    comm(&run, i, "dp_allreduce", 4 * MIB, 2, 10);
    point_end(&run, i);
    point_factor = 1;
    coll(&run, "send_recv", 64 * KIB, 2, 0.25);
    pdbx_advise_query q;
    pdbx_advise_row r;
    char err[256];
    double one = stage_t(4, 1, 1, 1, 1.5) / 2.5;   /* fwd of the 2-rank cells, PP 1 */
    query(&q, 2, 8);
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 1, 1, 1, &r, err, sizeof err), 0);
    assert_close(r.stage_fwd_ms, one);
    query(&q, 4, 8);
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 1, 2, 1, &r, err, sizeof err), 0);
    assert_close(r.stage_fwd_ms, 2 * one);
    /* 2x2x1 was not swept: the 4-rank 2x1x2 cells, not the 2-rank ones of plan order */
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 2, 1, 1, &r, err, sizeof err), 0);
    assert_close(r.stage_fwd_ms, 2 * (2 * part_fwd(PDBX_ADV_LAYER, 1) + part_fwd(PDBX_ADV_LAST, 1)));
    /* 8 ranks, no config of that count: plan order (the 2-rank cells) */
    query(&q, 8, 8);
    assert_int_equal(pdbx_advise_one(&run, &q, 2, 1, 4, 1, &r, err, sizeof err), 0);
    assert_close(r.stage_fwd_ms, one);
    pdbx_run_free(&run);
}

/* No configuration divides the query: 0 rows and a note, no sort of an empty (NULL) array
 * (UBSan stopped the explorer's Advise screen at 65536 GPUs, and `pdbx advise --gpus 3 --gbs 5`). */
static void test_no_configuration(void **state)
{
    (void)state;
    pdbx_run run;
    run_a(&run, 1, 1e12, 0);
    pdbx_advise_query q;
    query(&q, 3, 5);
    pdbx_advise_result res;
    char err[256];
    assert_int_equal(pdbx_advise(&run, &q, &res, err, sizeof err), 0);
    assert_int_equal(res.nrows, 0);
    assert_true(res.nnotes >= 1);
    pdbx_advise_free(&res);
    pdbx_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pp2_bubble_and_p2p),
        cmocka_unit_test(test_pp4_bubble),
        cmocka_unit_test(test_x3_rule_without_bwd),
        cmocka_unit_test(test_mbs_interpolation_and_extrapolation),
        cmocka_unit_test(test_extrapolation_never_vanishes),
        cmocka_unit_test(test_unswept_tp_refused),
        cmocka_unit_test(test_order_and_pareto),
        cmocka_unit_test(test_bad_queries),
        cmocka_unit_test(test_median_is_the_default),
        cmocka_unit_test(test_cells_prefer_config_then_rank_count),
        cmocka_unit_test(test_no_configuration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
