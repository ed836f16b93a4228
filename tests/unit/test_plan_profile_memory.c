/* test_plan_profile_memory.c: the profile memory of engine/plan (plan_profile_memory.c, what
 * pdbx-engine allocates for a point on one rank) against buffer lists computed by hand below,
 * and the two predictions on the FASOP preset (the profile fits where FASOP measured, training
 * the full 80-layer model does not). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/plan/plan.h"

/* A small model: h 64, I 128, a 4 heads, k 2 kv heads, d 16, 4 layers, V 256 (untied). */
static pdbx_profile_point small_point(pdbx_backend_kind backend, pdbx_dtype dt)
{
    pdbx_profile_point p;
    memset(&p, 0, sizeof p);
    snprintf(p.model.name, sizeof p.model.name, "small");
    p.model.hidden = 64;
    p.model.intermediate = 128;
    p.model.heads = 4;
    p.model.kv_heads = 2;
    p.model.head_dim = 16;
    p.model.layers = 4;
    p.model.vocab = 256;
    p.tp = 2;
    p.pp = 1;
    p.dp = 2;
    p.mbs = 2;
    p.seq_len = 8;
    p.layers = 2;
    /* the step's ops: the optimizer's flat arrays (passes with bwd) are worked out by hand in
     * test_plan_optimizer.c */
    p.ops = PDBX_OPS_ALL & ~(PDBX_OP_BIT(PDBX_OP_OPTIMIZER) | PDBX_OP_BIT(PDBX_OP_LOSS));   /* theirs: below */
    p.dtype = dt;
    p.backend = backend;
    p.threads = 2;
    return p;
}

static double role_bytes(const pdbx_profile_memory *m, pdbx_buf_role r)
{
    for (int i = 0; i < m->nbufs; i++)
        if (m->buf[i].role == r)
            return m->buf[i].bytes * m->buf[i].count;
    return -1;
}

/* cpu, fp32, TP 2, MBS 2, seq 8: T = 16 tokens; per rank 2 q heads (qd 32), 1 kv head (kvd
 * 16), I/t 64, V/t 128; every buffer in whole 64-byte lines.
 *   activations (fp32): ids 16*4 = 64; embed_out, hidden, norm_out, attn_out, post_norm_out
 *     16*64*4 = 4096 each (20480); q, ctx 16*32*4 = 2048 each; k, v 1024 each; gate, up, act
 *     16*64*4 = 4096 each (12288); logits 16*128*4 = 8192; the rope cos/sin table fp32
 *     2 * 8 positions * 16/2 * 4 = 512
 *     -> 64 + 20480 + 4096 + 2048 + 12288 + 8192 + 512 = 47680
 *   workspace: attention scratch (32*8 + 16*64) floats * 2 threads * 4 = 10240
 *   weights: embed and lm_head 128*64*4 = 32768 each; norm 64*4 = 256; per layer q, o
 *     64*32*4 = 8192, k, v 64*16*4 = 4096, gate, up, down 64*64*4 = 16384 -> 73728, x 2 layers
 *     = 147456 -> 213248
 *   comm: TP all-reduce [16, 64] fp32 = 4096; DP all-reduce of one stage's gradients:
 *     per layer 2*64*4*16/2 + 2*64*1*16 + 3*64*128/2 + 2*64 = 18560 params, 4 layers 74240,
 *     + embedding 8192 + final norm 64 + lm_head 8192 = 90688 params * 4 B = 362752 B, whole
 *     4 KiB pages: 360448; the buffer is the larger, 360448
 *   total 47680 + 10240 + 213248 + 360448 = 631616 */
