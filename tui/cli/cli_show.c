/* cli_show.c: `pdbx show RUN`: per parallel config a table MBS x ops (ms) of one pass (fwd,
 * bwd or both: store/profiledb.h pdbx_point_cell_pass) with the measured layer and total cells
 * (store/runtable.h, the table every view reads) and each point's status, noisy cells marked
 * '!', the measured bwd/fwd ratio when the run has backward cells, each cell's samples, CI, CV
 * and provenance (--stats), whether the run was measured under load, the point's parallelism
 * traffic (comm), its predicted profile memory beside the measured peak, and the collectives
 * sweep; as an aligned table, JSON or CSV. This file: options, loading, the format;
 * the printers are cli_show_{table,sections,formats}.c (cli_show.h). */
#include "tui/cli/cli_show.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "store/events.h"
#include "store/validation.h"
#include "tui/cli/cli.h"
#include "store/util/fmt.h"

static const pdbx_cli_opt show_opts[] = {
    PDBX_CLI_OPT_STORE,
    { "tp", "N", "only the configs with this TP degree" },
    PDBX_CLI_OPT_STAT,
    { "format", "FMT", "table (default), json or csv (csv: the op table only)" },
    PDBX_CLI_OPT_ATTRIBUTION,
    PDBX_CLI_OPT_PASS,
    { "stats", NULL, "add per config a table of each cell's samples (n), 95% CI and CV (% of the "
                     "mean) and where it was measured" },
    { NULL, NULL, NULL },
};

static const pdbx_cli_spec show_spec = {
    .name = "show", .args = "RUN", .opts = show_opts, .min_args = 1, .max_args = 1,
    .about = "Prints a run: per parallel config (TP, PP, DP) a table of MBS x ops in ms per\n"
             "execution on one TP rank (the max across TP ranks), with 'layer' (one layer's\n"
             "forward) and 'total' (the whole step's forward), both measured by the engine (N/A\n"
             "in runs recorded without them, never a sum of the ops), each point's status (ok,\n"
             "oom, predicted_oom, skipped ...), the comm cells, each point's predicted profile\n"
             "memory (what the engine allocates on one rank) beside its measured peak, and the\n"
             "collectives. A value marked '!' is noisy (CV > 5%). Runs measured with passes\n"
             "fwd,bwd also print the measured bwd/fwd ratio per op; --pass picks the cells.\n"
             PDBX_CLI_ABOUT_RUN,
};

static int show_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err, size_t errlen)
{
    show_args *a = ctx;
    if (strcmp(opt->name, "store") == 0) {
        a->store = value;
        return 0;
    }
    if (strcmp(opt->name, "tp") == 0)
        return pdbx_cli_int(opt->name, value, 1, 1 << 20, &a->tp, err, errlen);
    if (strcmp(opt->name, "stat") == 0)
        return pdbx_cli_stat(opt->name, value, &a->stat, err, errlen);
    if (strcmp(opt->name, "format") == 0)
        return pdbx_cli_choice(opt->name, value, pdbx_cli_formats, &a->format, err, errlen);
    if (strcmp(opt->name, "attribution") == 0)
        return pdbx_cli_choice(opt->name, value, pdbx_cli_attributions, &a->attribution, err, errlen);
    if (strcmp(opt->name, "pass") == 0)
        return pdbx_cli_pass(opt->name, value, &a->pass, err, errlen);
    if (strcmp(opt->name, "stats") == 0)
        a->stats = 1;
    return 0;
}

/* A point left "running" by a run that is no longer running (crash, corruption) never finished:
 * say so rather than suggest it is still being measured. */
const char *show_status_text(const pdbx_run *run, const pdbx_point *p)
{
    if (p->status == PDBX_POINT_RUNNING && run->status != PDBX_RUN_RUNNING)
        return "unfinished";
    return pdbx_point_status_name(p->status);
}

/* "--tp: run X has no TP N (has: ...)" */
static int no_such_tp(const pdbx_run *run, int tp)
{
    int all[256][PDBX_CFG_DIMS], tps[256];
    size_t n = pdbx_cli_run_configs(run, 0, all, 256), ntp = 0;
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        for (size_t j = 0; j < ntp; j++)
            seen |= tps[j] == all[i][0];
        if (!seen)
            tps[ntp++] = all[i][0];
    }
    char list[256];
    pdbx_fmt_int_list(tps, ntp, list, sizeof list);
    return pdbx_cli_fail(PDBX_EXIT_USAGE, show_spec.name, "--tp: run %s has no TP %d (has: %s)",
                         run->id, tp, list);
}

static int show_table(const pdbx_runtable *t, const show_args *a, FILE *out)
{
    pdbx_rt_col cols[PDBX_RT_MAX_COLS];
    size_t ncols = pdbx_rt_columns(pdbx_cli_attr(a->attribution), cols);
    if (a->format == PDBX_CLI_FMT_JSON)
        return show_print_json(t, a, cols, ncols, out);
    if (a->format == PDBX_CLI_FMT_CSV)
        return show_print_csv(t, a, cols, ncols, out);
    int err = 0;
    show_print_header(t->run, a, out);
    for (size_t i = 0; i < t->nconfigs && !err; i++)
        err = show_print_config_table(t->run, &t->configs[i], a, cols, ncols, out);
    if (!err && t->nconfigs == 0)
        fprintf(out, "\nno points in this run\n");
    if (!err)
        err = show_print_inference(t->run, a, out);
    if (!err)
        err = show_print_collectives(t->run, a, out);
    if (!err)
        show_print_validations(a, out);
    return err;
}

int pdbx_cmd_show(int argc, char **argv)
{
    show_args a = { .stat = PDBX_STAT_MEAN, .format = PDBX_CLI_FMT_TABLE, .attribution = PDBX_CLI_ATTR_PURE };
    char **pos;
    int npos;
    int rc = pdbx_cli_parse(&show_spec, argc, argv, show_opt, &a, &pos, &npos);
    if (rc != 0)
        return pdbx_cli_parse_exit(rc);
    if (a.attribution == PDBX_CLI_ATTR_FASOP && a.stat == PDBX_STAT_STD)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, show_spec.name,
                             "--stat: 'std' cannot be summed into FASOP columns (use --attribution pure)");
    pdbx_store *st = NULL;
    pdbx_run run;
    pdbx_runtable t = { 0 };
    pdbx_run_init(&run);
    if (!strchr(pos[0], '/') && (rc = pdbx_cli_open_store(show_spec.name, a.store, 0, &st)) != 0)
        return rc;
    if ((rc = pdbx_cli_load_run(show_spec.name, st, pos[0], &run)) != 0
        || (rc = pdbx_cli_runtable(show_spec.name, &run, a.tp, (pdbx_pass_sel)a.pass, &t)) != 0)
        goto done;
    pdbx_validation *vals = NULL;
    if (st) {
        char verr[512];
        if (pdbx_validation_list(pdbx_store_dir(st), run.id, &vals, &a.nvals, &a.vals_skipped, verr,
                                 sizeof verr) != 0)
            fprintf(stderr, "pdbx show: warning: validations not read: %s\n", verr);
        a.vals = vals;
    }
    if (a.tp > 0 && t.nconfigs == 0)
        rc = no_such_tp(&run, a.tp);
    else if (show_table(&t, &a, stdout) != 0)
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, show_spec.name, "out of memory");
    free(vals);
done:
    pdbx_runtable_free(&t);
    pdbx_run_free(&run);
    if (st)
        pdbx_store_close(st);
    return rc;
}
