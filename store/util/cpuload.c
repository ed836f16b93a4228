/* cpuload.c: /proc/stat and /proc/loadavg read and turned into load figures (cpuload.h). */
#include "store/util/cpuload.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "store/util/clock.h"

/* /proc/stat's "cpu" lines: user nice system idle iowait irq softirq steal guest guest_nice.
 * Older kernels stop after fewer fields; the first four are always there. */
enum { F_USER, F_NICE, F_SYSTEM, F_IDLE, F_IOWAIT, F_IRQ, F_SOFTIRQ, F_STEAL, F_COUNT };

/* Parses the counters after "cpu" / "cpuN" at s; returns how many were read (0 on garbage). */
static int parse_fields(const char *s, unsigned long long f[F_COUNT])
{
    int n = 0;
    memset(f, 0, sizeof(unsigned long long) * F_COUNT);
    while (n < F_COUNT) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s < '0' || *s > '9')
            break;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0 || end == s)
            return 0;
        f[n++] = v;
        s = end;
    }
    return n;
}

int pdbx_cpu_snapshot_parse(const char *text, pdbx_cpu_snapshot *out)
{
    int have_all = 0, cpus = 0;
    unsigned long long f[F_COUNT];
    for (const char *line = text; line && *line;) {
        if (strncmp(line, "cpu", 3) == 0) {
            const char *p = line + 3;
            if (*p == ' ' || *p == '\t') {
                if (parse_fields(p, f) < 4)
                    return -1;
                have_all = 1;
                out->busy = f[F_USER] + f[F_NICE] + f[F_SYSTEM] + f[F_IRQ] + f[F_SOFTIRQ] + f[F_STEAL];
                out->steal = f[F_STEAL];
                out->total = out->busy + f[F_IDLE] + f[F_IOWAIT];
            } else if (*p >= '0' && *p <= '9') {
                cpus++;
            }
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    if (!have_all)
        return -1;
    out->cpus = cpus > 0 ? cpus : 1;   /* a "cpu" line without per-CPU lines: one CPU */
    return 0;
}

int pdbx_cpu_snapshot_read(pdbx_cpu_snapshot *out)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    /* the per-CPU lines come first; 64 KiB covers the cpu lines of 500+ CPUs, and a cut-off
     * tail (interrupt counts) is not read anyway */
    size_t cap = 64 * 1024;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return -1;
    }
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    double t = pdbx_mono_s();
    int rc = pdbx_cpu_snapshot_parse(buf, out);
    free(buf);
    if (rc == 0)
        out->t = t;
    return rc;
}

static double clamp(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

int pdbx_cpu_load_between(const pdbx_cpu_snapshot *a, const pdbx_cpu_snapshot *b,
                          double own_cpu_s, long ticks_per_s, pdbx_cpu_load *out)
{
    double wall = b->t - a->t;
    if (!(wall > 0) || ticks_per_s <= 0 || b->total <= a->total || b->busy < a->busy ||
        b->steal < a->steal)
        return -1;
    double cpus = b->cpus > 0 ? b->cpus : 1;
    double busy_ticks = (double)(b->busy - a->busy);
    double all_ticks = (double)(b->total - a->total);
    out->wall_s = wall;
    /* ticks are sampled (USER_HZ), so a short interval may show a tick more or less than
     * cpus * wall: clamp to what the machine can hold */
    out->busy_cores = clamp(busy_ticks / (double)ticks_per_s / wall, 0, cpus);
    out->own_cores = isfinite(own_cpu_s) && own_cpu_s > 0 ? own_cpu_s / wall : 0;
    out->other_busy = clamp(out->busy_cores - out->own_cores, 0, cpus);
    out->steal_pct = clamp(100.0 * (double)(b->steal - a->steal) / all_ticks, 0, 100);
    return 0;
}

int pdbx_cpu_is_busy(double other_busy, double steal_pct)
{
    return other_busy > PDBX_BUSY_OTHER_CORES || steal_pct > PDBX_BUSY_STEAL_PCT;
}

int pdbx_loadavg_read(double *load1)
{
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f)
        return -1;
    double v;
    int ok = fscanf(f, "%lf", &v) == 1 && isfinite(v) && v >= 0;
    fclose(f);
    if (!ok)
        return -1;
    *load1 = v;
    return 0;
}

double pdbx_self_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return NAN;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

int pdbx_online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 && n <= 1 << 20 ? (int)n : 1;
}

void pdbx_cpu_busy_line(const pdbx_cpu_load *l, int cores, double load1, char *line, size_t len)
{
    char steal[64] = "", load[48] = "";
    if (l->steal_pct > PDBX_BUSY_STEAL_PCT)
        snprintf(steal, sizeof steal, ", %.0f%% of CPU time stolen by the hypervisor", l->steal_pct);
    if (isfinite(load1))
        snprintf(load, sizeof load, ", load %.1f", load1);
    snprintf(line, len, "this machine is busy (%.1f of %d core%s used by other processes%s%s): "
             "measurements will be noisy; the run records it", l->other_busy, cores,
             cores == 1 ? "" : "s", steal, load);
}

int pdbx_cpu_busy_check(double seconds, char *line, size_t len)
{
    if (len)
        line[0] = '\0';
    pdbx_cpu_snapshot a, b;
    double own0 = pdbx_self_cpu_s();
    if (pdbx_cpu_snapshot_read(&a) != 0)
        return 0;
    pdbx_sleep_ms((long)(seconds * 1000.0));
    if (pdbx_cpu_snapshot_read(&b) != 0)
        return 0;
    pdbx_cpu_load l;
    if (pdbx_cpu_load_between(&a, &b, pdbx_self_cpu_s() - own0, sysconf(_SC_CLK_TCK), &l) != 0)
        return 0;
    if (!pdbx_cpu_is_busy(l.other_busy, l.steal_pct))
        return 0;
    double load1 = NAN;
    pdbx_loadavg_read(&load1);
    pdbx_cpu_busy_line(&l, pdbx_online_cores(), load1, line, len);
    return 1;
}
