/* test_cuda_kernels_moe.c: the cuda backend's mixture-of-experts kernels
 * (engine/backends/cuda/cuda_kernels_moe.h) and the host side of its MoE layer (cuda_moe.h).
 *
 * Host part, run everywhere the backend builds:
 *  - the references (tests/cuda/cuda_moe_ref.h) checked: the top-k backward against central
 *    differences of sum dw_j w_j(logits) (softmax and sigmoid, normalised or not, scaled), the
 *    unpermute's backward and the permute's as adjoints of their forwards;
 *  - the kernels' walks (cuda_moe_walk.h) run on the host as the kernels run them: the top-k
 *    insertion picks the reference's experts in its order on rows full of ties; the route
 *    index's warps (per-warp counts, the scan over (expert, warp), placement 32 copies at a
 *    time with the lanes' ranks) give the reference's offsets and positions (a stable counting
 *    sort) for 1 .. 12288 experts and copy counts around the warp and segment sizes;
 *  - cuda_moe_dims_of: a point's R, X, local experts, received rows, shared width, and its
 *    refusals (an ep not dividing the experts, top_k over the kernels' bound, the planner's
 *    router shape disagreeing);
 *  - the entry points refuse bad arguments before any CUDA call.
 * GPU part: each kernel against the references on the same rounded inputs, bf16, fp16 and
 * fp32: the top-k (ids exactly, weights), its backward, the route index (exactly), permute
 * (exactly), the gathers with and without weights and the unpermute's backward, at hidden 256
 * (16-byte vectors) and 100 (scalars). The grouped GEMMs are cuBLASLt's, run through the
 * backend by tests/cuda/test_cuda_dense_point.c's MoE families.
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

#include "engine/backends/cuda/cuda_kernels_moe.h"
#include "engine/backends/cuda/cuda_moe.h"
#include "engine/backends/cuda/cuda_moe_walk.h"
#include "tests/cuda/cuda_moe_ref.h"
#include "tests/cuda/cuda_test_util.h"

#define MAXE 256

/* ---- host part: the references and the walks ---- */

/* w_j(l) with the ids fixed (the choice has no gradient). */
static double weighted(const double *l, const int32_t *id, const double *dw, int E, int k, int sig, int norm,
                       double scale)
{
    double s[MAXE], sum = 0, L = 0;
    moe_scores_ref(l, E, sig, s);
    for (int j = 0; j < k; j++)
        sum += s[id[j]];
    for (int j = 0; j < k; j++)
        L += dw[j] * s[id[j]] * (norm ? scale / sum : scale);
    return L;
}

static void test_host_topk_bwd_ref(void **state)
{
    (void)state;
    for (int v = 0; v < 8; v++) {
        const int sig = v & 1, norm = (v >> 1) & 1, E = 9, k = 3;
        const double scale = v & 4 ? 2.5 : 1.0;
        double l[MAXE], dl[MAXE], s[MAXE], w[16], dw[16];
        int32_t id[16];
        for (int e = 0; e < E; e++)
            l[e] = urand(-2, 2);
        for (int j = 0; j < k; j++)
            dw[j] = urand(-1, 1);
        moe_topk_row_ref(l, E, k, sig, norm, scale, id, w, s);
        moe_topk_bwd_row_ref(l, id, dw, E, k, sig, norm, scale, dl, s);
        for (int e = 0; e < E; e++) {
            const double h = 1e-6, keep = l[e];
            l[e] = keep + h;
            const double up = weighted(l, id, dw, E, k, sig, norm, scale);
            l[e] = keep - h;
            const double fd = (up - weighted(l, id, dw, E, k, sig, norm, scale)) / (2 * h);
            l[e] = keep;
            if (!(fabs(dl[e] - fd) < 1e-8))
                fail_msg("variant %d expert %d: dlogit %.12g, central difference %.12g", v, e, dl[e], fd);
        }
    }
}

