/* test_engine_kernels_dense_bwd.c: the dense families' backward kernels (cpu_kernels_dense.h):
 *  - LayerNorm and GELU (plain and x up) against central finite differences of a double
 *    forward reference of the loss L = sum(dY * f(...)) on small cases: the kernels' gradients
 *    must be dL/d(input) of that loss;
 *  - each backward against its formula in double (torch's LayerNorm and GELU backward) at sizes
 *    on the caller alone and over a pool of 3 threads (rows or elements split in chunks, the
 *    LayerNorm weight gradients in a second pass by columns), with odd widths (cols 1, 7,
 *    1003), and the results bit for bit the same without and with the pool;
 *  - accumulation: dw, db and dpos add onto what the buffer holds; dx, dgate, dup are
 *    overwritten (they start as NaN, so an unwritten element fails).
 * Tolerances: finite differences (step 1e-6 in double, accurate to about 1e-9) against fp32
 * kernels: 2e-6 of the gradient's scale for LayerNorm (fp32 row sums over up to 37 values;
 * measured 1.2e-7), 5e-7 absolute for GELU (the derivative's stated 2.8e-7 error, x2). Against the
 * double formula: LayerNorm dx within 2e-6 of the magnitude of its terms and of the row means'
 * summands (fp32 row sums over up to 2048 values), dw, db within 2e-6 of the sum of their terms'
 * magnitudes (fp32 sums over up to 40000 rows); GELU as against finite differences.
 * Each check prints the largest error it saw. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cpu/cpu_kernels.h"   /* pdbx_k_fill_uniform */
#include "engine/backends/cpu/cpu_kernels_dense.h"
#include "tests/unit/test_kernel_util.h"

static const double PI = 3.14159265358979323846;

static float *copyv(const float *src, size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    assert_non_null(x);
    memcpy(x, src, n * sizeof *x);
    return x;
}

static pdbx_cpu_pool *pool3(void)
{
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(3);
    assert_non_null(pool);
    assert_int_equal(pdbx_cpu_pool_threads(pool), 3);
    return pool;
}

static double check_err(double got, double want, double tol, const char *what, int64_t i)
{
    const double err = fabs(got - want);
    if (!(err <= tol)) {
        print_error("%s[%lld]: got %.9g, want %.9g (error %.3g > %.3g)\n", what, (long long)i, got,
                    want, err, tol);
        fail();
    }
    return err;
}

/* ---- LayerNorm ---------------------------------------------------------------------------- */
/* L = sum dy * LayerNorm(x; w, b) in double, from the definition */
static double ln_loss(const double *x, const double *w, const double *b, const double *dy,
                      int64_t rows, int64_t cols, double eps)
{
    double L = 0;
    for (int64_t i = 0; i < rows; i++) {
        const double *xr = x + i * cols;
        double mean = 0, var = 0;
        for (int64_t j = 0; j < cols; j++)
            mean += xr[j] / (double)cols;
        for (int64_t j = 0; j < cols; j++)
            var += (xr[j] - mean) * (xr[j] - mean) / (double)cols;
        for (int64_t j = 0; j < cols; j++)
            L += dy[i * cols + j] * ((xr[j] - mean) / sqrt(var + eps) * w[j] + b[j]);
    }
    return L;
}

/* central difference of ln_loss in v[i] (v is x, w or b) */
static double ln_fd(double *v, size_t i, const double *x, const double *w, const double *b,
                    const double *dy, int64_t rows, int64_t cols, double eps)
{
    const double h = 1e-6, keep = v[i];
    v[i] = keep + h;
    const double lp = ln_loss(x, w, b, dy, rows, cols, eps);
    v[i] = keep - h;
    const double lm = ln_loss(x, w, b, dy, rows, cols, eps);
    v[i] = keep;
    return (lp - lm) / (2 * h);
}

static double *to_double(const float *x, size_t n)
{
    double *d = malloc((n ? n : 1) * sizeof *d);
    assert_non_null(d);
    for (size_t i = 0; i < n; i++)
        d[i] = x[i];
    return d;
}

