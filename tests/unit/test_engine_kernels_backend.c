/* test_engine_kernels_backend.c: the cpu compute backend end to end on a tiny point: every op
 * runs (GEMM wiring), the comm buffer's release, the weights kept across a config's MBS sweep,
 * the allocations equal to the planner's list (resident memory), the fills threaded, the OOM
 * guard. The kernels themselves are checked in test_engine_kernels*.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cpu/cpu_compute.h"
#include "engine/backends/host.h"
#include "engine/backends/cpu/cpu_internal.h"
#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_bwd.h"
#include "tests/unit/test_cpu_point.h"

/* ---- the backend on a tiny point ----------------------------------------------------- */

static void test_cpu_backend_runs_every_op(void **state)
{
    (void)state;
    const pdbx_compute_ops *ops = &pdbx_cpu_compute_ops;
    for (int dt = 0; dt < 1 + pdbx_cpu_has_bf16_gemm(); dt++) {
        pdbx_compute_config cfg = { .local_rank = 0, .local_size = 1, .world_rank = 0,
                                    .world_size = 1, .blas_threads = 1,
                                    .dtype = dt ? PDBX_DTYPE_BF16 : PDBX_DTYPE_FP32 };
        pdbx_compute *c = NULL;
        char err[256] = "";
        assert_int_equal(ops->init(&cfg, &c, err, sizeof err), 0);
        pdbx_point_shapes p = tiny_cpu_point(2, 2, 0);
        assert_int_equal(ops->prepare(c, &p, err, sizeof err), 0);
        for (int op = 0; op < PDBX_OP_COUNT; op++) {
            if (pdbx_op_is_comm((pdbx_op)op))
                continue;
            if (op == PDBX_OP_OPTIMIZER || op == PDBX_OP_LOSS) {   /* training's: a forward-only point */
                double ms;
                assert_int_equal(ops->run_op(c, (pdbx_op)op, PDBX_PASS_FWD, 0, &ms, err, sizeof err), -1);
                assert_non_null(strstr(err, "needs a point prepared with bwd"));
                continue;
            }
            if (!(pdbx_model_ops(&p.model) & PDBX_OP_BIT(op))) {   /* a Llama: no attn_qk_norm */
                double ms;
                assert_int_equal(ops->run_op(c, (pdbx_op)op, PDBX_PASS_FWD, 0, &ms, err, sizeof err), -1);
                assert_non_null(strstr(err, "is not an op of model"));
                continue;
            }
            for (int l = 0; l < p.layers; l++) {
                double ms = -1;
                assert_int_equal(ops->run_op(c, (pdbx_op)op, PDBX_PASS_FWD, l, &ms, err, sizeof err), 0);
                assert_true(ms >= 0.0);
                if (!pdbx_op_is_per_layer((pdbx_op)op))
                    break;
            }
        }
        double ms;
        assert_int_equal(ops->run_op(c, PDBX_OP_ATTN_Q, PDBX_PASS_FWD, 2, &ms, err, sizeof err), -1);  /* bad layer */
        assert_int_equal(ops->run_op(c, PDBX_OP_TP_ALLREDUCE_MLP, PDBX_PASS_FWD, 0, &ms, err, sizeof err), -1);
        assert_true(isfinite(ops->checksum(c)));
        void *buf = NULL;
        assert_int_equal(ops->comm_buffer(c, 4096, &buf, err, sizeof err), 0);
        assert_non_null(buf);
        ops->fini(c);
    }
}

/* comm_buffer(c, 0) frees the comm buffer (backend.h: the engine calls it after each config so
 * no buffer outlives the config it was sized for): the pointer comes back NULL and the 64 MiB
 * leave the resident set; a later request allocates again. */
static void test_cpu_backend_comm_buffer_release(void **state)
{
    (void)state;
    const pdbx_compute_ops *ops = &pdbx_cpu_compute_ops;
    pdbx_compute_config cfg = { .local_size = 1, .world_size = 1, .blas_threads = 1,
                                .dtype = PDBX_DTYPE_FP32 };
    pdbx_compute *c = NULL;
    char err[256];
    assert_int_equal(ops->init(&cfg, &c, err, sizeof err), 0);
    const size_t big = (size_t)64 << 20;
    double rss0, rss1, rss2, hwm;
    void *buf = NULL;
    assert_int_equal(pdbx_host_rss(&rss0, &hwm), 0);
    assert_int_equal(ops->comm_buffer(c, big, &buf, err, sizeof err), 0);
    assert_non_null(buf);
    assert_int_equal(pdbx_host_rss(&rss1, &hwm), 0);
    assert_true(rss1 - rss0 > 0.9 * (double)big);   /* filled: resident */
    assert_int_equal(ops->comm_buffer(c, 0, &buf, err, sizeof err), 0);
    assert_null(buf);
    assert_int_equal(pdbx_host_rss(&rss2, &hwm), 0);
#ifndef __SANITIZE_ADDRESS__   /* ASan holds freed memory in its quarantine: RSS stays */
    assert_true(rss1 - rss2 > 0.9 * (double)big);   /* given back */
#else
    (void)rss2;
#endif
    assert_int_equal(ops->comm_buffer(c, 4096, &buf, err, sizeof err), 0);
    assert_non_null(buf);
    ops->fini(c);
}

