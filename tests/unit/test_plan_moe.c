/* test_plan_moe.c: the MoE routing model and its assignment (engine/plan/plan_moe.h).
 *  - invariants over a grid of routes (T, top_k, E, ep, f), checked against sums recomputed here
 *    from the per-expert and per-source functions: every expert's copies are the sum of what the
 *    ranks send it, every rank sends exactly T*top_k, no source sends an expert more than T
 *    copies, rank r's send to q is rank q's receive from r, rank 0 receives the most rows;
 *  - the numbers of the model on hand-worked cases: balanced sums, imbalance 2 doubles the
 *    busiest expert, ep 1 against ep 2, T*top_k < E, an f so large that it caps;
 *  - bad input: -1 and one line naming the field, its value and the range;
 *  - pdbx_moe_assign realises the counts exactly with distinct choices per token.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/plan/plan_moe.h"

static pdbx_moe_route route(int64_t t, int k, int e, int ep, double f)
{
    pdbx_moe_route r = { .tokens = t, .top_k = k, .experts = e, .ep = ep, .imbalance = f };
    return r;
}

/* Checks idx realises counts: every token's choices distinct and in range, counts exact. */
static void check_assignment(int64_t t, int k, int e, const int64_t *counts, const int32_t *idx)
{
    int64_t *seen = calloc((size_t)e, sizeof *seen);
    assert_non_null(seen);
    for (int64_t i = 0; i < t; i++) {
        for (int j = 0; j < k; j++) {
            const int32_t g = idx[i * k + j];
            assert_true(g >= 0 && g < e);
            seen[g]++;
            for (int l = 0; l < j; l++)
                assert_int_not_equal(idx[i * k + l], g);
        }
    }
    for (int g = 0; g < e; g++)
        assert_int_equal(seen[g], counts[g]);
    free(seen);
}

/* Every invariant of plan_moe.h's model for one route. */
static void check_route(const pdbx_moe_route *r)
{
    char err[160];
    const int E = r->experts, ep = r->ep, local = E / ep;
    const int64_t C = (int64_t)ep * r->tokens * r->top_k;
    int64_t total = 0, rank0_received = -1;
    for (int g = 0; g < E; g++) {
        const int64_t G = pdbx_moe_expert_copies(r, g);
        assert_true(G >= 0 && G <= (int64_t)ep * r->tokens);
        if (g >= 2)   /* non-increasing after the busiest */
            assert_true(G <= pdbx_moe_expert_copies(r, g - 1));
        assert_true(G <= pdbx_moe_expert_copies(r, 0));
        int64_t from_all = 0;
        for (int s = 0; s < ep; s++) {
            const int64_t n = pdbx_moe_source_copies(r, s, g);
            assert_true(n >= 0 && n <= r->tokens);
            assert_true(n * ep >= G - ep && n * ep <= G + ep);   /* floor or ceil of G/ep */
            from_all += n;
        }
        assert_int_equal(from_all, G);
        total += G;
    }
    assert_int_equal(total, C);

    int64_t *counts = malloc((size_t)local * sizeof *counts), *own = malloc((size_t)E * sizeof *own);
    int64_t *send = malloc((size_t)ep * ep * sizeof *send), *recv = malloc((size_t)ep * ep * sizeof *recv);
    int32_t *idx = malloc((size_t)(r->tokens * r->top_k) * sizeof *idx);
    assert_true(counts && own && send && recv && idx);
    for (int q = 0; q < ep; q++) {
        pdbx_moe_load L;
        assert_int_equal(pdbx_moe_rank_load(r, q, &L, counts, send + q * ep, recv + q * ep, own, err,
                                            sizeof err), 0);
        assert_int_equal(L.rank, q);
        assert_int_equal(L.local_experts, local);
        assert_int_equal(L.sent, r->tokens * r->top_k);
        int64_t sum = 0, busiest = 0, s_sum = 0, r_sum = 0, own_sum = 0;
        for (int e = 0; e < local; e++) {
            assert_int_equal(counts[e], pdbx_moe_expert_copies(r, q * local + e));
            sum += counts[e];
            busiest = counts[e] > busiest ? counts[e] : busiest;
        }
        for (int p = 0; p < ep; p++) {
            s_sum += send[q * ep + p];
            r_sum += recv[q * ep + p];
        }
        for (int g = 0; g < E; g++) {
            assert_int_equal(own[g], pdbx_moe_source_copies(r, q, g));
            own_sum += own[g];
        }
        assert_int_equal(L.received, sum);
        assert_int_equal(L.busiest, busiest);
        assert_int_equal(r_sum, L.received);
        assert_int_equal(s_sum, L.sent);
        assert_int_equal(own_sum, L.sent);
        if (q == PDBX_MOE_MEASURED_RANK)
            rank0_received = L.received;
        else
            assert_true(L.received <= rank0_received);   /* the measured rank sets the step */
        assert_int_equal(pdbx_moe_assign(r->tokens, r->top_k, E, own, idx, err, sizeof err), 0);
        check_assignment(r->tokens, r->top_k, E, own, idx);
    }
    for (int a = 0; a < ep; a++)
        for (int b = 0; b < ep; b++)
            assert_int_equal(send[a * ep + b], recv[b * ep + a]);
    free(counts), free(own), free(send), free(recv), free(idx);
}

