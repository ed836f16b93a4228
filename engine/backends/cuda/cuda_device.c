/* cuda_device.c: the device side of the cuda backend (cuda_backend.h): init and fini (device,
 * stream, events, GEMM handle, L2 flush buffer), what describes the device in run_start's env,
 * memory info, the comm buffer, the NCCL version and the probe pdbx-engine calls before it
 * picks the backend. */
#include "engine/backends/cuda/cuda_backend.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/backends/cuda/cuda_checks.h"
#include "engine/backends/cuda/cuda_gemm.h"
#include "engine/backends/cuda/cuda_kernels.h"

static const char *dtype_str(pdbx_dtype dt)
{
    return dt == PDBX_DTYPE_BF16 ? "bf16" : dt == PDBX_DTYPE_FP16 ? "fp16" : "fp32";
}

#define SPIN_US 100                   /* busy kernel before a start event (launch gap) */

/* ---- device ----------------------------------------------------------------------------- */

void cuda_dev_free(void *p)
{
    if (p)
        cudaFree(p);
}

void cuda_fini(pdbx_compute *c)
{
    if (!c)
        return;
    cuda_release(c);
    cuda_nvml_close(c);
    if (c->stream)
        cudaStreamSynchronize(c->stream);
    cuda_dev_free(c->comm_buf);
    cuda_dev_free(c->l2_flush);
    cuda_dev_free(c->checksum_dev);
    cuda_gemm_destroy(c->gemm);
    if (c->ev_start)
        cudaEventDestroy(c->ev_start);
    if (c->ev_stop)
        cudaEventDestroy(c->ev_stop);
    for (int k = 0; k < PDBX_SPAN_COUNT; k++)
        for (int e = 0; e < 2; e++)
            if (c->ev_span[k][e])
                cudaEventDestroy(c->ev_span[k][e]);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    free(c);
}

