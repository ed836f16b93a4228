/* test_engine_kernels_attn_bwd.c: the causal attention core's backward kernel
 * (pdbx_k_attention_causal_bwd, cpu_kernels_bwd.h) against central finite differences of a
 * double-precision forward of L = sum(dO * attention(q, k, v)): MHA and GQA, one token, the
 * threads' split of (sequence, kv head) pairs, several query and key blocks. Every gradient
 * element is written (the outputs start as garbage). The other backward kernels and the
 * backend's bwd pass are in test_engine_kernels_bwd.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_bwd.h"
#include "tests/unit/test_bwd_util.h"


/* ---- attention --------------------------------------------------------------------------- */
/* L = sum dO * attention(q, k, v) in double (the forward of test_engine_kernels.c) */
static double attention_loss(const double *q, const double *k, const double *v, const double *dO,
                             int64_t seqs, int64_t S, int64_t H, int64_t KV, int64_t d)
{
    double L = 0, *p = malloc((size_t)S * sizeof *p);
    for (int64_t s = 0; s < seqs; s++)
        for (int64_t hh = 0; hh < H; hh++) {
            int64_t kh = hh / (H / KV);
            for (int64_t i = 0; i < S; i++) {
                const double *qi = q + (s * S + i) * H * d + hh * d;
                double m = -1e300, sum = 0;
                for (int64_t j = 0; j <= i; j++) {
                    const double *kj = k + (s * S + j) * KV * d + kh * d;
                    double dot = 0;
                    for (int64_t c = 0; c < d; c++)
                        dot += qi[c] * kj[c];
                    p[j] = dot / sqrt((double)d);
                    m = fmax(m, p[j]);
                }
                for (int64_t j = 0; j <= i; j++) {
                    p[j] = exp(p[j] - m);
                    sum += p[j];
                }
                for (int64_t c = 0; c < d; c++) {
                    double acc = 0;
                    for (int64_t j = 0; j <= i; j++)
                        acc += p[j] / sum * v[(s * S + j) * KV * d + kh * d + c];
                    L += dO[(s * S + i) * H * d + hh * d + c] * acc;
                }
            }
        }
    free(p);
    return L;
}

/* Finite differences of every `step`-th entry of x (n entries) against the kernel's grad. */
static void fd_check(double *x, size_t n, size_t step, const float *grad, const char *what,
                     const double *q, const double *k, const double *v, const double *dO,
                     int64_t seqs, int64_t S, int64_t H, int64_t KV, int64_t d)
{
    const double h = 1e-5;
    double sc = 1e-30;
    for (size_t i = 0; i < n; i++)
        sc = fmax(sc, fabs(grad[i]));
    for (size_t i = 0; i < n; i += step) {
        double keep = x[i];
        x[i] = keep + h;
        double lp = attention_loss(q, k, v, dO, seqs, S, H, KV, d);
        x[i] = keep - h;
        double lm = attention_loss(q, k, v, dO, seqs, S, H, KV, d);
        x[i] = keep;
        assert_close(grad[i], (lp - lm) / (2 * h), 2e-3, sc, what, i);
    }
}


static void check_attention_bwd(int64_t seqs, int64_t S, int64_t H, int64_t KV, int64_t d,
                                int threads, size_t step)
{
    const size_t nq = (size_t)(seqs * S * H * d), nk = (size_t)(seqs * S * KV * d);
    float *q = randv(nq, 11), *k = randv(nk, 12), *v = randv(nk, 13), *dO = randv(nq, 14);
    for (size_t i = 0; i < nq; i++)
        q[i] *= 2.0f;   /* peaked softmax: a wrong max, mask or row sum shows */
    float *dq = malloc(nq * sizeof *dq), *dk = malloc(nk * sizeof *dk), *dv = malloc(nk * sizeof *dv);
    memset(dq, 0x7f, nq * sizeof *dq);   /* every element must be written */
    memset(dk, 0x7f, nk * sizeof *dk);
    memset(dv, 0x7f, nk * sizeof *dv);
    float *scratch = calloc(pdbx_k_attention_bwd_scratch_floats(S, d, threads), sizeof(float));
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(threads);
    pdbx_k_attention_causal_bwd(pool, q, k, v, dO, seqs, S, H, KV, d, scratch, dq, dk, dv);
    pdbx_cpu_pool_destroy(pool);
    double *qd = to_double(q, nq), *kd = to_double(k, nk), *vd = to_double(v, nk),
           *dOd = to_double(dO, nq);
    fd_check(qd, nq, step, dq, "attention dq", qd, kd, vd, dOd, seqs, S, H, KV, d);
    fd_check(kd, nk, step, dk, "attention dk", qd, kd, vd, dOd, seqs, S, H, KV, d);
    fd_check(vd, nk, step, dv, "attention dv", qd, kd, vd, dOd, seqs, S, H, KV, d);
    free(q), free(k), free(v), free(dO), free(dq), free(dk), free(dv), free(scratch);
    free(qd), free(kd), free(vd), free(dOd);
}

static void test_attention_bwd_small(void **state)
{
    (void)state;
    check_attention_bwd(2, 9, 4, 2, 4, 1, 1);    /* GQA (2 heads per kv head), every entry */
    check_attention_bwd(2, 9, 4, 2, 4, 3, 1);    /* threads split (sequence, kv head) pairs */
    check_attention_bwd(1, 7, 3, 3, 8, 2, 1);    /* MHA */
    check_attention_bwd(3, 1, 2, 1, 4, 2, 1);    /* one token: the gradient of a softmax of one */
}

static void test_attention_bwd_blocks(void **state)
{
    (void)state;
    /* several query blocks (32) and key blocks (64); every 13th entry */
    check_attention_bwd(1, 75, 4, 1, 8, 2, 13);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention_bwd_small),
        cmocka_unit_test(test_attention_bwd_blocks),
    };
    return cmocka_run_group_tests_name("engine_kernels_attn_bwd", tests, NULL, NULL);
}
