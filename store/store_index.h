/* store_index.h: internal API of DIR/index.json, the cache of run summaries (store/ only).
 *
 * An entry is valid for a run file while the file's (size, mtime_ns, inode) are unchanged.
 * The cached status is the one folded from the file (RUNNING for a run without run_end);
 * liveness (running vs failed) is decided at list time from host, pid and last_event.
 * The index is only a cache: a missing, unreadable or malformed index loads as empty (and is
 * rebuilt by the next list); malformed entries are dropped one by one.
 */
#ifndef PDBX_STORE_INDEX_H
#define PDBX_STORE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef struct {
    pdbx_run_summary sum;     /* sum.status: the folded status, before liveness */
    int64_t mtime_ns;
    uint64_t ino;
    int have_end;
    char host[64];
    long pid;
    double last_event;
} pdbx_index_entry;

/* Loads path into a malloc'ed array (free()); *n = 0 and *out = NULL when absent/garbage.
 * Returns -1 only when out of memory. */
int pdbx_index_load(const char *path, pdbx_index_entry **out, size_t *n);
/* Writes the entries durably (tmp -> fsync -> rename -> fsync dir). */
int pdbx_index_save(const char *path, const pdbx_index_entry *e, size_t n, char *err, size_t errlen);

#endif