int cuda_init(const pdbx_compute_config *cfg, pdbx_compute **out, char *err, size_t errlen)
{
    int rc = -1;
    *out = NULL;
    pdbx_compute *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "cuda init: out of host memory");
        return -1;
    }
    if (cfg->dtype != PDBX_DTYPE_BF16 && cfg->dtype != PDBX_DTYPE_FP16 && cfg->dtype != PDBX_DTYPE_FP32) {
        snprintf(err, errlen, "cuda init: dtype %d (allowed: bf16, fp16, fp32)", (int)cfg->dtype);
        goto fail;
    }
    c->dtype = cfg->dtype;
    c->flush_l2 = cfg->flush_l2;
    c->flash_attention = cfg->flash_attention;
    c->local_rank = cfg->local_rank;
    c->world_rank = cfg->world_rank;
    CU_TRY("cudaGetDeviceCount", cudaGetDeviceCount(&c->device_count));
    if (c->device_count <= 0) {
        snprintf(err, errlen, "cuda init: no CUDA device (cudaGetDeviceCount returned 0)");
        rc = -1;
        goto fail;
    }
    char host[256] = "";
    if (gethostname(host, sizeof host) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    if (cuda_check_placement(cfg->local_size, c->device_count, host, err, errlen) != 0)
        goto fail;   /* ranks would share a GPU: refused, naming both counts */
    c->device = (cfg->local_rank < 0 ? 0 : cfg->local_rank) % c->device_count;
    CU_TRY("cudaSetDevice", cudaSetDevice(c->device));
    CU_TRY("cudaGetDeviceProperties", cudaGetDeviceProperties(&c->prop, c->device));
    snprintf(c->name, sizeof c->name, "%s", c->prop.name);
    CU_TRY("cudaDeviceGetAttribute(ClockRate)",
           cudaDeviceGetAttribute(&c->clock_khz, cudaDevAttrClockRate, c->device));
    CU_TRY("cudaDeviceGetAttribute(MemoryClockRate)",
           cudaDeviceGetAttribute(&c->mem_clock_khz, cudaDevAttrMemoryClockRate, c->device));
    CU_TRY("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    CU_TRY("cudaEventCreate(start)", cudaEventCreate(&c->ev_start));
    CU_TRY("cudaEventCreate(stop)", cudaEventCreate(&c->ev_stop));
    for (int k = 0; k < PDBX_SPAN_COUNT; k++)
        for (int e = 0; e < 2; e++)
            CU_TRY("cudaEventCreate(span)", cudaEventCreate(&c->ev_span[k][e]));
    CU_TRY("cudaMalloc(checksum)", cudaMalloc((void **)&c->checksum_dev, sizeof(double)));
    rc = cuda_gemm_create_modes(&c->gemm, cfg->fp32_math, cfg->gemm_api, err, errlen);
    if (rc)
        goto fail;
    rc = -1;
    if (c->flush_l2) {
        /* Twice the L2 so every line of the previous execution's data is evicted. */
        size_t l2 = c->prop.l2CacheSize > 0 ? (size_t)c->prop.l2CacheSize : ((size_t)64 << 20);
        c->l2_flush_bytes = 2 * l2;
        rc = cuda_alloc_buf(&c->l2_flush, c->l2_flush_bytes, "L2 flush buffer", err, errlen);
        if (rc)
            goto fail;
        rc = -1;
    }
    c->spin_ns = SPIN_US * 1000LL;
    *out = c;
    return 0;
fail:
    cuda_fini(c);
    return rc;
}

const char *cuda_device_name(pdbx_compute *c)
{
    return c ? c->name : "none";
}

void cuda_device_id(pdbx_compute *c, int *index, char *uuid, size_t len)
{
    *index = c ? c->device : -1;
    if (!len)
        return;
    uuid[0] = '\0';
    if (!c)
        return;
    /* nvidia-smi's spelling: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx */
    const unsigned char *b = (const unsigned char *)c->prop.uuid.bytes;
    snprintf(uuid, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

int cuda_mem_info(pdbx_compute *c, uint64_t *free_bytes, uint64_t *total_bytes)
{
    size_t f = 0, t = 0;
    (void)c;
    if (cudaMemGetInfo(&f, &t) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    *free_bytes = f;
    *total_bytes = t;
    return 0;
}

static void json_set(cJSON *obj, const char *key, cJSON *item)
{
    if (!item)
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_AddItemToObject(obj, key, item);
}

static void version_str(int v, char *buf, size_t len)   /* 13000 -> "13.0" */
{
    snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

int cuda_describe(pdbx_compute *c, cJSON *env)
{
    int drv = 0, rt = 0;
    char drv_s[32], rt_s[32], blas[96], nccl[64], pci[32] = "", buf[160];
    if (cudaDriverGetVersion(&drv) != cudaSuccess || cudaRuntimeGetVersion(&rt) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    if (cudaDeviceGetPCIBusId(pci, (int)sizeof pci, c->device) != cudaSuccess)
        (void)cudaGetLastError();
    version_str(drv, drv_s, sizeof drv_s);
    version_str(rt, rt_s, sizeof rt_s);
    cuda_gemm_version(blas, sizeof blas);
    cuda_nccl_version(nccl, sizeof nccl);
    cJSON *gpu = cJSON_CreateObject();
    if (!gpu)
        return -1;
    cJSON_AddStringToObject(gpu, "name", c->name);
    cJSON_AddNumberToObject(gpu, "index", c->device);
    cJSON_AddNumberToObject(gpu, "count", c->device_count);
    cJSON_AddStringToObject(gpu, "pci_bus_id", pci);
    snprintf(buf, sizeof buf, "%d.%d", c->prop.major, c->prop.minor);
    cJSON_AddStringToObject(gpu, "compute_capability", buf);
    cJSON_AddNumberToObject(gpu, "memory_bytes", (double)c->prop.totalGlobalMem);
    cJSON_AddNumberToObject(gpu, "sm_count", c->prop.multiProcessorCount);
    cJSON_AddNumberToObject(gpu, "clock_mhz", c->clock_khz / 1000.0);
    cJSON_AddNumberToObject(gpu, "memory_clock_mhz", c->mem_clock_khz / 1000.0);
    cJSON_AddNumberToObject(gpu, "memory_bus_bits", c->prop.memoryBusWidth);
    cJSON_AddNumberToObject(gpu, "l2_bytes", c->prop.l2CacheSize);
    cJSON_AddStringToObject(gpu, "driver", drv_s);
    cJSON_AddStringToObject(gpu, "runtime", rt_s);
    cJSON_AddStringToObject(gpu, "cublaslt", blas);
    cJSON_AddNumberToObject(gpu, "cublaslt_workspace_bytes", (double)CUDA_GEMM_WORKSPACE_BYTES);
    cJSON_AddStringToObject(gpu, "nccl", nccl);
    cJSON_AddStringToObject(gpu, "dtype", dtype_str(c->dtype));
    /* spec flash_attention: the fused forward and backward (docs/cuda.md) */
    cJSON_AddStringToObject(gpu, "attention_kernel", c->flash_attention ? "flash" : "unfused");
    cJSON_AddStringToObject(gpu, "attention",
                            c->flash_attention
                                ? "fwd: own flash kernel (online softmax, 64x64 tiles, causal "
                                  "tiles skipped); bwd: own FlashAttention-2 kernel (P recomputed "
                                  "per 32x32 tile from the saved log-sum-exp, dQ by fp32 atomics)"
                                : "cublaslt strided-batched QK^T, causal softmax, PV");
    cJSON_AddStringToObject(gpu, "attention_bwd_kernel", c->flash_attention ? "flash" : "unfused");
    cJSON_AddStringToObject(gpu, "attention_kv", "unfused: cublaslt strided-batched QK^T over the "
                            "cache, softmax masked after the cached prefix, PV (GQA in place)");
    cJSON_AddStringToObject(gpu, "rope", "ck_rope: rotate-half on q and k in place over each head's "
                            "rotated dims (all, or rotary_pct's), fp32 cos/sin table of the point's "
                            "positions (theta 10000; docs/cuda.md)");
    cJSON_AddStringToObject(gpu, "timer", c->flush_l2
                            ? "cuda events, L2 flushed, then a 100 us %globaltimer spin, before each execution"
                            : "cuda events after a 100 us %globaltimer spin kernel");
    cJSON_AddStringToObject(gpu, "weights_l2", "rotated copies of the profiled layers' weights, "
                            ">= 3x l2_bytes, one copy per execution of an op on a layer");
    json_set(env, "gpu", gpu);
    json_set(env, "device", cJSON_CreateString(c->name));
    snprintf(buf, sizeof buf, "CUDA runtime %s, driver %s", rt_s, drv_s);
    json_set(env, "cuda", cJSON_CreateString(buf));
    json_set(env, "nccl", cJSON_CreateString(nccl));
    json_set(env, "blas", cJSON_CreateString(blas));
    /* what the GEMMs ran as (docs/cuda.md, "Math modes and GEMM API"); fp32_math matters to
     * fp32 runs only (bf16/fp16 accumulate in fp32 either way) */
    json_set(env, "fp32_math", cJSON_CreateString(cuda_gemm_fp32_math(c->gemm) == PDBX_FP32_MATH_TF32
                                                  ? "tf32" : "ieee"));
    json_set(env, "gemm_api", cJSON_CreateString(cuda_gemm_api(c->gemm) == PDBX_GEMM_API_CUBLAS
                                                 ? "cublas" : "cublaslt"));
    return 0;
}

int cuda_comm_buffer(pdbx_compute *c, size_t bytes, void **buf, char *err, size_t errlen)
{
    int rc = -1;
    if (bytes == 0) {   /* backend.h: 0 frees the buffer (the engine, after each config) */
        if (c->comm_buf) {
            cudaStreamSynchronize(c->stream);
            cuda_dev_free(c->comm_buf);
        }
        c->comm_buf = NULL;
        c->comm_bytes = 0;
        *buf = NULL;
        return 0;
    }
    if (bytes < 256)
        bytes = 256;
    if (c->comm_buf && c->comm_bytes >= bytes) {
        *buf = c->comm_buf;
        return 0;
    }
    if (c->comm_buf) {
        cudaStreamSynchronize(c->stream);
        cudaFree(c->comm_buf);
        c->comm_buf = NULL;
        c->comm_bytes = 0;
    }
    rc = cuda_alloc_buf(&c->comm_buf, bytes, "collective buffer", err, errlen);
    if (rc)
        return rc;
    c->comm_bytes = bytes;
    /* Real values in the run's dtype, the one the TP and PP collectives read: an fp32 fill
     * read as bf16/fp16 made about 3% Inf/NaN of the low halves' bit patterns. The DP
     * all-reduce reads the same bytes as fp32: each pair of 16-bit values in [-1, 1) is an
     * fp32 whose high half is the second value, so finite and of its magnitude
     * (tests/cuda/test_cuda_checks.c checks both readings of the fill). */
    const size_t es = c->dtype == PDBX_DTYPE_FP32 ? 4 : 2;
    CU_TRY("fill(collective buffer)", ck_fill_uniform(c->comm_buf, bytes / es, c->dtype,
                                                      FILL_SEED, -1.0f, 1.0f, c->stream));
    CU_TRY("cudaStreamSynchronize(collective buffer)", cudaStreamSynchronize(c->stream));
    *buf = c->comm_buf;
    return 0;
fail:
    return rc;
}

#ifdef PDBX_CUDA_NO_NCCL   /* built where nccl.h is missing: no comm backend of our own */
void cuda_nccl_version(char *buf, size_t len)
{
    snprintf(buf, len, "none");
}
#endif

/* ---- probe ------------------------------------------------------------------------------ */

int cuda_probe(char *why, size_t len)
{
    /* The CUDA runtime loads the driver (libcuda.so.1) itself; trying first names the cause. */
    void *drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!drv) {
        const char *e = dlerror();
        snprintf(why, len, "no NVIDIA driver: libcuda.so.1 cannot be loaded (%s)", e ? e : "?");
        return 0;
    }
    dlclose(drv);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(why, len, "CUDA driver present but unusable: cudaGetDeviceCount failed: %s (%s)",
                 cudaGetErrorName(e), cudaGetErrorString(e));
        return 0;
    }
    if (n <= 0) {
        snprintf(why, len, "no CUDA device: the driver reports 0 devices");
        return 0;
    }
    int drv_v = 0;
    if (cudaDriverGetVersion(&drv_v) != cudaSuccess)
        (void)cudaGetLastError();
    snprintf(why, len, "%d CUDA device%s, driver %d.%d", n, n == 1 ? "" : "s", drv_v / 1000,
             (drv_v % 1000) / 10);
    return 1;
}

