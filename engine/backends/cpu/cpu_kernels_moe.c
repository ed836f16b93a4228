/* cpu_kernels_moe.c: the MoE router: its projection (OpenBLAS), scoring and top-k, and their
 * backward (see cpu_kernels_moe.h). One token's row is one unit of work: its choice, weights
 * and gradient depend on its own logits only, so rows are split over the pool in chunks. */
#include "engine/backends/cpu/cpu_kernels_moe.h"
#include "engine/backends/cpu/cpu_kernels_vec.h"   /* PDBX_K_HOT, pdbx_k_exp */
#include "engine/plan/plan_moe.h"                    /* pdbx_moe_topk_insert */

#include <cblas.h>

/* Tokens per chunk of the router kernels: 64 rows of 64..256 experts, 16..64 KiB of logits. */
#define ROUTER_CHUNK_ROWS 64
/* Below this many logits the router runs on the caller alone: waking the pool costs more. */
#define ROUTER_PAR_MIN 32768

void pdbx_k_moe_router_logits(const float *x, const float *w, int64_t tokens, int64_t hidden,
                              int experts, float *logits)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)tokens, (blasint)experts,
                (blasint)hidden, 1.0f, x, (blasint)hidden, w, (blasint)experts, 0.0f, logits,
                (blasint)experts);
}

void pdbx_k_moe_router_logits_bwd(const float *x, const float *w, const float *dlogits,
                                  int64_t tokens, int64_t hidden, int experts, float *dx,
                                  int dx_accumulate, float *dw)
{
    const blasint M = (blasint)tokens, N = (blasint)experts, K = (blasint)hidden;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, K, N, 1.0f, dlogits, N, w, N,
                dx_accumulate ? 1.0f : 0.0f, dx, K);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, N, M, 1.0f, x, K, dlogits, N, 1.0f,
                dw, N);
}

/* ---- scores ------------------------------------------------------------------------------- */
/* Softmax's max and 1/sum of one row (the scores are exp(l - max) * inv). */
PDBX_K_HOT static void softmax_stats(const float *l, int experts, float *max, float *inv)
{
    float m = l[0];
    for (int e = 1; e < experts; e++)
        m = l[e] > m ? l[e] : m;
    /* 8 partial sums, in a fixed order: a float reduction gcc vectorises without -ffast-math */
    float part[8] = { 0 };
    int e = 0;
    for (; e + 8 <= experts; e += 8)
        for (int i = 0; i < 8; i++)
            part[i] += pdbx_k_exp(l[e + i] - m);
    float sum = 0.0f;
    for (; e < experts; e++)
        sum += pdbx_k_exp(l[e] - m);
    for (int i = 0; i < 8; i++)
        sum += part[i];
    *max = m;
    *inv = 1.0f / sum;
}

static float sigmoid(float x)
{
    return 1.0f / (1.0f + pdbx_k_exp(-x));
}

/* The score of expert e, given the row's softmax stats (unused for sigmoid). */
static float score_of(const pdbx_moe_router_cfg *cfg, float logit, float max, float inv)
{
    return cfg->score == PDBX_MOE_SCORE_SOFTMAX ? pdbx_k_exp(logit - max) * inv : sigmoid(logit);
}

/* The key experts are chosen by: the logit itself for softmax and for sigmoid without a bias
 * (both scores increase with the logit, and the logit has no rounding of its own), else the
 * biased sigmoid score. */
static float key_of(const pdbx_moe_router_cfg *cfg, const float *l, int e)
{
    if (cfg->score == PDBX_MOE_SCORE_SIGMOID && cfg->select_bias)
        return sigmoid(l[e]) + cfg->select_bias[e];
    return l[e];
}

/* ---- top-k -------------------------------------------------------------------------------- */
/* The top_k largest keys of a row, decreasing, ties to the lower id (plan_moe.h's insertion,
 * which the cuda kernel shares). */
static void topk_row(const pdbx_moe_router_cfg *cfg, const float *l, int experts, int top_k,
                     float *key, int32_t *id)
{
    int n = 0;
    for (int e = 0; e < experts; e++)
        pdbx_moe_topk_insert(key_of(cfg, l, e), e, key, id, &n, top_k);
}

typedef struct {
    const float *logits;
    const int32_t *idx;
    const float *dweights;
    int64_t tokens;
    int experts, top_k;
    const pdbx_moe_router_cfg *cfg;
    int32_t *idx_out;
    float *weights, *dlogits;
} router_job;

