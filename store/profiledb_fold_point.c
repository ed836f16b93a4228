/* profiledb_fold_point.c: what one point's events do to its pdbx_point (profiledb.h):
 * point_start, op, step, comm, trace and point_end (profiledb_internal.h). No I/O. */
#include "store/profiledb_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>

#include "store/events.h"
#include "store/progress.h"
#include "store/util/err.h"
#include "store/util/text.h"

int pdb_apply_point_start(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen)
{
    pdbx_ev_point_start ps;
    memset(&ps, 0, sizeof ps);
    if (pdbx_event_decode_point_start(ev, &ps, err, errlen) != 0)
        return -1;
    pdbx_point *p = pdb_event_point(run, ps.point, PDBX_EV_POINT_START, err, errlen);
    if (!p)
        return -1;
    if (ps.has_shape && p->tp == 0)
        pdb_set_shape(p, ps.tp, ps.pp, ps.dp, ps.mbs, ps.seq_len);
    if (ps.ep > 1)
        p->ep = ps.ep;
    p->status = PDBX_POINT_RUNNING;
    if (t > 0)
        p->started = t;
    run->current_point = p->index;
    run->current_op[0] = '\0';     /* the previous point's op is not this one's */
    return 0;
}

/* Replaces *dst by the decoded cell src, which gives up its rank array; with dst NULL (no point,
 * or a cell that is not kept) src's rank array is freed. */
static void take_cell(pdbx_cell *dst, pdbx_cell *src)
{
    if (dst) {
        free(dst->rank);
        *dst = *src;
    } else {
        free(src->rank);
    }
    src->rank = NULL;
}

/* A decoded cell with more per-rank entries than PDBX_RUN_MAX_RANKS: refused (rank array
 * freed), err names the event. 0 when within the cap. */
static int cap_ranks(pdbx_cell *c, const char *ev, int point, char *err, size_t errlen)
{
    if (c->nranks <= PDBX_RUN_MAX_RANKS)
        return 0;
    pdbx_errf(err, errlen, "%s event (point %d): field \"ranks\" has %d entries; at most %d "
              "(PDBX_RUN_MAX_RANKS)", ev, point, c->nranks, PDBX_RUN_MAX_RANKS);
    free(c->rank);
    *c = (pdbx_cell){0};
    return -1;
}

int pdb_apply_op(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    pdbx_ev_op op;
    memset(&op, 0, sizeof op);
    if (pdbx_event_decode_op(ev, &op, err, errlen) != 0 ||
        cap_ranks(&op.cell, "op", op.point, err, errlen) != 0)
        return -1;
    pdbx_point *p = pdb_event_point(run, op.point, PDBX_EV_OP, err, errlen);
    /* an op this build does not know is skipped */
    pdbx_cell *cells = p ? (op.pass == PDBX_PASS_BWD ? p->bwd : p->op) : NULL;
    take_cell(cells && op.op >= 0 ? &cells[op.op] : NULL, &op.cell);
    return p ? 0 : -1;
}

int pdb_apply_step(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    pdbx_ev_step st;
    memset(&st, 0, sizeof st);
    if (pdbx_event_decode_step(ev, &st, err, errlen) != 0)
        return -1;
    if (cap_ranks(&st.layer, "step", st.point, err, errlen) != 0 ||
        cap_ranks(&st.total, "step", st.point, err, errlen) != 0) {
        free(st.layer.rank);
        free(st.total.rank);
        return -1;
    }
    pdbx_point *p = pdb_event_point(run, st.point, PDBX_EV_STEP, err, errlen);
    take_cell(p && st.layer.valid ? &p->layer : NULL, &st.layer);
    take_cell(p && st.total.valid ? &p->total : NULL, &st.total);
    return p ? 0 : -1;
}

