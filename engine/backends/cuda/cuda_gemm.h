/* cuda_gemm.h: GEMMs of the cuda backend through cuBLASLt, set up the way PyTorch sets up its
 * cuBLASLt matmuls: one handle, a 32 MiB workspace (PyTorch's default on Hopper), a matmul
 * descriptor and matrix layouts per shape, the first algorithm cublasLtMatmulAlgoGetHeuristic
 * returns for the shape, its alignments and the workspace limit, cached per shape. With
 * gemm_api cublas the same shapes run through cuBLAS instead: cublasGemmEx (strided batches:
 * cublasGemmStridedBatchedEx), what PyTorch's bias-free F.linear and bmm call unless
 * TORCH_BLAS_PREFER_CUBLASLT is set, on the same workspace, with the same operands, layouts
 * and compute type (docs/cuda.md, "Math modes and GEMM API").
 *
 * Contract:
 *  - Shapes use cuBLASLt's column-major conventions (m, n, k, transposes, leading dimensions,
 *    strided batches). cuda_gemm_linear_shape() builds the shape of a row-major nn.Linear:
 *    Y[m,n] = X[m,k] W^T with the weight stored [n,k] (out, in), PyTorch's F.linear layout
 *    (cuBLAS TN, the call torch.matmul(x, w.t()) makes).
 *  - dtype bf16 and fp16 compute in fp32 (CUBLAS_COMPUTE_32F); fp32 computes in IEEE fp32
 *    (CUBLAS_COMPUTE_32F, PyTorch's default allow_tf32=False) with fp32_math ieee, on TF32
 *    tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32, allow_tf32=True) with fp32_math tf32.
 *  - cuda_gemm_plan() does all host-side work (descriptors, heuristic) and caches it, so a
 *    timed cuda_gemm_exec() only enqueues cublasLtMatmul on the stream.
 *  - Errors: -1 with "cublasLtXxx(...) failed: CUBLAS_STATUS_... (text)" in err; PDBX_EOOM
 *    when the workspace cannot be allocated.
 */
#ifndef PDBX_CUDA_GEMM_H
#define PDBX_CUDA_GEMM_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "engine/plan/plan.h"

#define CUDA_GEMM_WORKSPACE_BYTES ((size_t)32 << 20)

typedef struct cuda_gemm cuda_gemm;
typedef struct cuda_gemm_plan cuda_gemm_plan;

typedef struct {
    pdbx_dtype dtype;
    int trans_a, trans_b;         /* op(A) = A^T when set (column-major view) */
    int64_t m, n, k;              /* C[m,n] = op(A)[m,k] op(B)[k,n], column-major */
    int64_t lda, ldb, ldc;
    int32_t batch;                /* 1 for a plain GEMM */
    int64_t stride_a, stride_b, stride_c;   /* elements between batch members */
    uint32_t align_a, align_b, align_c;     /* byte alignment of the pointers (and offsets) */
    int c_fp32;                   /* C (and D) fp32 whatever the dtype: a wgrad into main_grad */
    /* 1: C += a bias vector of m elements (cuda_gemm_bias_elems) in the dtype, broadcast over
     * C's n columns: row-major Y[rows, out] + b, F.linear(x, W, b). cublaslt: the plan's
     * epilogue CUBLASLT_EPILOGUE_BIAS (BIAS_DATA_TYPE the dtype; the pointer set per
     * execution, cuda_gemm_exec_bias); cublas: cublasGemmEx has no epilogue, so
     * cuda_gemm_exec_bias enqueues ck_bias_add over C right after it, on the same stream
     * (timed with it). Only a plain GEMM (batch 1, ldc == m, C in the dtype) takes a bias. */
    int bias;
} cuda_gemm_shape;

/* fp32_math ieee, gemm_api cublaslt (the spec's defaults). */
int cuda_gemm_create(cuda_gemm **out, char *err, size_t errlen);
/* The math mode of fp32 GEMMs and the library every GEMM of this handle runs through. */
int cuda_gemm_create_modes(cuda_gemm **out, pdbx_fp32_math fp32_math, pdbx_gemm_api api, char *err,
                           size_t errlen);

/* The compute type of a GEMM of dtype dt (a cublasComputeType_t; int so this header needs no
 * cuBLAS header): CUBLAS_COMPUTE_32F, or CUBLAS_COMPUTE_32F_FAST_TF32 for fp32 with tf32. */
