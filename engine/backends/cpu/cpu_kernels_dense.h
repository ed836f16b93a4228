/* cpu_kernels_dense.h: the cpu backend's kernels for the dense families beside Llama (GPT-2,
 * GPT-NeoX, GPT-J, Gemma; issue 24): LayerNorm, GELU (plain and gated) and learned absolute
 * position embeddings, forward (cpu_kernels_dense.c) and backward (cpu_kernels_dense_bwd.c).
 *
 * Contract (as cpu_kernels.h and cpu_kernels_bwd.h):
 *  - Row-major float32, computed in fp32; no allocation; every element of every output
 *    written, or accumulated where stated. Weight gradients (dw, db, dpos) ACCUMULATE (+=) into
 *    their buffer, as Megatron's gradient-accumulation fusion adds into main_grad; input
 *    gradients (dx, dgate, dup) are overwritten. Outputs do not overlap inputs, except
 *    pdbx_k_pos_embed_add, which works in place.
 *  - Threads: each kernel splits its work over the pool (cpu_threads.h; NULL: the caller alone)
 *    in chunks that pdbx_cpu_pool_for hands out; every output element is computed by one chunk
 *    with the same operations in the same order whatever the pool, so the result does not
 *    depend on the thread count (bit for bit). Inputs below 32768 elements run on the caller.
 *  - Vectorised as cpu_kernels.c (cpu_kernels_vec.h: clones for baseline x86-64, x86-64-v3 and
 *    x86-64-v4; an own exp, erfc and GELU without libm calls, errors stated there).
 *  - Shapes are validated by the caller: rows, cols, n, seq_len >= 1 (a kernel given an empty
 *    shape returns without touching anything).
 */
#ifndef PDBX_CPU_KERNELS_DENSE_H
#define PDBX_CPU_KERNELS_DENSE_H

#include <stdint.h>

#include "engine/backends/cpu/cpu_threads.h"

/* ---- LayerNorm ---------------------------------------------------------------------------- */
/* torch.nn.LayerNorm over the rows of [rows, cols] (biased variance, eps inside the sqrt):
 *   y = (x - mean) * rstd * w + b,  rstd = 1 / sqrt(var + eps);  b may be NULL (no bias).
 * mean[r] and rstd[r] are written when not NULL (the backward's inputs). Two passes over the
 * row (in cache): the mean, then the deviations from it, whose sum corrects the mean and whose
 * squares give the variance, so a row far from zero (mean 1000, spread 1) keeps its digits,
 * where E[x^2] - mean^2 would cancel. */
void pdbx_k_layernorm(pdbx_cpu_pool *pool, const float *x, const float *w, const float *b,
                      int64_t rows, int64_t cols, float eps, float *out, float *mean, float *rstd);

/* LayerNorm backward from the forward's mean and rstd: with xhat = (x - mean) * rstd,
 *   dx = rstd * (w*dy - mean_c(w*dy) - xhat * mean_c(w*dy*xhat))   (overwritten)
 *   dw += sum over rows of dy * xhat;  db += sum over rows of dy     (accumulated; db may be NULL)
 * dw[c] and db[c] are updated row after row in row order (the first row's term added to the
 * buffer's value first). On the caller alone this is one pass over x and dy; over a pool, dx
 * is computed in chunks of rows and dw, db in a second pass in chunks of columns (each column
 * updated by one chunk: no lock, and the same additions in the same order as one thread). */
void pdbx_k_layernorm_bwd(pdbx_cpu_pool *pool, const float *x, const float *w, const float *mean,
                          const float *rstd, const float *dy, int64_t rows, int64_t cols,
                          float *dx, float *dw, float *db);

/* ---- GELU --------------------------------------------------------------------------------- */
/* GELU, exact (x Phi(x) with the normal CDF from erf: torch's default, HF "gelu") or the tanh
 * approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (torch's approximate="tanh";
 * HF "gelu_new", "gelu_pytorch_tanh", "gelu_accurate", and "gelu_fast", whose
 * x 0.7978845608 (1 + 0.044715 x^2) is the same argument factored: the constants agree to
 * 3e-12, far below fp32's resolution, so it is the same function up to rounding).
 * Accuracy (cpu_kernels_vec.h): erf form < 6.5e-7 relative; tanh form < 1.1e-6 relative for
 * |x| <= 3 and < 1.3e-5 everywhere; derivatives < 2.8e-7 absolute. */
typedef enum { PDBX_GELU_ERF = 0, PDBX_GELU_TANH } pdbx_gelu_kind;

/* out[i] = gelu(x[i]) for i < n. */
void pdbx_k_gelu(pdbx_cpu_pool *pool, const float *x, int64_t n, pdbx_gelu_kind kind, float *out);
/* out[i] = gelu(gate[i]) * up[i] (Gemma's gated GELU MLP, as HF's GemmaMLP:
 * act(gate_proj(x)) * up_proj(x)). */
void pdbx_k_gelu_mul(pdbx_cpu_pool *pool, const float *gate, const float *up, int64_t n,
                     pdbx_gelu_kind kind, float *out);
/* dx[i] = dout[i] * gelu'(x[i]) (overwritten). */
void pdbx_k_gelu_bwd(pdbx_cpu_pool *pool, const float *x, const float *dout, int64_t n,
                     pdbx_gelu_kind kind, float *dx);
/* Backward of out = gelu(g) * u: dgate = dout * u * gelu'(g), dup = dout * gelu(g) (both
 * overwritten; gelu(g) recomputed, within the forward's error of it but not always the same
 * bits: the compiler contracts the shared terms into FMAs differently when the derivative is
 * computed beside it). */
void pdbx_k_gelu_mul_bwd(pdbx_cpu_pool *pool, const float *gate, const float *up, const float *dout,
                         int64_t n, pdbx_gelu_kind kind, float *dgate, float *dup);

/* The kind of a HuggingFace activation name (config.json's hidden_act, hidden_activation or
 * activation_function): "gelu", "gelu_python" -> PDBX_GELU_ERF; "gelu_new",
 * "gelu_pytorch_tanh", "gelu_fast", "gelu_accurate" -> PDBX_GELU_TANH; returns 0 and sets
 * *kind. -1 (kind untouched) for every other name, the GELU variants that are other functions
 * among them: "quick_gelu" (x sigmoid(1.702 x)) and "gelu_10" (clipped to [-10, 10]). NULL
 * is not a GELU. */
int pdbx_gelu_kind_of(const char *hf_name, pdbx_gelu_kind *kind);

/* ---- learned absolute position embeddings ---------------------------------------------- */
/* GPT-2's wpe, added in place to the token embeddings: x[r, :] += pos_table[r % seq_len, :] for
 * the rows of [rows, cols] (rows = sequences x seq_len, the cpu backend's token order; position
 * r % seq_len, as HF GPT-2's position_ids = arange(seq_len) without a cache). */
void pdbx_k_pos_embed_add(pdbx_cpu_pool *pool, float *x, const float *pos_table, int64_t rows,
                          int64_t cols, int64_t seq_len);
/* Its backward: dpos[p, :] += sum over the rows r with r % seq_len == p of dx[r, :]
 * (accumulated, fp32, [seq_len, cols]), in row order. Split over tiles of dpos (a block of
 * positions x a block of columns): each dpos element belongs to one tile, so it needs no lock
 * and the result does not depend on the thread count. */
void pdbx_k_pos_embed_bwd(pdbx_cpu_pool *pool, const float *dx, int64_t rows, int64_t cols,
                          int64_t seq_len, float *dpos);

#endif
