/* cpuload.h: how busy this machine's CPUs are, from /proc/stat and /proc/loadavg. The one
 * parser of those files: `pdbx run` (and the explorer's F5) read it for the warning before a
 * launch, pdbx-engine for each point's noise figures (engine/engine_noise.h).
 *
 * A snapshot holds the aggregate "cpu" line of /proc/stat as ticks (USER_HZ) with the
 * monotonic time it was read. Two snapshots and the CPU time the caller's own processes used
 * between them (getrusage, exact) give the figures of pdbx_cpu_load: the machine's busy time
 * as cores' worth, what of it is not ours ("other" processes), and the hypervisor's steal.
 * Reading never fails loudly: -1 and the caller records nothing.
 */
#ifndef PDBX_CPULOAD_H
#define PDBX_CPULOAD_H

#include <stddef.h>

/* The machine counts as busy (measurements noisy) when, during the interval:
 *  - other processes used more than half a core: a compute kernel that shares a core with
 *    another runnable process for even part of the time loses whole scheduler slices (ms),
 *    which shows as outliers and a wider CI; half a core is well above the background of an
 *    idle machine (daemons, the launcher: a few hundredths) and below one hog (a whole core);
 *  - the hypervisor stole more than 5% of the CPU time: on a VM the steal is time our vCPUs
 *    wanted to run but did not, invisible in /proc otherwise; a few percent is normal on a
 *    shared host, beyond 5% timings stretch by about as much. */
#define PDBX_BUSY_OTHER_CORES 0.5
#define PDBX_BUSY_STEAL_PCT 5.0

typedef struct {
    double t;                     /* pdbx_mono_s() when read */
    unsigned long long busy;      /* user+nice+system+irq+softirq+steal ticks, all CPUs
                                   * (guest time is inside user and nice already) */
    unsigned long long steal;
    unsigned long long total;     /* busy + idle + iowait */
    int cpus;                     /* cpuN lines: the CPUs those ticks are summed over */
} pdbx_cpu_snapshot;

typedef struct {
    double wall_s;                /* the interval (monotonic) */
    double busy_cores;            /* every process's CPU time / wall_s */
    double own_cores;             /* the caller's own processes' CPU time / wall_s */
    double other_busy;            /* busy_cores - own_cores, within [0, cpus] */
    double steal_pct;             /* steal ticks / all ticks, in % */
} pdbx_cpu_load;

/* Parses the text of /proc/stat (the "cpu " line and the count of "cpuN" lines) into *out
 * (out->t untouched). 0, or -1 when there is no well-formed "cpu " line. Pure. */
int pdbx_cpu_snapshot_parse(const char *stat_text, pdbx_cpu_snapshot *out);
/* Reads /proc/stat now (t = pdbx_mono_s()). 0 or -1. */
int pdbx_cpu_snapshot_read(pdbx_cpu_snapshot *out);

/* The figures between snapshots a and b (b later) when the caller's own processes used
 * own_cpu_s seconds of CPU time between them; ticks_per_s is USER_HZ (sysconf(_SC_CLK_TCK)).
 * 0, or -1 when the interval is empty or the counters went backwards (no figures). Pure. */
int pdbx_cpu_load_between(const pdbx_cpu_snapshot *a, const pdbx_cpu_snapshot *b,
                          double own_cpu_s, long ticks_per_s, pdbx_cpu_load *out);
/* 1 when the figures say busy (PDBX_BUSY_OTHER_CORES, PDBX_BUSY_STEAL_PCT), else 0. */
int pdbx_cpu_is_busy(double other_busy, double steal_pct);

/* /proc/loadavg's 1-minute load average; 0 or -1. */
int pdbx_loadavg_read(double *load1);
/* This process's CPU time so far (user + system, all its threads; getrusage RUSAGE_SELF),
 * in seconds; NaN when it cannot be read. */
double pdbx_self_cpu_s(void);
/* Online cores (sysconf); at least 1. */
int pdbx_online_cores(void);

/* What `pdbx run` checks before a launch: samples /proc/stat over `seconds` (sleeping; this
 * process's own CPU time is subtracted) and reads the load average. Returns 1 when the
 * machine is busy, with `line` (len bytes) set to the sentence to print after "warning: ",
 * e.g. "this machine is busy (1.9 of 2 cores used by other processes, load 2.3):
 * measurements will be noisy; the run records it"; 0 when it is not busy or cannot be read
 * (line ""). */
int pdbx_cpu_busy_check(double seconds, char *line, size_t len);
/* The sentence of pdbx_cpu_busy_check for given figures (load1 NaN: left out). Pure. */
void pdbx_cpu_busy_line(const pdbx_cpu_load *l, int cores, double load1, char *line, size_t len);

#endif
