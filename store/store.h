/* store.h: the crash-safe run store on disk.
 *
 * Layout of a store directory DIR:
 *   DIR/runs/<id>.pdbx   one run: an append-only sequence of independent zstd frames
 *                        (checksum flag on), each frame one JSON event (docs/events.md).
 *                        `zstdcat DIR/runs/<id>.pdbx | jq .` reads it by hand.
 *   DIR/index.json       a cache of run summaries keyed by (id, size, mtime); rebuildable at
 *                        any time from runs/, written tmp -> fsync -> rename -> fsync(dir).
 * Run ids: "YYYY-MM-DD__HH-MM-SS_<hash8>" (UTC creation time, 8 hex chars of randomness).
 *
 * Guarantees:
 *  - Appending writes one whole frame with a single write() then fdatasync(): a crash loses at
 *    most the event in flight. A torn last frame is ignored on read (torn_tail = 1).
 *  - A damaged frame (bad magic, bad checksum, bad JSON) before the tail marks the run CORRUPT
 *    with a message naming the file and byte offset; the events before it are still returned
 *    and every other run still lists.
 *  - Runs are created O_EXCL; each writer appends only its own file, so two sweeps writing to
 *    one store never touch each other's data, and readers never need locks.
 *  - Every function returns 0 on success, or -1 with a one-line message in err (which names
 *    the path or id at fault). err may be NULL.
 */
#ifndef PDBX_STORE_H
#define PDBX_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "store/profiledb.h"

typedef struct pdbx_store pdbx_store;

/* $PDBX_STORE, else $XDG_DATA_HOME/pdbx, else $HOME/.local/share/pdbx. */
int pdbx_store_default_dir(char *buf, size_t len, char *err, size_t errlen);
/* Opens DIR (create != 0: mkdir -p DIR/runs). Fails when DIR is not a store and create == 0. */
int pdbx_store_open(const char *dir, int create, pdbx_store **out, char *err, size_t errlen);
void pdbx_store_close(pdbx_store *st);
const char *pdbx_store_dir(const pdbx_store *st);
/* Path of a run file: DIR/runs/<id>.pdbx (the file need not exist). */
int pdbx_store_run_path(const pdbx_store *st, const char *id, char *buf, size_t len);

/* A fresh id for now; unique with overwhelming probability, and create is O_EXCL anyway. */
void pdbx_store_new_id(char out[PDBX_RUN_ID_MAX]);
/* Resolves a unique prefix of a run id (or a whole id) to the id. Ambiguous or unknown prefixes
 * fail with a message that says which. */
int pdbx_store_resolve(pdbx_store *st, const char *prefix, char out[PDBX_RUN_ID_MAX],
                       char *err, size_t errlen);

/* ---- writing ------------------------------------------------------------------------- */
typedef struct pdbx_run_writer pdbx_run_writer;
/* Creates runs/<id>.pdbx exclusively (id NULL: a new id). */
int pdbx_run_writer_create(pdbx_store *st, const char *id, pdbx_run_writer **out,
                           char *err, size_t errlen);
/* Opens an existing run to append more events (a second launch of the same sweep). */
int pdbx_run_writer_open(pdbx_store *st, const char *id, pdbx_run_writer **out,
                         char *err, size_t errlen);
const char *pdbx_run_writer_id(const pdbx_run_writer *w);
/* Appends one event as one frame. Adds "t" (unix seconds, double) when absent. Durable when
 * it returns 0. So that a run's end can always be written, the writer keeps
 * PDBX_RUN_END_RESERVE bytes allocated past the file's end (fallocate with KEEP_SIZE, where the
 * file system supports it) and below the file-size limit (ulimit -f): an event that would eat
 * into them is refused before anything is written, and pdbx_run_writer_failure() says so. */
int pdbx_run_writer_append(pdbx_run_writer *w, const cJSON *event, char *err, size_t errlen);
/* The run's last event (run_end): it may use the reserve. */
int pdbx_run_writer_append_last(pdbx_run_writer *w, const cJSON *event, char *err, size_t errlen);
/* Why the last append failed: the event could not be encoded (out of memory, too large: the
 * file is fine), the file could not be written, or not for lack of space (the disk or quota
 * is full, or the file-size limit is reached). PDBX_APPEND_OK after a success. */
typedef enum { PDBX_APPEND_OK = 0, PDBX_APPEND_ENCODE, PDBX_APPEND_IO, PDBX_APPEND_NO_SPACE }
    pdbx_append_failure;
pdbx_append_failure pdbx_run_writer_failure(const pdbx_run_writer *w);
#define PDBX_RUN_END_RESERVE 4096
int pdbx_run_writer_close(pdbx_run_writer *w, char *err, size_t errlen);

/* ---- reading --------------------------------------------------------------------------- */
/* The largest event (decompressed JSON) a run file may hold: the writer refuses larger ones and
 * the scanner reports them as damage. The biggest real event, a run_start planning
 * PDBX_RUN_MAX_POINTS points, is about 15 MB. A frame is at most ZSTD_compressBound of it, so
 * a frame header claiming more is damage too, found without reading what it claims. */
#define PDBX_MAX_EVENT_BYTES (64u * 1024u * 1024u)

