/* test_engine_kernels.c: the CPU backend's own kernels against naive double-precision
 * references (the backend end to end on a tiny point: test_engine_kernels_backend.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cpu/cpu_compute.h"
#include "engine/backends/host.h"
#include "engine/backends/cpu/cpu_internal.h"
#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_bwd.h"

static float *randv(size_t n, uint64_t seed)
{
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    pdbx_k_fill_uniform(x, n, 1.0f, seed);
    return x;
}

static void test_fill_range_and_variety(void **state)
{
    (void)state;
    float *x = randv(10000, 3);
    double mn = 1e9, mx = -1e9, sum = 0;
    for (int i = 0; i < 10000; i++) {
        mn = fmin(mn, x[i]);
        mx = fmax(mx, x[i]);
        sum += x[i];
    }
    assert_true(mn >= -1.0 && mx < 1.0);
    assert_true(mx - mn > 1.9);            /* spans the interval */
    assert_true(fabs(sum / 10000) < 0.05); /* roughly centred */
    free(x);
}

static void test_embed_gather(void **state)
{
    (void)state;
    const int64_t rows = 10, cols = 6, vloc = 8, vstart = 8;   /* this rank holds ids 8..15 */
    float *table = randv((size_t)(vloc * cols), 1);
    int32_t ids[10] = { 8, 15, 0, 9, 16, 12, 7, 8, 11, 14 };
    float out[60];
    memset(out, 0x7f, sizeof out);
    pdbx_k_embed_gather(table, vloc, vstart, ids, rows, (size_t)cols * sizeof(float), out);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            int64_t local = ids[i] - vstart;
            float want = (local >= 0 && local < vloc) ? table[local * cols + j] : 0.0f;
            assert_true(out[i * cols + j] == want);
        }
    free(table);
}

/* RMSNorm against a double-precision scalar reference, on the caller alone and on pools of 2
 * and 3 threads (rows split unevenly); every pool gives the single-thread result bit for bit. */
static void check_rmsnorm(int64_t rows, int64_t cols)
{
    float *x = randv((size_t)(rows * cols), 2), *w = randv((size_t)cols, 4);
    float *one = calloc((size_t)(rows * cols), sizeof *one), *out = calloc((size_t)(rows * cols), sizeof *out);
    pdbx_k_rmsnorm(NULL, x, w, rows, cols, 1e-5f, one);
    for (int i = 0; i < rows; i++) {
        double ss = 0;
        for (int j = 0; j < cols; j++)
            ss += (double)x[i * cols + j] * x[i * cols + j];
        double inv = 1.0 / sqrt(ss / cols + 1e-5);
        for (int j = 0; j < cols; j++) {
            double want = x[i * cols + j] * inv * w[j];
            assert_true(fabs(one[i * cols + j] - want) <= 1e-5 * (1 + fabs(want)));
        }
    }
    for (int threads = 2; threads <= 3; threads++) {
        pdbx_cpu_pool *pool = pdbx_cpu_pool_create(threads);
        assert_non_null(pool);
        assert_int_equal(pdbx_cpu_pool_threads(pool), threads);
        memset(out, 0xff, (size_t)(rows * cols) * sizeof *out);    /* NaNs: an unwritten row shows */
        pdbx_k_rmsnorm(pool, x, w, rows, cols, 1e-5f, out);
        assert_memory_equal(out, one, (size_t)(rows * cols) * sizeof *out);
        pdbx_cpu_pool_destroy(pool);
    }
    free(x);
    free(w);
    free(one);
    free(out);
}

static void test_rmsnorm(void **state)
{
    (void)state;
    check_rmsnorm(7, 33);          /* below the threading threshold, cols not a multiple of 16 */
    check_rmsnorm(101, 2051);      /* threaded: 101 rows over 2 and 3 threads */
}

/* SiLU x up against a double-precision scalar reference, over [-100, 100] (the sigmoid's
 * saturating tails and the own exp's clamps at -87 and 88), single-threaded and on pools of 2
 * and 3 threads with n not a multiple of the split or the vector width. */
