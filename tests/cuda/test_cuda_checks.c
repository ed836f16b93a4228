/* test_cuda_checks.c: the cuda backend's pure checks (engine/backends/cuda/cuda_checks.c) on a
 * host without a GPU: which CUDA errors are sticky (the run must end failed) and the refusal
 * of more ranks on a node than GPUs. Built where the CUDA headers are (with the cuda backend);
 * links no CUDA library and makes no CUDA call. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "engine/backends/backend.h"
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cuda_checks.h"
#include "engine/backends/cuda/cuda_fill.h"
#include "engine/backends/cuda/cuda_memtally.h"
#ifndef PDBX_CUDA_NO_NCCL
#include "engine/comm/nccl/nccl_errors.h"
#endif

/* Every error CUDA 13's driver_types.h documents as leaving the process in an inconsistent
 * state ("the process must be terminated and relaunched"), and the uncorrectable hardware
 * errors. */
static void test_sticky_errors(void **state)
{
    (void)state;
    static const cudaError_t sticky[] = {
        cudaErrorIllegalAddress, cudaErrorLaunchTimeout, cudaErrorAssert,
        cudaErrorHardwareStackError, cudaErrorIllegalInstruction, cudaErrorMisalignedAddress,
        cudaErrorInvalidAddressSpace, cudaErrorInvalidPc, cudaErrorLaunchFailure,
        cudaErrorTensorMemoryLeak, cudaErrorMpsClientTerminated, cudaErrorExternalDevice,
        cudaErrorECCUncorrectable, cudaErrorNvlinkUncorrectable,
    };
    for (size_t i = 0; i < sizeof sticky / sizeof sticky[0]; i++)
        assert_int_equal(cuda_error_is_sticky(sticky[i]), 1);
}

/* Recoverable errors: an OOM (the point ends oom), bad arguments, a missing kernel image, a
 * launch asking too much: the context stays usable and the sweep goes on. */
