/* test_engine_kernels_dense.c: the dense families' forward kernels (cpu_kernels_dense.h) against
 * naive double-precision references written from their definitions: LayerNorm, GELU (erf and
 * tanh forms, the formulas torch documents), GELU x up, the position-embedding add, and the
 * HF activation names. Every check runs on the caller alone (NULL pool) and on a pool of 3
 * threads, at sizes below and above the kernels' threading threshold (32768 elements) and with
 * odd widths (cols 1, 7, 1003), and the two results must be equal bit for bit. Outputs start as
 * NaN, so an element a kernel does not write fails its comparison. The backward kernels are in
 * test_engine_kernels_dense_bwd.c.
 *
 * Tolerances (the kernels' stated errors, cpu_kernels_vec.h, with about 2x of margin):
 *  - GELU erf form: relative 1e-6 (measured worst over every 13th float: 6.1e-7);
 *  - GELU tanh form: relative 2e-6 for |x| <= 3 (measured 1.01e-6), 2e-5 beyond (1.25e-5: the
 *    fp32 rounding of the argument 2u, up to 80, amplified by e^-2u);
 *  - LayerNorm: |y - want| <= 5e-6 (1 + |want|) (fp32 mean and variance over up to 2048 values
 *    in 16 partial sums: a few ulps of the row's scale; measured 9e-7), at mean 0 and at 1000;
 *  - the position add: exact (one fp32 addition per element, the test's own).
 * Each check prints the largest error it saw. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cpu/cpu_kernels.h"   /* pdbx_k_fill_uniform */
#include "engine/backends/cpu/cpu_kernels_dense.h"
#include "tests/unit/test_kernel_util.h"

static const double PI = 3.14159265358979323846;

/* NaN everywhere (all bits set): an element the kernel does not write fails every comparison */
static pdbx_cpu_pool *pool3(void)
{
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(3);
    assert_non_null(pool);
    assert_int_equal(pdbx_cpu_pool_threads(pool), 3);
    return pool;
}

/* |got - want| <= tol; names the element on failure. Returns the error. */
static double check_err(double got, double want, double tol, const char *what, int64_t i)
{
    const double err = fabs(got - want);
    if (!(err <= tol)) {   /* NaN (unwritten) fails too */
        print_error("%s[%lld]: got %.9g, want %.9g (error %.3g > %.3g)\n", what, (long long)i, got,
                    want, err, tol);
        fail();
    }
    return err;
}

/* ---- LayerNorm ---------------------------------------------------------------------------- */
/* torch.nn.LayerNorm's definition in double: biased variance, eps inside the sqrt */
static void ref_layernorm_row(const float *x, int64_t cols, double eps, double *mean, double *rstd)
{
    double s = 0, v = 0;
    for (int64_t j = 0; j < cols; j++)
        s += x[j];
    *mean = s / (double)cols;
    for (int64_t j = 0; j < cols; j++)
        v += (x[j] - *mean) * (x[j] - *mean);
    *rstd = 1.0 / sqrt(v / (double)cols + eps);
}

/* One shape: x uniform in [offset - 1, offset + 1], w in [-1, 1] (+ 1 for a typical weight),
 * b in [-0.5, 0.5] or none; y, mean, rstd against the reference with tolerance tol relative to
 * 1 + |want|, on NULL and on pool (identical bits). Returns the largest error of y. */
