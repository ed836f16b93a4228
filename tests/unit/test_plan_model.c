/* test_plan_model.c: per-op shapes and FLOPs, the memory model and the point expansion of
 * engine/plan, against values computed by hand below (Llama-3.3-70B-Instruct: h 8192,
 * I 28672, a 64 heads, k 8 kv heads, d 128, 80 layers, V 128256; bf16: e = 2 bytes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/plan/plan.h"

static void load_fasop(pdbx_spec *s)
{
    char err[512] = "";
    int rc = pdbx_spec_load("fasop-llama70b-8gpu", s, err, sizeof err);
    if (rc != 0)
        print_error("%s\n", err);
    assert_int_equal(rc, 0);
}

static void expect_shape(const pdbx_spec *s, int tp, int mbs, pdbx_op op, int64_t m, int64_t n, int64_t k,
                         int64_t batch, double flops, double bytes)
{
    pdbx_op_shape sh;
    assert_int_equal(pdbx_op_shape_for(s, tp, mbs, op, &sh), 0);
    if (sh.m != m || sh.n != n || sh.k != k || sh.batch != batch || sh.flops != flops || sh.bytes != bytes)
        print_error("%s: got m %lld n %lld k %lld batch %lld flops %.0f bytes %.0f\n", pdbx_op_name(op),
                    (long long)sh.m, (long long)sh.n, (long long)sh.k, (long long)sh.batch, sh.flops, sh.bytes);
    assert_true(sh.m == m && sh.n == n && sh.k == k && sh.batch == batch);
    assert_true(sh.flops == flops);
    assert_true(sh.bytes == bytes);
}

/* Llama-3.3-70B at TP 8, MBS 1, seq 1024: T = 1024 tokens; per rank a/TP = 8 query heads,
 * k/TP = 1 kv head, I/TP = 3584, V/TP = 16032. GEMM flops 2mnk, bytes e*(mk + kn + mn). */
