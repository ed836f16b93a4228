/* engine_groups.h: the communicators of the rank grid, as MPI communicators and as the comm
 * backend's groups.
 *
 * A config (tp, pp, dp) gets three groups per rank, TP, PP and DP, in Megatron's order
 * (engine_grid.h says which ranks share each). A collectives-sweep group is any MPI
 * communicator the caller split. Group creation is collective within the group (the backend
 * may exchange ids through the bcast callback over the MPI communicator); on failure what was
 * built is freed and err holds one line.
 */
#ifndef PDBX_ENGINE_GROUPS_H
#define PDBX_ENGINE_GROUPS_H

#include "engine/engine_sweep.h"
#include "engine/engine_grid.h"

typedef struct {
    int tp, pp, dp;
    MPI_Comm mpi[3];               /* indexed by pdbx_grid_kind */
    pdbx_group *g[3];
} pdbx_cfg_groups;

/* Builds the TP, PP and DP groups of config (tp, pp, dp) for this rank. 0 or -1. */
int pdbx_groups_build(pdbx_engine *e, pdbx_cfg_groups *cg, int tp, int pp, int dp, char *err,
                      size_t errlen);
void pdbx_groups_free(pdbx_engine *e, pdbx_cfg_groups *cg);

/* The comm backend's group over *mc (this rank is `me` of n; mc must outlive the group). */
int pdbx_group_open(pdbx_engine *e, MPI_Comm *mc, int me, int n, pdbx_group **out, char *err,
                    size_t errlen);

#endif
