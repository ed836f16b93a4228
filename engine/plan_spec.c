/* plan_spec.c: the sweep spec: defaults, JSON reading (pdbx_spec_from_json / _load), CLI-style
 * overrides (pdbx_spec_set) and JSON writing (pdbx_spec_to_json). Validation of the whole spec
 * lives in plan_validate.c; the schema is documented in docs/spec.md.
 *
 * Both the JSON reader and pdbx_spec_set go through apply_field(), so a field has one reader
 * and one set of messages: pdbx_spec_set turns its string into the JSON value the field expects
 * ("2048" -> 2048, "true" -> true) and lists keep their string forms ("1:128", "1,2,4"). */
#include "engine/plan_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define COLL_SIZE_MAX 17179869184.0   /* 16 GiB: the largest collective message (2^34 bytes) */

const char *pdbx_dtype_name(pdbx_dtype d)
{
    switch (d) {
    case PDBX_DTYPE_BF16: return "bf16";
    case PDBX_DTYPE_FP16: return "fp16";
    case PDBX_DTYPE_FP32: return "fp32";
    }
    return "?";
}

int pdbx_dtype_bytes(pdbx_dtype d)
{
    return d == PDBX_DTYPE_FP32 ? 4 : 2;
}

const char *pdbx_backend_name(pdbx_backend_kind b)
{
    switch (b) {
    case PDBX_BACKEND_AUTO: return "auto";
    case PDBX_BACKEND_CPU: return "cpu";
    case PDBX_BACKEND_CUDA: return "cuda";
    }
    return "?";
}

/* ---- field table ----------------------------------------------------------------------- */

typedef enum { K_STR, K_INT, K_NUM, K_BOOL, K_LIST } field_kind;   /* K_LIST: keeps string forms */

typedef struct {
    const char *name;
    field_kind kind;
    long long lo, hi;          /* K_INT range checked when read */
} field_def;

