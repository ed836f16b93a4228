/* plan.h: the sweep planner. Pure C: no MPI, no curses, no clocks. Used by pdbx-engine and
 * by tui/ (CLI `pdbx plan`, the new-sweep form), which must not include engine internals.
 *
 * Contract:
 *  - Presets live under the configs directory (pdbx_configs_dir()): models/<name>.json
 *    (HuggingFace config.json fields), gpus/<name>.json, sweeps/<name>.json. Anywhere a preset
 *    name is accepted, a path to a file is accepted too (it contains '/' or ends in .json).
 *  - Every error is one line naming the field, the value and what is allowed, e.g.
 *      "tp: 3 does not divide num_attention_heads 64 (allowed: 1, 2, 4, 8, 16, 32, 64)"
 *      "mbs_max: 100 is not a power of two (allowed: 1, 2, 4, ..., 1024)"
 *      "unknown field 'seqlen' (did you mean 'seq_len'?)"
 *    written into err (which may be NULL); functions return 0 on success, -1 on error.
 *  - The spec JSON schema is documented in docs/spec.md; pdbx_spec_to_json() writes a spec
 *    that pdbx_spec_from_json() reads back to an equal spec (the engine re-validates it).
 */
#ifndef PDBX_PLAN_H
#define PDBX_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "store/ops.h"
#include "engine/plan/plan_arch.h"
#include "engine/plan/plan_layers.h"   /* which profiled layer runs which ops */
#include "engine/plan/plan_window.h"   /* sliding-window attention: FLOPs, pairs, per-layer options */

#define PDBX_MAX_CONFIGS 64
#define PDBX_MAX_COLL_SIZES 40
#define PDBX_MAX_TOKENS 64         /* entries of the spec's tokens grid */
#define PDBX_MAX_KV_AXIS 32        /* entries of each list of the kv_cache grid */
#define PDBX_PATH_MAX 1024

typedef struct pdbx_model_s {
    char name[64];            /* preset name or the file's model name */
    char tag[32];             /* FASOP model type (llama70b, llama1b, ...), or the name */
    char source[PDBX_PATH_MAX];
    int hidden;               /* hidden_size */
    int intermediate;         /* intermediate_size */
    int heads;                /* num_attention_heads */
    int kv_heads;             /* num_key_value_heads (default: heads) */
    int head_dim;             /* head_dim (default: hidden / heads) */
    int layers;               /* num_hidden_layers */
    int vocab;                /* vocab_size */
    int tie_embeddings;       /* tie_word_embeddings (each family's default: plan_arch.c) */
    pdbx_arch arch;           /* what else the config says (plan_arch.h); refused when the
                               * engine does not measure it (pdbx_arch_refusal) */
} pdbx_model;

typedef struct {
    char name[32];            /* A40, A100-80G, H100-SXM, H100-PCIe, H200, cpu */
    char tag[32];             /* FASOP gpu tag used in NPZ names (A40, A100, H100, ...) */
    double mem_bytes;         /* device memory (cpu: host MemTotal unless overridden) */
    double bw_gbs;            /* memory bandwidth, GB/s */
    double peak_tflops_bf16, peak_tflops_fp16, peak_tflops_fp32;   /* dense */
} pdbx_gpu;

typedef enum { PDBX_DTYPE_BF16 = 0, PDBX_DTYPE_FP16, PDBX_DTYPE_FP32 } pdbx_dtype;
typedef enum { PDBX_BACKEND_AUTO = 0, PDBX_BACKEND_CPU, PDBX_BACKEND_CUDA } pdbx_backend_kind;
/* Activation recomputation assumed by the training memory: none, full (Megatron's
 * --recompute-granularity full: only each layer's input is kept, a layer is recomputed in its
 * backward) or selective (--recompute-granularity selective: the attention core's scores are
 * not kept, the core's forward is recomputed in its backward). */
typedef enum { PDBX_RECOMPUTE_NONE = 0, PDBX_RECOMPUTE_FULL, PDBX_RECOMPUTE_SELECTIVE } pdbx_recompute;
const char *pdbx_recompute_name(pdbx_recompute r);    /* "none", "full", "selective" */
/* How many times an op is executed per point: adaptive repeats each op until the 95% CI of its
 * mean is within target_rel_ci (bounded by min_reps, max_reps, max_seconds_per_op); fixed runs
 * warmup + steps whole steps (docs/spec.md, "Repetition"). */
typedef enum { PDBX_REP_ADAPTIVE = 0, PDBX_REP_FIXED } pdbx_repetition;
const char *pdbx_repetition_name(pdbx_repetition r);  /* "adaptive", "fixed" */
/* How the sweep's ranks are started (engine/launch/launch_argv.h): auto = srun inside a Slurm
 * allocation (SLURM_JOB_ID), mpirun when hosts are given, else local. */
typedef enum { PDBX_LAUNCHER_AUTO = 0, PDBX_LAUNCHER_LOCAL, PDBX_LAUNCHER_MPIRUN,
               PDBX_LAUNCHER_SRUN } pdbx_launcher_kind;
const char *pdbx_launcher_name(pdbx_launcher_kind k);  /* "auto", "local", "mpirun", "srun" */
/* 0 with *out, or -1 with one line naming the value and what is allowed. */
int pdbx_launcher_parse(const char *text, pdbx_launcher_kind *out, char *err, size_t errlen);

/* How an fp32 GEMM multiplies (docs/cuda.md, "Math modes and GEMM API"): ieee = fp32 FMA (PyTorch's
 * default, allow_tf32 off); tf32 = TF32 tensor cores (cuda only: the cpu backend refuses it). */
