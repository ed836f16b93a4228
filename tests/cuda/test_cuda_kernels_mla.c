/* test_cuda_kernels_mla.c: the cuda backend's kernels of the attention variants
 * (engine/backends/cuda/cuda_kernels_mla.h): the strided RMSNorm and its one-kernel backward
 * (MLA's kv_norm and q_norm, qwen3's per-head q/k norm in place), MLA's k/v gather and its
 * transpose.
 *
 * Host part, run everywhere the backend builds:
 *  - the references (tests/cuda/cuda_mla_ref.h) themselves: the RMSNorm on a hand case, its
 *    backward (dx overwritten, dw accumulated, strided and in place) against central
 *    differences of sum dy * RMSNorm(x; w); the scatter as the adjoint of the gather
 *    (<gather(a, b), (k, v)> = <(a's k_pe, b), scatter(k, v)>);
 *  - the kernels' walks (cuda_mla_walk.h) run on the host as the kernels run them: the gather's
 *    and the scatter's items write every destination element once and give the references'
 *    values, the scatter's k_pe sum over the heads included; the norm backward's blocks and
 *    warps take every row once, at most 1024 blocks;
 *  - the entry points refuse bad arguments before any CUDA call.
 * GPU part: every kernel against the references on the same rounded inputs, bf16, fp16 and
 * fp32: the strided forward over kv_a-like rows (ld 48, cols 32) and contiguous ones, the
 * backward strided (dx into other rows), in place (qk_norm) and over 300 rows (several blocks;
 * dw added onto existing values), the elements past cols untouched; the gather and the scatter
 * at DeepSeek-like proportions (nope 32, rope 16, dv 32, rkv 64, 3 heads), nope 0 too.
 * Without a device the GPU part is skipped with the reason printed and the binary exits 0 when
 * the host part passed, as test_cuda_kernels_dense does.
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

#include "engine/backends/cuda/cuda_kernels_mla.h"
#include "engine/backends/cuda/cuda_mla_walk.h"
#include "tests/cuda/cuda_mla_ref.h"
#include "tests/cuda/cuda_test_util.h"

#define EPS 1e-5

/* ---- host part: the references ---- */

static void test_host_rmsnorm_ref(void **state)
{
    (void)state;
    const double x[6] = {3, 4, 9, 1, 1, 9}, w[2] = {1.0, 0.5};   /* rows of ld 3, cols 2 */
    double y[4] = {0};
    mla_rmsnorm_ref(x, 3, w, y, 2, 2, 2, 0.0);
    /* row 0: rms sqrt(12.5); row 1 reads (1, 1): rms 1, its 9 past cols ignored */
    assert_true(fabs(y[0] - 3 / sqrt(12.5)) < 1e-15 && fabs(y[1] - 0.5 * 4 / sqrt(12.5)) < 1e-15);
    assert_true(fabs(y[2] - 1.0) < 1e-15 && fabs(y[3] - 0.5) < 1e-15);
}

/* L = sum dy * RMSNorm over 3 rows of 5 (stride 7), central difference in *p. */
static double norm_loss(const double *x, const double *w, const double *dy)
{
    double y[15], l = 0.0;
    mla_rmsnorm_ref(x, 7, w, y, 5, 3, 5, EPS);
    for (int i = 0; i < 15; i++)
        l += dy[i] * y[i];
    return l;
}

static double norm_central(double *p, const double *x, const double *w, const double *dy)
{
    const double keep = *p, h = 1e-6;
    *p = keep + h;
    const double lp = norm_loss(x, w, dy);
    *p = keep - h;
    const double lm = norm_loss(x, w, dy);
    *p = keep;
    return (lp - lm) / (2 * h);
}

