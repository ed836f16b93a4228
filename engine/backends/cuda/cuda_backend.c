/* cuda_backend.c: the `cuda` compute backend and the entry point of libpdbx_cuda.so.
 *
 * Per rank: one device (local_rank % device count), one stream, two timing events. A point's
 * buffers are allocated with cudaMalloc in prepare() (cuda_point.c: a failed allocation frees
 * what was taken and returns PDBX_EOOM, a real OOM) and filled with deterministic pseudo-random
 * values; every GEMM plan (cuBLASLt descriptors + heuristic algorithm) is built there too, so
 * run_op() (this file) only enqueues work between the two events. The data flow follows one
 * Llama decoder layer:
 *
 *   embed -> x -> input_norm -> xn -> attn_q/k/v -> q,k,v -> attn_core -> ctx -> attn_o
 *   -> attn_out -> post_attn_norm -> xn2 -> mlp_gate/up -> gate,up -> mlp_act_fn -> act
 *   -> mlp_down -> x (the residual stream, next layer's input) -> final_norm -> xf -> lm_head
 *
 * The dense families change kernels and one read, as the cpu backend does (cpu_compute.c):
 * LayerNorm with its bias for the norms, GELU (gated, or plain on up alone) for the act,
 * learned positions added in embed, RoPE over the first rot dims of each head, and a parallel
 * residual's post_attn_norm reading x (the layer input, which mlp_down overwrites only after
 * it) instead of attn_out; gpt-j's shared norm has no post_attn_norm op (the MLP reads xn2).
 *
 * Weights are per layer (layers instantiated), activations are one set reused by every layer.
 * Tokens are ordered sequence-major (row = position * mbs + sequence, Megatron's [s, b, h]),
 * which makes every (sequence, head) of the attention core a constant-stride batch member of
 * a cuBLASLt strided-batched GEMM (cuda_attention.h, docs/cuda.md).
 */
#include "engine/backends/cuda/cuda_backend.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cuda/cuda_attention.h"
#include "engine/backends/cuda/cuda_checks.h"
#include "engine/backends/cuda/cuda_memtally.h"
#include "engine/backends/cuda/cuda_gemm.h"
#include "engine/backends/cuda/cuda_kernels.h"
#include "engine/backends/cuda/cuda_kernels_dense.h"
#include "engine/backends/cuda/cuda_mla.h"
#include "engine/backends/cuda/cuda_moe.h"

/* The norms' eps: rms_norm_eps of the Llama 3 and TinyLlama configs, layer_norm_epsilon of
 * GPT-2's (the cpu backend's; the model's own value changes no work). */
#define NORM_EPS 1e-5f

/* ---- errors --------------------------------------------------------------------------- */

int cuda_fail(char *err, size_t errlen, const char *call, cudaError_t e)
{
    /* A sticky error (cuda_checks.h) cannot be cleared: every later call on this context
     * fails the same way, so the run must end rather than go on to the next point. */
    const int sticky = cuda_error_is_sticky(e);
    if (!sticky)
        (void)cudaGetLastError();   /* clear a non-sticky error so the next call starts clean */
    if (err && errlen)
        snprintf(err, errlen, "%s failed: %s (%s)%s", call, cudaGetErrorName(e), cudaGetErrorString(e),
                 sticky ? "; the CUDA context is unusable (sticky error): the run ends" : "");
    return sticky ? PDBX_EFATAL : e == cudaErrorMemoryAllocation ? PDBX_EOOM : -1;
}

/* ---- ops -------------------------------------------------------------------------------- */

/* Y = X W^T (+ b: the plan's bias epilogue, or cuBLAS's GEMM then ck_bias_add, when the op
 * has a bias; b NULL otherwise). */
static int enqueue_linear(pdbx_compute *c, pdbx_op op, const void *x, const void *w, const void *b,
                          void *y, char *err, size_t errlen)
{
    const cuda_gemm_plan *p = c->point->plan[op];
    if (b)
        return cuda_gemm_exec_bias(c->gemm, p, 1.0f, w, x, b, y, c->stream, err, errlen);
    return cuda_gemm_exec(c->gemm, p, 1.0f, w, x, y, c->stream, err, errlen);
}