static void test_shapes_llama70b_tp8(void **state)
{
    (void)state;
    pdbx_spec s;
    load_fasop(&s);
    /* attn_q: [1024,8192] x [8192, 8*128=1024]
     *   flops 2*1024*1024*8192 = 17179869184
     *   bytes 2*(1024*8192 + 8192*1024 + 1024*1024) = 2*(8388608+8388608+1048576) = 35651584 */
    expect_shape(&s, 8, 1, PDBX_OP_ATTN_Q, 1024, 1024, 8192, 1, 17179869184.0, 35651584.0);
    /* attn_k, attn_v: [1024,8192] x [8192, 1*128]
     *   flops 2*1024*128*8192 = 2147483648; bytes 2*(8388608 + 1048576 + 131072) = 19136512 */
    expect_shape(&s, 8, 1, PDBX_OP_ATTN_K, 1024, 128, 8192, 1, 2147483648.0, 19136512.0);
    expect_shape(&s, 8, 1, PDBX_OP_ATTN_V, 1024, 128, 8192, 1, 2147483648.0, 19136512.0);
    /* attn_core: 1 sequence x 8 heads, [1024 x 1024] scores over d 128, causal half counted:
     *   flops 4*b*heads*s*s*d / 2 = 2*1*8*1024*1024*128 = 2147483648
     *   bytes q + o (8 heads each) + k + v (1 head each): 2*1*1024*128*(8+8+1+1) = 4718592 */
    expect_shape(&s, 8, 1, PDBX_OP_ATTN_CORE, 1024, 1024, 128, 8, 2147483648.0, 4718592.0);
    /* attn_o: [1024,1024] x [1024,8192]: same flops and bytes as attn_q */
    expect_shape(&s, 8, 1, PDBX_OP_ATTN_O, 1024, 8192, 1024, 1, 17179869184.0, 35651584.0);
    /* mlp_gate, mlp_up: [1024,8192] x [8192,3584]
     *   flops 2*1024*3584*8192 = 60129542144
     *   bytes 2*(8388608 + 29360128 + 3670016) = 82837504 */
    expect_shape(&s, 8, 1, PDBX_OP_MLP_GATE, 1024, 3584, 8192, 1, 60129542144.0, 82837504.0);
    expect_shape(&s, 8, 1, PDBX_OP_MLP_UP, 1024, 3584, 8192, 1, 60129542144.0, 82837504.0);
    /* mlp_act_fn: SiLU(gate)*up over [1024,3584] = 3670016 elements: 4 flops each = 14680064;
     *   bytes gate + up read, product written: 3*2*3670016 = 22020096 */
    expect_shape(&s, 8, 1, PDBX_OP_MLP_ACT_FN, 1024, 3584, 0, 1, 14680064.0, 22020096.0);
    /* mlp_down: [1024,3584] x [3584,8192]: flops as gate; bytes 2*(3670016+29360128+8388608) */
    expect_shape(&s, 8, 1, PDBX_OP_MLP_DOWN, 1024, 8192, 3584, 1, 60129542144.0, 82837504.0);
    /* lm_head: [1024,8192] x [8192,16032]
     *   flops 2*1024*16032*8192 = 268972326912
     *   bytes 2*(1024*8192 + 8192*16032 + 1024*16032) = 2*(8388608+131334144+16416768) = 312279040 */
    expect_shape(&s, 8, 1, PDBX_OP_LM_HEAD, 1024, 16032, 8192, 1, 268972326912.0, 312279040.0);
    /* embed: T rows of [16032, 8192] read and written: 2*2*1024*8192 = 33554432, no flops */
    expect_shape(&s, 8, 1, PDBX_OP_EMBED, 1024, 8192, 0, 1, 0.0, 33554432.0);
    /* norms: 4 flops per element: 4*1024*8192 = 33554432; bytes 2*(2*8388608 + 8192) = 33570816 */
    expect_shape(&s, 8, 1, PDBX_OP_INPUT_NORM, 1024, 8192, 0, 1, 33554432.0, 33570816.0);
    expect_shape(&s, 8, 1, PDBX_OP_POST_ATTN_NORM, 1024, 8192, 0, 1, 33554432.0, 33570816.0);
    expect_shape(&s, 8, 1, PDBX_OP_FINAL_NORM, 1024, 8192, 0, 1, 33554432.0, 33570816.0);
    /* TP all-reduce of [1024,8192] bf16: message 16777216 bytes, and nothing at TP 1 */
    expect_shape(&s, 8, 1, PDBX_OP_TP_ALLREDUCE_ATTN, 1024, 8192, 0, 1, 0.0, 16777216.0);
    expect_shape(&s, 8, 1, PDBX_OP_TP_ALLREDUCE_MLP, 1024, 8192, 0, 1, 0.0, 16777216.0);
    expect_shape(&s, 1, 1, PDBX_OP_TP_ALLREDUCE_MLP, 1024, 8192, 0, 1, 0.0, 0.0);
    /* MBS 4: T = 4096; attn_q flops 2*4096*1024*8192 = 68719476736,
     *   bytes 2*(4096*8192 + 8192*1024 + 4096*1024) = 2*(33554432+8388608+4194304) = 92274688 */
    expect_shape(&s, 8, 4, PDBX_OP_ATTN_Q, 4096, 1024, 8192, 1, 68719476736.0, 92274688.0);
    /* attn_core at MBS 4: batch 4*8 = 32, flops 4x those of MBS 1 */
    expect_shape(&s, 8, 4, PDBX_OP_ATTN_CORE, 1024, 1024, 128, 32, 4 * 2147483648.0, 4 * 4718592.0);
    /* TP 16 > 8 kv heads: k and v keep one (replicated) head per rank */
    expect_shape(&s, 16, 1, PDBX_OP_ATTN_K, 1024, 128, 8192, 1, 2147483648.0, 19136512.0);
    /* attn_rope: q (8 heads) and k (1 head) of 128 per token, [1024, 9*128 = 1152]: 3 flops
     *   an element = 3538944; bytes q and k read and written 2*2*1024*1152 = 4718592 + the fp32
     *   cos/sin table 2*1024*64*4 = 524288 -> 5242880. TP 16: 4 q heads + the replicated kv
     *   head, [1024, 640]: flops 1966080, bytes 2*2*1024*640 + 524288 = 3145728 */
    expect_shape(&s, 8, 1, PDBX_OP_ATTN_ROPE, 1024, 1152, 0, 1, 3538944.0, 5242880.0);
    expect_shape(&s, 16, 1, PDBX_OP_ATTN_ROPE, 1024, 640, 0, 1, 1966080.0, 3145728.0);
    /* the residual adds: [1024, 8192], 1 flop an element = 8388608; hidden and the branch
     *   read, hidden written: 3*2*8388608 = 50331648; the same at every TP (full h) */
    expect_shape(&s, 8, 1, PDBX_OP_ATTN_RESIDUAL, 1024, 8192, 0, 1, 8388608.0, 50331648.0);
    expect_shape(&s, 8, 1, PDBX_OP_MLP_RESIDUAL, 1024, 8192, 0, 1, 8388608.0, 50331648.0);
    expect_shape(&s, 1, 4, PDBX_OP_MLP_RESIDUAL, 4096, 8192, 0, 1, 4 * 8388608.0, 4 * 50331648.0);

    pdbx_op_shape sh;
    assert_int_equal(pdbx_op_shape_for(&s, 3, 1, PDBX_OP_ATTN_Q, &sh), -1);   /* 3 does not divide 64 heads */
    assert_int_equal(pdbx_op_shape_for(&s, 8, 0, PDBX_OP_ATTN_Q, &sh), -1);
    assert_int_equal(pdbx_op_shape_for(&s, 8, 1, PDBX_OP_COUNT, &sh), -1);
}

