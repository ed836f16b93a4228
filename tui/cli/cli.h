/* cli.h: the contract shared by the `pdbx` subcommands (tui/cli_*.c) and their dispatcher
 * (tui/pdbx_main.c).
 *
 * A subcommand is a handler `int fn(int argc, char **argv)` with argv[0] the subcommand's
 * name; it returns the process exit status:
 *   PDBX_EXIT_OK (0)     done
 *   PDBX_EXIT_FAIL (1)   the command could not do its job (I/O, a corrupt or failed export ...)
 *   PDBX_EXIT_USAGE (2)  the command line is wrong: unknown option, bad value, missing or extra
 *                        argument, a RUN that names no run or more than one
 * Every error is ONE line on stderr, "pdbx CMD: what is wrong", naming the option or value at
 * fault and what is allowed, e.g.
 *   pdbx show: --stat: 'avg' is not one of mean, median, min, max, std
 * Results go to stdout only, so `pdbx show RUN --format csv > f.csv` is clean.
 *
 * Options are declared once per subcommand in a pdbx_cli_opt table: pdbx_cli_parse() builds
 * the getopt_long table from it, handles --help (prints the help generated from the same
 * table) and reports unknown options, missing values and wrong positional counts. Every
 * subcommand accepts --help/-h, and --store DIR where it reads or writes the store.
 */
#ifndef PDBX_CLI_H
#define PDBX_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "engine/plan/plan.h"
#include "store/runtable.h"
#include "store/store.h"

enum { PDBX_EXIT_OK = 0, PDBX_EXIT_FAIL = 1, PDBX_EXIT_USAGE = 2 };

/* ---- the subcommand table (pdbx_main.c) ------------------------------------------------ */
typedef int (*pdbx_cli_handler)(int argc, char **argv);

typedef struct {
    const char *name;          /* what the user types: "show" */
    const char *summary;       /* one line for `pdbx --help` */
    pdbx_cli_handler run;
} pdbx_cli_command;

/* The subcommands, in `pdbx --help` order: X(name, one-line summary), handled by pdbx_cmd_<name>
 * (in tui/cli/cli_<file>.c). This list is the one home of "which subcommands exist": it declares
 * the handlers below and builds the dispatcher's table (pdbx_main.c), so adding a subcommand is
 * one line here plus its handler. */
#define PDBX_CLI_COMMANDS(X)                                                                     \
    X(ls, "list the runs in the store")                                                          \
    X(show, "print a run's per-op times (MBS x ops) per parallel config")                        \
    X(diff, "compare two runs: ratio B/A per cell, geometric mean per op")                       \
    X(export, "write FASOP NPZ, Vidur CSV and/or a Chrome trace of a run")                       \
    X(plan, "print a sweep's points and predicted memory (no run)")                              \
    X(advise, "rank (TP, PP, DP, MBS) by a training iteration estimated from a run")              \
    X(validate, "measure one config's training iteration vs advise's estimate")                   \
    X(record, "copy a run's event stream to a recording file")                                   \
    X(import, "import a recording file into the store")                                          \
    X(run, "start a sweep in the background and show its progress")                              \
    X(attach, "show the progress of a running sweep")                                            \
    X(cancel, "end a running sweep cleanly (status cancelled)")                                  \
    X(rm, "remove runs from the store (run file, logs, index entry)")                            \
    X(replay, "play a recording through the explorer's monitor")

#define PDBX_CLI_DECLARE_HANDLER(name, summary) int pdbx_cmd_##name(int argc, char **argv);
PDBX_CLI_COMMANDS(PDBX_CLI_DECLARE_HANDLER)
#undef PDBX_CLI_DECLARE_HANDLER

/* `pdbx` without a subcommand (pdbx_main.c picks one): the explorer on a terminal
 * (cli_explore.c), else the overview: the plan of the `quick` preset and the store listing
 * (cli_overview.c). argv[0] is "pdbx"; both accept --store DIR. */
