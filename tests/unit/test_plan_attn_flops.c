/* test_plan_attn_flops.c: pdbx_attn_core_executed_flops (plan.h) on hand-computed cases,
 * against the model FLOPs pdbx_op_shape_for gives attn_core (the causal half); the
 * sliding-window counts (pdbx_attn_window_*) on hand-computed cases and against brute force;
 * pdbx_op_shape_for's windowed attn_core and soft-capped lm_head by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- sliding window ---------------------------------------------------------------------- */
/* Model FLOPs, 4 b d (s w - w^2/2): s 8, d 4, b 1: w 3 -> 16 x 19.5 = 312; w 0, 8 and 100 ->
 * 16 x 32 = 512 = 2 b s^2 d (the causal count), which pdbx_op_shape_for gives attn_core. */
static void test_window_model(void **state)
{
    (void)state;
    assert_true(pdbx_attn_window_model_flops(1, 8, 4, 3) == 312);
    assert_true(pdbx_attn_window_model_flops(1, 8, 4, 0) == 512);
    assert_true(pdbx_attn_window_model_flops(1, 8, 4, 8) == 512);
    assert_true(pdbx_attn_window_model_flops(1, 8, 4, 100) == 512);
    assert_true(pdbx_attn_window_model_flops(3, 8, 4, 1) == 3 * 16 * (8 - 0.5));
    assert_true(pdbx_attn_window_model_flops(1, 8, 4, -1) == 0);
    pdbx_spec spec;
    pdbx_spec_defaults(&spec);
    spec.model.hidden = 2048;
    spec.model.heads = 16;
    spec.model.kv_heads = 4;
    spec.model.head_dim = 128;
    spec.seq_len = 4096;
    pdbx_op_shape sh;
    assert_int_equal(pdbx_op_shape_for(&spec, 2, 3, PDBX_OP_ATTN_CORE, &sh), 0);
    assert_true(pdbx_attn_window_model_flops(sh.batch, sh.m, sh.k, 0) == sh.flops);
    /* Mistral's 4096 window over 8192 tokens: s w - w^2/2 = 3/4 of the causal s^2/2 */
    assert_true(pdbx_attn_window_model_flops(1, 8192, 128, 4096) ==
                4.0 * 128 * (8192.0 * 4096 - 4096.0 * 4096 / 2));
}

/* Whole tiles that hold a band pair, brute force: every (query, key) pair of the band marks
 * its tile; the count of marked tiles x qtile x ktile. */
static double visited_brute(int64_t s, int64_t w, int64_t qt, int64_t kt)
{
    const int64_t nq = (s + qt - 1) / qt, nk = (s + kt - 1) / kt;
    char *mark = calloc((size_t)(nq * nk), 1);
    for (int64_t i = 0; i < s; i++)
        for (int64_t j = 0; j <= i; j++)
            if (w == 0 || j > i - w)
                mark[(i / qt) * nk + j / kt] = 1;
    double n = 0;
    for (int64_t t = 0; t < nq * nk; t++)
        n += mark[t];
    free(mark);
    return n * (double)qt * (double)kt;
}

/* Visited pairs: the band's own (tiles 1 x 1: s 8, w 3 -> 1 + 2 + 6 x 3 = 21; w 0 -> 36), the
 * cpu kernels' 32-row blocks (s 100, w 16: 32 x (32 + 47 + 47 + 19) = 4640), the flash tiles,
 * against brute force over sequence lengths, windows and tiles. */
static void test_window_visited(void **state)
{
    (void)state;
    assert_true(pdbx_attn_window_visited_pairs(8, 3, 1, 1) == 21);
    assert_true(pdbx_attn_window_visited_pairs(8, 0, 1, 1) == 36);
    assert_true(pdbx_attn_window_visited_pairs(8, 9, 1, 1) == 36);
    assert_true(pdbx_attn_window_visited_pairs(100, 16, 32, 1) == 4640);
    assert_true(pdbx_attn_window_visited_pairs(8, -1, 1, 1) == 0);
    assert_true(pdbx_attn_window_visited_pairs(8, 3, 0, 1) == 0);
    const int64_t seqs[] = { 1, 7, 64, 100, 257 }, wins[] = { 0, 1, 5, 16, 63, 64, 65, 100, 300 };
    const int64_t tiles[][2] = { { 1, 1 }, { 32, 1 }, { 16, 1 }, { 64, 64 }, { 32, 32 }, { 4, 16 },
                                 { 16, 64 } };
    for (size_t a = 0; a < sizeof seqs / sizeof seqs[0]; a++)
        for (size_t b = 0; b < sizeof wins / sizeof wins[0]; b++)
            for (size_t c = 0; c < sizeof tiles / sizeof tiles[0]; c++)
                assert_true(pdbx_attn_window_visited_pairs(seqs[a], wins[b], tiles[c][0],
                                                           tiles[c][1]) ==
                            visited_brute(seqs[a], wins[b], tiles[c][0], tiles[c][1]));
}

