/* cuda_checks.h: pure decisions of the cuda backend, testable on a host without a GPU (no CUDA
 * call is made: only the cudaError enum of driver_types.h is used).
 *
 * cuda_error_is_sticky: 1 when error e leaves the CUDA context unusable for the rest of the
 * process (driver_types.h: "This leaves the process in an inconsistent state and any further
 * CUDA work will return the same error. To continue using CUDA, the process must be terminated
 * and relaunched"), or reports uncorrectable hardware damage (ECC, NVLink): every later number
 * from this device is void, so the run must end `failed`, not go on to the next point.
 *
 * cuda_check_placement: 0 when local_size ranks on node `host` each get a GPU of their own
 * among device_count; else -1 with "N ranks on node HOST but M GPUs ..." in err (ranks
 * sharing a GPU would time each other's kernels).
 */
#ifndef PDBX_CUDA_CHECKS_H
#define PDBX_CUDA_CHECKS_H

#include <stddef.h>
#include <driver_types.h>

int cuda_error_is_sticky(cudaError_t e);

int cuda_check_placement(int local_size, int device_count, const char *host, char *err,
                         size_t errlen);

#endif
