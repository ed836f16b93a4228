/* test_nccl_timing.c: host test of the cuda backend's timing protocol (docs/cuda.md "Timing
 * protocol"). The REAL engine/comm/nccl/nccl_comm.c and engine/backends/cuda/cuda_timing.c are
 * linked against the fake CUDA runtime and NCCL of tests/cuda/fake_cuda.c, whose call log
 * shows what they enqueue, in order:
 *   - a timed collective: the %globaltimer spin, the one-element align all-reduce on the same
 *     communicator, the start event, call->iters executions back to back, the stop event; the
 *     result is elapsed / iters;
 *   - out of place all_gather/reduce_scatter: the separate input/output after the S bytes;
 *   - the odd rank out of a send_recv still takes part in the align all-reduce;
 *   - an op's start (cuda_timer_start): the spin also after the L2 flush;
 *   - the barrier: polled, failing after timeout_s with the reason when the event never
 *     completes, and on an asynchronous NCCL error.
 * Built by engine/backends/cuda/SConscript when the CUDA and NCCL headers exist; needs no GPU.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cuda/cuda_backend.h"
#include "tests/cuda/fake_cuda.h"

static char ev_storage[4];
#define EV_START ((cudaEvent_t)(void *)&ev_storage[0])
#define EV_STOP ((cudaEvent_t)(void *)&ev_storage[1])

typedef struct {
    pdbx_compute c;
    pdbx_comm *m;
    pdbx_group *g;
} fixture;

/* The broadcast of the NCCL id as MPI would do it: group rank 0's message, captured when its
 * group was created, reaches the other ranks. */
static unsigned char bcast_msg[512];
static size_t bcast_len;

static int fake_bcast(void *buf, size_t len, int root, void *ctx)
{
    const int my_rank = *(const int *)ctx;
    (void)root;
    if (len > sizeof bcast_msg)
        return -1;
    if (my_rank == 0) {
        memcpy(bcast_msg, buf, len);
        bcast_len = len;
    } else {
        if (bcast_len != len)
            return -1;
        memcpy(buf, bcast_msg, len);
    }
    return 0;
}

/* A compute with comm_bytes of comm buffer and a group of `size` ranks seen from `rank`. */
static void fixture_open(fixture *f, int rank, int size, size_t comm_bytes)
{
    char err[256] = "";
    memset(f, 0, sizeof *f);
    fake_cuda_reset();
    f->c.ev_start = EV_START;
    f->c.ev_stop = EV_STOP;
    f->c.spin_ns = 100000;
    f->c.dtype = PDBX_DTYPE_BF16;
    f->c.comm_buf = calloc(1, comm_bytes);
    f->c.comm_bytes = comm_bytes;
    assert_non_null(f->c.comm_buf);
    assert_int_equal(cuda_nccl_comm_ops.init(&f->c, &f->m, err, sizeof err), 0);
    for (int r = 0; r <= rank; r += rank ? rank : 1) {   /* rank 0 first: it makes the id */
        int me = r;
        pdbx_group_desc d = { .group_rank = r, .group_size = size, .world_rank = r,
                              .world_size = size, .bcast = fake_bcast, .bcast_ctx = &me };
        pdbx_group *g = NULL;
        if (cuda_nccl_comm_ops.group_create(f->m, &d, &g, err, sizeof err) != 0)
            fail_msg("group_create: %s", err);
        if (r == rank)
            f->g = g;
        else
            cuda_nccl_comm_ops.group_destroy(f->m, g);
        if (rank == 0)
            break;
    }
    fake_cuda_reset();   /* the log starts with the call under test */
}

static void fixture_close(fixture *f)
{
    cuda_nccl_comm_ops.group_destroy(f->m, f->g);
    cuda_nccl_comm_ops.fini(f->m);
    free(f->c.comm_buf);
}

/* Asserts log entry i is fn (dumping the log when not). */
static void expect_at(int i, const char *fn)
{
    if (i < 0 || i >= fake_cuda.n || strcmp(fake_cuda.log[i].fn, fn) != 0) {
        fake_cuda_dump();
        fail_msg("call %d: expected %s, got %s", i, fn,
                 i >= 0 && i < fake_cuda.n ? fake_cuda.log[i].fn : "(end of log)");
    }
}

/* Asserts the aligned start from log entry 0: spin, the align all-reduce, the start event.
 * Returns the index after it. */