/* fused_projections at Llama-3.3-70B TP 8, MBS 1, seq 1024 (T 1024, 8 q heads and 1 kv head
 * of 128 per rank, I/TP 3584):
 *   QKV: [1024,8192] x [8192, (8 + 2) x 128 = 1280]: flops 2*1024*1280*8192 = 21474836480,
 *     bytes 2*(8388608 + 10485760 + 1310720) = 40370176; shares q 1024/1280 = 0.8, k, v 0.1
 *     (the three ops' flops 17179869184 + 2 x 2147483648 = the fused flops);
 *   fc1: [1024,8192] x [8192, 2 x 3584 = 7168]: flops 2*1024*7168*8192 = 120259084288,
 *     bytes 2*(8388608 + 58720256 + 7340032) = 148897792; shares 1/2 each. */
static void test_fused_shapes_llama70b_tp8(void **state)
{
    (void)state;
    pdbx_spec s;
    load_fasop(&s);
    pdbx_op_shape sh;
    assert_int_equal(pdbx_fused_shape_for(&s, 8, 1, PDBX_OP_ATTN_Q, &sh), 0);
    assert_true(sh.m == 1024 && sh.n == 1280 && sh.k == 8192 && sh.batch == 1);
    assert_true(sh.flops == 21474836480.0 && sh.bytes == 40370176.0);
    assert_int_equal(pdbx_fused_shape_for(&s, 8, 1, PDBX_OP_MLP_GATE, &sh), 0);
    assert_true(sh.m == 1024 && sh.n == 7168 && sh.k == 8192);
    assert_true(sh.flops == 120259084288.0 && sh.bytes == 148897792.0);
    assert_true(pdbx_fused_share(&s, 8, 1, PDBX_OP_ATTN_Q) == 0.8);
    assert_true(fabs(pdbx_fused_share(&s, 8, 1, PDBX_OP_ATTN_K) - 0.1) < 1e-15);
    assert_true(pdbx_fused_share(&s, 8, 1, PDBX_OP_ATTN_V) == pdbx_fused_share(&s, 8, 1, PDBX_OP_ATTN_K));
    assert_true(pdbx_fused_share(&s, 8, 1, PDBX_OP_MLP_GATE) == 0.5);
    assert_true(pdbx_fused_share(&s, 8, 1, PDBX_OP_MLP_UP) == 0.5);
    assert_true(pdbx_fused_share(&s, 8, 1, PDBX_OP_ATTN_O) == 1);   /* in no group */
    assert_int_equal(pdbx_fused_leader(PDBX_OP_ATTN_V), PDBX_OP_ATTN_Q);
    assert_int_equal(pdbx_fused_leader(PDBX_OP_MLP_UP), PDBX_OP_MLP_GATE);
    assert_int_equal(pdbx_fused_leader(PDBX_OP_ATTN_O), PDBX_OP_COUNT);
    /* only leaders have a fused GEMM; a bad TP has none */
    assert_int_equal(pdbx_fused_shape_for(&s, 8, 1, PDBX_OP_ATTN_K, &sh), -1);
    assert_int_equal(pdbx_fused_shape_for(&s, 3, 1, PDBX_OP_ATTN_Q, &sh), -1);
    assert_true(isnan(pdbx_fused_share(&s, 3, 1, PDBX_OP_ATTN_Q)));
    /* TP 16 > 8 kv heads: the kv head is replicated, (4 + 2) x 128 = 768 columns */
    assert_int_equal(pdbx_fused_shape_for(&s, 16, 1, PDBX_OP_ATTN_Q, &sh), 0);
    assert_true(sh.n == 768);
}

