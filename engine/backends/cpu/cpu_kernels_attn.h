/* cpu_kernels_attn.h: the cpu backend's attention-core variants beside Llama's plain causal
 * softmax(Q K^T / sqrt(d)) V: Gemma-2's logit soft-capping and the sliding window of Mistral,
 * Gemma-2's local layers and Qwen2 (forward cpu_kernels_attn.c, backward
 * cpu_kernels_attn_bwd.c), and Gemma-2's final-logit soft-capping of lm_head's output.
 *
 * Contract (as cpu_kernels.h and cpu_kernels_bwd.h):
 *  - Layouts, GQA head mapping, scale 1/sqrt(d), threads and scratch are those of
 *    pdbx_k_attention_causal and pdbx_k_attention_causal_bwd (the same scratch sizes,
 *    pdbx_k_attention_scratch_floats and pdbx_k_attention_bwd_scratch_floats, whatever the
 *    options); those two are these with opts {0, 0, 0} and give the bits they gave before these
 *    variants existed (tests/unit/test_engine_kernels_attn_opts.c).
 *  - Options, per (sequence, head), with s_ij = scale * (q_i . k_j):
 *      softcap > 0: s_ij <- softcap * tanh(s_ij / softcap) before the mask and the softmax
 *                   (HF Gemma2's attn_logit_softcapping; the backward multiplies dS by
 *                   1 - tanh^2, computed from the capped score c as (cap - c)(cap + c) / cap^2);
 *      window > 0:  query i attends keys j with i - window < j <= i (the last `window` tokens,
 *                   itself included: HF's sliding_window, FlashAttention's window_size
 *                   (window - 1, 0)). Key blocks wholly outside the band are not visited, in
 *                   the forward and the backward: the work per query row is about
 *                   window + PDBX_K_ATTN_BLOCK keys instead of the causal prefix.
 *      dv > 0:      v's head dim differs from q's and k's d (DeepSeek-V2/V3's MLA: q/k 192 =
 *                   nope 128 + rope 64, v 128): v, dv are [tokens, kv_heads, dv], out and
 *                   dout [tokens, heads, dv]; q, k, dq, dk keep d, and so does the scale
 *                   1/sqrt(d). The forward's scratch is unchanged
 *                   (pdbx_k_attention_scratch_floats(seq_len, d, ..)); the backward's is
 *                   pdbx_k_attention_bwd_scratch_floats(seq_len, max(d, dv), threads).
 *    window <= 0 or >= seq_len is full causal attention (window >= seq_len: the same bits as
 *    window 0); softcap <= 0, NaN or infinite is none; dv <= 0 or dv = d is d. opts NULL is
 *    {0, 0, 0}. s / cap is
 *    computed as s x (1 / cap) (within an ulp; tanh's own error is larger).
 *  - The result does not depend on the thread count (each (sequence, head) or (sequence, kv
 *    head) is computed by one thread, in a fixed order).
 *  - Accuracy: the forward's exp is pdbx_k_exp and its tanh pdbx_k_tanh (cpu_kernels_vec.h,
 *    relative errors < 2e-7 and < 1.5e-7); the backward recomputes P with libm's expf, as
 *    before, and the capped scores with pdbx_k_tanh.
 */
#ifndef PDBX_CPU_KERNELS_ATTN_H
#define PDBX_CPU_KERNELS_ATTN_H

#include <stdint.h>

#include "engine/backends/cpu/cpu_threads.h"

typedef struct {
    int64_t window;   /* sliding window in tokens, itself included; <= 0: full causal */
    float softcap;    /* attention-logit soft-capping; <= 0: none */
    int64_t dv;       /* v's head dim (MLA: 128 beside q/k's 192); <= 0: d */
} pdbx_attn_opts;

/* The head dim of v, out, dout and dv under opts for q/k head dim d. */
static inline int64_t pdbx_attn_dv(const pdbx_attn_opts *opts, int64_t d)
{
    return opts && opts->dv > 0 ? opts->dv : d;
}

/* pdbx_k_attention_causal (cpu_kernels.h) with opts. */
void pdbx_k_attention_causal_opts(pdbx_cpu_pool *pool, const float *q, const float *k,
                                  const float *v, int64_t seqs, int64_t seq_len, int64_t heads,
                                  int64_t kv_heads, int64_t d, float *scratch, float *out,
                                  const pdbx_attn_opts *opts);

/* pdbx_k_attention_causal_bwd (cpu_kernels_bwd.h) with opts (the forward's). With softcap the
 * backward takes query blocks of PDBX_K_ATTN_BLOCK / 2 rows, so that the factors 1 - tanh^2
 * fit beside P and dS in the same scratch. */
void pdbx_k_attention_causal_bwd_opts(pdbx_cpu_pool *pool, const float *q, const float *k,
                                      const float *v, const float *dout, int64_t seqs,
                                      int64_t seq_len, int64_t heads, int64_t kv_heads, int64_t d,
                                      float *scratch, float *dq, float *dk, float *dv,
                                      const pdbx_attn_opts *opts);

/* Final-logit soft-capping (HF Gemma2's final_logit_softcapping, on lm_head's fp32 output),
 * in place over [rows, n]: y <- cap * tanh(y / cap). cap <= 0, NaN or infinite: nothing done.
 * Its backward, out of place: dx = dy * (1 - (y / cap)^2) from the capped output y, computed
 * as dy (cap - y)(cap + y) / cap^2 (cap - y is exact near saturation, where 1 - (y/cap)^2
 * would cancel); dx fp32 (dx_bf16 0; dx may be dy) or bf16 rounded to nearest even
 * (dx_bf16 1: the dY that lm_head's bf16 dgrad/wgrad GEMMs read). Out of place because the
 * backends fill d logits once and reuse it every step: an in-place product would shrink it
 * step after step. cap <= 0, NaN or infinite: dx = dy (converted).
 * Chunks of elements over the pool as the GELU's (cpu_kernels_dense.c); inputs below 32768
 * elements run on the caller; every element by one chunk, so the bits do not depend on the
 * pool. Relative error of the forward < 2e-7 (pdbx_k_tanh's and two roundings), of the
 * backward's factor a few ulp (then bf16's rounding). */
void pdbx_k_logit_softcap(pdbx_cpu_pool *pool, float *y, int64_t rows, int64_t n, float cap);
void pdbx_k_logit_softcap_bwd(pdbx_cpu_pool *pool, const float *y, const float *dy, void *dx,
                              int dx_bf16, int64_t rows, int64_t n, float cap);

#endif
