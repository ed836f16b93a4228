/* plan_spec.c: the sweep spec: defaults, JSON reading (pdbx_spec_from_json / _load), CLI-style
 * overrides (pdbx_spec_set) and JSON writing (pdbx_spec_to_json). Structured values are read by
 * plan_values.c, configuration lists by plan_configs.c, the whole spec is checked by
 * plan_validate.c; the schema is documented in docs/spec.md.
 *
 * Both the JSON reader and pdbx_spec_set go through apply_field(), so a field has one reader
 * and one set of messages: pdbx_spec_set turns its string into the JSON value the field expects
 * ("2048" -> 2048, "true" -> true) and lists keep their string forms ("1:128", "1,2,4"). */
#include "engine/plan/plan_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *pdbx_dtype_name(pdbx_dtype d)
{
    static const char *const names[] = {[PDBX_DTYPE_BF16] = "bf16", [PDBX_DTYPE_FP16] = "fp16",
                                        [PDBX_DTYPE_FP32] = "fp32"};
    return (unsigned)d < sizeof names / sizeof names[0] ? names[d] : "?";
}

int pdbx_dtype_bytes(pdbx_dtype d)
{
    return d == PDBX_DTYPE_FP32 ? 4 : 2;
}

const char *pdbx_recompute_name(pdbx_recompute r)
{
    return r == PDBX_RECOMPUTE_FULL ? "full" : r == PDBX_RECOMPUTE_SELECTIVE ? "selective" : "none";
}

const char *pdbx_fp32_math_name(pdbx_fp32_math m)
{
    return m == PDBX_FP32_MATH_TF32 ? "tf32" : "ieee";
}

const char *pdbx_gemm_api_name(pdbx_gemm_api g)
{
    return g == PDBX_GEMM_API_CUBLAS ? "cublas" : "cublaslt";
}

const char *pdbx_repetition_name(pdbx_repetition r)
{
    return r == PDBX_REP_FIXED ? "fixed" : "adaptive";
}

