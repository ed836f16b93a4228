/* engine_args.h: pdbx-engine's command line.
 *   pdbx-engine --spec FILE --store DIR [--run-id ID] [--backend auto|cpu|cuda]
 *   pdbx-engine --spec FILE --validate TPxPPxDP --mbs M --gbs B [--layers L] [--iters N]
 *               --out FILE [--backend B]         (validate mode, engine_validate.h)
 * Pure parsing (no MPI, no I/O): every rank parses the same argv the same way, and rank 0
 * alone prints the one-line error (usage errors exit 2 on every rank). */
#ifndef PDBX_ENGINE_ARGS_H
#define PDBX_ENGINE_ARGS_H

#include <stddef.h>

#include "engine/engine_validate.h"

typedef struct {
    const char *spec_path;
    const char *store_dir;
    const char *run_id;        /* NULL: a new run */
    const char *backend;       /* NULL: the spec's backend */
    int help;
    int version;               /* --version: print "pdbx-engine VERSION (REV)" and exit 0 */
    /* validate mode (--validate given): the configuration, sizes and result file; --store and
     * --run-id are then optional and unused */
    int validate;
    pdbx_validate_args v;
} pdbx_engine_args;

/* 0 ok, -1 with a one-line message naming the argument. */
int pdbx_engine_args_parse(int argc, char **argv, pdbx_engine_args *out, char *err, size_t errlen);
const char *pdbx_engine_usage(void);

#endif
