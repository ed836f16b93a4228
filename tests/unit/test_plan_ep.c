/* test_plan_ep.c: expert parallelism in the planner: the ep of a configuration in the JSON
 * configs, the cross-product lists, the TPxPPxDPxEP text and the overrides (each read back to
 * the same spec), its validation (a MoE model, experts % ep, ep dividing tp x dp), and what ep
 * changes: the expert ops' rows and FLOPs on the measured rank, the all-to-all's message, the
 * profile memory's expert buffers and comm buffer, and the training memory's experts / ep.
 * Numbers are worked out by hand from the tiny Mixtral fixture (hidden 256, 8 experts of width
 * 512, top 2) at seq 32. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/plan/plan.h"
#include "engine/plan/plan_comm.h"
#include "engine/plan/plan_internal.h"

#define MIXTRAL PDBX_SOURCE_DIR "/tests/e2e/fixtures/engine-tiny-mixtral.json"

static int from_text(const char *text, pdbx_spec *s, char *err, size_t errlen)
{
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    pdbx_spec_defaults(s);
    int rc = pdbx_spec_from_json(o, "test", s, err, errlen);
    cJSON_Delete(o);
    return rc;
}

#define SPEC(configs) "{\"model\": \"" MIXTRAL "\", \"seq_len\": 32, \"dtype\": \"fp32\", \"backend\": \"cpu\", " \
                      "\"gpus_per_node\": 8, \"layers\": 1, " configs "}"

static void test_configs_read_and_written(void **state)
{
    (void)state;
    pdbx_spec s, back;
    char err[512] = "";
    assert_int_equal(from_text(SPEC("\"configs\": [{\"tp\": 1, \"dp\": 2}, {\"tp\": 1, \"dp\": 2, \"ep\": 2}]"), &s,
                               err, sizeof err), 0);
    assert_int_equal(s.nconfigs, 2);
    assert_int_equal(pdbx_par_ep(&s.configs[0]), 1);
    assert_int_equal(s.configs[1].ep, 2);
    /* the text form and the JSON round trip keep it; ep 1 is not written */
    char text[256];
    assert_int_equal(pdbx_spec_field_text(&s, "configs", text, sizeof text), 0);
    assert_string_equal(text, "1x1x2,1x1x2x2");
    cJSON *j = pdbx_spec_to_json(&s);
    const cJSON *cs = cJSON_GetObjectItemCaseSensitive(j, "configs");
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cs, 0), "ep"));
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cs, 1), "ep")->valueint, 2);
    pdbx_spec_defaults(&back);
    assert_int_equal(pdbx_spec_from_json(j, "back", &back, err, sizeof err), 0);
    cJSON_Delete(j);
    assert_int_equal(back.nconfigs, 2);
    assert_int_equal(back.configs[1].ep, 2);
    /* set from text, with the fourth number */
    assert_int_equal(pdbx_spec_set(&s, "configs", "1x1x4x2,1x1x4x4,2x1x2", err, sizeof err), 0);
    assert_int_equal(s.nconfigs, 3);
    assert_int_equal(s.configs[1].ep, 4);
    assert_int_equal(pdbx_par_ep(&s.configs[2]), 1);
    assert_int_equal(pdbx_spec_set(&s, "configs", "1x1x2x", err, sizeof err), -1);
    assert_string_equal(err, "configs: expected TPxPPxDP or TPxPPxDPxEP (e.g. 2x4x1, 1x1x4x2), got \"1x1x2x\"");
    assert_int_equal(pdbx_spec_set(&s, "configs", "1x1x2x2,1x1x2x2", err, sizeof err), -1);
    assert_string_equal(err, "configs: TP1/PP1/DP2/EP2 is listed twice (allowed: each configuration once)");
}

static void test_lists_and_overrides(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "";
    /* an ep list crosses tp x dp; an ep that does not divide tp x dp is skipped */
    assert_int_equal(from_text(SPEC("\"tp\": [1, 2], \"dp\": [1, 2], \"ep\": [1, 2]"), &s, err, sizeof err), 0);
    static const pdbx_parallel want[] = {{1, 1, 1, 1}, {1, 1, 2, 1}, {1, 1, 2, 2}, {2, 1, 1, 1}, {2, 1, 1, 2},
                                         {2, 1, 2, 1}, {2, 1, 2, 2}};
    assert_int_equal(s.nconfigs, 7);
    for (int i = 0; i < 7; i++) {
        assert_int_equal(s.configs[i].tp, want[i].tp);
        assert_int_equal(s.configs[i].dp, want[i].dp);
        assert_int_equal(s.configs[i].ep, want[i].ep);
    }
    /* ep L replaces the EP of each (tp, pp, dp); dp keeps the current EPs */
    assert_int_equal(pdbx_spec_set(&s, "configs", "1x1x2", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "ep", "1,2", err, sizeof err), 0);
    assert_int_equal(s.nconfigs, 2);
    assert_int_equal(s.configs[1].ep, 2);
    assert_int_equal(pdbx_spec_set(&s, "dp", "4", err, sizeof err), 0);
    assert_int_equal(s.nconfigs, 2);
    assert_int_equal(s.configs[0].dp, 4);
    assert_int_equal(s.configs[1].dp, 4);
    assert_int_equal(s.configs[1].ep, 2);
    char text[256];
    assert_int_equal(pdbx_spec_field_text(&s, "configs", text, sizeof text), 0);
    assert_string_equal(text, "1x1x4,1x1x4x2");
}

