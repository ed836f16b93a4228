/* plan_event.h: the plan as the run_start event records it, encoded by the event schema
 * (store/events.h), so that no field name of an event is spelled here. One writer for the
 * engine's run_start and the launcher's record of a sweep that never started.
 */
#ifndef PDBX_PLAN_EVENT_H
#define PDBX_PLAN_EVENT_H

#include <stddef.h>

#include "engine/plan/plan.h"
#include "store/events.h"

/* The run_start of spec's plan: who launched (copied), the backend actually used (NULL: the
 * spec's), env (taken, may be NULL), then the spec, its model, run settings, GPU and the
 * points pts[0..n). NULL when out of memory. */
cJSON *pdbx_plan_run_start(const pdbx_ev_launcher *who, const char *backend, cJSON *env,
                           const pdbx_spec *spec, const pdbx_plan_point *pts, size_t n);

#endif
