/* plan_internal.h: helpers shared by the planner's modules (engine/plan*.c) and nothing else.
 * Not part of the contract: tui/ and the engine core use engine/plan/plan.h only.
 *
 * Conventions: every function that can fail writes one line into err (may be NULL) and
 * returns -1; 0 on success. Messages name the field, the value and what is allowed.
 */
#ifndef PDBX_PLAN_INTERNAL_H
#define PDBX_PLAN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/plan/plan.h"
#include "store/util/err.h"
#include "store/util/text.h"

/* Reads a whole file and parses it as JSON. The caller cJSON_Delete()s the result. */
cJSON *plan_json_file(const char *path, char *err, size_t errlen);

/* One member of a struct written as a JSON field: the writers of the model and the GPU are
 * tables of these, so the JSON key of a member is written in one place. */
typedef enum { PLAN_J_STR, PLAN_J_INT, PLAN_J_NUM, PLAN_J_BOOL } plan_json_kind;
typedef struct {
    const char *key;
    plan_json_kind kind;      /* char[] / int / double / int used as a bool */
    size_t offset;            /* offsetof the member */
} plan_json_field;
/* A new object with the n fields of obj; NULL when out of memory. */
cJSON *plan_fields_to_json(const void *obj, const plan_json_field *f, size_t n);

/* A short printable form of a JSON value for messages: "abc" quoted, numbers, [..], {..}. */
void plan_json_brief(const cJSON *v, char *buf, size_t len);

/* Typed readers for one JSON value of field `field` (used in messages).
 * Integers must be integral numbers within [lo, hi]. */
int plan_json_int(const cJSON *v, const char *field, long long lo, long long hi, long long *out,
                  char *err, size_t errlen);
/* Numbers (integral or not) within [lo, hi]: "<field>: 0 is out of range (allowed: 1..64)". */
int plan_json_number(const cJSON *v, const char *field, double lo, double hi, double *out,
                     char *err, size_t errlen);
int plan_json_bool(const cJSON *v, const char *field, int *out, char *err, size_t errlen);
int plan_json_string(const cJSON *v, const char *field, const char **out, char *err, size_t errlen);

/* plan_cfg.c: one optional key of a config.json object o (or of a spec's arch object): NULL /
 * 1 when it is absent or null (the output keeps its value), 0 read, -1 error with one line
 * naming "<org>: <prefix><key>" and what is allowed. plan_cfg_need_int: absent is an error. */
const cJSON *plan_cfg_item(const cJSON *o, const char *key);
int plan_cfg_int(const cJSON *o, const char *org, const char *prefix, const char *key, long long lo,
                 long long hi, int *out, char *err, size_t errlen);
int plan_cfg_need_int(const cJSON *o, const char *org, const char *prefix, const char *key, long long lo,
                      long long hi, int *out, char *err, size_t errlen);
int plan_cfg_bool(const cJSON *o, const char *org, const char *prefix, const char *key, int *out, char *err,
                  size_t errlen);
int plan_cfg_num(const cJSON *o, const char *org, const char *prefix, const char *key, double lo, double hi,
                 double *out, char *err, size_t errlen);
int plan_cfg_str(const cJSON *o, const char *org, const char *prefix, const char *key, char *out, size_t len,
                 char *err, size_t errlen);

/* plan_arch_out.c: reads back the arch object pdbx wrote into a spec (pdbx_arch_to_json's form)
 * into m->arch, whose defaults (plan_arch_llama) the caller set. */
int plan_arch_read_own(const cJSON *o, const char *org, pdbx_model *m, char *err, size_t errlen);

/* Range message: "<field>: <value> is out of range (allowed: lo..hi)". */
int plan_range_fail(const char *field, long long v, long long lo, long long hi, char *err, size_t errlen);

/* Whole-string parsers for CLI values. */
int plan_parse_ll(const char *s, long long *out);      /* 0 ok, -1 not an integer */
int plan_parse_double(const char *s, double *out);     /* 0 ok, -1 not a number */
int plan_parse_bool(const char *s, int *out);          /* true/false, 1/0, yes/no, on/off */
/* A byte size: integer with optional K, M, G, T suffix (powers of 1024), e.g. "64K". */
int plan_parse_bytes(const char *s, double *out);

int plan_is_pow2(long long v);

/* Loads a GPU description from a parsed JSON object (the gpus/<name>.json format).
 * mem_bytes 0 on a host preset ("cpu") becomes the host MemTotal. */
int plan_gpu_from_json(const cJSON *obj, const char *origin, pdbx_gpu *out, char *err, size_t errlen);
/* JSON objects that pdbx_model_from_json / plan_gpu_from_json read back to equal structs. */
cJSON *plan_model_to_json(const pdbx_model *m);
cJSON *plan_gpu_to_json(const pdbx_gpu *g);
/* Host memory in bytes from /proc/meminfo MemTotal, 0 when unknown. */
double plan_host_mem_bytes(void);

/* Resolves a sweep preset name (or a path) to its file. */
int plan_sweep_path(const char *name_or_path, char *path, size_t pathlen, char *err, size_t errlen);

