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

/* all_to_all from f (n blocks of S / n bytes, block k to group rank k) to out, in pieces of
 * at most max_count() elements per block: each piece is one element of a datatype of `count`
 * floats whose extent is a whole block, so block k's piece sits at k blocks from the piece's
 * base (the extent is an MPI_Aint: no int overflow however large S), and a split message moves
 * the same bytes between the same ranks. */
static int mpi_all_to_all(pdbx_group *g, const pdbx_coll_call *c, float *f, float *out)
{
    const size_t block = c->bytes / sizeof(float) / (size_t)g->size, cap = max_count();
    int rc = MPI_SUCCESS;
    size_t off = 0;
    do {                                   /* one call even for an empty message */
        const size_t left = block - off;
        const int count = (int)(left < cap ? left : cap);
        MPI_Datatype piece, strided;
        rc = MPI_Type_contiguous(count, MPI_FLOAT, &piece);
        if (rc != MPI_SUCCESS)
            break;
        rc = MPI_Type_create_resized(piece, 0, (MPI_Aint)(block * sizeof(float)), &strided);
        MPI_Type_free(&piece);
        if (rc != MPI_SUCCESS)
            break;
        rc = MPI_Type_commit(&strided);
        if (rc == MPI_SUCCESS)
            rc = MPI_Alltoall(f + off, 1, strided, out + off, 1, strided, g->comm);
        MPI_Type_free(&strided);
        off += (size_t)count;
    } while (rc == MPI_SUCCESS && off < block);
    return rc;
}

/* One execution of c->coll on f (in place) or from f to out (out_of_place gather/scatter),
 * split into calls of at most max_count() elements. */
static int mpi_once(pdbx_group *g, const pdbx_coll_call *c, float *f, float *out)
{
    const size_t n = (size_t)g->size, cap = max_count();
    const pdbx_coll coll = c->coll;
    if (coll == PDBX_COLL_ALL_TO_ALL)
        return mpi_all_to_all(g, c, f, out);
    /* elements per call: the whole array (all_reduce, send_recv) or each rank's block */
    const size_t total = coll == PDBX_COLL_ALL_GATHER || coll == PDBX_COLL_REDUCE_SCATTER
                             ? c->bytes / sizeof(float) / n : c->bytes / sizeof(float);
    int rc = MPI_SUCCESS;
    size_t off = 0;
    do {                                   /* one call even for an empty message */
        const size_t left = total - off;
        const int count = (int)(left < cap ? left : cap);
        switch (coll) {
        case PDBX_COLL_ALL_REDUCE:
            rc = MPI_Allreduce(MPI_IN_PLACE, f + off, count, MPI_FLOAT, MPI_SUM, g->comm);
            break;
        case PDBX_COLL_ALL_GATHER:         /* piece k: n blocks of count at f + n*off */
            if (out)
                rc = MPI_Allgather(out + off, count, MPI_FLOAT, f + n * off, count, MPI_FLOAT,
                                   g->comm);
            else
                rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, f + n * off, count,
                                   MPI_FLOAT, g->comm);
            break;
        case PDBX_COLL_REDUCE_SCATTER:     /* in place: the rank's block lands at the front */
            if (out)
                rc = MPI_Reduce_scatter_block(f + n * off, out + off, count, MPI_FLOAT, MPI_SUM,
                                              g->comm);
            else
                rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, f + n * off, count, MPI_FLOAT,
                                              MPI_SUM, g->comm);
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
    return rc;
}

/* The cpu backend's elements are fp32 whatever call->dtype says (its runs are fp32). */
static int mpi_run(pdbx_comm *m, pdbx_group *g, const pdbx_coll_call *call, void *buf,
                   double *ms, char *err, size_t errlen)
{
    (void)m;
    if (call->coll < 0 || call->coll >= PDBX_COLL_COUNT) {
        snprintf(err, errlen, "mpi comm: unknown collective %d", (int)call->coll);
        return -1;
    }
    if (call->iters < 1) {
        snprintf(err, errlen, "mpi comm: iters %d (allowed: 1 or more)", call->iters);
        return -1;
    }
    const int oop = call->coll == PDBX_COLL_ALL_TO_ALL ||   /* always out of place: S received at buf + S */
                    (call->out_of_place && (call->coll == PDBX_COLL_ALL_GATHER ||
                                            call->coll == PDBX_COLL_REDUCE_SCATTER));
    float *f = buf, *out = oop ? (float *)((char *)buf + call->bytes) : NULL;
    int rc = MPI_SUCCESS;
    double t0 = pdbx_mono_s() * 1e3;
    for (int i = 0; i < call->iters && rc == MPI_SUCCESS; i++)
        rc = mpi_once(g, call, f, out);
    *ms = (pdbx_mono_s() * 1e3 - t0) / call->iters;
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, pdbx_coll_name(call->coll), err, errlen);
    return 0;
}

/* MPI_Ibarrier polled so that a peer that never arrives fails the barrier after timeout_s
 * instead of blocking this rank for good. */
static int mpi_barrier(pdbx_comm *m, pdbx_group *g, double timeout_s, char *err, size_t errlen)
{
    (void)m;
    MPI_Request req;
    int rc = MPI_Ibarrier(g->comm, &req);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "barrier", err, errlen);
    const double t0 = pdbx_mono_s();
    for (;;) {
        int done = 0;
        rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "barrier", err, errlen);
        if (done)
            return 0;
        const double waited = pdbx_mono_s() - t0;
        if (timeout_s > 0 && waited > timeout_s) {
            snprintf(err, errlen, "mpi comm: barrier of %d ranks not complete after %g s (a "
                     "peer is gone or stuck)", g->size, timeout_s);
            return -1;   /* the request stays pending: the run is ending */
        }
        /* spin at first, as MPI_Barrier does: a nap here would skew the ranks' exits by the
         * scheduler's granularity, and the collective timed next starts from this exit */
        if (waited > 0.5) {
            struct timespec nap = {0, 100000};
            nanosleep(&nap, NULL);
        }
    }
}

const pdbx_comm_ops pdbx_mpi_comm_ops = PDBX_COMM_OPS("mpi", mpi);
