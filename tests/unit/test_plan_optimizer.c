/* test_plan_optimizer.c: the optimizer op in the planner: its parameters (one layer's on a rank,
 * worked out by hand for TinyLlama at TP 1 and 2 and for the tiny Mixtral at EP 1 and 2), its
 * shape, FLOPs and bytes, the spec ops that have it (training sweeps on the cpu backend only),
 * and the cpu profile memory's flat arrays (master, m, v with the weights, the main gradient
 * with the gradients, a bf16 copy in a bf16 run). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/plan/plan.h"

#define TINYLLAMA PDBX_SOURCE_DIR "/configs/models/TinyLlama-1.1B.json"
#define MIXTRAL PDBX_SOURCE_DIR "/tests/e2e/fixtures/engine-tiny-mixtral.json"

/* a spec of model (on the cpu backend unless extra names another and its GPU) */
static void spec_of(pdbx_spec *s, const char *model, const char *extra)
{
    char text[1024], err[512] = "";
    const char *cpu = strstr(extra, "backend") ? "" : ", \"backend\": \"cpu\", \"gpu\": \"cpu\"";
    snprintf(text, sizeof text, "{\"model\": \"%s\", \"seq_len\": 32, \"gpus_per_node\": 8, \"layers\": 1, "
             "\"configs\": [{\"tp\": 1}]%s%s}", model, cpu, extra);
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    pdbx_spec_defaults(s);
    int rc = pdbx_spec_from_json(o, "test", s, err, sizeof err);
    cJSON_Delete(o);
    if (rc != 0)
        fail_msg("%s", err);
}

static void test_parameters_by_hand(void **state)
{
    (void)state;
    pdbx_spec s;
    spec_of(&s, TINYLLAMA, "");
    /* hidden 2048, 32 heads and 4 kv heads of 64, intermediate 5632: input_norm 2048, q and o
     * 2048 x 2048 / TP each, k and v 2048 x (4 / TP heads x 64) each; post_attn_norm 2048, gate,
     * up and down 2048 x 5632 / TP each */
    assert_true(pdbx_optimizer_params(&s.model, 1, 1) == 2048.0 + 2 * 2048.0 * 2048 + 2 * 2048.0 * 256 +
                                                         2048 + 3 * 2048.0 * 5632);   /* 44044288 */
    assert_true(pdbx_optimizer_params(&s.model, 2, 1) == 2048.0 + 2048.0 * 2048 + 2 * 2048.0 * 128 +
                                                         2048 + 3 * 2048.0 * 2816);   /* 22024192 */
    /* the tiny Mixtral: hidden 256, 4 heads and 2 kv heads of 64, 8 experts of 512: the router
     * 256 x 8 and E / EP experts of 3 x 256 x 512 */
    spec_of(&s, MIXTRAL, "");
    const double attn = 256 + 2 * 256.0 * 256 + 2 * 256.0 * 128, moe_common = 256 + 256.0 * 8;
    assert_true(pdbx_optimizer_params(&s.model, 1, 1) == attn + moe_common + 8 * 3 * 256.0 * 512);
    assert_true(pdbx_optimizer_params(&s.model, 1, 2) == attn + moe_common + 4 * 3 * 256.0 * 512);
}

static void test_shape_flops_bytes(void **state)
{
    (void)state;
    pdbx_spec s;
    spec_of(&s, TINYLLAMA, ", \"dtype\": \"fp32\", \"passes\": [\"fwd\", \"bwd\"]");
    pdbx_op_shape sh;
    assert_int_equal(pdbx_op_shape_for(&s, 1, 4, PDBX_OP_OPTIMIZER, &sh), 0);
    assert_int_equal(sh.m, 1);
    assert_int_equal(sh.n, 44044288);
    assert_int_equal(sh.k, 0);
    assert_true(sh.flops == PDBX_ADAMW_FLOPS_PER_PARAM * 44044288.0);
    assert_true(sh.bytes == 32.0 * 44044288);   /* p, g, m, v read; p, m, v written; g zeroed */
    pdbx_op_shape at8;   /* no dependence on the micro-batch */
    assert_int_equal(pdbx_op_shape_for(&s, 1, 8, PDBX_OP_OPTIMIZER, &at8), 0);
    assert_memory_equal(&sh, &at8, sizeof sh);
    spec_of(&s, TINYLLAMA, ", \"dtype\": \"bf16\", \"passes\": [\"fwd\", \"bwd\"]");
    assert_int_equal(pdbx_op_shape_for(&s, 2, 1, PDBX_OP_OPTIMIZER, &sh), 0);
    assert_true(sh.bytes == 34.0 * 22024192);   /* and the bf16 copy written */
    spec_of(&s, MIXTRAL, ", \"dtype\": \"fp32\", \"passes\": [\"fwd\", \"bwd\"]");
    assert_int_equal(pdbx_op_shape_ep(&s, 1, 2, 1, PDBX_OP_OPTIMIZER, &sh), 0);
    assert_int_equal(sh.n, (int64_t)pdbx_optimizer_params(&s.model, 1, 2));
}

