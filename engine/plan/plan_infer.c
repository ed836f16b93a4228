/* plan_infer.c: the spec's inference grids, `tokens` and `kv_cache` (plan.h, docs/spec.md
 * "Inference grids"): their readers (JSON and pdbx_spec_set's text), writers, the checks that
 * need the whole spec, and the expansion of the kv_cache grid into rows. */
#include "engine/plan/plan_internal.h"
#include "store/profiledb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKENS_MAX 131072          /* seq_len's limit: the largest batch of tokens */

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Sorts and drops duplicates; returns the new count. */
static int sort_unique(int *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_int);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (m == 0 || v[m - 1] != v[i])
            v[m++] = v[i];
    return m;
}

static int push_value(const char *field, long long x, long long lo, long long hi, int *out, int *n,
                      int cap, char *err, size_t errlen)
{
    if (x < lo || x > hi)
        return plan_range_fail(field, x, lo, hi, err, errlen);
    for (int i = 0; i < *n; i++)
        if (out[i] == (int)x)
            return 0;
    if (*n >= cap)
        return pdbx_fail(err, errlen, "%s: more than %d values (allowed: at most %d)", field, cap, cap);
    out[(*n)++] = (int)x;
    return 0;
}

/* "A,B,C", "MIN:MAX" (powers of two from MIN to MAX), "MIN:MAX:STEP". */
static int read_list_text(const char *field, const char *str, long long lo, long long hi, int *out,
                          int *n, int cap, char *err, size_t errlen)
{
    char buf[1024];
    if (strlen(str) >= sizeof buf)
        return pdbx_fail(err, errlen, "%s: value too long (allowed: at most %zu characters)", field,
                         sizeof buf - 1);
    pdbx_strcopy(buf, sizeof buf, str);
    if (strchr(buf, ':')) {
        char *p1 = strchr(buf, ':'), *p2 = strchr(p1 + 1, ':');
        *p1 = '\0';
        if (p2)
            *p2 = '\0';
        long long a, b, step = 0;
        if (plan_parse_ll(buf, &a) != 0 || plan_parse_ll(p1 + 1, &b) != 0 ||
            (p2 && (plan_parse_ll(p2 + 1, &step) != 0 || step < 1)))
            return pdbx_fail(err, errlen, "%s: expected \"MIN:MAX\" (powers of two) or \"MIN:MAX:STEP\", "
                             "got \"%s\"", field, str);
        if (a < lo || a > hi)
            return plan_range_fail(field, a, lo, hi, err, errlen);
        if (b < lo || b > hi)
            return plan_range_fail(field, b, lo, hi, err, errlen);
        if (a > b)
            return pdbx_fail(err, errlen, "%s: range \"%s\" has its start above its end (allowed: MIN <= MAX)",
                             field, str);
        if (!step && (!plan_is_pow2(a) || !plan_is_pow2(b)))
            return pdbx_fail(err, errlen, "%s: \"%s\" is not a range of powers of two (allowed: MIN:MAX of "
                             "powers of two, or MIN:MAX:STEP)", field, str);
        for (long long x = a; x <= b; x = step ? x + step : 2 * x)
            if (push_value(field, x, lo, hi, out, n, cap, err, errlen) != 0)
                return -1;
        return 0;
    }
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long long x;
        if (plan_parse_ll(tok, &x) != 0)
            return pdbx_fail(err, errlen, "%s: expected an integer, got \"%s\"", field, tok);
        if (push_value(field, x, lo, hi, out, n, cap, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* A list field: a JSON array of integers, or the text forms above. */
static int read_list(const char *field, const cJSON *v, long long lo, long long hi, int *out, int *n,
                     int cap, char *err, size_t errlen)
{
    int tmp[PDBX_MAX_TOKENS > PDBX_MAX_KV_AXIS ? PDBX_MAX_TOKENS : PDBX_MAX_KV_AXIS];
    int m = 0;
    if (cJSON_IsArray(v)) {
        int i = 0;
        for (const cJSON *it = v->child; it; it = it->next, i++) {
            char label[64];
            snprintf(label, sizeof label, "%s[%d]", field, i);
            long long x;
            if (plan_json_int(it, label, lo, hi, &x, err, errlen) != 0 ||
                push_value(field, x, lo, hi, tmp, &m, cap, err, errlen) != 0)
                return -1;
        }
    } else if (cJSON_IsNumber(v)) {
        long long x;
        if (plan_json_int(v, field, lo, hi, &x, err, errlen) != 0 ||
            push_value(field, x, lo, hi, tmp, &m, cap, err, errlen) != 0)
            return -1;
    } else if (cJSON_IsString(v) && v->valuestring) {
        if (read_list_text(field, v->valuestring, lo, hi, tmp, &m, cap, err, errlen) != 0)
            return -1;
    } else {
        char br[64];
        plan_json_brief(v, br, sizeof br);
        return pdbx_fail(err, errlen, "%s: expected a list of integers, got %s", field, br);
    }
    m = sort_unique(tmp, m);
    memcpy(out, tmp, (size_t)m * sizeof *out);
    *n = m;
    return 0;
}

int plan_read_tokens(const cJSON *v, pdbx_spec *s, char *err, size_t errlen)
{
    return read_list("tokens", v, 1, TOKENS_MAX, s->tokens, &s->ntokens, PDBX_MAX_TOKENS, err, errlen);
}

int plan_read_kv_cache(const cJSON *v, pdbx_spec *s, char *err, size_t errlen)
{
    cJSON *parsed = NULL;
    if (cJSON_IsString(v) && v->valuestring) {       /* pdbx_spec_set: the object's JSON text */
        parsed = cJSON_Parse(v->valuestring);
        if (!parsed || !cJSON_IsObject(parsed)) {
            cJSON_Delete(parsed);
            return pdbx_fail(err, errlen, "kv_cache: expected a JSON object such as {\"prefill_chunks\":[16],"
                             "\"decode_batch\":[1],\"decode_kv\":[64]}, got \"%.60s\"", v->valuestring);
        }
        v = parsed;
    }
    if (!cJSON_IsObject(v)) {
        char br[64];
        plan_json_brief(v, br, sizeof br);
        return pdbx_fail(err, errlen, "kv_cache: expected an object with prefill_chunks, prefill_kv, "
                         "decode_batch, decode_kv, max_kv, got %s", br);
    }
    pdbx_kv_grid g;
    memset(&g, 0, sizeof g);
    static const char *const keys[] = { "prefill_chunks", "prefill_kv", "decode_batch", "decode_kv", "max_kv" };
    int rc = 0;
    for (const cJSON *it = v->child; it && rc == 0; it = it->next) {
        const char *k = it->string ? it->string : "";
        char label[64];
        snprintf(label, sizeof label, "kv_cache.%s", k);
        if (strcmp(k, "prefill_chunks") == 0)
            rc = read_list(label, it, 1, TOKENS_MAX, g.prefill_chunks, &g.nprefill_chunks, PDBX_MAX_KV_AXIS, err, errlen);
        else if (strcmp(k, "prefill_kv") == 0)
            rc = read_list(label, it, 0, TOKENS_MAX, g.prefill_kv, &g.nprefill_kv, PDBX_MAX_KV_AXIS, err, errlen);
        else if (strcmp(k, "decode_batch") == 0)
            rc = read_list(label, it, 1, 4096, g.decode_batch, &g.ndecode_batch, PDBX_MAX_KV_AXIS, err, errlen);
        else if (strcmp(k, "decode_kv") == 0)
            rc = read_list(label, it, 1, TOKENS_MAX, g.decode_kv, &g.ndecode_kv, PDBX_MAX_KV_AXIS, err, errlen);
        else if (strcmp(k, "max_kv") == 0) {
            long long x;
            rc = plan_json_int(it, label, 0, 2 * TOKENS_MAX, &x, err, errlen);
            g.max_kv = (int)x;
        } else {
            char sug[128];
            pdbx_suggest(k, keys, sizeof keys / sizeof keys[0], sug, sizeof sug);
            rc = pdbx_fail(err, errlen, "kv_cache: unknown field '%s'%s (allowed: prefill_chunks, prefill_kv, "
                           "decode_batch, decode_kv, max_kv)", k, sug);
        }
    }
    cJSON_Delete(parsed);
    if (rc != 0)
        return -1;
    /* a prefill chunk with no prefix list is a full prefill (prefix 0) */
    if (g.nprefill_chunks > 0 && g.nprefill_kv == 0)
        g.nprefill_kv = 1;   /* prefill_kv[0] is 0 from the memset */
    if (g.nprefill_kv > 0 && g.nprefill_chunks == 0)
        return pdbx_fail(err, errlen, "kv_cache.prefill_kv: given without prefill_chunks (allowed: both, or "
                         "prefill_chunks alone)");
    if ((g.ndecode_batch > 0) != (g.ndecode_kv > 0))
        return pdbx_fail(err, errlen, "kv_cache.%s: given without %s (allowed: both or neither)",
                         g.ndecode_batch ? "decode_batch" : "decode_kv", g.ndecode_batch ? "decode_kv" : "decode_batch");
    s->kv_cache = g;
    return 0;
}

static cJSON *int_array(const int *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        cJSON *x = cJSON_CreateNumber(v[i]);
        if (!x || !cJSON_AddItemToArray(a, x)) {
            cJSON_Delete(x);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

static int add_array(cJSON *o, const char *key, const int *v, int n)
{
    cJSON *a = int_array(v, n);
    if (a && cJSON_AddItemToObject(o, key, a))
        return 0;
    cJSON_Delete(a);
    return -1;
}

cJSON *plan_tokens_to_json(const pdbx_spec *s)
{
    return int_array(s->tokens, s->ntokens);
}

cJSON *plan_kv_cache_to_json(const pdbx_kv_grid *g)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    int bad = 0;
    if (g->nprefill_chunks)
        bad |= add_array(o, "prefill_chunks", g->prefill_chunks, g->nprefill_chunks) ||
               add_array(o, "prefill_kv", g->prefill_kv, g->nprefill_kv);
    if (g->ndecode_batch)
        bad |= add_array(o, "decode_batch", g->decode_batch, g->ndecode_batch) ||
               add_array(o, "decode_kv", g->decode_kv, g->ndecode_kv);
    if (g->max_kv && !cJSON_AddNumberToObject(o, "max_kv", g->max_kv))
        bad = 1;
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

int pdbx_kv_max(const pdbx_spec *s)
{
    return s->kv_cache.max_kv > 0 ? s->kv_cache.max_kv : s->seq_len;
}

size_t pdbx_kv_rows(const pdbx_spec *s, pdbx_kv_row *out, size_t cap)
{
    const pdbx_kv_grid *g = &s->kv_cache;
    const long long max = pdbx_kv_max(s);
    size_t n = 0;
    for (int c = 0; c < g->nprefill_chunks && c < PDBX_MAX_KV_AXIS; c++)
        for (int p = 0; p < g->nprefill_kv && p < PDBX_MAX_KV_AXIS; p++) {
            if ((long long)g->prefill_chunks[c] + g->prefill_kv[p] > max)
                continue;
            if (n < cap)
                out[n] = (pdbx_kv_row){ 1, g->prefill_chunks[c], g->prefill_kv[p] };
            n++;
        }
    for (int b = 0; b < g->ndecode_batch && b < PDBX_MAX_KV_AXIS; b++)
        for (int k = 0; k < g->ndecode_kv && k < PDBX_MAX_KV_AXIS; k++) {
            if (g->decode_kv[k] > max)
                continue;
            if (n < cap)
                out[n] = (pdbx_kv_row){ g->decode_batch[b], 0, g->decode_kv[k] };
            n++;
        }
    return n;
}

pdbx_opmask pdbx_tokens_ops(const pdbx_spec *s)
{
    pdbx_opmask m = pdbx_spec_ops(s) & ~(PDBX_OP_BIT(PDBX_OP_ATTN_CORE) | PDBX_OP_BIT(PDBX_OP_LOSS) |
                                         PDBX_OP_BIT(PDBX_OP_OPTIMIZER));
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        if (pdbx_op_is_comm((pdbx_op)op))
            m &= ~PDBX_OP_BIT(op);
    return m;
}

int plan_check_infer(const pdbx_spec *s, char *err, size_t errlen)
{
    const pdbx_kv_grid *g = &s->kv_cache;
    const int has_kv = g->nprefill_chunks > 0 || g->ndecode_batch > 0;
    if (has_kv && pdbx_kv_rows(s, NULL, 0) == 0)
        return pdbx_fail(err, errlen, "kv_cache: no row has C + P <= max_kv (%d) or K <= max_kv (allowed: "
                         "chunks, prefixes and decode_kv within max_kv, which is seq_len when 0)", pdbx_kv_max(s));
    /* the rows a run holds (store/profiledb.h PDBX_RUN_MAX_INFER): per distinct TP degree */
    int ntp = 0, tps[PDBX_MAX_CONFIGS];
    for (int c = 0; c < s->nconfigs && c < PDBX_MAX_CONFIGS; c++) {
        int k = 0;
        while (k < ntp && tps[k] != s->configs[c].tp)
            k++;
        if (k == ntp)
            tps[ntp++] = s->configs[c].tp;
    }
    const size_t kv_total = pdbx_kv_rows(s, NULL, 0) * (size_t)ntp;
    if (kv_total > PDBX_RUN_MAX_INFER)
        return pdbx_fail(err, errlen, "kv_cache: %zu rows over %d TP degrees (allowed: at most %d in a run)",
                         kv_total, ntp, PDBX_RUN_MAX_INFER);
    if (s->ntokens > 0 && pdbx_tokens_ops(s) == 0)
        return pdbx_fail(err, errlen, "tokens: ops holds no per-token op (allowed: ops with one of input_norm, "
                         "attn_q ... lm_head besides attn_core and the all-reduces)");
    return 0;
}
