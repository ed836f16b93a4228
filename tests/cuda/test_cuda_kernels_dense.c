/* test_cuda_kernels_dense.c: the cuda backend's kernels of the dense families beyond Llama
 * (engine/backends/cuda/cuda_kernels_dense.h): LayerNorm with and without bias, GELU (erf and
 * tanh) plain and gated, learned position embeddings, each with its backward.
 *
 * Host part, run everywhere the backend builds:
 *  - the host references the GPU part compares against (tests/cuda/cuda_dense_ref.h),
 *    themselves checked: GELU against
 *    independent forms (x Phi(x) through erfc; x sigmoid(2u)) and pinned values, its derivative
 *    and the gated backward against central differences, LayerNorm on a hand case and by shift
 *    invariance, its backward (dx, dw, db, accumulated) against central differences of
 *    sum dy * LayerNorm(x; w, b), the position embedding's backward as the adjoint of its
 *    forward, which adds table row r / mbs to row r (sequence-major, not r % seq);
 *  - the kernels' walks (cuda_dense_walk.h) run on the host as the kernels run them: the
 *    element-wise split touches every element once with every vector aligned in every array,
 *    and uses vectors whenever the arrays share their alignment; the position embedding's
 *    items touch every element once and give the reference's sums; LayerNorm's statistics,
 *    merged lane by lane and across the warp as layernorm_kernel does, match two-pass double
 *    where the mean is 1000 times the spread (E[x^2] - E[x]^2 in fp32 does not);
 *  - the entry points refuse bad arguments before any CUDA call.
 * GPU part: every kernel against those references on the same rounded inputs, bf16, fp16 and
 * fp32: LayerNorm at cols 1000 (aligned rows) and 1003 (misaligned rows, partial vectors), with
 * and without bias, its mean and rstd, its backward with dw and db added onto existing values
 * over 300 rows (several row splits); the GELU family at n 4096 (vectors only), 4099 (a tail),
 * 4099 from an odd element (a head) and with arrays of different alignment (scalars only); the
 * position embedding and its backward (dtable accumulated) at mbs 1 and 3, h 1000 and 1003,
 * and a misaligned x.
 * Without a device the GPU part is skipped with the reason printed and the binary exits 0
 * when the host part passed, as test_cuda_attn_kv does: the host checks are real tests, and
 * the suite's 77 would report them as skipped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>

#include "engine/backends/cuda/cuda_dense_walk.h"
#include "engine/backends/cuda/cuda_kernels_dense.h"
#include "tests/cuda/cuda_dense_ref.h"
#include "tests/cuda/cuda_test_util.h"

/* ---- host part: the references ---- */

static void test_host_gelu_ref(void **state)
{
    (void)state;
    /* pinned: torch.nn.functional.gelu(1.0) and gelu(1.0, approximate='tanh') */
    assert_true(fabs(gelu_ref(1.0, CK_GELU_ERF) - 0.8413447460685429) < 1e-15);
    assert_true(fabs(gelu_ref(1.0, CK_GELU_TANH) - 0.8411919906082768) < 1e-15);
    assert_true(fabs(gelu_ref(-1.0, CK_GELU_TANH) + 0.15880800939172324) < 1e-15);
    for (double x = -9.0; x <= 9.0; x += 0.0625) {
        /* x Phi(x) through erfc (no cancellation for negative x); 0.5 (1 + tanh u) = sigmoid(2u) */
        const double u = sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
        assert_true(fabs(gelu_ref(x, CK_GELU_ERF) - x * 0.5 * erfc(-x / sqrt(2.0))) < 1e-14);
        assert_true(fabs(gelu_ref(x, CK_GELU_TANH) - x / (1.0 + exp(-2.0 * u))) < 1e-14);
        for (ck_gelu_kind k = CK_GELU_ERF; k <= CK_GELU_TANH; k++) {
            const double h = 1e-5, fd = (gelu_ref(x + h, k) - gelu_ref(x - h, k)) / (2 * h);
            if (!(fabs(gelu_grad_ref(x, k) - fd) < 1e-8))
                fail_msg("gelu'(%g) kind %d: %.12g, central difference %.12g", x, (int)k,
                         gelu_grad_ref(x, k), fd);
        }
    }
}

/* The gated backward (fp32: the intermediate roundings are float's) against central
 * differences of L = d * gelu(g) * u. */
