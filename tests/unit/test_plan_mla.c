/* test_plan_mla.c: what the planner says of a dense multi-head latent attention model
 * (DeepSeek-V2's MLA with n_routed_experts null), on the e2e fixtures
 * tests/e2e/fixtures/engine-tiny-mla(-qlora).json: h 256, 4 heads, kv_lora_rank 64, q_lora_rank
 * 64 or null, nope 32, rope 16, v 32, I 512, vocab 8192, 2 layers.
 *  - read as dense MLA; not refused by the arch check; the spec validates on cpu in fp32; bf16
 *    on cpu and fused_projections are refused by name, cuda with flash_attention too (the cuda
 *    backend runs MLA on the unfused core); DeepSeek-V2-Lite (MLA and MoE) passes the arch check
 *    and the cuda backend's model check;
 *  - the cpu profile memory's MLA rows by hand at TP 2, MBS 1, seq 32, fp32, with bwd
 *    (T = 32, H = 2; every size a multiple of 64 bytes):
 *      q_a_out, q_norm_out 32*64*4 = 8192; kv_a_out 32*(64+16)*4 = 10240; kv_norm_out 8192;
 *      kv_b_out 32*2*(32+32)*4 = 16384; k 32*2*48*4 = 12288; v, context 32*2*32*4 = 8192;
 *      norm weights (64+64)*4 = 512; per layer q_a 256*64*4 = 65536, q_b 64*2*48*4 = 24576,
 *      kv_a 256*80*4 = 81920, kv_b 64*2*64*4 = 32768, o 2*32*256*4 = 65536; the gradients the
 *      same sizes; no q, k or v projection;
 *  - the training prediction's activations at q_lora_rank null, TP 1, MBS 1, seq 32, fp32,
 *    flash attention, no recompute, per layer
 *      s b (h (4e + 2) + e (2 a d + 2 a dv + 2 rkv + rope + 4 I))
 *      = 32 (256 x 18 + 4 (384 + 256 + 128 + 16 + 2048)) = 509952, x 2 layers = 1019904. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "engine/plan/plan.h"

static void load(const char *path, pdbx_spec *s)
{
    char err[1024] = "";
    pdbx_spec_defaults(s);
    int rc = pdbx_model_load(path, &s->model, err, sizeof err);
    if (rc != 0)
        print_error("%s: %s\n", path, err);
    assert_int_equal(rc, 0);
    s->seq_len = 32;
    s->dtype = PDBX_DTYPE_FP32;
    s->backend = PDBX_BACKEND_CPU;
    s->layers_profiled = 1;
}

#define FIX PDBX_SOURCE_DIR "/tests/e2e/fixtures/"

static void expect_refused(const pdbx_spec *s, const char *what)
{
    char err[1024] = "";
    assert_int_not_equal(pdbx_spec_validate(s, err, sizeof err), 0);
    if (!strstr(err, what))
        print_error("refusal '%s' does not say '%s'\n", err, what);
    assert_non_null(strstr(err, what));
}

static void test_read_and_refusals(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[1024] = "";
    load(FIX "engine-tiny-mla-qlora.json", &s);
    const pdbx_arch *a = &s.model.arch;
    assert_int_equal(a->attention, PDBX_ATTN_MLA);
    assert_int_equal(a->moe.experts, 0);   /* n_routed_experts null: dense */
    assert_int_equal(a->mla.q_lora_rank, 64);
    assert_int_equal(s.model.head_dim, 48);
    assert_int_equal(pdbx_arch_refusal(&s.model, s.seq_len, err, sizeof err), 0);
    if (pdbx_spec_validate(&s, err, sizeof err) != 0)
        print_error("%s\n", err);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
    pdbx_spec t = s;
    t.dtype = PDBX_DTYPE_BF16;
    expect_refused(&t, "fp32 only");
    t = s;
    t.fused_projections = 1;
    expect_refused(&t, "fused_projections");
    t = s;   /* cuda runs MLA (the unfused core: the fused kernel has one head dim) */
    assert_int_equal(pdbx_backend_model_check(PDBX_BACKEND_CUDA, &t.model, err, sizeof err), 0);
    t.backend = PDBX_BACKEND_CUDA;
    t.flash_attention = 1;
    expect_refused(&t, "flash_attention: the fused kernel does not run model");
    expect_refused(&t, "multi-head latent attention (v head dim 32, q/k 48)");
    load(PDBX_SOURCE_DIR "/tests/fixtures/models/DeepSeek-V2-Lite.json", &t);   /* MLA and MoE */
    assert_int_equal(pdbx_arch_refusal(&t.model, t.seq_len, err, sizeof err), 0);
    if (pdbx_backend_model_check(PDBX_BACKEND_CUDA, &t.model, err, sizeof err) != 0)
        print_error("%s\n", err);
    assert_int_equal(pdbx_backend_model_check(PDBX_BACKEND_CUDA, &t.model, err, sizeof err), 0);
}