/* The kernel's insertion against the reference's selection, on rows of quantised logits. */
static void test_host_topk_walk(void **state)
{
    (void)state;
    const int Es[] = {1, 2, 8, 60, 256};
    for (size_t ei = 0; ei < sizeof Es / sizeof Es[0]; ei++)
        for (int k = 1; k <= Es[ei] && k <= CK_MOE_MAX_TOPK; k += (k < 4 ? 1 : 5))
            for (int row = 0; row < 20; row++) {
                const int E = Es[ei];
                double l[MAXE], s[MAXE], w[16];
                float key[CK_MOE_MAX_TOPK];
                int32_t id[CK_MOE_MAX_TOPK], want[16];
                for (int e = 0; e < E; e++)
                    l[e] = floor(urand(-2, 2) * 4) / 4;   /* many ties */
                moe_topk_row_ref(l, E, k, 0, 1, 1.0, want, w, s);
                int n = 0;
                for (int e = 0; e < E; e++)
                    pdbx_moe_topk_insert((float)l[e], e, key, id, &n, k);
                assert_int_equal(n, k);
                for (int j = 0; j < k; j++)
                    if (id[j] != want[j])
                        fail_msg("E %d k %d row %d choice %d: walk %d, reference %d", E, k, row, j, id[j], want[j]);
            }
    assert_true(fabsf(ck_moe_weight_factor(1, 2.0f, 4.0f) - 0.5f) < 1e-7f);
    assert_true(ck_moe_weight_factor(0, 2.5f, 4.0f) == 2.5f);
}

/* route_index_kernel on the host: the same warps, segments, scan and lane ranks. */
static void route_walk(const int32_t *idx, int64_t n, int E, int64_t *offsets, int64_t *pos)
{
    const int W = ck_moe_route_warps(E);
    int64_t *cnt = calloc((size_t)W * (size_t)E, sizeof *cnt);
    assert_non_null(cnt);
    for (int w = 0; w < W; w++) {
        int64_t c0, c1;
        ck_moe_segment(n, W, w, &c0, &c1);
        for (int64_t c = c0; c < c1; c++)
            cnt[(int64_t)w * E + idx[c]]++;
    }
    offsets[0] = 0;
    for (int g = 0; g < E; g++) {
        int64_t run = 0;
        for (int w = 0; w < W; w++) {
            const int64_t k = cnt[(int64_t)w * E + g];
            cnt[(int64_t)w * E + g] = run;
            run += k;
        }
        offsets[g + 1] = offsets[g] + run;
    }
    for (int w = 0; w < W; w++) {
        int64_t c0, c1;
        ck_moe_segment(n, W, w, &c0, &c1);
        for (int64_t base = c0; base < c1; base += 32) {
            int32_t lanes[32];
            const int nl = c1 - base < 32 ? (int)(c1 - base) : 32;
            for (int l = 0; l < nl; l++)
                lanes[l] = idx[base + l];
            for (int l = 0; l < nl; l++)
                pos[base + l] = offsets[lanes[l]] + cnt[(int64_t)w * E + lanes[l]] + ck_moe_lane_rank(lanes, l);
            for (int l = 0; l < nl; l++)
                cnt[(int64_t)w * E + lanes[l]]++;
        }
    }
    free(cnt);
}

static void test_host_route_walk(void **state)
{
    (void)state;
    assert_int_equal(ck_moe_route_warps(384), 32);
    assert_int_equal(ck_moe_route_warps(385), 31);
    assert_int_equal(ck_moe_route_warps(12288), 1);
    assert_int_equal(ck_moe_route_warps(12289), 0);
    const int Es[] = {1, 3, 64, 257, 1500, 12288};
    const int64_t ns[] = {1, 31, 33, 1000, 4099};
    for (size_t ei = 0; ei < sizeof Es / sizeof Es[0]; ei++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            const int E = Es[ei];
            const int64_t n = ns[ni];
            int32_t *idx = malloc((size_t)n * sizeof *idx);
            int64_t *o1 = malloc((size_t)(E + 1) * 8), *o2 = malloc((size_t)(E + 1) * 8);
            int64_t *p1 = malloc((size_t)n * 8), *p2 = malloc((size_t)n * 8), *cur = malloc((size_t)E * 8);
            assert_true(idx && o1 && o2 && p1 && p2 && cur);
            for (int64_t c = 0; c < n; c++)   /* skewed: half the copies on a few experts */
                idx[c] = (int32_t)(c % 2 ? (int)urand(0, (float)E) % E : (int)urand(0, 3) % E);
            moe_route_index_ref(idx, n, E, o1, p1, cur);
            route_walk(idx, n, E, o2, p2);
            assert_memory_equal(o1, o2, (size_t)(E + 1) * 8);
            assert_memory_equal(p1, p2, (size_t)n * 8);
            free(idx), free(o1), free(o2), free(p1), free(p2), free(cur);
        }
}