static void test_cpu_fp32_by_hand(void **state)
{
    (void)state;
    pdbx_profile_point p = small_point(PDBX_BACKEND_CPU, PDBX_DTYPE_FP32);
    pdbx_profile_memory m;
    char err[256] = "";
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_ACTIVATIONS] == 47680);
    assert_true(m.kind_bytes[PDBX_MEM_WORKSPACE] == 10240);
    assert_true(m.kind_bytes[PDBX_MEM_WEIGHTS] == 213248);
    assert_true(m.tp_bytes == 4096 && m.pp_bytes == 0 && m.dp_bytes == 360448);
    assert_true(m.kind_bytes[PDBX_MEM_COMM] == 360448);
    assert_true(m.total == 631616);
    assert_true(role_bytes(&m, PDBX_BUF_ROPE_TABLE) == 512);
    /* without attn_rope no table (the residual adds need no buffer of their own) */
    p.ops &= ~PDBX_OP_BIT(PDBX_OP_ATTN_ROPE);
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_ROPE_TABLE) == -1 && m.total == 631616 - 512);
    p.ops = PDBX_OPS_ALL;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_L_GATE) == 2 * 16384);
    assert_true(role_bytes(&m, PDBX_BUF_LOGITS) == 8192);
    assert_true(role_bytes(&m, PDBX_BUF_SCORES) == -1);       /* the cpu kernel is blocked */
    assert_true(role_bytes(&m, PDBX_BUF_NORM_OUT_LP) == -1);  /* fp32 GEMMs need no copies */
    /* the comm buffer is listed last (the backend allocates the rest in order) */
    assert_int_equal(m.buf[m.nbufs - 1].role, PDBX_BUF_COMM);

    /* bf16: weights and embed_out halve; bf16 copies of the GEMM inputs are added:
     * norm_out, post_norm_out 16*64*2 = 2048 each, ctx 16*32*2 = 1024, act 16*64*2 = 2048;
     * activations 47680 - 2048 (embed_out) + 7168 = 52800 (the rope table stays fp32); weights 2*32768/2 + 256 +
     * 147456/2 = 106752; TP message in bf16 2048, DP gradients in fp32 as before (Megatron's
     * grad_reduce_in_fp32): 360448 */
    p = small_point(PDBX_BACKEND_CPU, PDBX_DTYPE_BF16);
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_ACTIVATIONS] == 52800);
    assert_true(m.kind_bytes[PDBX_MEM_WEIGHTS] == 106752);
    assert_true(m.tp_bytes == 2048 && m.dp_bytes == 360448);

    /* one rank, no collectives: no comm buffer at all */
    p = small_point(PDBX_BACKEND_CPU, PDBX_DTYPE_FP32);
    p.tp = 1;
    p.dp = 1;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_COMM] == 0 && role_bytes(&m, PDBX_BUF_COMM) == -1);
}

/* The cpu backend caps the DP message at 64 MiB; cuda times one Megatron DDP bucket (plan_comm.h)
 * in fp32. Llama-3.1-8B-like stage at TP 1, PP 1, DP 2 holds billions of parameters: cpu
 * 67108864, cuda max(40e6, 2e6) params * 4 B = 160000000 -> whole pages 159997952. */
static void test_dp_cap(void **state)
{
    (void)state;
    pdbx_profile_point p = small_point(PDBX_BACKEND_CPU, PDBX_DTYPE_BF16);
    p.model.hidden = 4096;
    p.model.intermediate = 14336;
    p.model.heads = 32;
    p.model.kv_heads = 8;
    p.model.head_dim = 128;
    p.model.layers = 32;
    p.model.vocab = 128256;
    p.tp = 1;
    pdbx_profile_memory m;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, NULL, 0), 0);
    assert_true(m.dp_bytes == PDBX_CPU_DP_CAP_BYTES);
    p.backend = PDBX_BACKEND_CUDA;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, NULL, 0), 0);
    assert_true(m.dp_bytes == 159997952.0);
    assert_true(m.kind_bytes[PDBX_MEM_COMM] == m.dp_bytes);
}

/* cuda, bf16, TP 2, PP 2, DP 1, MBS 2, seq 8 (cuda_backend.c's buffers, exact sizes):
 *   activations: ids 16*4 = 64; hidden, norm_out, attn_out, post_norm_out, final_norm_out
 *     16*64*2 = 2048 each (10240); q, ctx 16*32*2 = 1024 each; k, v 512 each; scores
 *     2 sequences * 2 heads * 8 * 8 * 2 = 512; gate, up, act 16*64*2 = 2048 each (6144);
 *     logits 16*128*2 = 4096; rope cos/sin table fp32 2 * 8 * 8 * 4 = 512
 *     -> 64 + 10240 + 2048 + 1024 + 512 + 6144 + 4096 + 512 = 24640
 *   weights: embed, lm_head 128*64*2 = 16384 each; final norm 64*2 = 128; per layer two norms
 *     128 each, q, o 32*64*2 = 4096, k, v 2048, gate, up, down 8192 -> 37120, x 2 layers =
 *     74240, in ceil(3 * 50 MiB / 74240) = 2119 rotating copies (>= 3x the L2 the planner
 *     assumes) = 157314560 -> 32896 + 157314560 = 157347456
 *   workspace: cuBLASLt 32 MiB = 33554432
 *   comm: TP and PP messages [16, 64] bf16 = 2048 each -> 2048
 *   total 24640 + 157347456 + 33554432 + 2048 = 190928576 */
