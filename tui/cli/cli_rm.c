/* cli_rm.c: `pdbx rm RUN... [--force] [--store DIR]` (tui/cli/cli.h).
 *
 * Removes runs from the store through pdbx_store_delete, the function the explorer's runs
 * screen uses: the run file, its logs (logs/<id>.log, logs/<id>.spec.json) and its index entry.
 * Every RUN is resolved before anything is removed, so a typo in the third id removes nothing.
 * A running run is refused (its sweep would go on writing a file nobody lists); --force
 * cancels it first (pdbx_launch_cancel, as `pdbx cancel` does), waits for its run end, then
 * removes it. A path is refused: rm removes runs of a store, by id.
 * Exit: 0 all removed, 1 a removal or a cancel failed, 2 usage (unknown or ambiguous RUN).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/launch/launch.h"
#include "store/layout.h"
#include "tui/cli/cli.h"

#define RM_MAX_RUNS 256
#define RM_WAIT_TENTHS 1200      /* up to 2 minutes for a cancelled run to end, as cancel waits */

typedef struct {
    const char *store;
    int force;
} rm_args;

static const pdbx_cli_opt rm_opts[] = {
    { "force", NULL, "cancel a running run first, then remove it" },
    PDBX_CLI_OPT_STORE,
    { NULL, NULL, NULL },
};

static const pdbx_cli_spec rm_spec = {
    .name = "rm", .args = "RUN...", .opts = rm_opts, .min_args = 1, .max_args = RM_MAX_RUNS,
    .about = "Removes runs from the store: the run file, its logs and its index entry.\n"
             "A running run is refused unless --force, which cancels it and waits for\n"
             "its end first. Every RUN is checked before anything is removed.\n"
             "RUN is a unique prefix of a run id in the store.",
};

static int rm_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err, size_t errlen)
{
    rm_args *a = ctx;
    if (strcmp(opt->name, "force") == 0) {
        a->force = 1;
    } else if (strcmp(opt->name, "store") == 0) {
        if (!*value) {
            snprintf(err, errlen, "--store: the value is empty (allowed: a store directory)");
            return -1;
        }
        a->store = value;
    }
    return 0;
}

/* PDBX_RUN_RUNNING or the status of the run (PDBX_RUN_CORRUPT when it cannot be read). */
static pdbx_run_status run_status(pdbx_store *st, const char *id)
{
    pdbx_run run;
    char err[256];
    pdbx_run_status s = PDBX_RUN_CORRUPT;
    if (pdbx_run_load(st, id, &run, err, sizeof err) == 0)
        s = run.status;
    pdbx_run_free(&run);
    return s;
}

/* Cancels a running run and waits for it to end: 0, or the exit code after one line. */
static int cancel_and_wait(pdbx_store *st, const char *id)
{
    char err[512];
    if (pdbx_launch_cancel(st, id, PDBX_CAUSE_CANCEL, err, sizeof err) != 0)
        return pdbx_cli_fail(PDBX_EXIT_FAIL, "rm", "%s: cannot cancel: %s", id, err);
    fprintf(stderr, "pdbx rm: cancelling %s\n", id);
    for (int i = 0; i < RM_WAIT_TENTHS; i++) {
        if (run_status(st, id) != PDBX_RUN_RUNNING)
            return 0;
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return pdbx_cli_fail(PDBX_EXIT_FAIL, "rm", "%s: still running 2 minutes after the cancel; "
                         "not removed", id);
}

/* Resolves every RUN to an id (refusing paths and unknown or ambiguous prefixes). */
static int resolve_all(pdbx_store *st, char **pos, int n, char (*ids)[PDBX_RUN_ID_MAX])
{
    char err[512];
    for (int i = 0; i < n; i++) {
        if (pdbx_layout_is_run_path(pos[i]))
            return pdbx_cli_fail(PDBX_EXIT_USAGE, "rm", "RUN: '%s' is a path (allowed: a run id or "
                                 "a unique prefix of one in the store; see pdbx ls)", pos[i]);
        if (pdbx_store_resolve(st, pos[i], ids[i], err, sizeof err) != 0)
            return pdbx_cli_fail(PDBX_EXIT_USAGE, "rm", "%s", err);
    }
    return 0;
}

static int remove_one(pdbx_store *st, const char *id, int force)
{
    char err[512];
    if (run_status(st, id) == PDBX_RUN_RUNNING) {
        if (!force)
            return pdbx_cli_fail(PDBX_EXIT_FAIL, "rm", "%s: the run is running (allowed: an ended "
                                 "run; 'pdbx cancel %s' first, or --force)", id, id);
        int rc = cancel_and_wait(st, id);
        if (rc != 0)
            return rc;
    }
    if (pdbx_store_delete(st, id, err, sizeof err) != 0)
        return pdbx_cli_fail(PDBX_EXIT_FAIL, "rm", "%s", err);
    fprintf(stderr, "pdbx rm: removed %s\n", id);
    return 0;
}

int pdbx_cmd_rm(int argc, char **argv)
{
    rm_args a = { 0 };
    char **pos;
    int npos;
    int rc = pdbx_cli_parse(&rm_spec, argc, argv, rm_opt, &a, &pos, &npos);
    if (rc != 0)
        return pdbx_cli_parse_exit(rc);
    pdbx_store *st = NULL;
    if ((rc = pdbx_cli_open_store(rm_spec.name, a.store, 0, &st)) != 0)
        return rc;
    char (*ids)[PDBX_RUN_ID_MAX] = calloc((size_t)npos, sizeof *ids);
    if (!ids) {
        pdbx_store_close(st);
        return pdbx_cli_fail(PDBX_EXIT_FAIL, "rm", "out of memory");
    }
    rc = resolve_all(st, pos, npos, ids);
    for (int i = 0; rc == 0 && i < npos; i++) {
        int dup = 0;            /* `pdbx rm abc abcd` naming one run twice removes it once */
        for (int j = 0; j < i; j++)
            dup |= strcmp(ids[i], ids[j]) == 0;
        if (!dup)
            rc = remove_one(st, ids[i], a.force);
    }
    free(ids);
    pdbx_store_close(st);
    return rc;
}
