/* cuda_nccl.c: the `nccl` comm backend of libpdbx_cuda.so.
 *
 * One NCCL communicator per group the engine builds (TP, PP, DP, collectives sweep): group
 * rank 0 creates an ncclUniqueId, the engine's MPI broadcast (desc->bcast) hands it to the
 * group, every member calls ncclCommInitRank. Collectives run on the compute backend's one
 * stream and are timed with its CUDA events (nccl_run: the aligned start and back-to-back
 * iterations of nccl-tests), in place or out of place on the buffer the engine got from
 * comm_buffer(). Sizes follow nccl-tests: `bytes` is S, the whole array (all_gather: the
 * gathered output, reduce_scatter: the input), so the engine's busbw factors
 * (pdbx_coll_busbw_factor, backend.h) apply unchanged. Elements are of the run's dtype
 * (bf16 all-reduces, as Megatron's TP all-reduce in bf16 training).
 * Each communicator connects its peers at creation and is warmed there with one small
 * collective of each kind (nccl_warm), so NCCL's lazily allocated buffers exist before any
 * point is measured; an allocation failure of NCCL's is PDBX_EOOM (nccl_errors.h).
 */
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/comm/nccl/nccl_errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <nccl.h>

struct pdbx_comm {
    pdbx_compute *c;
    char version[64];
};

struct pdbx_group {
    ncclComm_t comm;
    int rank, size;
    float *scratch;   /* group size elements: barrier() uses the first, the warm-up all */
};

/* The message, and PDBX_EOOM when NCCL could not get memory (nccl_errors.h), else -1. */
static int nccl_fail(char *err, size_t errlen, const char *call, ncclResult_t r, ncclComm_t comm)
{
    const char *detail = ncclGetLastError(comm);
    if (err && errlen)
        snprintf(err, errlen, "%s failed: %s%s%s", call, ncclGetErrorString(r),
                 detail && *detail ? ": " : "", detail ? detail : "");
    return nccl_error_code(r, detail);
}

#define NCCL_TRY(name, comm, expr) \
    CUDA_TRY_STATUS(ncclResult_t, ncclSuccess, expr, nccl_fail(err, errlen, (name), s_, (comm)))

void cuda_nccl_version(char *buf, size_t len)
{
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess) {
        snprintf(buf, len, "NCCL (version unknown)");
        return;
    }
    /* NCCL >= 2.9 encodes major*10000 + minor*100 + patch, older major*1000 + minor*100 + patch */
    if (v >= 20900)
        snprintf(buf, len, "NCCL %d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    else
        snprintf(buf, len, "NCCL %d.%d.%d", v / 1000, v / 100 % 10, v % 100);
}

static int nccl_init(pdbx_compute *compute, pdbx_comm **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!compute) {
        snprintf(err, errlen, "nccl init: needs the cuda compute backend (got none)");
        return -1;
    }
    pdbx_comm *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "nccl init: out of host memory");
        return -1;
    }
    m->c = compute;
    cuda_nccl_version(m->version, sizeof m->version);
    *out = m;
    return 0;
}

static void nccl_fini(pdbx_comm *m)
{
    free(m);
}

static const char *nccl_version(pdbx_comm *m)
{
    return m ? m->version : "NCCL";
}

static void nccl_group_destroy(pdbx_comm *m, pdbx_group *g)
{
    if (!g)
        return;
    if (m && m->c && m->c->stream)
        cudaStreamSynchronize(m->c->stream);
    if (g->comm)
        ncclCommDestroy(g->comm);
    cuda_dev_free(g->scratch);
    free(g);
}

/* NCCL connects a communicator's peers and allocates their buffers lazily, at the first
 * collective that needs them: near full memory that first collective would fail inside a
 * timed point as a generic error. One small collective of each kind the engine runs (all-reduce,
 * all-gather, reduce-scatter, send/recv between the pairs nccl_run uses), waited for, moves the
 * allocation to the group's creation, where a failure is the config's OOM (engine_sweep.c). */
