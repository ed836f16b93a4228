/* nccl_errors.h: what a failed NCCL call means to the engine (pure: no NCCL call is made, only
 * the ncclResult_t enum of nccl.h and the text of ncclGetLastError).
 *
 * nccl_error_code: PDBX_EOOM (backend.h) when NCCL could not get memory: an
 * ncclUnhandledCudaError, ncclSystemError or ncclInternalError whose last-error text names an
 * allocation failure ("out of memory", cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY,
 * "Failed to CUDA calloc/malloc", "Cannot allocate memory"); NCCL allocates its buffers lazily
 * and near full memory that is an OOM of the point, not an error of it. Else -1.
 */
#ifndef PDBX_NCCL_ERRORS_H
#define PDBX_NCCL_ERRORS_H

#include <nccl.h>

int nccl_error_code(ncclResult_t r, const char *detail);

#endif
