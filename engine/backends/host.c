/* host.c: facts about the host read from /proc (host.h). */
#include "engine/backends/host.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* gcc says __SANITIZE_ADDRESS__, clang (the fuzz build) __has_feature(address_sanitizer) */
#if defined(__SANITIZE_ADDRESS__)
#define PDBX_HOST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PDBX_HOST_ASAN 1
#endif
#endif
#ifdef PDBX_HOST_ASAN
#include <sanitizer/asan_interface.h>
#endif

/* Two "Key: N kB" lines of a /proc file, in bytes (keys given with their colon); 0 when both
 * were found, else -1 with the values 0. */
static int proc_kb_pair(const char *path, const char *key1, const char *key2, double *v1,
                        double *v2)
{
    FILE *f = fopen(path, "r");
    *v1 = *v2 = 0;
    if (!f)
        return -1;
    char line[256];
    size_t n1 = strlen(key1), n2 = strlen(key2);
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (strncmp(line, key1, n1) == 0 && sscanf(line + n1, " %llu kB", &kb) == 1) {
            *v1 = (double)kb * 1024.0;
            found |= 1;
        } else if (strncmp(line, key2, n2) == 0 && sscanf(line + n2, " %llu kB", &kb) == 1) {
            *v2 = (double)kb * 1024.0;
            found |= 2;
        }
    }
    fclose(f);
    return found == 3 ? 0 : -1;
}

int pdbx_host_meminfo(uint64_t *available, uint64_t *total)
{
    double av, tot;
    int rc = proc_kb_pair("/proc/meminfo", "MemAvailable:", "MemTotal:", &av, &tot);
    *available = (uint64_t)av;
    *total = (uint64_t)tot;
    return rc;
}

int pdbx_host_rss(double *rss, double *hwm)
{
    return proc_kb_pair("/proc/self/status", "VmRSS:", "VmHWM:", rss, hwm);
}

int pdbx_host_rss_reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return -1;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

#ifdef PDBX_HOST_ASAN
/* ASan's layout (asan_mapping.h), from the shadow scale and offset it reports: address a has
 * its shadow at S(a) = (a >> scale) + offset; low memory [0, offset) has its shadow right above
 * it, [offset, S(offset)), high memory [S(top), top) right below it, [S(S(top)), S(top)), and
 * the gap between the two (the shadow's own shadow) is no one's memory. top, the end of user
 * space, is what ASan's GetMaxUserVirtualAddress finds: the power of two above a stack address.
 * The gap is left out: with protect_shadow_gap=0 (tests/e2e/cuda_gpu.sh) CUDA maps memory there. */
static void shadow_ranges(uintptr_t lo[2], uintptr_t hi[2])
{
    size_t scale = 0, offset = 0;
    __asan_get_shadow_mapping(&scale, &offset);
    uintptr_t stack = (uintptr_t)__builtin_frame_address(0), top = 1;
    while (top != 0 && top <= stack)
        top <<= 1;   /* 0 (wrapped) only where user space reaches the last address bit */
    uintptr_t high_shadow_end = ((top - 1) >> scale) + offset + 1;
    lo[0] = offset;
    hi[0] = ((uintptr_t)offset >> scale) + offset;
    lo[1] = (high_shadow_end >> scale) + offset;
    hi[1] = high_shadow_end;
}
#endif

int pdbx_host_shadow_rss(double *bytes)
{
    *bytes = 0;
#ifndef PDBX_HOST_ASAN
    return 0;
#else
    uintptr_t lo[2], hi[2];
    shadow_ranges(lo, hi);
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int in_shadow = 0;   /* the mapping whose fields are being read lies in the shadow */
    while (fgets(line, sizeof line, f)) {
        uintptr_t a, b;
        char perms[8];
        unsigned long long kb;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &a, &b, perms) == 3)
            in_shadow = (a < hi[0] && b > lo[0]) || (a < hi[1] && b > lo[1]);
        else if (in_shadow && strncmp(line, "Rss:", 4) == 0 && sscanf(line + 4, " %llu kB", &kb) == 1)
            *bytes += (double)kb * 1024.0;
    }
    fclose(f);
    return 0;
#endif
}

void pdbx_host_cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (colon) {
                colon++;
                while (*colon == ' ' || *colon == '\t')
                    colon++;
                colon[strcspn(colon, "\n")] = '\0';
                snprintf(buf, len, "%s", colon);
            }
            break;
        }
    }
    fclose(f);
}