typedef enum { PDBX_FP32_MATH_IEEE = 0, PDBX_FP32_MATH_TF32 } pdbx_fp32_math;
const char *pdbx_fp32_math_name(pdbx_fp32_math m);    /* "ieee", "tf32" */
/* The GEMM library of the cuda backend: cuBLASLt (cublasLtMatmul) or cuBLAS (cublasGemmEx, what
 * PyTorch's bias-free F.linear calls unless TORCH_BLAS_PREFER_CUBLASLT is set). The cpu backend
 * runs OpenBLAS and refuses cublas. */
typedef enum { PDBX_GEMM_API_CUBLASLT = 0, PDBX_GEMM_API_CUBLAS } pdbx_gemm_api;
const char *pdbx_gemm_api_name(pdbx_gemm_api g);      /* "cublaslt", "cublas" */

const char *pdbx_dtype_name(pdbx_dtype d);            /* "bf16", "fp16", "fp32" */
int pdbx_dtype_bytes(pdbx_dtype d);
const char *pdbx_backend_name(pdbx_backend_kind b);   /* "auto", "cpu", "cuda" */

/* One parallel configuration: tensor, pipeline and data parallel degrees (tp x pp x dp GPUs),
 * and the expert-parallel degree ep of a mixture-of-experts model (default 1). EP adds no GPUs:
 * Megatron-LM's expert layout with expert_tensor_parallel_size 1 and
 * expert_model_parallel_size ep takes the EP ranks from a pipeline stage's tp x dp ranks
 * (its expert RankGenerator, order tp-ep-dp-pp with etp 1: an EP group is ep consecutive ranks
 * of a stage, the expert data parallel degree tp x dp / ep), so ep divides tp x dp. With TP > 1
 * an EP group spans the TP ranks first, whose tokens differ under sequence parallelism. ep 0
 * (a struct built before ep existed, zeroed) reads as 1: pdbx_par_ep. */
typedef struct { int tp, pp, dp, ep; } pdbx_parallel;
static inline int pdbx_par_ep(const pdbx_parallel *p)
{
    return p && p->ep > 1 ? p->ep : 1;
}

/* The attention grid of the inference phase (spec `kv_cache`, docs/spec.md "Inference
 * grids"): prefill rows (batch 1, a chunk of C query tokens attending causally to a cached
 * prefix of P keys and to themselves: P + C keys) for every C of prefill_chunks and P of
 * prefill_kv with C + P <= max_kv; decode rows (batch B, one query token per sequence
 * attending to K cached keys) for every B of decode_batch and K of decode_kv with K <= max_kv.
 * Each list is ascending and distinct; max_kv 0 stands for seq_len. Empty: no rows. */
typedef struct {
    int prefill_chunks[PDBX_MAX_KV_AXIS], nprefill_chunks;
    int prefill_kv[PDBX_MAX_KV_AXIS], nprefill_kv;
    int decode_batch[PDBX_MAX_KV_AXIS], ndecode_batch;
    int decode_kv[PDBX_MAX_KV_AXIS], ndecode_kv;
    int max_kv;
} pdbx_kv_grid;

/* One row of the kv_cache grid: chunk > 0 a prefill row (batch 1, kv = the cached prefix P),
 * chunk 0 a decode row (batch sequences, kv = K cached keys each). */
typedef struct { int batch, chunk, kv; } pdbx_kv_row;

typedef struct {
    char name[64];            /* sweep preset name, or "custom" */
    pdbx_model model;
    pdbx_gpu gpu;
    int layers_profiled;      /* layers measured (FASOP: 8 of 80) */
    int seq_len;
    pdbx_dtype dtype;
    pdbx_backend_kind backend;
    int gpus_per_node, nodes;
    pdbx_launcher_kind launcher;   /* how the ranks are started (auto: see above) */
    pdbx_parallel configs[PDBX_MAX_CONFIGS];   /* in the order given (FASOP's order) */
    int nconfigs;
    int mbs_min, mbs_max;     /* powers of two, min <= max */
    pdbx_repetition repetition;
    int warmup, steps;        /* fixed: discarded and measured steps per point; adaptive: the
                               * step spans (layer, total) take `steps` samples after at most
                               * `warmup` warm-up steps */
    double target_rel_ci;     /* adaptive: 95% CI half-width / mean to reach per cell */
    int min_reps, max_reps;   /* adaptive: bounds on one cell's samples */
    double max_seconds_per_op;/* adaptive: bound on one cell's sampling time */
    uint32_t passes;          /* PDBX_PASS_BIT mask: fwd, or fwd and bwd */
    pdbx_opmask ops;          /* PDBX_OP_BIT mask of ops to measure */
    int collectives;          /* run the collectives sweep */
    double coll_sizes[PDBX_MAX_COLL_SIZES];    /* bytes, powers of two, ascending */
    int ncoll_sizes;
    int predict_oom;          /* stop a config's MBS sweep at the first predicted OOM */
    double bytes_per_param;   /* weights+grads+Adam states, mixed precision (default 16) */
    int zero1;                /* ZeRO-1: optimizer states divided by DP */
    int flash_attention;      /* drop the 5as/h term from activation memory */
    pdbx_recompute recompute; /* training memory keeps only layer inputs (full) or all (none) */
    /* moe_routing: the routing the MoE layers are measured under (plan_moe.h's imbalance f):
     * 1 "balanced", else {"imbalance": f}, 1 < f <= PDBX_MOE_MAX_IMBALANCE */
    double moe_imbalance;
    double timeout_s;         /* a collective not done within this fails the run */
    int flush_l2;             /* cuda: flush L2 between repetitions */
    /* Q/K/V as one fused QKV GEMM and gate/up as one fused fc1 GEMM (Megatron's shapes); each
     * fused time is attributed to its ops by FLOP share (pdbx_fused_share) */
    int fused_projections;
    pdbx_fp32_math fp32_math; /* fp32 runs: IEEE fp32 or TF32 tensor cores (cuda) */
    pdbx_gemm_api gemm_api;   /* cuda: cuBLASLt or cuBLAS (cublasGemmEx) */
    /* The inference phase (docs/spec.md "Inference grids"): per TP degree of the configs, the
     * per-token ops forward at each token count of `tokens` (ascending, distinct; 0 entries:
     * none), and attention with a KV cache at each row of kv_cache. */
    int tokens[PDBX_MAX_TOKENS];
    int ntokens;
    pdbx_kv_grid kv_cache;
} pdbx_spec;