static double bytes_of(const pdbx_profile_memory *m, pdbx_buf_role r, int *count)
{
    for (int i = 0; i < m->nbufs; i++)
        if (m->buf[i].role == r) {
            *count = m->buf[i].count;
            return m->buf[i].bytes;
        }
    *count = 0;
    return -1;
}

static void test_profile_memory(void **state)
{
    (void)state;
    pdbx_spec s;
    load(FIX "engine-tiny-mla-qlora.json", &s);
    pdbx_profile_point p;
    memset(&p, 0, sizeof p);
    p.model = s.model;
    p.tp = 2;
    p.pp = p.dp = p.mbs = 1;
    p.seq_len = 32;
    p.layers = 1;
    p.ops = pdbx_model_ops(&s.model);
    p.passes = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD);
    p.dtype = PDBX_DTYPE_FP32;
    p.backend = PDBX_BACKEND_CPU;
    p.threads = 1;
    pdbx_profile_memory m;
    char err[256] = "";
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    static const struct { pdbx_buf_role r; double bytes; } want[] = {
        {PDBX_BUF_MLA_Q_A, 8192}, {PDBX_BUF_MLA_Q_A_NORM, 8192}, {PDBX_BUF_MLA_KV_A, 10240},
        {PDBX_BUF_MLA_KV_NORM, 8192}, {PDBX_BUF_MLA_KV_B, 16384}, {PDBX_BUF_Q, 12288},
        {PDBX_BUF_K, 12288}, {PDBX_BUF_V, 8192}, {PDBX_BUF_CONTEXT, 8192},
        {PDBX_BUF_MLA_NORM_W, 512}, {PDBX_BUF_L_Q_A, 65536}, {PDBX_BUF_L_Q_B, 24576},
        {PDBX_BUF_L_KV_A, 81920}, {PDBX_BUF_L_KV_B, 32768}, {PDBX_BUF_L_O, 65536},
        {PDBX_BUF_GRAD_MLA_Q_A, 8192}, {PDBX_BUF_GRAD_MLA_Q_A_NORM, 8192},
        {PDBX_BUF_GRAD_MLA_KV_A, 10240}, {PDBX_BUF_GRAD_MLA_KV_NORM, 8192},
        {PDBX_BUF_GRAD_MLA_KV_B, 16384}, {PDBX_BUF_GRAD_K, 12288}, {PDBX_BUF_GRAD_V, 8192},
        {PDBX_BUF_GRAD_CONTEXT, 8192}, {PDBX_BUF_GRAD_MLA_NORM_W, 512},
        {PDBX_BUF_GRAD_W_Q_A, 65536}, {PDBX_BUF_GRAD_W_Q_B, 24576}, {PDBX_BUF_GRAD_W_KV_A, 81920},
        {PDBX_BUF_GRAD_W_KV_B, 32768}, {PDBX_BUF_GRAD_W_O, 65536},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int count;
        const double b = bytes_of(&m, want[i].r, &count);
        if (b != want[i].bytes || count != 1)
            print_error("%s: %g bytes x %d, want %g x 1\n", pdbx_buf_role_name(want[i].r), b, count, want[i].bytes);
        assert_true(b == want[i].bytes && count == 1);
    }
    static const pdbx_buf_role none[] = {PDBX_BUF_L_Q, PDBX_BUF_L_K, PDBX_BUF_L_V, PDBX_BUF_GRAD_W_Q,
                                         PDBX_BUF_GRAD_W_KV};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        int count;
        assert_true(bytes_of(&m, none[i], &count) < 0);
    }
}

static void test_training_activations(void **state)
{
    (void)state;
    pdbx_spec s;
    load(FIX "engine-tiny-mla.json", &s);
    assert_int_equal(s.model.arch.mla.q_lora_rank, 0);
    s.flash_attention = 1;
    s.recompute = PDBX_RECOMPUTE_NONE;
    const pdbx_parallel par = { 1, 1, 1, 1 };
    pdbx_memory mem;
    pdbx_memory_predict(&s, &par, 1, &mem);
    assert_true(mem.activations == 1019904.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_and_refusals),
        cmocka_unit_test(test_profile_memory),
        cmocka_unit_test(test_training_activations),
    };
    return cmocka_run_group_tests_name("plan_mla", tests, NULL, NULL);
}
