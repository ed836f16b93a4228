/* test_cuda_layouts.c: the host-only checks of the cuda backend (no GPU, run everywhere the
 * backend builds): the exact GEMM shapes and offsets the backend hands to cuBLASLt (linear
 * layers, the attention core and their backward: dgrad/wgrad, the attention backward's GEMM
 * sequence, the bias epilogue, cublasGemmEx's arguments) run through an emulation of cuBLASLt's
 * column-major strided-batched definition and must reproduce X W^T, causal GQA attention and
 * the textbook gradients; the fused kernels' shared memory per block; and the backend's own
 * per-rank dimensions must agree with the planner's shapes for every model preset and valid TP.
 * Built from the same objects as libpdbx_cuda.so (whose internals are hidden) into
 * <variant>/tests/ by engine/backends/cuda/SConscript.
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
#include <cublas_v2.h>

#include "engine/backends/cuda/cuda_attention.h"
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cuda_gemm.h"
#include "engine/backends/cuda/cuda_kernels.h"
#include "tests/cuda/cuda_test_util.h"

static void test_host_linear_layout(void **state)
{
    (void)state;
    const int64_t m = 5, n = 7, k = 3;
    double *x = host_rand((size_t)(m * k)), *w = host_rand((size_t)(n * k));
    double *y = calloc((size_t)(m * n), sizeof *y);
    assert_non_null(y);
    cuda_gemm_shape s = cuda_gemm_linear_shape(PDBX_DTYPE_BF16, m, n, k);
    assert_int_equal(s.batch, 1);
    emulate_gemm(&s, 1.0, w, x, y);   /* A = weight, B = activations, as the backend calls it */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double want = 0.0;
            for (int64_t l = 0; l < k; l++)
                want += x[i * k + l] * w[j * k + l];   /* Y = X W^T, row-major, W [n, k] */
            assert_true(fabs(y[i * n + j] - want) < 1e-12);
        }
    free(x), free(w), free(y);
}

/* The backward's GEMMs of Y = X W^T (W [n, k]): dgrad gives dX = dY W, wgrad adds dY^T X onto
 * what dW held (beta 1). */
/* A linear shape with a bias: the vector has the out features' n elements (cuBLASLt's bias
 * epilogue adds bias[i] to row i of the column-major C, for every column), which is
 * row-major Y = X W^T + b; cublasGemmEx's arguments carry the bias (the backend adds it with
 * ck_bias_add over C as [rows, out]); a bias on a batched or fp32-output (wgrad) GEMM is
 * refused. */
static void test_host_linear_bias_layout(void **state)
{
    (void)state;
    const int64_t m = 5, n = 7, k = 3;
    double *x = host_rand((size_t)(m * k)), *w = host_rand((size_t)(n * k)), *b = host_rand((size_t)n);
    double *y = calloc((size_t)(m * n), sizeof *y);
    assert_non_null(y);
    cuda_gemm_shape s = cuda_gemm_linear_shape(PDBX_DTYPE_BF16, m, n, k);
    assert_int_equal(cuda_gemm_bias_elems(&s), 0);
    s.bias = 1;
    assert_int_equal(cuda_gemm_bias_elems(&s), n);
    emulate_gemm(&s, 1.0, w, x, y);
    for (int64_t i = 0; i < s.m; i++)          /* CUBLASLT_EPILOGUE_BIAS: C(i, j) += bias[i] */
        for (int64_t j = 0; j < s.n; j++)
            y[i + j * s.ldc] += b[i];
    for (int64_t r = 0; r < m; r++)
        for (int64_t j = 0; j < n; j++) {
            double want = b[j];
            for (int64_t l = 0; l < k; l++)
                want += x[r * k + l] * w[j * k + l];
            assert_true(fabs(y[r * n + j] - want) < 1e-12);
        }
    char err[256];
    cuda_gemm_ex_args a;
    assert_int_equal(cuda_gemm_ex_args_for(&s, PDBX_FP32_MATH_IEEE, &a, err, sizeof err), 0);
    assert_int_equal(a.bias, 1);
    assert_int_equal(a.ldc, a.m);   /* ck_bias_add(C, b, rows = a.n, cols = a.m) is this add */
    cuda_gemm_shape wg = cuda_gemm_wgrad_shape(PDBX_DTYPE_BF16, m, n, k);
    wg.bias = 1;
    assert_int_equal(cuda_gemm_ex_args_for(&wg, PDBX_FP32_MATH_IEEE, &a, err, sizeof err), -1);
    assert_non_null(strstr(err, "a bias on a fp32-output GEMM"));
    free(x), free(w), free(b), free(y);
}

