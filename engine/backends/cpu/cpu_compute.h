/* cpu_compute.h: the `cpu` compute backend (OpenBLAS GEMMs + own kernels, CLOCK_MONOTONIC).
 *
 * Memory policy: prepare() adds up every buffer of the point first and returns PDBX_EOOM
 * ("would exceed MemAvailable") when that sum times the ranks on this node exceeds the host's
 * MemAvailable minus a 5% reserve, before any malloc; a failed malloc is PDBX_EOOM too. All
 * buffers are committed at prepare time; every buffer an op reads holds real values, the pure
 * outputs (embedding output, logits, attention scratch) zeros. release() frees the point's
 * activations; the weights stay while the next prepare() has the same weight shapes (same
 * model, TP, layers, ops, dtype: the rest of a config's MBS sweep), so they are allocated and
 * filled once per config. Large buffers are filled by tiling a 64 Ki-element random block
 * (real, varied values at memory speed), in chunks over the backend's thread pool, each chunk's
 * pages committed by madvise(MADV_POPULATE_WRITE) first. Comm buffers of 2 MiB or more are
 * 2 MiB aligned and madvise(MADV_HUGEPAGE)'d (what numpy does for large arrays).
 * dtype bf16: weights and GEMM inputs are bf16 and go through cblas_sbgemm (fp32 output);
 * the own kernels (norms, SiLU x up, attention core) compute on fp32 buffers. cblas_sbgemm
 * is looked up at run time (OpenBLAS builds without BUILD_BFLOAT16, Debian 12's included, lack
 * it): without it, and for fp16 always, init() fails with a message naming the allowed dtypes.
 * passes with bwd: prepare() also allocates the backward's buffers of the planner's list
 * (gradients, cpu_backward.c), per point like the activations; run_op's bwd pass refuses a
 * point prepared without them.
 */
#ifndef PDBX_CPU_COMPUTE_H
#define PDBX_CPU_COMPUTE_H

#include "engine/backends/backend.h"

extern const pdbx_compute_ops pdbx_cpu_compute_ops;
/* 1 when this process's OpenBLAS exports cblas_sbgemm (bf16 GEMMs). */
int pdbx_cpu_has_bf16_gemm(void);

#endif