int cuda_gemm_compute_type(pdbx_dtype dt, pdbx_fp32_math fp32_math);

/* The arguments of the cublasGemmEx / cublasGemmStridedBatchedEx call of a shape: the same
 * column-major operands cuBLASLt gets (F.linear's TN: transa T, transb N, m = out features,
 * n = rows, k = in features), as int (cublasOperation_t, cudaDataType_t, cublasComputeType_t). */
typedef struct {
    int transa, transb;
    int m, n, k, lda, ldb, ldc;
    long long stride_a, stride_b, stride_c;
    int batch;
    int a_type, b_type, c_type, compute_type;
    int bias;                     /* shape.bias: ck_bias_add over C [n rows, m cols] after the call */
} cuda_gemm_ex_args;
/* 0, or -1 when a dimension does not fit cuBLAS's int (the message names it). */
int cuda_gemm_ex_args_for(const cuda_gemm_shape *s, pdbx_fp32_math fp32_math, cuda_gemm_ex_args *out,
                          char *err, size_t errlen);
void cuda_gemm_destroy(cuda_gemm *g);
/* The elements of a shape's bias vector: m (the out features of a linear shape: the rows of
 * the column-major C, so every row-major output row gets the whole vector); 0 without bias. */
int64_t cuda_gemm_bias_elems(const cuda_gemm_shape *s);

/* Row-major Y[m,n] = X[m,k] W[n,k]^T, pointers 256-byte aligned (cudaMalloc). */
cuda_gemm_shape cuda_gemm_linear_shape(pdbx_dtype dt, int64_t m, int64_t n, int64_t k);
/* The backward of that linear layer (Megatron's two GEMMs, row-major):
 *   dgrad  dX[m,k]  = dY[m,n] W[n,k]          A = W, B = dY, C = dX (dtype)
 *   wgrad  dW[n,k] += dY[m,n]^T X[m,k]        A = X, B = dY, C = dW (fp32, run with beta 1)
 * (column-major: dX' = W' dY', and dW' = X' dY'^T, the activation operand transposed). */
cuda_gemm_shape cuda_gemm_dgrad_shape(pdbx_dtype dt, int64_t m, int64_t n, int64_t k);
cuda_gemm_shape cuda_gemm_wgrad_shape(pdbx_dtype dt, int64_t m, int64_t n, int64_t k);
/* Largest power of two <= 256 dividing the address (cuBLASLt alignment preference). */
uint32_t cuda_gemm_ptr_align(const void *p);

/* Finds or builds the cached plan of a shape (descriptors + heuristic algorithm). */
int cuda_gemm_plan_get(cuda_gemm *g, const cuda_gemm_shape *s, cuda_gemm_plan **out,
                       char *err, size_t errlen);
/* C = alpha * op(A) op(B) (beta 0) on stream; A, B, C must honour the plan's alignments. */
int cuda_gemm_exec(cuda_gemm *g, const cuda_gemm_plan *p, float alpha, const void *a,
                   const void *b, void *c, cudaStream_t stream, char *err, size_t errlen);
/* C = alpha * op(A) op(B) + bias (broadcast over C's columns, cuda_gemm_shape.bias) on stream:
 * the plan's shape must have bias set (-1 otherwise, and for a NULL bias). */
int cuda_gemm_exec_bias(cuda_gemm *g, const cuda_gemm_plan *p, float alpha, const void *a,
                        const void *b, const void *bias, void *c, cudaStream_t stream, char *err,
                        size_t errlen);
/* C = alpha * op(A) op(B) + beta * C (beta 1: accumulate, fp32 in the compute type). */
int cuda_gemm_exec_beta(cuda_gemm *g, const cuda_gemm_plan *p, float alpha, float beta,
                        const void *a, const void *b, void *c, cudaStream_t stream, char *err,
                        size_t errlen);

/* The shape a plan was built for. */
const cuda_gemm_shape *cuda_gemm_plan_shape(const cuda_gemm_plan *p);
/* Number of cached plans (for tests and the run environment). */
size_t cuda_gemm_plan_count(const cuda_gemm *g);
/* "cuBLASLt 13.0.0.19 (cudart 13000)" */
void cuda_gemm_version(char *buf, size_t len);
/* The handle's math mode and GEMM API as run_start's env records them ("ieee", "cublaslt"). */
pdbx_fp32_math cuda_gemm_fp32_math(const cuda_gemm *g);
pdbx_gemm_api cuda_gemm_api(const cuda_gemm *g);

#endif
