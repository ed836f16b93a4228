/* validation.h: the record of `pdbx validate` runs, kept next to the run they check.
 *
 * DIR/runs/<id>.validations.jsonl (layout.h, PDBX_PATH_VALIDATIONS) holds one JSON object per
 * line, one line per validation, oldest first (docs/store.md gives the fields). The run file is
 * never touched: a validation is what someone did with the run afterwards, and the run file's
 * events are the engine's own record.
 *
 * Crash safety: an append is one write() of the whole line (O_APPEND: two validations of one
 * run at the same time do not interleave) followed by fdatasync, and an fsync of runs/ when the
 * file was created. A crash can at worst leave a torn last line, which readers skip (and
 * count); the lines before it are intact. Deleting the run (pdbx_store_delete) deletes it.
 *
 * Contract: functions return 0, or -1 with one line in err naming the file.
 */
#ifndef PDBX_VALIDATION_H
#define PDBX_VALIDATION_H

#include <stddef.h>
#include <cjson/cJSON.h>

#define PDBX_VALIDATION_NOTE_MAX 192

typedef struct {
    double time;                     /* unix seconds when it was measured */
    int tp, pp, dp, mbs, gbs, layers, num_mb, iters;
    char backend[16];                /* compute backend of the measurement ("cpu", "cuda") */
    double measured_ms;              /* median of the measured iterations */
    double measured_min_ms, measured_max_ms;
    double estimated_ms;             /* the advise model's step_ms (NaN: no estimate) */
    double error_pct;                /* 100 * (estimated - measured) / measured (NaN: none) */
    /* the estimate's breakdown (advise.h's row) */
    double est_compute_ms, est_bubble_ms, est_tp_comm_ms, est_pp_comm_ms, est_dp_comm_ms;
    int bwd_measured;                /* 1: the estimate's backward came from measured cells */
    char note[PDBX_VALIDATION_NOTE_MAX];   /* the estimate's first interpolation note, "" */
    /* expert parallelism (at the end: records without it read as EP 1); the JSON carries ep,
     * config's 4th degree and estimate.ep_comm_ms only when ep > 1 */
    int ep;                          /* 0 or 1: none */
    double est_ep_comm_ms;           /* the estimate's all-to-alls (advise.h's ep_comm_ms) */
} pdbx_validation;

/* The record as its JSON object (NaN fields are null); NULL when out of memory. */
cJSON *pdbx_validation_to_json(const pdbx_validation *v);
/* A record from its JSON object: 0, or -1 when a required field (config, mbs, gbs, layers,
 * measured_ms) is missing or not a number. */
int pdbx_validation_from_json(const cJSON *obj, pdbx_validation *out);

/* Appends v to the run's validations (store directory store_dir, run id). */
int pdbx_validation_append(const char *store_dir, const char *run_id, const pdbx_validation *v,
                           char *err, size_t errlen);
/* Reads the run's validations, oldest first, into *out (malloc'ed; free() it), *n of them;
 * *skipped (may be NULL) gets the lines that did not parse (a torn last line). A run without
 * validations gives 0 with *n = 0 and *out = NULL. */
int pdbx_validation_list(const char *store_dir, const char *run_id, pdbx_validation **out,
                         size_t *n, size_t *skipped, char *err, size_t errlen);

#endif
