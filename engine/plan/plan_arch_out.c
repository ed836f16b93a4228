/* plan_arch_out.c: the arch object pdbx writes into its specs and reads back as it wrote it
 * (pdbx_arch_to_json, plan_arch_read_own), the one-line summary, and which architectures the
 * engine measures (pdbx_arch_refusal). plan_arch.c reads a config.json by family. */
#include "engine/plan/plan_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int pick(const char *org, const char *field, const char *s, const char *const *names, int n, int *out,
                char *err, size_t errlen)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
    char allowed[128] = "";
    for (int i = 0; i < n; i++)
        snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s", i ? ", " : "", names[i]);
    return pdbx_fail(err, errlen, "%s: arch.%s: '%s' is not known (allowed: %s)", org, field, s, allowed);
}

static const char *const mlp_names[] = {"plain", "gated"};
static const char *const attn_names[] = {"mha", "gqa", "mla"};
static const char *const sw_names[] = {"none", "all", "alternating", "some"};
static const char *const norm_names[] = {"rmsnorm", "layernorm"};
static const char *const position_names[] = {"rope", "learned"};

/* arch.moe of a spec pdbx wrote (NULL: none); a spec written before the router's fields has
 * routed_scale 1. */
static int read_own_moe(const cJSON *moe, const char *org, pdbx_arch *a, char *err, size_t errlen)
{
    if (moe && (plan_cfg_need_int(moe, org, "arch.moe.", "experts", 2, 1 << 20, &a->moe.experts, err, errlen) < 0 ||
                plan_cfg_need_int(moe, org, "arch.moe.", "top_k", 1, 1 << 20, &a->moe.top_k, err, errlen) < 0 ||
                plan_cfg_int(moe, org, "arch.moe.", "shared_experts", 0, 1 << 20, &a->moe.shared_experts, err, errlen) < 0 ||
                plan_cfg_int(moe, org, "arch.moe.", "expert_intermediate", 1, 1 << 22, &a->moe.expert_intermediate, err,
                        errlen) < 0 ||
                plan_cfg_int(moe, org, "arch.moe.", "shared_expert_intermediate", 0, 1 << 22,
                        &a->moe.shared_expert_intermediate, err, errlen) < 0 ||
                plan_cfg_int(moe, org, "arch.moe.", "first_dense_layers", 0, 1 << 20, &a->moe.first_dense_layers, err,
                        errlen) < 0 ||
                plan_cfg_bool(moe, org, "arch.moe.", "sigmoid", &a->moe.sigmoid, err, errlen) < 0 ||
                plan_cfg_bool(moe, org, "arch.moe.", "norm_topk", &a->moe.norm_topk, err, errlen) < 0 ||
                plan_cfg_num(moe, org, "arch.moe.", "routed_scale", 1e-6, 1e6, &a->moe.routed_scale, err,
                        errlen) < 0))
        return -1;
    if (moe && !plan_cfg_item(moe, "routed_scale"))   /* a spec written before the router's fields */
        a->moe.routed_scale = 1.0;
    return 0;
}