/* In the order pdbx_spec_to_json writes them and --help lists them. */
static const field_def fields[] = {
    {"name", K_STR, 0, 0},
    {"model", K_STR, 0, 0},
    {"gpu", K_STR, 0, 0},
    {"gpu_mem_gb", K_NUM, 0, 0},
    {"layers", K_INT, 1, 4096},
    {"seq_len", K_INT, 1, 131072},
    {"dtype", K_STR, 0, 0},
    {"backend", K_STR, 0, 0},
    {"gpus_per_node", K_INT, 1, 256},
    {"nodes", K_INT, 1, 4096},
    {"configs", K_LIST, 0, 0},
    {"tp", K_LIST, 0, 0},
    {"pp", K_LIST, 0, 0},
    {"dp", K_LIST, 0, 0},
    {"gpus", K_INT, 1, 1048576},
    {"mbs", K_LIST, 0, 0},
    {"mbs_min", K_INT, 1, 1024},
    {"mbs_max", K_INT, 1, 1024},
    {"warmup", K_INT, 0, 1000},
    {"steps", K_INT, 1, 100000},
    {"ops", K_LIST, 0, 0},
    {"collectives", K_BOOL, 0, 0},
    {"coll_sizes", K_LIST, 0, 0},
    {"predict_oom", K_BOOL, 0, 0},
    {"bytes_per_param", K_NUM, 0, 0},
    {"zero1", K_BOOL, 0, 0},
    {"flash_attention", K_BOOL, 0, 0},
    {"timeout_s", K_NUM, 0, 0},
    {"flush_l2", K_BOOL, 0, 0},
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

static const char *const field_name_list[N_FIELDS + 1] = {
    "name", "model", "gpu", "gpu_mem_gb", "layers", "seq_len", "dtype", "backend", "gpus_per_node",
    "nodes", "configs", "tp", "pp", "dp", "gpus", "mbs", "mbs_min", "mbs_max", "warmup", "steps",
    "ops", "collectives", "coll_sizes", "predict_oom", "bytes_per_param", "zero1", "flash_attention",
    "timeout_s", "flush_l2", NULL,
};

const char *const *pdbx_spec_field_names(void)
{
    return field_name_list;
}

/* Spec files may also carry a free-text "description" (not stored, not written back). */
static const char *const json_only_fields[] = {"description"};

static const field_def *find_field(const char *name)
{
    for (size_t i = 0; i < N_FIELDS; i++)
        if (strcmp(fields[i].name, name) == 0)
            return &fields[i];
    return NULL;
}

static int unknown_field(const char *name, int json, char *err, size_t errlen)
{
    const char *cands[N_FIELDS + 1];
    size_t n = 0;
    for (size_t i = 0; i < N_FIELDS; i++)
        cands[n++] = fields[i].name;
    if (json)
        cands[n++] = json_only_fields[0];
    char sug[1024];
    plan_suggest(name, cands, n, sug, sizeof sug);
    return plan_fail(err, errlen, "unknown field '%s'%s", name, sug);
}

/* ---- defaults ---------------------------------------------------------------------------- */

void pdbx_spec_defaults(pdbx_spec *s)
{
    memset(s, 0, sizeof *s);
    plan_copy(s->name, sizeof s->name, "custom");
    plan_default_model(&s->model);
    plan_default_gpu(&s->gpu);
    s->layers_profiled = 1;
    s->seq_len = 128;
    s->dtype = PDBX_DTYPE_FP32;
    s->backend = PDBX_BACKEND_CPU;
    s->gpus_per_node = 2;
    s->nodes = 1;
    s->configs[0] = (pdbx_parallel){1, 1, 2};
    s->configs[1] = (pdbx_parallel){2, 1, 1};
    s->nconfigs = 2;
    s->mbs_min = 1;
    s->mbs_max = 8;
    s->warmup = 1;
    s->steps = 3;
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
    s->timeout_s = 300;
    s->flush_l2 = 0;
}

/* ---- small readers ------------------------------------------------------------------------ */

static int not_allowed(const char *field, const char *value, const char *const *cands, size_t n,
                       char *err, size_t errlen)
{
    char sug[512];
    plan_suggest(value, cands, n, sug, sizeof sug);
    return plan_fail(err, errlen, "%s: \"%s\" is not allowed%s", field, value, sug);
}

static int read_dtype(const cJSON *v, pdbx_dtype *out, char *err, size_t errlen)
{
    static const char *const names[] = {"bf16", "fp16", "fp32"};
    static const struct { const char *alias; pdbx_dtype d; } aliases[] = {
        {"bf16", PDBX_DTYPE_BF16}, {"bfloat16", PDBX_DTYPE_BF16}, {"fp16", PDBX_DTYPE_FP16},
        {"float16", PDBX_DTYPE_FP16}, {"half", PDBX_DTYPE_FP16}, {"fp32", PDBX_DTYPE_FP32},
        {"float32", PDBX_DTYPE_FP32}, {"float", PDBX_DTYPE_FP32},
    };
    const char *s;
    if (plan_json_string(v, "dtype", &s, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcasecmp(s, aliases[i].alias) == 0) {
            *out = aliases[i].d;
            return 0;
        }
    return not_allowed("dtype", s, names, 3, err, errlen);
}

static int read_backend(const cJSON *v, pdbx_backend_kind *out, char *err, size_t errlen)
{
    static const char *const names[] = {"auto", "cpu", "cuda"};
    const char *s;
    if (plan_json_string(v, "backend", &s, err, errlen) != 0)
        return -1;
    for (int i = 0; i < 3; i++)
        if (strcasecmp(s, names[i]) == 0) {
            *out = (pdbx_backend_kind)i;
            return 0;
        }
    return not_allowed("backend", s, names, 3, err, errlen);
}

static int pow2_fail(const char *field, long long v, long long hi, char *err, size_t errlen)
{
    return plan_fail(err, errlen, "%s: %lld is not a power of two (allowed: 1, 2, 4, ..., %lld)", field, v, hi);
}

/* "A:B" -> two integers (each may carry a K/M/G/T suffix when bytes != 0). */
static int split_range(const char *s, long long *a, long long *b, int bytes)
{
    const char *colon = strchr(s, ':');
    if (!colon || strchr(colon + 1, ':'))
        return -1;
    char left[64];
    size_t n = (size_t)(colon - s);
    if (n == 0 || n >= sizeof left)
        return -1;
    memcpy(left, s, n);
    left[n] = '\0';
    if (bytes) {
        double x, y;
        if (plan_parse_bytes(left, &x) != 0 || plan_parse_bytes(colon + 1, &y) != 0)
            return -1;
        if (fabs(x) > 9e18 || fabs(y) > 9e18)
            return -1;
        *a = (long long)x;
        *b = (long long)y;
        return 0;
    }
    return plan_parse_ll(left, a) == 0 && plan_parse_ll(colon + 1, b) == 0 ? 0 : -1;
}

/* An integer list for tp, pp, dp: an integer, an array of integers, "1,2,4" or "A:B" (the
 * powers of two from A to B). Values are range-checked; order is kept, duplicates refused. */
static int read_int_list(const cJSON *v, const char *field, long long lo, long long hi, int *out,
                         size_t cap, size_t *n, char *err, size_t errlen)
{
    *n = 0;
    char label[64];
    if (cJSON_IsNumber(v)) {
        long long x;
        if (plan_json_int(v, field, lo, hi, &x, err, errlen) != 0)
            return -1;
        out[(*n)++] = (int)x;
        return 0;
    }
    if (cJSON_IsArray(v)) {
        int i = 0;
        for (const cJSON *it = v->child; it; it = it->next, i++) {
            snprintf(label, sizeof label, "%s[%d]", field, i);
            long long x;
            if (plan_json_int(it, label, lo, hi, &x, err, errlen) != 0)
                return -1;
            if (*n >= cap)
                return plan_fail(err, errlen, "%s: more than %zu values (allowed: at most %zu)", field, cap, cap);
            for (size_t k = 0; k < *n; k++)
                if (out[k] == x)
                    return plan_fail(err, errlen, "%s: %lld is listed twice (allowed: each value once)", field, x);
            out[(*n)++] = (int)x;
        }
        if (*n == 0)
            return plan_fail(err, errlen, "%s: empty list (allowed: one or more integers %lld..%lld)", field, lo, hi);
        return 0;
    }
    if (cJSON_IsString(v) && v->valuestring) {
        const char *s = v->valuestring;
        long long a, b;
        if (strchr(s, ':')) {
            if (split_range(s, &a, &b, 0) != 0)
                return plan_fail(err, errlen, "%s: expected \"A:B\" (powers of two A..B), got \"%s\"", field, s);
            if (a < lo || a > hi)
                return plan_range_fail(field, a, lo, hi, err, errlen);
            if (b < lo || b > hi)
                return plan_range_fail(field, b, lo, hi, err, errlen);
            if (!plan_is_pow2(a))
                return pow2_fail(field, a, hi, err, errlen);
            if (!plan_is_pow2(b))
                return pow2_fail(field, b, hi, err, errlen);
            if (a > b)
                return plan_fail(err, errlen, "%s: range \"%s\" has its start above its end (allowed: A <= B)", field, s);
            for (long long x = a; x <= b; x *= 2) {
                if (*n >= cap)
                    return plan_fail(err, errlen, "%s: more than %zu values (allowed: at most %zu)", field, cap, cap);
                out[(*n)++] = (int)x;
            }
            return 0;
        }
        /* comma list */
        char buf[512];
        if (strlen(s) >= sizeof buf)
            return plan_fail(err, errlen, "%s: value too long (allowed: at most %zu characters)", field, sizeof buf - 1);
        plan_copy(buf, sizeof buf, s);
        char *save = NULL;
        for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            long long x;
            if (plan_parse_ll(tok, &x) != 0)
                return plan_fail(err, errlen, "%s: expected an integer, got \"%s\"", field, tok);
            if (x < lo || x > hi)
                return plan_range_fail(field, x, lo, hi, err, errlen);
            if (*n >= cap)
                return plan_fail(err, errlen, "%s: more than %zu values (allowed: at most %zu)", field, cap, cap);
            for (size_t k = 0; k < *n; k++)
                if (out[k] == x)
                    return plan_fail(err, errlen, "%s: %lld is listed twice (allowed: each value once)", field, x);
            out[(*n)++] = (int)x;
        }
        if (*n == 0)
            return plan_fail(err, errlen, "%s: empty list (allowed: one or more integers %lld..%lld)", field, lo, hi);
        return 0;
    }
    char b[64];
    plan_json_brief(v, b, sizeof b);
    return plan_fail(err, errlen, "%s: expected an integer, a list of integers or \"A:B\", got %s", field, b);
}

static int check_mbs_bound(const char *field, long long v, char *err, size_t errlen)
{
    if (v < 1 || v > 1024)
        return plan_range_fail(field, v, 1, 1024, err, errlen);
    if (!plan_is_pow2(v))
        return pow2_fail(field, v, 1024, err, errlen);
    return 0;
}

static int read_mbs(const cJSON *v, pdbx_spec *s, char *err, size_t errlen)
{
    long long a, b;
    if (cJSON_IsNumber(v)) {
        if (plan_json_int(v, "mbs", 1, 1024, &a, err, errlen) != 0)
            return -1;
        b = a;
    } else if (cJSON_IsString(v) && v->valuestring) {
        const char *str = v->valuestring;
        if (strchr(str, ':')) {
            if (split_range(str, &a, &b, 0) != 0)
                return plan_fail(err, errlen, "mbs: expected \"MIN:MAX\" (powers of two), got \"%s\"", str);
        } else if (plan_parse_ll(str, &a) == 0) {
            b = a;
        } else {
            return plan_fail(err, errlen, "mbs: expected \"MIN:MAX\" (powers of two), got \"%s\"", str);
        }
    } else if (cJSON_IsObject(v)) {
        a = s->mbs_min;
        b = s->mbs_max;
        for (const cJSON *it = v->child; it; it = it->next) {
            long long *slot = NULL;
            const char *label = NULL;
            if (it->string && strcmp(it->string, "min") == 0) {
                slot = &a;
                label = "mbs_min";
            } else if (it->string && strcmp(it->string, "max") == 0) {
                slot = &b;
                label = "mbs_max";
            } else {
                static const char *const mm[] = {"min", "max"};
                char sug[128];
                plan_suggest(it->string ? it->string : "", mm, 2, sug, sizeof sug);
                return plan_fail(err, errlen, "mbs: unknown field '%s'%s", it->string ? it->string : "", sug);
            }
            if (plan_json_int(it, label, -(1LL << 40), 1LL << 40, slot, err, errlen) != 0)
                return -1;
        }
    } else {
        char br[64];
        plan_json_brief(v, br, sizeof br);
        return plan_fail(err, errlen, "mbs: expected {\"min\": A, \"max\": B}, \"A:B\" or an integer, got %s", br);
    }
    if (check_mbs_bound("mbs_min", a, err, errlen) != 0 || check_mbs_bound("mbs_max", b, err, errlen) != 0)
        return -1;
    if (a > b)
        return plan_fail(err, errlen, "mbs_min: %lld is greater than mbs_max %lld (allowed: mbs_min <= mbs_max)", a, b);
    s->mbs_min = (int)a;
    s->mbs_max = (int)b;
    return 0;
}

static int add_op(const char *name, uint32_t *mask, char *err, size_t errlen)
{
    if (strcmp(name, "all") == 0) {
        *mask |= PDBX_OPS_ALL;
        return 0;
    }
    int op = pdbx_op_from_name(name);
    if (op < 0) {
        const char *cands[PDBX_OP_COUNT + 1];
        for (int i = 0; i < PDBX_OP_COUNT; i++)
            cands[i] = pdbx_op_name((pdbx_op)i);
        cands[PDBX_OP_COUNT] = "all";
        char sug[1024];
        plan_suggest(name, cands, PDBX_OP_COUNT + 1, sug, sizeof sug);
        return plan_fail(err, errlen, "ops: unknown op '%s'%s", name, sug);
    }
    *mask |= PDBX_OP_BIT(op);
    return 0;
}

static int read_ops(const cJSON *v, uint32_t *out, char *err, size_t errlen)
{
    uint32_t mask = 0;
    if (cJSON_IsArray(v)) {
        int i = 0;
        for (const cJSON *it = v->child; it; it = it->next, i++) {
            char label[32];
            const char *s;
            snprintf(label, sizeof label, "ops[%d]", i);
            if (plan_json_string(it, label, &s, err, errlen) != 0 || add_op(s, &mask, err, errlen) != 0)
                return -1;
        }
    } else if (cJSON_IsString(v) && v->valuestring) {
        char buf[1024];
        if (strlen(v->valuestring) >= sizeof buf)
            return plan_fail(err, errlen, "ops: value too long (allowed: at most %zu characters)", sizeof buf - 1);
        plan_copy(buf, sizeof buf, v->valuestring);
        char *save = NULL;
        for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
            if (add_op(tok, &mask, err, errlen) != 0)
                return -1;
    } else {
        char br[64];
        plan_json_brief(v, br, sizeof br);
        return plan_fail(err, errlen, "ops: expected a list of op names or \"all\", got %s", br);
    }
    if (mask == 0)
        return plan_fail(err, errlen, "ops: empty list (allowed: one or more op names, or \"all\")");
    *out = mask;
    return 0;
}

static int coll_size_ok(const char *field, double x, char *err, size_t errlen)
{
    if (!(x >= 1 && x <= COLL_SIZE_MAX))
        return plan_fail(err, errlen, "%s: %.0f is out of range (allowed: 1..%.0f bytes)", field, x, COLL_SIZE_MAX);
    if (x != floor(x) || !plan_is_pow2((long long)x))
        return plan_fail(err, errlen, "%s: %.0f is not a power of two (allowed: 1, 2, 4, ..., %.0f)", field, x,
                         COLL_SIZE_MAX);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int push_size(double x, double *out, int *n, char *err, size_t errlen)
{
    for (int k = 0; k < *n; k++)
        if (out[k] == x)
            return 0;
    if (*n >= PDBX_MAX_COLL_SIZES)
        return plan_fail(err, errlen, "coll_sizes: more than %d sizes (allowed: at most %d)",
                         PDBX_MAX_COLL_SIZES, PDBX_MAX_COLL_SIZES);
    out[(*n)++] = x;
    return 0;
}

/* A list of byte sizes (numbers, or strings with K/M/G suffixes), "MIN:MAX" (every power of
 * two between) or "1K,64K,1M". Sorted ascending, duplicates dropped. */
static int read_coll_sizes(const cJSON *v, pdbx_spec *s, char *err, size_t errlen)
{
    double sizes[PDBX_MAX_COLL_SIZES];
    int n = 0;
    if (cJSON_IsArray(v)) {
        int i = 0;
        for (const cJSON *it = v->child; it; it = it->next, i++) {
            char label[32];
            snprintf(label, sizeof label, "coll_sizes[%d]", i);
            double x;
            if (cJSON_IsNumber(it)) {
                x = it->valuedouble;
            } else if (cJSON_IsString(it) && plan_parse_bytes(it->valuestring, &x) == 0) {
                /* "64K" */
            } else {
                char br[64];
                plan_json_brief(it, br, sizeof br);
                return plan_fail(err, errlen, "%s: expected a size in bytes, got %s", label, br);
            }
            if (coll_size_ok(label, x, err, errlen) != 0 || push_size(x, sizes, &n, err, errlen) != 0)
                return -1;
        }
    } else if (cJSON_IsString(v) && v->valuestring) {
        const char *str = v->valuestring;
        if (strchr(str, ':')) {
            long long a, b;
            if (split_range(str, &a, &b, 1) != 0)
                return plan_fail(err, errlen, "coll_sizes: expected \"MIN:MAX\" bytes (e.g. \"1K:1G\"), got \"%s\"", str);
            if (coll_size_ok("coll_sizes", (double)a, err, errlen) != 0 ||
                coll_size_ok("coll_sizes", (double)b, err, errlen) != 0)
                return -1;
            if (a > b)
                return plan_fail(err, errlen, "coll_sizes: range \"%s\" has its start above its end (allowed: MIN <= MAX)", str);
            for (long long x = a; x <= b; x *= 2)
                if (push_size((double)x, sizes, &n, err, errlen) != 0)
                    return -1;
        } else {
            char buf[1024];
            if (strlen(str) >= sizeof buf)
                return plan_fail(err, errlen, "coll_sizes: value too long (allowed: at most %zu characters)", sizeof buf - 1);
            plan_copy(buf, sizeof buf, str);
            char *save = NULL;
            for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                double x;
                if (plan_parse_bytes(tok, &x) != 0)
                    return plan_fail(err, errlen, "coll_sizes: expected a size in bytes, got \"%s\"", tok);
                if (coll_size_ok("coll_sizes", x, err, errlen) != 0 || push_size(x, sizes, &n, err, errlen) != 0)
                    return -1;
            }
        }
    } else {
        char br[64];
        plan_json_brief(v, br, sizeof br);
        return plan_fail(err, errlen, "coll_sizes: expected a list of byte sizes or \"MIN:MAX\", got %s", br);
    }
    qsort(sizes, (size_t)n, sizeof sizes[0], cmp_double);
    memcpy(s->coll_sizes, sizes, (size_t)n * sizeof sizes[0]);
    s->ncoll_sizes = n;
    return 0;
}

/* ---- parallel configurations ----------------------------------------------------------- */

#define LIST_CAP 64
#define TP_MAX 4096
#define PP_MAX 4096
#define DP_MAX 65536

typedef struct {
    pdbx_parallel c[PDBX_MAX_CONFIGS];
    int n;
} config_set;

static int config_add(config_set *cs, int tp, int pp, int dp, char *err, size_t errlen)
{
    for (int i = 0; i < cs->n; i++)
        if (cs->c[i].tp == tp && cs->c[i].pp == pp && cs->c[i].dp == dp)
            return 0;
    if (cs->n >= PDBX_MAX_CONFIGS)
        return plan_fail(err, errlen, "configs: more than %d configurations (allowed: at most %d)",
                         PDBX_MAX_CONFIGS, PDBX_MAX_CONFIGS);
    cs->c[cs->n++] = (pdbx_parallel){tp, pp, dp};
    return 0;
}

static void list_text(const int *v, size_t n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? "," : "", v[i]);
}

