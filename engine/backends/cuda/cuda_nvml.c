/* cuda_nvml.c: the device's clock, temperature and throttle reasons (backend.h, device_noise)
 * through NVML, loaded at run time (dlopen libnvidia-ml.so.1) so the backend needs no NVML at
 * build time. Not yet implemented: always "cannot sample". */
#include "engine/backends/cuda/cuda_backend.h"

int cuda_device_noise(pdbx_compute *c, pdbx_device_noise *out)
{
    (void)c;
    (void)out;
    return -1;
}