int plan_arch_read_own(const cJSON *o, const char *org, pdbx_model *m, char *err, size_t errlen)
{
    pdbx_arch *a = &m->arch;
    if (!cJSON_IsObject(o))
        return pdbx_fail(err, errlen, "%s: arch: expected an object (what pdbx plan --format json prints)", org);
    char buf[32];
    int k;
    if (plan_cfg_str(o, org, "arch.", "model_type", a->model_type, sizeof a->model_type, err, errlen) < 0 ||
        plan_cfg_str(o, org, "arch.", "nested", a->nested, sizeof a->nested, err, errlen) < 0 ||
        plan_cfg_str(o, org, "arch.", "activation", a->activation, sizeof a->activation, err, errlen) < 0)
        return -1;
    if (plan_cfg_str(o, org, "arch.", "mlp", buf, sizeof buf, err, errlen) == 0) {
        if (pick(org, "mlp", buf, mlp_names, 2, &k, err, errlen) != 0)
            return -1;
        a->mlp_plain = k == 0;
    }
    if (plan_cfg_str(o, org, "arch.", "norm", buf, sizeof buf, err, errlen) == 0) {
        if (pick(org, "norm", buf, norm_names, 2, &k, err, errlen) != 0)
            return -1;
        a->norm = (pdbx_norm_kind)k;
    }
    if (plan_cfg_str(o, org, "arch.", "position", buf, sizeof buf, err, errlen) == 0) {
        if (pick(org, "position", buf, position_names, 2, &k, err, errlen) != 0)
            return -1;
        a->position = (pdbx_position_kind)k;
    }
    if (plan_cfg_int(o, org, "arch.", "max_positions", 1, 1 << 20, &a->max_positions, err, errlen) < 0)
        return -1;
    if (a->position == PDBX_POS_LEARNED && a->max_positions == 0)
        return pdbx_fail(err, errlen, "%s: arch.max_positions: missing (allowed: 1..%d, the learned position "
                         "table's rows)", org, 1 << 20);
    if (plan_cfg_str(o, org, "arch.", "attention", buf, sizeof buf, err, errlen) == 0) {
        if (pick(org, "attention", buf, attn_names, 3, &k, err, errlen) != 0)
            return -1;
        a->attention = (pdbx_attn_kind)k;
    }
    const cJSON *mla = plan_cfg_item(o, "mla");
    if (mla && (plan_cfg_int(mla, org, "arch.mla.", "kv_lora_rank", 1, 1 << 20, &a->mla.kv_lora_rank, err, errlen) < 0 ||
                plan_cfg_int(mla, org, "arch.mla.", "q_lora_rank", 0, 1 << 20, &a->mla.q_lora_rank, err, errlen) < 0 ||
                plan_cfg_int(mla, org, "arch.mla.", "qk_nope_head_dim", 0, 1 << 16, &a->mla.qk_nope_head_dim, err,
                        errlen) < 0 ||
                plan_cfg_int(mla, org, "arch.mla.", "qk_rope_head_dim", 0, 1 << 16, &a->mla.qk_rope_head_dim, err,
                        errlen) < 0 ||
                plan_cfg_int(mla, org, "arch.mla.", "v_head_dim", 1, 1 << 16, &a->mla.v_head_dim, err, errlen) < 0))
        return -1;
    const cJSON *sw = plan_cfg_item(o, "sliding_window");
    if (sw) {
        if (plan_cfg_need_int(sw, org, "arch.sliding_window.", "size", 1, 1 << 30, &a->sliding_window.size, err, errlen) < 0 ||
            plan_cfg_need_int(sw, org, "arch.sliding_window.", "count", 1, 1 << 20, &a->sliding_window.count, err, errlen) < 0)
            return -1;
        a->sliding_window.layers = PDBX_SW_ALL;
        if (plan_cfg_str(sw, org, "arch.sliding_window.", "layers", buf, sizeof buf, err, errlen) == 0) {
            if (pick(org, "sliding_window.layers", buf, sw_names + 1, 3, &k, err, errlen) != 0)
                return -1;
            a->sliding_window.layers = (pdbx_sw_layers)(k + 1);
        }
    }
    const cJSON *b = plan_cfg_item(o, "bias");
    if (b && (plan_cfg_bool(b, org, "arch.bias.", "qkv", &a->bias.qkv, err, errlen) < 0 ||
              plan_cfg_bool(b, org, "arch.bias.", "attn_out", &a->bias.attn_out, err, errlen) < 0 ||
              plan_cfg_bool(b, org, "arch.bias.", "mlp", &a->bias.mlp, err, errlen) < 0))
        return -1;
    if (read_own_moe(plan_cfg_item(o, "moe"), org, a, err, errlen) != 0)
        return -1;
    if (plan_cfg_bool(o, org, "arch.", "parallel_residual", &a->parallel_residual, err, errlen) < 0 ||
        plan_cfg_bool(o, org, "arch.", "shared_norm", &a->shared_norm, err, errlen) < 0 ||
        plan_cfg_num(o, org, "arch.", "rotary_fraction", 0, 1, &a->rotary_fraction, err, errlen) < 0 ||
        plan_cfg_bool(o, org, "arch.", "qk_norm", &a->qk_norm, err, errlen) < 0 ||
        plan_cfg_num(o, org, "arch.", "attn_softcap", 0, 1e6, &a->attn_softcap, err, errlen) < 0 ||
        plan_cfg_num(o, org, "arch.", "final_softcap", 0, 1e6, &a->final_softcap, err, errlen) < 0 ||
        plan_cfg_int(o, org, "arch.", "cross_attention_layers", 0, 4096, &a->cross_attention_layers, err, errlen) < 0 ||
        plan_cfg_str(o, org, "arch.", "unsupported", a->unsupported, sizeof a->unsupported, err, errlen) < 0)
        return -1;
    return 0;
}

