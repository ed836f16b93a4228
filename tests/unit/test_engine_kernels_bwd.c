/* test_engine_kernels_bwd.c: the cpu backend's backward pass.
 *  - each backward kernel (cpu_kernels_bwd.h) against central finite differences of a
 *    double-precision forward reference of a scalar loss L = sum(dY * f(x)): the kernel's
 *    gradients must be dL/dx of that loss (the attention core's: test_engine_kernels_attn_bwd.c);
 *  - the GEMM ops' dgrad and wgrad through the backend (run_op bwd) against naive products;
 *  - the backend runs every op's bwd (fp32 and, where OpenBLAS has sbgemm, bf16) and refuses a
 *    bwd pass on a point prepared without it;
 *  - prepare allocates exactly the planner's bwd buffers (resident memory within 2%);
 * `test_engine_kernels_bwd --ratios MODEL SEQ MBS` prints the bwd/fwd median ratio of every op
 * of the model preset at that point (one layer, fp32, BLAS threads from $PDBX_BWD_THREADS or
 * 2) instead of running the tests (bench/bwd_ratio.sh: lm_head's ratio against its 1.5..3 goal;
 * a timing figure is not a unit test). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cpu/cpu_compute.h"
#include "engine/backends/cpu/cpu_internal.h"
#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_bwd.h"

#include "tests/unit/test_bwd_util.h"
#include "tests/unit/test_cpu_point.h"

/* ---- RMSNorm --------------------------------------------------------------------------- */
static double rmsnorm_loss(const double *x, const double *w, const double *dy, int64_t rows,
                           int64_t cols, double eps)
{
    double L = 0;
    for (int64_t i = 0; i < rows; i++) {
        double ss = 0;
        for (int64_t j = 0; j < cols; j++)
            ss += x[i * cols + j] * x[i * cols + j];
        double inv = 1.0 / sqrt(ss / cols + eps);
        for (int64_t j = 0; j < cols; j++)
            L += dy[i * cols + j] * x[i * cols + j] * inv * w[j];
    }
    return L;
}

static void test_rmsnorm_bwd(void **state)
{
    (void)state;
    const int64_t rows = 5, cols = 37;   /* not a multiple of the 16 partial sums */
    const size_t n = (size_t)(rows * cols);
    const float eps = 1e-5f;
    float *x = randv(n, 1), *w = randv((size_t)cols, 2), *dy = randv(n, 3);
    float *dx = calloc(n, sizeof *dx), *dw = malloc((size_t)cols * sizeof *dw);
    for (int64_t j = 0; j < cols; j++)
        dw[j] = 0.25f;   /* accumulates onto what is there */
    pdbx_k_rmsnorm_bwd(x, w, dy, rows, cols, eps, dx, dw);
    double *xd = malloc(n * sizeof *xd), *wd = malloc((size_t)cols * sizeof *wd),
           *dyd = malloc(n * sizeof *dyd), *fd = malloc(n * sizeof *fd);
    for (size_t i = 0; i < n; i++)
        xd[i] = x[i], dyd[i] = dy[i];
    for (int64_t j = 0; j < cols; j++)
        wd[j] = w[j];
    const double h = 1e-6;
    for (size_t i = 0; i < n; i++) {
        double keep = xd[i];
        xd[i] = keep + h;
        double lp = rmsnorm_loss(xd, wd, dyd, rows, cols, eps);
        xd[i] = keep - h;
        double lm = rmsnorm_loss(xd, wd, dyd, rows, cols, eps);
        xd[i] = keep;
        fd[i] = (lp - lm) / (2 * h);
    }
    double sc = max_abs(fd, n);
    for (size_t i = 0; i < n; i++)
        assert_close(dx[i], fd[i], 1e-4, sc, "rmsnorm dx", i);
    for (int64_t j = 0; j < cols; j++) {
        double keep = wd[j];
        wd[j] = keep + h;
        double lp = rmsnorm_loss(xd, wd, dyd, rows, cols, eps);
        wd[j] = keep - h;
        double lm = rmsnorm_loss(xd, wd, dyd, rows, cols, eps);
        wd[j] = keep;
        assert_close(dw[j] - 0.25, (lp - lm) / (2 * h), 1e-4, 1.0, "rmsnorm dw", (size_t)j);
    }
    free(x), free(w), free(dy), free(dx), free(dw), free(xd), free(wd), free(dyd), free(fd);
}

