/* host.c: facts about the host read from /proc (host.h). */
#include "engine/backends/host.h"

#include <stdio.h>
#include <string.h>

int pdbx_host_meminfo(uint64_t *available, uint64_t *total)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return -1;
    char line[256];
    unsigned long long kb;
    int found = 0;
    *available = *total = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            *available = (uint64_t)kb * 1024u;
            found |= 1;
        } else if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
            *total = (uint64_t)kb * 1024u;
            found |= 2;
        }
    }
    fclose(f);
    return found == 3 ? 0 : -1;
}

int pdbx_host_rss(double *rss, double *hwm)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    unsigned long long kb;
    int found = 0;
    *rss = *hwm = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmRSS: %llu kB", &kb) == 1) {
            *rss = (double)kb * 1024.0;
            found |= 1;
        } else if (sscanf(line, "VmHWM: %llu kB", &kb) == 1) {
            *hwm = (double)kb * 1024.0;
            found |= 2;
        }
    }
    fclose(f);
    return found == 3 ? 0 : -1;
}

int pdbx_host_rss_reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return -1;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
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
