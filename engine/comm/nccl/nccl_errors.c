/* nccl_errors.c: the mapping of nccl_errors.h. */
#include "engine/comm/nccl/nccl_errors.h"

#include <ctype.h>
#include <stddef.h>

#include "engine/backends/backend.h"

/* 1 when needle (lower case) occurs in s, ignoring case. */
static int has_text(const char *s, const char *needle)
{
    for (; *s; s++) {
        size_t i = 0;
        while (needle[i] && s[i] && tolower((unsigned char)s[i]) == needle[i])
            i++;
        if (!needle[i])
            return 1;
    }
    return 0;
}

int nccl_error_code(ncclResult_t r, const char *detail)
{
    static const char *const oom_texts[] = {
        "out of memory",               /* cudaErrorMemoryAllocation's text; ncclInternalError's */
        "cudaerrormemoryallocation",
        "cuda_error_out_of_memory",    /* cuMem* (driver API) allocations */
        "failed to cuda calloc", "failed to cuda malloc", "failed to cuda host alloc",
        "cannot allocate memory",      /* ENOMEM from a system call (host memory) */
    };
    if (r != ncclUnhandledCudaError && r != ncclSystemError && r != ncclInternalError)
        return -1;
    if (!detail)
        return -1;
    for (size_t i = 0; i < sizeof oom_texts / sizeof oom_texts[0]; i++)
        if (has_text(detail, oom_texts[i]))
            return PDBX_EOOM;
    return -1;
}
