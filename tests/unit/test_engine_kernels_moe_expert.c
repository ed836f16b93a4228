/* test_engine_kernels_moe_expert.c: the grouped expert MLP kernels (cpu_kernels_moe.h) and the
 * MoE layer they make with permute and unpermute.
 *  - the per-expert GEMM and its backward against naive loops in double, with experts of 0, 1
 *    and many rows and offsets not starting at row 0: rows outside the experts' range keep their
 *    bytes, an empty expert's weight gradient keeps its values, dx is overwritten or added;
 *  - the gated activation (SiLU, GELU tanh, GELU erf) against its definition in double, and its
 *    backward against central finite differences; bit for bit the same over a pool of 3;
 *  - the whole layer, y = unpermute(down(act(gate(P x), up(P x))), w) for a fixed assignment:
 *    the gradients of x, the three expert weights and the routing weights from the chain of
 *    backward kernels against central finite differences of a double forward of the layer,
 *    L = sum dY * y.
 * Tolerances: GEMM outputs within 1e-6 of the sum of their terms' magnitudes (fp32 sums of up to
 * a few hundred products); activations within 2e-6 relative plus 1e-7 (the backend's exp and
 * GELU: cpu_kernels_vec.h states < 1.3e-5 relative for the tanh form at large |x|, below
 * 1.1e-6 for |x| <= 3, the range tested); layer gradients within 2e-6 of the largest of their
 * tensor (fp32 through four kernels; finite differences with step 1e-6 in double). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cpu/cpu_kernels.h"   /* pdbx_k_fill_uniform */
#include "engine/backends/cpu/cpu_kernels_moe.h"
#include "tests/unit/test_kernel_util.h"

