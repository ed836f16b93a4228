/* test_engine_kernels_moe.c: the MoE router, permute and unpermute kernels (cpu_kernels_moe.h).
 *  - router top-k against a double reference (scores from the definition, the choice by a full
 *    sort with ties to the lower id) for softmax and sigmoid scoring, with and without the
 *    renormalisation, a scale, a selection bias, an exact tie; the router projection and its
 *    backward against naive loops in double;
 *  - the router backward against central finite differences of the double reference's weights
 *    for the forward's choice (L = sum dW * weights);
 *  - route index against a stable sort done here, permute / unpermute and their backward against
 *    naive loops, on an assignment from plan_moe.h with empty and crowded experts;
 *  - every pooled kernel gives the same bits over a pool of 3 threads as on the caller alone;
 *    outputs start as NaN, so an unwritten element fails.
 * Tolerances: scores in fp32 with the backend's exp (2e-7 relative): weights within 2e-6
 * relative; finite differences (step 1e-6 in double) against the fp32 gradient: 2e-6 of the
 * gradient's scale; sums of fp32 products within 1e-6 of the sum of the terms' magnitudes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cpu/cpu_kernels.h"   /* pdbx_k_fill_uniform */
#include "engine/backends/cpu/cpu_kernels_moe.h"
#include "engine/plan/plan_moe.h"
#include "tests/unit/test_kernel_util.h"

static void *nanbuf(size_t bytes)
{
    void *x = malloc(bytes ? bytes : 1);
    assert_non_null(x);
    memset(x, 0xff, bytes);   /* NaN floats, -1 ints: an unwritten element fails */
    return x;
}

static double check_err(double got, double want, double tol, const char *what, int64_t i)
{
    const double err = fabs(got - want);
    if (!(err <= tol)) {
        print_error("%s[%lld]: got %.9g, want %.9g (error %.3g > %.3g)\n", what, (long long)i, got,
                    want, err, tol);
        fail();
    }
    return err;
}

static pdbx_cpu_pool *pool3(void)
{
    pdbx_cpu_pool *pool = pdbx_cpu_pool_create(3);
    assert_non_null(pool);
    return pool;
}

/* ---- router reference --------------------------------------------------------------------- */
static double ref_score(const pdbx_moe_router_cfg *cfg, const double *l, int E, int e)
{
    if (cfg->score == PDBX_MOE_SCORE_SIGMOID)
        return 1.0 / (1.0 + exp(-l[e]));
    double m = l[0], sum = 0.0;
    for (int i = 1; i < E; i++)
        m = l[i] > m ? l[i] : m;
    for (int i = 0; i < E; i++)
        sum += exp(l[i] - m);
    return exp(l[e] - m) / sum;
}

/* The choice: a full selection sort of the keys, ties to the lower id. */
static void ref_choose(const pdbx_moe_router_cfg *cfg, const double *l, int E, int k, int32_t *id)
{
    char *taken = calloc((size_t)E, 1);
    assert_non_null(taken);
    for (int j = 0; j < k; j++) {
        int best = -1;
        double bk = 0.0;
        for (int e = 0; e < E; e++) {
            double key = ref_score(cfg, l, E, e);
            if (cfg->score == PDBX_MOE_SCORE_SIGMOID && cfg->select_bias)
                key += cfg->select_bias[e];
            if (!taken[e] && (best < 0 || key > bk))
                best = e, bk = key;
        }
        taken[best] = 1;
        id[j] = best;
    }
    free(taken);
}

static void ref_weights(const pdbx_moe_router_cfg *cfg, const double *l, int E, int k,
                        const int32_t *id, double *w)
{
    double sum = 0.0;
    for (int j = 0; j < k; j++)
        sum += w[j] = ref_score(cfg, l, E, id[j]);
    for (int j = 0; j < k; j++)
        w[j] *= cfg->norm_topk ? cfg->scale / sum : cfg->scale;
}

