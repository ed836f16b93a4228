/* host.c: facts about the host read from /proc (host.h). */
#include "engine/backends/host.h"

#include <stdio.h>
#include <string.h>

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