/* Model sanity (positive sizes, heads divide hidden ...), origin used as message prefix. */
int plan_model_check(const pdbx_model *m, const char *origin, char *err, size_t errlen);
/* Built-in copy of configs/models/TinyLlama-1.1B.json and of the cpu GPU preset, for
 * pdbx_spec_defaults() which cannot fail (a unit test checks they equal the files). */
void plan_default_model(pdbx_model *m);
void plan_default_gpu(pdbx_gpu *g);

/* Attention heads held by one TP rank: query heads a/t, kv heads k/t or 1 when t > k
 * (replicated, as Megatron does for GQA). */
int plan_kv_heads_per_rank(const pdbx_model *m, int tp);
/* Rows of the vocab-parallel embedding and lm_head one TP rank holds: ceil(vocab / tp), the
 * last shard padded, so any vocab_size takes any TP (Megatron pads the table to a multiple of
 * make_vocab_size_divisible_by x TP, 128 x TP by default: at most 128 rows more per rank). */
int plan_vocab_per_rank(const pdbx_model *m, int tp);
/* Decoder layers on pipeline stage 0, the largest stage: ceil(layers / pp). */
int plan_layers_per_stage(const pdbx_model *m, int pp);
/* Parameters one rank of pipeline stage 0 holds: its layers' share under TP, the
 * vocab-parallel embedding, and with pp == 1 the final norm and lm_head (plan_memory.c). */
double plan_stage_params(const pdbx_model *m, int tp, int pp);
/* The same with expert parallelism ep (plan_stage_params is ep 1): each MoE layer holds E / ep
 * experts whole (expert tensor parallelism 1). */
double plan_stage_params_ep(const pdbx_model *m, int tp, int pp, int ep);
/* The routed experts' parameters among them (0 for a dense model): what the expert data
 * parallel group (tp x dp / ep ranks) reduces and, with ZeRO-1, shards its optimizer over. */
double plan_stage_expert_params(const pdbx_model *m, int pp, int ep);

/* ---- mixture of experts and MLA (plan_shapes_moe.c, plan_params.c) ------------------------ */
/* The shape helpers of plan_shapes.c: a GEMM [m,k] x [k,n] (2mnk FLOPs, the three matrices'
 * bytes) and an elementwise op over rows x cols with its FLOPs per element and bytes. */
void plan_shape_gemm(pdbx_op_shape *o, int64_t m, int64_t n, int64_t k, double e);
void plan_shape_elementwise(pdbx_op_shape *o, int64_t rows, int64_t cols, double flops_per_elem, double bytes);
/* pdbx_op_shape_ep's MLA ops (attn_q_a .. attn_kv_b) and MoE ops (moe_* and ep_*) at EP ep. */
int plan_shape_moe_mla(const pdbx_spec *spec, int tp, int ep, int mbs, pdbx_op op, pdbx_op_shape *out);
/* 1 for a model with routed experts (arch.moe.experts > 0). */
int plan_is_moe(const pdbx_model *m);
/* Width of the shared experts' MLP (all of them as one: DeepSeek's n_shared x moe width,
 * Qwen-MoE's shared_expert_intermediate_size); 0 without shared experts. */
int plan_moe_shared_width(const pdbx_model *m);
/* The MoE layers of a model: every layer after the first arch.moe.first_dense_layers. */
int plan_moe_layers(const pdbx_model *m);
/* v's head dim: MLA's v_head_dim, else head_dim. */
int plan_v_head_dim(const pdbx_model *m);
/* Parameters of one decoder layer on one rank: its attention (with its norm), its MLP (a
 * dense MLP under TP, or a MoE layer's router, E / ep experts whole and shared experts under
 * TP) and the post-attention norm (plan_params.c). */
double plan_layer_attn_params(const pdbx_model *m, int tp);
double plan_layer_mlp_params(const pdbx_model *m, int tp, int ep, int moe);

/* ---- spec values (plan_values.c) -------------------------------------------------------- */
int plan_read_dtype(const cJSON *v, pdbx_dtype *out, char *err, size_t errlen);
int plan_read_backend(const cJSON *v, pdbx_backend_kind *out, char *err, size_t errlen);
/* moe_routing (plan_moe_layers.c): read ("balanced", {"imbalance": f}, or either as the text
 * of pdbx_spec_set) into the imbalance f (1: balanced); written as JSON and as override text;
 * checked (range; an imbalance needs a MoE model). */
