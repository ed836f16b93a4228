/* pdbx_main.c: main() of `pdbx`. Dispatches argv[1] through the subcommand table below, built
 * from PDBX_CLI_COMMANDS (tui/cli/cli.h); the same table generates `pdbx --help`. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store/util/text.h"
#include "store/version.h"
#include "tui/cli/cli.h"

#define COMMAND_ENTRY(name, summary) { #name, summary, pdbx_cmd_##name },
static const pdbx_cli_command commands[] = { PDBX_CLI_COMMANDS(COMMAND_ENTRY) };
#undef COMMAND_ENTRY

/* What `pdbx` does without a subcommand: the explorer on a terminal; the overview (the quick
 * preset's plan and the runs) when stdin or stdout is not one, so scripts still get text. */
static int no_subcommand(int argc, char **argv)
{
    if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))
        return pdbx_cmd_explore(argc, argv);
    return pdbx_cmd_overview(argc, argv);
}

static void print_help(FILE *out)
{
    size_t w = 0;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strlen(commands[i].name) > w)
            w = strlen(commands[i].name);
    fprintf(out, "usage: pdbx [--store DIR] [COMMAND [options]]\n\n"
                 "pdbx profiles the per-operator costs of a transformer layer (a ProfileDB) for\n"
                 "planning TP/PP/DP training. Without a command it opens the explorer (press ?\n"
                 "there for its keys; options: pdbx --explorer-help); without a terminal it\n"
                 "prints an overview.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-*s  %s\n", (int)w, commands[i].name, commands[i].summary);
    fprintf(out, "\n'pdbx COMMAND --help' describes a command's options. The store is --store DIR,\n"
                 "else $PDBX_STORE, else $XDG_DATA_HOME/pdbx, else ~/.local/share/pdbx.\n");
}

static const pdbx_cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(name, commands[i].name) == 0)
            return &commands[i];
    return NULL;
}

/* "unknown command" with the command the word begins (when only one does), else the nearest
 * within two edits and nearer than the word is long (so 'x' does not suggest 'ls'); exit 2. */
static int unknown_command(const char *word)
{
    const char *best = NULL;
    size_t best_d = 3, wl = strlen(word), nprefix = 0;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (wl && strncmp(word, commands[i].name, wl) == 0 && nprefix++ == 0)
            best = commands[i].name;
    if (nprefix == 1)
        best_d = 0;
    else
        best = NULL;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0] && best_d; i++) {
        size_t d = pdbx_edit_distance(word, commands[i].name);
        if (d < best_d && d < wl) {
            best_d = d;
            best = commands[i].name;
        }
    }
    if (best)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, NULL, "unknown command '%s'; did you mean '%s'? "
                             "(see 'pdbx --help')", word, best);
    return pdbx_cli_fail(PDBX_EXIT_USAGE, NULL, "unknown command '%s' (see 'pdbx --help')", word);
}

int main(int argc, char **argv)
{
    /* `pdbx --store DIR CMD ...` (the form the usage line shows) is `pdbx CMD --store DIR ...`:
     * rotate the command name in front of the store option. */
    if (argc >= 4 && strcmp(argv[1], "--store") == 0 && find_command(argv[3])) {
        char *cmd = argv[3];
        argv[3] = argv[2];
        argv[2] = argv[1];
        argv[1] = cmd;
    } else if (argc >= 3 && strncmp(argv[1], "--store=", 8) == 0 && find_command(argv[2])) {
        char *cmd = argv[2];
        argv[2] = argv[1];
        argv[1] = cmd;
    }
    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
            print_help(stdout);
            return PDBX_EXIT_OK;
        }
        if (argc >= 2 && strcmp(argv[1], "--explorer-help") == 0) {
            char *help[] = { "pdbx", "--help", NULL };
            return pdbx_cmd_explore(2, help);
        }
        if (argc == 2 && strcmp(argv[1], "--dump-cli") == 0)   /* hidden: for completion and man */
            return pdbx_cli_dump_all(commands, sizeof commands / sizeof commands[0]);
        if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
            printf("pdbx %s (%s)\n", pdbx_version(), pdbx_git_rev());
            return PDBX_EXIT_OK;
        }
        argv[0] = "pdbx";
        return no_subcommand(argc, argv);
    }
    const pdbx_cli_command *c = find_command(argv[1]);
    if (c)
        return c->run(argc - 1, argv + 1);
    return unknown_command(argv[1]);
}
