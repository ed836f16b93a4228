/* backend_coll.c: collective names and nccl-tests' bus bandwidth factors (backend.h). Part of
 * the engine/backends library and compiled into libpdbx_cuda.so too (the nccl comm backend
 * names its collectives in messages). */
#include "engine/backends/backend.h"

const char *pdbx_coll_name(pdbx_coll c)
{
    static const char *const names[PDBX_COLL_COUNT] = {
        [PDBX_COLL_ALL_REDUCE] = "all_reduce",
        [PDBX_COLL_ALL_GATHER] = "all_gather",
        [PDBX_COLL_REDUCE_SCATTER] = "reduce_scatter",
        [PDBX_COLL_SEND_RECV] = "send_recv",
        [PDBX_COLL_ALL_TO_ALL] = "all_to_all",
    };
    return (c >= 0 && c < PDBX_COLL_COUNT) ? names[c] : "?";
}

/* nccl-tests doc/PERFORMANCE.md: busbw = algbw x factor, so that busbw is comparable to the
 * hardware's link bandwidth whatever the rank count. */
double pdbx_coll_busbw_factor(pdbx_coll c, int n)
{
    if (n < 1)
        return 0.0;
    switch (c) {
    case PDBX_COLL_ALL_REDUCE:
        return 2.0 * (n - 1) / n;
    case PDBX_COLL_ALL_GATHER:
    case PDBX_COLL_REDUCE_SCATTER:
    case PDBX_COLL_ALL_TO_ALL:   /* each rank keeps its own block: (n-1)/n of S crosses links */
        return (double)(n - 1) / n;
    case PDBX_COLL_SEND_RECV:
        return 1.0;
    default:
        return 0.0;
    }
}