static void test_spec_ops(void **state)
{
    (void)state;
    pdbx_spec s;
    const pdbx_opmask bit = PDBX_OP_BIT(PDBX_OP_OPTIMIZER);
    spec_of(&s, TINYLLAMA, ", \"passes\": [\"fwd\", \"bwd\"]");
    assert_true(pdbx_spec_ops(&s) & bit);
    spec_of(&s, TINYLLAMA, ", \"passes\": [\"fwd\"]");
    assert_false(pdbx_spec_ops(&s) & bit);   /* nothing to step without a backward */
    spec_of(&s, TINYLLAMA, ", \"passes\": [\"fwd\", \"bwd\"], \"backend\": \"cuda\", \"gpu\": \"A100-80G\"");
    assert_false(pdbx_spec_ops(&s) & bit);   /* no cuda kernel yet */
    spec_of(&s, TINYLLAMA, ", \"passes\": [\"fwd\", \"bwd\"], \"backend\": \"auto\", \"gpu\": \"A100-80G\"");
    assert_false(pdbx_spec_ops(&s) & bit);
    assert_true(pdbx_model_ops(&s.model) & bit);   /* every model has one */
    assert_false(pdbx_op_is_per_layer(PDBX_OP_OPTIMIZER));
    assert_false(pdbx_op_has_bwd(PDBX_OP_OPTIMIZER));
    assert_true(pdbx_op_has_bwd(PDBX_OP_LM_HEAD));
    assert_string_equal(pdbx_op_name(PDBX_OP_OPTIMIZER), "optimizer");
    assert_int_equal(pdbx_op_from_name("optimizer"), PDBX_OP_OPTIMIZER);
}

/* the listed bytes of role r in the cpu profile memory of spec s at TP 1, MBS 1 (0: not listed) */
static double listed(const pdbx_spec *s, pdbx_buf_role r, pdbx_mem_kind *kind)
{
    const pdbx_parallel par = { 1, 1, 1, 1 };
    pdbx_profile_point pp;
    pdbx_profile_point_of(s, &par, 1, PDBX_BACKEND_CPU, 1, &pp);
    pdbx_profile_memory pm;
    char err[256];
    assert_int_equal(pdbx_profile_memory_list(&pp, &pm, err, sizeof err), 0);
    for (int i = 0; i < pm.nbufs; i++)
        if (pm.buf[i].role == r) {
            *kind = pm.buf[i].kind;
            return pm.buf[i].bytes * pm.buf[i].count;
        }
    return 0;
}

static void test_cpu_profile_memory(void **state)
{
    (void)state;
    pdbx_spec s;
    pdbx_mem_kind k;
    const double n = 44044288, lines = ceil(n * 4 / 64) * 64;
    spec_of(&s, TINYLLAMA, ", \"dtype\": \"fp32\", \"passes\": [\"fwd\", \"bwd\"]");
    const pdbx_buf_role weights[] = { PDBX_BUF_OPT_MASTER, PDBX_BUF_OPT_M, PDBX_BUF_OPT_V };
    for (size_t i = 0; i < 3; i++) {
        assert_true(listed(&s, weights[i], &k) == lines);
        assert_int_equal(k, PDBX_MEM_WEIGHTS);
    }
    assert_true(listed(&s, PDBX_BUF_OPT_GRAD, &k) == lines);
    assert_int_equal(k, PDBX_MEM_GRADS);
    assert_true(listed(&s, PDBX_BUF_OPT_GRAD_ZEROED, &k) == lines);   /* zero_grad_buffer's */
    assert_int_equal(k, PDBX_MEM_GRADS);
    assert_true(listed(&s, PDBX_BUF_OPT_MODEL_LP, &k) == 0);   /* fp32: the master is the model */
    spec_of(&s, TINYLLAMA, ", \"dtype\": \"bf16\", \"passes\": [\"fwd\", \"bwd\"]");
    assert_true(listed(&s, PDBX_BUF_OPT_MODEL_LP, &k) == ceil(n * 2 / 64) * 64);
    spec_of(&s, TINYLLAMA, ", \"dtype\": \"fp32\", \"passes\": [\"fwd\"]");
    assert_true(listed(&s, PDBX_BUF_OPT_MASTER, &k) == 0);
    assert_true(listed(&s, PDBX_BUF_OPT_GRAD, &k) == 0);
    assert_true(listed(&s, PDBX_BUF_OPT_GRAD_ZEROED, &k) == 0);
    assert_string_equal(pdbx_buf_role_name(PDBX_BUF_OPT_V), "optimizer v");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameters_by_hand),
        cmocka_unit_test(test_shape_flops_bytes),
        cmocka_unit_test(test_spec_ops),
        cmocka_unit_test(test_cpu_profile_memory),
    };
    return cmocka_run_group_tests_name("plan_optimizer", tests, NULL, NULL);
}
