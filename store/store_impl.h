/* store_impl.h: internals shared by the store's modules (store/ only).
 *
 *   store.c         open, default dir, ids, resolve, delete
 *   store_run.c     the run writer, loading a run, the liveness rule
 *   store_list.c    summaries, listing with the index.json cache, rebuild
 *   store_copy.c    record and import
 *   store_frames.c  frames (encoder, durable append); store_scan.c the scanner (bounded
 *                   memory, never opens a non-regular file); store_index.c the index file
 *   events*.c       the event schema (events.h, events_internal.h); json_fields.c the JSON
 *                   member helpers
 *   layout.c        the paths of a store (layout.h)
 *   profiledb*.c    the fold (profiledb.c, profiledb_fold_*.c), statistics and names, queries
 */
#ifndef PDBX_STORE_IMPL_H
#define PDBX_STORE_IMPL_H

#include <stddef.h>
#include <sys/stat.h>

#include "store/util/err.h"
#include "store/store.h"

/* A run without run_end on another host is running while its last event is younger. */
#define PDBX_HEARTBEAT_TIMEOUT_S 60.0

struct pdbx_store {
    char *dir;
    char *runs;       /* DIR/runs */
    char *index;      /* DIR/index.json */
};

/* DIR/runs/<id>.pdbx, malloc'ed. */
char *store_run_path_alloc(const pdbx_store *st, const char *id);

/* Ids of every run file in runs/ (unsorted; free(l->id)). */
typedef struct {
    char (*id)[PDBX_RUN_ID_MAX];
    size_t n, cap;
} store_id_list;
int store_list_ids(const pdbx_store *st, store_id_list *l, char *err, size_t errlen);

/* Who launched a run without run_end, as its events (or the index) recorded it. */
typedef struct {
    const char *host;
    long pid;
    double pid_start;        /* 0: not recorded (the pid alone decides) */
    const char *boot_id;     /* "": not recorded */
    double last_event;
    const char *path;        /* the run file in its store (NULL: unknown): the store's log of
                              * the run may say how it ended when run_end could not be written */
    const char *launcher;    /* run_start's launcher ("srun (pmix) in sbatch job 41"), "" none:
                              * named in the reason of a run whose heartbeat stopped elsewhere */
} store_launcher;
store_launcher store_launcher_of_run(const pdbx_run *run);
/* The liveness rule of store.h for a run without run_end: 1 while it counts as running. */
int store_launcher_alive(const store_launcher *l);
/* The "no run end (...)" reason for a run that is not running. */
void store_no_end_reason(char *buf, size_t len, const store_launcher *l);

/* Scan callback folding every event into run (malformed events become run warnings). */
typedef struct {
    pdbx_run *run;
    size_t index;      /* event number, for messages */
} store_load_ctx;
int store_load_event(const cJSON *ev, void *ctx);
double store_mtime_of(const struct stat *sb);

#endif
