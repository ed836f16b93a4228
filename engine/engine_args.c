/* engine_args.c: pdbx-engine's command line (engine_args.h). */
#include "engine/engine_args.h"
#include "store/layout.h"

#include <stdio.h>
#include <string.h>

const char *pdbx_engine_usage(void)
{
    return "usage: mpirun -np N pdbx-engine --spec FILE --store DIR [--run-id ID] "
           "[--backend auto|cpu|cuda]\n"
           "  Measures the sweep points of FILE whose tp*pp*dp equals N and appends the events to\n"
           "  DIR/runs/<ID>.pdbx (created when ID is new; a second launch with the same ID adds the\n"
           "  configs of another rank count). Usually started by `pdbx run`.\n";
}

int pdbx_engine_args_parse(int argc, char **argv, pdbx_engine_args *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            out->help = 1;
            return 0;
        } else if (strcmp(a, "--spec") == 0) {
            slot = &out->spec_path;
        } else if (strcmp(a, "--store") == 0) {
            slot = &out->store_dir;
        } else if (strcmp(a, "--run-id") == 0) {
            slot = &out->run_id;
        } else if (strcmp(a, "--backend") == 0) {
            slot = &out->backend;
        } else {
            snprintf(err, errlen, "unknown argument '%s' (allowed: --spec, --store, --run-id, "
                     "--backend, --help)", a);
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
    if (!out->store_dir) {
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
