/* test_cuda_dense_point.c: the dense families (gpt2, gpt-neox, gpt-j, gemma, and the attention
 * variants of cuda_mla.h: qwen3's q/k norm, DeepSeek's MLA with and without q's low rank) and the
 * MoE families (cuda_moe.h) as points of the cuda backend.
 *
 * Host part (every machine): what the backend allocates for a point (cuda_bufs.c, the same
 * answers cuda_point.c and cuda_backward.c allocate from) is, byte for byte, the planner's
 * cuda list (engine/plan/plan_profile_memory_cuda.c) less what prepare does not allocate (the
 * cuBLASLt workspace of init, the comm buffer): for a Llama, a biased Llama, gpt2, gpt-neox,
 * gpt-j, gemma and gemma-2 (window on even layers, caps 50/30: the unfused core's lse, lm_head's
 * capped d logits), qwen3, MLA (unfused core, no fused projections), bf16 and fp32, fwd and
 * fwd+bwd, unfused and flash attention, fused projections (gated MLPs), TP 1 and 2, the model's
 * ops together and each op alone; the MoE families (a tiny Mixtral, a Qwen-MoE with a shared
 * expert, a sigmoid-scored router with two shared experts, and a DeepSeek: MLA, a dense first
 * layer, then MoE layers with two shared experts; its points hold both the dense MLP's and the
 * experts' buffers) at EP 1 and 2, balanced and skewed routing. And the planner functions the
 * backend repeats (cuda_arch.h's two, cuda_layer_attn_opts) agree with the planner's.
 *
 * GPU part (exits 0 after the host part without a device, the reason printed): a tiny gpt2
 * (LayerNorm, plain GELU tanh, biases, learned positions, tied), gpt-neox (partial rotary,
 * parallel residual, GELU erf), gpt-j (shared norm), gemma(-2), qwen3, MLA and the four MoE
 * families (router, permute, grouped experts, unpermute, shared experts) point through the
 * backend's entry, fwd and bwd of every model op on every layer timed, the ops the model lacks
 * refused; the point's cudaMalloc tally the buffers above (the planner's list when the device's
 * L2 is the planner's 50 MiB); and in fp32 what the ops read: embed adds the position rows, a
 * parallel residual's post_attn_norm normalises hidden (a sequential one attn_out) with its own
 * bias, writing the rows' mean and rstd.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>

#include "engine/backends/backend.h"
#include "engine/backends/cuda/cuda_arch.h"
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cuda_bufs.h"
#include "engine/backends/cuda/cuda_memtally.h"
#include "tests/cuda/cuda_dense_ref.h"
#include "tests/cuda/cuda_test_util.h"

enum { F_LLAMA, F_LLAMA_BIAS, F_GPT2, F_NEOX, F_GPTJ, F_GEMMA, F_GEMMA2, F_QWEN3, F_MLA, F_MLA_Q, F_MIXTRAL,
       F_QWEN_MOE, F_SIGMOID_MOE, F_DEEPSEEK, F_COUNT };
static const char *const family_name[F_COUNT] = {"llama", "llama+bias", "gpt2", "gpt-neox", "gpt-j", "gemma",
                                                 "gemma-2", "qwen3", "mla", "mla+q_lora", "mixtral",
                                                 "qwen-moe", "sigmoid-moe", "deepseek"};

/* A tiny model of family f: h 128, 2 heads of 64 (flash-capable), I 256, V 300. */
static pdbx_model tiny_model(int f)
{
    pdbx_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "tiny-%s", family_name[f]);
    m.hidden = 128, m.intermediate = 256, m.heads = 2, m.kv_heads = f == F_LLAMA ? 1 : 2;
    m.head_dim = 64, m.layers = 4, m.vocab = 300;
    pdbx_arch *a = &m.arch;
    if (f == F_LLAMA_BIAS)
        a->bias.qkv = 1;
    if (f == F_GEMMA || f == F_GEMMA2)
        snprintf(a->activation, sizeof a->activation, "gelu_pytorch_tanh");
    if (f == F_GEMMA2) {   /* a window of 16 on even layers (shorter than the points' seq), caps 50/30 */
        snprintf(a->model_type, sizeof a->model_type, "gemma2");
        a->sliding_window.size = 16;
        a->sliding_window.layers = PDBX_SW_ALTERNATING;
        a->sliding_window.count = 2;
        a->attn_softcap = 50;
        a->final_softcap = 30;
        m.tie_embeddings = 1;
    }
    if (f == F_GPT2 || f == F_NEOX || f == F_GPTJ) {
        a->norm = PDBX_NORM_LAYER;
        a->mlp_plain = 1;
        snprintf(a->activation, sizeof a->activation, f == F_NEOX ? "gelu" : "gelu_new");
        a->bias.mlp = 1;
        a->bias.qkv = a->bias.attn_out = f != F_GPTJ;
    }
    if (f == F_GPT2) {
        a->position = PDBX_POS_LEARNED;
        a->max_positions = 96;
        m.tie_embeddings = 1;
    }
    if (f == F_NEOX || f == F_GPTJ) {
        a->parallel_residual = 1;
        a->rotary_fraction = 0.25;   /* 16 of 64 dims */
        a->shared_norm = f == F_GPTJ;
    }
    a->qk_norm = f == F_QWEN3;
    /* DeepSeek-V2's MLA: nope 32 + rope 16, v 32, latents 32 and (but F_MLA) q's 48 */
    if (f == F_MLA || f == F_MLA_Q || f == F_DEEPSEEK) {
        a->attention = PDBX_ATTN_MLA;
        a->mla.kv_lora_rank = 32, a->mla.q_lora_rank = f != F_MLA ? 48 : 0;
        a->mla.qk_nope_head_dim = 32, a->mla.qk_rope_head_dim = 16, a->mla.v_head_dim = 32;
        m.head_dim = 48;
    }
    if (f >= F_MIXTRAL) {   /* experts of width 96 (row slices of 192 or 384 bytes: unaligned plans) */
        a->moe.experts = f == F_MIXTRAL ? 4 : 6;
        a->moe.top_k = f == F_QWEN_MOE ? 4 : 2;
        a->moe.expert_intermediate = 96;
        a->moe.norm_topk = f != F_QWEN_MOE && f != F_DEEPSEEK;   /* qwen2_moe, DeepSeek-V2: false */
        a->moe.shared_experts = f == F_MIXTRAL ? 0 : f == F_QWEN_MOE ? 1 : 2;
        a->moe.shared_expert_intermediate = f == F_QWEN_MOE ? 192 : 0;   /* DeepSeek's: 2 x 96 */
        a->moe.sigmoid = f == F_SIGMOID_MOE;
        a->moe.routed_scale = f == F_SIGMOID_MOE ? 2.5 : 0;
        a->moe.first_dense_layers = f == F_DEEPSEEK;   /* layer 0 a dense MLP of width 256 */
    }
    return m;
}

