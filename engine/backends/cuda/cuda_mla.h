/* cuda_mla.h: the cuda backend's attention variants beyond a Llama's, run as the cpu backend
 * runs them (cpu_compute.c, cpu_mla.c, cpu_mla_bwd.c; docs/engine.md):
 *  - qwen3's per-head q/k norm (attn_qk_norm): every head of q and of k RMS-normalised over
 *    head_dim in place, q's weight then k's in one [2, head_dim] buffer shared by the layers;
 *  - DeepSeek's multi-head latent attention (HF DeepseekV2Attention's data flow, sequence-major
 *    rows as every cuda buffer):
 *      attn_q_a xn -> qa [T, rq]; attn_q_norm qa -> qan; attn_q_b qan -> q [T, H, nope + rope]
 *        (q_lora_rank 0: attn_q xn -> q, cuda_backend.c)
 *      attn_kv_a xn -> kva [T, rkv + rope]; attn_kv_norm kva's latent -> kvn [T, rkv];
 *      attn_kv_b kvn -> kvb [T, H, nope + dv]
 *      attn_rope: q's rope parts and kva's k_pe rotated in place (ck_rope on the slice), then
 *        k [T, H, nope + rope] and v [T, H, dv] gathered (ck_mla_kv_gather)
 *      attn_core: kv_heads = H, head dims nope + rope (scale 1/sqrt(nope + rope)) and dv
 *        (cuda_attention_opts.v_dim, the unfused path); attn_o reads [T, H dv]
 *    q_a, kv_a and their norms replicated over TP, q_b, kv_b column-parallel over the heads.
 * Each bwd is its forward's backward (cpu_mla_bwd.c's chain): the GEMMs' dgrad and wgrad, the
 * norms' backward (ck_rmsnorm_strided_bwd, dweight fp32 into the shared norm weights'
 * gradient), attn_rope's transpose (ck_mla_kv_scatter, then the inverse rotations).
 */
#ifndef PDBX_CUDA_MLA_H
#define PDBX_CUDA_MLA_H

#include <stddef.h>

#include "engine/backends/cuda/cuda_backend.h"

/* Sets d's qk_norm and mla fields from p's model (MLA: kv_heads = heads, rot = rope) after
 * cuda_point_dims set the rest; -1 with a message for what the kernels cannot run (MLA with
 * fused projections, a rope part of fewer than 2 dims). Pure. */
int cuda_mla_kinds(const pdbx_point_shapes *p, cuda_dims *d, char *err, size_t errlen);
/* The elements of slot b (B_*), w (W_*) or g (G_*) of this file's buffers (cuda_backend.h's
 * enums; pass -1 for the other two), 0 for another slot. Pure (cuda_bufs.c). */
size_t cuda_mla_elems(const cuda_dims *d, int b, int w, int g);
/* Whether op at d is this file's: attn_qk_norm with qk_norm; MLA's ops and attn_rope with mla. */
int cuda_mla_runs(const cuda_dims *d, pdbx_op op);
/* Enqueue op's forward or backward on c's stream (c->point prepared; W the layer's weights of
 * this execution, cuda_layer_weights). */
int cuda_mla_fwd(pdbx_compute *c, pdbx_op op, void **W, char *err, size_t errlen);
int cuda_mla_bwd(pdbx_compute *c, pdbx_op op, void **W, char *err, size_t errlen);

#endif
