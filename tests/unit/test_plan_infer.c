/* test_plan_infer.c: the spec's inference grids (plan_infer.c, docs/spec.md "Inference grids"):
 * the tokens forms (list, MIN:MAX powers of two, MIN:MAX:STEP, JSON array), the kv_cache object
 * and its expansion into prefill and decode rows (C + P <= max_kv, K <= max_kv), the one-line
 * refusals, the JSON and override-text round trips, the ops of a tokens row, and the refusal of
 * kv_cache for backend cuda. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "engine/plan/plan.h"

static void set_ok(pdbx_spec *s, const char *field, const char *value)
{
    char err[512] = "";
    if (pdbx_spec_set(s, field, value, err, sizeof err) != 0)
        fail_msg("%s=%s: %s", field, value, err);
}

static void set_fails(const char *field, const char *value, const char *message)
{
    pdbx_spec s;
    pdbx_spec_defaults(&s);
    char err[512] = "";
    assert_int_equal(pdbx_spec_set(&s, field, value, err, sizeof err), -1);
    if (strcmp(err, message) != 0)
        fail_msg("%s=%s: got \"%s\", want \"%s\"", field, value, err, message);
}

static void assert_tokens(const pdbx_spec *s, const int *want, int n)
{
    assert_int_equal(s->ntokens, n);
    for (int i = 0; i < n; i++)
        assert_int_equal(s->tokens[i], want[i]);
}

static void test_tokens_forms(void **state)
{
    (void)state;
    pdbx_spec s;
    pdbx_spec_defaults(&s);
    assert_int_equal(s.ntokens, 0);                        /* no inference phase by default */
    set_ok(&s, "tokens", "32,8,16,8");
    assert_tokens(&s, (int[]){ 8, 16, 32 }, 3);           /* sorted, duplicates dropped */
    set_ok(&s, "tokens", "16:128");
    assert_tokens(&s, (int[]){ 16, 32, 64, 128 }, 4);     /* powers of two, as mbs */
    set_ok(&s, "tokens", "24:72:24");
    assert_tokens(&s, (int[]){ 24, 48, 72 }, 3);
    char text[256];
    assert_int_equal(pdbx_spec_field_text(&s, "tokens", text, sizeof text), 0);
    assert_string_equal(text, "24,48,72");
    set_ok(&s, "tokens", text);                            /* the text reads back the same */
    assert_tokens(&s, (int[]){ 24, 48, 72 }, 3);
    char err[512] = "";
    cJSON *o = cJSON_Parse("{\"tokens\": [4, 1, 2]}");
    assert_int_equal(pdbx_spec_from_json(o, "t", &s, err, sizeof err), 0);
    cJSON_Delete(o);
    assert_tokens(&s, (int[]){ 1, 2, 4 }, 3);
}

static void test_tokens_refused(void **state)
{
    (void)state;
    set_fails("tokens", "0,8", "tokens: 0 is out of range (allowed: 1..131072)");
    set_fails("tokens", "3:9", "tokens: \"3:9\" is not a range of powers of two (allowed: MIN:MAX of powers of two, "
                               "or MIN:MAX:STEP)");
    set_fails("tokens", "1:100:1", "tokens: more than 64 values (allowed: at most 64)");
    set_fails("tokens", "8,x", "tokens: expected an integer, got \"x\"");
    set_fails("tokens", "64:8:8", "tokens: range \"64:8:8\" has its start above its end (allowed: MIN <= MAX)");
}

static void test_kv_grid_rows(void **state)
{
    (void)state;
    pdbx_spec s;
    pdbx_spec_defaults(&s);
    assert_int_equal(pdbx_kv_rows(&s, NULL, 0), 0);
    set_ok(&s, "kv_cache", "{\"prefill_chunks\":[32,16],\"prefill_kv\":[0,32,64],\"decode_batch\":\"1:2:1\","
                           "\"decode_kv\":[64,16,200],\"max_kv\":96}");
    pdbx_kv_row rows[32];
    const size_t n = pdbx_kv_rows(&s, rows, 32);
    const pdbx_kv_row want[] = {
        { 1, 16, 0 }, { 1, 16, 32 }, { 1, 16, 64 }, { 1, 32, 0 }, { 1, 32, 32 }, { 1, 32, 64 },   /* C+P <= 96 */
        { 1, 0, 16 }, { 1, 0, 64 }, { 2, 0, 16 }, { 2, 0, 64 },                                 /* K 200 > 96 */
    };
    assert_int_equal(n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(rows[i].batch, want[i].batch);
        assert_int_equal(rows[i].chunk, want[i].chunk);
        assert_int_equal(rows[i].kv, want[i].kv);
    }
    assert_int_equal(pdbx_kv_rows(&s, rows, 3), n);       /* the count even past cap */
    /* chunks alone: full prefills; max_kv 0 is seq_len */
    set_ok(&s, "seq_len", "64");
    set_ok(&s, "kv_cache", "{\"prefill_chunks\":[32,64,128]}");
    assert_int_equal(pdbx_kv_max(&s), 64);
    assert_int_equal(pdbx_kv_rows(&s, rows, 32), 2);
    assert_int_equal(rows[1].chunk, 64);
    assert_int_equal(rows[1].kv, 0);
}

