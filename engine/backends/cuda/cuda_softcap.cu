/* cuda_softcap.cu: Gemma-2's final-logit soft-capping of lm_head's output (HF Gemma2's
 * final_logit_softcapping), forward and backward (contract in cuda_kernels.h). The cap's
 * arithmetic is cuda_attn_mask.h's (ck_softcap, ck_softcap_grad), host-tested in
 * tests/unit/test_cuda_attn_mask.c. */
#include "engine/backends/cuda/cuda_kernels.h"
#include "engine/backends/cuda/cuda_attn_mask.h"
#include "engine/backends/cuda/cuda_kernel_util.cuh"

using namespace ck;

namespace {

/* y[i] <- ck_softcap(y[i]) in place (grid-stride: fp32 arithmetic, rounded once) */
template <typename T>
__global__ void logit_softcap_kernel(T *y, int64_t n, float cap)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = from_f32<T>(ck_softcap(to_f32(y[i]), cap));
}

/* dx[i] <- dy[i] x ck_softcap_grad(y[i]) from the capped output y (dx may be dy) */
template <typename T>
__global__ void logit_softcap_bwd_kernel(const T *y, const T *dy, T *dx, int64_t n, float cap)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dx[i] = from_f32<T>(to_f32(dy[i]) * ck_softcap_grad(to_f32(y[i]), cap));
}

bool cap_on(float cap)
{
    return cap > 0.0f && cap < INFINITY;
}

} /* namespace */

extern "C" cudaError_t ck_logit_softcap(void *y, int64_t n, float cap, pdbx_dtype dt,
                                        cudaStream_t stream)
{
    if (n < 0)
        return cudaErrorInvalidValue;
    if (n == 0 || !cap_on(cap))
        return cudaSuccess;
    CK_DISPATCH(dt, T, logit_softcap_kernel<T><<<grid_for((size_t)n, 256), 256, 0, stream>>>(
                        static_cast<T *>(y), n, cap));
    return cudaGetLastError();
}

extern "C" cudaError_t ck_logit_softcap_bwd(const void *y, const void *dy, void *dx, int64_t n,
                                            float cap, pdbx_dtype dt, cudaStream_t stream)
{
    if (n < 0)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    if (!cap_on(cap))   /* no cap: the gradient passes as it is */
        return dx == dy ? cudaSuccess
                        : cudaMemcpyAsync(dx, dy, (size_t)n * (dt == PDBX_DTYPE_FP32 ? 4 : 2),
                                          cudaMemcpyDeviceToDevice, stream);
    CK_DISPATCH(dt, T, logit_softcap_bwd_kernel<T><<<grid_for((size_t)n, 256), 256, 0, stream>>>(
                        static_cast<const T *>(y), static_cast<const T *>(dy), static_cast<T *>(dx),
                        n, cap));
    return cudaGetLastError();
}
