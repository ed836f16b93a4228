/* engine_validate.h: pdbx-engine's validate mode, a real training iteration of the profiled
 * model (what `pdbx validate` compares the advise model's estimate with; docs/engine.md).
 *
 *   mpirun -np TP*PP*DP pdbx-engine --spec FILE --validate TPxPPxDP[xEP] --mbs M --gbs B
 *                                   [--layers L] [--iters N] --out FILE
 *
 * The ranks form Megatron's grid (engine_grid.h). Stage s of PP holds L / pp decoder layers
 * (the backend's prepare() sizes them with the config's tp and mbs, fwd and bwd buffers, real
 * values); stage 0 also runs embed, the last stage final_norm and lm_head. One iteration runs
 * num_mb = gbs / (mbs * dp) micro-batches under 1F1B (engine/plan/plan_pipeline.h): a forward
 * runs every op of the spec's ops in execution order with the compute backend's run_op, and the
 * TP all-reduce of [mbs*seq, h] after attn_o and mlp_down (comm backend, TP group); a backward
 * runs every op's bwd in reverse order with the same two all-reduces (the backward of the
 * column-parallel inputs); activations go up and gradients come down as [mbs, seq, h] in the
 * run's dtype by point-to-point send/recv over a two-rank group per stage boundary and
 * direction; after its last backward a stage all-reduces its parameter gradients over DP in
 * fp32 (the planner's parameter count of a stage of L / pp layers, Megatron's DDP buckets).
 * At EP > 1 (a MoE model) each rank holds E / ep experts (the backend's prepare with the
 * config's ep, as a sweep's point) and every MoE layer runs ep_dispatch and ep_combine as
 * all-to-alls on the EP group, forward and backward, of the planner's message (plan_comm.h).
 *
 * Timing: every iteration starts from a barrier of all ranks and ends at this rank's last
 * call (the backend's step span); the iteration's time is the max over the ranks. One warm-up
 * iteration, then `iters` measured. Rank 0 writes the result JSON to --out (durably):
 * tp, pp, dp, mbs, gbs, layers, num_mb, iterations_ms[], median_ms, min_ms, max_ms, backend,
 * device, and `parts`: the slowest rank's split of the last iteration (fwd, bwd, tp, pp, dp
 * and the waits of its send/recv, ms); at EP > 1 also ep, ep_bytes and parts.ep_comm_ms.
 */
#ifndef PDBX_ENGINE_VALIDATE_H
#define PDBX_ENGINE_VALIDATE_H

#include <stddef.h>

#include "engine/engine_sweep.h"

#define PDBX_VALIDATE_ITERS_DEFAULT 3
#define PDBX_VALIDATE_ITERS_MAX 1000

typedef struct {
    int tp, pp, dp, mbs, gbs;
    int layers;            /* 0: max(spec layers_profiled, pp) rounded up to a multiple of pp */
    int iters;             /* 0: PDBX_VALIDATE_ITERS_DEFAULT */
    const char *out_path;
    int ep;                /* 0 or 1: no expert parallelism; else divides tp x dp (a MoE model) */
} pdbx_validate_args;

/* "TPxPPxDP" or "TPxPPxDPxEP" into v->tp, pp, dp, ep (each 1..4096; ep 1 without it). 0, or -1
 * with a one-line message. */
int pdbx_validate_parse_config(const char *text, pdbx_validate_args *v, char *err, size_t errlen);
/* Fills the defaults of v for spec and checks v against it and the world size: tp*pp*dp ==
 * world, gbs % (mbs * dp) == 0, layers % pp == 0. Pure. 0, or -1 with one line naming the
 * field, its value and what is allowed. */
int pdbx_validate_resolve(pdbx_validate_args *v, const pdbx_spec *spec, int world, char *err,
                          size_t errlen);
/* The micro-batches of one iteration: gbs / (mbs * dp). */
int pdbx_validate_num_mb(const pdbx_validate_args *v);

/* Runs the validation on every rank (collective); rank 0 writes the result. 0, or -1 with err
 * (rank 0 holds the agreed message). */
int pdbx_validate_run(pdbx_engine *e, const pdbx_validate_args *v, char *err, size_t errlen);

#endif