/* The point as the engine hands it to prepare: the planner's shapes of every op. */
static void point_of(const pdbx_model *m, int tp, int mbs, int seq, pdbx_opmask ops, uint32_t passes,
                     int fused, pdbx_point_shapes *p)
{
    memset(p, 0, sizeof *p);
    pdbx_spec spec;
    pdbx_spec_defaults(&spec);
    spec.model = *m;
    spec.seq_len = seq;
    p->moe_imbalance = 1;
    p->ep = 1;
    p->model = *m;
    p->tp = tp, p->mbs = mbs, p->seq_len = seq, p->layers = 2;
    p->ops = ops, p->passes = passes, p->fused_projections = fused;
    for (int op = 0; op < PDBX_OP_COUNT; op++)   /* only ops the model lacks have no shape */
        if (pdbx_op_shape_for(&spec, tp, mbs, (pdbx_op)op, &p->shape[op]) != 0)
            assert_false(pdbx_model_ops(m) & PDBX_OP_BIT(op));
}

static pdbx_profile_point profile_of(const pdbx_point_shapes *p, pdbx_dtype dt, int flash)
{
    pdbx_profile_point pp = {.model = p->model, .tp = p->tp, .pp = 1, .dp = 1, .mbs = p->mbs,
                             .seq_len = p->seq_len, .layers = p->layers, .ops = p->ops,
                             .passes = p->passes, .dtype = dt, .backend = PDBX_BACKEND_CUDA,
                             .threads = 1, .flash_attention = flash,
                             .fused_projections = p->fused_projections, .ep = p->ep,
                             .moe_imbalance = p->moe_imbalance};
    return pp;
}

