/* cpu_kernels.h: the CPU backend's own kernels (everything that is not a GEMM).
 *
 * Contract:
 *  - Row-major float32 storage; every kernel computes in fp32 (the CPU backend runs its bf16
 *    GEMMs through OpenBLAS sbgemm with fp32 output, so the element-wise kernels see fp32).
 *  - Kernels are pure (no allocation except where a scratch is passed in) and write every
 *    element of their output, so timing them measures real work.
 *  - Threads: the norm, SiLU x up and attention kernels split their work over a pool
 *    (cpu_threads.h; NULL: the caller's thread alone) in chunks of rows, elements or one
 *    (sequence, head) pair that the threads take in turn (pdbx_cpu_pool_for); the result does
 *    not depend on the thread count (every output element is computed by one chunk, in the
 *    same order). Inputs below a few tens of
 *    thousands of elements run on the caller alone.
 *  - Vectorised: plain C loops gcc vectorises, compiled for baseline x86-64, AVX2+FMA and
 *    AVX-512 and picked at load time (target_clones), with an own exp (relative error < 2e-7,
 *    inputs clamped to [-87, 88]) so SiLU and softmax vectorise too.
 *  - Shapes are validated by the caller (cpu_compute.c builds them from pdbx_op_shape_for).
 */
#ifndef PDBX_CPU_KERNELS_H
#define PDBX_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/backends/cpu/cpu_threads.h"

/* out[i, :] = table[ids[i] - vocab_start, :] for i < rows, rows of `row_bytes` bytes (so a
 * bf16 table moves bf16 bytes). Vocab-parallel ranks hold V/TP rows: ids outside the local
 * shard give a zero row, as Megatron masks them before its all-reduce. */
void pdbx_k_embed_gather(const void *table, int64_t table_rows, int64_t vocab_start,
                         const int32_t *ids, int64_t rows, size_t row_bytes, void *out);

/* RMSNorm over rows: out = x / sqrt(mean(x^2) + eps) * weight. */
void pdbx_k_rmsnorm(pdbx_cpu_pool *pool, const float *x, const float *weight, int64_t rows,
                    int64_t cols, float eps, float *out);

/* HF Llama MLP activation: out = silu(gate) * up, element-wise over n values. */
void pdbx_k_silu_mul(pdbx_cpu_pool *pool, const float *gate, const float *up, int64_t n,
                     float *out);

/* Linear-layer bias, in place on the GEMM's fp32 output: y[i, :] += bias[:] for the rows of
 * [rows, cols]. Chunks of whole rows (about BIAS_CHUNK_ELEMS elements each) over the pool. */
void pdbx_k_bias_add(pdbx_cpu_pool *pool, float *y, const float *bias, int64_t rows, int64_t cols);

/* Rotary position embedding (HF Llama / Megatron rotate-half convention), in place on x
 * [rows, heads*d]: row r is the token at position r % seq_len (rows = sequences x seq_len), and
 * the first rot <= d elements of each head are rotated (rot = d: the whole head, a Llama's;
 * less: GPT-NeoX's partial rotary, rotary_pct x d, the rest passes through): for i < rot/2,
 * with c = cos_t[pos, i], s = sin_t[pos, i]:
 *   x[i] <- x[i] c - x[i + rot/2] s,   x[i + rot/2] <- x[i + rot/2] c + x[i] s
 * (an odd rot leaves its last element alone). inverse != 0 rotates by -angle: the backward of
 * the forward rotation (R^T dy), which undoes it. Chunks of whole rows over the pool. The
 * tables are pdbx_k_rope_table's of rot. */
void pdbx_k_rope(pdbx_cpu_pool *pool, float *x, int64_t rows, int64_t heads, int64_t d, int64_t rot,
                 int64_t seq_len, const float *cos_t, const float *sin_t, int inverse);
/* The rope tables [seq_len, d/2] each: angle pos * theta^(-2i/d), computed in double (d: the
 * rotated dims, rot of pdbx_k_rope). */
void pdbx_k_rope_table(int64_t seq_len, int64_t d, double theta, float *cos_t, float *sin_t);

/* Residual add, in place: y[i] += x[i] for i < n (the forward's hidden += sublayer output and,
 * backward, the gradient passed through into the residual branch's). */
void pdbx_k_add(pdbx_cpu_pool *pool, float *y, const float *x, int64_t n);

/* Causal attention core (cpu_kernels_attn.c) for `seqs` sequences of `seq_len` tokens:
 *   q   [seqs*seq_len, heads*d]   (row = token, head h at columns h*d)
 *   k,v [seqs*seq_len, kv_heads*d]
 *   out [seqs*seq_len, heads*d]
 * head h reads kv head h / (heads / kv_heads) (grouped-query attention). Exact softmax with
 * scale 1/sqrt(d). Blocked: PDBX_K_ATTN_BLOCK query rows at a time against key blocks of
 * PDBX_K_ATTN_KBLOCK keys, the key block transposed into scratch (key row by key row) so the
 * scores are register tiles of 4 query rows x 16 keys (contiguous, vectorisable, no float
 * reductions); the output likewise 4 rows x 16 columns at a time, each value row reused by the
 * 4 rows, the softmax's 1/sum applied once per output element. (sequence, head) pairs are split
 * over the pool's threads. scratch: pdbx_k_attention_scratch_floats(seq_len, d, threads) floats,
 * threads >= pdbx_cpu_pool_threads(pool) (engine/plan's profile memory lists that size). */
#define PDBX_K_ATTN_BLOCK 32
#define PDBX_K_ATTN_KBLOCK 64
size_t pdbx_k_attention_scratch_floats(int64_t seq_len, int64_t d, int threads);
void pdbx_k_attention_causal(pdbx_cpu_pool *pool, const float *q, const float *k, const float *v,
                             int64_t seqs, int64_t seq_len, int64_t heads, int64_t kv_heads,
                             int64_t d, float *scratch, float *out);

/* float <-> bfloat16 (round to nearest even; NaN kept quiet). */
uint16_t pdbx_k_f32_to_bf16(float f);
float pdbx_k_bf16_to_f32(uint16_t b);

/* Deterministic pseudo-random fill in [-scale, scale] (xorshift; seed picks the sequence). */
void pdbx_k_fill_uniform(float *x, size_t n, float scale, uint64_t seed);

#endif
