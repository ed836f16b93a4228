/* advise_comm.h: the time of one of a training step's collectives at a message size and a
 * group placement, from a run's own measurements.
 *
 * Contract:
 *  - kind is a store/runtable.h PDBX_RT_COMM_*: TP all-reduce (group tp), PP send/recv
 *    (group 2: adjacent stages), DP all-reduce (group dp).
 *  - Sources: the points' comm cells of that kind and group size (tp_allreduce, pp_sendrecv,
 *    dp_allreduce, each measured at its point's message size), and the collectives sweep
 *    (all_reduce for TP and DP, send_recv for PP) with nranks == group.
 *  - Placement: inter is 1 when the job's group spans nodes. A point cell's placement is
 *    derived from its config and the run's ranks per node (Megatron's rank order, tp fastest,
 *    then dp, then pp), a sweep entry's from spans_nodes. Cells of the asked placement are
 *    preferred; when only the other placement was measured they are used and the note says so.
 *  - Order: TP and PP take the point cells (measured in the step, at the point's size), else
 *    the sweep; DP takes the sweep when its sizes cover the message (a bucketed gradient
 *    all-reduce is bandwidth-bound, the sweep measures the size itself), else the point's
 *    dp_allreduce cell (one Megatron DDP bucket) scaled linearly by bytes, else the sweep.
 *  - Within a source: the exact size; between two measured sizes, linear interpolation in
 *    bytes; outside them, the nearest size's time scaled in proportion to the bytes (what
 *    "scaled linearly by bytes" means here). Every estimate gets a note naming the cell.
 *  - Pure: borrows the run.
 */
#ifndef PDBX_ADVISE_COMM_H
#define PDBX_ADVISE_COMM_H

#include <stddef.h>

#include "engine/advise/advise_cells.h"
#include "store/profiledb.h"

/* 1 when the group whose last rank is last_rank (rank 0 is the first) crosses a node boundary
 * with per_node ranks per node (per_node <= 0: never). */
int pdbx_adv_spans(long last_rank, int per_node);

/* The time of one collective of kind over a group of `group` ranks moving `bytes`, in *ms.
 * Returns how it was obtained (NONE: nothing measured for that kind and group size; note says
 * so). note receives the estimate's description for anything but an exact measured cell of
 * the asked placement. */
pdbx_adv_how pdbx_adv_comm_time(const pdbx_run *run, int kind, int group, double bytes, int inter,
                                pdbx_stat_kind stat, double *ms, char *note, size_t len);

/* The time of one `coll` ("reduce_scatter", "all_gather": the distributed optimizer's) of `bytes`
 * (nccl-tests' S) over `group` ranks from the collectives sweep alone (in place, nranks ==
 * group; the asked placement, else the other with a note), interpolated between its sizes or
 * scaled linearly by bytes outside them. NONE when the sweep has no such entry (the caller
 * falls back on the all-reduce, and says so). */
pdbx_adv_how pdbx_adv_sweep_time(const pdbx_run *run, const char *coll, int group, double bytes, int inter,
                                 pdbx_stat_kind stat, double *ms, char *note, size_t len);

#endif
