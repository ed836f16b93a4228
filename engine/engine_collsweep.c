/* engine_collsweep.c: the collectives sweep (engine_collsweep.h). */
#include "engine/engine_collsweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_agree.h"
#include "engine/engine_groups.h"
#include "engine/engine_stats.h"
#include "store/events.h"

#define NSTAT PDBX_ESTAT
#define MSG_LEN PDBX_MSG_LEN

/* Executions back to back per sample (nccl-tests' protocol, docs/cuda.md "Timing protocol"):
 * enough that a sample lasts COLL_SAMPLE_MS, from the group's slowest calibration execution,
 * at most COLL_MAX_ITERS (nccl-tests' default is 20 after 5 warm-up executions). */
#define COLL_SAMPLE_MS 1.0
#define COLL_MAX_ITERS 100

/* One group of the sweep as this rank sees it. */
typedef struct {
    pdbx_engine *e;
    int g;                     /* group size */
    const int *ranks;          /* its world ranks, ascending, rank 0 first */
    int member;                /* this rank is one of them */
    MPI_Comm sub;              /* MPI_COMM_NULL on non-members */
    pdbx_group *grp;
    int ranks_per_node;        /* of rank 0's host among the members */
    int nodes;                 /* distinct hosts among the members (real host names) */
    void *buf;
    double *x;                 /* steps samples */
} coll_group;

/* Rank 0: one coll event from the group's max statistics. */
static void coll_event(pdbx_engine *e, const coll_group *cg, pdbx_coll c, size_t bytes,
                       int out_of_place, const double *mx)
{
    int peers = c == PDBX_COLL_SEND_RECV ? 2 : cg->g;
    pdbx_coll_result r = { .bytes = (double)bytes, .nranks = cg->g,
                           .ranks_per_node = cg->ranks_per_node, .nodes = cg->nodes,
                           .spans_nodes = cg->nodes > 1, .in_place = !out_of_place };
    snprintf(r.coll, sizeof r.coll, "%s", pdbx_coll_name(c));
    pdbx_estats_unpack(mx, &r.time);
    r.algbw = r.time.mean > 0 ? (double)bytes / (r.time.mean / 1e3) / 1e9 : 0;
    r.busbw = r.algbw * pdbx_coll_busbw_factor(c, peers);
    pdbx_events_emit(e->ev, pdbx_event_coll(&r));
}

/* One barrier + one run of `iters` executions: 0 with the mean per execution in *ms, or -1
 * (the reason printed). */
static int coll_sample(coll_group *cg, const pdbx_coll_call *call, double *ms)
{
    pdbx_engine *e = cg->e;
    char err[MSG_LEN];
    pdbx_watch_begin("barrier", -1);
    int rc = e->be.comm->barrier(e->comm, cg->grp, e->spec.timeout_s, err, sizeof err);
    pdbx_watch_end();
    if (rc == 0) {
        pdbx_watch_begin(pdbx_coll_name(call->coll), -1);
        rc = e->be.comm->run(e->comm, cg->grp, call, cg->buf, ms, err, sizeof err);
        pdbx_watch_end();
    }
    if (rc != 0)
        fprintf(stderr, "pdbx-engine: rank %d: %s\n", e->rank, err);
    return rc;
}

int pdbx_coll_sweep_iters(double ms)
{
    if (!(ms > 0))
        return COLL_MAX_ITERS;
    double n = COLL_SAMPLE_MS / ms;
    return n >= COLL_MAX_ITERS ? COLL_MAX_ITERS : n <= 1 ? 1 : (int)n + (n > (int)n);
}

/* Members: warmup executions, one calibration execution whose slowest time over the group
 * sets the executions per sample (every member must run the same count: a collective), then
 * `steps` samples of that many back to back; the group's max statistics to rank 0. A failed
 * sample ends the samples (the stats hold what was measured); a failure before the
 * calibration's agreement ends them on every member. */
static void coll_one(coll_group *cg, pdbx_coll c, size_t bytes, int out_of_place)
{
    pdbx_engine *e = cg->e;
    const pdbx_spec *sp = &e->spec;
    size_t n = 0;
    pdbx_coll_call call = { c, sp->dtype, bytes, 1, out_of_place };
    double ms = 0, calib[2] = { 0, 0 }, agreed[2];   /* [slowest ms, any member failed] */
    for (int s = 0; s <= sp->warmup && !calib[1]; s++)   /* the last one calibrates */
        calib[1] = coll_sample(cg, &call, &ms) != 0;
    calib[0] = ms;
    pdbx_watch_begin("reduce", -1);
    MPI_Allreduce(calib, agreed, 2, MPI_DOUBLE, MPI_MAX, cg->sub);
    pdbx_watch_end();
    call.iters = pdbx_coll_sweep_iters(agreed[0]);
    for (int s = 0; s < sp->steps && !agreed[1]; s++) {
        if (coll_sample(cg, &call, &ms) != 0)
            break;
        cg->x[n++] = ms;
    }
    double mine[NSTAT], mx[NSTAT];
    pdbx_estats_pack(mine, cg->x, n);
    pdbx_watch_begin("reduce", -1);
    MPI_Reduce(mine, mx, NSTAT, MPI_DOUBLE, MPI_MAX, 0, cg->sub);
    pdbx_watch_end();
    if (e->rank == 0)
        coll_event(e, cg, c, bytes, out_of_place, mx);
}

