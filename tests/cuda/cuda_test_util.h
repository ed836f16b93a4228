/* cuda_test_util.h: what the cuda backend's test binaries share (tests/cuda/test_cuda_*.c):
 * host number formats (bf16, fp16 rounding as the GPU's), a deterministic random source, device
 * tensors with a host copy, tolerance checks, the emulation of cuBLASLt's strided-batched GEMM
 * definition on the host, the textbook attention gradients, and the GPU set-up of the binaries
 * whose tests need a device (ct_gpu_open: a SKIP line and 77 without one). cmocka test code only.
 */
#ifndef PDBX_CUDA_TEST_UTIL_H
#define PDBX_CUDA_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "engine/backends/cuda/cuda_gemm.h"

/* The stream and GEMM cache of the GPU tests (set by ct_gpu_open). */
extern cudaStream_t stream;
extern cuda_gemm *gemm;

uint16_t f2bf(float f);   /* round to nearest even */
float bf2f(uint16_t b);
uint16_t f2h(float f);    /* IEEE half, round to nearest even */
float h2f(uint16_t h);
size_t esize(pdbx_dtype dt);
/* Rounds v to dt and stores it at index i of a host buffer of that type; and back. */
void ct_put(void *buf, size_t i, pdbx_dtype dt, float v);
float ct_get(const void *buf, size_t i, pdbx_dtype dt);
float round_to(pdbx_dtype dt, float v);
float urand(float lo, float hi);   /* deterministic xorshift */

/* Host buffer of n random values in [lo, hi) of type dt, and a device copy. */
typedef struct {
    void *host, *dev;
    size_t n;
    pdbx_dtype dt;
} tensor;
tensor ct_make(size_t n, pdbx_dtype dt, float lo, float hi);
void ct_download(tensor *t);   /* synchronises the stream first */
void ct_drop(tensor *t);
float ct_at(const tensor *t, size_t i);
double *host_of(const tensor *t);   /* malloc'd double copy of the host values */
/* |got - want| <= atol + rtol * |want| for every element, with the worst one in the message. */
void expect_close(const char *what, const tensor *got, const float *want, size_t n, float atol,
                  float rtol);
void expect_near(const char *what, const double *got, const double *want, size_t n, double tol);

/* cuBLASLt's definition, column-major: C[b](i,j) = alpha * sum_l op(A[b])(i,l) op(B[b])(l,j),
 * op(X)(i,l) = X[l + i*ld] when transposed, else X[i + l*ld]. */
void emulate_gemm_beta(const cuda_gemm_shape *s, double alpha, double beta, const double *A,
                       const double *B, double *C);
void emulate_gemm(const cuda_gemm_shape *s, double alpha, const double *A, const double *B,
                  double *C);
double *host_rand(size_t n);   /* n values in [-1, 1) */
/* The softmax kernels' definition over `rows` stacked [q_len, kv_len] score rows (row r sees
 * keys 0 .. ck_keys_visible(r) - 1, cuda_attn_mask.h; the others become 0), in place. */
void host_masked_softmax(double *scores, int64_t rows, int64_t q_len, int64_t kv_len);

/* Textbook gradients of L = sum dO * attention(q, k, v) (token row = pos * mbs + b; q head h
 * uses kv head h / group), in double; dq, dk, dv overwritten. */
void attention_bwd_ref(int64_t mbs, int64_t seq, int64_t heads, int64_t kv, int64_t d,
                       const double *q, const double *k, const double *v, const double *dO,
                       double *dq, double *dk, double *dv);

/* The GPU part's set-up: 0 with stream and gemm ready, else prints "SKIP: no CUDA device
 * (<reason>)" and returns 77 (the suite's skip); ct_gpu_close undoes it. With
 * PDBX_TEST_FILTER set (e.g. "test_flash*") only the matching tests run. */
int ct_gpu_open(void);
void ct_gpu_close(void);

/* A test binary with a host part and a GPU part (the arrays' lengths nh, ng: CT_COUNT): the
 * host group (name_host), then, when it passed, the GPU group (name) between ct_gpu_open and
 * ct_gpu_close; without a device the GPU part is skipped with the reason and a note printed and
 * the result is the host part's (0: the host checks are real tests, which the suite's 77 would
 * report as skipped); a device whose set-up failed is a failure. */
struct CMUnitTest;
int ct_run_host_then_gpu(const char *name, const struct CMUnitTest *host, size_t nh,
                         const struct CMUnitTest *gpu, size_t ng);
#define CT_COUNT(a) (sizeof(a) / sizeof((a)[0]))

#endif
