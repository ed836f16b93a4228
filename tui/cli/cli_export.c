/* cli_export.c: `pdbx export RUN`: FASOP NPZ (--npz DIR), the legacy FASOP known-cost files
 * (--fasop-npy DIR), Vidur CSV (--csv DIR) and a Chrome trace (--trace FILE), any combination;
 * prints every file written, one per line. */
#include <string.h>

#include "store/export/export.h"
#include "store/util/fs.h"
#include "tui/cli/cli.h"

static const pdbx_cli_opt export_opts[] = {
    PDBX_CLI_OPT_STORE,
    { "npz", "DIR", "write FASOP NPZ files {model}_{gpu}_{tp}.npz into DIR" },
    { "fasop-npy", "DIR", "write the HPDC'24 FASOP's known-cost files {model}_{gpu}_{tp}.npy "
                          "(1-D, seconds, MBS 1) into DIR" },
    { "model-tag", "T", "FASOP model type in the NPZ/npy names (default: the run's model tag)" },
    { "gpu-tag", "G", "GPU name in the NPZ/npy names (default: the run's GPU tag)" },
    { "attribution", "ATTR", "NPZ columns: fasop (default: FASOP's module timing) or pure (per op)" },
    { "stat", "STAT", "statistic in the NPZ cells: mean (default, as FASOP), median, min, max" },
    { "pass", "PASS", "NPZ cells: fwd (default, what FASOP reads) or both (fwd + bwd, said in "
                      "meta.json); bwd is refused" },
    { "csv", "DIR", "write Vidur CSV files (mlp.csv, all_reduce.csv, send_recv.csv; the steps' own "
                    "traffic in step_comm.csv) into DIR" },
    { "trace", "FILE", "write a Chrome trace (JSON) of one measured step per rank to FILE" },
    { NULL, NULL, NULL },
};

static const pdbx_cli_spec export_spec = {
    .name = "export", .args = "RUN", .opts = export_opts, .min_args = 1, .max_args = 1,
    .about = "Writes files other tools read from a run: FASOP NPZ (--npz, the aicomp FASOP),\n"
             "the HPDC'24 FASOP's known-cost .npy files (--fasop-npy), Vidur CSV (--csv) and a\n"
             "Chrome trace (--trace), any combination; prints the path of every file written.\n"
             PDBX_CLI_ABOUT_RUN,
};

typedef struct {
    const char *store, *npz, *fasop_npy, *csv, *trace, *model_tag, *gpu_tag;
    int attribution, stat, pass;
    int attribution_set, stat_set, pass_set;
} export_args;

static const char *const npz_attributions[] = { "fasop", "pure", NULL };   /* = pdbx_attribution */

static int export_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err, size_t errlen)
{
    export_args *a = ctx;
    const char *n = opt->name;
    if (*value == '\0') {
        snprintf(err, errlen, "--%s: the value is empty", n);
        return -1;
    }
    if (strcmp(n, "store") == 0)
        a->store = value;
    else if (strcmp(n, "npz") == 0)
        a->npz = value;
    else if (strcmp(n, "fasop-npy") == 0)
        a->fasop_npy = value;
    else if (strcmp(n, "csv") == 0)
        a->csv = value;
    else if (strcmp(n, "trace") == 0)
        a->trace = value;
    else if (strcmp(n, "model-tag") == 0)
        a->model_tag = value;
    else if (strcmp(n, "gpu-tag") == 0)
        a->gpu_tag = value;
    else if (strcmp(n, "attribution") == 0) {
        a->attribution_set = 1;
        return pdbx_cli_choice(n, value, npz_attributions, &a->attribution, err, errlen);
    } else if (strcmp(n, "pass") == 0) {
        a->pass_set = 1;
        if (pdbx_cli_pass(n, value, &a->pass, err, errlen) != 0)
            return -1;
        if (a->pass == PDBX_PASS_SEL_BWD) {
            snprintf(err, errlen, "--pass: 'bwd' makes no FASOP profile (FASOP reads forward times "
                     "and multiplies them by 3; allowed: fwd, or both for fwd + bwd per cell)");
            return -1;
        }
    } else if (strcmp(n, "stat") == 0) {
        a->stat_set = 1;
        if (pdbx_cli_stat(n, value, &a->stat, err, errlen) != 0
            || pdbx_rt_check_time_stat((pdbx_stat_kind)a->stat, err, errlen) != 0)
            return -1;
    }
    /* A tag ends up in a file name: refuse path separators. */
    if ((a->model_tag == value || a->gpu_tag == value) && strchr(value, '/')) {
        snprintf(err, errlen, "--%s: '%s' contains '/' (it becomes part of a file name)", n, value);
        return -1;
    }
    return 0;
}

