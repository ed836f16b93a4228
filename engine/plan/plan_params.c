/* plan_params.c: the parameters one rank holds (Megatron's sharding: column-parallel q/k/v,
 * gate/up and the MLA up projections, row-parallel o and down split over TP; norms, MLA's down
 * projections and a MoE router replicated; routed experts whole, E / EP per rank; the
 * vocab-parallel embedding and lm_head split over TP). Checked against transformers' counts
 * of the full models (tests/unit/test_plan_moe_params.c, test_plan_families.c). */
#include "engine/plan/plan_internal.h"

#include <string.h>

static double norm_params(const pdbx_model *m)
{
    return m->arch.norm == PDBX_NORM_LAYER ? 2.0 * m->hidden : m->hidden;   /* LayerNorm's bias */
}

/* gemma-2's sandwich norms (HF Gemma2DecoderLayer): post_attention_layernorm on the attention's
 * output and post_feedforward_layernorm on the MLP's, each before its residual add, beside
 * input_layernorm and pre_feedforward_layernorm (pdbx's input_norm and post_attn_norm). Their
 * weights are counted here, one per side; pdbx has no ops for them, so their two RMSNorms per
 * layer are not measured (docs/models.md). 0 for every other family. */
static double sandwich_norm_params(const pdbx_model *m)
{
    return strcmp(m->arch.model_type, "gemma2") == 0 ? norm_params(m) : 0;
}

double plan_layer_attn_params(const pdbx_model *m, int tp)
{
    const pdbx_arch *ar = &m->arch;
    const double t = tp, h = m->hidden, a = m->heads, d = m->head_dim, kv = plan_kv_heads_per_rank(m, tp);
    double p = norm_params(m) + sandwich_norm_params(m);         /* input_norm (gemma-2: and post) */
    if (ar->attention == PDBX_ATTN_MLA) {
        const double rq = ar->mla.q_lora_rank, rkv = ar->mla.kv_lora_rank, rope = ar->mla.qk_rope_head_dim,
                     nope = ar->mla.qk_nope_head_dim, dv = ar->mla.v_head_dim;
        p += rq > 0 ? h * rq + rq + rq * a * d / t : h * a * d / t;   /* q_a, q_norm, q_b; or q */
        p += h * (rkv + rope) + rkv + rkv * a * (nope + dv) / t;       /* kv_a, kv_norm, kv_b */
        return p + a * dv * h / t;                                     /* o */
    }
    /* q and o are split over TP, k and v hold kv/TP heads (one replicated head when TP > kv) */
    p += 2 * h * a * d / t + 2 * h * kv * d;
    if (ar->qk_norm)                                              /* q_norm, k_norm: [head_dim] */
        p += 2 * d;
    /* biases (arch.bias): q/k/v's are split as their outputs; o_proj's (row-parallel, added
     * after the reduce) is whole on every rank */
    if (ar->bias.qkv)
        p += a * d / t + 2 * kv * d;
    if (ar->bias.attn_out)
        p += h;
    return p;
}

double plan_layer_mlp_params(const pdbx_model *m, int tp, int ep, int moe)
{
    const pdbx_arch *ar = &m->arch;
    const double t = tp, h = m->hidden;
    double p = ar->shared_norm ? 0 : norm_params(m);             /* post_attn_norm (gpt-j: none) */
    p += sandwich_norm_params(m);                                /* gemma-2's post-MLP norm */
    if (!moe) {
        const double I = m->intermediate, mats = ar->mlp_plain ? 2 : 3;   /* fc1, fc2 */
        p += mats * h * I / t;
        if (ar->bias.mlp)   /* gate/up's split as their outputs, down's whole */
            p += (mats - 1) * I / t + h;
        return p;
    }
    const double E = ar->moe.experts, Ie = ar->moe.expert_intermediate, Is = plan_moe_shared_width(m);
    p += h * E;                                                  /* router */
    p += E / (ep > 0 ? ep : 1) * 3 * h * Ie;                     /* the rank's experts: gate, up, down */
    p += 3 * h * Is / t;                                         /* shared experts */
    if (Is > 0 && ar->moe.shared_expert_intermediate > 0)        /* Qwen-MoE's shared_expert_gate [h, 1] */
        p += h;
    return p;
}

double pdbx_optimizer_params(const pdbx_model *m, int tp, int ep)
{
    const int moe = plan_is_moe(m) && m->arch.moe.first_dense_layers < m->layers;
    return plan_layer_attn_params(m, tp) + plan_layer_mlp_params(m, tp, ep > 0 ? ep : 1, moe);
}

double plan_stage_params(const pdbx_model *m, int tp, int pp)
{
    return plan_stage_params_ep(m, tp, pp, 1);
}

/* The MoE layers among stage 0's L layers (the dense ones come first: DeepSeek). */
static int stage_moe_layers(const pdbx_model *m, int L)
{
    int dense = plan_is_moe(m) ? m->arch.moe.first_dense_layers : L;
    dense = dense < 0 ? 0 : dense > L ? L : dense;
    return L - dense;
}

double plan_stage_expert_params(const pdbx_model *m, int pp, int ep)
{
    if (!plan_is_moe(m))
        return 0;
    const double E = m->arch.moe.experts, Ie = m->arch.moe.expert_intermediate;
    return stage_moe_layers(m, plan_layers_per_stage(m, pp)) * (E / (ep > 0 ? ep : 1)) * 3 * m->hidden * Ie;
}

double plan_stage_params_ep(const pdbx_model *m, int tp, int pp, int ep)
{
    const double h = m->hidden, V = (double)plan_vocab_per_rank(m, tp) * tp;
    const int L = plan_layers_per_stage(m, pp);
    /* stage 0 holds the model's first layers: DeepSeek's dense ones first */
    const int moe = stage_moe_layers(m, L), dense = L - moe;
    const double attn = plan_layer_attn_params(m, tp);
    double params = dense * (attn + plan_layer_mlp_params(m, tp, 1, 0)) +
                    moe * (attn + plan_layer_mlp_params(m, tp, ep, 1)) + V * h / tp;   /* + embedding */
    /* learned positions: Megatron's position_embeddings, a plain (replicated) table on stage 0 */
    if (m->arch.position == PDBX_POS_LEARNED)
        params += (double)m->arch.max_positions * h;
    if (pp == 1)                                          /* stage 0 is also the last stage */
        params += norm_params(m) + (m->tie_embeddings ? 0 : V * h / tp);   /* final norm, lm_head */
    return params;
}
