/* test_plan_moe_params.c: the planner's MoE and MLA models against hand computations (issue
 * 24, "Done when"): each full model's parameter count (plan_stage_params at TP 1, PP 1) equals
 * the sum worked out below from its config.json and lies within 1% of its published size, and
 * the per-op FLOPs of the new ops equal 2mnk (GEMMs) or their per-element counts.
 *
 * Parameters per layer (h hidden, a heads, d head dim, V vocab, E experts, I_e expert width,
 * I_s shared width, norms h each):
 *  - GQA attention: q and o a d h each, k and v kv d h each, the input norm; qwen3's q/k norms
 *    2d; qwen2's q/k/v biases a d + 2 kv d.
 *  - MLA (DeepSeek, nope 128, rope 64, v 128, r_kv 512): q at full rank a (nope+rope) h, or
 *    q_a h r_q + q_norm r_q + q_b r_q a (nope+rope); kv_a h (r_kv + rope), kv_norm r_kv,
 *    kv_b r_kv a (nope + v); o a v h.
 *  - MoE MLP: post norm h, router h E, experts 3 E h I_e, shared 3 h I_s (Qwen-MoE: and its
 *    shared_expert_gate h); a dense MLP 3 h I.
 *  - embed and (untied) lm_head V h each, final norm h.
 * Published sizes: Mixtral-8x7B 46.7B, Qwen3-30B-A3B 30.5B, Qwen1.5-MoE-A2.7B 14.3B,
 * DeepSeek-V2-Lite 15.7B, DeepSeek-V3 671B (without its 14B multi-token-prediction module;
 * HF's 685B counts it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/plan/plan.h"
#include "engine/plan/plan_internal.h"

#define FIXTURES PDBX_SOURCE_DIR "/tests/fixtures/models/"

static void load(const char *file, pdbx_spec *s)
{
    char path[1024], err[1024] = "";
    pdbx_spec_defaults(s);
    snprintf(path, sizeof path, FIXTURES "%s", file);
    const int rc = pdbx_model_load(path, &s->model, err, sizeof err);
    if (rc != 0)
        print_error("%s: %s\n", file, err);
    assert_int_equal(rc, 0);
    s->seq_len = 1024;
    s->dtype = PDBX_DTYPE_BF16;
}

static void check_total(const char *file, double by_hand, double published)
{
    pdbx_spec s;
    load(file, &s);
    const double got = plan_stage_params(&s.model, 1, 1);
    if (got != by_hand)
        print_error("%s: planner %.0f, by hand %.0f\n", file, got, by_hand);
    assert_true(got == by_hand);
    assert_true(fabs(got / published - 1) < 0.01);
}

static void test_totals(void **state)
{
    (void)state;
    /* Mixtral-8x7B: h 4096, 32 heads, 8 kv of 128, 32 layers, E 8 of 14336, V 32000 */
    const double mixtral_layer = (2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 + 4096) +
                                 (4096 + 4096.0 * 8 + 3.0 * 8 * 4096 * 14336);
    check_total("Mixtral-8x7B-v0.1.json", 32 * mixtral_layer + 2.0 * 32000 * 4096 + 4096, 46.7e9);
    /* Qwen3-30B-A3B: h 2048, 32 heads, 4 kv of 128, qk_norm, 48 layers, E 128 of 768,
     * V 151936 */
    const double qwen3_layer = (2.0 * 2048 * 4096 + 2.0 * 2048 * 512 + 2 * 128 + 2048) +
                               (2048 + 2048.0 * 128 + 3.0 * 128 * 2048 * 768);
    check_total("Qwen3-30B-A3B.json", 48 * qwen3_layer + 2.0 * 151936 * 2048 + 2048, 30.5e9);
    /* Qwen1.5-MoE-A2.7B: h 2048, 16 heads of 128 (MHA) with q/k/v biases, 24 layers, E 60 of
     * 1408, a shared expert of 5632 and its gate, V 151936 */
    const double qwen15_layer = (4.0 * 2048 * 2048 + 3 * 2048 + 2048) +
                                (2048 + 2048.0 * 60 + 3.0 * 60 * 2048 * 1408 + 3.0 * 2048 * 5632 + 2048);
    check_total("Qwen1.5-MoE-A2.7B.json", 24 * qwen15_layer + 2.0 * 151936 * 2048 + 2048, 14.3e9);
    /* DeepSeek-V2-Lite: h 2048, 16 heads, q at full rank, 27 layers (the first dense, I 10944),
     * E 64 of 1408, 2 shared (I_s 2816), V 102400 */
    const double v2_attn = 2048 + 2048.0 * 16 * 192 + 2048.0 * 576 + 512 + 512.0 * 16 * 256 + 16.0 * 128 * 2048;
    const double v2_dense = 2048 + 3.0 * 2048 * 10944;
    const double v2_moe = 2048 + 2048.0 * 64 + 3.0 * 64 * 2048 * 1408 + 3.0 * 2048 * 2816;
    check_total("DeepSeek-V2-Lite.json", 27 * v2_attn + v2_dense + 26 * v2_moe + 2.0 * 102400 * 2048 + 2048,
                15.7e9);
    /* DeepSeek-V3: h 7168, 128 heads, r_q 1536, 61 layers (3 dense, I 18432), E 256 of 2048,
     * 1 shared, V 129280 */
    const double v3_attn = 7168 + 7168.0 * 1536 + 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512 +
                           512.0 * 128 * 256 + 128.0 * 128 * 7168;
    const double v3_dense = 7168 + 3.0 * 7168 * 18432;
    const double v3_moe = 7168 + 7168.0 * 256 + 3.0 * 256 * 7168 * 2048 + 3.0 * 7168 * 2048;
    check_total("DeepSeek-V3.json", 61 * v3_attn + 3 * v3_dense + 58 * v3_moe + 2.0 * 129280 * 7168 + 7168,
                671e9);
}