static void test_host_gelu_mul_bwd_ref(void **state)
{
    (void)state;
    for (ck_gelu_kind k = CK_GELU_ERF; k <= CK_GELU_TANH; k++)
        for (int i = 0; i < 200; i++) {
            const double g = round_to(PDBX_DTYPE_FP32, urand(-6, 6)), u = urand(-2, 2), d = urand(-1, 1);
            double dg, du, h = 1e-5;
            gelu_op_ref(OP_GELU_MUL_BWD, k, PDBX_DTYPE_FP32, g, u, d, &dg, &du);
            const double fg = d * u * (gelu_ref(g + h, k) - gelu_ref(g - h, k)) / (2 * h);
            const double fu = d * gelu_ref(g, k);   /* L is linear in u */
            assert_true(fabs(dg - fg) <= 1e-6 * (1.0 + fabs(fg)));
            assert_true(fabs(du - fu) <= 1e-6 * (1.0 + fabs(fu)));
        }
}

static void test_host_layernorm_ref(void **state)
{
    (void)state;
    const double x[4] = {1, 2, 3, 4}, ones[4] = {1, 1, 1, 1};
    const double want[4] = {-1.3416407864998738, -0.4472135954999579, 0.4472135954999579,
                            1.3416407864998738};
    double y[7], y2[7], m, r, m2, r2;
    layernorm_ref(x, ones, NULL, 4, 0.0, y, &m, &r);   /* mean 2.5, var 1.25 */
    assert_true(fabs(m - 2.5) < 1e-15 && fabs(r - 1.0 / sqrt(1.25)) < 1e-15);
    for (int c = 0; c < 4; c++)
        assert_true(fabs(y[c] - want[c]) < 1e-15);
    /* with w and b, and shifted by 1000: the same output */
    double xs[7], w[7], b[7];
    for (int c = 0; c < 7; c++)
        xs[c] = urand(-2, 2), w[c] = urand(0.5, 1.5), b[c] = urand(-0.5, 0.5);
    layernorm_ref(xs, w, b, 7, 1e-5, y, &m, &r);
    for (int c = 0; c < 7; c++)
        xs[c] += 1000.0;
    layernorm_ref(xs, w, b, 7, 1e-5, y2, &m2, &r2);
    assert_true(fabs(m2 - m - 1000.0) < 1e-12 && fabs(r2 - r) < 1e-9 * r);
    for (int c = 0; c < 7; c++)
        assert_true(fabs(y2[c] - y[c]) < 1e-10);
}

/* L = sum dy * LayerNorm(x; w, b) over 3 rows of 7, and its central difference in *p (an
 * element of x, w or b). */
static double ln_loss(const double *x, const double *w, const double *b, const double *dy)
{
    double y[7], m, r, l = 0.0;
    for (int row = 0; row < 3; row++) {
        layernorm_ref(x + row * 7, w, b, 7, 1e-5, y, &m, &r);
        for (int c = 0; c < 7; c++)
            l += dy[row * 7 + c] * y[c];
    }
    return l;
}

static double ln_central(double *p, const double *x, const double *w, const double *b, const double *dy)
{
    const double keep = *p, h = 1e-6;
    *p = keep + h;
    const double lp = ln_loss(x, w, b, dy);
    *p = keep - h;
    const double lm = ln_loss(x, w, b, dy);
    *p = keep;
    return (lp - lm) / (2 * h);
}

static void test_host_layernorm_bwd_ref(void **state)
{
    (void)state;
    double x[21], dy[21], dx[21], w[7], b[7], dw[7], db[7], y[7], m, r;
    for (int i = 0; i < 21; i++)
        x[i] = urand(-2, 3), dy[i] = urand(-1, 1);
    for (int c = 0; c < 7; c++)
        w[c] = urand(0.5, 1.5), b[c] = urand(-0.5, 0.5), dw[c] = 0.25, db[c] = -0.5;
    for (int row = 0; row < 3; row++) {
        layernorm_ref(x + row * 7, w, b, 7, 1e-5, y, &m, &r);
        layernorm_bwd_ref(x + row * 7, w, m, r, dy + row * 7, 7, dx + row * 7, dw, db);
    }
    for (int i = 0; i < 21; i++)   /* every input of every row */
        if (!(fabs(dx[i] - ln_central(&x[i], x, w, b, dy)) < 1e-7))
            fail_msg("dx[%d] = %.12g, central difference %.12g", i, dx[i], ln_central(&x[i], x, w, b, dy));
    for (int c = 0; c < 7; c++) {   /* dw and db: 0.25 and -0.5 plus the gradient */
        assert_true(fabs(dw[c] - 0.25 - ln_central(&w[c], x, w, b, dy)) < 1e-7);
        assert_true(fabs(db[c] + 0.5 - ln_central(&b[c], x, w, b, dy)) < 1e-7);
    }
}