/* A config's MBS sweep keeps the weights between points; a new TP degree replaces them. */
static void test_cpu_backend_point_sequence(void **state)
{
    (void)state;
    const pdbx_compute_ops *ops = &pdbx_cpu_compute_ops;
    pdbx_compute_config cfg = { .local_size = 1, .world_size = 1, .blas_threads = 2,
                                .dtype = PDBX_DTYPE_FP32 };
    pdbx_compute *c = NULL;
    char err[256];
    assert_int_equal(ops->init(&cfg, &c, err, sizeof err), 0);
    const int seq[][2] = { { 1, 1 }, { 1, 2 }, { 1, 4 }, { 2, 1 }, { 2, 2 }, { 1, 1 } };
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        pdbx_point_shapes p = tiny_cpu_point(seq[i][0], seq[i][1], 0);
        assert_int_equal(ops->prepare(c, &p, err, sizeof err), 0);
        double ms;
        for (int op = 0; op < PDBX_OP_COUNT; op++)
            if (!pdbx_op_is_comm((pdbx_op)op) && (pdbx_model_ops(&p.model) & PDBX_OP_BIT(op)) &&
                pdbx_op_in_model_fwd((pdbx_op)op))   /* (a forward-only point: no loss, no optimizer) */
                assert_int_equal(ops->run_op(c, (pdbx_op)op, PDBX_PASS_FWD, p.layers - 1, &ms, err, sizeof err), 0);
        assert_true(isfinite(ops->checksum(c)));
        ops->release(c);
        assert_int_equal(ops->run_op(c, PDBX_OP_ATTN_Q, PDBX_PASS_FWD, 0, &ms, err, sizeof err), -1);  /* released */
    }
    ops->fini(c);
}

/* The cpu backend allocates exactly engine/plan's list of the point's buffers: the resident
 * memory it takes for a point (its measured peak, mem_peak) is the list's total without the
 * comm buffer (the engine asks for that one), to within page rounding and malloc headers.
 * A point of about 100 MB (vocab 32768 x hidden 256 embedding and lm_head dominate) so the
 * rounding is far below the 2% allowed; the second point keeps the weights and still counts
 * them. The attention scratch is the kernel's own size (the planner copies its blocking). */
static void test_cpu_backend_allocates_the_plan(void **state)
{
    (void)state;
    const pdbx_compute_ops *ops = &pdbx_cpu_compute_ops;
    pdbx_compute_config cfg = { .local_size = 1, .world_size = 1, .blas_threads = 3,
                                .dtype = PDBX_DTYPE_FP32 };
    pdbx_compute *c = NULL;
    char err[256] = "";
    assert_int_equal(ops->init(&cfg, &c, err, sizeof err), 0);
    for (int mbs = 1; mbs <= 4; mbs *= 4) {
        pdbx_point_shapes p = tiny_cpu_point(1, mbs, 0);
        p.model.vocab = 32768;
        p.model.hidden = 256;
        p.model.heads = 16;
        p.model.kv_heads = 4;
        p.model.intermediate = 512;
        p.seq_len = 256;
        pdbx_profile_point pp = { .model = p.model, .tp = 1, .pp = 1, .dp = 1, .mbs = mbs,
                                  .seq_len = p.seq_len, .layers = p.layers, .ops = p.ops,
                                  .dtype = PDBX_DTYPE_FP32, .backend = PDBX_BACKEND_CPU,
                                  .threads = 3 };
        pdbx_profile_memory pm;
        assert_int_equal(pdbx_profile_memory_list(&pp, &pm, err, sizeof err), 0);
        assert_true(pm.kind_bytes[PDBX_MEM_COMM] == 0);
        for (int i = 0; i < pm.nbufs; i++)
            if (pm.buf[i].role == PDBX_BUF_ATTN_SCRATCH)
                assert_true(pm.buf[i].bytes ==
                            ceil(pdbx_k_attention_scratch_floats(p.seq_len, 16, 3) * 4 / 64.0) * 64);
        assert_int_equal(ops->prepare(c, &p, err, sizeof err), 0);
        double peak = -1, base = -1;
        if (ops->mem_peak(c, &peak, &base) != 0) {
            ops->release(c);
            continue;   /* /proc/self/clear_refs not writable here: nothing to compare */
        }
        if (fabs(peak - pm.total) > 0.02 * pm.total)
            print_error("mbs %d: measured %.0f bytes, listed %.0f\n", mbs, peak, pm.total);
        assert_true(fabs(peak - pm.total) <= 0.02 * pm.total);
        assert_true(base > 0);
        ops->release(c);
    }
    ops->fini(c);
}

/* The fills split over the backend's pool give the same values as on one thread, byte for
 * byte, for every buffer an op reads (weights and input activations); those values are real
 * everywhere (no page of zeros: the tiles reach the end of each buffer, the last share
 * included), and the pure outputs (logits) are zeros. Buffers larger than the
 * 64 Ki-element random block, so the tiling and its split run. */
