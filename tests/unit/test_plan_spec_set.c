/* test_plan_spec_set.c: pdbx_spec_set overrides (fields, then the configurations that tp, pp, dp
 * and gpus combine) and the did-you-mean of unknown fields (split from test_plan_spec.c, which
 * keeps parsing, validation and the round trip). Presets come from the repository's configs/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/plan/plan.h"

static void expect_configs(const pdbx_spec *s, const pdbx_parallel *want, int n)
{
    if (s->nconfigs != n) {
        for (int i = 0; i < s->nconfigs; i++)
            print_error("  got TP%d/PP%d/DP%d\n", s->configs[i].tp, s->configs[i].pp, s->configs[i].dp);
    }
    assert_int_equal(s->nconfigs, n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(s->configs[i].tp, want[i].tp);
        assert_int_equal(s->configs[i].pp, want[i].pp);
        assert_int_equal(s->configs[i].dp, want[i].dp);
    }
}

static void test_overrides(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[1024] = "";
    assert_int_equal(pdbx_spec_load("fasop-llama70b-8gpu", &s, err, sizeof err), 0);

    assert_int_equal(pdbx_spec_set(&s, "seq_len", "2048", err, sizeof err), 0);
    assert_int_equal(s.seq_len, 2048);
    assert_int_equal(pdbx_spec_set(&s, "seq_len", "abc", err, sizeof err), -1);
    assert_string_equal(err, "seq_len: expected an integer, got \"abc\"");
    assert_int_equal(s.seq_len, 2048);   /* unchanged */
    assert_int_equal(pdbx_spec_set(&s, "seq_len", "0", err, sizeof err), -1);
    assert_string_equal(err, "seq_len: 0 is out of range (allowed: 1..131072)");
    assert_int_equal(pdbx_spec_set(&s, "seqlen", "1", err, sizeof err), -1);
    assert_string_equal(err, "unknown field 'seqlen' (did you mean 'seq_len'?)");
    assert_int_equal(pdbx_spec_set(&s, "description", "x", err, sizeof err), -1);

    assert_int_equal(pdbx_spec_set(&s, "mbs", "1:64", err, sizeof err), 0);
    assert_int_equal(s.mbs_max, 64);
    assert_int_equal(pdbx_spec_set(&s, "mbs", "1:100", err, sizeof err), -1);
    assert_string_equal(err, "mbs_max: 100 is not a power of two (allowed: 1, 2, 4, ..., 1024)");
    assert_int_equal(pdbx_spec_set(&s, "gpu", "H100-SXM", err, sizeof err), 0);
    assert_true(s.gpu.mem_bytes == 80e9);
    assert_int_equal(pdbx_spec_set(&s, "gpu_mem_gb", "94", err, sizeof err), 0);
    assert_true(s.gpu.mem_bytes == 94e9);
    assert_int_equal(pdbx_spec_set(&s, "flash_attention", "yes", err, sizeof err), 0);
    assert_int_equal(s.flash_attention, 1);
    assert_int_equal(pdbx_spec_set(&s, "flash_attention", "maybe", err, sizeof err), -1);
    assert_string_equal(err, "flash_attention: expected true or false, got \"maybe\"");
    assert_int_equal(s.recompute, PDBX_RECOMPUTE_NONE);
    assert_int_equal(pdbx_spec_set(&s, "recompute", "full", err, sizeof err), 0);
    assert_int_equal(s.recompute, PDBX_RECOMPUTE_FULL);
    assert_int_equal(pdbx_spec_set(&s, "recompute", "selective", err, sizeof err), 0);
    assert_int_equal(s.recompute, PDBX_RECOMPUTE_SELECTIVE);
    assert_int_equal(pdbx_spec_set(&s, "recompute", "partial", err, sizeof err), -1);
    assert_string_equal(err, "recompute: \"partial\" is not allowed (allowed: none, full, selective)");
    /* how the ranks are started (engine/launch/launch_argv.h): auto by default */
    assert_int_equal(s.launcher, PDBX_LAUNCHER_AUTO);
    assert_int_equal(pdbx_spec_set(&s, "launcher", "SRUN", err, sizeof err), 0);
    assert_int_equal(s.launcher, PDBX_LAUNCHER_SRUN);
    assert_int_equal(pdbx_spec_set(&s, "launcher", "ssh", err, sizeof err), -1);
    assert_string_equal(err, "launcher: \"ssh\" is not allowed (allowed: auto, local, mpirun, srun)");
    char text[32];
    assert_int_equal(pdbx_spec_field_text(&s, "launcher", text, sizeof text), 0);
    assert_string_equal(text, "srun");
    pdbx_spec_set(&s, "launcher", "auto", err, sizeof err);
    assert_int_equal(pdbx_spec_set(&s, "bytes_per_param", "18", err, sizeof err), 0);
    assert_true(s.bytes_per_param == 18);
    assert_int_equal(pdbx_spec_set(&s, "ops", "attn_core, lm_head", err, sizeof err), 0);
    assert_int_equal(s.ops, PDBX_OP_BIT(PDBX_OP_ATTN_CORE) | PDBX_OP_BIT(PDBX_OP_LM_HEAD));
    assert_int_equal(pdbx_spec_set(&s, "ops", "all", err, sizeof err), 0);
    assert_int_equal(s.ops, PDBX_OPS_ALL);
    assert_int_equal(pdbx_spec_set(&s, "coll_sizes", "1K:4K", err, sizeof err), 0);
    assert_int_equal(s.ncoll_sizes, 3);
    assert_int_equal(pdbx_spec_set(&s, "dtype", "fp16", err, sizeof err), 0);
    assert_int_equal(s.dtype, PDBX_DTYPE_FP16);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
}