/* What prepare allocates by the planner: the list less the cuBLASLt workspace (init's) and the
 * comm buffer (comm_buffer's). */
static double planner_bytes(const pdbx_profile_point *pp)
{
    pdbx_profile_memory pm;
    char err[256] = "";
    if (pdbx_profile_memory_list(pp, &pm, err, sizeof err) != 0)
        fail_msg("profile memory: %s", err);
    double b = pm.total;
    for (int i = 0; i < pm.nbufs; i++)
        if (pm.buf[i].role == PDBX_BUF_GEMM_WORKSPACE || pm.buf[i].role == PDBX_BUF_COMM)
            b -= pm.buf[i].bytes * pm.buf[i].count;
    return b;
}

/* The backend's buffers at the point with the planner's L2 copies; on a mismatch, its list. */
static void expect_point_matches(const pdbx_point_shapes *p, pdbx_dtype dt, int flash, const char *what)
{
    cuda_dims d;
    char err[512] = "";
    if (cuda_point_dims(p, 0, &d, err, sizeof err) != 0)
        fail_msg("%s: %s", what, err);
    const cuda_buf_path path = {dt, flash, (p->passes & PDBX_PASS_BIT(PDBX_PASS_BWD)) != 0};
    const int sets = d.layers * pdbx_cuda_weight_copies(cuda_layer_set_bytes(&d, &path), d.layers,
                                                        PDBX_CUDA_PLAN_L2_BYTES);
    const pdbx_profile_point pp = profile_of(p, dt, flash);
    const double backend = cuda_point_total_bytes(&d, &path, sets), planner = planner_bytes(&pp);
    if (backend == planner)
        return;
    for (int b = 0; b < B_COUNT; b++) {
        const cuda_buf x = cuda_point_buf(&d, &path, b);
        if (x.used)
            print_message("  %s %zu\n", x.name, x.bytes);
    }
    for (int w = 0; w < W_COUNT; w++) {
        const cuda_buf x = cuda_layer_buf(&d, &path, w);
        if (x.used)
            print_message("  %s %zu x %d sets\n", x.name, x.bytes, sets);
    }
    for (int g = 0; g < G_COUNT; g++) {
        const cuda_buf x = cuda_grad_buf(&d, &path, g);
        if (x.used)
            print_message("  %s %zu\n", x.name, x.bytes);
    }
    fail_msg("%s: the backend allocates %.0f bytes, the planner lists %.0f", what, backend, planner);
}

static void test_host_bufs_match_planner(void **state)
{
    (void)state;
    const uint32_t fwd = PDBX_PASS_BIT(PDBX_PASS_FWD), both = fwd | PDBX_PASS_BIT(PDBX_PASS_BWD);
    int checked = 0;
    for (int f = 0; f < F_COUNT; f++) {
        const pdbx_model m = tiny_model(f);
        const pdbx_opmask ops = pdbx_model_ops(&m);
        for (int v = 0; v < 32; v++) {   /* each bit a choice */
            const pdbx_dtype dt = v & 1 ? PDBX_DTYPE_FP32 : PDBX_DTYPE_BF16;
            const int mla = m.arch.attention == PDBX_ATTN_MLA;   /* unfused core, no fused GEMMs */
            const int flash = ((v >> 1) & 1) && !mla, tp = v & 4 ? 2 : 1, fused = (v & 8) && !m.arch.mlp_plain && !mla;
            const uint32_t passes = v & 16 ? both : fwd;
            char what[160];
            pdbx_point_shapes p;
            point_of(&m, tp, 2, 24, ops, passes, fused, &p);
            snprintf(what, sizeof what, "%s v%d all ops", family_name[f], v);
            expect_point_matches(&p, dt, flash, what);
            for (int op = 0; op < PDBX_OP_COUNT; op++) {
                if (!(ops & PDBX_OP_BIT(op)) || pdbx_op_is_comm((pdbx_op)op))
                    continue;
                point_of(&m, tp, 2, 24, PDBX_OP_BIT(op), passes, fused, &p);
                snprintf(what, sizeof what, "%s v%d %s alone", family_name[f], v, pdbx_op_name((pdbx_op)op));
                expect_point_matches(&p, dt, flash, what);
                checked++;
            }
        }
    }
    assert_true(checked > 1000);
}

/* The MoE families at EP 1 and 2 (2 and 3 local experts), balanced and skewed routing (EP 2:
 * the measured rank receives more rows than it sends, so the permuted buffers hold Xr). */
