/* plan_shapes_moe.c: per-op work on one rank of the MLA ops (DeepSeek's latent attention) and
 * of a mixture-of-experts layer's ops (docs/spec.md, "Shapes"; docs/engine-layers.md,
 * "Mixture of experts").
 *
 * MLA under TP (Megatron's MLASelfAttention): the down projections attn_q_a and attn_kv_a and
 * their norms are replicated on every TP rank; the up projections attn_q_b and attn_kv_b are
 * column-parallel over the heads, attn_o row-parallel.
 *
 * A MoE layer (Megatron's MoELayer with the all-to-all token dispatcher, expert tensor
 * parallelism 1): under TP the layer's T tokens are split over the TP ranks (Megatron requires
 * sequence parallelism with MoE and TP > 1), so a rank routes R = ceil(T / TP) rows; each is
 * sent to top_k experts, whole on the EP rank that holds them (E / EP each); with balanced
 * routing every expert receives R x top_k / E rows from each of the EP ranks, so a rank's
 * experts process R x top_k rows whatever EP; the spec's moe_routing skews that by plan_moe.h's
 * model (the rows of the measured rank's experts and of its busiest one; at EP > 1 the busiest
 * rank receives more than it sends). permute and unpermute move the rank's own R x top_k
 * copies; ep_dispatch and ep_combine move plan_comm.h's all-to-all message. Shared experts are a
 * dense MLP of their summed width split over TP like mlp_*, over all T rows. */
#include "engine/plan/plan_internal.h"
#include "engine/plan/plan_comm.h"
#include "engine/plan/plan_moe.h"

#include <string.h>

int plan_is_moe(const pdbx_model *m)
{
    return m->arch.moe.experts > 0;
}

int plan_moe_shared_width(const pdbx_model *m)
{
    const pdbx_arch *a = &m->arch;
    if (!plan_is_moe(m) || a->moe.shared_experts <= 0)
        return 0;
    if (a->moe.shared_expert_intermediate > 0)   /* Qwen-MoE: one shared expert of its own width */
        return a->moe.shared_expert_intermediate;
    return a->moe.shared_experts * a->moe.expert_intermediate;   /* DeepSeek: n_shared x moe width */
}

int plan_moe_layers(const pdbx_model *m)
{
    if (!plan_is_moe(m))
        return 0;
    const int dense = m->arch.moe.first_dense_layers;
    return dense >= m->layers ? 0 : m->layers - (dense > 0 ? dense : 0);
}

int plan_v_head_dim(const pdbx_model *m)
{
    return m->arch.attention == PDBX_ATTN_MLA ? m->arch.mla.v_head_dim : m->head_dim;
}

/* RMSNorm over rows x cols: x read, y written, the weight read (plan_shapes.c's norm). */
static void rms_norm(pdbx_op_shape *o, int64_t rows, int64_t cols, double e)
{
    plan_shape_elementwise(o, rows, cols, 4, e * (2.0 * (double)rows * (double)cols + (double)cols));
}

static int mla_shape(const pdbx_model *m, int tp, int64_t T, pdbx_op op, double e, pdbx_op_shape *out)
{
    const pdbx_arch *a = &m->arch;
    const int64_t h = m->hidden, heads_t = m->heads / tp, rq = a->mla.q_lora_rank, rkv = a->mla.kv_lora_rank;
    const int64_t nope = a->mla.qk_nope_head_dim, rope = a->mla.qk_rope_head_dim, dv = a->mla.v_head_dim;
    switch (op) {
    case PDBX_OP_ATTN_Q_A:
        plan_shape_gemm(out, T, rq, h, e);
        return 0;
    case PDBX_OP_ATTN_Q_NORM:
        rms_norm(out, T, rq, e);
        return 0;
    case PDBX_OP_ATTN_Q_B:
        plan_shape_gemm(out, T, heads_t * (nope + rope), rq, e);
        return 0;
    case PDBX_OP_ATTN_KV_A:     /* the latent and k's shared rope part */
        plan_shape_gemm(out, T, rkv + rope, h, e);
        return 0;
    case PDBX_OP_ATTN_KV_NORM:
        rms_norm(out, T, rkv, e);
        return 0;
    case PDBX_OP_ATTN_KV_B:     /* each head's k (nope part) and v */
        plan_shape_gemm(out, T, heads_t * (nope + dv), rkv, e);
        return 0;
    default:
        return -1;
    }
}

/* The rows of one rank's MoE layer: R routed, the rows its E / ep experts receive in all and
 * the busiest expert's, from plan_moe.h's routing model for the measured rank at the spec's
 * imbalance (EP 1: the rank holds every expert, so the total is R x top_k whatever the
 * imbalance; the busiest expert's rows grow with it; EP > 1: the busiest rank receives more
 * than the R x top_k it sends when the routing is skewed). */