/* The forward puts table row r / mbs into row r; the backward is its adjoint:
 * <dx, A t> = <A^T dx, t>. */
static void test_host_pos_embed_ref(void **state)
{
    (void)state;
    const int64_t h = 5, seq = 4;
    for (int64_t mbs = 1; mbs <= 3; mbs += 2) {
        const int64_t T = seq * mbs;
        double x[60] = {0}, t[20], dx[60], dt[20] = {0}, lhs = 0.0, rhs = 0.0;
        for (int64_t i = 0; i < seq * h; i++)
            t[i] = (double)(i / h) + 0.01 * (double)(i % h);   /* row p holds p.0c */
        for (int64_t i = 0; i < T * h; i++)
            dx[i] = urand(-1, 1);
        pos_embed_ref(x, t, T, h, mbs);
        for (int64_t r = 0; r < T; r++)   /* mbs 3: rows 0-2 position 0, rows 3-5 position 1 ... */
            for (int64_t c = 0; c < h; c++)
                assert_true(x[r * h + c] == t[(r / mbs) * h + c]);
        if (mbs == 3)
            assert_true(x[4 * h + 2] == 1.02 && x[8 * h] == 2.0);
        pos_embed_bwd_ref(dx, dt, T, h, mbs);
        for (int64_t i = 0; i < T * h; i++)
            lhs += dx[i] * x[i];
        for (int64_t i = 0; i < seq * h; i++)
            rhs += dt[i] * t[i];
        assert_true(fabs(lhs - rhs) < 1e-12 * (1.0 + fabs(lhs)));
    }
}

/* ---- host part: the kernels' walks (cuda_dense_walk.h) ---- */

/* The element-wise split of np arrays at element offsets off[] from 16-byte aligned bases, as
 * flat_walk runs it: every element once, each vector aligned in every array; vectors whenever
 * all arrays share their alignment and the body holds one. */
static void flat_case(int64_t n, int64_t es, int np, const int64_t *off)
{
    uintptr_t p[CK_FLAT_MAX];
    int same = 1;
    for (int i = 0; i < np; i++) {
        p[i] = 0x7f0000100000u + (uintptr_t)(i * 0x10000 + off[i] * es);
        same &= (off[i] - off[0]) * es % 16 == 0;
    }
    const ck_row_split s = ck_split_flat(n, p, np, es);
    const int64_t W = 16 / es;
    unsigned char *seen = calloc((size_t)n, 1);
    assert_non_null(seen);
    for (int64_t v = 0; v < s.nvec; v++)
        for (int i = 0; i < np; i++) {
            assert_int_equal((p[i] + (uintptr_t)((s.head + v * W) * es)) % 16, 0);
            for (int64_t e = 0; i == 0 && e < W; e++)
                seen[s.head + v * W + e]++;
        }
    for (int64_t k = 0; k < ck_flat_scalars(s, n); k++)
        seen[ck_flat_scalar(s, k)]++;
    for (int64_t j = 0; j < n; j++)
        if (seen[j] != 1)
            fail_msg("n %lld esize %lld: element %lld seen %d times", (long long)n, (long long)es,
                     (long long)j, seen[j]);
    if (same && n >= 2 * W)
        assert_true(s.nvec >= 1);
    if (!same)
        assert_true(s.nvec == 0 && ck_flat_scalars(s, n) == n);
    free(seen);
}

static void test_host_flat_split(void **state)
{
    (void)state;
    const int64_t offs[][CK_FLAT_MAX] = {{0, 0, 0, 0, 0}, {1, 1, 1, 1, 1}, {3, 3, 3, 3, 3},
                                         {0, 1, 0, 0, 0}, {0, 0, 0, 0, 8}, {5, 5, 5, 5, 4}};
    const int64_t sizes[] = {1, 2, 7, 8, 9, 15, 16, 17, 33, 100, 1001, 4096, 4099};
    for (int64_t es = 2; es <= 4; es += 2)
        for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                for (int np = 1; np <= CK_FLAT_MAX; np++)
                    flat_case(sizes[s], es, np, offs[o]);
    const uintptr_t p[2] = {0x1000, 0x2000};
    assert_int_equal(ck_split_flat(64, p, 0, 2).nvec, 0);   /* no arrays, too many: none */
    assert_int_equal(ck_split_flat(64, p, CK_FLAT_MAX + 1, 2).nvec, 0);
}

/* The kernels' items over x at base address xa and table at ta (esize es), forward and
 * backward, against the references. */
