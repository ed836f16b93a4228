/* plan_values.c: readers of the spec's structured values (dtype, backend, integer lists,
 * micro-batch range, op list, collective sizes), each accepting its JSON forms and the string
 * forms pdbx_spec_set passes ("1:128", "1,2,4", "1K:1G"); see docs/spec.md. */
#include "engine/plan/plan_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define COLL_SIZE_MAX 17179869184.0   /* 16 GiB: the largest collective message (2^34 bytes) */

static int not_allowed(const char *field, const char *value, const char *const *cands, size_t n,
                       char *err, size_t errlen)
{
    char sug[512];
    pdbx_suggest(value, cands, n, sug, sizeof sug);
    return pdbx_fail(err, errlen, "%s: \"%s\" is not allowed%s", field, value, sug);
}

int plan_read_dtype(const cJSON *v, pdbx_dtype *out, char *err, size_t errlen)
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

int plan_read_backend(const cJSON *v, pdbx_backend_kind *out, char *err, size_t errlen)
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

int plan_read_recompute(const cJSON *v, pdbx_recompute *out, char *err, size_t errlen)
{
    static const char *const names[] = {"none", "full", "selective"};   /* pdbx_recompute's order */
    const char *s;
    if (plan_json_string(v, "recompute", &s, err, errlen) != 0)
        return -1;
    for (int i = 0; i < 3; i++)
        if (strcasecmp(s, names[i]) == 0) {
            *out = (pdbx_recompute)i;
            return 0;
        }
    return not_allowed("recompute", s, names, 3, err, errlen);
}

int plan_read_fp32_math(const cJSON *v, pdbx_fp32_math *out, char *err, size_t errlen)
{
    static const char *const names[] = {"ieee", "tf32"};
    const char *s;
    if (plan_json_string(v, "fp32_math", &s, err, errlen) != 0)
        return -1;
    for (int i = 0; i < 2; i++)
        if (strcasecmp(s, names[i]) == 0) {
            *out = (pdbx_fp32_math)i;
            return 0;
        }
    return not_allowed("fp32_math", s, names, 2, err, errlen);
}

int plan_read_gemm_api(const cJSON *v, pdbx_gemm_api *out, char *err, size_t errlen)
{
    static const char *const names[] = {"cublaslt", "cublas"};
    const char *s;
    if (plan_json_string(v, "gemm_api", &s, err, errlen) != 0)
        return -1;
    for (int i = 0; i < 2; i++)
        if (strcasecmp(s, names[i]) == 0) {
            *out = (pdbx_gemm_api)i;
            return 0;
        }
    return not_allowed("gemm_api", s, names, 2, err, errlen);
}

int plan_read_repetition(const cJSON *v, pdbx_repetition *out, char *err, size_t errlen)
{
    static const char *const names[] = {"adaptive", "fixed"};
    const char *s;
    if (plan_json_string(v, "repetition", &s, err, errlen) != 0)
        return -1;
    for (int i = 0; i < 2; i++)
        if (strcasecmp(s, names[i]) == 0) {
            *out = (pdbx_repetition)i;
            return 0;
        }
    return not_allowed("repetition", s, names, 2, err, errlen);
}

static int add_pass(const char *name, uint64_t *mask, char *err, size_t errlen)
{
    int p = pdbx_pass_from_name(name);
    if (p < 0)
        return pdbx_fail(err, errlen, "passes: \"%s\" is not a pass (allowed: fwd, bwd)", name);
    *mask |= PDBX_PASS_BIT(p);
    return 0;
}

/* A list of names as a JSON array or a "a,b" string into a mask, each name through add(). */
typedef int (*name_adder)(const char *name, uint64_t *mask, char *err, size_t errlen);

