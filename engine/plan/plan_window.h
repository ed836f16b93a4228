/* plan_window.h: the attention core under a sliding window and soft-capping, as the planner
 * counts it (part of the planner's interface, plan.h; pure, no I/O; plan_shapes.c): the model's
 * and the kernels' FLOPs and visited pairs of the banded core, and each profiled layer's window
 * and cap.
 */
#ifndef PDBX_PLAN_WINDOW_H
#define PDBX_PLAN_WINDOW_H

#include <stdint.h>

#include "store/ops.h"

struct pdbx_model_s;
typedef struct pdbx_model_s pdbx_model;

/* Sliding-window attention (HF sliding_window: query i attends keys i - w < j <= i, the
 * last w tokens itself included; w 0 or >= s: the causal core). pdbx_op_shape_for's attn_core
 * FLOPs are pdbx_attn_core_mean_flops for a model with a window shorter than seq_len.
 * pdbx_attn_window_model_flops: the model's FLOPs of the banded core, 4 b d x the band's area
 * in the s x s square, s w - w^2 / 2 (QK^T and PV, 2 d each per pair), for batch b =
 * sequences x heads: at w 0 or >= s the causal half's s^2 / 2, so it equals
 * pdbx_op_shape.flops's 2 b s^2 d there (the pairs are s w - w (w - 1) / 2, the area's
 * continuous count leaves half the diagonal out, as s^2 / 2 does). 0 for bad arguments. */
double pdbx_attn_window_model_flops(int64_t batch, int64_t s, int64_t d, int64_t window);
/* The (query, key) pairs per (sequence, head) that a kernel computing whole tiles of qtile
 * query rows x ktile keys visits when it skips every tile without a pair of the band: the
 * tiles are aligned at 0 and counted whole (a last partial tile as a full one, as the cuda
 * kernels execute it). qtile = ktile = 1: the band's pairs, s w - w (w - 1) / 2 (s (s + 1) / 2
 * for w 0 or >= s); tile x tile: the cuda flash kernels' (pdbx_attn_core_executed_flops);
 * PDBX_K_ATTN_BLOCK (32) x 1: the cpu kernels' scores (cpu_kernels_attn.h: each query block
 * against the keys from its first row's window start to its last row; 16 x 1 in the cpu
 * backward with soft-capping; their register tiles pad rows to 4 and keys to 16 within a
 * block, not counted). 0 for bad arguments. */
double pdbx_attn_window_visited_pairs(int64_t s, int64_t window, int64_t qtile, int64_t ktile);
/* pdbx_attn_core_executed_flops with a window: unfused, the full s x s still (the mask skips
 * nothing); flash, the whole tiles that hold a pair of the band (4 or 10 x b d x
 * pdbx_attn_window_visited_pairs(s, w, t, t), t the fwd tile or PDBX_FLASH_BWD_TILE): a flash
 * kernel that also skips the tiles left of the band. Window 0 or >= s: equal to
 * pdbx_attn_core_executed_flops. */
double pdbx_attn_core_window_executed_flops(int flash, pdbx_pass pass, int64_t batch, int64_t s,
                                            int64_t d, int64_t tile, int64_t window);
/* The attention core's options for profiled layer `layer` (0 .. layers_profiled - 1) of m at
 * seq_len: *window, the sliding window in tokens (HF sliding_window: query i sees keys
 * i - w < j <= i; 0: full causal, which a window >= seq_len equals), and *softcap, the score
 * soft-capping (arch.attn_softcap; 0: none). Per arch.sliding_window.layers:
 *   PDBX_SW_ALL          every layer windowed (Mistral);
 *   PDBX_SW_ALTERNATING  gemma-2 (HF: layers with layer_idx % 2 == 0 are local): profiled layer
 *                        l is local iff l % 2 == 0, so an even layers_profiled profiles local
 *                        and global layers in the model's proportion (plan_validate.c asks for
 *                        it when the window is shorter than seq_len);
 *   PDBX_SW_SOME         qwen2's max_window_layers: no profiled subset keeps the model's
 *                        proportion in general, so -1 with *window 0 when the window is shorter
 *                        than seq_len (pdbx_arch_refusal refuses such a model); full otherwise.
 * Returns 0, or -1 for a layer out of range or that PDBX_SW_SOME case. Pure. */
int pdbx_attn_opts_for_layer(const pdbx_model *m, int layers_profiled, int layer, int seq_len,
                             int64_t *window, double *softcap);
/* The attention core's model FLOPs per pass over the profiled layers' mean (pdbx_op_shape's
 * attn_core flops with each layer's window: pdbx_attn_window_model_flops, x 2.5 for bwd as the
 * causal count), for batch = sequences x heads of head dim d. */
double pdbx_attn_core_mean_flops(const pdbx_model *m, int layers_profiled, int seq_len,
                                 int64_t batch, int64_t d);

#endif
