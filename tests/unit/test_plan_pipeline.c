/* test_plan_pipeline.c: the 1F1B schedule (engine/plan/plan_pipeline.c): the exact order of
 * every stage for pp 2 and 4 (hand-written from Megatron's
 * forward_backward_pipelining_without_interleaving), the warm-up counts, and that all stages'
 * lists run together with blocking (rendezvous) point-to-point messages without deadlock, each
 * send meeting the receive of the same micro-batch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "engine/plan/plan_pipeline.h"

#define CAP 512

/* "F0 S0 ..." for a stage's list: F fwd, B bwd, S send_act, R recv_act, s send_grad, r recv_grad */
static void spell(int pp, int stage, int num_mb, char *buf, size_t len)
{
    static const char letter[PDBX_PIPE_KIND_COUNT] = { 'F', 'B', 'S', 'R', 's', 'r' };
    pdbx_pipe_step st[CAP];
    int n = pdbx_pipe_schedule(pp, stage, num_mb, st, CAP);
    assert_true(n > 0);
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%c%d", i ? " " : "", letter[st[i].kind], st[i].mb);
}

static void test_warmup_counts(void **state)
{
    (void)state;
    assert_int_equal(pdbx_pipe_warmup(2, 0, 4), 1);
    assert_int_equal(pdbx_pipe_warmup(2, 1, 4), 0);
    assert_int_equal(pdbx_pipe_warmup(4, 0, 8), 3);
    assert_int_equal(pdbx_pipe_warmup(4, 1, 8), 2);
    assert_int_equal(pdbx_pipe_warmup(4, 2, 8), 1);
    assert_int_equal(pdbx_pipe_warmup(4, 3, 8), 0);
    assert_int_equal(pdbx_pipe_warmup(4, 0, 2), 2);   /* fewer micro-batches than stages */
    assert_int_equal(pdbx_pipe_warmup(1, 0, 4), 0);
    assert_int_equal(pdbx_pipe_warmup(4, 4, 8), -1);
    assert_int_equal(pdbx_pipe_warmup(0, 0, 8), -1);
    assert_int_equal(pdbx_pipe_warmup(2, 0, 0), -1);
}

static void test_order_pp1(void **state)
{
    (void)state;
    char b[1024];
    spell(1, 0, 3, b, sizeof b);
    assert_string_equal(b, "F0 B0 F1 B1 F2 B2");
}

static void test_order_pp2(void **state)
{
    (void)state;
    char b[1024];
    spell(2, 0, 3, b, sizeof b);
    assert_string_equal(b, "F0 S0 F1 S1 r0 B0 F2 S2 r1 B1 r2 B2");
    spell(2, 1, 3, b, sizeof b);
    assert_string_equal(b, "R0 F0 B0 R1 s0 F1 B1 R2 s1 F2 B2 s2");
}

static void test_order_pp4(void **state)
{
    (void)state;
    char b[1024];
    spell(4, 0, 4, b, sizeof b);
    assert_string_equal(b, "F0 S0 F1 S1 F2 S2 F3 S3 r0 B0 r1 B1 r2 B2 r3 B3");
    spell(4, 1, 4, b, sizeof b);
    assert_string_equal(b, "R0 F0 S0 R1 F1 S1 R2 F2 S2 r0 B0 R3 s0 F3 S3 r1 B1 s1 r2 B2 s2 r3 B3 s3");
    spell(4, 2, 4, b, sizeof b);
    assert_string_equal(b, "R0 F0 S0 R1 F1 S1 r0 B0 R2 s0 F2 S2 r1 B1 R3 s1 F3 S3 r2 B2 s2 r3 B3 s3");
    spell(4, 3, 4, b, sizeof b);
    assert_string_equal(b, "R0 F0 B0 R1 s0 F1 B1 R2 s1 F2 B2 R3 s2 F3 B3 s3");
}

/* Runs every stage's list with rendezvous messages: a send and its receive complete together,
 * compute steps at once. Fails on a deadlock or a message meeting another micro-batch's. */
static void run_together(int pp, int num_mb)
{
    pdbx_pipe_step st[8][CAP];
    int n[8], pc[8];
    for (int s = 0; s < pp; s++) {
        n[s] = pdbx_pipe_schedule(pp, s, num_mb, st[s], CAP);
        assert_true(n[s] > 0);
        pc[s] = 0;
        int f = 0, b = 0;
        for (int i = 0; i < n[s]; i++) {
            f += st[s][i].kind == PDBX_PIPE_FWD;
            b += st[s][i].kind == PDBX_PIPE_BWD;
        }
        assert_int_equal(f, num_mb);
        assert_int_equal(b, num_mb);
    }
    for (;;) {
        int moved = 0, done = 1;
        for (int s = 0; s < pp; s++) {
            if (pc[s] >= n[s])
                continue;
            done = 0;
            pdbx_pipe_step *x = &st[s][pc[s]];
            if (x->kind == PDBX_PIPE_FWD || x->kind == PDBX_PIPE_BWD) {
                pc[s]++;
                moved = 1;
                continue;
            }
            /* a send finds its peer's current step; a receive waits for the send */
            int peer = x->kind == PDBX_PIPE_SEND_ACT ? s + 1 : x->kind == PDBX_PIPE_SEND_GRAD ? s - 1 : -1;
            if (peer < 0)
                continue;
            assert_true(peer >= 0 && peer < pp);
            if (pc[peer] >= n[peer])
                continue;
            pdbx_pipe_step *y = &st[peer][pc[peer]];
            pdbx_pipe_kind want = x->kind == PDBX_PIPE_SEND_ACT ? PDBX_PIPE_RECV_ACT : PDBX_PIPE_RECV_GRAD;
            if (y->kind != want)
                continue;
            assert_int_equal(x->mb, y->mb);
            pc[s]++;
            pc[peer]++;
            moved = 1;
        }
        if (done)
            return;
        if (!moved)
            fail_msg("pp %d num_mb %d: deadlock", pp, num_mb);
    }
}

static void test_no_deadlock(void **state)
{
    (void)state;
    for (int pp = 1; pp <= 8; pp *= 2)
        for (int m = 1; m <= 9; m++)
            run_together(pp, m);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    pdbx_pipe_step st[CAP];
    assert_int_equal(pdbx_pipe_schedule(2, 2, 4, st, CAP), -1);
    assert_int_equal(pdbx_pipe_schedule(2, 0, 0, st, CAP), -1);
    assert_int_equal(pdbx_pipe_schedule(2, 0, 4, st, 5), -1);
    assert_int_equal(pdbx_pipe_max_steps(4), 24);
    assert_string_equal(pdbx_pipe_kind_name(PDBX_PIPE_RECV_GRAD), "recv_grad");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warmup_counts), cmocka_unit_test(test_order_pp1),
        cmocka_unit_test(test_order_pp2),     cmocka_unit_test(test_order_pp4),
        cmocka_unit_test(test_no_deadlock),   cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