static int read_name_list(const cJSON *v, const char *field, name_adder add, uint64_t *mask,
                          const char *expected, char *err, size_t errlen)
{
    if (cJSON_IsArray(v)) {
        int i = 0;
        for (const cJSON *it = v->child; it; it = it->next, i++) {
            char label[32];
            const char *s;
            snprintf(label, sizeof label, "%s[%d]", field, i);
            if (plan_json_string(it, label, &s, err, errlen) != 0 || add(s, mask, err, errlen) != 0)
                return -1;
        }
        return 0;
    }
    if (cJSON_IsString(v) && v->valuestring) {
        char buf[1024];
        if (strlen(v->valuestring) >= sizeof buf)
            return pdbx_fail(err, errlen, "%s: value too long (allowed: at most %zu characters)", field,
                             sizeof buf - 1);
        pdbx_strcopy(buf, sizeof buf, v->valuestring);
        char *save = NULL;
        for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
            if (add(tok, mask, err, errlen) != 0)
                return -1;
        return 0;
    }
    char br[64];
    plan_json_brief(v, br, sizeof br);
    return pdbx_fail(err, errlen, "%s: expected %s, got %s", field, expected, br);
}

int plan_read_passes(const cJSON *v, uint32_t *out, char *err, size_t errlen)
{
    uint64_t mask = 0;
    if (read_name_list(v, "passes", add_pass, &mask, "[\"fwd\"] or [\"fwd\", \"bwd\"]", err, errlen) != 0)
        return -1;
    if (!(mask & PDBX_PASS_BIT(PDBX_PASS_FWD)))
        return pdbx_fail(err, errlen, "passes: the list must hold \"fwd\" (allowed: fwd or fwd,bwd; "
                         "the backward is measured after its forward)");
    *out = (uint32_t)mask;   /* PDBX_PASS_COUNT bits */
    return 0;
}

int plan_read_launcher(const cJSON *v, pdbx_launcher_kind *out, char *err, size_t errlen)
{
    const char *s;
    if (plan_json_string(v, "launcher", &s, err, errlen) != 0)
        return -1;
    return pdbx_launcher_parse(s, out, err, errlen);
}

int pdbx_launcher_parse(const char *text, pdbx_launcher_kind *out, char *err, size_t errlen)
{
    static const char *const names[] = {"auto", "local", "mpirun", "srun"};
    for (int i = 0; i < 4; i++)
        if (strcasecmp(text, names[i]) == 0) {
            *out = (pdbx_launcher_kind)i;
            return 0;
        }
    return not_allowed("launcher", text, names, 4, err, errlen);
}