/* Memory of TP8/PP2/DP1 at MBS 1 (seq 1024, bf16, 16 bytes per parameter, no ZeRO, no flash):
 *   stage 0 holds ceil(80/2) = 40 layers;
 *   per layer per rank: q,o 2*8192*8192/8 = 16777216; k,v 2*8192*1*128 = 2097152;
 *     gate,up,down 3*8192*28672/8 = 88080384; norms 2*8192 = 16384  -> 106971136
 *   params = 40*106971136 + embedding 128256*8192/8 (131334144) = 4410179584
 *   weights = grads = 2 * 4410179584 = 8820359168; Adam (16-4 = 12 B) = 52922155008
 *   activations per layer per micro-batch:
 *     s*b*(h*(4e+2) + e*(2*a*d/t + 2*kv*d + 4*I/t)) = 1024*(81920 + 2*(2048+256+14336)) = 117964800
 *     + (2e+1)*(a/t)*s*s*b = 5*8*1024*1024 = 41943040                                 -> 159907840
 *   times 40 layers times PP=2 micro-batches in flight = 12792627200
 *   total = 8820359168*2 + 52922155008 + 12792627200 = 83355500544 (> 80e9: OOM on H100-SXM) */
static void test_memory_llama70b_tp8_pp2(void **state)
{
    (void)state;
    pdbx_spec s;
    load_fasop(&s);
    pdbx_parallel par = {8, 2, 1, 1};
    pdbx_memory m;
    pdbx_memory_predict(&s, &par, 1, &m);
    assert_true(m.params_per_rank == 4410179584.0);
    assert_true(m.weights == 8820359168.0);
    assert_true(m.grads == 8820359168.0);
    assert_true(m.optimizer == 52922155008.0);
    assert_true(m.activations == 12792627200.0);
    assert_true(m.total == 83355500544.0);

    /* MBS 2 doubles the activations only */
    pdbx_memory m2;
    pdbx_memory_predict(&s, &par, 2, &m2);
    assert_true(m2.activations == 2 * 12792627200.0);
    assert_true(m2.weights == m.weights);

    /* flash attention drops the score term: 117964800 * 40 * 2 = 9437184000 */
    s.flash_attention = 1;
    pdbx_memory_predict(&s, &par, 1, &m2);
    assert_true(m2.activations == 9437184000.0);
    s.flash_attention = 0;

    /* ZeRO-1 over DP 2 halves the optimizer states: TP8/PP2/DP2 -> 26461077504 */
    s.zero1 = 1;
    pdbx_parallel par2 = {8, 2, 2, 1};
    pdbx_memory_predict(&s, &par2, 1, &m2);
    assert_true(m2.optimizer == 52922155008.0 / 2);
    s.zero1 = 0;

    /* PP 1: stage 0 is also the last stage and adds the final norm and the untied lm_head:
     *   80*106971136 + 131334144*2 + 8192 = 8820367360 */
    pdbx_parallel par3 = {8, 1, 1, 1};
    pdbx_memory_predict(&s, &par3, 1, &m2);
    assert_true(m2.params_per_rank == 8820367360.0);

    /* 16 bytes per parameter for bf16 reads 2 + 2 + 12; fp32 reads 4 + 4 + 8 */
    s.dtype = PDBX_DTYPE_FP32;
    pdbx_memory_predict(&s, &par, 1, &m2);
    assert_true(m2.weights == 4 * 4410179584.0 && m2.optimizer == 8 * 4410179584.0);
}