static void test_cuda_bf16_by_hand(void **state)
{
    (void)state;
    pdbx_profile_point p = small_point(PDBX_BACKEND_CUDA, PDBX_DTYPE_BF16);
    p.pp = 2;
    p.dp = 1;
    pdbx_profile_memory m;
    char err[256] = "";
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_ACTIVATIONS] == 24640);
    assert_true(m.kind_bytes[PDBX_MEM_WEIGHTS] == 157347456);
    assert_true(m.kind_bytes[PDBX_MEM_WORKSPACE] == 33554432);
    assert_true(m.tp_bytes == 2048 && m.pp_bytes == 2048 && m.dp_bytes == 0);
    assert_true(m.total == 190928576);
    assert_true(role_bytes(&m, PDBX_BUF_ROPE_TABLE) == 512);
    assert_true(role_bytes(&m, PDBX_BUF_L_Q) == 4096.0 * 2 * 2119);   /* 2 layers x 2119 copies */
    assert_true(role_bytes(&m, PDBX_BUF_SCORES) == 512);
    /* tied embeddings: no lm_head weight, the table serves both */
    p.model.tie_embeddings = 1;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_WEIGHTS] == 157347456 - 16384);
}

/* The L2 rotation's copies (pdbx_cuda_weight_copies, shared by the planner and the cuda
 * backend): weights of the profiled layers >= 3x L2. */
static void test_cuda_weight_copies(void **state)
{
    (void)state;
    const double l2 = PDBX_CUDA_PLAN_L2_BYTES;
    /* Llama-3.1-8B TP8, bf16: q, o 4096x512, k, v 4096x128, gate, up, down 4096x1792, two
     * norms -> 54542336 bytes a layer; 2 layers = 109 MB < 3 x 50 MiB: 2 copies */
    assert_int_equal(pdbx_cuda_weight_copies(54542336.0, 2, l2), 2);
    /* Llama-3.3-70B TP1: 1.7 GB a layer: one copy, no extra memory */
    assert_int_equal(pdbx_cuda_weight_copies(1.7e9, 2, l2), 1);
    assert_int_equal(pdbx_cuda_weight_copies(3.0 * l2 / 2, 2, l2), 1);   /* exactly 3x */
    assert_int_equal(pdbx_cuda_weight_copies(3.0 * l2 / 2 - 1, 2, l2), 2);
    assert_int_equal(pdbx_cuda_weight_copies(1.0, 1, l2), PDBX_CUDA_MAX_WEIGHT_COPIES);
    assert_int_equal(pdbx_cuda_weight_copies(0.0, 2, l2), 1);       /* no layer weights */
    assert_int_equal(pdbx_cuda_weight_copies(1e6, 2, 0.0), 1);      /* L2 unknown */
    /* the planner counts the copies: 8B TP8's profile holds 2 x 2 sets of q_proj */
    pdbx_profile_point p = small_point(PDBX_BACKEND_CUDA, PDBX_DTYPE_BF16);
    p.model.hidden = 4096;
    p.model.intermediate = 14336;
    p.model.heads = 32;
    p.model.kv_heads = 8;
    p.model.head_dim = 128;
    p.model.layers = 32;
    p.model.vocab = 128256;
    p.tp = 8;
    p.layers = 2;
    pdbx_profile_memory m;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, NULL, 0), 0);
    for (int i = 0; i < m.nbufs; i++)
        if (m.buf[i].role == PDBX_BUF_L_Q)
            assert_int_equal(m.buf[i].count, 4);
}

/* flash_attention on cuda (test_cuda_bf16_by_hand's point): the fused forward has no s x s
 * scores: activations 24640 - 512 = 24128, total 190928576 - 512; with bwd the fused backward
 * (FlashAttention-2) has none either, nor d scores: the forward's log-sum-exp and the
 * backward's delta instead, fp32 mbs 2 x 2 heads x seq 8 x 4 = 128 bytes each, and for bf16 the
 * fp32 dQ accumulator, T 16 x qd 32 x 4 = 2048 bytes (fp32 accumulates in d q itself). */