/* The cross product tp x pp x dp in that nesting order (FASOP's order: TP outermost), or with
 * gpus > 0 tp x pp and DP = gpus / (tp*pp). Combinations that do not fit the cluster
 * (gpus_per_node x nodes), or whose tp*pp does not divide gpus, are skipped. */
static int cross_product(const pdbx_spec *s, const int *tps, size_t ntp, const int *pps, size_t npp,
                         const int *dps, size_t ndp, long long gpus, config_set *out, char *err, size_t errlen)
{
    long long cluster = (long long)s->gpus_per_node * s->nodes;
    out->n = 0;
    if (gpus > 0 && gpus > cluster)
        return plan_fail(err, errlen, "gpus: %lld exceeds gpus_per_node %d x nodes %d = %lld (allowed: 1..%lld)",
                         gpus, s->gpus_per_node, s->nodes, cluster, cluster);
    for (size_t i = 0; i < ntp; i++)
        for (size_t j = 0; j < npp; j++) {
            long long tpp = (long long)tps[i] * pps[j];
            if (gpus > 0) {
                if (gpus % tpp == 0 && config_add(out, tps[i], pps[j], (int)(gpus / tpp), err, errlen) != 0)
                    return -1;
                continue;
            }
            for (size_t k = 0; k < ndp; k++)
                if (tpp * dps[k] <= cluster && config_add(out, tps[i], pps[j], dps[k], err, errlen) != 0)
                    return -1;
        }
    if (out->n == 0) {
        char a[256], b[256], c[256];
        list_text(tps, ntp, a, sizeof a);
        list_text(pps, npp, b, sizeof b);
        if (gpus > 0)
            return plan_fail(err, errlen, "gpus: %lld is not a multiple of tp*pp for any tp in [%s] and pp in [%s] "
                             "(allowed: a multiple of tp*pp)", gpus, a, b);
        list_text(dps, ndp, c, sizeof c);
        return plan_fail(err, errlen, "tp: no combination of tp [%s] x pp [%s] x dp [%s] fits gpus_per_node %d x "
                         "nodes %d = %lld GPUs (allowed: tp*pp*dp <= %lld)", a, b, c, s->gpus_per_node, s->nodes,
                         cluster, cluster);
    }
    return 0;
}