/* dx, dw - 0.25, db - (-0.5) against finite differences; the forward kernel gives mean, rstd */
static double check_layernorm_fd(int64_t rows, int64_t cols)
{
    const size_t n = (size_t)(rows * cols);
    const float eps = 1e-5f;
    float *x = randv(n, 1.0f, 41), *w = randv((size_t)cols, 1.0f, 42);
    float *b = randv((size_t)cols, 0.5f, 43), *dy = randv(n, 1.0f, 44), *y = nanv(n);
    float *mean = nanv((size_t)rows), *rstd = nanv((size_t)rows), *dx = nanv(n);
    float *dw = malloc((size_t)cols * sizeof *dw), *db = malloc((size_t)cols * sizeof *db);
    assert_non_null(dw);
    assert_non_null(db);
    for (int64_t j = 0; j < cols; j++)
        dw[j] = 0.25f, db[j] = -0.5f;   /* the gradients add onto these */
    pdbx_k_layernorm(NULL, x, w, b, rows, cols, eps, y, mean, rstd);
    pdbx_k_layernorm_bwd(NULL, x, w, mean, rstd, dy, rows, cols, dx, dw, db);
    double *xd = to_double(x, n), *wd = to_double(w, (size_t)cols);
    double *bd = to_double(b, (size_t)cols), *dyd = to_double(dy, n), *fd = malloc(n * sizeof *fd);
    assert_non_null(fd);
    /* the scale of dx: its largest value, or of its terms rstd w dy (cols 1: dx is 0, the
     * difference of two such terms, one rounded and one fused into an FMA) */
    double sc = 1e-30, worst = 0;
    for (size_t i = 0; i < n; i++) {
        fd[i] = ln_fd(xd, i, xd, wd, bd, dyd, rows, cols, eps);
        const double term = rstd[i / (size_t)cols] * fabs(w[i % (size_t)cols] * dy[i]);
        sc = fmax(sc, fmax(fabs(fd[i]), term));
    }
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, check_err(dx[i], fd[i], 2e-6 * sc, "layernorm dx vs fd", (int64_t)i)
                                / sc);
    for (int64_t j = 0; j < cols; j++) {
        const double fw = ln_fd(wd, (size_t)j, xd, wd, bd, dyd, rows, cols, eps);
        const double fb = ln_fd(bd, (size_t)j, xd, wd, bd, dyd, rows, cols, eps);
        check_err(dw[j] - 0.25, fw, 2e-6 * (1 + fabs(fw)), "layernorm dw vs fd", j);
        check_err(db[j] + 0.5, fb, 2e-6 * (1 + fabs(fb)), "layernorm db vs fd", j);
    }
    free(x), free(w), free(b), free(dy), free(y), free(mean), free(rstd), free(dx), free(dw);
    free(db);
    free(xd), free(wd), free(bd), free(dyd), free(fd);
    return worst;
}

static void test_layernorm_bwd_fd(void **state)
{
    (void)state;
    double worst = fmax(fmax(check_layernorm_fd(4, 7), check_layernorm_fd(3, 37)),
                        check_layernorm_fd(3, 1));
    print_message("layernorm bwd vs finite differences: largest dx error %.3g of its scale (allowed"
                  " 2e-6)\n", worst);
}

/* The formula in double (double mean and rstd) against the kernel fed the forward kernel's
 * fp32 mean and rstd; dw, db accumulated onto random values; NULL against a pool of 3 (the
 * one-pass and the two-pass schedules) bit for bit; db NULL leaves dw as it was with db. */
