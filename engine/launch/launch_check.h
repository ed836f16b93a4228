/* launch_check.h: the one pre-launch check, shared by `pdbx run` (through pdbx_launch_start)
 * and the explorer's new-sweep form, so that a sweep the form calls valid is one the launch
 * starts and the engine accepts.
 *
 * Beyond pdbx_spec_validate (the spec itself), what only the machine can answer: is the
 * pdbx-engine there, does the chosen backend load (cuda: the library and a device), does it
 * take the dtype (cpu: bf16 needs cblas_sbgemm in this OpenBLAS, fp16 never). That is asked of
 * the engine itself (`pdbx-engine --check BACKEND DTYPE`, engine/engine_check.h, no MPI), so
 * the answer is the engine's own code and message, not a copy that could disagree. Answers
 * are cached per (engine, backend, dtype) for the life of the process: the form checks on
 * every edit.
 */
#ifndef PDBX_LAUNCH_CHECK_H
#define PDBX_LAUNCH_CHECK_H

#include <stddef.h>

#include "engine/launch/launch_argv.h"
#include "engine/plan/plan.h"

typedef struct {
    char backend[16];        /* the backend that will measure: "cpu" or "cuda" */
    char notice[512];        /* the engine's notice (why auto chose cpu), "" when none */
    char measures[256];      /* what the numbers will be of, when the GPU preset does not say
                                it (cpu backend with a GPU preset ...), "" otherwise */
} pdbx_launch_check_info;

/* 0 with *info filled (info may be NULL), or -1 with one line: the engine's reason ("backend
 * cuda: no usable GPU: ...", "dtype: bf16 needs cblas_sbgemm ..."), or why it could not ask. */
int pdbx_launch_check(const pdbx_spec *spec, pdbx_launch_check_info *info, char *err,
                      size_t errlen);

/* How long the busy check watches the CPUs: /proc/stat counts 10 ms ticks, so 0.1 s gives the
 * other processes' load to a tenth of a core, fine against the half-core threshold, and nobody
 * waits for it. */
#define PDBX_LAUNCH_BUSY_CHECK_S 0.1

/* Before a launch on this machine: whether other processes keep it busy, which would make
 * every number of the sweep noisy (store/util/cpuload.h, pdbx_cpu_busy_check over
 * PDBX_LAUNCH_BUSY_CHECK_S, this process left out). Only when the launcher resolves to local:
 * mpirun --hosts and srun measure other machines, and nothing is sampled for them. 1 with the
 * sentence in line ("this machine is busy (...): measurements will be noisy; the run records
 * it"), else 0 with line "". A warning, never a refusal: the engine records each point's load. */
int pdbx_launch_busy_warning(const pdbx_spec *spec, const pdbx_launch_opts *opts, char *line,
                             size_t len);

#endif
