/* plan_arch.c: reading a HuggingFace config.json by family (plan_arch.h). The key names and
 * defaults of each family are those of transformers' configuration classes,
 * src/transformers/models/<dir>/configuration_<dir>.py (cited per family in the table below);
 * where a class leaves a key to PretrainedConfig (tie_word_embeddings) its default, true, holds. */
#include "engine/plan/plan_internal.h"

#include <math.h>
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
} family;

static const family families[] = {
    /* llama/configuration_llama.py: hidden_act silu, attention_bias False (q,k,v,o), mlp_bias False,
     * tie_word_embeddings False; no sliding window */
    {"llama", "llama/configuration_llama.py", 0, "hidden_act", "silu", 1, -1, -1, 0, -1, 0, SW_NEVER, 0, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0},
    /* mistral/configuration_mistral.py: sliding_window 4096 on every layer; no biases */
    {"mistral", "mistral/configuration_mistral.py", 0, "hidden_act", "silu", 1, 0, 0, 0, 0, 0, SW_KEY, 4096, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0},
    /* mixtral/configuration_mixtral.py: num_local_experts 8, num_experts_per_tok 2, each expert
     * intermediate_size wide; sliding_window None */
    {"mixtral", "mixtral/configuration_mixtral.py", 0, "hidden_act", "silu", 1, 0, 0, 0, 0, 0, SW_KEY, 0, 0,
     1, 8, 2, 0, 0, 0, 0, 0, 0, 1.0},
    /* qwen2/configuration_qwen2.py: q,k,v with bias, o without (Qwen2Attention); use_sliding_window
     * False, sliding_window 4096, max_window_layers 28 */
    {"qwen2", "qwen2/configuration_qwen2.py", 0, "hidden_act", "silu", 1, 1, 0, 0, 0, 0, SW_QWEN2, 4096, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0},
    /* qwen2_moe/configuration_qwen2_moe.py: num_experts 60, num_experts_per_tok 4,
     * moe_intermediate_size 1408, shared_expert_intermediate_size 5632, qkv_bias True */
    {"qwen2_moe", "qwen2_moe/configuration_qwen2_moe.py", 0, "hidden_act", "silu", 1, 1, 0, 0, 0, 0,
     SW_QWEN2_MOE, 4096, 0, 1, 60, 4, 1408, 5632, 1, 0, 0, 0, 1.0},
    /* qwen3/configuration_qwen3.py: attention_bias False, q_norm/k_norm per head (Qwen3Attention) */
    {"qwen3", "qwen3/configuration_qwen3.py", 0, "hidden_act", "silu", 1, -1, -1, 0, 0, 0, SW_QWEN2, 4096, 1,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0},
    /* qwen3_moe/configuration_qwen3_moe.py: num_experts 128, num_experts_per_tok 8,
     * moe_intermediate_size 768, no shared expert */
    {"qwen3_moe", "qwen3_moe/configuration_qwen3_moe.py", 0, "hidden_act", "silu", 1, -1, -1, 0, 0, 0,
     SW_QWEN2, 4096, 1, 1, 128, 8, 768, 0, 0, 0, 0, 0, 1.0},
    /* phi3/configuration_phi3.py: gate_up_proj (gated silu), no biases, sliding_window None */
    {"phi3", "phi3/configuration_phi3.py", 0, "hidden_act", "silu", 1, 0, 0, 0, 0, 0, SW_KEY, 0, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0},
    /* gemma/configuration_gemma.py: hidden_act gelu_pytorch_tanh (gated), tie_word_embeddings True */
    {"gemma", "gemma/configuration_gemma.py", 0, "hidden_act", "gelu_pytorch_tanh", 1, -1, -1, 0, 0, 1,
     SW_NEVER, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0},
    /* gemma2/configuration_gemma2.py: hidden_activation gelu_pytorch_tanh, tie_word_embeddings True,
     * sliding_window 4096 on layer_types "sliding_attention" if (i + 1) % 2, soft-capping 50/30 */
    {"gemma2", "gemma2/configuration_gemma2.py", 0, "hidden_activation", "gelu_pytorch_tanh", 1, -1, -1, 0, 0,
     1, SW_GEMMA2, 4096, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0},
    /* gpt2/configuration_gpt2.py: n_embd, n_head, n_layer, n_inner None (4 n_embd),
     * activation_function gelu_new; Conv1D c_attn/c_proj/c_fc with bias; PretrainedConfig ties */
    {"gpt2", "gpt2/configuration_gpt2.py", 1, "activation_function", "gelu_new", 0, 1, 1, 1, 1, 1, SW_NEVER, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0},
    /* gpt_neox/configuration_gpt_neox.py: hidden_act gelu, attention_bias True, use_parallel_residual
     * True, rotary_pct 0.25, tie_word_embeddings False; dense_h_to_4h/4h_to_h with bias */
    {"gpt_neox", "gpt_neox/configuration_gpt_neox.py", 0, "hidden_act", "gelu", 0, -1, -1, 1, 1, 0, SW_NEVER,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0.25},
    /* gptj/configuration_gptj.py: n_embd, n_head, n_layer, rotary_dim 64, activation_function
     * gelu_new; q/k/v/out_proj without bias, fc_in/fc_out with; attention and MLP in parallel */
    {"gptj", "gptj/configuration_gptj.py", 1, "activation_function", "gelu_new", 0, 0, 0, 0, 1, 1, SW_NEVER, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1.0},
    /* deepseek_v2/configuration_deepseek_v2.py: kv_lora_rank 512, q_lora_rank 1536,
     * qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128; n_routed_experts 64,
     * n_shared_experts 2, moe_intermediate_size 1407, first_k_dense_replace 0 */
    {"deepseek_v2", "deepseek_v2/configuration_deepseek_v2.py", 0, "hidden_act", "silu", 1, -1, -1, 0, 0, 0,
     SW_NEVER, 0, 0, 1, 64, 0, 1407, 0, 2, 0, 1, 0, 1.0},
    /* deepseek_v3/configuration_deepseek_v3.py: n_routed_experts 256, num_experts_per_tok 8,
     * n_shared_experts 1, moe_intermediate_size 2048, first_k_dense_replace 3 */
    {"deepseek_v3", "deepseek_v3/configuration_deepseek_v3.py", 0, "hidden_act", "silu", 1, -1, -1, 0, 0, 0,
     SW_NEVER, 0, 0, 1, 256, 8, 2048, 0, 1, 3, 1, 0, 1.0},
    /* mllama/configuration_mllama.py (MllamaTextConfig): a Llama text model whose
     * cross_attention_layers attend to the vision tower's output */
    {"mllama_text_model", "mllama/configuration_mllama.py", 0, "hidden_act", "silu", 1, 0, 0, 0, 0, 0,
     SW_NEVER, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0},
};
#define N_FAMILIES (sizeof families / sizeof families[0])

