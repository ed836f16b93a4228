/* plan_arch.c: reading a HuggingFace config.json by family (plan_arch.h). The key names and
 * defaults of each family are those of transformers' configuration classes,
 * src/transformers/models/<dir>/configuration_<dir>.py (cited per family in the table below);
 * where a class leaves a key to PretrainedConfig (tie_word_embeddings) its default, true, holds. */
#include "engine/plan/plan_internal.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* How a family applies its sliding_window key. */
typedef enum {
    SW_NEVER = 0,   /* the family has no sliding window (a stray key is recorded as unsupported) */
    SW_KEY,         /* sliding_window (int or null) applies to every layer: mistral, mixtral, phi3 */
    SW_QWEN2,       /* only when use_sliding_window; layers i >= max_window_layers (qwen2, qwen3) */
    SW_QWEN2_MOE,   /* only when use_sliding_window; even layers i < max_window_layers (qwen2_moe) */
    SW_GEMMA2,      /* even layers i (layer_types: sliding when (i+1) % 2) */
} sw_rule;

typedef struct {
    const char *model_type;
    const char *cite;        /* transformers' configuration file (models/<dir>/configuration_<dir>.py) */
    int gpt_names;           /* n_embd, n_head, n_layer, n_inner (default 4 n_embd) */
    const char *act_key;     /* the key holding the activation */
    const char *act_default;
    int gated;
    int qkv_bias, out_bias;  /* -1: from attention_bias (default attn_bias_default); else fixed */
    int attn_bias_default;
    int mlp_bias;            /* -1: from mlp_bias (default 0); else fixed */
    int tie_default;
    sw_rule sw;
    int sw_default;          /* sliding_window when the key is absent (0: none) */
    int qk_norm;
    int moe;                 /* reads the MoE keys below with these defaults */
    int moe_experts, moe_top_k, moe_inter, moe_shared_inter, moe_shared, moe_first_dense;
    int mla;                 /* DeepSeek multi-head latent attention */
    int parallel_residual;   /* -1: from use_parallel_residual (default 1); else fixed */
    double rotary_default;   /* rotary_pct default (gpt_neox 0.25); 1 = all of the head */
    pdbx_norm_kind norm;     /* (left out: RMSNorm) */
    pdbx_position_kind position;   /* (left out: rotary) */
    int shared_norm;         /* one norm before the parallel attention and MLP (gpt-j) */
} family;

