/* test_engine_kernels_softcap_lm_head.c: lm_head with final-logit soft-capping through the cpu
 * backend's run_op (gemma-2's final_logit_softcapping; cpu_compute.c, cpu_backward.c):
 *  - the forward leaves logits = cap tanh(xn W / cap) (against a double reference);
 *  - the backward reads d logits through the cap into its own buffer, d logits x
 *    (1 - (logits / cap)^2), and leaves d logits as it was filled: two bwd steps see the same
 *    gradient, so the weight gradient grows by the same amount each step (an in-place product
 *    would shrink it step after step); dX = d logits_capped W^T against a double reference;
 *  - the planner's buffer (d logits (capped, gemm dtype)) is where the backend writes.
 * A small cap (0.5) so that the cap's derivative is far from 1 on O(1) logits. fp32, and bf16
 * where this OpenBLAS has sbgemm (its capped gradient is the fp32 one rounded to bf16). */
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

#define CAP 0.5

static double elem(const void *p, size_t i, size_t esz)
{
    return esz == 4 ? ((const float *)p)[i] : pdbx_k_bf16_to_f32(((const uint16_t *)p)[i]);
}

/* h 64, V 256 at TP 1, T = 2 x 20 tokens; every op of a Llama layer prepared, fwd and bwd. */
static pdbx_compute *prepared(pdbx_dtype dt)
{
    pdbx_point_shapes p;
    memset(&p, 0, sizeof p);
    p.model.hidden = 64, p.model.intermediate = 128, p.model.heads = 4, p.model.kv_heads = 2;
    p.model.head_dim = 16, p.model.layers = 4, p.model.vocab = 256;
    p.model.arch.final_softcap = CAP;
    p.tp = 1, p.mbs = 2, p.seq_len = 20, p.layers = 2;
    p.ops = PDBX_OPS_ALL;
    p.passes = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD);
    pdbx_compute_config cfg = {.local_size = 1, .world_size = 1, .blas_threads = 2, .dtype = dt};
    pdbx_compute *c = NULL;
    char err[256] = "";
    assert_int_equal(pdbx_cpu_compute_ops.init(&cfg, &c, err, sizeof err), 0);
    if (pdbx_cpu_compute_ops.prepare(c, &p, err, sizeof err) != 0)
        fail_msg("prepare: %s", err);
    return c;
}

static void run(pdbx_compute *c, pdbx_pass pass)
{
    double ms = -1;
    char err[256] = "";
    if (pdbx_cpu_compute_ops.run_op(c, PDBX_OP_LM_HEAD, pass, 0, &ms, err, sizeof err) != 0)
        fail_msg("lm_head %s: %s", pdbx_pass_name(pass), err);
}

static void check(pdbx_dtype dt)
{
    pdbx_compute *c = prepared(dt);
    const int64_t T = c->T, h = c->h, V = c->vloc;
    const size_t e = c->esz, nl = (size_t)(T * V);
    const void *xn = e == 2 ? c->xn_b : c->xn;
    const cpu_grads *g = &c->grad;
    assert_non_null(g->dlogits_capped);
    assert_null(g->dlogits_b);   /* bf16: the capped buffer replaces d logits' bf16 copy */
    run(c, PDBX_PASS_FWD);
    double worst = 0;
    for (int64_t i = 0; i < T; i++)
        for (int64_t j = 0; j < V; j++) {
            double s = 0;
            for (int64_t a = 0; a < h; a++)
                s += elem(xn, (size_t)(i * h + a), e) * elem(c->wlm, (size_t)(a * V + j), e);
            worst = fmax(worst, fabs(c->logits[i * V + j] - CAP * tanh(s / CAP)));
        }
    print_message("%s: forward, worst error %.2g of cap %g\n", e == 4 ? "fp32" : "bf16", worst, CAP);
    assert_true(worst < 1e-5);
    float *d0 = malloc(nl * sizeof *d0), *w0 = calloc((size_t)(h * V), sizeof *w0);
    float *step = malloc((size_t)(h * V) * sizeof *step);
    memcpy(d0, g->dlogits, nl * sizeof *d0);
    for (int s = 0; s < 2; s++) {
        memcpy(w0, g->dwlm, (size_t)(h * V) * sizeof *w0);
        run(c, PDBX_PASS_BWD);
        assert_memory_equal(g->dlogits, d0, nl * sizeof *d0);   /* never modified */
        for (size_t i = 0; i < nl; i++) {
            const double y = c->logits[i], want = d0[i] * (1 - (y / CAP) * (y / CAP));
            const double got = elem(g->dlogits_capped, i, e);
            assert_true(fabs(got - want) <= (e == 4 ? 1e-6 : 4e-3) * (fabs(want) + 1e-3));
        }
        for (int64_t i = 0; i < h * V; i++) {   /* this step's wgrad: the same both steps */
            const float dw = g->dwlm[i] - w0[i];
            if (s == 0)
                step[i] = dw;
            else
                assert_true(fabsf(dw - step[i]) <= 1e-5f * (fabsf(step[i]) + 1e-3f));
        }
    }
    for (int64_t i = 0; i < T; i++)   /* dX = d logits_capped W^T */
        for (int64_t a = 0; a < h; a++) {
            double s = 0;
            for (int64_t j = 0; j < V; j++)
                s += elem(g->dlogits_capped, (size_t)(i * V + j), e) * elem(c->wlm, (size_t)(a * V + j), e);
            assert_true(fabs(g->dxn[i * h + a] - s) <= (e == 4 ? 1e-4 : 2e-2) * (fabs(s) + 1));
        }
    free(d0), free(w0), free(step);
    pdbx_cpu_compute_ops.fini(c);
}

static void test_fp32(void **state)
{
    (void)state;
    check(PDBX_DTYPE_FP32);
}

static void test_bf16(void **state)
{
    (void)state;
    if (!pdbx_cpu_has_bf16_gemm())
        skip();   /* this OpenBLAS has no cblas_sbgemm (cpu_compute.c) */
    check(PDBX_DTYPE_BF16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp32),
        cmocka_unit_test(test_bf16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
