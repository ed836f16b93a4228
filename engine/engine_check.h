/* engine_check.h: `pdbx-engine --check BACKEND DTYPE`, the pre-launch check.
 *
 * Picks the backend exactly as a run does (engine/backends/registry.h: the cuda library loads
 * and finds a device, or auto falls back to cpu) and starts its compute side for the dtype
 * (the cpu backend refuses bf16 without cblas_sbgemm and fp16 always), then stops it. No MPI:
 * main() calls this before MPI_Init, so the check needs neither mpirun nor a second rank.
 * engine/launch/launch_check.h runs it for the CLI and the explorer's form, so a spec that
 * passes there is one the engine accepts.
 *
 * Output (stdout): exit 0 with line 1 "ok BACKEND" (the backend that will measure: cpu or
 * cuda) and an optional line 2, the registry's notice (why auto chose cpu); exit 1 with one
 * line, the reason; exit 2 for bad arguments (one line naming the argument).
 */
#ifndef PDBX_ENGINE_CHECK_H
#define PDBX_ENGINE_CHECK_H

/* -1 when argv is not a check invocation (argv[1] != "--check"), else the exit code. */
int pdbx_engine_check_main(int argc, char **argv);

#endif
