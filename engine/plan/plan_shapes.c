/* plan_shapes.c: per-op work on one TP rank (design.md section 3): GEMM dimensions, FLOPs of
 * one execution and the minimal bytes read + written (the roofline's memory traffic).
 * Choices (docs/spec.md, "Shapes"): GEMM FLOPs are 2mnk; the causal attention core counts
 * half of the full QK^T and PV matrices (the unmasked half: 2*b*heads*s*s*d), its bytes are
 * q, k, v read and the output written once (no score matrix: a fused kernel's minimum); with a
 * sliding window shorter than seq_len (Mistral's every layer, gemma-2's even layers) its FLOPs
 * are the mean over the profiled layers of each layer's band, 4*b*heads*d*(s*w - w*w/2) for a
 * windowed layer and the causal half for a global one (pdbx_attn_core_mean_flops: the op's
 * time is the mean over the same layers), bytes unchanged (q, k, v still read whole); the
 * attention-logit cap (gemma-2's 50) adds no FLOPs, as the softmax's exponentials and sums are
 * not counted either: the core's count is its two products (the cap's 3 per score would be
 * 3/(4d) of them, 0.3% at d 256); lm_head with final-logit soft-capping (gemma-2's 30) adds
 * 3 FLOPs per logit (a multiply by 1/cap, tanh, a multiply by cap) and the logits read and
 * written once more (2*T*V/TP*e: both backends run the cap as a pass after the GEMM, cuBLASLt
 * having no tanh epilogue);
 * RMSNorm counts 4 FLOPs per element, LayerNorm 7 (mean, centre, square, sum, scale, weight,
 * bias), SiLU(gate)*up 4 per element, GELU 9 (tanh form: x^3, two multiplies, an add, tanh, an
 * add, two multiplies) or 5 (erf form), times up 1 more, RoPE 3 per element of q and k (its
 * fp32 cos/sin table read once), a residual add 1, embed's learned positions 1 per element
 * (the table's rows read: seq_len x h); the TP all-reduces carry
 * their message size S = T*h*e as bytes and no FLOPs (nothing at TP 1). The fused QKV and fc1
 * GEMMs (fused_projections) are GEMMs of the summed widths; each op's share of one is its
 * FLOPs over the fused FLOPs. */
#include "engine/plan/plan_internal.h"

#include <math.h>
#include <string.h>

double pdbx_attn_core_executed_flops(int flash, pdbx_pass pass, int64_t batch, int64_t s,
                                     int64_t d, int64_t tile)
{
    if (batch <= 0 || s <= 0 || d <= 0 || (flash && tile <= 0))
        return 0;
    const double full = (double)batch * (double)s * (double)s * (double)d;   /* b s^2 d */
    if (!flash)
        return pass == PDBX_PASS_BWD ? 8.0 * full : 4.0 * full;
    /* whole tiles on and below the diagonal: tile pairs per (b, h) */
    const double per_tile = pass == PDBX_PASS_BWD ? 10.0 : 4.0;   /* products x 2 FLOPs */
    const int64_t t = pass == PDBX_PASS_BWD ? PDBX_FLASH_BWD_TILE : tile;
    const double nt = (double)((s + t - 1) / t);
    return per_tile * (double)batch * (double)d * (double)t * (double)t * nt * (nt + 1) / 2;
}

double pdbx_attn_window_model_flops(int64_t batch, int64_t s, int64_t d, int64_t window)
{
    if (batch <= 0 || s <= 0 || d <= 0 || window < 0)
        return 0;
    const double w = (double)(window == 0 || window > s ? s : window);
    return 4.0 * (double)batch * (double)d * ((double)s * w - w * w / 2);
}

double pdbx_attn_window_visited_pairs(int64_t s, int64_t window, int64_t qtile, int64_t ktile)
{
    if (s <= 0 || window < 0 || qtile <= 0 || ktile <= 0)
        return 0;
    const int64_t w = window == 0 || window > s ? s : window;
    double tiles = 0;
    for (int64_t a = 0; a < s; a += qtile) {
        /* rows [a, b] meet key tile [c, e] iff c <= b and e >= a - w + 1: the band of row a
         * starts first, that of row b ends last (contiguous windows, monotone in the row) */
        const int64_t b = (a + qtile < s ? a + qtile : s) - 1;
        const int64_t first = a - w + 1 > 0 ? (a - w + 1) / ktile : 0;
        tiles += (double)(b / ktile - first + 1);
    }
    return tiles * (double)qtile * (double)ktile;
}