static const family families[] = {
    /* llama/configuration_llama.py: hidden_act silu, attention_bias False (q,k,v,o), mlp_bias False,
     * tie_word_embeddings False; no sliding window */
    {"llama", "llama/configuration_llama.py", 0, "hidden_act", "silu", 1, -1, -1, 0, -1, 0, SW_NEVER, 0, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, PDBX_NORM_RMS, PDBX_POS_ROPE, 0},
    /* mistral/configuration_mistral.py: sliding_window 4096 on every layer; no biases */
    {"mistral", "mistral/configuration_mistral.py", 0, "hidden_act", "silu", 1, 0, 0, 0, 0, 0, SW_KEY, 4096, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, PDBX_NORM_RMS, PDBX_POS_ROPE, 0},
    /* mixtral/configuration_mixtral.py: num_local_experts 8, num_experts_per_tok 2, each expert
     * intermediate_size wide; sliding_window None */
    {"mixtral", "mixtral/configuration_mixtral.py", 0, "hidden_act", "silu", 1, 0, 0, 0, 0, 0, SW_KEY, 0, 0,
     1, 8, 2, 0, 0, 0, 0, 0, 0, 1.0, PDBX_NORM_RMS, PDBX_POS_ROPE, 0},
    /* qwen2/configuration_qwen2.py: q,k,v with bias, o without (Qwen2Attention); use_sliding_window
     * False, sliding_window 4096, max_window_layers 28 */
    {"qwen2", "qwen2/configuration_qwen2.py", 0, "hidden_act", "silu", 1, 1, 0, 0, 0, 0, SW_QWEN2, 4096, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, PDBX_NORM_RMS, PDBX_POS_ROPE, 0},
    /* qwen2_moe/configuration_qwen2_moe.py: num_experts 60, num_experts_per_tok 4,
     * moe_intermediate_size 1408, shared_expert_intermediate_size 5632, qkv_bias True */
    {"qwen2_moe", "qwen2_moe/configuration_qwen2_moe.py", 0, "hidden_act", "silu", 1, 1, 0, 0, 0, 0,
     SW_QWEN2_MOE, 4096, 0, 1, 60, 4, 1408, 5632, 1, 0, 0, 0, 1.0, PDBX_NORM_RMS, PDBX_POS_ROPE, 0},
    /* qwen3/configuration_qwen3.py: attention_bias False, q_norm/k_norm per head (Qwen3Attention) */
    {"qwen3", "qwen3/configuration_qwen3.py", 0, "hidden_act", "silu", 1, -1, -1, 0, 0, 0, SW_QWEN2, 4096, 1,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, PDBX_NORM_RMS, PDBX_POS_ROPE, 0},
    /* qwen3_moe/configuration_qwen3_moe.py: num_experts 128, num_experts_per_tok 8,
     * moe_intermediate_size 768, no shared expert */
    {"qwen3_moe", "qwen3_moe/configuration_qwen3_moe.py", 0, "hidden_act", "silu", 1, -1, -1, 0, 0, 0,
     SW_QWEN2, 4096, 1, 1, 128, 8, 768, 0, 0, 0, 0, 0, 1.0, PDBX_NORM_RMS, PDBX_POS_ROPE, 0},
    /* phi3/configuration_phi3.py: gate_up_proj (gated silu), no biases, sliding_window None */
    {"phi3", "phi3/configuration_phi3.py", 0, "hidden_act", "silu", 1, 0, 0, 0, 0, 0, SW_KEY, 0, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, PDBX_NORM_RMS, PDBX_POS_ROPE, 0},
    /* gemma/configuration_gemma.py: hidden_act gelu_pytorch_tanh (gated), tie_word_embeddings True */
    {"gemma", "gemma/configuration_gemma.py", 0, "hidden_act", "gelu_pytorch_tanh", 1, -1, -1, 0, 0, 1,
     SW_NEVER, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, PDBX_NORM_RMS, PDBX_POS_ROPE, 0},
    /* gemma2/configuration_gemma2.py: hidden_activation gelu_pytorch_tanh, tie_word_embeddings True,
     * sliding_window 4096 on layer_types "sliding_attention" if (i + 1) % 2, soft-capping 50/30 */
    {"gemma2", "gemma2/configuration_gemma2.py", 0, "hidden_activation", "gelu_pytorch_tanh", 1, -1, -1, 0, 0,
     1, SW_GEMMA2, 4096, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, PDBX_NORM_RMS, PDBX_POS_ROPE, 0},
    /* gpt2/configuration_gpt2.py: n_embd, n_head, n_layer, n_inner None (4 n_embd),
     * activation_function gelu_new; Conv1D c_attn/c_proj/c_fc with bias; PretrainedConfig ties */
    {"gpt2", "gpt2/configuration_gpt2.py", 1, "activation_function", "gelu_new", 0, 1, 1, 1, 1, 1, SW_NEVER, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, PDBX_NORM_LAYER, PDBX_POS_LEARNED, 0},
    /* gpt_neox/configuration_gpt_neox.py: hidden_act gelu, attention_bias True, use_parallel_residual
     * True, rotary_pct 0.25, tie_word_embeddings False; dense_h_to_4h/4h_to_h with bias */
    {"gpt_neox", "gpt_neox/configuration_gpt_neox.py", 0, "hidden_act", "gelu", 0, -1, -1, 1, 1, 0, SW_NEVER,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0.25, PDBX_NORM_LAYER, PDBX_POS_ROPE, 0},
    /* gptj/configuration_gptj.py: n_embd, n_head, n_layer, rotary_dim 64, activation_function
     * gelu_new; q/k/v/out_proj without bias, fc_in/fc_out with; attention and MLP in parallel */
    {"gptj", "gptj/configuration_gptj.py", 1, "activation_function", "gelu_new", 0, 0, 0, 0, 1, 1, SW_NEVER, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1.0, PDBX_NORM_LAYER, PDBX_POS_ROPE, 1},
    /* deepseek_v2/configuration_deepseek_v2.py: kv_lora_rank 512, q_lora_rank 1536,
     * qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128; n_routed_experts 64,
     * n_shared_experts 2, moe_intermediate_size 1407, first_k_dense_replace 0 */
    {"deepseek_v2", "deepseek_v2/configuration_deepseek_v2.py", 0, "hidden_act", "silu", 1, -1, -1, 0, 0, 0,
     SW_NEVER, 0, 0, 1, 64, 0, 1407, 0, 2, 0, 1, 0, 1.0, PDBX_NORM_RMS, PDBX_POS_ROPE, 0},
    /* deepseek_v3/configuration_deepseek_v3.py: n_routed_experts 256, num_experts_per_tok 8,
     * n_shared_experts 1, moe_intermediate_size 2048, first_k_dense_replace 3 */
    {"deepseek_v3", "deepseek_v3/configuration_deepseek_v3.py", 0, "hidden_act", "silu", 1, -1, -1, 0, 0, 0,
     SW_NEVER, 0, 0, 1, 256, 8, 2048, 0, 1, 3, 1, 0, 1.0, PDBX_NORM_RMS, PDBX_POS_ROPE, 0},
    /* mllama/configuration_mllama.py (MllamaTextConfig): a Llama text model whose
     * cross_attention_layers attend to the vision tower's output */
    {"mllama_text_model", "mllama/configuration_mllama.py", 0, "hidden_act", "silu", 1, 0, 0, 0, 0, 0,
     SW_NEVER, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, PDBX_NORM_RMS, PDBX_POS_ROPE, 0},
};
#define N_FAMILIES (sizeof families / sizeof families[0])

