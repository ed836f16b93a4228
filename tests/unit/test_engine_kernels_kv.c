/* test_engine_kernels_kv.c: the cpu backend's attention with a KV cache (cpu_kv_attention.h,
 * backend.h attn_kv) against a naive double-precision reference:
 *  - prefill of a chunk after a cached prefix (causal with the prefix offset), a full prefill
 *    (prefix 0), decode of a batch of sequences (one query over all K keys), each with
 *    grouped-query attention (heads / kv_heads = 4, 2, 1);
 *  - the result does not depend on the thread count (1 and 3 threads agree bit for bit);
 *  - the backend slot times real work (prefill of 8x the chunk takes longer) and refuses a bad
 *    shape with one line naming it. */
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
#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kv_attention.h"

static float *randv(size_t n, uint64_t seed)
{
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    pdbx_k_fill_uniform(x, n, 1.0f, seed);
    return x;
}

/* out[s, i, h, :] = softmax_j(q . k_j / sqrt(d)) v_j over keys j <= kv_len - q_len + i of
 * sequence s, kv head h / (heads / kv_heads): the definition, in double, one element at a time. */
static void naive(const float *q, const float *k, const float *v, int seqs, int q_len, int kv_len, int heads,
                  int kv_heads, int d, double *out)
{
    const int group = heads / kv_heads;
    double *p = malloc((size_t)kv_len * sizeof *p);
    assert_non_null(p);
    for (int s = 0; s < seqs; s++)
        for (int i = 0; i < q_len; i++)
            for (int h = 0; h < heads; h++) {
                const float *qi = q + (((size_t)s * q_len + i) * heads + h) * d;
                const int kvh = h / group, last = kv_len - q_len + i;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j <= last; j++) {
                    const float *kj = k + (((size_t)s * kv_len + j) * kv_heads + kvh) * d;
                    double dot = 0;
                    for (int c = 0; c < d; c++)
                        dot += (double)qi[c] * kj[c];
                    p[j] = dot / sqrt((double)d);
                    mx = fmax(mx, p[j]);
                }
                for (int j = 0; j <= last; j++)
                    sum += (p[j] = exp(p[j] - mx));
                double *o = out + (((size_t)s * q_len + i) * heads + h) * d;
                for (int c = 0; c < d; c++) {
                    double acc = 0;
                    for (int j = 0; j <= last; j++)
                        acc += p[j] * v[(((size_t)s * kv_len + j) * kv_heads + kvh) * d + c];
                    o[c] = acc / sum;
                }
            }
    free(p);
}

/* Runs the kernel on `threads` threads and returns its output (malloc'ed). */
static float *run_kernel(const float *q, const float *k, const float *v, int seqs, int q_len, int kv_len,
                         int heads, int kv_heads, int d, int threads)
{
    pdbx_cpu_pool *pool = threads > 1 ? pdbx_cpu_pool_create(threads) : NULL;
    const size_t qn = (size_t)seqs * q_len * heads * d;
    float *out = malloc(qn * sizeof *out);
    float *scratch = malloc(pdbx_k_kv_attention_scratch_floats(kv_len, threads) * sizeof(float));
    assert_non_null(out);
    assert_non_null(scratch);
    for (size_t i = 0; i < qn; i++)
        out[i] = NAN;                       /* every element must be written */
    pdbx_k_attention_kv(pool, q, k, v, seqs, q_len, kv_len, heads, kv_heads, d, scratch, out);
    free(scratch);
    pdbx_cpu_pool_destroy(pool);
    return out;
}

static void check_case(int seqs, int q_len, int kv_len, int heads, int kv_heads, int d)
{
    const size_t qn = (size_t)seqs * q_len * heads * d, kn = (size_t)seqs * kv_len * kv_heads * d;
    float *q = randv(qn, 1), *k = randv(kn, 2), *v = randv(kn, 3);
    double *want = malloc(qn * sizeof *want);
    assert_non_null(want);
    naive(q, k, v, seqs, q_len, kv_len, heads, kv_heads, d, want);
    float *one = run_kernel(q, k, v, seqs, q_len, kv_len, heads, kv_heads, d, 1);
    float *three = run_kernel(q, k, v, seqs, q_len, kv_len, heads, kv_heads, d, 3);
    for (size_t i = 0; i < qn; i++) {
        if (!(fabs(one[i] - want[i]) <= 2e-5 * fmax(1.0, fabs(want[i])))) {
            print_error("seqs %d q_len %d kv_len %d heads %d/%d: out[%zu] = %.8g, reference %.8g\n", seqs, q_len,
                        kv_len, heads, kv_heads, i, one[i], want[i]);
            fail();
        }
        assert_true(memcmp(&one[i], &three[i], sizeof one[i]) == 0);
    }
    free(q);
    free(k);
    free(v);
    free(want);
    free(one);
    free(three);
}