static void test_host_linear_bwd_layout(void **state)
{
    (void)state;
    const int64_t m = 5, n = 7, k = 3;
    double *x = host_rand((size_t)(m * k)), *w = host_rand((size_t)(n * k));
    double *dy = host_rand((size_t)(m * n)), *dw = host_rand((size_t)(n * k));
    double *dw0 = malloc((size_t)(n * k) * sizeof *dw0), *dx = calloc((size_t)(m * k), sizeof *dx);
    assert_non_null(dw0);
    assert_non_null(dx);
    memcpy(dw0, dw, (size_t)(n * k) * sizeof *dw0);
    cuda_gemm_shape dg = cuda_gemm_dgrad_shape(PDBX_DTYPE_BF16, m, n, k);
    cuda_gemm_shape wg = cuda_gemm_wgrad_shape(PDBX_DTYPE_BF16, m, n, k);
    assert_int_equal(wg.c_fp32, 1);
    assert_int_equal(dg.c_fp32, 0);
    emulate_gemm(&dg, 1.0, w, dy, dx);            /* A = weight, B = dY, as the backend calls it */
    emulate_gemm_beta(&wg, 1.0, 1.0, x, dy, dw);  /* A = activations, B = dY */
    for (int64_t i = 0; i < m; i++)
        for (int64_t l = 0; l < k; l++) {
            double want = 0.0;
            for (int64_t j = 0; j < n; j++)
                want += dy[i * n + j] * w[j * k + l];
            assert_true(fabs(dx[i * k + l] - want) < 1e-12);
        }
    for (int64_t j = 0; j < n; j++)
        for (int64_t l = 0; l < k; l++) {
            double want = dw0[j * k + l];
            for (int64_t i = 0; i < m; i++)
                want += dy[i * n + j] * x[i * k + l];
            assert_true(fabs(dw[j * k + l] - want) < 1e-12);
        }
    free(x), free(w), free(dy), free(dw), free(dw0), free(dx);
}

/* The backend's backward sequence (cuda_attention_bwd_enqueue: its shapes, member offsets,
 * beta accumulation over the group and ck_causal_softmax_bwd's definition) reproduces the
 * textbook gradients. */