double pdbx_attn_core_window_executed_flops(int flash, pdbx_pass pass, int64_t batch, int64_t s,
                                            int64_t d, int64_t tile, int64_t window)
{
    if (!flash || window <= 0 || window >= s)
        return window < 0 ? 0 : pdbx_attn_core_executed_flops(flash, pass, batch, s, d, tile);
    if (batch <= 0 || s <= 0 || d <= 0 || tile <= 0)
        return 0;
    const double per_pair = pass == PDBX_PASS_BWD ? 10.0 : 4.0;   /* products x 2 FLOPs */
    const int64_t t = pass == PDBX_PASS_BWD ? PDBX_FLASH_BWD_TILE : tile;
    return per_pair * (double)batch * (double)d * pdbx_attn_window_visited_pairs(s, window, t, t);
}

int pdbx_attn_opts_for_layer(const pdbx_model *m, int layers_profiled, int layer, int seq_len,
                             int64_t *window, double *softcap)
{
    const pdbx_arch *a = &m->arch;
    *window = 0;
    *softcap = a->attn_softcap > 0 ? a->attn_softcap : 0;
    if (layer < 0 || layer >= layers_profiled)
        return -1;
    const int w = a->sliding_window.size;
    if (a->sliding_window.layers == PDBX_SW_NONE || w <= 0 || w >= seq_len)
        return 0;   /* no window, or one that sees the whole causal prefix */
    switch (a->sliding_window.layers) {
    case PDBX_SW_ALL:
        *window = w;
        return 0;
    case PDBX_SW_ALTERNATING:   /* gemma-2: even layers local, odd global */
        *window = layer % 2 == 0 ? w : 0;
        return 0;
    default:                    /* PDBX_SW_SOME: no subset in the model's proportion */
        return -1;
    }
}

double pdbx_attn_core_mean_flops(const pdbx_model *m, int layers_profiled, int seq_len,
                                 int64_t batch, int64_t d)
{
    if (layers_profiled < 1)
        return 0;
    double sum = 0;
    for (int l = 0; l < layers_profiled; l++) {
        int64_t w;
        double cap;
        pdbx_attn_opts_for_layer(m, layers_profiled, l, seq_len, &w, &cap);
        sum += pdbx_attn_window_model_flops(batch, seq_len, d, w);
    }
    return sum / layers_profiled;
}

pdbx_opmask pdbx_model_ops(const pdbx_model *m)
{
    pdbx_opmask ops = PDBX_OPS_ALL;
    if (m->arch.mlp_plain)
        ops &= ~PDBX_OP_BIT(PDBX_OP_MLP_GATE);
    if (m->arch.position == PDBX_POS_LEARNED || pdbx_rotary_dims(m) < 2)
        ops &= ~PDBX_OP_BIT(PDBX_OP_ATTN_ROPE);
    if (m->arch.shared_norm)
        ops &= ~PDBX_OP_BIT(PDBX_OP_POST_ATTN_NORM);
    if (!m->arch.qk_norm)
        ops &= ~PDBX_OP_BIT(PDBX_OP_ATTN_QK_NORM);
    if (m->arch.attention != PDBX_ATTN_MLA) {
        ops &= ~PDBX_OPS_MLA;
    } else {   /* k and v come out of the latent (attn_kv_*); q at full rank or through q_a/q_b */
        ops &= ~(PDBX_OP_BIT(PDBX_OP_ATTN_K) | PDBX_OP_BIT(PDBX_OP_ATTN_V));
        if (m->arch.mla.q_lora_rank > 0)
            ops &= ~PDBX_OP_BIT(PDBX_OP_ATTN_Q);
        else
            ops &= ~(PDBX_OP_BIT(PDBX_OP_ATTN_Q_A) | PDBX_OP_BIT(PDBX_OP_ATTN_Q_NORM) | PDBX_OP_BIT(PDBX_OP_ATTN_Q_B));
    }
    if (!plan_is_moe(m)) {
        ops &= ~PDBX_OPS_MOE;
    } else {   /* dense layers (DeepSeek's first_k_dense_replace) keep mlp_*; a MoE layer has
                * none of them */
        if (!plan_moe_shared_width(m))
            ops &= ~PDBX_OPS_MOE_SHARED;
        if (m->arch.moe.first_dense_layers <= 0)
            ops &= ~(PDBX_OP_BIT(PDBX_OP_MLP_GATE) | PDBX_OP_BIT(PDBX_OP_MLP_UP) |
                     PDBX_OP_BIT(PDBX_OP_MLP_ACT_FN) | PDBX_OP_BIT(PDBX_OP_MLP_DOWN));
    }
    return ops;
}