static void to_double(const float *x, double *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i];
}

static const float BIAS16[16] = { 0.3f, -0.2f, 0.0f, 0.5f, -0.4f, 0.1f, 0.2f, -0.1f,
                                  0.05f, 0.0f, -0.3f, 0.25f, 0.15f, -0.05f, 0.35f, -0.25f };

static pdbx_moe_router_cfg cfg_of(int which)
{
    /* Mixtral / qwen3_moe; qwen2_moe; DeepSeek-V2 (softmax, no norm, scale 16); DeepSeek-V3
     * (16 experts: the bias table's); sigmoid without a bias */
    pdbx_moe_router_cfg c[5] = {
        { PDBX_MOE_SCORE_SOFTMAX, 1, 1.0f, NULL },
        { PDBX_MOE_SCORE_SOFTMAX, 0, 1.0f, NULL },
        { PDBX_MOE_SCORE_SOFTMAX, 0, 16.0f, NULL },
        { PDBX_MOE_SCORE_SIGMOID, 1, 2.5f, BIAS16 },
        { PDBX_MOE_SCORE_SIGMOID, 0, 1.0f, NULL },
    };
    return c[which];
}

static void check_topk(int64_t T, int E, int k, int which, float spread)
{
    const pdbx_moe_router_cfg cfg = cfg_of(which);
    float *l = randv((size_t)(T * E), spread, 11 + (uint64_t)which);
    int32_t *id = nanbuf((size_t)(T * k) * 4), *id3 = nanbuf((size_t)(T * k) * 4);
    float *w = nanbuf((size_t)(T * k) * 4), *w3 = nanbuf((size_t)(T * k) * 4);
    double *ld = malloc((size_t)E * sizeof *ld), *wd = malloc((size_t)k * sizeof *wd);
    int32_t *rid = malloc((size_t)k * sizeof *rid);
    assert_true(ld && wd && rid);
    pdbx_k_moe_topk(NULL, l, T, E, k, &cfg, id, w);
    pdbx_cpu_pool *pool = pool3();
    pdbx_k_moe_topk(pool, l, T, E, k, &cfg, id3, w3);
    pdbx_cpu_pool_destroy(pool);
    assert_memory_equal(id, id3, (size_t)(T * k) * 4);
    assert_memory_equal(w, w3, (size_t)(T * k) * 4);
    double worst = 0.0;
    for (int64_t t = 0; t < T; t++) {
        to_double(l + t * E, ld, E);
        ref_choose(&cfg, ld, E, k, rid);
        ref_weights(&cfg, ld, E, k, rid, wd);
        for (int j = 0; j < k; j++) {
            assert_int_equal(id[t * k + j], rid[j]);
            const double e = check_err(w[t * k + j], wd[j], 2e-6 * fabs(wd[j]) + 1e-30, "w",
                                       t * k + j) / fabs(wd[j]);
            worst = e > worst ? e : worst;
        }
    }
    print_message("topk cfg %d T %lld E %d k %d: worst relative weight error %.3g\n", which,
                  (long long)T, E, k, worst);
    free(l), free(id), free(id3), free(w), free(w3), free(ld), free(wd), free(rid);
}

static void test_topk(void **state)
{
    (void)state;
    for (int which = 0; which < 4; which++) {
        check_topk(700, 16, which == 3 ? 8 : 2, which, 3.0f);   /* 11200 logits: the caller alone */
        check_topk(600, 64, 6, which == 3 ? 4 : which, 4.0f);    /* 38400 logits: pooled */
        check_topk(5, 16, 16, which, 2.0f);                      /* top_k = E */
        check_topk(9, 16, 1, which, 2.0f);
    }
    /* an exact tie: the lower id first, the equal weights */
    const pdbx_moe_router_cfg cfg = cfg_of(0);
    const float l[4] = { 1.0f, 2.0f, 0.5f, 2.0f };
    int32_t id[2];
    float w[2];
    pdbx_k_moe_topk(NULL, l, 1, 4, 2, &cfg, id, w);
    assert_int_equal(id[0], 1);
    assert_int_equal(id[1], 3);
    assert_true(w[0] == 0.5f && w[1] == 0.5f);
}

