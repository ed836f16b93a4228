/* plan_fields.c: the spec's field table, the one home of what a field is called, how its value
 * is read (kind, numeric range) and how it is described (value syntax, allowed values, what it
 * means). plan_spec.c reads and writes fields through this table; pdbx_spec_field_doc() gives
 * the same facts to `pdbx plan/run --help`, the bash completion and the man page, so the help
 * cannot disagree with the reader. Defaults are not written here: they are formatted from
 * pdbx_spec_defaults() (pdbx_spec_field_text), the one home of the defaults. */
#include "engine/plan/plan_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NO_RANGE 1, 0          /* lo > hi: no numeric range (the allowed text says it) */

/* In the order pdbx_spec_to_json writes them and --help lists them. `allowed` NULL: the range
 * lo..hi is the whole rule (generated); `def_note` set: the default is derived, not a value. */
const plan_field_def plan_fields[] = {
    {"name", PLAN_F_STR, NO_RANGE, "TEXT", "1..63 printable characters", "the sweep's name", NULL},
    {"model", PLAN_F_STR, NO_RANGE, "NAME|PATH", "a models/ preset, its tag, or a HF config.json",
     "model to profile", NULL},
    {"gpu", PLAN_F_STR, NO_RANGE, "NAME|PATH", "a gpus/ preset, its tag, or a GPU JSON file",
     "GPU to predict memory for", NULL},
    {"gpu_mem_gb", PLAN_F_NUM, 0.001, 1e6, "GB", NULL, "replace the GPU's memory (decimal GB)",
     "the gpu preset's"},
    {"layers", PLAN_F_INT, 1, 4096, "N", "1..num_hidden_layers of the model", "layers profiled", NULL},
    {"seq_len", PLAN_F_INT, 1, 131072, "N", NULL, "sequence length", NULL},
    {"dtype", PLAN_F_STR, NO_RANGE, "DTYPE", "bf16, fp16, fp32", "data type", NULL},
    {"backend", PLAN_F_STR, NO_RANGE, "BACKEND", "auto, cpu, cuda (cuda needs a GPU preset)",
     "compute backend", NULL},
    {"gpus_per_node", PLAN_F_INT, 1, 256, "N", NULL, "ranks per node", NULL},
    {"nodes", PLAN_F_INT, 1, 4096, "N", NULL, "nodes", NULL},
    {"launcher", PLAN_F_STR, NO_RANGE, "LAUNCHER", "auto, local, mpirun, srun (auto: srun inside a "
     "Slurm allocation, else local)", "how the ranks are started (docs/launch.md)", NULL},
    {"configs", PLAN_F_LIST, NO_RANGE, "TPxPPxDP,...", "1 to 64 configurations, e.g. 1x8x1,2x4x1,"
     "1x1x4x2", "parallel configurations (TPxPPxDPxEP: with expert parallelism within tp x dp)", NULL},
    {"tp", PLAN_F_LIST, 1, PLAN_TP_MAX, "LIST", NULL,
     "TP degrees (cross product with pp, dp)", "from configs"},
    {"pp", PLAN_F_LIST, 1, PLAN_PP_MAX, "LIST", NULL, "PP degrees",
     "from configs"},
    {"dp", PLAN_F_LIST, 1, PLAN_DP_MAX, "LIST", NULL, "DP degrees",
     "from configs"},
    {"ep", PLAN_F_LIST, 1, PLAN_EP_MAX, "LIST", "1..1024, dividing the experts and tp x dp (MoE models)",
     "EP degrees (expert parallelism, within tp x dp)", "from configs"},
    {"gpus", PLAN_F_INT, 1, PLAN_GPUS_MAX, "N", "1..gpus_per_node x nodes", "GPUs per configuration "
     "(DP = gpus/(tp*pp))", "from configs"},
    {"mbs", PLAN_F_LIST, NO_RANGE, "MIN:MAX", "powers of two, 1 <= MIN <= MAX <= 1024",
     "micro-batch sizes", NULL},
    {"mbs_min", PLAN_F_INT, 1, 1024, "N", "a power of two 1..1024", "smallest micro-batch size",
     "from mbs"},
    {"mbs_max", PLAN_F_INT, 1, 1024, "N", "a power of two 1..1024", "largest micro-batch size",
     "from mbs"},
    {"repetition", PLAN_F_STR, NO_RANGE, "MODE", "adaptive, fixed", "adaptive: repeat each op until "
     "its CI is within target_rel_ci; fixed: warmup + steps whole steps", NULL},
    {"warmup", PLAN_F_INT, 0, 1000, "N", NULL, "steps discarded per point (adaptive: at most)", NULL},
    {"steps", PLAN_F_INT, 1, 100000, "N", NULL, "steps measured per point (adaptive: step spans)", NULL},
    {"target_rel_ci", PLAN_F_NUM, 0.0001, 0.5, "X", NULL,
     "adaptive: 95% CI half-width of a cell's mean / mean", NULL},
    {"min_reps", PLAN_F_INT, 2, 100000, "N", NULL, "adaptive: fewest samples per cell", NULL},
    {"max_reps", PLAN_F_INT, 2, 1000000, "N", "min_reps..1000000", "adaptive: most samples per cell", NULL},
    {"max_seconds_per_op", PLAN_F_NUM, 0.001, 3600, "S", NULL,
     "adaptive: most sampling time per cell", NULL},
    {"passes", PLAN_F_LIST, NO_RANGE, "PASSES", "fwd, or fwd,bwd", "passes measured per op", NULL},
    {"ops", PLAN_F_LIST, NO_RANGE, "OPS", "all, or op names a,b (see docs/spec.md)", "ops to measure",
     NULL},
    {"collectives", PLAN_F_BOOL, NO_RANGE, "BOOL", "true, false (also 1/0, yes/no, on/off)",
     "run the collectives sweep", NULL},
    {"coll_sizes", PLAN_F_LIST, NO_RANGE, "SIZES", "powers of two 1..16G, at most 40: A,B or MIN:MAX "
     "(K/M/G/T = 1024^n)", "collective message sizes", NULL},
    {"predict_oom", PLAN_F_BOOL, NO_RANGE, "BOOL", "true, false",
     "stop a config's MBS sweep at the first predicted OOM", NULL},
    {"bytes_per_param", PLAN_F_NUM, 1, 64, "X", "2 x dtype bytes..64",
     "weights + grads + optimizer bytes per parameter", NULL},
    {"zero1", PLAN_F_BOOL, NO_RANGE, "BOOL", "true, false", "ZeRO-1: optimizer states divided by DP",
     NULL},
    {"flash_attention", PLAN_F_BOOL, NO_RANGE, "BOOL", "true, false",
     "drop the attention scores from the memory model", NULL},
    {"recompute", PLAN_F_STR, NO_RANGE, "MODE", "none, full, selective",
     "activation recomputation of the training memory (full: layer inputs only; selective: no "
     "attention scores)", NULL},
    {"moe_routing", PLAN_F_STR, NO_RANGE, "ROUTING", "balanced, or {\"imbalance\": F} with 1 <= F <= 64 "
     "(mixture-of-experts models only)", "routing the MoE layers are measured under: the busiest expert "
     "gets F x its balanced share (docs/engine-layers.md)", NULL},
    {"timeout_s", PLAN_F_NUM, 1, 86400, "SECONDS", NULL, "a collective not done within this fails "
     "the run", NULL},
    {"flush_l2", PLAN_F_BOOL, NO_RANGE, "BOOL", "true, false", "cuda: flush L2 between repetitions",
     NULL},
    {"fused_projections", PLAN_F_BOOL, NO_RANGE, "BOOL", "true, false", "time Q/K/V as one fused QKV GEMM "
     "and gate/up as one fused fc1 GEMM, attributed to the ops by FLOP share", NULL},
    {"fp32_math", PLAN_F_STR, NO_RANGE, "MODE", "ieee, tf32 (tf32: cuda only)",
     "fp32 GEMMs: IEEE fp32 (PyTorch's default) or TF32 tensor cores", NULL},
    {"gemm_api", PLAN_F_STR, NO_RANGE, "API", "cublaslt, cublas (cpu: cublaslt, the default)",
     "cuda GEMM library: cuBLASLt or cuBLAS cublasGemmEx (PyTorch's F.linear)", NULL},
    {"tokens", PLAN_F_LIST, NO_RANGE, "TOKENS", "at most 64 token counts 1..131072: A,B,C, MIN:MAX "
     "(powers of two) or MIN:MAX:STEP; empty: none", "inference phase: token counts of the per-token ops", NULL},
    {"kv_cache", PLAN_F_LIST, NO_RANGE, "{JSON}", "an object with prefill_chunks, prefill_kv, "
     "decode_batch, decode_kv (lists of at most 32 integers) and max_kv; {}: none",
     "inference phase: the attention grid with a KV cache", NULL},
};
const size_t plan_nfields = sizeof plan_fields / sizeof plan_fields[0];