static void moe_rows(const pdbx_spec *spec, int tp, int ep, int64_t T, int64_t *routed, int64_t *expert_rows,
                     int64_t *busiest)
{
    const pdbx_arch *a = &spec->model.arch;
    *routed = (T + tp - 1) / tp;
    *expert_rows = *routed * a->moe.top_k;
    *busiest = (*expert_rows + a->moe.experts - 1) / a->moe.experts;
    const pdbx_moe_route r = { *routed, a->moe.top_k, a->moe.experts, ep,
                               spec->moe_imbalance >= 1 ? spec->moe_imbalance : 1 };
    pdbx_moe_load load;
    char err[160];
    if (pdbx_moe_rank_load(&r, PDBX_MOE_MEASURED_RANK, &load, NULL, NULL, NULL, NULL, err, sizeof err) == 0) {
        *expert_rows = load.received;
        *busiest = load.busiest;
    }
}

static int moe_shape(const pdbx_spec *spec, int tp, int ep, int64_t T, pdbx_op op, double e, pdbx_op_shape *out)
{
    const pdbx_model *m = &spec->model;
    const pdbx_arch *a = &m->arch;
    const int64_t h = m->hidden, E = a->moe.experts, k = a->moe.top_k, Ie = a->moe.expert_intermediate;
    const int64_t Is_t = plan_moe_shared_width(m) / tp, El = E / ep;
    int64_t R, X, busiest;   /* X: the rows the rank's experts receive (R x k at EP 1) */
    moe_rows(spec, tp, ep, T, &R, &X, &busiest);
    const int64_t own = R * k;   /* the rank's own copies: what permute and unpermute move */
    const double gated_act = 4;   /* SiLU(gate) x up: MoE families are gated SiLU (plan_arch.c) */
    switch (op) {
    case PDBX_OP_MOE_ROUTER: {  /* logits, scores over E and the top-k pick: ~E x 5 per row */
        plan_shape_gemm(out, R, E, h, e);
        out->flops += 5.0 * (double)R * (double)E;
        out->bytes += 8.0 * (double)R * (double)k;   /* the picks: index and weight */
        return 0;
    }
    case PDBX_OP_MOE_PERMUTE:   /* each row copied to its k places */
        plan_shape_elementwise(out, own, h, 0, e * (double)(R + own) * (double)h + 4.0 * (double)own);
        return 0;
    case PDBX_OP_EP_DISPATCH:
    case PDBX_OP_EP_COMBINE: {  /* at EP 1 nothing crosses ranks; else the all-to-all's S, as
                                 * [ep x largest block rows, h] (plan_comm.h) */
        const double S = pdbx_plan_ep_bytes(m, tp, ep, (int)(T / spec->seq_len), spec->seq_len, spec->dtype,
                                            spec->moe_imbalance);
        plan_shape_elementwise(out, ep > 1 ? (int64_t)(S / ((double)h * e)) : own, h, 0, S);
        return 0;
    }
    case PDBX_OP_MOE_EXPERT_GATE:
    case PDBX_OP_MOE_EXPERT_UP:
    case PDBX_OP_MOE_EXPERT_DOWN: {
        const int down = op == PDBX_OP_MOE_EXPERT_DOWN;
        plan_shape_gemm(out, X, down ? h : Ie, down ? Ie : h, e);
        out->batch = El;                              /* one GEMM per local expert */
        out->m = busiest;                             /* rows of the busiest expert */
        out->bytes = e * ((double)X * (double)(h + Ie) + (double)El * (double)h * (double)Ie);
        return 0;
    }
    case PDBX_OP_MOE_EXPERT_ACT:
        plan_shape_elementwise(out, X, Ie, gated_act, 3.0 * e * (double)X * (double)Ie);
        return 0;
    case PDBX_OP_MOE_UNPERMUTE: /* k rows weighted and summed per token */
        plan_shape_elementwise(out, R, h, 2.0 * (double)k,
                               e * (double)(own + R) * (double)h + 8.0 * (double)own);
        return 0;
    case PDBX_OP_MOE_SHARED_GATE:
    case PDBX_OP_MOE_SHARED_UP:
        plan_shape_gemm(out, T, Is_t, h, e);
        return 0;
    case PDBX_OP_MOE_SHARED_ACT:
        plan_shape_elementwise(out, T, Is_t, gated_act, 3.0 * e * (double)T * (double)Is_t);
        return 0;
    case PDBX_OP_MOE_SHARED_DOWN:
        plan_shape_gemm(out, T, h, Is_t, e);
        return 0;
    default:
        return -1;
    }
}

int plan_shape_moe_mla(const pdbx_spec *spec, int tp, int ep, int mbs, pdbx_op op, pdbx_op_shape *out)
{
    const pdbx_model *m = &spec->model;
    memset(out, 0, sizeof *out);
    const int64_t T = (int64_t)mbs * spec->seq_len;
    const double e = pdbx_dtype_bytes(spec->dtype);
    if (op >= PDBX_OP_ATTN_Q_A && op <= PDBX_OP_ATTN_KV_B) {
        if (m->arch.attention != PDBX_ATTN_MLA)
            return -1;
        return mla_shape(m, tp, T, op, e, out);
    }
    if (!pdbx_op_is_moe(op) || !plan_is_moe(m))
        return -1;
    if (ep < 1 || m->arch.moe.experts % ep != 0)
        return -1;
    return moe_shape(spec, tp, ep, T, op, e, out);
}