static void pos_walk_case(int64_t es, int64_t h, int64_t mbs, uintptr_t xa, uintptr_t ta, int64_t want_w)
{
    const int64_t seq = 5, T = seq * mbs, w = ck_pos_embed_width(h, xa, ta, es);
    assert_int_equal(w, want_w);
    double *x = calloc((size_t)(T * h), sizeof *x), *ref = calloc((size_t)(T * h), sizeof *ref);
    double *t = malloc((size_t)(seq * h) * sizeof *t), *dt = calloc((size_t)(seq * h), sizeof *dt);
    double *rdt = calloc((size_t)(seq * h), sizeof *rdt);
    int *seen = calloc((size_t)(T * h), sizeof *seen), *tseen = calloc((size_t)(seq * h), sizeof *tseen);
    assert_true(x && ref && t && dt && rdt && seen && tseen);
    for (int64_t i = 0; i < seq * h; i++)
        t[i] = urand(-1, 1);
    for (int64_t i = 0; i < ck_pos_embed_items(T, h, w); i++) {
        const ck_pos_at at = ck_pos_embed_at(i, h, mbs, w);
        if (w > 1)
            assert_true((xa + (uintptr_t)(at.x * es)) % 16 == 0 && (ta + (uintptr_t)(at.table * es)) % 16 == 0);
        for (int64_t e = 0; e < w; e++)
            x[at.x + e] += t[at.table + e], seen[at.x + e]++;
    }
    pos_embed_ref(ref, t, T, h, mbs);
    for (int64_t i = 0; i < T * h; i++)
        assert_true(seen[i] == 1 && x[i] == ref[i]);
    for (int64_t k = 0; k < ck_pos_embed_items(seq, h, w); k++) {   /* x now serves as dx */
        double acc[8] = {0};
        for (int64_t b = 0; b < mbs; b++) {
            const ck_pos_at at = ck_pos_embed_bwd_at(k, b, h, mbs, w);
            for (int64_t e = 0; e < w; e++)
                acc[e] += x[at.x + e], seen[at.x + e]++;
        }
        const int64_t row = ck_pos_embed_bwd_at(k, 0, h, mbs, w).table;
        for (int64_t e = 0; e < w; e++)
            dt[row + e] += acc[e], tseen[row + e]++;
    }
    pos_embed_bwd_ref(x, rdt, T, h, mbs);
    for (int64_t i = 0; i < T * h; i++)
        assert_int_equal(seen[i], 2);
    for (int64_t i = 0; i < seq * h; i++)
        assert_true(tseen[i] == 1 && fabs(dt[i] - rdt[i]) < 1e-12);
    free(x), free(ref), free(t), free(dt), free(rdt), free(seen), free(tseen);
}

static void test_host_pos_embed_walk(void **state)
{
    (void)state;
    const uintptr_t a = 0x7f0000200000u, b = 0x7f0000400000u;
    for (int64_t mbs = 1; mbs <= 3; mbs += 2) {
        pos_walk_case(2, 1000, mbs, a, b, 8);       /* bf16/fp16 vectors */
        pos_walk_case(4, 1000, mbs, a, b, 4);       /* fp32 vectors */
        pos_walk_case(2, 1003, mbs, a, b, 1);       /* h not a multiple of the vector */
        pos_walk_case(2, 1000, mbs, a + 2, b, 1);   /* x from an odd element */
        pos_walk_case(4, 1000, mbs, a, b + 4, 1);
        pos_walk_case(2, 8, mbs, a, b, 8);          /* one vector per row */
    }
}

/* layernorm_kernel's statistics of one row: 32 lanes each merge their head scalars, vectors
 * and tail scalars in walk order (cuda_rowsplit.h's split at the row's address), a butterfly
 * merges the lanes, lane 0's result is the row's. */
static ck_welford warp_stats(const float *row, int64_t n, uintptr_t addr, int64_t es)
{
    const ck_row_split sp = ck_split_row(n, addr, 0, 0, es);
    const int W = (int)(16 / es);
    ck_welford lane[32], next[32];
    for (int l = 0; l < 32; l++) {
        ck_welford s = {0.0f, 0.0f, 0.0f};
        for (int64_t j = l; j < sp.head; j += 32)
            s = ck_welford_merge(s, ck_welford_of(row + j, 1));
        for (int64_t v = l; v < sp.nvec; v += 32)
            s = ck_welford_merge(s, ck_welford_of(row + sp.head + v * W, W));
        for (int64_t j = sp.body_end + l; j < n; j += 32)
            s = ck_welford_merge(s, ck_welford_of(row + j, 1));
        lane[l] = s;
    }
    for (int o = 16; o > 0; o /= 2) {
        for (int l = 0; l < 32; l++)
            next[l] = ck_welford_merge(lane[l], lane[l ^ o]);
        memcpy(lane, next, sizeof lane);
    }
    return lane[0];
}