/* The rows of spec's kv_cache grid, prefill rows first (chunk, then prefix ascending), then
 * decode rows (batch, then kv ascending): writes at most cap and returns how many there are. */
size_t pdbx_kv_rows(const pdbx_spec *spec, pdbx_kv_row *out, size_t cap);
/* The kv_cache grid's max_kv as it applies (0 -> seq_len). */
int pdbx_kv_max(const pdbx_spec *spec);
/* The ops of a tokens row: the spec's ops forward, without attn_core and the TP all-reduces
 * (PDBX_OP_BIT mask). */
pdbx_opmask pdbx_tokens_ops(const pdbx_spec *spec);

/* Directory holding models/, gpus/, sweeps/: $PDBX_CONFIGS, else <exe dir>/../../configs
 * (build tree), else <exe dir>/../share/pdbx/configs. */
const char *pdbx_configs_dir(void);

/* Names of the presets of one kind ("models", "gpus", "sweeps"), sorted; returns count. */
size_t pdbx_preset_names(const char *kind, char (*out)[64], size_t cap);

int pdbx_model_load(const char *name_or_path, pdbx_model *out, char *err, size_t errlen);
int pdbx_model_from_json(const cJSON *hf_config, const char *origin, pdbx_model *out,
                         char *err, size_t errlen);
int pdbx_gpu_load(const char *name_or_path, pdbx_gpu *out, char *err, size_t errlen);

/* Defaults for every field (quick-preset-like values on the cpu). */
void pdbx_spec_defaults(pdbx_spec *spec);
/* Loads a sweep preset name or a spec file; fields not in the file keep their defaults. */
int pdbx_spec_load(const char *name_or_path, pdbx_spec *spec, char *err, size_t errlen);
int pdbx_spec_from_json(const cJSON *obj, const char *origin, pdbx_spec *spec,
                        char *err, size_t errlen);
/* Applies one override, by spec-file field name with a string value (as CLI flags do):
 * e.g. ("seq_len","2048"), ("tp","1,2,4"), ("mbs","1:64"), ("model","llama1b"). */
int pdbx_spec_set(pdbx_spec *spec, const char *field, const char *value, char *err, size_t errlen);
/* Names of the fields pdbx_spec_set accepts (NULL-terminated), for --help and did-you-mean. */
const char *const *pdbx_spec_field_names(void);
/* What the help, the completion and the man page say about field i (pdbx_spec_field_names()
 * order): -1 past the last field. One home: the planner's field table (plan_fields.c), whose
 * ranges the reader checks, and pdbx_spec_defaults() for the default. */
typedef struct {
    const char *name;          /* "seq_len" */
    const char *value;         /* value placeholder: "N", "BOOL", "MIN:MAX", "NAME|PATH" */
    const char *about;         /* what it means: "sequence length" */
    char allowed[160];         /* "1..131072", "bf16, fp16, fp32" */
    char def[160];             /* the default in override syntax ("128", "1:8"), or how it is
                                * derived ("from configs") */
} pdbx_spec_field_doc;
int pdbx_spec_field_doc_get(size_t i, pdbx_spec_field_doc *out);
/* Field `field` of s as pdbx_spec_set takes it ("1x1x2,2x1x1", "4K,64K,1M", "true"): setting
 * that text gives the same value back. "" for a field derived from others (tp, gpus, mbs_min);
 * -1 for an unknown field. */
int pdbx_spec_field_text(const pdbx_spec *s, const char *field, char *buf, size_t len);
int pdbx_spec_validate(const pdbx_spec *spec, char *err, size_t errlen);
/* Whether a backend can run the math mode and GEMM API asked for: 0, or -1 with one line naming
 * the field, the value and what the backend allows (cpu: ieee and the default gemm_api only).
 * pdbx_spec_validate checks a named backend; pdbx-engine checks auto once resolved. */
int pdbx_backend_modes_check(pdbx_backend_kind backend, pdbx_fp32_math fp32_math, pdbx_gemm_api gemm_api,
                             char *err, size_t errlen);
/* Whether a backend runs the model's layers: 0, or -1 with one line naming the backend, the
 * model's feature and what the backend allows. cpu and cuda run every family the arch check
 * accepts (RMSNorm or LayerNorm, gated SiLU, gated or plain GELU MLPs, RoPE whole or partial
 * or learned positions, sequential or parallel residuals, qwen3's q/k norm, MLA, mixtures of
 * experts); cuda refuses an MLP it has no kernel for (an activation other than SiLU and GELU,
 * a plain SiLU MLP), which the arch check refuses first, and a MoE router past its kernels
 * (top_k > 16, experts > 12288). Checked as pdbx_backend_modes_check is: a named backend by
 * pdbx_spec_validate, auto by pdbx-engine once resolved. */
int pdbx_backend_model_check(pdbx_backend_kind backend, const pdbx_model *m, char *err, size_t errlen);
cJSON *pdbx_spec_to_json(const pdbx_spec *spec);

/* ---- memory model (design.md section 4) --------------------------------------------- */
typedef struct {
    double params_per_rank;       /* parameters held by one rank: layers/PP of the model / TP */
    double weights, grads, optimizer;   /* bytes */
    double activations;           /* bytes of the in-flight micro-batches on stage 0 */
    double total;
} pdbx_memory;
void pdbx_memory_predict(const pdbx_spec *spec, const pdbx_parallel *par, int mbs, pdbx_memory *out);

