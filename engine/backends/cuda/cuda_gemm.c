/* cuda_gemm.c: cuBLASLt GEMMs with per-shape cached descriptors and heuristic algorithms
 * (contract in cuda_gemm.h). Mirrors at::cuda::blas's cuBLASLt path: compute type, scale type,
 * transposes, layouts, a workspace-limited preference with pointer alignments, and the top
 * heuristic result; and its cuBLAS path (gemm_api cublas): cublasGemmEx on the same operands
 * with CUBLAS_GEMM_DEFAULT_TENSOR_OP, the handle on the backend's stream and workspace.
 */
#include "engine/backends/cuda/cuda_gemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <limits.h>

#include "engine/backends/backend.h"
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cuda_kernels.h"
#include "engine/backends/cuda/cuda_try.h"

struct cuda_gemm_plan {
    cuda_gemm_shape shape;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    size_t workspace_bytes;       /* what the chosen algorithm needs (<= the workspace) */
    cuda_gemm_ex_args ex;         /* gemm_api cublas: the cublasGemmEx arguments */
};

struct cuda_gemm {
    cublasLtHandle_t handle;
    cublasHandle_t blas;          /* gemm_api cublas only */
    pdbx_fp32_math fp32_math;
    pdbx_gemm_api api;
    void *workspace;
    size_t workspace_bytes;
    cuda_gemm_plan **plans;
    size_t nplans, cap;
};

static int lt_fail(char *err, size_t errlen, const char *call, cublasStatus_t st)
{
    if (err && errlen)
        snprintf(err, errlen, "%s failed: %s (%s)", call, cublasLtGetStatusName(st),
                 cublasLtGetStatusString(st));
    return -1;
}

#define LT_TRY(name, expr) \
    CUDA_TRY_STATUS(cublasStatus_t, CUBLAS_STATUS_SUCCESS, expr, lt_fail(err, errlen, (name), s_))

static int blas_fail(char *err, size_t errlen, const char *call, cublasStatus_t st)
{
    if (err && errlen)
        snprintf(err, errlen, "%s failed: %s (%s)", call, cublasGetStatusName(st),
                 cublasGetStatusString(st));
    return -1;
}

#define BLAS_TRY(name, expr) \
    CUDA_TRY_STATUS(cublasStatus_t, CUBLAS_STATUS_SUCCESS, expr, blas_fail(err, errlen, (name), s_))

int cuda_gemm_create(cuda_gemm **out, char *err, size_t errlen)
{
    return cuda_gemm_create_modes(out, PDBX_FP32_MATH_IEEE, PDBX_GEMM_API_CUBLASLT, err, errlen);
}

int cuda_gemm_create_modes(cuda_gemm **out, pdbx_fp32_math fp32_math, pdbx_gemm_api api, char *err,
                           size_t errlen)
{
    int rc = -1;
    cuda_gemm *g = calloc(1, sizeof *g);
    *out = NULL;
    if (!g) {
        snprintf(err, errlen, "cuda_gemm_create: out of host memory");
        return -1;
    }
    g->fp32_math = fp32_math;
    g->api = api;
    LT_TRY("cublasLtCreate", cublasLtCreate(&g->handle));
    cudaError_t ce = cudaMalloc(&g->workspace, CUDA_GEMM_WORKSPACE_BYTES);
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(err, errlen, "cudaMalloc(cuBLASLt workspace, %zu bytes) failed: %s (%s)",
                 CUDA_GEMM_WORKSPACE_BYTES, cudaGetErrorName(ce), cudaGetErrorString(ce));
        rc = ce == cudaErrorMemoryAllocation ? PDBX_EOOM : -1;
        g->workspace = NULL;
        goto fail;
    }
    g->workspace_bytes = CUDA_GEMM_WORKSPACE_BYTES;
    if (api == PDBX_GEMM_API_CUBLAS) {
        /* PyTorch hands cuBLAS its workspace too (CUBLAS_WORKSPACE_CONFIG): the same 32 MiB */
        BLAS_TRY("cublasCreate", cublasCreate(&g->blas));
        BLAS_TRY("cublasSetWorkspace", cublasSetWorkspace(g->blas, g->workspace, g->workspace_bytes));
    }
    *out = g;
    return 0;
