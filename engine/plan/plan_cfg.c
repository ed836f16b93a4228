/* plan_cfg.c: the readers of a config.json's (or a spec's arch object's) optional keys
 * (plan_internal.h, plan_cfg_*): a key that is absent or null leaves the caller's value and
 * says so (1), a present one is read with the range checks and the one-line messages of
 * plan_values.c's plan_json_* (naming the file, the key with its prefix, the value). */
#include "engine/plan/plan_internal.h"

#include <stdio.h>
#include <string.h>

const cJSON *plan_cfg_item(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

/* 0 read, 1 absent (out keeps its value), -1 error. */
int plan_cfg_int(const cJSON *o, const char *org, const char *prefix, const char *key, long long lo,
                   long long hi, int *out, char *err, size_t errlen)
{
    const cJSON *v = plan_cfg_item(o, key);
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

int plan_cfg_need_int(const cJSON *o, const char *org, const char *prefix, const char *key, long long lo,
                    long long hi, int *out, char *err, size_t errlen)
{
    int rc = plan_cfg_int(o, org, prefix, key, lo, hi, out, err, errlen);
    if (rc == 1)
        return pdbx_fail(err, errlen, "%s: missing required field '%s%s'", org, prefix, key);
    return rc;
}

int plan_cfg_bool(const cJSON *o, const char *org, const char *prefix, const char *key, int *out, char *err,
                    size_t errlen)
{
    const cJSON *v = plan_cfg_item(o, key);
    if (!v)
        return 1;
    char label[PDBX_PATH_MAX + 96];
    snprintf(label, sizeof label, "%s: %s%s", org, prefix, key);
    return plan_json_bool(v, label, out, err, errlen);
}

int plan_cfg_num(const cJSON *o, const char *org, const char *prefix, const char *key, double lo, double hi,
                   double *out, char *err, size_t errlen)
{
    const cJSON *v = plan_cfg_item(o, key);
    if (!v)
        return 1;
    char label[PDBX_PATH_MAX + 96];
    snprintf(label, sizeof label, "%s: %s%s", org, prefix, key);
    return plan_json_number(v, label, lo, hi, out, err, errlen);
}

int plan_cfg_str(const cJSON *o, const char *org, const char *prefix, const char *key, char *out, size_t len,
                   char *err, size_t errlen)
{
    const cJSON *v = plan_cfg_item(o, key);
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