/* ---- profile memory: what pdbx-engine itself allocates for a point on one rank ---------
 * (docs/spec.md, "Memory model"). The one sizing rule of a point's buffers: the cpu backend
 * allocates exactly the buffers listed here (cpu_memory.c walks this list), the engine sizes
 * the collective buffer from it, and its total decides the OOM stop of a config's MBS sweep.
 * The cuda rule mirrors engine/backends/cuda/cuda_backend.c, which sizes its own buffers. */
typedef enum {
    PDBX_MEM_WEIGHTS = 0,         /* weights of the profiled layers, embedding, lm_head, norms */
    PDBX_MEM_ACTIVATIONS,         /* one set of activation buffers, reused by every layer */
    PDBX_MEM_WORKSPACE,           /* attention scratch, GEMM workspace */
    PDBX_MEM_COMM,                /* the buffer the point's collectives run on */
    PDBX_MEM_GRADS,               /* passes with bwd: activation and weight gradients */
    PDBX_MEM_KINDS
} pdbx_mem_kind;

/* What a listed buffer holds (the cpu backend maps each role to its pointer). */
typedef enum {
    PDBX_BUF_TOKEN_IDS = 0, PDBX_BUF_EMBED_OUT, PDBX_BUF_HIDDEN, PDBX_BUF_NORM_OUT, PDBX_BUF_Q,
    PDBX_BUF_K, PDBX_BUF_V, PDBX_BUF_CONTEXT, PDBX_BUF_ATTN_OUT, PDBX_BUF_POST_NORM_OUT,
    PDBX_BUF_GATE, PDBX_BUF_UP, PDBX_BUF_ACT, PDBX_BUF_SCORES, PDBX_BUF_FINAL_NORM_OUT,
    PDBX_BUF_LOGITS,
    PDBX_BUF_NORM_OUT_LP, PDBX_BUF_CONTEXT_LP, PDBX_BUF_POST_NORM_OUT_LP, PDBX_BUF_ACT_LP,
    PDBX_BUF_ATTN_SCRATCH, PDBX_BUF_GEMM_WORKSPACE,
    PDBX_BUF_EMBED_TABLE, PDBX_BUF_NORM_W, PDBX_BUF_LM_HEAD_W,
    PDBX_BUF_L_IN_NORM, PDBX_BUF_L_Q, PDBX_BUF_L_K, PDBX_BUF_L_V, PDBX_BUF_L_O,
    PDBX_BUF_L_POST_NORM, PDBX_BUF_L_GATE, PDBX_BUF_L_UP, PDBX_BUF_L_DOWN,
    /* passes with bwd only: the gradient of each activation (cpu: fp32, with copies in the
     * GEMM dtype of those a bf16 GEMM reads), the weights' gradients (fp32, Megatron's
     * main_grad; one set shared by the layers), the backward's own workspaces */
    PDBX_BUF_GRAD_HIDDEN, PDBX_BUF_GRAD_NORM_OUT, PDBX_BUF_GRAD_Q, PDBX_BUF_GRAD_K,
    PDBX_BUF_GRAD_V, PDBX_BUF_GRAD_SCORES, PDBX_BUF_GRAD_CONTEXT, PDBX_BUF_GRAD_ATTN_OUT,
    PDBX_BUF_GRAD_POST_NORM_OUT, PDBX_BUF_GRAD_GATE, PDBX_BUF_GRAD_UP, PDBX_BUF_GRAD_ACT,
    PDBX_BUF_GRAD_FINAL_NORM_OUT, PDBX_BUF_GRAD_LOGITS,
    PDBX_BUF_GRAD_HIDDEN_LP, PDBX_BUF_GRAD_Q_LP, PDBX_BUF_GRAD_K_LP, PDBX_BUF_GRAD_V_LP,
    PDBX_BUF_GRAD_ATTN_OUT_LP, PDBX_BUF_GRAD_GATE_LP, PDBX_BUF_GRAD_UP_LP,
    PDBX_BUF_GRAD_LOGITS_LP,
    PDBX_BUF_ATTN_BWD_SCRATCH, PDBX_BUF_NORM_RSTD,
    PDBX_BUF_GRAD_EMBED_TABLE, PDBX_BUF_GRAD_NORM_W, PDBX_BUF_GRAD_LM_HEAD_W, PDBX_BUF_GRAD_W_Q,
    PDBX_BUF_GRAD_W_KV, PDBX_BUF_GRAD_W_O, PDBX_BUF_GRAD_W_GATE_UP, PDBX_BUF_GRAD_W_DOWN,
    /* fused_projections: the fused GEMMs' weights (per layer, [h, n_fused] in the backend's
     * weight layout), outputs, and with bwd their output gradients (GEMM dtype) and fp32
     * weight gradients; the separate q/k/v/gate/up weights and weight gradients are then not
     * allocated */
    PDBX_BUF_QKV_FUSED, PDBX_BUF_GATE_UP_FUSED, PDBX_BUF_L_QKV_FUSED, PDBX_BUF_L_GATE_UP_FUSED,
    PDBX_BUF_GRAD_QKV_FUSED, PDBX_BUF_GRAD_GATE_UP_FUSED, PDBX_BUF_GRAD_W_QKV_FUSED,
    PDBX_BUF_GRAD_W_GATE_UP_FUSED,
    /* biases (the model's arch.bias; pdbx_op_shape.bias): per layer one vector of n per
     * biased projection (cpu: fp32, as its GEMM outputs; cuda: the dtype, in the L2 rotation's
     * copies as the weights), fused QKV / fc1 ones in place of their groups'; with bwd their
     * fp32 gradients (one set shared by the layers, as the weights'; k and v, gate and up
     * share one) */
    PDBX_BUF_L_Q_BIAS, PDBX_BUF_L_K_BIAS, PDBX_BUF_L_V_BIAS, PDBX_BUF_L_O_BIAS,
    PDBX_BUF_L_GATE_BIAS, PDBX_BUF_L_UP_BIAS, PDBX_BUF_L_DOWN_BIAS, PDBX_BUF_L_QKV_FUSED_BIAS,
    PDBX_BUF_L_GATE_UP_FUSED_BIAS,
    PDBX_BUF_GRAD_B_Q, PDBX_BUF_GRAD_B_KV, PDBX_BUF_GRAD_B_O, PDBX_BUF_GRAD_B_GATE_UP,
    PDBX_BUF_GRAD_B_DOWN, PDBX_BUF_GRAD_B_QKV_FUSED, PDBX_BUF_GRAD_B_GATE_UP_FUSED,
    /* attn_rope prepared: the fp32 cos and sin tables of the point's positions, [seq_len,
     * head_dim/2] each, in one buffer (cos, then sin); its backward reads the same table */
    PDBX_BUF_ROPE_TABLE,
    /* cuda, flash_attention with bwd: the fused forward's log-sum-exp and the fused backward's
     * delta (fp32 [mbs, heads, seq] each) and, for bf16/fp16, its fp32 dQ accumulator */
    PDBX_BUF_ATTN_LSE, PDBX_BUF_ATTN_DELTA, PDBX_BUF_GRAD_Q_ACC,
    /* LayerNorm (arch.norm layernorm): the bias shared by the norms as their weight is, each
     * row's mean and rstd from the forward (fp32 [tokens] each; the backward reads them), their
     * gradients; learned positions (arch.position learned): the position table's seq_len rows
     * and its gradient */
    PDBX_BUF_NORM_B, PDBX_BUF_NORM_MEAN, PDBX_BUF_NORM_STATS_RSTD, PDBX_BUF_GRAD_NORM_B,
    PDBX_BUF_POS_TABLE, PDBX_BUF_GRAD_POS_TABLE,
    /* qk_norm (attn_qk_norm): q's and k's per-head RMSNorm weights [2, head_dim] and their
     * gradient */
    PDBX_BUF_QK_NORM_W, PDBX_BUF_GRAD_QK_NORM_W,
    /* MLA (attn_q_a .. attn_kv_b; cpu, fp32): q_a's output [T, r_q] and its norm's, kv_a's
     * [T, r_kv + rope] (the latent, then k's shared rope head) and its latent's norm [T, r_kv],
     * kv_b's [T, a/TP * (nope + v)]; the q_a and kv_a norms' weights [r_q + r_kv] (one pair
     * shared by the layers, as norm_w); per layer the weights of q_a [h, r_q], q_b
     * [r_q, a/TP * (nope + rope)], kv_a [h, r_kv + rope] and kv_b [r_kv, a/TP * (nope + v)];
     * with bwd the gradients of each (activations fp32, weights one fp32 set) */
    PDBX_BUF_MLA_Q_A, PDBX_BUF_MLA_Q_A_NORM, PDBX_BUF_MLA_KV_A, PDBX_BUF_MLA_KV_NORM,
    PDBX_BUF_MLA_KV_B, PDBX_BUF_MLA_NORM_W, PDBX_BUF_L_Q_A, PDBX_BUF_L_Q_B, PDBX_BUF_L_KV_A,
    PDBX_BUF_L_KV_B, PDBX_BUF_GRAD_MLA_Q_A, PDBX_BUF_GRAD_MLA_Q_A_NORM, PDBX_BUF_GRAD_MLA_KV_A,
    PDBX_BUF_GRAD_MLA_KV_NORM, PDBX_BUF_GRAD_MLA_KV_B, PDBX_BUF_GRAD_MLA_NORM_W,
    PDBX_BUF_GRAD_W_Q_A, PDBX_BUF_GRAD_W_Q_B, PDBX_BUF_GRAD_W_KV_A, PDBX_BUF_GRAD_W_KV_B,
    /* a MoE layer (cpu, fp32; R the layer's rows on the rank, X = R top_k the routed copies,
     * E experts, I_e an expert's width, I_s the shared experts' width / TP): the router's
     * logits [R, E], its top-k ids (int32) and weights [R, k]; the measured assignment (int32
     * [R, k], plan_moe.h), the permute's offsets (int64 [E + 1]) and positions (int64 [X]); the
     * permuted rows [X, h], the experts' gate, up, act [X, I_e] and output [X, h]; the shared
     * experts' gate, up, act [T, I_s]; per MoE layer the router [h, E], the experts' gate, up
     * [E, h, I_e] and down [E, I_e, h], the shared gate, up [h, I_s] and down [I_s, h]; with bwd
     * the gradients of these activations and one set of weight gradients (gate/up sharing) */
    PDBX_BUF_MOE_LOGITS, PDBX_BUF_MOE_TOPK_IDX, PDBX_BUF_MOE_TOPK_W, PDBX_BUF_MOE_ASSIGN,
    PDBX_BUF_MOE_OFFSETS, PDBX_BUF_MOE_POS, PDBX_BUF_MOE_ROWS, PDBX_BUF_MOE_GATE, PDBX_BUF_MOE_UP,
    PDBX_BUF_MOE_ACT, PDBX_BUF_MOE_OUT, PDBX_BUF_MOE_SH_GATE, PDBX_BUF_MOE_SH_UP, PDBX_BUF_MOE_SH_ACT,
    PDBX_BUF_L_ROUTER, PDBX_BUF_L_EXPERT_GATE, PDBX_BUF_L_EXPERT_UP, PDBX_BUF_L_EXPERT_DOWN,
    PDBX_BUF_L_SHARED_GATE, PDBX_BUF_L_SHARED_UP, PDBX_BUF_L_SHARED_DOWN,
    PDBX_BUF_GRAD_MOE_LOGITS, PDBX_BUF_GRAD_MOE_TOPK_W, PDBX_BUF_GRAD_MOE_ROWS, PDBX_BUF_GRAD_MOE_GATE,
    PDBX_BUF_GRAD_MOE_UP, PDBX_BUF_GRAD_MOE_ACT, PDBX_BUF_GRAD_MOE_OUT, PDBX_BUF_GRAD_MOE_SH_GATE,
    PDBX_BUF_GRAD_MOE_SH_UP, PDBX_BUF_GRAD_MOE_SH_ACT, PDBX_BUF_GRAD_W_ROUTER,
    PDBX_BUF_GRAD_W_EXPERT_GATE_UP, PDBX_BUF_GRAD_W_EXPERT_DOWN, PDBX_BUF_GRAD_W_SHARED_GATE_UP,
    PDBX_BUF_GRAD_W_SHARED_DOWN,
    /* final-logit soft-capping (arch.final_softcap > 0) with bwd: lm_head's d logits through
     * the cap's derivative, d logits (1 - (logits / cap)^2), in the GEMM dtype: what its
     * dgrad/wgrad read. A buffer apart from d logits, which the backends fill once and reuse
     * every step (a product in place would shrink it step after step); the capped logits the
     * derivative reads are the forward's logits buffer */
    PDBX_BUF_GRAD_LOGITS_CAPPED,
    /* the loss op (cpu; passes with bwd): 3 fp32 per token, its forward's row statistics for
     * its backward (cpu_kernels_loss.h) */
    PDBX_BUF_LOSS_STATS,
    /* the optimizer op (cpu; passes with bwd): flat fp32 arrays of its n parameters (plan.h,
     * pdbx_optimizer_params), Megatron's mixed-precision layout: master weights, Adam's m and v
     * (weights: kept across a config's MBS sweep as the model's are), the main gradient
     * (grads), and in a 16-bit run the model's 16-bit copy the step writes (weights) */
    PDBX_BUF_OPT_MASTER, PDBX_BUF_OPT_M, PDBX_BUF_OPT_V, PDBX_BUF_OPT_MODEL_LP, PDBX_BUF_OPT_GRAD,
    /* the gradient buffer the optimizer op zeroes for the next iteration (grads; n fp32) */
    PDBX_BUF_OPT_GRAD_ZEROED,
    PDBX_BUF_COMM,
    PDBX_BUF_ROLES
} pdbx_buf_role;
const char *pdbx_buf_role_name(pdbx_buf_role r);   /* "logits", "layer q_proj" ... */