static void test_host_moe_bufs_match_planner(void **state)
{
    (void)state;
    const uint32_t both = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD);
    for (int f = F_MIXTRAL; f < F_COUNT; f++)
        for (int v = 0; v < 8; v++) {
            const pdbx_model m = tiny_model(f);
            const pdbx_dtype dt = v & 1 ? PDBX_DTYPE_FP32 : PDBX_DTYPE_BF16;
            pdbx_point_shapes p;
            point_of(&m, 2, 2, 24, pdbx_model_ops(&m), both, 0, &p);
            p.ep = v & 2 ? 2 : 1;
            p.moe_imbalance = v & 4 ? 2.0 : 1.0;
            char what[160];
            snprintf(what, sizeof what, "%s ep %d imbalance %g", family_name[f], p.ep, p.moe_imbalance);
            expect_point_matches(&p, dt, 0, what);
            cuda_dims d;
            char err[256];
            assert_int_equal(cuda_point_dims(&p, 0, &d, err, sizeof err), 0);
            assert_int_equal(d.moe.El, m.arch.moe.experts / p.ep);
            const cuda_buf_path path = {dt, 0, 1};
            assert_true(cuda_point_buf(&d, &path, B_MOE_ROWS).used && cuda_grad_buf(&d, &path, G_MOE_WGU).used);
            assert_int_equal(cuda_layer_buf(&d, &path, W_MOE_SH_GATE).used, f != F_MIXTRAL);
            if (f == F_DEEPSEEK)   /* MLA, the dense first layer's MLP and the experts on one point */
                assert_true(cuda_layer_buf(&d, &path, W_KV_B).used && cuda_layer_buf(&d, &path, W_GATE).used);
            if (p.ep == 2 && p.moe_imbalance > 1)   /* the busiest rank receives more */
                assert_true(d.moe.Xr > d.moe.X && d.moe.M == d.moe.Xr);
        }
}