/* Parameters per rank follow Megatron's sharding: at TP 2 a Mixtral layer's q/k/v/o halve, its
 * experts stay whole (expert TP 1), the router and norms are replicated; EP 4 leaves a rank 2 of
 * the 8 experts. */
static void test_sharded(void **state)
{
    (void)state;
    pdbx_spec s;
    load("Mixtral-8x7B-v0.1.json", &s);
    const double attn_tp2 = 4096.0 * 4096 + 2.0 * 4096 * 512 + 4096;   /* q, o halves; 4 kv heads */
    assert_true(plan_layer_attn_params(&s.model, 2) == attn_tp2);
    assert_true(plan_layer_mlp_params(&s.model, 2, 1, 1) == 4096 + 4096.0 * 8 + 3.0 * 8 * 4096 * 14336);
    assert_true(plan_layer_mlp_params(&s.model, 2, 4, 1) == 4096 + 4096.0 * 8 + 3.0 * 2 * 4096 * 14336);
}

static void shape(const pdbx_spec *s, int tp, int mbs, pdbx_op op, pdbx_op_shape *o)
{
    assert_true(pdbx_model_ops(&s->model) & PDBX_OP_BIT(op));
    assert_int_equal(pdbx_op_shape_for(s, tp, mbs, op, o), 0);
}

/* Mixtral at TP 1, MBS 1, seq 1024 (T 1024, top 2: 2048 expert rows); at TP 2 a rank routes
 * half the tokens (sequence parallel), its experts see 1024 rows. */
static void test_mixtral_flops(void **state)
{
    (void)state;
    pdbx_spec s;
    pdbx_op_shape o;
    load("Mixtral-8x7B-v0.1.json", &s);
    assert_false(pdbx_model_ops(&s.model) & PDBX_OP_BIT(PDBX_OP_MLP_GATE));    /* every layer MoE */
    assert_false(pdbx_model_ops(&s.model) & PDBX_OP_BIT(PDBX_OP_MOE_SHARED_UP)); /* no shared */
    shape(&s, 1, 1, PDBX_OP_MOE_ROUTER, &o);
    assert_true(o.flops == 2.0 * 1024 * 8 * 4096 + 5.0 * 1024 * 8);
    shape(&s, 1, 1, PDBX_OP_MOE_EXPERT_GATE, &o);
    assert_true(o.flops == 2.0 * 2048 * 4096 * 14336 && o.batch == 8 && o.m == 256);
    shape(&s, 1, 1, PDBX_OP_MOE_EXPERT_DOWN, &o);
    assert_true(o.flops == 2.0 * 2048 * 14336 * 4096 && o.n == 4096 && o.k == 14336);
    shape(&s, 1, 1, PDBX_OP_MOE_EXPERT_ACT, &o);
    assert_true(o.flops == 4.0 * 2048 * 14336);
    shape(&s, 1, 1, PDBX_OP_MOE_UNPERMUTE, &o);
    assert_true(o.flops == 2.0 * 2 * 1024 * 4096);
    shape(&s, 2, 1, PDBX_OP_MOE_EXPERT_UP, &o);
    assert_true(o.flops == 2.0 * 1024 * 4096 * 14336);
    shape(&s, 1, 1, PDBX_OP_EP_DISPATCH, &o);   /* EP 1: nothing crosses ranks */
    assert_true(o.bytes == 0 && o.flops == 0);
}

