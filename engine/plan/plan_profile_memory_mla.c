/* plan_profile_memory_mla.c: the cpu backend's buffers of DeepSeek's multi-head latent attention
 * (plan_profile_memory.h; engine/backends/cpu/cpu_mla.c allocates and uses them).
 *
 * MLA changes three widths of the common rows (plan_profile_memory_cpu.c's layer_rows): k is
 * [T, a/TP, nope + rope] (every head its own k: the latent's k_nope with the one shared rope
 * head broadcast), v and the attention context [T, a/TP, v_head_dim]; and adds its own buffers:
 * the outputs of q_a, q_norm, kv_a, kv_norm and kv_b (kv_b's k_nope and v stay interleaved per
 * head, as HF's view of kv_b's output: attn_rope gathers k and v out of it), one pair of norm
 * weights shared by the layers (as the layer norms' norm_w), and per layer the four
 * projections' weights; with bwd the fp32 gradient of each. */
#include "engine/plan/plan_profile_memory.h"

static int is_mla(const pdbx_profile_point *p)
{
    return p->model.arch.attention == PDBX_ATTN_MLA;
}

void plan_mem_attn_widths(const pdbx_profile_point *p, double *kd, double *vd, double *ctxd)
{
    const double a_t = p->model.heads / p->tp, d = p->model.head_dim;
    if (!is_mla(p)) {
        *kd = *vd = plan_kv_heads_per_rank(&p->model, p->tp) * d;
        *ctxd = a_t * d;
        return;
    }
    *kd = a_t * d;
    *vd = *ctxd = a_t * p->model.arch.mla.v_head_dim;
}

void plan_mem_cpu_mla(const pdbx_profile_point *p, pdbx_profile_memory *out, int grad)
{
    if (!is_mla(p))
        return;
    const double f = 4, e = p->dtype == PDBX_DTYPE_BF16 ? 2 : 4;
    const double T = (double)p->mbs * p->seq_len, h = p->model.hidden, a_t = p->model.heads / p->tp;
    const double rq = p->model.arch.mla.q_lora_rank, rkv = p->model.arch.mla.kv_lora_rank;
    const double nope = p->model.arch.mla.qk_nope_head_dim, rope = p->model.arch.mla.qk_rope_head_dim;
    const double dv = p->model.arch.mla.v_head_dim, qbd = a_t * (nope + rope), kvbd = a_t * (nope + dv);
    const int L = p->layers;
    if (!grad) {
        const pdbx_mem_kind A = PDBX_MEM_ACTIVATIONS, W = PDBX_MEM_WEIGHTS;
        if (rq > 0) {
            plan_mem_add(out, PDBX_BUF_MLA_Q_A, A, plan_mem_lines(T * rq * f), 1);
            plan_mem_add(out, PDBX_BUF_MLA_Q_A_NORM, A, plan_mem_lines(T * rq * f), 1);
        }
        plan_mem_add(out, PDBX_BUF_MLA_KV_A, A, plan_mem_lines(T * (rkv + rope) * f), 1);
        plan_mem_add(out, PDBX_BUF_MLA_KV_NORM, A, plan_mem_lines(T * rkv * f), 1);
        plan_mem_add(out, PDBX_BUF_MLA_KV_B, A, plan_mem_lines(T * kvbd * f), 1);
        plan_mem_add(out, PDBX_BUF_MLA_NORM_W, W, plan_mem_lines((rq + rkv) * f), 1);
        if (HAS(ATTN_Q_A)) plan_mem_add(out, PDBX_BUF_L_Q_A, W, plan_mem_lines(h * rq * e), L);
        if (HAS(ATTN_Q_B)) plan_mem_add(out, PDBX_BUF_L_Q_B, W, plan_mem_lines(rq * qbd * e), L);
        if (HAS(ATTN_KV_A)) plan_mem_add(out, PDBX_BUF_L_KV_A, W, plan_mem_lines(h * (rkv + rope) * e), L);
        if (HAS(ATTN_KV_B)) plan_mem_add(out, PDBX_BUF_L_KV_B, W, plan_mem_lines(rkv * kvbd * e), L);
        return;
    }
    const pdbx_mem_kind G = PDBX_MEM_GRADS;
    if (rq > 0) {
        plan_mem_add(out, PDBX_BUF_GRAD_MLA_Q_A, G, plan_mem_lines(T * rq * f), 1);
        plan_mem_add(out, PDBX_BUF_GRAD_MLA_Q_A_NORM, G, plan_mem_lines(T * rq * f), 1);
    }
    plan_mem_add(out, PDBX_BUF_GRAD_MLA_KV_A, G, plan_mem_lines(T * (rkv + rope) * f), 1);
    plan_mem_add(out, PDBX_BUF_GRAD_MLA_KV_NORM, G, plan_mem_lines(T * rkv * f), 1);
    plan_mem_add(out, PDBX_BUF_GRAD_MLA_KV_B, G, plan_mem_lines(T * kvbd * f), 1);
    plan_mem_add(out, PDBX_BUF_GRAD_MLA_NORM_W, G, plan_mem_lines((rq + rkv) * f), 1);
    if (HAS(ATTN_Q_A)) plan_mem_add(out, PDBX_BUF_GRAD_W_Q_A, G, plan_mem_lines(h * rq * f), 1);
    if (HAS(ATTN_Q_B)) plan_mem_add(out, PDBX_BUF_GRAD_W_Q_B, G, plan_mem_lines(rq * qbd * f), 1);
    if (HAS(ATTN_KV_A)) plan_mem_add(out, PDBX_BUF_GRAD_W_KV_A, G, plan_mem_lines(h * (rkv + rope) * f), 1);
    if (HAS(ATTN_KV_B)) plan_mem_add(out, PDBX_BUF_GRAD_W_KV_B, G, plan_mem_lines(rkv * kvbd * f), 1);
}
