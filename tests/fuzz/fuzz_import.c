/* fuzz_import.c: recording import (store: pdbx_store_import_ex into a store of its own), then
 * what `pdbx import` and `pdbx ls` do next: load the imported run by id, list the store (the
 * summary scan and index.json), import the same recording again, which must find the first
 * copy, and remove the run (pdbx_store_delete).
 *
 * Checks the import's contract (store.h): an imported run is a valid id whose file is in the
 * store's runs/, and a second import of the same recording reports that run as already there.
 * Input: as fuzz_runfile.c (raw bytes or JSON events one per line). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/layout.h"
#include "store/store.h"
#include "tests/fuzz/fuzz_common.h"

static pdbx_store *store;
static char store_dir[512];

static void close_store(void)
{
    pdbx_store_close(store);
    store = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    char err[512], path[512];
    if (!store) {
        snprintf(store_dir, sizeof store_dir, "%s/store", fuzz_tmpdir());
        if (pdbx_store_open(store_dir, 1, &store, err, sizeof err) != 0) {
            fprintf(stderr, "fuzz_import: %s\n", err);
            abort();
        }
        atexit(close_store);
    }
    snprintf(path, sizeof path, "%s/recording.pdbx", fuzz_tmpdir());
    fuzz_write_run_file(path, data, size);

    char id[PDBX_RUN_ID_MAX];
    int already = 0;
    if (pdbx_store_import_ex(store, path, id, &already, err, sizeof err) == 0) {
        char run_path[1024];
        if (already || !pdbx_layout_valid_id(id) ||
            pdbx_store_run_path(store, id, run_path, sizeof run_path) != 0 ||
            access(run_path, R_OK) != 0) {
            fprintf(stderr, "fuzz_import: imported as '%s' (already %d) but no such run file\n", id,
                    already);
            abort();
        }
        pdbx_run run;
        if (pdbx_run_load(store, id, &run, err, sizeof err) == 0)
            (void)pdbx_run_points_done(&run);
        pdbx_run_free(&run);

        pdbx_run_summary *sums = NULL;
        size_t n = 0;
        if (pdbx_store_list(store, &sums, &n, err, sizeof err) == 0 && n != 1) {
            fprintf(stderr, "fuzz_import: the store lists %zu runs after one import\n", n);
            abort();
        }
        free(sums);

        char id2[PDBX_RUN_ID_MAX];
        if (pdbx_store_import_ex(store, path, id2, &already, err, sizeof err) != 0 || !already ||
            strcmp(id, id2) != 0) {
            fprintf(stderr, "fuzz_import: a second import of '%s' was not recognised (%s, %s)\n",
                    id, already ? id2 : "copied again", err);
            abort();
        }
        if (pdbx_store_delete(store, id, err, sizeof err) != 0) {
            fprintf(stderr, "fuzz_import: rm %s: %s\n", id, err);
            abort();
        }
    }
    /* Nothing of this input may remain for the next one (index.json, temp files, logs). */
    char runs[600];
    snprintf(runs, sizeof runs, "%s/runs", store_dir);
    fuzz_clear_dir(runs);
    snprintf(runs, sizeof runs, "%s/index.json", store_dir);
    unlink(runs);
    return 0;
}
