/* engine_infer.h: the inference phase of a launch (spec `tokens` and `kv_cache`, docs/engine.md
 * "Inference phase"), after the training points and before the collectives sweep.
 *
 * For each distinct TP degree t of the configs this launch measures (tp*pp*dp == world), in
 * ascending order, every rank measures the same shard of one TP rank at the same time (the load
 * of a TP group; the element-wise max over the ranks of each statistic is recorded, as a
 * point's cells are):
 *  - tokens rows: per token count T, the backend prepares one layer of the point (mbs 1,
 *    seq_len T, tp t, forward only) with the ops of pdbx_tokens_ops (every op but attn_core and
 *    the TP all-reduces; generic over the op list), and each op (the fused leader of a group
 *    with fused_projections, its time split by FLOP share as in the points) is timed alone:
 *    fixed repetition `warmup` executions discarded and `steps` kept; adaptive one warm-up
 *    execution, then engine_adaptive.h's rule. Rank 0 writes one infer_tokens event per row.
 *  - kv rows: each row of pdbx_kv_rows with the backend's attn_kv (heads / t query heads,
 *    kv heads / t, at least 1), the same repetition; one infer_attn event per row.
 * A row whose prepare or kernel fails on any rank is left out with a warning naming it (an OOM
 * leaves out the larger rows of that TP degree and kind too); a device that became unusable
 * ends the phase and the run (-1). The ranks agree on cancellation before every row.
 */
#ifndef PDBX_ENGINE_INFER_H
#define PDBX_ENGINE_INFER_H

#include "engine/engine_sweep.h"

/* The distinct TP degrees of the configs of a world of `world` ranks, ascending; returns the
 * count (at most PDBX_MAX_CONFIGS). */
int pdbx_infer_tps(const pdbx_spec *sp, int world, int *tps);
/* The work units (store/progress.h) of the inference phase of a launch of `world` ranks. */
double pdbx_infer_work(const pdbx_spec *sp, int world);
/* 0 when it ran, was skipped (no grid) or cancelled (e->cancelled); -1 when a device became
 * unusable (err says why). */
int pdbx_infer_sweep(pdbx_engine *e, char *err, size_t errlen);

#endif
