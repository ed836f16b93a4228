/* plan_memory.c: predicted training memory of one rank of pipeline stage 0 (design.md
 * section 4; formulas and choices in docs/spec.md, "Memory model").
 *
 * Stage 0 is the stage predicted: under 1F1B it holds PP micro-batches of activations (the
 * last stage holds one), and its embedding table is as large as the last stage's lm_head, so
 * it is the fullest stage. With uneven splits it is given ceil(layers / PP) layers. */
#include "engine/plan/plan_internal.h"
#include "engine/plan/plan_comm.h"

#include <string.h>

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
     * GELU out). LayerNorm's per-row mean and rstd are O(s*b) and left out. */
    const double mlp_tensors = m->arch.mlp_plain ? 2 : 4;
    double per_layer = s * b * (h * (4 * e + 2) + e * (2 * a * d / t + 2 * kv * d + mlp_tensors * I / t));
    if (m->arch.qk_norm)   /* q and k before their norm, which its backward reads */
        per_layer += s * b * e * (a * d / t + kv * d);
    if (!spec->flash_attention)
        per_layer += (2 * e + 1) * (a / t) * s * s * b;
    if (spec->recompute == PDBX_RECOMPUTE_FULL)
        /* only each layer's input [s,b,h] is kept per micro-batch in flight; during the
         * backward one layer at a time is recomputed and holds its full activations */
        out->activations = s * b * h * e * L * par->pp + per_layer;
    else
        out->activations = per_layer * L * par->pp;       /* 1F1B: PP micro-batches in flight */
    /* EP > 1: the all-to-all's send and receive buffers of one MoE layer at a time (2 S,
     * plan_comm.h), held during the layer's dispatch and combine */
    out->activations += 2 * pdbx_plan_ep_bytes(m, par->tp, ep, mbs, spec->seq_len, spec->dtype, spec->moe_imbalance);
    out->total = out->weights + out->grads + out->optimizer + out->activations;
}
