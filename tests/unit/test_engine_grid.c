/* test_engine_grid.c: rank grid in Megatron order, and nccl-tests busbw factors. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "engine/backends/backend.h"
#include "engine/engine_grid.h"

/* Megatron's RankGenerator("tp-cp-ep-dp-pp") for tp=2, dp=2, pp=2 on 8 ranks gives
 *   TP groups [0,1] [2,3] [4,5] [6,7]; DP groups [0,2] [1,3] [4,6] [5,7];
 *   PP groups [0,4] [1,5] [2,6] [3,7]. */
static void test_megatron_example(void **state)
{
    (void)state;
    int g[8], me;
    const int tp_groups[4][2] = { { 0, 1 }, { 2, 3 }, { 4, 5 }, { 6, 7 } };
    const int dp_groups[4][2] = { { 0, 2 }, { 1, 3 }, { 4, 6 }, { 5, 7 } };
    const int pp_groups[4][2] = { { 0, 4 }, { 1, 5 }, { 2, 6 }, { 3, 7 } };
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 2; j++) {
            assert_int_equal(pdbx_grid_group(tp_groups[i][j], 2, 2, 2, 1, PDBX_GRID_TP, g, &me), 2);
            assert_memory_equal(g, tp_groups[i], sizeof tp_groups[i]);
            assert_int_equal(me, j);
            assert_int_equal(pdbx_grid_group(dp_groups[i][j], 2, 2, 2, 1, PDBX_GRID_DP, g, &me), 2);
            assert_memory_equal(g, dp_groups[i], sizeof dp_groups[i]);
            assert_int_equal(me, j);
            assert_int_equal(pdbx_grid_group(pp_groups[i][j], 2, 2, 2, 1, PDBX_GRID_PP, g, &me), 2);
            assert_memory_equal(g, pp_groups[i], sizeof pp_groups[i]);
            assert_int_equal(me, j);
        }
    }
}