/* Executed FLOPs with a window: window 0 or >= s and unfused give the causal function's;
 * flash fwd s 256, tile 64, w 64: tiles 1 + 2 + 2 + 2 = 7 (of 10), 4 x 128 x 7 x 64^2 =
 * 14680064; bwd, tile 32: tiles 1 + 2 + 6 x 3 = 21 (from the third on, a tile's first row
 * reaches 63 keys back: the diagonal tile and two to its left), 10 x 128 x 21 x 32^2 =
 * 27525120. */
static void test_window_executed(void **state)
{
    (void)state;
    const int64_t full[] = { 0, 256, 1000 };   /* no window, windows of all of s */
    for (int flash = 0; flash < 2; flash++)
        for (int pass = 0; pass < 2; pass++)
            for (int w = 0; w < 3; w++)
                assert_true(pdbx_attn_core_window_executed_flops(flash, (pdbx_pass)pass, 2, 256,
                                                                 128, 64, full[w]) ==
                            pdbx_attn_core_executed_flops(flash, (pdbx_pass)pass, 2, 256, 128, 64));
    assert_true(pdbx_attn_core_window_executed_flops(0, PDBX_PASS_FWD, 1, 256, 128, 64, 64) ==
                pdbx_attn_core_executed_flops(0, PDBX_PASS_FWD, 1, 256, 128, 64));
    assert_true(pdbx_attn_core_window_executed_flops(1, PDBX_PASS_FWD, 1, 256, 128, 64, 64) ==
                14680064);
    assert_true(pdbx_attn_core_window_executed_flops(1, PDBX_PASS_BWD, 1, 256, 128, 64, 64) ==
                27525120);
    assert_true(pdbx_attn_core_window_executed_flops(1, PDBX_PASS_FWD, 1, 256, 128, 64, -1) == 0);
}

/* Per-layer options: gemma-2 (alternating, caps 50/30) local on even profiled layers, every
 * layer global at seq_len <= its window; Mistral windowed everywhere past 4096; a llama none.
 * The attn_core mean FLOPs are the mean of the two kinds. */
static void test_opts_for_layer(void **state)
{
    (void)state;
    pdbx_model g, mi, ll;
    char err[512] = "";
    assert_int_equal(pdbx_model_load("gemma9b", &g, err, sizeof err), 0);
    assert_int_equal(pdbx_model_load(PDBX_SOURCE_DIR "/tests/fixtures/models/Mistral-7B-v0.1.json", &mi, err,
                                     sizeof err), 0);
    assert_int_equal(pdbx_model_load("llama1b", &ll, err, sizeof err), 0);
    int64_t w;
    double cap;
    for (int l = 0; l < 4; l++) {
        assert_int_equal(pdbx_attn_opts_for_layer(&g, 4, l, 8192, &w, &cap), 0);
        assert_int_equal(w, l % 2 == 0 ? 4096 : 0);
        assert_true(cap == 50.0);
        assert_int_equal(pdbx_attn_opts_for_layer(&g, 4, l, 4096, &w, &cap), 0);
        assert_int_equal(w, 0);   /* a window of seq_len is full causal */
        assert_int_equal(pdbx_attn_opts_for_layer(&mi, 4, l, 8192, &w, &cap), 0);
        assert_true(w == 4096 && cap == 0);
        assert_int_equal(pdbx_attn_opts_for_layer(&ll, 4, l, 8192, &w, &cap), 0);
        assert_true(w == 0 && cap == 0);
    }
    assert_int_equal(pdbx_attn_opts_for_layer(&g, 4, 4, 8192, &w, &cap), -1);
    const double full = pdbx_attn_window_model_flops(16, 8192, 256, 0);
    const double local = pdbx_attn_window_model_flops(16, 8192, 256, 4096);
    assert_true(fabs(pdbx_attn_core_mean_flops(&g, 4, 8192, 16, 256) - (full + local) / 2) < 1e-6 * full);
    assert_true(fabs(pdbx_attn_core_mean_flops(&ll, 2, 8192, 16, 256) - full) < 1e-6 * full);
}

/* pdbx_op_shape_for's attn_core and lm_head for a gemma-2-like model by hand: h 64, 4 heads of
 * d 16 (2 kv heads), s 8, mbs 1, window 3 on alternate layers, caps 50/30, V 100, bf16.
 *   attn_core, batch b = 4 heads: global (causal half) 2 b s^2 d = 2*4*64*16 = 8192; local
 *     4 b d (s w - w^2/2) = 4*4*16*(24 - 4.5) = 4992; mean over 2 (or 4) profiled layers, one
 *     local per global: (4992 + 8192) / 2 = 6592; TP 2 halves b: 3296; the window on every
 *     layer (Mistral's kind): 4992; a window of seq_len or more: 8192. The attention cap adds
 *     nothing (the softmax is not counted either). Bytes stay q, k, v read and out written:
 *     2 * 1*8*16 * (2*4 + 2*2) = 3072.
 *   lm_head, T 8: the GEMM 2*8*100*64 = 102400 FLOPs, bytes 2 * (8*64 + 64*100 + 8*100) =
 *     15424; the final cap adds 3 FLOPs per logit, 3*800 = 2400 -> 104800, and the logits read
 *     and written once more, 2*2*800 = 3200 -> 18624; without the cap the GEMM's alone. */