int pdbx_rotary_dims(const pdbx_model *m)
{
    if (m->arch.attention == PDBX_ATTN_MLA)   /* MLA rotates each head's rope part only */
        return m->arch.mla.qk_rope_head_dim;
    const double f = m->arch.rotary_fraction;
    if (!(f > 0 && f < 1))
        return m->head_dim;
    const int rot = (int)(m->head_dim * f);
    return rot - rot % 2;
}

pdbx_opmask pdbx_spec_ops(const pdbx_spec *s)
{
    pdbx_opmask ops = s->ops & pdbx_model_ops(&s->model);
    /* the loss and the optimizer step are training's: sweeps with a backward only; the cuda
     * backend has no kernel for either yet (docs/engine.md); the loss reads lm_head's logits */
    const int cuda = s->backend == PDBX_BACKEND_CUDA ||
                     (s->backend == PDBX_BACKEND_AUTO && strcmp(s->gpu.name, "cpu") != 0);
    if (!(s->passes & PDBX_PASS_BIT(PDBX_PASS_BWD)) || cuda)
        ops &= ~(PDBX_OP_BIT(PDBX_OP_OPTIMIZER) | PDBX_OP_BIT(PDBX_OP_LOSS));
    if (!(ops & PDBX_OP_BIT(PDBX_OP_LM_HEAD)))
        ops &= ~PDBX_OP_BIT(PDBX_OP_LOSS);
    return ops;
}

pdbx_activation pdbx_activation_of(const char *hf_name)
{
    static const struct {
        const char *name;
        pdbx_activation act;
    } names[] = {
        {"silu", PDBX_ACT_SILU},           {"swish", PDBX_ACT_SILU},
        {"gelu", PDBX_ACT_GELU_ERF},       {"gelu_python", PDBX_ACT_GELU_ERF},
        {"gelu_new", PDBX_ACT_GELU_TANH},  {"gelu_pytorch_tanh", PDBX_ACT_GELU_TANH},
        {"gelu_fast", PDBX_ACT_GELU_TANH}, {"gelu_accurate", PDBX_ACT_GELU_TANH},
    };
    if (!hf_name || !*hf_name)
        return PDBX_ACT_SILU;   /* a zeroed arch (a model built in code, not read): a Llama's */
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(hf_name, names[i].name) == 0)
            return names[i].act;
    return PDBX_ACT_OTHER;
}

/* FLOPs per element of the MLP's activation op (docs/spec.md, "Shapes"). */
static double act_flops(const pdbx_arch *a)
{
    const pdbx_activation k = pdbx_activation_of(a->activation);
    const double act = k == PDBX_ACT_GELU_ERF ? 5 : k == PDBX_ACT_GELU_TANH ? 9 : 3;   /* silu: a sigmoid */
    return act + (a->mlp_plain ? 0 : 1);
}

static void gemm(pdbx_op_shape *o, int64_t m, int64_t n, int64_t k, double e)
{
    o->m = m;
    o->n = n;
    o->k = k;
    o->batch = 1;
    o->flops = 2.0 * (double)m * (double)n * (double)k;
    o->bytes = e * ((double)m * k + (double)k * n + (double)m * n);
}

int pdbx_op_has_bias(const pdbx_model *m, pdbx_op op)
{
    switch (op) {
    case PDBX_OP_ATTN_Q:
    case PDBX_OP_ATTN_K:
    case PDBX_OP_ATTN_V:
        return m->arch.bias.qkv != 0;
    case PDBX_OP_ATTN_O:
        return m->arch.bias.attn_out != 0;
    case PDBX_OP_MLP_GATE:
    case PDBX_OP_MLP_UP:
    case PDBX_OP_MLP_DOWN:
        return m->arch.bias.mlp != 0;
    default:
        return 0;
    }
}

static void add_bias(pdbx_op_shape *o, double e)
{
    o->bias = 1;
    o->flops += (double)o->m * (double)o->n;
    o->bytes += e * (double)o->n;
}

