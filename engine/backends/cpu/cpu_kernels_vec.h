/* cpu_kernels_vec.h: what the cpu backend's vectorised kernels share (cpu_kernels.c,
 * cpu_kernels_attn.c, cpu_kernels_attn_bwd.c, cpu_kernels_dense.c, cpu_kernels_dense_bwd.c):
 * the attributes that compile a kernel's loops for three x86-64 levels, and scalar functions
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
 *  - pdbx_k_exp_sum(a, b): e^(a + b) for a + b in [-87, 88] (not clamped), a exactly
 *    representable, |b| < 2: the range reduction subtracts n ln2 from a alone, exactly, so a's
 *    size costs no accuracy (the erf GELU's exp(-x^2/2) with x^2/2 split into an exact part and
 *    a small one; one rounding of x^2 would cost up to 6e-8 x^2 relative).
 *  - pdbx_k_gelu_erf / pdbx_k_gelu_tanh: the GELU value and, through *d when d is not NULL,
 *    its derivative (errors measured against double references over every 13th float, in
 *    each of the three clones; see each function). The tails give zero or normal floats: no
 *    denormal comes out for |x| >= 2^-125 (below, the value x/2 is itself denormal).
 *  - pdbx_k_tanh(x): tanh with relative error < 1.5e-7, odd (in each clone), exactly +-1 from
 *    |x| = 9.1 on; NaN gives NaN (the soft-capping of attention scores and logits).
 *  - pdbx_k_bf16_rne(f): f rounded to bf16, nearest even, NaN kept quiet: the bits of
 *    pdbx_k_f32_to_bf16 (cpu_kernels.h), inlined into a kernel's loop.
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

/* e^(a + b): n from the rounded sum, then r = (a - n ln2_hi) - n ln2_lo + b. ln2_hi =
 * 355/512 has 9 significant bits, so n ln2_hi is exact for |n| < 2^15, and a - n ln2_hi is
 * exact when a is a multiple of 2^-22 or so (a = -xh^2/2 with xh of 12 bits, |xh| >= 1) and
 * the difference is below 1: the only roundings left are those of a result below 1. */
PDBX_K_INLINE float pdbx_k_exp_sum(float a, float b)
{
    const float t = (a + b) * 1.44269504088896341f + 12582912.0f;
    const float n = t - 12582912.0f;
    int32_t ni;
    memcpy(&ni, &t, sizeof ni);
    ni -= 0x4B400000;
    const float r = ((a - n * 0.693359375f) - n * -2.12194440e-4f) + b;
    return pdbx_k_exp_poly(r, ni);
}

/* Beyond |x| = 12.5 the exact GELU is x (x > 0) or below 3e-35 |x| (x < 0); the erf form
 * clamps |x| there, so exp(-x^2/2) (>= e^-78.2) and every product stay normal floats. */
#define PDBX_K_GELU_ERF_EDGE 12.5f

/* GELU, exact form: x Phi(x), Phi the standard normal CDF = erfc(-x / sqrt2) / 2, with
 *   erfc(z) = t exp(-z^2 + P(t)),  t = 1 / (1 + z/2),  z = |x| / sqrt2 >= 0
 * (Numerical Recipes' erfcc: a Chebyshev fit, fractional error < 1.2e-7 for every z >= 0).
 * Phi = erfc/2 for x < 0 and 1 - erfc/2 for x >= 0: erfc is only used where it is <= 1, so
 * the negative tail keeps its relative accuracy, where 1 + erf(x / sqrt2) cancels (torch
 * 1.13's fp32 CPU GELU, measured: relative error 4e-5 at x = -3, 4% at -5, 0 returned from
 * -6 on, where the value is -5.9e-9). z^2 = x^2/2 is split into
 * xh^2/2, exact with xh = x cut to 12 significant bits, and (x - xh)(x + xh)/2, small, for
 * pdbx_k_exp_sum (needed where there is no FMA: in the baseline clone -xh^2/2 would otherwise
 * be rounded; the FMA clones fuse x^2 into the range reduction's subtraction exactly anyway).
 * Measured over every 13th float against double erfc: relative error of the value < 6.5e-7
 * wherever |gelu(x)| > 1e-30 (6.1e-7 with FMA, 5.7e-7 without), absolute below 5e-35
 * elsewhere; derivative Phi + x phi(x), absolute error < 2.8e-7 (it crosses zero near
 * x = -0.75, so no relative bound there). x > 12.5: x and 1; x < -12.5: 0 and 0. */
PDBX_K_INLINE float pdbx_k_gelu_erf(float x, float *d)
{
    float ax = __builtin_fabsf(x);                      /* an and, not a libm call */
    ax = ax > PDBX_K_GELU_ERF_EDGE ? PDBX_K_GELU_ERF_EDGE : ax;
    const float t = 1.0f / (1.0f + 0.35355339059327376f * ax);   /* 1 / (1 + |x| / (2 sqrt2)) */
    /* P(t) - ln2 (the 1/2 of erfc/2 folded into the exponent) by Estrin's scheme: 4 levels of
     * FMA instead of Horner's 9, which left the FMA units waiting on the chain (25% faster) */
    const float t2 = t * t, t4 = t2 * t2, t8 = t4 * t4;
    const float q0 = 1.00002368f * t - 1.95865941f, q1 = 0.09678418f * t + 0.37409196f;
    const float q2 = 0.27886807f * t - 0.18628806f, q3 = 1.48851587f * t - 1.13520398f;
    const float q4 = 0.17087277f * t - 0.82215223f;
    const float p = ((q0 + q1 * t2) + (q2 + q3 * t2) * t4) + q4 * t8;
    uint32_t bits;
    memcpy(&bits, &ax, sizeof bits);
    bits &= 0xfffff000u;                                /* 12 significant bits: xh^2 exact */
    float xh;
    memcpy(&xh, &bits, sizeof xh);
    const float a = -0.5f * xh * xh, b = -0.5f * (ax - xh) * (ax + xh);
    const float h = t * pdbx_k_exp_sum(a, b + p);       /* erfc(|x| / sqrt2) / 2 */
    const float hc = 1.0f - h;
    float cdf = x < 0.0f ? h : hc;
    cdf = x < -PDBX_K_GELU_ERF_EDGE ? 0.0f : cdf;
    if (d) {
        /* phi(x) = exp(-x^2/2) / sqrt(2 pi): a second exp, of the same split argument */
        const float g = cdf + x * (0.398942280401432678f * pdbx_k_exp_sum(a, b));
        const float g1 = x < -PDBX_K_GELU_ERF_EDGE ? 0.0f : g;
        *d = x > PDBX_K_GELU_ERF_EDGE ? 1.0f : g1;
    }
    return x * cdf;
}

