/* plan_memory.c: predicted training memory of one rank of pipeline stage 0 (design.md
 * section 4; formulas and choices in docs/spec.md, "Memory model").
 *
 * Stage 0 is the stage predicted: under 1F1B it holds PP micro-batches of activations (the
 * last stage holds one), and its embedding table is as large as the last stage's lm_head, so
 * it is the fullest stage. With uneven splits it is given ceil(layers / PP) layers. */
#include "engine/plan/plan_internal.h"
#include "engine/plan/plan_comm.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The MLP part of a MoE layer's activations kept for backward per micro-batch (docs/spec.md,
 * "Memory model"), in place of the dense MLP's SwiGLU tensors. Under TP a rank routes
 * R = ceil(s b / t) rows (sequence parallelism, plan_shapes_moe.c), X = R top_k copies (at EP 1
 * all of them stay on the rank, whatever the routing imbalance): the router's logits (dtype) and
 * probabilities (fp32) [R, E], the top-k ids and weights (int64 + fp32) [X], the permuted rows
 * [X, h] the expert GEMMs read, the experts' four SwiGLU tensors [X, I_e] (gate out, up out,
 * SiLU out, product, as the dense MLP's) and their output [X, h] that unpermute weighs; the
 * shared experts as a dense MLP of width I_s / t over all s b rows. */
static double moe_mlp_act(const pdbx_model *m, double t, double s, double b, double e)
{
    const double R = (double)(((int64_t)(s * b) + (int64_t)t - 1) / (int64_t)t);
    const double E = m->arch.moe.experts, X = R * m->arch.moe.top_k, Ie = m->arch.moe.expert_intermediate;
    const double Is = plan_moe_shared_width(m) / t;
    return R * E * (e + 4) + X * 12 + 2 * X * m->hidden * e + 4 * X * Ie * e + s * b * e * 4 * Is;
}