int plan_read_moe_routing(const cJSON *v, double *out, char *err, size_t errlen);
cJSON *plan_moe_routing_to_json(double imbalance);
void plan_moe_routing_text(double imbalance, char *buf, size_t len);
int plan_check_moe_routing(const pdbx_spec *s, char *err, size_t errlen);
int plan_read_recompute(const cJSON *v, pdbx_recompute *out, char *err, size_t errlen);
int plan_read_fp32_math(const cJSON *v, pdbx_fp32_math *out, char *err, size_t errlen);
int plan_read_gemm_api(const cJSON *v, pdbx_gemm_api *out, char *err, size_t errlen);
int plan_read_repetition(const cJSON *v, pdbx_repetition *out, char *err, size_t errlen);
/* "passes": ["fwd"] or ["fwd", "bwd"] (or the string "fwd" / "fwd,bwd"); fwd is required. */
int plan_read_passes(const cJSON *v, uint32_t *out, char *err, size_t errlen);
int plan_read_launcher(const cJSON *v, pdbx_launcher_kind *out, char *err, size_t errlen);
/* tp, pp, dp lists: an integer, a list, "1,2,4" or "A:B" (powers of two); no duplicates. */
int plan_read_int_list(const cJSON *v, const char *field, long long lo, long long hi, int *out, size_t cap,
                       size_t *n, char *err, size_t errlen);
/* One MBS bound: 1..1024 and a power of two ("mbs_max: 100 is not a power of two ..."). */
int plan_check_mbs_bound(const char *field, long long v, char *err, size_t errlen);
int plan_read_mbs(const cJSON *v, pdbx_spec *s, char *err, size_t errlen);
int plan_read_ops(const cJSON *v, pdbx_opmask *out, char *err, size_t errlen);
int plan_read_coll_sizes(const cJSON *v, pdbx_spec *s, char *err, size_t errlen);

/* ---- parallel configurations (plan_configs.c) -------------------------------------------- */
#define PLAN_LIST_CAP 64
#define PLAN_TP_MAX 4096
#define PLAN_PP_MAX 4096
#define PLAN_DP_MAX 65536
#define PLAN_EP_MAX 1024        /* PDBX_MAX_EP (plan_comm.h) */
#define PLAN_GPUS_MAX 1048576   /* gpus of one configuration */

typedef struct {
    pdbx_parallel c[PDBX_MAX_CONFIGS];
    int n;
} plan_config_set;

void plan_configs_apply(pdbx_spec *s, const plan_config_set *cs);
/* tp x pp x dp x ep (TP outermost), or with gpus > 0 tp x pp x ep with DP = gpus/(tp*pp);
 * combinations not fitting gpus_per_node x nodes, or not dividing gpus, are skipped, and with
 * several eps an ep not dividing tp*dp (error if none is left). eps NULL: ep 1. */
int plan_configs_cross(const pdbx_spec *s, const int *tps, size_t ntp, const int *pps, size_t npp, const int *dps,
                       size_t ndp, const int *eps, size_t nep, long long gpus, plan_config_set *out, char *err,
                       size_t errlen);
int plan_configs_from_json(const cJSON *v, plan_config_set *out, char *err, size_t errlen);
/* "1x8x1,2x4x1" or with EP "1x1x4x2" */
int plan_configs_from_text(const char *str, plan_config_set *out, char *err, size_t errlen);
/* pdbx_spec_set of tp, pp, dp, ep or gpus: rebuilds s->configs from the current ones. */
int plan_configs_override(pdbx_spec *s, const char *field, const cJSON *v, char *err, size_t errlen);

/* ---- the inference grids (plan_infer.c) ---- */
/* tokens: a JSON array of integers, or text "A,B,C", "MIN:MAX" (every power of two between),
 * "MIN:MAX:STEP"; "" or [] clears it. Sorted, duplicates dropped. */
int plan_read_tokens(const cJSON *v, pdbx_spec *s, char *err, size_t errlen);
/* kv_cache: a JSON object (or its text) with the lists and max_kv; {} clears it. */
int plan_read_kv_cache(const cJSON *v, pdbx_spec *s, char *err, size_t errlen);
cJSON *plan_kv_cache_to_json(const pdbx_kv_grid *g);
cJSON *plan_tokens_to_json(const pdbx_spec *s);
/* Checks the grids against the whole spec (max_kv, backend). */
int plan_check_infer(const pdbx_spec *s, char *err, size_t errlen);

/* ---- the spec's field table (plan_fields.c) --------------------------------------------- */
typedef enum { PLAN_F_STR, PLAN_F_INT, PLAN_F_NUM, PLAN_F_BOOL, PLAN_F_LIST } plan_field_kind;
typedef struct {
    const char *name;          /* spec-file field; the CLI option spells '_' as '-' */
    plan_field_kind kind;      /* PLAN_F_LIST values keep their string forms when set from text */
    double lo, hi;             /* PLAN_F_INT / PLAN_F_NUM range checked when read (lo > hi: none) */
    const char *value;         /* value placeholder for help: "N", "BOOL", "MIN:MAX" */
    const char *allowed;       /* allowed values in words; NULL: "lo..hi" */
    const char *about;         /* what the field means, a few words */
    const char *def_note;      /* set: the default is derived ("from configs"), not a value */
} plan_field_def;
extern const plan_field_def plan_fields[];
extern const size_t plan_nfields;
const plan_field_def *plan_find_field(const char *name);
/* The int member behind an integer or boolean field (layers -> layers_profiled); NULL else. */
int *plan_int_slot(pdbx_spec *s, const char *name);

#endif