static void test_validation(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "";
    assert_int_equal(from_text(SPEC("\"configs\": [{\"tp\": 1, \"dp\": 2, \"ep\": 3}]"), &s, err, sizeof err), -1);
    assert_string_equal(err, "ep: 3 does not divide model engine-tiny-mixtral's 8 experts (allowed: a divisor of 8)");
    assert_int_equal(from_text(SPEC("\"configs\": [{\"tp\": 1, \"dp\": 2, \"ep\": 4}]"), &s, err, sizeof err), -1);
    assert_string_equal(err, "ep: 4 does not divide tp 1 x dp 2 = 2 of configuration TP1/PP1/DP2 (allowed: a divisor "
                             "of tp x dp: the EP ranks are taken from a stage's TP and DP ranks, expert tensor "
                             "parallelism 1)");
    /* TP ranks join the EP group first (Megatron's tp-ep-dp-pp order with etp 1) */
    assert_int_equal(from_text(SPEC("\"configs\": [{\"tp\": 2, \"dp\": 1, \"ep\": 2}]"), &s, err, sizeof err), 0);
    cJSON *o = cJSON_Parse("{\"model\": \"llama1b\", \"layers\": 1, \"configs\": [{\"tp\": 1, \"dp\": 2, \"ep\": 2}]}");
    pdbx_spec_defaults(&s);
    assert_int_equal(pdbx_spec_from_json(o, "t", &s, err, sizeof err), -1);
    cJSON_Delete(o);
    assert_non_null(strstr(err, "ep: 2 needs a mixture-of-experts model"));
}

static void test_shapes_and_message(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "";
    assert_int_equal(from_text(SPEC("\"configs\": [{\"tp\": 1, \"dp\": 2, \"ep\": 2}]"), &s, err, sizeof err), 0);
    pdbx_op_shape one, two;
    /* balanced, MBS 1: R = 32 rows, 64 copies; at EP 2 the rank's 4 experts receive 64 rows
     * (16 each), as at EP 1 its 8 do (8 each) */
    assert_int_equal(pdbx_op_shape_for(&s, 1, 1, PDBX_OP_MOE_EXPERT_GATE, &one), 0);
    assert_int_equal(pdbx_op_shape_ep(&s, 1, 2, 1, PDBX_OP_MOE_EXPERT_GATE, &two), 0);
    assert_int_equal(one.batch, 8);
    assert_int_equal(two.batch, 4);
    assert_int_equal(one.m, 8);
    assert_int_equal(two.m, 16);
    assert_true(one.flops == two.flops);
    assert_true(one.flops == 2.0 * 64 * 512 * 256);
    /* the all-to-all: every block 32 rows of 256 fp32, x 2 ranks */
    assert_true(pdbx_plan_ep_bytes(&s.model, 1, 2, 1, 32, PDBX_DTYPE_FP32, 1) == 32.0 * 2 * 256 * 4);
    assert_int_equal(pdbx_op_shape_ep(&s, 1, 2, 1, PDBX_OP_EP_DISPATCH, &two), 0);
    assert_true(two.bytes == 65536);
    assert_true(two.flops == 0);
    assert_true(pdbx_plan_ep_bytes(&s.model, 1, 1, 1, 32, PDBX_DTYPE_FP32, 1) == 0);
    /* imbalance 2: expert 0 gets round(2 x 128 / 8) = 32 of the 128 copies, 1..5 14 and 6, 7 13:
     * rank 0 receives 32 + 14 x 3 = 74 rows, 37 from each rank: the largest block */
    s.moe_imbalance = 2;
    assert_int_equal(pdbx_op_shape_ep(&s, 1, 2, 1, PDBX_OP_MOE_EXPERT_UP, &two), 0);
    assert_true(two.flops == 2.0 * 74 * 512 * 256);
    assert_int_equal(two.m, 32);
    assert_true(pdbx_plan_ep_bytes(&s.model, 1, 2, 1, 32, PDBX_DTYPE_FP32, 2) == 37.0 * 2 * 256 * 4);
    /* permute and unpermute move the rank's own copies whatever the routing */
    assert_int_equal(pdbx_op_shape_ep(&s, 1, 2, 1, PDBX_OP_MOE_PERMUTE, &two), 0);
    assert_int_equal(two.m, 64);
}

/* Gradient reduction (Megatron's expert data parallel group, etp 1): the routed experts' over
 * the tp x dp / ep ranks that hold the same experts, the rest over DP. The model's 4 layers x 8
 * experts x gate, up, down of 256 x 512 in fp32: 50,331,648 B at EP 1. */
