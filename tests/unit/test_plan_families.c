/* test_plan_families.c: what the planner knows of the dense families beyond Llama (issue 24,
 * item 4): the norm and position kinds read from each family's config.json (gpt2: LayerNorm and
 * a learned position table; gpt-neox and gpt-j: LayerNorm with rotary), the ops a model has
 * (pdbx_model_ops: no mlp_gate for a plain MLP, no attn_rope for learned positions), and the
 * shapes of the ops that change, by hand on gpt2's fixture (h 768, 12 heads, n_inner 3072,
 * vocab 50257) at seq 1024, MBS 2, fp32:
 *   T = 2048; embed: T h = 1572864 adds, bytes 4 (3 T h + s h) = 4 (4718592 + 786432) = 22020096
 *   a LayerNorm: 7 T h = 11010048 FLOPs, bytes 4 (2 T h + 2 h) = 12589056
 *   mlp_act_fn (gelu_new, plain): 9 T I = 9 x 2048 x 3072 = 56623104 FLOPs, bytes 4 x 2 T I =
 *     50331648
 *   mlp_up (c_fc): [2048 x 768] x [768 x 3072] with its bias: 2 T h I + T I = 9663676416 + 6291456
 * and a Llama's stay what they were (SiLU x up 4 per element, RMSNorm 4); gemma-2-9b's
 * parameter count with its four norms per layer. */
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
/* the ops of a Llama layer: all but qwen3's attn_qk_norm */
#define LLAMA_OPS PDBX_OPS_LLAMA

static void load(const char *file, pdbx_spec *s)
{
    char path[1024], err[1024] = "";
    pdbx_spec_defaults(s);
    snprintf(path, sizeof path, FIXTURES "%s", file);
    int rc = pdbx_model_load(path, &s->model, err, sizeof err);
    if (rc != 0)
        print_error("%s: %s\n", file, err);
    assert_int_equal(rc, 0);
    s->seq_len = 1024;
    s->dtype = PDBX_DTYPE_FP32;
}

static void test_kinds(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        pdbx_norm_kind norm;
        pdbx_position_kind position;
    } cases[] = {
        {"gpt2.json", PDBX_NORM_LAYER, PDBX_POS_LEARNED},
        {"pythia-160m.json", PDBX_NORM_LAYER, PDBX_POS_ROPE},
        {"gpt-j-6b.json", PDBX_NORM_LAYER, PDBX_POS_ROPE},
        {"gemma-2-9b.json", PDBX_NORM_RMS, PDBX_POS_ROPE},
        {"Qwen2.5-7B.json", PDBX_NORM_RMS, PDBX_POS_ROPE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pdbx_spec s;
        load(cases[i].file, &s);
        assert_int_equal(s.model.arch.norm, cases[i].norm);
        assert_int_equal(s.model.arch.position, cases[i].position);
    }
}

static void test_model_ops(void **state)
{
    (void)state;
    pdbx_spec s;
    load("gpt2.json", &s);
    const pdbx_opmask gpt2 = pdbx_model_ops(&s.model);
    assert_true(!(gpt2 & PDBX_OP_BIT(PDBX_OP_MLP_GATE)) && !(gpt2 & PDBX_OP_BIT(PDBX_OP_ATTN_ROPE)));
    assert_true(gpt2 == (LLAMA_OPS & ~(PDBX_OP_BIT(PDBX_OP_MLP_GATE) | PDBX_OP_BIT(PDBX_OP_ATTN_ROPE))));
    load("pythia-160m.json", &s);   /* plain MLP, rotary */
    assert_true(pdbx_model_ops(&s.model) == (LLAMA_OPS & ~PDBX_OP_BIT(PDBX_OP_MLP_GATE)));
    load("Qwen2.5-7B.json", &s);    /* a Llama layer: every op but qwen3's attn_qk_norm */
    assert_true(pdbx_model_ops(&s.model) == LLAMA_OPS);
    /* qwen3's per-head q/k norm: its op joins, and both backends run it */
    char err[512] = "";
    s.model.arch.qk_norm = 1;
    assert_true(pdbx_model_ops(&s.model) == (LLAMA_OPS | PDBX_OP_BIT(PDBX_OP_ATTN_QK_NORM)));
    assert_int_equal(pdbx_backend_model_check(PDBX_BACKEND_CPU, &s.model, err, sizeof err), 0);
    assert_int_equal(pdbx_backend_model_check(PDBX_BACKEND_CUDA, &s.model, err, sizeof err), 0);
}

static void shape(const pdbx_spec *s, pdbx_op op, pdbx_op_shape *o)
{
    assert_int_equal(pdbx_op_shape_for(s, 1, 2, op, o), 0);
}