/* ---- router backward ---------------------------------------------------------------------- */
static double router_loss(const pdbx_moe_router_cfg *cfg, const double *l, int E, int k,
                          const int32_t *id, const double *dw)
{
    double w[64], L = 0.0;
    ref_weights(cfg, l, E, k, id, w);
    for (int j = 0; j < k; j++)
        L += dw[j] * w[j];
    return L;
}

static void check_topk_bwd(int64_t T, int E, int k, int which)
{
    const pdbx_moe_router_cfg cfg = cfg_of(which);
    float *l = randv((size_t)(T * E), 2.0f, 31 + (uint64_t)which);
    float *dw = randv((size_t)(T * k), 1.0f, 41);
    int32_t *id = nanbuf((size_t)(T * k) * 4);
    float *w = nanbuf((size_t)(T * k) * 4), *dl = nanbuf((size_t)(T * E) * 4);
    float *dl3 = nanbuf((size_t)(T * E) * 4);
    pdbx_k_moe_topk(NULL, l, T, E, k, &cfg, id, w);
    pdbx_k_moe_topk_bwd(NULL, l, id, dw, T, E, k, &cfg, dl);
    pdbx_cpu_pool *pool = pool3();
    pdbx_k_moe_topk_bwd(pool, l, id, dw, T, E, k, &cfg, dl3);
    pdbx_cpu_pool_destroy(pool);
    assert_memory_equal(dl, dl3, (size_t)(T * E) * 4);
    double ld[64], dwd[64], worst = 0.0;
    const int64_t checked = T < 40 ? T : 40;   /* finite differences on the first rows */
    for (int64_t t = 0; t < checked; t++) {
        to_double(l + t * E, ld, E);
        to_double(dw + t * k, dwd, k);
        double scale = 0.0;
        for (int j = 0; j < k; j++)
            scale += fabs(dwd[j]) * cfg.scale;
        for (int e = 0; e < E; e++) {
            const double h = 1e-6, x0 = ld[e];
            ld[e] = x0 + h;
            const double up = router_loss(&cfg, ld, E, k, id + t * k, dwd);
            ld[e] = x0 - h;
            const double dn = router_loss(&cfg, ld, E, k, id + t * k, dwd);
            ld[e] = x0;
            const double fd = (up - dn) / (2 * h);
            const double err = check_err(dl[t * E + e], fd, 2e-6 * scale, "dlogits", t * E + e);
            worst = err / scale > worst ? err / scale : worst;
        }
    }
    print_message("topk bwd cfg %d E %d k %d: worst error / scale %.3g\n", which, E, k, worst);
    free(l), free(dw), free(id), free(w), free(dl), free(dl3);
}

static void test_topk_bwd(void **state)
{
    (void)state;
    for (int which = 0; which < 4; which++) {
        check_topk_bwd(600, 64, 6, which == 3 ? 4 : which);   /* pooled sizes */
        check_topk_bwd(30, 16, which == 3 ? 8 : 2, which);
        check_topk_bwd(7, 16, 16, which);
    }
}

