/* layout.h: where things live in a store directory DIR. The one place that knows the names:
 *
 *   DIR/runs/<id>.pdbx        a run file (store.h, docs/events.md)
 *   DIR/runs/<id>.validations.jsonl  the run's `pdbx validate` records (validation.h)
 *   DIR/index.json            the cache of run summaries (store_index.h)
 *   DIR/logs/<id>.log         the output of the `pdbx run` supervisor and its mpirun
 *   DIR/logs/<id>.spec.json   the spec that supervisor launched
 *   DIR/logs/<id>.stop        why a running sweep is being stopped, written just before the
 *                             signal (cancel request: who asked), read into run_end's cause
 *
 * Run ids name files: 1..PDBX_RUN_ID_MAX-1 of A-Z a-z 0-9 . _ -, not starting with '.'.
 * Pure string work: nothing here touches the file system.
 */
#ifndef PDBX_LAYOUT_H
#define PDBX_LAYOUT_H

#include <stddef.h>

#include "store/profiledb.h"

typedef enum {
    PDBX_PATH_RUNS,          /* DIR/runs (id ignored) */
    PDBX_PATH_INDEX,         /* DIR/index.json (id ignored) */
    PDBX_PATH_LOGS,          /* DIR/logs (id ignored) */
    PDBX_PATH_RUN,           /* DIR/runs/<id>.pdbx */
    PDBX_PATH_LOG,           /* DIR/logs/<id>.log */
    PDBX_PATH_SPEC,          /* DIR/logs/<id>.spec.json */
    PDBX_PATH_STOP,          /* DIR/logs/<id>.stop */
    PDBX_PATH_VALIDATIONS,   /* DIR/runs/<id>.validations.jsonl */
} pdbx_layout_what;

/* The path of `what` in store dir into buf; -1 when it does not fit (buf then holds a cut
 * copy). id may be NULL for the directory-level paths. */
int pdbx_layout_path(pdbx_layout_what what, const char *dir, const char *id, char *buf, size_t len);
/* The same, malloc'ed (NULL when out of memory). */
char *pdbx_layout_path_alloc(pdbx_layout_what what, const char *dir, const char *id);

/* 1 when id may name a run (the rule above). */
int pdbx_layout_valid_id(const char *id);
/* The id of a runs/ directory entry "<id>.pdbx" into id; 0 when name is not a run file. */
int pdbx_layout_run_id_of_name(const char *name, char id[PDBX_RUN_ID_MAX]);
/* 1 when a run argument is a path to a run file or recording (has a '/' or ends in .pdbx)
 * rather than a run id or prefix to resolve in a store. */
int pdbx_layout_is_run_path(const char *arg);

#endif