static void test_host_layernorm_stats(void **state)
{
    (void)state;
    const int64_t sizes[] = {1, 5, 31, 33, 1000, 1003, 4101};
    float *row = malloc(4101 * sizeof *row);
    assert_non_null(row);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int64_t es = 2; es <= 4; es += 2)
            for (int64_t off = 0; off < 3; off++)
                for (int shift = 0; shift <= 1000; shift += 1000) {
                    const int64_t n = sizes[si];
                    double m = 0.0, v = 0.0;
                    float fs = 0.0f, fss = 0.0f;   /* E[x^2] - E[x]^2 in fp32 */
                    for (int64_t c = 0; c < n; c++) {
                        row[c] = (float)shift + urand(-1, 1);
                        m += row[c], fs += row[c], fss += row[c] * row[c];
                    }
                    m /= (double)n;
                    for (int64_t c = 0; c < n; c++)
                        v += (row[c] - m) * (row[c] - m);
                    v /= (double)n;
                    const ck_welford s = warp_stats(row, n, 0x7f0000300000u + (uintptr_t)(off * es), es);
                    const double got_v = s.m2 / s.n;
                    assert_true(s.n == (float)n);
                    /* fp32 holds a mean of 1000 to 6e-5: the deviations between parts carry that */
                    const double tol_v = shift ? 1e-3 : 2e-6;
                    if (!(fabs(s.mean - m) <= 1e-6 * (1.0 + fabs(m)) && fabs(got_v - v) <= tol_v * v + 1e-7))
                        fail_msg("n %lld off %lld shift %d: mean %.9g var %.9g, want %.9g %.9g", (long long)n,
                                 (long long)off, shift, (double)s.mean, got_v, m, v);
                    const double naive_v = (double)(fss / (float)n) - (double)(fs / (float)n) * (fs / (float)n);
                    if (shift && n >= 1000)   /* the data tells the two apart */
                        assert_true(fabs(naive_v - v) > 10 * tol_v * v);
                }
    free(row);
    const ck_welford e = {0.0f, 0.0f, 0.0f}, one = {1.0f, 3.0f, 0.0f};
    assert_true(ck_welford_merge(e, one).mean == 3.0f && ck_welford_merge(one, e).n == 1.0f);
}

/* Refused before any CUDA call (none is initialised here). */
static void test_host_refusals(void **state)
{
    (void)state;
    const pdbx_dtype bad = (pdbx_dtype)7;
    float f = 0.0f;
    assert_int_equal(ck_layernorm(&f, &f, NULL, &f, NULL, NULL, 0, 8, 1e-5f, PDBX_DTYPE_BF16, 0), cudaErrorInvalidValue);
    assert_int_equal(ck_layernorm(&f, &f, NULL, &f, NULL, NULL, 4, 0, 1e-5f, PDBX_DTYPE_BF16, 0), cudaErrorInvalidValue);
    assert_int_equal(ck_layernorm(&f, &f, NULL, &f, NULL, NULL, 4, 8, 1e-5f, bad, 0), cudaErrorInvalidValue);
    assert_int_equal(ck_layernorm(&f, &f, NULL, &f, NULL, NULL, 4, (1 << 24) + 1, 1e-5f, PDBX_DTYPE_FP32, 0),
                     cudaErrorInvalidValue);   /* counts past fp32's exact integers */
    assert_int_equal(ck_layernorm_bwd(&f, &f, &f, &f, &f, &f, &f, NULL, 0, 8, PDBX_DTYPE_FP32, 0), cudaErrorInvalidValue);
    assert_int_equal(ck_layernorm_bwd(&f, &f, &f, &f, &f, &f, &f, NULL, 4, 8, bad, 0), cudaErrorInvalidValue);
    assert_int_equal(ck_gelu(&f, &f, 0, CK_GELU_ERF, PDBX_DTYPE_FP32, 0), cudaErrorInvalidValue);
    assert_int_equal(ck_gelu(&f, &f, 8, (ck_gelu_kind)2, PDBX_DTYPE_FP32, 0), cudaErrorInvalidValue);
    assert_int_equal(ck_gelu_mul(&f, &f, &f, -1, CK_GELU_TANH, PDBX_DTYPE_FP32, 0), cudaErrorInvalidValue);
    assert_int_equal(ck_gelu_bwd(&f, &f, &f, 8, CK_GELU_TANH, bad, 0), cudaErrorInvalidValue);
    assert_int_equal(ck_gelu_mul_bwd(&f, &f, &f, &f, &f, 8, (ck_gelu_kind)-1, PDBX_DTYPE_FP32, 0), cudaErrorInvalidValue);
    assert_int_equal(ck_pos_embed_add(&f, &f, 10, 8, 3, PDBX_DTYPE_FP32, 0), cudaErrorInvalidValue);   /* 10 % 3 */
    assert_int_equal(ck_pos_embed_add(&f, &f, 12, 8, 0, PDBX_DTYPE_FP32, 0), cudaErrorInvalidValue);
    assert_int_equal(ck_pos_embed_add(&f, &f, 12, 8, 3, bad, 0), cudaErrorInvalidValue);
    assert_int_equal(ck_pos_embed_bwd(&f, &f, 12, 0, 3, PDBX_DTYPE_FP32, 0), cudaErrorInvalidValue);
    assert_int_equal(ck_pos_embed_bwd(&f, &f, 7, 8, 2, PDBX_DTYPE_FP32, 0), cudaErrorInvalidValue);
}