/* pdbx's minimal form (no model_type) and an unknown model_type with the Llama keys: a Llama
 * whose MoE, window, bias and activation keys are read by their usual names all the same. */
static const family llama_like = {"", "llama/configuration_llama.py", 0, "hidden_act", "silu", 1, -1, -1, 0,
                                  -1, 0, SW_KEY, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, PDBX_NORM_RMS, PDBX_POS_ROPE, 0};

/* Keys that change the architecture in ways pdbx does not model: present with a value other
 * than the one that leaves a Llama layer as it is, they are recorded as unsupported. */
static const char *const foreign_keys[] = {
    "alibi", "parallel_attn", "multi_query",
    "new_decoder_architecture", "mlp_only_layers", "num_nextn_predict_layers", "use_bidirectional_attention",
};

static void add_unsupported(pdbx_arch *a, const char *fmt, const char *key, const char *value)
{
    size_t used = strlen(a->unsupported);
    if (used + 4 >= sizeof a->unsupported)
        return;
    if (used)
        used += (size_t)snprintf(a->unsupported + used, sizeof a->unsupported - used, ", ");
    snprintf(a->unsupported + used, sizeof a->unsupported - used, fmt, key, value);
}

/* A key that is present, not null, not false and not 0 (a feature switched on). */
static int switched_on(const cJSON *v)
{
    if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v))
        return 0;
    if (cJSON_IsNumber(v))
        return v->valuedouble != 0;
    if (cJSON_IsArray(v))
        return cJSON_GetArraySize(v) > 0;
    return 1;
}

/* ---- sizes ---------------------------------------------------------------------------------- */