static void test_router_logits(void **state)
{
    (void)state;
    const int64_t T = 37, h = 29;
    const int E = 12;
    float *x = randv((size_t)(T * h), 1.0f, 1), *w = randv((size_t)(h * E), 1.0f, 2);
    float *dl = randv((size_t)(T * E), 1.0f, 3), *l = nanbuf((size_t)(T * E) * 4);
    float *dx = randv((size_t)(T * h), 1.0f, 4), *dx0 = malloc((size_t)(T * h) * 4);
    float *dwv = randv((size_t)(h * E), 1.0f, 5), *dw0 = malloc((size_t)(h * E) * 4);
    assert_true(dx0 && dw0);
    memcpy(dx0, dx, (size_t)(T * h) * 4);
    memcpy(dw0, dwv, (size_t)(h * E) * 4);
    pdbx_k_moe_router_logits(x, w, T, h, E, l);
    pdbx_k_moe_router_logits_bwd(x, w, dl, T, h, E, dx, 1, dwv);   /* both accumulated */
    for (int64_t t = 0; t < T; t++)
        for (int e = 0; e < E; e++) {
            double s = 0.0, m = 0.0;
            for (int64_t i = 0; i < h; i++)
                s += (double)x[t * h + i] * w[i * E + e], m += fabs((double)x[t * h + i] * w[i * E + e]);
            check_err(l[t * E + e], s, 1e-6 * m, "logits", t * E + e);
        }
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < h; i++) {
            double s = dx0[t * h + i], m = fabs(s);
            for (int e = 0; e < E; e++)
                s += (double)dl[t * E + e] * w[i * E + e], m += fabs((double)dl[t * E + e] * w[i * E + e]);
            check_err(dx[t * h + i], s, 1e-6 * m, "dx", t * h + i);
        }
    for (int64_t i = 0; i < h; i++)
        for (int e = 0; e < E; e++) {
            double s = dw0[i * E + e], m = fabs(s);
            for (int64_t t = 0; t < T; t++)
                s += (double)x[t * h + i] * dl[t * E + e], m += fabs((double)x[t * h + i] * dl[t * E + e]);
            check_err(dwv[i * E + e], s, 1e-6 * m, "dw", i * E + e);
        }
    pdbx_k_moe_router_logits_bwd(x, w, dl, T, h, E, dx, 0, dwv);   /* dx overwritten now */
    for (int64_t i = 0; i < h; i++) {
        double s = 0.0, m = 0.0;
        for (int e = 0; e < E; e++)
            s += (double)dl[e] * w[i * E + e], m += fabs((double)dl[e] * w[i * E + e]);
        check_err(dx[i], s, 1e-6 * m, "dx overwritten", i);
    }
    free(x), free(w), free(dl), free(l), free(dx), free(dx0), free(dwv), free(dw0);
}

/* ---- permute / unpermute ------------------------------------------------------------------ */
/* An assignment of T tokens x k over E experts with the counts of an imbalanced route (expert
 * 0 crowded, and with T*k small some experts empty). */
static int32_t *assignment(int64_t T, int k, int E, double f)
{
    char err[160];
    pdbx_moe_route r = { .tokens = T, .top_k = k, .experts = E, .ep = 1, .imbalance = f };
    int64_t *own = malloc((size_t)E * sizeof *own);
    int32_t *idx = malloc((size_t)(T * k) * sizeof *idx);
    assert_true(own && idx);
    assert_int_equal(pdbx_moe_rank_load(&r, 0, NULL, NULL, NULL, NULL, own, err, sizeof err), 0);
    assert_int_equal(pdbx_moe_assign(T, k, E, own, idx, err, sizeof err), 0);
    free(own);
    return idx;
}

static void check_index(const int32_t *idx, int64_t T, int k, int E, const int64_t *off,
                        const int64_t *pos)
{
    int64_t row = 0;
    for (int g = 0; g < E; g++) {
        assert_int_equal(off[g], row);
        for (int64_t c = 0; c < T * k; c++)   /* the stable sort: by expert, then copy number */
            if (idx[c] == g)
                assert_int_equal(pos[c], row++);
    }
    assert_int_equal(off[E], row);
    assert_int_equal(row, T * k);
}

