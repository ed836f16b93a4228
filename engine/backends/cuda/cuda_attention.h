/* cuda_attention.h: the causal attention core of one TP rank, two paths (docs/cuda-kernels.md,
 * "Kernels and attention"):
 *  - unfused (dims.flash 0): two cuBLASLt strided-batched GEMMs around the causal softmax
 *        S = (1/sqrt(d)) Q K^T   ->   P = causal_softmax(S)   ->   O = P V
 *    with the full s x s scores in memory;
 *  - fused (dims.flash 1, spec flash_attention): the forward is one ck_flash_attention launch
 *    (cuda_flash.cu), which also saves each row's log-sum-exp when the backward will run, and
 *    the backward is ck_flash_attention_bwd (cuda_flash_bwd.cu, FlashAttention-2): no scores
 *    buffer in either pass.
 * Attention with a KV cache (backend.h attn_kv, cuda_attn_kv.c) runs the unfused path on
 * rectangular [q_len, kv_len] scores whose mask starts after the cached prefix
 * (cuda_attention_kv_shapes, ck_prefix_softmax).
 *
 * Layouts (row-major, tokens sequence-major as Megatron's [s, b, ...]: row = pos * mbs + b):
 *     q, out: [seq, mbs, heads, d]     k, v: [seq, mbs, kv_heads, d]
 *     scores: cuda_attention_scores_elems() elements, [group][mbs * kv_heads][seq][seq]
 * GQA: q head j attends with kv head j / group (group = heads / kv_heads), as HF's
 * repeat_kv. One batch member n = b * kv_heads + g of a GEMM covers sequence b and kv head g;
 * its q head is g * group + jj, one call per jj (group calls per GEMM), so every batch stride
 * is constant and no K/V copy (repeat_kv) is needed.
 */
#ifndef PDBX_CUDA_ATTENTION_H
#define PDBX_CUDA_ATTENTION_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "engine/backends/backend.h"
#include "engine/backends/cuda/cuda_gemm.h"

typedef struct {
    int64_t mbs, seq, heads, kv_heads, head_dim;   /* heads per rank, divisible by kv_heads */
    pdbx_dtype dtype;
    int flash;                    /* forward by ck_flash_attention (cuda_attention_flash_ok) */
} cuda_attention_dims;

/* The core's options (cuda_attn_mask.h; the cpu backend's pdbx_attn_opts): a sliding window
 * (query i sees keys i - window < j <= i; <= 0 or >= seq: full causal), soft-capping of the
 * scores (cap tanh(s / cap) before the mask; <= 0: none) and v's head dim (MLA: v, out, dout,
 * dv are [.., v_dim] while q, k keep head_dim and the scale 1/sqrt(head_dim); <= 0: head_dim).
 * Unfused path only: the fused kernel refuses them (cuda_attention_opts_flash_ok). With a cap
 * the unfused forward also writes each row's log-sum-exp (fp32 [mbs, heads, seq], the lse
 * buffer the fused path uses), from which the backward recovers the capped scores. */
typedef struct {
    int64_t window;
    float softcap;
    int64_t v_dim;
} cuda_attention_opts;

typedef struct {
    cuda_attention_dims dims;
    cuda_attention_opts opts;     /* normalised: window 0 or < seq, cap 0 or finite, v_dim set */
    cuda_gemm_plan *qk, *pv;
    /* bwd only (cuda_attention_plan_bwd): dK (pt), dV (ptv), dP (dp), dQ (dq); with
     * v_dim = head_dim ptv is pt, dp qk's shape and dq pv's (the same cached plans) */
    cuda_gemm_plan *pt, *ptv, *dp, *dq;
} cuda_attention;

size_t cuda_attention_scores_elems(const cuda_attention_dims *d);
/* 1 when the fused forward runs d (head_dim and dtype as ck_flash_supported), else 0 with a
 * message naming head_dim and what is allowed. Pure. */
int cuda_attention_flash_ok(const cuda_attention_dims *d, char *err, size_t errlen);
/* Whether a point whose core runs on path d needs the s x s scores buffer (and, with bwd,
 * dP/dS of the same size): the unfused path only. The fused path's backward needs instead the
 * forward's log-sum-exp (fp32 [mbs, heads, seq]), delta of the same size and, for bf16/fp16,
 * an fp32 dQ accumulator [tokens, heads, d]. The planner's rule (plan_profile_memory.c,
 * cuda_list and cuda_grad_list) is the same. */
int cuda_attention_needs_scores(const cuda_attention_dims *d);

/* Pure layout functions (no CUDA calls; unit-tested on the host with an emulated GEMM):
 * the two GEMM shapes, and the element offsets of group member jj's q/out and score blocks. */
int cuda_attention_shapes(const cuda_attention_dims *d, cuda_gemm_shape *qk, cuda_gemm_shape *pv);
void cuda_attention_member(const cuda_attention_dims *d, int64_t jj, int64_t *q_off,
                           int64_t *s_off);

/* The same for attention with a KV cache (backend.h's pdbx_attn_kv_shape s: `batch` sequences
 * of q_len queries against kv_len cached keys, the queries the last q_len of them), in the
 * layouts
 *     q, out: [q_len, batch, heads, d]     k, v: [kv_len, batch, kv_heads, d]
 *     scores: cuda_attention_kv_scores_elems(), [group][batch * kv_heads][q_len][kv_len]
 * and the GQA batching above; with q_len = kv_len = seq they are the training core's shapes.
 * -1 for a shape that is not positive, kv_len < q_len, or heads not a multiple of kv_heads. */
int cuda_attention_kv_shapes(const pdbx_attn_kv_shape *s, pdbx_dtype dt, cuda_gemm_shape *qk,
                             cuda_gemm_shape *pv);