static int read_sizes(const cJSON *c, const char *org, const family *f, pdbx_model *m, char *err, size_t errlen)
{
    const char *hk = f->gpt_names ? "n_embd" : "hidden_size", *ak = f->gpt_names ? "n_head" : "num_attention_heads";
    const char *lk = f->gpt_names ? "n_layer" : "num_hidden_layers";
    /* Required fields, in the order a reader checks them. */
    if (plan_cfg_need_int(c, org, "", hk, 1, 1 << 20, &m->hidden, err, errlen) < 0)
        return -1;
    if (f->gpt_names) {
        m->intermediate = 4 * m->hidden;   /* n_inner None: 4 x n_embd */
        if (plan_cfg_int(c, org, "", "n_inner", 1, 1 << 22, &m->intermediate, err, errlen) < 0)
            return -1;
    } else if (plan_cfg_need_int(c, org, "", "intermediate_size", 1, 1 << 22, &m->intermediate, err, errlen) < 0) {
        return -1;
    }
    if (plan_cfg_need_int(c, org, "", ak, 1, 4096, &m->heads, err, errlen) < 0 ||
        plan_cfg_need_int(c, org, "", lk, 1, 4096, &m->layers, err, errlen) < 0 ||
        plan_cfg_need_int(c, org, "", "vocab_size", 1, 1 << 24, &m->vocab, err, errlen) < 0)
        return -1;
    m->kv_heads = m->heads;
    if (plan_cfg_int(c, org, "", "num_key_value_heads", 1, 4096, &m->kv_heads, err, errlen) < 0)
        return -1;
    int rc = plan_cfg_int(c, org, "", "head_dim", 1, 16384, &m->head_dim, err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 1) {
        if (m->hidden % m->heads != 0)
            return pdbx_fail(err, errlen,
                             "%s: num_attention_heads %d does not divide hidden_size %d and head_dim is "
                             "missing (allowed: give head_dim, or heads dividing hidden_size)",
                             org, m->heads, m->hidden);
        m->head_dim = m->hidden / m->heads;
    }
    return 0;
}

/* ---- the arch of a family ------------------------------------------------------------------- */

static int read_sliding_window(const cJSON *c, const char *org, const family *f, const pdbx_model *m,
                               pdbx_arch *a, char *err, size_t errlen)
{
    int size = f->sw_default, on = 1;
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(c, "sliding_window");
    if (key && cJSON_IsNull(key))
        size = 0;   /* explicitly none (Mistral-7B-v0.2 and later) */
    else if (plan_cfg_int(c, org, "", "sliding_window", 0, 1 << 30, &size, err, errlen) < 0)
        return -1;
    if (f->sw == SW_QWEN2 || f->sw == SW_QWEN2_MOE) {
        on = 0;   /* use_sliding_window False: the window key is ignored (as transformers does) */
        if (plan_cfg_bool(c, org, "", "use_sliding_window", &on, err, errlen) < 0)
            return -1;
    }
    if (f->sw == SW_NEVER) {
        if (size > 0 && key && !cJSON_IsNull(key))
            add_unsupported(a, "%s %s", "sliding_window", "(a family without one)");
        return 0;
    }
    if (!on || size <= 0)
        return 0;
    int L = m->layers, count = L, mwl = 28;
    pdbx_sw_layers pattern = PDBX_SW_ALL;
    if (f->sw == SW_QWEN2 || f->sw == SW_QWEN2_MOE) {
        if (plan_cfg_int(c, org, "", "max_window_layers", 0, 1 << 20, &mwl, err, errlen) < 0)
            return -1;
        if (f->sw == SW_QWEN2) {   /* sliding when i >= max_window_layers */
            count = L > mwl ? L - mwl : 0;
            pattern = count == L ? PDBX_SW_ALL : PDBX_SW_SOME;
        } else {                   /* sliding when i is even and i < max_window_layers */
            int top = mwl < L ? mwl : L;
            count = (top + 1) / 2;
            pattern = PDBX_SW_SOME;
        }
    } else if (f->sw == SW_GEMMA2) {
        count = (L + 1) / 2;
        pattern = PDBX_SW_ALTERNATING;
    }
    /* layer_types (newer configs) says it per layer and overrides the rules above */
    const cJSON *lt = plan_cfg_item(c, "layer_types");
    if (cJSON_IsArray(lt)) {
        int n = 0, sliding = 0, other = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, lt) {
            n++;
            if (cJSON_IsString(e) && strcmp(e->valuestring, "sliding_attention") == 0)
                sliding++;
            else if (!cJSON_IsString(e) || strcmp(e->valuestring, "full_attention") != 0)
                other++;
        }
        if (other)
            add_unsupported(a, "%s %s", "layer_types", "(other than sliding_attention, full_attention)");
        count = sliding;
        pattern = sliding == 0 ? PDBX_SW_NONE : sliding == n ? PDBX_SW_ALL
                  : f->sw == SW_GEMMA2 ? PDBX_SW_ALTERNATING : PDBX_SW_SOME;
    }
    if (count <= 0)
        return 0;
    a->sliding_window.size = size;
    a->sliding_window.layers = pattern;
    a->sliding_window.count = count;
    return 0;
}