/* ---- SiLU x up ------------------------------------------------------------------------- */
static void test_silu_mul_bwd(void **state)
{
    (void)state;
    const int64_t n = 999;
    float *g = randv((size_t)n, 5), *u = randv((size_t)n, 6), *dout = randv((size_t)n, 7);
    for (int64_t i = 0; i < n; i++)
        g[i] *= 8.0f;   /* the sigmoid's saturated tails too */
    float *dg = calloc((size_t)n, sizeof *dg), *du = calloc((size_t)n, sizeof *du);
    pdbx_k_silu_mul_bwd(NULL, g, u, dout, n, dg, du);
    const double h = 1e-6;
    for (int64_t i = 0; i < n; i++) {   /* L = sum dout * silu(g) * u, element-wise */
        double gi = g[i], ui = u[i], d = dout[i];
#define SILU(v) ((v) / (1.0 + exp(-(v))))
        double fg = d * ui * (SILU(gi + h) - SILU(gi - h)) / (2 * h);
        double fu = d * SILU(gi);
#undef SILU
        assert_close(dg[i], fg, 1e-4, 1.0, "silu dg", (size_t)i);
        assert_close(du[i], fu, 1e-5, 1.0, "silu du", (size_t)i);
    }
    free(g), free(u), free(dout), free(dg), free(du);
}

/* ---- embedding ------------------------------------------------------------------------- */
static void test_embed_scatter_add(void **state)
{
    (void)state;
    const int64_t rows = 12, cols = 5, vloc = 8, vstart = 8;   /* this rank: ids 8..15 */
    const int32_t ids[12] = { 8, 15, 0, 9, 16, 12, 9, 8, 11, 9, 7, 15 };   /* repeats add up */
    float *dy = randv((size_t)(rows * cols), 9), *dt = randv((size_t)(vloc * cols), 10);
    double want[8 * 5];
    for (int64_t i = 0; i < vloc * cols; i++)
        want[i] = dt[i];
    for (int64_t i = 0; i < rows; i++)
        if (ids[i] >= vstart && ids[i] < vstart + vloc)
            for (int64_t j = 0; j < cols; j++)
                want[(ids[i] - vstart) * cols + j] += dy[i * cols + j];
    pdbx_k_embed_scatter_add(dy, ids, rows, cols, vloc, vstart, dt);
    for (int64_t i = 0; i < vloc * cols; i++)
        assert_true(fabs(dt[i] - want[i]) <= 1e-6);
    free(dy), free(dt);
}

/* ---- the backend ------------------------------------------------------------------------ */

#define FWD_BWD (PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD))

static pdbx_compute *backend(pdbx_dtype dt, int threads)
{
    pdbx_compute_config cfg = { .local_size = 1, .world_size = 1, .blas_threads = threads,
                                .dtype = dt };
    pdbx_compute *c = NULL;
    char err[256] = "";
    assert_int_equal(pdbx_cpu_compute_ops.init(&cfg, &c, err, sizeof err), 0);
    return c;
}

static double elem(const void *p, size_t i, size_t esz)
{
    return esz == 4 ? ((const float *)p)[i] : pdbx_k_bf16_to_f32(((const uint16_t *)p)[i]);
}

/* dX = dY W^T and the increase of dW = X^T dY, naive in double, for Y[T,n] = X[T,k] W[k,n]. */
static void check_linear(pdbx_compute *c, pdbx_op op, const void *x, const void *w,
                         const void *dy, const float *dx, const float *dw, const double *dw0,
                         int64_t n, int64_t k)
{
    const int64_t T = c->T;
    const size_t e = c->esz;
    const double tol = e == 4 ? 1e-4 : 2e-2;
    for (int64_t i = 0; i < T; i++)
        for (int64_t a = 0; a < k; a++) {
            double s = 0;
            for (int64_t j = 0; j < n; j++)
                s += elem(dy, (size_t)(i * n + j), e) * elem(w, (size_t)(a * n + j), e);
            assert_close(dx[i * k + a], s, tol, 1.0, pdbx_op_name(op), (size_t)(i * k + a));
        }
    for (int64_t a = 0; a < k; a++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t i = 0; i < T; i++)
                s += elem(x, (size_t)(i * k + a), e) * elem(dy, (size_t)(i * n + j), e);
            assert_close(dw[a * n + j] - dw0[a * n + j], s, tol, 1.0, pdbx_op_name(op),
                         (size_t)(a * n + j));
        }
}