const plan_field_def *plan_find_field(const char *name)
{
    for (size_t i = 0; i < plan_nfields; i++)
        if (strcmp(plan_fields[i].name, name) == 0)
            return &plan_fields[i];
    return NULL;
}

/* Filled from plan_fields[] on first use, so the two can never disagree. */
const char *const *pdbx_spec_field_names(void)
{
    static const char *names[sizeof plan_fields / sizeof plan_fields[0] + 1];
    if (!names[0])
        for (size_t i = 0; i < plan_nfields; i++)
            names[i] = plan_fields[i].name;
    return names;
}

/* ---- a field's value as text (override syntax) ------------------------------------------ */

/* "4K", "1M", "3": bytes with the largest 1024^n suffix that divides them. */
static void fmt_bytes(double v, char *buf, size_t len)
{
    static const char suffix[] = " KMGT";
    int k = 0;
    while (k < 4 && v >= 1024 && fmod(v, 1024) == 0) {
        v /= 1024;
        k++;
    }
    if (k)
        snprintf(buf, len, "%.0f%c", v, suffix[k]);
    else
        snprintf(buf, len, "%.0f", v);
}

/* The list-valued fields: configs, mbs, ops, coll_sizes. */
static void list_text(const pdbx_spec *s, const char *f, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
#define APPEND(...) \
    do { if (used < len) used += (size_t)snprintf(buf + used, len - used, __VA_ARGS__); } while (0)
    if (strcmp(f, "configs") == 0) {
        for (int i = 0; i < s->nconfigs && i < PDBX_MAX_CONFIGS; i++)
        {
            APPEND("%s%dx%dx%d", i ? "," : "", s->configs[i].tp, s->configs[i].pp, s->configs[i].dp);
            if (pdbx_par_ep(&s->configs[i]) > 1)
                APPEND("x%d", s->configs[i].ep);
        }
    } else if (strcmp(f, "passes") == 0) {
        for (int p = 0, n = 0; p < PDBX_PASS_COUNT; p++)
            if (s->passes & PDBX_PASS_BIT(p))
                APPEND("%s%s", n++ ? "," : "", pdbx_pass_name((pdbx_pass)p));
    } else if (strcmp(f, "mbs") == 0) {
        APPEND("%d:%d", s->mbs_min, s->mbs_max);
    } else if (strcmp(f, "ops") == 0) {
        if ((s->ops & PDBX_OPS_ALL) == PDBX_OPS_ALL)
            APPEND("all");
        else
            for (int i = 0, n = 0; i < PDBX_OP_COUNT; i++)
                if (s->ops & PDBX_OP_BIT(i))
                    APPEND("%s%s", n++ ? "," : "", pdbx_op_name((pdbx_op)i));
    } else if (strcmp(f, "tokens") == 0) {
        for (int i = 0; i < s->ntokens && i < PDBX_MAX_TOKENS; i++)
            APPEND("%s%d", i ? "," : "", s->tokens[i]);
    } else if (strcmp(f, "kv_cache") == 0) {
        cJSON *o = plan_kv_cache_to_json(&s->kv_cache);
        char *txt = o ? cJSON_PrintUnformatted(o) : NULL;
        APPEND("%s", txt ? txt : "{}");
        cJSON_free(txt);
        cJSON_Delete(o);
    } else if (strcmp(f, "coll_sizes") == 0) {
        for (int i = 0; i < s->ncoll_sizes && i < PDBX_MAX_COLL_SIZES; i++) {
            char b[32];
            fmt_bytes(s->coll_sizes[i], b, sizeof b);
            APPEND("%s%s", i ? "," : "", b);
        }
    }
#undef APPEND
}

