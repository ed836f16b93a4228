/* cpu_kv_attention.h: the cpu backend's attention with a KV cache (backend.h attn_kv), the
 * inference phase's prefill and decode kernel (docs/engine.md "Inference phase").
 *
 * Contract:
 *  - q   [seqs * q_len, heads * d]     (row = query token, head h at columns h * d)
 *    k,v [seqs * kv_len, kv_heads * d] (the cache: the sequence's kv_len keys, the last q_len
 *                                       of them the queries' own)
 *    out [seqs * q_len, heads * d]
 *  - Query row i (0 .. q_len - 1) of a sequence attends causally with the prefix offset:
 *    keys 0 .. kv_len - q_len + i. Prefill of a chunk C after a cached prefix P: q_len C,
 *    kv_len P + C. Decode: q_len 1, kv_len K (the one query sees all K keys).
 *  - Grouped-query attention without copies: head h reads kv head h / (heads / kv_heads) in
 *    place (heads a multiple of kv_heads).
 *  - Exact softmax with scale 1/sqrt(d), fp32, max-subtracted; every output element written.
 *  - (sequence, head) pairs are split over the pool's threads (pdbx_cpu_pool_for); each query
 *    row's scores go to the calling thread's share of scratch, so the result does not depend
 *    on the thread count. scratch: pdbx_k_kv_attention_scratch_floats(kv_len, threads) floats,
 *    threads >= pdbx_cpu_pool_threads(pool).
 */
#ifndef PDBX_CPU_KV_ATTENTION_H
#define PDBX_CPU_KV_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "engine/backends/cpu/cpu_threads.h"

size_t pdbx_k_kv_attention_scratch_floats(int64_t kv_len, int threads);
void pdbx_k_attention_kv(pdbx_cpu_pool *pool, const float *q, const float *k, const float *v,
                         int64_t seqs, int64_t q_len, int64_t kv_len, int64_t heads,
                         int64_t kv_heads, int64_t d, float *scratch, float *out);

#endif
