/* test_bwd_util.h: what the cpu backward tests share (test_engine_kernels_bwd.c,
 * test_engine_kernels_attn_bwd.c): real values in [-1, 1] by seed, a closeness check against a
 * finite difference or a naive product (relative to the larger of |want| and the vector's
 * typical size), the largest |x|, and a float vector in double. All abort the test on failure. */
#ifndef PDBX_TEST_BWD_UTIL_H
#define PDBX_TEST_BWD_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/backends/cpu/cpu_kernels.h"

static inline float *randv(size_t n, uint64_t seed)
{
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    pdbx_k_fill_uniform(x, n, 1.0f, seed);
    return x;
}

/* |got - want| within rel of the larger of |want| and the vector's typical size `scale` */
static inline void assert_close(double got, double want, double rel, double scale, const char *what,
                                size_t i)
{
    if (fabs(got - want) > rel * fmax(fabs(want), scale)) {
        print_error("%s[%zu]: got %.8g, finite difference %.8g\n", what, i, got, want);
        fail();
    }
}

static inline double max_abs(const double *x, size_t n)
{
    double m = 1e-30;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(x[i]));
    return m;
}

static inline double *to_double(const float *x, size_t n)
{
    double *o = malloc(n * sizeof *o);
    assert_non_null(o);
    for (size_t i = 0; i < n; i++)
        o[i] = x[i];
    return o;
}

#endif