static void test_host_rmsnorm_bwd_ref(void **state)
{
    (void)state;
    double x[21], w[5], dy[15], dy2[15], dx[21], dw[5], dw2[5];
    for (int i = 0; i < 21; i++)
        x[i] = urand(-2, 2), dx[i] = 42.0;
    for (int i = 0; i < 15; i++)
        dy[i] = dy2[i] = urand(-1, 1);
    for (int c = 0; c < 5; c++)
        w[c] = urand(0.5, 1.5), dw[c] = dw2[c] = 0.25;
    mla_rmsnorm_bwd_ref(x, 7, w, dy, 5, dx, 7, dw, 3, 5, EPS);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 7; c++) {
            const int i = r * 7 + c;
            if (c >= 5) {   /* past cols: untouched */
                assert_true(dx[i] == 42.0);
                continue;
            }
            const double fd = norm_central(&x[i], x, w, dy);
            if (!(fabs(dx[i] - fd) < 1e-7))
                fail_msg("dx[%d] = %.12g, central difference %.12g", i, dx[i], fd);
        }
    for (int c = 0; c < 5; c++)
        assert_true(fabs(dw[c] - 0.25 - norm_central(&w[c], x, w, dy)) < 1e-7);
    /* in place (dx = dy, stride 5): the same dx and dw */
    mla_rmsnorm_bwd_ref(x, 7, w, dy2, 5, dy2, 5, dw2, 3, 5, EPS);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 5; c++)
            assert_true(fabs(dy2[r * 5 + c] - dx[r * 7 + c]) < 1e-15);
    for (int c = 0; c < 5; c++)
        assert_true(fabs(dw2[c] - dw[c]) < 1e-15);
}

static const ck_mla_shape shapes[] = {
    {3, 32, 16, 32, 64},   /* DeepSeek's proportions, smaller */
    {2, 0, 4, 3, 5},       /* no nope part, odd sizes */
    {1, 5, 2, 7, 3},
};

static size_t sz_kva(int64_t rows, const ck_mla_shape *s) { return (size_t)(rows * (s->rkv + s->rope)); }
static size_t sz_kvb(int64_t rows, const ck_mla_shape *s) { return (size_t)(rows * s->heads * (s->nope + s->dv)); }
static size_t sz_k(int64_t rows, const ck_mla_shape *s) { return (size_t)(rows * s->heads * (s->nope + s->rope)); }
static size_t sz_v(int64_t rows, const ck_mla_shape *s) { return (size_t)(rows * s->heads * s->dv); }

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* The four arrays of one shape at `rows` rows, random. */
typedef struct {
    double *kva, *kvb, *k, *v;
} mla_arrays;

static mla_arrays arrays_rand(int64_t rows, const ck_mla_shape *s)
{
    mla_arrays a = {host_rand(sz_kva(rows, s)), host_rand(sz_kvb(rows, s)), host_rand(sz_k(rows, s)),
                    host_rand(sz_v(rows, s))};
    return a;
}

static void arrays_free(mla_arrays *a)
{
    free(a->kva), free(a->kvb), free(a->k), free(a->v);
}

static void test_host_scatter_is_adjoint(void **state)
{
    (void)state;
    const int64_t rows = 5;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const ck_mla_shape *s = &shapes[si];
        mla_arrays x = arrays_rand(rows, s), y = arrays_rand(rows, s), gx = arrays_rand(rows, s),
                   sy = arrays_rand(rows, s);
        mla_gather_ref(x.kva, x.kvb, gx.k, gx.v, rows, s);
        mla_scatter_ref(y.k, y.v, sy.kva, sy.kvb, rows, s);
        double lhs = dot(gx.k, y.k, sz_k(rows, s)) + dot(gx.v, y.v, sz_v(rows, s));
        double rhs = dot(x.kvb, sy.kvb, sz_kvb(rows, s));
        for (int64_t r = 0; r < rows; r++)   /* the k_pe columns only: the latent is not read */
            for (int64_t j = s->rkv; j < s->rkv + s->rope; j++)
                rhs += x.kva[r * (s->rkv + s->rope) + j] * sy.kva[r * (s->rkv + s->rope) + j];
        assert_true(fabs(lhs - rhs) < 1e-12 * (1.0 + fabs(lhs)));
        arrays_free(&x), arrays_free(&y), arrays_free(&gx), arrays_free(&sy);
    }
}