/* "configs": [{"tp":8,"pp":2,"dp":1}, {"tp":4,"pp":2,"gpus":16}, ...] */
static int read_configs_array(const cJSON *v, const pdbx_spec *s, config_set *out, char *err, size_t errlen)
{
    (void)s;
    if (!cJSON_IsArray(v)) {
        char br[64];
        plan_json_brief(v, br, sizeof br);
        return plan_fail(err, errlen, "configs: expected a list of {\"tp\", \"pp\", \"dp\"} objects, got %s", br);
    }
    out->n = 0;
    int i = 0;
    for (const cJSON *it = v->child; it; it = it->next, i++) {
        char label[64];
        snprintf(label, sizeof label, "configs[%d]", i);
        if (!cJSON_IsObject(it)) {
            char br[64];
            plan_json_brief(it, br, sizeof br);
            return plan_fail(err, errlen, "%s: expected an object {\"tp\", \"pp\", \"dp\"}, got %s", label, br);
        }
        static const char *const keys[] = {"tp", "pp", "dp", "gpus"};
        for (const cJSON *k = it->child; k; k = k->next) {
            int known = 0;
            for (size_t q = 0; q < 4; q++)
                known |= k->string && strcmp(k->string, keys[q]) == 0;
            if (!known) {
                char sug[128];
                plan_suggest(k->string ? k->string : "", keys, 4, sug, sizeof sug);
                return plan_fail(err, errlen, "%s: unknown field '%s'%s", label, k->string ? k->string : "", sug);
            }
        }
        long long tp = 1, pp = 1, dp = 1, gpus = 0;
        const cJSON *jtp = cJSON_GetObjectItemCaseSensitive(it, "tp");
        const cJSON *jpp = cJSON_GetObjectItemCaseSensitive(it, "pp");
        const cJSON *jdp = cJSON_GetObjectItemCaseSensitive(it, "dp");
        const cJSON *jg = cJSON_GetObjectItemCaseSensitive(it, "gpus");
        char f[96];
        if (!jtp)
            return plan_fail(err, errlen, "%s: missing required field 'tp'", label);
        snprintf(f, sizeof f, "%s.tp", label);
        if (plan_json_int(jtp, f, 1, TP_MAX, &tp, err, errlen) != 0)
            return -1;
        snprintf(f, sizeof f, "%s.pp", label);
        if (jpp && plan_json_int(jpp, f, 1, PP_MAX, &pp, err, errlen) != 0)
            return -1;
        snprintf(f, sizeof f, "%s.dp", label);
        if (jdp && plan_json_int(jdp, f, 1, DP_MAX, &dp, err, errlen) != 0)
            return -1;
        snprintf(f, sizeof f, "%s.gpus", label);
        if (jg && plan_json_int(jg, f, 1, 1048576, &gpus, err, errlen) != 0)
            return -1;
        if (jg && !jdp) {
            if (gpus % (tp * pp) != 0)
                return plan_fail(err, errlen, "%s.gpus: %lld is not a multiple of tp %lld x pp %lld = %lld "
                                 "(allowed: a multiple of %lld)", label, gpus, tp, pp, tp * pp, tp * pp);
            dp = gpus / (tp * pp);
        } else if (jg && tp * pp * dp != gpus) {
            return plan_fail(err, errlen, "%s: tp %lld x pp %lld x dp %lld = %lld does not equal gpus %lld "
                             "(allowed: tp*pp*dp = gpus)", label, tp, pp, dp, tp * pp * dp, gpus);
        }
        for (int q = 0; q < out->n; q++)
            if (out->c[q].tp == tp && out->c[q].pp == pp && out->c[q].dp == dp)
                return plan_fail(err, errlen, "configs: TP%lld/PP%lld/DP%lld is listed twice (allowed: each "
                                 "configuration once)", tp, pp, dp);
        if (config_add(out, (int)tp, (int)pp, (int)dp, err, errlen) != 0)
            return -1;
    }
    if (out->n == 0)
        return plan_fail(err, errlen, "configs: empty list (allowed: 1 to %d configurations)", PDBX_MAX_CONFIGS);
    return 0;
}

