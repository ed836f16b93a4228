/* ui_lister.h: lists the store on a worker thread, so the explorer's loop never waits for
 * pdbx_store_list (half a second with 10,000 runs on a slow disk) and keys stay within 50 ms.
 *
 * The worker owns its own pdbx_store handle (the store's guarantees are per file, readers need
 * no locks). Requests coalesce: asking again while a listing runs gives one more listing after
 * it. The loop polls ui_lister_take() on its tick and swaps the list in when one is ready.
 */
#ifndef PDBX_UI_LISTER_H
#define PDBX_UI_LISTER_H

#include <stddef.h>

#include "store/store.h"

typedef struct ui_lister ui_lister;

/* Starts the worker for the store at dir. Returns 0, or -1 with err. */
int ui_lister_start(const char *dir, ui_lister **out, char *err, size_t errlen);
/* Asks for a fresh listing. */
void ui_lister_request(ui_lister *l);
/* 1 when a listing finished since the last take: hands over *list and *n (free(*list)), the
 * milliseconds it took, and err ("" on success, else the store's message; *list NULL then).
 * 0 when none is ready (a listing may be running). */
int ui_lister_take(ui_lister *l, pdbx_run_summary **list, size_t *n, double *ms, char *err, size_t errlen);
/* 1 while a listing is requested or running. */
int ui_lister_busy(ui_lister *l);
/* Stops the worker (waits for a listing in flight) and frees everything. NULL is fine. */
void ui_lister_stop(ui_lister *l);

#endif