/* ---- host part: the walks ---- */

/* Runs the gather or scatter walk on host arrays (src0/src1/dst0/dst1 as mla_kv_kernel names
 * them), counting the writes per destination element. */
static void run_walk(int scatter, int64_t rows, const ck_mla_shape *s, const double *src0, const double *src1,
                     double *dst0, double *dst1, unsigned char *seen0, unsigned char *seen1)
{
    const int64_t n = scatter ? ck_mla_scatter_items(rows, s) : ck_mla_gather_items(rows, s);
    for (int64_t i = 0; i < n; i++) {
        const ck_mla_item it = scatter ? ck_mla_scatter_item(i, rows, s) : ck_mla_gather_item(i, rows, s);
        const int first_src = scatter ? it.src == CK_MLA_K : it.src == CK_MLA_KVA;
        const int first_dst = scatter ? it.dst == CK_MLA_KVA : it.dst == CK_MLA_K;
        double acc = 0.0;
        for (int64_t c = 0; c < it.count; c++)
            acc += (first_src ? src0 : src1)[it.src_off + c * it.src_stride];
        (first_dst ? dst0 : dst1)[it.dst_off] = acc;
        (first_dst ? seen0 : seen1)[it.dst_off]++;
    }
}

static void test_host_walks(void **state)
{
    (void)state;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int64_t rows = 1; rows <= 7; rows += 3) {
            const ck_mla_shape *s = &shapes[si];
            mla_arrays in = arrays_rand(rows, s), ref = arrays_rand(rows, s), got = arrays_rand(rows, s);
            unsigned char *sa = calloc(sz_kva(rows, s), 1), *sb = calloc(sz_kvb(rows, s), 1);
            unsigned char *sk = calloc(sz_k(rows, s), 1), *sv = calloc(sz_v(rows, s), 1);
            /* gather: every element of k and v once, the reference's values */
            mla_gather_ref(in.kva, in.kvb, ref.k, ref.v, rows, s);
            run_walk(0, rows, s, in.kva, in.kvb, got.k, got.v, sk, sv);
            for (size_t i = 0; i < sz_k(rows, s); i++)
                assert_true(sk[i] == 1 && got.k[i] == ref.k[i]);
            for (size_t i = 0; i < sz_v(rows, s); i++)
                assert_true(sv[i] == 1 && got.v[i] == ref.v[i]);
            /* scatter: every element of dkvb once, each k_pe column of dkva once with the sum
             * over the heads, the latent columns never */
            memcpy(got.kva, ref.kva, sz_kva(rows, s) * sizeof(double));
            mla_scatter_ref(in.k, in.v, ref.kva, ref.kvb, rows, s);
            run_walk(1, rows, s, in.k, in.v, got.kva, got.kvb, sa, sb);
            for (size_t i = 0; i < sz_kvb(rows, s); i++)
                assert_true(sb[i] == 1 && got.kvb[i] == ref.kvb[i]);
            for (size_t i = 0; i < sz_kva(rows, s); i++) {
                const int kpe = (int64_t)i % (s->rkv + s->rope) >= s->rkv;
                assert_int_equal(sa[i], kpe);
                assert_true(fabs(got.kva[i] - ref.kva[i]) < 1e-12);
            }
            arrays_free(&in), arrays_free(&ref), arrays_free(&got);
            free(sa), free(sb), free(sk), free(sv);
        }
}

