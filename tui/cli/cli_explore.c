/* cli_explore.c: the command lines of the explorer, `pdbx [options]` on a terminal and
 * `pdbx replay FILE`, read by the one option parser (pdbx_cli_parse) like every subcommand,
 * then handed with the screens of tui/screens to the explorer (tui/explorer.h). */
#include <stdlib.h>
#include <string.h>

#include "tui/cli/cli.h"
#include "tui/explorer.h"
#include "tui/screens/screens.h"

static const pdbx_cli_opt explore_opts[] = {
    PDBX_CLI_OPT_STORE,
    { "theme", "NAME", "a theme of themes/ (default-dark, light, monochrome, high-contrast) or a file" },
    { "no-color", NULL, "monochrome (also when NO_COLOR is set or the terminal has no colours)" },
    { "no-colour", NULL, "the same as --no-color" },
    { "ascii", NULL, "plain ASCII charts even in a UTF-8 locale" },
    { "preset", "NAME", "the sweep preset the new-sweep form starts from (default quick)" },
    { NULL, NULL, NULL },
};

static const pdbx_cli_spec explore_spec = {
    .name = "", .args = "", .opts = explore_opts, .min_args = 0, .max_args = 0,
    .about = "Opens the explorer: runs, new sweep (n), monitor, results, compare, export; ? lists the keys.",
};

static const pdbx_cli_opt replay_opts[] = {
    { "speed", "X", "playback speed, a positive factor (default 1)" },
    PDBX_CLI_OPT_STORE,
    { "theme", "NAME", "a theme of themes/ or a theme file" },
    { "no-color", NULL, "monochrome" },
    { "no-colour", NULL, "the same as --no-color" },
    { "ascii", NULL, "plain ASCII charts even in a UTF-8 locale" },
    { NULL, NULL, NULL },
};

static const pdbx_cli_spec replay_spec = {
    .name = "replay", .args = "FILE", .opts = replay_opts, .min_args = 0, .max_args = 1,
    .about = "Plays a recording (a run file) through the monitor; +/- change the speed, Space pauses, q quits.",
};

static int explore_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err, size_t errlen)
{
    pdbx_explorer_opts *o = ctx;
    const char *n = opt->name;
    if (strcmp(n, "store") == 0) o->store = value;
    else if (strcmp(n, "theme") == 0) o->theme = value;
    else if (strcmp(n, "preset") == 0) o->preset = value;
    else if (strcmp(n, "ascii") == 0) o->ascii = 1;
    else if (strncmp(n, "no-colo", 7) == 0) o->no_color = 1;
    else if (strcmp(n, "speed") == 0) {
        char *end;
        o->speed = strtod(value, &end);
        if (*end || !(o->speed > 0) || o->speed > 1e6) {
            snprintf(err, errlen, "--speed: '%s' is not a positive number (allowed: e.g. 0.5, 1, 10)", value);
            return -1;
        }
    }
    return 0;
}

/* Parses argv by spec into o; 0 to go on, else the exit status (help printed: 0; usage: 2). */
static int parse(const pdbx_cli_spec *spec, int argc, char **argv, pdbx_explorer_opts *o, int *done)
{
    char **pos;
    int npos;
    memset(o, 0, sizeof(*o));
    o->speed = 1;
    int rc = pdbx_cli_parse(spec, argc, argv, explore_opt, o, &pos, &npos);
    *done = rc != 0;
    if (rc != 0)
        return pdbx_cli_parse_exit(rc);
    if (npos > 0)
        o->replay_file = pos[0];
    return 0;
}

/* An explicit --store follows the rule of run (cli.h pdbx_cli_open_store): the explorer starts
 * sweeps, so it makes a store in a new or empty directory and refuses any other non-store. */
static int check_store(const char *cmd, const pdbx_explorer_opts *o)
{
    pdbx_store *st;
    int rc = o->store ? pdbx_cli_open_store(cmd, o->store, 1, &st) : 0;
    if (o->store && rc == 0)
        pdbx_store_close(st);
    return rc;
}

int pdbx_cmd_explore(int argc, char **argv)
{
    pdbx_explorer_opts o;
    int done, rc = parse(&explore_spec, argc, argv, &o, &done);
    if (done || (rc = check_store(NULL, &o)) != 0)
        return rc;
    return pdbx_explorer_run(&o, ui_screens);
}

int pdbx_cmd_replay(int argc, char **argv)
{
    pdbx_explorer_opts o;
    int done, rc = parse(&replay_spec, argc, argv, &o, &done);
    if (done)
        return rc;
    if (!o.replay_file)      /* said here rather than by the parser: it names what FILE is */
        return pdbx_cli_fail(PDBX_EXIT_USAGE, "replay", "missing FILE (a recording or a run file)");
    if ((rc = check_store("replay", &o)) != 0)
        return rc;
    return pdbx_explorer_run(&o, ui_screens);
}