static void elementwise(pdbx_op_shape *o, int64_t rows, int64_t cols, double flops_per_elem, double bytes)
{
    o->m = rows;
    o->n = cols;
    o->k = 0;
    o->batch = 1;
    o->flops = flops_per_elem * (double)rows * (double)cols;
    o->bytes = bytes;
}

/* attn_qk_norm, attn_rope and attn_core on one TP rank (pdbx_op_shape_for's arguments,
 * checked there). */
static void shape_attn(const pdbx_spec *spec, int tp, int mbs, pdbx_op op, pdbx_op_shape *out)
{
    const pdbx_model *m = &spec->model;
    const int64_t T = (int64_t)mbs * spec->seq_len, s = spec->seq_len, d = m->head_dim;
    const int64_t a_t = m->heads / tp, kv_t = plan_kv_heads_per_rank(m, tp);
    const double e = pdbx_dtype_bytes(spec->dtype);
    const int w = m->arch.sliding_window.size;
    const int windowed = m->arch.sliding_window.layers != PDBX_SW_NONE && w > 0 && w < s;
    switch (op) {
    case PDBX_OP_ATTN_QK_NORM:     /* RMSNorm of every head of q and k over its d: q and k read
                                    * and written, the two weights [d] read */
        elementwise(out, T, (a_t + kv_t) * d, 4,
                    e * (2.0 * (double)T * (double)((a_t + kv_t) * d) + 2.0 * (double)d));
        break;
    case PDBX_OP_ATTN_ROPE: {      /* q and k rotated in place: their rotated dims (rot of each
                                    * head: all of it, or gpt-neox's rotary_pct) read and written
                                    * once each, the fp32 cos/sin table [s, rot/2] x 2 read; per
                                    * element 2 multiplies and an add */
        const int64_t rot = pdbx_rotary_dims(m);
        /* MLA: k's rope part is one head shared by all (attn_kv_a's k_pe) */
        const int64_t k_heads = m->arch.attention == PDBX_ATTN_MLA ? 1 : kv_t;
        elementwise(out, T, (a_t + k_heads) * rot, 3,
                    2.0 * e * (double)T * (double)((a_t + k_heads) * rot) + 4.0 * (double)s * (double)rot);
        break;
    }
    case PDBX_OP_ATTN_CORE:
        out->m = s;
        out->n = s;
        out->k = d;
        out->batch = (int64_t)mbs * a_t;
        out->flops = 2.0 * (double)mbs * (double)a_t * (double)s * (double)s * (double)d;
        if (windowed && spec->layers_profiled >= 1)   /* the profiled layers' mean band */
            out->flops = pdbx_attn_core_mean_flops(m, spec->layers_profiled, spec->seq_len,
                                                   out->batch, d);
        out->bytes = e * (double)mbs * (double)s * (double)d * (double)(2 * a_t + 2 * kv_t);
        break;
    default:
        break;
    }
}

/* lm_head's GEMM and, with final-logit soft-capping, the cap's pass over the logits (the
 * header comment's counts). */
static void shape_lm_head(const pdbx_model *m, int64_t T, int64_t V_t, double e, pdbx_op_shape *out)
{
    gemm(out, T, V_t, m->hidden, e);
    if (m->arch.final_softcap > 0) {
        out->flops += 3.0 * (double)T * (double)V_t;
        out->bytes += 2.0 * e * (double)T * (double)V_t;
    }
}

/* embed: a gather of T rows of [V/TP, h]: rows read, [T,h] written; learned positions: their s
 * rows read and added */
static void shape_embed(const pdbx_model *m, int64_t T, int64_t h, int64_t s, double e, pdbx_op_shape *out)
{
    if (m->arch.position == PDBX_POS_LEARNED)
        elementwise(out, T, h, 1, e * (3.0 * (double)T * h + (double)s * h));
    else
        elementwise(out, T, h, 0, 2.0 * e * (double)T * h);
}

/* The optimizer op: AdamW over one layer's n parameters, 1 x n elementwise (plan.h), and the
 * zeroing of their fp32 gradient buffer */
static void shape_optimizer(const pdbx_model *m, int tp, int ep, double e, pdbx_op_shape *out)
{
    const double n = pdbx_optimizer_params(m, tp, ep);
    elementwise(out, 1, (int64_t)n, PDBX_ADAMW_FLOPS_PER_PARAM, n * (7.0 * 4 + 4 + (e < 4 ? e : 0)));
}