static int expect_aligned_start(void)
{
    expect_at(0, "ck_spin_ns");
    assert_true(fake_cuda.log[0].ns >= 100000);
    expect_at(1, "ncclAllReduce");
    assert_int_equal(fake_cuda.log[1].count, 1);   /* one element: alignment, not payload */
    expect_at(2, "cudaEventRecord");
    assert_ptr_equal(fake_cuda.log[2].ev, EV_START);
    return 3;
}

/* Asserts the stop event, its wait and elapsed(start, stop) from log entry i on. */
static void expect_stop(int i)
{
    expect_at(i, "cudaEventRecord");
    assert_ptr_equal(fake_cuda.log[i].ev, EV_STOP);
    int q = fake_cuda_find("cudaEventQuery", i);
    assert_true(q > i);
    assert_ptr_equal(fake_cuda.log[q].ev, EV_STOP);
    int e = fake_cuda_find("cudaEventElapsedTime", q);
    assert_true(e > q);
    assert_ptr_equal(fake_cuda.log[e].ev, EV_START);
    assert_ptr_equal(fake_cuda.log[e].ev2, EV_STOP);
}

/* The protocol: spin, align, start, iters all-reduces back to back, stop; ms = elapsed/iters. */
static void test_run_iterations_back_to_back(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, 0, 2, 1 << 20);
    char err[256] = "";
    const int iters = 7;
    fake_cuda.elapsed_ms = 14.0f;
    pdbx_coll_call call = { PDBX_COLL_ALL_REDUCE, PDBX_DTYPE_BF16, 4096, iters, 0 };
    double ms = -1;
    assert_int_equal(cuda_nccl_comm_ops.run(f.m, f.g, &call, f.c.comm_buf, &ms, err, sizeof err), 0);
    int i = expect_aligned_start();
    /* the spin covers the host's enqueue of what follows it (align + iters launches) */
    assert_true(fake_cuda.log[0].ns >= 100000 + (iters + 1) * CUDA_LAUNCH_NS);
    for (int k = 0; k < iters; k++, i++) {
        expect_at(i, "ncclAllReduce");
        assert_ptr_equal(fake_cuda.log[i].send, f.c.comm_buf);
        assert_ptr_equal(fake_cuda.log[i].recv, f.c.comm_buf);
        assert_int_equal(fake_cuda.log[i].count, 4096 / 2);   /* bf16 elements */
    }
    expect_stop(i);
    assert_int_equal(fake_cuda_count("ncclAllReduce"), iters + 1);
    assert_true(ms > 2.0 - 1e-9 && ms < 2.0 + 1e-9);   /* 14 ms / 7 */
    /* one execution: the same aligned start */
    fake_cuda_reset();
    fake_cuda.elapsed_ms = 0.5f;
    call.iters = 1;
    assert_int_equal(cuda_nccl_comm_ops.run(f.m, f.g, &call, f.c.comm_buf, &ms, err, sizeof err), 0);
    i = expect_aligned_start();
    expect_at(i, "ncclAllReduce");
    expect_stop(i + 1);
    assert_true(ms > 0.5 - 1e-9 && ms < 0.5 + 1e-9);
    call.iters = 0;
    assert_int_equal(cuda_nccl_comm_ops.run(f.m, f.g, &call, f.c.comm_buf, &ms, err, sizeof err), -1);
    assert_non_null(strstr(err, "iters 0 (allowed: 1 or more)"));
    fixture_close(&f);
}

/* Rank 1 of 2, S = 4096 bytes bf16 (chunk 1024 elements): in place the rank's part is the
 * second half of S; out of place it is the separate region at buf + S. */