typedef struct {
    pdbx_buf_role role;
    pdbx_mem_kind kind;
    double bytes;                 /* one allocation, as allocated (cpu: whole 64-byte lines) */
    int count;                    /* allocations of that size: layers for per-layer weights */
} pdbx_profile_buf;

/* One point on one rank, as the engine hands it to a backend (backend.h's pdbx_point_shapes
 * plus what the backend knows of itself). */
typedef struct {
    pdbx_model model;
    int tp, pp, dp, mbs, seq_len;
    int ep;                       /* expert-parallel degree (0 reads as 1): E / ep experts and the
                                   * measured rank's received rows (plan_moe.h), the all-to-all
                                   * message in the comm buffer */
    double moe_imbalance;         /* the spec's moe_routing (1: balanced) */
    int layers;                   /* layers instantiated (layers_profiled) */
    pdbx_opmask ops;              /* PDBX_OP_BIT mask prepared */
    uint32_t passes;              /* PDBX_PASS_BIT mask: bwd adds the gradient buffers */
    pdbx_dtype dtype;
    pdbx_backend_kind backend;    /* PDBX_BACKEND_CPU or PDBX_BACKEND_CUDA (auto: see below) */
    int threads;                  /* cpu: BLAS threads per rank (one attention scratch each) */
    int flash_attention;          /* cuda: attn_core's forward fused (spec flash_attention) */
    int fused_projections;        /* fused QKV / fc1 buffers instead of the separate weights */
} pdbx_profile_point;