static double check_layernorm_bwd(pdbx_cpu_pool *pool, int64_t rows, int64_t cols, double *worst_w)
{
    const size_t n = (size_t)(rows * cols);
    float *x = randv(n, 1.0f, 51), *w = randv((size_t)cols, 1.0f, 52), *dy = randv(n, 1.0f, 53);
    float *dw0 = randv((size_t)cols, 1.0f, 54), *db0 = randv((size_t)cols, 1.0f, 55);
    float *y = nanv(n), *mean = nanv((size_t)rows), *rstd = nanv((size_t)rows);
    pdbx_k_layernorm(NULL, x, w, NULL, rows, cols, 1e-5f, y, mean, rstd);
    float *dx1 = nanv(n), *dw1 = copyv(dw0, (size_t)cols), *db1 = copyv(db0, (size_t)cols);
    pdbx_k_layernorm_bwd(NULL, x, w, mean, rstd, dy, rows, cols, dx1, dw1, db1);
    double *wdw = calloc((size_t)cols, sizeof *wdw), *wdb = calloc((size_t)cols, sizeof *wdb);
    double *adw = calloc((size_t)cols, sizeof *adw), *adb = calloc((size_t)cols, sizeof *adb);
    assert_true(wdw && wdb && adw && adb);
    double worst = 0;
    for (int64_t i = 0; i < rows; i++) {
        const float *xr = x + i * cols, *g = dy + i * cols;
        double mu = 0, var = 0, s1 = 0, s2 = 0, a1 = 0, a2 = 0;
        for (int64_t j = 0; j < cols; j++)
            mu += xr[j] / (double)cols;
        for (int64_t j = 0; j < cols; j++)
            var += (xr[j] - mu) * (xr[j] - mu) / (double)cols;
        const double rs = 1.0 / sqrt(var + 1e-5);
        for (int64_t j = 0; j < cols; j++) {
            s1 += w[j] * g[j] / (double)cols;
            s2 += w[j] * g[j] * (xr[j] - mu) * rs / (double)cols;
            a1 += fabs(w[j] * g[j]) / (double)cols;
            a2 += fabs(w[j] * g[j] * (xr[j] - mu) * rs) / (double)cols;
        }
        for (int64_t j = 0; j < cols; j++) {
            /* dx is a difference of three terms, two of them means over the row: its error
             * scales with the terms and the means' summands (cols 1: rstd = 316 and dx = 0, w dy
             * rounded in one term and fused into an FMA in the other) */
            const double xh = (xr[j] - mu) * rs, want = rs * (w[j] * g[j] - s1 - xh * s2);
            const double scale = rs * (fabs(w[j] * g[j]) + a1 + fabs(xh) * a2);
            worst = fmax(worst, check_err(dx1[i * cols + j], want, 2e-6 * scale + 1e-30,
                                          "layernorm dx", i * cols + j) / scale);
            wdw[j] += g[j] * xh, adw[j] += fabs(g[j] * xh);
            wdb[j] += g[j], adb[j] += fabs(g[j]);
        }
    }
    for (int64_t j = 0; j < cols; j++) {
        const double mw = adw[j] + fabs(dw0[j]), mb = adb[j] + fabs(db0[j]);
        *worst_w = fmax(*worst_w, check_err(dw1[j], dw0[j] + wdw[j], 2e-6 * mw, "dw", j) / mw);
        *worst_w = fmax(*worst_w, check_err(db1[j], db0[j] + wdb[j], 2e-6 * mb, "db", j) / mb);
    }
    float *dx3 = nanv(n), *dw3 = copyv(dw0, (size_t)cols), *db3 = copyv(db0, (size_t)cols);
    pdbx_k_layernorm_bwd(pool, x, w, mean, rstd, dy, rows, cols, dx3, dw3, db3);
    assert_memory_equal(dx3, dx1, n * sizeof *dx1);
    assert_memory_equal(dw3, dw1, (size_t)cols * sizeof *dw1);
    assert_memory_equal(db3, db1, (size_t)cols * sizeof *db1);
    memcpy(dw3, dw0, (size_t)cols * sizeof *dw3);
    pdbx_k_layernorm_bwd(pool, x, w, mean, rstd, dy, rows, cols, dx3, dw3, NULL);
    assert_memory_equal(dw3, dw1, (size_t)cols * sizeof *dw1);
    free(x), free(w), free(dy), free(dw0), free(db0), free(y), free(mean), free(rstd);
    free(dx1), free(dw1), free(db1), free(dx3), free(dw3), free(db3), free(wdw), free(wdb);
    free(adw), free(adb);
    return worst;
}

static void test_layernorm_bwd(void **state)
{
    (void)state;
    pdbx_cpu_pool *pool = pool3();
    static const struct { int64_t rows, cols; } shapes[] = {
        { 5, 1 }, { 9, 7 }, { 3, 1003 },                   /* the caller alone */
        { 40000, 1 }, { 5000, 7 }, { 33, 1003 }, { 64, 2048 },   /* two passes over the pool */
    };
    double worst = 0, worst_w = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        worst = fmax(worst, check_layernorm_bwd(pool, shapes[s].rows, shapes[s].cols, &worst_w));
    print_message("layernorm bwd: largest dx error %.3g of its terms' scale (allowed 2e-6), dw and"
                  " db %.3g of their terms' (allowed 2e-6)\n", worst, worst_w);
    pdbx_cpu_pool_destroy(pool);
}

