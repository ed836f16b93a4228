/* test_plan_profile_memory_dense.c: the cuda rule of the profile memory
 * (engine/plan/plan_profile_memory_cuda.c) for the dense families after Llama, against lists
 * computed by hand: a tiny gpt2 (LayerNorm with biases, plain GELU MLP, learned positions,
 * every projection biased, tied) forward and backward, and which buffers a parallel residual
 * (gpt-neox) and partial rotary change. The backend's own allocation is held equal to this
 * list by tests/cuda/test_cuda_dense_point.c (host part, every family and op subset). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "engine/plan/plan.h"

/* h 64, I 256, 4 heads of 16 (MHA), V 256, 2 layers profiled; TP/PP/DP 1 (no comm buffer);
 * MBS 2, seq 8: T = 16 tokens; bf16. */
static pdbx_profile_point tiny_gpt2(void)
{
    pdbx_profile_point p;
    memset(&p, 0, sizeof p);
    snprintf(p.model.name, sizeof p.model.name, "tiny-gpt2");
    p.model.hidden = 64;
    p.model.intermediate = 256;
    p.model.heads = 4;
    p.model.kv_heads = 4;
    p.model.head_dim = 16;
    p.model.layers = 2;
    p.model.vocab = 256;
    p.model.tie_embeddings = 1;
    pdbx_arch *a = &p.model.arch;
    snprintf(a->activation, sizeof a->activation, "gelu_new");
    a->mlp_plain = 1;
    a->norm = PDBX_NORM_LAYER;
    a->position = PDBX_POS_LEARNED;
    a->max_positions = 32;
    a->bias.qkv = a->bias.attn_out = a->bias.mlp = 1;
    p.tp = p.pp = p.dp = 1;
    p.mbs = 2;
    p.seq_len = 8;
    p.layers = 2;
    p.ops = pdbx_model_ops(&p.model);   /* no mlp_gate, no attn_rope */
    p.dtype = PDBX_DTYPE_BF16;
    p.backend = PDBX_BACKEND_CUDA;
    p.threads = 1;
    return p;
}

static const pdbx_profile_buf *find(const pdbx_profile_memory *m, pdbx_buf_role r)
{
    for (int i = 0; i < m->nbufs; i++)
        if (m->buf[i].role == r)
            return &m->buf[i];
    return NULL;
}

/* bf16 (2 bytes):
 *   activations: ids 16*4 = 64; hidden, norm_out, context, attn_out, post_norm_out,
 *     final_norm_out 16*64*2 = 2048 each (12288); q, k, v 2048 each (6144); scores
 *     2*4*8*8*2 = 1024; up, act 16*256*2 = 8192 each (no gate); logits 16*256*2 = 8192;
 *     LayerNorm's row mean and rstd fp32 16*4 = 64 each; no rope table
 *     -> 64 + 12288 + 6144 + 1024 + 16384 + 8192 + 128 = 44224
 *   weights: embed (tied: the lm_head's too) 256*64*2 = 32768; final norm weight and bias
 *     128 each; position table 32 rows * 64 * 2 = 4096; per layer two norm weights and two
 *     biases 4 * 128 = 512, q, k, v, o 64*64*2 = 8192 each, up and down 256*64*2 = 32768
 *     each, biases q, k, v, o 128 each, up 512, down 128 -> 99968, x 2 layers in
 *     ceil(3 * 50 MiB / (2 * 99968)) = 787 copies = 1574 sets -> 157349632
 *     -> 32768 + 256 + 4096 + 157349632 = 157386752
 *   workspace: cuBLASLt 32 MiB
 *   total 44224 + 157386752 + 33554432 = 190985408
 * with bwd, grads: the activations' (dtype) as above less ids, mean and rstd: 44032; weights'
 *   (fp32): embed 65536, norm weight 256, q, kv, o 16384 each, up (gate_up) and down 65536
 *   each -> 246016; biases q, kv, o 256 each, up 1024, down 256 -> 2048; the norm bias 256; the
 *   position table 32*64*4 = 8192 -> 300544; no norm rstd workspace (LayerNorm's backward
 *   reads the forward's). */