static void test_host_norm_rows(void **state)
{
    (void)state;
    const int64_t cases[] = {1, 7, 8, 63, 64, 65, 300, 4096 * 32 + 5};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int64_t rows = cases[ci], blocks = ck_mla_norm_blocks(rows);
        assert_true(blocks >= 1 && blocks <= 1024);
        unsigned char *seen = calloc((size_t)rows, 1);
        for (int64_t b = 0; b < blocks; b++)
            for (int64_t w = 0; w < CK_MLA_NORM_WARPS; w++)
                for (int64_t k = 0;; k++) {
                    const int64_t r = ck_mla_norm_row(rows, blocks, b, w, k);
                    if (r < 0)
                        break;
                    seen[r]++;
                }
        for (int64_t r = 0; r < rows; r++)
            assert_int_equal(seen[r], 1);
        free(seen);
    }
}

static void test_host_refusals(void **state)
{
    (void)state;
    const pdbx_dtype bad = (pdbx_dtype)7;
    float f[4] = {0};
    const ck_mla_shape ok = {2, 4, 2, 4, 8}, no_rope = {2, 4, 0, 4, 8}, no_heads = {0, 4, 2, 4, 8};
    const cudaError_t E = cudaErrorInvalidValue;
    assert_int_equal(ck_rmsnorm_strided(f, 4, f, f, 4, 0, 4, 1e-5f, PDBX_DTYPE_FP32, 0), E);
    assert_int_equal(ck_rmsnorm_strided(f, 3, f, f, 4, 2, 4, 1e-5f, PDBX_DTYPE_FP32, 0), E);   /* ldx < cols */
    assert_int_equal(ck_rmsnorm_strided(f, 4, f, f, 4, 2, 4, 1e-5f, bad, 0), E);
    assert_int_equal(ck_rmsnorm_strided_bwd(f, 4, f, f, 4, f + 1, 4, f, 2, 0, 1e-5f, PDBX_DTYPE_FP32, 0), E);
    assert_int_equal(ck_rmsnorm_strided_bwd(f, 4, f, f, 4, f, 5, f, 2, 4, 1e-5f, PDBX_DTYPE_FP32, 0), E);   /* in place, lds differ */
    assert_int_equal(ck_rmsnorm_strided_bwd(f, CK_MLA_NORM_MAX_COLS + 1, f, f, CK_MLA_NORM_MAX_COLS + 1, f + 1,
                                            CK_MLA_NORM_MAX_COLS + 1, f, 2, CK_MLA_NORM_MAX_COLS + 1, 1e-5f,
                                            PDBX_DTYPE_FP32, 0), E);   /* dw's shared partial */
    assert_int_equal(ck_rmsnorm_strided_bwd(f, 4, f, f, 4, f + 1, 4, f, 2, 4, 1e-5f, bad, 0), E);
    assert_int_equal(ck_mla_kv_gather(f, f, f, f, 0, &ok, PDBX_DTYPE_FP32, 0), E);
    assert_int_equal(ck_mla_kv_gather(f, f, f, f, 2, &no_rope, PDBX_DTYPE_FP32, 0), E);
    assert_int_equal(ck_mla_kv_gather(f, f, f, f, 2, NULL, PDBX_DTYPE_FP32, 0), E);
    assert_int_equal(ck_mla_kv_gather(f, f, f, f, 2, &ok, bad, 0), E);
    assert_int_equal(ck_mla_kv_scatter(f, f, f, f, 2, &no_heads, PDBX_DTYPE_FP32, 0), E);
    assert_int_equal(ck_mla_kv_scatter(f, f, f, f, 2, &ok, bad, 0), E);
}

/* ---- GPU part ---- */

static const pdbx_dtype dts[] = {PDBX_DTYPE_BF16, PDBX_DTYPE_FP16, PDBX_DTYPE_FP32};

static float rtol_of(pdbx_dtype dt)   /* one rounding to dt, with room for fp32 arithmetic */
{
    return dt == PDBX_DTYPE_BF16 ? 1.0f / 256 : dt == PDBX_DTYPE_FP16 ? 1.0f / 2048 : 2e-6f;
}

