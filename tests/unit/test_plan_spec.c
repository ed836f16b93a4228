/* test_plan_spec.c: spec parsing, validation messages and the JSON round trip of engine/plan
 * (pure C; the overrides and did-you-mean are test_plan_spec_set.c's). Presets come from the
 * repository's configs/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/plan/plan.h"

/* Parses text and applies it over the defaults; returns from_json's result, err filled. */
static int spec_from_text(const char *text, pdbx_spec *s, char *err, size_t errlen)
{
    pdbx_spec_defaults(s);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    int rc = pdbx_spec_from_json(root, "test", s, err, errlen);
    cJSON_Delete(root);
    return rc;
}

typedef struct {
    const char *json;
    const char *message;
} bad_spec;

/* Every entry must be refused with exactly this one-line message. */
static const bad_spec bad_specs[] = {
    /* unknown fields, did-you-mean */
    {"{\"seqlen\": 128}", "unknown field 'seqlen' (did you mean 'seq_len'?)"},
    {"{\"tpp\": [1]}", "unknown field 'tpp' (did you mean 'tp' or 'pp'?)"},
    {"{\"mbs_maxx\": 8}", "unknown field 'mbs_maxx' (did you mean 'mbs_max'?)"},
    {"{\"seq_len\": 1, \"seq_len\": 2}", "seq_len: given twice (allowed: once)"},
    /* wrong JSON types */
    {"{\"seq_len\": \"abc\"}", "seq_len: expected an integer, got \"abc\""},
    {"{\"seq_len\": 1.5}", "seq_len: expected an integer, got 1.5"},
    {"{\"dtype\": 16}", "dtype: expected a string, got 16"},
    {"{\"collectives\": \"yes\"}", "collectives: expected true or false, got \"yes\""},
    {"{\"name\": 5}", "name: expected a string, got 5"},
    {"{\"name\": \"a\\tb\"}", "name: \"a\tb\" contains control character 0x09 (allowed: printable text)"},
    {"{\"ops\": [1]}", "ops[0]: expected a string, got 1"},
    {"{\"configs\": 4}", "configs: expected a list of {\"tp\", \"pp\", \"dp\"} objects, got 4"},
    /* ranges: negative, zero, absurd */
    {"{\"seq_len\": 0}", "seq_len: 0 is out of range (allowed: 1..131072)"},
    {"{\"seq_len\": -5}", "seq_len: -5 is out of range (allowed: 1..131072)"},
    {"{\"seq_len\": 1000000000}", "seq_len: 1000000000 is out of range (allowed: 1..131072)"},
    {"{\"warmup\": -1}", "warmup: -1 is out of range (allowed: 0..1000)"},
    {"{\"steps\": 0}", "steps: 0 is out of range (allowed: 1..100000)"},
    {"{\"gpus_per_node\": 0}", "gpus_per_node: 0 is out of range (allowed: 1..256)"},
    {"{\"nodes\": 5000}", "nodes: 5000 is out of range (allowed: 1..4096)"},
    {"{\"layers\": 23}", "layers: 23 is out of range (allowed: 1..22, num_hidden_layers of TinyLlama-1.1B)"},
    {"{\"timeout_s\": 0}", "timeout_s: 0 is out of range (allowed: 1..86400)"},
    {"{\"bytes_per_param\": 100}", "bytes_per_param: 100 is out of range (allowed: 1..64)"},
    {"{\"bytes_per_param\": 6}",
     "bytes_per_param: 6 is out of range (allowed: 8..64 at fp32: weights and gradients alone take 8)"},
    /* enums */
    {"{\"dtype\": \"bf61\"}", "dtype: \"bf61\" is not allowed (did you mean 'bf16'?)"},
    {"{\"dtype\": \"int8\"}", "dtype: \"int8\" is not allowed (allowed: bf16, fp16, fp32)"},
    {"{\"backend\": \"gpu\"}", "backend: \"gpu\" is not allowed (did you mean 'cpu'?)"},
    {"{\"backend\": \"cuda\"}",
     "gpu: cpu is the host preset, backend cuda needs a GPU preset (allowed: A100-80G, A40, H100-PCIe, H100-SXM, H200)"},
    /* presets */
    {"{\"model\": \"lama70b\"}", "model: unknown preset 'lama70b' (did you mean 'llama70b'?)"},
    {"{\"gpu\": \"H101\"}", "gpu: unknown preset 'H101' (did you mean 'H100'?)"},
    {"{\"model\": {\"hidden_size\": 64}}", "model: missing required field 'intermediate_size'"},
    /* TP against the model */
    {"{\"model\": \"llama70b\", \"gpus_per_node\": 4, \"configs\": [{\"tp\": 3, \"pp\": 1, \"dp\": 1}]}",
     "tp: 3 does not divide num_attention_heads 64 (allowed: 1, 2, 4, 8, 16, 32, 64)"},
    {"{\"model\": \"Llama-3.2-3B\", \"gpus_per_node\": 8, \"configs\": [{\"tp\": 6}]}",
     "tp: 6 neither divides nor is a multiple of num_key_value_heads 8 (allowed: 1, 2, 4, 8)"},
    {"{\"gpus_per_node\": 64, \"configs\": [{\"tp\": 64}]}",
     "tp: 64 does not divide num_attention_heads 32 (allowed: 1, 2, 4, 8, 16, 32)"},
    {"{\"model\": {\"hidden_size\": 1024, \"intermediate_size\": 3000, \"num_attention_heads\": 16,"
     " \"num_hidden_layers\": 4, \"vocab_size\": 32000}, \"gpus_per_node\": 16, \"configs\": [{\"tp\": 16}]}",
     "tp: 16 does not divide intermediate_size 3000 (allowed: 1, 2, 4, 8)"},
    /* PP, GPU counts, configurations */
    {"{\"gpus_per_node\": 32, \"configs\": [{\"tp\": 1, \"pp\": 23, \"dp\": 1}]}",
     "pp: 23 is greater than num_hidden_layers 22 of TinyLlama-1.1B (allowed: 1..22)"},
    {"{\"configs\": [{\"tp\": 2, \"pp\": 1, \"dp\": 2}]}",
     "configs: TP2/PP1/DP2 needs 4 GPUs but gpus_per_node 2 x nodes 1 = 2 (allowed: at most 2 GPUs per configuration)"},
    {"{\"configs\": [{\"tp\": 2, \"pp\": 1, \"dp\": 2, \"gpus\": 2}]}",
     "configs[0]: tp 2 x pp 1 x dp 2 = 4 does not equal gpus 2 (allowed: tp*pp*dp = gpus)"},
    {"{\"gpus_per_node\": 8, \"configs\": [{\"tp\": 2, \"pp\": 2, \"gpus\": 6}]}",
     "configs[0].gpus: 6 is not a multiple of tp 2 x pp 2 = 4 (allowed: a multiple of 4)"},
    {"{\"configs\": [{\"tp\": 1, \"pp\": 1, \"dp\": 1}, {\"tp\": 1, \"pp\": 1, \"dp\": 1}]}",
     "configs: TP1/PP1/DP1 is listed twice (allowed: each configuration once)"},
    {"{\"configs\": [{\"tp\": 1, \"ppp\": 1}]}", "configs[0]: unknown field 'ppp' (did you mean 'pp'?)"},
    {"{\"configs\": [{\"pp\": 1}]}", "configs[0]: missing required field 'tp'"},
    {"{\"configs\": []}", "configs: empty list (allowed: 1 to 64 configurations)"},
    {"{\"configs\": [{\"tp\": 0}]}", "configs[0].tp: 0 is out of range (allowed: 1..4096)"},
    {"{\"configs\": [{\"tp\": 1}], \"tp\": [1]}",
     "configs: cannot be combined with tp/pp/dp/ep/gpus (allowed: either a configs list or tp/pp/dp/ep lists)"},
    {"{\"gpus\": 2, \"dp\": [1]}", "dp: cannot be combined with gpus (allowed: one of them; with gpus, DP = gpus/(tp*pp))"},
    {"{\"gpus\": 4}", "gpus: 4 exceeds gpus_per_node 2 x nodes 1 = 2 (allowed: 1..2)"},
    {"{\"gpus\": 2, \"tp\": [4], \"gpus_per_node\": 4}",
     "gpus: 2 is not a multiple of tp*pp for any tp in [4] and pp in [1] (allowed: a multiple of tp*pp)"},
    {"{\"tp\": [4]}",
     "tp: no combination of tp [4] x pp [1] x dp [1] fits gpus_per_node 2 x nodes 1 = 2 GPUs (allowed: tp*pp*dp <= 2)"},
    {"{\"tp\": \"1:3\"}", "tp: 3 is not a power of two (allowed: 1, 2, 4, ..., 4096)"},
    {"{\"tp\": [1, 1]}", "tp: 1 is listed twice (allowed: each value once)"},
    {"{\"tp\": [0]}", "tp[0]: 0 is out of range (allowed: 1..4096)"},
    {"{\"pp\": \"a,b\"}", "pp: expected an integer, got \"a\""},
    /* micro-batch sizes */
    {"{\"mbs\": {\"min\": 1, \"max\": 100}}", "mbs_max: 100 is not a power of two (allowed: 1, 2, 4, ..., 1024)"},
    {"{\"mbs\": \"16:8\"}", "mbs_min: 16 is greater than mbs_max 8 (allowed: mbs_min <= mbs_max)"},
    {"{\"mbs_max\": 2048}", "mbs_max: 2048 is out of range (allowed: 1..1024)"},
    {"{\"mbs_min\": 0}", "mbs_min: 0 is out of range (allowed: 1..1024)"},
    {"{\"mbs_min\": 16}", "mbs_min: 16 is greater than mbs_max 8 (allowed: mbs_min <= mbs_max)"},
    {"{\"mbs\": \"1-8\"}", "mbs: expected \"MIN:MAX\" (powers of two), got \"1-8\""},
    {"{\"mbs\": {\"min\": 1, \"maxx\": 8}}", "mbs: unknown field 'maxx' (did you mean 'max'?)"},
    {"{\"mbs\": \"1:8\", \"mbs_min\": 1}", "mbs: cannot be combined with mbs_min/mbs_max (allowed: one form)"},
    /* ops and collectives */
    {"{\"ops\": [\"attn_qq\"]}", "ops: unknown op 'attn_qq' (did you mean 'attn_q'?)"},
    {"{\"ops\": []}", "ops: empty list (allowed: one or more op names, or \"all\")"},
    {"{\"coll_sizes\": [1000]}", "coll_sizes[0]: 1000 is not a power of two (allowed: 1, 2, 4, ..., 17179869184)"},
    {"{\"coll_sizes\": \"1K:64G\"}", "coll_sizes: 68719476736 is out of range (allowed: 1..17179869184 bytes)"},
    {"{\"coll_sizes\": []}",
     "coll_sizes: empty while collectives is true (allowed: powers of two from 1 to 17179869184 bytes)"},
    {"{\"gpu_mem_gb\": 0}", "gpu_mem_gb: 0 is out of range (allowed: 0.001..1e+06)"},
    {"[1]", "spec: expected a JSON object"},
};

