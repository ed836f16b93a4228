/* engine_point.h: the point loop: one sweep point measured on every rank of the launch.
 *
 * Per point every rank, in lockstep: prepares the point's buffers with the compute backend
 * (the ranks agree on ok / oom / error; the wall time of it is the point's setup time), then
 *  - the step phase: whole steps (each step's forward op by op with the layer and step spans
 *    around it, then each op's backward in reverse order when the spec's passes hold bwd, then
 *    PP send/recv and DP all-reduce). fixed: `warmup` steps discarded, `steps` kept. adaptive:
 *    the first step is a warm-up, later ones are kept once a step's time is within
 *    PDBX_WARM_TOL of the one before (at most max(1, warmup) discarded), until `steps` are kept;
 *  - adaptive only, the op phase: each cell (op and pass, the TP all-reduce, PP, DP) is
 *    repeated alone, the layers in turn, until engine_adaptive.h's rule says it is done. The
 *    ranks agree after each batch of executions.
 * Every execution of an op adds a sample to its cell: the identical profiled layers pool their
 * samples; ops of the same shape and kernel (attn_v with attn_k, mlp_up with mlp_gate, the two
 * residual adds, the two TP all-reduces) pool theirs into one cell, which the others share.
 * Then the ranks agree on the outcome, fold their samples into statistics rows and gather them, with their trace of
 * the last step, to rank 0, which writes the point's events (engine_point_events.h). Ranks
 * agree on cancellation before every step and every cell.
 *
 * Measure once, use everywhere: a point given a source (an ok point of the same TP, EP and MBS:
 * its compute ops have the same shapes, PP and DP do not change them) prepares only the comm
 * buffer, measures only its PP and DP collectives, and takes its op and span cells from the
 * source's rows, marked reused (the EP all-to-alls, run inside the layers as the TP
 * all-reduces are, come with them).
 *
 * Expert parallelism (ep > 1): ep_dispatch and ep_combine are the comm backend's all_to_all
 * on the config's EP group, S = pdbx_point_bytes.ep, in the forward where the layer runs them;
 * their backward cells time the same all-to-all again in the backward's order (Megatron's
 * backward of the dispatch is a combine-sized all-to-all and vice versa; with the uniform
 * message of plan_comm.h both have the same S, so each op's bwd cell is that all-to-all).
 *
 * Rows: PDBX_ROW_OP(pass, op) per pass and op, then the rows below; each row is PDBX_ESTAT
 * doubles (engine_stats.h). A row with count 0 was not measured.
 */
#ifndef PDBX_ENGINE_POINT_H
#define PDBX_ENGINE_POINT_H

#include "engine/engine_groups.h"
#include "engine/engine_sweep.h"

#define PDBX_ROW_OP(pass, op) ((int)(pass) * PDBX_OP_COUNT + (int)(op))
#define PDBX_ROW_TP_ALL (2 * PDBX_OP_COUNT)       /* both TP all-reduces together */
#define PDBX_ROW_PP (2 * PDBX_OP_COUNT + 1)       /* PP send/recv, once per step */
#define PDBX_ROW_DP (2 * PDBX_OP_COUNT + 2)       /* DP all-reduce, once per step */
#define PDBX_ROW_LAYER (2 * PDBX_OP_COUNT + 3)    /* one layer's forward, per layer and step */
#define PDBX_ROW_TOTAL (2 * PDBX_OP_COUNT + 4)    /* one step's forward, per step */
#define PDBX_NROWS (2 * PDBX_OP_COUNT + 5)

/* A trace entry's op slot for a step's PP or DP collective (pdbx_comm_kind k): past the ops. */
#define PDBX_TRACE_STEP_COMM(k) (PDBX_OP_COUNT + (int)(k))

/* Bytes of the point's collectives (S as nccl-tests defines it; engine/plan/plan_comm.h) and
 * the DP all-reduce's element type (fp32: gradients are reduced in fp32). */
typedef struct {
    double tp, pp, dp;
    double ep;                 /* the EP all-to-all's S (plan_comm.h, pdbx_plan_ep_bytes); 0 at EP 1 */
    pdbx_dtype dp_dtype;
} pdbx_point_bytes;

/* The gathered results of a point on rank 0: `all` holds PDBX_NROWS rows per world rank,
 * traces trace_cap entries of [op, layer, start_us, dur_us] per rank, ntrace[r] used.
 * compute: the rows the op, span and TP cells come from (`all`, or a reused point's), with
 * reused_from that point (-1: measured here). */
typedef struct {
    const double *all;
    const double *traces;
    const int *ntrace;
    size_t trace_cap;
    const double *compute;
    int reused_from;
    /* adaptive, measured here: rank 0's reason per row for stopping (pdbx_cell_state); NULL
     * otherwise */
    const signed char *stop;
} pdbx_point_results;

/* The measured memory of a point (NaN when not measured): the largest peak over the ranks and
 * that rank's baseline (backend.h, mem_peak). */
typedef struct {
    double peak_bytes, base_bytes;
} pdbx_point_mem;

/* A point whose compute cells another point takes (rank 0 holds its gathered rows). */
typedef struct {
    int point;
    const double *rows;
} pdbx_point_source;

/* What a measured point leaves besides its events (rank 0's figures). */
typedef struct {
    pdbx_point_mem mem;
    double setup_s;            /* prepare's wall time on rank 0 (NaN: not prepared) */
    pdbx_point_noise noise;    /* what loaded the machine while measuring (engine_noise.h) */
    double *rows;              /* rank 0, an ok point measured here: its gathered rows, malloc'ed
                                * (the caller keeps them as a source or frees them) */
} pdbx_point_outcome;

/* Measures point pt with the config's groups cg, taking its compute cells from `source` when
 * not NULL. Returns PDBX_ST_OK/OOM/ERROR (agreed by all ranks), or -1 when cancelled; msg
 * (PDBX_MSG_LEN, rank 0) holds the reason of a failure. */
int pdbx_point_measure(pdbx_engine *e, const pdbx_plan_point *pt, pdbx_cfg_groups *cg,
                       const pdbx_point_source *source, char *msg, pdbx_point_outcome *out);

/* The op whose cell holds op's samples: op itself, or the op of the same shape and kernel it
 * shares them with (attn_v -> attn_k, mlp_up -> mlp_gate, mlp_residual -> attn_residual,
 * tp_allreduce_mlp -> tp_allreduce_attn) when that op is measured too. */
pdbx_op pdbx_point_sample_op(const pdbx_spec *spec, int tp, int mbs, pdbx_op op);

#endif
