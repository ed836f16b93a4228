/* events_internal.h: what the event schema's files share (store/events*.c only).
 *
 *   events.c        type names, stats objects, run_start, launch and env
 *   events_point.c  one point's events: point_start, op, step, comm, trace, point_end
 *   events_run.c    the run's events: coll, infer_*, progress, warning, run_end
 * Each file holds the field tables of its events (json_fields.h) written with F.
 */
#ifndef PDBX_EVENTS_INTERNAL_H
#define PDBX_EVENTS_INTERNAL_H

#include <cjson/cJSON.h>

#include "store/events.h"
#include "store/json_fields.h"

/* Field tables: the scalar members of a struct and their names (json_fields.h). */
#define F(T, kind, member, name) JF_FIELD(T, JF_##kind, member, name)

/* {"type": <t>}: type first, as pdbx_event_raw_is expects (NULL: out of memory). */
cJSON *ev_new_event(pdbx_event_type t);

#endif