static double *snapshot(const float *x, size_t n)
{
    return to_double(x, n);
}

/* The GEMM ops' bwd through run_op: dgrad and wgrad (accumulating) of the right operands. */
static void test_backend_linear_bwd(void **state)
{
    (void)state;
    for (int dt = 0; dt < 1 + pdbx_cpu_has_bf16_gemm(); dt++) {
        pdbx_compute *c = backend(dt ? PDBX_DTYPE_BF16 : PDBX_DTYPE_FP32, 2);
        char err[256] = "";
        pdbx_point_shapes p = tiny_cpu_point(1, 2, FWD_BWD);
        assert_int_equal(pdbx_cpu_compute_ops.prepare(c, &p, err, sizeof err), 0);
        cpu_grads *g = &c->grad;
        const int bf = dt;
        const struct {
            pdbx_op op;
            const void *x, *w, *dy;
            const float *dx, *dw;
            int64_t n, k;
        } lin[] = {
            { PDBX_OP_ATTN_Q, bf ? c->xn_b : c->xn, c->layer[1].wq, bf ? g->dq_b : (void *)g->dq, g->dxn, g->dwq, c->qd, c->h },
            { PDBX_OP_ATTN_K, bf ? c->xn_b : c->xn, c->layer[1].wk, bf ? g->dk_b : (void *)g->dk, g->dxn, g->dwkv, c->kvd, c->h },
            { PDBX_OP_ATTN_V, bf ? c->xn_b : c->xn, c->layer[1].wv, bf ? g->dv_b : (void *)g->dv, g->dxn, g->dwkv, c->kvd, c->h },
            { PDBX_OP_ATTN_O, bf ? c->ctx_b : c->ctx, c->layer[1].wo, bf ? g->dy_b : (void *)g->dy, g->dctx, g->dwo, c->h, c->qd },
            { PDBX_OP_MLP_GATE, bf ? c->yn_b : c->yn, c->layer[1].wg, bf ? g->dg_b : (void *)g->dg, g->dyn, g->dwgu, c->inter, c->h },
            { PDBX_OP_MLP_UP, bf ? c->yn_b : c->yn, c->layer[1].wu, bf ? g->du_b : (void *)g->du, g->dyn, g->dwgu, c->inter, c->h },
            { PDBX_OP_MLP_DOWN, bf ? c->act_b : c->act, c->layer[1].wd, bf ? g->dx_b : (void *)g->dx, g->dact, g->dwd, c->h, c->inter },
            { PDBX_OP_LM_HEAD, bf ? c->xn_b : c->xn, c->wlm, bf ? g->dlogits_b : (void *)g->dlogits, g->dxn, g->dwlm, c->vloc, c->h },
        };
        for (size_t i = 0; i < sizeof lin / sizeof lin[0]; i++) {
            /* twice: the second adds the same X^T dY onto the first */
            for (int rep = 0; rep < 2; rep++) {
                double *dw0 = snapshot(lin[i].dw, (size_t)(lin[i].n * lin[i].k));
                double ms = -1;
                assert_int_equal(pdbx_cpu_compute_ops.run_op(c, lin[i].op, PDBX_PASS_BWD, 1, &ms, err,
                                                             sizeof err), 0);
                assert_true(ms >= 0);
                check_linear(c, lin[i].op, lin[i].x, lin[i].w, lin[i].dy, lin[i].dx, lin[i].dw, dw0,
                             lin[i].n, lin[i].k);
                free(dw0);
            }
        }
        pdbx_cpu_compute_ops.fini(c);
    }
}