static void topk_rows(const router_job *J, int64_t t0, int64_t t1)
{
    const pdbx_moe_router_cfg *cfg = J->cfg;
    const int k = J->top_k;
    for (int64_t t = t0; t < t1; t++) {
        const float *l = J->logits + t * J->experts;
        float *w = J->weights + t * k;
        int32_t *id = J->idx_out + t * k;
        topk_row(cfg, l, J->experts, k, w, id);   /* w holds the keys until overwritten */
        float max = 0.0f, inv = 1.0f, sum = 0.0f;
        if (cfg->score == PDBX_MOE_SCORE_SOFTMAX)
            softmax_stats(l, J->experts, &max, &inv);
        for (int j = 0; j < k; j++) {
            w[j] = score_of(cfg, l[id[j]], max, inv);
            sum += w[j];
        }
        const float f = cfg->norm_topk ? cfg->scale / sum : cfg->scale;
        for (int j = 0; j < k; j++)
            w[j] *= f;
    }
}

static void topk_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const router_job *J = arg;
    const int64_t t0 = chunk * ROUTER_CHUNK_ROWS;
    const int64_t t1 = J->tokens - t0 < ROUTER_CHUNK_ROWS ? J->tokens : t0 + ROUTER_CHUNK_ROWS;
    topk_rows(J, t0, t1);
}

void pdbx_k_moe_topk(pdbx_cpu_pool *pool, const float *logits, int64_t tokens, int experts,
                     int top_k, const pdbx_moe_router_cfg *cfg, int32_t *idx, float *weights)
{
    router_job J = { .logits = logits, .tokens = tokens, .experts = experts, .top_k = top_k,
                     .cfg = cfg, .idx_out = idx, .weights = weights };
    if (tokens * experts < ROUTER_PAR_MIN)
        pool = NULL;
    pdbx_cpu_pool_for(pool, (tokens + ROUTER_CHUNK_ROWS - 1) / ROUTER_CHUNK_ROWS, topk_chunk, &J);
}

/* ---- backward ----------------------------------------------------------------------------- */
/* One token's dlogits. The chosen scores s_j are recomputed where needed rather than kept (no
 * buffer of top_k entries, so no bound on top_k; a few exps per token beside E of them):
 *   S = sum s_j, D = sum dw_j s_j, ds_j = scale/S (dw_j - D/S) (norm_topk) or scale dw_j. */
static void topk_bwd_row(const router_job *J, int64_t t)
{
    const pdbx_moe_router_cfg *cfg = J->cfg;
    const int k = J->top_k, E = J->experts;
    const float *l = J->logits + t * E, *dw = J->dweights + t * k;
    const int32_t *id = J->idx + t * k;
    float *dl = J->dlogits + t * E;
    float max = 0.0f, inv = 1.0f;
    if (cfg->score == PDBX_MOE_SCORE_SOFTMAX)
        softmax_stats(l, E, &max, &inv);
    float S = 0.0f, D = 0.0f;
    for (int j = 0; j < k; j++) {
        const float s = score_of(cfg, l[id[j]], max, inv);
        S += s;
        D += dw[j] * s;
    }
    const float a = cfg->norm_topk ? cfg->scale / S : cfg->scale;   /* ds_j = a (dw_j - b) */
    const float b = cfg->norm_topk ? D / S : 0.0f;
    if (cfg->score == PDBX_MOE_SCORE_SIGMOID) {
        for (int e = 0; e < E; e++)
            dl[e] = 0.0f;
        for (int j = 0; j < k; j++) {
            const float s = score_of(cfg, l[id[j]], max, inv);
            dl[id[j]] += a * (dw[j] - b) * s * (1.0f - s);
        }
        return;
    }
    float dot = 0.0f;   /* sum_j s_j ds_j: the softmax's centring term */
    for (int j = 0; j < k; j++)
        dot += score_of(cfg, l[id[j]], max, inv) * (a * (dw[j] - b));
    for (int e = 0; e < E; e++)
        dl[e] = -(pdbx_k_exp(l[e] - max) * inv) * dot;
    for (int j = 0; j < k; j++)
        dl[id[j]] += score_of(cfg, l[id[j]], max, inv) * (a * (dw[j] - b));
}

static void topk_bwd_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const router_job *J = arg;
    const int64_t t0 = chunk * ROUTER_CHUNK_ROWS;
    const int64_t t1 = J->tokens - t0 < ROUTER_CHUNK_ROWS ? J->tokens : t0 + ROUTER_CHUNK_ROWS;
    for (int64_t t = t0; t < t1; t++)
        topk_bwd_row(J, t);
}

void pdbx_k_moe_topk_bwd(pdbx_cpu_pool *pool, const float *logits, const int32_t *idx,
                         const float *dweights, int64_t tokens, int experts, int top_k,
                         const pdbx_moe_router_cfg *cfg, float *dlogits)
{
    router_job J = { .logits = logits, .idx = idx, .dweights = dweights, .tokens = tokens,
                     .experts = experts, .top_k = top_k, .cfg = cfg, .dlogits = dlogits };
    if (tokens * experts < ROUTER_PAR_MIN)
        pool = NULL;
    pdbx_cpu_pool_for(pool, (tokens + ROUTER_CHUNK_ROWS - 1) / ROUTER_CHUNK_ROWS, topk_bwd_chunk,
                      &J);
}
