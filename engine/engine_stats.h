/* engine_stats.h: per-rank statistics as flat double rows (what ranks send to rank 0) and
 * their combination across ranks.
 *
 * A row is PDBX_ESTAT doubles: count, min, max, mean, median, std (ddof 0), ci95, as
 * pdbx_stats_from_samples computes them; an empty sample set gives count 0 and zeros. The
 * across-ranks value of a cell is the element-wise max of its ranks' rows (a step is as slow
 * as its slowest TP rank), count taken from the first rank. */
#ifndef PDBX_ENGINE_STATS_H
#define PDBX_ENGINE_STATS_H

#include <stddef.h>

#include "store/profiledb.h"

#define PDBX_ESTAT 7

/* Sorts x in place. */
void pdbx_estats_pack(double *row, double *x, size_t n);
void pdbx_estats_unpack(const double *row, pdbx_stats *st);
/* The stats object of an event from a row (NULL when out of memory). */
cJSON *pdbx_estats_json(const double *row);
/* all: rows of every world rank, `nrows` rows per rank; out = element-wise max of row `row`
 * over the world ranks listed in ranks[0..n-1]. */
void pdbx_estats_max(const double *all, int nrows, const int *ranks, int n, int row, double *out);

#endif
