/* cpu_attn_kv.c: backend.h's attn_kv for the cpu backend: the buffers of one shape (fp32:
 * the cpu backend's own kernels compute in fp32 whatever the run's dtype, as its attn_core)
 * and the timed call of pdbx_k_attention_kv (cpu_kv_attention.h). */
#include "engine/backends/cpu/cpu_internal.h"
#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kv_attention.h"
#include "store/util/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pdbx_cpu_free_kv(pdbx_compute *c)
{
    free(c->kv_q);
    free(c->kv_k);
    free(c->kv_v);
    free(c->kv_out);
    free(c->kv_scratch);
    c->kv_q = c->kv_k = c->kv_v = c->kv_out = c->kv_scratch = NULL;
    memset(&c->kv_shape, 0, sizeof c->kv_shape);
}

static int same_shape(const pdbx_attn_kv_shape *a, const pdbx_attn_kv_shape *b)
{
    return a->batch == b->batch && a->q_len == b->q_len && a->kv_len == b->kv_len &&
           a->heads == b->heads && a->kv_heads == b->kv_heads && a->head_dim == b->head_dim;
}

static int kv_alloc(pdbx_compute *c, const pdbx_attn_kv_shape *s, char *err, size_t errlen)
{
    pdbx_cpu_free_kv(c);
    const size_t qn = (size_t)s->batch * (size_t)s->q_len * (size_t)s->heads * (size_t)s->head_dim;
    const size_t kn = (size_t)s->batch * (size_t)s->kv_len * (size_t)s->kv_heads * (size_t)s->head_dim;
    const size_t sn = pdbx_k_kv_attention_scratch_floats(s->kv_len, pdbx_cpu_pool_threads(c->pool));
    c->kv_q = malloc(qn * sizeof(float));
    c->kv_out = malloc(qn * sizeof(float));
    c->kv_k = malloc(kn * sizeof(float));
    c->kv_v = malloc(kn * sizeof(float));
    c->kv_scratch = malloc(sn * sizeof(float));
    if (!c->kv_q || !c->kv_out || !c->kv_k || !c->kv_v || !c->kv_scratch) {
        pdbx_cpu_free_kv(c);
        snprintf(err, errlen, "attn_kv: allocating %.1f MiB failed",
                 (double)(2 * qn + 2 * kn + sn) * sizeof(float) / 1048576.0);
        return PDBX_EOOM;
    }
    pdbx_k_fill_uniform(c->kv_q, qn, 1.0f, 11);
    pdbx_k_fill_uniform(c->kv_k, kn, 1.0f, 12);
    pdbx_k_fill_uniform(c->kv_v, kn, 1.0f, 13);
    c->kv_shape = *s;
    return 0;
}

int cpu_attn_kv(pdbx_compute *c, const pdbx_attn_kv_shape *s, double *ms, char *err, size_t errlen)
{
    if (s->batch < 1 || s->q_len < 1 || s->kv_len < s->q_len || s->heads < 1 || s->kv_heads < 1 ||
        s->heads % s->kv_heads != 0 || s->head_dim < 1) {
        snprintf(err, errlen, "attn_kv: bad shape batch %d q_len %d kv_len %d heads %d kv_heads %d "
                 "head_dim %d (allowed: positive, kv_len >= q_len, heads a multiple of kv_heads)",
                 s->batch, s->q_len, s->kv_len, s->heads, s->kv_heads, s->head_dim);
        return -1;
    }
    if (!c->kv_q || !same_shape(&c->kv_shape, s)) {
        int rc = kv_alloc(c, s, err, errlen);
        if (rc != 0)
            return rc;
    }
    double t0 = pdbx_mono_s() * 1e3;
    pdbx_k_attention_kv(c->pool, c->kv_q, c->kv_k, c->kv_v, s->batch, s->q_len, s->kv_len, s->heads,
                        s->kv_heads, s->head_dim, c->kv_scratch, c->kv_out);
    *ms = pdbx_mono_s() * 1e3 - t0;
    return 0;
}