static double check_layernorm(pdbx_cpu_pool *pool, int64_t rows, int64_t cols, int bias,
                              float offset, double tol)
{
    const size_t n = (size_t)(rows * cols);
    const float eps = 1e-5f;
    float *x = randv(n, 1.0f, 1), *w = randv((size_t)cols, 1.0f, 2);
    float *b = randv((size_t)cols, 0.5f, 3);
    for (size_t i = 0; i < n; i++)
        x[i] += offset;
    for (int64_t j = 0; j < cols; j++)
        w[j] += 1.0f;
    float *y1 = nanv(n), *m1 = nanv((size_t)rows), *r1 = nanv((size_t)rows);
    float *y3 = nanv(n), *m3 = nanv((size_t)rows), *r3 = nanv((size_t)rows);
    pdbx_k_layernorm(NULL, x, w, bias ? b : NULL, rows, cols, eps, y1, m1, r1);
    double worst = 0;
    for (int64_t i = 0; i < rows; i++) {
        double mean, rstd;
        ref_layernorm_row(x + i * cols, cols, eps, &mean, &rstd);
        check_err(m1[i], mean, 1e-7 * (1 + fabs(mean)), "layernorm mean", i);   /* ~ ulp/2 */
        check_err(r1[i], rstd, 1e-5 * rstd, "layernorm rstd", i);
        for (int64_t j = 0; j < cols; j++) {
            const double want = (x[i * cols + j] - mean) * rstd * w[j] + (bias ? b[j] : 0.0);
            worst = fmax(worst, check_err(y1[i * cols + j], want, tol * (1 + fabs(want)),
                                          "layernorm y", i * cols + j));
        }
    }
    pdbx_k_layernorm(pool, x, w, bias ? b : NULL, rows, cols, eps, y3, m3, r3);
    assert_memory_equal(y3, y1, n * sizeof *y1);
    assert_memory_equal(m3, m1, (size_t)rows * sizeof *m1);
    assert_memory_equal(r3, r1, (size_t)rows * sizeof *r1);
    /* mean and rstd are optional: the same y without them */
    memset(y3, 0xff, n * sizeof *y3);
    pdbx_k_layernorm(pool, x, w, bias ? b : NULL, rows, cols, eps, y3, NULL, NULL);
    assert_memory_equal(y3, y1, n * sizeof *y1);
    free(x), free(w), free(b), free(y1), free(m1), free(r1), free(y3), free(m3), free(r3);
    return worst;
}

static void test_layernorm(void **state)
{
    (void)state;
    pdbx_cpu_pool *pool = pool3();
    static const struct { int64_t rows, cols; } shapes[] = {
        { 5, 1 }, { 9, 7 }, { 3, 1003 },               /* the caller alone */
        { 40000, 1 }, { 5000, 7 }, { 33, 1003 },       /* over the pool: rows split in chunks */
        { 64, 2048 },
    };
    double worst = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int bias = 0; bias <= 1; bias++)
            worst = fmax(worst, check_layernorm(pool, shapes[s].rows, shapes[s].cols, bias, 0.0f,
                                                5e-6));
    print_message("layernorm: largest |y - ref| / (1 + |ref|) %.3g (allowed 5e-6)\n", worst);
    pdbx_cpu_pool_destroy(pool);
}

/* Rows far from zero (mean 1000, spread 1), with the tolerance of rows at zero: E[x^2] - mean^2
 * in fp32 would lose every digit (x^2 ~ 1e6 has an ulp of 0.06, the variance is 1/3), and a
 * plain two-pass mean carries its sum's rounding into every y (about 5e-4 here); the kernel's
 * corrected mean and split deviation keep y as accurate as at zero. */
static void test_layernorm_offset(void **state)
{
    (void)state;
    pdbx_cpu_pool *pool = pool3();
    double worst = fmax(check_layernorm(pool, 7, 1003, 1, 1000.0f, 5e-6),
                        check_layernorm(pool, 40, 2048, 0, 1000.0f, 5e-6));
    print_message("layernorm at mean 1000: largest error %.3g (allowed 5e-6 (1 + |y|))\n", worst);
    pdbx_cpu_pool_destroy(pool);
}

/* ---- GELU --------------------------------------------------------------------------------- */
/* torch.nn.functional.gelu as its documentation writes it: approximate='none' x Phi(x) =
 * 0.5 x (1 + erf(x / sqrt2)); approximate='tanh' 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
static double torch_gelu(double x, pdbx_gelu_kind kind)
{
    if (kind == PDBX_GELU_ERF)
        return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / PI) * (x + 0.044715 * x * x * x)));
}

/* The same functions without the cancellation of 1 + erf and 1 + tanh for x < 0 (in double they
 * lose all digits below x = -8 or so): 1 + erf(-z) = erfc(z), 1 + tanh(u) = 2 / (1 + e^-2u). */