static void check_silu_mul(int64_t n, float range)
{
    float *g = randv((size_t)n, 5), *u = randv((size_t)n, 6);
    float *one = calloc((size_t)n, sizeof(float)), *out = calloc((size_t)n, sizeof(float));
    for (int64_t i = 0; i < n; i++)
        g[i] *= range;
    pdbx_k_silu_mul(NULL, g, u, n, one);
    for (int64_t i = 0; i < n; i++) {
        double want = g[i] / (1.0 + exp(-(double)g[i])) * u[i];
        if (!(fabs(one[i] - want) <= 1e-5 * (1 + fabs(want))))
            print_error("silu(%.9g) * %.9g = %.9g, want %.9g\n", g[i], u[i], one[i], want);
        assert_true(fabs(one[i] - want) <= 1e-5 * (1 + fabs(want)));
    }
    for (int threads = 2; threads <= 3; threads++) {
        pdbx_cpu_pool *pool = pdbx_cpu_pool_create(threads);
        assert_non_null(pool);
        memset(out, 0xff, (size_t)n * sizeof *out);
        pdbx_k_silu_mul(pool, g, u, n, out);
        assert_memory_equal(out, one, (size_t)n * sizeof *out);
        pdbx_cpu_pool_destroy(pool);
    }
    free(g);
    free(u);
    free(one);
    free(out);
}

/* RoPE against a naive double-precision rotate-half (HF's apply_rotary_pos_emb: position of
 * row r = r % seq_len, cos/sin of pos * 10000^(-2i/rot) with cat(freqs, freqs)), on q-like
 * [seqs*seq, heads*d] rotating the first rot dims of each head (rot = d, even and odd: the last
 * element of each head untouched; rot < d: GPT-NeoX's partial rotary, q[..., rot:] passed
 * through), single-threaded and on pools of 2 and 3 threads (identical bits), above the
 * threading threshold; the table against cos/sin; the inverse rotation gives x back. */
static void check_rope(int64_t seqs, int64_t seq, int64_t heads, int64_t d, int64_t rot)
{
    const int64_t rows = seqs * seq, n = rows * heads * d, half = rot / 2;
    float *cs = malloc((size_t)(seq * half + 1) * sizeof *cs), *sn = malloc((size_t)(seq * half + 1) * sizeof *sn);
    assert_non_null(cs);
    assert_non_null(sn);
    pdbx_k_rope_table(seq, rot, 10000.0, cs, sn);
    for (int64_t p = 0; p < seq; p++)
        for (int64_t i = 0; i < half; i++) {
            const double ang = (double)p * pow(10000.0, -2.0 * (double)i / (double)rot);
            assert_true(fabs(cs[p * half + i] - cos(ang)) < 1e-6 && fabs(sn[p * half + i] - sin(ang)) < 1e-6);
        }
    float *x = randv((size_t)n, 11), *one = malloc((size_t)n * sizeof *one), *out = malloc((size_t)n * sizeof *out);
    assert_non_null(one);
    assert_non_null(out);
    memcpy(one, x, (size_t)n * sizeof *x);
    pdbx_k_rope(NULL, one, rows, heads, d, rot, seq, cs, sn, 0);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t j = 0; j < d; j++) {
                const int64_t at = (r * heads + h) * d, pos = r % seq;
                double want = x[at + j];   /* odd rot, j >= rot: the element stays */
                if (j < 2 * half) {
                    /* rotate_half(x) = cat(-x2, x1); cos and sin repeat over both halves */
                    const int64_t i = j % half;
                    const double ang = (double)pos * pow(10000.0, -2.0 * (double)i / (double)rot);
                    const double rot = j < half ? -(double)x[at + j + half] : (double)x[at + j - half];
                    want = x[at + j] * cos(ang) + rot * sin(ang);
                }
                if (!(fabs(one[at + j] - want) <= 2e-6))
                    print_error("rope row %lld head %lld elem %lld: %.9g, want %.9g\n", (long long)r,
                                (long long)h, (long long)j, one[at + j], want);
                assert_true(fabs(one[at + j] - want) <= 2e-6);
            }
    for (int threads = 2; threads <= 3; threads++) {
        pdbx_cpu_pool *pool = pdbx_cpu_pool_create(threads);
        assert_non_null(pool);
        memcpy(out, x, (size_t)n * sizeof *x);
        pdbx_k_rope(pool, out, rows, heads, d, rot, seq, cs, sn, 0);
        assert_memory_equal(out, one, (size_t)n * sizeof *out);
        pdbx_k_rope(pool, out, rows, heads, d, rot, seq, cs, sn, 1);   /* the inverse: x back */
        for (int64_t i = 0; i < n; i++)
            assert_true(fabs(out[i] - x[i]) <= 1e-5);
        pdbx_cpu_pool_destroy(pool);
    }
    free(cs), free(sn), free(x), free(one), free(out);
}

