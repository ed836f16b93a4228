/* engine_run.h: the lifecycle of one pdbx-engine launch, in the order main() calls it.
 *
 *   configure: parse the arguments; rank 0 loads and validates the spec (and PDBX_FAULT) and
 *              sends them to the others; every rank expands the plan and checks that some
 *              config needs this many ranks. A bad argument or spec is one line from rank 0.
 *   start:     discover nodes and hosts, pick and start the compute and comm backends (every
 *              rank agrees on the outcome), rank 0 creates the run (or, with an existing
 *              --run-id, opens it to append) and writes run_start (or launch).
 *   sweep:     progress heartbeat and watchdog, the sweep, then rank 0 writes run_end when the
 *              whole plan is done or the run was cancelled or failed; the run id on stdout.
 *   validate:  (--validate instead of sweep: configure checks the configuration instead of
 *              the plan, start opens no run) the validation of engine_validate.h (its result
 *              in the --out file, nothing on stdout).
 *   close:     backends, event writer and plan freed (safe after any of the above).
 *
 * Each step returns PDBX_RUN_GO to go on, or the exit code: 0 done or cancelled (or --help),
 * 1 runtime failure, 2 usage error (bad arguments, bad spec, no config for this rank count).
 * A watchdog timeout writes run_end failed (rank 0, or the first rank that sees none) and
 * aborts the job with exit code 4.
 */
#ifndef PDBX_ENGINE_RUN_H
#define PDBX_ENGINE_RUN_H

#include "engine/engine_args.h"
#include "engine/engine_sweep.h"

#define PDBX_RUN_GO (-1)

int pdbx_run_configure(pdbx_engine *e, int argc, char **argv, pdbx_engine_args *args);
int pdbx_run_start(pdbx_engine *e, const pdbx_engine_args *args);
int pdbx_run_sweep(pdbx_engine *e);
int pdbx_run_validate(pdbx_engine *e, const pdbx_engine_args *args);
void pdbx_run_close(pdbx_engine *e);

#endif
