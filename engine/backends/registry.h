/* backend_registry.h: picks the compute and comm backends of a run.
 *
 *  - cpu: the built-in cpu compute backend + mpi comm.
 *  - cuda: dlopen of $PDBX_CUDA_LIB, else <dir of pdbx-engine>/../lib/libpdbx_cuda.so; its
 *    pdbx_backend_entry_v1() must report PDBX_BACKEND_ABI and its probe() must find a device,
 *    else a clear one-line error. Comm is the .so's own (nccl) when it has one, else mpi.
 *  - auto: cuda when the library loads and probe() finds a device, else cpu with ONE notice
 *    line (written to `notice`, empty when there is nothing to say).
 */
#ifndef PDBX_BACKEND_REGISTRY_H
#define PDBX_BACKEND_REGISTRY_H

#include <stddef.h>

#include "engine/backends/backend.h"

typedef struct {
    const pdbx_compute_ops *compute;
    const pdbx_comm_ops *comm;
    void *dl;                    /* dlopen handle of the cuda library, or NULL */
    char lib_path[PDBX_PATH_MAX];
} pdbx_backend_choice;

int pdbx_backend_choose(pdbx_backend_kind kind, pdbx_backend_choice *out, char *notice,
                        size_t notice_len, char *err, size_t errlen);
void pdbx_backend_unload(pdbx_backend_choice *b);
/* Where the cuda library is looked for ($PDBX_CUDA_LIB, else next to the executable). */
void pdbx_backend_cuda_lib_path(char *buf, size_t len);

#endif