/* A model with biases everywhere (arch.bias, shape[op].bias): each projection's forward is
 * X W + b and its bwd adds the column sums of dY to the bias gradient, separate and fused
 * (fused_projections), fp32; shapes whose bias flag disagrees with the arch are refused. */
static void test_backend_bias(void **state)
{
    (void)state;
    static const pdbx_op linear_ops[] = { PDBX_OP_ATTN_Q, PDBX_OP_ATTN_K, PDBX_OP_ATTN_V, PDBX_OP_ATTN_O,
                                          PDBX_OP_MLP_GATE, PDBX_OP_MLP_UP, PDBX_OP_MLP_DOWN };
    for (int fused = 0; fused <= 1; fused++) {
        pdbx_compute *c = backend(PDBX_DTYPE_FP32, 3);
        char err[256] = "";
        pdbx_point_shapes p = tiny_cpu_point(1, 2, FWD_BWD);
        p.model.arch.bias.qkv = p.model.arch.bias.attn_out = p.model.arch.bias.mlp = 1;
        p.fused_projections = fused;
        for (size_t i = 0; i < sizeof linear_ops / sizeof linear_ops[0]; i++)
            p.shape[linear_ops[i]].bias = 1;
        assert_int_equal(pdbx_cpu_compute_ops.prepare(c, &p, err, sizeof err), 0);
        cpu_layer *L = &c->layer[1];
        cpu_grads *g = &c->grad;
        const struct {
            pdbx_op op;
            const float *x, *y, *dy;
            const void *w;
            const float *b, *db;
            int64_t n, k;
        } lin[] = {
            { PDBX_OP_ATTN_Q, c->xn, fused ? c->qkv : c->q, fused ? (const float *)g->dqkv : g->dq,
              fused ? L->wqkv : L->wq, fused ? L->bqkv : L->bq, fused ? g->dbqkv : g->dbq,
              fused ? c->qd + 2 * c->kvd : c->qd, c->h },
            { PDBX_OP_ATTN_O, c->ctx, c->y, g->dy, L->wo, L->bo, g->dbo, c->h, c->qd },
            { PDBX_OP_MLP_GATE, c->yn, fused ? c->fc1 : c->g, fused ? (const float *)g->dfc1 : g->dg,
              fused ? L->wfc1 : L->wg, fused ? L->bfc1 : L->bg, fused ? g->dbfc1 : g->dbgu,
              fused ? 2 * c->inter : c->inter, c->h },
            { PDBX_OP_MLP_DOWN, c->act, c->x, g->dx, L->wd, L->bd, g->dbd, c->h, c->inter },
            { PDBX_OP_ATTN_K, c->xn, c->k, g->dk, L->wk, L->bk, g->dbkv, c->kvd, c->h },
        };
        const size_t nlin = fused ? 4 : 5;
        for (size_t i = 0; i < nlin; i++) {
            const int64_t T = c->T, n = lin[i].n, k = lin[i].k;
            assert_non_null(lin[i].b);
            assert_non_null(lin[i].db);
            double ms = -1;
            assert_int_equal(pdbx_cpu_compute_ops.run_op(c, lin[i].op, PDBX_PASS_FWD, 1, &ms, err, sizeof err), 0);
            const float *w = lin[i].w;
            for (int64_t r = 0; r < T; r++)
                for (int64_t j = 0; j < n; j++) {
                    double want = lin[i].b[j];
                    for (int64_t q = 0; q < k; q++)
                        want += (double)lin[i].x[r * k + q] * w[q * n + j];
                    assert_close(lin[i].y[r * n + j], want, 1e-4, 1.0, pdbx_op_name(lin[i].op), (size_t)(r * n + j));
                }
            double *db0 = snapshot(lin[i].db, (size_t)n);
            assert_int_equal(pdbx_cpu_compute_ops.run_op(c, lin[i].op, PDBX_PASS_BWD, 1, &ms, err, sizeof err), 0);
            for (int64_t j = 0; j < n; j++) {
                double want = db0[j];
                for (int64_t r = 0; r < T; r++)
                    want += lin[i].dy[r * n + j];
                assert_close(lin[i].db[j], want, 1e-4, 1.0, "bias gradient", (size_t)j);
            }
            free(db0);
        }
        /* the bias vectors hold real values (not zeros: the add would do nothing) */
        assert_true(lin[0].b[0] != 0.0f || lin[0].b[1] != 0.0f);
        /* a shape with a bias the arch does not have (no buffer for it) is refused */
        p.model.arch.bias.mlp = 0;
        assert_int_equal(pdbx_cpu_compute_ops.prepare(c, &p, err, sizeof err), -1);
        assert_non_null(strstr(err, "mlp_gate's shape says bias 1, the model's arch 0"));
        pdbx_cpu_compute_ops.fini(c);
    }
}

