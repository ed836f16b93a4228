/* advise_internal.h: what the advise model's files share inside engine/advise (advise.c: the
 * resolved query, one configuration's estimate; advise_all.c: every configuration, ranking, the
 * Pareto front). Not a public interface: advise.h is.
 *
 * Contract: adv_ctx_init resolves a query against a run (0, or -1 with a one-line message);
 * adv_estimate fills one row (0), refuses it (1, reason set: a note's text) or runs out of
 * memory (-1); notes collect every estimate once and refusals by reason (oom set when one could
 * not be added). */
#ifndef PDBX_ADVISE_INTERNAL_H
#define PDBX_ADVISE_INTERNAL_H

#include <stddef.h>

#include "engine/advise/advise.h"
#include "engine/advise/advise_cells.h"
#include "engine/plan/plan.h"

/* ---- notes: every estimate once, and refusals counted by reason ------------------------- */
typedef struct {
    char text[PDBX_ADVISE_NOTE_MAX];
    long count;             /* refusals: configurations left out for this reason */
} adv_note;

typedef struct {
    size_t n, cap;
    adv_note *v;
    int oom;
} adv_notes;

adv_note *adv_notes_find_or_add(adv_notes *ns, const char *text);

/* ---- the resolved query and the per-configuration cells --------------------------------- */
typedef struct {
    const pdbx_run *run;
    pdbx_advise_query q;      /* resolved: nodes, gpus_per_node, layers, mbs_max set */
    pdbx_spec spec;           /* the run's spec, model.layers = q.layers */
    double dtype_bytes;
    /* compute cells per configuration, built on first use (advise_cells.h: a config prefers
     * its own points, then those of its rank count) */
    pdbx_adv_tp_cells *cells;
    int (*cells_key)[4];
    int eps[8];               /* the EP degrees the run measured (1 first), neps of them */
    int neps;
    size_t ncells, cells_cap;
} adv_ctx;

int adv_ctx_init(adv_ctx *c, const pdbx_run *run, const pdbx_advise_query *q, char *err, size_t errlen);
void adv_ctx_free(adv_ctx *c);

/* A configuration and its layout. */
typedef struct {
    int tp, pp, dp, ep, mbs, recompute, zero1;
} adv_cfg;

int adv_estimate(adv_ctx *c, const adv_cfg *k, pdbx_advise_row *row, adv_notes *ns, char *reason,
                 size_t rlen);

int adv_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
