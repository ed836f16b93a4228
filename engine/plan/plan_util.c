/* plan_util.c: messages, did-you-mean, JSON reading and string parsing shared by the
 * planner's modules (see plan_internal.h). */
#include "engine/plan/plan_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

cJSON *plan_json_file(const char *path, char *err, size_t errlen)
{
    FILE *f = NULL;
    char *text = NULL;
    cJSON *root = NULL;
    size_t cap = 0, n = 0;

    f = fopen(path, "rb");
    if (!f) {
        pdbx_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        goto fail;
    }
    for (;;) {
        if (n + 1 >= cap) {   /* room for the terminating NUL too */
            size_t ncap = cap ? cap * 2 : 8192;
            if (ncap > ((size_t)64 << 20)) {
                pdbx_fail(err, errlen, "%s: larger than 64 MiB, not a config file", path);
                goto fail;
            }
            char *t = realloc(text, ncap);
            if (!t) {
                pdbx_fail(err, errlen, "%s: out of memory", path);
                goto fail;
            }
            text = t;
            cap = ncap;
        }
        size_t got = fread(text + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                pdbx_fail(err, errlen, "%s: read error: %s", path, strerror(errno));
                goto fail;
            }
            break;
        }
    }
    const char *end = NULL;
    text[n] = '\0';
    /* NUL included in the length and required: trailing garbage after the object is an error */
    root = cJSON_ParseWithLengthOpts(text, n + 1, &end, 1);
    if (!root) {
        size_t off = end && end >= text ? (size_t)(end - text) : 0;
        size_t line = 1;
        for (size_t i = 0; i < off && i < n; i++)
            line += text[i] == '\n';
        pdbx_fail(err, errlen, "%s: invalid JSON near line %zu (byte %zu)", path, line, off);
        goto fail;
    }
    if (!cJSON_IsObject(root)) {
        pdbx_fail(err, errlen, "%s: expected a JSON object at the top level", path);
        cJSON_Delete(root);
        root = NULL;
        goto fail;
    }
fail:
    if (f)
        fclose(f);
    free(text);
    return root;
}

void plan_json_brief(const cJSON *v, char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    if (!v) {
        snprintf(buf, len, "nothing");
        return;
    }
    char *s = cJSON_PrintUnformatted(v);
    if (!s) {
        snprintf(buf, len, "?");
        return;
    }
    if (strlen(s) > 40)
        snprintf(buf, len, "%.37s...", s);
    else
        snprintf(buf, len, "%s", s);
    cJSON_free(s);
}

static int type_fail(const cJSON *v, const char *field, const char *expected, char *err, size_t errlen)
{
    char b[64];
    plan_json_brief(v, b, sizeof b);
    return pdbx_fail(err, errlen, "%s: expected %s, got %s", field, expected, b);
}

int plan_range_fail(const char *field, long long v, long long lo, long long hi, char *err, size_t errlen)
{
    return pdbx_fail(err, errlen, "%s: %lld is out of range (allowed: %lld..%lld)", field, v, lo, hi);
}

int plan_json_int(const cJSON *v, const char *field, long long lo, long long hi, long long *out,
                  char *err, size_t errlen)
{
    if (!cJSON_IsNumber(v))
        return type_fail(v, field, "an integer", err, errlen);
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d))
        return type_fail(v, field, "an integer", err, errlen);
    if (d < (double)lo || d > (double)hi) {
        if (fabs(d) < 9e18)
            return plan_range_fail(field, (long long)d, lo, hi, err, errlen);
        return pdbx_fail(err, errlen, "%s: %g is out of range (allowed: %lld..%lld)", field, d, lo, hi);
    }
    *out = (long long)d;
    return 0;
}

int plan_json_number(const cJSON *v, const char *field, double lo, double hi, double *out,
                     char *err, size_t errlen)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return type_fail(v, field, "a number", err, errlen);
    double d = v->valuedouble;
    if (d < lo || d > hi)
        return pdbx_fail(err, errlen, "%s: %g is out of range (allowed: %g..%g)", field, d, lo, hi);
    *out = d;
    return 0;
}