#define PDBX_PROFILE_MAX_BUFS PDBX_BUF_ROLES
typedef struct {
    pdbx_profile_buf buf[PDBX_PROFILE_MAX_BUFS];   /* in allocation order; comm last */
    int nbufs;
    double kind_bytes[PDBX_MEM_KINDS];
    double total;                 /* every listed byte */
    /* the point's collective messages, S as nccl-tests defines it (plan_comm.h's sizing):
     * [T, h] activations for TP and PP, one Megatron DDP bucket of fp32 gradients for DP
     * (capped at PDBX_CPU_DP_CAP_BYTES on the cpu); 0 where the group has one rank (nothing
     * runs). The comm buffer is the largest. */
    double tp_bytes, pp_bytes, dp_bytes;
    double ep_bytes;              /* the EP all-to-all's S (plan_comm.h); 0 at EP 1 */
} pdbx_profile_memory;

/* DP all-reduce message cap on the cpu backend: a real stage's gradients (GBs) would take
 * minutes through shared memory and measure nothing new; the sweep states the cap. */
#define PDBX_CPU_DP_CAP_BYTES (64.0 * 1024 * 1024)

/* cuda: copies of the profiled layers' weights the backend allocates and rotates through (one
 * copy per execution of an op on a layer, in turn), so that the weights total at least 3x the
 * L2 cache and no execution finds its weights left in L2 by the previous step (2 profiled
 * layers of Llama-3.1-8B TP8 are 110 MB against H100's 50 MB L2). layer_bytes: one layer's
 * weights of the prepared ops; at least 1, at most PDBX_CUDA_MAX_WEIGHT_COPIES. */