int pdbx_op_shape_for(const pdbx_spec *spec, int tp, int mbs, pdbx_op op, pdbx_op_shape *out)
{
    const pdbx_model *m = &spec->model;
    memset(out, 0, sizeof *out);
    if (tp < 1 || mbs < 1 || (int)op < 0 || op >= PDBX_OP_COUNT || spec->seq_len < 1 || m->heads % tp != 0 ||
        m->intermediate % tp != 0 || (m->kv_heads % tp != 0 && tp % m->kv_heads != 0))
        return -1;
    const int64_t T = (int64_t)mbs * spec->seq_len, h = m->hidden, s = spec->seq_len, d = m->head_dim;
    const int64_t a_t = m->heads / tp, kv_t = plan_kv_heads_per_rank(m, tp);
    const int64_t I_t = m->intermediate / tp, V_t = plan_vocab_per_rank(m, tp);
    const double e = pdbx_dtype_bytes(spec->dtype);

    switch (op) {
    case PDBX_OP_EMBED:
        shape_embed(m, T, h, s, e, out);
        break;
    case PDBX_OP_INPUT_NORM:
    case PDBX_OP_POST_ATTN_NORM:
    case PDBX_OP_FINAL_NORM:       /* x read, y written, weight (and LayerNorm's bias) read */
        if (m->arch.norm == PDBX_NORM_LAYER)
            elementwise(out, T, h, 7, e * (2.0 * (double)T * h + 2.0 * (double)h));
        else
            elementwise(out, T, h, 4, e * (2.0 * (double)T * h + (double)h));
        break;
    case PDBX_OP_ATTN_Q:
        gemm(out, T, a_t * d, h, e);
        break;
    case PDBX_OP_ATTN_K:
    case PDBX_OP_ATTN_V:
        gemm(out, T, kv_t * d, h, e);
        break;
    case PDBX_OP_ATTN_QK_NORM:
    case PDBX_OP_ATTN_ROPE:
    case PDBX_OP_ATTN_CORE:
        shape_attn(spec, tp, mbs, op, out);
        break;
    case PDBX_OP_ATTN_O:           /* MLA: its heads' v (v_head_dim) in */
        gemm(out, T, h, a_t * plan_v_head_dim(m), e);
        break;
    case PDBX_OP_TP_ALLREDUCE_ATTN:
    case PDBX_OP_TP_ALLREDUCE_MLP:
        elementwise(out, T, h, 0, tp > 1 ? e * (double)T * h : 0);
        break;
    case PDBX_OP_ATTN_RESIDUAL:
    case PDBX_OP_MLP_RESIDUAL:     /* hidden += x: hidden and x read, hidden written */
        elementwise(out, T, h, 1, 3.0 * e * (double)T * h);
        break;
    case PDBX_OP_MLP_GATE:
    case PDBX_OP_MLP_UP:
        gemm(out, T, I_t, h, e);
        break;
    case PDBX_OP_MLP_ACT_FN:       /* gate and up read, product written (plain: up alone read) */
        elementwise(out, T, I_t, act_flops(&m->arch), (m->arch.mlp_plain ? 2.0 : 3.0) * e * (double)T * I_t);
        break;
    case PDBX_OP_MLP_DOWN:
        gemm(out, T, h, I_t, e);
        break;
    case PDBX_OP_LM_HEAD:
        shape_lm_head(m, T, V_t, e, out);
        break;
    case PDBX_OP_LOSS:             /* the fp32 logits read twice (max, then sum of exponentials) */
        elementwise(out, T, V_t, PDBX_LOSS_FLOPS_PER_LOGIT, 2.0 * 4.0 * (double)T * (double)V_t);
        break;
    case PDBX_OP_OPTIMIZER:
        shape_optimizer(m, tp, 1, e, out);
        break;
    case PDBX_OP_ATTN_Q_A: case PDBX_OP_ATTN_Q_NORM: case PDBX_OP_ATTN_Q_B: case PDBX_OP_ATTN_KV_A:
    case PDBX_OP_ATTN_KV_NORM: case PDBX_OP_ATTN_KV_B: case PDBX_OP_MOE_ROUTER: case PDBX_OP_MOE_PERMUTE:
    case PDBX_OP_EP_DISPATCH: case PDBX_OP_MOE_EXPERT_GATE: case PDBX_OP_MOE_EXPERT_UP:
    case PDBX_OP_MOE_EXPERT_ACT: case PDBX_OP_MOE_EXPERT_DOWN: case PDBX_OP_EP_COMBINE:
    case PDBX_OP_MOE_UNPERMUTE: case PDBX_OP_MOE_SHARED_GATE: case PDBX_OP_MOE_SHARED_UP:
    case PDBX_OP_MOE_SHARED_ACT: case PDBX_OP_MOE_SHARED_DOWN:
        return plan_shape_moe_mla(spec, tp, 1, mbs, op, out);
    case PDBX_OP_COUNT:
        return -1;
    }
    if (pdbx_op_has_bias(m, op))
        add_bias(out, e);
    return 0;
}

