/* test_plan_attn_flops.c: pdbx_attn_core_executed_flops (plan.h) on hand-computed cases,
 * against the model FLOPs pdbx_op_shape_for gives attn_core (the causal half). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/plan/plan.h"

/* b 2, s 8, d 4: b s^2 d = 512. Unfused fwd 4x = 2048 (QK^T 2*8*8*4 = 512 and PV 512 per
 * (b, h) member, 2 members); bwd 8x = 4096. Flash bwd: five products of 2 * 32 * 32 * d per
 * visited tile pair (tile 32, PDBX_FLASH_BWD_TILE): s 8 is one diagonal tile, 10 * 2 * 4 *
 * 1024 = 81920; s 100: nt 4, 10 pairs -> 819200 (for b 2, d 4); s 4096 d 128: nt 128, 8256
 * pairs, 10 * 128 * 1024 * 8256 = 10821304320 per (b, h), the unfused 8 s^2 d = 17179869184
 * times 0.63 (5/8 of the square plus the diagonal tiles' 1/128). */
static void test_unfused_and_bwd(void **state)
{
    (void)state;
    assert_true(pdbx_attn_core_executed_flops(0, PDBX_PASS_FWD, 2, 8, 4, 64) == 2048);
    assert_true(pdbx_attn_core_executed_flops(0, PDBX_PASS_BWD, 2, 8, 4, 64) == 4096);
    assert_true(pdbx_attn_core_executed_flops(1, PDBX_PASS_BWD, 2, 8, 4, 64) == 81920);
    assert_true(pdbx_attn_core_executed_flops(1, PDBX_PASS_BWD, 2, 100, 4, 64) == 819200);
    assert_true(pdbx_attn_core_executed_flops(1, PDBX_PASS_BWD, 1, 4096, 128, 64) == 10821304320.0);
    /* the bwd tile is the kernel's, whatever the forward's tile argument */
    assert_true(pdbx_attn_core_executed_flops(1, PDBX_PASS_BWD, 1, 4096, 128, 16) == 10821304320.0);
}

/* flash fwd, tile 64, d 128:
 *   s 64: one diagonal tile, 4 * 128 * 64 * 64 = 2097152 (twice the causal half 1048576)
 *   s 130: nq 3, 6 tiles -> 12582912
 *   s 4096: nq 64, 2080 tiles -> 4 * 128 * 4096 * 2080 = 4362076160, the causal half
 *           2 * 4096^2 * 128 = 4294967296 times 65/64 */
static void test_flash_tiles(void **state)
{
    (void)state;
    assert_true(pdbx_attn_core_executed_flops(1, PDBX_PASS_FWD, 1, 64, 128, 64) == 2097152);
    assert_true(pdbx_attn_core_executed_flops(1, PDBX_PASS_FWD, 1, 130, 128, 64) == 12582912);
    assert_true(pdbx_attn_core_executed_flops(1, PDBX_PASS_FWD, 1, 4096, 128, 64) == 4362076160.0);
    assert_true(pdbx_attn_core_executed_flops(1, PDBX_PASS_FWD, 1, 4096, 128, 64) ==
                4294967296.0 * 65 / 64);
    /* bad arguments */
    assert_true(pdbx_attn_core_executed_flops(1, PDBX_PASS_FWD, 0, 64, 128, 64) == 0);
    assert_true(pdbx_attn_core_executed_flops(1, PDBX_PASS_FWD, 1, 64, 128, 0) == 0);
}

/* The model's count is half the unfused executed work: Llama-3.1-8B-like shape at TP 1 */
static void test_model_half(void **state)
{
    (void)state;
    pdbx_spec spec;
    pdbx_spec_defaults(&spec);
    spec.model.hidden = 4096;
    spec.model.heads = 32;
    spec.model.kv_heads = 8;
    spec.model.head_dim = 128;
    spec.seq_len = 2048;
    pdbx_op_shape sh;
    assert_int_equal(pdbx_op_shape_for(&spec, 1, 2, PDBX_OP_ATTN_CORE, &sh), 0);
    assert_true(sh.batch == 64 && sh.m == 2048 && sh.k == 128);
    assert_true(pdbx_attn_core_executed_flops(0, PDBX_PASS_FWD, sh.batch, sh.m, sh.k, 64) ==
                2 * sh.flops);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unfused_and_bwd),
        cmocka_unit_test(test_flash_tiles),
        cmocka_unit_test(test_model_half),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