/* ---- GELU --------------------------------------------------------------------------------- */
/* gelu in double without cancellation (test_engine_kernels_dense.c: 1 + erf(-z) = erfc(z),
 * 1 + tanh(u) = 2 / (1 + e^-2u)) */
static double gelu_d(double x, pdbx_gelu_kind kind)
{
    if (kind == PDBX_GELU_ERF)
        return 0.5 * x * erfc(-x / sqrt(2.0));
    return x / (1.0 + exp(-2.0 * sqrt(2.0 / PI) * (x + 0.044715 * x * x * x)));
}

/* torch's gelu_backward (aten GeluBackward) written out: erf: cdf + x pdf; tanh:
 * 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 0.044715 x^2) */
static double torch_gelu_grad(double x, pdbx_gelu_kind kind)
{
    if (kind == PDBX_GELU_ERF)
        return 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2.0 * PI);
    const double c = sqrt(2.0 / PI), t = tanh(c * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

/* n inputs: uniform in [-6, 6], then the edges (both forms' cuts, huge values) */
static float *gelu_inputs(int64_t n, uint64_t seed)
{
    static const float edges[] = { 0.0f, 1e-30f, -0.75f, 9.2f, -9.2f, 9.4f, -9.4f, 12.4f, -12.4f,
                                   12.6f, -12.6f, 1e10f, -1e10f, 3e38f, -3e38f };
    float *x = randv((size_t)n, 6.0f, seed);
    const int64_t ne = (int64_t)(sizeof edges / sizeof edges[0]);
    for (int64_t i = 0; i < ne && i < n; i++)
        x[n - 1 - i] = edges[i];
    return x;
}

/* Both kinds, plain and x up: dgate against central finite differences of gelu_d and against
 * torch's formula (5e-7 absolute per unit of dout * up); dup against dout * gelu in double; NULL
 * against a pool of 3 bit for bit. */
static double check_gelu_bwd(pdbx_cpu_pool *pool, int64_t n, pdbx_gelu_kind kind, int with_up)
{
    float *g = gelu_inputs(n, 61 + (uint64_t)n), *u = randv((size_t)n, 1.0f, 62);
    float *dout = randv((size_t)n, 1.0f, 63), *dg1 = nanv((size_t)n), *du1 = nanv((size_t)n);
    float *dg3 = nanv((size_t)n), *du3 = nanv((size_t)n);
    if (with_up)
        pdbx_k_gelu_mul_bwd(NULL, g, u, dout, n, kind, dg1, du1);
    else
        pdbx_k_gelu_bwd(NULL, g, dout, n, kind, dg1);
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        const double x = g[i], s = (double)dout[i] * (with_up ? u[i] : 1.0);
        const double torch = s * torch_gelu_grad(x, kind);
        worst = fmax(worst, check_err(dg1[i], torch, 5e-7 * fabs(s) + 1e-30, "gelu dx vs torch",
                                      i));
        if (fabs(x) < 20) {   /* where a finite difference is meaningful */
            const double h = 1e-6, fd = s * (gelu_d(x + h, kind) - gelu_d(x - h, kind)) / (2 * h);
            check_err(dg1[i], fd, 5e-7 * fabs(s) + 1e-9, "gelu dx vs fd", i);
        }
    }
    if (with_up) {
        /* dup = dout * gelu(g), within the forward's tolerance (test_engine_kernels_dense.c) */
        for (int64_t i = 0; i < n; i++) {
            const double want = (double)dout[i] * gelu_d(g[i], kind);
            const double rel = kind == PDBX_GELU_ERF ? 1e-6 : fabs(g[i]) <= 3.0f ? 2e-6 : 2e-5;
            check_err(du1[i], want, rel * fabs(want) + 1e-33, "gelu x up dup", i);
        }
        pdbx_k_gelu_mul_bwd(pool, g, u, dout, n, kind, dg3, du3);
        assert_memory_equal(du3, du1, (size_t)n * sizeof *du1);
    } else {
        pdbx_k_gelu_bwd(pool, g, dout, n, kind, dg3);
    }
    assert_memory_equal(dg3, dg1, (size_t)n * sizeof *dg1);
    free(g), free(u), free(dout), free(dg1), free(du1), free(dg3), free(du3);
    return worst;
}

