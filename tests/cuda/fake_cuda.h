/* fake_cuda.h: a fake CUDA runtime and NCCL for host tests of the cuda backend's timing and
 * collectives (tests/cuda/test_nccl_timing.c).
 *
 * fake_cuda.c defines, with the real headers' signatures, the runtime and NCCL functions that
 * engine/comm/nccl/nccl_comm.c and engine/backends/cuda/cuda_timing.c call, plus the kernel
 * launcher ck_spin_ns (cuda_kernels.h) and cuda_fail/cuda_dev_free (whose real files pull in
 * cuBLASLt). Each call that enqueues work or touches an event appends one entry to a call log
 * (in order), so a test can assert the sequence the real sources produce. The fake does no
 * device work: events complete at once unless told otherwise, elapsed times are what the test
 * sets. The test binary links none of cudart or NCCL.
 */
#ifndef PDBX_TESTS_FAKE_CUDA_H
#define PDBX_TESTS_FAKE_CUDA_H

#include <stddef.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

typedef struct {
    char fn[32];             /* "ncclAllReduce", "cudaEventRecord", "ck_spin_ns" ... */
    const void *send;        /* collectives: send buffer; memset: the buffer */
    const void *recv;        /* collectives: receive buffer */
    size_t count;            /* collectives: element count; memset: bytes */
    int peer;                /* ncclSend/ncclRecv */
    cudaEvent_t ev;          /* event calls */
    cudaEvent_t ev2;         /* cudaEventElapsedTime: the stop event (ev: the start) */
    long long ns;            /* ck_spin_ns */
} fake_call;

#define FAKE_LOG_MAX 4096

typedef struct {
    fake_call log[FAKE_LOG_MAX];
    int n;
    /* behaviour the test sets */
    float elapsed_ms;              /* cudaEventElapsedTime's answer */
    int events_never_complete;     /* cudaEventQuery: cudaErrorNotReady for ever */
    ncclResult_t async_error;      /* ncclCommGetAsyncError's answer */
} fake_cuda_state;

extern fake_cuda_state fake_cuda;

/* Clears the log and the behaviour (events complete, no async error, elapsed 1 ms). */
void fake_cuda_reset(void);
/* Index of the first log entry at or after `from` whose fn is `fn`, or -1. */
int fake_cuda_find(const char *fn, int from);
/* How many log entries are named fn. */
int fake_cuda_count(const char *fn);
/* Prints the log to stderr (for a failing test). */
void fake_cuda_dump(void);

#endif
