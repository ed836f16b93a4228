/* plan_arch.h: what a HuggingFace config.json says about a model's architecture, beyond its
 * sizes: the family (model_type), the MLP's activation and shape, the attention kind, sliding
 * windows, biases, tied embeddings and mixture of experts. Pure: no I/O.
 *
 * Contract:
 *  - plan_arch_read() reads a config.json object into the sizes and the arch of a pdbx_model,
 *    with each family's own key names and defaults (transformers' configuration_<family>.py,
 *    cited in plan_arch.c): llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, phi3,
 *    gemma, gemma2, gpt2, gpt_neox, gptj, deepseek_v2, deepseek_v3, mllama (text_config); a
 *    config holding a `text_config` object and no sizes of its own is read from that object
 *    (arch.nested = "text_config"). A config without model_type is pdbx's own minimal form
 *    (a dense Llama). An unknown model_type is read only when it has the Llama keys; its
 *    MoE, sliding-window, bias and activation keys are still read, so nothing is taken silently.
 *    An object holding "arch" (what plan_arch_to_json writes: a spec pdbx wrote) is read back
 *    from that object, so a spec round-trips exactly.
 *  - Architecture-changing keys pdbx does not model (soft-capping, cross-attention layers, a
 *    parallel residual in a family without one, ...) are recorded in arch.unsupported, never
 *    dropped.
 *  - pdbx_arch_refusal() says whether the engine can measure the model as it is: it measures
 *    dense layers with RMSNorm or LayerNorm, a gated SiLU, gated GELU or plain GELU MLP,
 *    MHA/GQA attention with full or partial RoPE or learned positions, sequential or parallel
 *    residual, with or without biases on the linear layers (arch.bias: the projections' ops add
 *    them, pdbx_op_shape.bias), full causal attention (a sliding window at least seq_len long
 *    is the same thing). Anything else is refused with one line naming the feature and the
 *    model; nothing is profiled as a dense Llama silently.
 *  - Errors are one line naming the file, the field, the value and what is allowed.
 */
#ifndef PDBX_PLAN_ARCH_H
#define PDBX_PLAN_ARCH_H

#include <stddef.h>
#include <cjson/cJSON.h>

typedef enum { PDBX_ATTN_MHA = 0, PDBX_ATTN_GQA, PDBX_ATTN_MLA } pdbx_attn_kind;
/* Which layers a sliding window applies to. */
typedef enum { PDBX_SW_NONE = 0, PDBX_SW_ALL, PDBX_SW_ALTERNATING, PDBX_SW_SOME } pdbx_sw_layers;
/* The norms of a layer (and the final norm): RMSNorm (Llama; Gemma's 1 + w form costs the same)
 * or LayerNorm with a bias (gpt2, gpt-neox, gpt-j: torch.nn.LayerNorm). */
typedef enum { PDBX_NORM_RMS = 0, PDBX_NORM_LAYER } pdbx_norm_kind;
/* Where positions enter: rotary embeddings of q and k (the attn_rope op), or a learned absolute
 * table added to the token embeddings (gpt2's wpe: part of the embed op, no attn_rope). */
typedef enum { PDBX_POS_ROPE = 0, PDBX_POS_LEARNED } pdbx_position_kind;

typedef struct {
    char model_type[32];      /* the config's model_type ("" in pdbx's minimal form) */
    char nested[16];          /* "text_config" when read from a multimodal config's text model */
    char activation[24];      /* hidden_act / hidden_activation / activation_function, as named */
    int mlp_plain;            /* act(up) (gpt2, gpt-neox) rather than act(gate) x up (Llama: 0, so
                               * a zeroed arch is a Llama's) */
    pdbx_norm_kind norm;
    pdbx_position_kind position;
    int max_positions;        /* learned positions: the table's rows (gpt2 n_positions; 0 with RoPE),
                               * so the longest seq_len the model takes */
    pdbx_attn_kind attention; /* mha: kv heads = heads; gqa: fewer; mla: DeepSeek latent */
    struct {                  /* attention == MLA (DeepSeek-V2/V3); q_lora_rank 0: no q low rank */
        int kv_lora_rank, q_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    } mla;
    struct {
        int size;             /* tokens a query sees (0: no window) */
        pdbx_sw_layers layers;
        int count;            /* layers with the window */
    } sliding_window;
    struct { int qkv, attn_out, mlp; } bias;   /* 0/1: linear layers with a bias */
    struct {                  /* experts == 0: dense */
        int experts, top_k, shared_experts;
        int expert_intermediate;        /* each routed expert's MLP width */
        int shared_expert_intermediate; /* Qwen2-MoE's shared expert width (0: as routed) */
        int first_dense_layers;         /* DeepSeek first_k_dense_replace */
        /* the router (cpu_kernels_moe.h's pdbx_moe_router_cfg): sigmoid scores (DeepSeek-V3
         * scoring_func "sigmoid") or softmax (every other family); the top-k weights divided by
         * their sum (norm_topk_prob; Mixtral always); times routed_scaling_factor (1 else) */
        int sigmoid, norm_topk;
        double routed_scale;
    } moe;
    int parallel_residual;    /* attention and MLP from the same input (gpt-neox, gpt-j) */
    int shared_norm;          /* with it, one norm feeds both (gpt-j's ln_1: no post_attn_norm);
                               * gpt-neox has two */
    double rotary_fraction;   /* part of each head rotated (gpt-neox rotary_pct); 1 = all */
    int qk_norm;              /* per-head RMSNorm of q and k (qwen3) */
    double attn_softcap;      /* attn_logit_softcapping: scores -> cap tanh(scores / cap) (gemma-2:
                               * 50); 0: none */
    double final_softcap;     /* final_logit_softcapping: the same on lm_head's logits (gemma-2:
                               * 30); 0: none */
    int cross_attention_layers;   /* mllama's text model: layers attending to the image */
    char unsupported[192];    /* other architecture-changing keys found ("" when none) */
} pdbx_arch;

struct pdbx_model_s;

/* Reads cfg (a config.json object) into m's sizes, tie_embeddings and arch. origin names the
 * file in messages. 0, or -1 with one line in err. */
int plan_arch_read(const cJSON *cfg, const char *origin, struct pdbx_model_s *m, char *err, size_t errlen);

/* The arch of the built-in default (a dense Llama: silu, gated, gqa when kv_heads < heads). */
void plan_arch_llama(pdbx_arch *a, int heads, int kv_heads);

/* model.arch as pdbx plan --format json prints it (docs/models.md); NULL when out of memory. */
cJSON *pdbx_arch_to_json(const struct pdbx_model_s *m);

/* One line for a text summary: "mixtral: silu gated MLP, gqa, MoE 8 experts top 2, ...". */
void pdbx_arch_summary(const struct pdbx_model_s *m, char *buf, size_t len);

/* 1 with the reason in buf (one line, naming the feature and the model) when the engine does
 * not measure the model at seq_len; 0 when it does. */
int pdbx_arch_refusal(const struct pdbx_model_s *m, int seq_len, char *buf, size_t len);

#endif