/* Every op's bwd runs (fp32, bf16 where available) on every layer; without bwd in the
 * point's passes the bwd pass is refused with a message and nothing is allocated for it. */
/* attn_rope and the residual adds through run_op, fwd and bwd, on the buffers the data flow
 * says (cpu_compute.c): rope rotates q and k in place by the point's table (pdbx_k_rope's own
 * reference is test_engine_kernels.c's) and its bwd rotates dq and dk back (bwd inverts fwd:
 * applied to q it gives the original q); attn_residual y += x and its bwd dx += dy;
 * mlp_residual x += y and its bwd dy += dx. fp32, 2 threads. */
static void test_backend_rope_and_residual(void **state)
{
    (void)state;
    pdbx_compute *c = backend(PDBX_DTYPE_FP32, 2);
    char err[256] = "";
    pdbx_point_shapes p = tiny_cpu_point(2, 2, FWD_BWD);
    assert_int_equal(pdbx_cpu_compute_ops.prepare(c, &p, err, sizeof err), 0);
    const int64_t T = c->T, h = c->h, seq = p.seq_len, half = c->d / 2;
    assert_non_null(c->rope);
    double ms;
    /* rope fwd: q by the table, k too */
    double *q0 = snapshot(c->q, (size_t)(T * c->qd)), *k0 = snapshot(c->k, (size_t)(T * c->kvd));
    assert_int_equal(pdbx_cpu_compute_ops.run_op(c, PDBX_OP_ATTN_ROPE, PDBX_PASS_FWD, 1, &ms, err, sizeof err), 0);
    for (int64_t r = 0; r < T; r++)
        for (int64_t hd = 0; hd < c->heads; hd++)
            for (int64_t i = 0; i < half; i++) {
                const int64_t at = r * c->qd + hd * c->d + i, pos = r % seq;
                const double ang = (double)pos * pow(10000.0, -2.0 * (double)i / (double)c->d);
                assert_close(c->q[at], q0[at] * cos(ang) - q0[at + half] * sin(ang), 1e-5, 1.0, "rope q", (size_t)at);
                assert_close(c->q[at + half], q0[at + half] * cos(ang) + q0[at] * sin(ang), 1e-5, 1.0, "rope q", (size_t)at);
            }
    const int64_t k_last = (T - 1) * c->kvd + half;   /* k rotated too (last token, last pair) */
    assert_true(fabs(c->k[k_last - 1] - k0[k_last - 1]) > 1e-7 || fabs(k0[k_last - 1]) < 1e-6);
    /* rope bwd on dq = the rotated q: the inverse rotation gives q0 back */
    memcpy(c->grad.dq, c->q, (size_t)(T * c->qd) * sizeof(float));
    memcpy(c->grad.dk, c->k, (size_t)(T * c->kvd) * sizeof(float));
    assert_int_equal(pdbx_cpu_compute_ops.run_op(c, PDBX_OP_ATTN_ROPE, PDBX_PASS_BWD, 0, &ms, err, sizeof err), 0);
    for (int64_t i = 0; i < T * c->qd; i++)
        assert_close(c->grad.dq[i], q0[i], 1e-5, 1.0, "rope bwd dq", (size_t)i);
    for (int64_t i = 0; i < T * c->kvd; i++)
        assert_close(c->grad.dk[i], k0[i], 1e-5, 1.0, "rope bwd dk", (size_t)i);
    /* residual adds */
    double *x0 = snapshot(c->x, (size_t)(T * h)), *y0 = snapshot(c->y, (size_t)(T * h));
    assert_int_equal(pdbx_cpu_compute_ops.run_op(c, PDBX_OP_ATTN_RESIDUAL, PDBX_PASS_FWD, 0, &ms, err, sizeof err), 0);
    for (int64_t i = 0; i < T * h; i++)
        assert_close(c->y[i], y0[i] + x0[i], 1e-6, 1.0, "attn_residual", (size_t)i);
    free(y0);
    y0 = snapshot(c->y, (size_t)(T * h));
    assert_int_equal(pdbx_cpu_compute_ops.run_op(c, PDBX_OP_MLP_RESIDUAL, PDBX_PASS_FWD, 1, &ms, err, sizeof err), 0);
    for (int64_t i = 0; i < T * h; i++)
        assert_close(c->x[i], x0[i] + y0[i], 1e-6, 1.0, "mlp_residual", (size_t)i);
    double *dx0 = snapshot(c->grad.dx, (size_t)(T * h)), *dy0 = snapshot(c->grad.dy, (size_t)(T * h));
    assert_int_equal(pdbx_cpu_compute_ops.run_op(c, PDBX_OP_ATTN_RESIDUAL, PDBX_PASS_BWD, 0, &ms, err, sizeof err), 0);
    for (int64_t i = 0; i < T * h; i++)
        assert_close(c->grad.dx[i], dx0[i] + dy0[i], 1e-6, 1.0, "attn_residual bwd", (size_t)i);
    free(dx0);
    dx0 = snapshot(c->grad.dx, (size_t)(T * h));
    assert_int_equal(pdbx_cpu_compute_ops.run_op(c, PDBX_OP_MLP_RESIDUAL, PDBX_PASS_BWD, 0, &ms, err, sizeof err), 0);
    for (int64_t i = 0; i < T * h; i++)
        assert_close(c->grad.dy[i], dy0[i] + dx0[i], 1e-6, 1.0, "mlp_residual bwd", (size_t)i);
    free(q0), free(k0), free(x0), free(y0), free(dx0), free(dy0);
    pdbx_cpu_compute_ops.fini(c);
}