#define PDBX_CUDA_MAX_WEIGHT_COPIES 4096
static inline int pdbx_cuda_weight_copies(double layer_bytes, int layers, double l2_bytes)
{
    /* inline: libpdbx_cuda.so links none of the planner, and both must count alike */
    if (!(layer_bytes > 0) || layers < 1 || !(l2_bytes > 0))
        return 1;
    const double n = 3.0 * l2_bytes / (layer_bytes * layers);
    if (n >= PDBX_CUDA_MAX_WEIGHT_COPIES)
        return PDBX_CUDA_MAX_WEIGHT_COPIES;
    return n <= 1 ? 1 : (int)n + (n > (int)n);   /* ceil without libm */
}
/* The L2 size the planner assumes for that rotation (H100 and H200: 50 MiB); the backend uses
 * its device's (cudaDeviceProp.l2CacheSize), so elsewhere the two differ by the copies of the
 * small models' points, where memory is not what stops a sweep. */
#define PDBX_CUDA_PLAN_L2_BYTES (50.0 * 1024 * 1024)

/* Lists the buffers of point pp. -1 with a message when the shape is not one the backend runs
 * (cpu: vocab, heads and intermediate divisible by TP). */
int pdbx_profile_memory_list(const pdbx_profile_point *pp, pdbx_profile_memory *out,
                             char *err, size_t errlen);
/* The point of spec at (par, mbs) as backend runs it with `threads` BLAS threads; backend
 * auto is planned as cpu when the GPU preset is the host ("cpu"), else as cuda. */
void pdbx_profile_point_of(const pdbx_spec *spec, const pdbx_parallel *par, int mbs,
                           pdbx_backend_kind backend, int threads, pdbx_profile_point *out);

/* ---- sweep points ---------------------------------------------------------------------- */
typedef struct {
    int index, config;            /* position in the plan; index into spec->configs */
    int tp, pp, dp, mbs;
    int ep;                       /* expert-parallel degree (1: none; within tp x dp) */
    int ranks;                    /* tp * pp * dp (EP adds none) */
    pdbx_memory mem;              /* (b) training memory of the full model per rank */
    int train_oom;                /* mem.total > gpu.mem_bytes: planning information only */
    /* (a) profile memory: what the engine allocates at this point on one rank (kind_bytes,
     * total), planned with the spec's backend and one BLAS thread; the engine re-plans it
     * with the backend it loaded and its thread count. */
    double profile_kind_bytes[PDBX_MEM_KINDS];
    double profile_bytes;
    int profile_oom;              /* profile_bytes > gpu.mem_bytes: stops the MBS sweep when
                                   * predict_oom is on */
} pdbx_plan_point;

/* The buffer list of point pt on one rank with backend and threads (pdbx_profile_memory_list
 * of the point's shapes). 0, or -1 with a message. */
int pdbx_plan_point_memory(const pdbx_spec *spec, const pdbx_plan_point *pt,
                           pdbx_backend_kind backend, int threads, pdbx_profile_memory *pm,
                           char *err, size_t errlen);
/* Fills pt's profile fields for spec with backend and threads (pdbx_plan_expand uses the
 * spec's backend and 1 thread). 0, or -1 with a message. */
int pdbx_plan_point_profile(const pdbx_spec *spec, pdbx_plan_point *pt, pdbx_backend_kind backend,
                            int threads, char *err, size_t errlen);

/* Expands the points in FASOP's order: per config as given, MBS ascending (mbs_min..mbs_max
 * powers of two). *out is malloc'ed; the caller frees it. */
int pdbx_plan_expand(const pdbx_spec *spec, pdbx_plan_point **out, size_t *n,
                     char *err, size_t errlen);

/* ---- per-op shapes on one TP rank (design.md section 3) ------------------------------- */
typedef struct {
    int64_t m, n, k;              /* GEMM: [m,k] x [k,n]; elementwise: m rows x n cols, k = 0 */
    int64_t batch;                /* attn_core: sequences x heads on this rank; else 1 */
    double flops;                 /* one execution on one TP rank */
    double bytes;                 /* bytes read + written, minimal (roofline) */
    /* linear ops (attn_q/k/v/o, mlp_gate/up/down; the fused QKV / fc1 GEMMs): 1 when the
     * model's arch gives the projection a bias (arch.bias: qkv, attn_out, mlp), which the
     * backends add to the GEMM's output within the op's timed execution (and whose gradient,
     * the column sum of dY, is part of its bwd); flops then count the m x n adds and bytes
     * the bias vector read (docs/spec.md, "Shapes"). 0 for every other op. */
    int bias;
} pdbx_op_shape;
int pdbx_op_shape_for(const pdbx_spec *spec, int tp, int mbs, pdbx_op op, pdbx_op_shape *out);
/* The parameters the optimizer op steps over: one layer's on a rank at (tp, ep) (plan_params.c's
 * Megatron sharding; a MoE layer's when the model has one, its E / ep experts). The optimizer
 * op's shape is m 1 x n this, k 0; advise scales its cell by a stage's parameters over this. */
double pdbx_optimizer_params(const pdbx_model *m, int tp, int ep);
/* AdamW's work per parameter as the optimizer op counts it (its flops and bytes: fp32 master,
 * gradient, m and v read, master, m and v written; a 16-bit run also writes the model copy;
 * the op's bytes add the fp32 gradient buffer zeroed for the next iteration) */
#define PDBX_ADAMW_FLOPS_PER_PARAM 14.0
/* The loss op's forward per logit as its shape counts it: the row max, the exponential of the
 * difference (one), its sum */