static int pow2_fail(const char *field, long long v, long long hi, char *err, size_t errlen)
{
    return pdbx_fail(err, errlen, "%s: %lld is not a power of two (allowed: 1, 2, 4, ..., %lld)", field, v, hi);
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

/* Appends x to out[*n] unless the list is full or already holds x (values must be distinct). */
static int list_add_once(const char *field, int *out, size_t cap, size_t *n, long long x,
                         char *err, size_t errlen)
{
    if (*n >= cap)
        return pdbx_fail(err, errlen, "%s: more than %zu values (allowed: at most %zu)", field, cap, cap);
    for (size_t k = 0; k < *n; k++)
        if (out[k] == x)
            return pdbx_fail(err, errlen, "%s: %lld is listed twice (allowed: each value once)", field, x);
    out[(*n)++] = (int)x;
    return 0;
}

/* An integer list for tp, pp, dp: an integer, an array of integers, "1,2,4" or "A:B" (the
 * powers of two from A to B). Values are range-checked; order is kept, duplicates refused. */
int plan_read_int_list(const cJSON *v, const char *field, long long lo, long long hi, int *out,
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
            if (list_add_once(field, out, cap, n, x, err, errlen) != 0)
                return -1;
        }
        if (*n == 0)
            return pdbx_fail(err, errlen, "%s: empty list (allowed: one or more integers %lld..%lld)", field, lo, hi);
        return 0;
    }
    if (cJSON_IsString(v) && v->valuestring) {
        const char *s = v->valuestring;
        long long a, b;
        if (strchr(s, ':')) {
            if (split_range(s, &a, &b, 0) != 0)
                return pdbx_fail(err, errlen, "%s: expected \"A:B\" (powers of two A..B), got \"%s\"", field, s);
            if (a < lo || a > hi)
                return plan_range_fail(field, a, lo, hi, err, errlen);
            if (b < lo || b > hi)
                return plan_range_fail(field, b, lo, hi, err, errlen);
            if (!plan_is_pow2(a))
                return pow2_fail(field, a, hi, err, errlen);
            if (!plan_is_pow2(b))
                return pow2_fail(field, b, hi, err, errlen);
            if (a > b)
                return pdbx_fail(err, errlen, "%s: range \"%s\" has its start above its end (allowed: A <= B)", field, s);
            for (long long x = a; x <= b; x *= 2)
                if (list_add_once(field, out, cap, n, x, err, errlen) != 0)
                    return -1;
            return 0;
        }
        /* comma list */
        char buf[512];
        if (strlen(s) >= sizeof buf)
            return pdbx_fail(err, errlen, "%s: value too long (allowed: at most %zu characters)", field, sizeof buf - 1);
        pdbx_strcopy(buf, sizeof buf, s);
        char *save = NULL;
        for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            long long x;
            if (plan_parse_ll(tok, &x) != 0)
                return pdbx_fail(err, errlen, "%s: expected an integer, got \"%s\"", field, tok);
            if (x < lo || x > hi)
                return plan_range_fail(field, x, lo, hi, err, errlen);
            if (list_add_once(field, out, cap, n, x, err, errlen) != 0)
                return -1;
        }
        if (*n == 0)
            return pdbx_fail(err, errlen, "%s: empty list (allowed: one or more integers %lld..%lld)", field, lo, hi);
        return 0;
    }
    char b[64];
    plan_json_brief(v, b, sizeof b);
    return pdbx_fail(err, errlen, "%s: expected an integer, a list of integers or \"A:B\", got %s", field, b);
}

int plan_check_mbs_bound(const char *field, long long v, char *err, size_t errlen)
{
    if (v < 1 || v > 1024)
        return plan_range_fail(field, v, 1, 1024, err, errlen);
    if (!plan_is_pow2(v))
        return pow2_fail(field, v, 1024, err, errlen);
    return 0;
}

int plan_read_mbs(const cJSON *v, pdbx_spec *s, char *err, size_t errlen)
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
                return pdbx_fail(err, errlen, "mbs: expected \"MIN:MAX\" (powers of two), got \"%s\"", str);
        } else if (plan_parse_ll(str, &a) == 0) {
            b = a;
        } else {
            return pdbx_fail(err, errlen, "mbs: expected \"MIN:MAX\" (powers of two), got \"%s\"", str);
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
                pdbx_suggest(it->string ? it->string : "", mm, 2, sug, sizeof sug);
                return pdbx_fail(err, errlen, "mbs: unknown field '%s'%s", it->string ? it->string : "", sug);
            }
            if (plan_json_int(it, label, -(1LL << 40), 1LL << 40, slot, err, errlen) != 0)
                return -1;
        }
    } else {
        char br[64];
        plan_json_brief(v, br, sizeof br);
        return pdbx_fail(err, errlen, "mbs: expected {\"min\": A, \"max\": B}, \"A:B\" or an integer, got %s", br);
    }
    if (plan_check_mbs_bound("mbs_min", a, err, errlen) != 0 || plan_check_mbs_bound("mbs_max", b, err, errlen) != 0)
        return -1;
    if (a > b)
        return pdbx_fail(err, errlen, "mbs_min: %lld is greater than mbs_max %lld (allowed: mbs_min <= mbs_max)", a, b);
    s->mbs_min = (int)a;
    s->mbs_max = (int)b;
    return 0;
}

static int add_op(const char *name, uint64_t *mask, char *err, size_t errlen)
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
        pdbx_suggest(name, cands, PDBX_OP_COUNT + 1, sug, sizeof sug);
        return pdbx_fail(err, errlen, "ops: unknown op '%s'%s", name, sug);
    }
    *mask |= PDBX_OP_BIT(op);
    return 0;
}

