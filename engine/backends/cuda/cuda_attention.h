/* cuda_attention.h: the causal attention core of one TP rank, two paths (docs/cuda.md,
 * "Kernels and attention"):
 *  - unfused (dims.flash 0): two cuBLASLt strided-batched GEMMs around the causal softmax
 *        S = (1/sqrt(d)) Q K^T   ->   P = causal_softmax(S)   ->   O = P V
 *    with the full s x s scores in memory;
 *  - fused (dims.flash 1, spec flash_attention): the forward is one ck_flash_attention launch
 *    (cuda_flash.cu), no scores buffer. Its backward is the unfused one below, which first
 *    recomputes P into the scores buffer (QK^T GEMMs + softmax, as a flash backward
 *    recomputes S) and is recorded as unfused (run_start env gpu.attention_bwd_kernel).
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

#include "engine/backends/cuda/cuda_gemm.h"

typedef struct {
    int64_t mbs, seq, heads, kv_heads, head_dim;   /* heads per rank, divisible by kv_heads */
    pdbx_dtype dtype;
    int flash;                    /* forward by ck_flash_attention (cuda_attention_flash_ok) */
} cuda_attention_dims;

typedef struct {
    cuda_attention_dims dims;
    cuda_gemm_plan *qk, *pv;
    cuda_gemm_plan *pt;           /* bwd only (cuda_attention_plan_bwd): dV and dK */
} cuda_attention;

size_t cuda_attention_scores_elems(const cuda_attention_dims *d);
/* 1 when the fused forward runs d (head_dim and dtype as ck_flash_supported), else 0 with a
 * message naming head_dim and what is allowed. Pure. */
int cuda_attention_flash_ok(const cuda_attention_dims *d, char *err, size_t errlen);
/* Whether a point whose core runs on path d needs the s x s scores buffer: always unfused,
 * and on the fused path only for the backward (its recomputed P). The planner's rule
 * (plan_profile_memory.c, cuda_list) is the same. */
int cuda_attention_needs_scores(const cuda_attention_dims *d, int bwd);

/* Pure layout functions (no CUDA calls; unit-tested on the host with an emulated GEMM):
 * the two GEMM shapes, and the element offsets of group member jj's q/out and score blocks. */
int cuda_attention_shapes(const cuda_attention_dims *d, cuda_gemm_shape *qk, cuda_gemm_shape *pv);
void cuda_attention_member(const cuda_attention_dims *d, int64_t jj, int64_t *q_off,
                           int64_t *s_off);
float cuda_attention_scale(const cuda_attention_dims *d);   /* 1/sqrt(head_dim) */

/* The backward's third GEMM shape (the other two are qk's and pv's): per batch member
 *     dV'[d, sk] (+)= dO'[d, sq] P'^T        dK'[d, sk] (+)= Q'[d, sq] dS'^T
 * (A q-like with q's strides, B a score block transposed, C k-like), accumulated over the
 * group's q heads with beta 1 after the first: GQA's dK and dV are sums over the group. */
int cuda_attention_shape_bwd(const cuda_attention_dims *d, cuda_gemm_shape *pt);

/* Builds (or finds in g's cache) the two GEMM plans; -1 with a message on bad dimensions. */
int cuda_attention_plan(cuda_gemm *g, const cuda_attention_dims *d, cuda_attention *out,
                        char *err, size_t errlen);

/* Enqueues the forward on stream: unfused, the 2 * group GEMMs and the softmax into scores;
 * fused, ck_flash_attention (scores unused, may be NULL). Pointers from cudaMalloc. */
int cuda_attention_enqueue(cuda_gemm *g, const cuda_attention *a, const void *q, const void *k,
                           const void *v, void *scores, void *out, cudaStream_t stream,
                           char *err, size_t errlen);

/* The backward's plan (a->pt), after cuda_attention_plan. */
int cuda_attention_plan_bwd(cuda_gemm *g, cuda_attention *a, char *err, size_t errlen);
/* Enqueues the backward of the unfused core as PyTorch's eager attention runs it, keeping the
 * forward's probabilities `probs` (the scores buffer after the forward):
 *     dV = P^T dO,  dP = dO V^T,  dS = scale * P (dP - rowsum(P dP)),  dQ = dS K,  dK = dS^T Q
 * (4 * group GEMMs and ck_causal_softmax_bwd); dscores is a scores-sized buffer for dP/dS.
 * On the fused path (dims.flash) probs holds no probabilities: they are recomputed into it
 * first (group QK^T GEMMs and ck_causal_softmax), inside the timed backward. */
int cuda_attention_bwd_enqueue(cuda_gemm *g, const cuda_attention *a, const void *q,
                               const void *k, const void *v, void *probs, const void *dout,
                               void *dscores, void *dq, void *dk, void *dv, cudaStream_t stream,
                               char *err, size_t errlen);

#endif