static float *copyv(const float *src, size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    assert_non_null(x);
    memcpy(x, src, n * sizeof *x);
    return x;
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

/* ---- grouped GEMM ------------------------------------------------------------------------- */
static void test_expert_gemm(void **state)
{
    (void)state;
    enum { E = 5, IN = 24, OUT = 17, LEAD = 3, TAIL = 2 };
    const int64_t n[E] = { 7, 0, 13, 1, 0 };
    int64_t off[E + 1] = { LEAD };
    for (int e = 0; e < E; e++)
        off[e + 1] = off[e] + n[e];
    const int64_t rows = off[E] + TAIL;
    float *x = randv((size_t)(rows * IN), 1.0f, 1), *w = randv((size_t)E * IN * OUT, 1.0f, 2);
    float *dy = randv((size_t)(rows * OUT), 1.0f, 3), *y = nanv((size_t)(rows * OUT));
    float *dx = randv((size_t)(rows * IN), 1.0f, 4), *dx0 = copyv(dx, (size_t)(rows * IN));
    float *dw = randv((size_t)E * IN * OUT, 1.0f, 5), *dw0 = copyv(dw, (size_t)E * IN * OUT);
    float *y2 = nanv((size_t)(rows * OUT));
    pdbx_k_moe_expert_gemm(x, w, off, E, IN, OUT, y);
    pdbx_k_moe_expert_gate(x, w, off, E, IN, OUT, y2);   /* the named projections are this GEMM */
    assert_memory_equal(y, y2, (size_t)(rows * OUT) * 4);
    pdbx_k_moe_expert_gemm_bwd(x, w, dy, off, E, IN, OUT, dx, 1, dw);
    for (int e = 0; e < E; e++) {
        const float *we = w + (size_t)e * IN * OUT;
        for (int64_t r = off[e]; r < off[e + 1]; r++) {
            for (int o = 0; o < OUT; o++) {
                double s = 0.0, m = 0.0;
                for (int i = 0; i < IN; i++)
                    s += (double)x[r * IN + i] * we[i * OUT + o], m += fabs((double)x[r * IN + i] * we[i * OUT + o]);
                check_err(y[r * OUT + o], s, 1e-6 * m, "y", r * OUT + o);
            }
            for (int i = 0; i < IN; i++) {
                double s = dx0[r * IN + i], m = fabs(s);
                for (int o = 0; o < OUT; o++)
                    s += (double)dy[r * OUT + o] * we[i * OUT + o], m += fabs((double)dy[r * OUT + o] * we[i * OUT + o]);
                check_err(dx[r * IN + i], s, 1e-6 * m, "dx (added)", r * IN + i);
            }
        }
        for (int i = 0; i < IN * OUT; i++) {
            double s = dw0[(size_t)e * IN * OUT + i], m = fabs(s);
            for (int64_t r = off[e]; r < off[e + 1]; r++)
                s += (double)x[r * IN + i / OUT] * dy[r * OUT + i % OUT],
                m += fabs((double)x[r * IN + i / OUT] * dy[r * OUT + i % OUT]);
            check_err(dw[(size_t)e * IN * OUT + i], s, 1e-6 * m, "dw", (int64_t)e * IN * OUT + i);
            if (n[e] == 0)
                assert_true(dw[(size_t)e * IN * OUT + i] == dw0[(size_t)e * IN * OUT + i]);
        }
    }
    /* rows before and after the experts' range: untouched */
    float *nan1 = nanv((size_t)(rows * OUT));
    assert_memory_equal(y, nan1, (size_t)(LEAD * OUT) * 4);
    assert_memory_equal(y + off[E] * OUT, nan1, (size_t)(TAIL * OUT) * 4);
    assert_memory_equal(dx, dx0, (size_t)(LEAD * IN) * 4);
    assert_memory_equal(dx + off[E] * IN, dx0 + off[E] * IN, (size_t)(TAIL * IN) * 4);
    /* dx overwritten without dx_accumulate: a NaN start must not survive */
    float *dxn = nanv((size_t)(rows * IN));
    pdbx_k_moe_expert_down_bwd(x, w, dy, off, E, IN, OUT, dxn, dw);
    for (int64_t r = off[0]; r < off[E]; r++)
        for (int i = 0; i < IN; i++)
            assert_true(isfinite(dxn[r * IN + i]));
    free(x), free(w), free(dy), free(y), free(dx), free(dx0), free(dw), free(dw0), free(y2);
    free(nan1), free(dxn);
}

/* ---- activation --------------------------------------------------------------------------- */
static double act_ref(pdbx_moe_act kind, double g)
{
    if (kind == PDBX_MOE_ACT_SILU)
        return g / (1.0 + exp(-g));
    if (kind == PDBX_MOE_ACT_GELU_TANH)
        return 0.5 * g * (1.0 + tanh(0.79788456080286536 * (g + 0.044715 * g * g * g)));
    return 0.5 * g * (1.0 + erf(g / 1.4142135623730951));
}

static void test_expert_act(void **state)
{
    (void)state;
    const int64_t rows = 101, inter = 700, n = rows * inter;   /* 70700 values: pooled */
    float *g = randv((size_t)n, 3.0f, 21), *u = randv((size_t)n, 1.0f, 22);
    float *da = randv((size_t)n, 1.0f, 23);
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(3);
    assert_non_null(pool);
    for (int kind = 0; kind < 3; kind++) {
        float *a = nanv((size_t)n), *a3 = nanv((size_t)n), *dg = nanv((size_t)n);
        float *du = nanv((size_t)n), *dg3 = nanv((size_t)n), *du3 = nanv((size_t)n);
        pdbx_k_moe_expert_act(NULL, g, u, rows, inter, (pdbx_moe_act)kind, a);
        pdbx_k_moe_expert_act(pool, g, u, rows, inter, (pdbx_moe_act)kind, a3);
        pdbx_k_moe_expert_act_bwd(NULL, g, u, da, rows, inter, (pdbx_moe_act)kind, dg, du);
        pdbx_k_moe_expert_act_bwd(pool, g, u, da, rows, inter, (pdbx_moe_act)kind, dg3, du3);
        assert_memory_equal(a, a3, (size_t)n * 4);
        assert_memory_equal(dg, dg3, (size_t)n * 4);
        assert_memory_equal(du, du3, (size_t)n * 4);
        double worst = 0.0;
        for (int64_t i = 0; i < n; i++) {
            const double f = act_ref((pdbx_moe_act)kind, g[i]), h = 1e-6;
            const double fd = (act_ref((pdbx_moe_act)kind, (double)g[i] + h) -
                               act_ref((pdbx_moe_act)kind, (double)g[i] - h)) / (2 * h);
            const double want_a = f * u[i], want_dg = da[i] * u[i] * fd, want_du = da[i] * f;
            worst = fmax(worst, check_err(a[i], want_a, 2e-6 * fabs(want_a) + 1e-7, "act", i));
            worst = fmax(worst, check_err(dg[i], want_dg, 2e-6 * fabs(want_dg) + 1e-7, "dgate", i));
            worst = fmax(worst, check_err(du[i], want_du, 2e-6 * fabs(want_du) + 1e-7, "dup", i));
        }
        print_message("act kind %d: worst error %.3g\n", kind, worst);
        free(a), free(a3), free(dg), free(du), free(dg3), free(du3);
    }
    pdbx_cpu_pool_destroy(pool);
    free(g), free(u), free(da);
}

/* ---- the layer ---------------------------------------------------------------------------- */
enum { LT = 6, LH = 8, LI = 5, LE = 4, LK = 2 };

typedef struct {
    double x[LT * LH], wg[LE * LH * LI], wu[LE * LH * LI], wd[LE * LI * LH], w[LT * LK];
} layer_params;

/* L = sum dy * y of the layer in double, from the definition. */
static double layer_loss(const layer_params *p, const int32_t *idx, const float *dy, pdbx_moe_act kind)
{
    double L = 0.0;
    for (int t = 0; t < LT; t++)
        for (int j = 0; j < LK; j++) {
            const int e = idx[t * LK + j];
            double act[LI];
            for (int i = 0; i < LI; i++) {
                double gs = 0.0, us = 0.0;
                for (int c = 0; c < LH; c++) {
                    gs += p->x[t * LH + c] * p->wg[(e * LH + c) * LI + i];
                    us += p->x[t * LH + c] * p->wu[(e * LH + c) * LI + i];
                }
                act[i] = act_ref(kind, gs) * us;
            }
            for (int c = 0; c < LH; c++) {
                double o = 0.0;
                for (int i = 0; i < LI; i++)
                    o += act[i] * p->wd[(e * LI + i) * LH + c];
                L += dy[t * LH + c] * p->w[t * LK + j] * o;
            }
        }
    return L;
}

/* Central differences of layer_loss over every element of one parameter tensor against got. */
static void fd_check(layer_params *p, double *v, int n, const float *got, const int32_t *idx,
                     const float *dy, pdbx_moe_act kind, const char *what)
{
    double *fd = malloc((size_t)n * sizeof *fd), big = 0.0, worst = 0.0;
    assert_non_null(fd);
    for (int i = 0; i < n; i++) {
        const double h = 1e-6, v0 = v[i];
        v[i] = v0 + h;
        const double up = layer_loss(p, idx, dy, kind);
        v[i] = v0 - h;
        const double dn = layer_loss(p, idx, dy, kind);
        v[i] = v0;
        fd[i] = (up - dn) / (2 * h);
        big = fmax(big, fabs(fd[i]));
    }
    for (int i = 0; i < n; i++)
        worst = fmax(worst, check_err(got[i], fd[i], 2e-6 * big, what, i));
    print_message("layer %s: worst error %.3g of largest %.3g\n", what, worst, big);
    free(fd);
}

static void check_layer(pdbx_moe_act kind)
{
    /* expert 3 gets no token, expert 0 three */
    static const int32_t idx[LT * LK] = { 0, 1, 2, 0, 1, 2, 0, 2, 1, 2, 2, 1 };
    float *x = randv(LT * LH, 1.0f, 51), *wg = randv(LE * LH * LI, 0.5f, 52);
    float *wu = randv(LE * LH * LI, 0.5f, 53), *wd = randv(LE * LI * LH, 0.5f, 54);
    float *w = randv(LT * LK, 1.0f, 55), *dy = randv(LT * LH, 1.0f, 56);
    int64_t off[LE + 1], pos[LT * LK];
    enum { N = LT * LK };
    float X[N * LH], G[N * LI], U[N * LI], A[N * LI], O[N * LH], Y[LT * LH];
    pdbx_k_moe_route_index(idx, LT, LK, LE, off, pos);
    pdbx_k_moe_permute(NULL, x, pos, LT, LH, LK, X);
    pdbx_k_moe_expert_gate(X, wg, off, LE, LH, LI, G);
    pdbx_k_moe_expert_up(X, wu, off, LE, LH, LI, U);
    pdbx_k_moe_expert_act(NULL, G, U, N, LI, kind, A);
    pdbx_k_moe_expert_down(A, wd, off, LE, LI, LH, O);
    pdbx_k_moe_unpermute(NULL, O, w, pos, LT, LH, LK, Y);

    float dO[N * LH], dw[N], dA[N * LI], dG[N * LI], dU[N * LI], dX[N * LH], dx[LT * LH];
    float *dwg = calloc(LE * LH * LI, 4), *dwu = calloc(LE * LH * LI, 4), *dwd = calloc(LE * LI * LH, 4);
    assert_true(dwg && dwu && dwd);
    pdbx_k_moe_unpermute_bwd(NULL, O, w, pos, dy, LT, LH, LK, dO, dw);
    pdbx_k_moe_expert_down_bwd(A, wd, dO, off, LE, LI, LH, dA, dwd);
    pdbx_k_moe_expert_act_bwd(NULL, G, U, dA, N, LI, kind, dG, dU);
    pdbx_k_moe_expert_gate_bwd(X, wg, dG, off, LE, LH, LI, dX, 0, dwg);
    pdbx_k_moe_expert_up_bwd(X, wu, dU, off, LE, LH, LI, dX, 1, dwu);
    pdbx_k_moe_permute_bwd(NULL, dX, pos, LT, LH, LK, dx);

    static layer_params p;
    for (int i = 0; i < LT * LH; i++)
        p.x[i] = x[i];
    for (int i = 0; i < LE * LH * LI; i++)
        p.wg[i] = wg[i], p.wu[i] = wu[i], p.wd[i] = wd[i];
    for (int i = 0; i < LT * LK; i++)
        p.w[i] = w[i];
    /* the forward itself: y . dy is the loss */
    double L = 0.0, m = 0.0;
    for (int i = 0; i < LT * LH; i++)
        L += (double)Y[i] * dy[i], m += fabs((double)Y[i] * dy[i]);
    check_err(L, layer_loss(&p, idx, dy, kind), 1e-5 * m, "loss", 0);
    fd_check(&p, p.x, LT * LH, dx, idx, dy, kind, "dx");
    fd_check(&p, p.wg, LE * LH * LI, dwg, idx, dy, kind, "dw_gate");
    fd_check(&p, p.wu, LE * LH * LI, dwu, idx, dy, kind, "dw_up");
    fd_check(&p, p.wd, LE * LI * LH, dwd, idx, dy, kind, "dw_down");
    fd_check(&p, p.w, LT * LK, dw, idx, dy, kind, "d routing weights");
    free(x), free(wg), free(wu), free(wd), free(w), free(dy), free(dwg), free(dwu), free(dwd);
}

static void test_layer_fd(void **state)
{
    (void)state;
    for (int kind = 0; kind < 3; kind++)
        check_layer((pdbx_moe_act)kind);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expert_gemm),
        cmocka_unit_test(test_expert_act),
        cmocka_unit_test(test_layer_fd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