/* A norm of the model's kind over the point's [T, h] rows: RMSNorm (weight w), or LayerNorm
 * with its bias b, writing each row's mean and rstd for the backward (as
 * torch.nn.functional.layer_norm's CUDA kernel does, also without a backward). */
static int run_norm(pdbx_compute *c, const void *x, const void *w, const void *b, void *y, char *err,
                    size_t errlen)
{
    int rc = -1;
    const struct cuda_point *pt = c->point;
    if (pt->d.layernorm)
        CU_TRY("ck_layernorm", ck_layernorm(x, w, b, y, pt->buf[B_NORM_MEAN], pt->buf[B_NORM_RSTD],
                                            pt->d.tokens, pt->d.hidden, NORM_EPS, c->dtype, c->stream));
    else
        CU_TRY("ck_rmsnorm", ck_rmsnorm(x, w, y, pt->d.tokens, pt->d.hidden, NORM_EPS, c->dtype,
                                        c->stream));
    return 0;
fail:
    return rc;
}

/* The MLP's activation (cuda_dims.act, mlp_plain): SiLU(gate) x up (a Llama's), GELU(gate) x up
 * (Gemma's), or GELU(up) (gpt2, gpt-neox: a plain MLP has no gate); GELU erf or tanh. */
static int run_act(pdbx_compute *c, char *err, size_t errlen)
{
    int rc = -1;
    const struct cuda_point *pt = c->point;
    void *const *B = pt->buf;
    const int64_t n = pt->d.tokens * pt->d.inter;
    const ck_gelu_kind kind = pt->d.act == PDBX_ACT_GELU_TANH ? CK_GELU_TANH : CK_GELU_ERF;
    if (pt->d.act == PDBX_ACT_SILU)
        CU_TRY("ck_silu_mul", ck_silu_mul(B[B_GATE], B[B_UP], B[B_ACT], n, c->dtype, c->stream));
    else if (pt->d.mlp_plain)
        CU_TRY("ck_gelu", ck_gelu(B[B_UP], B[B_ACT], n, kind, c->dtype, c->stream));
    else
        CU_TRY("ck_gelu_mul", ck_gelu_mul(B[B_GATE], B[B_UP], B[B_ACT], n, kind, c->dtype, c->stream));
    return 0;
fail:
    return rc;
}

/* embed: the vocab-parallel gather into hidden and, with learned positions, the rows of the
 * position table added in place (GPT-2's wte(ids) + wpe(pos): both within the timed op). */
static int run_embed(pdbx_compute *c, char *err, size_t errlen)
{
    int rc = -1;
    const struct cuda_point *pt = c->point;
    void *const *B = pt->buf;
    const int64_t T = pt->d.tokens, h = pt->d.hidden;
    CU_TRY("ck_embed_gather", ck_embed_gather(B[B_IDS], T, B[B_EMBED], pt->d.vstart, pt->d.vocab, h,
                                              B[B_X], c->dtype, c->stream));
    if (pt->d.pos_rows)
        CU_TRY("ck_pos_embed_add", ck_pos_embed_add(B[B_X], B[B_POS], T, h, pt->d.mbs, c->dtype,
                                                    c->stream));
    return 0;
fail:
    return rc;
}

/* attn_rope: q and k rotated in place over the first rot dims of each head (all of it for a
 * Llama; partial rotary for gpt-neox and gpt-j), both between the same events. */
static int run_rope(pdbx_compute *c, char *err, size_t errlen)
{
    int rc = -1;
    const struct cuda_point *pt = c->point;
    const cuda_dims *d = &pt->d;
    CU_TRY("ck_rope(q)", ck_rope(pt->buf[B_Q], d->tokens, d->heads, d->head_dim, d->rot, d->mbs, d->seq,
                                 pt->buf[B_ROPE], 0, c->dtype, c->stream));
    CU_TRY("ck_rope(k)", ck_rope(pt->buf[B_K], d->tokens, d->kv_heads, d->head_dim, d->rot, d->mbs,
                                 d->seq, pt->buf[B_ROPE], 0, c->dtype, c->stream));
    return 0;
fail:
    return rc;
}