/* <permute(x), drows> = <x, gather_sum(drows)>; <gather_sum(rows, w), dy> = <rows, w dy at pos>. */
static void test_host_adjoints(void **state)
{
    (void)state;
    enum { T = 7, H = 5, K = 3, X = T * K };
    int32_t idx[X];
    int64_t off[5], pos[X], cur[4];
    double x[T * H], rows[X * H], drows[X * H], dx[T * H], w[X], y[T * H], dy[T * H];
    for (int c = 0; c < X; c++)
        idx[c] = (c * 3 + c / K) % 4, w[c] = urand(-1, 1);
    moe_route_index_ref(idx, X, 4, off, pos, cur);
    for (int i = 0; i < T * H; i++)
        x[i] = urand(-1, 1), dy[i] = urand(-1, 1);
    for (int i = 0; i < X * H; i++)
        drows[i] = urand(-1, 1);
    for (int c = 0; c < X; c++)   /* permute */
        for (int i = 0; i < H; i++)
            rows[pos[c] * H + i] = x[(c / K) * H + i];
    moe_gather_sum_ref(drows, NULL, pos, T, H, K, dx);
    double a = 0, b = 0;
    for (int i = 0; i < X * H; i++)
        a += rows[i] * drows[i];
    for (int i = 0; i < T * H; i++)
        b += x[i] * dx[i];
    assert_true(fabs(a - b) < 1e-12);
    moe_gather_sum_ref(rows, w, pos, T, H, K, y);
    a = b = 0;
    for (int i = 0; i < T * H; i++)
        a += y[i] * dy[i];
    for (int c = 0; c < X; c++)   /* the unpermute's backward: drows[pos c] = w_c dy[t] */
        for (int i = 0; i < H; i++)
            b += rows[pos[c] * H + i] * w[c] * dy[(c / K) * H + i];
    assert_true(fabs(a - b) < 1e-12);
}

static pdbx_point_shapes moe_point(int E, int k, int tp, int ep, double f)
{
    pdbx_point_shapes p;
    memset(&p, 0, sizeof p);
    snprintf(p.model.name, sizeof p.model.name, "tiny-moe");
    p.model.hidden = 128;
    p.model.arch.moe.experts = E, p.model.arch.moe.top_k = k, p.model.arch.moe.expert_intermediate = 96;
    p.model.arch.moe.shared_experts = 2;
    p.tp = tp, p.ep = ep, p.mbs = 3, p.seq_len = 10, p.moe_imbalance = f;
    return p;
}

static void test_host_dims(void **state)
{
    (void)state;
    cuda_moe_dims m;
    char err[256] = "";
    pdbx_point_shapes p = moe_point(8, 2, 2, 1, 1.0);
    assert_int_equal(cuda_moe_dims_of(&p, &m, err, sizeof err), 0);
    /* R = ceil(30 / 2) = 15, X = 30; EP 1: every expert, received = X; shared 2 x 96 / TP 2 */
    assert_true(m.R == 15 && m.X == 30 && m.El == 8 && m.Xr == 30 && m.M == 30 && m.Is == 96 && m.scale == 1.0f);
    p = moe_point(8, 2, 2, 2, 3.0);   /* the busiest rank holds expert 0's skewed share */
    assert_int_equal(cuda_moe_dims_of(&p, &m, err, sizeof err), 0);
    assert_true(m.El == 4 && m.Xr > m.X && m.M == m.Xr);
    p = moe_point(8, 2, 1, 3, 1.0);
    assert_int_equal(cuda_moe_dims_of(&p, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "ep"));
    p = moe_point(32, 17, 1, 1, 1.0);
    assert_int_equal(cuda_moe_dims_of(&p, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "top_k 17"));
    p = moe_point(8, 2, 1, 1, 1.0);
    p.ops = PDBX_OP_BIT(PDBX_OP_MOE_ROUTER);
    p.shape[PDBX_OP_MOE_ROUTER] = (pdbx_op_shape){.m = 30, .n = 7, .k = 128};
    assert_int_equal(cuda_moe_dims_of(&p, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "moe_router shape"));
    assert_int_equal(ck_moe_align(0), 256);
    assert_int_equal(ck_moe_align(192), 64);
    assert_int_equal(ck_moe_align(2), 2);
}

