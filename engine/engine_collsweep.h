/* engine_collsweep.h: the collectives sweep (spec `collectives`, sizes `coll_sizes`).
 *
 * For every power-of-two group of the first g ranks, g = 2..world: all_reduce, all_gather,
 * reduce_scatter, send_recv and all_to_all at every size (all_gather and reduce_scatter in
 * place and out of place, all_to_all out of place), warmup executions, one calibration execution that sets how many executions back
 * to back make a sample (the group's slowest, so every member runs the same count), then the
 * measured samples, each after a barrier of the group, each the mean per execution; the max
 * over the group's ranks per statistic goes to rank 0, which writes one `coll` event per
 * (collective, size, placement). Every rank takes part in every step that
 * involves the world (the split, the agreement on the group, the barrier after it), members or
 * not. When creating a group fails on any rank, all ranks learn it (an agreed status, never a
 * wait on a rank that gave up), rank 0 writes a warning naming the group and the reason, and
 * the sweep stops there: the run's points are unaffected. Cancellation is agreed after each
 * collective within the group and after each group across the world.
 */
#ifndef PDBX_ENGINE_COLLSWEEP_H
#define PDBX_ENGINE_COLLSWEEP_H

#include "engine/engine_sweep.h"

/* How many `coll` events the sweep makes on `world` ranks placed on `nodes` distinct hosts
 * when every group is created (the progress heartbeat counts them as work). */
int pdbx_coll_sweep_count(const pdbx_spec *sp, int world, int nodes);
/* Executions back to back per sample for a collective whose slowest calibration execution
 * over the group took `ms`: enough for a sample of >= 1 ms, between 1 and 100 (100 when ms is
 * not a positive number). */
int pdbx_coll_sweep_iters(double ms);
/* The distinct hosts of this launch's ranks (from the host names every rank reported). */
int pdbx_coll_sweep_nodes(const pdbx_engine *e);
/* 0 when it ran, stopped with a warning, or was skipped; -1 on a fatal error (no memory). */
int pdbx_coll_sweep(pdbx_engine *e);

#endif