/* ---- GPU part ---- */

static const pdbx_dtype dts[] = {PDBX_DTYPE_BF16, PDBX_DTYPE_FP16, PDBX_DTYPE_FP32};

/* One rounding to dt (half an ulp, with room for fp32 arithmetic against double). */
static float rtol_of(pdbx_dtype dt)
{
    return dt == PDBX_DTYPE_BF16 ? 1.0f / 256 : dt == PDBX_DTYPE_FP16 ? 1.0f / 2048 : 2e-6f;
}

/* n elements of t from element off (host and device). */
static tensor view(const tensor *t, size_t off, size_t n)
{
    tensor v = {(char *)t->host + off * esize(t->dt), (char *)t->dev + off * esize(t->dt), n, t->dt};
    return v;
}

static void check_close_d(const char *what, const tensor *got, const double *want, size_t n,
                          float atol, float rtol)
{
    float *f = malloc(n * sizeof *f);
    assert_non_null(f);
    for (size_t i = 0; i < n; i++)
        f[i] = (float)want[i];
    expect_close(what, got, f, n, atol, rtol);
    free(f);
}

/* Forward (y, mean, rstd) and backward (dx; dw, db onto values already there) of rows x cols. */
static void check_layernorm(pdbx_dtype dt, int64_t cols, int bias)
{
    const int64_t rows = 300;
    const size_t n = (size_t)(rows * cols), nc = (size_t)cols;
    tensor x = ct_make(n, dt, 1.0f, 5.0f), w = ct_make(nc, dt, 0.5f, 1.5f), b = ct_make(nc, dt, -0.5f, 0.5f);
    tensor y = ct_make(n, dt, 7.0f, 8.0f), dy = ct_make(n, dt, -1.0f, 1.0f), dx = ct_make(n, dt, 7.0f, 8.0f);
    tensor mean = ct_make((size_t)rows, PDBX_DTYPE_FP32, 0, 0), rstd = ct_make((size_t)rows, PDBX_DTYPE_FP32, 0, 0);
    tensor dw = ct_make(nc, PDBX_DTYPE_FP32, -1.0f, 1.0f), db = ct_make(nc, PDBX_DTYPE_FP32, -1.0f, 1.0f);
    double *hx = host_of(&x), *hw = host_of(&w), *hb = host_of(&b), *hdy = host_of(&dy);
    double *ry = malloc(n * sizeof *ry), *rdx = malloc(n * sizeof *rdx), *rdw = host_of(&dw), *rdb = host_of(&db);
    double *rm = malloc((size_t)rows * sizeof *rm), *rr = malloc((size_t)rows * sizeof *rr);
    assert_true(ry && rdx && rm && rr);
    for (int64_t r = 0; r < rows; r++) {
        layernorm_ref(hx + r * cols, hw, bias ? hb : NULL, cols, 1e-5, ry + r * cols, &rm[r], &rr[r]);
        layernorm_bwd_ref(hx + r * cols, hw, rm[r], rr[r], hdy + r * cols, cols, rdx + r * cols, rdw,
                          bias ? rdb : NULL);
    }
    assert_int_equal(ck_layernorm(x.dev, w.dev, bias ? b.dev : NULL, y.dev, mean.dev, rstd.dev, rows, cols,
                                  1e-5f, dt, stream), cudaSuccess);
    assert_int_equal(ck_layernorm_bwd(x.dev, w.dev, mean.dev, rstd.dev, dy.dev, dx.dev, dw.dev,
                                      bias ? db.dev : NULL, rows, cols, dt, stream), cudaSuccess);
    ct_download(&y), ct_download(&mean), ct_download(&rstd), ct_download(&dx), ct_download(&dw), ct_download(&db);
    char what[96];
    snprintf(what, sizeof what, "layernorm dtype %d cols %lld bias %d", (int)dt, (long long)cols, bias);
    check_close_d(what, &y, ry, n, 1e-5f, rtol_of(dt) + 2e-6f);
    check_close_d("layernorm mean", &mean, rm, (size_t)rows, 1e-6f, 1e-6f);
    check_close_d("layernorm rstd", &rstd, rr, (size_t)rows, 0.0f, 1e-5f);
    check_close_d("layernorm_bwd dx", &dx, rdx, n, 1e-4f, rtol_of(dt) + 1e-5f);
    /* 300 fp32 terms of O(1) per column, the same inputs: a few fp32 roundings per term */
    check_close_d("layernorm_bwd dw", &dw, rdw, nc, 1e-4f, 1e-5f);
    check_close_d(bias ? "layernorm_bwd db" : "db untouched without bias", &db, rdb, nc, 1e-4f, 1e-5f);
    free(hx), free(hw), free(hb), free(hdy), free(ry), free(rdx), free(rdw), free(rdb), free(rm), free(rr);
    ct_drop(&x), ct_drop(&w), ct_drop(&b), ct_drop(&y), ct_drop(&dy), ct_drop(&dx);
    ct_drop(&mean), ct_drop(&rstd), ct_drop(&dw), ct_drop(&db);
}