/* ---- output ------------------------------------------------------------------------------------ */

static const char *sw_pattern(const pdbx_arch *a, char *buf, size_t len)
{
    snprintf(buf, len, "%s", sw_names[a->sliding_window.layers]);
    return buf;
}

cJSON *pdbx_arch_to_json(const pdbx_model *m)
{
    const pdbx_arch *a = &m->arch;
    cJSON *o = cJSON_CreateObject(), *x;
    char buf[32];
    if (!o)
        return NULL;
    int ok = cJSON_AddStringToObject(o, "model_type", a->model_type) != NULL;
    ok = ok && (*a->nested ? cJSON_AddStringToObject(o, "nested", a->nested) : cJSON_AddNullToObject(o, "nested"));
    ok = ok && cJSON_AddStringToObject(o, "activation", a->activation);
    ok = ok && cJSON_AddStringToObject(o, "mlp", mlp_names[a->mlp_plain ? 0 : 1]);
    ok = ok && cJSON_AddStringToObject(o, "attention", attn_names[a->attention]);
    ok = ok && cJSON_AddStringToObject(o, "norm", norm_names[a->norm]);
    ok = ok && cJSON_AddStringToObject(o, "position", position_names[a->position]);
    ok = ok && (a->position == PDBX_POS_LEARNED ? cJSON_AddNumberToObject(o, "max_positions", a->max_positions)
                                                : cJSON_AddNullToObject(o, "max_positions"));
    if (ok && a->attention == PDBX_ATTN_MLA) {
        ok = (x = cJSON_AddObjectToObject(o, "mla")) != NULL &&
             cJSON_AddNumberToObject(x, "kv_lora_rank", a->mla.kv_lora_rank) &&
             (a->mla.q_lora_rank ? cJSON_AddNumberToObject(x, "q_lora_rank", a->mla.q_lora_rank)
                                 : cJSON_AddNullToObject(x, "q_lora_rank")) &&
             cJSON_AddNumberToObject(x, "qk_nope_head_dim", a->mla.qk_nope_head_dim) &&
             cJSON_AddNumberToObject(x, "qk_rope_head_dim", a->mla.qk_rope_head_dim) &&
             cJSON_AddNumberToObject(x, "v_head_dim", a->mla.v_head_dim);
    } else if (ok) {
        ok = cJSON_AddNullToObject(o, "mla") != NULL;
    }
    if (ok && a->sliding_window.layers != PDBX_SW_NONE) {
        ok = (x = cJSON_AddObjectToObject(o, "sliding_window")) != NULL &&
             cJSON_AddNumberToObject(x, "size", a->sliding_window.size) &&
             cJSON_AddStringToObject(x, "layers", sw_pattern(a, buf, sizeof buf)) &&
             cJSON_AddNumberToObject(x, "count", a->sliding_window.count);
    } else if (ok) {
        ok = cJSON_AddNullToObject(o, "sliding_window") != NULL;
    }
    ok = ok && (x = cJSON_AddObjectToObject(o, "bias")) != NULL && cJSON_AddBoolToObject(x, "qkv", a->bias.qkv) &&
         cJSON_AddBoolToObject(x, "attn_out", a->bias.attn_out) && cJSON_AddBoolToObject(x, "mlp", a->bias.mlp);
    ok = ok && cJSON_AddBoolToObject(o, "tied_embeddings", m->tie_embeddings);
    if (ok && a->moe.experts > 1) {
        ok = (x = cJSON_AddObjectToObject(o, "moe")) != NULL && cJSON_AddNumberToObject(x, "experts", a->moe.experts) &&
             cJSON_AddNumberToObject(x, "top_k", a->moe.top_k) &&
             cJSON_AddNumberToObject(x, "shared_experts", a->moe.shared_experts) &&
             cJSON_AddNumberToObject(x, "expert_intermediate", a->moe.expert_intermediate) &&
             cJSON_AddNumberToObject(x, "shared_expert_intermediate", a->moe.shared_expert_intermediate) &&
             cJSON_AddNumberToObject(x, "first_dense_layers", a->moe.first_dense_layers) &&
             cJSON_AddBoolToObject(x, "sigmoid", a->moe.sigmoid) &&
             cJSON_AddBoolToObject(x, "norm_topk", a->moe.norm_topk) &&
             cJSON_AddNumberToObject(x, "routed_scale", a->moe.routed_scale);
    } else if (ok) {
        ok = cJSON_AddNullToObject(o, "moe") != NULL;
    }
    ok = ok && cJSON_AddBoolToObject(o, "parallel_residual", a->parallel_residual) &&
         cJSON_AddBoolToObject(o, "shared_norm", a->shared_norm) &&
         cJSON_AddNumberToObject(o, "rotary_fraction", a->rotary_fraction) &&
         cJSON_AddBoolToObject(o, "qk_norm", a->qk_norm) &&
         (a->attn_softcap > 0 ? cJSON_AddNumberToObject(o, "attn_softcap", a->attn_softcap)
                              : cJSON_AddNullToObject(o, "attn_softcap")) &&
         (a->final_softcap > 0 ? cJSON_AddNumberToObject(o, "final_softcap", a->final_softcap)
                               : cJSON_AddNullToObject(o, "final_softcap")) &&
         cJSON_AddNumberToObject(o, "cross_attention_layers", a->cross_attention_layers) &&
         (*a->unsupported ? cJSON_AddStringToObject(o, "unsupported", a->unsupported)
                          : cJSON_AddNullToObject(o, "unsupported"));
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

void pdbx_arch_summary(const pdbx_model *m, char *buf, size_t len)
{
    const pdbx_arch *a = &m->arch;
    size_t u = 0;
#define PUT(...) do { if (u < len) u += (size_t)snprintf(buf + u, len - u, __VA_ARGS__); } while (0)
    PUT("%s%s%s: %s %s MLP, %s", *a->model_type ? a->model_type : "llama", *a->nested ? " in " : "",
        a->nested, a->activation, a->mlp_plain ? "plain" : "gated", attn_names[a->attention]);
    if (a->moe.experts > 1)
        PUT(", MoE %d experts top %d (%d shared)", a->moe.experts, a->moe.top_k, a->moe.shared_experts);
    else
        PUT(", dense");
    if (a->sliding_window.layers != PDBX_SW_NONE)
        PUT(", sliding window %d (%s, %d layers)", a->sliding_window.size, sw_names[a->sliding_window.layers],
            a->sliding_window.count);
    if (a->norm != PDBX_NORM_RMS)   /* said only where it is not Llama's (the summaries stay as they were) */
        PUT(", %s", norm_names[a->norm]);
    if (a->position != PDBX_POS_ROPE)
        PUT(", %s positions", position_names[a->position]);
    else if (a->rotary_fraction > 0 && a->rotary_fraction < 1)
        PUT(", rotary %d of %d dims", pdbx_rotary_dims(m), m->head_dim);
    if (a->parallel_residual)
        PUT(", parallel residual%s", a->shared_norm ? " (one norm)" : "");
    if (a->attn_softcap > 0 || a->final_softcap > 0)
        PUT(", soft-capping %g/%g", a->attn_softcap, a->final_softcap);
    if (a->bias.qkv || a->bias.attn_out || a->bias.mlp)
        PUT(", bias%s%s%s", a->bias.qkv ? " qkv" : "", a->bias.attn_out ? " attn_out" : "", a->bias.mlp ? " mlp" : "");
    else
        PUT(", no bias");
    PUT(", %s embeddings", m->tie_embeddings ? "tied" : "untied");
#undef PUT
}

int pdbx_arch_refusal(const pdbx_model *m, int seq_len, char *buf, size_t len)
{
    const pdbx_arch *a = &m->arch;
    char what[320];
    const char *measures = "";
    if (a->cross_attention_layers > 0) {
        snprintf(what, sizeof what, "cross-attention (%d of %d layers attend to the image)",
                 a->cross_attention_layers, m->layers);
        measures = "it measures self-attention layers";
    /* a mixture of experts is measured (cpu: router, permute, grouped experts, unpermute and
     * shared experts; docs/engine-layers.md, "Mixture of experts"), and so is multi-head latent
     * attention (DeepSeek; cpu: attn_q_a .. attn_kv_b, cpu_mla.c; cuda: cuda_mla.c); the cuda
     * backend runs both (cuda_moe.c, cuda_mla.c), refusing only a top_k or expert count its
     * kernels do not hold (pdbx_backend_model_check) */
    } else if (pdbx_activation_of(a->activation) == PDBX_ACT_OTHER ||
               (a->mlp_plain && pdbx_activation_of(a->activation) == PDBX_ACT_SILU)) {
        snprintf(what, sizeof what, "a %s MLP with %s", a->mlp_plain ? "plain (ungated)" : "gated",
                 *a->activation ? a->activation : "silu");
        measures = "it measures gated SiLU, gated GELU and plain GELU MLPs (erf or tanh GELU)";
    /* biases on the linear layers are measured (pdbx_op_shape.bias: the backends add them and
     * their gradients within the projections' ops), so they are no reason to refuse */
    /* a window on every layer (Mistral) or on alternate layers (gemma-2) is measured
     * (pdbx_attn_opts_for_layer); qwen2's max_window_layers picks a subset no profiled prefix
     * keeps in proportion */
    } else if (a->sliding_window.layers == PDBX_SW_SOME && a->sliding_window.size < seq_len) {
        snprintf(what, sizeof what, "sliding-window attention on some layers (window %d on %d of %d layers, "
                 "shorter than seq_len %d)", a->sliding_window.size, a->sliding_window.count, m->layers, seq_len);
        measures = "it measures a window on every layer or on alternate layers (gemma-2), and full causal "
                   "attention, which a window of at least seq_len equals";
    /* a parallel residual (gpt-neox, gpt-j) runs the same ops on other inputs, partial rotary
     * (rotary_pct) rotates fewer dims of each head: both measured */
    /* qk_norm is measured: its own op, attn_qk_norm */
    /* soft-capping is measured: the attention core caps the scores (gemma-2's 50,
     * cpu_kernels_attn.h) and lm_head its logits (gemma-2's 30, the cap's derivative into a
     * buffer of its own in the backward) */
    } else if (*a->unsupported) {
        snprintf(what, sizeof what, "%s", a->unsupported);
        measures = "it measures Llama layers";
    } else {
        return 0;
    }
    snprintf(buf, len, "model %s: %s is not measured by this pdbx (%s); refused rather than profiled as a "
             "dense Llama", m->name, what, measures);
    return 1;
}
