/* fake_cuda.c: the fake CUDA runtime and NCCL of fake_cuda.h. */
#include "tests/cuda/fake_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cuda_kernels.h"

fake_cuda_state fake_cuda;

static struct { int dummy; } fake_comm_storage;   /* what ncclComm_t points at */

void fake_cuda_reset(void)
{
    memset(&fake_cuda, 0, sizeof fake_cuda);
    fake_cuda.elapsed_ms = 1.0f;
    fake_cuda.async_error = ncclSuccess;
}

static fake_call *log_call(const char *fn)
{
    if (fake_cuda.n >= FAKE_LOG_MAX) {
        fprintf(stderr, "fake_cuda: call log full (%d calls)\n", FAKE_LOG_MAX);
        abort();
    }
    fake_call *c = &fake_cuda.log[fake_cuda.n++];
    memset(c, 0, sizeof *c);
    snprintf(c->fn, sizeof c->fn, "%s", fn);
    return c;
}

int fake_cuda_find(const char *fn, int from)
{
    for (int i = from < 0 ? 0 : from; i < fake_cuda.n; i++)
        if (strcmp(fake_cuda.log[i].fn, fn) == 0)
            return i;
    return -1;
}

int fake_cuda_count(const char *fn)
{
    int k = 0;
    for (int i = 0; i < fake_cuda.n; i++)
        k += strcmp(fake_cuda.log[i].fn, fn) == 0;
    return k;
}

void fake_cuda_dump(void)
{
    for (int i = 0; i < fake_cuda.n; i++) {
        const fake_call *c = &fake_cuda.log[i];
        fprintf(stderr, "  %3d %-22s send %p recv %p count %zu peer %d ev %p ns %lld\n", i, c->fn,
                c->send, c->recv, c->count, c->peer, (void *)c->ev, c->ns);
    }
}

/* ---- the cuda backend's own functions the two sources call ------------------------------- */

cudaError_t ck_spin_ns(long long ns, cudaStream_t stream)
{
    (void)stream;
    log_call("ck_spin_ns")->ns = ns;
    return cudaSuccess;
}

/* As cuda_backend.c's (which links cuBLASLt): the message format the real one writes. */
int cuda_fail(char *err, size_t errlen, const char *call, cudaError_t e)
{
    if (err && errlen)
        snprintf(err, errlen, "%s failed: %s (%s)", call, cudaGetErrorName(e), cudaGetErrorString(e));
    return e == cudaErrorMemoryAllocation ? PDBX_EOOM : -1;
}

void cuda_dev_free(void *p)
{
    free(p);
}

/* ---- CUDA runtime ----------------------------------------------------------------------- */

const char *cudaGetErrorName(cudaError_t e)
{
    return e == cudaSuccess ? "cudaSuccess" : e == cudaErrorNotReady ? "cudaErrorNotReady"
                                                                     : "cudaErrorFake";
}

const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess ? "no error" : "fake error";
}

cudaError_t cudaGetLastError(void)
{
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    (void)device;
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t size)
{
    *p = calloc(1, size ? size : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t count, cudaStream_t stream)
{
    (void)value;
    (void)stream;
    fake_call *c = log_call("cudaMemsetAsync");
    c->send = p;
    c->count = count;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    (void)stream;
    log_call("cudaStreamSynchronize");
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t stream)
{
    (void)stream;
    log_call("cudaEventRecord")->ev = ev;
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t ev)
{
    log_call("cudaEventQuery")->ev = ev;
    return fake_cuda.events_never_complete ? cudaErrorNotReady : cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t ev)
{
    log_call("cudaEventSynchronize")->ev = ev;
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t stop)
{
    fake_call *c = log_call("cudaEventElapsedTime");
    c->ev = start;
    c->ev2 = stop;
    *ms = fake_cuda.elapsed_ms;
    return cudaSuccess;
}

/* ---- NCCL ------------------------------------------------------------------------------- */

ncclResult_t ncclGetVersion(int *version)
{
    *version = 22809;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r)
{
    return r == ncclSuccess ? "no error" : "fake NCCL error";
}

const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return "";
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    memset(id, 7, sizeof *id);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    (void)nranks;
    (void)id;
    (void)rank;
    *comm = (ncclComm_t)(void *)&fake_comm_storage;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    (void)comm;
    log_call("ncclCommDestroy");
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    (void)comm;
    log_call("ncclCommAbort");
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *async)
{
    (void)comm;
    *async = fake_cuda.async_error;
    return ncclSuccess;
}

static ncclResult_t coll(const char *fn, const void *send, void *recv, size_t count, int peer)
{
    fake_call *c = log_call(fn);
    c->send = send;
    c->recv = recv;
    c->count = count;
    c->peer = peer;
    return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t t,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    (void)t, (void)op, (void)comm, (void)stream;
    return coll("ncclAllReduce", send, recv, count, -1);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t t,
                           ncclComm_t comm, cudaStream_t stream)
{
    (void)t, (void)comm, (void)stream;
    return coll("ncclAllGather", send, recv, count, -1);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count, ncclDataType_t t,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    (void)t, (void)op, (void)comm, (void)stream;
    return coll("ncclReduceScatter", send, recv, count, -1);
}

ncclResult_t ncclSend(const void *send, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    (void)t, (void)comm, (void)stream;
    return coll("ncclSend", send, NULL, count, peer);
}

ncclResult_t ncclRecv(void *recv, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    (void)t, (void)comm, (void)stream;
    return coll("ncclRecv", NULL, recv, count, peer);
}

ncclResult_t ncclGroupStart(void)
{
    log_call("ncclGroupStart");
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
    log_call("ncclGroupEnd");
    return ncclSuccess;
}