static void test_run_in_and_out_of_place(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, 1, 2, 4096 + 2048);
    char err[256] = "";
    char *b = f.c.comm_buf;
    double ms = 0;
    static const struct {
        pdbx_coll coll;
        const char *fn;
        int oop;
    } cases[] = {
        { PDBX_COLL_ALL_GATHER, "ncclAllGather", 0 },
        { PDBX_COLL_ALL_GATHER, "ncclAllGather", 1 },
        { PDBX_COLL_REDUCE_SCATTER, "ncclReduceScatter", 0 },
        { PDBX_COLL_REDUCE_SCATTER, "ncclReduceScatter", 1 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        fake_cuda_reset();
        pdbx_coll_call call = { cases[k].coll, PDBX_DTYPE_BF16, 4096, 3, cases[k].oop };
        assert_int_equal(cuda_nccl_comm_ops.run(f.m, f.g, &call, b, &ms, err, sizeof err), 0);
        int i = expect_aligned_start();
        const char *part = cases[k].oop ? b + 4096 : b + 2048;
        for (int it = 0; it < 3; it++, i++) {
            expect_at(i, cases[k].fn);
            assert_int_equal(fake_cuda.log[i].count, 1024);
            if (cases[k].coll == PDBX_COLL_ALL_GATHER) {
                assert_ptr_equal(fake_cuda.log[i].send, part);
                assert_ptr_equal(fake_cuda.log[i].recv, b);
            } else {
                assert_ptr_equal(fake_cuda.log[i].send, b);
                assert_ptr_equal(fake_cuda.log[i].recv, part);
            }
        }
        expect_stop(i);
    }
    /* out of place needs S + S/n: a buffer of S only is refused, naming the bytes */
    f.c.comm_bytes = 4096;
    fake_cuda_reset();
    pdbx_coll_call call = { PDBX_COLL_ALL_GATHER, PDBX_DTYPE_BF16, 4096, 1, 1 };
    assert_int_equal(cuda_nccl_comm_ops.run(f.m, f.g, &call, b, &ms, err, sizeof err), -1);
    assert_non_null(strstr(err, "6144 bytes"));
    assert_int_equal(fake_cuda_count("ncclAllGather"), 0);
    fixture_close(&f);
}

/* send_recv in a group of 3: rank 2 has no partner, sends nothing, but joins the align
 * all-reduce (else ranks 0 and 1 would wait in it for ever); its time is 0. */
static void test_send_recv_odd_rank_aligns(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, 2, 3, 1 << 16);
    char err[256] = "";
    double ms = -1;
    fake_cuda.elapsed_ms = 3.0f;
    pdbx_coll_call call = { PDBX_COLL_SEND_RECV, PDBX_DTYPE_BF16, 4096, 5, 0 };
    assert_int_equal(cuda_nccl_comm_ops.run(f.m, f.g, &call, f.c.comm_buf, &ms, err, sizeof err), 0);
    int i = expect_aligned_start();
    expect_stop(i);
    assert_int_equal(fake_cuda_count("ncclSend") + fake_cuda_count("ncclRecv"), 0);
    assert_true(ms == 0.0);
    fixture_close(&f);
    fixture_open(&f, 1, 3, 1 << 16);   /* rank 1 receives from 0, 5 times */
    assert_int_equal(cuda_nccl_comm_ops.run(f.m, f.g, &call, f.c.comm_buf, &ms, err, sizeof err), 0);
    i = expect_aligned_start();
    for (int k = 0; k < 5; k++, i++) {
        expect_at(i, "ncclRecv");
        assert_int_equal(fake_cuda.log[i].peer, 0);
    }
    expect_stop(i);
    fixture_close(&f);
}

/* all_to_all as nccl-tests' alltoall, in a group of 4 on rank 1: per execution one NCCL group
 * of a send of block k (S / 4) at buf + k S/4 to rank k and a receive from rank k into
 * buf + S + k S/4, every peer itself included; a buffer without room for the S received is
 * refused before anything is enqueued. */
static void test_all_to_all_blocks(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, 1, 4, 1 << 16);
    char err[256] = "";
    double ms = -1;
    fake_cuda.elapsed_ms = 4.0f;
    const size_t S = 8192, blk = S / 4;   /* bf16: 1024 elements per block */
    pdbx_coll_call call = { PDBX_COLL_ALL_TO_ALL, PDBX_DTYPE_BF16, S, 2, 0 };
    char *buf = f.c.comm_buf;
    assert_int_equal(cuda_nccl_comm_ops.run(f.m, f.g, &call, buf, &ms, err, sizeof err), 0);
    int i = expect_aligned_start();
    for (int it = 0; it < 2; it++) {
        expect_at(i++, "ncclGroupStart");
        for (int k = 0; k < 4; k++) {
            expect_at(i, "ncclSend");
            assert_true(fake_cuda.log[i].send == buf + (size_t)k * blk);
            assert_int_equal(fake_cuda.log[i].count, blk / 2);
            assert_int_equal(fake_cuda.log[i++].peer, k);
            expect_at(i, "ncclRecv");
            assert_true(fake_cuda.log[i].recv == buf + S + (size_t)k * blk);
            assert_int_equal(fake_cuda.log[i++].peer, k);
        }
        expect_at(i++, "ncclGroupEnd");
    }
    expect_stop(i);
    assert_true(ms == 2.0);   /* the 4 ms span over 2 executions */
    call.bytes = (1 << 16) / 2 + 4096;   /* S + S > the 64 KiB buffer */
    assert_int_equal(cuda_nccl_comm_ops.run(f.m, f.g, &call, buf, &ms, err, sizeof err), -1);
    assert_non_null(strstr(err, "do not lie in comm_buffer()"));
    fixture_close(&f);
}