static int enqueue_op(pdbx_compute *c, pdbx_op op, int layer, char *err, size_t errlen)
{
    int rc = -1;
    struct cuda_point *pt = c->point;
    void **B = pt->buf, **W = cuda_layer_weights(pt, op, layer);
    const int64_t T = pt->d.tokens, h = pt->d.hidden;
    if (cuda_mla_runs(&pt->d, op))   /* qk_norm's and MLA's ops (cuda_mla.c) */
        return cuda_mla_fwd(c, op, W, err, errlen);
    switch (op) {
    case PDBX_OP_EMBED:
        return run_embed(c, err, errlen);
    case PDBX_OP_INPUT_NORM:
        return run_norm(c, B[B_X], W[W_IN_NORM], W[W_IN_NORM_B], B[B_XN], err, errlen);
    case PDBX_OP_ATTN_Q:
        if (pt->d.ops & CUDA_FUSED_QKV)   /* Megatron's linear_qkv: one [T, (a + 2 kv) d] GEMM */
            return enqueue_linear(c, op, B[B_XN], W[W_QKV], W[W_BQKV], B[B_QKV], err, errlen);
        return enqueue_linear(c, op, B[B_XN], W[W_Q], W[W_BQ], B[B_Q], err, errlen);
    case PDBX_OP_ATTN_K: return enqueue_linear(c, op, B[B_XN], W[W_K], W[W_BK], B[B_K], err, errlen);
    case PDBX_OP_ATTN_V: return enqueue_linear(c, op, B[B_XN], W[W_V], W[W_BV], B[B_V], err, errlen);
    case PDBX_OP_ATTN_ROPE:
        return run_rope(c, err, errlen);
    case PDBX_OP_ATTN_RESIDUAL:   /* hidden (attn_out) = attention output + the layer's input */
        CU_TRY("ck_residual_add", ck_residual_add(B[B_ATTN_OUT], B[B_X], T * h, c->dtype, c->stream));
        return 0;
    case PDBX_OP_MLP_RESIDUAL:    /* the next layer's input = MLP output + hidden */
        CU_TRY("ck_residual_add", ck_residual_add(B[B_X], B[B_ATTN_OUT], T * h, c->dtype, c->stream));
        return 0;
    case PDBX_OP_ATTN_CORE: {   /* this layer's window and cap; B_LSE where a backward reads it */
        const cuda_attention a = cuda_point_attn(pt, layer);
        return cuda_attention_enqueue(c->gemm, &a, B[B_Q], B[B_K], B[B_V], B[B_SCORES], B[B_CTX],
                                      B[B_LSE], c->stream, err, errlen);
    }
    case PDBX_OP_ATTN_O: return enqueue_linear(c, op, B[B_CTX], W[W_O], W[W_BO], B[B_ATTN_OUT], err, errlen);
    case PDBX_OP_POST_ATTN_NORM:   /* a parallel residual (gpt-neox) normalises the layer's input */
        return run_norm(c, pt->d.parallel_residual ? B[B_X] : B[B_ATTN_OUT], W[W_POST_NORM],
                        W[W_POST_NORM_B], B[B_XN2], err, errlen);
    case PDBX_OP_MLP_GATE:
        if (pt->d.ops & CUDA_FUSED_FC1)   /* Megatron's linear_fc1: one [T, 2 I] GEMM */
            return enqueue_linear(c, op, B[B_XN2], W[W_FC1], W[W_BFC1], B[B_FC1], err, errlen);
        return enqueue_linear(c, op, B[B_XN2], W[W_GATE], W[W_BGATE], B[B_GATE], err, errlen);
    case PDBX_OP_MLP_UP: return enqueue_linear(c, op, B[B_XN2], W[W_UP], W[W_BUP], B[B_UP], err, errlen);
    case PDBX_OP_MLP_ACT_FN:
        return run_act(c, err, errlen);
    case PDBX_OP_MLP_DOWN: return enqueue_linear(c, op, B[B_ACT], W[W_DOWN], W[W_BDOWN], B[B_X], err, errlen);
    case PDBX_OP_FINAL_NORM:
        return run_norm(c, B[B_X], B[B_FINAL_W], B[B_FINAL_B], B[B_XF], err, errlen);
    case PDBX_OP_LM_HEAD:   /* with gemma-2's final cap, applied in place after the GEMM */
        rc = enqueue_linear(c, op, B[B_XF], pt->d.tied ? B[B_EMBED] : B[B_LM_W], NULL, B[B_LOGITS],
                            err, errlen);
        if (rc == 0 && pt->d.final_softcap > 0.0f)
            CU_TRY("ck_logit_softcap", ck_logit_softcap(B[B_LOGITS], T * pt->d.vocab, pt->d.final_softcap,
                                                        c->dtype, c->stream));
        return rc;
    default:
        if (pdbx_op_is_moe(op))   /* cuda_moe.c */
            return cuda_moe_enqueue(c, op, W, err, errlen);
        snprintf(err, errlen, "cuda run_op: op %d has no kernel", (int)op);
        return -1;
    }
fail:
    return rc;
}

