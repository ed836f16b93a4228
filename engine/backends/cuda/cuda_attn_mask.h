/* cuda_attn_mask.h: which keys a score row of the attention core may see, and the scores'
 * soft-capping. Pure arithmetic shared by the device kernels (the softmax of cuda_kernels.cu,
 * its backward, cuda_softcap.cu) and the host tests (tests/cuda/test_cuda_attn_kv.c,
 * test_cuda_attn_opts.c; tests/unit/test_cuda_attn_mask.c without a GPU), so the mask the GPU
 * applies is the one the host checks.
 *
 * A score matrix has q_len rows (queries) and kv_len columns (keys), kv_len >= q_len; its
 * queries are the last q_len tokens of the kv_len (a cached prefix of kv_len - q_len keys
 * comes first). Row r of a stack of such matrices is query i = r % q_len, which sees keys
 * 0 .. kv_len - q_len + i: the causal mask of training (q_len = kv_len = seq), a prefill chunk
 * after a cached prefix (q_len C, kv_len P + C) and a decode step (q_len 1: every key).
 *
 * The attention core's options, as the cpu backend's (cpu_kernels_attn.h) and HF's:
 *  - a sliding window of w tokens (Mistral, Gemma-2's local layers): the query at position p
 *    sees keys p - w < j <= p, so row r's keys start at ck_first_key (w <= 0: 0);
 *  - logit soft-capping (Gemma-2's attn_logit_softcapping and final_logit_softcapping):
 *    c = cap tanh(s / cap) before the mask and the softmax (ck_softcap), whose derivative
 *    dc/ds = 1 - tanh^2 is computed from c as (cap - c)(cap + c) / cap^2 (ck_softcap_grad:
 *    cap - c is exact near saturation, where 1 - (c/cap)^2 would cancel). cap <= 0: none. */
#ifndef PDBX_CUDA_ATTN_MASK_H
#define PDBX_CUDA_ATTN_MASK_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define CK_MASK_HD __host__ __device__
#else
#define CK_MASK_HD
#endif

/* The number of keys row r sees (1 .. kv_len); q_len >= 1. */
static inline CK_MASK_HD int64_t ck_keys_visible(int64_t r, int64_t q_len, int64_t kv_len)
{
    return kv_len - q_len + r % q_len + 1;
}

/* The first key row r sees under a sliding window of `window` tokens (itself included):
 * max(0, ck_keys_visible - window); window <= 0: 0 (every key up to the causal end). */
static inline CK_MASK_HD int64_t ck_first_key(int64_t r, int64_t q_len, int64_t kv_len,
                                              int64_t window)
{
    const int64_t end = ck_keys_visible(r, q_len, kv_len);
    return window > 0 && end - window > 0 ? end - window : 0;
}

/* A score soft-capped: cap tanh(s / cap), s / cap as s x (1 / cap); cap <= 0: s. */
static inline CK_MASK_HD float ck_softcap(float s, float cap)
{
    return cap > 0.0f ? cap * tanhf(s * (1.0f / cap)) : s;
}

/* dc/ds of the cap at the capped value c: (cap - c)(cap + c) / cap^2; cap <= 0: 1. */
static inline CK_MASK_HD float ck_softcap_grad(float c, float cap)
{
    return cap > 0.0f ? (cap - c) * (cap + c) * (1.0f / (cap * cap)) : 1.0f;
}

#endif