/* The router's scoring and weights, each family's defaults: Mixtral (MixtralSparseMoeBlock)
 * always renormalises its top-k softmax weights and has no key for it; qwen2_moe, qwen3_moe and
 * deepseek_v2 default norm_topk_prob False (their configs may set it), deepseek_v3 True with
 * scoring_func "sigmoid" and routed_scaling_factor 2.5 (configuration_deepseek_v3.py). */
static int read_router(const cJSON *c, const char *org, const char *type, pdbx_arch *a, char *err,
                       size_t errlen)
{
    const int v3 = strcmp(type, "deepseek_v3") == 0;
    a->moe.norm_topk = strcmp(type, "mixtral") == 0 || v3;
    a->moe.sigmoid = v3;
    a->moe.routed_scale = v3 ? 2.5 : 1.0;
    char scoring[16] = "";
    if (plan_cfg_bool(c, org, "", "norm_topk_prob", &a->moe.norm_topk, err, errlen) < 0 ||
        plan_cfg_num(c, org, "", "routed_scaling_factor", 1e-6, 1e6, &a->moe.routed_scale, err, errlen) < 0 ||
        plan_cfg_str(c, org, "", "scoring_func", scoring, sizeof scoring, err, errlen) < 0)
        return -1;
    if (*scoring && strcmp(scoring, "softmax") != 0 && strcmp(scoring, "sigmoid") != 0)
        return pdbx_fail(err, errlen, "%s: scoring_func \"%s\" (allowed: softmax, sigmoid)", org, scoring);
    if (*scoring)
        a->moe.sigmoid = strcmp(scoring, "sigmoid") == 0;
    return 0;
}

static int read_moe(const cJSON *c, const char *org, const family *f, const pdbx_model *m, pdbx_arch *a,
                    char *err, size_t errlen)
{
    int experts = f->moe ? f->moe_experts : 0;
    /* the expert count under each family's name; any of them in any config is read */
    static const char *const expert_keys[] = {"num_local_experts", "num_experts", "n_routed_experts"};
    for (size_t i = 0; i < sizeof expert_keys / sizeof expert_keys[0]; i++)
        if (plan_cfg_int(c, org, "", expert_keys[i], 0, 1 << 20, &experts, err, errlen) < 0)
            return -1;
    if (experts <= 1)
        return 0;   /* num_experts 0/1 or absent in a dense family: dense */
    a->moe.experts = experts;
    a->moe.top_k = f->moe ? f->moe_top_k : 0;
    if (plan_cfg_int(c, org, "", "num_experts_per_tok", 1, 1 << 20, &a->moe.top_k, err, errlen) < 0)
        return -1;
    if (a->moe.top_k <= 0)
        return pdbx_fail(err, errlen, "%s: missing required field 'num_experts_per_tok' (a mixture of %d "
                         "experts)", org, experts);
    a->moe.expert_intermediate = f->moe && f->moe_inter ? f->moe_inter : m->intermediate;
    if (plan_cfg_int(c, org, "", "moe_intermediate_size", 1, 1 << 22, &a->moe.expert_intermediate, err, errlen) < 0)
        return -1;
    a->moe.shared_experts = f->moe ? f->moe_shared : 0;
    a->moe.shared_expert_intermediate = f->moe ? f->moe_shared_inter : 0;
    if (plan_cfg_int(c, org, "", "n_shared_experts", 0, 1 << 20, &a->moe.shared_experts, err, errlen) < 0 ||
        plan_cfg_int(c, org, "", "shared_expert_intermediate_size", 0, 1 << 22, &a->moe.shared_expert_intermediate,
                err, errlen) < 0)
        return -1;
    if (plan_cfg_item(c, "shared_expert_intermediate_size"))   /* Qwen2-MoE: one shared expert of that width */
        a->moe.shared_experts = a->moe.shared_expert_intermediate > 0;
    a->moe.first_dense_layers = f->moe ? f->moe_first_dense : 0;
    if (plan_cfg_int(c, org, "", "first_k_dense_replace", 0, 1 << 20, &a->moe.first_dense_layers, err, errlen) < 0)
        return -1;
    return read_router(c, org, f->model_type, a, err, errlen);
}