/* pdbx's minimal form (no model_type) and an unknown model_type with the Llama keys: a Llama
 * whose MoE, window, bias and activation keys are read by their usual names all the same. */
static const family llama_like = {"", "llama/configuration_llama.py", 0, "hidden_act", "silu", 1, -1, -1, 0,
                                  -1, 0, SW_KEY, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0};

/* Keys that change the architecture in ways pdbx does not model: present with a value other
 * than the one that leaves a Llama layer as it is, they are recorded as unsupported. */
static const char *const foreign_keys[] = {
    "attn_logit_softcapping", "final_logit_softcapping", "alibi", "parallel_attn", "multi_query",
    "new_decoder_architecture", "mlp_only_layers", "num_nextn_predict_layers", "use_bidirectional_attention",
};

/* ---- small readers ---------------------------------------------------------------------- */

static const cJSON *item(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

/* 0 read, 1 absent (out keeps its value), -1 error. */
static int get_int(const cJSON *o, const char *org, const char *prefix, const char *key, long long lo,
                   long long hi, int *out, char *err, size_t errlen)
{
    const cJSON *v = item(o, key);
    if (!v)
        return 1;
    char label[PDBX_PATH_MAX + 96];
    snprintf(label, sizeof label, "%s: %s%s", org, prefix, key);
    long long x;
    if (plan_json_int(v, label, lo, hi, &x, err, errlen) != 0)
        return -1;
    *out = (int)x;
    return 0;
}

static int need_int(const cJSON *o, const char *org, const char *prefix, const char *key, long long lo,
                    long long hi, int *out, char *err, size_t errlen)
{
    int rc = get_int(o, org, prefix, key, lo, hi, out, err, errlen);
    if (rc == 1)
        return pdbx_fail(err, errlen, "%s: missing required field '%s%s'", org, prefix, key);
    return rc;
}

static int get_bool(const cJSON *o, const char *org, const char *prefix, const char *key, int *out, char *err,
                    size_t errlen)
{
    const cJSON *v = item(o, key);
    if (!v)
        return 1;
    char label[PDBX_PATH_MAX + 96];
    snprintf(label, sizeof label, "%s: %s%s", org, prefix, key);
    return plan_json_bool(v, label, out, err, errlen);
}

static int get_num(const cJSON *o, const char *org, const char *prefix, const char *key, double lo, double hi,
                   double *out, char *err, size_t errlen)
{
    const cJSON *v = item(o, key);
    if (!v)
        return 1;
    char label[PDBX_PATH_MAX + 96];
    snprintf(label, sizeof label, "%s: %s%s", org, prefix, key);
    return plan_json_number(v, label, lo, hi, out, err, errlen);
}

static int get_str(const cJSON *o, const char *org, const char *prefix, const char *key, char *out, size_t len,
                   char *err, size_t errlen)
{
    const cJSON *v = item(o, key);
    if (!v)
        return 1;
    char label[PDBX_PATH_MAX + 96];
    const char *s;
    snprintf(label, sizeof label, "%s: %s%s", org, prefix, key);
    if (plan_json_string(v, label, &s, err, errlen) != 0)
        return -1;
    if (strlen(s) >= len)
        return pdbx_fail(err, errlen, "%s: '%.40s...' is too long (allowed: %zu characters)", label, s, len - 1);
    pdbx_strcopy(out, len, s);
    return 0;
}

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
    if (need_int(c, org, "", hk, 1, 1 << 20, &m->hidden, err, errlen) < 0)
        return -1;
    if (f->gpt_names) {
        m->intermediate = 4 * m->hidden;   /* n_inner None: 4 x n_embd */
        if (get_int(c, org, "", "n_inner", 1, 1 << 22, &m->intermediate, err, errlen) < 0)
            return -1;
    } else if (need_int(c, org, "", "intermediate_size", 1, 1 << 22, &m->intermediate, err, errlen) < 0) {
        return -1;
    }
    if (need_int(c, org, "", ak, 1, 4096, &m->heads, err, errlen) < 0 ||
        need_int(c, org, "", lk, 1, 4096, &m->layers, err, errlen) < 0 ||
        need_int(c, org, "", "vocab_size", 1, 1 << 24, &m->vocab, err, errlen) < 0)
        return -1;
    m->kv_heads = m->heads;
    if (get_int(c, org, "", "num_key_value_heads", 1, 4096, &m->kv_heads, err, errlen) < 0)
        return -1;
    int rc = get_int(c, org, "", "head_dim", 1, 16384, &m->head_dim, err, errlen);
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
    else if (get_int(c, org, "", "sliding_window", 0, 1 << 30, &size, err, errlen) < 0)
        return -1;
    if (f->sw == SW_QWEN2 || f->sw == SW_QWEN2_MOE) {
        on = 0;   /* use_sliding_window False: the window key is ignored (as transformers does) */
        if (get_bool(c, org, "", "use_sliding_window", &on, err, errlen) < 0)
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
        if (get_int(c, org, "", "max_window_layers", 0, 1 << 20, &mwl, err, errlen) < 0)
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
    const cJSON *lt = item(c, "layer_types");
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

static int read_moe(const cJSON *c, const char *org, const family *f, const pdbx_model *m, pdbx_arch *a,
                    char *err, size_t errlen)
{
    int experts = f->moe ? f->moe_experts : 0;
    /* the expert count under each family's name; any of them in any config is read */
    static const char *const expert_keys[] = {"num_local_experts", "num_experts", "n_routed_experts"};
    for (size_t i = 0; i < sizeof expert_keys / sizeof expert_keys[0]; i++)
        if (get_int(c, org, "", expert_keys[i], 0, 1 << 20, &experts, err, errlen) < 0)
            return -1;
    if (experts <= 1)
        return 0;   /* num_experts 0/1 or absent in a dense family: dense */
    a->moe.experts = experts;
    a->moe.top_k = f->moe ? f->moe_top_k : 0;
    if (get_int(c, org, "", "num_experts_per_tok", 1, 1 << 20, &a->moe.top_k, err, errlen) < 0)
        return -1;
    if (a->moe.top_k <= 0)
        return pdbx_fail(err, errlen, "%s: missing required field 'num_experts_per_tok' (a mixture of %d "
                         "experts)", org, experts);
    a->moe.expert_intermediate = f->moe && f->moe_inter ? f->moe_inter : m->intermediate;
    if (get_int(c, org, "", "moe_intermediate_size", 1, 1 << 22, &a->moe.expert_intermediate, err, errlen) < 0)
        return -1;
    a->moe.shared_experts = f->moe ? f->moe_shared : 0;
    a->moe.shared_expert_intermediate = f->moe ? f->moe_shared_inter : 0;
    if (get_int(c, org, "", "n_shared_experts", 0, 1 << 20, &a->moe.shared_experts, err, errlen) < 0 ||
        get_int(c, org, "", "shared_expert_intermediate_size", 0, 1 << 22, &a->moe.shared_expert_intermediate,
                err, errlen) < 0)
        return -1;
    if (item(c, "shared_expert_intermediate_size"))   /* Qwen2-MoE: one shared expert of that width */
        a->moe.shared_experts = a->moe.shared_expert_intermediate > 0;
    a->moe.first_dense_layers = f->moe ? f->moe_first_dense : 0;
    if (get_int(c, org, "", "first_k_dense_replace", 0, 1 << 20, &a->moe.first_dense_layers, err, errlen) < 0)
        return -1;
    return 0;
}

static int read_mla(const cJSON *c, const char *org, const family *f, pdbx_model *m, pdbx_arch *a, char *err,
                    size_t errlen)
{
    if (!f->mla && !item(c, "kv_lora_rank"))
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
    if (get_int(c, org, pre, "kv_lora_rank", 1, 1 << 20, &a->mla.kv_lora_rank, err, errlen) < 0 ||
        get_int(c, org, pre, "q_lora_rank", 1, 1 << 20, &a->mla.q_lora_rank, err, errlen) < 0 ||
        get_int(c, org, pre, "qk_nope_head_dim", 0, 1 << 16, &a->mla.qk_nope_head_dim, err, errlen) < 0 ||
        get_int(c, org, pre, "qk_rope_head_dim", 0, 1 << 16, &a->mla.qk_rope_head_dim, err, errlen) < 0 ||
        get_int(c, org, pre, "v_head_dim", 1, 1 << 16, &a->mla.v_head_dim, err, errlen) < 0)
        return -1;
    m->head_dim = a->mla.qk_nope_head_dim + a->mla.qk_rope_head_dim;   /* q and k per head */
    if (m->head_dim <= 0)
        return pdbx_fail(err, errlen, "%s: qk_nope_head_dim + qk_rope_head_dim is 0 (allowed: at least 1)", org);
    return 0;
}

static int read_family_arch(const cJSON *c, const char *org, const family *f, pdbx_model *m, char *err,
                            size_t errlen)
{
    pdbx_arch *a = &m->arch;
    a->mlp_gated = f->gated;
    pdbx_strcopy(a->activation, sizeof a->activation, f->act_default);
    /* the activation under any of its names (gemma2 configs carry both hidden_act and
     * hidden_activation; the family's own key wins) */
    static const char *const act_keys[] = {"activation_function", "hidden_act", "hidden_activation"};
    for (size_t i = 0; i < sizeof act_keys / sizeof act_keys[0]; i++)
        if (strcmp(act_keys[i], f->act_key) != 0 &&
            get_str(c, org, "", act_keys[i], a->activation, sizeof a->activation, err, errlen) < 0)
            return -1;
    if (get_str(c, org, "", f->act_key, a->activation, sizeof a->activation, err, errlen) < 0)
        return -1;

    int attn_bias = f->attn_bias_default, mlp_bias = 0;
    if (get_bool(c, org, "", "attention_bias", &attn_bias, err, errlen) < 0 ||
        get_bool(c, org, "", "mlp_bias", &mlp_bias, err, errlen) < 0)
        return -1;
    a->bias.qkv = f->qkv_bias >= 0 ? f->qkv_bias : attn_bias;
    a->bias.attn_out = f->out_bias >= 0 ? f->out_bias : attn_bias;
    a->bias.mlp = f->mlp_bias >= 0 ? f->mlp_bias : mlp_bias;
    if (get_bool(c, org, "", "qkv_bias", &a->bias.qkv, err, errlen) < 0)   /* qwen2_moe */
        return -1;
    if (f->qkv_bias >= 0 && f->qkv_bias == 0 && attn_bias && item(c, "attention_bias"))
        add_unsupported(a, "%s %s", "attention_bias", "true (a family without one)");

    m->tie_embeddings = f->tie_default;
    if (get_bool(c, org, "", "tie_word_embeddings", &m->tie_embeddings, err, errlen) < 0)
        return -1;
    a->qk_norm = f->qk_norm;

    a->parallel_residual = f->parallel_residual > 0;
    if (f->parallel_residual < 0) {
        a->parallel_residual = 1;
        if (get_bool(c, org, "", "use_parallel_residual", &a->parallel_residual, err, errlen) < 0)
            return -1;
    } else if (f->parallel_residual == 0 && switched_on(item(c, "use_parallel_residual"))) {
        add_unsupported(a, "%s %s", "use_parallel_residual", "true");
    }
    a->rotary_fraction = f->rotary_default;
    if (get_num(c, org, "", "rotary_pct", 0, 1, &a->rotary_fraction, err, errlen) < 0 ||
        get_num(c, org, "", "partial_rotary_factor", 0, 1, &a->rotary_fraction, err, errlen) < 0)
        return -1;
    int rotary_dim = 0;
    if (get_int(c, org, "", "rotary_dim", 1, 1 << 16, &rotary_dim, err, errlen) < 0)
        return -1;
    if (strcmp(f->model_type, "gptj") == 0 && rotary_dim == 0)
        rotary_dim = 64;   /* GPTJConfig rotary_dim 64 */
    if (rotary_dim > 0 && m->head_dim > 0)
        a->rotary_fraction = rotary_dim >= m->head_dim ? 1.0 : (double)rotary_dim / m->head_dim;

    const cJSON *xattn = item(c, "cross_attention_layers");
    if (cJSON_IsArray(xattn))
        a->cross_attention_layers = cJSON_GetArraySize(xattn);

    if (read_sliding_window(c, org, f, m, a, err, errlen) != 0 || read_moe(c, org, f, m, a, err, errlen) != 0 ||
        read_mla(c, org, f, m, a, err, errlen) != 0)
        return -1;
    if (a->attention != PDBX_ATTN_MLA)
        a->attention = m->kv_heads < m->heads ? PDBX_ATTN_GQA : PDBX_ATTN_MHA;

    for (size_t i = 0; i < sizeof foreign_keys / sizeof foreign_keys[0]; i++) {
        const cJSON *v = item(c, foreign_keys[i]);
        if (!switched_on(v))
            continue;
        char val[48];
        plan_json_brief(v, val, sizeof val);
        add_unsupported(a, "%s %s", foreign_keys[i], val);
    }
    return 0;
}

/* ---- pdbx's own arch object (read back from a spec pdbx wrote) -------------------------- */

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

static int read_arch_object(const cJSON *o, const char *org, pdbx_model *m, char *err, size_t errlen)
{
    pdbx_arch *a = &m->arch;
    if (!cJSON_IsObject(o))
        return pdbx_fail(err, errlen, "%s: arch: expected an object (what pdbx plan --format json prints)", org);
    char buf[32];
    int k;
    if (get_str(o, org, "arch.", "model_type", a->model_type, sizeof a->model_type, err, errlen) < 0 ||
        get_str(o, org, "arch.", "nested", a->nested, sizeof a->nested, err, errlen) < 0 ||
        get_str(o, org, "arch.", "activation", a->activation, sizeof a->activation, err, errlen) < 0)
        return -1;
    if (get_str(o, org, "arch.", "mlp", buf, sizeof buf, err, errlen) == 0) {
        if (pick(org, "mlp", buf, mlp_names, 2, &k, err, errlen) != 0)
            return -1;
        a->mlp_gated = k;
    }
    if (get_str(o, org, "arch.", "attention", buf, sizeof buf, err, errlen) == 0) {
        if (pick(org, "attention", buf, attn_names, 3, &k, err, errlen) != 0)
            return -1;
        a->attention = (pdbx_attn_kind)k;
    }
    const cJSON *mla = item(o, "mla");
    if (mla && (get_int(mla, org, "arch.mla.", "kv_lora_rank", 1, 1 << 20, &a->mla.kv_lora_rank, err, errlen) < 0 ||
                get_int(mla, org, "arch.mla.", "q_lora_rank", 0, 1 << 20, &a->mla.q_lora_rank, err, errlen) < 0 ||
                get_int(mla, org, "arch.mla.", "qk_nope_head_dim", 0, 1 << 16, &a->mla.qk_nope_head_dim, err,
                        errlen) < 0 ||
                get_int(mla, org, "arch.mla.", "qk_rope_head_dim", 0, 1 << 16, &a->mla.qk_rope_head_dim, err,
                        errlen) < 0 ||
                get_int(mla, org, "arch.mla.", "v_head_dim", 1, 1 << 16, &a->mla.v_head_dim, err, errlen) < 0))
        return -1;
    const cJSON *sw = item(o, "sliding_window");
    if (sw) {
        if (need_int(sw, org, "arch.sliding_window.", "size", 1, 1 << 30, &a->sliding_window.size, err, errlen) < 0 ||
            need_int(sw, org, "arch.sliding_window.", "count", 1, 1 << 20, &a->sliding_window.count, err, errlen) < 0)
            return -1;
        a->sliding_window.layers = PDBX_SW_ALL;
        if (get_str(sw, org, "arch.sliding_window.", "layers", buf, sizeof buf, err, errlen) == 0) {
            if (pick(org, "sliding_window.layers", buf, sw_names + 1, 3, &k, err, errlen) != 0)
                return -1;
            a->sliding_window.layers = (pdbx_sw_layers)(k + 1);
        }
    }
    const cJSON *b = item(o, "bias");
    if (b && (get_bool(b, org, "arch.bias.", "qkv", &a->bias.qkv, err, errlen) < 0 ||
              get_bool(b, org, "arch.bias.", "attn_out", &a->bias.attn_out, err, errlen) < 0 ||
              get_bool(b, org, "arch.bias.", "mlp", &a->bias.mlp, err, errlen) < 0))
        return -1;
    const cJSON *moe = item(o, "moe");
    if (moe && (need_int(moe, org, "arch.moe.", "experts", 2, 1 << 20, &a->moe.experts, err, errlen) < 0 ||
                need_int(moe, org, "arch.moe.", "top_k", 1, 1 << 20, &a->moe.top_k, err, errlen) < 0 ||
                get_int(moe, org, "arch.moe.", "shared_experts", 0, 1 << 20, &a->moe.shared_experts, err, errlen) < 0 ||
                get_int(moe, org, "arch.moe.", "expert_intermediate", 1, 1 << 22, &a->moe.expert_intermediate, err,
                        errlen) < 0 ||
                get_int(moe, org, "arch.moe.", "shared_expert_intermediate", 0, 1 << 22,
                        &a->moe.shared_expert_intermediate, err, errlen) < 0 ||
                get_int(moe, org, "arch.moe.", "first_dense_layers", 0, 1 << 20, &a->moe.first_dense_layers, err,
                        errlen) < 0))
        return -1;
    if (get_bool(o, org, "arch.", "parallel_residual", &a->parallel_residual, err, errlen) < 0 ||
        get_num(o, org, "arch.", "rotary_fraction", 0, 1, &a->rotary_fraction, err, errlen) < 0 ||
        get_bool(o, org, "arch.", "qk_norm", &a->qk_norm, err, errlen) < 0 ||
        get_int(o, org, "arch.", "cross_attention_layers", 0, 4096, &a->cross_attention_layers, err, errlen) < 0 ||
        get_str(o, org, "arch.", "unsupported", a->unsupported, sizeof a->unsupported, err, errlen) < 0)
        return -1;
    return 0;
}

/* ---- entry points ---------------------------------------------------------------------------- */

void plan_arch_llama(pdbx_arch *a, int heads, int kv_heads)
{
    memset(a, 0, sizeof *a);
    pdbx_strcopy(a->model_type, sizeof a->model_type, "llama");
    pdbx_strcopy(a->activation, sizeof a->activation, "silu");
    a->mlp_gated = 1;
    a->attention = kv_heads < heads ? PDBX_ATTN_GQA : PDBX_ATTN_MHA;
    a->rotary_fraction = 1.0;
}

int plan_arch_read(const cJSON *cfg, const char *origin, pdbx_model *m, char *err, size_t errlen)
{
    const char *org = origin ? origin : "model";
    const cJSON *c = cfg;
    memset(&m->arch, 0, sizeof m->arch);
    char outer[32] = "";
    if (get_str(cfg, org, "", "model_type", outer, sizeof outer, err, errlen) < 0)
        return -1;
    /* A multimodal config (mllama, llava, ...) keeps its language model in text_config. */
    const cJSON *text = item(cfg, "text_config");
    if (text && !item(cfg, "hidden_size") && !item(cfg, "n_embd")) {
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
    if (get_str(c, org, "", "model_type", type, sizeof type, err, errlen) < 0)
        return -1;
    if (c != cfg && !*type)
        pdbx_strcopy(type, sizeof type, outer);
    const family *f = NULL;
    for (size_t i = 0; i < N_FAMILIES && *type; i++)
        if (strcmp(type, families[i].model_type) == 0)
            f = &families[i];
    const cJSON *own = item(cfg, "arch");   /* a spec pdbx wrote: the arch as it printed it */
    if (!f) {
        /* An unknown family is read only with the Llama keys (never guessed from other names). */
        if (*type && !item(c, "hidden_size")) {
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
        if (get_bool(c, org, "", "tie_word_embeddings", &m->tie_embeddings, err, errlen) < 0)
            return -1;
        return read_arch_object(own, org, m, err, errlen);
    }
    if (read_family_arch(c, org, f, m, err, errlen) != 0)
        return -1;
    pdbx_strcopy(m->arch.model_type, sizeof m->arch.model_type, *type ? type : "llama");
    if (!*type && c == cfg)   /* pdbx's minimal form */
        pdbx_strcopy(m->arch.model_type, sizeof m->arch.model_type, "llama");
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
    ok = ok && cJSON_AddStringToObject(o, "mlp", mlp_names[a->mlp_gated ? 1 : 0]);
    ok = ok && cJSON_AddStringToObject(o, "attention", attn_names[a->attention]);
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
             cJSON_AddNumberToObject(x, "first_dense_layers", a->moe.first_dense_layers);
    } else if (ok) {
        ok = cJSON_AddNullToObject(o, "moe") != NULL;
    }
    ok = ok && cJSON_AddBoolToObject(o, "parallel_residual", a->parallel_residual) &&
         cJSON_AddNumberToObject(o, "rotary_fraction", a->rotary_fraction) &&
         cJSON_AddBoolToObject(o, "qk_norm", a->qk_norm) &&
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
        a->nested, a->activation, a->mlp_gated ? "gated" : "plain", attn_names[a->attention]);
    if (a->moe.experts > 1)
        PUT(", MoE %d experts top %d (%d shared)", a->moe.experts, a->moe.top_k, a->moe.shared_experts);
    else
        PUT(", dense");
    if (a->sliding_window.layers != PDBX_SW_NONE)
        PUT(", sliding window %d (%s, %d layers)", a->sliding_window.size, sw_names[a->sliding_window.layers],
            a->sliding_window.count);
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
        snprintf(what, sizeof what, "cross-attention (%d of %d layers attend to the vision model)",
                 a->cross_attention_layers, m->layers);
        measures = "it measures self-attention decoder layers";
    } else if (a->moe.experts > 1) {
        char shared[48] = "";
        if (a->moe.shared_experts)
            snprintf(shared, sizeof shared, ", %d shared", a->moe.shared_experts);
        snprintf(what, sizeof what, "mixture of experts (%d experts, top %d%s)", a->moe.experts, a->moe.top_k, shared);
        measures = "it measures dense layers";
    } else if (a->attention == PDBX_ATTN_MLA) {
        snprintf(what, sizeof what, "multi-head latent attention (MLA, kv_lora_rank %d, qk_rope_head_dim %d)",
                 a->mla.kv_lora_rank, a->mla.qk_rope_head_dim);
        measures = "it measures MHA and GQA attention";
    } else if (!a->mlp_gated || strcmp(a->activation, "silu") != 0) {
        snprintf(what, sizeof what, "a %s MLP with %s", a->mlp_gated ? "gated" : "plain (ungated)", a->activation);
        measures = "it measures gated SiLU MLPs";
    /* biases on the linear layers are measured (pdbx_op_shape.bias: the backends add them and
     * their gradients within the projections' ops), so they are no reason to refuse */
    } else if (a->sliding_window.layers != PDBX_SW_NONE && a->sliding_window.size < seq_len) {
        snprintf(what, sizeof what, "sliding-window attention (window %d on %d of %d layers, shorter than seq_len %d)",
                 a->sliding_window.size, a->sliding_window.count, m->layers, seq_len);
        measures = "it measures full causal attention, which a window of at least seq_len equals";
    } else if (a->parallel_residual) {
        snprintf(what, sizeof what, "a parallel residual (attention and MLP from one input)");
        measures = "it measures sequential Llama layers";
    } else if (a->rotary_fraction < 1.0) {
        snprintf(what, sizeof what, "partial rotary embeddings (%.0f%% of each head)", a->rotary_fraction * 100);
        measures = "it measures RoPE over the whole head";
    } else if (a->qk_norm) {
        snprintf(what, sizeof what, "a per-head q/k RMSNorm (qk_norm)");
        measures = "it measures Llama attention without it";
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