static void check_host_attention_bwd(int64_t mbs, int64_t seq, int64_t heads, int64_t kv, int64_t d)
{
    cuda_attention_dims dims = {mbs, seq, heads, kv, d, PDBX_DTYPE_BF16, 0};
    cuda_gemm_shape qk, pv, pt;
    assert_int_equal(cuda_attention_shapes(&dims, &qk, &pv), 0);
    assert_int_equal(cuda_attention_shape_bwd(&dims, &pt), 0);
    const int64_t T = mbs * seq, group = heads / kv;
    const size_t nq = (size_t)(T * heads * d), nk = (size_t)(T * kv * d);
    const size_t ns = cuda_attention_scores_elems(&dims);
    double *q = host_rand(nq), *k = host_rand(nk), *v = host_rand(nk), *dO = host_rand(nq);
    double *P = calloc(ns, sizeof *P), *dS = calloc(ns, sizeof *dS);
    double *dq = host_rand(nq), *dk = host_rand(nk), *dv = host_rand(nk);   /* overwritten */
    double *rq = malloc(nq * sizeof *rq), *rk = malloc(nk * sizeof *rk), *rv = malloc(nk * sizeof *rv);
    assert_true(P && dS && rq && rk && rv);
    int64_t q_off, s_off;
    /* the forward's probabilities, as check_host_attention computes them */
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_member(&dims, jj, &q_off, &s_off);
        emulate_gemm(&qk, cuda_attention_scale(&dims), k, q + q_off, P + s_off);
    }
    host_masked_softmax(P, mbs * heads * seq, seq, seq);
    /* cuda_attention_bwd_enqueue's sequence */
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_member(&dims, jj, &q_off, &s_off);
        emulate_gemm_beta(&pt, 1.0, jj ? 1.0 : 0.0, dO + q_off, P + s_off, dv);
        emulate_gemm(&qk, 1.0, v, dO + q_off, dS + s_off);
    }
    for (int64_t r = 0; r < mbs * heads * seq; r++) {   /* ck_causal_softmax_bwd's definition */
        const double *pr = P + r * seq;
        double *gr = dS + r * seq, dot = 0.0;
        int64_t i = r % seq;
        for (int64_t j = 0; j <= i; j++)
            dot += pr[j] * gr[j];
        for (int64_t j = 0; j < seq; j++)
            gr[j] = j <= i ? cuda_attention_scale(&dims) * pr[j] * (gr[j] - dot) : 0.0;
    }
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_member(&dims, jj, &q_off, &s_off);
        emulate_gemm(&pv, 1.0, k, dS + s_off, dq + q_off);
        emulate_gemm_beta(&pt, 1.0, jj ? 1.0 : 0.0, q + q_off, dS + s_off, dk);
    }
    attention_bwd_ref(mbs, seq, heads, kv, d, q, k, v, dO, rq, rk, rv);
    expect_near("attention bwd dq", dq, rq, nq, 1e-6);   /* the scale is a float */
    expect_near("attention bwd dk", dk, rk, nk, 1e-6);   /* the scale is a float */
    expect_near("attention bwd dv", dv, rv, nk, 1e-6);   /* the scale is a float */
    free(q), free(k), free(v), free(dO), free(P), free(dS), free(dq), free(dk), free(dv);
    free(rq), free(rk), free(rv);
}

static void test_host_attention_bwd_layout(void **state)
{
    (void)state;
    check_host_attention_bwd(3, 5, 6, 2, 4);    /* GQA, group 3 */
    check_host_attention_bwd(2, 6, 4, 4, 4);    /* MHA */
    check_host_attention_bwd(1, 9, 4, 1, 8);    /* MQA */
    check_host_attention_bwd(4, 3, 2, 1, 2);    /* mbs > seq */
}

/* The model's kinds in the backend's dims are the planner's (cuda_arch.h repeats two of its
 * functions). */
static void expect_kinds(const cuda_dims *d, const pdbx_model *m)
{
    assert_int_equal(d->rot, pdbx_rotary_dims(m));
    assert_int_equal(d->act, pdbx_activation_of(m->arch.activation));
    assert_int_equal(d->layernorm, m->arch.norm == PDBX_NORM_LAYER);
    assert_int_equal(d->mlp_plain, m->arch.mlp_plain != 0);
    assert_int_equal(d->parallel_residual, m->arch.parallel_residual != 0);
    assert_int_equal(d->pos_rows, m->arch.position == PDBX_POS_LEARNED ? m->arch.max_positions : 0);
}

/* The point p of test_host_dims_match_plan with fused_projections: the group bits become the
 * fused ones (their biases too) and only the leaders may run. */
static void expect_fused(pdbx_point_shapes *p, pdbx_opmask want_bias)
{
    const pdbx_opmask grouped = PDBX_OP_BIT(PDBX_OP_ATTN_Q) | PDBX_OP_BIT(PDBX_OP_ATTN_K) |
                                PDBX_OP_BIT(PDBX_OP_ATTN_V) | PDBX_OP_BIT(PDBX_OP_MLP_GATE) |
                                PDBX_OP_BIT(PDBX_OP_MLP_UP);
    char err[512];
    p->fused_projections = 1;
    cuda_dims fd;
    assert_int_equal(cuda_point_dims(p, 0, &fd, err, sizeof err), 0);
    assert_int_equal(fd.bias_ops, (want_bias & p->ops & ~grouped) |
                                      (p->shape[PDBX_OP_ATTN_Q].bias ? CUDA_FUSED_QKV : 0) |
                                      (p->shape[PDBX_OP_MLP_GATE].bias ? CUDA_FUSED_FC1 : 0));
    assert_true((fd.ops & CUDA_FUSED_QKV) && (fd.ops & CUDA_FUSED_FC1));
    assert_true(cuda_op_prepared(&fd, PDBX_OP_ATTN_Q) && cuda_op_prepared(&fd, PDBX_OP_MLP_GATE));
    assert_false(cuda_op_prepared(&fd, PDBX_OP_ATTN_K) || cuda_op_prepared(&fd, PDBX_OP_ATTN_V) ||
                 cuda_op_prepared(&fd, PDBX_OP_MLP_UP));
    assert_true(cuda_op_prepared(&fd, PDBX_OP_ATTN_CORE));
    p->fused_projections = 0;
}

