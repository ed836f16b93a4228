/* engine_groups.h: the communicators of the rank grid, as MPI communicators and as the comm
 * backend's groups.
 *
 * A config (tp, pp, dp, ep) gets three groups per rank, TP, PP and DP, in Megatron's order, and
 * at ep > 1 a fourth, its EP group (engine_grid.h says which ranks share each; at ep 1 the EP
 * slot stays empty: nothing crosses ranks). The EDP group (the experts' gradient reduction) is
 * built only on request: only validate's iteration reduces gradients over it. A collectives-sweep group is any MPI
 * communicator the caller split. Group creation is collective within the group (the backend
 * may exchange ids through the bcast callback over the MPI communicator); on failure what was
 * built is freed and err holds one line.
 */
#ifndef PDBX_ENGINE_GROUPS_H
#define PDBX_ENGINE_GROUPS_H

#include "engine/engine_sweep.h"
#include "engine/engine_grid.h"

typedef struct {
    int tp, pp, dp, ep;
    MPI_Comm mpi[PDBX_GRID_KINDS]; /* indexed by pdbx_grid_kind */
    pdbx_group *g[PDBX_GRID_KINDS];   /* g[PDBX_GRID_EP] NULL at ep 1; g[PDBX_GRID_EDP] NULL
                                       * unless pdbx_groups_build_edp built it */
} pdbx_cfg_groups;

/* Builds the TP, PP and DP groups of config par for this rank, and its EP group when
 * par's ep > 1. 0 or -1. */
int pdbx_groups_build(pdbx_engine *e, pdbx_cfg_groups *cg, const pdbx_parallel *par, char *err,
                      size_t errlen);
/* Adds the EDP group to groups pdbx_groups_build made (collective over the world: every rank
 * calls it, with the same config). 0 or -1; pdbx_groups_free frees it with the others. */
int pdbx_groups_build_edp(pdbx_engine *e, pdbx_cfg_groups *cg, char *err, size_t errlen);
void pdbx_groups_free(pdbx_engine *e, pdbx_cfg_groups *cg);

/* The comm backend's group over *mc (this rank is `me` of n; mc must outlive the group). */
int pdbx_group_open(pdbx_engine *e, MPI_Comm *mc, int me, int n, pdbx_group **out, char *err,
                    size_t errlen);

#endif