static void test_rope(void **state)
{
    (void)state;
    check_rope(1, 5, 2, 16, 16);
    check_rope(3, 7, 3, 7, 7);        /* odd head_dim */
    check_rope(2, 300, 4, 64, 64);    /* 153600 elements: the pool's chunks */
    check_rope(2, 300, 4, 64, 16);    /* pythia's rotary_pct 0.25 of 64 */
    check_rope(1, 9, 3, 256, 64);     /* gpt-j's rotary_dim 64 of 256 */
}

/* The residual add y += x against a plain loop, threaded (identical bits), at a size that is
 * not a multiple of the chunk or the vector. */
static void test_residual_add(void **state)
{
    (void)state;
    const int64_t n = 3 * 16384 + 77;
    float *y = randv((size_t)n, 21), *x = randv((size_t)n, 22);
    float *one = malloc((size_t)n * sizeof *one), *out = malloc((size_t)n * sizeof *out);
    assert_non_null(one);
    assert_non_null(out);
    memcpy(one, y, (size_t)n * sizeof *y);
    pdbx_k_add(NULL, one, x, n);
    for (int64_t i = 0; i < n; i++)
        assert_true(one[i] == y[i] + x[i]);
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(3);
    assert_non_null(pool);
    memcpy(out, y, (size_t)n * sizeof *y);
    pdbx_k_add(pool, out, x, n);
    assert_memory_equal(out, one, (size_t)n * sizeof *out);
    pdbx_cpu_pool_destroy(pool);
    free(y), free(x), free(one), free(out);
}

/* Linear-layer bias: the add over a GEMM's fp32 output and its gradient (column sums of dY,
 * fp32 and bf16 dY, accumulated) against plain loops, at odd widths (vector tails, a column
 * chunk cut short) and sizes above the kernels' threading threshold, on 1 and 3 threads. */
static void test_bias_add_and_grad(void **state)
{
    (void)state;
    static const int64_t dims[][2] = { { 1, 1 }, { 7, 3 }, { 131, 301 }, { 257, 129 }, { 3, 20011 } };
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const int64_t rows = dims[di][0], cols = dims[di][1], n = rows * cols;
        float *y0 = randv((size_t)n, 21), *bias = randv((size_t)cols, 22), *dy = randv((size_t)n, 23);
        float *want = malloc((size_t)n * sizeof *want), *y = malloc((size_t)n * sizeof *y);
        float *db_want = malloc((size_t)cols * sizeof(float)), *db = malloc((size_t)cols * sizeof(float));
        float *db_bf_want = malloc((size_t)cols * sizeof(float));
        uint16_t *dy_bf = malloc((size_t)n * sizeof *dy_bf);
        assert_true(want && y && db_want && db && db_bf_want && dy_bf);
        for (int64_t i = 0; i < n; i++)
            dy_bf[i] = pdbx_k_f32_to_bf16(dy[i]);
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++)
                want[i * cols + j] = y0[i * cols + j] + bias[j];
        for (int64_t j = 0; j < cols; j++) {   /* the gradient accumulates onto 0.5 */
            float acc = 0, acc_bf = 0;
            for (int64_t i = 0; i < rows; i++) {
                acc += dy[i * cols + j];
                acc_bf += pdbx_k_bf16_to_f32(dy_bf[i * cols + j]);
            }
            db_want[j] = 0.5f + acc;
            db_bf_want[j] = 0.5f + acc_bf;
        }
        for (int threads = 1; threads <= 3; threads += 2) {
            pdbx_cpu_pool *pool = threads > 1 ? pdbx_cpu_pool_create(threads) : NULL;
            assert_true(threads == 1 || pool);
            memcpy(y, y0, (size_t)n * sizeof *y);
            pdbx_k_bias_add(pool, y, bias, rows, cols);
            assert_memory_equal(y, want, (size_t)n * sizeof *y);
            for (int bf = 0; bf <= 1; bf++) {
                const float *w = bf ? db_bf_want : db_want;
                for (int64_t j = 0; j < cols; j++)
                    db[j] = 0.5f;
                pdbx_k_bias_grad(pool, bf ? (const void *)dy_bf : (const void *)dy, bf, rows, cols, db);
                for (int64_t j = 0; j < cols; j++)
                    if (!(fabsf(db[j] - w[j]) <= 1e-5f * (1.0f + fabsf(w[j])))) {
                        print_error("%lldx%lld threads %d bf16 %d: db[%lld] %.9g, want %.9g\n",
                                    (long long)rows, (long long)cols, threads, bf, (long long)j, db[j], w[j]);
                        fail();
                    }
            }
            pdbx_cpu_pool_destroy(pool);
        }
        free(y0); free(bias); free(dy); free(want); free(y); free(db_want); free(db);
        free(db_bf_want); free(dy_bf);
    }
}

