/* engine_grid.h: how world ranks map to TP, DP, PP and EP groups. Pure functions (no MPI).
 *
 * Order: Megatron-LM's RankGenerator with its default order "tp-cp-ep-dp-pp" (the first name
 * varies fastest). pdbx has no context parallelism (cp = 1), and its dense layers see no EP, so
 *     world_rank = tp_rank + tp * (dp_rank + dp * pp_rank)
 * TP groups are runs of tp consecutive ranks (the fastest links, one node), a DP group takes
 * every tp-th rank within one pipeline stage, a PP group every (tp*dp)-th rank. World rank 0
 * is (tp 0, dp 0, pp 0); its TP group is the one whose ops the engine records.
 *
 * EP groups (the MoE layers' all-to-all): Megatron's expert RankGenerator with
 * expert_tensor_parallel_size 1, order "tp-ep-dp-pp" over the same world, takes the ep
 * expert-parallel ranks as the fastest-varying after etp = 1: an EP group is ep consecutive
 * ranks of one pipeline stage (stage-local index i = tp_rank + tp * dp_rank, group i / ep, EP
 * rank i % ep), so with TP > 1 it spans the TP ranks first. ep divides tp * dp (the planner
 * checks it); the expert data parallel degree is tp * dp / ep. World rank 0 is EP rank 0, the
 * rank plan_moe.h measures.
 *
 * EDP groups (the experts' gradient reduction, Megatron's expert data parallel group): the
 * ranks of one pipeline stage that hold the same experts, i.e. the same EP rank: stage-local
 * indices i, i + ep, i + 2 ep, ... (tp * dp / ep ranks; one rank when ep = tp * dp).
 */
#ifndef PDBX_ENGINE_GRID_H
#define PDBX_ENGINE_GRID_H

typedef enum {
    PDBX_GRID_TP = 0, PDBX_GRID_DP, PDBX_GRID_PP, PDBX_GRID_EP, PDBX_GRID_EDP, PDBX_GRID_KINDS
} pdbx_grid_kind;

typedef struct {
    int tp, dp, pp;                 /* degrees */
    int tp_rank, dp_rank, pp_rank;  /* this rank's coordinates */
} pdbx_grid_coords;

/* Coordinates of world_rank; -1 when degrees are < 1 or world_rank is outside tp*dp*pp. */
int pdbx_grid_coords_of(int world_rank, int tp, int pp, int dp, pdbx_grid_coords *out);
/* World rank of coordinates (inverse of pdbx_grid_coords_of). */
int pdbx_grid_rank_of(int tp, int pp, int dp, int tp_rank, int dp_rank, int pp_rank);
/* The world ranks of world_rank's group of `kind`, in group-rank order, into out (room for
 * the group's size); returns the group size, or -1 on bad arguments (ep < 1, or an EP group
 * asked for with ep not dividing tp * dp). *my_index gets world_rank's position in the group
 * (may be NULL). ep matters to kinds EP and EDP only. */
int pdbx_grid_group(int world_rank, int tp, int pp, int dp, int ep, pdbx_grid_kind kind, int *out,
                    int *my_index);
/* A colour that is equal for exactly the ranks of one group (for MPI_Comm_split); -1 on bad
 * arguments. */
int pdbx_grid_color(int world_rank, int tp, int pp, int dp, int ep, pdbx_grid_kind kind);
const char *pdbx_grid_kind_name(pdbx_grid_kind k);   /* "tp", "dp", "pp", "ep", "edp" */

#endif
