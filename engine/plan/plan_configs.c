/* plan_configs.c: the list of parallel configurations: the JSON "configs" list, tp/pp/dp cross
 * products (with gpus: DP derived) and the tp/pp/dp/gpus/configs overrides (docs/spec.md,
 * "Configurations" and "Overrides"). */
#include "engine/plan/plan_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int config_add(plan_config_set *cs, int tp, int pp, int dp, char *err, size_t errlen)
{
    for (int i = 0; i < cs->n; i++)
        if (cs->c[i].tp == tp && cs->c[i].pp == pp && cs->c[i].dp == dp)
            return 0;
    if (cs->n >= PDBX_MAX_CONFIGS)
        return pdbx_fail(err, errlen, "configs: more than %d configurations (allowed: at most %d)",
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
int plan_configs_cross(const pdbx_spec *s, const int *tps, size_t ntp, const int *pps, size_t npp,
                         const int *dps, size_t ndp, long long gpus, plan_config_set *out, char *err, size_t errlen)
{
    long long cluster = (long long)s->gpus_per_node * s->nodes;
    out->n = 0;
    if (gpus > 0 && gpus > cluster)
        return pdbx_fail(err, errlen, "gpus: %lld exceeds gpus_per_node %d x nodes %d = %lld (allowed: 1..%lld)",
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
            return pdbx_fail(err, errlen, "gpus: %lld is not a multiple of tp*pp for any tp in [%s] and pp in [%s] "
                             "(allowed: a multiple of tp*pp)", gpus, a, b);
        list_text(dps, ndp, c, sizeof c);
        return pdbx_fail(err, errlen, "tp: no combination of tp [%s] x pp [%s] x dp [%s] fits gpus_per_node %d x "
                         "nodes %d = %lld GPUs (allowed: tp*pp*dp <= %lld)", a, b, c, s->gpus_per_node, s->nodes,
                         cluster, cluster);
    }
    return 0;
}

/* "configs": [{"tp":8,"pp":2,"dp":1}, {"tp":4,"pp":2,"gpus":16}, ...] */
int plan_configs_from_json(const cJSON *v, plan_config_set *out, char *err, size_t errlen)
{
    if (!cJSON_IsArray(v)) {
        char br[64];
        plan_json_brief(v, br, sizeof br);
        return pdbx_fail(err, errlen, "configs: expected a list of {\"tp\", \"pp\", \"dp\"} objects, got %s", br);
    }
    out->n = 0;
    int i = 0;
    for (const cJSON *it = v->child; it; it = it->next, i++) {
        char label[64];
        snprintf(label, sizeof label, "configs[%d]", i);
        if (!cJSON_IsObject(it)) {
            char br[64];
            plan_json_brief(it, br, sizeof br);
            return pdbx_fail(err, errlen, "%s: expected an object {\"tp\", \"pp\", \"dp\"}, got %s", label, br);
        }
        static const char *const keys[] = {"tp", "pp", "dp", "gpus"};
        for (const cJSON *k = it->child; k; k = k->next) {
            int known = 0;
            for (size_t q = 0; q < 4; q++)
                known |= k->string && strcmp(k->string, keys[q]) == 0;
            if (!known) {
                char sug[128];
                pdbx_suggest(k->string ? k->string : "", keys, 4, sug, sizeof sug);
                return pdbx_fail(err, errlen, "%s: unknown field '%s'%s", label, k->string ? k->string : "", sug);
            }
        }
        long long tp = 1, pp = 1, dp = 1, gpus = 0;
        const cJSON *jtp = cJSON_GetObjectItemCaseSensitive(it, "tp");
        const cJSON *jpp = cJSON_GetObjectItemCaseSensitive(it, "pp");
        const cJSON *jdp = cJSON_GetObjectItemCaseSensitive(it, "dp");
        const cJSON *jg = cJSON_GetObjectItemCaseSensitive(it, "gpus");
        char f[96];
        if (!jtp)
            return pdbx_fail(err, errlen, "%s: missing required field 'tp'", label);
        snprintf(f, sizeof f, "%s.tp", label);
        if (plan_json_int(jtp, f, 1, PLAN_TP_MAX, &tp, err, errlen) != 0)
            return -1;
        snprintf(f, sizeof f, "%s.pp", label);
        if (jpp && plan_json_int(jpp, f, 1, PLAN_PP_MAX, &pp, err, errlen) != 0)
            return -1;
        snprintf(f, sizeof f, "%s.dp", label);
        if (jdp && plan_json_int(jdp, f, 1, PLAN_DP_MAX, &dp, err, errlen) != 0)
            return -1;
        snprintf(f, sizeof f, "%s.gpus", label);
        if (jg && plan_json_int(jg, f, 1, PLAN_GPUS_MAX, &gpus, err, errlen) != 0)
            return -1;
        if (jg && !jdp) {
            if (gpus % (tp * pp) != 0)
                return pdbx_fail(err, errlen, "%s.gpus: %lld is not a multiple of tp %lld x pp %lld = %lld "
                                 "(allowed: a multiple of %lld)", label, gpus, tp, pp, tp * pp, tp * pp);
            dp = gpus / (tp * pp);
        } else if (jg && tp * pp * dp != gpus) {
            return pdbx_fail(err, errlen, "%s: tp %lld x pp %lld x dp %lld = %lld does not equal gpus %lld "
                             "(allowed: tp*pp*dp = gpus)", label, tp, pp, dp, tp * pp * dp, gpus);
        }
        for (int q = 0; q < out->n; q++)
            if (out->c[q].tp == tp && out->c[q].pp == pp && out->c[q].dp == dp)
                return pdbx_fail(err, errlen, "configs: TP%lld/PP%lld/DP%lld is listed twice (allowed: each "
                                 "configuration once)", tp, pp, dp);
        if (config_add(out, (int)tp, (int)pp, (int)dp, err, errlen) != 0)
            return -1;
    }
    if (out->n == 0)
        return pdbx_fail(err, errlen, "configs: empty list (allowed: 1 to %d configurations)", PDBX_MAX_CONFIGS);
    return 0;
}

/* "1x8x1,2x4x1" (TPxPPxDP) for pdbx_spec_set("configs", ...). */
int plan_configs_from_text(const char *str, plan_config_set *out, char *err, size_t errlen)
{
    char buf[1024];
    if (strlen(str) >= sizeof buf)
        return pdbx_fail(err, errlen, "configs: value too long (allowed: at most %zu characters)", sizeof buf - 1);
    pdbx_strcopy(buf, sizeof buf, str);
    out->n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        int tp, pp, dp, used = 0;
        if (sscanf(tok, "%dx%dx%d%n", &tp, &pp, &dp, &used) != 3 || tok[used] != '\0')
            return pdbx_fail(err, errlen, "configs: expected TPxPPxDP (e.g. 2x4x1), got \"%s\"", tok);
        if (tp < 1 || tp > PLAN_TP_MAX)
            return plan_range_fail("tp", tp, 1, PLAN_TP_MAX, err, errlen);
        if (pp < 1 || pp > PLAN_PP_MAX)
            return plan_range_fail("pp", pp, 1, PLAN_PP_MAX, err, errlen);
        if (dp < 1 || dp > PLAN_DP_MAX)
            return plan_range_fail("dp", dp, 1, PLAN_DP_MAX, err, errlen);
        for (int q = 0; q < out->n; q++)
            if (out->c[q].tp == tp && out->c[q].pp == pp && out->c[q].dp == dp)
                return pdbx_fail(err, errlen, "configs: TP%d/PP%d/DP%d is listed twice (allowed: each "
                                 "configuration once)", tp, pp, dp);
        if (config_add(out, tp, pp, dp, err, errlen) != 0)
            return -1;
    }
    if (out->n == 0)
        return pdbx_fail(err, errlen, "configs: empty list (allowed: TPxPPxDP,...)");
    return 0;
}

void plan_configs_apply(pdbx_spec *s, const plan_config_set *cs)
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
        long long g = (long long)c->tp * c->pp * c->dp;   /* not validated yet: up to 2^40 */
        if (which == 3 && g > INT_MAX)
            continue;            /* more GPUs than any cluster (<= 2^20): fits no override */
        int v = which == 0 ? c->tp : which == 1 ? c->pp : which == 2 ? c->dp : (int)g;
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
int plan_configs_override(pdbx_spec *s, const char *field, const cJSON *v, char *err, size_t errlen)
{
    int list[PLAN_LIST_CAP];
    size_t n = 0;
    plan_config_set cs = {.n = 0};
    long long cluster = (long long)s->gpus_per_node * s->nodes;
    if (strcmp(field, "gpus") == 0) {
        long long g;
        if (plan_json_int(v, "gpus", 1, PLAN_GPUS_MAX, &g, err, errlen) != 0)
            return -1;
        if (g > cluster)
            return pdbx_fail(err, errlen, "gpus: %lld exceeds gpus_per_node %d x nodes %d = %lld (allowed: 1..%lld)",
                             g, s->gpus_per_node, s->nodes, cluster, cluster);
        for (int i = 0; i < s->nconfigs; i++) {
            long long tpp = (long long)s->configs[i].tp * s->configs[i].pp;
            if (g % tpp == 0 && config_add(&cs, s->configs[i].tp, s->configs[i].pp, (int)(g / tpp), err, errlen) != 0)
                return -1;
        }
        if (cs.n == 0)
            return pdbx_fail(err, errlen, "gpus: %lld is not a multiple of tp*pp of any configuration "
                             "(allowed: a multiple of tp*pp; give tp and pp after gpus)", g);
        plan_configs_apply(s, &cs);
        return 0;
    }
    int which = strcmp(field, "tp") == 0 ? 0 : strcmp(field, "pp") == 0 ? 1 : 2;
    long long hi = which == 0 ? PLAN_TP_MAX : which == 1 ? PLAN_PP_MAX : PLAN_DP_MAX;
    if (plan_read_int_list(v, field, 1, hi, list, PLAN_LIST_CAP, &n, err, errlen) != 0)
        return -1;
    int tps[PDBX_MAX_CONFIGS], pps[PDBX_MAX_CONFIGS], gs[PDBX_MAX_CONFIGS];
    size_t ntp = distinct(s, 0, tps), npp = distinct(s, 1, pps), ng = distinct(s, 3, gs);
    if (which == 2) {   /* dp: a plain cross product, GPU counts change */
        if (plan_configs_cross(s, tps, ntp, pps, npp, list, n, 0, &cs, err, errlen) != 0)
            return -1;
        plan_configs_apply(s, &cs);
        return 0;
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
        return pdbx_fail(err, errlen, "%s: no configuration with %s in [%s] fits the GPU counts [%s] of the current "
                         "configurations (allowed: tp*pp dividing a GPU count; set gpus first)", field, field, a, b);
    }
    plan_configs_apply(s, &cs);
    return 0;
}