static void test_silu_mul(void **state)
{
    (void)state;
    check_silu_mul(1001, 8.0f);
    check_silu_mul(100003, 100.0f);
    /* the exact edges of the exp's range and beyond */
    float g[8] = { -88.0f, -87.0f, -86.9f, 87.9f, 88.0f, 88.5f, -1e4f, 1e4f }, u[8], out[8];
    for (int i = 0; i < 8; i++)
        u[i] = 0.5f;
    pdbx_k_silu_mul(NULL, g, u, 8, out);
    for (int i = 0; i < 8; i++) {
        double want = g[i] / (1.0 + exp(-(double)g[i])) * u[i];
        assert_true(isfinite(out[i]));
        assert_true(fabs(out[i] - want) <= 1e-5 * (1 + fabs(want)));
    }
}

/* The pool runs every part once per run, part 0 on the caller; pool_for runs every chunk
 * exactly once. */
typedef struct {
    int calls[8];
    int parts_seen;
} pool_probe;

static void probe_part(void *arg, int part, int parts)
{
    pool_probe *p = arg;
    p->calls[part]++;
    p->parts_seen = parts;
}

typedef struct {
    atomic_int seen[997];
    atomic_int bad_part;
    int threads;
} chunk_probe;

static void chunk_count(void *arg, long long chunk, int part)
{
    chunk_probe *p = arg;
    atomic_fetch_add(&p->seen[chunk], 1);
    if (part < 0 || part >= p->threads)
        atomic_store(&p->bad_part, 1);
}

static void test_thread_pool(void **state)
{
    (void)state;
    assert_null(pdbx_cpu_pool_create(1));     /* one thread: the caller, no pool */
    assert_int_equal(pdbx_cpu_pool_threads(NULL), 1);
    pool_probe probe = { { 0 }, 0 };
    pdbx_cpu_pool_run(NULL, probe_part, &probe);
    assert_int_equal(probe.calls[0], 1);
    assert_int_equal(probe.parts_seen, 1);
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(4);
    assert_non_null(pool);
    memset(&probe, 0, sizeof probe);
    for (int run = 0; run < 1000; run++)
        pdbx_cpu_pool_run(pool, probe_part, &probe);
    for (int t = 0; t < 4; t++)
        assert_int_equal(probe.calls[t], 1000);
    assert_int_equal(probe.parts_seen, 4);
    pdbx_cpu_pool_destroy(pool);
    /* dynamic chunks: each exactly once, every part a valid thread index */
    for (int threads = 1; threads <= 3; threads++) {
        pdbx_cpu_pool *pl = pdbx_cpu_pool_create(threads);
        chunk_probe cp;
        memset(&cp, 0, sizeof cp);
        cp.threads = threads;
        pdbx_cpu_pool_for(pl, 997, chunk_count, &cp);
        for (int i = 0; i < 997; i++)
            assert_int_equal(cp.seen[i], 1);
        assert_int_equal(cp.bad_part, 0);
        pdbx_cpu_pool_for(pl, 0, chunk_count, &cp);     /* nothing to do: no call */
        for (int i = 0; i < 997; i++)
            assert_int_equal(cp.seen[i], 1);
        pdbx_cpu_pool_destroy(pl);
    }
}

/* Naive causal attention in double: softmax over j <= i per (sequence, head). */
static void attention_ref(const float *q, const float *k, const float *v, int64_t seqs,
                          int64_t S, int64_t H, int64_t KV, int64_t d, double *out)
{
    double *p = malloc((size_t)S * sizeof *p);
    for (int64_t s = 0; s < seqs; s++)
        for (int64_t h = 0; h < H; h++) {
            int64_t kh = h / (H / KV);
            for (int64_t i = 0; i < S; i++) {
                const float *qi = q + (s * S + i) * H * d + h * d;
                double m = -1e300, sum = 0;
                for (int64_t j = 0; j <= i; j++) {
                    const float *kj = k + (s * S + j) * KV * d + kh * d;
                    double dot = 0;
                    for (int64_t c = 0; c < d; c++)
                        dot += (double)qi[c] * kj[c];
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
                    out[(s * S + i) * H * d + h * d + c] = acc;
                }
            }
        }
    free(p);
}