static void test_backend_runs_every_bwd(void **state)
{
    (void)state;
    if (!pdbx_cpu_has_bf16_gemm())
        print_message("note: this OpenBLAS has no cblas_sbgemm: bf16 not run\n");
    for (int dt = 0; dt < 1 + pdbx_cpu_has_bf16_gemm(); dt++) {
        pdbx_compute *c = backend(dt ? PDBX_DTYPE_BF16 : PDBX_DTYPE_FP32, 2);
        char err[256] = "";
        pdbx_point_shapes p = tiny_cpu_point(2, 2, FWD_BWD);
        assert_int_equal(pdbx_cpu_compute_ops.prepare(c, &p, err, sizeof err), 0);
        for (int op = 0; op < PDBX_OP_COUNT; op++) {
            if (pdbx_op_is_comm((pdbx_op)op) || !(pdbx_model_ops(&p.model) & PDBX_OP_BIT(op)))
                continue;
            for (int l = 0; l < p.layers; l++) {
                double ms = -1;
                assert_int_equal(pdbx_cpu_compute_ops.run_op(c, (pdbx_op)op, PDBX_PASS_FWD, l, &ms, err, sizeof err), 0);
                if (!pdbx_op_has_bwd((pdbx_op)op)) {   /* the optimizer: its one pass is fwd */
                    assert_int_equal(pdbx_cpu_compute_ops.run_op(c, (pdbx_op)op, PDBX_PASS_BWD, l, &ms, err, sizeof err), -1);
                    assert_non_null(strstr(err, "has no bwd pass"));
                    break;
                }
                assert_int_equal(pdbx_cpu_compute_ops.run_op(c, (pdbx_op)op, PDBX_PASS_BWD, l, &ms, err, sizeof err), 0);
                assert_true(ms >= 0);
            }
        }
        assert_true(isfinite(pdbx_cpu_compute_ops.checksum(c)));
        double ms;
        assert_int_equal(pdbx_cpu_compute_ops.run_op(c, PDBX_OP_ATTN_Q, PDBX_PASS_BWD, 2, &ms, err, sizeof err), -1);
        assert_int_equal(pdbx_cpu_compute_ops.run_op(c, PDBX_OP_ATTN_Q, (pdbx_pass)7, 0, &ms, err, sizeof err), -1);
        assert_non_null(strstr(err, "allowed: fwd, bwd"));
        /* the next point of the config without bwd: no gradient buffers, bwd refused */
        p = tiny_cpu_point(2, 1, PDBX_PASS_BIT(PDBX_PASS_FWD));
        assert_int_equal(pdbx_cpu_compute_ops.prepare(c, &p, err, sizeof err), 0);
        assert_null(c->grad.dx);
        assert_null(c->grad.dwlm);
        assert_int_equal(pdbx_cpu_compute_ops.run_op(c, PDBX_OP_LM_HEAD, PDBX_PASS_BWD, 0, &ms, err, sizeof err), -1);
        assert_non_null(strstr(err, "prepared with bwd"));
        assert_int_equal(pdbx_cpu_compute_ops.run_op(c, PDBX_OP_LM_HEAD, PDBX_PASS_FWD, 0, &ms, err, sizeof err), 0);
        pdbx_cpu_compute_ops.fini(c);
    }
}