/* "1x8x1,2x4x1" (TPxPPxDP) for pdbx_spec_set("configs", ...). */
static int read_configs_text(const char *str, config_set *out, char *err, size_t errlen)
{
    char buf[1024];
    if (strlen(str) >= sizeof buf)
        return plan_fail(err, errlen, "configs: value too long (allowed: at most %zu characters)", sizeof buf - 1);
    plan_copy(buf, sizeof buf, str);
    out->n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        int tp, pp, dp, used = 0;
        if (sscanf(tok, "%dx%dx%d%n", &tp, &pp, &dp, &used) != 3 || tok[used] != '\0')
            return plan_fail(err, errlen, "configs: expected TPxPPxDP (e.g. 2x4x1), got \"%s\"", tok);
        if (tp < 1 || tp > TP_MAX)
            return plan_range_fail("tp", tp, 1, TP_MAX, err, errlen);
        if (pp < 1 || pp > PP_MAX)
            return plan_range_fail("pp", pp, 1, PP_MAX, err, errlen);
        if (dp < 1 || dp > DP_MAX)
            return plan_range_fail("dp", dp, 1, DP_MAX, err, errlen);
        for (int q = 0; q < out->n; q++)
            if (out->c[q].tp == tp && out->c[q].pp == pp && out->c[q].dp == dp)
                return plan_fail(err, errlen, "configs: TP%d/PP%d/DP%d is listed twice (allowed: each "
                                 "configuration once)", tp, pp, dp);
        if (config_add(out, tp, pp, dp, err, errlen) != 0)
            return -1;
    }
    if (out->n == 0)
        return plan_fail(err, errlen, "configs: empty list (allowed: TPxPPxDP,...)");
    return 0;
}

static void set_configs(pdbx_spec *s, const config_set *cs)
{
    memcpy(s->configs, cs->c, (size_t)cs->n * sizeof cs->c[0]);
    s->nconfigs = cs->n;
}

/* Distinct values of the current configurations, in first-seen order. */
static size_t distinct(const pdbx_spec *s, int which, int *out)
{
    size_t n = 0;
    for (int i = 0; i < s->nconfigs; i++) {
        const pdbx_parallel *c = &s->configs[i];
        int v = which == 0 ? c->tp : which == 1 ? c->pp : which == 2 ? c->dp : c->tp * c->pp * c->dp;
        size_t k;
        for (k = 0; k < n; k++)
            if (out[k] == v)
                break;
        if (k == n && n < PDBX_MAX_CONFIGS)
            out[n++] = v;
    }
    return n;
}