/* Korthikanti's GPT formula s*b*h*(10 + 24/t + 5*a*s/(h*t)) is what the Llama adaptation gives
 * for a GPT-shaped layer except the MLP: with k = a (no GQA) and a*d = h, the SwiGLU MLP keeps
 * 4 tensors of I/t where GeLU keeps 2 of 4h/t. So for I = 2h the two agree exactly. */
static void test_memory_reduces_to_korthikanti(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "";
    pdbx_spec_defaults(&s);
    cJSON *m = cJSON_Parse("{\"hidden_size\": 1024, \"intermediate_size\": 2048, \"num_attention_heads\": 16,"
                           " \"num_hidden_layers\": 4, \"vocab_size\": 1000}");
    assert_non_null(m);
    assert_int_equal(pdbx_model_from_json(m, "gpt-like", &s.model, err, sizeof err), 0);
    cJSON_Delete(m);
    s.dtype = PDBX_DTYPE_BF16;
    s.seq_len = 512;
    double h = 1024, a = 16, sq = 512, b = 2, t = 2;
    pdbx_parallel par = {2, 4, 1, 1};   /* 1 layer per stage, 4 micro-batches in flight */
    pdbx_memory mm;
    pdbx_memory_predict(&s, &par, 2, &mm);
    double korthikanti = sq * b * h * (10 + 24 / t + 5 * a * sq / (h * t));
    assert_true(mm.activations == korthikanti * 1 * 4);
    /* full recomputation keeps only each layer's input per micro-batch in flight,
     * 512*2*1024 x 2 bytes x 1 layer x 4 micro-batches = 8388608, plus one layer's full
     * activations while it is recomputed in the backward */
    s.recompute = PDBX_RECOMPUTE_FULL;
    pdbx_memory_predict(&s, &par, 2, &mm);
    assert_true(mm.activations == 8388608.0 + korthikanti);
}

