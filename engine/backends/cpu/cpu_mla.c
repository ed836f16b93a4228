/* cpu_mla.c: DeepSeek's multi-head latent attention on the cpu backend (cpu_internal.h,
 * cpu_mla): its dims, buffers and forward ops, HF DeepseekV2Attention's data flow in fp32:
 *   q_lora_rank > 0: attn_q_a xn -> qa [T, rq];  attn_q_norm qa -> qan;  attn_q_b qan -> q
 *                    [T, H, nope + rope]   (q_lora_rank 0: attn_q xn -> q, cpu_compute.c)
 *   attn_kv_a:    xn -> kva [T, rkv + rope] (the latent, then the shared k_pe)
 *   attn_kv_norm: kva's latent -> kvn [T, rkv] (RMSNorm of the strided rows, in place in kva's
 *                 layout as HF normalises its split view)
 *   attn_kv_b:    kvn -> kvb [T, H, nope + dv] (each head's k_nope and v)
 *   attn_rope:    q's rope parts and k_pe rotated in place, then k [T, H, nope + rope] and v
 *                 [T, H, dv] gathered (pdbx_k_mla_rope_kv): the concat and split that HF and
 *                 Megatron run next to the rotary embedding are timed with it
 *   attn_core:    every head its own k and v (kv_heads = H), head dims nope + rope and dv
 *   attn_o:       ctx [T, H * dv] -> y (cpu_compute.c, at the context's width)
 * H = heads / TP: q_b and kv_b are column-parallel over the heads, q_a, kv_a and their norms
 * replicated (Megatron's MLASelfAttention; plan_shapes_moe.c). */
#include "engine/backends/cpu/cpu_internal.h"
#include "engine/backends/cpu/cpu_kernels.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MLA_NORM_EPS 1e-5f   /* cpu_compute.c's NORM_EPS; DeepSeek's rms_norm_eps is 1e-6 (the
                              * value changes no work) */

int pdbx_cpu_mla_dims(pdbx_compute *c, char *err, size_t errlen)
{
    cpu_mla *M = &c->mla;
    const pdbx_model *m = &c->p.model;
    memset(&M->dims, 0, sizeof M->dims);
    M->on = m->arch.attention == PDBX_ATTN_MLA;
    M->rq = 0;
    if (!M->on)
        return 0;
    /* the planner's validation refuses both (plan_validate.c); a caller that did not is
     * refused here rather than run at other widths */
    if (c->esz != 4) {
        snprintf(err, errlen, "cpu backend: model %s's multi-head latent attention runs in fp32 only "
                 "(allowed: dtype fp32)", m->name);
        return -1;
    }
    if (c->p.fused_projections) {
        snprintf(err, errlen, "cpu backend: model %s's multi-head latent attention has no fused QKV GEMM "
                 "(allowed: fused_projections false)", m->name);
        return -1;
    }
    M->rq = m->arch.mla.q_lora_rank;
    M->dims = (pdbx_mla_dims){ .heads = c->heads, .nope = m->arch.mla.qk_nope_head_dim,
                               .rope = m->arch.mla.qk_rope_head_dim, .dv = m->arch.mla.v_head_dim,
                               .rkv = m->arch.mla.kv_lora_rank };
    return 0;
}

void **pdbx_cpu_mla_slot(pdbx_compute *c, pdbx_buf_role r, int layer)
{
    cpu_mla *M = &c->mla;
    cpu_layer *L = &c->layer[layer];
    switch (r) {
    case PDBX_BUF_MLA_Q_A: return (void **)&M->qa;
    case PDBX_BUF_MLA_Q_A_NORM: return (void **)&M->qan;
    case PDBX_BUF_MLA_KV_A: return (void **)&M->kva;
    case PDBX_BUF_MLA_KV_NORM: return (void **)&M->kvn;
    case PDBX_BUF_MLA_KV_B: return (void **)&M->kvb;
    case PDBX_BUF_MLA_NORM_W: return (void **)&M->norm_w;
    case PDBX_BUF_L_Q_A: return &L->wqa;
    case PDBX_BUF_L_Q_B: return &L->wqb;
    case PDBX_BUF_L_KV_A: return &L->wkva;
    case PDBX_BUF_L_KV_B: return &L->wkvb;
    case PDBX_BUF_GRAD_MLA_Q_A: return (void **)&M->dqa;
    case PDBX_BUF_GRAD_MLA_Q_A_NORM: return (void **)&M->dqan;
    case PDBX_BUF_GRAD_MLA_KV_A: return (void **)&M->dkva;
    case PDBX_BUF_GRAD_MLA_KV_NORM: return (void **)&M->dkvn;
    case PDBX_BUF_GRAD_MLA_KV_B: return (void **)&M->dkvb;
    case PDBX_BUF_GRAD_MLA_NORM_W: return (void **)&M->dnorm_w;
    case PDBX_BUF_GRAD_W_Q_A: return (void **)&M->dwqa;
    case PDBX_BUF_GRAD_W_Q_B: return (void **)&M->dwqb;
    case PDBX_BUF_GRAD_W_KV_A: return (void **)&M->dwkva;
    case PDBX_BUF_GRAD_W_KV_B: return (void **)&M->dwkvb;
    default: return NULL;
    }
}