/* prepare() with bwd allocates exactly the planner's list, gradients included: the resident
 * memory of the point is the list's total to within 2% (test_engine_kernels.c's check of the
 * forward buffers, on a point whose gradients are half its memory). */
static void test_backend_allocates_the_bwd_plan(void **state)
{
    (void)state;
    pdbx_compute *c = backend(PDBX_DTYPE_FP32, 3);
    char err[256] = "";
    pdbx_point_shapes p = tiny_cpu_point(1, 2, FWD_BWD);
    p.model.vocab = 32768;
    p.model.hidden = 256;
    p.model.heads = 16;
    p.model.kv_heads = 4;
    p.model.intermediate = 512;
    p.seq_len = 256;
    pdbx_profile_point pp = { .model = p.model, .tp = 1, .pp = 1, .dp = 1, .mbs = p.mbs,
                              .seq_len = p.seq_len, .layers = p.layers, .ops = p.ops,
                              .passes = p.passes, .dtype = PDBX_DTYPE_FP32,
                              .backend = PDBX_BACKEND_CPU, .threads = 3 };
    pdbx_profile_memory pm;
    assert_int_equal(pdbx_profile_memory_list(&pp, &pm, err, sizeof err), 0);
    assert_true(pm.kind_bytes[PDBX_MEM_GRADS] > 0.4 * pm.total);
    for (int i = 0; i < pm.nbufs; i++)
        if (pm.buf[i].role == PDBX_BUF_ATTN_BWD_SCRATCH)
            assert_true(pm.buf[i].bytes ==
                        ceil(pdbx_k_attention_bwd_scratch_floats(p.seq_len, 16, 3) * 4 / 64.0) * 64);
    assert_int_equal(pdbx_cpu_compute_ops.prepare(c, &p, err, sizeof err), 0);
    /* every listed gradient role has its pointer */
    for (int i = 0; i < pm.nbufs; i++)
        if (pm.buf[i].kind == PDBX_MEM_GRADS || pm.buf[i].role == PDBX_BUF_ATTN_BWD_SCRATCH) {
            void **slot = pdbx_cpu_opt_slot(c, pm.buf[i].role) ? pdbx_cpu_opt_slot(c, pm.buf[i].role)
                                                               : pdbx_cpu_grad_slot(c, pm.buf[i].role);
            assert_non_null(slot);
            assert_non_null(*slot);
        }
    double peak = -1, base = -1;
    if (pdbx_cpu_compute_ops.mem_peak(c, &peak, &base) == 0) {
        if (fabs(peak - pm.total) > 0.02 * pm.total)
            print_error("measured %.0f bytes, listed %.0f\n", peak, pm.total);
        assert_true(fabs(peak - pm.total) <= 0.02 * pm.total);
    } else {
        print_message("note: resident memory not measurable here (/proc/self/clear_refs): the "
                      "list's total was not compared\n");
    }
    pdbx_cpu_compute_ops.fini(c);
}