static int cuda_run_op(pdbx_compute *c, pdbx_op op, pdbx_pass pass, int layer, double *ms,
                       char *err, size_t errlen)
{
    if (!c->point) {
        snprintf(err, errlen, "cuda run_op(%s): no point prepared", pdbx_op_name(op));
        return -1;
    }
    if ((int)pass < 0 || pass >= PDBX_PASS_COUNT) {
        snprintf(err, errlen, "cuda run_op(%s): pass %d (allowed: fwd, bwd)", pdbx_op_name(op),
                 (int)pass);
        return -1;
    }
    if (pass == PDBX_PASS_BWD && !c->point->bwd) {
        snprintf(err, errlen, "cuda run_op(%s): the bwd pass needs a point prepared with bwd in "
                 "its passes (no gradient buffers)", pdbx_op_name(op));
        return -1;
    }
    if ((int)op < 0 || op >= PDBX_OP_COUNT || pdbx_op_is_comm(op)) {
        snprintf(err, errlen, "cuda run_op: %s is not a compute op (comm ops are timed by the comm "
                 "backend)", pdbx_op_name(op));
        return -1;
    }
    if (op == PDBX_OP_OPTIMIZER || op == PDBX_OP_LOSS) {   /* left out of a cuda sweep (plan_shapes.c) */
        snprintf(err, errlen, "cuda run_op(%s): the cuda backend has no %s kernel yet "
                 "(docs/engine.md)", pdbx_op_name(op), pdbx_op_name(op));
        return -1;
    }
    if (!cuda_op_prepared(&c->point->d, op)) {
        snprintf(err, errlen, "cuda run_op(%s): op was not in the prepared op set", pdbx_op_name(op));
        return -1;
    }
    if (!pdbx_op_is_per_layer(op))
        layer = 0;
    if (layer < 0 || layer >= c->point->d.layers) {
        snprintf(err, errlen, "cuda run_op(%s): layer %d (allowed: 0..%d)", pdbx_op_name(op), layer,
                 c->point->d.layers - 1);
        return -1;
    }
    /* a MoE op's grouped GEMMs: a spin long enough for their launches before the start */
    const int launches = cuda_moe_launches(c->point, op, pass);
    int rc = launches > 0 ? cuda_timer_spin(c, launches, err, errlen) : 0;
    if (rc == 0)
        rc = cuda_timer_start(c, err, errlen);
    if (rc == 0)   /* both passes between the same two events */
        rc = pass == PDBX_PASS_BWD ? cuda_bwd_enqueue(c, op, layer, err, errlen)
                                   : enqueue_op(c, op, layer, err, errlen);
    if (rc == 0)
        return cuda_timer_stop(c, ms, err, errlen);
    cudaStreamSynchronize(c->stream);   /* leave nothing half-enqueued behind */
    (void)cudaGetLastError();
    return rc;
}

#ifdef PDBX_CUDA_NO_NCCL   /* built where nccl.h is missing: no comm backend of our own */
#define CUDA_COMM_OPS NULL
#else
#define CUDA_COMM_OPS (&cuda_nccl_comm_ops)
#endif

/* ---- entry -------------------------------------------------------------------------------- */

static const pdbx_compute_ops cuda_compute_ops = PDBX_COMPUTE_OPS("cuda", cuda);

__attribute__((visibility("default"))) const pdbx_backend_entry *pdbx_backend_entry_v1(void);

static const pdbx_backend_entry cuda_entry = {
    .abi = PDBX_BACKEND_ABI,
    .compute = &cuda_compute_ops,
    .comm = CUDA_COMM_OPS,
    .probe = cuda_probe,
};

const pdbx_backend_entry *pdbx_backend_entry_v1(void)
{
    return &cuda_entry;
}
