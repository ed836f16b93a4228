/* cpu_kernels_mla.c: MLA's own kernels (cpu_kernels_mla.h): the strided RMSNorm of kv_a's
 * latent and attn_rope's rotation and k/v gather. The arithmetic is the shared kernels'
 * (pdbx_k_rmsnorm, pdbx_k_rmsnorm_bwd and pdbx_k_rope called on one row or on offset views),
 * so MLA's numbers are those of the ops every other model measures; what is new here is where
 * the rows are and the copies between the layouts. */
#include "engine/backends/cpu/cpu_kernels_mla.h"
#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_bwd.h"

#include <string.h>

/* Rows per chunk (of 512 latent dims: 32 KiB read): enough chunks to share, cheap to take. */
#define MLA_CHUNK_ROWS 16

typedef struct {
    const float *x, *weight;
    int64_t ldx, rows, cols, ldy;
    float eps;
    float *y;
} norm_job;

static void norm_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const norm_job *J = arg;
    const int64_t r0 = chunk * MLA_CHUNK_ROWS;
    const int64_t r1 = J->rows - r0 < MLA_CHUNK_ROWS ? J->rows : r0 + MLA_CHUNK_ROWS;
    for (int64_t r = r0; r < r1; r++)   /* one row at a time: pdbx_k_rmsnorm's rows are contiguous */
        pdbx_k_rmsnorm(NULL, J->x + r * J->ldx, J->weight, 1, J->cols, J->eps, J->y + r * J->ldy);
}

void pdbx_k_rmsnorm_strided(pdbx_cpu_pool *pool, const float *x, int64_t ldx, const float *weight,
                            int64_t rows, int64_t cols, float eps, float *y, int64_t ldy)
{
    if (rows < 1 || cols < 1)
        return;
    norm_job J = { .x = x, .weight = weight, .ldx = ldx, .rows = rows, .cols = cols, .ldy = ldy,
                   .eps = eps, .y = y };
    pdbx_cpu_pool_for(pool, (rows + MLA_CHUNK_ROWS - 1) / MLA_CHUNK_ROWS, norm_chunk, &J);
}

void pdbx_k_rmsnorm_strided_bwd(const float *x, int64_t ldx, const float *weight, const float *dy,
                                int64_t ldy, int64_t rows, int64_t cols, float eps, float *dx,
                                int64_t lddx, float *dw)
{
    for (int64_t r = 0; r < rows; r++)
        pdbx_k_rmsnorm_bwd(x + r * ldx, weight, dy + r * ldy, 1, cols, eps, dx + r * lddx, dw);
}

typedef struct {
    const pdbx_mla_dims *m;
    int64_t rows;
    const float *kva, *kvb, *dk, *dv;   /* forward: kva, kvb read; backward: dk, dv read */
    float *k, *v, *dkva, *dkvb;         /* forward: k, v written; backward: dkva, dkvb */
} gather_job;

/* k and v of rows [r0, r1): three copies per head (k_nope, the shared k_pe, v). */
static void gather_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const gather_job *J = arg;
    const pdbx_mla_dims *m = J->m;
    const int64_t dqk = m->nope + m->rope, dkvb = m->nope + m->dv;
    const int64_t r0 = chunk * MLA_CHUNK_ROWS;
    const int64_t r1 = J->rows - r0 < MLA_CHUNK_ROWS ? J->rows : r0 + MLA_CHUNK_ROWS;
    for (int64_t r = r0; r < r1; r++) {
        const float *pe = J->kva + r * (m->rkv + m->rope) + m->rkv;
        for (int64_t h = 0; h < m->heads; h++) {
            const float *src = J->kvb + (r * m->heads + h) * dkvb;
            float *kh = J->k + (r * m->heads + h) * dqk;
            memcpy(kh, src, (size_t)m->nope * sizeof(float));
            memcpy(kh + m->nope, pe, (size_t)m->rope * sizeof(float));
            memcpy(J->v + (r * m->heads + h) * m->dv, src + m->nope, (size_t)m->dv * sizeof(float));
        }
    }
}

/* The transpose for rows [r0, r1): dkvb from dk's nope parts and dv, dk_pe the heads' sum. */
static void scatter_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const gather_job *J = arg;
    const pdbx_mla_dims *m = J->m;
    const int64_t dqk = m->nope + m->rope, dkvb = m->nope + m->dv;
    const int64_t r0 = chunk * MLA_CHUNK_ROWS;
    const int64_t r1 = J->rows - r0 < MLA_CHUNK_ROWS ? J->rows : r0 + MLA_CHUNK_ROWS;
    for (int64_t r = r0; r < r1; r++) {
        float *pe = J->dkva + r * (m->rkv + m->rope) + m->rkv;
        memset(pe, 0, (size_t)m->rope * sizeof(float));
        for (int64_t h = 0; h < m->heads; h++) {
            const float *dkh = J->dk + (r * m->heads + h) * dqk;
            float *dst = J->dkvb + (r * m->heads + h) * dkvb;
            memcpy(dst, dkh, (size_t)m->nope * sizeof(float));
            memcpy(dst + m->nope, J->dv + (r * m->heads + h) * m->dv, (size_t)m->dv * sizeof(float));
            for (int64_t i = 0; i < m->rope; i++)   /* the broadcast's gradient: a sum over heads */
                pe[i] += dkh[m->nope + i];
        }
    }
}

void pdbx_k_mla_rope_kv(pdbx_cpu_pool *pool, const pdbx_mla_dims *m, int64_t rows, int64_t seq_len,
                        const float *cos_t, const float *sin_t, float *q, float *kva,
                        const float *kvb, float *k, float *v)
{
    if (rows < 1)
        return;
    const int64_t dqk = m->nope + m->rope;
    /* pdbx_k_rope rotates the first `rot` dims of each head of stride d: started at q + nope
     * (kva + rkv) with stride nope + rope (rkv + rope), its first rope dims are each head's
     * rope part (k_pe), and its last head ends at the buffer's end */
    pdbx_k_rope(pool, q + m->nope, rows, m->heads, dqk, m->rope, seq_len, cos_t, sin_t, 0);
    pdbx_k_rope(pool, kva + m->rkv, rows, 1, m->rkv + m->rope, m->rope, seq_len, cos_t, sin_t, 0);
    gather_job J = { .m = m, .rows = rows, .kva = kva, .kvb = kvb, .k = k, .v = v };
    pdbx_cpu_pool_for(pool, (rows + MLA_CHUNK_ROWS - 1) / MLA_CHUNK_ROWS, gather_chunk, &J);
}

void pdbx_k_mla_rope_kv_bwd(pdbx_cpu_pool *pool, const pdbx_mla_dims *m, int64_t rows,
                            int64_t seq_len, const float *cos_t, const float *sin_t, float *dq,
                            const float *dk, const float *dv, float *dkva, float *dkvb)
{
    if (rows < 1)
        return;
    pdbx_k_rope(pool, dq + m->nope, rows, m->heads, m->nope + m->rope, m->rope, seq_len, cos_t, sin_t, 1);
    gather_job J = { .m = m, .rows = rows, .dk = dk, .dv = dv, .dkva = dkva, .dkvb = dkvb };
    pdbx_cpu_pool_for(pool, (rows + MLA_CHUNK_ROWS - 1) / MLA_CHUNK_ROWS, scatter_chunk, &J);
    pdbx_k_rope(pool, dkva + m->rkv, rows, 1, m->rkv + m->rope, m->rope, seq_len, cos_t, sin_t, 1);
}
