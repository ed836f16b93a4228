/* host.h: facts about the host that the run records and the cpu backend uses: its memory
 * (the cpu backend's allocation guard, run_start's env) and its CPU model (the cpu backend's
 * device name, run_start's env whatever the backend) and this process's resident memory (the
 * cpu backend's measured peak of a point). Read from /proc; Linux only.
 */
#ifndef PDBX_BACKENDS_HOST_H
#define PDBX_BACKENDS_HOST_H

#include <stddef.h>
#include <stdint.h>

/* MemAvailable and MemTotal of /proc/meminfo in bytes; 0 on success, -1 when unreadable. */
int pdbx_host_meminfo(uint64_t *available, uint64_t *total);
/* This process's resident set: VmRSS and VmHWM (its high-water mark) of /proc/self/status in
 * bytes; 0 on success, -1 when unreadable. */
int pdbx_host_rss(double *rss, double *hwm);
/* Resets VmHWM to the current VmRSS (writes "5" to /proc/self/clear_refs, Linux >= 4.0), so
 * the next pdbx_host_rss() gives the peak since now; 0 on success, -1 when not permitted. */
int pdbx_host_rss_reset_peak(void);
/* Resident bytes of AddressSanitizer's shadow memory in this process (the Rss of
 * /proc/self/smaps' mappings in the shadow range), which VmRSS and VmHWM include; 0 with
 * *bytes 0 in a build without ASan, -1 when smaps is unreadable. A read of the shadow of
 * fresh memory maps the kernel's shared zero page, resident for nobody, on most kernels; a
 * kernel without it (a VM booted with pvm_no_zero_page=1) gives each read a real page, and
 * the shadow then adds 1/8 of every buffer ASan's memcpy/memset checks read to the RSS. */
int pdbx_host_shadow_rss(double *bytes);
/* "model name" of /proc/cpuinfo into buf ("unknown cpu" when absent). */
void pdbx_host_cpu_model(char *buf, size_t len);

#endif