static void test_bad_specs(void **state)
{
    (void)state;
    size_t n = sizeof bad_specs / sizeof bad_specs[0];
    int failures = 0;
    assert_true(n >= 30);
    for (size_t i = 0; i < n; i++) {
        pdbx_spec s, before;
        char err[1024] = "";
        pdbx_spec_defaults(&before);
        int rc = spec_from_text(bad_specs[i].json, &s, err, sizeof err);
        if (rc != -1 || strcmp(err, bad_specs[i].message) != 0) {
            print_error("bad spec %zu: %s\n  rc %d\n  got:  %s\n  want: %s\n", i, bad_specs[i].json, rc, err,
                        bad_specs[i].message);
            failures++;
        }
        /* a refused spec leaves the caller's spec as it was */
        if (memcmp(&s.configs, &before.configs, sizeof s.configs) != 0 || s.seq_len != before.seq_len ||
            strcmp(s.model.name, before.model.name) != 0) {
            print_error("bad spec %zu changed the spec\n", i);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

static void test_unknown_field_lists_allowed(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[2048];
    assert_int_equal(spec_from_text("{\"frobnicate\": 1}", &s, err, sizeof err), -1);
    assert_string_equal(err,
                        "unknown field 'frobnicate' (allowed: name, model, gpu, gpu_mem_gb, layers, seq_len, dtype, "
                        "backend, gpus_per_node, nodes, launcher, configs, tp, pp, dp, ep, gpus, mbs, mbs_min, mbs_max, repetition, warmup, "
                        "steps, target_rel_ci, min_reps, max_reps, max_seconds_per_op, passes, ops, collectives, coll_sizes, predict_oom, bytes_per_param, zero1, flash_attention, recompute, "
                        "moe_routing, timeout_s, flush_l2, fused_projections, fp32_math, gemm_api, tokens, kv_cache, description)");
}

static void test_defaults_are_valid(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "";
    pdbx_spec_defaults(&s);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
    assert_string_equal(s.model.name, "TinyLlama-1.1B");
    assert_string_equal(s.gpu.name, "cpu");
    assert_int_equal(s.nconfigs, 2);
    assert_int_equal(s.ops, PDBX_OPS_ALL);
    assert_int_equal(spec_from_text("{}", &s, err, sizeof err), 0);
}

static void test_good_specs(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "";

    /* gpus + tp range + pp list: DP derived, combinations whose tp*pp does not divide 8 skipped,
     * TP outermost (FASOP's order) */
    assert_int_equal(spec_from_text("{\"model\": \"llama70b\", \"gpus_per_node\": 8, \"gpus\": 8,"
                                    " \"tp\": \"1:8\", \"pp\": [1, 2]}", &s, err, sizeof err), 0);
    static const pdbx_parallel want1[] = {{1, 1, 8, 1}, {1, 2, 4, 1}, {2, 1, 4, 1}, {2, 2, 2, 1}, {4, 1, 2, 1}, {4, 2, 1, 1}, {8, 1, 1, 1}};
    assert_int_equal(s.nconfigs, 7);
    for (int i = 0; i < 7; i++) {
        assert_int_equal(s.configs[i].tp, want1[i].tp);
        assert_int_equal(s.configs[i].pp, want1[i].pp);
        assert_int_equal(s.configs[i].dp, want1[i].dp);
    }
    assert_string_equal(s.model.tag, "llama70b");

    /* tp x pp x dp cross product; TP2/DP2 needs 4 GPUs and is skipped on a 2-GPU node */
    assert_int_equal(spec_from_text("{\"tp\": [1, 2], \"pp\": 1, \"dp\": \"1,2\"}", &s, err, sizeof err), 0);
    assert_int_equal(s.nconfigs, 3);
    assert_int_equal(s.configs[0].dp, 1);
    assert_int_equal(s.configs[1].dp, 2);
    assert_int_equal(s.configs[2].tp, 2);
    assert_int_equal(s.configs[2].dp, 1);

    /* config entries with gpus: DP derived */
    assert_int_equal(spec_from_text("{\"configs\": [{\"tp\": 2, \"pp\": 1, \"gpus\": 2}, {\"tp\": 1, \"gpus\": 2}]}",
                                    &s, err, sizeof err), 0);
    assert_int_equal(s.nconfigs, 2);
    assert_int_equal(s.configs[0].dp, 1);
    assert_int_equal(s.configs[1].dp, 2);

    /* mbs forms, sizes, ops, aliases */
    assert_int_equal(spec_from_text("{\"mbs\": 4, \"coll_sizes\": \"1K:8K\", \"ops\": \"attn_q,mlp_down\","
                                    " \"dtype\": \"bfloat16\", \"backend\": \"CPU\", \"zero1\": true}", &s, err,
                                    sizeof err), 0);
    assert_int_equal(s.mbs_min, 4);
    assert_int_equal(s.mbs_max, 4);
    assert_int_equal(s.ncoll_sizes, 4);
    assert_true(s.coll_sizes[0] == 1024 && s.coll_sizes[3] == 8192);
    assert_int_equal(s.ops, PDBX_OP_BIT(PDBX_OP_ATTN_Q) | PDBX_OP_BIT(PDBX_OP_MLP_DOWN));
    assert_int_equal(s.dtype, PDBX_DTYPE_BF16);
    assert_int_equal(s.backend, PDBX_BACKEND_CPU);
    assert_int_equal(s.zero1, 1);

    assert_int_equal(spec_from_text("{\"mbs\": {\"min\": 2, \"max\": 16}, \"coll_sizes\": [\"64K\", 1048576, 1024]}",
                                    &s, err, sizeof err), 0);
    assert_int_equal(s.mbs_min, 2);
    assert_int_equal(s.mbs_max, 16);
    assert_int_equal(s.ncoll_sizes, 3);   /* sorted ascending */
    assert_true(s.coll_sizes[0] == 1024 && s.coll_sizes[1] == 65536 && s.coll_sizes[2] == 1048576);

    /* gpu by tag, memory override */
    assert_int_equal(spec_from_text("{\"gpu\": \"H100\", \"gpu_mem_gb\": 24, \"backend\": \"cuda\","
                                    " \"dtype\": \"bf16\", \"description\": \"free text\"}", &s, err, sizeof err), 0);
    assert_string_equal(s.gpu.name, "H100-SXM");
    assert_true(s.gpu.mem_bytes == 24e9);
}

static void test_presets_load(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "";
    assert_int_equal(pdbx_spec_load("fasop-llama70b-8gpu", &s, err, sizeof err), 0);
    assert_string_equal(s.name, "fasop-llama70b-8gpu");
    assert_string_equal(s.model.name, "Llama-3.3-70B-Instruct");
    assert_string_equal(s.model.tag, "llama70b");
    assert_string_equal(s.gpu.name, "A40");
    assert_int_equal(s.layers_profiled, 8);
    assert_int_equal(s.seq_len, 1024);
    assert_int_equal(s.dtype, PDBX_DTYPE_BF16);
    assert_int_equal(s.backend, PDBX_BACKEND_CUDA);
    assert_int_equal(s.gpus_per_node, 8);
    assert_int_equal(s.mbs_min, 1);
    assert_int_equal(s.mbs_max, 128);
    assert_int_equal(s.nconfigs, 4);
    assert_int_equal(s.ncoll_sizes, 21);   /* 1K..1G */

    assert_int_equal(pdbx_spec_load("quick", &s, err, sizeof err), 0);
    assert_string_equal(s.model.name, "TinyLlama-1.1B");
    assert_int_equal(s.backend, PDBX_BACKEND_CPU);
    assert_int_equal(s.dtype, PDBX_DTYPE_FP32);
    assert_int_equal(s.nconfigs, 2);
    assert_true(s.mbs_max / s.mbs_min >= 8);   /* at least 4 MBS values */
    for (int i = 0; i < s.nconfigs; i++)
        assert_int_equal(s.configs[i].tp * s.configs[i].pp * s.configs[i].dp, 2);

    assert_int_equal(pdbx_spec_load("qick", &s, err, sizeof err), -1);
    assert_string_equal(err, "sweep: unknown preset 'qick' (did you mean 'quick'?)");
}

static void test_spec_file_errors_name_the_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/pdbx-test-spec.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/bad.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"model\": \"tinyllama\",\n \"steps\": 0}\n", f);
    fclose(f);
    pdbx_spec s;
    char err[1024], want[1024];
    assert_int_equal(pdbx_spec_load(path, &s, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: steps: 0 is out of range (allowed: 1..100000)", path);
    assert_string_equal(err, want);

    f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"model\": \"tinyllama\",\n \"steps\": }\n", f);
    fclose(f);
    assert_int_equal(pdbx_spec_load(path, &s, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: invalid JSON near line 2", path);
    assert_memory_equal(err, want, strlen(want));

    f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"name\": \"mine\", \"steps\": 7}\n", f);
    fclose(f);
    assert_int_equal(pdbx_spec_load(path, &s, err, sizeof err), 0);
    assert_string_equal(s.name, "mine");
    assert_int_equal(s.steps, 7);
    assert_int_equal(s.seq_len, 128);   /* fields not in the file keep their defaults */
    unlink(path);
    rmdir(dir);
}

static int spec_equal(const pdbx_spec *a, const pdbx_spec *b)
{
    if (strcmp(a->name, b->name) || strcmp(a->model.name, b->model.name) || strcmp(a->model.tag, b->model.tag) ||
        strcmp(a->model.source, b->model.source) || a->model.hidden != b->model.hidden ||
        a->model.intermediate != b->model.intermediate || a->model.heads != b->model.heads ||
        a->model.kv_heads != b->model.kv_heads || a->model.head_dim != b->model.head_dim ||
        a->model.layers != b->model.layers || a->model.vocab != b->model.vocab ||
        a->model.tie_embeddings != b->model.tie_embeddings)
        return 0;
    if (strcmp(a->gpu.name, b->gpu.name) || strcmp(a->gpu.tag, b->gpu.tag) || a->gpu.mem_bytes != b->gpu.mem_bytes ||
        a->gpu.bw_gbs != b->gpu.bw_gbs || a->gpu.peak_tflops_bf16 != b->gpu.peak_tflops_bf16 ||
        a->gpu.peak_tflops_fp16 != b->gpu.peak_tflops_fp16 || a->gpu.peak_tflops_fp32 != b->gpu.peak_tflops_fp32)
        return 0;
    if (a->layers_profiled != b->layers_profiled || a->seq_len != b->seq_len || a->dtype != b->dtype ||
        a->backend != b->backend || a->gpus_per_node != b->gpus_per_node || a->nodes != b->nodes ||
        a->nconfigs != b->nconfigs || a->mbs_min != b->mbs_min || a->mbs_max != b->mbs_max ||
        a->warmup != b->warmup || a->steps != b->steps || a->ops != b->ops || a->collectives != b->collectives ||
        a->ncoll_sizes != b->ncoll_sizes || a->predict_oom != b->predict_oom ||
        a->bytes_per_param != b->bytes_per_param || a->zero1 != b->zero1 ||
        a->flash_attention != b->flash_attention || a->recompute != b->recompute ||
        a->timeout_s != b->timeout_s || a->flush_l2 != b->flush_l2 ||
        a->fused_projections != b->fused_projections || a->fp32_math != b->fp32_math ||
        a->gemm_api != b->gemm_api || a->ntokens != b->ntokens ||
        memcmp(a->tokens, b->tokens, sizeof a->tokens) != 0 ||
        memcmp(&a->kv_cache, &b->kv_cache, sizeof a->kv_cache) != 0)
        return 0;
    for (int i = 0; i < a->nconfigs; i++)
        if (a->configs[i].tp != b->configs[i].tp || a->configs[i].pp != b->configs[i].pp ||
            a->configs[i].dp != b->configs[i].dp)
            return 0;
    for (int i = 0; i < a->ncoll_sizes; i++)
        if (a->coll_sizes[i] != b->coll_sizes[i])
            return 0;
    return 1;
}

static void round_trip(const pdbx_spec *a)
{
    char err[1024] = "";
    cJSON *j = pdbx_spec_to_json(a);
    assert_non_null(j);
    char *text = cJSON_Print(j);
    assert_non_null(text);
    cJSON *parsed = cJSON_Parse(text);
    assert_non_null(parsed);
    pdbx_spec b;
    pdbx_spec_defaults(&b);
    b.ops = PDBX_OP_BIT(PDBX_OP_EMBED);   /* make sure every field is really read back */
    b.seq_len = 7;
    int rc = pdbx_spec_from_json(parsed, "round trip", &b, err, sizeof err);
    if (rc != 0)
        print_error("round trip: %s\n%s\n", err, text);
    assert_int_equal(rc, 0);
    assert_true(spec_equal(a, &b));
    /* and writing it again gives the same text */
    cJSON *j2 = pdbx_spec_to_json(&b);
    char *text2 = cJSON_Print(j2);
    assert_string_equal(text, text2);
    cJSON_free(text);
    cJSON_free(text2);
    cJSON_Delete(j);
    cJSON_Delete(j2);
    cJSON_Delete(parsed);
}

static void test_round_trip(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "";
    assert_int_equal(pdbx_spec_load("fasop-llama70b-8gpu", &s, err, sizeof err), 0);
    round_trip(&s);
    assert_int_equal(pdbx_spec_load("quick", &s, err, sizeof err), 0);
    round_trip(&s);
    pdbx_spec_defaults(&s);
    round_trip(&s);
    assert_int_equal(pdbx_spec_load("fasop-llama70b-8gpu", &s, err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "gpu", "H200", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "ops", "attn_q,mlp_act_fn,tp_allreduce_mlp", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "zero1", "on", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "flash_attention", "true", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "bytes_per_param", "17.5", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "timeout_s", "12.25", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "gpu_mem_gb", "140.123456789", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "coll_sizes", "1,8,16G", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "collectives", "false", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "name", "custom-70b", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "ops", "attn_q,attn_k,attn_v,mlp_act_fn,tp_allreduce_mlp", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "fused_projections", "true", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "fp32_math", "tf32", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "gemm_api", "cublas", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
    round_trip(&s);
}

/* fp32_math and gemm_api: defaults as PyTorch (ieee, cuBLASLt), what a typo says, and the cpu
 * backend's refusal of what it cannot run (one line naming field, value and what it allows). */
static void test_gemm_modes(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[1024] = "";
    pdbx_spec_defaults(&s);
    assert_int_equal(s.fp32_math, PDBX_FP32_MATH_IEEE);
    assert_int_equal(s.gemm_api, PDBX_GEMM_API_CUBLASLT);
    assert_int_equal(s.fused_projections, 0);
    char text[64];
    assert_int_equal(pdbx_spec_field_text(&s, "fp32_math", text, sizeof text), 0);
    assert_string_equal(text, "ieee");
    assert_int_equal(pdbx_spec_field_text(&s, "gemm_api", text, sizeof text), 0);
    assert_string_equal(text, "cublaslt");
    assert_int_equal(spec_from_text("{\"fp32_math\": \"tf33\"}", &s, err, sizeof err), -1);
    assert_string_equal(err, "fp32_math: \"tf33\" is not allowed (did you mean 'tf32'?)");
    assert_int_equal(spec_from_text("{\"backend\": \"cpu\", \"fp32_math\": \"tf32\"}", &s, err, sizeof err), -1);
    assert_string_equal(err, "fp32_math: \"tf32\" is not available on backend cpu (allowed on cpu: ieee; tf32 "
                             "needs backend cuda)");
    assert_int_equal(spec_from_text("{\"backend\": \"cpu\", \"gemm_api\": \"cublas\"}", &s, err, sizeof err), -1);
    assert_string_equal(err, "gemm_api: \"cublas\" is not available on backend cpu (allowed on cpu: cublaslt, the "
                             "default, which the cpu backend runs as OpenBLAS; cublas needs backend cuda)");
    /* auto is checked by the engine once the backend is loaded: the plan accepts it */
    assert_int_equal(spec_from_text("{\"backend\": \"auto\", \"fp32_math\": \"TF32\", \"gemm_api\": \"cublas\"}",
                                    &s, err, sizeof err), 0);
    assert_int_equal(s.fp32_math, PDBX_FP32_MATH_TF32);
    assert_int_equal(s.gemm_api, PDBX_GEMM_API_CUBLAS);
    assert_int_equal(pdbx_backend_modes_check(PDBX_BACKEND_CPU, s.fp32_math, PDBX_GEMM_API_CUBLASLT, err,
                                              sizeof err), -1);
    assert_int_equal(pdbx_backend_modes_check(PDBX_BACKEND_CUDA, s.fp32_math, s.gemm_api, err, sizeof err), 0);
    assert_int_equal(spec_from_text("{\"fused_projections\": true}", &s, err, sizeof err), 0);
    assert_int_equal(s.fused_projections, 1);
    /* a fused group is timed as one GEMM: all of its ops or none */
    assert_int_equal(spec_from_text("{\"fused_projections\": true, \"ops\": \"attn_q,attn_v,mlp_gate,mlp_up\"}",
                                    &s, err, sizeof err), -1);
    assert_string_equal(err, "ops: attn_q without attn_k while fused_projections is true (allowed: attn_q, attn_k, "
                             "attn_v together, or none of them: they are timed as one fused GEMM)");
    assert_int_equal(spec_from_text("{\"fused_projections\": true, \"ops\": \"attn_q,attn_k,attn_v,mlp_up\"}",
                                    &s, err, sizeof err), -1);
    assert_string_equal(err, "ops: mlp_up without mlp_gate while fused_projections is true (allowed: mlp_gate, "
                             "mlp_up together, or none of them: they are timed as one fused GEMM)");
    assert_int_equal(spec_from_text("{\"fused_projections\": true, \"ops\": \"attn_core,mlp_gate,mlp_up\"}",
                                    &s, err, sizeof err), 0);
}

int main(void)
{
    setenv("PDBX_CONFIGS", PDBX_SOURCE_DIR "/configs", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_specs),
        cmocka_unit_test(test_unknown_field_lists_allowed),
        cmocka_unit_test(test_defaults_are_valid),
        cmocka_unit_test(test_good_specs),
        cmocka_unit_test(test_presets_load),
        cmocka_unit_test(test_spec_file_errors_name_the_file),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_gemm_modes),
    };
    return cmocka_run_group_tests_name("plan_spec", tests, NULL, NULL);
}
