/* store_index.h: internal API of DIR/index.json, the cache of run summaries (store/ only).
 *
 * An entry is valid for a run file while the file's (size, mtime_ns, inode) are unchanged.
 * The cached status is the one folded from the file (RUNNING for a run without run_end);
 * liveness (running vs failed) is decided at list time from host, pid and last_event.
 * The index is only a cache: a missing, unreadable or malformed index loads as empty (and is
 * rebuilt by the next list); malformed entries are dropped one by one.
 *
 * A run without run_end usually grows: its entry also keeps where its scan stopped
 * (scan_offset) and its points ([index, tp, mbs, status] each), so the next list folds only
 * the frames appended since (run files are append-only; same inode, not shorter).
 */
#ifndef PDBX_STORE_INDEX_H
#define PDBX_STORE_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "store/store.h"

/* A larger index.json is not one pdbx wrote: ignored (and rebuilt), never read on. */
#define PDBX_INDEX_MAX_BYTES (256u * 1024u * 1024u)

typedef struct {
    pdbx_run_summary sum;     /* sum.status: the folded status, before liveness */
    int64_t mtime_ns;
    uint64_t ino;
    int have_end;
    char host[64];
    long pid;
    double pid_start;        /* the launcher's start, clock ticks since boot (0: unknown) */
    char boot_id[40];
    double last_event;
    uint64_t scan_offset;     /* whole-frame bytes folded into this entry */
    int layers;               /* layers profiled, coll events and announced collectives: the */
    double coll_done, coll_total;   /* progress model's state for a resumed scan */
    cJSON *resume_points;     /* owned; [[index, tp, mbs, status], ...] for a run that may grow
                               * (no run_end, not corrupt), else NULL */
} pdbx_index_entry;

/* Loads path into a malloc'ed array (pdbx_index_free); *n = 0 and *out = NULL when
 * absent/garbage. Returns -1 only when out of memory. */
int pdbx_index_load(const char *path, pdbx_index_entry **out, size_t *n);
/* Frees the entries' resume state and the array. */
void pdbx_index_free(pdbx_index_entry *e, size_t n);
/* Releases one entry's resume state (before overwriting or dropping the entry). */
void pdbx_index_entry_clear(pdbx_index_entry *e);
/* Writes the entries durably (tmp -> fsync -> rename -> fsync dir). */
int pdbx_index_save(const char *path, const pdbx_index_entry *e, size_t n, char *err, size_t errlen);

#endif