static void test_host_refusals(void **state)
{
    (void)state;
    int32_t i32[4] = {0};
    int64_t i64[8] = {0};
    float f[4] = {0};
    char buf[64] = "";
    const pdbx_dtype bf = PDBX_DTYPE_BF16;
    assert_int_equal(ck_moe_topk(buf, 2, 8, 17, 0, 1, 1.0f, i32, f, bf, NULL), cudaErrorInvalidValue);
    assert_int_equal(ck_moe_topk(buf, 2, 2, 3, 0, 1, 1.0f, i32, f, bf, NULL), cudaErrorInvalidValue);
    assert_int_equal(ck_moe_topk(NULL, 2, 8, 2, 0, 1, 1.0f, i32, f, bf, NULL), cudaErrorInvalidValue);
    assert_int_equal(ck_moe_topk_bwd(buf, i32, f, 0, 8, 2, 0, 1, 1.0f, buf, bf, NULL), cudaErrorInvalidValue);
    assert_int_equal(ck_moe_route_index(i32, 4, 12289, i64, i64, NULL), cudaErrorInvalidValue);
    assert_int_equal(ck_moe_route_index(i32, (int64_t)INT32_MAX + 1, 8, i64, i64, NULL), cudaErrorInvalidValue);
    assert_int_equal(ck_moe_permute(buf, i64, 2, 0, 2, buf, bf, NULL), cudaErrorInvalidValue);
    assert_int_equal(ck_moe_gather_sum(buf, f, NULL, 2, 4, 2, buf, bf, NULL), cudaErrorInvalidValue);
    assert_int_equal(ck_moe_unpermute_bwd(buf, NULL, i64, buf, 2, 4, 2, buf, f, bf, NULL), cudaErrorInvalidValue);
    assert_int_equal(ck_moe_gather_sum(buf, f, i64, 2, 4, 2, buf, (pdbx_dtype)99, NULL), cudaErrorInvalidValue);
}

/* ---- GPU part ---- */

static const pdbx_dtype dts[] = {PDBX_DTYPE_BF16, PDBX_DTYPE_FP16, PDBX_DTYPE_FP32};

/* Tolerances of a result rounded once to dt (and of its fp32 sums). */
static float atol_of(pdbx_dtype dt)
{
    return dt == PDBX_DTYPE_BF16 ? 2e-3f : dt == PDBX_DTYPE_FP16 ? 2e-4f : 1e-6f;
}
static float rtol_of(pdbx_dtype dt)
{
    return dt == PDBX_DTYPE_BF16 ? 1e-2f : dt == PDBX_DTYPE_FP16 ? 2e-3f : 1e-5f;
}