fail:
    cuda_gemm_destroy(g);
    return rc;
}

static void plan_free(cuda_gemm_plan *p)
{
    if (!p)
        return;
    const cublasLtMatrixLayout_t layouts[] = {p->a, p->b, p->c};
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i])
            cublasLtMatrixLayoutDestroy(layouts[i]);
    if (p->desc)
        cublasLtMatmulDescDestroy(p->desc);
    free(p);
}

void cuda_gemm_destroy(cuda_gemm *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nplans; i++)
        plan_free(g->plans[i]);
    free(g->plans);
    if (g->blas)
        cublasDestroy(g->blas);
    cuda_dev_free(g->workspace);
    if (g->handle)
        cublasLtDestroy(g->handle);
    free(g);
}

cuda_gemm_shape cuda_gemm_linear_shape(pdbx_dtype dt, int64_t m, int64_t n, int64_t k)
{
    /* Row-major Y[m,n] = X[m,k] W[n,k]^T is column-major Y'[n,m] = (W')^T X' with
     * W' = W seen column-major [k,n] (ld k) and X' = X seen column-major [k,m] (ld k). */
    cuda_gemm_shape s = {
        .dtype = dt, .trans_a = 1, .trans_b = 0,
        .m = n, .n = m, .k = k,
        .lda = k, .ldb = k, .ldc = n,
        .batch = 1, .stride_a = 0, .stride_b = 0, .stride_c = 0,
        .align_a = 256, .align_b = 256, .align_c = 256,
    };
    return s;
}

cuda_gemm_shape cuda_gemm_dgrad_shape(pdbx_dtype dt, int64_t m, int64_t n, int64_t k)
{
    /* dX'[k,m] = W'[k,n] dY'[n,m]: W [n,k] row-major is column-major [k,n] (ld k), dY [m,n]
     * is [n,m] (ld n), dX [m,k] is [k,m] (ld k); no transposes. */
    cuda_gemm_shape s = {
        .dtype = dt, .trans_a = 0, .trans_b = 0,
        .m = k, .n = m, .k = n,
        .lda = k, .ldb = n, .ldc = k,
        .batch = 1, .align_a = 256, .align_b = 256, .align_c = 256,
    };
    return s;
}

cuda_gemm_shape cuda_gemm_wgrad_shape(pdbx_dtype dt, int64_t m, int64_t n, int64_t k)
{
    /* dW'[k,n] = X'[k,m] (dY'[n,m])^T: X [m,k] is column-major [k,m] (ld k), dY [m,n] is
     * [n,m] (ld n) transposed, dW [n,k] (the weight's layout) is [k,n] (ld k), fp32. */
    cuda_gemm_shape s = {
        .dtype = dt, .trans_a = 0, .trans_b = 1,
        .m = k, .n = n, .k = m,
        .lda = k, .ldb = n, .ldc = k,
        .batch = 1, .align_a = 256, .align_b = 256, .align_c = 256,
        .c_fp32 = 1,
    };
    return s;
}

uint32_t cuda_gemm_ptr_align(const void *p)
{
    uintptr_t v = (uintptr_t)p;
    uint32_t a = 256;
    while (a > 1 && v % a != 0)
        a /= 2;
    return a;
}

static int shape_equal(const cuda_gemm_shape *x, const cuda_gemm_shape *y)
{
    return x->dtype == y->dtype && x->trans_a == y->trans_a && x->trans_b == y->trans_b &&
           x->m == y->m && x->n == y->n && x->k == y->k && x->lda == y->lda && x->ldb == y->ldb &&
           x->ldc == y->ldc && x->batch == y->batch && x->stride_a == y->stride_a &&
           x->stride_b == y->stride_b && x->stride_c == y->stride_c && x->align_a == y->align_a &&
           x->align_b == y->align_b && x->align_c == y->align_c && x->c_fp32 == y->c_fp32 &&
           x->bias == y->bias;
}