static double exact_gelu(double x, pdbx_gelu_kind kind)
{
    if (kind == PDBX_GELU_ERF)
        return 0.5 * x * erfc(-x / sqrt(2.0));
    return x / (1.0 + exp(-2.0 * sqrt(2.0 / PI) * (x + 0.044715 * x * x * x)));
}

/* The relative error the kernel is allowed at x (header comment). */
static double gelu_rel_tol(double x, pdbx_gelu_kind kind)
{
    if (kind == PDBX_GELU_ERF)
        return 1e-6;
    return fabs(x) <= 3.0 ? 2e-6 : 2e-5;
}

/* n values: uniform in [-6, 6], every 4th one in the negative tail [-12.5, -3] (where the
 * value is small and relative accuracy takes care: the erf form's exact split of x^2/2), then
 * the edges: 0, tiny, the tanh form's cut (|2u| = 80 near |x| = 9.3), the erf form's (12.5),
 * huge (x^3 overflows). */
static float *gelu_inputs(int64_t n, uint64_t seed)
{
    static const float edges[] = { 0.0f, 1e-30f, -1e-30f, 1.0f, -1.0f, 3.0f, -3.0f, -5.5f, 9.2f,
                                   -9.2f, 9.4f, -9.4f, 12.4f, -12.4f, 12.6f, -12.6f, 20.0f,
                                   -20.0f, 1e10f, -1e10f, 3e38f, -3e38f };
    float *x = randv((size_t)n, 6.0f, seed);
    for (int64_t i = 3; i < n; i += 4)
        x[i] = -7.75f - 0.79f * x[i];
    const int64_t ne = (int64_t)(sizeof edges / sizeof edges[0]);
    for (int64_t i = 0; i < ne && i < n; i++)
        x[n - 1 - i] = edges[i];
    return x;
}

/* gelu(x[i]) (times up[i] when up) against both references; returns the largest relative error
 * against the exact form where |want| > 1e-30. Every output is zero or a normal float. */
static double check_gelu_values(const float *x, const float *up, const float *got, int64_t n,
                                 pdbx_gelu_kind kind)
{
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        const double u = up ? up[i] : 1.0;
        const double want = exact_gelu(x[i], kind) * u, doc = torch_gelu(x[i], kind) * u;
        const double rel = gelu_rel_tol(x[i], kind);
        /* the documented formula, with its own double cancellation (2e-16 |x|) allowed */
        check_err(got[i], doc, rel * fabs(doc) + 1e-15 * (1 + fabs(x[i] * u)), "gelu vs torch", i);
        check_err(got[i], want, rel * fabs(want) + 1e-33, "gelu vs exact", i);
        if (fabs(want) > 1e-30)
            worst = fmax(worst, fabs(got[i] - want) / fabs(want));
        if (!(got[i] == 0.0f || fabsf(got[i]) >= FLT_MIN)) {
            print_error("gelu(%.9g) = %.9g: a denormal\n", x[i], got[i]);
            fail();
        }
    }
    return worst;
}

static void test_gelu(void **state)
{
    (void)state;
    pdbx_cpu_pool *pool = pool3();
    static const int64_t sizes[] = { 1, 7, 1003, 40009 };   /* 40009: 3 chunks over the pool */
    for (int k = 0; k < 2; k++) {
        const pdbx_gelu_kind kind = k ? PDBX_GELU_TANH : PDBX_GELU_ERF;
        double worst = 0;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            const int64_t n = sizes[s];
            float *x = gelu_inputs(n, 7 + s), *o1 = nanv((size_t)n), *o3 = nanv((size_t)n);
            pdbx_k_gelu(NULL, x, n, kind, o1);
            worst = fmax(worst, check_gelu_values(x, NULL, o1, n, kind));
            pdbx_k_gelu(pool, x, n, kind, o3);
            assert_memory_equal(o3, o1, (size_t)n * sizeof *o1);
            free(x), free(o1), free(o3);
        }
        print_message("gelu %s: largest relative error %.3g\n", k ? "tanh" : "erf", worst);
    }
    pdbx_cpu_pool_destroy(pool);
}

