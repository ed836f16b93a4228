/* advise_all.c: every configuration of a query (advise.h, pdbx_advise): the enumeration over
 * (tp, pp, dp, ep, mbs) and the query's layouts, each row's estimate (advise.c), the ranking by
 * step time and the Pareto front of time and memory. */
#include "engine/advise/advise.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/advise/advise_internal.h"

static int by_step(const void *a, const void *b)
{
    const pdbx_advise_row *x = a, *y = b;
    if (x->step_ms != y->step_ms)
        return x->step_ms < y->step_ms ? -1 : 1;
    if (x->mem_gb != y->mem_gb)
        return x->mem_gb < y->mem_gb ? -1 : 1;
    int kx[7] = { x->tp, x->pp, x->dp, x->ep, x->mbs, x->recompute, x->zero1 },
        ky[7] = { y->tp, y->pp, y->dp, y->ep, y->mbs, y->recompute, y->zero1 };
    for (int i = 0; i < 7; i++)
        if (kx[i] != ky[i])
            return kx[i] < ky[i] ? -1 : 1;
    return 0;
}

/* Rows in step order: a fitting row is on the front when every faster fitting row needs
 * strictly more memory. */
static void mark_pareto(pdbx_advise_row *rows, size_t n)
{
    double best_mem = INFINITY;
    for (size_t i = 0; i < n; i++) {
        rows[i].pareto = 0;
        if (!rows[i].fits)
            continue;
        if (rows[i].mem_gb < best_mem) {
            rows[i].pareto = 1;
            best_mem = rows[i].mem_gb;
        }
    }
}

void pdbx_advise_free(pdbx_advise_result *r)
{
    if (!r)
        return;
    free(r->rows);
    for (size_t i = 0; i < r->nnotes; i++)
        free(r->notes[i]);
    free(r->notes);
    memset(r, 0, sizeof *r);
}

static int push_row(pdbx_advise_result *out, size_t *cap, const pdbx_advise_row *row)
{
    if (out->nrows == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        pdbx_advise_row *v = realloc(out->rows, sizeof *v * nc);
        if (!v)
            return -1;
        out->rows = v, *cap = nc;
    }
    out->rows[out->nrows++] = *row;
    return 0;
}

/* The notes (estimates first, in the order met, then refusals with their counts) as owned
 * strings. */
static int take_notes(adv_notes *ns, pdbx_advise_result *out)
{
    out->notes = calloc(ns->n ? ns->n : 1, sizeof *out->notes);
    if (!out->notes)
        return -1;
    for (int refusals = 0; refusals < 2; refusals++)
        for (size_t i = 0; i < ns->n; i++) {
            const adv_note *n = &ns->v[i];
            if ((n->count >= 0) != refusals)
                continue;
            char buf[PDBX_ADVISE_NOTE_MAX + 64];
            if (n->count >= 0)
                snprintf(buf, sizeof buf, "%s: %ld configuration%s left out", n->text, n->count,
                         n->count == 1 ? "" : "s");
            else
                snprintf(buf, sizeof buf, "%s", n->text);
            if (!(out->notes[out->nnotes] = strdup(buf)))
                return -1;
            out->nnotes++;
        }
    return 0;
}

/* One candidate: its row kept (its estimates noted) or its refusal counted. 0, or -1 OOM. */
static int add_row(adv_ctx *c, const adv_cfg *k, pdbx_advise_result *out, size_t *cap, adv_notes *ns,
                   adv_notes *row_notes, char *err, size_t errlen)
{
    pdbx_advise_row row;
    char reason[PDBX_ADVISE_NOTE_MAX];
    /* a row's estimates are noted only when the row is kept */
    row_notes->n = 0;
    int r = adv_estimate(c, k, &row, row_notes, reason, sizeof reason);
    if (r == 0)
        for (size_t k = 0; k < row_notes->n; k++)
            adv_notes_find_or_add(ns, row_notes->v[k].text);
    if (r < 0 || row_notes->oom || (r == 0 && push_row(out, cap, &row) != 0))
        return adv_fail(err, errlen, "out of memory");
    if (r == 1) {
        adv_note *n = adv_notes_find_or_add(ns, reason);
        if (n)
            n->count = n->count < 0 ? 1 : n->count + 1;
    }
    return 0;
}

int pdbx_advise(const pdbx_run *run, const pdbx_advise_query *q, pdbx_advise_result *out,
                char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    adv_ctx c;
    if (adv_ctx_init(&c, run, q, err, errlen) != 0)
        return -1;
    adv_notes ns = { 0 }, row_notes = { 0 };
    size_t cap = 0;
    int rc = 0;
    long candidates = 0;
    const int g = c.q.gpus;
    for (int tp = 1; tp <= g && rc == 0; tp++) {
        if (g % tp)
            continue;
        for (int pp = 1; pp <= g / tp && rc == 0; pp++) {
            if ((g / tp) % pp || c.q.layers % pp)
                continue;
            int dp = g / tp / pp;
            /* the EP group lies within tp x dp (Megatron's expert layout) */
            for (int e = 0; e < c.neps && rc == 0; e++) {
                if ((tp * dp) % c.eps[e])
                    continue;
                for (int mbs = 1; mbs <= c.q.mbs_max && rc == 0; mbs++) {
                    if (c.q.gbs % (mbs * dp))
                        continue;
                    /* each layout of the query's sets */
                    for (int r = PDBX_RECOMPUTE_NONE; r <= PDBX_RECOMPUTE_SELECTIVE && rc == 0; r++)
                        for (int z = 0; z < 2 && rc == 0; z++) {
                            if (!(c.q.recompute_set & PDBX_ADV_RECOMPUTE_BIT(r)) ||
                                !(c.q.zero1_set & PDBX_ADV_ZERO1_BIT(z)))
                                continue;
                            const adv_cfg k = { tp, pp, dp, c.eps[e], mbs, r, z };
                            candidates++;
                            rc = add_row(&c, &k, out, &cap, &ns, &row_notes, err, errlen);
                        }
                }
            }
        }
    }
    if (rc == 0 && candidates == 0) {
        char why[PDBX_ADVISE_NOTE_MAX];
        snprintf(why, sizeof why, "no (tp, pp, dp, mbs) of %d GPUs divides gbs %d with mbs <= %d and "
                 "pp dividing %d layers", g, c.q.gbs, c.q.mbs_max, c.q.layers);
        adv_notes_find_or_add(&ns, why);
    }
    if (rc == 0 && ns.oom)
        rc = adv_fail(err, errlen, "out of memory");
    if (rc == 0) {
        if (out->nrows > 0) {   /* no rows: rows is NULL, which qsort may not be given */
            qsort(out->rows, out->nrows, sizeof *out->rows, by_step);
            mark_pareto(out->rows, out->nrows);
        }
        if (take_notes(&ns, out) != 0)
            rc = adv_fail(err, errlen, "out of memory");
    }
    if (rc == 0)
        out->query = c.q;
    free(ns.v);
    free(row_notes.v);
    adv_ctx_free(&c);
    if (rc != 0)
        pdbx_advise_free(out);
    return rc;
}
