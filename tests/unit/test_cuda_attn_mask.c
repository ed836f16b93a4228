/* test_cuda_attn_mask.c: the attention core's mask and cap arithmetic that the cuda kernels
 * share with the host (engine/backends/cuda/cuda_attn_mask.h), built and run without a GPU:
 * ck_first_key against the definition (query at position p sees keys p - w < j <= p, after a
 * cached prefix too), ck_softcap against double tanh, ck_softcap_grad against central
 * differences of the cap and against 1 - tanh^2. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "engine/backends/cuda/cuda_attn_mask.h"

/* Every row of [q_len, kv_len] stacks, windows 0 to past kv_len: the visible keys are exactly
 * those the definition admits. */
static void test_first_key(void **state)
{
    (void)state;
    const int64_t shapes[][2] = { { 9, 9 }, { 5, 12 }, { 1, 7 }, { 16, 16 } };
    for (size_t s = 0; s < 4; s++) {
        const int64_t q_len = shapes[s][0], kv_len = shapes[s][1];
        for (int64_t w = -1; w <= kv_len + 1; w++)
            for (int64_t r = 0; r < 3 * q_len; r++) {
                const int64_t pos = kv_len - q_len + r % q_len;   /* the query's position */
                const int64_t lo = ck_first_key(r, q_len, kv_len, w);
                const int64_t end = ck_keys_visible(r, q_len, kv_len);
                for (int64_t j = 0; j < kv_len; j++) {
                    const int sees = j <= pos && (w <= 0 || j > pos - w);
                    assert_int_equal(sees, j >= lo && j < end);
                }
            }
    }
}

/* The cap over scores from -400 to 400 (saturated tails, the linear middle): relative error
 * against double within a few ulp (tanhf's 2 ulp, the division, the product); cap <= 0 is the
 * identity. */
static void test_softcap(void **state)
{
    (void)state;
    const float caps[] = { 50.0f, 30.0f, 1.5f };
    double worst = 0;
    for (size_t c = 0; c < 3; c++)
        for (int i = -40000; i <= 40000; i++) {
            const float s = (float)i * 0.01f;
            const double want = caps[c] * tanh((double)s / caps[c]);
            const double got = ck_softcap(s, caps[c]);
            worst = fmax(worst, want == 0 ? fabs(got) : fabs(got - want) / fabs(want));
        }
    print_message("ck_softcap: worst relative error %.3g\n", worst);
    assert_true(worst < 5e-7);
    assert_true(ck_softcap(123.5f, 0.0f) == 123.5f);
    assert_true(ck_softcap(-7.0f, -1.0f) == -7.0f);
}

/* dc/ds at c = ck_softcap(s): against 1 - tanh^2 in double (absolute: the factor is in
 * [0, 1]) and against central differences of the double cap; cap 0: 1. */
static void test_softcap_grad(void **state)
{
    (void)state;
    const float cap = 50.0f;
    double worst = 0, worst_fd = 0;
    for (int i = -2000; i <= 2000; i++) {
        const double s = i * 0.1, h = 1e-4;
        const double t = tanh(s / cap);
        const float g = ck_softcap_grad(ck_softcap((float)s, cap), cap);
        worst = fmax(worst, fabs(g - (1 - t * t)));
        const double fd = (cap * tanh((s + h) / cap) - cap * tanh((s - h) / cap)) / (2 * h);
        worst_fd = fmax(worst_fd, fabs(g - fd));
    }
    print_message("ck_softcap_grad: worst error %.3g (vs finite differences %.3g)\n", worst,
                  worst_fd);
    assert_true(worst < 1e-6);
    assert_true(worst_fd < 1e-6);
    assert_true(ck_softcap_grad(3.0f, 0.0f) == 1.0f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_key),
        cmocka_unit_test(test_softcap),
        cmocka_unit_test(test_softcap_grad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
