/* cli_show.h: what the files of `pdbx show` share (cli_show*.c only; the dispatcher sees
 * pdbx_cmd_show in cli.h).
 *
 * cli_show.c:          options, loading the run and its validations, picking the format;
 * cli_show_table.c:    the aligned table's header and per-config tables;
 * cli_show_sections.c: the inference, collectives and validations sections;
 * cli_show_formats.c:  --format json and --format csv.
 * Every printer writes to out and returns 0, or -1 out of memory (the void ones cannot fail).
 */
#ifndef PDBX_CLI_SHOW_H
#define PDBX_CLI_SHOW_H

#include <stddef.h>
#include <stdio.h>

#include "store/runtable.h"
#include "store/validation.h"
#include "tui/cli/cli.h"

typedef struct {
    const char *store;
    int tp, stat, format, attribution, pass, stats;
    /* the run's `pdbx validate` records (store/validation.h), oldest first */
    const pdbx_validation *vals;
    size_t nvals, vals_skipped;
} show_args;

/* A point's status as show prints it ("unfinished": left running by a run that is not). */
const char *show_status_text(const pdbx_run *run, const pdbx_point *p);

void show_print_header(const pdbx_run *run, const show_args *a, FILE *out);
int show_print_config_table(const pdbx_run *run, const pdbx_rt_config *cfg, const show_args *a,
                            const pdbx_rt_col *cols, size_t ncols, FILE *out);
int show_print_inference(const pdbx_run *run, const show_args *a, FILE *out);
int show_print_collectives(const pdbx_run *run, const show_args *a, FILE *out);
void show_print_validations(const show_args *a, FILE *out);
int show_print_json(const pdbx_runtable *t, const show_args *a, const pdbx_rt_col *cols,
                    size_t ncols, FILE *out);
int show_print_csv(const pdbx_runtable *t, const show_args *a, const pdbx_rt_col *cols,
                   size_t ncols, FILE *out);

#endif
