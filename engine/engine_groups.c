/* engine_groups.c: communicators of the rank grid (engine_groups.h). */
#include "engine/engine_groups.h"

#include <stdio.h>
#include <stdlib.h>

#include "engine/engine_watch.h"

static int bcast_cb(void *buf, size_t len, int root, void *ctx)
{
    return MPI_Bcast(buf, (int)len, MPI_BYTE, root, *(MPI_Comm *)ctx) == MPI_SUCCESS ? 0 : -1;
}

int pdbx_group_open(pdbx_engine *e, MPI_Comm *mc, int me, int n, pdbx_group **out, char *err,
                    size_t errlen)
{
    pdbx_group_desc d = {
        .group_rank = me, .group_size = n, .world_rank = e->rank, .world_size = e->size,
        .mpi_comm = mc, .bcast = bcast_cb, .bcast_ctx = mc,
    };
    *out = NULL;
    pdbx_watch_begin("group_create", -1);
    int rc = e->be.comm->group_create(e->comm, &d, out, err, errlen);
    pdbx_watch_end();
    return rc;
}

void pdbx_groups_free(pdbx_engine *e, pdbx_cfg_groups *cg)
{
    for (int k = 0; k < PDBX_GRID_KINDS; k++) {
        if (cg->g[k])
            e->be.comm->group_destroy(e->comm, cg->g[k]);
        cg->g[k] = NULL;
        if (cg->mpi[k] != MPI_COMM_NULL)
            MPI_Comm_free(&cg->mpi[k]);
        cg->mpi[k] = MPI_COMM_NULL;
    }
}

/* One kind's MPI communicator and backend group. */
static int build_one(pdbx_engine *e, pdbx_cfg_groups *cg, pdbx_grid_kind k, int *members,
                     char *err, size_t errlen)
{
    int color = pdbx_grid_color(e->rank, cg->tp, cg->pp, cg->dp, cg->ep, k);
    int me = 0;
    int n = pdbx_grid_group(e->rank, cg->tp, cg->pp, cg->dp, cg->ep, k, members, &me);
    if (color < 0 || n < 1) {
        snprintf(err, errlen, "config tp %d pp %d dp %d ep %d does not fit %d ranks", cg->tp, cg->pp,
                 cg->dp, cg->ep, e->size);
        return -1;
    }
    pdbx_watch_begin("comm_split", -1);
    int rc = MPI_Comm_split(MPI_COMM_WORLD, color, me, &cg->mpi[k]);
    pdbx_watch_end();
    if (rc != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Comm_split for the %s group failed", pdbx_grid_kind_name(k));
        return -1;
    }
    return pdbx_group_open(e, &cg->mpi[k], me, n, &cg->g[k], err, errlen);
}

int pdbx_groups_build(pdbx_engine *e, pdbx_cfg_groups *cg, const pdbx_parallel *par, char *err,
                      size_t errlen)
{
    cg->tp = par->tp;
    cg->pp = par->pp;
    cg->dp = par->dp;
    cg->ep = pdbx_par_ep(par);
    for (int k = 0; k < PDBX_GRID_KINDS; k++) {
        cg->mpi[k] = MPI_COMM_NULL;
        cg->g[k] = NULL;
    }
    /* a group has at most the world's ranks (a DP group alone may hold all of them) */
    int *members = malloc(sizeof(int) * (size_t)e->size);
    if (!members) {
        snprintf(err, errlen, "out of memory for the groups of %d ranks", e->size);
        return -1;
    }
    int rc = 0;
    /* the EP group only at ep > 1 (every rank splits alike: ep is the config's); the EDP group
     * on request (pdbx_groups_build_edp) */
    for (int k = 0; k < PDBX_GRID_KINDS && rc == 0; k++)
        if ((k != PDBX_GRID_EP || cg->ep > 1) && k != PDBX_GRID_EDP)
            rc = build_one(e, cg, (pdbx_grid_kind)k, members, err, errlen);
    free(members);
    if (rc != 0)
        pdbx_groups_free(e, cg);
    return rc;
}

int pdbx_groups_build_edp(pdbx_engine *e, pdbx_cfg_groups *cg, char *err, size_t errlen)
{
    int *members = malloc(sizeof(int) * (size_t)e->size);
    if (!members) {
        snprintf(err, errlen, "out of memory for the groups of %d ranks", e->size);
        return -1;
    }
    int rc = build_one(e, cg, PDBX_GRID_EDP, members, err, errlen);
    free(members);
    return rc;
}