#define PDBX_LOSS_FLOPS_PER_LOGIT 4.0
/* The same at expert-parallel degree ep (pdbx_op_shape_for is ep 1): the MoE expert ops on the
 * measured rank's E / ep experts and its received rows, ep_dispatch / ep_combine moving the
 * all-to-all message of plan_comm.h (pdbx_plan_ep_bytes); every other op as at EP 1. */
int pdbx_op_shape_ep(const pdbx_spec *spec, int tp, int ep, int mbs, pdbx_op op, pdbx_op_shape *out);
/* The RoPE base the backends build attn_rope's cos/sin table with: the model's rope_theta is
 * not read (pdbx_model has no field for it), so Llama 2's 10000. It changes the table's values,
 * not the op's work: the time of attn_rope does not depend on it. */
#define PDBX_ROPE_THETA 10000.0
/* 1 when m's arch gives linear op `op` a bias (arch.bias.qkv for attn_q/k/v, attn_out for
 * attn_o, mlp for mlp_gate/up/down); 0 otherwise (pdbx_op_shape.bias). */
int pdbx_op_has_bias(const pdbx_model *m, pdbx_op op);
/* What an MLP's activation (arch.activation, a HuggingFace name) computes: SiLU ("silu",
 * "swish"), GELU exact ("gelu", "gelu_python": erf) or tanh-approximated ("gelu_new",
 * "gelu_pytorch_tanh", "gelu_fast", "gelu_accurate": transformers' ACT2CLS), else OTHER. The
 * backends' kernels take the same classification (cpu_kernels_dense.h, cuda_kernels_dense.h).
 * NULL or "" (an arch built in code, zeroed: a Llama's) is SILU. */
typedef enum { PDBX_ACT_SILU = 0, PDBX_ACT_GELU_ERF, PDBX_ACT_GELU_TANH, PDBX_ACT_OTHER } pdbx_activation;
pdbx_activation pdbx_activation_of(const char *hf_name);
/* The ops model m has, once per step and per layer: every op of a Llama layer; a plain
 * (ungated) MLP has no mlp_gate (mlp_up is its first linear layer, fc1 / c_fc); learned
 * absolute positions have no attn_rope (the position table is added inside embed); gpt-j's
 * shared norm has no post_attn_norm; attn_qk_norm only with arch.qk_norm (qwen3). A point
 * measures the spec's ops that the model has (pdbx_spec.ops & this). */
pdbx_opmask pdbx_model_ops(const pdbx_model *m);
/* The dims of each head RoPE rotates: head_dim x arch.rotary_fraction as GPT-NeoX computes its
 * rotary_ndims (int(head_size * rotary_pct); gpt-j's rotary_dim), made even; the whole head
 * for a fraction of 1 or of 0 (an arch built in code, zeroed: a Llama's). */
int pdbx_rotary_dims(const pdbx_model *m);
/* The ops a point of spec s measures: the spec's ops (`ops`, "all" by default) that its model
 * has. */
pdbx_opmask pdbx_spec_ops(const pdbx_spec *s);

/* The FLOPs the cuda backend's attention core executes (its GEMMs/tensor-core products; the
 * softmax's exponentials not counted) for `batch` = sequences x q heads on the rank, seq s,
 * head_dim d, where pdbx_op_shape.flops counts the model's causal half (2 b s^2 d):
 *   unfused fwd: QK^T and PV over the full s x s: 4 b s^2 d
 *   unfused bwd: dP, dV, dQ, dK over the full s x s: 8 b s^2 d
 *   flash fwd:   whole tiles of tile x tile on and below the diagonal (those above are
 *                skipped): 4 b d tile^2 nq (nq + 1) / 2, nq = ceil(s / tile)
 *   flash bwd:   FlashAttention-2's five products (QK^T, dO V^T, P^T dO, dS^T Q, dS K) over
 *                whole bwd_tile x bwd_tile tiles on and below the diagonal:
 *                10 b d bwd_tile^2 nt (nt + 1) / 2, nt = ceil(s / bwd_tile)
 * flash: 0 unfused, 1 the fused kernels (forward tile `tile`, CK_FLASH_TILE = 64; the backward
 * tile is PDBX_FLASH_BWD_TILE = CK_FLASH_BWD_TILE = 32). 0 for bad arguments. */
#define PDBX_FLASH_TILE 64
#define PDBX_FLASH_BWD_TILE 32
double pdbx_attn_core_executed_flops(int flash, pdbx_pass pass, int64_t batch, int64_t s,
                                     int64_t d, int64_t tile);
/* ---- fused projections (spec fused_projections; docs/spec.md, "Fused projections") -------
 * Megatron runs Q/K/V as one GEMM (linear_qkv) and gate/up as one (linear_fc1). With
 * fused_projections the backends run the fused GEMM when asked for the group's leader
 * (attn_q: QKV, mlp_gate: fc1) and the engine gives each op of the group the fused time x
 * its FLOP share (its own 2mnk over the fused 2mnk: n over the fused n). */
/* The leader of op's group (attn_q for attn_q/k/v, mlp_gate for mlp_gate/up), or
 * PDBX_OP_COUNT for an op in no group. */
pdbx_op pdbx_fused_leader(pdbx_op op);
/* The fused GEMM of leader's group on one TP rank: [T, (heads + 2 kv_heads) x head_dim per rank]
 * from [T, h] for attn_q, [T, 2 x intermediate per rank] for mlp_gate. 0, or -1 (not a leader,
 * bad shape). */
int pdbx_fused_shape_for(const pdbx_spec *spec, int tp, int mbs, pdbx_op leader, pdbx_op_shape *out);
/* op's share of its group's fused FLOPs (q: heads/(heads + 2 kv_heads)); 1 for an op in no
 * group; NaN when the shapes cannot be made. The shares of a group sum to 1. */
double pdbx_fused_share(const pdbx_spec *spec, int tp, int mbs, pdbx_op op);

#endif
