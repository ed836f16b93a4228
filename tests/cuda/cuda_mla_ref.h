/* cuda_mla_ref.h: double-precision references of the kernels of cuda_kernels_mla.h, written
 * from their definitions (not from the walks of cuda_mla_walk.h, which the test checks against
 * them): the strided RMSNorm and its backward, MLA's k/v gather and its transpose. Layouts of
 * cuda_mla_walk.h. Test code only (tests/cuda/test_cuda_kernels_mla.c). */
#ifndef PDBX_CUDA_MLA_REF_H
#define PDBX_CUDA_MLA_REF_H

#include <math.h>
#include <stdint.h>

#include "engine/backends/cuda/cuda_mla_walk.h"

/* y = x rstd w over the first cols of each row (rstd = 1/sqrt(mean(x^2) + eps)). */
static inline void mla_rmsnorm_ref(const double *x, int64_t ldx, const double *w, double *y, int64_t ldy,
                                   int64_t rows, int64_t cols, double eps)
{
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0.0;
        for (int64_t j = 0; j < cols; j++)
            ss += x[r * ldx + j] * x[r * ldx + j];
        const double rstd = 1.0 / sqrt(ss / (double)cols + eps);
        for (int64_t j = 0; j < cols; j++)
            y[r * ldy + j] = x[r * ldx + j] * rstd * w[j];
    }
}

/* dx (overwritten) and dw (accumulated) of L = sum dy * y; dx may be dy (each row's dy is read
 * before its dx is written). */
static inline void mla_rmsnorm_bwd_ref(const double *x, int64_t ldx, const double *w, double *dy, int64_t ldy,
                                       double *dx, int64_t lddx, double *dw, int64_t rows, int64_t cols,
                                       double eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * ldx;
        double *gr = dy + r * ldy, ss = 0.0, dot = 0.0;
        for (int64_t j = 0; j < cols; j++) {
            ss += xr[j] * xr[j];
            dot += w[j] * gr[j] * xr[j];
        }
        const double rstd = 1.0 / sqrt(ss / (double)cols + eps);
        const double coef = dot * rstd * rstd * rstd / (double)cols;
        for (int64_t j = 0; j < cols; j++) {
            const double g = gr[j];
            dw[j] += g * xr[j] * rstd;
            dx[r * lddx + j] = rstd * w[j] * g - coef * xr[j];
        }
    }
}

/* k[r, h] = (kvb[r, h, :nope], kva[r, rkv:]), v[r, h] = kvb[r, h, nope:]. */
static inline void mla_gather_ref(const double *kva, const double *kvb, double *k, double *v, int64_t rows,
                                  const ck_mla_shape *s)
{
    const int64_t kd = s->nope + s->rope, bd = s->nope + s->dv, aw = s->rkv + s->rope;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < s->heads; h++) {
            const double *b = kvb + (r * s->heads + h) * bd;
            double *kr = k + (r * s->heads + h) * kd, *vr = v + (r * s->heads + h) * s->dv;
            for (int64_t j = 0; j < s->nope; j++)
                kr[j] = b[j];
            for (int64_t j = 0; j < s->rope; j++)
                kr[s->nope + j] = kva[r * aw + s->rkv + j];
            for (int64_t j = 0; j < s->dv; j++)
                vr[j] = b[s->nope + j];
        }
}

/* The transpose: dkvb from dk's nope parts and dv; dkva's k_pe columns the sum over the heads
 * of dk's rope parts (its latent columns untouched). */
static inline void mla_scatter_ref(const double *dk, const double *dv, double *dkva, double *dkvb, int64_t rows,
                                   const ck_mla_shape *s)
{
    const int64_t kd = s->nope + s->rope, bd = s->nope + s->dv, aw = s->rkv + s->rope;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < s->rope; j++)
            dkva[r * aw + s->rkv + j] = 0.0;
        for (int64_t h = 0; h < s->heads; h++) {
            const double *kr = dk + (r * s->heads + h) * kd, *vr = dv + (r * s->heads + h) * s->dv;
            double *b = dkvb + (r * s->heads + h) * bd;
            for (int64_t j = 0; j < s->nope; j++)
                b[j] = kr[j];
            for (int64_t j = 0; j < s->dv; j++)
                b[s->nope + j] = vr[j];
            for (int64_t j = 0; j < s->rope; j++)
                dkva[r * aw + s->rkv + j] += kr[s->nope + j];
        }
    }
}

#endif