void pdbx_cpu_mla_forget(pdbx_compute *c, int weights)
{
    cpu_mla *M = &c->mla;
    M->qa = M->qan = M->kva = M->kvn = M->kvb = NULL;
    M->dqa = M->dqan = M->dkva = M->dkvn = M->dkvb = M->dnorm_w = NULL;
    M->dwqa = M->dwqb = M->dwkva = M->dwkvb = NULL;
    if (weights)
        M->norm_w = NULL;   /* the layers' weights go with cpu_layer's memset */
}

/* Pseudo-random fp32 values in [-scale, scale] (the weights 1/sqrt(fan_in), as cpu_memory.c's). */
static void fill(float *x, int64_t n, float scale, uint64_t seed)
{
    if (x && n > 0)
        pdbx_k_fill_uniform(x, (size_t)n, scale, seed);
}

static void zero(float *x, int64_t n)
{
    if (x && n > 0)
        memset(x, 0, (size_t)n * sizeof *x);
}

uint64_t pdbx_cpu_mla_fill(pdbx_compute *c, uint64_t seed, int new_weights)
{
    cpu_mla *M = &c->mla;
    if (!M->on)
        return seed;
    const pdbx_mla_dims *D = &M->dims;
    const int64_t T = c->T, rq = M->rq, rkv = D->rkv, kva_w = rkv + D->rope;
    const int64_t qbd = D->heads * (D->nope + D->rope), kvbd = D->heads * (D->nope + D->dv);
    /* activations every op reads: O(1), as the common ones; gradients the same (a loss's) */
    const struct { float *p; int64_t n; } act[] = {
        { M->qa, T * rq }, { M->qan, T * rq }, { M->kva, T * kva_w }, { M->kvn, T * rkv },
        { M->kvb, T * kvbd }, { M->dqa, T * rq }, { M->dqan, T * rq }, { M->dkva, T * kva_w },
        { M->dkvn, T * rkv }, { M->dkvb, T * kvbd },
    };
    for (size_t i = 0; i < sizeof act / sizeof act[0]; i++)
        fill(act[i].p, act[i].n, 1.0f, seed++);
    /* weight gradients from zero, as main_grad at the start of a step */
    zero(M->dnorm_w, rq + rkv);
    zero(M->dwqa, c->h * rq);
    zero(M->dwqb, rq * qbd);
    zero(M->dwkva, c->h * kva_w);
    zero(M->dwkvb, rkv * kvbd);
    if (!new_weights)
        return seed;
    for (int64_t i = 0; M->norm_w && i < rq + rkv; i++)   /* as trained norm weights: ~1 */
        M->norm_w[i] = 1.0f + 0.01f * (float)(i % 7);
    const float sh = 1.0f / sqrtf((float)c->h);
    for (int l = 0; l < c->nlayers; l++) {
        cpu_layer *L = &c->layer[l];
        fill(L->wqa, c->h * rq, sh, seed++);
        fill(L->wqb, rq * qbd, rq > 0 ? 1.0f / sqrtf((float)rq) : 0.0f, seed++);
        fill(L->wkva, c->h * kva_w, sh, seed++);
        fill(L->wkvb, rkv * kvbd, 1.0f / sqrtf((float)rkv), seed++);
    }
    return seed;
}

int pdbx_cpu_mla_runs(const pdbx_compute *c, pdbx_op op)
{
    return c->mla.on && ((PDBX_OP_BIT(op) & PDBX_OPS_MLA) || op == PDBX_OP_ATTN_ROPE);
}

void pdbx_cpu_mla_fwd(pdbx_compute *c, pdbx_op op, int layer)
{
    cpu_mla *M = &c->mla;
    const pdbx_mla_dims *D = &M->dims;
    const cpu_layer *L = &c->layer[layer];
    const int64_t T = c->T, kva_w = D->rkv + D->rope;
    switch (op) {
    case PDBX_OP_ATTN_Q_A:
        pdbx_cpu_gemm(c, c->xn, L->wqa, M->qa, T, M->rq, c->h);
        break;
    case PDBX_OP_ATTN_Q_NORM:
        pdbx_k_rmsnorm(c->pool, M->qa, M->norm_w, T, M->rq, MLA_NORM_EPS, M->qan);
        break;
    case PDBX_OP_ATTN_Q_B:
        pdbx_cpu_gemm(c, M->qan, L->wqb, c->q, T, c->qd, M->rq);
        break;
    case PDBX_OP_ATTN_KV_A:
        pdbx_cpu_gemm(c, c->xn, L->wkva, M->kva, T, kva_w, c->h);
        break;
    case PDBX_OP_ATTN_KV_NORM:
        pdbx_k_rmsnorm_strided(c->pool, M->kva, kva_w, M->norm_w + M->rq, T, D->rkv, MLA_NORM_EPS,
                               M->kvn, D->rkv);
        break;
    case PDBX_OP_ATTN_KV_B:
        pdbx_cpu_gemm(c, M->kvn, L->wkvb, M->kvb, T, D->heads * (D->nope + D->dv), D->rkv);
        break;
    case PDBX_OP_ATTN_ROPE:
        pdbx_k_mla_rope_kv(c->pool, D, T, c->p.seq_len, c->rope, c->rope + c->p.seq_len * (D->rope / 2),
                           c->q, M->kva, M->kvb, c->k, c->v);
        break;
    default:   /* pdbx_cpu_mla_runs said which */
        break;
    }
}
