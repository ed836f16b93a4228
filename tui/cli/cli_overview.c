/* cli_overview.c: `pdbx` without a subcommand, until the explorer replaces it: the plan of
 * the `quick` preset (what `pdbx run quick` would measure) and the store listing. */
#include <stdlib.h>
#include <string.h>

#include "tui/cli/cli.h"

static const pdbx_cli_spec overview_spec = {
    .name = "", .args = "", .opts = pdbx_cli_store_only_opts, .min_args = 0, .max_args = 0,
    .about = "Without a command, pdbx prints the plan of the 'quick' sweep preset and the runs\n"
             "in the store. 'pdbx --help' lists the commands.",
};

int pdbx_cmd_overview(int argc, char **argv)
{
    const char *store = NULL;
    char **pos;
    int rc = pdbx_cli_parse_store_only(&overview_spec, argc, argv, &store, &pos);
    if (rc != 0)
        return pdbx_cli_parse_exit(rc);
    pdbx_spec *spec = calloc(1, sizeof *spec);
    if (!spec)
        return pdbx_cli_fail(PDBX_EXIT_FAIL, NULL, "out of memory");
    char err[1024] = "";
    pdbx_spec_defaults(spec);
    if (pdbx_spec_load("quick", spec, err, sizeof err) != 0) {
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, NULL, "preset 'quick': %s", err);
        free(spec);
        return rc;
    }
    rc = pdbx_cli_plan_print(NULL, spec, 0, stdout);
    free(spec);
    if (rc != 0)
        return rc;
    pdbx_store *st;
    if ((rc = pdbx_cli_open_store(NULL, store, 0, &st)) != 0)
        return rc;
    putchar('\n');
    rc = pdbx_cli_list_runs(NULL, st, 0, stdout);
    pdbx_store_close(st);
    if (rc == 0)
        printf("\n'pdbx --help' lists the commands (run, show, diff, export, plan ...).\n");
    return rc;
}