static void check_perm(int64_t T, int64_t h, int k, int E, double f)
{
    const int64_t n = T * k;
    int32_t *idx = assignment(T, k, E, f);
    int64_t *off = nanbuf((size_t)(E + 1) * 8), *pos = nanbuf((size_t)n * 8);
    pdbx_k_moe_route_index(idx, T, k, E, off, pos);
    check_index(idx, T, k, E, off, pos);
    float *x = randv((size_t)(T * h), 1.0f, 7), *w = randv((size_t)n, 1.0f, 8);
    float *dy = randv((size_t)(T * h), 1.0f, 9), *dr = randv((size_t)(n * h), 1.0f, 10);
    float *out[2][5];   /* [pool][rows, dx, y, drows, dw] */
    pdbx_cpu_pool *pool = pool3();
    for (int p = 0; p < 2; p++) {
        pdbx_cpu_pool *pp = p ? pool : NULL;
        float **o = out[p];
        o[0] = nanbuf((size_t)(n * h) * 4), o[1] = nanbuf((size_t)(T * h) * 4);
        o[2] = nanbuf((size_t)(T * h) * 4), o[3] = nanbuf((size_t)(n * h) * 4);
        o[4] = nanbuf((size_t)n * 4);
        pdbx_k_moe_permute(pp, x, pos, T, h, k, o[0]);
        pdbx_k_moe_permute_bwd(pp, dr, pos, T, h, k, o[1]);
        pdbx_k_moe_unpermute(pp, dr, w, pos, T, h, k, o[2]);
        pdbx_k_moe_unpermute_bwd(pp, dr, w, pos, dy, T, h, k, o[3], o[4]);
    }
    pdbx_cpu_pool_destroy(pool);
    const size_t sizes[5] = { (size_t)(n * h), (size_t)(T * h), (size_t)(T * h), (size_t)(n * h),
                              (size_t)n };
    for (int i = 0; i < 5; i++)
        assert_memory_equal(out[0][i], out[1][i], sizes[i] * 4);
    float **o = out[0];
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < h; i++) {
            double sx = 0.0, mx = 0.0, sy = 0.0, my = 0.0;
            for (int j = 0; j < k; j++) {
                const int64_t c = t * k + j, r = pos[c];
                assert_true(o[0][r * h + i] == x[t * h + i]);                 /* a copy */
                assert_true(o[3][r * h + i] == w[c] * dy[t * h + i]);         /* one product */
                sx += dr[r * h + i], mx += fabs(dr[r * h + i]);
                sy += (double)w[c] * dr[r * h + i], my += fabs((double)w[c] * dr[r * h + i]);
            }
            check_err(o[1][t * h + i], sx, 1e-6 * mx, "permute dx", t * h + i);
            check_err(o[2][t * h + i], sy, 1e-6 * my, "unpermute y", t * h + i);
        }
    for (int64_t c = 0; c < n; c++) {
        double s = 0.0, m = 0.0;
        for (int64_t i = 0; i < h; i++)
            s += (double)dy[(c / k) * h + i] * dr[pos[c] * h + i],
            m += fabs((double)dy[(c / k) * h + i] * dr[pos[c] * h + i]);
        check_err(o[4][c], s, 1e-6 * m, "unpermute dw", c);
    }
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < 5; i++)
            free(out[p][i]);
    free(idx), free(off), free(pos), free(x), free(w), free(dy), free(dr);
}

static void test_permute(void **state)
{
    (void)state;
    check_perm(300, 64, 2, 8, 1.0);      /* pooled: 38400 elements moved */
    check_perm(300, 96, 4, 16, 2.5);     /* crowded expert 0 */
    check_perm(3, 5, 2, 16, 1.0);        /* T*k < E: empty experts */
    check_perm(1, 7, 1, 1, 1.0);
    check_perm(50, 20000, 2, 4, 1.0);    /* rows wider than a chunk: one token per chunk */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topk),
        cmocka_unit_test(test_topk_bwd),
        cmocka_unit_test(test_router_logits),
        cmocka_unit_test(test_permute),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
