/* comm_mpi.c: the `mpi` comm backend (see comm_mpi.h). */
#include "engine/comm_mpi.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct pdbx_comm {
    char version[128];
};

struct pdbx_group {
    MPI_Comm comm;
    int rank, size;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int mpi_init(pdbx_compute *compute, pdbx_comm **out, char *err, size_t errlen)
{
    (void)compute;
    pdbx_comm *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "mpi comm: out of memory");
        return PDBX_EOOM;
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS)
        snprintf(lib, sizeof lib, "MPI (unknown version)");
    lib[strcspn(lib, ",\n")] = '\0';          /* "Open MPI v4.1.4, package: ..." -> first part */
    snprintf(m->version, sizeof m->version, "%.120s", lib);
    *out = m;
    return 0;
}

static void mpi_fini(pdbx_comm *m)
{
    free(m);
}

static const char *mpi_version(pdbx_comm *m)
{
    return m->version;
}

static int mpi_group_create(pdbx_comm *m, const pdbx_group_desc *desc, pdbx_group **out,
                            char *err, size_t errlen)
{
    (void)m;
    if (!desc->mpi_comm) {
        snprintf(err, errlen, "mpi comm: group without an MPI communicator");
        return -1;
    }
    pdbx_group *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "mpi comm: out of memory");
        return PDBX_EOOM;
    }
    g->comm = *(MPI_Comm *)desc->mpi_comm;
    MPI_Comm_rank(g->comm, &g->rank);
    MPI_Comm_size(g->comm, &g->size);
    *out = g;
    return 0;
}

static void mpi_group_destroy(pdbx_comm *m, pdbx_group *g)
{
    (void)m;
    free(g);   /* the communicator belongs to the engine */
}

static int mpi_fail(int rc, const char *what, char *err, size_t errlen)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "error %d", rc);
    snprintf(err, errlen, "mpi comm: %s failed: %s", what, msg);
    return -1;
}

static int mpi_run(pdbx_comm *m, pdbx_group *g, pdbx_coll coll, void *buf, size_t bytes,
                   double *ms, char *err, size_t errlen)
{
    (void)m;
    const int n = g->size;
    int rc = MPI_SUCCESS;
    double t0 = now_ms();
    switch (coll) {
    case PDBX_COLL_ALL_REDUCE:
        rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)(bytes / sizeof(float)), MPI_FLOAT, MPI_SUM,
                           g->comm);
        break;
    case PDBX_COLL_ALL_GATHER:
        rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf,
                           (int)(bytes / sizeof(float) / (size_t)n), MPI_FLOAT, g->comm);
        break;
    case PDBX_COLL_REDUCE_SCATTER: {
        /* in place: the rank's block lands at the front of buf */
        rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, buf, (int)(bytes / sizeof(float) / (size_t)n),
                                      MPI_FLOAT, MPI_SUM, g->comm);
        break;
    }
    case PDBX_COLL_SEND_RECV: {
        int count = (int)(bytes / sizeof(float));
        int r = g->rank;
        if (r % 2 == 0 && r + 1 < n)
            rc = MPI_Send(buf, count, MPI_FLOAT, r + 1, 7, g->comm);
        else if (r % 2 == 1)
            rc = MPI_Recv(buf, count, MPI_FLOAT, r - 1, 7, g->comm, MPI_STATUS_IGNORE);
        break;
    }
    default:
        snprintf(err, errlen, "mpi comm: unknown collective %d", (int)coll);
        return -1;
    }
    *ms = now_ms() - t0;
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, pdbx_coll_name(coll), err, errlen);
    return 0;
}

static int mpi_barrier(pdbx_comm *m, pdbx_group *g)
{
    (void)m;
    return MPI_Barrier(g->comm) == MPI_SUCCESS ? 0 : -1;
}

static const pdbx_comm_ops mpi_ops = {
    .name = "mpi",
    .init = mpi_init,
    .fini = mpi_fini,
    .version = mpi_version,
    .group_create = mpi_group_create,
    .group_destroy = mpi_group_destroy,
    .run = mpi_run,
    .barrier = mpi_barrier,
};

const pdbx_comm_ops *pdbx_mpi_comm_ops(void)
{
    return &mpi_ops;
}