int64_t cuda_gemm_bias_elems(const cuda_gemm_shape *s)
{
    return s->bias ? s->m : 0;
}

/* A bias is added over a plain GEMM's C only (cuda_gemm.h): 0, or -1 with the reason. */
static int bias_ok(const cuda_gemm_shape *s, char *err, size_t errlen)
{
    if (!s->bias || (s->batch == 1 && s->ldc == s->m && !s->c_fp32))
        return 0;
    snprintf(err, errlen, "cuda gemm: a bias on a %s GEMM (batch %d, ldc %lld, m %lld; allowed: a "
             "plain GEMM in the dtype with ldc == m)", s->c_fp32 ? "fp32-output" : "batched or strided",
             (int)s->batch, (long long)s->ldc, (long long)s->m);
    return -1;
}

static cudaDataType_t data_type(pdbx_dtype dt)
{
    switch (dt) {
    case PDBX_DTYPE_BF16: return CUDA_R_16BF;
    case PDBX_DTYPE_FP16: return CUDA_R_16F;
    default: return CUDA_R_32F;
    }
}

static const char *dtype_str(pdbx_dtype dt)
{
    return dt == PDBX_DTYPE_BF16 ? "bf16" : dt == PDBX_DTYPE_FP16 ? "fp16" : "fp32";
}

int cuda_gemm_compute_type(pdbx_dtype dt, pdbx_fp32_math fp32_math)
{
    return dt == PDBX_DTYPE_FP32 && fp32_math == PDBX_FP32_MATH_TF32 ? (int)CUBLAS_COMPUTE_32F_FAST_TF32
                                                                      : (int)CUBLAS_COMPUTE_32F;
}

static int fits_int(int64_t v, const char *what, const cuda_gemm_shape *s, char *err, size_t errlen)
{
    if (v >= 0 && v <= INT_MAX)
        return 0;
    snprintf(err, errlen, "cublasGemmEx: %s %lld of the %s GEMM m=%lld n=%lld k=%lld does not fit "
             "cuBLAS's int (allowed: 0..%d; gemm_api cublaslt takes 64-bit sizes)", what, (long long)v,
             dtype_str(s->dtype), (long long)s->m, (long long)s->n, (long long)s->k, INT_MAX);
    return -1;
}

int cuda_gemm_ex_args_for(const cuda_gemm_shape *s, pdbx_fp32_math fp32_math, cuda_gemm_ex_args *out,
                          char *err, size_t errlen)
{
    const struct { int64_t v; const char *what; } dims[] = {
        {s->m, "m"}, {s->n, "n"}, {s->k, "k"}, {s->lda, "lda"}, {s->ldb, "ldb"}, {s->ldc, "ldc"},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (fits_int(dims[i].v, dims[i].what, s, err, errlen) != 0)
            return -1;
    if (bias_ok(s, err, errlen) != 0)
        return -1;
    memset(out, 0, sizeof *out);
    out->bias = s->bias;
    out->transa = s->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    out->transb = s->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    out->m = (int)s->m;
    out->n = (int)s->n;
    out->k = (int)s->k;
    out->lda = (int)s->lda;
    out->ldb = (int)s->ldb;
    out->ldc = (int)s->ldc;
    out->batch = s->batch;
    out->stride_a = s->stride_a;
    out->stride_b = s->stride_b;
    out->stride_c = s->stride_c;
    out->a_type = out->b_type = (int)data_type(s->dtype);
    out->c_type = s->c_fp32 ? (int)CUDA_R_32F : (int)data_type(s->dtype);
    out->compute_type = cuda_gemm_compute_type(s->dtype, fp32_math);
    return 0;
}

static int layout_create(cublasLtMatrixLayout_t *l, cudaDataType_t t, int64_t rows, int64_t cols,
                         int64_t ld, int32_t batch, int64_t stride, char *err, size_t errlen)
{
    int rc = -1;
    LT_TRY("cublasLtMatrixLayoutCreate", cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows,
                                                                     (uint64_t)cols, ld));
    if (batch > 1) {
        LT_TRY("cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)",
               cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                                sizeof batch));
        LT_TRY("cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)",
               cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &stride, sizeof stride));
    }
    return 0;
