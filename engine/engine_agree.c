/* engine_agree.c: agreement across ranks (engine_agree.h). */
#include "engine/engine_agree.h"

#include <limits.h>
#include <stdio.h>

#include "engine/engine_watch.h"

int pdbx_agree_status(pdbx_engine *e, int status, char *msg, int point)
{
    int all = status;
    pdbx_watch_begin("agree", point);
    MPI_Allreduce(&status, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (all != PDBX_ST_OK) {
        /* the lowest rank with that status and a message sends it: no buffer of every rank's
         * message on rank 0 (whose allocation could fail inside a collective) */
        int mine = status == all && msg[0] ? e->rank : INT_MAX, first = INT_MAX;
        MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (first != INT_MAX) {
            char theirs[PDBX_MSG_LEN];
            if (e->rank == first)
                snprintf(theirs, sizeof theirs, "%s", msg);
            MPI_Bcast(theirs, PDBX_MSG_LEN, MPI_CHAR, first, MPI_COMM_WORLD);
            if (e->rank == 0 && first == 0)
                snprintf(msg, PDBX_MSG_LEN, "%.250s", theirs);
            else if (e->rank == 0)
                snprintf(msg, PDBX_MSG_LEN, "rank %d: %.230s", first, theirs);
        }
    }
    pdbx_watch_end();
    return all;
}

int pdbx_agree_cancel(pdbx_engine *e, int point)
{
    int mine = pdbx_watch_cancelled(), any = 0;
    pdbx_watch_begin("agree_cancel", point);
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    pdbx_watch_end();
    if (any)
        e->cancelled = 1;
    return any;
}

int pdbx_agree_any(int mine)
{
    int any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}
