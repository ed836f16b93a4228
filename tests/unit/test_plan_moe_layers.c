/* test_plan_moe_layers.c: the planner's side of measuring MoE layers: the layer kinds of a
 * profile (pdbx_layer_is_moe, pdbx_layer_has_op, pdbx_layer_for_rep), the spec's moe_routing
 * (read, written, set, refused), the MoE shapes under an imbalance, the MoE validation rules and
 * the cpu profile memory's MoE buffers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "engine/plan/plan.h"

#define TINY_MIXTRAL PDBX_SOURCE_DIR "/tests/e2e/fixtures/engine-tiny-mixtral.json"

static void model_from_text(const char *text, pdbx_model *m)
{
    char err[512] = "";
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    int rc = pdbx_model_from_json(o, "inline.json", m, err, sizeof err);
    if (rc != 0)
        print_error("%s\n", err);
    assert_int_equal(rc, 0);
    cJSON_Delete(o);
}

/* A Mixtral-shaped model whose first `dense` of 10 layers are dense (DeepSeek's
 * first_k_dense_replace, read from any config). */
static void mixed_model(pdbx_model *m, int dense)
{
    char text[512];
    snprintf(text, sizeof text, "{\"model_type\": \"mixtral\", \"hidden_size\": 64, \"intermediate_size\": 128, "
             "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"num_hidden_layers\": 10, \"vocab_size\": 256, "
             "\"num_local_experts\": 4, \"num_experts_per_tok\": 2, \"first_k_dense_replace\": %d}", dense);
    model_from_text(text, m);
}

static void test_layer_kinds(void **state)
{
    (void)state;
    pdbx_model m;
    mixed_model(&m, 3);
    /* one profiled layer: a MoE one (validation refuses this for a mixed model, below) */
    assert_true(pdbx_layer_is_moe(&m, 1, 0));
    /* two: one of each, dense first as in the model */
    assert_false(pdbx_layer_is_moe(&m, 2, 0));
    assert_true(pdbx_layer_is_moe(&m, 2, 1));
    /* five: the model's 3 dense, then 2 MoE */
    for (int l = 0; l < 5; l++)
        assert_int_equal(pdbx_layer_is_moe(&m, 5, l), l >= 3);
    assert_int_equal(pdbx_profiled_moe_layers(&m, 5), 2);
    assert_true(pdbx_layer_has_op(&m, 5, 0, PDBX_OP_MLP_GATE));
    assert_false(pdbx_layer_has_op(&m, 5, 0, PDBX_OP_MOE_EXPERT_GATE));
    assert_false(pdbx_layer_has_op(&m, 5, 4, PDBX_OP_MLP_DOWN));
    assert_true(pdbx_layer_has_op(&m, 5, 4, PDBX_OP_MOE_ROUTER));
    assert_true(pdbx_layer_has_op(&m, 5, 4, PDBX_OP_ATTN_Q));   /* attention on every layer */
    /* the op phase's layers: an op's repetitions cycle over the layers that run it */
    assert_int_equal(pdbx_layers_with_op(&m, 5, PDBX_OP_MOE_EXPERT_UP), 2);
    assert_int_equal(pdbx_layer_for_rep(&m, 5, PDBX_OP_MOE_EXPERT_UP, 0), 3);
    assert_int_equal(pdbx_layer_for_rep(&m, 5, PDBX_OP_MOE_EXPERT_UP, 1), 4);
    assert_int_equal(pdbx_layer_for_rep(&m, 5, PDBX_OP_MOE_EXPERT_UP, 2), 3);
    assert_int_equal(pdbx_layer_for_rep(&m, 5, PDBX_OP_MLP_UP, 7), 1);
    assert_int_equal(pdbx_layer_for_rep(&m, 5, PDBX_OP_ATTN_O, 7), 2);
    /* no dense layer (Mixtral) and a dense model: one kind */
    mixed_model(&m, 0);
    assert_int_equal(pdbx_profiled_moe_layers(&m, 4), 4);
    assert_int_equal(pdbx_layer_for_rep(&m, 4, PDBX_OP_MLP_UP, 0), -1);
    pdbx_model d;
    char err[256];
    assert_int_equal(pdbx_model_load("llama1b", &d, err, sizeof err), 0);
    assert_int_equal(pdbx_profiled_moe_layers(&d, 4), 0);
    assert_true(pdbx_layer_has_op(&d, 4, 3, PDBX_OP_MLP_UP));
}