static void test_layernorm(void **state)
{
    (void)state;
    for (size_t d = 0; d < 3; d++)
        for (int bias = 0; bias <= 1; bias++) {
            check_layernorm(dts[d], 1000, bias);
            check_layernorm(dts[d], 1003, bias);
        }
}

/* One op of the GELU family on n elements, inputs from element in_off of their buffers and
 * outputs from out_off (equal offsets: vectors with a head; different: scalars only). */
static void check_gelu(int op, ck_gelu_kind k, pdbx_dtype dt, int64_t n, size_t in_off, size_t out_off)
{
    const size_t m = (size_t)n + 1;
    tensor g = ct_make(m, dt, -6.0f, 6.0f), u = ct_make(m, dt, -2.0f, 2.0f), d = ct_make(m, dt, -1.0f, 1.0f);
    tensor o1 = ct_make(m, dt, 7.0f, 8.0f), o2 = ct_make(m, dt, 7.0f, 8.0f);
    tensor gv = view(&g, in_off, (size_t)n), uv = view(&u, in_off, (size_t)n), dv = view(&d, in_off, (size_t)n);
    tensor v1 = view(&o1, out_off, (size_t)n), v2 = view(&o2, out_off, (size_t)n);
    cudaError_t e = op == OP_GELU ? ck_gelu(gv.dev, v1.dev, n, k, dt, stream)
                  : op == OP_GELU_MUL ? ck_gelu_mul(gv.dev, uv.dev, v1.dev, n, k, dt, stream)
                  : op == OP_GELU_BWD ? ck_gelu_bwd(gv.dev, dv.dev, v1.dev, n, k, dt, stream)
                  : ck_gelu_mul_bwd(gv.dev, uv.dev, dv.dev, v1.dev, v2.dev, n, k, dt, stream);
    assert_int_equal(e, cudaSuccess);
    ct_download(&o1), ct_download(&o2);
    double *r1 = malloc((size_t)n * sizeof *r1), *r2 = malloc((size_t)n * sizeof *r2);
    assert_true(r1 && r2);
    for (int64_t i = 0; i < n; i++)
        gelu_op_ref(op, k, dt, ct_at(&gv, (size_t)i), ct_at(&uv, (size_t)i), ct_at(&dv, (size_t)i), &r1[i], &r2[i]);
    /* the gated forms round an intermediate too: it may land one ulp apart from double's */
    const float rtol = (op == OP_GELU_MUL || op == OP_GELU_MUL_BWD ? 3 : 1) * rtol_of(dt) + 1e-5f;
    char what[96];
    snprintf(what, sizeof what, "gelu op %d kind %d dtype %d n %lld offsets %zu %zu", op, (int)k, (int)dt,
             (long long)n, in_off, out_off);
    check_close_d(what, &v1, r1, (size_t)n, 1e-5f, rtol);
    if (op == OP_GELU_MUL_BWD)
        check_close_d(what, &v2, r2, (size_t)n, 1e-5f, rtol);
    /* nothing written outside the n elements */
    const tensor guard = view(&o1, out_off ? 0 : (size_t)n, 1);
    assert_true(ct_at(&guard, 0) >= 7.0f && ct_at(&guard, 0) <= 8.0f);
    free(r1), free(r2);
    ct_drop(&g), ct_drop(&u), ct_drop(&d), ct_drop(&o1), ct_drop(&o2);
}