const char *pdbx_launcher_name(pdbx_launcher_kind k)
{
    static const char *const names[] = {[PDBX_LAUNCHER_AUTO] = "auto", [PDBX_LAUNCHER_LOCAL] = "local",
                                        [PDBX_LAUNCHER_MPIRUN] = "mpirun", [PDBX_LAUNCHER_SRUN] = "srun"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

const char *pdbx_backend_name(pdbx_backend_kind b)
{
    static const char *const names[] = {[PDBX_BACKEND_AUTO] = "auto", [PDBX_BACKEND_CPU] = "cpu",
                                        [PDBX_BACKEND_CUDA] = "cuda"};
    return (unsigned)b < sizeof names / sizeof names[0] ? names[b] : "?";
}

/* ---- field table (plan_fields.c) -------------------------------------------------------- */

/* Spec files may also carry a free-text "description" (not stored, not written back). */
static const char *const json_only_fields[] = {"description"};

static const plan_field_def *find_field(const char *name)
{
    return plan_find_field(name);
}

static int unknown_field(const char *name, int json, char *err, size_t errlen)
{
    const char *cands[64];
    size_t n = 0;
    for (size_t i = 0; i < plan_nfields && n + 1 < sizeof cands / sizeof cands[0]; i++)
        cands[n++] = plan_fields[i].name;
    if (json)
        cands[n++] = json_only_fields[0];
    char sug[1024];
    pdbx_suggest(name, cands, n, sug, sizeof sug);
    return pdbx_fail(err, errlen, "unknown field '%s'%s", name, sug);
}

/* ---- defaults ---------------------------------------------------------------------------- */

void pdbx_spec_defaults(pdbx_spec *s)
{
    memset(s, 0, sizeof *s);
    pdbx_strcopy(s->name, sizeof s->name, "custom");
    plan_default_model(&s->model);
    plan_default_gpu(&s->gpu);
    s->layers_profiled = 1;
    s->seq_len = 128;
    s->dtype = PDBX_DTYPE_FP32;
    s->backend = PDBX_BACKEND_CPU;
    s->gpus_per_node = 2;
    s->nodes = 1;
    s->configs[0] = (pdbx_parallel){1, 1, 2, 1};
    s->configs[1] = (pdbx_parallel){2, 1, 1, 1};
    s->nconfigs = 2;
    s->mbs_min = 1;
    s->mbs_max = 8;
    s->repetition = PDBX_REP_ADAPTIVE;
    s->warmup = 1;
    s->steps = 3;
    s->target_rel_ci = 0.01;
    s->min_reps = 5;
    s->max_reps = 1000;
    s->max_seconds_per_op = 1;
    s->passes = PDBX_PASS_BIT(PDBX_PASS_FWD);
    s->ops = PDBX_OPS_ALL;
    s->collectives = 1;
    s->coll_sizes[0] = 4096;
    s->coll_sizes[1] = 65536;
    s->coll_sizes[2] = 1048576;
    s->ncoll_sizes = 3;
    s->predict_oom = 1;
    s->bytes_per_param = 16;
    s->zero1 = 0;
    s->flash_attention = 0;
    s->recompute = PDBX_RECOMPUTE_NONE;
    s->moe_imbalance = 1.0;
    s->timeout_s = 300;
    s->flush_l2 = 0;
    s->fused_projections = 0;
    s->fp32_math = PDBX_FP32_MATH_IEEE;
    s->gemm_api = PDBX_GEMM_API_CUBLASLT;
}

/* ---- one field --------------------------------------------------------------------------- */

int *plan_int_slot(pdbx_spec *s, const char *name)
{
    if (strcmp(name, "layers") == 0) return &s->layers_profiled;
    if (strcmp(name, "seq_len") == 0) return &s->seq_len;
    if (strcmp(name, "gpus_per_node") == 0) return &s->gpus_per_node;
    if (strcmp(name, "nodes") == 0) return &s->nodes;
    if (strcmp(name, "warmup") == 0) return &s->warmup;
    if (strcmp(name, "steps") == 0) return &s->steps;
    if (strcmp(name, "min_reps") == 0) return &s->min_reps;
    if (strcmp(name, "max_reps") == 0) return &s->max_reps;
    if (strcmp(name, "collectives") == 0) return &s->collectives;
    if (strcmp(name, "predict_oom") == 0) return &s->predict_oom;
    if (strcmp(name, "zero1") == 0) return &s->zero1;
    if (strcmp(name, "flash_attention") == 0) return &s->flash_attention;
    if (strcmp(name, "flush_l2") == 0) return &s->flush_l2;
    if (strcmp(name, "fused_projections") == 0) return &s->fused_projections;
    return NULL;
}

/* "name": printable, non-empty, fits the spec's buffer. */
static int read_name(pdbx_spec *s, const cJSON *v, char *err, size_t errlen)
{
    const char *str;
    if (plan_json_string(v, "name", &str, err, errlen) != 0)
        return -1;
    if (!*str || strlen(str) >= sizeof s->name)
        return pdbx_fail(err, errlen, "name: \"%s\" has %zu characters (allowed: 1..%zu)", str, strlen(str),
                         sizeof s->name - 1);
    /* the name is printed on one-line headers and listings: no control characters */
    for (const unsigned char *c = (const unsigned char *)str; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return pdbx_fail(err, errlen, "name: \"%s\" contains control character 0x%02x "
                             "(allowed: printable text)", str, *c);
    pdbx_strcopy(s->name, sizeof s->name, str);
    return 0;
}

/* model and gpu take an inline object or a preset name / file path: 1 for an object, 0 for a
 * name (in *str), -1 with the message for anything else. */
static int preset_form(const cJSON *v, const char *name, const char **str, char *err, size_t errlen)
{
    if (cJSON_IsObject(v))
        return 1;
    return plan_json_string(v, name, str, err, errlen) == 0 ? 0 : -1;
}

/* "model" or "gpu" (which), inline or by preset name; *s is untouched on error. */
static int read_preset_field(pdbx_spec *s, const char *which, const cJSON *v, char *err, size_t errlen)
{
    pdbx_model m = s->model;
    pdbx_gpu g = s->gpu;
    const char *str = NULL;
    int form = preset_form(v, which, &str, err, errlen), rc;
    if (form < 0)
        return -1;
    if (strcmp(which, "model") == 0)
        rc = form ? pdbx_model_from_json(v, which, &m, err, errlen) : pdbx_model_load(str, &m, err, errlen);
    else
        rc = form ? plan_gpu_from_json(v, which, &g, err, errlen) : pdbx_gpu_load(str, &g, err, errlen);
    if (rc != 0)
        return -1;
    /* one layer of each kind by default: `layers` given after the model still says otherwise
     * (and validation names what it needs) */
    if (strcmp(which, "model") == 0 && s->layers_profiled == 1 && pdbx_model_layer_kinds(&m) > 1)
        s->layers_profiled = 2;
    s->model = m;
    s->gpu = g;
    return 0;
}

/* The fields with a reader of their own; 1 when name is not one of them. */
static int apply_structured(pdbx_spec *s, const char *name, const cJSON *v, char *err, size_t errlen)
{
    if (strcmp(name, "name") == 0)
        return read_name(s, v, err, errlen);
    if (strcmp(name, "model") == 0 || strcmp(name, "gpu") == 0)
        return read_preset_field(s, name, v, err, errlen);
    if (strcmp(name, "gpu_mem_gb") == 0) {
        double gb;
        const plan_field_def *f = find_field(name);
        if (plan_json_number(v, name, f->lo, f->hi, &gb, err, errlen) != 0)
            return -1;
        s->gpu.mem_bytes = gb * 1e9;
        return 0;
    }
    if (strcmp(name, "dtype") == 0)
        return plan_read_dtype(v, &s->dtype, err, errlen);
    if (strcmp(name, "backend") == 0)
        return plan_read_backend(v, &s->backend, err, errlen);
    if (strcmp(name, "recompute") == 0)
        return plan_read_recompute(v, &s->recompute, err, errlen);
    if (strcmp(name, "moe_routing") == 0)
        return plan_read_moe_routing(v, &s->moe_imbalance, err, errlen);
    if (strcmp(name, "fp32_math") == 0)
        return plan_read_fp32_math(v, &s->fp32_math, err, errlen);
    if (strcmp(name, "gemm_api") == 0)
        return plan_read_gemm_api(v, &s->gemm_api, err, errlen);
    if (strcmp(name, "launcher") == 0)
        return plan_read_launcher(v, &s->launcher, err, errlen);
    if (strcmp(name, "repetition") == 0)
        return plan_read_repetition(v, &s->repetition, err, errlen);
    if (strcmp(name, "passes") == 0)
        return plan_read_passes(v, &s->passes, err, errlen);
    if (strcmp(name, "mbs") == 0)
        return plan_read_mbs(v, s, err, errlen);
    if (strcmp(name, "ops") == 0)
        return plan_read_ops(v, &s->ops, err, errlen);
    if (strcmp(name, "coll_sizes") == 0)
        return plan_read_coll_sizes(v, s, err, errlen);
    if (strcmp(name, "tokens") == 0)
        return plan_read_tokens(v, s, err, errlen);
    if (strcmp(name, "kv_cache") == 0)
        return plan_read_kv_cache(v, s, err, errlen);
    return 1;
}

/* Applies every field except configs/tp/pp/dp/gpus (those combine; see the callers). */
static int apply_field(pdbx_spec *s, const plan_field_def *f, const cJSON *v, char *err, size_t errlen)
{
    const char *name = f->name;
    int rc = apply_structured(s, name, v, err, errlen);
    if (rc != 1)
        return rc;
    if (strcmp(name, "mbs_min") == 0 || strcmp(name, "mbs_max") == 0) {
        long long x;
        if (plan_json_int(v, name, -(1LL << 40), 1LL << 40, &x, err, errlen) != 0 ||
            plan_check_mbs_bound(name, x, err, errlen) != 0)
            return -1;
        *(name[5] == 'i' ? &s->mbs_min : &s->mbs_max) = (int)x;
        return 0;
    }
    if (strcmp(name, "bytes_per_param") == 0)
        return plan_json_number(v, name, f->lo, f->hi, &s->bytes_per_param, err, errlen);
    if (strcmp(name, "timeout_s") == 0)
        return plan_json_number(v, name, f->lo, f->hi, &s->timeout_s, err, errlen);
    if (strcmp(name, "target_rel_ci") == 0)
        return plan_json_number(v, name, f->lo, f->hi, &s->target_rel_ci, err, errlen);
    if (strcmp(name, "max_seconds_per_op") == 0)
        return plan_json_number(v, name, f->lo, f->hi, &s->max_seconds_per_op, err, errlen);
    int *slot = plan_int_slot(s, name);
    if (slot && f->kind == PLAN_F_BOOL)
        return plan_json_bool(v, name, slot, err, errlen);
    if (slot && f->kind == PLAN_F_INT) {
        long long x;
        if (plan_json_int(v, name, (long long)f->lo, (long long)f->hi, &x, err, errlen) != 0)
            return -1;
        *slot = (int)x;
        return 0;
    }
    return pdbx_fail(err, errlen, "%s: cannot be set this way", name);
}

/* ---- JSON -------------------------------------------------------------------------------- */

/* Applies obj over *s (fields it lacks keep their values in *s), then validates the result.
 * Messages are not prefixed with origin: pdbx_spec_load prefixes the file's path, and callers
 * holding inline JSON know where it came from. */
int pdbx_spec_from_json(const cJSON *obj, const char *origin, pdbx_spec *s, char *err, size_t errlen)
{
    (void)origin;
    if (!cJSON_IsObject(obj))
        return pdbx_fail(err, errlen, "spec: expected a JSON object");
    pdbx_spec t = *s;   /* work on a copy: *s is untouched on error */

    /* Unknown and repeated fields first: a typo must not be silently ignored. */
    for (const cJSON *it = obj->child; it; it = it->next) {
        const char *key = it->string ? it->string : "";
        if (!find_field(key) && strcmp(key, json_only_fields[0]) != 0)
            return unknown_field(key, 1, err, errlen);
        for (const cJSON *p = obj->child; p != it; p = p->next)
            if (p->string && strcmp(p->string, key) == 0)
                return pdbx_fail(err, errlen, "%s: given twice (allowed: once)", key);
    }
    const cJSON *desc = cJSON_GetObjectItemCaseSensitive(obj, "description");
    const char *dummy;
    if (desc && plan_json_string(desc, "description", &dummy, err, errlen) != 0)
        return -1;
    const cJSON *mbs = cJSON_GetObjectItemCaseSensitive(obj, "mbs");
    if (mbs && (cJSON_GetObjectItemCaseSensitive(obj, "mbs_min") || cJSON_GetObjectItemCaseSensitive(obj, "mbs_max")))
        return pdbx_fail(err, errlen, "mbs: cannot be combined with mbs_min/mbs_max (allowed: one form)");

    /* Scalars in table order: model and gpu come before gpu_mem_gb, which overrides the GPU's
     * memory; the configuration fields are read after gpus_per_node and nodes. */
    for (size_t i = 0; i < plan_nfields; i++) {
        const plan_field_def *f = &plan_fields[i];
        if (f->kind == PLAN_F_LIST && (strcmp(f->name, "configs") == 0 || strcmp(f->name, "tp") == 0 ||
                                  strcmp(f->name, "pp") == 0 || strcmp(f->name, "dp") == 0 ||
                                  strcmp(f->name, "ep") == 0))
            continue;
        if (strcmp(f->name, "gpus") == 0)
            continue;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, f->name);
        if (v && apply_field(&t, f, v, err, errlen) != 0)
            return -1;
    }

    const cJSON *jc = cJSON_GetObjectItemCaseSensitive(obj, "configs");
    const cJSON *jtp = cJSON_GetObjectItemCaseSensitive(obj, "tp");
    const cJSON *jpp = cJSON_GetObjectItemCaseSensitive(obj, "pp");
    const cJSON *jdp = cJSON_GetObjectItemCaseSensitive(obj, "dp");
    const cJSON *jg = cJSON_GetObjectItemCaseSensitive(obj, "gpus");
    const cJSON *jep = cJSON_GetObjectItemCaseSensitive(obj, "ep");
    plan_config_set cs = {.n = 0};
    if (jc && (jtp || jpp || jdp || jg || jep))
        return pdbx_fail(err, errlen, "configs: cannot be combined with tp/pp/dp/ep/gpus (allowed: either a configs "
                         "list or tp/pp/dp/ep lists)");
    if (jg && jdp)
        return pdbx_fail(err, errlen, "dp: cannot be combined with gpus (allowed: one of them; with gpus, "
                         "DP = gpus/(tp*pp))");
    if (jc) {
        if (plan_configs_from_json(jc, &cs, err, errlen) != 0)
            return -1;
        plan_configs_apply(&t, &cs);
    } else if (jtp || jpp || jdp || jg || jep) {
        int tps[PLAN_LIST_CAP] = {1}, pps[PLAN_LIST_CAP] = {1}, dps[PLAN_LIST_CAP] = {1}, eps[PLAN_LIST_CAP] = {1};
        size_t ntp = 1, npp = 1, ndp = 1, nep = 1;
        long long g = 0;
        if (jtp && plan_read_int_list(jtp, "tp", 1, PLAN_TP_MAX, tps, PLAN_LIST_CAP, &ntp, err, errlen) != 0)
            return -1;
        if (jpp && plan_read_int_list(jpp, "pp", 1, PLAN_PP_MAX, pps, PLAN_LIST_CAP, &npp, err, errlen) != 0)
            return -1;
        if (jdp && plan_read_int_list(jdp, "dp", 1, PLAN_DP_MAX, dps, PLAN_LIST_CAP, &ndp, err, errlen) != 0)
            return -1;
        if (jg && plan_json_int(jg, "gpus", 1, PLAN_GPUS_MAX, &g, err, errlen) != 0)
            return -1;
        if (jep && plan_read_int_list(jep, "ep", 1, PLAN_EP_MAX, eps, PLAN_LIST_CAP, &nep, err, errlen) != 0)
            return -1;
        if (plan_configs_cross(&t, tps, ntp, pps, npp, dps, ndp, eps, nep, g, &cs, err, errlen) != 0)
            return -1;
        plan_configs_apply(&t, &cs);
    }
    if (pdbx_spec_validate(&t, err, errlen) != 0)
        return -1;
    *s = t;
    return 0;
}

int pdbx_spec_load(const char *name_or_path, pdbx_spec *spec, char *err, size_t errlen)
{
    char path[PDBX_PATH_MAX];
    if (plan_sweep_path(name_or_path, path, sizeof path, err, errlen) != 0)
        return -1;
    cJSON *root = plan_json_file(path, err, errlen);
    if (!root)
        return -1;
    pdbx_spec s;
    pdbx_spec_defaults(&s);
    /* The sweep's name: its "name" field, else the file's base name. */
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char nm[sizeof s.name];
    pdbx_strcopy(nm, sizeof nm, base);
    size_t n = strlen(nm);
    if (n > 5 && strcmp(nm + n - 5, ".json") == 0)
        nm[n - 5] = '\0';
    pdbx_strcopy(s.name, sizeof s.name, nm);
    char inner[512];
    int rc = pdbx_spec_from_json(root, path, &s, inner, sizeof inner);
    cJSON_Delete(root);
    if (rc != 0) {
        /* Field messages stay as they are; the file is named once in front. */
        pdbx_fail(err, errlen, "%s: %s", path, inner);
        return -1;
    }
    *spec = s;
    return 0;
}

/* ---- overrides --------------------------------------------------------------------------- */

/* The JSON value that pdbx_spec_set's text stands for: numbers and booleans parsed, strings
 * and lists kept as text (their readers take the string forms). NULL with the message. */
static cJSON *value_of_text(const plan_field_def *f, const char *value, char *err, size_t errlen)
{
    static const char *const want[] = {[PLAN_F_INT] = "an integer", [PLAN_F_NUM] = "a number",
                                       [PLAN_F_BOOL] = "true or false"};
    long long i;
    double d;
    int b, ok = 1;
    cJSON *v = NULL;
    if (f->kind == PLAN_F_INT && (ok = plan_parse_ll(value, &i) == 0))
        v = cJSON_CreateNumber((double)i);
    else if (f->kind == PLAN_F_NUM && (ok = plan_parse_double(value, &d) == 0))
        v = cJSON_CreateNumber(d);
    else if (f->kind == PLAN_F_BOOL && (ok = plan_parse_bool(value, &b) == 0))
        v = cJSON_CreateBool(b);
    else if (ok)                                   /* PLAN_F_STR, PLAN_F_LIST */
        v = cJSON_CreateString(value);
    if (!ok)
        pdbx_fail(err, errlen, "%s: expected %s, got \"%s\"", f->name, want[f->kind], value);
    else if (!v)
        pdbx_fail(err, errlen, "%s: out of memory", f->name);
    return v;
}

int pdbx_spec_set(pdbx_spec *spec, const char *field, const char *value, char *err, size_t errlen)
{
    if (!field || !value)
        return pdbx_fail(err, errlen, "spec: missing field or value");
    const plan_field_def *f = find_field(field);
    if (!f)
        return unknown_field(field, 0, err, errlen);
    cJSON *v = value_of_text(f, value, err, errlen);
    if (!v)
        return -1;
    pdbx_spec t = *spec;
    int rc;
    if (strcmp(field, "configs") == 0) {
        plan_config_set cs;
        rc = plan_configs_from_text(value, &cs, err, errlen);
        if (rc == 0)
            plan_configs_apply(&t, &cs);
    } else if (strcmp(field, "tp") == 0 || strcmp(field, "pp") == 0 || strcmp(field, "dp") == 0 ||
               strcmp(field, "ep") == 0 || strcmp(field, "gpus") == 0) {
        rc = plan_configs_override(&t, field, v, err, errlen);
    } else {
        rc = apply_field(&t, f, v, err, errlen);
    }
    cJSON_Delete(v);
    if (rc != 0)
        return -1;
    *spec = t;
    return 0;
}

/* ---- writing --------------------------------------------------------------------------- */

/* Adds item under key, or frees it: 0, or -1 when item is NULL or cannot be added. */
static int add_item(cJSON *o, const char *key, cJSON *item)
{
    if (item && cJSON_AddItemToObject(o, key, item))
        return 0;
    cJSON_Delete(item);
    return -1;
}

/* Appends item to arr, or frees it: 0, or -1 when item is NULL or cannot be added. */
static int push_item(cJSON *arr, cJSON *item)
{
    if (item && cJSON_AddItemToArray(arr, item))
        return 0;
    cJSON_Delete(item);
    return -1;
}

static cJSON *configs_to_json(const pdbx_spec *s)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < s->nconfigs && i < PDBX_MAX_CONFIGS; i++) {
        cJSON *c = cJSON_CreateObject();
        if (push_item(arr, c) != 0 || !cJSON_AddNumberToObject(c, "tp", s->configs[i].tp) ||
            !cJSON_AddNumberToObject(c, "pp", s->configs[i].pp) ||
            !cJSON_AddNumberToObject(c, "dp", s->configs[i].dp) ||
            /* ep only when > 1: a dense run's spec reads as it did before ep existed */
            (pdbx_par_ep(&s->configs[i]) > 1 && !cJSON_AddNumberToObject(c, "ep", s->configs[i].ep))) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

static cJSON *mbs_to_json(const pdbx_spec *s)
{
    cJSON *mbs = cJSON_CreateObject();
    if (mbs && (!cJSON_AddNumberToObject(mbs, "min", s->mbs_min) ||
                !cJSON_AddNumberToObject(mbs, "max", s->mbs_max))) {
        cJSON_Delete(mbs);
        return NULL;
    }
    return mbs;
}

static cJSON *ops_to_json(const pdbx_spec *s)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < PDBX_OP_COUNT; i++)
        if ((s->ops & PDBX_OP_BIT(i)) &&
            push_item(arr, cJSON_CreateString(pdbx_op_name((pdbx_op)i))) != 0) {
            cJSON_Delete(arr);
            return NULL;
        }
    return arr;
}

