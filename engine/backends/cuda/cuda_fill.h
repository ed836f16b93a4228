/* cuda_fill.h: the values of the deterministic uniform fill (ck_fill_uniform in
 * cuda_kernels.cu): element i of a fill with `seed` is lo + span x u, u made of 24 bits of
 * splitmix64(seed ^ splitmix64(i)), then rounded to the buffer's dtype. Pure arithmetic,
 * shared by the device code and the host test (tests/cuda/test_cuda_checks.c), so the values
 * the GPU writes are the ones the host checks. */
#ifndef PDBX_CUDA_FILL_H
#define PDBX_CUDA_FILL_H

#include <stdint.h>

#ifdef __CUDACC__
#define CK_FILL_FN __host__ __device__
#else
#define CK_FILL_FN
#endif

/* splitmix64: a counter-based hash, so fills are deterministic and need no state. */
static inline CK_FILL_FN uint64_t ck_mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Element i's value before the dtype's rounding. */
static inline CK_FILL_FN float ck_fill_value(uint64_t seed, uint64_t i, float lo, float span)
{
    uint64_t r = ck_mix64(seed ^ ck_mix64(i));
    float u = (float)(r >> 40) * (1.0f / 16777216.0f);   /* 24 random bits in [0,1) */
    return lo + span * u;
}

#endif
