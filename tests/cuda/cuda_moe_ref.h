/* cuda_moe_ref.h: the host references of the MoE kernels (engine/backends/cuda/
 * cuda_kernels_moe.h) that tests/cuda/test_cuda_kernels_moe.c compares the GPU against and
 * checks itself (its host part): in double, from the inputs as the kernels read them (already
 * rounded to the dtype), with the semantics of the cpu backend's cpu_kernels_moe.h written
 * plainly (a selection for the top-k, two passes for the counting sort), not with the kernels'
 * walks, so the walks are checked against them. Header-only (static inline), as
 * cuda_dense_ref.h. */
#ifndef PDBX_CUDA_MOE_REF_H
#define PDBX_CUDA_MOE_REF_H

#include <math.h>
#include <stdint.h>

/* The router's scores of one row: softmax or sigmoid. */
static inline void moe_scores_ref(const double *l, int E, int sigmoid, double *s)
{
    double max = l[0], sum = 0;
    for (int e = 1; e < E; e++)
        max = l[e] > max ? l[e] : max;
    for (int e = 0; e < E; e++) {
        s[e] = sigmoid ? 1.0 / (1.0 + exp(-l[e])) : exp(l[e] - max);
        sum += s[e];
    }
    if (!sigmoid)
        for (int e = 0; e < E; e++)
            s[e] /= sum;
}

/* Top-k of one row by selection: the largest logit not yet chosen, the lowest id on a tie;
 * the weights scale s_j (/ the chosen sum with norm). s: E scratch. */
static inline void moe_topk_row_ref(const double *l, int E, int k, int sigmoid, int norm, double scale, int32_t *id,
                                    double *w, double *s)
{
    moe_scores_ref(l, E, sigmoid, s);
    double sum = 0;
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int e = 0; e < E; e++) {
            int taken = 0;
            for (int i = 0; i < j; i++)
                taken |= id[i] == e;
            if (!taken && (best < 0 || l[e] > l[best]))
                best = e;
        }
        id[j] = best;
        sum += s[best];
    }
    for (int j = 0; j < k; j++)
        w[j] = s[id[j]] * (norm ? scale / sum : scale);
}

/* dlogits of one row from dw through the chosen ids (the cpu's formula, in double). */
static inline void moe_topk_bwd_row_ref(const double *l, const int32_t *id, const double *dw, int E, int k,
                                        int sigmoid, int norm, double scale, double *dl, double *s)
{
    moe_scores_ref(l, E, sigmoid, s);
    double S = 0, D = 0;
    for (int j = 0; j < k; j++) {
        S += s[id[j]];
        D += dw[j] * s[id[j]];
    }
    const double a = norm ? scale / S : scale, b = norm ? D / S : 0;
    double dot = 0;
    for (int j = 0; j < k; j++)
        dot += s[id[j]] * a * (dw[j] - b);
    for (int e = 0; e < E; e++)
        dl[e] = sigmoid ? 0 : -s[e] * dot;
    for (int j = 0; j < k; j++) {
        const double ds = a * (dw[j] - b), se = s[id[j]];
        dl[id[j]] += sigmoid ? ds * se * (1 - se) : se * ds;
    }
}

/* The stable counting sort: count, prefix, then each copy at its expert's cursor in copy
 * order (cur: E scratch). */
static inline void moe_route_index_ref(const int32_t *idx, int64_t n, int E, int64_t *offsets, int64_t *pos,
                                       int64_t *cur)
{
    for (int g = 0; g <= E; g++)
        offsets[g] = 0;
    for (int64_t c = 0; c < n; c++)
        offsets[idx[c] + 1]++;
    for (int g = 0; g < E; g++) {
        offsets[g + 1] += offsets[g];
        cur[g] = offsets[g];
    }
    for (int64_t c = 0; c < n; c++)
        pos[c] = cur[idx[c]]++;
}

/* y[t] = sum_j w[t, j] rows[pos[t k + j]] (w NULL: 1). */
static inline void moe_gather_sum_ref(const double *rows, const double *w, const int64_t *pos, int64_t T, int64_t h,
                                      int k, double *y)
{
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < h; i++) {
            double acc = 0;
            for (int j = 0; j < k; j++)
                acc += (w ? w[t * k + j] : 1.0) * rows[pos[t * k + j] * h + i];
            y[t * h + i] = acc;
        }
}

#endif
