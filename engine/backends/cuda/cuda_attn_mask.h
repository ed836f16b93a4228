/* cuda_attn_mask.h: which keys a score row of the attention core may see. Pure arithmetic
 * shared by the device kernels (the softmax of cuda_kernels.cu and its backward) and the host
 * tests (tests/cuda/test_cuda_attn_kv.c), so the mask the GPU applies is the one the host
 * checks.
 *
 * A score matrix has q_len rows (queries) and kv_len columns (keys), kv_len >= q_len; its
 * queries are the last q_len tokens of the kv_len (a cached prefix of kv_len - q_len keys
 * comes first). Row r of a stack of such matrices is query i = r % q_len, which sees keys
 * 0 .. kv_len - q_len + i: the causal mask of training (q_len = kv_len = seq), a prefill chunk
 * after a cached prefix (q_len C, kv_len P + C) and a decode step (q_len 1: every key). */
#ifndef PDBX_CUDA_ATTN_MASK_H
#define PDBX_CUDA_ATTN_MASK_H

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

#endif