/* An op's start: with flush_l2 the memset, then the spin anyway, then the start event. */
static void test_timer_start_spins_after_flush(void **state)
{
    (void)state;
    pdbx_compute c;
    memset(&c, 0, sizeof c);
    char err[256] = "";
    char flush[64];
    c.ev_start = EV_START;
    c.ev_stop = EV_STOP;
    c.spin_ns = 100000;
    c.flush_l2 = 1;
    c.l2_flush = flush;
    c.l2_flush_bytes = sizeof flush;
    fake_cuda_reset();
    assert_int_equal(cuda_timer_start(&c, err, sizeof err), 0);
    expect_at(0, "cudaMemsetAsync");
    assert_ptr_equal(fake_cuda.log[0].send, flush);
    expect_at(1, "ck_spin_ns");
    assert_true(fake_cuda.log[1].ns == 100000);
    expect_at(2, "cudaEventRecord");
    assert_ptr_equal(fake_cuda.log[2].ev, EV_START);
    assert_int_equal(fake_cuda.n, 3);
    /* without the flush: the spin, the start event */
    c.flush_l2 = 0;
    fake_cuda_reset();
    assert_int_equal(cuda_timer_start(&c, err, sizeof err), 0);
    expect_at(0, "ck_spin_ns");
    expect_at(1, "cudaEventRecord");
    assert_int_equal(fake_cuda.n, 2);
}

/* The barrier: one all-reduce, then its event polled; never complete -> -1 after timeout_s
 * with the reason, the communicator aborted, the group unusable after (no hang). */
static void test_barrier_times_out(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, 0, 4, 1 << 16);
    char err[256] = "";
    assert_int_equal(cuda_nccl_comm_ops.barrier(f.m, f.g, 5.0, err, sizeof err), 0);
    expect_at(0, "ncclAllReduce");
    assert_int_equal(fake_cuda.log[0].count, 1);
    expect_at(1, "cudaEventRecord");
    expect_at(2, "cudaEventQuery");
    assert_int_equal(fake_cuda_count("cudaStreamSynchronize"), 0);   /* no unbounded wait */

    fake_cuda_reset();
    fake_cuda.events_never_complete = 1;
    assert_int_equal(cuda_nccl_comm_ops.barrier(f.m, f.g, 0.05, err, sizeof err), -1);
    assert_non_null(strstr(err, "nccl barrier: the group of 4 ranks did not complete within 0.05 s"));
    assert_true(fake_cuda_count("cudaEventQuery") > 1);   /* polled, not one blocking wait */
    assert_true(fake_cuda_find("ncclCommAbort", 0) >= 0);
    assert_int_equal(fake_cuda_count("cudaStreamSynchronize"), 0);
    /* the group has no communicator left: the next call fails at once */
    double ms = 0;
    pdbx_coll_call call = { PDBX_COLL_ALL_REDUCE, PDBX_DTYPE_BF16, 4096, 1, 0 };
    assert_int_equal(cuda_nccl_comm_ops.run(f.m, f.g, &call, f.c.comm_buf, &ms, err, sizeof err), -1);
    assert_non_null(strstr(err, "no communicator"));
    assert_int_equal(cuda_nccl_comm_ops.barrier(f.m, f.g, 0.05, err, sizeof err), -1);
    fixture_close(&f);
}

/* A peer's asynchronous NCCL error ends the barrier's wait with that reason. */
static void test_barrier_async_error(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, 0, 2, 1 << 16);
    char err[256] = "";
    fake_cuda.events_never_complete = 1;
    fake_cuda.async_error = ncclRemoteError;
    assert_int_equal(cuda_nccl_comm_ops.barrier(f.m, f.g, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "nccl barrier (asynchronous error) failed"));
    assert_true(fake_cuda_find("ncclCommAbort", 0) >= 0);
    fixture_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_iterations_back_to_back),
        cmocka_unit_test(test_run_in_and_out_of_place),
        cmocka_unit_test(test_send_recv_odd_rank_aligns),
        cmocka_unit_test(test_all_to_all_blocks),
        cmocka_unit_test(test_timer_start_spins_after_flush),
        cmocka_unit_test(test_barrier_times_out),
        cmocka_unit_test(test_barrier_async_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