int pdbx_spec_field_text(const pdbx_spec *s, const char *field, char *buf, size_t len)
{
    const plan_field_def *f = plan_find_field(field ? field : "");
    if (!f || !buf || !len)
        return -1;
    buf[0] = '\0';
    if (f->def_note)          /* derived from another field: no value of its own */
        return 0;
    if (strcmp(field, "name") == 0)
        snprintf(buf, len, "%s", s->name);
    else if (strcmp(field, "model") == 0)
        snprintf(buf, len, "%s", s->model.name);
    else if (strcmp(field, "gpu") == 0)
        snprintf(buf, len, "%s", s->gpu.name);
    else if (strcmp(field, "dtype") == 0)
        snprintf(buf, len, "%s", pdbx_dtype_name(s->dtype));
    else if (strcmp(field, "backend") == 0)
        snprintf(buf, len, "%s", pdbx_backend_name(s->backend));
    else if (strcmp(field, "recompute") == 0)
        snprintf(buf, len, "%s", pdbx_recompute_name(s->recompute));
    else if (strcmp(field, "moe_routing") == 0)
        plan_moe_routing_text(s->moe_imbalance, buf, len);
    else if (strcmp(field, "fp32_math") == 0)
        snprintf(buf, len, "%s", pdbx_fp32_math_name(s->fp32_math));
    else if (strcmp(field, "gemm_api") == 0)
        snprintf(buf, len, "%s", pdbx_gemm_api_name(s->gemm_api));
    else if (strcmp(field, "launcher") == 0)
        snprintf(buf, len, "%s", pdbx_launcher_name(s->launcher));
    else if (strcmp(field, "repetition") == 0)
        snprintf(buf, len, "%s", pdbx_repetition_name(s->repetition));
    else if (strcmp(field, "target_rel_ci") == 0)
        snprintf(buf, len, "%g", s->target_rel_ci);
    else if (strcmp(field, "max_seconds_per_op") == 0)
        snprintf(buf, len, "%g", s->max_seconds_per_op);
    else if (strcmp(field, "bytes_per_param") == 0)
        snprintf(buf, len, "%g", s->bytes_per_param);
    else if (strcmp(field, "timeout_s") == 0)
        snprintf(buf, len, "%g", s->timeout_s);
    else if (f->kind == PLAN_F_LIST)
        list_text(s, field, buf, len);
    else {
        const int *v = plan_int_slot((pdbx_spec *)s, field);
        if (!v)
            return -1;
        if (f->kind == PLAN_F_BOOL)
            snprintf(buf, len, "%s", *v ? "true" : "false");
        else
            snprintf(buf, len, "%d", *v);
    }
    return 0;
}

/* ---- what --help says ------------------------------------------------------------------- */

int pdbx_spec_field_doc_get(size_t i, pdbx_spec_field_doc *out)
{
    if (i >= plan_nfields || !out)
        return -1;
    const plan_field_def *f = &plan_fields[i];
    memset(out, 0, sizeof *out);
    out->name = f->name;
    out->value = f->value;
    out->about = f->about;
    if (f->allowed)
        snprintf(out->allowed, sizeof out->allowed, "%s", f->allowed);
    else if (f->kind == PLAN_F_LIST)
        snprintf(out->allowed, sizeof out->allowed, "integers %.0f..%.0f: N, A,B,C or A:B", f->lo, f->hi);
    else
        snprintf(out->allowed, sizeof out->allowed, "%.*f..%.0f", f->lo > 0 && f->lo < 1 ? 3 : 0, f->lo, f->hi);
    if (f->def_note) {
        snprintf(out->def, sizeof out->def, "%s", f->def_note);
    } else {
        pdbx_spec d;
        pdbx_spec_defaults(&d);
        pdbx_spec_field_text(&d, f->name, out->def, sizeof out->def);
    }
    return 0;
}