int pdb_apply_comm(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    pdbx_ev_comm c;
    if (pdbx_event_decode_comm(ev, &c, err, errlen) != 0)
        return -1;
    pdbx_point *p = pdb_event_point(run, c.point, PDBX_EV_COMM, err, errlen);
    if (!p)
        return -1;
    pdbx_comm_cell *dst[PDBX_COMM_KINDS] = {&p->tp_allreduce, &p->pp_sendrecv, &p->dp_allreduce,
                                            &p->ep_alltoall};
    *dst[c.kind] = c.cell;
    return 0;
}

/* Grows *arr (elements of size sz) to hold need; 0 ok, -1 out of memory. */
int pdb_reserve(void **arr, size_t *cap, size_t need, size_t sz, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : first;
    while (n < need)
        n *= 2;
    void *na = realloc(*arr, n * sz);
    if (!na)
        return -1;
    *arr = na;
    *cap = n;
    return 0;
}

int pdb_apply_trace(pdbx_run *run, const cJSON *ev, char *err, size_t errlen)
{
    pdbx_ev_trace tr;
    int rc = pdbx_event_decode_trace(ev, &tr, err, errlen);
    /* a malformed entry is reported, the well formed ones are kept */
    if (tr.n > PDBX_RUN_MAX_TRACE_OPS - run->ntrace) {
        pdbx_errf(err, errlen, "trace event (point %d): %zu more entries would pass %d in the run "
                  "(PDBX_RUN_MAX_TRACE_OPS)", tr.point, tr.n, PDBX_RUN_MAX_TRACE_OPS);
        rc = -1;
    } else if (tr.n && pdb_reserve((void **)&run->trace, &run->trace_cap, run->ntrace + tr.n,
                        sizeof *run->trace, 256) != 0) {
        pdbx_errf(err, errlen, "trace event (point %d): out of memory", tr.point);
        rc = -1;
    } else if (tr.n) {
        memcpy(run->trace + run->ntrace, tr.ops, tr.n * sizeof *tr.ops);
        run->ntrace += tr.n;
    }
    free(tr.ops);
    return rc;
}

int pdb_apply_point_end(pdbx_run *run, const cJSON *ev, double t, char *err, size_t errlen)
{
    pdbx_ev_point_end pe;
    if (pdbx_event_decode_point_end(ev, &pe, err, errlen) != 0)
        return -1;
    pdbx_point *p = pdb_event_point(run, pe.point, PDBX_EV_POINT_END, err, errlen);
    if (!p)
        return -1;
    /* the progress model counts a point's work once, when it first ends */
    if (p->status == PDBX_POINT_PENDING || p->status == PDBX_POINT_RUNNING)
        pdbx_progress_fold_done(run, pdbx_progress_point_work(p),
                                pe.status != PDBX_POINT_SKIPPED && pe.status != PDBX_POINT_PREDICTED_OOM, t);
    p->status = pe.status;
    free(p->message);
    p->message = pe.message ? strndup(pe.message, PDBX_RUN_MAX_MESSAGE) : NULL;
    if (pe.message && strnlen(pe.message, PDBX_RUN_MAX_MESSAGE + 1) > PDBX_RUN_MAX_MESSAGE)
        pdbx_run_warn(run, "point_end event (point %d): field \"message\" cut to %d bytes "
                      "(PDBX_RUN_MAX_MESSAGE)", pe.point, PDBX_RUN_MAX_MESSAGE);
    if (t > 0)
        p->ended = t;
    if (pe.status == PDBX_POINT_PREDICTED_OOM)
        p->predicted_oom = 1;
    if (isfinite(pe.profile_mem_bytes))
        p->profile_mem_bytes = pe.profile_mem_bytes;
    if (isfinite(pe.mem_peak_bytes)) {
        p->mem_peak_bytes = pe.mem_peak_bytes;
        p->mem_base_bytes = pe.mem_base_bytes;
    }
    if (isfinite(pe.setup_s))
        p->setup_s = pe.setup_s;
    if (pe.noise.valid)
        p->noise = pe.noise;
    if (run->current_point == p->index) {
        run->current_point = -1;
        run->current_op[0] = '\0';
    }
    return 0;
}