static void test_expansion_fasop(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "";
    load_fasop(&s);
    pdbx_plan_point *pts = NULL;
    size_t n = 0;
    assert_int_equal(pdbx_plan_expand(&s, &pts, &n, err, sizeof err), 0);
    assert_int_equal(n, 32);   /* 4 configurations x MBS 1, 2, 4, ..., 128 */
    static const int tp[] = {1, 2, 4, 8}, pp[] = {8, 4, 2, 2}, ranks[] = {8, 8, 8, 16};
    for (size_t i = 0; i < n; i++) {
        int c = (int)(i / 8);
        assert_int_equal(pts[i].index, (int)i);
        assert_int_equal(pts[i].config, c);
        assert_int_equal(pts[i].tp, tp[c]);
        assert_int_equal(pts[i].pp, pp[c]);
        assert_int_equal(pts[i].dp, 1);
        assert_int_equal(pts[i].ranks, ranks[c]);
        assert_int_equal(pts[i].mbs, 1 << (i % 8));
        if (i % 8)   /* memory grows with MBS within a configuration */
            assert_true(pts[i].mem.total > pts[i - 1].mem.total);
    }
    /* point 24 is TP8/PP2 MBS 1, hand-computed in test_memory_llama70b_tp8_pp2 */
    assert_true(pts[24].mem.total == 83355500544.0);
    /* Full Llama-3.3-70B training at 16 B/param needs >= 70.5 GB of weights, gradients and
     * Adam states per GPU even at TP8/PP2 (70B * 16 B / 16 GPUs): every point is predicted to
     * OOM on the A40 (48 GB), and on the H100-SXM (80 GB) too once activations are added. */
    for (size_t i = 0; i < n; i++)
        assert_int_equal(pts[i].train_oom, 1);
    free(pts);

    assert_int_equal(pdbx_spec_set(&s, "gpu", "H100-SXM", err, sizeof err), 0);
    assert_int_equal(pdbx_plan_expand(&s, &pts, &n, err, sizeof err), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(pts[i].train_oom, 1);
    free(pts);

    /* The H200 (141 GB) holds TP8/PP2 up to MBS 4: 83.4, 96.1, 121.7 GB, then 172.9 GB at MBS 8 */
    assert_int_equal(pdbx_spec_set(&s, "gpu", "H200", err, sizeof err), 0);
    assert_int_equal(pdbx_plan_expand(&s, &pts, &n, err, sizeof err), 0);
    for (size_t i = 24; i < 32; i++)
        assert_int_equal(pts[i].train_oom, i >= 27);
    free(pts);

    /* an invalid spec is refused with its message */
    s.mbs_max = 100;
    assert_int_equal(pdbx_plan_expand(&s, &pts, &n, err, sizeof err), -1);
    assert_string_equal(err, "mbs_max: 100 is not a power of two (allowed: 1, 2, 4, ..., 1024)");
    assert_null(pts);
}

/* The FASOP sweep with Llama-3.1-8B (h 4096, I 14336, a 32, k 8, 32 layers, V 128256) shows the
 * marks differing between A40 (48 GB) and H100-SXM (80 GB). TP1/PP8, MBS 4 by hand:
 *   per layer 2*4096*4096 + 2*4096*8*128 + 3*4096*14336 + 2*4096 = 218112000 parameters;
 *   stage 0: 4 layers + embedding 128256*4096 = 872448000 + 525336576 = 1397784576 params,
 *   times 16 bytes = 22364553216;
 *   activations per layer per micro-batch at b = 4 (t = 1, 8 kv heads):
 *     s*b*(h*10 + 2*(2*4096 + 2*8*128 + 4*14336)) = 4096*(40960 + 135168) = 721420288
 *     + 5*32*1024*1024*4 = 671088640                                       -> 1392508928
 *   times 4 layers times 8 micro-batches in flight = 44560285696;
 *   total 22364553216 + 44560285696 = 66924838912: fits 80e9, not 48e9. */
static void test_oom_marks_a40_vs_h100(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "";
    load_fasop(&s);
    assert_int_equal(pdbx_spec_set(&s, "model", "llama8b", err, sizeof err), 0);
    pdbx_plan_point *a40 = NULL, *h100 = NULL;
    size_t na = 0, nh = 0;
    assert_int_equal(pdbx_plan_expand(&s, &a40, &na, err, sizeof err), 0);
    assert_int_equal(pdbx_spec_set(&s, "gpu", "H100-SXM", err, sizeof err), 0);
    assert_int_equal(pdbx_plan_expand(&s, &h100, &nh, err, sizeof err), 0);
    assert_int_equal(na, 32);
    assert_int_equal(nh, 32);
    assert_true(a40[2].mem.total == 66924838912.0);   /* TP1/PP8 MBS 4 */
    assert_int_equal(a40[2].train_oom, 1);
    assert_int_equal(h100[2].train_oom, 0);
    int differ = 0;
    for (size_t i = 0; i < na; i++) {
        assert_true(a40[i].mem.total == h100[i].mem.total);    /* the GPU changes marks, not needs */
        assert_true(!(h100[i].train_oom && !a40[i].train_oom));   /* never worse on 80 GB */
        differ += a40[i].train_oom != h100[i].train_oom;
        assert_int_equal(a40[i].train_oom, a40[i].mem.total > 48e9);
        assert_int_equal(h100[i].train_oom, h100[i].mem.total > 80e9);
    }
    /* One MBS per configuration lies between 48 and 80 GB: TP1/PP8 MBS 4 (66.9 GB), TP2/PP4
     * MBS 8 (68.1), TP4/PP2 MBS 16 (76.7), TP8/PP2 MBS 16 (49.1); the next MBS OOMs on both. */
    assert_int_equal(differ, 4);
    free(a40);
    free(h100);
}

int main(void)
{
    setenv("PDBX_CONFIGS", PDBX_SOURCE_DIR "/configs", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes_llama70b_tp8),
        cmocka_unit_test(test_memory_llama70b_tp8_pp2),
        cmocka_unit_test(test_memory_reduces_to_korthikanti),
        cmocka_unit_test(test_fused_shapes_llama70b_tp8),
        cmocka_unit_test(test_expansion_fasop),
        cmocka_unit_test(test_oom_marks_a40_vs_h100),
    };
    return cmocka_run_group_tests_name("plan_model", tests, NULL, NULL);
}
