/* cpu_kernels_vec.h: what the cpu backend's vectorised kernels share (cpu_kernels.c): the
 * attributes that compile a kernel's loops for three x86-64 levels, and scalar functions
 * written so that gcc vectorises the loops that call them (no libm call, no branch: every
 * condition is a select).
 *
 * Contract (internal to engine/backends/cpu; everything here is static inline):
 *  - PDBX_K_HOT on a kernel's loop function: compiled for baseline x86-64, x86-64-v3 (AVX2,
 *    FMA) and x86-64-v4 (AVX-512), the variant picked at load time by the CPU's features, with
 *    the cost model that accepts runtime alias checks and multiply-adds contracted to FMA.
 *    PDBX_K_INLINE on the helpers: always inlined, so they are compiled in each clone.
 *  - pdbx_k_exp(x): e^x with relative error < 2e-7, x clamped to [-87, 88] (results stay
 *    normal floats).
 */
#ifndef PDBX_CPU_KERNELS_VEC_H
#define PDBX_CPU_KERNELS_VEC_H

#include <stdint.h>
#include <string.h>

/* The build targets baseline x86-64 (SSE2). The hot kernels are compiled a second and third
 * time for x86-64-v3 (AVX2, FMA) and x86-64-v4 (AVX-512) and picked at load time by the CPU's
 * features (GCC target_clones, an ifunc; "arch=haswell" and "arch=skylake-avx512" would be
 * picked by CPU model, so an AMD EPYC with AVX-512 ran the SSE2 clone), with the cost model
 * that accepts runtime alias checks and with multiply-adds contracted to FMA (ISO C mode leaves
 * them separate): the same C, the host's vector units. PDBX_K_CLONES may be defined on the
 * command line to build one variant only (checking the baseline clone on an AVX-512 host).
 * no-trapping-math and no-thread-jumps let the loops around a select vectorise in the AVX2
 * and baseline clones too: jump threading copied the code after a clamp such as pdbx_k_exp's
 * into both of its arms, and if-conversion then refused to execute the copies' floating-point
 * operations unconditionally (they might trap; AVX-512's masks made only that clone work), so
 * SiLU x up ran scalar there ("control flow in loop"). With both, a 4 Mi-element SiLU x up on
 * one core here: x86-64-v3 11.1 -> 1.9 ms, baseline 18.3 -> 5.7 ms, x86-64-v4 unchanged (1.3-1.5
 * ms). Neither changes a value (SiLU x up, RMSNorm and the attention core give the same bits
 * as before in each clone): no trap is enabled, and threading only moves code. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#ifndef PDBX_K_CLONES
#define PDBX_K_CLONES target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")
#endif
#define PDBX_K_OPT optimize("tree-vectorize", "vect-cost-model=dynamic", "fp-contract=fast", \
                            "no-trapping-math", "no-thread-jumps")
#define PDBX_K_HOT __attribute__((PDBX_K_CLONES, PDBX_K_OPT))
#define PDBX_K_INLINE static inline __attribute__((always_inline, PDBX_K_OPT))
#else
#define PDBX_K_HOT
#define PDBX_K_INLINE static inline
#endif

/* e^r * 2^n for |r| <= ln2 / 2: Cephes' expf polynomial, 2^n built in the exponent bits. */
PDBX_K_INLINE float pdbx_k_exp_poly(float r, int32_t n)
{
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    const int32_t bits = (n + 127) << 23;
    float pow2n;
    memcpy(&pow2n, &bits, sizeof pow2n);
    return p * pow2n;
}

/* exp(x) for x in [-87, 88] (clamped there: the results stay normal floats), relative error
 * below 2e-7: x = n ln2 + r with n = round(x / ln2) (the 1.5 * 2^23 trick rounds in the vector
 * unit; no libm call, so the loops around it vectorise), ln2 in two parts (Cody and Waite). */
PDBX_K_INLINE float pdbx_k_exp(float x)
{
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    const float t = x * 1.44269504088896341f + 12582912.0f;
    const float n = t - 12582912.0f;
    int32_t ni;
    memcpy(&ni, &t, sizeof ni);
    ni -= 0x4B400000;                                   /* the rounded n as an integer */
    const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
    return pdbx_k_exp_poly(r, ni);
}

#endif
