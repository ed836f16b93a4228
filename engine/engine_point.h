/* engine_point.h: the point loop: one sweep point measured on every rank of the launch.
 *
 * Per point every rank, in lockstep: prepares the point's buffers with the compute backend
 * (the ranks agree on ok / oom / error), runs warmup then measured steps (each step's forward,
 * op by op, with the layer and step spans around them; then PP send/recv and DP all-reduce),
 * agrees on the outcome, folds its samples into statistics rows and gathers them, with its
 * trace of the last step, to rank 0, which writes the point's events (engine_point_events.h).
 * Ranks agree on cancellation before every step. The buffers are engine/plan's profile memory
 * of the point (the backend allocates its list, the engine the comm buffer it names); each
 * rank's measured memory peak (backend mem_peak) goes to rank 0 with the results.
 *
 * Rows: one per op (PDBX_OP_COUNT), then the rows below; each row is PDBX_ESTAT doubles
 * (engine_stats.h). A row with count 0 was not measured.
 */
#ifndef PDBX_ENGINE_POINT_H
#define PDBX_ENGINE_POINT_H

#include "engine/engine_groups.h"
#include "engine/engine_sweep.h"

#define PDBX_ROW_TP_ALL (PDBX_OP_COUNT)       /* both TP all-reduces together */
#define PDBX_ROW_PP (PDBX_OP_COUNT + 1)       /* PP send/recv, once per step */
#define PDBX_ROW_DP (PDBX_OP_COUNT + 2)       /* DP all-reduce, once per step */
#define PDBX_ROW_LAYER (PDBX_OP_COUNT + 3)    /* one layer's forward, per layer and step */
#define PDBX_ROW_TOTAL (PDBX_OP_COUNT + 4)    /* one step's forward, per step */
#define PDBX_NROWS (PDBX_OP_COUNT + 5)

/* Bytes of the point's collectives (S as nccl-tests defines it). */
typedef struct {
    double tp, pp, dp;
} pdbx_point_bytes;

/* The gathered results of a point on rank 0: `all` holds PDBX_NROWS rows per world rank,
 * traces trace_cap entries of [op, layer, start_us, dur_us] per rank, ntrace[r] used. */
typedef struct {
    const double *all;
    const double *traces;
    const int *ntrace;
    size_t trace_cap;
} pdbx_point_results;

/* The measured memory of a point (NaN when not measured): the largest peak over the ranks and
 * that rank's baseline (backend.h, mem_peak). */
typedef struct {
    double peak_bytes, base_bytes;
} pdbx_point_mem;

/* Measures point pt with the config's groups cg. Returns PDBX_ST_OK/OOM/ERROR (agreed by all
 * ranks), or -1 when cancelled; msg (PDBX_MSG_LEN, rank 0) holds the reason of a failure, mem
 * (rank 0) the measured peak of an ok point. */
int pdbx_point_measure(pdbx_engine *e, const pdbx_plan_point *pt, pdbx_cfg_groups *cg, char *msg,
                       pdbx_point_mem *mem);

#endif
