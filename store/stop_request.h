/* stop_request.h: why a running sweep is being stopped, told to the processes that end it.
 *
 * A sweep is stopped by a signal, and a signal does not say who sent it or why. So whoever asks
 * a sweep to stop first writes DIR/logs/<id>.stop (layout.h): the cause (store/events.h
 * pdbx_end_cause) and one line of detail (who: "pdbx cancel (pid 812)"), then signals. The
 * `pdbx run` supervisor writes it itself for a signal nobody in pdbx announced (a foreign
 * SIGTERM), and the engine reads it when it ends the run, so run_end names who stopped it. One
 * request per run: the first one written stays (a later Ctrl-C does not rename a pdbx cancel).
 */
#ifndef PDBX_STOP_REQUEST_H
#define PDBX_STOP_REQUEST_H

#include <stddef.h>

#include "store/events.h"

#define PDBX_STOP_DETAIL_MAX 200

/* Writes the request unless one exists. 0 (also when one existed), -1 with err. */
int pdbx_stop_request_write(const char *store_dir, const char *id, pdbx_end_cause cause,
                            const char *detail, char *err, size_t errlen);
/* 0 with *cause and detail (PDBX_STOP_DETAIL_MAX bytes) set; -1 when there is no readable
 * request (cause NONE, detail ""). */
int pdbx_stop_request_read(const char *store_dir, const char *id, pdbx_end_cause *cause,
                           char detail[PDBX_STOP_DETAIL_MAX]);

#endif