static void test_gpt2_by_hand(void **state)
{
    (void)state;
    pdbx_profile_point p = tiny_gpt2();
    pdbx_profile_memory m;
    char err[256] = "";
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_ACTIVATIONS] == 44224);
    assert_true(m.kind_bytes[PDBX_MEM_WEIGHTS] == 157386752);
    assert_true(m.kind_bytes[PDBX_MEM_WORKSPACE] == 33554432);
    assert_true(m.kind_bytes[PDBX_MEM_COMM] == 0 && m.kind_bytes[PDBX_MEM_GRADS] == 0);
    assert_true(m.total == 190985408);
    assert_null(find(&m, PDBX_BUF_GATE));
    assert_null(find(&m, PDBX_BUF_ROPE_TABLE));
    assert_null(find(&m, PDBX_BUF_LM_HEAD_W));
    const pdbx_profile_buf *b = find(&m, PDBX_BUF_NORM_B);   /* 2 per layer set and the final */
    assert_non_null(b);
    assert_true(b->bytes == 128 && b->count == 2 * 1574 + 1);
    b = find(&m, PDBX_BUF_POS_TABLE);
    assert_true(b && b->bytes == 4096 && b->count == 1);
    b = find(&m, PDBX_BUF_NORM_MEAN);
    assert_true(b && b->bytes == 64 && b->kind == PDBX_MEM_ACTIVATIONS);
    b = find(&m, PDBX_BUF_L_Q);
    assert_true(b && b->count == 1574);
    p.passes = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD);
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_GRADS] == 300544);
    assert_true(m.kind_bytes[PDBX_MEM_WORKSPACE] == 33554432);   /* no norm rstd */
    assert_true(m.total == 190985408 + 300544);
    assert_null(find(&m, PDBX_BUF_NORM_RSTD));
    assert_null(find(&m, PDBX_BUF_GRAD_GATE));
    b = find(&m, PDBX_BUF_GRAD_POS_TABLE);
    assert_true(b && b->bytes == 8192);
    b = find(&m, PDBX_BUF_GRAD_NORM_B);
    assert_true(b && b->bytes == 256);
    /* RMSNorm instead (and no positions): no biases, statistics or their gradients; the
     * RMSNorms' rstd workspace back */
    p.model.arch.norm = PDBX_NORM_RMS;
    p.model.arch.position = PDBX_POS_ROPE;
    p.model.arch.max_positions = 0;
    p.ops = pdbx_model_ops(&p.model);
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_null(find(&m, PDBX_BUF_NORM_B));
    assert_null(find(&m, PDBX_BUF_NORM_MEAN));
    assert_null(find(&m, PDBX_BUF_GRAD_NORM_B));
    assert_null(find(&m, PDBX_BUF_POS_TABLE));
    b = find(&m, PDBX_BUF_NORM_RSTD);
    assert_true(b && b->bytes == 64);
    b = find(&m, PDBX_BUF_ROPE_TABLE);   /* fp32 [8, 16/2] x 2 */
    assert_true(b && b->bytes == 512);
}

/* A parallel residual's post_attn_norm reads hidden (the layer's input), not attn_out: a point
 * of that op alone holds hidden, its output and its statistics, and with bwd d attn_out (its
 * dx, as the cpu writes it) and d post_attn_norm_out; a sequential one holds attn_out. Partial
 * rotary (rotary_fraction 0.25 of 16: 4 dims) shrinks the rope table to fp32 [8, 2] x 2 = 128. */
static void test_parallel_and_partial(void **state)
{
    (void)state;
    pdbx_profile_point p = tiny_gpt2();
    pdbx_arch *a = &p.model.arch;
    a->position = PDBX_POS_ROPE;
    a->max_positions = 0;
    a->parallel_residual = 1;
    a->rotary_fraction = 0.25;
    p.ops = PDBX_OP_BIT(PDBX_OP_POST_ATTN_NORM);
    p.passes = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD);
    pdbx_profile_memory m;
    char err[256] = "";
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_non_null(find(&m, PDBX_BUF_HIDDEN));
    assert_null(find(&m, PDBX_BUF_ATTN_OUT));
    assert_non_null(find(&m, PDBX_BUF_POST_NORM_OUT));
    assert_non_null(find(&m, PDBX_BUF_NORM_STATS_RSTD));
    assert_non_null(find(&m, PDBX_BUF_GRAD_ATTN_OUT));
    assert_non_null(find(&m, PDBX_BUF_GRAD_POST_NORM_OUT));
    const pdbx_profile_buf *b = find(&m, PDBX_BUF_NORM_B);   /* the post norm's, per set */
    assert_non_null(b);
    assert_int_equal(b->count, find(&m, PDBX_BUF_L_POST_NORM)->count);
    a->parallel_residual = 0;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_null(find(&m, PDBX_BUF_HIDDEN));
    assert_non_null(find(&m, PDBX_BUF_ATTN_OUT));
    p.ops = pdbx_model_ops(&p.model);
    assert_true(p.ops & PDBX_OP_BIT(PDBX_OP_ATTN_ROPE));
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    b = find(&m, PDBX_BUF_ROPE_TABLE);
    assert_true(b && b->bytes == 128);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt2_by_hand),
        cmocka_unit_test(test_parallel_and_partial),
    };
    return cmocka_run_group_tests_name("plan_profile_memory_dense", tests, NULL, NULL);
}