static void test_cuda_flash_drops_scores(void **state)
{
    (void)state;
    pdbx_profile_point p = small_point(PDBX_BACKEND_CUDA, PDBX_DTYPE_BF16);
    p.pp = 2;
    p.dp = 1;
    p.flash_attention = 1;
    pdbx_profile_memory m;
    char err[256] = "";
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_SCORES) == -1);
    assert_true(m.kind_bytes[PDBX_MEM_ACTIVATIONS] == 24640 - 512);
    assert_true(m.total == 190928576 - 512);
    p.passes = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD);
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_SCORES) == -1);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_SCORES) == -1);
    assert_true(role_bytes(&m, PDBX_BUF_ATTN_LSE) == 128);
    assert_true(role_bytes(&m, PDBX_BUF_ATTN_DELTA) == 128);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_Q_ACC) == 2048);
    p.dtype = PDBX_DTYPE_FP32;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_Q_ACC) == -1);
    assert_true(role_bytes(&m, PDBX_BUF_ATTN_LSE) == 128);
    p.flash_attention = 0;   /* unfused: the scores and d scores, no fused scratch */
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_SCORES) == 1024 && role_bytes(&m, PDBX_BUF_GRAD_SCORES) == 1024);
    assert_true(role_bytes(&m, PDBX_BUF_ATTN_LSE) == -1 && role_bytes(&m, PDBX_BUF_ATTN_DELTA) == -1);
    /* the spec's flag reaches the planned point */
    pdbx_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.flash_attention = 1;
    pdbx_parallel par = {1, 1, 1, 1};
    pdbx_profile_point_of(&spec, &par, 1, PDBX_BACKEND_CUDA, 1, &p);
    assert_int_equal(p.flash_attention, 1);
}

/* passes fwd,bwd adds the backward's buffers (kind grads, and workspace), by hand:
 * cpu fp32, the small point (T 16, qd 32, kvd 16, I/t 64, V/t 128, 2 threads):
 *   activation gradients (fp32): d hidden, d norm_out, d attn_out, d post_norm_out, d gate,
 *     d up, d act 16*64*4 = 4096 each (28672); d q, d ctx 2048 each; d k, d v 1024 each;
 *     d logits 16*128*4 = 8192 -> 43008
 *   weight gradients (fp32, one set): embed, lm_head 128*64*4 = 32768 each; norm 256; q, o
 *     64*32*4 = 8192 each; k/v (one) 4096; gate/up (one), down 16384 each -> 119040
 *   grads 43008 + 119040 = 162048; attention backward scratch (3*32*8 + 16*64) floats * 2
 *   threads * 4 = 14336 -> workspace 10240 + 14336 = 24576; total 631616 + 176384 = 808000
 *   (RoPE's backward rotates d q and d k in place, the residual adds' add d attn_out and
 *   d hidden: no buffer of their own)
 * cpu bf16: bf16 copies of the GEMMs' output gradients: d hidden, d attn_out, d gate, d up
 *   16*64*2 = 2048 each, d q 1024, d k, d v 512 each, d logits 4096 -> + 14336 = 176384
 * cuda bf16 (test_cuda_bf16_by_hand's point): activation gradients in bf16: d hidden, d
 *   norm_out, d attn_out, d post_norm_out, d gate, d up, d act, d final_norm_out 2048 each
 *   (16384); d q, d ctx 1024 each; d k, d v 512 each; d scores 512; d logits 4096 -> 24064;
 *   weight gradients fp32 as the cpu's, exact -> 119040; grads 143104; the norms' rstd 16*4 =
 *   64 of workspace; tied: no lm_head gradient, 143104 - 32768 = 110336 */
static void test_bwd_buffers_by_hand(void **state)
{
    (void)state;
    const uint32_t both = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD);
    pdbx_profile_point p = small_point(PDBX_BACKEND_CPU, PDBX_DTYPE_FP32);
    pdbx_profile_memory m;
    char err[256] = "";
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_GRADS] == 0);   /* fwd only: none */
    p.passes = both;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_GRADS] == 162048);
    assert_true(m.kind_bytes[PDBX_MEM_WORKSPACE] == 24576);
    assert_true(m.kind_bytes[PDBX_MEM_WEIGHTS] == 213248);      /* unchanged */
    assert_true(m.kind_bytes[PDBX_MEM_ACTIVATIONS] == 47680);
    assert_true(m.total == 808000);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_W_KV) == 4096);    /* k and v share */
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_W_GATE_UP) == 16384);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_SCORES) == -1);     /* the cpu kernel recomputes */
    assert_int_equal(m.buf[m.nbufs - 1].role, PDBX_BUF_COMM);
    /* the loss op: its row statistics, 3 fp32 per token (48 x 4 = 192), a gradient buffer; its
     * gradient is written over the logits */
    assert_true(role_bytes(&m, PDBX_BUF_LOSS_STATS) == -1);
    p.ops |= PDBX_OP_BIT(PDBX_OP_LOSS);
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_LOSS_STATS) == 192);
    assert_true(m.kind_bytes[PDBX_MEM_GRADS] == 162048 + 192);
    assert_string_equal(pdbx_buf_role_name(PDBX_BUF_LOSS_STATS), "loss row statistics");
    p = small_point(PDBX_BACKEND_CPU, PDBX_DTYPE_BF16);
    p.passes = both;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_GRADS] == 176384);
    /* cuda */
    p = small_point(PDBX_BACKEND_CUDA, PDBX_DTYPE_BF16);
    p.pp = 2;
    p.dp = 1;
    p.passes = both;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_GRADS] == 143104);
    assert_true(m.kind_bytes[PDBX_MEM_WORKSPACE] == 33554432 + 64);
    assert_true(m.total == 190928576 + 143104 + 64);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_SCORES) == 512);
    p.model.tie_embeddings = 1;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_GRADS] == 110336);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_LM_HEAD_W) == -1);
    /* only lm_head: its own gradients, the buffers it reads and writes */
    p.model.tie_embeddings = 0;
    p.ops = PDBX_OP_BIT(PDBX_OP_LM_HEAD);
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_GRADS] == 2048 + 4096 + 32768);   /* d xf, d logits, dW */
}