static void test_recoverable_errors(void **state)
{
    (void)state;
    static const cudaError_t ok[] = {
        cudaSuccess, cudaErrorMemoryAllocation, cudaErrorInvalidValue,
        cudaErrorInvalidConfiguration, cudaErrorNoKernelImageForDevice,
        cudaErrorLaunchOutOfResources, cudaErrorNotReady, cudaErrorInvalidDevice,
        cudaErrorNoDevice, cudaErrorInsufficientDriver,
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        assert_int_equal(cuda_error_is_sticky(ok[i]), 0);
}

static void test_placement(void **state)
{
    (void)state;
    char err[512] = "";
    assert_int_equal(cuda_check_placement(2, 2, "node-a", err, sizeof err), 0);
    assert_int_equal(cuda_check_placement(1, 8, "node-a", err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(cuda_check_placement(3, 2, "node-a", err, sizeof err), -1);
    assert_non_null(strstr(err, "3 ranks on node node-a but 2 GPUs"));
    assert_int_equal(cuda_check_placement(2, 1, "gpu7", err, sizeof err), -1);
    assert_non_null(strstr(err, "2 ranks on node gpu7 but 1 GPU:"));
    /* no host name: still both counts */
    assert_int_equal(cuda_check_placement(4, 2, "", err, sizeof err), -1);
    assert_non_null(strstr(err, "4 ranks on node ? but 2 GPUs"));
}

/* The backend's tally of a point's cudaMalloc'd bytes: allocated buffers only (a NULL slot is
 * a buffer the point's ops do not use), every layer's weights in every copy of the L2
 * rotation, the gradients. Pointers are placeholders: nothing is dereferenced. */
static void test_point_alloc_tally(void **state)
{
    (void)state;
    static char mem[1];
    void *p = mem;
    struct cuda_point pt;
    memset(&pt, 0, sizeof pt);
    void *w[2 * W_COUNT] = { 0 };
    pt.d.layers = 2;
    pt.w = w;
    assert_true(cuda_point_alloc_bytes(NULL) == 0);
    assert_true(cuda_point_alloc_bytes(&pt) == 0);
    pt.buf[B_X] = p;
    pt.bytes[B_X] = 4096;
    pt.bytes[B_Q] = 999;            /* recorded but never allocated: not counted */
    pt.buf[B_LOGITS] = p;
    pt.bytes[B_LOGITS] = 1 << 20;
    w[W_Q] = w[W_COUNT + W_Q] = p;  /* q_proj on both layers */
    pt.wbytes[W_Q] = 8192;
    w[W_DOWN] = p;                  /* down_proj on layer 0 only (a partial prepare) */
    pt.wbytes[W_DOWN] = 100;
    pt.grad[G_X] = p;
    pt.gbytes[G_X] = 4096;
    /* 4096 + 1048576 + 2 * 8192 + 100 + 4096 */
    assert_true(cuda_point_alloc_bytes(&pt) == 1073252.0);
    /* the L2 rotation's copies are allocations too: a second copy of both layers' q_proj */
    void *w2[2 * 2 * W_COUNT] = { 0 };
    memcpy(w2, w, sizeof w);
    w2[2 * W_COUNT + W_Q] = w2[3 * W_COUNT + W_Q] = p;
    pt.w = w2;
    pt.wcopies = 2;
    assert_true(cuda_point_alloc_bytes(&pt) == 1073252.0 + 2 * 8192);
}

#ifndef PDBX_CUDA_NO_NCCL
/* NCCL's memory failures, in the words of its ncclGetLastError texts, are PDBX_EOOM (the point
 * ends `oom`); other failures stay errors. */
static void test_nccl_oom_mapping(void **state)
{
    (void)state;
    assert_int_equal(nccl_error_code(ncclUnhandledCudaError, "Cuda failure 2 'out of memory'"), PDBX_EOOM);
    assert_int_equal(nccl_error_code(ncclSystemError, "cudaMalloc failed: cudaErrorMemoryAllocation"),
                     PDBX_EOOM);
    assert_int_equal(nccl_error_code(ncclInternalError, "proxy: Out Of Memory"), PDBX_EOOM);
    assert_int_equal(nccl_error_code(ncclUnhandledCudaError, "Failed to CUDA calloc 4194304 bytes"),
                     PDBX_EOOM);
    assert_int_equal(nccl_error_code(ncclSystemError,
                                     "Call to cuMemCreate failed: CUDA_ERROR_OUT_OF_MEMORY"), PDBX_EOOM);
    assert_int_equal(nccl_error_code(ncclSystemError, "mmap: Cannot allocate memory"), PDBX_EOOM);
    /* not memory */
    assert_int_equal(nccl_error_code(ncclSystemError, "Connection refused"), -1);
    assert_int_equal(nccl_error_code(ncclInternalError, "invalid peer"), -1);
    assert_int_equal(nccl_error_code(ncclUnhandledCudaError,
                                     "Cuda failure 700 'an illegal memory access was encountered'"), -1);
    assert_int_equal(nccl_error_code(ncclUnhandledCudaError, NULL), -1);
    /* a usage error never is, whatever the text */
    assert_int_equal(nccl_error_code(ncclInvalidArgument, "out of memory"), -1);
    assert_int_equal(nccl_error_code(ncclInvalidUsage, "out of memory"), -1);
}
#endif

/* The comm buffer's fill (cuda_device.c: ck_fill_uniform in the run's dtype, values of
 * cuda_fill.h) read as every dtype a collective uses on it. Host rounding as the device's
 * __float2bfloat16_rn: round to nearest even on the upper half. */
static uint16_t bf16_rn(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

static int finite_as_bf16(uint16_t h)
{
    return ((h >> 7) & 0xFFu) != 0xFFu;    /* exponent all ones: Inf or NaN */
}

#define FILL_N 65536

static void test_comm_fill_dtypes(void **state)
{
    (void)state;
    static uint16_t half[FILL_N];
    static float full[FILL_N / 2];
    const uint64_t seed = FILL_SEED;
    /* a bf16 run's fill: finite as bf16 (TP, PP) and, pairs read as fp32, as fp32 (DP) */
    for (size_t i = 0; i < FILL_N; i++)
        half[i] = bf16_rn(ck_fill_value(seed, i, -1.0f, 2.0f));
    for (size_t i = 0; i < FILL_N; i++)
        assert_true(finite_as_bf16(half[i]));
    memcpy(full, half, sizeof full);
    for (size_t i = 0; i < FILL_N / 2; i++)
        assert_true(isfinite(full[i]) && fabsf(full[i]) <= 1.01f);
#ifdef __FLT16_MAX__
    /* an fp16 run's likewise */
    for (size_t i = 0; i < FILL_N; i++) {
        _Float16 h = (_Float16)ck_fill_value(seed, i, -1.0f, 2.0f);
        memcpy(&half[i], &h, sizeof h);
    }
    memcpy(full, half, sizeof full);
    for (size_t i = 0; i < FILL_N / 2; i++)
        assert_true(isfinite(full[i]) && fabsf(full[i]) <= 1.01f);
#endif
    /* the old fill, fp32 whatever the run: read as bf16, the low halves are arbitrary bit
     * patterns and some are Inf/NaN (the all-reduce then sums them) */
    for (size_t i = 0; i < FILL_N / 2; i++)
        full[i] = ck_fill_value(seed, i, -1.0f, 2.0f);
    memcpy(half, full, sizeof half);
    size_t bad = 0;
    for (size_t i = 0; i < FILL_N; i++)
        bad += !finite_as_bf16(half[i]);
    assert_true(bad > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sticky_errors),
        cmocka_unit_test(test_recoverable_errors),
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_point_alloc_tally),
        cmocka_unit_test(test_comm_fill_dtypes),
#ifndef PDBX_CUDA_NO_NCCL
        cmocka_unit_test(test_nccl_oom_mapping),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