/* Overrides of tp, pp, dp, gpus (pdbx_spec_set): rebuild the configurations from the given list
 * and the distinct values of the current ones (docs/spec.md, "Overrides"):
 *   tp L:   L x current PP values, DP derived so each current GPU count is kept;
 *   pp L:   current TP values x L, DP derived likewise;
 *   dp L:   current TP values x current PP values x L;
 *   gpus N: each current (TP, PP) pair with DP = N/(TP*PP), pairs that do not divide N dropped. */
static int override_parallel(pdbx_spec *s, const char *field, const cJSON *v, char *err, size_t errlen)
{
    int list[LIST_CAP];
    size_t n = 0;
    config_set cs = {.n = 0};
    long long cluster = (long long)s->gpus_per_node * s->nodes;
    if (strcmp(field, "gpus") == 0) {
        long long g;
        if (plan_json_int(v, "gpus", 1, 1048576, &g, err, errlen) != 0)
            return -1;
        if (g > cluster)
            return plan_fail(err, errlen, "gpus: %lld exceeds gpus_per_node %d x nodes %d = %lld (allowed: 1..%lld)",
                             g, s->gpus_per_node, s->nodes, cluster, cluster);
        for (int i = 0; i < s->nconfigs; i++) {
            long long tpp = (long long)s->configs[i].tp * s->configs[i].pp;
            if (g % tpp == 0 && config_add(&cs, s->configs[i].tp, s->configs[i].pp, (int)(g / tpp), err, errlen) != 0)
                return -1;
        }
        if (cs.n == 0)
            return plan_fail(err, errlen, "gpus: %lld is not a multiple of tp*pp of any configuration "
                             "(allowed: a multiple of tp*pp; give tp and pp after gpus)", g);
        set_configs(s, &cs);
        return 0;
    }
    int which = strcmp(field, "tp") == 0 ? 0 : strcmp(field, "pp") == 0 ? 1 : 2;
    long long hi = which == 0 ? TP_MAX : which == 1 ? PP_MAX : DP_MAX;
    if (read_int_list(v, field, 1, hi, list, LIST_CAP, &n, err, errlen) != 0)
        return -1;
    int tps[PDBX_MAX_CONFIGS], pps[PDBX_MAX_CONFIGS], gs[PDBX_MAX_CONFIGS];
    size_t ntp = distinct(s, 0, tps), npp = distinct(s, 1, pps), ng = distinct(s, 3, gs);
    if (which == 2) {
        int dps[LIST_CAP];
        memcpy(dps, list, n * sizeof list[0]);
        return cross_product(s, tps, ntp, pps, npp, dps, n, 0, &cs, err, errlen) == 0 ? (set_configs(s, &cs), 0) : -1;
    }
    const int *T = which == 0 ? list : tps, *P = which == 1 ? list : pps;
    size_t nT = which == 0 ? n : ntp, nP = which == 1 ? n : npp;
    for (size_t i = 0; i < nT; i++)
        for (size_t j = 0; j < nP; j++)
            for (size_t k = 0; k < ng; k++) {
                long long tpp = (long long)T[i] * P[j];
                if (gs[k] % tpp == 0 && gs[k] <= cluster &&
                    config_add(&cs, T[i], P[j], (int)(gs[k] / tpp), err, errlen) != 0)
                    return -1;
            }
    if (cs.n == 0) {
        char a[256], b[256];
        list_text(list, n, a, sizeof a);
        list_text(gs, ng, b, sizeof b);
        return plan_fail(err, errlen, "%s: no configuration with %s in [%s] fits the GPU counts [%s] of the current "
                         "configurations (allowed: %s*%s dividing a GPU count; set gpus first)", field, field, a, b,
                         "tp", "pp");
    }
    set_configs(s, &cs);
    return 0;
}

/* ---- one field --------------------------------------------------------------------------- */

static int *int_slot(pdbx_spec *s, const char *name)
{
    if (strcmp(name, "layers") == 0) return &s->layers_profiled;
    if (strcmp(name, "seq_len") == 0) return &s->seq_len;
    if (strcmp(name, "gpus_per_node") == 0) return &s->gpus_per_node;
    if (strcmp(name, "nodes") == 0) return &s->nodes;
    if (strcmp(name, "warmup") == 0) return &s->warmup;
    if (strcmp(name, "steps") == 0) return &s->steps;
    if (strcmp(name, "collectives") == 0) return &s->collectives;
    if (strcmp(name, "predict_oom") == 0) return &s->predict_oom;
    if (strcmp(name, "zero1") == 0) return &s->zero1;
    if (strcmp(name, "flash_attention") == 0) return &s->flash_attention;
    if (strcmp(name, "flush_l2") == 0) return &s->flush_l2;
    return NULL;
}