static void test_gpt2_shapes(void **state)
{
    (void)state;
    pdbx_spec s;
    load("gpt2.json", &s);
    assert_int_equal(s.model.intermediate, 3072);
    pdbx_op_shape o;
    shape(&s, PDBX_OP_EMBED, &o);
    assert_true(o.flops == 1572864.0 && o.bytes == 22020096.0);
    shape(&s, PDBX_OP_INPUT_NORM, &o);
    assert_true(o.flops == 11010048.0 && o.bytes == 12589056.0);
    shape(&s, PDBX_OP_FINAL_NORM, &o);
    assert_true(o.flops == 11010048.0);
    shape(&s, PDBX_OP_MLP_ACT_FN, &o);
    assert_true(o.flops == 56623104.0 && o.bytes == 50331648.0);
    shape(&s, PDBX_OP_MLP_UP, &o);
    assert_true(o.m == 2048 && o.n == 3072 && o.k == 768 && o.bias);
    assert_true(o.flops == 9663676416.0 + 6291456.0);
    /* gelu (erf, gpt-neox's "gelu") counts 5 per element */
    load("pythia-160m.json", &s);
    shape(&s, PDBX_OP_MLP_ACT_FN, &o);
    assert_true(o.flops == 5.0 * 2048 * s.model.intermediate);
}

/* The gpt2-xl preset (configs/models/gpt2-xl.json) at TP 5 (25 heads, n_inner 6400), MBS 1, seq
 * 1024, by hand: a rank holds 5 heads of 64 (q: n 320) and I/5 = 1280; the vocabulary 50257
 * shards into ceil(50257 / 5) = 10052 rows (the last padded). Every projection has a bias: an
 * add per output element (T n). Parameters of the full model at TP 1: per layer 12 h^2 + 13 h
 * (q/k/v/o 4 h^2 + 4 h biases, fc1/fc2 8 h^2 + 4 h + h, two LayerNorms 4 h), token and
 * position tables (50257 + 1024) h, the final LayerNorm 2 h, tied lm_head: 1557611200 at
 * h 1600 x 48 layers, the count transformers reports for openai-community/gpt2-xl (its card
 * rounds it to "1.5B"), and 124439808 for gpt2 ("124M"). */
static void test_gpt2_xl(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "";
    pdbx_spec_defaults(&s);
    assert_int_equal(pdbx_model_load("gpt2xl", &s.model, err, sizeof err), 0);
    s.seq_len = 1024;
    s.dtype = PDBX_DTYPE_BF16;
    const double T = 1024, h = 1600;
    pdbx_op_shape o;
    assert_int_equal(pdbx_op_shape_for(&s, 5, 1, PDBX_OP_ATTN_Q, &o), 0);
    assert_true(o.m == 1024 && o.n == 320 && o.k == 1600 && o.bias);
    assert_true(o.flops == 2 * T * h * 320 + T * 320);
    assert_int_equal(pdbx_op_shape_for(&s, 5, 1, PDBX_OP_MLP_UP, &o), 0);
    assert_true(o.n == 1280 && o.flops == 2 * T * h * 1280 + T * 1280);
    assert_false(pdbx_model_ops(&s.model) & PDBX_OP_BIT(PDBX_OP_MLP_GATE));   /* a plain MLP */
    assert_int_equal(pdbx_op_shape_for(&s, 5, 1, PDBX_OP_MLP_ACT_FN, &o), 0);
    assert_true(o.flops == 9 * T * 1280);   /* gelu_new, plain */
    assert_int_equal(pdbx_op_shape_for(&s, 5, 1, PDBX_OP_LM_HEAD, &o), 0);
    assert_true(o.n == 10052 && o.k == 1600 && o.flops == 2 * T * h * 10052);
    assert_int_equal(pdbx_op_shape_for(&s, 2, 1, PDBX_OP_ATTN_Q, &o), -1);   /* 25 heads */
    assert_true(plan_stage_params(&s.model, 1, 1) == 1557611200.0);
    pdbx_spec small;
    load("gpt2.json", &small);
    assert_true(plan_stage_params(&small.model, 1, 1) == 124439808.0);
}

/* gpt2 validates at the default TP 1 and 2 (50257 rows: the last shard padded); what it cannot
 * be run with is refused naming the field: fused fc1 (no gate), a seq_len past its position
 * table; both backends run it (cuda refuses only an MLP it has no kernel for). */