/* Final-logit soft-capping (gemma-2's 30) with bwd: lm_head's capped d logits in a buffer of
 * their own in the GEMM dtype, T x V/t = 16 x 128 elements (cpu and cuda). cpu fp32: 8192 bytes more than
 * test_bwd_buffers_by_hand's 162048 -> 170240; cpu bf16: 4096 bytes in place of the bf16 copy
 * of d logits (which nothing reads then): 176384 still; fwd only: nothing. */
static void test_final_cap_buffer(void **state)
{
    (void)state;
    const uint32_t both = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD);
    pdbx_profile_point p = small_point(PDBX_BACKEND_CPU, PDBX_DTYPE_FP32);
    p.model.arch.final_softcap = 30;
    pdbx_profile_memory m;
    char err[256] = "";
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_LOGITS_CAPPED) == -1);
    p.passes = both;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_LOGITS_CAPPED) == 8192);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_LOGITS) == 8192);   /* the source, kept */
    assert_true(m.kind_bytes[PDBX_MEM_GRADS] == 170240);
    assert_string_equal(pdbx_buf_role_name(PDBX_BUF_GRAD_LOGITS_CAPPED), "d logits (capped, gemm dtype)");
    p = small_point(PDBX_BACKEND_CPU, PDBX_DTYPE_BF16);
    p.model.arch.final_softcap = 30;
    p.passes = both;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_LOGITS_CAPPED) == 4096);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_LOGITS_LP) == -1);
    assert_true(m.kind_bytes[PDBX_MEM_GRADS] == 176384);
    /* cuda bf16 with both caps: the unfused core's rows' lse, fp32 [2, 2 heads, 8] = 128 bytes
     * (fwd only too: the capped forward writes it), lm_head's capped d logits in the dtype
     * 16 x 128 x 2 = 4096 with bwd; flash_attention's lse only with bwd */
    p = small_point(PDBX_BACKEND_CUDA, PDBX_DTYPE_BF16);
    p.model.arch.final_softcap = 30;
    p.model.arch.attn_softcap = 50;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_ATTN_LSE) == 128);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_LOGITS_CAPPED) == -1);
    p.passes = both;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_LOGITS_CAPPED) == 4096);
    p.passes = PDBX_PASS_BIT(PDBX_PASS_FWD);
    p.flash_attention = 1;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_ATTN_LSE) == -1);
}

/* The spec's passes reach the planned point (pdbx plan predicts the bwd memory). */
static void test_bwd_from_spec(void **state)
{
    (void)state;
    pdbx_spec spec;
    pdbx_spec_defaults(&spec);
    pdbx_parallel par = { 1, 1, 1, 1 };
    pdbx_profile_point pp;
    pdbx_profile_point_of(&spec, &par, 1, PDBX_BACKEND_CPU, 1, &pp);
    assert_int_equal(pp.passes, PDBX_PASS_BIT(PDBX_PASS_FWD));
    pdbx_plan_point pt = { .tp = 1, .pp = 1, .dp = 1, .mbs = 1 };
    char err[256] = "";
    assert_int_equal(pdbx_plan_point_profile(&spec, &pt, PDBX_BACKEND_CPU, 1, err, sizeof err), 0);
    double fwd_only = pt.profile_bytes;
    assert_true(pt.profile_kind_bytes[PDBX_MEM_GRADS] == 0);
    assert_int_equal(pdbx_spec_set(&spec, "passes", "fwd,bwd", err, sizeof err), 0);
    assert_int_equal(pdbx_plan_point_profile(&spec, &pt, PDBX_BACKEND_CPU, 1, err, sizeof err), 0);
    assert_true(pt.profile_kind_bytes[PDBX_MEM_GRADS] > 0);
    assert_true(pt.profile_bytes > fwd_only + pt.profile_kind_bytes[PDBX_MEM_GRADS] - 1);
}