int pdbx_cmd_explore(int argc, char **argv);
int pdbx_cmd_overview(int argc, char **argv);

/* ---- option tables and parsing (cli_common.c) ----------------------------------------- */
typedef struct {
    const char *name;          /* long name without "--"; NULL ends a table */
    const char *arg;           /* value placeholder for help ("N", "DIR"); NULL: a flag */
    const char *help;          /* one line */
} pdbx_cli_opt;

typedef struct {
    const char *name;          /* subcommand, as in "pdbx NAME" */
    const char *args;          /* positional synopsis, e.g. "RUN" or "RUN_A RUN_B" ("" none) */
    const char *about;         /* a few lines printed under the usage line by --help */
    const pdbx_cli_opt *opts;  /* NULL-name terminated; --help is added automatically */
    int min_args, max_args;    /* positional argument counts accepted */
} pdbx_cli_spec;

/* Called once per option in command-line order with the option's table entry and its value
 * (NULL for a flag). Returns 0, or -1 after writing a one-line reason to err (without the
 * "pdbx CMD: " prefix, which the parser adds). */
typedef int (*pdbx_cli_opt_fn)(const pdbx_cli_opt *opt, const char *value, void *ctx,
                               char *err, size_t errlen);

#define PDBX_CLI_HELP_SHOWN (-100)   /* pdbx_cli_parse printed --help: exit 0 */

/* Parses argv (argv[0] = the subcommand). Options may come before or after positionals; "--"
 * ends options. On success returns 0 and points *pos at the npos positional arguments (inside
 * argv). Returns PDBX_CLI_HELP_SHOWN after printing --help to stdout, or PDBX_EXIT_USAGE after
 * printing one error line. */
int pdbx_cli_parse(const pdbx_cli_spec *spec, int argc, char **argv, pdbx_cli_opt_fn fn,
                   void *ctx, char ***pos, int *npos);
/* Exit status for a parse result: 0 for help, the usage code otherwise. */
int pdbx_cli_parse_exit(int parse_rc);
void pdbx_cli_print_help(const pdbx_cli_spec *spec, FILE *out);

/* `pdbx --dump-cli` (cli_dump.c): every option table as one JSON document on stdout, read by
 * the generators of the bash completion and the man page. pdbx_cli_parse answers the hidden
 * option --dump-cli of any command with pdbx_cli_dump_spec (its table as one JSON object) and
 * PDBX_CLI_HELP_SHOWN, as it answers --help. */
int pdbx_cli_dump_all(const pdbx_cli_command *cmds, size_t n);
int pdbx_cli_dump_spec(const pdbx_cli_spec *spec);

