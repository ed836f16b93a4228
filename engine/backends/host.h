/* host.h: facts about the host that the run records and the cpu backend uses: its memory
 * (the cpu backend's allocation guard, run_start's env) and its CPU model (the cpu backend's
 * device name, run_start's env whatever the backend). Read from /proc; Linux only.
 */
#ifndef PDBX_BACKENDS_HOST_H
#define PDBX_BACKENDS_HOST_H

#include <stddef.h>
#include <stdint.h>

/* MemAvailable and MemTotal of /proc/meminfo in bytes; 0 on success, -1 when unreadable. */
int pdbx_host_meminfo(uint64_t *available, uint64_t *total);
/* "model name" of /proc/cpuinfo into buf ("unknown cpu" when absent). */
void pdbx_host_cpu_model(char *buf, size_t len);

#endif