/* Applies every field except configs/tp/pp/dp/gpus (those combine; see the callers). */
static int apply_field(pdbx_spec *s, const field_def *f, const cJSON *v, char *err, size_t errlen)
{
    const char *name = f->name;
    const char *str;
    if (strcmp(name, "name") == 0) {
        if (plan_json_string(v, name, &str, err, errlen) != 0)
            return -1;
        if (!*str || strlen(str) >= sizeof s->name)
            return plan_fail(err, errlen, "name: \"%s\" has %zu characters (allowed: 1..%zu)", str, strlen(str),
                             sizeof s->name - 1);
        plan_copy(s->name, sizeof s->name, str);
        return 0;
    }
    if (strcmp(name, "model") == 0) {
        pdbx_model m;
        if (cJSON_IsObject(v)) {
            if (pdbx_model_from_json(v, "model", &m, err, errlen) != 0)
                return -1;
        } else {
            if (plan_json_string(v, name, &str, err, errlen) != 0 || pdbx_model_load(str, &m, err, errlen) != 0)
                return -1;
        }
        s->model = m;
        return 0;
    }
    if (strcmp(name, "gpu") == 0) {
        pdbx_gpu g;
        if (cJSON_IsObject(v)) {
            if (plan_gpu_from_json(v, "gpu", &g, err, errlen) != 0)
                return -1;
        } else {
            if (plan_json_string(v, name, &str, err, errlen) != 0 || pdbx_gpu_load(str, &g, err, errlen) != 0)
                return -1;
        }
        s->gpu = g;
        return 0;
    }
    if (strcmp(name, "gpu_mem_gb") == 0) {
        double gb;
        if (plan_json_number(v, name, 0.001, 1e6, &gb, err, errlen) != 0)
            return -1;
        s->gpu.mem_bytes = gb * 1e9;
        return 0;
    }
    if (strcmp(name, "dtype") == 0)
        return read_dtype(v, &s->dtype, err, errlen);
    if (strcmp(name, "backend") == 0)
        return read_backend(v, &s->backend, err, errlen);
    if (strcmp(name, "mbs") == 0)
        return read_mbs(v, s, err, errlen);
    if (strcmp(name, "mbs_min") == 0 || strcmp(name, "mbs_max") == 0) {
        long long x;
        if (plan_json_int(v, name, -(1LL << 40), 1LL << 40, &x, err, errlen) != 0 ||
            check_mbs_bound(name, x, err, errlen) != 0)
            return -1;
        *(name[5] == 'i' ? &s->mbs_min : &s->mbs_max) = (int)x;
        return 0;
    }
    if (strcmp(name, "ops") == 0)
        return read_ops(v, &s->ops, err, errlen);
    if (strcmp(name, "coll_sizes") == 0)
        return read_coll_sizes(v, s, err, errlen);
    if (strcmp(name, "bytes_per_param") == 0)
        return plan_json_number(v, name, 1, 64, &s->bytes_per_param, err, errlen);
    if (strcmp(name, "timeout_s") == 0)
        return plan_json_number(v, name, 1, 86400, &s->timeout_s, err, errlen);
    int *slot = int_slot(s, name);
    if (slot && f->kind == K_BOOL)
        return plan_json_bool(v, name, slot, err, errlen);
    if (slot && f->kind == K_INT) {
        long long x;
        if (plan_json_int(v, name, f->lo, f->hi, &x, err, errlen) != 0)
            return -1;
        *slot = (int)x;
        return 0;
    }
    return plan_fail(err, errlen, "%s: cannot be set this way", name);
}

/* ---- JSON -------------------------------------------------------------------------------- */