static void tiny_spec(pdbx_spec *s)
{
    char err[512] = "";
    pdbx_spec_defaults(s);
    assert_int_equal(pdbx_spec_set(s, "model", TINY_MIXTRAL, err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(s, "gpu", "cpu", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(s, "dtype", "fp32", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(s, "seq_len", "32", err, sizeof err), 0);
}

static void test_moe_routing_field(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "", buf[64];
    tiny_spec(&s);
    assert_true(s.moe_imbalance == 1.0);
    assert_int_equal(pdbx_spec_field_text(&s, "moe_routing", buf, sizeof buf), 0);
    assert_string_equal(buf, "balanced");
    assert_int_equal(pdbx_spec_set(&s, "moe_routing", "{\"imbalance\": 2.5}", err, sizeof err), 0);
    assert_true(s.moe_imbalance == 2.5);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
    assert_int_equal(pdbx_spec_field_text(&s, "moe_routing", buf, sizeof buf), 0);
    assert_string_equal(buf, "{\"imbalance\":2.5}");
    /* written and read back */
    cJSON *j = pdbx_spec_to_json(&s);
    assert_non_null(j);
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "moe_routing");
    assert_true(cJSON_IsObject(r) && cJSON_GetObjectItemCaseSensitive(r, "imbalance")->valuedouble == 2.5);
    pdbx_spec t;
    pdbx_spec_defaults(&t);
    assert_int_equal(pdbx_spec_from_json(j, "round trip", &t, err, sizeof err), 0);
    assert_true(t.moe_imbalance == 2.5);
    cJSON_Delete(j);
    assert_int_equal(pdbx_spec_set(&s, "moe_routing", "balanced", err, sizeof err), 0);
    assert_true(s.moe_imbalance == 1.0);
    /* refusals: one line naming the field, the value and what is allowed */
    assert_int_equal(pdbx_spec_set(&s, "moe_routing", "{\"imbalance\": 0.5}", err, sizeof err), -1);
    assert_non_null(strstr(err, "moe_routing.imbalance"));
    assert_int_equal(pdbx_spec_set(&s, "moe_routing", "{\"imbalance\": 65}", err, sizeof err), -1);
    assert_int_equal(pdbx_spec_set(&s, "moe_routing", "{\"skew\": 2}", err, sizeof err), -1);
    assert_non_null(strstr(err, "moe_routing: unknown key \"skew\" (allowed: \"balanced\" or {\"imbalance\": F}"));
    assert_int_equal(pdbx_spec_set(&s, "moe_routing", "skewed", err, sizeof err), -1);
    assert_non_null(strstr(err, "moe_routing: \"skewed\" (allowed:"));
    /* a dense model takes "balanced" (what it does anyway) and refuses an imbalance */
    assert_int_equal(pdbx_spec_set(&s, "model", "llama1b", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "moe_routing", "{\"imbalance\": 2}", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), -1);
    assert_non_null(strstr(err, "needs a mixture-of-experts model (model Llama-3.2-1B is dense"));
}

/* At EP 1 an imbalance moves rows between the experts: the expert GEMMs' FLOPs stay, the
 * busiest expert's rows (shape m) grow f-fold. */
static void test_shapes_imbalance(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[256];
    tiny_spec(&s);
    pdbx_op_shape b, i;
    assert_int_equal(pdbx_op_shape_for(&s, 2, 4, PDBX_OP_MOE_EXPERT_GATE, &b), 0);
    assert_int_equal(pdbx_spec_set(&s, "moe_routing", "{\"imbalance\": 2}", err, sizeof err), 0);
    assert_int_equal(pdbx_op_shape_for(&s, 2, 4, PDBX_OP_MOE_EXPERT_GATE, &i), 0);
    /* T = 128, TP 2: R = 64 rows, X = 128 copies over 8 experts: 16 each, or 32 for expert 0 */
    assert_true(b.flops == i.flops);
    assert_true(b.flops == 2.0 * 128 * 256 * 512);
    assert_int_equal(b.m, 16);
    assert_int_equal(i.m, 32);
}

static void test_validation(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "";
    tiny_spec(&s);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "dtype", "bf16", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), -1);
    assert_non_null(strstr(err, "dtype: bf16: the cpu backend runs model engine-tiny-mixtral's mixture-of-experts "
                                "ops in fp32 only"));
    pdbx_spec_defaults(&s);
    mixed_model(&s.model, 3);
    assert_int_equal(pdbx_spec_set(&s, "gpu", "cpu", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "dtype", "fp32", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "layers", "1", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), -1);
    assert_non_null(strstr(err, "layers: 1 would profile only a dense layer"));
    assert_int_equal(pdbx_spec_set(&s, "layers", "2", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
}

static double role_bytes(const pdbx_profile_memory *pm, pdbx_buf_role r, int *count)
{
    for (int i = 0; i < pm->nbufs; i++)
        if (pm->buf[i].role == r) {
            *count = pm->buf[i].count;
            return pm->buf[i].bytes;
        }
    *count = 0;
    return 0;
}

/* cpu profile memory: the MoE buffers listed, the dense MLP's rows and weights not; weights one
 * set per profiled MoE layer; gradients with bwd. */
static void test_profile_memory(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[256];
    tiny_spec(&s);
    assert_int_equal(pdbx_spec_set(&s, "layers", "2", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "passes", "fwd,bwd", err, sizeof err), 0);
    pdbx_parallel par = { 1, 1, 1, 1 };
    pdbx_profile_point p;
    pdbx_profile_point_of(&s, &par, 1, PDBX_BACKEND_CPU, 1, &p);
    pdbx_profile_memory pm;
    assert_int_equal(pdbx_profile_memory_list(&p, &pm, err, sizeof err), 0);
    int n;
    assert_true(role_bytes(&pm, PDBX_BUF_L_EXPERT_GATE, &n) == 8.0 * 256 * 512 * 4);
    assert_int_equal(n, 2);
    assert_true(role_bytes(&pm, PDBX_BUF_MOE_ROWS, &n) == 32.0 * 2 * 256 * 4);   /* X = 64 copies */
    assert_true(role_bytes(&pm, PDBX_BUF_GRAD_W_EXPERT_DOWN, &n) == 8.0 * 512 * 256 * 4);
    assert_true(role_bytes(&pm, PDBX_BUF_MOE_OFFSETS, &n) == 128);   /* 9 int64 in whole lines */
    role_bytes(&pm, PDBX_BUF_GATE, &n);
    assert_int_equal(n, 0);        /* no dense MLP rows */
    role_bytes(&pm, PDBX_BUF_L_GATE, &n);
    assert_int_equal(n, 0);
    role_bytes(&pm, PDBX_BUF_L_SHARED_GATE, &n);
    assert_int_equal(n, 0);        /* Mixtral has no shared expert */
    assert_string_equal(pdbx_buf_role_name(PDBX_BUF_L_ROUTER), "layer router");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layer_kinds),
        cmocka_unit_test(test_moe_routing_field),
        cmocka_unit_test(test_shapes_imbalance),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_profile_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
