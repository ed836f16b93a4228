/* test_kernel_util.h: the buffers the cpu kernel tests fill: real values in [-scale, scale]
 * (pdbx_k_fill_uniform, reproducible by seed) and NaNs, so an element a kernel leaves unwritten
 * fails every comparison. Both abort the test when out of memory; n 0 gives a valid pointer. */
#ifndef PDBX_TEST_KERNEL_UTIL_H
#define PDBX_TEST_KERNEL_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cpu/cpu_kernels.h"

static inline float *randv(size_t n, float scale, uint64_t seed)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    assert_non_null(x);
    pdbx_k_fill_uniform(x, n, scale, seed);
    return x;
}

static inline float *nanv(size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    assert_non_null(x);
    memset(x, 0xff, n * sizeof *x);
    return x;
}

#endif
