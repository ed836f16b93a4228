/* cpu_kernels.h: the CPU backend's own kernels (everything that is not a GEMM).
 *
 * Contract:
 *  - Row-major float32 storage; every kernel computes in fp32 (the CPU backend runs its bf16
 *    GEMMs through OpenBLAS sbgemm with fp32 output, so the element-wise kernels see fp32).
 *  - Kernels are single-threaded, pure (no allocation except where a scratch is passed in),
 *    and write every element of their output, so timing them measures real work.
 *  - Shapes are validated by the caller (cpu_compute.c builds them from pdbx_op_shape_for).
 */
#ifndef PDBX_CPU_KERNELS_H
#define PDBX_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* out[i, :] = table[ids[i] - vocab_start, :] for i < rows, rows of `row_bytes` bytes (so a
 * bf16 table moves bf16 bytes). Vocab-parallel ranks hold V/TP rows: ids outside the local
 * shard give a zero row, as Megatron masks them before its all-reduce. */
void pdbx_k_embed_gather(const void *table, int64_t table_rows, int64_t vocab_start,
                         const int32_t *ids, int64_t rows, size_t row_bytes, void *out);

/* RMSNorm over rows: out = x / sqrt(mean(x^2) + eps) * weight. */
void pdbx_k_rmsnorm(const float *x, const float *weight, int64_t rows, int64_t cols,
                    float eps, float *out);

/* HF Llama MLP activation: out = silu(gate) * up, element-wise over n values. */
void pdbx_k_silu_mul(const float *gate, const float *up, int64_t n, float *out);

/* Causal attention core for `seqs` sequences of `seq_len` tokens:
 *   q   [seqs*seq_len, heads*d]   (row = token, head h at columns h*d)
 *   k,v [seqs*seq_len, kv_heads*d]
 *   out [seqs*seq_len, heads*d]
 * head h reads kv head h / (heads / kv_heads) (grouped-query attention). Exact softmax with
 * scale 1/sqrt(d). Blocked: PDBX_K_ATTN_BLOCK query rows at a time against key blocks of
 * PDBX_K_ATTN_KBLOCK keys, the key block transposed into scratch so the score update is a
 * contiguous, vectorisable axpy (no float reductions); each value row is reused across the
 * query block. (sequence, head) pairs are split over `threads` POSIX threads (1: the caller's).
 * scratch: pdbx_k_attention_scratch_floats(seq_len, d, threads) floats. */
#define PDBX_K_ATTN_BLOCK 32
#define PDBX_K_ATTN_KBLOCK 64
size_t pdbx_k_attention_scratch_floats(int64_t seq_len, int64_t d, int threads);
void pdbx_k_attention_causal(const float *q, const float *k, const float *v,
                             int64_t seqs, int64_t seq_len, int64_t heads, int64_t kv_heads,
                             int64_t d, int threads, float *scratch, float *out);

/* float <-> bfloat16 (round to nearest even; NaN kept quiet). */
uint16_t pdbx_k_f32_to_bf16(float f);
float pdbx_k_bf16_to_f32(uint16_t b);

/* Deterministic pseudo-random fill in [-scale, scale] (xorshift; seed picks the sequence). */
void pdbx_k_fill_uniform(float *x, size_t n, float scale, uint64_t seed);

#endif
