/* test_plan_comm.c: the sizing of a point's collectives (engine/plan/plan_comm.c) on cases
 * computed by hand: only the collectives the config runs are sized, the DP all-reduce moves
 * one Megatron DDP bucket of fp32 gradients, the cpu backend caps it, and a config without
 * collectives asks for no buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "engine/plan/plan_comm.h"

/* h 64, I 128, 4 heads, 2 kv heads, d 16, 4 layers, V 256 (untied). */
static pdbx_model small_model(void)
{
    pdbx_model m;
    memset(&m, 0, sizeof m);
    m.hidden = 64;
    m.intermediate = 128;
    m.heads = 4;
    m.kv_heads = 2;
    m.head_dim = 16;
    m.layers = 4;
    m.vocab = 256;
    return m;
}

/* Llama-3.1-8B: 8030261248 parameters at TP 1, PP 1. */
static pdbx_model llama8b(void)
{
    pdbx_model m = small_model();
    m.hidden = 4096;
    m.intermediate = 14336;
    m.heads = 32;
    m.kv_heads = 8;
    m.head_dim = 128;
    m.layers = 32;
    m.vocab = 128256;
    return m;
}

/* TP 2 only, bf16, MBS 2, seq 8: [16, 64] bf16 = 2048 bytes; nothing else runs. */
static void test_tp_only(void **state)
{
    (void)state;
    pdbx_model m = small_model();
    pdbx_plan_comm c;
    pdbx_plan_comm_bytes(&m, 2, 1, 1, 2, 8, PDBX_DTYPE_BF16, PDBX_BACKEND_CUDA, &c);
    assert_true(c.tp_bytes == 2048 && c.pp_bytes == 0 && c.dp_bytes == 0);
    assert_int_equal(c.tp_dtype, PDBX_DTYPE_BF16);
    assert_true(c.buffer_bytes == 2048);
}

/* PP 2 only, fp16, MBS 3, seq 8: [24, 64] fp16 = 3072 bytes. */
static void test_pp_only(void **state)
{
    (void)state;
    pdbx_model m = small_model();
    pdbx_plan_comm c;
    pdbx_plan_comm_bytes(&m, 1, 2, 1, 3, 8, PDBX_DTYPE_FP16, PDBX_BACKEND_CUDA, &c);
    assert_true(c.tp_bytes == 0 && c.pp_bytes == 3072 && c.dp_bytes == 0);
    assert_int_equal(c.pp_dtype, PDBX_DTYPE_FP16);
    assert_true(c.buffer_bytes == 3072);
}

/* dp 1 (and tp, pp 1): no collective, no DP entry, no buffer, whatever the model's size. */
static void test_dp1_no_entry(void **state)
{
    (void)state;
    pdbx_model m = llama8b();
    pdbx_plan_comm c;
    pdbx_plan_comm_bytes(&m, 1, 1, 1, 4, 4096, PDBX_DTYPE_BF16, PDBX_BACKEND_CUDA, &c);
    assert_true(c.tp_bytes == 0 && c.pp_bytes == 0 && c.dp_bytes == 0 && c.dp_full_bytes == 0);
    assert_true(c.buffer_bytes == 0);
    /* TP 2, dp 1: the TP message alone, [4*4096, 4096] bf16 = 134217728 */
    pdbx_plan_comm_bytes(&m, 2, 1, 1, 4, 4096, PDBX_DTYPE_BF16, PDBX_BACKEND_CUDA, &c);
    assert_true(c.dp_bytes == 0 && c.buffer_bytes == 134217728.0);
}

/* Megatron's bucket: max(40e6, 1e6 * dp) parameters. */
static void test_bucket_elems(void **state)
{
    (void)state;
    assert_true(pdbx_plan_dp_bucket_elems(2) == 40e6);
    assert_true(pdbx_plan_dp_bucket_elems(40) == 40e6);
    assert_true(pdbx_plan_dp_bucket_elems(64) == 64e6);
}

/* DP of Llama-3.1-8B in bf16 on cuda: one fp32 bucket, not the stage's 32 GB.
 *   dp 8: 40e6 params * 4 B = 160000000, whole 4 KiB pages: 39062 * 4096 = 159997952
 *   dp 64: 64e6 * 4 = 256000000 = 62500 pages exactly
 *   the whole stage would be 8030261248 * 4 = 32121044992 */
static void test_dp_bucket(void **state)
{
    (void)state;
    pdbx_model m = llama8b();
    pdbx_plan_comm c;
    pdbx_plan_comm_bytes(&m, 1, 1, 8, 1, 4096, PDBX_DTYPE_BF16, PDBX_BACKEND_CUDA, &c);
    assert_true(c.dp_bytes == 159997952.0);
    assert_int_equal(c.dp_dtype, PDBX_DTYPE_FP32);
    assert_true(c.dp_full_bytes == 32121044992.0);
    assert_true(c.tp_bytes == 0 && c.pp_bytes == 0 && c.buffer_bytes == 159997952.0);
    pdbx_plan_comm_bytes(&m, 1, 1, 64, 1, 4096, PDBX_DTYPE_BF16, PDBX_BACKEND_CUDA, &c);
    assert_true(c.dp_bytes == 256000000.0);
    /* the cpu backend caps it at 64 MiB */
    pdbx_plan_comm_bytes(&m, 1, 1, 8, 1, 4096, PDBX_DTYPE_BF16, PDBX_BACKEND_CPU, &c);
    assert_true(c.dp_bytes == 67108864.0 && c.dp_dtype == PDBX_DTYPE_FP32);
}

/* A stage smaller than a bucket: its whole gradients, in fp32 whatever the run's dtype.
 * Small model at TP 2: 90688 params (test_plan_profile_memory.c) * 4 = 362752 -> 88 pages
 * = 360448. With TP 2 the TP message [16, 64] bf16 = 2048 runs too; the buffer is the larger. */
static void test_dp_small_stage(void **state)
{
    (void)state;
    pdbx_model m = small_model();
    pdbx_plan_comm c;
    pdbx_plan_comm_bytes(&m, 2, 1, 2, 2, 8, PDBX_DTYPE_BF16, PDBX_BACKEND_CUDA, &c);
    assert_true(c.dp_bytes == 360448.0 && c.dp_full_bytes == 362752.0);
    assert_true(c.tp_bytes == 2048 && c.buffer_bytes == 360448.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tp_only),
        cmocka_unit_test(test_pp_only),
        cmocka_unit_test(test_dp1_no_entry),
        cmocka_unit_test(test_bucket_elems),
        cmocka_unit_test(test_dp_bucket),
        cmocka_unit_test(test_dp_small_stage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