static void test_gpt2_validate(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[1024] = "";
    load("gpt2.json", &s);
    s.backend = PDBX_BACKEND_CPU;
    assert_int_equal(pdbx_spec_set(&s, "configs", "1x1x1,2x1x1", err, sizeof err), 0);
    if (pdbx_spec_validate(&s, err, sizeof err) != 0)
        print_error("%s\n", err);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
    s.fused_projections = 1;
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), -1);
    assert_string_equal(err, "fused_projections: true needs a gated MLP, model gpt2's is plain (allowed: false)");
    s.fused_projections = 0;
    s.seq_len = 1025;
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), -1);
    assert_string_equal(err, "seq_len: 1025 is longer than model gpt2's learned position table (allowed: 1..1024, "
                             "its n_positions)");
    s.seq_len = 1024;
    /* both backends run it (cuda: LayerNorm, plain GELU, learned positions since issue 24) */
    assert_int_equal(pdbx_backend_model_check(PDBX_BACKEND_CUDA, &s.model, err, sizeof err), 0);
    assert_int_equal(pdbx_backend_model_check(PDBX_BACKEND_CPU, &s.model, err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "backend", "cuda", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "gpu", "H100-SXM", err, sizeof err), 0);
    if (pdbx_spec_validate(&s, err, sizeof err) != 0)
        print_error("%s\n", err);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
    /* an MLP the cuda backend has no kernel for is refused naming it (the arch check refuses
     * such a model for every backend first) */
    snprintf(s.model.arch.activation, sizeof s.model.arch.activation, "relu");
    assert_int_equal(pdbx_backend_model_check(PDBX_BACKEND_CUDA, &s.model, err, sizeof err), -1);
    assert_string_equal(err, "backend: cuda does not run model gpt2's MLP activation 'relu' (allowed: silu gated, "
                             "gelu or gelu tanh gated or plain)");
    snprintf(s.model.arch.activation, sizeof s.model.arch.activation, "silu");
    assert_int_equal(pdbx_backend_model_check(PDBX_BACKEND_CUDA, &s.model, err, sizeof err), -1);
    assert_non_null(strstr(err, "plain (ungated) SiLU MLP 'silu'"));
    load("Qwen2.5-7B.json", &s);   /* a Llama layer runs on cuda */
    assert_int_equal(pdbx_backend_model_check(PDBX_BACKEND_CUDA, &s.model, err, sizeof err), 0);
}

/* gpt-neox (pythia-160m: h 768, 12 heads of 64, rotary_pct 0.25, parallel residual with two
 * LayerNorms, untied) and gpt-j (one shared ln_1, rotary_dim 64 of 256): RoPE rotates 16 (64)
 * dims of each head, so attn_rope at MBS 2, seq 1024 (T 2048) is 3 FLOPs per rotated element
 * of q and k: 3 x 2048 x 24 x 16 = 2359296, reading and writing them (fp32) and the table
 * [1024, 8] x 2: 4 (2 x 2048 x 384 + 1024 x 16 x 4 / 4) = 6356992 bytes; gpt-j has no
 * post_attn_norm op. pythia-160m's parameters: 12 x (4 h^2 + 2 h I + I + 9 h) + 2 V h + 2 h =
 * 162322944 (V 50304, I 3072), the published count. */
static void test_neox_gptj(void **state)
{
    (void)state;
    pdbx_spec s;
    load("pythia-160m.json", &s);
    assert_int_equal(pdbx_rotary_dims(&s.model), 16);
    assert_true(pdbx_model_ops(&s.model) == (LLAMA_OPS & ~PDBX_OP_BIT(PDBX_OP_MLP_GATE)));
    pdbx_op_shape o;
    shape(&s, PDBX_OP_ATTN_ROPE, &o);
    assert_true(o.flops == 2359296.0 && o.bytes == 4.0 * (2.0 * 2048 * 384) + 4.0 * 1024 * 16);
    assert_true(plan_stage_params(&s.model, 1, 1) == 162322944.0);
    load("gpt-j-6b.json", &s);
    assert_int_equal(pdbx_rotary_dims(&s.model), 64);
    assert_true(s.model.arch.shared_norm && s.model.arch.parallel_residual);
    assert_false(pdbx_model_ops(&s.model) & PDBX_OP_BIT(PDBX_OP_POST_ATTN_NORM));
    char err[512] = "";   /* partial rotary and parallel residuals run on cuda too */
    assert_int_equal(pdbx_backend_model_check(PDBX_BACKEND_CUDA, &s.model, err, sizeof err), 0);
    load("pythia-160m.json", &s);
    assert_int_equal(pdbx_backend_model_check(PDBX_BACKEND_CUDA, &s.model, err, sizeof err), 0);
    load("Qwen2.5-7B.json", &s);   /* the whole head */
    assert_int_equal(pdbx_rotary_dims(&s.model), s.model.head_dim);
}