fail:
    return rc;
}

/* The search preference: at most ws bytes of workspace, the shape's pointer alignments. */
static int pref_create(cublasLtMatmulPreference_t *pref, const cuda_gemm_shape *s, uint64_t ws,
                       char *err, size_t errlen)
{
    int rc = -1;
    LT_TRY("cublasLtMatmulPreferenceCreate", cublasLtMatmulPreferenceCreate(pref));
    LT_TRY("cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)",
           cublasLtMatmulPreferenceSetAttribute(*pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &ws, sizeof ws));
    /* D is written in place of C: it has C's alignment. */
    const struct {
        cublasLtMatmulPreferenceAttributes_t attr;
        const uint32_t *bytes;
        const char *call;
    } align[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &s->align_a,
         "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_A_BYTES)"},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &s->align_b,
         "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_B_BYTES)"},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &s->align_c,
         "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_C_BYTES)"},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &s->align_c,
         "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_D_BYTES)"},
    };
    for (size_t i = 0; i < sizeof align / sizeof align[0]; i++)
        LT_TRY(align[i].call, cublasLtMatmulPreferenceSetAttribute(*pref, align[i].attr,
                                                                   align[i].bytes,
                                                                   sizeof *align[i].bytes));
    return 0;
fail:
    return rc;
}