static void test_prefill_with_prefix(void **state)
{
    (void)state;
    check_case(1, 16, 16 + 40, 8, 2, 32);    /* chunk 16 after 40 cached keys, GQA 4 */
    check_case(1, 7, 7 + 9, 4, 4, 12);       /* MHA, d not a multiple of 8 */
}

static void test_full_prefill(void **state)
{
    (void)state;
    check_case(1, 24, 24, 4, 2, 16);         /* prefix 0: plain causal */
}

static void test_decode_batch(void **state)
{
    (void)state;
    check_case(5, 1, 33, 8, 1, 16);          /* 5 sequences, one query over 33 keys, MQA */
    check_case(3, 1, 1, 2, 1, 8);            /* a single key: the value itself */
}

/* The causal offset matters: a query of a chunk must not see the chunk's later keys. Changing
 * the last key changes only the last query's output. */
static void test_causal_offset(void **state)
{
    (void)state;
    const int q_len = 4, kv_len = 10, heads = 2, d = 8;
    const size_t kn = (size_t)kv_len * heads * d;
    float *q = randv((size_t)q_len * heads * d, 5), *k = randv(kn, 6), *v = randv(kn, 7);
    float *a = run_kernel(q, k, v, 1, q_len, kv_len, heads, heads, d, 1);
    for (int c = 0; c < heads * d; c++)
        v[(size_t)(kv_len - 1) * heads * d + c] += 1.0f;
    float *b = run_kernel(q, k, v, 1, q_len, kv_len, heads, heads, d, 1);
    for (int i = 0; i < q_len; i++)
        for (int c = 0; c < heads * d; c++) {
            const size_t at = (size_t)i * heads * d + c;
            if (i < q_len - 1)
                assert_true(a[at] == b[at]);
            else
                assert_true(a[at] != b[at]);
        }
    free(q);
    free(k);
    free(v);
    free(a);
    free(b);
}

static void test_backend_slot(void **state)
{
    (void)state;
    pdbx_compute_config cfg = { .local_size = 1, .world_size = 1, .blas_threads = 1, .dtype = PDBX_DTYPE_FP32 };
    pdbx_compute *c = NULL;
    char err[256] = "";
    assert_int_equal(pdbx_cpu_compute_ops.init(&cfg, &c, err, sizeof err), 0);
    const pdbx_attn_kv_shape small = { 1, 32, 32 + 64, 8, 2, 64 }, big = { 1, 256, 256 + 64, 8, 2, 64 };
    double ms_small = 1e9, ms_big = 1e9, ms;
    for (int rep = 0; rep < 5; rep++) {
        assert_int_equal(pdbx_cpu_compute_ops.attn_kv(c, &small, &ms, err, sizeof err), 0);
        ms_small = fmin(ms_small, ms);
        assert_int_equal(pdbx_cpu_compute_ops.attn_kv(c, &big, &ms, err, sizeof err), 0);
        ms_big = fmin(ms_big, ms);
    }
    assert_true(ms_small > 0 && ms_big > 4 * ms_small);    /* ~40x the score work */
    const pdbx_attn_kv_shape bad = { 1, 8, 4, 8, 3, 64 };
    assert_int_equal(pdbx_cpu_compute_ops.attn_kv(c, &bad, &ms, err, sizeof err), -1);
    assert_non_null(strstr(err, "attn_kv: bad shape"));
    pdbx_cpu_compute_ops.release(c);                         /* frees the cache buffers */
    pdbx_cpu_compute_ops.fini(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefill_with_prefix),
        cmocka_unit_test(test_full_prefill),
        cmocka_unit_test(test_decode_batch),
        cmocka_unit_test(test_causal_offset),
        cmocka_unit_test(test_backend_slot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