static void test_coords_roundtrip_and_colors(void **state)
{
    (void)state;
    const int shapes[][3] = { { 1, 1, 1 }, { 4, 1, 1 }, { 1, 4, 1 }, { 1, 1, 4 }, { 2, 4, 2 }, { 8, 2, 1 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int tp = shapes[s][0], pp = shapes[s][1], dp = shapes[s][2], n = tp * pp * dp;
        for (int kind = 0; kind < 3; kind++) {
            int seen[64] = { 0 };
            for (int r = 0; r < n; r++) {
                pdbx_grid_coords c;
                assert_int_equal(pdbx_grid_coords_of(r, tp, pp, dp, &c), 0);
                assert_int_equal(pdbx_grid_rank_of(tp, pp, dp, c.tp_rank, c.dp_rank, c.pp_rank), r);
                int g[64], me = -1;
                int size = pdbx_grid_group(r, tp, pp, dp, 1, (pdbx_grid_kind)kind, g, &me);
                assert_int_equal(size, kind == PDBX_GRID_TP ? tp : kind == PDBX_GRID_DP ? dp : pp);
                assert_int_equal(g[me], r);
                /* every member of the group has the same colour, the colour is a member */
                int col = pdbx_grid_color(r, tp, pp, dp, 1, (pdbx_grid_kind)kind);
                for (int i = 0; i < size; i++)
                    assert_int_equal(pdbx_grid_color(g[i], tp, pp, dp, 1, (pdbx_grid_kind)kind), col);
                assert_int_equal(g[0], col);
                seen[r]++;
            }
            for (int r = 0; r < n; r++)
                assert_int_equal(seen[r], 1);
        }
        /* TP is fastest: ranks 0..tp-1 form the first TP group */
        int g[64];
        assert_int_equal(pdbx_grid_group(0, tp, pp, dp, 1, PDBX_GRID_TP, g, NULL), tp);
        for (int i = 0; i < tp; i++)
            assert_int_equal(g[i], i);
    }
    pdbx_grid_coords c;
    assert_int_equal(pdbx_grid_coords_of(8, 2, 2, 2, &c), -1);
    assert_int_equal(pdbx_grid_coords_of(0, 0, 1, 1, &c), -1);
}

/* EP groups, Megatron's expert RankGenerator with etp 1 (order tp-ep-dp-pp): tp 2, dp 2, pp 2,
 * ep 2 gives groups {0,1} {2,3} {4,5} {6,7} (a stage's ranks in pairs, across TP first); ep 4
 * the whole stage {0..3} {4..7}; ep 2 at tp 1 dp 4 pairs of DP ranks. Every rank is in one
 * group, the colour is the group's first rank, and an ep not dividing tp*dp is refused. */
static void test_ep_groups(void **state)
{
    (void)state;
    int g[64], me = -1;
    assert_int_equal(pdbx_grid_group(5, 2, 2, 2, 2, PDBX_GRID_EP, g, &me), 2);
    assert_int_equal(g[0], 4);
    assert_int_equal(g[1], 5);
    assert_int_equal(me, 1);
    assert_int_equal(pdbx_grid_group(6, 2, 2, 2, 4, PDBX_GRID_EP, g, &me), 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(g[i], 4 + i);
    assert_int_equal(me, 2);
    assert_int_equal(pdbx_grid_group(3, 1, 1, 4, 2, PDBX_GRID_EP, g, &me), 2);
    assert_int_equal(g[0], 2);
    assert_int_equal(me, 1);
    assert_int_equal(pdbx_grid_color(3, 1, 1, 4, 2, PDBX_GRID_EP), 2);
    assert_int_equal(pdbx_grid_group(0, 1, 1, 2, 2, PDBX_GRID_EP, g, &me), 2);
    assert_int_equal(me, 0);   /* world rank 0 is EP rank 0, the measured one */
    assert_int_equal(pdbx_grid_group(0, 1, 1, 3, 2, PDBX_GRID_EP, g, &me), -1);
    assert_int_equal(pdbx_grid_color(0, 1, 1, 3, 2, PDBX_GRID_EP), -1);
    assert_int_equal(pdbx_grid_group(0, 1, 1, 2, 0, PDBX_GRID_TP, g, &me), -1);
    const int shapes[][4] = { { 1, 1, 2, 2 }, { 2, 1, 2, 4 }, { 4, 2, 1, 2 }, { 2, 2, 4, 8 }, { 1, 2, 8, 4 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int tp = shapes[s][0], pp = shapes[s][1], dp = shapes[s][2], ep = shapes[s][3];
        int seen[64] = { 0 };
        for (int r = 0; r < tp * pp * dp; r++) {
            assert_int_equal(pdbx_grid_group(r, tp, pp, dp, ep, PDBX_GRID_EP, g, &me), ep);
            assert_int_equal(g[me], r);
            const int col = pdbx_grid_color(r, tp, pp, dp, ep, PDBX_GRID_EP);
            assert_int_equal(g[0], col);
            pdbx_grid_coords c;
            assert_int_equal(pdbx_grid_coords_of(r, tp, pp, dp, &c), 0);
            for (int i = 0; i < ep; i++) {
                pdbx_grid_coords ci;
                assert_int_equal(pdbx_grid_coords_of(g[i], tp, pp, dp, &ci), 0);
                assert_int_equal(ci.pp_rank, c.pp_rank);   /* within one stage */
                assert_int_equal(g[i], col + i);           /* consecutive */
                assert_int_equal(pdbx_grid_color(g[i], tp, pp, dp, ep, PDBX_GRID_EP), col);
            }
            seen[r]++;
        }
        for (int r = 0; r < tp * pp * dp; r++)
            assert_int_equal(seen[r], 1);
    }
    assert_string_equal(pdbx_grid_kind_name(PDBX_GRID_EP), "ep");
}

/* Expert data parallel groups: the stage's ranks of one EP rank; every EDP group meets every EP
 * group of its stage in exactly one rank (together they tile the stage), as Megatron's expert
 * RankGenerator "tp-ep-dp-pp" with etp 1 gives. */
static void test_edp_groups(void **state)
{
    (void)state;
    int g[64], e[64], me = -1;
    /* tp 1 dp 4 ep 2: EDP groups {0, 2} and {1, 3} */
    assert_int_equal(pdbx_grid_group(3, 1, 1, 4, 2, PDBX_GRID_EDP, g, &me), 2);
    assert_int_equal(g[0], 1);
    assert_int_equal(g[1], 3);
    assert_int_equal(me, 1);
    assert_int_equal(pdbx_grid_color(3, 1, 1, 4, 2, PDBX_GRID_EDP), 1);
    /* ep = tp x dp: one rank per group (nothing to reduce); ep 1: the whole stage */
    assert_int_equal(pdbx_grid_group(1, 1, 1, 2, 2, PDBX_GRID_EDP, g, &me), 1);
    assert_int_equal(pdbx_grid_group(5, 2, 2, 2, 1, PDBX_GRID_EDP, g, &me), 4);
    assert_int_equal(g[0], 4);
    assert_int_equal(me, 1);
    assert_int_equal(pdbx_grid_group(0, 1, 1, 3, 2, PDBX_GRID_EDP, g, &me), -1);
    assert_int_equal(pdbx_grid_color(0, 1, 1, 3, 2, PDBX_GRID_EDP), -1);
    const int shapes[][4] = { { 1, 1, 2, 2 }, { 2, 1, 2, 4 }, { 4, 2, 1, 2 }, { 2, 2, 4, 8 }, { 1, 2, 8, 4 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int tp = shapes[s][0], pp = shapes[s][1], dp = shapes[s][2], ep = shapes[s][3];
        for (int r = 0; r < tp * pp * dp; r++) {
            const int n = pdbx_grid_group(r, tp, pp, dp, ep, PDBX_GRID_EDP, g, &me);
            assert_int_equal(n, tp * dp / ep);
            assert_int_equal(g[me], r);
            assert_int_equal(pdbx_grid_color(r, tp, pp, dp, ep, PDBX_GRID_EDP), g[0]);
            int ep_me = -1;
            assert_int_equal(pdbx_grid_group(r, tp, pp, dp, ep, PDBX_GRID_EP, e, &ep_me), ep);
            for (int i = 0; i < n; i++) {
                int m = -1;
                assert_int_equal(pdbx_grid_group(g[i], tp, pp, dp, ep, PDBX_GRID_EP, e, &m), ep);
                assert_int_equal(m, ep_me);                  /* the same experts */
                assert_int_equal(g[i] / (tp * dp), r / (tp * dp));   /* within one stage */
                for (int j = 0; j < ep; j++)                 /* its EP group shares only g[i] */
                    if (e[j] != g[i])
                        assert_int_not_equal(pdbx_grid_color(e[j], tp, pp, dp, ep, PDBX_GRID_EDP), g[0]);
            }
        }
    }
    assert_string_equal(pdbx_grid_kind_name(PDBX_GRID_EDP), "edp");
}

static void test_busbw_factors(void **state)
{
    (void)state;
    assert_true(pdbx_coll_busbw_factor(PDBX_COLL_ALL_REDUCE, 2) == 1.0);
    assert_true(pdbx_coll_busbw_factor(PDBX_COLL_ALL_REDUCE, 8) == 1.75);
    assert_true(pdbx_coll_busbw_factor(PDBX_COLL_ALL_GATHER, 4) == 0.75);
    assert_true(pdbx_coll_busbw_factor(PDBX_COLL_REDUCE_SCATTER, 2) == 0.5);
    assert_true(pdbx_coll_busbw_factor(PDBX_COLL_SEND_RECV, 2) == 1.0);
    assert_true(pdbx_coll_busbw_factor(PDBX_COLL_ALL_TO_ALL, 8) == 0.875);   /* (n-1)/n */
    assert_string_equal(pdbx_coll_name(PDBX_COLL_ALL_TO_ALL), "all_to_all");
    assert_string_equal(pdbx_coll_name(PDBX_COLL_ALL_REDUCE), "all_reduce");
    assert_string_equal(pdbx_coll_name(PDBX_COLL_SEND_RECV), "send_recv");
    assert_string_equal(pdbx_coll_name(PDBX_COLL_COUNT), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_megatron_example),
        cmocka_unit_test(test_coords_roundtrip_and_colors),
        cmocka_unit_test(test_ep_groups),
        cmocka_unit_test(test_edp_groups),
        cmocka_unit_test(test_busbw_factors),
    };
    return cmocka_run_group_tests_name("engine_grid", tests, NULL, NULL);
}
