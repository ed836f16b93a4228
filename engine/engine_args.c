/* engine_args.c: pdbx-engine's command line (engine_args.h). */
#include "engine/engine_args.h"
#include "store/layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/util/err.h"

const char *pdbx_engine_usage(void)
{
    return "usage: mpirun -np N pdbx-engine --spec FILE --store DIR [--run-id ID] "
           "[--backend auto|cpu|cuda]\n"
           "       pdbx-engine --help | --version\n"
           "  Measures the sweep points of FILE whose tp*pp*dp equals N and appends the events to\n"
           "  DIR/runs/<ID>.pdbx (created when ID is new; a second launch with the same ID adds the\n"
           "  configs of another rank count). Usually started by `pdbx run`.\n"
           "\n"
           "       mpirun -np TP*PP*DP pdbx-engine --spec FILE --validate TPxPPxDP[xEP] --mbs M --gbs B\n"
           "                                [--layers L] [--iters N] --out FILE [--backend B]\n"
           "  Validate mode: runs real training iterations of FILE's model (L decoder layers, default\n"
           "  the profiled layers rounded up to a multiple of PP, split evenly over the stages) under a\n"
           "  1F1B schedule of gbs / (mbs * dp) micro-batches: every op's forward and backward, the TP\n"
           "  all-reduces, PP send/recv, the DP gradient all-reduce. One warm-up iteration, then N\n"
           "  measured (default 3), each timed from a barrier to the last rank's end; the result JSON\n"
           "  goes to --out. Usually started by `pdbx validate`.\n";
}

/* A positive integer option value (at most 1e6). */
static int int_arg(const char *name, const char *text, int min, int *out, char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < min || v > 1000000)
        return pdbx_fail(err, errlen, "%s: '%s' is not a whole number of %d..1000000", name, text, min);
    *out = (int)v;
    return 0;
}

/* The --validate mode's arguments (vals: --validate, --mbs, --gbs, --layers, --iters as given,
 * NULL when absent): 0, or -1 with a message. */
static int validate_args(pdbx_engine_args *out, const char *const vals[5], char *err, size_t errlen)
{
    const char *config = vals[0], *mbs = vals[1], *gbs = vals[2], *layers = vals[3], *iters = vals[4];
    out->validate = 1;
    if (!config)
        return pdbx_fail(err, errlen, "--validate TPxPPxDP is required with --mbs, --gbs, "
                         "--layers, --iters and --out");
    if (pdbx_validate_parse_config(config, &out->v, err, errlen) != 0)
        return -1;
    if (!mbs || !gbs || !out->v.out_path)
        return pdbx_fail(err, errlen, "--validate needs --mbs M, --gbs B and --out FILE");
    if (int_arg("--mbs", mbs, 1, &out->v.mbs, err, errlen) || int_arg("--gbs", gbs, 1, &out->v.gbs, err, errlen) ||
        (layers && int_arg("--layers", layers, 1, &out->v.layers, err, errlen)) ||
        (iters && int_arg("--iters", iters, 1, &out->v.iters, err, errlen)))
        return -1;
    if (out->run_id)
        return pdbx_fail(err, errlen, "--run-id: a validation writes no run (it writes --out)");
    return 0;
}

int pdbx_engine_args_parse(int argc, char **argv, pdbx_engine_args *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *config = NULL, *mbs = NULL, *gbs = NULL, *layers = NULL, *iters = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            out->help = 1;
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            out->version = 1;
            return 0;
        } else if (strcmp(a, "--spec") == 0) {
            slot = &out->spec_path;
        } else if (strcmp(a, "--store") == 0) {
            slot = &out->store_dir;
        } else if (strcmp(a, "--run-id") == 0) {
            slot = &out->run_id;
        } else if (strcmp(a, "--backend") == 0) {
            slot = &out->backend;
        } else if (strcmp(a, "--validate") == 0) {
            slot = &config;
        } else if (strcmp(a, "--mbs") == 0) {
            slot = &mbs;
        } else if (strcmp(a, "--gbs") == 0) {
            slot = &gbs;
        } else if (strcmp(a, "--layers") == 0) {
            slot = &layers;
        } else if (strcmp(a, "--iters") == 0) {
            slot = &iters;
        } else if (strcmp(a, "--out") == 0) {
            slot = &out->v.out_path;
        } else {
            snprintf(err, errlen, "unknown argument '%s' (allowed: --spec, --store, --run-id, "
                     "--backend, --validate, --mbs, --gbs, --layers, --iters, --out, --help, --version)", a);
            return -1;
        }
        if (i + 1 >= argc || argv[i + 1][0] == '\0') {
            snprintf(err, errlen, "%s needs a value", a);
            return -1;
        }
        *slot = argv[++i];
    }
    if (!out->spec_path) {
        snprintf(err, errlen, "--spec FILE is required");
        return -1;
    }
    if (config || mbs || gbs || layers || iters || out->v.out_path) {
        const char *vals[] = { config, mbs, gbs, layers, iters };
        if (validate_args(out, vals, err, errlen) != 0)
            return -1;
    } else if (!out->store_dir) {
        snprintf(err, errlen, "--store DIR is required");
        return -1;
    }
    if (out->backend && strcmp(out->backend, "auto") && strcmp(out->backend, "cpu") &&
        strcmp(out->backend, "cuda")) {
        snprintf(err, errlen, "--backend: '%s' is not a backend (allowed: auto, cpu, cuda)",
                 out->backend);
        return -1;
    }
    if (out->run_id && !pdbx_layout_valid_id(out->run_id)) {
        snprintf(err, errlen, "--run-id: '%s' is not a run id (1-63 of A-Z a-z 0-9 . _ -, "
                 "not starting with '.')", out->run_id);
        return -1;
    }
    return 0;
}