int plan_json_bool(const cJSON *v, const char *field, int *out, char *err, size_t errlen)
{
    if (!cJSON_IsBool(v))
        return type_fail(v, field, "true or false", err, errlen);
    *out = cJSON_IsTrue(v) ? 1 : 0;
    return 0;
}

int plan_json_string(const cJSON *v, const char *field, const char **out, char *err, size_t errlen)
{
    if (!cJSON_IsString(v) || !v->valuestring)
        return type_fail(v, field, "a string", err, errlen);
    *out = v->valuestring;
    return 0;
}

/* s past its leading blanks, or NULL when s is NULL or blank: a number needs a digit. */
static const char *number_start(const char *s)
{
    if (!s)
        return NULL;
    while (isspace((unsigned char)*s))
        s++;
    return *s ? s : NULL;
}

/* 1 when only blanks are left at end: "12 " is a number, "12x" is not. */
static int blank_rest(const char *end)
{
    while (isspace((unsigned char)*end))
        end++;
    return *end == '\0';
}

int plan_parse_ll(const char *s, long long *out)
{
    if (!(s = number_start(s)))
        return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || !blank_rest(end))
        return -1;
    *out = v;
    return 0;
}

int plan_parse_double(const char *s, double *out)
{
    if (!(s = number_start(s)))
        return -1;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || !blank_rest(end))
        return -1;
    *out = v;
    return 0;
}

int plan_parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"true", "1", "yes", "on"};
    static const char *const no[] = {"false", "0", "no", "off"};
    if (!s)
        return -1;
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

int plan_parse_bytes(const char *s, double *out)
{
    if (!s)
        return -1;
    char num[64];
    size_t n = strlen(s);
    if (n == 0 || n >= sizeof num)
        return -1;
    memcpy(num, s, n + 1);
    double mult = 1;
    char last = (char)toupper((unsigned char)num[n - 1]);
    if (last == 'B' && n > 1 && strchr("KMGT", toupper((unsigned char)num[n - 2]))) {
        num[--n] = '\0';           /* "64KB" reads as "64K" */
        last = (char)toupper((unsigned char)num[n - 1]);
    }
    const char *units = "KMGT";
    const char *u = strchr(units, last);
    if (u && last) {
        for (const char *p = units; p <= u; p++)
            mult *= 1024;
        num[--n] = '\0';
    }
    long long v;
    if (plan_parse_ll(num, &v) != 0)
        return -1;
    *out = (double)v * mult;
    return 0;
}

int plan_is_pow2(long long v)
{
    return v > 0 && (v & (v - 1)) == 0;
}

double plan_host_mem_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    double bytes = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
            bytes = (double)kb * 1024.0;
            break;
        }
    }
    fclose(f);
    return bytes;
}

int plan_kv_heads_per_rank(const pdbx_model *m, int tp)
{
    if (tp <= 0)
        return m->kv_heads;
    return tp <= m->kv_heads ? m->kv_heads / tp : 1;
}

int plan_vocab_per_rank(const pdbx_model *m, int tp)
{
    if (tp <= 0)
        return m->vocab;
    return (int)(((long long)m->vocab + tp - 1) / tp);
}

int plan_layers_per_stage(const pdbx_model *m, int pp)
{
    if (pp <= 0)
        return m->layers;
    return (m->layers + pp - 1) / pp;
}

cJSON *plan_fields_to_json(const void *obj, const plan_json_field *f, size_t n)
{
    cJSON *o = cJSON_CreateObject();
    const char *base = obj;
    for (size_t i = 0; o && i < n; i++) {
        const void *at = base + f[i].offset;
        int ok = 0;
        switch (f[i].kind) {
        case PLAN_J_STR: ok = cJSON_AddStringToObject(o, f[i].key, at) != NULL; break;
        case PLAN_J_INT: ok = cJSON_AddNumberToObject(o, f[i].key, *(const int *)at) != NULL; break;
        case PLAN_J_NUM: ok = cJSON_AddNumberToObject(o, f[i].key, *(const double *)at) != NULL; break;
        case PLAN_J_BOOL: ok = cJSON_AddBoolToObject(o, f[i].key, *(const int *)at) != NULL; break;
        }
        if (!ok) {
            cJSON_Delete(o);
            o = NULL;
        }
    }
    return o;
}
