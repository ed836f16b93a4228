/* cli_overview.c: `pdbx` without a subcommand, until the explorer replaces it: the plan of
 * the `quick` preset (what `pdbx run quick` would measure) and the store listing. */
#include <stdlib.h>
#include <string.h>

#include "tui/cli/cli.h"

static const pdbx_cli_opt overview_opts[] = {
    { "store", "DIR", "the store (default: $PDBX_STORE, $XDG_DATA_HOME/pdbx, ~/.local/share/pdbx)" },
    { NULL, NULL, NULL },
};

static const pdbx_cli_spec overview_spec = {
    .name = "", .args = "", .opts = overview_opts, .min_args = 0, .max_args = 0,
    .about = "Without a command, pdbx prints the plan of the 'quick' sweep preset and the runs\n"
             "in the store. 'pdbx --help' lists the commands.",
};

static int overview_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err,
                        size_t errlen)
{
    (void)opt, (void)err, (void)errlen;
    *(const char **)ctx = value;
    return 0;
}

int pdbx_cmd_overview(int argc, char **argv)
{
    const char *store = NULL;
    char **pos;
    int npos;
    int rc = pdbx_cli_parse(&overview_spec, argc, argv, overview_opt, &store, &pos, &npos);
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
