/* comm_mpi.c: the `mpi` comm backend (see comm_mpi.h). */
#include "engine/comm/mpi/comm_mpi.h"
#include "store/util/clock.h"

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

/* MPI counts are int: a message of more than INT_MAX floats (8 GiB: the TP all-reduce of a
 * 70B model at MBS 128 is exactly 2^31 bf16 floats' worth) goes as consecutive calls of at
 * most this many elements each, the same bytes in all. PDBX_MPI_MAX_COUNT lowers it (test use
 * only: it drives the split path with small messages). */
static size_t max_count(void)
{
    static size_t cached;
    if (!cached) {
        size_t v = (size_t)1 << 30;
        const char *s = getenv("PDBX_MPI_MAX_COUNT");
        if (s && *s) {
            char *end = NULL;
            unsigned long long x = strtoull(s, &end, 10);
            if (end && *end == '\0' && x >= 1 && x < v)
                v = (size_t)x;
        }
        cached = v;
    }
    return cached;
}

static int mpi_run(pdbx_comm *m, pdbx_group *g, pdbx_coll coll, void *buf, size_t bytes,
                   double *ms, char *err, size_t errlen)
{
    (void)m;
    const size_t n = (size_t)g->size, cap = max_count();
    float *f = buf;
    int rc = MPI_SUCCESS;
    if (coll < 0 || coll >= PDBX_COLL_COUNT) {
        snprintf(err, errlen, "mpi comm: unknown collective %d", (int)coll);
        return -1;
    }
    /* elements per call: the whole array (all_reduce, send_recv) or each rank's block */
    const size_t total = coll == PDBX_COLL_ALL_GATHER || coll == PDBX_COLL_REDUCE_SCATTER
                             ? bytes / sizeof(float) / n : bytes / sizeof(float);
    double t0 = pdbx_mono_s() * 1e3;
    size_t off = 0;
    do {                                   /* one call even for an empty message */
        const size_t left = total - off;
        const int count = (int)(left < cap ? left : cap);
        switch (coll) {
        case PDBX_COLL_ALL_REDUCE:
            rc = MPI_Allreduce(MPI_IN_PLACE, f + off, count, MPI_FLOAT, MPI_SUM, g->comm);
            break;
        case PDBX_COLL_ALL_GATHER:         /* piece k: n blocks of count at f + n*off */
            rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, f + n * off, count, MPI_FLOAT,
                               g->comm);
            break;
        case PDBX_COLL_REDUCE_SCATTER:     /* in place: the rank's block lands at the front */
            rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, f + n * off, count, MPI_FLOAT, MPI_SUM,
                                          g->comm);
            break;
        case PDBX_COLL_SEND_RECV: {
            int r = g->rank;
            if (r % 2 == 0 && (size_t)r + 1 < n)
                rc = MPI_Send(f + off, count, MPI_FLOAT, r + 1, 7, g->comm);
            else if (r % 2 == 1)
                rc = MPI_Recv(f + off, count, MPI_FLOAT, r - 1, 7, g->comm, MPI_STATUS_IGNORE);
            break;
        }
        default:
            break;
        }
        off += (size_t)count;
    } while (rc == MPI_SUCCESS && off < total);
    *ms = pdbx_mono_s() * 1e3 - t0;
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, pdbx_coll_name(coll), err, errlen);
    return 0;
}

static int mpi_barrier(pdbx_comm *m, pdbx_group *g)
{
    (void)m;
    return MPI_Barrier(g->comm) == MPI_SUCCESS ? 0 : -1;
}

const pdbx_comm_ops pdbx_mpi_comm_ops = PDBX_COMM_OPS("mpi", mpi);