static void check_attention_t(int64_t seqs, int64_t S, int64_t H, int64_t KV, int64_t d, int threads)
{
    size_t nq = (size_t)(seqs * S * H * d), nk = (size_t)(seqs * S * KV * d);
    float *q = randv(nq, 11), *k = randv(nk, 12), *v = randv(nk, 13);
    for (size_t i = 0; i < nq; i++)
        q[i] *= 3.0f;   /* peaked softmax: a wrong max or mask shows */
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(threads);
    assert_true(threads == 1 ? pool == NULL : pool != NULL);
    float *out = malloc(nq * sizeof *out), *one = malloc(nq * sizeof *one);
    float *scratch = calloc(pdbx_k_attention_scratch_floats(S, d, threads), sizeof(float));
    double *ref = calloc(nq, sizeof *ref);
    memset(out, 0xff, nq * sizeof *out);    /* NaNs: an element left unwritten shows */
    pdbx_k_attention_causal(pool, q, k, v, seqs, S, H, KV, d, scratch, out);
    attention_ref(q, k, v, seqs, S, H, KV, d, ref);
    for (size_t i = 0; i < nq; i++)
        assert_true(fabs(out[i] - ref[i]) <= 1e-4 * (1 + fabs(ref[i])));
    /* the same bits on one thread: each (sequence, head) is computed by one part */
    pdbx_k_attention_causal(NULL, q, k, v, seqs, S, H, KV, d, scratch, one);
    assert_memory_equal(out, one, nq * sizeof *out);
    pdbx_cpu_pool_destroy(pool);
    free(q);
    free(k);
    free(v);
    free(out);
    free(one);
    free(scratch);
    free(ref);
}

static void check_attention(int64_t seqs, int64_t S, int64_t H, int64_t KV, int64_t d)
{
    check_attention_t(seqs, S, H, KV, d, 1);
    check_attention_t(seqs, S, H, KV, d, 2);
    check_attention_t(seqs, S, H, KV, d, 3);    /* threads split (sequence, head) pairs */
}

static void test_attention_mha(void **state)
{
    (void)state;
    check_attention(2, 45, 3, 3, 16);       /* seq_len not a multiple of the block */
}

static void test_attention_gqa(void **state)
{
    (void)state;
    check_attention(1, 70, 8, 2, 8);        /* 4 query heads per kv head, 3 blocks */
    check_attention(1, 150, 2, 1, 32);      /* several key blocks per query block */
    check_attention(3, 1, 2, 1, 4);         /* one token: softmax of one score */
    check_attention(2, 130, 4, 2, 40);      /* head_dim 40: a 16-column tile and a tail of 8 */
    check_attention(1, 97, 6, 3, 64);       /* llama-sized head, 97 = 3 x 32 + 1 rows */
}

static void test_bf16_roundtrip(void **state)
{
    (void)state;
    assert_true(pdbx_k_bf16_to_f32(pdbx_k_f32_to_bf16(1.0f)) == 1.0f);
    assert_true(pdbx_k_bf16_to_f32(pdbx_k_f32_to_bf16(-2.5f)) == -2.5f);
    /* 1 + 2^-8 is halfway between two bf16 values: round to even (1.0). */
    assert_true(pdbx_k_bf16_to_f32(pdbx_k_f32_to_bf16(1.0f + 1.0f / 256.0f)) == 1.0f);
    float x = 3.14159f, y = pdbx_k_bf16_to_f32(pdbx_k_f32_to_bf16(x));
    assert_true(fabsf(x - y) <= x / 128.0f);
    assert_true(isnan(pdbx_k_bf16_to_f32(pdbx_k_f32_to_bf16(NAN))));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_range_and_variety),
        cmocka_unit_test(test_embed_gather),
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_silu_mul),
        cmocka_unit_test(test_bias_add_and_grad),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_residual_add),
        cmocka_unit_test(test_thread_pool),
        cmocka_unit_test(test_attention_mha),
        cmocka_unit_test(test_attention_gqa),
        cmocka_unit_test(test_bf16_roundtrip),
    };
    return cmocka_run_group_tests_name("engine_kernels", tests, NULL, NULL);
}