int plan_read_ops(const cJSON *v, pdbx_opmask *out, char *err, size_t errlen)
{
    uint64_t mask = 0;
    if (read_name_list(v, "ops", add_op, &mask, "a list of op names or \"all\"", err, errlen) != 0)
        return -1;
    if (mask == 0)
        return pdbx_fail(err, errlen, "ops: empty list (allowed: one or more op names, or \"all\")");
    *out = mask;
    return 0;
}

static int coll_size_ok(const char *field, double x, char *err, size_t errlen)
{
    if (!(x >= 1 && x <= COLL_SIZE_MAX))
        return pdbx_fail(err, errlen, "%s: %.0f is out of range (allowed: 1..%.0f bytes)", field, x, COLL_SIZE_MAX);
    if (x != floor(x) || !plan_is_pow2((long long)x))
        return pdbx_fail(err, errlen, "%s: %.0f is not a power of two (allowed: 1, 2, 4, ..., %.0f)", field, x,
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
        return pdbx_fail(err, errlen, "coll_sizes: more than %d sizes (allowed: at most %d)",
                         PDBX_MAX_COLL_SIZES, PDBX_MAX_COLL_SIZES);
    out[(*n)++] = x;
    return 0;
}

/* A list of byte sizes (numbers, or strings with K/M/G suffixes), "MIN:MAX" (every power of
 * two between) or "1K,64K,1M". Sorted ascending, duplicates dropped. */
int plan_read_coll_sizes(const cJSON *v, pdbx_spec *s, char *err, size_t errlen)
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
                return pdbx_fail(err, errlen, "%s: expected a size in bytes, got %s", label, br);
            }
            if (coll_size_ok(label, x, err, errlen) != 0 || push_size(x, sizes, &n, err, errlen) != 0)
                return -1;
        }
    } else if (cJSON_IsString(v) && v->valuestring) {
        const char *str = v->valuestring;
        if (strchr(str, ':')) {
            long long a, b;
            if (split_range(str, &a, &b, 1) != 0)
                return pdbx_fail(err, errlen, "coll_sizes: expected \"MIN:MAX\" bytes (e.g. \"1K:1G\"), got \"%s\"", str);
            if (coll_size_ok("coll_sizes", (double)a, err, errlen) != 0 ||
                coll_size_ok("coll_sizes", (double)b, err, errlen) != 0)
                return -1;
            if (a > b)
                return pdbx_fail(err, errlen, "coll_sizes: range \"%s\" has its start above its end (allowed: MIN <= MAX)", str);
            for (long long x = a; x <= b; x *= 2)
                if (push_size((double)x, sizes, &n, err, errlen) != 0)
                    return -1;
        } else {
            char buf[1024];
            if (strlen(str) >= sizeof buf)
                return pdbx_fail(err, errlen, "coll_sizes: value too long (allowed: at most %zu characters)", sizeof buf - 1);
            pdbx_strcopy(buf, sizeof buf, str);
            char *save = NULL;
            for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                double x;
                if (plan_parse_bytes(tok, &x) != 0)
                    return pdbx_fail(err, errlen, "coll_sizes: expected a size in bytes, got \"%s\"", tok);
                if (coll_size_ok("coll_sizes", x, err, errlen) != 0 || push_size(x, sizes, &n, err, errlen) != 0)
                    return -1;
            }
        }
    } else {
        char br[64];
        plan_json_brief(v, br, sizeof br);
        return pdbx_fail(err, errlen, "coll_sizes: expected a list of byte sizes or \"MIN:MAX\", got %s", br);
    }
    qsort(sizes, (size_t)n, sizeof sizes[0], cmp_double);
    memcpy(s->coll_sizes, sizes, (size_t)n * sizeof sizes[0]);
    s->ncoll_sizes = n;
    return 0;
}