void plan_shape_gemm(pdbx_op_shape *o, int64_t m, int64_t n, int64_t k, double e)
{
    gemm(o, m, n, k, e);
}

void plan_shape_elementwise(pdbx_op_shape *o, int64_t rows, int64_t cols, double flops_per_elem, double bytes)
{
    elementwise(o, rows, cols, flops_per_elem, bytes);
}

pdbx_op pdbx_fused_leader(pdbx_op op)
{
    switch (op) {
    case PDBX_OP_ATTN_Q:
    case PDBX_OP_ATTN_K:
    case PDBX_OP_ATTN_V:
        return PDBX_OP_ATTN_Q;
    case PDBX_OP_MLP_GATE:
    case PDBX_OP_MLP_UP:
        return PDBX_OP_MLP_GATE;
    default:
        return PDBX_OP_COUNT;
    }
}

int pdbx_fused_shape_for(const pdbx_spec *spec, int tp, int mbs, pdbx_op leader, pdbx_op_shape *out)
{
    static const pdbx_op qkv[] = {PDBX_OP_ATTN_Q, PDBX_OP_ATTN_K, PDBX_OP_ATTN_V};
    static const pdbx_op fc1[] = {PDBX_OP_MLP_GATE, PDBX_OP_MLP_UP};
    memset(out, 0, sizeof *out);
    if (leader != PDBX_OP_ATTN_Q && leader != PDBX_OP_MLP_GATE)
        return -1;
    const pdbx_op *ops = leader == PDBX_OP_ATTN_Q ? qkv : fc1;
    const int n = leader == PDBX_OP_ATTN_Q ? 3 : 2;
    int64_t cols = 0;
    pdbx_op_shape o;
    for (int i = 0; i < n; i++) {
        if (pdbx_op_shape_for(spec, tp, mbs, ops[i], &o) != 0)
            return -1;
        cols += o.n;
    }
    gemm(out, o.m, cols, o.k, pdbx_dtype_bytes(spec->dtype));
    if (o.bias)   /* a group's projections share their bias flag (arch.bias.qkv, .mlp) */
        add_bias(out, pdbx_dtype_bytes(spec->dtype));
    return 0;
}

double pdbx_fused_share(const pdbx_spec *spec, int tp, int mbs, pdbx_op op)
{
    pdbx_op leader = pdbx_fused_leader(op);
    if (leader == PDBX_OP_COUNT)
        return 1;
    pdbx_op_shape mine, fused;
    if (pdbx_op_shape_for(spec, tp, mbs, op, &mine) != 0 ||
        pdbx_fused_shape_for(spec, tp, mbs, leader, &fused) != 0 || !(fused.flops > 0))
        return NAN;
    return mine.flops / fused.flops;
}

int pdbx_op_shape_ep(const pdbx_spec *spec, int tp, int ep, int mbs, pdbx_op op, pdbx_op_shape *out)
{
    /* the same checks and every non-MoE op as at EP 1; the MoE ops again at ep */
    const int rc = pdbx_op_shape_for(spec, tp, mbs, op, out);
    if (rc == 0 && ep > 1 && op == PDBX_OP_OPTIMIZER)   /* the layer's E / ep experts */
        shape_optimizer(&spec->model, tp, ep, pdbx_dtype_bytes(spec->dtype), out);
    if (rc != 0 || ep <= 1 || !pdbx_op_is_moe(op))
        return rc;
    return plan_shape_moe_mla(spec, tp, ep, mbs, op, out);
}
