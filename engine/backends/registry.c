/* backend_registry.c: picks cpu/cuda compute and mpi/nccl comm (backend_registry.h). */
#include "engine/backends/registry.h"
#include "engine/comm/mpi/comm_mpi.h"
#include "engine/backends/cpu/cpu_compute.h"
#include "store/util/proc.h"

#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void pdbx_backend_cuda_lib_path(char *buf, size_t len)
{
    const char *env = getenv("PDBX_CUDA_LIB");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return;
    }
    char dir[PDBX_PATH_MAX];
    if (pdbx_exe_dir(dir, sizeof dir) != 0) {
        snprintf(buf, len, "libpdbx_cuda.so");
        return;
    }
    snprintf(buf, len, "%s/../lib/libpdbx_cuda.so", dir);
}

/* Loads the cuda library and its entry; 0 with *entry set, or -1 with the reason. */
static int load_cuda(pdbx_backend_choice *out, const pdbx_backend_entry **entry, char *why,
                     size_t len)
{
    pdbx_backend_cuda_lib_path(out->lib_path, sizeof out->lib_path);
    void *dl = dlopen(out->lib_path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *e = dlerror();
        snprintf(why, len, "cannot load %s: %s", out->lib_path, e ? e : "unknown error");
        return -1;
    }
    void *sym = dlsym(dl, PDBX_BACKEND_ENTRY_SYMBOL);
    pdbx_backend_entry_fn fn;
    memcpy(&fn, &sym, sizeof fn);
    const pdbx_backend_entry *e = fn ? fn() : NULL;
    if (!e) {
        snprintf(why, len, "%s has no %s()", out->lib_path, PDBX_BACKEND_ENTRY_SYMBOL);
        dlclose(dl);
        return -1;
    }
    if (e->abi != PDBX_BACKEND_ABI || !e->compute || !e->probe) {
        snprintf(why, len, "%s has backend ABI %d, this pdbx-engine needs %d", out->lib_path,
                 e->abi, PDBX_BACKEND_ABI);
        dlclose(dl);
        return -1;
    }
    char reason[256] = "";
    if (e->probe(reason, sizeof reason) != 1) {
        snprintf(why, len, "no usable GPU: %s", reason[0] ? reason : "probe found no device");
        dlclose(dl);
        return -1;
    }
    out->dl = dl;
    *entry = e;
    return 0;
}

int pdbx_backend_choose(pdbx_backend_kind kind, pdbx_backend_choice *out, char *notice,
                        size_t notice_len, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (notice_len)
        notice[0] = '\0';
    if (kind == PDBX_BACKEND_CUDA || kind == PDBX_BACKEND_AUTO) {
        const pdbx_backend_entry *e = NULL;
        char why[2 * PDBX_PATH_MAX + 512];
        if (load_cuda(out, &e, why, sizeof why) == 0) {
            out->compute = e->compute;
            out->comm = e->comm ? e->comm : &pdbx_mpi_comm_ops;
            return 0;
        }
        if (kind == PDBX_BACKEND_CUDA) {
            snprintf(err, errlen, "backend cuda: %s", why);
            return -1;
        }
        snprintf(notice, notice_len, "backend auto: using cpu (%s)", why);
    }
    out->compute = &pdbx_cpu_compute_ops;
    out->comm = &pdbx_mpi_comm_ops;
    return 0;
}

void pdbx_backend_unload(pdbx_backend_choice *b)
{
    if (b->dl)
        dlclose(b->dl);
    b->dl = NULL;
}