static void test_invariants_grid(void **state)
{
    (void)state;
    const int64_t tokens[] = { 1, 3, 7, 64, 100 };
    const int ks[] = { 1, 2, 3, 8 };
    const int es[] = { 1, 4, 8, 12, 16 };
    const int eps[] = { 1, 2, 4, 8 };
    const double fs[] = { 1.0, 1.3, 2.0, 3.7, 1e9 };
    int routes = 0;
    for (size_t a = 0; a < sizeof tokens / sizeof *tokens; a++)
        for (size_t b = 0; b < sizeof ks / sizeof *ks; b++)
            for (size_t c = 0; c < sizeof es / sizeof *es; c++)
                for (size_t d = 0; d < sizeof eps / sizeof *eps; d++)
                    for (size_t f = 0; f < sizeof fs / sizeof *fs; f++) {
                        const pdbx_moe_route r = route(tokens[a], ks[b], es[c], eps[d], fs[f]);
                        if (r.top_k > r.experts || r.experts % r.ep != 0)
                            continue;
                        check_route(&r);
                        routes++;
                    }
    print_message("invariants held on %d routes\n", routes);
    assert_true(routes > 500);
}

static void test_balanced(void **state)
{
    (void)state;
    char err[160];
    int64_t counts[8], own[8], send[1], recv[1];
    pdbx_moe_load L;
    /* T*k = 128 over 8 experts: 16 each, exactly */
    pdbx_moe_route r = route(64, 2, 8, 1, 1.0);
    assert_int_equal(pdbx_moe_rank_load(&r, 0, &L, counts, send, recv, own, err, sizeof err), 0);
    for (int e = 0; e < 8; e++)
        assert_int_equal(counts[e], 16);
    assert_int_equal(L.received, 128);
    assert_int_equal(send[0], 128);   /* ep 1: everything stays */
    assert_int_equal(recv[0], 128);
    /* T*k = 30 over 8: 4 each and the remainder 6 one each to experts 0..5 */
    r = route(15, 2, 8, 1, 1.0);
    assert_int_equal(pdbx_moe_rank_load(&r, 0, &L, counts, NULL, NULL, own, err, sizeof err), 0);
    const int64_t want[8] = { 4, 4, 4, 4, 4, 4, 3, 3 };
    for (int e = 0; e < 8; e++) {
        assert_int_equal(counts[e], want[e]);
        assert_int_equal(own[e], want[e]);
    }
    assert_int_equal(L.received, 30);
}

