/* plan_profile_memory_cuda_mla.c: the cuda backend's buffers of qwen3's q/k norm and DeepSeek's
 * multi-head latent attention (plan_profile_memory.h), mirroring engine/backends/cuda/cuda_mla.c
 * and cuda_bufs.c (the .so links none of the planner; tests/cuda/test_cuda_dense_point.c holds
 * the two equal). Everything in the dtype but the gradients of weights (fp32), exact sizes
 * (cudaMalloc's): qk_norm's two weights [2, d] shared by the layers; MLA's outputs of q_a,
 * q_norm, kv_a, kv_norm and kv_b, each allocated when an op that reads or writes it is
 * prepared (attn_rope reads kv_a's k_pe and kv_b's output), its q/kv norm weights [rq + rkv]
 * shared by the layers, and per weight set the four projections; with bwd the gradient of each.
 * (q, k, v and the context at MLA's widths are plan_profile_memory_cuda.c's.) */
#include "engine/plan/plan_profile_memory.h"

#define MLA(p) ((p)->model.arch.attention == PDBX_ATTN_MLA)
#define ML (p->model.arch.mla)

double plan_mem_cuda_mla_layer_elems(const pdbx_profile_point *p)
{
    if (!MLA(p))
        return 0;
    const double h = p->model.hidden, H = (double)(p->model.heads / p->tp);
    const double rq = ML.q_lora_rank, rkv = ML.kv_lora_rank, rope = ML.qk_rope_head_dim;
    const double kvbd = H * (double)(ML.qk_nope_head_dim + ML.v_head_dim);
    return (HAS(ATTN_Q_A) ? rq * h : 0) + (HAS(ATTN_Q_B) ? H * p->model.head_dim * rq : 0) +
           (HAS(ATTN_KV_A) ? (rkv + rope) * h : 0) +
           (HAS(ATTN_KV_B) ? kvbd * rkv : 0);
}

void plan_mem_cuda_mla(const pdbx_profile_point *p, pdbx_profile_memory *out, int sets, int grad)
{
    const double es = p->dtype == PDBX_DTYPE_FP32 ? 4 : 2, f = 4;
    const double T = (double)p->mbs * p->seq_len, h = p->model.hidden, d = p->model.head_dim;
    if (grad && !(p->passes & PDBX_PASS_BIT(PDBX_PASS_BWD)))
        return;
    if (HAS(ATTN_QK_NORM) && p->model.arch.qk_norm)
        plan_mem_add(out, grad ? PDBX_BUF_GRAD_QK_NORM_W : PDBX_BUF_QK_NORM_W, grad ? PDBX_MEM_GRADS : PDBX_MEM_WEIGHTS,
                     2 * d * (grad ? f : es), 1);
    if (!MLA(p))
        return;
    const double H = (double)(p->model.heads / p->tp), rq = ML.q_lora_rank, rkv = ML.kv_lora_rank;
    const double rope = ML.qk_rope_head_dim, kvbd = H * (double)(ML.qk_nope_head_dim + ML.v_head_dim);
    const int rope_op = HAS(ATTN_ROPE) != 0;
    const struct {
        int used;
        pdbx_buf_role act, dact;
        double elems;
    } acts[] = {
        {HAS(ATTN_Q_A) || HAS(ATTN_Q_NORM), PDBX_BUF_MLA_Q_A, PDBX_BUF_GRAD_MLA_Q_A, T * rq},
        {HAS(ATTN_Q_NORM) || HAS(ATTN_Q_B), PDBX_BUF_MLA_Q_A_NORM, PDBX_BUF_GRAD_MLA_Q_A_NORM, T * rq},
        {HAS(ATTN_KV_A) || HAS(ATTN_KV_NORM) || rope_op, PDBX_BUF_MLA_KV_A, PDBX_BUF_GRAD_MLA_KV_A, T * (rkv + rope)},
        {HAS(ATTN_KV_NORM) || HAS(ATTN_KV_B), PDBX_BUF_MLA_KV_NORM, PDBX_BUF_GRAD_MLA_KV_NORM, T * rkv},
        {HAS(ATTN_KV_B) || rope_op, PDBX_BUF_MLA_KV_B, PDBX_BUF_GRAD_MLA_KV_B, T * kvbd},
        {HAS(ATTN_Q_NORM) || HAS(ATTN_KV_NORM), PDBX_BUF_MLA_NORM_W, PDBX_BUF_GRAD_MLA_NORM_W, rq + rkv},
    };
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        if (!acts[i].used)
            continue;
        const int w = acts[i].act == PDBX_BUF_MLA_NORM_W;   /* a weight, its gradient fp32 */
        if (grad)
            plan_mem_add(out, acts[i].dact, PDBX_MEM_GRADS, acts[i].elems * (w ? f : es), 1);
        else
            plan_mem_add(out, acts[i].act, w ? PDBX_MEM_WEIGHTS : PDBX_MEM_ACTIVATIONS, acts[i].elems * es, 1);
    }
    const struct {
        int used;
        pdbx_buf_role w, dw;
        double elems;
    } ws[] = {
        {HAS(ATTN_Q_A) != 0, PDBX_BUF_L_Q_A, PDBX_BUF_GRAD_W_Q_A, h * rq},
        {HAS(ATTN_Q_B) != 0, PDBX_BUF_L_Q_B, PDBX_BUF_GRAD_W_Q_B, H * d * rq},
        {HAS(ATTN_KV_A) != 0, PDBX_BUF_L_KV_A, PDBX_BUF_GRAD_W_KV_A, h * (rkv + rope)},
        {HAS(ATTN_KV_B) != 0, PDBX_BUF_L_KV_B, PDBX_BUF_GRAD_W_KV_B, kvbd * rkv},
    };
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
        if (ws[i].used)
            plan_mem_add(out, grad ? ws[i].dw : ws[i].w, grad ? PDBX_MEM_GRADS : PDBX_MEM_WEIGHTS,
                         ws[i].elems * (grad ? f : es), grad ? 1 : sets);
}