static void test_llama_unchanged(void **state)
{
    (void)state;
    pdbx_spec s;
    load("Qwen2.5-7B.json", &s);
    const double T = 2048, h = s.model.hidden, I = s.model.intermediate;
    pdbx_op_shape o;
    shape(&s, PDBX_OP_MLP_ACT_FN, &o);
    assert_true(o.flops == 4 * T * I && o.bytes == 4 * 3 * T * I);
    shape(&s, PDBX_OP_INPUT_NORM, &o);
    assert_true(o.flops == 4 * T * h && o.bytes == 4 * (2 * T * h + h));
    shape(&s, PDBX_OP_EMBED, &o);
    assert_true(o.flops == 0 && o.bytes == 4 * 2 * T * h);
}

/* gemma-2-9b's parameters by hand (its config: h 3584, 42 layers, 16 heads of 256, 8 kv heads,
 * I 14336, V 256000, tied embeddings), through the preset's tag and the fixture:
 *   attention q, o 16 x 256 x 3584 = 14680064 each, k, v 8 x 256 x 3584 = 7340032 each:
 *     44040192; gated MLP 3 x 3584 x 14336 = 154140672; four RMSNorms of h per layer
 *     (Gemma2DecoderLayer: input, post_attention, pre_feedforward, post_feedforward) 14336;
 *     a layer 198195200, 42 layers 8324198400;
 *   embedding 256000 x 3584 = 917504000 (lm_head tied to it), final norm 3584;
 *   total 9241705984, published 9.24B. pdbx measures two of the four norms (input_norm,
 *   post_attn_norm as the pre-MLP norm) and counts the weights of all four; without the two
 *   sandwich norms the count would be 301056 short (42 x 2 x 3584). */
static void test_gemma2_params(void **state)
{
    (void)state;
    const double layer = 2.0 * 16 * 256 * 3584 + 2.0 * 8 * 256 * 3584 + 3.0 * 3584 * 14336 + 4.0 * 3584;
    const double by_hand = 42 * layer + 256000.0 * 3584 + 3584;
    assert_true(layer == 198195200.0 && by_hand == 9241705984.0);
    pdbx_spec s;
    load("gemma-2-9b.json", &s);
    assert_true(plan_stage_params(&s.model, 1, 1) == by_hand);
    assert_true(fabs(by_hand / 9.24e9 - 1) < 0.01);
    pdbx_model tag;
    char err[512] = "";
    assert_int_equal(pdbx_model_load("gemma9b", &tag, err, sizeof err), 0);
    assert_true(plan_stage_params(&tag, 1, 1) == by_hand);
    /* the sandwich norms are gemma-2's: gemma (v1) and Llama keep two per layer */
    load("Qwen2.5-7B.json", &s);
    const double h = s.model.hidden;
    assert_true(plan_layer_attn_params(&s.model, 1) ==
                h + 2 * h * 28 * 128 + 2 * h * 4 * 128 + 28 * 128 + 2 * 4 * 128);
}

/* The kinds travel with the spec (pdbx_arch_to_json's "norm" and "position") and come back from
 * it as they were written; an unknown kind is refused naming the field. */
static void test_round_trip(void **state)
{
    (void)state;
    pdbx_spec s;
    load("gpt2.json", &s);
    cJSON *arch = pdbx_arch_to_json(&s.model);
    assert_non_null(arch);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(arch, "norm")->valuestring, "layernorm");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(arch, "position")->valuestring, "learned");
    cJSON *cfg = cJSON_CreateObject();
    cJSON_AddNumberToObject(cfg, "hidden_size", 768);
    cJSON_AddNumberToObject(cfg, "intermediate_size", 3072);
    cJSON_AddNumberToObject(cfg, "num_attention_heads", 12);
    cJSON_AddNumberToObject(cfg, "num_hidden_layers", 12);
    cJSON_AddNumberToObject(cfg, "vocab_size", 50257);
    cJSON_AddItemToObject(cfg, "arch", arch);
    pdbx_model m;
    memset(&m, 0, sizeof m);
    char err[512] = "";
    assert_int_equal(plan_arch_read(cfg, "spec", &m, err, sizeof err), 0);
    assert_int_equal(m.arch.norm, PDBX_NORM_LAYER);
    assert_int_equal(m.arch.position, PDBX_POS_LEARNED);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItemCaseSensitive(cfg, "arch"), "norm",
                              cJSON_CreateString("batchnorm"));
    assert_int_equal(plan_arch_read(cfg, "spec", &m, err, sizeof err), -1);
    assert_string_equal(err, "spec: arch.norm: 'batchnorm' is not known (allowed: rmsnorm, layernorm)");
    cJSON_Delete(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_model_ops),
        cmocka_unit_test(test_gpt2_shapes),
        cmocka_unit_test(test_gpt2_xl),
        cmocka_unit_test(test_gpt2_validate),
        cmocka_unit_test(test_neox_gptj),
        cmocka_unit_test(test_llama_unchanged),
        cmocka_unit_test(test_gemma2_params),
        cmocka_unit_test(test_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