static void test_refusals(void **state)
{
    (void)state;
    char err[256] = "";
    pdbx_profile_memory m;
    pdbx_profile_point p = small_point(PDBX_BACKEND_CPU, PDBX_DTYPE_FP32);
    /* a vocabulary TP does not divide: both backends hold ceil(V / TP) rows per rank, the
     * last shard padded (255 at TP 2: the 256 of vocab 256's shard) */
    pdbx_profile_memory odd, even;
    p.model.vocab = 255;
    assert_int_equal(pdbx_profile_memory_list(&p, &odd, err, sizeof err), 0);
    p.model.vocab = 256;
    assert_int_equal(pdbx_profile_memory_list(&p, &even, err, sizeof err), 0);
    assert_true(odd.total == even.total);
    p.model.vocab = 254;
    assert_int_equal(pdbx_profile_memory_list(&p, &odd, err, sizeof err), 0);
    assert_true(odd.total < even.total);
    p.backend = PDBX_BACKEND_CUDA;
    p.model.vocab = 255;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    p.mbs = 0;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "mbs 0"));
}

/* Llama-3.3-70B on the FASOP preset (cuda, bf16, 8 of 80 layers, seq 1024) at TP1/PP8, MBS 1:
 *   weights: embed, lm_head 128256*8192*2 = 2101346304 each; final norm 16384; per layer
 *     (2*8192 + 2*8192*8192 + 2*1024*8192 + 3*28672*8192) * 2 = 1711308800, x 8 = 13690470400
 *     -> 17893179392
 *   activations, T = 1024: 5 [T, 8192] = 83886080; q, ctx [T, 8192] = 33554432; k, v
 *     [T, 1024] = 4194304; scores 64 heads * 1024^2 * 2 = 134217728; gate, up, act [T, 28672]
 *     = 176160768; logits [T, 128256] = 262668288; ids 4096; rope cos/sin table fp32
 *     2 * 1024 * 64 * 4 = 524288
 *     -> 695209984
 *   workspace 33554432; comm: PP message [T, 8192] = 16777216
 *   total 18638721024: fits the A40's 48e9, while training the 80-layer model needs 209.1 GB.
 * The FASOP points (its llama70b_A40_1.npz has MBS 1..8) all fit; TP1's first profile OOM is
 * MBS 64; every point's training memory is over 48 GB. */
/* fused_projections, by hand on the small point (T 16, qd 32, kvd 16, I/t 64):
 * cpu fp32: the fused weights replace the separate ones at the same size (qkv 64*64*4 =
 *   16384 = q + k + v, fc1 64*128*4 = 32768 = gate + up, per layer): weights 213248 as before;
 *   the fused outputs add activations: qkv 16*64*4 = 4096, fc1 16*128*4 = 8192 -> 47680 +
 *   12288 = 59968. With bwd: the separate weight gradients (q 8192, k/v 4096, gate/up 16384)
 *   go, the fused dY (gemm dtype) 4096 + 8192 and dW (fp32) 16384 + 32768 come: 162048 -
 *   28672 + 61440 = 194816.
 * cuda bf16: activations 24640 + qkv 2048 + fc1 4096 = 30784, weights 107136 as before; only
 *   the QKV ops: the fused GEMM's input (input_norm_out 2048) and output (2048), its weight
 *   64*64*2 = 8192 x 2 layers. */