/* The backend derives each point's dimensions itself and refuses a point whose planner GEMM
 * shapes disagree; here both derivations must agree for every model preset and valid TP (the
 * ops a point of the model measures), the model's kinds too (norm, activation, rotated dims,
 * positions, residual); fused projections for the gated MLPs (a plain one has no gate). */
static void test_host_dims_match_plan(void **state)
{
    (void)state;
    char names[32][64], err[512];
    size_t n = pdbx_preset_names("models", names, 32);
    assert_true(n >= 6);
    int checked = 0;
    for (size_t i = 0; i < n; i++) {
        pdbx_spec spec;
        pdbx_spec_defaults(&spec);
        if (pdbx_model_load(names[i], &spec.model, err, sizeof err) != 0)
            fail_msg("model %s: %s", names[i], err);
        spec.seq_len = 1024;
        const pdbx_model *m = &spec.model;
        if (pdbx_backend_model_check(PDBX_BACKEND_CUDA, m, err, sizeof err) != 0)
            continue;   /* refused on cuda before any point is prepared (none of the presets) */
        for (int tp = 1; tp <= 8; tp *= 2) {
            if (m->heads % tp || m->intermediate % tp || m->vocab % tp ||
                (m->kv_heads % tp && tp % m->kv_heads))
                continue;
            for (int mbs = 1; mbs <= 4; mbs *= 4) {
                pdbx_point_shapes p;
                memset(&p, 0, sizeof p);
                p.model = spec.model;
                p.tp = tp, p.mbs = mbs, p.seq_len = spec.seq_len, p.layers = 2;
                p.ops = pdbx_model_ops(m);   /* as a point measures: a plain MLP has no gate */
                for (int op = 0; op < PDBX_OP_COUNT; op++)   /* only ops the model lacks have none */
                    if (pdbx_op_shape_for(&spec, tp, mbs, (pdbx_op)op, &p.shape[op]) != 0)
                        assert_false(p.ops & PDBX_OP_BIT(op));
                cuda_dims d;
                if (cuda_point_dims(&p, tp - 1, &d, err, sizeof err) != 0)
                    fail_msg("%s tp %d mbs %d: %s", names[i], tp, mbs, err);
                assert_int_equal(d.tokens, (int64_t)mbs * 1024);
                assert_int_equal(d.vstart, (int64_t)(tp - 1) * d.vocab);   /* last TP rank */
                assert_int_equal(d.heads * tp, m->heads);
                assert_int_equal(p.shape[PDBX_OP_ATTN_CORE].batch, mbs * d.heads);
                /* fused: the fused GEMMs' n is the planner's (q + k + v, gate + up), the group
                 * bits become the fused ones, and only the leaders may run */
                pdbx_op_shape fq, ff;
                assert_int_equal(pdbx_fused_shape_for(&spec, tp, mbs, PDBX_OP_ATTN_Q, &fq), 0);
                assert_int_equal(pdbx_fused_shape_for(&spec, tp, mbs, PDBX_OP_MLP_GATE, &ff), 0);
                assert_int_equal(fq.n, (d.heads + 2 * d.kv_heads) * d.head_dim);
                assert_int_equal(ff.n, 2 * d.inter);
                /* the bias bits are the shapes' (Qwen2.5: q, k, v; the others none) */
                pdbx_opmask want_bias = 0;
                for (int op = 0; op < PDBX_OP_COUNT; op++)
                    if (p.shape[op].bias)
                        want_bias |= PDBX_OP_BIT(op);
                assert_int_equal(d.bias_ops, want_bias & p.ops);
                if (strcmp(m->arch.model_type, "qwen2") == 0)
                    assert_int_equal(d.bias_ops, PDBX_OP_BIT(PDBX_OP_ATTN_Q) | PDBX_OP_BIT(PDBX_OP_ATTN_K) |
                                                     PDBX_OP_BIT(PDBX_OP_ATTN_V));
                expect_kinds(&d, m);
                assert_int_equal(d.moe.E, m->arch.moe.experts > 0 ? m->arch.moe.experts : 0);   /* MoE: cuda_moe.h */
                /* fused_projections needs a gated MLP and no MLA (validation); a MoE layer has no
                 * mlp_gate (DeepSeek's dense first layers have) */
                if (!m->arch.mlp_plain && (p.ops & PDBX_OP_BIT(PDBX_OP_MLP_GATE)) &&
                    m->arch.attention != PDBX_ATTN_MLA)
                    expect_fused(&p, want_bias);
                /* A shape the backend would compute differently is refused, naming the op (a MoE
                 * layer's router: cuda_moe_dims_of). */
                const pdbx_op bad = (p.ops & PDBX_OP_BIT(PDBX_OP_MLP_DOWN)) ? PDBX_OP_MLP_DOWN : PDBX_OP_MOE_ROUTER;
                p.shape[bad].k += 1;
                assert_int_equal(cuda_point_dims(&p, 0, &d, err, sizeof err), -1);
                assert_non_null(strstr(err, pdbx_op_name(bad)));
                checked++;
            }
        }
    }
    assert_true(checked >= 24);
}