/* cuda_arch.h's two functions are the planner's. */
static void test_host_arch_mirror(void **state)
{
    (void)state;
    static const char *const names[] = {
        "", "silu", "swish", "gelu", "gelu_python", "gelu_new", "gelu_pytorch_tanh", "gelu_fast",
        "gelu_accurate", "relu", "quick_gelu", "gelu_10", "GELU", "silu ", "tanh", "mish",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (cuda_activation_of(names[i]) != pdbx_activation_of(names[i]))
            fail_msg("activation '%s': cuda %d, planner %d", names[i], (int)cuda_activation_of(names[i]),
                     (int)pdbx_activation_of(names[i]));
    assert_int_equal(cuda_activation_of(NULL), pdbx_activation_of(NULL));
    static const double fractions[] = {0, 0.1, 0.25, 1.0 / 3, 0.5, 0.625, 0.75, 0.99, 1, 1.5, -0.5};
    pdbx_model m;
    memset(&m, 0, sizeof m);
    for (int hd = 1; hd <= 320; hd++)
        for (size_t i = 0; i < sizeof fractions / sizeof fractions[0]; i++) {
            m.head_dim = hd;
            m.arch.rotary_fraction = fractions[i];
            if (cuda_rotary_dims(hd, fractions[i]) != pdbx_rotary_dims(&m))
                fail_msg("rotary dims of head_dim %d x %g: cuda %d, planner %d", hd, fractions[i],
                         cuda_rotary_dims(hd, fractions[i]), pdbx_rotary_dims(&m));
        }
}

/* cuda_layer_attn_opts is the planner's pdbx_attn_opts_for_layer: gemma-2's window on even
 * layers, a window on every layer (Mistral's kind), none, each at a seq_len past the window and
 * within it; and the point's dims carry the caps and the window as prepare reads them. */
static void test_host_attn_opts_mirror(void **state)
{
    (void)state;
    pdbx_model ms[3] = {tiny_model(F_GEMMA2), tiny_model(F_GEMMA2), tiny_model(F_LLAMA)};
    ms[1].arch.sliding_window.layers = PDBX_SW_ALL;
    ms[1].arch.attn_softcap = 0;
    static const int seqs[] = {8, 16, 17, 24, 64};
    for (int i = 0; i < 3; i++)
        for (size_t si = 0; si < sizeof seqs / sizeof seqs[0]; si++)
            for (int layers = 2; layers <= 4; layers += 2) {
                pdbx_point_shapes p;
                point_of(&ms[i], 1, 1, seqs[si], pdbx_model_ops(&ms[i]), PDBX_PASS_BIT(PDBX_PASS_FWD), 0, &p);
                p.layers = layers;
                cuda_dims d;
                char err[512] = "";
                if (cuda_point_dims(&p, 0, &d, err, sizeof err) != 0)
                    fail_msg("%s", err);
                for (int l = 0; l < layers; l++) {
                    int64_t w;
                    double cap;
                    assert_int_equal(pdbx_attn_opts_for_layer(&ms[i], layers, l, seqs[si], &w, &cap), 0);
                    const cuda_attention_opts o = cuda_layer_attn_opts(&d, l);
                    if (o.window != w || o.softcap != (float)cap || o.v_dim != 0)
                        fail_msg("model %d seq %d layer %d: cuda window %lld cap %g, planner %lld %g", i,
                                 seqs[si], l, (long long)o.window, o.softcap, (long long)w, cap);
                }
                assert_true(d.final_softcap == (i == 2 ? 0.0f : 30.0f));
            }
    /* gemma-2 at MBS 2, seq 24, bf16: the capped unfused core's lse, fp32 [2, 2 heads, 24] = 384
     * bytes, fwd only too; lm_head's capped d logits [48, 300] = 28800 bytes with bwd; the
     * flash path's forward alone keeps no lse */
    pdbx_point_shapes p;
    point_of(&ms[0], 1, 2, 24, pdbx_model_ops(&ms[0]), PDBX_PASS_BIT(PDBX_PASS_FWD), 0, &p);
    cuda_dims d;
    char err[512] = "";
    assert_int_equal(cuda_point_dims(&p, 0, &d, err, sizeof err), 0);
    const cuda_buf_path fwd = {PDBX_DTYPE_BF16, 0, 0}, bwd = {PDBX_DTYPE_BF16, 0, 1}, flash = {PDBX_DTYPE_BF16, 1, 0};
    assert_true(cuda_point_buf(&d, &fwd, B_LSE).bytes == 384);
    assert_true(cuda_point_buf(&d, &flash, B_LSE).bytes == 0);
    assert_true(cuda_grad_buf(&d, &bwd, G_LOGITS_CAPPED).bytes == 28800);
    assert_true(cuda_grad_buf(&d, &bwd, G_LOGITS).bytes == 28800);   /* the source, kept */
}

/* ---- GPU ------------------------------------------------------------------------------- */

const pdbx_backend_entry *pdbx_backend_entry_v1(void);   /* cuda_backend.c, linked in */

static pdbx_compute *open_backend(pdbx_dtype dt)
{
    const pdbx_compute_config cfg = {.local_size = 1, .world_size = 1, .blas_threads = 1, .dtype = dt};
    pdbx_compute *c = NULL;
    char err[512] = "";
    if (pdbx_backend_entry_v1()->compute->init(&cfg, &c, err, sizeof err) != 0)
        fail_msg("init: %s", err);
    return c;
}

/* Every model op fwd and bwd on every layer, the others refused; the tally is cuda_bufs.c's
 * (and the planner's with its L2). */
static void run_family(int f, pdbx_dtype dt)
{
    const pdbx_compute_ops *ops = pdbx_backend_entry_v1()->compute;
    pdbx_compute *c = open_backend(dt);
    const pdbx_model m = tiny_model(f);
    const pdbx_opmask mops = pdbx_model_ops(&m);
    pdbx_point_shapes p;
    point_of(&m, 1, 2, 64, mops, PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD), 0, &p);
    char err[512] = "";
    if (ops->prepare(c, &p, err, sizeof err) != 0)
        fail_msg("%s prepare: %s", family_name[f], err);
    for (int l = 0; l < p.layers; l++)
        for (int op = 0; op < PDBX_OP_COUNT; op++) {
            if (pdbx_op_is_comm((pdbx_op)op))
                continue;
            for (int pass = 0; pass < PDBX_PASS_COUNT; pass++) {
                double ms = -1;
                const int rc = ops->run_op(c, (pdbx_op)op, (pdbx_pass)pass, l, &ms, err, sizeof err);
                if (!(mops & PDBX_OP_BIT(op))) {   /* gpt2's mlp_gate, attn_rope; gpt-j's post norm */
                    assert_int_not_equal(rc, 0);
                    continue;
                }
                if (rc != 0)
                    fail_msg("%s %s %s layer %d: %s", family_name[f], pdbx_op_name((pdbx_op)op),
                             pdbx_pass_name((pdbx_pass)pass), l, err);
                assert_true(ms > 0.0 && ms < 1000.0);
            }
        }
    assert_true(isfinite(ops->checksum(c)));
    const struct cuda_point *pt = c->point;
    const cuda_buf_path path = {dt, 0, 1};
    const double tally = cuda_point_alloc_bytes(pt);
    const double expect = cuda_point_total_bytes(&pt->d, &path, pt->wcopies * pt->d.layers);
    const pdbx_profile_point pp = profile_of(&p, dt, 0);
    const double planner = planner_bytes(&pp);
    print_message("%s %s: %d weight copies, tally %.0f bytes, cuda_bufs %.0f, planner %.0f (L2 %d)\n",
                  family_name[f], dt == PDBX_DTYPE_FP32 ? "fp32" : "bf16", pt->wcopies, tally, expect,
                  planner, c->prop.l2CacheSize);
    assert_true(tally == expect);
    if ((double)c->prop.l2CacheSize == PDBX_CUDA_PLAN_L2_BYTES)   /* H100, H200: the same copies */
        assert_true(tally == planner);
    ops->release(c);
    ops->fini(c);
}

