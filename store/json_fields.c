/* json_fields.c: typed reads and writes of JSON object members (see json_fields.h). */
#include "store/json_fields.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* 1 and *out set when obj[name] is a number; 0 when absent or not a number. */
int jf_num(const cJSON *obj, const char *name, double *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(it))
        return 0;
    *out = it->valuedouble;
    return 1;
}

int jf_int(const cJSON *obj, const char *name, int *out)
{
    double v;
    if (!jf_num(obj, name, &v) || !(v >= -2147483648.0 && v <= 2147483647.0))
        return 0;
    *out = (int)v;
    return 1;
}

const char *jf_str(const cJSON *obj, const char *name)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(it) ? it->valuestring : NULL;
}

int jf_strbuf(const cJSON *obj, const char *name, char *dst, size_t cap)
{
    const char *s = jf_str(obj, name);
    if (s)
        snprintf(dst, cap, "%s", s);
    return s != NULL;
}

int jf_add(cJSON *obj, const char *name, cJSON *item)
{
    if (!item || !cJSON_AddItemToObject(obj, name, item)) {
        cJSON_Delete(item);
        return 0;
    }
    return 1;
}

int jf_push(cJSON *arr, cJSON *item)
{
    if (!item || !cJSON_AddItemToArray(arr, item)) {
        cJSON_Delete(item);
        return 0;
    }
    return 1;
}

int jf_put_num(cJSON *obj, const char *name, double v)
{
    return cJSON_AddNumberToObject(obj, name, v) != NULL;
}

int jf_put_num_or_null(cJSON *obj, const char *name, double v)
{
    return jf_add(obj, name, isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull());
}

int jf_put_str(cJSON *obj, const char *name, const char *s)
{
    return cJSON_AddStringToObject(obj, name, s ? s : "") != NULL;
}

cJSON *jf_done(cJSON *ev, int ok)
{
    if (ok && ev)
        return ev;
    cJSON_Delete(ev);
    return NULL;
}

int jf_put_fields(cJSON *o, const void *src, const jf_field *f, size_t n)
{
    int ok = 1;
    for (size_t i = 0; ok && i < n; i++) {
        const char *p = (const char *)src + f[i].off;
        switch (f[i].kind) {
        case JF_INT: ok = jf_put_num(o, f[i].name, *(const int *)p); break;
        case JF_NUM: ok = jf_put_num_or_null(o, f[i].name, *(const double *)p); break;
        case JF_PID: ok = jf_put_num(o, f[i].name, (double)*(const long *)p); break;
        case JF_BOOL: ok = cJSON_AddBoolToObject(o, f[i].name, *(const int *)p) != NULL; break;
        default: ok = jf_put_str(o, f[i].name, p); break;
        }
    }
    return ok;
}

void jf_get_fields(const cJSON *o, void *dst, const jf_field *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *p = (char *)dst + f[i].off;
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, f[i].name);
        const char *s = cJSON_IsString(it) ? it->valuestring : NULL;
        double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
        switch (f[i].kind) {
        case JF_INT: jf_int(o, f[i].name, (int *)p); break;
        case JF_NUM: jf_num(o, f[i].name, (double *)p); break;
        case JF_PID: if (v >= 0 && v <= 2147483647.0) *(long *)p = (long)v; break;
        case JF_BOOL: if (cJSON_IsBool(it)) *(int *)p = cJSON_IsTrue(it); break;
        /* an id too long to be a run id is not cut down to one */
        case JF_ID: if (s && strlen(s) < f[i].cap) snprintf(p, f[i].cap, "%s", s); break;
        case JF_STR: if (s) snprintf(p, f[i].cap, "%s", s); break;
        }
    }
}

int jf_get_numbers_or_null(const cJSON *obj, void *dst, const jf_field *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, f[i].name);
        if (!cJSON_IsNumber(it) && !cJSON_IsNull(it))
            return -1;
        *(double *)((char *)dst + f[i].off) = cJSON_IsNumber(it) ? it->valuedouble : NAN;
    }
    return 0;
}

int jf_name_index(const char *name, const char *const *names, size_t n)
{
    for (size_t i = 0; name && i < n; i++)
        if (strcmp(names[i], name) == 0)
            return (int)i;
    return -1;
}

size_t jf_strings(const cJSON *obj, const char *name, const char **out, size_t cap)
{
    size_t n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(obj, name)) {
        if (n < cap && cJSON_IsString(it))
            out[n++] = it->valuestring;
    }
    return n;
}

int jf_tuple(const cJSON *arr, const char **s, double *v, int n)
{
    const cJSON *first = cJSON_GetArrayItem(arr, 0);
    if (!cJSON_IsArray(arr) || !cJSON_IsString(first))
        return 0;
    for (int i = 0; i < n; i++) {
        const cJSON *it = cJSON_GetArrayItem(arr, i + 1);
        if (!cJSON_IsNumber(it))
            return 0;
        v[i] = it->valuedouble;
    }
    *s = first->valuestring;
    return 1;
}
