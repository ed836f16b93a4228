/* cuda_checks.c: the pure checks of cuda_checks.h. */
#include "engine/backends/cuda/cuda_checks.h"

#include <stdio.h>

int cuda_error_is_sticky(cudaError_t e)
{
    switch (e) {
    /* "the process must be terminated and relaunched" (CUDA 13 driver_types.h) */
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
    /* uncorrectable hardware errors: the device's results can no longer be trusted */
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
        return 1;
    default:
        return 0;
    }
}

int cuda_check_placement(int local_size, int device_count, const char *host, char *err,
                         size_t errlen)
{
    if (local_size <= device_count)
        return 0;
    snprintf(err, errlen, "%d ranks on node %s but %d GPU%s: each rank needs a GPU of its own "
             "(ranks sharing one would time each other's kernels); start at most %d ranks per "
             "node (gpus_per_node) or make more GPUs visible (CUDA_VISIBLE_DEVICES)",
             local_size, host && host[0] ? host : "?", device_count, device_count == 1 ? "" : "s",
             device_count);
    return -1;
}