static void test_fused_projections_by_hand(void **state)
{
    (void)state;
    pdbx_profile_point p = small_point(PDBX_BACKEND_CPU, PDBX_DTYPE_FP32);
    pdbx_profile_memory m;
    char err[256] = "";
    p.fused_projections = 1;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_WEIGHTS] == 213248);
    assert_true(m.kind_bytes[PDBX_MEM_ACTIVATIONS] == 59968);
    assert_true(role_bytes(&m, PDBX_BUF_L_Q) == -1 && role_bytes(&m, PDBX_BUF_L_UP) == -1);
    assert_true(role_bytes(&m, PDBX_BUF_L_QKV_FUSED) == 2 * 16384);
    assert_true(role_bytes(&m, PDBX_BUF_L_GATE_UP_FUSED) == 2 * 32768);
    assert_true(role_bytes(&m, PDBX_BUF_QKV_FUSED) == 4096);
    assert_true(role_bytes(&m, PDBX_BUF_GATE_UP_FUSED) == 8192);
    assert_true(role_bytes(&m, PDBX_BUF_Q) == 2048);      /* attn_core still reads q, k, v */
    p.passes = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD);
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_GRADS] == 194816);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_W_Q) == -1 && role_bytes(&m, PDBX_BUF_GRAD_W_GATE_UP) == -1);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_W_QKV_FUSED) == 16384);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_GATE_UP_FUSED) == 8192);
    assert_int_equal(m.buf[m.nbufs - 1].role, PDBX_BUF_COMM);   /* comm stays last */

    p = small_point(PDBX_BACKEND_CUDA, PDBX_DTYPE_BF16);
    p.pp = 2;
    p.dp = 1;
    p.fused_projections = 1;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_ACTIVATIONS] == 30784);
    /* the fused weights hold the bytes of the separate ones, rotated in as many copies
     * (cuda_backend.c rotates every layer weight it allocates): the separate point's total */
    assert_true(m.kind_bytes[PDBX_MEM_WEIGHTS] == 157347456);
    p.ops = PDBX_OP_BIT(PDBX_OP_ATTN_Q) | PDBX_OP_BIT(PDBX_OP_ATTN_K) | PDBX_OP_BIT(PDBX_OP_ATTN_V);
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_NORM_OUT) == 2048);
    assert_true(m.kind_bytes[PDBX_MEM_ACTIVATIONS] == 4096);
    /* one fused [h, (heads + 2 kv) x d] bf16 weight of 8192 bytes per layer, in the rotation's
     * copies of a layer of that size */
    assert_true(m.kind_bytes[PDBX_MEM_WEIGHTS] ==
                8192.0 * 2 * pdbx_cuda_weight_copies(8192.0, 2, PDBX_CUDA_PLAN_L2_BYTES));
}

/* Biases (arch.bias) on small_point (TP 2: qd 32, kvd 16, I/t 64, h 64), 2 layers:
 *   cpu fp32, q/k/v bias (Qwen2): per layer q 32*4 = 128, k, v 16*4 = 64 -> 64 (whole lines):
 *     weights + 2 * (128 + 64 + 64) = 512; all biases: o, down 64*4 = 256, gate, up 256 per
 *     layer: + 2 * 4 * 256 = 2048 more; with bwd one fp32 gradient set: q 128, k/v 64, o 256,
 *     gate/up 256, down 256 = 960;
 *   fused (cpu): one qkv bias of (32 + 2*16)*4 = 256 per layer, its gradient 256;
 *   cuda bf16: the bias in the dtype (q 64 bytes) in every rotated copy, and the copies are
 *     counted from a layer that holds its biases: 37120 bytes of weights a layer + 640 of
 *     biases (all) -> pdbx_cuda_weight_copies(37760, 2, L2) copies. */
