/* cli_record.c: `pdbx record RUN FILE` (copy a run's event stream to a recording) and
 * `pdbx import FILE` (add a recording to the store). A recording is a run file, so it also
 * opens directly: `pdbx show path/to/rec.pdbx`. */
#include <string.h>
#include <sys/stat.h>

#include "tui/cli/cli.h"

static const pdbx_cli_spec record_spec = {
    .name = "record", .args = "RUN FILE", .opts = pdbx_cli_store_only_opts, .min_args = 2, .max_args = 2,
    .about = "Copies a run's event stream to FILE (written durably): a recording that replays in\n"
             "the monitor and imports into any store. RUN is a unique prefix of a run id.",
};

static const pdbx_cli_spec import_spec = {
    .name = "import", .args = "FILE", .opts = pdbx_cli_store_only_opts, .min_args = 1, .max_args = 1,
    .about = "Imports a recording (a run file) into the store under its original id, or a new\n"
             "id when that one is taken; prints the id used.",
};

int pdbx_cmd_record(int argc, char **argv)
{
    const char *store = NULL;
    char **pos;
    int rc = pdbx_cli_parse_store_only(&record_spec, argc, argv, &store, &pos);
    if (rc != 0)
        return pdbx_cli_parse_exit(rc);
    struct stat sb;
    if (pos[1][0] == '\0')
        return pdbx_cli_fail(PDBX_EXIT_USAGE, record_spec.name, "FILE is empty (give the recording's file name)");
    if (stat(pos[1], &sb) == 0 && S_ISDIR(sb.st_mode))
        return pdbx_cli_fail(PDBX_EXIT_USAGE, record_spec.name,
                             "FILE: '%s' is a directory (give the recording's file name)", pos[1]);
    pdbx_store *st;
    if ((rc = pdbx_cli_open_store(record_spec.name, store, 0, &st)) != 0)
        return rc;
    char id[PDBX_RUN_ID_MAX], err[1024] = "";
    if (pdbx_store_resolve(st, pos[0], id, err, sizeof err) != 0) {
        rc = pdbx_cli_fail(PDBX_EXIT_USAGE, record_spec.name, "%s", err);
    } else if (pdbx_store_record(st, id, pos[1], err, sizeof err) != 0) {
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, record_spec.name, "%s", err);
    } else {
        printf("%s\n", pos[1]);
        rc = PDBX_EXIT_OK;
    }
    pdbx_store_close(st);
    return rc;
}

int pdbx_cmd_import(int argc, char **argv)
{
    const char *store = NULL;
    char **pos;
    int rc = pdbx_cli_parse_store_only(&import_spec, argc, argv, &store, &pos);
    if (rc != 0)
        return pdbx_cli_parse_exit(rc);
    if (pos[0][0] == '\0')
        return pdbx_cli_fail(PDBX_EXIT_USAGE, import_spec.name, "FILE is empty (give a recording's file name)");
    pdbx_store *st;
    if ((rc = pdbx_cli_open_store(import_spec.name, store, 1, &st)) != 0)
        return rc;
    char id[PDBX_RUN_ID_MAX], err[1024] = "";
    int already = 0;
    if (pdbx_store_import_ex(st, pos[0], id, &already, err, sizeof err) != 0) {
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, import_spec.name, "%s", err);
    } else {
        if (already)
            fprintf(stderr, "pdbx import: %s is already in the store as %s (not copied again)\n",
                    pos[0], id);
        printf("%s\n", id);
        rc = PDBX_EXIT_OK;
    }
    pdbx_store_close(st);
    return rc;
}