static int read_mla(const cJSON *c, const char *org, const family *f, pdbx_model *m, pdbx_arch *a, char *err,
                    size_t errlen)
{
    if (!f->mla && !plan_cfg_item(c, "kv_lora_rank"))
        return 0;
    /* DeepseekV2Config defaults: kv_lora_rank 512, q_lora_rank 1536, qk_nope_head_dim 128,
     * qk_rope_head_dim 64, v_head_dim 128 (q_lora_rank null: q is projected at full rank) */
    a->attention = PDBX_ATTN_MLA;
    a->mla.kv_lora_rank = 512;
    a->mla.q_lora_rank = 1536;
    a->mla.qk_nope_head_dim = 128;
    a->mla.qk_rope_head_dim = 64;
    a->mla.v_head_dim = 128;
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(c, "q_lora_rank");
    if (q && cJSON_IsNull(q))
        a->mla.q_lora_rank = 0;
    const char *pre = "";
    if (plan_cfg_int(c, org, pre, "kv_lora_rank", 1, 1 << 20, &a->mla.kv_lora_rank, err, errlen) < 0 ||
        plan_cfg_int(c, org, pre, "q_lora_rank", 1, 1 << 20, &a->mla.q_lora_rank, err, errlen) < 0 ||
        plan_cfg_int(c, org, pre, "qk_nope_head_dim", 0, 1 << 16, &a->mla.qk_nope_head_dim, err, errlen) < 0 ||
        plan_cfg_int(c, org, pre, "qk_rope_head_dim", 0, 1 << 16, &a->mla.qk_rope_head_dim, err, errlen) < 0 ||
        plan_cfg_int(c, org, pre, "v_head_dim", 1, 1 << 16, &a->mla.v_head_dim, err, errlen) < 0)
        return -1;
    m->head_dim = a->mla.qk_nope_head_dim + a->mla.qk_rope_head_dim;   /* q and k per head */
    if (m->head_dim <= 0)
        return pdbx_fail(err, errlen, "%s: qk_nope_head_dim + qk_rope_head_dim is 0 (allowed: at least 1)", org);
    return 0;
}

/* Soft-capping (Gemma2Config: attn_logit_softcapping 50.0, final_logit_softcapping 30.0 by
 * default; null switches one off; any family may carry the keys). */
static int read_softcaps(const cJSON *c, const char *org, const family *f, pdbx_arch *a, char *err,
                         size_t errlen)
{
    static const struct { const char *key; size_t off; double gemma2; } caps[] = {
        {"attn_logit_softcapping", offsetof(pdbx_arch, attn_softcap), 50.0},
        {"final_logit_softcapping", offsetof(pdbx_arch, final_softcap), 30.0},
    };
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        double *v = (double *)((char *)a + caps[i].off);
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(c, caps[i].key);
        *v = !item && strcmp(f->model_type, "gemma2") == 0 ? caps[i].gemma2 : 0.0;   /* null: off */
        if (plan_cfg_num(c, org, "", caps[i].key, 0, 1e6, v, err, errlen) < 0)
            return -1;
    }
    return 0;
}