static void *dev_of(const void *host, size_t bytes)
{
    void *d = NULL;
    assert_int_equal(cudaMalloc(&d, bytes), cudaSuccess);
    assert_int_equal(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    return d;
}

static void host_of_dev(void *host, const void *dev, size_t bytes)
{
    assert_int_equal(cudaStreamSynchronize(stream), cudaSuccess);
    assert_int_equal(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
}

static void check_topk(pdbx_dtype dt, int E, int k, int sig, int norm, float scale)
{
    enum { T = 1000 };
    tensor l = ct_make((size_t)T * E, dt, -3, 3), dw = ct_make((size_t)T * k, PDBX_DTYPE_FP32, -1, 1);
    tensor w = ct_make((size_t)T * k, PDBX_DTYPE_FP32, 0, 0), dl = ct_make((size_t)T * E, dt, 0, 0);
    int32_t *idx_d = NULL, *idx = malloc((size_t)T * k * sizeof *idx);
    float *want_w = malloc((size_t)T * k * sizeof *want_w), *want_dl = malloc((size_t)T * E * sizeof *want_dl);
    assert_true(idx && want_w && want_dl && cudaMalloc((void **)&idx_d, (size_t)T * k * 4) == cudaSuccess);
    assert_int_equal(ck_moe_topk(l.dev, T, E, k, sig, norm, scale, idx_d, w.dev, dt, stream), cudaSuccess);
    assert_int_equal(ck_moe_topk_bwd(l.dev, idx_d, dw.dev, T, E, k, sig, norm, scale, dl.dev, dt, stream),
                     cudaSuccess);
    host_of_dev(idx, idx_d, (size_t)T * k * 4);
    ct_download(&w);
    ct_download(&dl);
    for (int t = 0; t < T; t++) {
        double row[MAXE], s[MAXE], wr[16], dwr[16], dlr[MAXE];
        int32_t id[16];
        for (int e = 0; e < E; e++)
            row[e] = ct_at(&l, (size_t)t * E + e);
        for (int j = 0; j < k; j++)
            dwr[j] = ct_at(&dw, (size_t)t * k + j);
        moe_topk_row_ref(row, E, k, sig, norm, scale, id, wr, s);
        moe_topk_bwd_row_ref(row, id, dwr, E, k, sig, norm, scale, dlr, s);
        for (int j = 0; j < k; j++) {
            if (idx[t * k + j] != id[j])
                fail_msg("topk E %d k %d token %d choice %d: %d, reference %d", E, k, t, j, idx[t * k + j], id[j]);
            want_w[t * k + j] = (float)wr[j];
        }
        for (int e = 0; e < E; e++)
            want_dl[t * E + e] = (float)dlr[e];
    }
    expect_close("topk weights", &w, want_w, (size_t)T * k, 1e-6f, 2e-5f);
    expect_close("topk dlogits", &dl, want_dl, (size_t)T * E, atol_of(dt), rtol_of(dt));
    cudaFree(idx_d);
    free(idx), free(want_w), free(want_dl);
    ct_drop(&l), ct_drop(&dw), ct_drop(&w), ct_drop(&dl);
}

static void test_topk(void **state)
{
    (void)state;
    for (size_t di = 0; di < 3; di++) {
        check_topk(dts[di], 8, 2, 0, 1, 1.0f);     /* Mixtral */
        check_topk(dts[di], 60, 4, 0, 0, 1.0f);    /* Qwen1.5-MoE */
        check_topk(dts[di], 256, 8, 1, 1, 2.5f);   /* DeepSeek-V3's sigmoid */
    }
}

static void test_route_index(void **state)
{
    (void)state;
    const int Es[] = {1, 64, 1000};
    const int64_t n = 70001;
    int32_t *idx = malloc((size_t)n * 4);
    int64_t *off = malloc(1001 * 8), *pos = malloc((size_t)n * 8), *goff = malloc(1001 * 8);
    int64_t *gpos = malloc((size_t)n * 8), *cur = malloc(1000 * 8);
    assert_true(idx && off && pos && goff && gpos && cur);
    for (size_t ei = 0; ei < 3; ei++) {
        const int E = Es[ei];
        for (int64_t c = 0; c < n; c++)
            idx[c] = (int32_t)(c % 3 ? (int)urand(0, (float)E) % E : 0);   /* expert 0 the busiest */
        moe_route_index_ref(idx, n, E, off, pos, cur);
        void *di = dev_of(idx, (size_t)n * 4), *doff = NULL, *dpos = NULL;
        assert_int_equal(cudaMalloc(&doff, (size_t)(E + 1) * 8), cudaSuccess);
        assert_int_equal(cudaMalloc(&dpos, (size_t)n * 8), cudaSuccess);
        assert_int_equal(ck_moe_route_index(di, n, E, doff, dpos, stream), cudaSuccess);
        host_of_dev(goff, doff, (size_t)(E + 1) * 8);
        host_of_dev(gpos, dpos, (size_t)n * 8);
        assert_memory_equal(goff, off, (size_t)(E + 1) * 8);
        assert_memory_equal(gpos, pos, (size_t)n * 8);
        cudaFree(di), cudaFree(doff), cudaFree(dpos);
    }
    free(idx), free(off), free(pos), free(goff), free(gpos), free(cur);
}

/* permute (exact), the gathers with and without weights, the unpermute's backward. */
static void check_rows(pdbx_dtype dt, int64_t h)
{
    enum { T = 300, K = 2, E = 8, X = T * K };
    int32_t idx[X];
    int64_t off[E + 1], pos[X], cur[E];
    for (int c = 0; c < X; c++)
        idx[c] = (c / K + 3 * (c % K)) % E;   /* a token's two experts distinct */
    moe_route_index_ref(idx, X, E, off, pos, cur);
    void *dpos = dev_of(pos, sizeof pos);
    tensor x = ct_make((size_t)T * h, dt, -1, 1), rows = ct_make((size_t)X * h, dt, -1, 1);
    tensor w = ct_make(X, PDBX_DTYPE_FP32, -1, 1), dy = ct_make((size_t)T * h, dt, -1, 1);
    tensor perm = ct_make((size_t)X * h, dt, 0, 0), y = ct_make((size_t)T * h, dt, 0, 0);
    tensor y1 = ct_make((size_t)T * h, dt, 0, 0), drows = ct_make((size_t)X * h, dt, 0, 0);
    tensor dw = ct_make(X, PDBX_DTYPE_FP32, 0, 0);
    assert_int_equal(ck_moe_permute(x.dev, dpos, T, h, K, perm.dev, dt, stream), cudaSuccess);
    assert_int_equal(ck_moe_gather_sum(rows.dev, w.dev, dpos, T, h, K, y.dev, dt, stream), cudaSuccess);
    assert_int_equal(ck_moe_gather_sum(rows.dev, NULL, dpos, T, h, K, y1.dev, dt, stream), cudaSuccess);
    assert_int_equal(ck_moe_unpermute_bwd(rows.dev, w.dev, dpos, dy.dev, T, h, K, drows.dev, dw.dev, dt, stream),
                     cudaSuccess);
    ct_download(&perm), ct_download(&y), ct_download(&y1), ct_download(&drows), ct_download(&dw);
    double *r = host_of(&rows), *wd = host_of(&w), *yr = malloc((size_t)T * h * 8), *y1r = malloc((size_t)T * h * 8);
    float *want = malloc((size_t)X * h * 4), *want_y = malloc((size_t)T * h * 4), *want_y1 = malloc((size_t)T * h * 4);
    float *want_dr = malloc((size_t)X * h * 4), want_dw[X];
    assert_true(yr && y1r && want && want_y && want_y1 && want_dr);
    moe_gather_sum_ref(r, wd, pos, T, h, K, yr);
    moe_gather_sum_ref(r, NULL, pos, T, h, K, y1r);
    for (int64_t i = 0; i < (int64_t)T * h; i++)
        want_y[i] = (float)yr[i], want_y1[i] = (float)y1r[i];
    for (int c = 0; c < X; c++) {
        double dot = 0;
        for (int64_t i = 0; i < h; i++) {
            const double g = ct_at(&dy, (size_t)((c / K) * h + i));
            want[pos[c] * h + i] = ct_at(&x, (size_t)((c / K) * h + i));
            want_dr[pos[c] * h + i] = (float)(wd[c] * g);
            dot += g * r[pos[c] * h + i];
        }
        want_dw[c] = (float)dot;
    }
    expect_close("permute", &perm, want, (size_t)X * h, 0.0f, 0.0f);
    expect_close("unpermute", &y, want_y, (size_t)T * h, atol_of(dt), rtol_of(dt));
    expect_close("permute bwd", &y1, want_y1, (size_t)T * h, atol_of(dt), rtol_of(dt));
    expect_close("unpermute bwd drows", &drows, want_dr, (size_t)X * h, atol_of(dt), rtol_of(dt));
    expect_close("unpermute bwd dw", &dw, want_dw, X, 1e-4f, 1e-5f);
    free(r), free(wd), free(yr), free(y1r), free(want), free(want_y), free(want_y1), free(want_dr);
    cudaFree(dpos);
    ct_drop(&x), ct_drop(&rows), ct_drop(&w), ct_drop(&dy), ct_drop(&perm), ct_drop(&y), ct_drop(&y1);
    ct_drop(&drows), ct_drop(&dw);
}

static void test_row_moves(void **state)
{
    (void)state;
    for (size_t di = 0; di < 3; di++) {
        check_rows(dts[di], 256);   /* 16-byte vectors */
        check_rows(dts[di], 100);   /* scalars (fp32 rows of 400 bytes: also vectors) */
    }
}

int main(void)
{
    const struct CMUnitTest host[] = {
        cmocka_unit_test(test_host_topk_bwd_ref),
        cmocka_unit_test(test_host_topk_walk),
        cmocka_unit_test(test_host_route_walk),
        cmocka_unit_test(test_host_adjoints),
        cmocka_unit_test(test_host_dims),
        cmocka_unit_test(test_host_refusals),
    };
    const struct CMUnitTest gpu[] = {
        cmocka_unit_test(test_topk),
        cmocka_unit_test(test_route_index),
        cmocka_unit_test(test_row_moves),
    };
    return ct_run_host_then_gpu("cuda_kernels_moe", host, CT_COUNT(host), gpu, CT_COUNT(gpu));
}