/* The longest one-line error a command composes (longer ones are cut, still one line). */
#define PDBX_CLI_ERR_MAX 1024
/* "pdbx CMD: <message>\n" on stderr. Returns code, so `return pdbx_cli_fail(...)` reads well. */
int pdbx_cli_fail(int code, const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Value checks for option callbacks: on error they write "--OPT: 'VALUE' is ..." into err. */
int pdbx_cli_int(const char *opt, const char *value, long min, long max, int *out,
                 char *err, size_t errlen);
/* value must be one of the NULL-terminated choices; *out is its index. */
int pdbx_cli_choice(const char *opt, const char *value, const char *const *choices, int *out,
                    char *err, size_t errlen);
/* mean|median|min|max|std -> pdbx_stat_kind. */
int pdbx_cli_stat(const char *opt, const char *value, int *out, char *err, size_t errlen);

/* ---- the store and runs (cli_io.c) ----------------------------------------------------- */
/* Opens --store DIR (dir != NULL) or the default store ($PDBX_STORE, $XDG_DATA_HOME/pdbx,
 * ~/.local/share/pdbx). The one rule every command follows (docs/cli.md, "The store"): a store
 * is a directory with runs/ in it. The default store is created when missing. An explicit DIR
 * is created only by a command that writes runs (create != 0: run, import, the explorer), and
 * only when DIR does not exist or is an empty directory; a directory holding other things is
 * refused by every command. Prints the error and returns an exit code on failure. */
int pdbx_cli_open_store(const char *cmd, const char *dir, int create, pdbx_store **out);
/* Loads RUN: a unique id prefix (or whole id) in the store, or a path to a run file (it
 * contains '/'). The run is pdbx_run_init'ed here; free it with pdbx_run_free. An unknown or
 * ambiguous prefix is a usage error (2); an unreadable file a failure (1). */
int pdbx_cli_load_run(const char *cmd, pdbx_store *st, const char *ref, pdbx_run *run);

/* ---- rows of the run table as show and diff print them (cli_io.c) ----------------------
 * Columns and cells come from store/runtable.h (the one table every view reads). A row holds
 * every column's value and the point's MEASURED layer and total cells; NaN = not measured
 * (printed N/A, JSON null, CSV empty). */
typedef struct {
    double v[PDBX_RT_MAX_COLS];
    int valid[PDBX_RT_MAX_COLS];
    int noisy[PDBX_RT_MAX_COLS];   /* a measured op of the column has CV > PDBX_CV_NOISY */
    double layer, total;
    int layer_valid, total_valid;
} pdbx_cli_row;
void pdbx_cli_row_fill(const pdbx_rt_point *p, const pdbx_rt_col *cols, size_t ncols,
                       pdbx_stat_kind stat, pdbx_cli_row *r);
/* The run table of `run` with the op cells of pass (configs with tp == only_tp when
 * only_tp > 0). A pass the run cannot show (bwd or both without backward cells) is a usage
 * error: "--pass: 'bwd' needs backward cells, ..." (PDBX_EXIT_USAGE); out of memory prints
 * "out of memory" for cmd and returns PDBX_EXIT_FAIL; else 0. */
int pdbx_cli_runtable(const char *cmd, const pdbx_run *run, int only_tp, pdbx_pass_sel pass,
                      pdbx_runtable *t);
/* --pass fwd|bwd|both -> pdbx_pass_sel (an option callback's check; cli_common.c). */
int pdbx_cli_pass(const char *opt, const char *value, int *out, char *err, size_t errlen);
/* The legend line of the noisy mark, printed once under a table that shows one. */
#define PDBX_CLI_NOISY_LEGEND "! noisy: CV > 5% (std / mean of the cell's samples)"
/* The run table's attribution for an index of pdbx_cli_attributions. */
pdbx_attribution pdbx_cli_attr(int cli_attribution);
/* Options and choices several subcommands share, spelled once. */
#define PDBX_CLI_OPT_STORE \
    { "store", "DIR", "the store (default: $PDBX_STORE, $XDG_DATA_HOME/pdbx, ~/.local/share/pdbx)" }
#define PDBX_CLI_OPT_STAT \
    { "stat", "STAT", "statistic of the cells: mean (default), median, min, max, std" }
/* The last line of the --help text of every command that takes RUN. */
#define PDBX_CLI_ABOUT_RUN "RUN is a unique prefix of a run id, or a path to a run file or recording."
/* The option table of a command whose only option is --store. */
extern const pdbx_cli_opt pdbx_cli_store_only_opts[];
/* pdbx_cli_parse for such a command: *store is --store's value (NULL when absent; an empty
 * value is a usage error). Returns what pdbx_cli_parse returns. */
int pdbx_cli_parse_store_only(const pdbx_cli_spec *spec, int argc, char **argv, const char **store,
                              char ***pos);
#define PDBX_CLI_OPT_PASS \
    { "pass", "PASS", "fwd (default), bwd, or both (fwd + bwd per op; needs a run with passes fwd,bwd)" }
#define PDBX_CLI_OPT_ATTRIBUTION \
    { "attribution", "ATTR", "pure (default: one column per op) or fasop (FASOP's 10 columns)" }
enum { PDBX_CLI_FMT_TABLE = 0, PDBX_CLI_FMT_JSON, PDBX_CLI_FMT_CSV };
extern const char *const pdbx_cli_formats[];    /* "table", "json", "csv" (the enum's order) */
/* The attribution choices, in option order: "pure", "fasop". */
extern const char *const pdbx_cli_attributions[];
enum { PDBX_CLI_ATTR_PURE = 0, PDBX_CLI_ATTR_FASOP = 1 };

/* ---- pieces shared between subcommands (the overview reuses ls and plan) -------------- */
/* Prints the store listing (table or JSON) to out. Returns an exit code (errors printed). */
int pdbx_cli_list_runs(const char *cmd, pdbx_store *st, int json, FILE *out);
/* Validates spec, expands it and prints the plan (table or JSON). Returns an exit code. */
int pdbx_cli_plan_print(const char *cmd, const pdbx_spec *spec, int json, FILE *out);
/* (cli_io.c) Prints a JSON document (indented, one trailing newline) to out and deletes it (also
 * on failure, and doc may be NULL: a builder that ran out of memory); 0, or -1 out of memory.
 * The one exit for CLI JSON: what it prints is valid UTF-8 with no raw control (text.h). */
int pdbx_cli_emit_json(FILE *out, cJSON *doc);

/* ---- spec fields as options (`pdbx plan`, `pdbx run`; cli_common.c) ---------------------
 * Every field pdbx_spec_set accepts is also an option, '_' spelled '-' (--seq-len 2048), applied
 * in command-line order after the preset is loaded. */
typedef struct {
    pdbx_cli_opt *opts;        /* the command's own options, then one per spec field */
    size_t nextra;             /* how many of opts are the command's own */
    struct { const char *field, *value; } *ov;   /* overrides seen, in order */
    size_t nov, cap;
} pdbx_cli_spec_opts;
/* Builds opts from the command's own (extra, NULL-name terminated) plus the spec fields. */
int pdbx_cli_spec_opts_init(pdbx_cli_spec_opts *so, const pdbx_cli_opt *extra);
void pdbx_cli_spec_opts_free(pdbx_cli_spec_opts *so);
/* pdbx_cli_parse over spec (whose opts are so->opts): a spec-field option is recorded in so,
 * one of the command's own goes to own(ctx) (own may be NULL when the command has none).
 * Returns what pdbx_cli_parse returns. */
int pdbx_cli_parse_spec(const pdbx_cli_spec *spec, pdbx_cli_spec_opts *so, int argc, char **argv,
                        pdbx_cli_opt_fn own, void *ctx, char ***pos, int *npos);
/* Loads SPEC|PRESET (NULL: defaults) into spec and applies the overrides; on error prints the
 * one-line message for cmd and returns the exit code (PDBX_EXIT_USAGE), else 0. */
int pdbx_cli_spec_build(const char *cmd, const char *name, const pdbx_cli_spec_opts *so,
                        pdbx_spec *spec);

/* ---- shared output helpers (cli_io.c) ---------------------------------------------------- */
/* Prints one line (printf-style, the newline is added) made terminal-safe (pdbx_text_safe):
 * for every line that quotes a run's own strings (model, gpu, host, messages, reasons). The
 * format must not contain a newline or any other control character. Out of memory: nothing. */
void pdbx_cli_line(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes one CSV field (RFC 4180 quoting when needed), terminal-safe (pdbx_text_safe). */
void pdbx_csv_field(FILE *out, const char *s);
/* The distinct (tp, pp, dp, ep) configs of a run (pdbx_run_configs), optionally only those
 * with tp == only_tp (only_tp <= 0: all). Returns the count written. */
size_t pdbx_cli_run_configs(const pdbx_run *run, int only_tp, int (*out)[PDBX_CFG_DIMS], size_t cap);

#endif
