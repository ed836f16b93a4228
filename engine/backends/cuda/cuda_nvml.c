/* cuda_nvml.c: the device's SM clock, temperature and clock-event (throttle) reasons
 * (backend.h, device_noise) through NVML, loaded at run time (dlopen libnvidia-ml.so.1, which
 * comes with the driver, not the toolkit) so that the backend needs no NVML at build time and
 * runs where it is missing: device_noise then answers -1 and the engine records no gpu figures.
 *
 * NVML is opened on the first sample and closed by cuda_fini (cuda_nvml_close). The device is
 * the one the backend runs on: found by its UUID (cuda_device_id), else by its PCI bus id (a
 * MIG instance's UUID is not an NVML device: the bus id gives the physical GPU, whose clock and
 * temperature are the ones that matter). Never by index: NVML's order is not CUDA's
 * (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER), and a wrong guess would record another GPU.
 * The NVML types and the few prototypes are declared here (the toolkit here has no nvml.h);
 * they are NVML's stable C ABI.
 */
#include "engine/backends/cuda/cuda_backend.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the NVML ABI used (nvml.h) ---------------------------------------------------------- */
typedef int nvmlReturn_t;               /* enum; NVML_SUCCESS = 0 */
typedef struct nvmlDevice_st *nvmlDevice_t;
#define NVML_SUCCESS 0
#define NVML_CLOCK_SM 1                 /* nvmlClockType_t */
#define NVML_TEMPERATURE_GPU 0          /* nvmlTemperatureSensors_t */
/* nvmlClocksEventReasonGpuIdle: set whenever the GPU has nothing to run, as between two cells
 * when the sample is taken; it says nothing about the measurement, so it is not recorded. */
#define NVML_CLOCKS_EVENT_REASON_GPU_IDLE 0x1ULL

typedef nvmlReturn_t (*nvml_init_fn)(void);
typedef nvmlReturn_t (*nvml_shutdown_fn)(void);
typedef nvmlReturn_t (*nvml_by_str_fn)(const char *key, nvmlDevice_t *dev);
typedef nvmlReturn_t (*nvml_clock_fn)(nvmlDevice_t dev, int type, unsigned int *mhz);
typedef nvmlReturn_t (*nvml_temp_fn)(nvmlDevice_t dev, int sensor, unsigned int *c);
typedef nvmlReturn_t (*nvml_reasons_fn)(nvmlDevice_t dev, unsigned long long *reasons);

struct cuda_nvml {
    void *dl;
    nvml_shutdown_fn shutdown;
    nvml_clock_fn clock;
    nvml_temp_fn temp;
    nvml_reasons_fn reasons;          /* NULL when neither name is exported */
    nvmlDevice_t dev;
};

static void nvml_unload(struct cuda_nvml *n)
{
    if (!n)
        return;
    if (n->shutdown)
        n->shutdown();
    if (n->dl)
        dlclose(n->dl);
    free(n);
}

/* dlsym into a function pointer (memcpy: ISO C has no object-to-function pointer cast; the
 * registry does the same). */
#define LOAD(dst, name)                                 \
    do {                                                \
        void *s_ = dlsym(n->dl, (name));                \
        memcpy(&(dst), &s_, sizeof(dst));               \
    } while (0)

/* Opens NVML and finds c's device; NULL when any step fails. */
static struct cuda_nvml *nvml_load(pdbx_compute *c)
{
    struct cuda_nvml *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->dl = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->dl)
        goto fail;
    nvml_init_fn init;
    nvml_by_str_fn by_uuid, by_bus;
    LOAD(init, "nvmlInit_v2");
    LOAD(by_uuid, "nvmlDeviceGetHandleByUUID");
    LOAD(by_bus, "nvmlDeviceGetHandleByPciBusId_v2");
    LOAD(n->clock, "nvmlDeviceGetClockInfo");
    LOAD(n->temp, "nvmlDeviceGetTemperature");
    LOAD(n->reasons, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!n->reasons)   /* the name before NVML 12.2 */
        LOAD(n->reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    nvml_shutdown_fn shutdown;
    LOAD(shutdown, "nvmlShutdown");
    if (!init || !shutdown || (!by_uuid && !by_bus) || init() != NVML_SUCCESS)
        goto fail;
    n->shutdown = shutdown;   /* from here on, nvml_unload balances the init */
    char uuid[96];
    int index;
    cuda_device_id(c, &index, uuid, sizeof uuid);
    int found = by_uuid && uuid[0] && by_uuid(uuid, &n->dev) == NVML_SUCCESS;
    char bus[32];
    if (!found && by_bus && cudaDeviceGetPCIBusId(bus, (int)sizeof bus, c->device) == cudaSuccess)
        found = by_bus(bus, &n->dev) == NVML_SUCCESS;
    (void)cudaGetLastError();
    if (!found)
        goto fail;
    return n;
fail:
    nvml_unload(n);
    return NULL;
}

int cuda_device_noise(pdbx_compute *c, pdbx_device_noise *out)
{
    if (!c)
        return -1;
    if (!c->nvml && !c->nvml_tried) {   /* one attempt per backend: a missing NVML stays missing */
        c->nvml_tried = 1;
        c->nvml = nvml_load(c);
    }
    struct cuda_nvml *n = c->nvml;
    if (!n)
        return -1;
    unsigned int mhz = 0, temp = 0;
    unsigned long long reasons = 0;
    out->sm_clock_mhz = n->clock && n->clock(n->dev, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS ? mhz : NAN;
    out->temp_c = n->temp && n->temp(n->dev, NVML_TEMPERATURE_GPU, &temp) == NVML_SUCCESS ? temp : NAN;
    out->throttle_reasons = n->reasons && n->reasons(n->dev, &reasons) == NVML_SUCCESS
                                ? (uint64_t)(reasons & ~NVML_CLOCKS_EVENT_REASON_GPU_IDLE) : 0;
    /* a device that answers nothing is no sample */
    return isfinite(out->sm_clock_mhz) || isfinite(out->temp_c) ? 0 : -1;
}

void cuda_nvml_close(pdbx_compute *c)
{
    if (!c)
        return;
    nvml_unload(c->nvml);
    c->nvml = NULL;
}