static void check_host_attention(int64_t mbs, int64_t seq, int64_t heads, int64_t kv, int64_t d)
{
    cuda_attention_dims dims = {mbs, seq, heads, kv, d, PDBX_DTYPE_BF16, 0};
    cuda_gemm_shape qk, pv;
    assert_int_equal(cuda_attention_shapes(&dims, &qk, &pv), 0);
    const int64_t T = mbs * seq, group = heads / kv;
    double *q = host_rand((size_t)(T * heads * d)), *k = host_rand((size_t)(T * kv * d));
    double *v = host_rand((size_t)(T * kv * d));
    double *sc = calloc(cuda_attention_scores_elems(&dims), sizeof *sc);
    double *o = calloc((size_t)(T * heads * d), sizeof *o);
    assert_non_null(sc);
    assert_non_null(o);
    int64_t q_off, s_off;
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_member(&dims, jj, &q_off, &s_off);
        emulate_gemm(&qk, cuda_attention_scale(&dims), k, q + q_off, sc + s_off);
    }
    host_masked_softmax(sc, mbs * heads * seq, seq, seq);   /* ck_causal_softmax's definition */
    for (int64_t jj = 0; jj < group; jj++) {
        cuda_attention_member(&dims, jj, &q_off, &s_off);
        emulate_gemm(&pv, 1.0, v, sc + s_off, o + q_off);
    }
    double *p = malloc((size_t)seq * sizeof *p);
    assert_non_null(p);
    for (int64_t b = 0; b < mbs; b++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t i = 0; i < seq; i++) {
                const double *qi = q + ((i * mbs + b) * heads + h) * d;
                double mx = -INFINITY, sum = 0.0;
                for (int64_t j = 0; j <= i; j++) {
                    const double *kj = k + ((j * mbs + b) * kv + h / group) * d;
                    double dot = 0.0;
                    for (int64_t e = 0; e < d; e++)
                        dot += qi[e] * kj[e];
                    p[j] = dot / sqrt((double)d);
                    mx = fmax(mx, p[j]);
                }
                for (int64_t j = 0; j <= i; j++)
                    sum += exp(p[j] - mx);
                for (int64_t e = 0; e < d; e++) {
                    double want = 0.0;
                    for (int64_t j = 0; j <= i; j++)
                        want += exp(p[j] - mx) / sum * v[((j * mbs + b) * kv + h / group) * d + e];
                    double got = o[((i * mbs + b) * heads + h) * d + e];
                    if (fabs(got - want) > 1e-5)
                        fail_msg("mbs %lld seq %lld heads %lld kv %lld d %lld: out[b %lld, h %lld, "
                                 "pos %lld, %lld] = %g, want %g", (long long)mbs, (long long)seq,
                                 (long long)heads, (long long)kv, (long long)d, (long long)b,
                                 (long long)h, (long long)i, (long long)e, got, want);
                }
            }
    free(q), free(k), free(v), free(sc), free(o), free(p);
}