static int read_family_arch(const cJSON *c, const char *org, const family *f, pdbx_model *m, char *err,
                            size_t errlen)
{
    pdbx_arch *a = &m->arch;
    a->mlp_plain = !f->gated;
    a->norm = f->norm;
    a->position = f->position;
    if (a->position == PDBX_POS_LEARNED) {   /* GPT2Config n_positions 1024 */
        a->max_positions = 1024;
        if (plan_cfg_int(c, org, "", "n_positions", 1, 1 << 20, &a->max_positions, err, errlen) < 0)
            return -1;
    }
    pdbx_strcopy(a->activation, sizeof a->activation, f->act_default);
    /* the activation under any of its names (gemma2 configs carry both hidden_act and
     * hidden_activation; the family's own key wins) */
    static const char *const act_keys[] = {"activation_function", "hidden_act", "hidden_activation"};
    for (size_t i = 0; i < sizeof act_keys / sizeof act_keys[0]; i++)
        if (strcmp(act_keys[i], f->act_key) != 0 &&
            plan_cfg_str(c, org, "", act_keys[i], a->activation, sizeof a->activation, err, errlen) < 0)
            return -1;
    if (plan_cfg_str(c, org, "", f->act_key, a->activation, sizeof a->activation, err, errlen) < 0)
        return -1;

    int attn_bias = f->attn_bias_default, mlp_bias = 0;
    if (plan_cfg_bool(c, org, "", "attention_bias", &attn_bias, err, errlen) < 0 ||
        plan_cfg_bool(c, org, "", "mlp_bias", &mlp_bias, err, errlen) < 0)
        return -1;
    a->bias.qkv = f->qkv_bias >= 0 ? f->qkv_bias : attn_bias;
    a->bias.attn_out = f->out_bias >= 0 ? f->out_bias : attn_bias;
    a->bias.mlp = f->mlp_bias >= 0 ? f->mlp_bias : mlp_bias;
    if (plan_cfg_bool(c, org, "", "qkv_bias", &a->bias.qkv, err, errlen) < 0)   /* qwen2_moe */
        return -1;
    if (f->qkv_bias >= 0 && f->qkv_bias == 0 && attn_bias && plan_cfg_item(c, "attention_bias"))
        add_unsupported(a, "%s %s", "attention_bias", "true (a family without one)");

    m->tie_embeddings = f->tie_default;
    if (plan_cfg_bool(c, org, "", "tie_word_embeddings", &m->tie_embeddings, err, errlen) < 0)
        return -1;
    a->qk_norm = f->qk_norm;
    if (read_softcaps(c, org, f, a, err, errlen) != 0)
        return -1;

    a->parallel_residual = f->parallel_residual > 0;
    a->shared_norm = f->shared_norm;
    if (f->parallel_residual < 0) {
        a->parallel_residual = 1;
        if (plan_cfg_bool(c, org, "", "use_parallel_residual", &a->parallel_residual, err, errlen) < 0)
            return -1;
    } else if (f->parallel_residual == 0 && switched_on(plan_cfg_item(c, "use_parallel_residual"))) {
        add_unsupported(a, "%s %s", "use_parallel_residual", "true");
    }
    a->rotary_fraction = f->rotary_default;
    if (plan_cfg_num(c, org, "", "rotary_pct", 0, 1, &a->rotary_fraction, err, errlen) < 0 ||
        plan_cfg_num(c, org, "", "partial_rotary_factor", 0, 1, &a->rotary_fraction, err, errlen) < 0)
        return -1;
    int rotary_dim = 0;
    if (plan_cfg_int(c, org, "", "rotary_dim", 1, 1 << 16, &rotary_dim, err, errlen) < 0)
        return -1;
    if (strcmp(f->model_type, "gptj") == 0 && rotary_dim == 0)
        rotary_dim = 64;   /* GPTJConfig rotary_dim 64 */
    if (rotary_dim > 0 && m->head_dim > 0)
        a->rotary_fraction = rotary_dim >= m->head_dim ? 1.0 : (double)rotary_dim / m->head_dim;

    const cJSON *xattn = plan_cfg_item(c, "cross_attention_layers");
    if (cJSON_IsArray(xattn))
        a->cross_attention_layers = cJSON_GetArraySize(xattn);

    if (read_sliding_window(c, org, f, m, a, err, errlen) != 0 || read_moe(c, org, f, m, a, err, errlen) != 0 ||
        read_mla(c, org, f, m, a, err, errlen) != 0)
        return -1;
    if (a->attention != PDBX_ATTN_MLA)
        a->attention = m->kv_heads < m->heads ? PDBX_ATTN_GQA : PDBX_ATTN_MHA;

    for (size_t i = 0; i < sizeof foreign_keys / sizeof foreign_keys[0]; i++) {
        const cJSON *v = plan_cfg_item(c, foreign_keys[i]);
        if (!switched_on(v))
            continue;
        char val[48];
        plan_json_brief(v, val, sizeof val);
        add_unsupported(a, "%s %s", foreign_keys[i], val);
    }
    return 0;
}