static int plan_build(cuda_gemm *g, const cuda_gemm_shape *s, cuda_gemm_plan **out, char *err,
                      size_t errlen)
{
    int rc = -1;
    cublasLtMatmulPreference_t pref = NULL;
    cuda_gemm_plan *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "cuda_gemm_plan: out of host memory");
        return -1;
    }
    p->shape = *s;
    cudaDataType_t t = data_type(s->dtype);
    cublasComputeType_t compute = (cublasComputeType_t)cuda_gemm_compute_type(s->dtype, g->fp32_math);
    if (g->api == PDBX_GEMM_API_CUBLAS) {
        /* cuBLAS picks its algorithm per call: the plan only checks the shape fits its ints */
        rc = cuda_gemm_ex_args_for(s, g->fp32_math, &p->ex, err, errlen);
        if (rc)
            goto fail;
        *out = p;
        return 0;
    }
    LT_TRY("cublasLtMatmulDescCreate", cublasLtMatmulDescCreate(&p->desc, compute, CUDA_R_32F));
    cublasOperation_t ta = s->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = s->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    LT_TRY("cublasLtMatmulDescSetAttribute(TRANSA)",
           cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_TRY("cublasLtMatmulDescSetAttribute(TRANSB)",
           cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (s->bias) {
        /* F.linear with a bias as PyTorch's cuBLASLt path runs it (gemm_and_bias): the bias
         * epilogue, the bias vector in the output's dtype; the heuristic then picks an
         * algorithm that has the epilogue. The pointer is set per execution. */
        rc = bias_ok(s, err, errlen);
        if (rc)
            goto fail;
        rc = -1;
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        cudaDataType_t bt = t;
        LT_TRY("cublasLtMatmulDescSetAttribute(EPILOGUE)",
               cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        LT_TRY("cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)",
               cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    }
    /* Layouts describe the matrices as stored: A is m x k, or k x m when transposed. */
    rc = layout_create(&p->a, t, s->trans_a ? s->k : s->m, s->trans_a ? s->m : s->k, s->lda,
                       s->batch, s->stride_a, err, errlen);
    if (rc)
        goto fail;
    rc = layout_create(&p->b, t, s->trans_b ? s->n : s->k, s->trans_b ? s->k : s->n, s->ldb,
                       s->batch, s->stride_b, err, errlen);
    if (rc)
        goto fail;
    rc = layout_create(&p->c, s->c_fp32 ? CUDA_R_32F : t, s->m, s->n, s->ldc, s->batch,
                       s->stride_c, err, errlen);
    if (rc)
        goto fail;
    rc = -1;
    rc = pref_create(&pref, s, g->workspace_bytes, err, errlen);
    if (rc)
        goto fail;
    rc = -1;
    cublasLtMatmulHeuristicResult_t best;
    int found = 0;
    memset(&best, 0, sizeof best);
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(g->handle, p->desc, p->a, p->b, p->c, p->c,
                                                       pref, 1, &best, &found);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
        if (st == CUBLAS_STATUS_SUCCESS)
            st = CUBLAS_STATUS_NOT_SUPPORTED;
        char call[192];
        snprintf(call, sizeof call,
                 "cublasLtMatmulAlgoGetHeuristic(%s m=%lld n=%lld k=%lld batch=%d, %d results)",
                 dtype_str(s->dtype), (long long)s->m, (long long)s->n, (long long)s->k,
                 (int)s->batch, found);
        rc = lt_fail(err, errlen, call, st);
        goto fail;
    }
    p->algo = best.algo;
    p->workspace_bytes = best.workspaceSize;
    cublasLtMatmulPreferenceDestroy(pref);
    *out = p;
    return 0;
fail:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    plan_free(p);
    return rc;
}

int cuda_gemm_plan_get(cuda_gemm *g, const cuda_gemm_shape *s, cuda_gemm_plan **out, char *err,
                       size_t errlen)
{
    for (size_t i = 0; i < g->nplans; i++)
        if (shape_equal(&g->plans[i]->shape, s)) {
            *out = g->plans[i];
            return 0;
        }
    if (g->nplans == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        cuda_gemm_plan **np = realloc(g->plans, cap * sizeof *np);
        if (!np) {
            snprintf(err, errlen, "cuda_gemm_plan: out of host memory");
            return -1;
        }
        g->plans = np;
        g->cap = cap;
    }
    cuda_gemm_plan *p = NULL;
    int rc = plan_build(g, s, &p, err, errlen);
    if (rc)
        return rc;
    g->plans[g->nplans++] = p;
    *out = p;
    return 0;
}

int cuda_gemm_exec(cuda_gemm *g, const cuda_gemm_plan *p, float alpha, const void *a, const void *b,
                   void *c, cudaStream_t stream, char *err, size_t errlen)
{
    return cuda_gemm_exec_beta(g, p, alpha, 0.0f, a, b, c, stream, err, errlen);
}

/* The GEMM of plan p as is (with the plan's bias epilogue, if any, on the pointer set last). */
static int gemm_run(cuda_gemm *g, const cuda_gemm_plan *p, float alpha, float beta, const void *a,
                    const void *b, void *c, cudaStream_t stream, char *err, size_t errlen);

int cuda_gemm_exec_bias(cuda_gemm *g, const cuda_gemm_plan *p, float alpha, const void *a,
                        const void *b, const void *bias, void *c, cudaStream_t stream, char *err,
                        size_t errlen)
{
    int rc = -1;
    if (!p->shape.bias || !bias) {
        snprintf(err, errlen, "cuda gemm: exec_bias on a plan %s", p->shape.bias ? "with a NULL bias"
                 : "without a bias epilogue");
        return -1;
    }
    if (g->api == PDBX_GEMM_API_CUBLAS) {
        /* cublasGemmEx has no epilogue: the GEMM, then the bias added over C seen row-major
         * [n rows, m cols] by ck_bias_add, both on the stream (one op's timed work) */
        rc = gemm_run(g, p, alpha, 0.0f, a, b, c, stream, err, errlen);
        if (rc)
            return rc;
        cudaError_t ce = ck_bias_add(c, bias, p->shape.n, p->shape.m, p->shape.dtype, stream);
        if (ce != cudaSuccess) {
            (void)cudaGetLastError();
            snprintf(err, errlen, "ck_bias_add failed: %s (%s)", cudaGetErrorName(ce), cudaGetErrorString(ce));
            return -1;
        }
        return 0;
    }
    LT_TRY("cublasLtMatmulDescSetAttribute(BIAS_POINTER)",
           cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    return gemm_run(g, p, alpha, 0.0f, a, b, c, stream, err, errlen);
fail:
    return rc;
}

int cuda_gemm_exec_beta(cuda_gemm *g, const cuda_gemm_plan *p, float alpha, float beta,
                        const void *a, const void *b, void *c, cudaStream_t stream, char *err,
                        size_t errlen)
{
    if (p->shape.bias) {   /* its epilogue would read whatever bias pointer was set last */
        snprintf(err, errlen, "cuda gemm: a plan with a bias epilogue runs through cuda_gemm_exec_bias");
        return -1;
    }
    return gemm_run(g, p, alpha, beta, a, b, c, stream, err, errlen);
}

static int gemm_run(cuda_gemm *g, const cuda_gemm_plan *p, float alpha, float beta, const void *a,
                    const void *b, void *c, cudaStream_t stream, char *err, size_t errlen)
{
    int rc = -1;
    if (g->api == PDBX_GEMM_API_CUBLAS) {
        const cuda_gemm_ex_args *x = &p->ex;
        BLAS_TRY("cublasSetStream", cublasSetStream(g->blas, stream));
        if (x->batch > 1)
            BLAS_TRY("cublasGemmStridedBatchedEx",
                     cublasGemmStridedBatchedEx(g->blas, (cublasOperation_t)x->transa,
                                                (cublasOperation_t)x->transb, x->m, x->n, x->k, &alpha,
                                                a, (cudaDataType_t)x->a_type, x->lda, x->stride_a, b,
                                                (cudaDataType_t)x->b_type, x->ldb, x->stride_b, &beta, c,
                                                (cudaDataType_t)x->c_type, x->ldc, x->stride_c, x->batch,
                                                (cublasComputeType_t)x->compute_type,
                                                CUBLAS_GEMM_DEFAULT_TENSOR_OP));
        else
            BLAS_TRY("cublasGemmEx",
                     cublasGemmEx(g->blas, (cublasOperation_t)x->transa, (cublasOperation_t)x->transb,
                                  x->m, x->n, x->k, &alpha, a, (cudaDataType_t)x->a_type, x->lda, b,
                                  (cudaDataType_t)x->b_type, x->ldb, &beta, c, (cudaDataType_t)x->c_type,
                                  x->ldc, (cublasComputeType_t)x->compute_type,
                                  CUBLAS_GEMM_DEFAULT_TENSOR_OP));
        return 0;
    }
    LT_TRY("cublasLtMatmul",
           cublasLtMatmul(g->handle, p->desc, &alpha, a, p->a, b, p->b, &beta, c, p->c, c, p->c,
                          &p->algo, g->workspace, p->workspace_bytes, stream));
    return 0;
fail:
    return rc;
}

const cuda_gemm_shape *cuda_gemm_plan_shape(const cuda_gemm_plan *p)
{
    return &p->shape;
}

size_t cuda_gemm_plan_count(const cuda_gemm *g)
{
    return g ? g->nplans : 0;
}

void cuda_gemm_version(char *buf, size_t len)
{
    size_t v = cublasLtGetVersion();
    /* cuBLAS 11.x encodes major*1000 + minor*100 + patch, 12.x and later major*10000 + ... */
    unsigned major, minor, patch;
    if (v >= 100000) {
        major = (unsigned)(v / 10000), minor = (unsigned)(v / 100 % 100), patch = (unsigned)(v % 100);
    } else {
        major = (unsigned)(v / 1000), minor = (unsigned)(v / 100 % 10), patch = (unsigned)(v % 100);
    }
    snprintf(buf, len, "cuBLASLt %u.%u.%u (cudart %zu)", major, minor, patch,
             cublasLtGetCudartVersion());
}

pdbx_fp32_math cuda_gemm_fp32_math(const cuda_gemm *g)
{
    return g->fp32_math;
}

pdbx_gemm_api cuda_gemm_api(const cuda_gemm *g)
{
    return g->api;
}