/* The fused kernels' shared memory per block (host arithmetic of cuda_flash.cu's layouts):
 * bf16/fp16 d 128: Q, K, V 64 x 136 x 2 = 17408 each, S 64 x 68 x 4 = 17408, P 64 x 72 x 2 =
 * 9216, O 64 x 132 x 4 = 33792 -> 112640; d 64: 3 x 9216 + 17408 + 9216 + 17408 = 71680;
 * fp32 d 128: Q, K 64 x 129 x 4 = 33024 each, V 32768, P 64 x 65 x 4 = 16640 -> 115456; d 64:
 * 2 x 16640 + 16384 + 16640 = 66304. All within the opt-in limit of sm_80 (163 KiB = 166912)
 * and so of sm_90 (227 KiB); unsupported shapes: 0. */
static void test_host_flash_smem(void **state)
{
    (void)state;
    assert_int_equal(ck_flash_smem_bytes(128, PDBX_DTYPE_BF16), 112640);
    assert_int_equal(ck_flash_smem_bytes(128, PDBX_DTYPE_FP16), 112640);
    assert_int_equal(ck_flash_smem_bytes(64, PDBX_DTYPE_BF16), 71680);
    assert_int_equal(ck_flash_smem_bytes(128, PDBX_DTYPE_FP32), 115456);
    assert_int_equal(ck_flash_smem_bytes(64, PDBX_DTYPE_FP32), 66304);
    assert_int_equal(ck_flash_smem_bytes(96, PDBX_DTYPE_BF16), 0);
    assert_int_equal(ck_flash_supported(80, PDBX_DTYPE_BF16), 0);
    /* the fused backward (cuda_flash_bwd.cu, 32 x 32 tiles): Q, dO, K, V in the dtype with
     * 16 bytes of row padding, S and dP fp32 (ld 36), P and dS in the dtype (ld 32 + pad), the
     * dK, dV, dQ tiles fp32 (ld d + 4), lse and delta 32 floats each. bf16 d 128: 4 x 32 x 136
     * x 2 = 34816 + 2 x 4608 + 2 x 2560 + 3 x 16896 + 256 = 100096; d 64: 18432 + 9216 + 5120 +
     * 26112 + 256 = 59136; fp32 d 128: 4 x 32 x 132 x 4 = 67584 + 9216 + 9216 + 50688 + 256 =
     * 136960; d 64: 34816 + 9216 + 9216 + 26112 + 256 = 79616. */
    assert_int_equal(ck_flash_bwd_smem_bytes(128, PDBX_DTYPE_BF16), 100096);
    assert_int_equal(ck_flash_bwd_smem_bytes(128, PDBX_DTYPE_FP16), 100096);
    assert_int_equal(ck_flash_bwd_smem_bytes(64, PDBX_DTYPE_BF16), 59136);
    assert_int_equal(ck_flash_bwd_smem_bytes(128, PDBX_DTYPE_FP32), 136960);
    assert_int_equal(ck_flash_bwd_smem_bytes(64, PDBX_DTYPE_FP32), 79616);
    assert_int_equal(ck_flash_bwd_smem_bytes(96, PDBX_DTYPE_BF16), 0);
    const int64_t dims[] = {64, 128};
    const pdbx_dtype dts[] = {PDBX_DTYPE_BF16, PDBX_DTYPE_FP16, PDBX_DTYPE_FP32};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            assert_true(ck_flash_smem_bytes(dims[i], dts[j]) <= 166912);
            assert_true(ck_flash_bwd_smem_bytes(dims[i], dts[j]) <= 166912);
        }
}