static void test_kv_refused(void **state)
{
    (void)state;
    set_fails("kv_cache", "{\"prefil_chunks\":[16]}",
              "kv_cache: unknown field 'prefil_chunks' (did you mean 'prefill_chunks'?) (allowed: prefill_chunks, "
              "prefill_kv, decode_batch, decode_kv, max_kv)");
    set_fails("kv_cache", "{\"decode_batch\":[1]}",
              "kv_cache.decode_batch: given without decode_kv (allowed: both or neither)");
    set_fails("kv_cache", "{\"prefill_kv\":[16]}",
              "kv_cache.prefill_kv: given without prefill_chunks (allowed: both, or prefill_chunks alone)");
    set_fails("kv_cache", "{\"decode_batch\":[0],\"decode_kv\":[8]}",
              "kv_cache.decode_batch[0]: 0 is out of range (allowed: 1..4096)");
    set_fails("kv_cache", "[1]", "kv_cache: expected a JSON object such as {\"prefill_chunks\":[16],"
              "\"decode_batch\":[1],\"decode_kv\":[64]}, got \"[1]\"");
    /* every row beyond max_kv; cuda runs kv_cache (cuda_attn_kv.c) */
    pdbx_spec s;
    pdbx_spec_defaults(&s);
    char err[512] = "";
    set_ok(&s, "kv_cache", "{\"decode_batch\":[1],\"decode_kv\":[512],\"max_kv\":64}");
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), -1);
    assert_string_equal(err, "kv_cache: no row has C + P <= max_kv (64) or K <= max_kv (allowed: chunks, prefixes "
                             "and decode_kv within max_kv, which is seq_len when 0)");
    set_ok(&s, "kv_cache", "{\"decode_batch\":[1],\"decode_kv\":[32]}");
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
    set_ok(&s, "gpu", "H100-SXM");
    set_ok(&s, "backend", "cuda");
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
    set_ok(&s, "kv_cache", "{}");                         /* tokens alone run on cuda too */
    set_ok(&s, "tokens", "16,32");
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
}

static void test_json_round_trip(void **state)
{
    (void)state;
    pdbx_spec s, t;
    pdbx_spec_defaults(&s);
    set_ok(&s, "tokens", "8,24");
    set_ok(&s, "kv_cache", "{\"prefill_chunks\":[16],\"prefill_kv\":[0,16],\"decode_batch\":[1,4],"
                           "\"decode_kv\":[32],\"max_kv\":100}");
    cJSON *o = pdbx_spec_to_json(&s);
    assert_non_null(o);
    pdbx_spec_defaults(&t);
    char err[512] = "";
    assert_int_equal(pdbx_spec_from_json(o, "t", &t, err, sizeof err), 0);
    cJSON_Delete(o);
    assert_int_equal(t.ntokens, 2);
    assert_int_equal(t.tokens[1], 24);
    assert_memory_equal(&t.kv_cache, &s.kv_cache, sizeof s.kv_cache);
    char text[512];
    assert_int_equal(pdbx_spec_field_text(&s, "kv_cache", text, sizeof text), 0);
    assert_string_equal(text, "{\"prefill_chunks\":[16],\"prefill_kv\":[0,16],\"decode_batch\":[1,4],"
                              "\"decode_kv\":[32],\"max_kv\":100}");
}

static void test_tokens_ops(void **state)
{
    (void)state;
    pdbx_spec s;
    pdbx_spec_defaults(&s);
    const pdbx_opmask m = pdbx_tokens_ops(&s);
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        /* (the default model, a Llama, has no attn_qk_norm, MLA or MoE ops) */
        const int want = op != PDBX_OP_ATTN_CORE && pdbx_op_in_model_fwd((pdbx_op)op) && (PDBX_OPS_LLAMA & PDBX_OP_BIT(op)) &&
                         !pdbx_op_is_comm((pdbx_op)op);
        assert_int_equal((m & PDBX_OP_BIT(op)) != 0, want);
    }
    char err[512] = "";
    set_ok(&s, "ops", "attn_core,tp_allreduce_attn");
    set_ok(&s, "tokens", "16");
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), -1);
    assert_non_null(strstr(err, "tokens: ops holds no per-token op"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens_forms),
        cmocka_unit_test(test_tokens_refused),
        cmocka_unit_test(test_kv_grid_rows),
        cmocka_unit_test(test_kv_refused),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_tokens_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
