/* engine_main.c: main() of pdbx-engine, the MPI profiling engine.
 *
 *   mpirun -np N pdbx-engine --spec FILE --store DIR [--run-id ID] [--backend B]
 *   mpirun -np N pdbx-engine --spec FILE --validate TPxPPxDP --mbs M --gbs B ... --out FILE
 *
 * The launch's steps (configure, start, sweep, close), their order and exit codes are
 * engine_run.h's: 0 done or cancelled, 1 runtime failure, 2 usage error.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine_check.h"
#include "engine/engine_run.h"
#include "store/util/clock.h"

/* The `pdbx run` supervisor gives each run a directory for OpenMPI's shared-memory segments
 * (engine/launch/launch_supervisor.c) and removes it after mpirun; when the supervisor died
 * (supervisor lost), nobody would. MPI_Finalize has unlinked this rank's segments: the last rank
 * out finds the directory empty and removes it (rmdir leaves a directory in use alone). */
static void leave_shm_dir(void)
{
    const char *dir = getenv("OMPI_MCA_btl_vader_backing_directory");
    const char *base = dir ? strrchr(dir, '/') : NULL;
    if (base && strncmp(base, "/pdbx-", 6) == 0)
        rmdir(dir);
}

int main(int argc, char **argv)
{
    int check = pdbx_engine_check_main(argc, argv);   /* --check: before MPI, needs no mpirun */
    if (check >= 0)
        return check;
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "pdbx-engine: MPI_Init_thread failed\n");
        return 1;
    }
    pdbx_engine e;
    memset(&e, 0, sizeof e);
    MPI_Comm_rank(MPI_COMM_WORLD, &e.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &e.size);
    e.t_start = pdbx_mono_s();
    pdbx_engine_args args;
    int code = pdbx_run_configure(&e, argc, argv, &args);
    if (code == PDBX_RUN_GO)
        code = pdbx_run_start(&e, &args);
    if (code == PDBX_RUN_GO)
        code = args.validate ? pdbx_run_validate(&e, &args) : pdbx_run_sweep(&e);
    pdbx_run_close(&e);
    MPI_Finalize();
    leave_shm_dir();
    return code;
}
