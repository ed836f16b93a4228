/* engine_point_samples.c: a rank's samples of one point and the trace of its latest step
 * (engine_point_internal.h). */
#include "engine/engine_point_internal.h"

#include <stdlib.h>
#include <string.h>

void pt_samples_free(samples *sm)
{
    for (int r = 0; r < NROWS; r++)
        free(sm->s[r]);
    free(sm->trace);
    memset(sm, 0, sizeof *sm);
}

int pt_samples_init(samples *sm, int layers)
{
    memset(sm, 0, sizeof *sm);
    sm->trace_cap = (size_t)(3 + layers * PDBX_OP_COUNT + 2);
    sm->trace = calloc(sm->trace_cap * 4, sizeof(double));
    return sm->trace ? 0 : -1;
}

void pt_push(samples *sm, int row, double ms)
{
    if (sm->n[row] == sm->cap[row]) {
        size_t cap = sm->cap[row] ? 2 * sm->cap[row] : 64;
        double *s = realloc(sm->s[row], cap * sizeof *s);
        if (!s) {
            sm->oom = 1;
            return;
        }
        sm->s[row] = s;
        sm->cap[row] = cap;
    }
    sm->s[row][sm->n[row]++] = ms;
}

void pt_push_trace(samples *sm, int op, int layer, double start_ms, double dur_ms)
{
    if (sm->ntrace >= sm->trace_cap)
        return;
    double *t = sm->trace + 4 * sm->ntrace++;
    t[0] = op;
    t[1] = layer;
    t[2] = start_ms * 1e3;
    t[3] = dur_ms * 1e3;
}

/* A step is kept (its samples stay) or dropped (a warm-up step: back to the last kept one). */
void pt_steps_settle(samples *sm, int keep)
{
    for (int r = 0; r < NROWS; r++) {
        if (keep)
            sm->kept[r] = sm->n[r];
        else
            sm->n[r] = sm->kept[r];
    }
}

double pt_mean_of(const samples *sm, int row)
{
    double sum = 0;
    for (size_t i = 0; i < sm->n[row]; i++)
        sum += sm->s[row][i];
    return sm->n[row] ? sum / (double)sm->n[row] : 0;
}