static void check_d(const char *what, tensor *t, const double *want, float atol, float rtol)
{
    float *f = malloc(t->n * sizeof *f);
    assert_non_null(f);
    for (size_t i = 0; i < t->n; i++)
        f[i] = (float)want[i];
    ct_download(t);
    expect_close(what, t, f, t->n, atol, rtol);
    free(f);
}

/* Forward over rows of stride ldx into rows of stride ldy; y's elements past cols untouched. */
static void check_norm_fwd(pdbx_dtype dt, int64_t rows, int64_t ldx, int64_t cols, int64_t ldy)
{
    tensor x = ct_make((size_t)(rows * ldx), dt, -2.0f, 2.0f), w = ct_make((size_t)cols, dt, 0.5f, 1.5f);
    tensor y = ct_make((size_t)(rows * ldy), dt, 7.0f, 8.0f);
    double *hx = host_of(&x), *hw = host_of(&w), *want = host_of(&y);
    mla_rmsnorm_ref(hx, ldx, hw, want, ldy, rows, cols, EPS);
    assert_int_equal(ck_rmsnorm_strided(x.dev, ldx, w.dev, y.dev, ldy, rows, cols, (float)EPS, dt, stream),
                     cudaSuccess);
    char what[96];
    snprintf(what, sizeof what, "rmsnorm_strided dtype %d rows %lld ld %lld/%lld", (int)dt, (long long)rows,
             (long long)ldx, (long long)ldy);
    check_d(what, &y, want, rtol_of(dt), 2 * rtol_of(dt));   /* x rstd rounded, then times w */
    free(hx), free(hw), free(want);
    ct_drop(&x), ct_drop(&w), ct_drop(&y);
}

/* Backward: dx into rows of stride lddx (in place: dx is dy), dw onto values already there. */
static void check_norm_bwd(pdbx_dtype dt, int64_t rows, int64_t ldx, int64_t cols, int64_t ldy, int in_place)
{
    const int64_t lddx = in_place ? ldy : ldx;
    tensor x = ct_make((size_t)(rows * ldx), dt, -2.0f, 2.0f), w = ct_make((size_t)cols, dt, 0.5f, 1.5f);
    tensor dy = ct_make((size_t)(rows * ldy), dt, -1.0f, 1.0f);
    tensor dxb = ct_make((size_t)(rows * lddx), dt, 7.0f, 8.0f), dw = ct_make((size_t)cols, PDBX_DTYPE_FP32, -1, 1);
    tensor *dx = in_place ? &dy : &dxb;
    double *hx = host_of(&x), *hw = host_of(&w), *hdy = host_of(&dy), *want = host_of(dx), *wdw = host_of(&dw);
    mla_rmsnorm_bwd_ref(hx, ldx, hw, hdy, ldy, in_place ? hdy : want, lddx, wdw, rows, cols, EPS);
    assert_int_equal(ck_rmsnorm_strided_bwd(x.dev, ldx, w.dev, dy.dev, ldy, dx->dev, lddx, dw.dev, rows, cols,
                                            (float)EPS, dt, stream), cudaSuccess);
    char what[112];
    snprintf(what, sizeof what, "rmsnorm_strided_bwd dtype %d rows %lld cols %lld%s", (int)dt, (long long)rows,
             (long long)cols, in_place ? " in place" : "");
    check_d(what, dx, in_place ? hdy : want, 4 * rtol_of(dt), 4 * rtol_of(dt));
    check_d(what, &dw, wdw, 1e-3f, 1e-4f);   /* fp32 sums of the same rounded inputs */
    free(hx), free(hw), free(hdy), free(want), free(wdw);
    ct_drop(&x), ct_drop(&w), ct_drop(&dy), ct_drop(&dxb), ct_drop(&dw);
}

