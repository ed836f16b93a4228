/* test_engine_kernels_optim.c: the optimizer op's AdamW kernel (cpu_kernels_optim.h) against
 * a double-precision reference written from torch.optim.AdamW's update, over several steps,
 * against the closed form of the first step from zero moments (m1 / sqrt(v1) = g / |g| after
 * bias correction: every parameter moves by lr g / (|g| + eps) besides its decay), and the same
 * bits on one thread and on a pool of 3 (chunks of the array in any order), at sizes that end in
 * a partial chunk. The bf16 model copy is each updated master weight rounded to nearest even.
 *
 * Tolerance: 1e-4 of lr on the weights (fp32 weights of O(0.02) round to 1e-9, 3e-6 lr, at
 * each of the 5 steps), 1e-6 of the values' scale on m (1e-3) and v (1e-6): fp32 arithmetic with
 * multiply-adds contracted against a double reference. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_optim.h"
#include "tests/unit/test_kernel_util.h"

typedef struct {
    float *p, *g, *m, *v;
    uint16_t *lp;
    int64_t n;
} state;

static state make_state(int64_t n, uint64_t seed, int zero_moments)
{
    state s = { randv((size_t)n, 0.02f, seed), randv((size_t)n, 1e-3f, seed + 1),
                randv((size_t)n, 1e-3f, seed + 2), randv((size_t)n, 1e-6f, seed + 3),
                malloc((size_t)n * sizeof(uint16_t)), n };
    assert_non_null(s.lp);
    memset(s.lp, 0xff, (size_t)n * sizeof(uint16_t));
    for (int64_t i = 0; i < n; i++) {
        s.v[i] = fabsf(s.v[i]);
        if (zero_moments)
            s.m[i] = s.v[i] = 0;
    }
    return s;
}

static state copy_state(const state *a)
{
    state s = make_state(a->n, 1, 0);
    memcpy(s.p, a->p, (size_t)a->n * 4);
    memcpy(s.g, a->g, (size_t)a->n * 4);
    memcpy(s.m, a->m, (size_t)a->n * 4);
    memcpy(s.v, a->v, (size_t)a->n * 4);
    return s;
}

static void free_state(state *s)
{
    free(s->p), free(s->g), free(s->m), free(s->v), free(s->lp);
}

/* torch.optim.AdamW's step in double precision, one element */
static void ref_step(double *p, double g, double *m, double *v, const pdbx_adamw_hyper *hy)
{
    *p *= 1.0 - (double)hy->lr * hy->weight_decay;
    *m = hy->beta1 * *m + (1.0 - hy->beta1) * g;
    *v = hy->beta2 * *v + (1.0 - hy->beta2) * g * g;
    const double bc1 = 1.0 - pow(hy->beta1, hy->step), bc2 = 1.0 - pow(hy->beta2, hy->step);
    *p -= hy->lr / bc1 * *m / (sqrt(*v) / sqrt(bc2) + hy->eps);
}

static void test_steps_match_reference(void **state_)
{
    (void)state_;
    const int64_t n = 3 * 16384 + 1001;
    state s = make_state(n, 11, 0);
    double *p = malloc((size_t)n * sizeof *p), *m = malloc((size_t)n * sizeof *m), *v = malloc((size_t)n * sizeof *v);
    assert_true(p && m && v);
    for (int64_t i = 0; i < n; i++)
        p[i] = s.p[i], m[i] = s.m[i], v[i] = s.v[i];
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(3);
    double worst_p = 0, worst_mv = 0;
    for (int step = 1; step <= 5; step++) {
        pdbx_adamw_hyper hy = PDBX_ADAMW_DEFAULTS;
        hy.step = step;
        pdbx_k_adamw(pool, s.p, s.g, s.m, s.v, s.lp, n, &hy);
        for (int64_t i = 0; i < n; i++) {
            ref_step(&p[i], s.g[i], &m[i], &v[i], &hy);
            /* the step moves a weight by about lr: its error against that scale */
            double ep = fabs(s.p[i] - p[i]) / hy.lr, em = fabs(s.m[i] - m[i]) / 1e-3,
                   ev = fabs(s.v[i] - v[i]) / 1e-6;
            worst_p = ep > worst_p ? ep : worst_p;
            worst_mv = em > worst_mv ? em : worst_mv;
            worst_mv = ev > worst_mv ? ev : worst_mv;
            assert_int_equal(s.lp[i], pdbx_k_f32_to_bf16(s.p[i]));
        }
    }
    print_message("5 AdamW steps over %lld parameters: worst error %.2e of lr (weights), %.2e of the "
                  "scale (m, v)\n", (long long)n, worst_p, worst_mv);
    assert_true(worst_p < 1e-4);
    assert_true(worst_mv < 1e-6);
    pdbx_cpu_pool_destroy(pool);
    free(p), free(m), free(v);
    free_state(&s);
}

static void test_first_step_closed_form(void **state_)
{
    (void)state_;
    const int64_t n = 20000;
    state s = make_state(n, 23, 1);
    float *p0 = malloc((size_t)n * 4);
    assert_non_null(p0);
    memcpy(p0, s.p, (size_t)n * 4);
    pdbx_adamw_hyper hy = PDBX_ADAMW_DEFAULTS;
    pdbx_k_adamw(NULL, s.p, s.g, s.m, s.v, NULL, n, &hy);
    for (int64_t i = 0; i < n; i++) {
        const double g = s.g[i];
        const double want = p0[i] * (1.0 - (double)hy.lr * hy.weight_decay) - hy.lr * g / (fabs(g) + hy.eps);
        /* two fp32 ulps of the weight (the decay's rounding and the update's) */
        assert_true(fabs(s.p[i] - want) <= 1e-6 * hy.lr + 2.5e-7 * fabs(want));
        assert_true(fabs(s.m[i] - (1.0 - hy.beta1) * g) <= 1e-6 * fabs(g) + 1e-12);
    }
    free(p0);
    free_state(&s);
}

static void test_threads_same_bits(void **state_)
{
    (void)state_;
    const int64_t sizes[] = { 1, 16383, 16385, 5 * 16384 + 7 };
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(3);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        state a = make_state(sizes[k], 40 + k, 0), b = copy_state(&a);
        pdbx_adamw_hyper hy = PDBX_ADAMW_DEFAULTS;
        hy.step = 3;
        pdbx_k_adamw(NULL, a.p, a.g, a.m, a.v, a.lp, a.n, &hy);
        pdbx_k_adamw(pool, b.p, b.g, b.m, b.v, b.lp, b.n, &hy);
        assert_memory_equal(a.p, b.p, (size_t)a.n * 4);
        assert_memory_equal(a.m, b.m, (size_t)a.n * 4);
        assert_memory_equal(a.v, b.v, (size_t)a.n * 4);
        assert_memory_equal(a.lp, b.lp, (size_t)a.n * 2);
        free_state(&a);
        free_state(&b);
    }
    pdbx_cpu_pool_destroy(pool);
}

static void test_empty_is_a_no_op(void **state_)
{
    (void)state_;
    pdbx_adamw_hyper hy = PDBX_ADAMW_DEFAULTS;
    pdbx_k_adamw(NULL, NULL, NULL, NULL, NULL, NULL, 0, &hy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steps_match_reference),
        cmocka_unit_test(test_first_step_closed_form),
        cmocka_unit_test(test_threads_same_bits),
        cmocka_unit_test(test_empty_is_a_no_op),
    };
    return cmocka_run_group_tests_name("engine_kernels_optim", tests, NULL, NULL);
}