void cuda_attention_kv_member(const pdbx_attn_kv_shape *s, int64_t jj, int64_t *q_off,
                              int64_t *s_off);
size_t cuda_attention_kv_scores_elems(const pdbx_attn_kv_shape *s);
float cuda_attention_scale(const cuda_attention_dims *d);   /* 1/sqrt(head_dim) */

/* The backward's third GEMM shape (the other two are qk's and pv's): per batch member
 *     dV'[d, sk] (+)= dO'[d, sq] P'^T        dK'[d, sk] (+)= Q'[d, sq] dS'^T
 * (A q-like with q's strides, B a score block transposed, C k-like), accumulated over the
 * group's q heads with beta 1 after the first: GQA's dK and dV are sums over the group. */
int cuda_attention_shape_bwd(const cuda_attention_dims *d, cuda_gemm_shape *pt);

/* Builds (or finds in g's cache) the two GEMM plans; -1 with a message on bad dimensions.
 * cuda_attention_plan is cuda_attention_plan_opts with o NULL (plain causal, v_dim head_dim);
 * with d->flash and an option the fused kernel lacks, -1 with cuda_attention_opts_flash_ok's
 * message. */
int cuda_attention_plan(cuda_gemm *g, const cuda_attention_dims *d, cuda_attention *out,
                        char *err, size_t errlen);
int cuda_attention_plan_opts(cuda_gemm *g, const cuda_attention_dims *d,
                             const cuda_attention_opts *o, cuda_attention *out, char *err,
                             size_t errlen);
/* 1 when the fused kernel runs options o (none of them set), else 0 with a one-line message
 * naming the feature (a sliding window, attention soft-capping, a v head dim). Pure. */
int cuda_attention_opts_flash_ok(const cuda_attention_dims *d, const cuda_attention_opts *o,
                                 char *err, size_t errlen);
/* v's head dim under o (o NULL or v_dim <= 0: head_dim). */
int64_t cuda_attention_v_dim(const cuda_attention_dims *d, const cuda_attention_opts *o);
/* Pure shapes with options: forward qk (over head_dim) and pv (over v_dim); the backward's
 * four GEMMs, out[0] dV = P^T dO and out[1] dP = dO V^T over v_dim, out[2] dQ = dS K and
 * out[3] dK = dS^T Q over head_dim (cuda_attention_shape_bwd is out[3] with o NULL). Group
 * member jj's out/dout columns start at jj * v_dim (q's at jj * head_dim). */
int cuda_attention_shapes_opts(const cuda_attention_dims *d, const cuda_attention_opts *o,
                               cuda_gemm_shape *qk, cuda_gemm_shape *pv);
int cuda_attention_shapes_bwd_opts(const cuda_attention_dims *d, const cuda_attention_opts *o,
                                   cuda_gemm_shape out[4]);

/* Enqueues the forward on stream: unfused, the 2 * group GEMMs and the softmax into scores
 * (with soft-capping: the rows' natural log-sum-exp into lse, required then); fused,
 * ck_flash_attention (scores unused, may be NULL), which writes the rows' log-sum-exp (base 2)
 * into lse when it is not NULL (the backward will run). Pointers from cudaMalloc. */
int cuda_attention_enqueue(cuda_gemm *g, const cuda_attention *a, const void *q, const void *k,
                           const void *v, void *scores, void *out, float *lse,
                           cudaStream_t stream, char *err, size_t errlen);

/* Enqueues attention with a KV cache of shape s (the unfused path, cuda_attention_kv_shapes'
 * layouts): the group's QK^T GEMMs with plan qk, ck_prefix_softmax, the group's PV GEMMs with
 * plan pv (both from cuda_gemm_plan_get of the kv shapes). */
int cuda_attention_kv_enqueue(cuda_gemm *g, const cuda_gemm_plan *qk, const cuda_gemm_plan *pv,
                              const pdbx_attn_kv_shape *s, pdbx_dtype dt, const void *q,
                              const void *k, const void *v, void *scores, void *out,
                              cudaStream_t stream, char *err, size_t errlen);

/* The backward's plan (a->pt; none for the fused path), after cuda_attention_plan. */
int cuda_attention_plan_bwd(cuda_gemm *g, cuda_attention *a, char *err, size_t errlen);

/* The buffers of one backward (cudaMalloc'd). Unfused: probs is the forward's probabilities
 * (the scores buffer after the forward), dscores a scores-sized buffer for dP/dS, lse the
 * forward's when soft-capping (else unused). Fused: out
 * and lse are the forward's output and log-sum-exp, delta and dq_acc ck_flash_attention_bwd's
 * scratch (dq_acc may be dq for fp32). The others are read (q, k, v, dout) or written (dq, dk,
 * dv) by both. */
typedef struct {
    const void *q, *k, *v, *out, *dout;
    void *probs, *dscores;
    const float *lse;
    float *delta, *dq_acc;
    void *dq, *dk, *dv;
} cuda_attention_bwd_bufs;

/* Enqueues the backward. Unfused, as PyTorch's eager attention runs it, keeping the forward's
 * probabilities:
 *     dV = P^T dO,  dP = dO V^T,  dS = scale * P (dP - rowsum(P dP)),  dQ = dS K,  dK = dS^T Q
 * (4 * group GEMMs and ck_attn_softmax_bwd, with the window and the cap's derivative). Fused (dims.flash): ck_flash_attention_bwd. */
int cuda_attention_bwd_enqueue(cuda_gemm *g, const cuda_attention *a,
                               const cuda_attention_bwd_bufs *b, cudaStream_t stream, char *err,
                               size_t errlen);

#endif