static void test_shape_window_and_caps(void **state)
{
    (void)state;
    pdbx_spec spec;
    pdbx_spec_defaults(&spec);
    pdbx_model *m = &spec.model;
    m->hidden = 64, m->heads = 4, m->kv_heads = 2, m->head_dim = 16, m->intermediate = 128;
    m->vocab = 100, m->layers = 4;
    m->arch.sliding_window.size = 3;
    m->arch.sliding_window.layers = PDBX_SW_ALTERNATING;
    m->arch.sliding_window.count = 2;
    m->arch.attn_softcap = 50, m->arch.final_softcap = 30;
    spec.seq_len = 8, spec.layers_profiled = 2, spec.dtype = PDBX_DTYPE_BF16;
    pdbx_op_shape sh;
    assert_int_equal(pdbx_op_shape_for(&spec, 1, 1, PDBX_OP_ATTN_CORE, &sh), 0);
    assert_true(sh.flops == 6592 && sh.bytes == 3072 && sh.batch == 4);
    spec.layers_profiled = 4;
    assert_int_equal(pdbx_op_shape_for(&spec, 1, 1, PDBX_OP_ATTN_CORE, &sh), 0);
    assert_true(sh.flops == 6592);
    assert_int_equal(pdbx_op_shape_for(&spec, 2, 1, PDBX_OP_ATTN_CORE, &sh), 0);
    assert_true(sh.flops == 3296);
    m->arch.sliding_window.layers = PDBX_SW_ALL;
    assert_int_equal(pdbx_op_shape_for(&spec, 1, 1, PDBX_OP_ATTN_CORE, &sh), 0);
    assert_true(sh.flops == 4992);
    m->arch.sliding_window.size = 8;
    assert_int_equal(pdbx_op_shape_for(&spec, 1, 1, PDBX_OP_ATTN_CORE, &sh), 0);
    assert_true(sh.flops == 8192);
    assert_int_equal(pdbx_op_shape_for(&spec, 1, 1, PDBX_OP_LM_HEAD, &sh), 0);
    assert_true(sh.flops == 104800 && sh.bytes == 18624);
    m->arch.final_softcap = 0;
    assert_int_equal(pdbx_op_shape_for(&spec, 1, 1, PDBX_OP_LM_HEAD, &sh), 0);
    assert_true(sh.flops == 102400 && sh.bytes == 15424);
}

/* Validation: gemma-2 past its window needs an even layers >= 2; cpu takes its window and both
 * caps, cuda too on its unfused core; flash_attention refuses the window and the score cap by
 * name. */
static void test_validate_window(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[1024] = "";
    pdbx_spec_defaults(&s);
    assert_int_equal(pdbx_spec_set(&s, "model", "gemma9b", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);   /* seq 2048: inside the window */
    assert_int_equal(pdbx_spec_set(&s, "seq_len", "8192", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "layers", "1", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), -1);
    assert_non_null(strstr(err, "layers: 1 profiled layers of gemma-2-9b"));
    assert_non_null(strstr(err, "allowed: even and >= 2"));
    assert_int_equal(pdbx_spec_set(&s, "layers", "2", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "seq_len", "2048", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "layers", "1", err, sizeof err), 0);
    /* every layer global at 2048: any count */
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
    /* cuda: its unfused core runs the window and the cap, the fused kernel neither */
    assert_int_equal(pdbx_spec_set(&s, "backend", "cuda", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "gpu", "h100", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "flash_attention", "true", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), -1);
    assert_string_equal(err, "flash_attention: the fused kernel does not run model gemma-2-9b's attention "
                             "soft-capping (50) (allowed for this model: flash_attention false)");
    assert_int_equal(pdbx_spec_set(&s, "seq_len", "8192", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "layers", "2", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), -1);
    assert_non_null(strstr(err, "flash_attention: the fused kernel does not run model gemma-2-9b's sliding "
                                "window of 4096 tokens (shorter than seq_len 8192)"));
    assert_int_equal(pdbx_spec_set(&s, "flash_attention", "false", err, sizeof err), 0);
    assert_int_equal(pdbx_spec_validate(&s, err, sizeof err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unfused_and_bwd),
        cmocka_unit_test(test_flash_tiles),
        cmocka_unit_test(test_model_half),
        cmocka_unit_test(test_window_model),
        cmocka_unit_test(test_window_visited),
        cmocka_unit_test(test_window_executed),
        cmocka_unit_test(test_opts_for_layer),
        cmocka_unit_test(test_shape_window_and_caps),
        cmocka_unit_test(test_validate_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