/* gelu(gate) * up: against the references, bit for bit gelu(gate) then one fp32 product (the
 * kernel's own GELU, so the product is the only step), and the same over the pool. */
static void test_gelu_mul(void **state)
{
    (void)state;
    pdbx_cpu_pool *pool = pool3();
    static const int64_t sizes[] = { 7, 1003, 40009 };
    for (int k = 0; k < 2; k++) {
        const pdbx_gelu_kind kind = k ? PDBX_GELU_TANH : PDBX_GELU_ERF;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            const int64_t n = sizes[s];
            /* up in [-1, 1]: 3e38 up stays finite */
            float *g = gelu_inputs(n, 17 + s), *u = randv((size_t)n, 1.0f, 27 + s);
            float *o1 = nanv((size_t)n), *o3 = nanv((size_t)n), *act = nanv((size_t)n);
            pdbx_k_gelu_mul(NULL, g, u, n, kind, o1);
            check_gelu_values(g, u, o1, n, kind);
            pdbx_k_gelu(NULL, g, n, kind, act);
            for (int64_t i = 0; i < n; i++)
                act[i] = act[i] * u[i];
            assert_memory_equal(o1, act, (size_t)n * sizeof *o1);
            pdbx_k_gelu_mul(pool, g, u, n, kind, o3);
            assert_memory_equal(o3, o1, (size_t)n * sizeof *o1);
            free(g), free(u), free(o1), free(o3), free(act);
        }
    }
    pdbx_cpu_pool_destroy(pool);
}

/* The two forms are different functions: at x = 1 the erf form is 0.5 (1 + erf(1/sqrt2)) =
 * 0.841344746 and the tanh form 0.5 (1 + tanh(sqrt(2/pi) 1.044715)) = 0.841191990, 1.53e-4
 * apart; the largest gap on [-5, 5] is 4.7e-4 (near |x| = 2.7). The kernel's difference must be
 * the references' (computed here, not written down) within the two kernels' errors, and both
 * agree exactly where the functions do (0; x for large x; 0 for very negative x). */
static void test_gelu_tanh_vs_erf(void **state)
{
    (void)state;
    static const float xs[] = { 1.0f, -1.0f, 0.5f, 2.7f, -2.7f, 3.0f, -4.0f };
    const int64_t n = (int64_t)(sizeof xs / sizeof xs[0]);
    float e[7], t[7];
    pdbx_k_gelu(NULL, xs, n, PDBX_GELU_ERF, e);
    pdbx_k_gelu(NULL, xs, n, PDBX_GELU_TANH, t);
    for (int64_t i = 0; i < n; i++) {
        const double want = torch_gelu(xs[i], PDBX_GELU_ERF) - torch_gelu(xs[i], PDBX_GELU_TANH);
        assert_true(fabs(want) > 1e-5);   /* a real difference, 30x the tolerance below */
        check_err((double)e[i] - (double)t[i], want, 3e-7 * (1 + fabs(xs[i])), "gelu erf - tanh",
                  i);
    }
    const double at1 = torch_gelu(1.0, PDBX_GELU_ERF) - torch_gelu(1.0, PDBX_GELU_TANH);
    assert_true(fabs(at1 - 1.5276e-4) < 1e-7);   /* the figure in the comment above */
    print_message("gelu erf - tanh at x = 1: kernels %.6g, reference %.6g\n",
                  (double)e[0] - (double)t[0], at1);
    static const float same[] = { 0.0f, 15.0f, 1e6f, -15.0f, -1e6f };
    float se[5], st[5];
    pdbx_k_gelu(NULL, same, 5, PDBX_GELU_ERF, se);
    pdbx_k_gelu(NULL, same, 5, PDBX_GELU_TANH, st);
    for (int i = 0; i < 5; i++) {
        assert_true(se[i] == st[i]);
        assert_true(se[i] == (same[i] > 0 ? same[i] : 0.0f));
    }
}