static int nccl_warm(pdbx_comm *m, pdbx_group *g, char *err, size_t errlen)
{
    int rc = -1;
    pdbx_compute *c = m->c;
    float *s = g->scratch;
    const size_t n = (size_t)g->size;
    NCCL_TRY("ncclAllReduce(warm-up)", g->comm,
             ncclAllReduce(s, s, n, ncclFloat32, ncclSum, g->comm, c->stream));
    NCCL_TRY("ncclAllGather(warm-up)", g->comm,
             ncclAllGather(s + g->rank, s, 1, ncclFloat32, g->comm, c->stream));
    NCCL_TRY("ncclReduceScatter(warm-up)", g->comm,
             ncclReduceScatter(s, s + g->rank, 1, ncclFloat32, ncclSum, g->comm, c->stream));
    const int peer = g->rank % 2 == 0 ? g->rank + 1 : g->rank - 1;
    if (peer < g->size) {   /* odd group size: the last rank has no partner */
        if (g->rank % 2 == 0)
            NCCL_TRY("ncclSend(warm-up)", g->comm, ncclSend(s, 1, ncclFloat32, peer, g->comm, c->stream));
        else
            NCCL_TRY("ncclRecv(warm-up)", g->comm, ncclRecv(s, 1, ncclFloat32, peer, g->comm, c->stream));
    }
    CU_TRY("cudaStreamSynchronize(NCCL warm-up)", cudaStreamSynchronize(c->stream));
    ncclResult_t async = ncclSuccess;
    NCCL_TRY("ncclCommGetAsyncError(warm-up)", g->comm, ncclCommGetAsyncError(g->comm, &async));
    if (async != ncclSuccess)
        return nccl_fail(err, errlen, "NCCL warm-up (asynchronous error)", async, g->comm);
    /* the reductions summed zeros: the barrier's element is still 0 */
    return 0;
fail:
    return rc;
}

static int nccl_group_create(pdbx_comm *m, const pdbx_group_desc *desc, pdbx_group **out,
                             char *err, size_t errlen)
{
    int rc = -1;
    struct {
        int ok;              /* 0: rank 0 failed to make an id; the others stop too */
        ncclUniqueId id;
    } msg;
    *out = NULL;
    memset(&msg, 0, sizeof msg);
    if (!desc || !desc->bcast || desc->group_size < 1 || desc->group_rank < 0 ||
        desc->group_rank >= desc->group_size) {
        snprintf(err, errlen, "nccl group_create: invalid group (rank %d of %d, bcast %s)",
                 desc ? desc->group_rank : -1, desc ? desc->group_size : 0,
                 desc && desc->bcast ? "set" : "missing");
        return -1;
    }
    pdbx_group *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "nccl group_create: out of host memory");
        return -1;
    }
    g->rank = desc->group_rank;
    g->size = desc->group_size;
    char id_err[256] = "";
    if (g->rank == 0) {
        ncclResult_t r = ncclGetUniqueId(&msg.id);
        msg.ok = r == ncclSuccess;
        if (!msg.ok)
            nccl_fail(id_err, sizeof id_err, "ncclGetUniqueId", r, NULL);
    }
    /* Everyone takes part in the broadcast, also when rank 0 failed, so nobody waits. */
    if (desc->bcast(&msg, sizeof msg, 0, desc->bcast_ctx) != 0) {
        snprintf(err, errlen, "nccl group_create: broadcasting the NCCL unique id failed");
        goto fail;
    }
    if (!msg.ok) {
        if (g->rank == 0)
            snprintf(err, errlen, "%s", id_err);
        else
            snprintf(err, errlen, "nccl group_create: group rank 0 could not create an NCCL id");
        goto fail;
    }
    CU_TRY("cudaSetDevice", cudaSetDevice(m->c->device));
    /* connect every peer inside ncclCommInitRank rather than at first use (NCCL >= 2.22;
     * a value the user set wins), so the buffers exist before any point is measured */
    setenv("NCCL_RUNTIME_CONNECT", "0", 0);
    NCCL_TRY("ncclCommInitRank", NULL, ncclCommInitRank(&g->comm, g->size, msg.id, g->rank));
    const size_t scratch = sizeof(float) * (size_t)g->size;
    CU_TRY("cudaMalloc(barrier scratch)", cudaMalloc((void **)&g->scratch, scratch));
    CU_TRY("cudaMemsetAsync(barrier scratch)", cudaMemsetAsync(g->scratch, 0, scratch, m->c->stream));
    rc = nccl_warm(m, g, err, errlen);
    if (rc)
        goto fail;
    *out = g;
    return 0;
