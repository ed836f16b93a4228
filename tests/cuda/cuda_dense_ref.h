/* cuda_dense_ref.h: the host references of the dense-family kernels (cuda_kernels_dense.h)
 * that tests/cuda/test_cuda_kernels_dense.c compares the GPU against and checks itself against
 * independent formulas and central differences (its host part). In double from the inputs as
 * the kernels read them (already rounded to the dtype), with the kernels' intermediate
 * roundings to the dtype where PyTorch has them; each output rounding is the tolerance's.
 * Header-only (static inline), as tests/unit/test_export_util.h: the one-file test build of
 * engine/backends/cuda/SConscript links nothing else.
 */
#ifndef PDBX_CUDA_DENSE_REF_H
#define PDBX_CUDA_DENSE_REF_H

#include <math.h>
#include <stdint.h>

#include "engine/backends/cuda/cuda_kernels_dense.h"
#include "tests/cuda/cuda_test_util.h"


static inline double gelu_ref(double x, ck_gelu_kind k)
{
    if (k == CK_GELU_TANH)
        return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

static inline double gelu_grad_ref(double x, ck_gelu_kind k)
{
    if (k == CK_GELU_TANH) {
        const double b = sqrt(2.0 / M_PI), t = tanh(b * (x + 0.044715 * x * x * x));
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * b * (1.0 + 3.0 * 0.044715 * x * x);
    }
    return 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
}

/* The four GELU entry points: ck_gelu, ck_gelu_mul, ck_gelu_bwd, ck_gelu_mul_bwd. */
enum { OP_GELU, OP_GELU_MUL, OP_GELU_BWD, OP_GELU_MUL_BWD, OP_COUNT };

/* op's output at one element from g (x or gate), u (up), d (dout); o2 (dup) only for
 * OP_GELU_MUL_BWD, whose o1 is dgate. */
static inline void gelu_op_ref(int op, ck_gelu_kind k, pdbx_dtype dt, double g, double u,
                               double d, double *o1, double *o2)
{
    const double act = round_to(dt, (float)gelu_ref(g, k));   /* a kernel's rounded result */
    switch (op) {
    case OP_GELU: *o1 = gelu_ref(g, k); break;
    case OP_GELU_MUL: *o1 = act * u; break;
    case OP_GELU_BWD: *o1 = d * gelu_grad_ref(g, k); break;
    default:
        *o1 = gelu_grad_ref(g, k) * round_to(dt, (float)(d * u));
        *o2 = d * act;
    }
}

/* torch.nn.LayerNorm of one row (two-pass mean and biased variance); b may be NULL. */
static inline void layernorm_ref(const double *x, const double *w, const double *b, int64_t n,
                                 double eps, double *y, double *mean, double *rstd)
{
    double m = 0.0, v = 0.0;
    for (int64_t c = 0; c < n; c++)
        m += x[c];
    m /= (double)n;
    for (int64_t c = 0; c < n; c++)
        v += (x[c] - m) * (x[c] - m);
    const double r = 1.0 / sqrt(v / (double)n + eps);
    for (int64_t c = 0; c < n; c++)
        y[c] = (x[c] - m) * r * w[c] + (b ? b[c] : 0.0);
    *mean = m;
    *rstd = r;
}

/* The header's formula: dx overwritten, dw and db (may be NULL) accumulated. */
static inline void layernorm_bwd_ref(const double *x, const double *w, double mean,
                                     double rstd, const double *dy, int64_t n, double *dx,
                                     double *dw, double *db)
{
    double m1 = 0.0, m2 = 0.0;
    for (int64_t c = 0; c < n; c++) {
        m1 += w[c] * dy[c];
        m2 += w[c] * dy[c] * (x[c] - mean) * rstd;
    }
    m1 /= (double)n;
    m2 /= (double)n;
    for (int64_t c = 0; c < n; c++) {
        const double xhat = (x[c] - mean) * rstd;
        dx[c] = rstd * (w[c] * dy[c] - m1 - xhat * m2);
        dw[c] += dy[c] * xhat;
        if (db)
            db[c] += dy[c];
    }
}

/* x[r, :] += table[r / mbs, :]: row r = pos * mbs + sequence. */
static inline void pos_embed_ref(double *x, const double *table, int64_t tokens, int64_t h,
                                 int64_t mbs)
{
    for (int64_t r = 0; r < tokens; r++)
        for (int64_t c = 0; c < h; c++)
            x[r * h + c] += table[(r / mbs) * h + c];
}

/* dtable[p, :] += sum over b < mbs of dx[p * mbs + b, :]. */
static inline void pos_embed_bwd_ref(const double *dx, double *dtable, int64_t tokens,
                                     int64_t h, int64_t mbs)
{
    for (int64_t p = 0; p < tokens / mbs; p++)
        for (int64_t b = 0; b < mbs; b++)
            for (int64_t c = 0; c < h; c++)
                dtable[p * h + c] += dx[(p * mbs + b) * h + c];
}

#endif