static void test_gelu_family(void **state)
{
    (void)state;
    for (int op = 0; op < OP_COUNT; op++)
        for (ck_gelu_kind k = CK_GELU_ERF; k <= CK_GELU_TANH; k++)
            for (size_t di = 0; di < 3; di++) {
                check_gelu(op, k, dts[di], 4096, 0, 0);   /* vectors only */
                check_gelu(op, k, dts[di], 4099, 0, 0);   /* and a scalar tail */
                check_gelu(op, k, dts[di], 4099, 1, 1);   /* a scalar head */
                check_gelu(op, k, dts[di], 4099, 0, 1);   /* outputs misaligned: scalars only */
            }
}

/* x += table[r / mbs] and dtable += the per-position sums of dx (dtable holding values
 * already); x_off 1: x from an odd element (scalar items). */
static void check_pos_embed(pdbx_dtype dt, int64_t h, int64_t mbs, size_t x_off)
{
    const int64_t seq = 7, T = seq * mbs;
    const size_t n = (size_t)(T * h), nt = (size_t)(seq * h);
    tensor xb = ct_make(n + 1, dt, -2.0f, 2.0f), t = ct_make(nt, dt, -1.0f, 1.0f);
    tensor dx = ct_make(n, dt, -1.0f, 1.0f), dtab = ct_make(nt, PDBX_DTYPE_FP32, -1.0f, 1.0f);
    tensor x = view(&xb, x_off, n);
    double *rx = host_of(&x), *ht = host_of(&t), *hdx = host_of(&dx), *rdt = host_of(&dtab);
    pos_embed_ref(rx, ht, T, h, mbs);
    for (size_t i = 0; i < n; i++)
        rx[i] = round_to(dt, (float)rx[i]);
    pos_embed_bwd_ref(hdx, rdt, T, h, mbs);
    assert_int_equal(ck_pos_embed_add(x.dev, t.dev, T, h, mbs, dt, stream), cudaSuccess);
    assert_int_equal(ck_pos_embed_bwd(dx.dev, dtab.dev, T, h, mbs, dt, stream), cudaSuccess);
    ct_download(&xb), ct_download(&dtab);
    char what[96];
    snprintf(what, sizeof what, "pos_embed dtype %d h %lld mbs %lld x_off %zu", (int)dt, (long long)h,
             (long long)mbs, x_off);
    check_close_d(what, &x, rx, n, 0.0f, 1e-6f);   /* the sum rounded once, as the reference */
    snprintf(what, sizeof what, "pos_embed_bwd dtype %d h %lld mbs %lld", (int)dt, (long long)h, (long long)mbs);
    check_close_d(what, &dtab, rdt, nt, 1e-6f, 1e-6f);
    free(rx), free(ht), free(hdx), free(rdt);
    ct_drop(&xb), ct_drop(&t), ct_drop(&dx), ct_drop(&dtab);
}

static void test_pos_embed(void **state)
{
    (void)state;
    for (size_t di = 0; di < 3; di++)
        for (int64_t mbs = 1; mbs <= 3; mbs += 2) {
            check_pos_embed(dts[di], 1000, mbs, 0);   /* 16-byte vectors */
            check_pos_embed(dts[di], 1003, mbs, 0);   /* one column per thread */
            check_pos_embed(dts[di], 1000, mbs, 1);   /* x misaligned */
        }
}

int main(void)
{
    const struct CMUnitTest host[] = {
        cmocka_unit_test(test_host_gelu_ref),
        cmocka_unit_test(test_host_gelu_mul_bwd_ref),
        cmocka_unit_test(test_host_layernorm_ref),
        cmocka_unit_test(test_host_layernorm_bwd_ref),
        cmocka_unit_test(test_host_pos_embed_ref),
        cmocka_unit_test(test_host_flat_split),
        cmocka_unit_test(test_host_pos_embed_walk),
        cmocka_unit_test(test_host_layernorm_stats),
        cmocka_unit_test(test_host_refusals),
    };
    const struct CMUnitTest gpu[] = {
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_gelu_family),
        cmocka_unit_test(test_pos_embed),
    };
    return ct_run_host_then_gpu("cuda_kernels_dense", host, CT_COUNT(host), gpu, CT_COUNT(gpu));
}
