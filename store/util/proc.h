/* proc.h: facts about the running process that several programs need. pdbx finds its
 * companions (pdbx-engine, configs/, themes/, libpdbx_cuda.so) relative to its own executable,
 * so that a build tree and an installed prefix both work without configuration; this is the
 * one place that asks the kernel where that executable is. Never fails loudly: a caller falls
 * back to a name looked up in $PATH or the working directory.
 */
#ifndef PDBX_PROC_H
#define PDBX_PROC_H

#include <stddef.h>

/* The directory holding the running executable (/proc/self/exe without its last component).
 * Returns 0, or -1 with buf set to "" when it cannot be read or does not fit in len. */
int pdbx_exe_dir(char *buf, size_t len);
/* This machine's host name, always terminated; `fallback` when gethostname fails. */
void pdbx_hostname(char *buf, size_t len, const char *fallback);

/* A process's identity beyond its pid, which the kernel reuses: the start time of process pid
 * (/proc/PID/stat field 22, clock ticks since boot) in *ticks, 0 or -1 when there is no such
 * process or /proc cannot be read. Together with the boot id (/proc/sys/kernel/random/boot_id,
 * "" when unreadable: ticks restart at every boot) it names one process for the machine's life. */
int pdbx_proc_start_ticks(long pid, unsigned long long *ticks);
void pdbx_boot_id(char *buf, size_t len);

#endif