/* ---- timing ---------------------------------------------------------------------------- */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median fwd and bwd times of op over reps executions each, fwd and bwd alternating so a load
 * that comes and goes hits both alike. */
static int medians(pdbx_compute *c, pdbx_op op, int reps, double *fwd, double *bwd)
{
    double f[64], b[64];
    char err[256];
    if (reps > 64)
        reps = 64;
    for (int w = 0; w < 2; w++)   /* warm-up: first touch, BLAS buffers */
        if (pdbx_cpu_compute_ops.run_op(c, op, PDBX_PASS_FWD, 0, &f[0], err, sizeof err) != 0 ||
            pdbx_cpu_compute_ops.run_op(c, op, PDBX_PASS_BWD, 0, &b[0], err, sizeof err) != 0)
            return -1;
    for (int r = 0; r < reps; r++)
        if (pdbx_cpu_compute_ops.run_op(c, op, PDBX_PASS_FWD, 0, &f[r], err, sizeof err) != 0 ||
            pdbx_cpu_compute_ops.run_op(c, op, PDBX_PASS_BWD, 0, &b[r], err, sizeof err) != 0)
            return -1;
    qsort(f, (size_t)reps, sizeof f[0], cmp_double);
    qsort(b, (size_t)reps, sizeof b[0], cmp_double);
    *fwd = f[reps / 2];
    *bwd = b[reps / 2];
    return 0;
}

/* --ratios MODEL SEQ MBS: every op's bwd/fwd median ratio at that point (one layer, fp32). */
static int print_ratios(const char *model, int seq, int mbs)
{
    pdbx_point_shapes p;
    memset(&p, 0, sizeof p);
    char err[256] = "";
    if (pdbx_model_load(model, &p.model, err, sizeof err) != 0) {
        fprintf(stderr, "test_engine_kernels_bwd: %s\n", err);
        return 2;
    }
    const char *th = getenv("PDBX_BWD_THREADS");
    int threads = th && atoi(th) > 0 ? atoi(th) : 2;
    p.tp = 1;
    p.mbs = mbs;
    p.seq_len = seq;
    p.layers = 1;
    p.ops = PDBX_OPS_ALL;
    p.passes = FWD_BWD;
    pdbx_compute_config cfg = { .local_size = 1, .world_size = 1, .blas_threads = threads,
                                .dtype = PDBX_DTYPE_FP32 };
    pdbx_compute *c = NULL;
    if (pdbx_cpu_compute_ops.init(&cfg, &c, err, sizeof err) != 0 ||
        pdbx_cpu_compute_ops.prepare(c, &p, err, sizeof err) != 0) {
        fprintf(stderr, "test_engine_kernels_bwd: %s\n", err);
        return 1;
    }
    printf("%s seq %d mbs %d, fp32, %d BLAS threads, median of 9 (ms)\n", model, seq, mbs, threads);
    printf("%-16s %10s %10s %8s\n", "op", "fwd", "bwd", "bwd/fwd");
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        if (pdbx_op_is_comm((pdbx_op)op) || !(pdbx_model_ops(&p.model) & PDBX_OP_BIT(op)) ||
            !pdbx_op_has_bwd((pdbx_op)op))   /* the optimizer: no backward to compare */
            continue;
        double f = 0, b = 0;
        if (medians(c, (pdbx_op)op, 9, &f, &b) != 0)
            return 1;
        printf("%-16s %10.3f %10.3f %8.2f\n", pdbx_op_name((pdbx_op)op), f, b, b / f);
    }
    pdbx_cpu_compute_ops.fini(c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--ratios") == 0)
        return print_ratios(argv[2], atoi(argv[3]), atoi(argv[4]));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmsnorm_bwd),
        cmocka_unit_test(test_silu_mul_bwd),
        cmocka_unit_test(test_embed_scatter_add),
        cmocka_unit_test(test_backend_linear_bwd),
        cmocka_unit_test(test_backend_bias),
        cmocka_unit_test(test_backend_rope_and_residual),
        cmocka_unit_test(test_backend_runs_every_bwd),
        cmocka_unit_test(test_backend_allocates_the_bwd_plan),
    };
    return cmocka_run_group_tests_name("engine_kernels_bwd", tests, NULL, NULL);
}