static void test_biases_by_hand(void **state)
{
    (void)state;
    pdbx_profile_memory m0, m;
    char err[256] = "";
    pdbx_profile_point p = small_point(PDBX_BACKEND_CPU, PDBX_DTYPE_FP32);
    assert_int_equal(pdbx_profile_memory_list(&p, &m0, err, sizeof err), 0);
    p.model.arch.bias.qkv = 1;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_WEIGHTS] == m0.kind_bytes[PDBX_MEM_WEIGHTS] + 512);
    assert_true(role_bytes(&m, PDBX_BUF_L_Q_BIAS) == 256 && role_bytes(&m, PDBX_BUF_L_K_BIAS) == 128 &&
                role_bytes(&m, PDBX_BUF_L_V_BIAS) == 128);
    assert_true(role_bytes(&m, PDBX_BUF_L_O_BIAS) == -1 && role_bytes(&m, PDBX_BUF_L_GATE_BIAS) == -1);
    assert_true(m.kind_bytes[PDBX_MEM_ACTIVATIONS] == m0.kind_bytes[PDBX_MEM_ACTIVATIONS]);
    p.model.arch.bias.attn_out = p.model.arch.bias.mlp = 1;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_WEIGHTS] == m0.kind_bytes[PDBX_MEM_WEIGHTS] + 512 + 2048);
    assert_int_equal(m.buf[m.nbufs - 1].role, PDBX_BUF_COMM);   /* comm stays last */
    p.passes = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD);
    pdbx_profile_point p0 = small_point(PDBX_BACKEND_CPU, PDBX_DTYPE_FP32);
    p0.passes = p.passes;
    assert_int_equal(pdbx_profile_memory_list(&p0, &m0, err, sizeof err), 0);
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(m.kind_bytes[PDBX_MEM_GRADS] == m0.kind_bytes[PDBX_MEM_GRADS] + 960);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_B_KV) == 64 && role_bytes(&m, PDBX_BUF_GRAD_B_GATE_UP) == 256);
    /* fused: the group's bias replaces the separate ones */
    p.model.arch.bias.attn_out = p.model.arch.bias.mlp = 0;
    p.fused_projections = 1;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_L_Q_BIAS) == -1 && role_bytes(&m, PDBX_BUF_GRAD_B_Q) == -1);
    assert_true(role_bytes(&m, PDBX_BUF_L_QKV_FUSED_BIAS) == 512);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_B_QKV_FUSED) == 256);
    assert_true(role_bytes(&m, PDBX_BUF_L_GATE_UP_FUSED_BIAS) == -1);

    /* cuda bf16: biases in the dtype, in the rotation's copies counted with them */
    p = small_point(PDBX_BACKEND_CUDA, PDBX_DTYPE_BF16);
    assert_int_equal(pdbx_profile_memory_list(&p, &m0, err, sizeof err), 0);
    p.model.arch.bias.qkv = p.model.arch.bias.attn_out = p.model.arch.bias.mlp = 1;
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    const int sets0 = 2 * pdbx_cuda_weight_copies(37120.0, 2, PDBX_CUDA_PLAN_L2_BYTES);
    const int sets = 2 * pdbx_cuda_weight_copies(37760.0, 2, PDBX_CUDA_PLAN_L2_BYTES);
    assert_true(sets < sets0);
    assert_true(role_bytes(&m0, PDBX_BUF_L_Q) == 4096.0 * sets0);
    assert_true(role_bytes(&m, PDBX_BUF_L_Q) == 4096.0 * sets);
    assert_true(role_bytes(&m, PDBX_BUF_L_Q_BIAS) == 64.0 * sets);
    assert_true(role_bytes(&m, PDBX_BUF_L_DOWN_BIAS) == 128.0 * sets);
    p.passes = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD);
    assert_int_equal(pdbx_profile_memory_list(&p, &m, err, sizeof err), 0);
    assert_true(role_bytes(&m, PDBX_BUF_GRAD_B_Q) == 128 && role_bytes(&m, PDBX_BUF_GRAD_B_DOWN) == 256);
}

static void test_fasop_a40(void **state)
{
    (void)state;
    pdbx_spec s;
    char err[512] = "";
    assert_int_equal(pdbx_spec_load("fasop-llama70b-8gpu", &s, err, sizeof err), 0);
    pdbx_plan_point *pts = NULL;
    size_t n = 0;
    assert_int_equal(pdbx_plan_expand(&s, &pts, &n, err, sizeof err), 0);
    assert_int_equal(n, 32);
    assert_true(pts[0].profile_bytes == 18638721024.0);
    assert_true(pts[0].profile_kind_bytes[PDBX_MEM_WEIGHTS] == 17893179392.0);
    assert_true(pts[0].profile_kind_bytes[PDBX_MEM_ACTIVATIONS] == 695209984.0);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(pts[i].train_oom, 1);
        assert_int_equal(pts[i].profile_oom, pts[i].profile_bytes > 48e9);
        if (pts[i].mbs <= 8)
            assert_int_equal(pts[i].profile_oom, 0);
    }
    assert_int_equal(pts[5].profile_oom, 0);   /* TP1 MBS 32 */
    assert_int_equal(pts[6].profile_oom, 1);   /* TP1 MBS 64 */
    free(pts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_fp32_by_hand),
        cmocka_unit_test(test_dp_cap),
        cmocka_unit_test(test_cuda_bf16_by_hand),
        cmocka_unit_test(test_cuda_flash_drops_scores),
        cmocka_unit_test(test_cuda_weight_copies),
        cmocka_unit_test(test_bwd_buffers_by_hand),
        cmocka_unit_test(test_final_cap_buffer),
        cmocka_unit_test(test_bwd_from_spec),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_fasop_a40),
        cmocka_unit_test(test_fused_projections_by_hand),
        cmocka_unit_test(test_biases_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