void pdbx_memory_predict(const pdbx_spec *spec, const pdbx_parallel *par, int mbs, pdbx_memory *out)
{
    memset(out, 0, sizeof *out);
    const pdbx_model *m = &spec->model;
    if (!par || par->tp < 1 || par->pp < 1 || par->dp < 1 || mbs < 1 || m->layers < 1)
        return;
    const double t = par->tp, h = m->hidden, a = m->heads, d = m->head_dim, I = m->intermediate,
                 s = spec->seq_len, b = mbs, e = pdbx_dtype_bytes(spec->dtype);
    const double kv = plan_kv_heads_per_rank(m, par->tp);   /* kv heads held per rank */
    const double L = plan_layers_per_stage(m, par->pp);

    /* expert parallelism (plan.h): E / ep experts per rank; with ZeRO-1 the experts' optimizer
     * states are sharded over the expert data parallel group, tp x dp / ep ranks (Megatron's
     * distributed optimizer shards each parameter over the group that reduces its gradient) */
    const int ep = pdbx_par_ep(par);
    double params = plan_stage_params_ep(m, par->tp, par->pp, ep);
    const double experts = plan_stage_expert_params(m, par->pp, ep);
    const double edp = (double)par->tp * par->dp / ep;
    out->params_per_rank = params;
    out->weights = e * params;
    out->grads = e * params;
    out->optimizer = (spec->bytes_per_param - 2 * e) *
                     (spec->zero1 ? (params - experts) / par->dp + experts / (edp >= 1 ? edp : 1) : params);

    /* Activations kept for backward per layer per micro-batch (Korthikanti et al. 2022, no
     * sequence parallelism) adapted to Llama: replicated [s,b,h] tensors (two norm inputs, two
     * norm outputs feeding the QKV and gate/up GEMMs) plus two 1-byte dropout masks; per TP
     * rank q, k, v (GQA: kv heads per rank), the attn_o input, four [s,b,I/t] SwiGLU tensors
     * (gate out, up out, SiLU out, product) and the score terms softmax out + mask + dropout
     * out (2e+1 bytes per score) unless flash attention recomputes them. With e = 2, k = a,
     * a*d = h and a 2-tensor GeLU MLP of 4h this is exactly s*b*h*(10 + 24/t + 5*a*s/(h*t)):
     * a plain MLP (arch.mlp_plain: gpt2, gpt-neox) keeps those two [s,b,I/t] tensors (fc1 out,
     * GELU out). LayerNorm's per-row mean and rstd are O(s*b) and left out. The output
     * layer's logits are not per-layer activations and are left out, as Korthikanti's count
     * leaves them: with final-logit soft-capping (gemma-2) the cap's saved output for its
     * backward is one more tensor of that kind (the logits' [s,b,V/t], on the last stage) and
     * is left out with them. gemma-2's sandwich norms (post-attention, post-MLP) would keep two
     * more [s,b,h] inputs per layer; pdbx has no ops for them (docs/models.md), so they are
     * not counted either. */
    const double mlp_tensors = m->arch.mlp_plain ? 2 : 4;
    double per_layer = s * b * (h * (4 * e + 2) + e * (2 * a * d / t + 2 * kv * d));
    if (m->arch.attention == PDBX_ATTN_MLA) {
        /* MLA keeps, per token, instead of q, k, v and the context above: q [a/t, d] and k
         * [a/t, d] (the rope'd core inputs, k with its broadcast k_pe), v and the context
         * [a/t, v_head_dim] each; q_a's output and its norm's [q_lora_rank] each (q_norm's and
         * q_b's inputs; none at q_lora_rank 0), kv_a's output [kv_lora_rank + rope] (kv_norm's
         * input and k_pe) and kv_norm's [kv_lora_rank] (kv_b's input). kv_b's output is the
         * k_nope and v it holds: v counted, k_nope within k. */
        const double dv = m->arch.mla.v_head_dim, rq = m->arch.mla.q_lora_rank;
        const double rkv = m->arch.mla.kv_lora_rank, rope = m->arch.mla.qk_rope_head_dim;
        per_layer -= s * b * e * (2 * a * d / t + 2 * kv * d);
        per_layer += s * b * e * (2 * a * d / t + 2 * a * dv / t + 2 * rq + 2 * rkv + rope);
    }
    if (m->arch.qk_norm)   /* q and k before their norm, which its backward reads */
        per_layer += s * b * e * (a * d / t + kv * d);
    if (!spec->flash_attention && spec->recompute != PDBX_RECOMPUTE_SELECTIVE)   /* selective: recomputed */
        per_layer += (2 * e + 1) * (a / t) * s * s * b;
    /* stage 0's layers: a MoE model's first_dense_layers dense (DeepSeek), the rest MoE */
    const double moe_layers = plan_is_moe(m) ? L - fmin(L, fmax(0, m->arch.moe.first_dense_layers)) : 0;
    const double dense_mlp = s * b * e * mlp_tensors * I / t, moe_mlp = moe_layers > 0 ? moe_mlp_act(m, t, s, b, e) : 0;
    const double layers_act = per_layer * L + dense_mlp * (L - moe_layers) + moe_mlp * moe_layers;
    if (spec->recompute == PDBX_RECOMPUTE_FULL)
        /* only each layer's input [s,b,h] is kept per micro-batch in flight; during the
         * backward one layer at a time is recomputed and holds its full activations */
        out->activations = s * b * h * e * L * par->pp + per_layer + fmax(moe_layers < L ? dense_mlp : 0, moe_mlp);
    else
        out->activations = layers_act * par->pp;       /* 1F1B: PP micro-batches in flight */
    /* EP > 1: the all-to-all's send and receive buffers of one MoE layer at a time (2 S,
     * plan_comm.h), held during the layer's dispatch and combine */
    out->activations += 2 * pdbx_plan_ep_bytes(m, par->tp, ep, mbs, spec->seq_len, spec->dtype, spec->moe_imbalance);
    out->total = out->weights + out->grads + out->optimizer + out->activations;
}