static void test_rmsnorm_strided(void **state)
{
    (void)state;
    for (size_t di = 0; di < 3; di++) {
        check_norm_fwd(dts[di], 37, 48, 32, 32);     /* kv_norm: kv_a's latent of rkv 32, rope 16 */
        check_norm_fwd(dts[di], 37, 64, 64, 64);     /* contiguous */
        check_norm_fwd(dts[di], 5, 1100, 1000, 1003);
        check_norm_bwd(dts[di], 37, 48, 32, 48, 0);  /* kv_norm: d latent into kv_a's gradient rows */
        check_norm_bwd(dts[di], 300, 64, 64, 64, 1); /* qk_norm: heads of 64 in place, 5 blocks */
        check_norm_bwd(dts[di], 9, 1000, 1000, 1000, 0);
    }
}

static void check_kv(pdbx_dtype dt, int64_t rows, const ck_mla_shape *s)
{
    tensor kva = ct_make(sz_kva(rows, s), dt, -1, 1), kvb = ct_make(sz_kvb(rows, s), dt, -1, 1);
    tensor k = ct_make(sz_k(rows, s), dt, 7, 8), v = ct_make(sz_v(rows, s), dt, 7, 8);
    tensor dk = ct_make(sz_k(rows, s), dt, -1, 1), dv = ct_make(sz_v(rows, s), dt, -1, 1);
    tensor dkva = ct_make(sz_kva(rows, s), dt, 7, 8), dkvb = ct_make(sz_kvb(rows, s), dt, 7, 8);
    double *a = host_of(&kva), *b = host_of(&kvb), *rk = host_of(&k), *rv = host_of(&v);
    double *hdk = host_of(&dk), *hdv = host_of(&dv), *ra = host_of(&dkva), *rb = host_of(&dkvb);
    mla_gather_ref(a, b, rk, rv, rows, s);
    mla_scatter_ref(hdk, hdv, ra, rb, rows, s);   /* dkva's latent keeps its 7..8 */
    for (size_t i = 0; i < sz_kva(rows, s); i++)   /* the heads' sum rounded once */
        ra[i] = round_to(dt, (float)ra[i]);
    assert_int_equal(ck_mla_kv_gather(kva.dev, kvb.dev, k.dev, v.dev, rows, s, dt, stream), cudaSuccess);
    assert_int_equal(ck_mla_kv_scatter(dk.dev, dv.dev, dkva.dev, dkvb.dev, rows, s, dt, stream), cudaSuccess);
    char what[96];
    snprintf(what, sizeof what, "mla kv dtype %d heads %lld nope %lld", (int)dt, (long long)s->heads,
             (long long)s->nope);
    check_d(what, &k, rk, 0.0f, 0.0f);   /* copies: exact */
    check_d(what, &v, rv, 0.0f, 0.0f);
    check_d(what, &dkvb, rb, 0.0f, 0.0f);
    check_d(what, &dkva, ra, 1e-6f, rtol_of(dt));
    free(a), free(b), free(rk), free(rv), free(hdk), free(hdv), free(ra), free(rb);
    ct_drop(&kva), ct_drop(&kvb), ct_drop(&k), ct_drop(&v), ct_drop(&dk), ct_drop(&dv), ct_drop(&dkva),
        ct_drop(&dkvb);
}

static void test_mla_kv(void **state)
{
    (void)state;
    for (size_t di = 0; di < 3; di++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            check_kv(dts[di], 37, &shapes[si]);
}

int main(void)
{
    const struct CMUnitTest host[] = {
        cmocka_unit_test(test_host_rmsnorm_ref),
        cmocka_unit_test(test_host_rmsnorm_bwd_ref),
        cmocka_unit_test(test_host_scatter_is_adjoint),
        cmocka_unit_test(test_host_walks),
        cmocka_unit_test(test_host_norm_rows),
        cmocka_unit_test(test_host_refusals),
    };
    const struct CMUnitTest gpu[] = {
        cmocka_unit_test(test_rmsnorm_strided),
        cmocka_unit_test(test_mla_kv),
    };
    return ct_run_host_then_gpu("cuda_kernels_mla", host, CT_COUNT(host), gpu, CT_COUNT(gpu));
}