/* mkdir -p of FILE's directory, so --trace out/t.json works like --npz out/ does. */
static int make_parent_dirs(const char *file, char *err, size_t errlen)
{
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", file) >= (int)sizeof dir) {
        snprintf(err, errlen, "%s: path too long", file);
        return -1;
    }
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    return pdbx_mkdirs(dir, err, errlen);
}

static void print_written(const char *path, void *ctx)
{
    (void)ctx;
    pdbx_cli_line(stdout, "%s", path);     /* the name carries the run's model tag */
    fflush(stdout);
}

int pdbx_cmd_export(int argc, char **argv)
{
    export_args a = { .attribution = PDBX_ATTR_FASOP, .stat = PDBX_STAT_MEAN };
    char **pos;
    int npos;
    int rc = pdbx_cli_parse(&export_spec, argc, argv, export_opt, &a, &pos, &npos);
    if (rc != 0)
        return pdbx_cli_parse_exit(rc);
    if (!a.npz && !a.fasop_npy && !a.csv && !a.trace)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, export_spec.name, "nothing to export: give --npz "
                             "DIR, --fasop-npy DIR, --csv DIR and/or --trace FILE");
    if (!a.npz && !a.fasop_npy && (a.model_tag || a.gpu_tag))
        return pdbx_cli_fail(PDBX_EXIT_USAGE, export_spec.name,
                             "--%s applies to --npz and --fasop-npy only (file names)",
                             a.model_tag ? "model-tag" : "gpu-tag");
    if (!a.npz && (a.attribution_set || a.stat_set || a.pass_set))
        return pdbx_cli_fail(PDBX_EXIT_USAGE, export_spec.name,
                             "--%s applies to --npz only (--fasop-npy is FASOP's forward layer "
                             "mean, the Vidur CSV and the trace are forward)",
                             a.attribution_set ? "attribution" : a.stat_set ? "stat" : "pass");

    pdbx_store *st = NULL;
    pdbx_run run;
    pdbx_run_init(&run);
    if (!strchr(pos[0], '/') && (rc = pdbx_cli_open_store(export_spec.name, a.store, 0, &st)) != 0)
        return rc;
    if ((rc = pdbx_cli_load_run(export_spec.name, st, pos[0], &run)) != 0)
        goto done;
    char perr[256];
    if (a.npz && pdbx_pass_sel_check(&run, (pdbx_pass_sel)a.pass, "--pass", perr, sizeof perr) != 0) {
        rc = pdbx_cli_fail(PDBX_EXIT_USAGE, export_spec.name, "%s", perr);
        goto done;
    }
    /* Each requested format is attempted even when an earlier one failed (an NPZ refused for
     * one TP degree must not silently drop the CSV and trace asked for in the same command);
     * the exit status says something was missing. */
    char err[1024] = "";
    rc = PDBX_EXIT_OK;
    if (a.npz) {
        pdbx_npz_options o = { .model_tag = a.model_tag, .gpu_tag = a.gpu_tag,
                               .attribution = (pdbx_attribution)a.attribution,
                               .stat = (pdbx_stat_kind)a.stat, .pass = (pdbx_pass_sel)a.pass };
        if (pdbx_export_npz(&run, a.npz, &o, print_written, NULL, err, sizeof err) != 0)
            rc = pdbx_cli_fail(PDBX_EXIT_FAIL, export_spec.name, "--npz: %s", err);
    }
    if (a.fasop_npy && pdbx_export_fasop_npy(&run, a.fasop_npy, a.model_tag, a.gpu_tag,
                                             print_written, NULL, err, sizeof err) != 0)
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, export_spec.name, "--fasop-npy: %s", err);
    if (a.csv && pdbx_export_csv(&run, a.csv, print_written, NULL, err, sizeof err) != 0)
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, export_spec.name, "--csv: %s", err);
    if (a.trace && (make_parent_dirs(a.trace, err, sizeof err) != 0
                    || pdbx_export_trace(&run, a.trace, print_written, NULL, err, sizeof err) != 0))
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, export_spec.name, "--trace: %s", err);
done:
    pdbx_run_free(&run);
    if (st)
        pdbx_store_close(st);
    return rc;
}
