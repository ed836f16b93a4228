/* cpu_kernels_mla.h: the cpu backend's kernels of DeepSeek's multi-head latent attention (MLA,
 * HF DeepseekV2Attention) beside the shared ones (GEMMs through OpenBLAS, pdbx_k_rmsnorm,
 * pdbx_k_rope, the attention core with pdbx_attn_opts.dv).
 *
 * Layouts (row-major fp32, one row per token, rows = sequences x seq_len, row r at position
 * r % seq_len), with H heads, per head nope + rope dims of q and k and dv of v:
 *   q    [rows, H, nope + rope]   each head's no-position part first, then its rope part
 *                                 (HF: q_nope, q_pe = split(q, [nope, rope]))
 *   kva  [rows, rkv + rope]       kv_a's output: the latent (rkv), then k_pe, ONE rope head
 *                                 shared by every head
 *   kvb  [rows, H, nope + dv]     kv_b's output: each head's k_nope, then its v
 *   k    [rows, H, nope + rope]   k_nope of the head, then the shared (rotated) k_pe
 *   v    [rows, H, dv]
 *
 * Contract (as cpu_kernels.h and cpu_kernels_bwd.h): no allocation, every element of every
 * output written (or accumulated where stated), shapes validated by the caller; chunks of whole
 * rows over the pool, each element by one chunk in a fixed order, so the bits do not depend on
 * the pool.
 */
#ifndef PDBX_CPU_KERNELS_MLA_H
#define PDBX_CPU_KERNELS_MLA_H

#include <stdint.h>

#include "engine/backends/cpu/cpu_threads.h"

typedef struct {
    int64_t heads;            /* H: the rank's heads */
    int64_t nope, rope, dv;   /* qk_nope_head_dim, qk_rope_head_dim, v_head_dim */
    int64_t rkv;              /* kv_lora_rank */
} pdbx_mla_dims;

/* RMSNorm (pdbx_k_rmsnorm's arithmetic, bit for bit) of the first cols elements of rows of
 * stride ldx into rows of stride ldy: kv_norm normalises kv_a's latent in place in its
 * [rows, rkv + rope] rows (HF: kv_a_layernorm(split(kv_a, [rkv, rope])[0])). Elements of x
 * and y past cols in each row are neither read nor written. */
void pdbx_k_rmsnorm_strided(pdbx_cpu_pool *pool, const float *x, int64_t ldx, const float *weight,
                            int64_t rows, int64_t cols, float eps, float *y, int64_t ldy);
/* Its backward (pdbx_k_rmsnorm_bwd's, bit for bit): dx (stride lddx, the first cols elements
 * of each row overwritten, the rest untouched) from x (stride ldx) and dy (stride ldy); dw
 * accumulated. One thread (dw is a sum over the rows in row order, as pdbx_k_rmsnorm_bwd's). */
void pdbx_k_rmsnorm_strided_bwd(const float *x, int64_t ldx, const float *weight, const float *dy,
                                int64_t ldy, int64_t rows, int64_t cols, float eps, float *dx,
                                int64_t lddx, float *dw);

/* MLA's attn_rope: the rotary embedding of q's rope part of every head and of the shared k_pe,
 * in place (pdbx_k_rope's rotate-half over rope dims with tables of rope dims: HF's
 * apply_rotary_pos_emb(q_pe, k_pe)), then k and v gathered out of kvb and kva:
 *   k[r, h] = (kvb[r, h, :nope], kva[r, rkv:]),  v[r, h] = kvb[r, h, nope:]
 * (HF: key_states = cat(k_nope, k_pe.expand(H)); value_states = split(kv, [nope, dv])[1]). */
void pdbx_k_mla_rope_kv(pdbx_cpu_pool *pool, const pdbx_mla_dims *m, int64_t rows, int64_t seq_len,
                        const float *cos_t, const float *sin_t, float *q, float *kva,
                        const float *kvb, float *k, float *v);
/* Its backward, the transpose of that linear map: dq's rope part of every head rotated back in
 * place; dkvb [rows, H, nope + dv] written from dk's nope parts and dv; dkva's k_pe columns
 * [rows, rkv .. rkv + rope) written with the sum over the heads of dk's rope parts (in head
 * order), rotated back; dkva's latent columns untouched (kv_norm's backward writes them). */
void pdbx_k_mla_rope_kv_bwd(pdbx_cpu_pool *pool, const pdbx_mla_dims *m, int64_t rows,
                            int64_t seq_len, const float *cos_t, const float *sin_t, float *dq,
                            const float *dk, const float *dv, float *dkva, float *dkvb);

#endif