fail:
    nccl_group_destroy(m, g);
    return rc;
}

static ncclDataType_t nccl_type(pdbx_dtype dt)
{
    switch (dt) {
    case PDBX_DTYPE_BF16: return ncclBfloat16;
    case PDBX_DTYPE_FP16: return ncclFloat16;
    default: return ncclFloat32;
    }
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waits for event ev while watching the communicator for asynchronous errors (a peer that
 * died), which a plain cudaEventSynchronize would wait on forever; timeout_s > 0 bounds the
 * wait (0: unbounded). On an asynchronous error or the timeout the communicator is aborted
 * (its kernels that wait for the peer end) and the group has none from then on. */
static int wait_event(pdbx_group *g, cudaEvent_t ev, double timeout_s, const char *what,
                      char *err, size_t errlen)
{
    int rc = -1;
    const double t0 = mono_s();
    for (;;) {
        cudaError_t q = cudaEventQuery(ev);
        if (q == cudaSuccess)
            return 0;
        if (q != cudaErrorNotReady)
            CU_TRY(what, q);
        ncclResult_t async = ncclSuccess;
        NCCL_TRY("ncclCommGetAsyncError", g->comm, ncclCommGetAsyncError(g->comm, &async));
        if (async != ncclSuccess && async != ncclInProgress) {
            char m2[96];
            snprintf(m2, sizeof m2, "%s (asynchronous error)", what);
            rc = nccl_fail(err, errlen, m2, async, g->comm);
            goto abort;
        }
        const double waited = mono_s() - t0;
        if (timeout_s > 0 && waited > timeout_s) {
            snprintf(err, errlen, "%s: the group of %d ranks did not complete within %g s "
                     "(timeout_s; a peer died or hangs): communicator aborted", what, g->size,
                     timeout_s);
            rc = -1;
            goto abort;
        }
        struct timespec nap = {0, 20000};   /* 20 us: short next to any collective worth timing */
        nanosleep(&nap, NULL);
    }
abort:
    ncclCommAbort(g->comm);
    g->comm = NULL;
fail:
    return rc;
}

/* Records the stop event, waits for it (wait_event, unbounded: the barrier before the run
 * bounded the wait for the peers) and gives the start-to-stop time in ms. */
static int wait_collective(pdbx_comm *m, pdbx_group *g, double *ms, char *err, size_t errlen)
{
    int rc = -1;
    pdbx_compute *c = m->c;
    CU_TRY("cudaEventRecord(stop)", cudaEventRecord(c->ev_stop, c->stream));
    rc = wait_event(g, c->ev_stop, 0, "NCCL collective", err, errlen);
    if (rc)
        return rc;
    rc = -1;
    float f = 0.0f;
    CU_TRY("cudaEventElapsedTime", cudaEventElapsedTime(&f, c->ev_start, c->ev_stop));
    *ms = (double)f;
    return 0;
fail:
    return rc;
}

/* The aligned start of a timed collective (docs/cuda.md "Timing protocol", after nccl-tests'
 * BenchTime): a %globaltimer spin long enough for the host to enqueue what follows, then a
 * one-element all-reduce on the group's own communicator, which completes on every rank only
 * once the last rank's spin has ended (so the ranks leave it together, whatever their clocks
 * and their host arrival), then the start event. `launches`: the collectives the caller
 * enqueues behind it. */
static int aligned_start(pdbx_comm *m, pdbx_group *g, int launches, char *err, size_t errlen)
{
    int rc = -1;
    pdbx_compute *c = m->c;
    rc = cuda_timer_spin(c, launches + 1, err, errlen);
    if (rc)
        return rc;
    rc = -1;
    NCCL_TRY("ncclAllReduce(align)", g->comm,
             ncclAllReduce(g->scratch, g->scratch, 1, ncclFloat32, ncclSum, g->comm, c->stream));
    CU_TRY("cudaEventRecord(start)", cudaEventRecord(c->ev_start, c->stream));
    return 0;
fail:
    return rc;
}

/* Enqueues one execution of call on b (layout: nccl_run). */
static int enqueue_once(pdbx_group *g, pdbx_compute *c, const pdbx_coll_call *call, char *b,
                        int oop, int peer, char *err, size_t errlen)
{
    int rc = -1;
    const pdbx_coll coll = call->coll;
    const size_t es = call->dtype == PDBX_DTYPE_FP32 ? 4 : 2;
    const ncclDataType_t t = nccl_type(call->dtype);
    const size_t count = call->bytes / es, chunk = count / (size_t)g->size;
    char *own = oop ? b + call->bytes : b + (size_t)g->rank * chunk * es;   /* rank's part */
    switch (coll) {
    case PDBX_COLL_ALL_REDUCE:
        NCCL_TRY("ncclAllReduce", g->comm, ncclAllReduce(b, b, count, t, ncclSum, g->comm, c->stream));
        break;
    case PDBX_COLL_ALL_GATHER:   /* in place, rank r's part is the r-th chunk of the output */
        NCCL_TRY("ncclAllGather", g->comm, ncclAllGather(own, b, chunk, t, g->comm, c->stream));
        break;
    case PDBX_COLL_REDUCE_SCATTER:
        NCCL_TRY("ncclReduceScatter", g->comm,
                 ncclReduceScatter(b, own, chunk, t, ncclSum, g->comm, c->stream));
        break;
    case PDBX_COLL_SEND_RECV:
        if (g->rank % 2 == 0)
            NCCL_TRY("ncclSend", g->comm, ncclSend(b, count, t, peer, g->comm, c->stream));
        else
            NCCL_TRY("ncclRecv", g->comm, ncclRecv(b, count, t, peer, g->comm, c->stream));
        break;
    case PDBX_COLL_ALL_TO_ALL:   /* nccl-tests' alltoall: one grouped send and recv per peer,
                                  * block k of the S bytes at b to rank k, from rank k into
                                  * block k of the S bytes at b + S */
        NCCL_TRY("ncclGroupStart", g->comm, ncclGroupStart());
        for (int k = 0; k < g->size; k++) {
            NCCL_TRY("ncclSend", g->comm, ncclSend(b + (size_t)k * chunk * es, chunk, t, k, g->comm, c->stream));
            NCCL_TRY("ncclRecv", g->comm,
                     ncclRecv(b + call->bytes + (size_t)k * chunk * es, chunk, t, k, g->comm, c->stream));
        }
        NCCL_TRY("ncclGroupEnd", g->comm, ncclGroupEnd());
        break;
    default:
        snprintf(err, errlen, "nccl run: collective %d (allowed: all_reduce, all_gather, "
                 "reduce_scatter, send_recv, all_to_all)", (int)coll);
        goto fail;
    }
    return 0;
fail:
    return rc;
}

/* Buffer layout (as the mpi comm): S bytes at buf; out of place, all_gather's input and
 * reduce_scatter's output (S / n bytes) follow at buf + S. Timing: aligned_start, then
 * call->iters executions back to back, the stop event, *ms = elapsed / iters. */
static int nccl_run(pdbx_comm *m, pdbx_group *g, const pdbx_coll_call *call, void *buf,
                    double *ms, char *err, size_t errlen)
{
    int rc = -1;
    pdbx_compute *c = m->c;
    const pdbx_coll coll = call->coll;
    const size_t bytes = call->bytes;
    if (!g || !g->comm) {
        snprintf(err, errlen, "nccl %s: the group has no communicator", pdbx_coll_name(coll));
        return -1;
    }
    if (call->iters < 1) {
        snprintf(err, errlen, "nccl %s: iters %d (allowed: 1 or more)", pdbx_coll_name(coll),
                 call->iters);
        return -1;
    }
    const size_t es = call->dtype == PDBX_DTYPE_FP32 ? 4 : 2;
    const size_t n = (size_t)g->size;
    const int a2a = coll == PDBX_COLL_ALL_TO_ALL;   /* always out of place: S more at buf + S */
    const int split = coll == PDBX_COLL_ALL_GATHER || coll == PDBX_COLL_REDUCE_SCATTER || a2a;
    const int oop = (split && call->out_of_place) || a2a;
    size_t count = bytes / es;                 /* elements of S */
    if (bytes == 0 || bytes % es != 0 || (split && count % n != 0)) {
        snprintf(err, errlen, "nccl %s: %zu bytes is not a positive multiple of %zu (%zu-byte "
                 "elements x %zu ranks)", pdbx_coll_name(coll), bytes, split ? es * n : es, es, n);
        return -1;
    }
    /* buf must lie in the device buffer comm_buffer() handed out (NCCL needs device memory). */
    const size_t need = bytes + (a2a ? bytes : oop ? bytes / n : 0);
    const char *lo = c->comm_buf, *hi = lo ? lo + c->comm_bytes : NULL;
    if (!lo || (const char *)buf < lo || (const char *)buf > hi || need > (size_t)(hi - (const char *)buf)) {
        snprintf(err, errlen, "nccl %s: %zu bytes at %p do not lie in comm_buffer() (%zu bytes "
                 "at %p)", pdbx_coll_name(coll), need, buf, c->comm_bytes, c->comm_buf);
        return -1;
    }
    int peer = -1, idle = 0;
    if (coll == PDBX_COLL_SEND_RECV) {
        peer = g->rank % 2 == 0 ? g->rank + 1 : g->rank - 1;
        idle = peer >= g->size;   /* odd group size: the last rank has no partner */
    }
    const int execs = idle ? 0 : call->iters;
    /* the idle rank too: the align all-reduce needs every member */
    rc = aligned_start(m, g, execs, err, errlen);
    if (rc)
        goto fail;
    for (int i = 0; i < execs; i++) {
        rc = enqueue_once(g, c, call, buf, oop, peer, err, errlen);
        if (rc)
            goto fail;
    }
    rc = wait_collective(m, g, ms, err, errlen);
    if (rc == 0)
        *ms = idle ? 0.0 : *ms / execs;
    return rc;
fail:
    cudaStreamSynchronize(c->stream);
    (void)cudaGetLastError();
    return rc;
}

/* A one-element all-reduce, waited for by polling (wait_event), bounded by timeout_s. */
static int nccl_barrier(pdbx_comm *m, pdbx_group *g, double timeout_s, char *err, size_t errlen)
{
    int rc = -1;
    if (!m || !g || !g->comm) {
        snprintf(err, errlen, "nccl barrier: the group has no communicator");
        return -1;
    }
    pdbx_compute *c = m->c;
    NCCL_TRY("nccl barrier: ncclAllReduce", g->comm,
             ncclAllReduce(g->scratch, g->scratch, 1, ncclFloat32, ncclSum, g->comm, c->stream));
    CU_TRY("nccl barrier: cudaEventRecord", cudaEventRecord(c->ev_stop, c->stream));
    return wait_event(g, c->ev_stop, timeout_s, "nccl barrier", err, errlen);
fail:
    return rc;
}

const pdbx_comm_ops cuda_nccl_comm_ops = PDBX_COMM_OPS("nccl", nccl);