static void test_expert_dp_gradients(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "";
    assert_int_equal(from_text(SPEC("\"configs\": [{\"tp\": 1, \"dp\": 2, \"ep\": 2}]"), &s, err, sizeof err), 0);
    const double experts = 4.0 * 8 * 3 * 256 * 512 * 4;
    const struct { int tp, dp, ep, edp; double edp_bytes; } c[] = {
        { 1, 2, 1, 2, experts }, { 1, 2, 2, 1, 0 }, { 2, 1, 1, 2, experts }, { 2, 2, 2, 2, experts / 2 },
        { 1, 4, 2, 2, experts / 2 }, { 1, 1, 1, 1, 0 },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        const pdbx_parallel par = { c[i].tp, 1, c[i].dp, c[i].ep };
        pdbx_plan_comm pc, whole;
        pdbx_plan_comm_point(&s.model, &par, 1, 32, PDBX_DTYPE_FP32, PDBX_BACKEND_CUDA, 1, &pc);
        assert_int_equal(pc.edp, c[i].edp);
        assert_true(pc.edp_full_bytes == c[i].edp_bytes);
        if (c[i].dp > 1)   /* DP moves the stage's parameters less every routed expert */
            assert_true(fabs(pc.dp_full_bytes - (plan_stage_params(&s.model, c[i].tp, 1) * 4 - experts)) < 1);
        else
            assert_true(pc.dp_full_bytes == 0);
        pdbx_plan_comm_bytes(&s.model, c[i].tp, 1, c[i].dp, 1, 32, PDBX_DTYPE_FP32, PDBX_BACKEND_CUDA, &whole);
        assert_int_equal(whole.edp, 0);   /* without the config's ep: no EDP sizing */
        assert_true(whole.dp_full_bytes == pc.dp_full_bytes);
    }
    assert_int_equal(pdbx_plan_expert_dp(1, 3, 2), 0);
}

static double buf_bytes(const pdbx_profile_memory *pm, pdbx_buf_role r)
{
    for (int i = 0; i < pm->nbufs; i++)
        if (pm->buf[i].role == r)
            return pm->buf[i].bytes * pm->buf[i].count;
    return 0;
}

static void test_memory(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "";
    assert_int_equal(from_text(SPEC("\"configs\": [{\"tp\": 1, \"dp\": 2}, {\"tp\": 1, \"dp\": 2, \"ep\": 2}], "
                                    "\"moe_routing\": {\"imbalance\": 2}, \"passes\": [\"fwd\", \"bwd\"]"),
                               &s, err, sizeof err), 0);
    pdbx_profile_point p1, p2;
    pdbx_profile_memory m1, m2;
    pdbx_profile_point_of(&s, &s.configs[0], 1, PDBX_BACKEND_CPU, 1, &p1);
    pdbx_profile_point_of(&s, &s.configs[1], 1, PDBX_BACKEND_CPU, 1, &p2);
    assert_int_equal(pdbx_profile_memory_list(&p1, &m1, err, sizeof err), 0);
    assert_int_equal(pdbx_profile_memory_list(&p2, &m2, err, sizeof err), 0);
    /* half the experts' weights; 74 received rows for the experts' activations; the comm buffer
     * holds at least the all-to-all's send and receive halves (2 S; the DP bucket may be larger) */
    assert_true(buf_bytes(&m2, PDBX_BUF_L_EXPERT_GATE) * 2 == buf_bytes(&m1, PDBX_BUF_L_EXPERT_GATE));
    assert_true(buf_bytes(&m2, PDBX_BUF_MOE_GATE) == 74.0 * 512 * 4);
    assert_true(buf_bytes(&m1, PDBX_BUF_MOE_GATE) == 64.0 * 512 * 4);
    assert_true(buf_bytes(&m2, PDBX_BUF_MOE_ROWS) == 74.0 * 256 * 4);
    assert_true(m2.ep_bytes == 37.0 * 2 * 256 * 4);
    assert_true(m1.ep_bytes == 0);
    assert_true(buf_bytes(&m2, PDBX_BUF_COMM) >= 2 * m2.ep_bytes);
    /* training memory: the experts' weights, gradients and optimizer states halve */
    pdbx_memory t1, t2;
    pdbx_memory_predict(&s, &s.configs[0], 1, &t1);
    pdbx_memory_predict(&s, &s.configs[1], 1, &t2);
    const double experts = 4.0 * 8 * 3 * 256 * 512;   /* 4 layers of 8 experts */
    assert_true(fabs((t1.params_per_rank - t2.params_per_rank) - experts / 2) < 0.5);
    assert_true(t2.activations - t1.activations == 2 * m2.ep_bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_configs_read_and_written),
        cmocka_unit_test(test_lists_and_overrides),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_shapes_and_message),
        cmocka_unit_test(test_expert_dp_gradients),
        cmocka_unit_test(test_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