/* The tanh form's argument beyond which e^(-2u) is not computed: |2u| > 80 gives the limits
 * (value x or 0, derivative 1 or 0; the exact value is then below 2e-35 |x| or within
 * 2e-35 |x| of x), so every float the formula touches stays normal. */
#define PDBX_K_GELU_TANH_EDGE 80.0f

/* GELU, tanh approximation (torch's approximate="tanh"; HF gelu_new, gelu_pytorch_tanh,
 * gelu_fast, gelu_accurate): 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), evaluated
 * as x / (1 + e^(-2u)) = x sigmoid(2u), the same function without the cancellation of
 * 1 + tanh(u) for negative x (torch 1.13's fp32 kernel, measured, returns 0 from x = -5.2 on,
 * where the value is -5.7e-8). Derivative with s = 1 / (1 + e), e = e^(-2u), 1 - s = e s:
 *   s + x s (1 - s) 2u',  2u' = 2 sqrt(2/pi) (1 + 3 0.044715 x^2)
 * (torch's 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) u', as 1 - tanh^2 u = 4 s (1 - s)).
 * Measured over every 13th float against the double formula: relative error of the value
 * < 3e-7 for |x| <= 1, < 1.1e-6 for |x| <= 3, < 1.3e-5 everywhere (the fp32 rounding of 2u,
 * |2u| up to 80, is amplified by e^(-2u)'s sensitivity to it; 9.8e-6 with FMA, 1.25e-5
 * without); derivative, absolute error < 2.2e-7. */
PDBX_K_INLINE float pdbx_k_gelu_tanh(float x, float *d)
{
    const float m2u = -1.5957691216057308f * (x + 0.044715f * x * x * x);   /* -2u */
    float m = m2u > PDBX_K_GELU_TANH_EDGE ? PDBX_K_GELU_TANH_EDGE : m2u;
    m = m < -PDBX_K_GELU_TANH_EDGE ? -PDBX_K_GELU_TANH_EDGE : m;
    const float e = pdbx_k_exp(m), s = 1.0f / (1.0f + e);
    if (d) {
        const float g = s + x * (e * s) * s * (1.5957691216057308f * (1.0f + 0.134145f * x * x));
        const float g1 = m2u > PDBX_K_GELU_TANH_EDGE ? 0.0f : g;
        *d = m2u < -PDBX_K_GELU_TANH_EDGE ? 1.0f : g1;
    }
    const float xs = x * s;
    const float f = m2u > PDBX_K_GELU_TANH_EDGE ? 0.0f : xs;
    return m2u < -PDBX_K_GELU_TANH_EDGE ? x : f;
}

/* Below this |x| tanh is the odd polynomial, above it (1 - e) / (1 + e) with e = e^(-2|x|):
 * there 1 - e >= 0.71, so its rounding costs little; below it would cancel (x -> 0). */
#define PDBX_K_TANH_EDGE 0.625f

/* tanh(x) = x + x^3 Q(x^2) for |x| < PDBX_K_TANH_EDGE, Q of degree 4 fitted here (Lawson's
 * iteratively reweighted least squares in double over 4000 Chebyshev nodes, minimising the
 * relative error of tanh: 4.4e-9 before rounding); (1 - e) / (1 + e), e = pdbx_k_exp(-2|x|),
 * with x's sign, above (exactly +-1 from |x| = 9.1 on, where e < 2^-25; e clamps at e^-87,
 * so nothing denormal appears). Both sides are computed and one selected: no branch, the loops
 * vectorise. Measured over every 7th float of |x| <= 40, both signs, against double tanh, in
 * each of the three clones: relative error < 1.49e-7 (the largest just above the edge, where
 * 1 - e rounds), odd bit for bit; tests/unit/test_engine_kernels_attn_opts.c repeats it over
 * every 997th float in the clone the CPU picks. */
PDBX_K_INLINE float pdbx_k_tanh(float x)
{
    const float ax = __builtin_fabsf(x), z = x * x;
    float q = -5.70499037e-3f;
    q = q * z + 2.06390906e-2f;
    q = q * z - 5.37397163e-2f;
    q = q * z + 1.33314422e-1f;
    q = q * z - 3.33332819e-1f;
    const float small = x + x * z * q;
    const float e = pdbx_k_exp(-2.0f * ax);
    const float big = (1.0f - e) / (1.0f + e);
    const float sbig = x < 0.0f ? -big : big;
    return ax < PDBX_K_TANH_EDGE ? small : sbig;
}

PDBX_K_INLINE uint16_t pdbx_k_bf16_rne(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    const uint32_t nan = (u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu);
    const uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (uint16_t)(nan ? (u >> 16) | 0x0040u : r);
}

#endif