static void test_gelu_kind_of(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int rc;
        pdbx_gelu_kind kind;
    } cases[] = {
        { "gelu", 0, PDBX_GELU_ERF },           { "gelu_python", 0, PDBX_GELU_ERF },
        { "gelu_new", 0, PDBX_GELU_TANH },      { "gelu_pytorch_tanh", 0, PDBX_GELU_TANH },
        { "gelu_fast", 0, PDBX_GELU_TANH },     { "gelu_accurate", 0, PDBX_GELU_TANH },
        { "quick_gelu", -1, 0 },                { "gelu_10", -1, 0 },
        { "silu", -1, 0 },                      { "relu", -1, 0 },
        { "GELU", -1, 0 },                      { "gelu ", -1, 0 },
        { "", -1, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pdbx_gelu_kind kind = (pdbx_gelu_kind)7;   /* untouched on -1 */
        const int rc = pdbx_gelu_kind_of(cases[i].name, &kind);
        if (rc != cases[i].rc)
            print_error("pdbx_gelu_kind_of(\"%s\") = %d\n", cases[i].name, rc);
        assert_int_equal(rc, cases[i].rc);
        assert_int_equal(kind, rc == 0 ? cases[i].kind : (pdbx_gelu_kind)7);
    }
    pdbx_gelu_kind kind = PDBX_GELU_ERF;
    assert_int_equal(pdbx_gelu_kind_of(NULL, &kind), -1);
    /* gelu_fast's formula, x 0.7978845608 (1 + 0.044715 x^2), is the tanh form's argument: the
     * mapping is right only if the two agree (to double rounding) */
    for (double x = -6; x <= 6; x += 0.25) {
        const double fast = 0.5 * x * (1.0 + tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)));
        assert_true(fabs(fast - torch_gelu(x, PDBX_GELU_TANH)) < 1e-11);
    }
}

/* ---- position embeddings ------------------------------------------------------------------ */
/* x[r, :] += pos[r % seq_len, :]: one fp32 addition, so the test's own sum is the exact want */
static void check_pos_add(pdbx_cpu_pool *pool, int64_t seqs, int64_t seq_len, int64_t cols)
{
    const int64_t rows = seqs * seq_len;
    const size_t n = (size_t)(rows * cols);
    float *x = randv(n, 1.0f, 31), *pos = randv((size_t)(seq_len * cols), 1.0f, 32);
    float *want = malloc(n * sizeof *want), *x1 = malloc(n * sizeof *x1);
    float *x3 = malloc(n * sizeof *x3);
    assert_non_null(want);
    assert_non_null(x1);
    assert_non_null(x3);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            want[r * cols + c] = x[r * cols + c] + pos[(r % seq_len) * cols + c];
    memcpy(x1, x, n * sizeof *x);
    memcpy(x3, x, n * sizeof *x);
    pdbx_k_pos_embed_add(NULL, x1, pos, rows, cols, seq_len);
    assert_memory_equal(x1, want, n * sizeof *x1);
    pdbx_k_pos_embed_add(pool, x3, pos, rows, cols, seq_len);
    assert_memory_equal(x3, want, n * sizeof *x3);
    free(x), free(pos), free(want), free(x1), free(x3);
}

static void test_pos_embed_add(void **state)
{
    (void)state;
    pdbx_cpu_pool *pool = pool3();
    check_pos_add(pool, 1, 5, 1);
    check_pos_add(pool, 3, 7, 7);
    check_pos_add(pool, 2, 40, 1003);     /* 80240 elements: the pool's chunks */
    check_pos_add(pool, 5, 2000, 7);      /* 70000 elements in rows of 7 */
    pdbx_cpu_pool_destroy(pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_layernorm_offset),
        cmocka_unit_test(test_gelu),
        cmocka_unit_test(test_gelu_mul),
        cmocka_unit_test(test_gelu_tanh_vs_erf),
        cmocka_unit_test(test_gelu_kind_of),
        cmocka_unit_test(test_pos_embed_add),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
