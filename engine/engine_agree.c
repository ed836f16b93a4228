/* engine_agree.c: agreement across ranks (engine_agree.h). */
#include "engine/engine_agree.h"

#include <limits.h>
#include <stdio.h>

#include "engine/engine_events.h"
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

int pdbx_agree_local_stop(const pdbx_engine *e)
{
    int code = (int)pdbx_watch_stop_code();
    if (e->ev && pdbx_events_failed(e->ev, NULL, 0) && code < PDBX_STOP_WRITE)
        code = PDBX_STOP_WRITE;
    return code;
}

static int agree_stop(pdbx_engine *e, MPI_Comm comm)
{
    int mine = pdbx_agree_local_stop(e), any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm);
    if (any) {
        e->cancelled = 1;
        if (any > e->stop)
            e->stop = any;
    }
    return any != 0;
}

int pdbx_agree_cancel(pdbx_engine *e, int point)
{
    pdbx_watch_begin("agree_cancel", point);
    int any = agree_stop(e, MPI_COMM_WORLD);
    pdbx_watch_end();
    return any;
}

int pdbx_agree_cancel_in(pdbx_engine *e, MPI_Comm comm)
{
    return agree_stop(e, comm);
}

int pdbx_agree_any(int mine)
{
    int any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}