static void test_host_attention_layout(void **state)
{
    (void)state;
    check_host_attention(3, 5, 6, 2, 4);    /* GQA, group 3 */
    check_host_attention(2, 7, 8, 4, 8);    /* GQA, group 2 */
    check_host_attention(2, 6, 4, 4, 4);    /* MHA */
    check_host_attention(1, 9, 4, 1, 8);    /* MQA */
    check_host_attention(4, 3, 2, 1, 2);    /* mbs > seq */
    cuda_attention_dims bad = {1, 8, 6, 4, 8, PDBX_DTYPE_BF16, 0};   /* 6 heads, 4 kv heads */
    cuda_gemm_shape qk, pv;
    assert_int_equal(cuda_attention_shapes(&bad, &qk, &pv), -1);
}

/* C[m,n] = op(A) op(B) by cuBLAS's column-major rules, read from the cublasGemmEx arguments. */
static void emulate_gemm_ex(const cuda_gemm_ex_args *x, const double *A, const double *B, double *C)
{
    for (int i = 0; i < x->m; i++)
        for (int j = 0; j < x->n; j++) {
            double acc = 0.0;
            for (int l = 0; l < x->k; l++) {
                double a = x->transa == CUBLAS_OP_T ? A[l + (size_t)i * x->lda] : A[i + (size_t)l * x->lda];
                double b = x->transb == CUBLAS_OP_T ? B[j + (size_t)l * x->ldb] : B[l + (size_t)j * x->ldb];
                acc += a * b;
            }
            C[i + (size_t)j * x->ldc] = acc;
        }
}

/* gemm_api cublas: cublasGemmEx gets F.linear's TN call (transa T, transb N, m = out features,
 * n = rows, k = in features) and computes Y = X W^T; the compute type follows fp32_math for
 * fp32 only; the wgrad writes fp32; a dimension past int is refused naming it. */
static void test_host_gemm_ex_args(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(cuda_gemm_compute_type(PDBX_DTYPE_FP32, PDBX_FP32_MATH_IEEE), CUBLAS_COMPUTE_32F);
    assert_int_equal(cuda_gemm_compute_type(PDBX_DTYPE_FP32, PDBX_FP32_MATH_TF32), CUBLAS_COMPUTE_32F_FAST_TF32);
    assert_int_equal(cuda_gemm_compute_type(PDBX_DTYPE_BF16, PDBX_FP32_MATH_TF32), CUBLAS_COMPUTE_32F);
    assert_int_equal(cuda_gemm_compute_type(PDBX_DTYPE_FP16, PDBX_FP32_MATH_IEEE), CUBLAS_COMPUTE_32F);
    const int64_t m = 5, n = 7, k = 3;
    cuda_gemm_shape s = cuda_gemm_linear_shape(PDBX_DTYPE_FP32, m, n, k);
    cuda_gemm_ex_args x;
    assert_int_equal(cuda_gemm_ex_args_for(&s, PDBX_FP32_MATH_TF32, &x, err, sizeof err), 0);
    assert_int_equal(x.transa, CUBLAS_OP_T);
    assert_int_equal(x.transb, CUBLAS_OP_N);
    assert_int_equal(x.m, n);
    assert_int_equal(x.n, m);
    assert_int_equal(x.k, k);
    assert_int_equal(x.a_type, CUDA_R_32F);
    assert_int_equal(x.compute_type, CUBLAS_COMPUTE_32F_FAST_TF32);
    double *xs = host_rand((size_t)(m * k)), *w = host_rand((size_t)(n * k));
    double *y = calloc((size_t)(m * n), sizeof *y);
    assert_non_null(y);
    emulate_gemm_ex(&x, w, xs, y);    /* A = weight, B = activations, as cuda_gemm_exec passes */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double want = 0.0;
            for (int64_t l = 0; l < k; l++)
                want += xs[i * k + l] * w[j * k + l];
            assert_true(fabs(y[i * n + j] - want) < 1e-12);
        }
    free(xs), free(w), free(y);
    cuda_gemm_shape wg = cuda_gemm_wgrad_shape(PDBX_DTYPE_BF16, m, n, k);
    assert_int_equal(cuda_gemm_ex_args_for(&wg, PDBX_FP32_MATH_IEEE, &x, err, sizeof err), 0);
    assert_int_equal(x.a_type, CUDA_R_16BF);
    assert_int_equal(x.c_type, CUDA_R_32F);
    assert_int_equal(x.compute_type, CUBLAS_COMPUTE_32F);
    cuda_gemm_shape big = cuda_gemm_linear_shape(PDBX_DTYPE_BF16, (int64_t)1 << 31, n, k);
    assert_int_equal(cuda_gemm_ex_args_for(&big, PDBX_FP32_MATH_IEEE, &x, err, sizeof err), -1);
    assert_non_null(strstr(err, "n 2147483648"));
}