/* all_gather and reduce_scatter are measured in place and out of place (nccl-tests' two
 * columns); all_to_all out of place only, the others in place only. */
static int coll_placements(pdbx_coll c)
{
    return c == PDBX_COLL_ALL_GATHER || c == PDBX_COLL_REDUCE_SCATTER ? 2 : 1;
}

/* Members: every collective at every size, agreeing on cancellation after each collective. */
static void coll_group_run(coll_group *cg)
{
    pdbx_engine *e = cg->e;
    const pdbx_spec *sp = &e->spec;
    for (int c = 0; c < PDBX_COLL_COUNT && !e->cancelled; c++) {
        for (int si = 0; si < sp->ncoll_sizes; si++) {
            size_t bytes = (size_t)sp->coll_sizes[si];
            if (bytes < (size_t)cg->g * sizeof(float))
                continue;
            for (int oop = 0; oop < coll_placements((pdbx_coll)c); oop++) {
                if (e->ev)
                    pdbx_events_progress_op(e->ev, pdbx_coll_name((pdbx_coll)c));
                coll_one(cg, (pdbx_coll)c, bytes, oop || c == PDBX_COLL_ALL_TO_ALL);   /* never in place */
                if (e->ev)
                    pdbx_events_progress_coll_done(e->ev);
            }
        }
        /* cancellation within the group; non-members wait at the world barrier */
        pdbx_agree_cancel_in(e, cg->sub);
    }
}

/* All ranks: split, create the members' group and agree that every member has it. 0, or -1
 * when some rank failed (rank 0 has written the warning; nothing is left allocated). */
static int coll_group_open(coll_group *cg)
{
    pdbx_engine *e = cg->e;
    char err[MSG_LEN] = "";
    int st = PDBX_ST_OK;
    cg->member = 0;
    for (int i = 0; i < cg->g; i++)
        cg->member |= cg->ranks[i] == e->rank;
    cg->sub = MPI_COMM_NULL;
    cg->grp = NULL;
    if (MPI_Comm_split(MPI_COMM_WORLD, cg->member ? 0 : MPI_UNDEFINED, e->rank, &cg->sub) !=
        MPI_SUCCESS) {
        st = PDBX_ST_ERROR;
        snprintf(err, sizeof err, "MPI_Comm_split failed");
    } else if (cg->member && pdbx_fault_hits(&e->fault, PDBX_FAULT_GROUP, e->rank, cg->g)) {
        st = PDBX_ST_ERROR;
        snprintf(err, sizeof err, "group creation failed (injected by PDBX_FAULT)");
    } else if (cg->member) {
        int me = 0;
        MPI_Comm_rank(cg->sub, &me);
        if (pdbx_group_open(e, &cg->sub, me, cg->g, &cg->grp, err, sizeof err) != 0)
            st = PDBX_ST_ERROR;
    }
    /* every rank, member or not: nobody goes on to a barrier a failed rank will never reach */
    if (pdbx_agree_status(e, st, err, -1) == PDBX_ST_OK)
        return 0;
    if (cg->grp)
        e->be.comm->group_destroy(e->comm, cg->grp);
    if (cg->sub != MPI_COMM_NULL)
        MPI_Comm_free(&cg->sub);
    if (e->ev) {
        char m[MSG_LEN + 96];
        snprintf(m, sizeof m, "collectives sweep stopped: creating the group of %d ranks failed: %s",
                 cg->g, err);
        pdbx_events_warning(e->ev, m);
    }
    return -1;
}

static void coll_group_close(coll_group *cg)
{
    if (!cg->member)
        return;
    cg->e->be.comm->group_destroy(cg->e->comm, cg->grp);
    MPI_Comm_free(&cg->sub);
}

/* The comm buffer of the largest size, agreed: 0, or -1 when some rank has none (warned).
 * all_to_all receives S more after the S it sends (out of place gather/scatter need S / n
 * there, n >= 2): 2 S in all. */
