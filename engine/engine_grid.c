/* engine_grid.c: rank -> (tp, dp, pp) coordinates and the TP, DP, PP, EP and EDP groups, Megatron
 * order (engine_grid.h). */
#include "engine/engine_grid.h"

#include <stddef.h>

int pdbx_grid_coords_of(int world_rank, int tp, int pp, int dp, pdbx_grid_coords *out)
{
    if (tp < 1 || pp < 1 || dp < 1 || world_rank < 0 || world_rank >= tp * pp * dp)
        return -1;
    out->tp = tp;
    out->dp = dp;
    out->pp = pp;
    out->tp_rank = world_rank % tp;
    out->dp_rank = (world_rank / tp) % dp;
    out->pp_rank = world_rank / (tp * dp);
    return 0;
}

int pdbx_grid_rank_of(int tp, int pp, int dp, int tp_rank, int dp_rank, int pp_rank)
{
    (void)pp;
    return tp_rank + tp * (dp_rank + dp * pp_rank);
}

/* The first world rank of world_rank's EP group and its EP rank: ep consecutive ranks of the
 * stage (engine_grid.h). -1 when ep does not divide the stage's tp * dp ranks. */
static int ep_first(const pdbx_grid_coords *c, int ep, int *ep_rank)
{
    const int stage = c->tp * c->dp;
    if (ep < 1 || stage % ep != 0)
        return -1;
    const int i = c->tp_rank + c->tp * c->dp_rank;
    if (ep_rank)
        *ep_rank = i % ep;
    return c->pp_rank * stage + i / ep * ep;
}

int pdbx_grid_group(int world_rank, int tp, int pp, int dp, int ep, pdbx_grid_kind kind, int *out,
                    int *my_index)
{
    pdbx_grid_coords c;
    if (ep < 1 || pdbx_grid_coords_of(world_rank, tp, pp, dp, &c) != 0)
        return -1;
    int n = 0;
    switch (kind) {
    case PDBX_GRID_EP: {
        int me = 0;
        const int first = ep_first(&c, ep, &me);
        if (first < 0)
            return -1;
        for (int i = 0; i < ep; i++)
            out[n++] = first + i;
        if (my_index)
            *my_index = me;
        break;
    }
    case PDBX_GRID_EDP: {
        int me = 0;
        const int first = ep_first(&c, ep, &me), stage = tp * dp;
        if (first < 0)
            return -1;
        const int base = c.pp_rank * stage + me;   /* the stage's first rank of this EP rank */
        for (int i = base; i < (c.pp_rank + 1) * stage; i += ep)
            out[n++] = i;
        if (my_index)
            *my_index = (first - c.pp_rank * stage) / ep;
        break;
    }
    case PDBX_GRID_TP:
        for (int i = 0; i < tp; i++)
            out[n++] = pdbx_grid_rank_of(tp, pp, dp, i, c.dp_rank, c.pp_rank);
        if (my_index)
            *my_index = c.tp_rank;
        break;
    case PDBX_GRID_DP:
        for (int i = 0; i < dp; i++)
            out[n++] = pdbx_grid_rank_of(tp, pp, dp, c.tp_rank, i, c.pp_rank);
        if (my_index)
            *my_index = c.dp_rank;
        break;
    case PDBX_GRID_PP:
        for (int i = 0; i < pp; i++)
            out[n++] = pdbx_grid_rank_of(tp, pp, dp, c.tp_rank, c.dp_rank, i);
        if (my_index)
            *my_index = c.pp_rank;
        break;
    default:
        return -1;
    }
    return n;
}

int pdbx_grid_color(int world_rank, int tp, int pp, int dp, int ep, pdbx_grid_kind kind)
{
    pdbx_grid_coords c;
    if (ep < 1 || pdbx_grid_coords_of(world_rank, tp, pp, dp, &c) != 0)
        return -1;
    /* the group's lowest world rank identifies it */
    switch (kind) {
    case PDBX_GRID_EP:
        return ep_first(&c, ep, NULL);
    case PDBX_GRID_EDP: {
        int me = 0;
        return ep_first(&c, ep, &me) < 0 ? -1 : c.pp_rank * tp * dp + me;
    }
    case PDBX_GRID_TP:
        return pdbx_grid_rank_of(tp, pp, dp, 0, c.dp_rank, c.pp_rank);
    case PDBX_GRID_DP:
        return pdbx_grid_rank_of(tp, pp, dp, c.tp_rank, 0, c.pp_rank);
    case PDBX_GRID_PP:
        return pdbx_grid_rank_of(tp, pp, dp, c.tp_rank, c.dp_rank, 0);
    default:
        return -1;
    }
}

const char *pdbx_grid_kind_name(pdbx_grid_kind k)
{
    switch (k) {
    case PDBX_GRID_TP: return "tp";
    case PDBX_GRID_DP: return "dp";
    case PDBX_GRID_PP: return "pp";
    case PDBX_GRID_EP: return "ep";
    case PDBX_GRID_EDP: return "edp";
    default: return "?";
    }
}