/* The configuration overrides on the same preset (a FASOP Llama-70B sweep on 8 x 2 GPUs). */
static void test_overrides_configs(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[1024] = "";
    assert_int_equal(pdbx_spec_load("fasop-llama70b-8gpu", &s, err, sizeof err), 0);
    /* tp: the new TP values x the current PP values, DP derived so each GPU count (8, 16) stays */
    pdbx_spec f = s;
    assert_int_equal(pdbx_spec_set(&f, "tp", "1,2", err, sizeof err), 0);
    static const pdbx_parallel want_tp[] = {{1, 8, 1, 1}, {1, 8, 2, 1}, {1, 4, 2, 1}, {1, 4, 4, 1}, {1, 2, 4, 1}, {1, 2, 8, 1},
                                            {2, 8, 1, 1}, {2, 4, 1, 1}, {2, 4, 2, 1}, {2, 2, 2, 1}, {2, 2, 4, 1}};
    expect_configs(&f, want_tp, 11);
    f = s;
    assert_int_equal(pdbx_spec_set(&f, "tp", "8", err, sizeof err), 0);
    static const pdbx_parallel want_tp8[] = {{8, 2, 1, 1}};
    expect_configs(&f, want_tp8, 1);
    assert_int_equal(pdbx_spec_set(&f, "tp", "3", err, sizeof err), -1);
    assert_string_equal(err, "tp: no configuration with tp in [3] fits the GPU counts [16] of the current "
                             "configurations (allowed: tp*pp dividing a GPU count; set gpus first)");
    /* gpus: each (TP, PP) pair with DP = gpus/(TP*PP); TP8/PP2 does not divide 8 */
    f = s;
    assert_int_equal(pdbx_spec_set(&f, "gpus", "8", err, sizeof err), 0);
    static const pdbx_parallel want_g8[] = {{1, 8, 1, 1}, {2, 4, 1, 1}, {4, 2, 1, 1}};
    expect_configs(&f, want_g8, 3);
    assert_int_equal(pdbx_spec_set(&f, "gpus", "32", err, sizeof err), -1);
    assert_string_equal(err, "gpus: 32 exceeds gpus_per_node 8 x nodes 2 = 16 (allowed: 1..16)");
    /* pp keeps the GPU counts too */
    f = s;
    assert_int_equal(pdbx_spec_set(&f, "configs", "4x2x1", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&f, "pp", "1,2,4", err, sizeof err), 0);
    static const pdbx_parallel want_pp[] = {{4, 1, 2, 1}, {4, 2, 1, 1}};
    expect_configs(&f, want_pp, 2);
    /* dp: current TP x PP x the new DP values, over-size combinations skipped */
    assert_int_equal(pdbx_spec_set(&f, "dp", "1,2,4", err, sizeof err), 0);
    static const pdbx_parallel want_dp[] = {{4, 1, 1, 1}, {4, 1, 2, 1}, {4, 1, 4, 1}, {4, 2, 1, 1}, {4, 2, 2, 1}};
    expect_configs(&f, want_dp, 5);
    /* explicit configurations */
    assert_int_equal(pdbx_spec_set(&f, "configs", "1x8x1,2x4x1", err, sizeof err), 0);
    static const pdbx_parallel want_c[] = {{1, 8, 1, 1}, {2, 4, 1, 1}};
    expect_configs(&f, want_c, 2);
    assert_int_equal(pdbx_spec_set(&f, "configs", "1x8", err, sizeof err), -1);
    assert_string_equal(err, "configs: expected TPxPPxDP or TPxPPxDPxEP (e.g. 2x4x1, 1x1x4x2), got \"1x8\"");

    /* model override, then validation catches what no longer fits */
    assert_int_equal(pdbx_spec_set(&f, "model", "llama1b", err, sizeof err), 0);
    assert_string_equal(f.model.name, "Llama-3.2-1B");
    assert_int_equal(pdbx_spec_set(&f, "layers", "32", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_validate(&f, err, sizeof err), -1);
    assert_string_equal(err, "layers: 32 is out of range (allowed: 1..16, num_hidden_layers of Llama-3.2-1B)");

    /* the quick preset: dp on 2 ranks */
    assert_int_equal(pdbx_spec_load("quick", &s, err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "dp", "1,2", err, sizeof err), 0);
    static const pdbx_parallel want_q[] = {{1, 1, 1, 1}, {1, 1, 2, 1}, {2, 1, 1, 1}};
    expect_configs(&s, want_q, 3);

    /* a tp override on configs not validated yet whose GPU count passes INT_MAX: no signed
     * overflow (it made a DP 0 configuration), no fit */
    assert_int_equal(pdbx_spec_set(&s, "configs", "4096x4096x65536", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "tp", "2", err, sizeof err), -1);
    assert_non_null(strstr(err, "tp: no configuration"));
    assert_int_equal(s.nconfigs, 1);
    assert_int_equal(s.configs[0].dp, 65536);
}

static void test_did_you_mean(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[2048];
    pdbx_spec_defaults(&s);
    struct { const char *field, *msg; } cases[] = {
        {"seq-len", "unknown field 'seq-len' (did you mean 'seq_len'?)"},
        {"nodse", "unknown field 'nodse' (did you mean 'nodes'?)"},
        {"zero", "unknown field 'zero' (did you mean 'zero1'?)"},
        {"flash", "unknown field 'flash' (did you mean 'flash_attention'?)"},
        {"mbs_", "unknown field 'mbs_' (did you mean 'mbs_min' or 'mbs_max'?)"},
        {"flahs_attention", "unknown field 'flahs_attention' (did you mean 'flash_attention'?)"},
        {"collective", "unknown field 'collective' (did you mean 'collectives'?)"},
        {"gpu_per_node", "unknown field 'gpu_per_node' (did you mean 'gpus_per_node'?)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(pdbx_spec_set(&s, cases[i].field, "1", err, sizeof err), -1);
        assert_string_equal(err, cases[i].msg);
    }
    const char *const *names = pdbx_spec_field_names();
    size_t n = 0;
    while (names[n])
        n++;
    assert_int_equal(n, 44);
    assert_string_equal(names[0], "name");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_overrides_configs),
        cmocka_unit_test(test_did_you_mean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