static void test_cpu_backend_fill_threads(void **state)
{
    (void)state;
    const pdbx_compute_ops *ops = &pdbx_cpu_compute_ops;
    pdbx_compute *c[2] = { NULL, NULL };
    char err[256] = "";
    pdbx_point_shapes p = tiny_cpu_point(1, 3, 0);
    p.model.vocab = 5000;                /* 5000 x 64: a tiled table with a partial last tile */
    p.seq_len = 129;
    for (int i = 0; i < 2; i++) {
        pdbx_compute_config cfg = { .local_size = 1, .world_size = 1, .blas_threads = i ? 3 : 1,
                                    .dtype = PDBX_DTYPE_FP32 };
        assert_int_equal(ops->init(&cfg, &c[i], err, sizeof err), 0);
        assert_int_equal(ops->prepare(c[i], &p, err, sizeof err), 0);
    }
    assert_null(c[0]->pool);
    assert_int_equal(pdbx_cpu_pool_threads(c[1]->pool), 3);
    const int64_t T = c[0]->T;
    struct {
        const char *name;
        size_t n;
        const float *a, *b;
    } in[] = {
        { "embedding table", (size_t)(c[0]->vloc * c[0]->h), c[0]->emb_table, c[1]->emb_table },
        { "lm_head weight", (size_t)(c[0]->vloc * c[0]->h), c[0]->wlm, c[1]->wlm },
        { "mlp_up weight 1", (size_t)(c[0]->h * c[0]->inter), c[0]->layer[1].wu, c[1]->layer[1].wu },
        { "hidden", (size_t)(T * c[0]->h), c[0]->x, c[1]->x },
        { "gate", (size_t)(T * c[0]->inter), c[0]->g, c[1]->g },
        { "q", (size_t)(T * c[0]->qd), c[0]->q, c[1]->q },
    };
    for (size_t b = 0; b < sizeof in / sizeof in[0]; b++) {
        if (memcmp(in[b].a, in[b].b, in[b].n * sizeof(float)) != 0)
            print_error("%s differs between 1 and 3 threads\n", in[b].name);
        assert_memory_equal(in[b].a, in[b].b, in[b].n * sizeof(float));
        for (size_t page = 0; page < in[b].n; page += 1024) {
            size_t end = page + 1024 < in[b].n ? page + 1024 : in[b].n;
            int nonzero = 0;
            for (size_t i = page; i < end; i++)
                nonzero |= in[b].b[i] != 0.0f && isfinite(in[b].b[i]);
            if (!nonzero)
                print_error("%s: elements %zu..%zu all zero\n", in[b].name, page, end);
            assert_true(nonzero);
        }
    }
    for (int64_t i = 0; i < T * c[1]->vloc; i++)
        assert_true(c[1]->logits[i] == 0.0f);
    for (int i = 0; i < 2; i++)
        ops->fini(c[i]);
}

static void test_cpu_backend_oom_guard(void **state)
{
    (void)state;
    const pdbx_compute_ops *ops = &pdbx_cpu_compute_ops;
    pdbx_compute_config cfg = { .local_size = 1, .world_size = 1, .blas_threads = 1,
                                .dtype = PDBX_DTYPE_FP32 };
    pdbx_compute *c = NULL;
    char err[256] = "";
    assert_int_equal(ops->init(&cfg, &c, err, sizeof err), 0);
    pdbx_point_shapes p = tiny_cpu_point(1, 1, 0);
    p.model.vocab = 1 << 30;                 /* lm_head weight alone: 2^30 x 64 x 4 B = 256 GiB */
    p.model.hidden = 64;
    assert_int_equal(ops->prepare(c, &p, err, sizeof err), PDBX_EOOM);
    assert_non_null(strstr(err, "MemAvailable"));
    ops->fini(c);
    /* fp16 (and bf16 without sbgemm) is refused with a message naming the allowed dtypes */
    cfg.dtype = PDBX_DTYPE_FP16;
    c = NULL;
    assert_int_equal(ops->init(&cfg, &c, err, sizeof err), -1);
    assert_null(c);
    assert_non_null(strstr(err, "fp16"));
    if (!pdbx_cpu_has_bf16_gemm()) {
        cfg.dtype = PDBX_DTYPE_BF16;
        assert_int_equal(ops->init(&cfg, &c, err, sizeof err), -1);
        assert_non_null(strstr(err, "allowed on this host: fp32"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_backend_runs_every_op),
        cmocka_unit_test(test_cpu_backend_comm_buffer_release),
        cmocka_unit_test(test_cpu_backend_point_sequence),
        cmocka_unit_test(test_cpu_backend_allocates_the_plan),
        cmocka_unit_test(test_cpu_backend_fill_threads),
        cmocka_unit_test(test_cpu_backend_oom_guard),
    };
    return cmocka_run_group_tests_name("engine_kernels_backend", tests, NULL, NULL);
}