static cJSON *passes_to_json(const pdbx_spec *s)
{
    cJSON *arr = cJSON_CreateArray();
    for (int p = 0; arr && p < PDBX_PASS_COUNT; p++)
        if ((s->passes & PDBX_PASS_BIT(p)) &&
            push_item(arr, cJSON_CreateString(pdbx_pass_name((pdbx_pass)p))) != 0) {
            cJSON_Delete(arr);
            return NULL;
        }
    return arr;
}

static cJSON *coll_sizes_to_json(const pdbx_spec *s)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < s->ncoll_sizes && i < PDBX_MAX_COLL_SIZES; i++)
        if (push_item(arr, cJSON_CreateNumber(s->coll_sizes[i])) != 0) {
            cJSON_Delete(arr);
            return NULL;
        }
    return arr;
}

/* In the order of the field table (plan_fields[]). */
cJSON *pdbx_spec_to_json(const pdbx_spec *s)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    if (!cJSON_AddStringToObject(o, "name", s->name) ||
        add_item(o, "model", plan_model_to_json(&s->model)) != 0 ||
        add_item(o, "gpu", plan_gpu_to_json(&s->gpu)) != 0 ||
        !cJSON_AddNumberToObject(o, "layers", s->layers_profiled) ||
        !cJSON_AddNumberToObject(o, "seq_len", s->seq_len) ||
        !cJSON_AddStringToObject(o, "dtype", pdbx_dtype_name(s->dtype)) ||
        !cJSON_AddStringToObject(o, "backend", pdbx_backend_name(s->backend)) ||
        !cJSON_AddNumberToObject(o, "gpus_per_node", s->gpus_per_node) ||
        !cJSON_AddNumberToObject(o, "nodes", s->nodes) ||
        !cJSON_AddStringToObject(o, "launcher", pdbx_launcher_name(s->launcher)) ||
        add_item(o, "configs", configs_to_json(s)) != 0 ||
        add_item(o, "mbs", mbs_to_json(s)) != 0 ||
        !cJSON_AddStringToObject(o, "repetition", pdbx_repetition_name(s->repetition)) ||
        !cJSON_AddNumberToObject(o, "warmup", s->warmup) ||
        !cJSON_AddNumberToObject(o, "steps", s->steps) ||
        !cJSON_AddNumberToObject(o, "target_rel_ci", s->target_rel_ci) ||
        !cJSON_AddNumberToObject(o, "min_reps", s->min_reps) ||
        !cJSON_AddNumberToObject(o, "max_reps", s->max_reps) ||
        !cJSON_AddNumberToObject(o, "max_seconds_per_op", s->max_seconds_per_op) ||
        add_item(o, "passes", passes_to_json(s)) != 0 ||
        add_item(o, "ops", ops_to_json(s)) != 0 ||
        !cJSON_AddBoolToObject(o, "collectives", s->collectives) ||
        add_item(o, "coll_sizes", coll_sizes_to_json(s)) != 0 ||
        !cJSON_AddBoolToObject(o, "predict_oom", s->predict_oom) ||
        !cJSON_AddNumberToObject(o, "bytes_per_param", s->bytes_per_param) ||
        !cJSON_AddBoolToObject(o, "zero1", s->zero1) ||
        !cJSON_AddBoolToObject(o, "flash_attention", s->flash_attention) ||
        !cJSON_AddStringToObject(o, "recompute", pdbx_recompute_name(s->recompute)) ||
        add_item(o, "moe_routing", plan_moe_routing_to_json(s->moe_imbalance)) != 0 ||
        !cJSON_AddNumberToObject(o, "timeout_s", s->timeout_s) ||
        !cJSON_AddBoolToObject(o, "flush_l2", s->flush_l2) ||
        !cJSON_AddBoolToObject(o, "fused_projections", s->fused_projections) ||
        !cJSON_AddStringToObject(o, "fp32_math", pdbx_fp32_math_name(s->fp32_math)) ||
        !cJSON_AddStringToObject(o, "gemm_api", pdbx_gemm_api_name(s->gemm_api)) ||
        add_item(o, "tokens", plan_tokens_to_json(s)) != 0 ||
        add_item(o, "kv_cache", plan_kv_cache_to_json(&s->kv_cache)) != 0) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