/* The GEMMs a point plans for both passes (cuda_point_gemms): the separate projections with
 * their bias flags, or with fused_projections the fused QKV and fc1 GEMMs in their leaders'
 * slots (q + k + v and gate + up wide) and no plan for the ops they replace. */
static void test_host_point_gemms(void **state)
{
    (void)state;
    pdbx_point_shapes p;
    memset(&p, 0, sizeof p);
    p.model = (pdbx_model){.hidden = 256, .intermediate = 512, .heads = 8, .kv_heads = 2,
                           .head_dim = 32, .layers = 2, .vocab = 1000};
    p.model.arch.bias.qkv = 1;
    p.tp = 2, p.mbs = 1, p.seq_len = 16, p.layers = 1, p.ops = PDBX_OPS_ALL;
    p.shape[PDBX_OP_ATTN_Q].bias = p.shape[PDBX_OP_ATTN_K].bias = p.shape[PDBX_OP_ATTN_V].bias = 1;
    char err[256] = "";
    cuda_dims d;
    cuda_point_gemm g[CUDA_POINT_GEMMS];
    assert_int_equal(cuda_point_dims(&p, 0, &d, err, sizeof err), 0);
    assert_int_equal(cuda_point_gemms(&d, g), 8);   /* q k v o gate up down lm_head */
    assert_true(g[0].op == PDBX_OP_ATTN_Q && g[0].n == 128 && g[0].k == 256 && g[0].bias);
    assert_true(g[1].op == PDBX_OP_ATTN_K && g[1].n == 32 && g[1].bias);
    assert_true(g[3].op == PDBX_OP_ATTN_O && g[3].n == 256 && g[3].k == 128 && !g[3].bias);
    assert_true(g[7].op == PDBX_OP_LM_HEAD && g[7].n == 500);
    p.fused_projections = 1;
    assert_int_equal(cuda_point_dims(&p, 0, &d, err, sizeof err), 0);
    const int n = cuda_point_gemms(&d, g);
    assert_int_equal(n, 5);   /* o down lm_head, then the fused qkv and fc1 */
    assert_true(g[3].op == PDBX_OP_ATTN_Q && g[3].n == 128 + 2 * 32 && g[3].k == 256 && g[3].bias);
    assert_true(g[4].op == PDBX_OP_MLP_GATE && g[4].n == 2 * 256 && g[4].k == 256 && !g[4].bias);
    for (int i = 0; i < n; i++)
        assert_true(g[i].op != PDBX_OP_ATTN_K && g[i].op != PDBX_OP_ATTN_V && g[i].op != PDBX_OP_MLP_UP);
}

int main(void)
{
    const struct CMUnitTest host_tests[] = {
        cmocka_unit_test(test_host_gemm_ex_args),
        cmocka_unit_test(test_host_linear_layout),
        cmocka_unit_test(test_host_attention_layout),
        cmocka_unit_test(test_host_flash_smem),
        cmocka_unit_test(test_host_linear_bwd_layout),
        cmocka_unit_test(test_host_linear_bias_layout),
        cmocka_unit_test(test_host_attention_bwd_layout),
        cmocka_unit_test(test_host_dims_match_plan),
        cmocka_unit_test(test_host_point_gemms),
    };
    return cmocka_run_group_tests_name("cuda_layouts_host", host_tests, NULL, NULL);
}