/* DeepSeek-V2-Lite at TP 2, MBS 1, seq 1024: 8 heads per rank; q at full rank [2048 -> 8 x 192],
 * kv_a [2048 -> 576] replicated, kv_b [512 -> 8 x 256], o [8 x 128 -> 2048]; a rank routes 512
 * tokens to 6 experts (3072 rows of 1408); the shared experts (2816) split over TP run on all
 * 1024 rows; the first layer is dense, so mlp_* stay. */
static void test_deepseek_flops(void **state)
{
    (void)state;
    pdbx_spec s;
    pdbx_op_shape o;
    load("DeepSeek-V2-Lite.json", &s);
    const pdbx_opmask ops = pdbx_model_ops(&s.model);
    assert_false(ops & (PDBX_OP_BIT(PDBX_OP_ATTN_K) | PDBX_OP_BIT(PDBX_OP_ATTN_V) | PDBX_OP_BIT(PDBX_OP_ATTN_Q_A)));
    assert_true(ops & PDBX_OP_BIT(PDBX_OP_MLP_GATE) && ops & PDBX_OP_BIT(PDBX_OP_MOE_SHARED_GATE));
    assert_int_equal(pdbx_rotary_dims(&s.model), 64);
    shape(&s, 2, 1, PDBX_OP_ATTN_Q, &o);
    assert_true(o.flops == 2.0 * 1024 * (8 * 192) * 2048);
    shape(&s, 2, 1, PDBX_OP_ATTN_KV_A, &o);
    assert_true(o.flops == 2.0 * 1024 * 576 * 2048);
    shape(&s, 2, 1, PDBX_OP_ATTN_KV_NORM, &o);
    assert_true(o.flops == 4.0 * 1024 * 512);
    shape(&s, 2, 1, PDBX_OP_ATTN_KV_B, &o);
    assert_true(o.flops == 2.0 * 1024 * (8 * 256) * 512);
    shape(&s, 2, 1, PDBX_OP_ATTN_ROPE, &o);   /* 8 q heads' and k's one shared rope part */
    assert_true(o.flops == 3.0 * 1024 * (8 + 1) * 64);
    shape(&s, 2, 1, PDBX_OP_ATTN_O, &o);
    assert_true(o.flops == 2.0 * 1024 * 2048 * (8 * 128));
    shape(&s, 2, 1, PDBX_OP_MOE_EXPERT_GATE, &o);
    assert_true(o.flops == 2.0 * 3072 * 2048 * 1408);
    shape(&s, 2, 1, PDBX_OP_MOE_SHARED_GATE, &o);
    assert_true(o.flops == 2.0 * 1024 * 1408 * 2048);
    load("DeepSeek-V3.json", &s);           /* q through its low rank 1536 */
    assert_false(pdbx_model_ops(&s.model) & PDBX_OP_BIT(PDBX_OP_ATTN_Q));
    shape(&s, 8, 1, PDBX_OP_ATTN_Q_B, &o);
    assert_true(o.flops == 2.0 * 1024 * (16 * 192) * 1536);
}

/* Qwen3-30B-A3B at TP 1, MBS 2 (T 2048, top 8: 16384 rows of 768 over 128 experts). */
static void test_qwen3_moe_flops(void **state)
{
    (void)state;
    pdbx_spec s;
    pdbx_op_shape o;
    load("Qwen3-30B-A3B.json", &s);
    assert_true(pdbx_model_ops(&s.model) & PDBX_OP_BIT(PDBX_OP_ATTN_QK_NORM));
    shape(&s, 1, 2, PDBX_OP_MOE_EXPERT_UP, &o);
    assert_true(o.flops == 2.0 * 16384 * 2048 * 768 && o.batch == 128 && o.m == 128);
    shape(&s, 1, 2, PDBX_OP_MOE_ROUTER, &o);
    assert_true(o.flops == 2.0 * 2048 * 128 * 2048 + 5.0 * 2048 * 128);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_totals),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_mixtral_flops),
        cmocka_unit_test(test_deepseek_flops),
        cmocka_unit_test(test_qwen3_moe_flops),
    };
    return cmocka_run_group_tests_name("plan_moe_params", tests, NULL, NULL);
}
