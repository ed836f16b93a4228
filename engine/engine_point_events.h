/* engine_point_events.h: what rank 0 writes about one point (docs/engine.md "What is
 * measured"): point_start and point_end, and from the gathered results the op cells of each
 * measured pass (max over the TP ranks of world rank 0's TP group, and each TP rank's own;
 * an op sharing another's samples is written with "shared_with", cells of a reused point
 * with "reused_from"), the step event (measured
 * layer and step sums, cells built by the same code as the op cells), the comm events
 * (tp_allreduce, pp_sendrecv, dp_allreduce) and one trace event per rank. Every function is a
 * no-op on ranks other than 0. Every event goes through store/events.h's encoders.
 */
#ifndef PDBX_ENGINE_POINT_EVENTS_H
#define PDBX_ENGINE_POINT_EVENTS_H

#include "engine/engine_point.h"
#include "store/profiledb.h"

void pdbx_point_start_event(pdbx_engine *e, const pdbx_plan_point *pt);
/* status: OK, OOM, PREDICTED_OOM, ERROR or SKIPPED; msg may be NULL or "". */
void pdbx_point_end_event(pdbx_engine *e, int point, pdbx_point_status status, const char *msg);
/* point_end with the point's predicted profile memory, its measured peak (NaN: none), its
 * setup time (NaN: none) and what loaded the machine (noise->valid 0: not sampled). */
typedef struct {
    pdbx_point_mem mem;
    double setup_s;
    pdbx_point_noise noise;
} pdbx_point_end_figures;
void pdbx_point_end_mem_event(pdbx_engine *e, const pdbx_plan_point *pt, pdbx_point_status status,
                              const char *msg, const pdbx_point_end_figures *fig);
void pdbx_point_results_events(pdbx_engine *e, const pdbx_plan_point *pt,
                               const pdbx_point_bytes *bytes, const pdbx_point_results *res);

#endif