static int coll_buffer(pdbx_engine *e, void **buf)
{
    const pdbx_spec *sp = &e->spec;
    size_t maxb = 2 * (size_t)sp->coll_sizes[sp->ncoll_sizes - 1];
    char err[MSG_LEN] = "";
    int st = e->be.compute->comm_buffer(e->compute, maxb, buf, err, sizeof err) == 0 ? PDBX_ST_OK
                                                                                       : PDBX_ST_OOM;
    if (pdbx_agree_status(e, st, err, -1) == PDBX_ST_OK)
        return 0;
    if (e->ev) {
        char m[MSG_LEN + 64];
        snprintf(m, sizeof m, "collectives sweep skipped: %s", err);
        pdbx_events_warning(e->ev, m);
    }
    return -1;
}

/* Events of one group of g ranks: every collective at every size the group can split. */
static int group_count(const pdbx_spec *sp, int g)
{
    int per_size = 0;
    for (int c = 0; c < PDBX_COLL_COUNT; c++)
        per_size += coll_placements((pdbx_coll)c);
    int n = 0;
    for (int si = 0; si < sp->ncoll_sizes; si++)
        if ((size_t)sp->coll_sizes[si] >= (size_t)g * sizeof(float))
            n += per_size;
    return n;
}

int pdbx_coll_sweep_count(const pdbx_spec *sp, int world, int nodes)
{
    if (!sp->collectives || sp->ncoll_sizes == 0 || world < 2)
        return 0;
    int n = 0;
    for (int g = 2; g <= world; g *= 2)       /* the groups of pdbx_coll_sweep, in its order */
        n += group_count(sp, g);
    if (nodes >= 2 && nodes < world)          /* its one-rank-per-node group */
        n += group_count(sp, nodes);
    return n;
}

/* The lowest rank on each distinct host, ascending, into out; returns how many (the nodes). */
static int node_leaders(const pdbx_engine *e, int *out)
{
    int n = 0;
    for (int r = 0; r < e->size; r++) {
        int seen = 0;
        for (int k = 0; k < n && !seen; k++)
            seen = strcmp(e->hosts[out[k]], e->hosts[r]) == 0;
        if (!seen)
            out[n++] = r;
    }
    return n;
}

/* The group's ranks per node (on rank 0's host) and its distinct hosts, from the real names. */
static void group_hosts(const pdbx_engine *e, coll_group *cg)
{
    cg->ranks_per_node = 0;
    cg->nodes = 0;
    for (int i = 0; i < cg->g; i++) {
        const char *h = e->hosts[cg->ranks[i]];
        cg->ranks_per_node += strcmp(h, e->hosts[cg->ranks[0]]) == 0;
        int seen = 0;
        for (int k = 0; k < i && !seen; k++)
            seen = strcmp(e->hosts[cg->ranks[k]], h) == 0;
        cg->nodes += !seen;
    }
}

int pdbx_coll_sweep_nodes(const pdbx_engine *e)
{
    int *leaders = malloc(sizeof *leaders * (size_t)(e->size > 0 ? e->size : 1));
    int n = leaders ? node_leaders(e, leaders) : 1;
    free(leaders);
    return n;
}

int pdbx_coll_sweep(pdbx_engine *e)
{
    const pdbx_spec *sp = &e->spec;
    if (!sp->collectives || sp->ncoll_sizes == 0 || e->size < 2)
        return 0;
    coll_group cg = { .e = e };
    if (coll_buffer(e, &cg.buf) != 0)
        return 0;
    cg.x = malloc(sizeof(double) * (size_t)(sp->steps > 0 ? sp->steps : 1));
    if (!cg.x)
        return -1;
    int *ranks = malloc(sizeof *ranks * (size_t)e->size);
    if (!ranks) {
        free(cg.x);
        return -1;
    }
    cg.ranks = ranks;
    int nodes = node_leaders(e, ranks);
    /* the first g ranks, g = 2, 4, ... (within a node first, ranks being placed node by node),
     * then, on several nodes with several ranks each, one rank per node: the pure inter-node
     * group (with one rank per node the groups above cross nodes already) */
    for (int g = 2, inter = 0;;) {
        if (inter)
            node_leaders(e, ranks);
        else
            for (int r = 0; r < g; r++)
                ranks[r] = r;
        cg.g = g;
        if (coll_group_open(&cg) != 0)
            break;
        if (cg.member) {
            group_hosts(e, &cg);
            coll_group_run(&cg);
        }
        coll_group_close(&cg);
        pdbx_watch_begin("barrier", -1);
        MPI_Barrier(MPI_COMM_WORLD);
        pdbx_watch_end();
        if (pdbx_agree_cancel(e, -1) || inter)
            break;
        g *= 2;
        if (g > e->size) {
            if (nodes < 2 || nodes == e->size)
                break;
            inter = 1;
            g = nodes;
        }
    }
    free(ranks);
    free(cg.x);
    return 0;
}
