/* cpu_mla_bwd.c: the bwd pass of MLA's ops on the cpu backend (cpu_mla.c has the forward's data
 * flow). Each is its forward's backward as the other ops' (cpu_backward.c): the projections'
 * dgrad and wgrad GEMMs (dW accumulated into the fp32 weight gradient), the norms' RMSNorm
 * backward (kv_norm's on the latent's strided rows), attn_rope's transpose (dq's and dk_pe's
 * inverse rotation, dk's nope parts and dv scattered into kv_b's output gradient, the shared
 * k_pe's gradient summed over the heads). The chain runs backwards: attn_core -> dq, dk, dv ->
 * attn_rope -> dq (rope parts), dkvb, dkva's k_pe -> attn_kv_b -> dkvn -> attn_kv_norm -> dkva's
 * latent -> attn_kv_a -> d input_norm_out; dq -> attn_q_b -> dqan -> attn_q_norm -> dqa ->
 * attn_q_a -> d input_norm_out (each of the three writes it: the sum of the branches is what
 * autograd adds; here each dgrad's output stands for it, as attn_q/k/v's do). */
#include "engine/backends/cpu/cpu_internal.h"
#include "engine/backends/cpu/cpu_kernels_bwd.h"

#define MLA_NORM_EPS 1e-5f   /* the forward's (cpu_mla.c) */

void pdbx_cpu_mla_bwd(pdbx_compute *c, pdbx_op op, int layer)
{
    cpu_mla *M = &c->mla;
    cpu_grads *g = &c->grad;
    const pdbx_mla_dims *D = &M->dims;
    const cpu_layer *L = &c->layer[layer];
    const int64_t T = c->T, kva_w = D->rkv + D->rope;
    switch (op) {
    case PDBX_OP_ATTN_Q_A:
        pdbx_cpu_linear_bwd(c, c->xn, L->wqa, M->dqa, g->dxn, M->dwqa, T, M->rq, c->h);
        break;
    case PDBX_OP_ATTN_Q_NORM:
        pdbx_k_rmsnorm_bwd(M->qa, M->norm_w, M->dqan, T, M->rq, MLA_NORM_EPS, M->dqa, M->dnorm_w);
        break;
    case PDBX_OP_ATTN_Q_B:
        pdbx_cpu_linear_bwd(c, M->qan, L->wqb, g->dq, M->dqan, M->dwqb, T, c->qd, M->rq);
        break;
    case PDBX_OP_ATTN_KV_A:
        pdbx_cpu_linear_bwd(c, c->xn, L->wkva, M->dkva, g->dxn, M->dwkva, T, kva_w, c->h);
        break;
    case PDBX_OP_ATTN_KV_NORM:
        pdbx_k_rmsnorm_strided_bwd(M->kva, kva_w, M->norm_w + M->rq, M->dkvn, D->rkv, T, D->rkv,
                                   MLA_NORM_EPS, M->dkva, kva_w, M->dnorm_w + M->rq);
        break;
    case PDBX_OP_ATTN_KV_B:
        pdbx_cpu_linear_bwd(c, M->kvn, L->wkvb, M->dkvb, M->dkvn, M->dwkvb, T,
                            D->heads * (D->nope + D->dv), D->rkv);
        break;
    case PDBX_OP_ATTN_ROPE:
        pdbx_k_mla_rope_kv_bwd(c->pool, D, T, c->p.seq_len, c->rope,
                               c->rope + c->p.seq_len * (D->rope / 2), g->dq, g->dk, g->dv, M->dkva,
                               M->dkvb);
        break;
    default:   /* pdbx_cpu_mla_runs said which */
        break;
    }
}