/* Called once per complete, valid event; return nonzero to stop the scan early. */
typedef int (*pdbx_event_fn)(const cJSON *event, void *ctx);

typedef struct {
    uint64_t next_offset;     /* where the next scan should start (after the last whole frame) */
    size_t events;            /* events delivered by this scan */
    int torn_tail;            /* the file ends in a partial frame (normal while a run is written) */
    int corrupt;              /* a damaged frame stopped the scan */
    char corrupt_msg[256];    /* "<path>: bad frame at byte N: <why>" */
} pdbx_scan_result;

/* Scans a run file (any path: runs, recordings) from byte offset `from` (0 or a previous
 * next_offset), so a monitor can tail a run that is still being written. Returns -1 only when
 * the file cannot be opened or read (a FIFO, device or directory is never opened for reading:
 * "not a regular file"; an unreadable one says "permission denied"); corruption is reported in
 * *res, not as failure. Memory stays bounded whatever the file holds: one read chunk plus the
 * largest whole frame (a torn or damaged tail is walked by its block headers, never held). */
int pdbx_scan_file(const char *path, uint64_t from, pdbx_event_fn fn, void *ctx,
                   pdbx_scan_result *res, char *err, size_t errlen);

/* Loads a whole run (id, or a path to a .pdbx file/recording) into *run (pdbx_run_init'ed
 * by the callee; free with pdbx_run_free). Sets run->status: COMPLETE/CANCELLED/FAILED from
 * run_end; without run_end RUNNING while the launcher lives on this host (its pid, and its
 * start time where run_start recorded it: pdbx_process_is) (or, for
 * another host, while the last event is < 60 s old), else FAILED ("no run end");
 * CORRUPT when a damaged frame was found (the events before it are kept). */
int pdbx_run_load(pdbx_store *st, const char *id, pdbx_run *run, char *err, size_t errlen);
int pdbx_run_load_file(const char *path, pdbx_run *run, char *err, size_t errlen);
/* Re-evaluates RUNNING vs FAILED for a run without run_end (pid/heartbeat rule above). */
void pdbx_run_refresh_liveness(pdbx_run *run);
/* 1 when process pid exists on this host and is not a zombie (an orphaned launcher waits for
 * init to reap it, which some container inits do late: it is dead all the same). */
int pdbx_process_alive(long pid);
/* 1 when pid is alive here and is the process that was recorded: started at pid_start (clock
 * ticks since boot, store/util/proc.h) in boot boot_id. A pid the kernel gave to another
 * process since reads 0. pid_start 0 (not recorded): the pid alone decides, as above. */
int pdbx_process_is(long pid, double pid_start, const char *boot_id);

/* ---- listing ----------------------------------------------------------------------------- */
#define PDBX_SUMMARY_MAX_TP 16
typedef struct {
    char id[PDBX_RUN_ID_MAX];
    double created;              /* unix seconds */
    char model[64];
    char backend[8];
    char gpu[32];                /* GPU preset, or "cpu" */
    int tp[PDBX_SUMMARY_MAX_TP];
    int ntp;
    int mbs_min, mbs_max;        /* planned MBS range */
    pdbx_run_status status;
    int points_done, points_total;
    int percent;                 /* of the work done (store/progress.h: what pdbx run, attach
                                  * and the monitor print), 0..100, at most 99 while running */
    uint64_t size;               /* file bytes */
    char message[160];           /* failure/corruption reason, else "" */
    char launcher[64];           /* run_start's launcher ("simulated 2 nodes" ...), "" unknown */
    int noise_points;            /* points that recorded what else loaded the machine */
    int busy_points;             /* of those, judged measured under load (pdbx_run_noise_of) */
} pdbx_run_summary;

/* Every run in the store, newest first. Uses index.json for runs whose (size, mtime) did not
 * change and refreshes it; a corrupt run is listed with status CORRUPT and its message; one
 * that cannot be read with status UNREADABLE and why: "permission denied (...)", or
 * "skipped: not a regular file (a FIFO)" for a FIFO, device or directory named like a run
 * (never opened: opening a FIFO blocks). */
int pdbx_store_list(pdbx_store *st, pdbx_run_summary **out, size_t *n, char *err, size_t errlen);
int pdbx_store_rebuild_index(pdbx_store *st, char *err, size_t errlen);
/* Removes a run: its file, its logs (logs/<id>.log and .spec.json, when there) and its index
 * entry. The caller decides whether a running run may go (pdbx rm refuses one). */
int pdbx_store_delete(pdbx_store *st, const char *id, char *err, size_t errlen);

/* Recordings are run files: `record` copies a run's stream to FILE (durably); `import` copies
 * a recording into the store under its original id (or a new id when that one exists) and
 * writes the id used to out_id. A recording whose whole frames are byte for byte a run
 * already in the store is not copied again: out_id is that run, and *already (may be NULL)
 * is set to 1 (else 0). */
int pdbx_store_record(pdbx_store *st, const char *id, const char *file, char *err, size_t errlen);
int pdbx_store_import(pdbx_store *st, const char *file, char out_id[PDBX_RUN_ID_MAX],
                      char *err, size_t errlen);
int pdbx_store_import_ex(pdbx_store *st, const char *file, char out_id[PDBX_RUN_ID_MAX],
                         int *already, char *err, size_t errlen);

#endif