static void test_imbalance_two(void **state)
{
    (void)state;
    char err[160];
    int64_t counts[8];
    pdbx_moe_load L;
    /* balanced share 128/8 = 16; f 2: the busiest 32, the other 96 over 7: 14 x 5, 13 x 2 */
    pdbx_moe_route r = route(64, 2, 8, 1, 2.0);
    assert_int_equal(pdbx_moe_rank_load(&r, 0, &L, counts, NULL, NULL, NULL, err, sizeof err), 0);
    const int64_t want[8] = { 32, 14, 14, 14, 14, 14, 13, 13 };
    for (int e = 0; e < 8; e++)
        assert_int_equal(counts[e], want[e]);
    assert_int_equal(L.busiest, 32);
    assert_int_equal(L.received, 128);
    /* ep 2: 256 copies, balanced share 32, busiest 64 of the 128 that exist for one expert */
    r = route(64, 2, 8, 2, 2.0);
    assert_int_equal(pdbx_moe_rank_load(&r, 0, &L, counts, NULL, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(counts[0], 64);
    assert_int_equal(L.busiest, 2 * 32);
}

static void test_ep1_vs_ep2(void **state)
{
    (void)state;
    char err[160];
    int64_t c1[8], c2[4], send[2], recv[2], own[8];
    pdbx_moe_load L1, L2;
    pdbx_moe_route r1 = route(64, 2, 8, 1, 1.0), r2 = route(64, 2, 8, 2, 1.0);
    assert_int_equal(pdbx_moe_rank_load(&r1, 0, &L1, c1, NULL, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(pdbx_moe_rank_load(&r2, 0, &L2, c2, send, recv, own, err, sizeof err), 0);
    /* ep 2: half the experts each, every one fed by two ranks: twice the rows per expert, the
     * same rows per rank */
    assert_int_equal(L2.local_experts, 4);
    for (int e = 0; e < 4; e++)
        assert_int_equal(c2[e], 2 * c1[e]);
    assert_int_equal(L2.received, L1.received);
    /* half of the rank's 128 copies stay, half go to rank 1, and as many come back */
    assert_int_equal(send[0], 64);
    assert_int_equal(send[1], 64);
    assert_int_equal(recv[1], 64);
    for (int g = 0; g < 8; g++)
        assert_int_equal(own[g], 16);
}

static void test_edges(void **state)
{
    (void)state;
    char err[160];
    int64_t counts[16];
    pdbx_moe_load L;
    /* T*k = 6 < E = 16: six experts get one copy, ten none */
    pdbx_moe_route r = route(3, 2, 16, 1, 1.0);
    assert_int_equal(pdbx_moe_rank_load(&r, 0, &L, counts, NULL, NULL, NULL, err, sizeof err), 0);
    for (int e = 0; e < 16; e++)
        assert_int_equal(counts[e], e < 6 ? 1 : 0);
    /* f so large the busiest expert takes every token (3), the other 3 copies spread */
    r = route(3, 2, 16, 1, 1000.0);
    assert_int_equal(pdbx_moe_rank_load(&r, 0, &L, counts, NULL, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(counts[0], 3);
    for (int e = 1; e < 16; e++)
        assert_int_equal(counts[e], e <= 3 ? 1 : 0);
    r = route(10, 2, 4, 1, 1e300);
    assert_int_equal(pdbx_moe_rank_load(&r, 0, &L, counts, NULL, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(counts[0], 10);
    assert_int_equal(counts[1], 4);
    assert_int_equal(counts[2], 3);
    assert_int_equal(counts[3], 3);
    /* top_k = E: every token picks every expert, whatever f */
    r = route(5, 4, 4, 2, 7.0);
    assert_int_equal(pdbx_moe_rank_load(&r, 1, &L, counts, NULL, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(counts[0], 10);
    assert_int_equal(counts[1], 10);
    /* one expert */
    r = route(9, 1, 1, 1, 3.0);
    assert_int_equal(pdbx_moe_rank_load(&r, 0, &L, counts, NULL, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(counts[0], 9);
}

static void expect_bad(pdbx_moe_route r, int rank, const char *what)
{
    char err[160] = "";
    pdbx_moe_load L;
    assert_int_equal(pdbx_moe_rank_load(&r, rank, &L, NULL, NULL, NULL, NULL, err, sizeof err), -1);
    print_message("  %s\n", err);
    if (!strstr(err, what) || strchr(err, '\n') || !strstr(err, "allowed")) {
        print_error("message '%s' does not name '%s' and its range\n", err, what);
        fail();
    }
}

static void test_bad_input(void **state)
{
    (void)state;
    expect_bad(route(0, 2, 8, 1, 1.0), 0, "tokens 0");
    expect_bad(route(-5, 2, 8, 1, 1.0), 0, "tokens -5");
    expect_bad(route(4, 0, 8, 1, 1.0), 0, "top_k 0");
    expect_bad(route(4, 9, 8, 1, 1.0), 0, "top_k 9: allowed 1 .. 8");
    expect_bad(route(4, 1, 0, 1, 1.0), 0, "experts 0");
    expect_bad(route(4, 1, 8, 3, 1.0), 0, "ep 3");
    expect_bad(route(4, 1, 8, 16, 1.0), 0, "ep 16");
    expect_bad(route(4, 1, 8, 0, 1.0), 0, "ep 0");
    expect_bad(route(4, 1, 8, 1, 0.5), 0, "imbalance 0.5");
    expect_bad(route(4, 1, 8, 1, NAN), 0, "imbalance");
    expect_bad(route(4, 1, 8, 1, INFINITY), 0, "imbalance inf");
    expect_bad(route(4, 1, 8, 2, 1.0), 2, "rank 2: allowed 0 .. 1");
    expect_bad(route(PDBX_MOE_MAX_TOKENS, 65536, 65536, 65536, 1.0), 0, "copies");

    char err[160];
    int32_t idx[8];
    const int64_t over[2] = { 5, 3 }, neg[2] = { -1, 9 }, short_sum[2] = { 2, 3 };
    assert_int_equal(pdbx_moe_assign(4, 2, 2, over, idx, err, sizeof err), -1);
    assert_non_null(strstr(err, "counts[0] 5: allowed 0 .. 4"));
    assert_int_equal(pdbx_moe_assign(4, 2, 2, neg, idx, err, sizeof err), -1);
    assert_non_null(strstr(err, "counts[0] -1"));
    assert_int_equal(pdbx_moe_assign(4, 2, 2, short_sum, idx, err, sizeof err), -1);
    assert_non_null(strstr(err, "counts sum 5: allowed exactly 8"));
    assert_int_equal(pdbx_moe_assign(4, 3, 2, short_sum, idx, err, sizeof err), -1);
    assert_non_null(strstr(err, "top_k 3"));
}

static void test_assign(void **state)
{
    (void)state;
    char err[160];
    /* skewed counts, an expert taking every token, one taking none */
    const int64_t counts[5] = { 10, 0, 7, 2, 1 };
    int32_t a[20], b[20];
    assert_int_equal(pdbx_moe_assign(10, 2, 5, counts, a, err, sizeof err), 0);
    check_assignment(10, 2, 5, counts, a);
    assert_int_equal(pdbx_moe_assign(10, 2, 5, counts, b, err, sizeof err), 0);
    assert_memory_equal(a, b, sizeof a);   /* deterministic */
    for (int t = 0; t < 10; t++) {
        assert_int_equal(a[t * 2], 0);     /* expert 0 took every token, first */
        assert_true(a[t * 2 + 1] > 0);
    }
    /* spread: expert 2's 7 tokens are not tokens 0..6 in a run (the permutation) */
    int run = 1;
    for (int t = 0; t < 7; t++)
        run &= a[t * 2 + 1] == 2;
    assert_false(run);
    /* tokens = 1 */
    const int64_t one[3] = { 1, 0, 1 };
    assert_int_equal(pdbx_moe_assign(1, 2, 3, one, a, err, sizeof err), 0);
    assert_int_equal(a[0], 0);
    assert_int_equal(a[1], 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invariants_grid),
        cmocka_unit_test(test_balanced),
        cmocka_unit_test(test_imbalance_two),
        cmocka_unit_test(test_ep1_vs_ep2),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_assign),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