/* ---- pdbx's own arch object (read back from a spec pdbx wrote) -------------------------- */

/* ---- entry points ---------------------------------------------------------------------------- */

void plan_arch_llama(pdbx_arch *a, int heads, int kv_heads)
{
    memset(a, 0, sizeof *a);
    pdbx_strcopy(a->model_type, sizeof a->model_type, "llama");
    pdbx_strcopy(a->activation, sizeof a->activation, "silu");
    a->attention = kv_heads < heads ? PDBX_ATTN_GQA : PDBX_ATTN_MHA;
    a->rotary_fraction = 1.0;
}

int plan_arch_read(const cJSON *cfg, const char *origin, pdbx_model *m, char *err, size_t errlen)
{
    const char *org = origin ? origin : "model";
    const cJSON *c = cfg;
    memset(&m->arch, 0, sizeof m->arch);
    char outer[32] = "";
    if (plan_cfg_str(cfg, org, "", "model_type", outer, sizeof outer, err, errlen) < 0)
        return -1;
    /* A multimodal config (mllama, llava, ...) keeps its language model in text_config. */
    const cJSON *text = plan_cfg_item(cfg, "text_config");
    if (text && !plan_cfg_item(cfg, "hidden_size") && !plan_cfg_item(cfg, "n_embd")) {
        if (!cJSON_IsObject(text))
            return pdbx_fail(err, errlen, "%s: text_config: expected an object (the text model's config)", org);
        c = text;
        pdbx_strcopy(m->arch.nested, sizeof m->arch.nested, "text_config");
    }
    char org_buf[PDBX_PATH_MAX + 16];
    if (c != cfg) {
        snprintf(org_buf, sizeof org_buf, "%s: text_config", org);
        org = org_buf;
    }
    char type[32] = "";
    if (plan_cfg_str(c, org, "", "model_type", type, sizeof type, err, errlen) < 0)
        return -1;
    if (c != cfg && !*type)
        pdbx_strcopy(type, sizeof type, outer);
    const family *f = NULL;
    for (size_t i = 0; i < N_FAMILIES && *type; i++)
        if (strcmp(type, families[i].model_type) == 0)
            f = &families[i];
    const cJSON *own = plan_cfg_item(cfg, "arch");   /* a spec pdbx wrote: the arch as it printed it */
    if (!f) {
        /* An unknown family is read only with the Llama keys (never guessed from other names). */
        if (*type && !plan_cfg_item(c, "hidden_size")) {
            char allowed[512] = "";
            for (size_t i = 0; i < N_FAMILIES; i++)
                snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s", i ? ", " : "",
                         families[i].model_type);
            return pdbx_fail(err, errlen, "%s: model_type '%s' is not known and has no hidden_size (allowed: %s, "
                             "or a config with the Llama keys)", org, type, allowed);
        }
        f = &llama_like;
    }
    if (read_sizes(c, org, f, m, err, errlen) != 0)
        return -1;
    if (own) {
        plan_arch_llama(&m->arch, m->heads, m->kv_heads);
        m->tie_embeddings = 0;
        if (plan_cfg_bool(c, org, "", "tie_word_embeddings", &m->tie_embeddings, err, errlen) < 0)
            return -1;
        return plan_arch_read_own(own, org, m, err, errlen);
    }
    if (read_family_arch(c, org, f, m, err, errlen) != 0)
        return -1;
    pdbx_strcopy(m->arch.model_type, sizeof m->arch.model_type, *type ? type : "llama");
    if (!*type && c == cfg)   /* pdbx's minimal form */
        pdbx_strcopy(m->arch.model_type, sizeof m->arch.model_type, "llama");
    return 0;
}