int pdbx_spec_from_json(const cJSON *obj, const char *origin, pdbx_spec *s, char *err, size_t errlen)
{
    (void)origin;
    if (!cJSON_IsObject(obj))
        return plan_fail(err, errlen, "spec: expected a JSON object");
    pdbx_spec t = *s;   /* work on a copy: *s is untouched on error */

    /* Unknown and repeated fields first: a typo must not be silently ignored. */
    for (const cJSON *it = obj->child; it; it = it->next) {
        const char *key = it->string ? it->string : "";
        if (!find_field(key) && strcmp(key, json_only_fields[0]) != 0)
            return unknown_field(key, 1, err, errlen);
        for (const cJSON *p = obj->child; p != it; p = p->next)
            if (p->string && strcmp(p->string, key) == 0)
                return plan_fail(err, errlen, "%s: given twice (allowed: once)", key);
    }
    const cJSON *desc = cJSON_GetObjectItemCaseSensitive(obj, "description");
    const char *dummy;
    if (desc && plan_json_string(desc, "description", &dummy, err, errlen) != 0)
        return -1;
    const cJSON *mbs = cJSON_GetObjectItemCaseSensitive(obj, "mbs");
    if (mbs && (cJSON_GetObjectItemCaseSensitive(obj, "mbs_min") || cJSON_GetObjectItemCaseSensitive(obj, "mbs_max")))
        return plan_fail(err, errlen, "mbs: cannot be combined with mbs_min/mbs_max (allowed: one form)");

    /* Scalars in table order: model and gpu come before gpu_mem_gb, which overrides the GPU's
     * memory; the configuration fields are read after gpus_per_node and nodes. */
    for (size_t i = 0; i < N_FIELDS; i++) {
        const field_def *f = &fields[i];
        if (f->kind == K_LIST && (strcmp(f->name, "configs") == 0 || strcmp(f->name, "tp") == 0 ||
                                  strcmp(f->name, "pp") == 0 || strcmp(f->name, "dp") == 0))
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
    config_set cs = {.n = 0};
    if (jc && (jtp || jpp || jdp || jg))
        return plan_fail(err, errlen, "configs: cannot be combined with tp/pp/dp/gpus (allowed: either a configs "
                         "list or tp/pp/dp lists)");
    if (jg && jdp)
        return plan_fail(err, errlen, "dp: cannot be combined with gpus (allowed: one of them; with gpus, "
                         "DP = gpus/(tp*pp))");
    if (jc) {
        if (read_configs_array(jc, &t, &cs, err, errlen) != 0)
            return -1;
        set_configs(&t, &cs);
    } else if (jtp || jpp || jdp || jg) {
        int tps[LIST_CAP] = {1}, pps[LIST_CAP] = {1}, dps[LIST_CAP] = {1};
        size_t ntp = 1, npp = 1, ndp = 1;
        long long g = 0;
        if (jtp && read_int_list(jtp, "tp", 1, TP_MAX, tps, LIST_CAP, &ntp, err, errlen) != 0)
            return -1;
        if (jpp && read_int_list(jpp, "pp", 1, PP_MAX, pps, LIST_CAP, &npp, err, errlen) != 0)
            return -1;
        if (jdp && read_int_list(jdp, "dp", 1, DP_MAX, dps, LIST_CAP, &ndp, err, errlen) != 0)
            return -1;
        if (jg && plan_json_int(jg, "gpus", 1, 1048576, &g, err, errlen) != 0)
            return -1;
        if (cross_product(&t, tps, ntp, pps, npp, dps, ndp, g, &cs, err, errlen) != 0)
            return -1;
        set_configs(&t, &cs);
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
    plan_copy(nm, sizeof nm, base);
    size_t n = strlen(nm);
    if (n > 5 && strcmp(nm + n - 5, ".json") == 0)
        nm[n - 5] = '\0';
    plan_copy(s.name, sizeof s.name, nm);
    char inner[512];
    int rc = pdbx_spec_from_json(root, path, &s, inner, sizeof inner);
    cJSON_Delete(root);
    if (rc != 0) {
        /* Field messages stay as they are; the file is named once in front. */
        plan_fail(err, errlen, "%s: %s", path, inner);
        return -1;
    }
    *spec = s;
    return 0;
}

/* ---- overrides --------------------------------------------------------------------------- */

int pdbx_spec_set(pdbx_spec *spec, const char *field, const char *value, char *err, size_t errlen)
{
    if (!field || !value)
        return plan_fail(err, errlen, "spec: missing field or value");
    const field_def *f = find_field(field);
    if (!f)
        return unknown_field(field, 0, err, errlen);
    cJSON *v = NULL;
    int rc = -1;
    switch (f->kind) {
    case K_INT: {
        long long x;
        if (plan_parse_ll(value, &x) != 0) {
            plan_fail(err, errlen, "%s: expected an integer, got \"%s\"", field, value);
            goto fail;
        }
        v = cJSON_CreateNumber((double)x);
        break;
    }
    case K_NUM: {
        double x;
        if (plan_parse_double(value, &x) != 0) {
            plan_fail(err, errlen, "%s: expected a number, got \"%s\"", field, value);
            goto fail;
        }
        v = cJSON_CreateNumber(x);
        break;
    }
    case K_BOOL: {
        int b;
        if (plan_parse_bool(value, &b) != 0) {
            plan_fail(err, errlen, "%s: expected true or false, got \"%s\"", field, value);
            goto fail;
        }
        v = cJSON_CreateBool(b);
        break;
    }
    case K_STR:
    case K_LIST:
        v = cJSON_CreateString(value);
        break;
    }
    if (!v) {
        plan_fail(err, errlen, "%s: out of memory", field);
        goto fail;
    }
    pdbx_spec t = *spec;
    if (strcmp(field, "configs") == 0) {
        config_set cs;
        if (read_configs_text(value, &cs, err, errlen) != 0)
            goto fail;
        set_configs(&t, &cs);
    } else if (strcmp(field, "tp") == 0 || strcmp(field, "pp") == 0 || strcmp(field, "dp") == 0 ||
               strcmp(field, "gpus") == 0) {
        if (override_parallel(&t, field, v, err, errlen) != 0)
            goto fail;
    } else if (apply_field(&t, f, v, err, errlen) != 0) {
        goto fail;
    }
    *spec = t;
    rc = 0;
fail:
    cJSON_Delete(v);
    return rc;
}

/* ---- writing --------------------------------------------------------------------------- */

cJSON *pdbx_spec_to_json(const pdbx_spec *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *model = NULL, *gpu = NULL, *configs = NULL, *mbs = NULL, *ops = NULL, *sizes = NULL;
    if (!o)
        return NULL;
    if (!cJSON_AddStringToObject(o, "name", s->name))
        goto fail;
    model = plan_model_to_json(&s->model);
    if (!model || !cJSON_AddItemToObject(o, "model", model))
        goto fail_model;
    model = NULL;
    gpu = plan_gpu_to_json(&s->gpu);
    if (!gpu || !cJSON_AddItemToObject(o, "gpu", gpu))
        goto fail_gpu;
    gpu = NULL;
    if (!cJSON_AddNumberToObject(o, "layers", s->layers_profiled) ||
        !cJSON_AddNumberToObject(o, "seq_len", s->seq_len) ||
        !cJSON_AddStringToObject(o, "dtype", pdbx_dtype_name(s->dtype)) ||
        !cJSON_AddStringToObject(o, "backend", pdbx_backend_name(s->backend)) ||
        !cJSON_AddNumberToObject(o, "gpus_per_node", s->gpus_per_node) ||
        !cJSON_AddNumberToObject(o, "nodes", s->nodes))
        goto fail;
    configs = cJSON_AddArrayToObject(o, "configs");
    if (!configs)
        goto fail;
    for (int i = 0; i < s->nconfigs && i < PDBX_MAX_CONFIGS; i++) {
        cJSON *c = cJSON_CreateObject();
        if (!c || !cJSON_AddItemToArray(configs, c)) {
            cJSON_Delete(c);
            goto fail;
        }
        if (!cJSON_AddNumberToObject(c, "tp", s->configs[i].tp) || !cJSON_AddNumberToObject(c, "pp", s->configs[i].pp) ||
            !cJSON_AddNumberToObject(c, "dp", s->configs[i].dp))
            goto fail;
    }
    mbs = cJSON_AddObjectToObject(o, "mbs");
    if (!mbs || !cJSON_AddNumberToObject(mbs, "min", s->mbs_min) || !cJSON_AddNumberToObject(mbs, "max", s->mbs_max))
        goto fail;
    if (!cJSON_AddNumberToObject(o, "warmup", s->warmup) || !cJSON_AddNumberToObject(o, "steps", s->steps))
        goto fail;
    ops = cJSON_AddArrayToObject(o, "ops");
    if (!ops)
        goto fail;
    for (int i = 0; i < PDBX_OP_COUNT; i++) {
        if (!(s->ops & PDBX_OP_BIT(i)))
            continue;
        cJSON *n = cJSON_CreateString(pdbx_op_name((pdbx_op)i));
        if (!n || !cJSON_AddItemToArray(ops, n)) {
            cJSON_Delete(n);
            goto fail;
        }
    }
    if (!cJSON_AddBoolToObject(o, "collectives", s->collectives))
        goto fail;
    sizes = cJSON_AddArrayToObject(o, "coll_sizes");
    if (!sizes)
        goto fail;
    for (int i = 0; i < s->ncoll_sizes && i < PDBX_MAX_COLL_SIZES; i++) {
        cJSON *n = cJSON_CreateNumber(s->coll_sizes[i]);
        if (!n || !cJSON_AddItemToArray(sizes, n)) {
            cJSON_Delete(n);
            goto fail;
        }
    }
    if (!cJSON_AddBoolToObject(o, "predict_oom", s->predict_oom) ||
        !cJSON_AddNumberToObject(o, "bytes_per_param", s->bytes_per_param) ||
        !cJSON_AddBoolToObject(o, "zero1", s->zero1) ||
        !cJSON_AddBoolToObject(o, "flash_attention", s->flash_attention) ||
        !cJSON_AddNumberToObject(o, "timeout_s", s->timeout_s) ||
        !cJSON_AddBoolToObject(o, "flush_l2", s->flush_l2))
        goto fail;
    return o;
fail_model:
    cJSON_Delete(model);
    goto fail;
fail_gpu:
    cJSON_Delete(gpu);
fail:
    cJSON_Delete(o);
    return NULL;
}