static void test_gelu_bwd(void **state)
{
    (void)state;
    pdbx_cpu_pool *pool = pool3();
    static const int64_t sizes[] = { 1, 7, 1003, 40009 };
    for (int k = 0; k < 2; k++)
        for (int with_up = 0; with_up <= 1; with_up++) {
            double worst = 0;
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                worst = fmax(worst, check_gelu_bwd(pool, sizes[s],
                                                   k ? PDBX_GELU_TANH : PDBX_GELU_ERF, with_up));
            print_message("gelu%s bwd %s: largest |dgate - torch| %.3g per unit of dout%s\n",
                          with_up ? " x up" : "", k ? "tanh" : "erf", worst,
                          with_up ? " * up" : "");
        }
    pdbx_cpu_pool_destroy(pool);
}

/* ---- position embeddings ------------------------------------------------------------------ */
/* dpos[p] += sum of dx's rows at position p: against double sums onto random initial values,
 * NULL against a pool of 3 bit for bit; and the adjoint identity with the forward:
 * <dY, pos_add(0, P)> = <P, pos_bwd(dY)> (from a zero dpos). */
static void check_pos_bwd(pdbx_cpu_pool *pool, int64_t seqs, int64_t seq_len, int64_t cols)
{
    const int64_t rows = seqs * seq_len;
    const size_t n = (size_t)(rows * cols), np = (size_t)(seq_len * cols);
    float *dx = randv(n, 1.0f, 71), *dp0 = randv(np, 1.0f, 72);
    float *dp1 = copyv(dp0, np), *dp3 = copyv(dp0, np);
    pdbx_k_pos_embed_bwd(NULL, dx, rows, cols, seq_len, dp1);
    for (int64_t p = 0; p < seq_len; p++)
        for (int64_t c = 0; c < cols; c++) {
            double want = dp0[p * cols + c], mag = fabs(want);
            for (int64_t r = p; r < rows; r += seq_len)
                want += dx[r * cols + c], mag += fabs(dx[r * cols + c]);
            check_err(dp1[p * cols + c], want, 1e-6 * mag, "dpos", p * cols + c);
        }
    pdbx_k_pos_embed_bwd(pool, dx, rows, cols, seq_len, dp3);
    assert_memory_equal(dp3, dp1, np * sizeof *dp1);
    float *P = randv(np, 1.0f, 73), *y = calloc(n, sizeof *y), *dz = calloc(np, sizeof *dz);
    assert_non_null(y);
    assert_non_null(dz);
    pdbx_k_pos_embed_add(pool, y, P, rows, cols, seq_len);
    pdbx_k_pos_embed_bwd(pool, dx, rows, cols, seq_len, dz);
    double lhs = 0, rhs = 0, mag = 0;
    for (size_t i = 0; i < n; i++)
        lhs += (double)dx[i] * y[i], mag += fabs((double)dx[i] * y[i]);
    for (size_t i = 0; i < np; i++)
        rhs += (double)P[i] * dz[i];
    check_err(rhs, lhs, 1e-6 * mag, "pos adjoint", 0);
    free(dx), free(dp0), free(dp1), free(dp3), free(P), free(y), free(dz);
}

static void test_pos_embed_bwd(void **state)
{
    (void)state;
    pdbx_cpu_pool *pool = pool3();
    check_pos_bwd(pool, 1, 5, 1);
    check_pos_bwd(pool, 3, 7, 7);
    check_pos_bwd(pool, 4, 20, 300);     /* 24000 elements: the caller alone, 2 column tiles */
    check_pos_bwd(pool, 2, 40, 1003);    /* 80240: tiles of 16 positions x 256 columns */
    check_pos_bwd(pool, 7, 33, 300);     /* 69300: partial tiles both ways */
    pdbx_cpu_pool_destroy(pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layernorm_bwd_fd),
        cmocka_unit_test(test_layernorm_bwd),
        cmocka_unit_test(test_gelu_bwd),
        cmocka_unit_test(test_pos_embed_bwd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