static void test_family_points(void **state)
{
    (void)state;
    for (int f = F_GPT2; f < F_COUNT; f++) {   /* the MoE families: every moe_* op, both passes too */
        run_family(f, PDBX_DTYPE_BF16);
        run_family(f, PDBX_DTYPE_FP32);
    }
}

/* n elements of a device buffer of dtype dt, as doubles. */
static double *fetch(const void *dev, size_t n, pdbx_dtype dt)
{
    const size_t es = dt == PDBX_DTYPE_FP32 ? 4 : 2;
    void *raw = malloc(n * es);
    double *out = malloc(n * sizeof *out);
    assert_true(raw && out);
    assert_int_equal(cudaStreamSynchronize(stream), cudaSuccess);
    assert_int_equal(cudaMemcpy(raw, dev, n * es, cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < n; i++)
        out[i] = ct_get(raw, i, dt);
    free(raw);
    return out;
}

/* The weights run_op(op, layer) will take next (the L2 rotation's copy in turn). */
static void *const *next_weights(const struct cuda_point *pt, pdbx_op op, int layer)
{
    const unsigned copy = pt->wnext[(size_t)layer * PDBX_OP_COUNT + (size_t)op] % (unsigned)pt->wcopies;
    return &pt->w[((size_t)copy * (size_t)pt->d.layers + (size_t)layer) * W_COUNT];
}

/* fp32: post_attn_norm's output is LayerNorm(in) with the layer's weight and bias, in = hidden
 * for a parallel residual and attn_out for a sequential one; mean and rstd written. */
static void check_post_norm(int f)
{
    const pdbx_compute_ops *ops = pdbx_backend_entry_v1()->compute;
    pdbx_compute *c = open_backend(PDBX_DTYPE_FP32);
    const pdbx_model m = tiny_model(f);
    pdbx_point_shapes p;
    point_of(&m, 1, 2, 16, pdbx_model_ops(&m), PDBX_PASS_BIT(PDBX_PASS_FWD), 0, &p);
    char err[512] = "";
    double ms = 0;
    if (ops->prepare(c, &p, err, sizeof err) != 0)
        fail_msg("prepare: %s", err);
    const struct cuda_point *pt = c->point;
    void *const *W = next_weights(pt, PDBX_OP_POST_ATTN_NORM, 1);
    if (ops->run_op(c, PDBX_OP_POST_ATTN_NORM, PDBX_PASS_FWD, 1, &ms, err, sizeof err) != 0)
        fail_msg("post_attn_norm: %s", err);
    const size_t T = (size_t)pt->d.tokens, h = (size_t)pt->d.hidden;
    double *in = fetch(pt->buf[m.arch.parallel_residual ? B_X : B_ATTN_OUT], T * h, PDBX_DTYPE_FP32);
    double *y = fetch(pt->buf[B_XN2], T * h, PDBX_DTYPE_FP32);
    double *w = fetch(W[W_POST_NORM], h, PDBX_DTYPE_FP32), *b = fetch(W[W_POST_NORM_B], h, PDBX_DTYPE_FP32);
    double *mean = fetch(pt->buf[B_NORM_MEAN], T, PDBX_DTYPE_FP32), *rstd = fetch(pt->buf[B_NORM_RSTD], T, PDBX_DTYPE_FP32);
    double *ref = malloc(h * sizeof *ref);
    assert_non_null(ref);
    for (size_t r = 0; r < T; r++) {
        double rm, rr;
        layernorm_ref(in + r * h, w, b, (int64_t)h, 1e-5, ref, &rm, &rr);
        assert_true(fabs(mean[r] - rm) <= 1e-5 && fabs(rstd[r] - rr) <= 1e-4 * rr);
        for (size_t i = 0; i < h; i++)
            if (fabs(y[r * h + i] - ref[i]) > 1e-4 + 1e-4 * fabs(ref[i]))
                fail_msg("%s post_attn_norm row %zu col %zu: %g, LayerNorm of %s %g", family_name[f], r, i,
                         y[r * h + i], m.arch.parallel_residual ? "hidden" : "attn_out", ref[i]);
    }
    free(in), free(y), free(w), free(b), free(mean), free(rstd), free(ref);
    ops->fini(c);
}

/* fp32 gpt2: embed writes hidden = wte[ids] + wpe[position] (row = position * mbs + b). */
static void check_embed_positions(void)
{
    const pdbx_compute_ops *ops = pdbx_backend_entry_v1()->compute;
    pdbx_compute *c = open_backend(PDBX_DTYPE_FP32);
    const pdbx_model m = tiny_model(F_GPT2);
    pdbx_point_shapes p;
    point_of(&m, 1, 3, 16, pdbx_model_ops(&m), PDBX_PASS_BIT(PDBX_PASS_FWD), 0, &p);
    char err[512] = "";
    double ms = 0;
    if (ops->prepare(c, &p, err, sizeof err) != 0 ||
        ops->run_op(c, PDBX_OP_EMBED, PDBX_PASS_FWD, 0, &ms, err, sizeof err) != 0)
        fail_msg("gpt2 embed: %s", err);
    const struct cuda_point *pt = c->point;
    const size_t T = (size_t)pt->d.tokens, h = (size_t)pt->d.hidden, V = (size_t)pt->d.vocab;
    int32_t *ids = malloc(T * sizeof *ids);
    assert_non_null(ids);
    assert_int_equal(cudaMemcpy(ids, pt->buf[B_IDS], T * sizeof *ids, cudaMemcpyDeviceToHost), cudaSuccess);
    double *x = fetch(pt->buf[B_X], T * h, PDBX_DTYPE_FP32), *wte = fetch(pt->buf[B_EMBED], V * h, PDBX_DTYPE_FP32);
    double *wpe = fetch(pt->buf[B_POS], (size_t)pt->d.pos_rows * h, PDBX_DTYPE_FP32);
    for (size_t r = 0; r < T; r++)
        for (size_t i = 0; i < h; i++) {
            const double want = wte[(size_t)ids[r] * h + i] + wpe[(r / 3) * h + i];
            if (fabs(x[r * h + i] - want) > 1e-6)
                fail_msg("gpt2 embed row %zu col %zu: %g, want %g", r, i, x[r * h + i], want);
        }
    free(ids), free(x), free(wte), free(wpe);
    ops->fini(c);
}

static void test_dense_reads(void **state)
{
    (void)state;
    check_post_norm(F_NEOX);   /* parallel: hidden */
    check_post_norm(F_GPT2);   /* sequential: attn_out */
    check_embed_positions();
}

int main(void)
{
    const struct CMUnitTest host[] = {
        cmocka_unit_test(test_host_bufs_match_planner),
        cmocka_unit_test(test_host_moe_bufs_match_planner),
        cmocka_unit_test(test_host_arch_mirror),
        cmocka_unit_test(test_host_attn_opts_mirror),
    };
    const struct CMUnitTest gpu[] = {
        cmocka_unit_test(test_family_points),
        cmocka_unit_test(test_dense_reads),
    };
    return ct_run_host_then_gpu("cuda_dense_point", host, CT_COUNT(host), gpu, CT_COUNT(gpu));
}
