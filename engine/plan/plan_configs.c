/* plan_configs.c: the list of parallel configurations: the JSON "configs" list, tp/pp/dp/ep cross
 * products (with gpus: DP derived) and the tp/pp/dp/ep/gpus/configs overrides (docs/spec.md,
 * "Configurations" and "Overrides"). ep (expert parallelism) adds no GPUs: its ranks are taken
 * from a stage's tp x dp (plan.h's pdbx_parallel); the validation checks that it fits. */
#include "engine/plan/plan_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int same_config(const pdbx_parallel *c, int tp, int pp, int dp, int ep)
{
    return c->tp == tp && c->pp == pp && c->dp == dp && pdbx_par_ep(c) == ep;
}

static int config_add(plan_config_set *cs, int tp, int pp, int dp, int ep, char *err, size_t errlen)
{
    for (int i = 0; i < cs->n; i++)
        if (same_config(&cs->c[i], tp, pp, dp, ep))
            return 0;
    if (cs->n >= PDBX_MAX_CONFIGS)
        return pdbx_fail(err, errlen, "configs: more than %d configurations (allowed: at most %d)",
                         PDBX_MAX_CONFIGS, PDBX_MAX_CONFIGS);
    cs->c[cs->n++] = (pdbx_parallel){tp, pp, dp, ep};
    return 0;
}

/* "TP2/PP1/DP1" or, with ep > 1, "TP2/PP1/DP1/EP2": a configuration in a message. */
static const char *config_name(int tp, int pp, int dp, int ep, char *buf, size_t len)
{
    int n = snprintf(buf, len, "TP%d/PP%d/DP%d", tp, pp, dp);
    if (ep > 1 && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "/EP%d", ep);
    return buf;
}

static int listed_twice(int tp, int pp, int dp, int ep, char *err, size_t errlen)
{
    char nm[96];
    return pdbx_fail(err, errlen, "configs: %s is listed twice (allowed: each configuration once)",
                     config_name(tp, pp, dp, ep, nm, sizeof nm));
}

static void list_text(const int *v, size_t n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? "," : "", v[i]);
}

/* (tp, pp, dp) with each ep of the list: an ep that does not divide tp*dp is skipped when the
 * list has several (the cross product's other combinations carry it), kept when it is alone. */
static int add_eps(plan_config_set *cs, int tp, int pp, int dp, const int *eps, size_t nep, char *err,
                   size_t errlen)
{
    for (size_t e = 0; e < nep; e++)
        if ((nep == 1 || ((long long)tp * dp) % eps[e] == 0) && config_add(cs, tp, pp, dp, eps[e], err, errlen) != 0)
            return -1;
    return 0;
}

/* The cross product tp x pp x dp x ep in that nesting order (FASOP's order: TP outermost, EP
 * innermost), or with gpus > 0 tp x pp x ep and DP = gpus / (tp*pp). Combinations that do not
 * fit the cluster (gpus_per_node x nodes), whose tp*pp does not divide gpus, or (with an ep
 * list of more than one degree) whose ep does not divide tp*dp, are skipped; a single ep is
 * kept everywhere so that the validation names the configuration it does not fit. */
int plan_configs_cross(const pdbx_spec *s, const int *tps, size_t ntp, const int *pps, size_t npp,
                         const int *dps, size_t ndp, const int *eps, size_t nep, long long gpus,
                         plan_config_set *out, char *err, size_t errlen)
{
    static const int one = 1;
    if (!eps || nep == 0) {
        eps = &one;
        nep = 1;
    }
    long long cluster = (long long)s->gpus_per_node * s->nodes;
    out->n = 0;
    if (gpus > 0 && gpus > cluster)
        return pdbx_fail(err, errlen, "gpus: %lld exceeds gpus_per_node %d x nodes %d = %lld (allowed: 1..%lld)",
                         gpus, s->gpus_per_node, s->nodes, cluster, cluster);
    for (size_t i = 0; i < ntp; i++)
        for (size_t j = 0; j < npp; j++) {
            long long tpp = (long long)tps[i] * pps[j];
            if (gpus > 0) {
                if (gpus % tpp == 0 && add_eps(out, tps[i], pps[j], (int)(gpus / tpp), eps, nep, err, errlen) != 0)
                    return -1;
                continue;
            }
            for (size_t k = 0; k < ndp; k++)
                if (tpp * dps[k] <= cluster && add_eps(out, tps[i], pps[j], dps[k], eps, nep, err, errlen) != 0)
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

/* "configs": [{"tp":8,"pp":2,"dp":1}, {"tp":4,"pp":2,"gpus":16}, {"tp":1,"dp":4,"ep":2}, ...] */
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
        static const char *const keys[] = {"tp", "pp", "dp", "ep", "gpus"};
        for (const cJSON *k = it->child; k; k = k->next) {
            int known = 0;
            for (size_t q = 0; q < 5; q++)
                known |= k->string && strcmp(k->string, keys[q]) == 0;
            if (!known) {
                char sug[128];
                pdbx_suggest(k->string ? k->string : "", keys, 5, sug, sizeof sug);
                return pdbx_fail(err, errlen, "%s: unknown field '%s'%s", label, k->string ? k->string : "", sug);
            }
        }
        long long tp = 1, pp = 1, dp = 1, ep = 1, gpus = 0;
        const cJSON *jtp = cJSON_GetObjectItemCaseSensitive(it, "tp");
        const cJSON *jpp = cJSON_GetObjectItemCaseSensitive(it, "pp");
        const cJSON *jdp = cJSON_GetObjectItemCaseSensitive(it, "dp");
        const cJSON *jg = cJSON_GetObjectItemCaseSensitive(it, "gpus");
        const cJSON *jep = cJSON_GetObjectItemCaseSensitive(it, "ep");
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
        snprintf(f, sizeof f, "%s.ep", label);
        if (jep && plan_json_int(jep, f, 1, PLAN_EP_MAX, &ep, err, errlen) != 0)
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
            if (same_config(&out->c[q], (int)tp, (int)pp, (int)dp, (int)ep))
                return listed_twice((int)tp, (int)pp, (int)dp, (int)ep, err, errlen);
        if (config_add(out, (int)tp, (int)pp, (int)dp, (int)ep, err, errlen) != 0)
            return -1;
    }
    if (out->n == 0)
        return pdbx_fail(err, errlen, "configs: empty list (allowed: 1 to %d configurations)", PDBX_MAX_CONFIGS);
    return 0;
}

/* "1x8x1,2x4x1,1x1x4x2" (TPxPPxDP, with an optional fourth number xEP) for
 * pdbx_spec_set("configs", ...). */
int plan_configs_from_text(const char *str, plan_config_set *out, char *err, size_t errlen)
{
    char buf[1024];
    if (strlen(str) >= sizeof buf)
        return pdbx_fail(err, errlen, "configs: value too long (allowed: at most %zu characters)", sizeof buf - 1);
    pdbx_strcopy(buf, sizeof buf, str);
    out->n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        int tp, pp, dp, ep = 1, used = 0, used4 = 0;
        int ok = sscanf(tok, "%dx%dx%d%n", &tp, &pp, &dp, &used) == 3;
        if (ok && tok[used] == 'x')   /* the optional fourth number, EP */
            ok = sscanf(tok + used, "x%d%n", &ep, &used4) == 1;
        if (!ok || tok[used + used4] != '\0')
            return pdbx_fail(err, errlen, "configs: expected TPxPPxDP or TPxPPxDPxEP (e.g. 2x4x1, 1x1x4x2), "
                             "got \"%s\"", tok);
        if (tp < 1 || tp > PLAN_TP_MAX)
            return plan_range_fail("tp", tp, 1, PLAN_TP_MAX, err, errlen);
        if (pp < 1 || pp > PLAN_PP_MAX)
            return plan_range_fail("pp", pp, 1, PLAN_PP_MAX, err, errlen);
        if (dp < 1 || dp > PLAN_DP_MAX)
            return plan_range_fail("dp", dp, 1, PLAN_DP_MAX, err, errlen);
        if (ep < 1 || ep > PLAN_EP_MAX)
            return plan_range_fail("ep", ep, 1, PLAN_EP_MAX, err, errlen);
        for (int q = 0; q < out->n; q++)
            if (same_config(&out->c[q], tp, pp, dp, ep))
                return listed_twice(tp, pp, dp, ep, err, errlen);
        if (config_add(out, tp, pp, dp, ep, err, errlen) != 0)
            return -1;
    }
    if (out->n == 0)
        return pdbx_fail(err, errlen, "configs: empty list (allowed: TPxPPxDP[xEP],...)");
    return 0;
}

void plan_configs_apply(pdbx_spec *s, const plan_config_set *cs)
{
    memcpy(s->configs, cs->c, (size_t)cs->n * sizeof cs->c[0]);
    s->nconfigs = cs->n;
}

/* Distinct values of the current configurations, in first-seen order: which 0 tp, 1 pp, 2 dp,
 * 3 GPUs (tp x pp x dp), 4 ep. */
static size_t distinct(const pdbx_spec *s, int which, int *out)
{
    size_t n = 0;
    for (int i = 0; i < s->nconfigs; i++) {
        const pdbx_parallel *c = &s->configs[i];
        long long g = (long long)c->tp * c->pp * c->dp;   /* not validated yet: up to 2^40 */
        if (which == 3 && g > INT_MAX)
            continue;            /* more GPUs than any cluster (<= 2^20): fits no override */
        int v = which == 0 ? c->tp : which == 1 ? c->pp : which == 2 ? c->dp : which == 3 ? (int)g : pdbx_par_ep(c);
        size_t k;
        for (k = 0; k < n; k++)
            if (out[k] == v)
                break;
        if (k == n && n < PDBX_MAX_CONFIGS)
            out[n++] = v;
    }
    return n;
}

/* gpus N: each current (TP, PP, EP) with DP = N/(TP*PP), those whose TP*PP does not divide N
 * dropped. */
static int override_gpus(pdbx_spec *s, const cJSON *v, plan_config_set *cs, char *err, size_t errlen)
{
    long long g, cluster = (long long)s->gpus_per_node * s->nodes;
    if (plan_json_int(v, "gpus", 1, PLAN_GPUS_MAX, &g, err, errlen) != 0)
        return -1;
    if (g > cluster)
        return pdbx_fail(err, errlen, "gpus: %lld exceeds gpus_per_node %d x nodes %d = %lld (allowed: 1..%lld)",
                         g, s->gpus_per_node, s->nodes, cluster, cluster);
    for (int i = 0; i < s->nconfigs; i++) {
        const pdbx_parallel *c = &s->configs[i];
        long long tpp = (long long)c->tp * c->pp;
        if (g % tpp == 0 && config_add(cs, c->tp, c->pp, (int)(g / tpp), pdbx_par_ep(c), err, errlen) != 0)
            return -1;
    }
    if (cs->n == 0)
        return pdbx_fail(err, errlen, "gpus: %lld is not a multiple of tp*pp of any configuration "
                         "(allowed: a multiple of tp*pp; give tp and pp after gpus)", g);
    return 0;
}

/* ep L: each current (TP, PP, DP) with every EP of L (one that does not divide TP*DP skipped
 * when L has several). */
static int override_ep(pdbx_spec *s, const cJSON *v, plan_config_set *cs, char *err, size_t errlen)
{
    int list[PLAN_LIST_CAP];
    size_t n = 0;
    if (plan_read_int_list(v, "ep", 1, PLAN_EP_MAX, list, PLAN_LIST_CAP, &n, err, errlen) != 0)
        return -1;
    for (int i = 0; i < s->nconfigs; i++)
        if (add_eps(cs, s->configs[i].tp, s->configs[i].pp, s->configs[i].dp, list, n, err, errlen) != 0)
            return -1;
    if (cs->n == 0) {
        char a[256];
        list_text(list, n, a, sizeof a);
        return pdbx_fail(err, errlen, "ep: no degree of [%s] divides tp*dp of a current configuration (allowed: "
                         "an ep dividing tp*dp)", a);
    }
    return 0;
}

/* tp L or pp L: L x the current PP (or TP) values x the current EP values, DP derived so each
 * current GPU count is kept. */
static int override_tp_pp(pdbx_spec *s, int which, const int *list, size_t n, plan_config_set *cs, char *err,
                          size_t errlen)
{
    int tps[PDBX_MAX_CONFIGS], pps[PDBX_MAX_CONFIGS], gs[PDBX_MAX_CONFIGS], eps[PDBX_MAX_CONFIGS];
    size_t ntp = distinct(s, 0, tps), npp = distinct(s, 1, pps), ng = distinct(s, 3, gs), nep = distinct(s, 4, eps);
    long long cluster = (long long)s->gpus_per_node * s->nodes;
    const int *T = which == 0 ? list : tps, *P = which == 1 ? list : pps;
    size_t nT = which == 0 ? n : ntp, nP = which == 1 ? n : npp;
    for (size_t i = 0; i < nT; i++)
        for (size_t j = 0; j < nP; j++)
            for (size_t k = 0; k < ng; k++) {
                long long tpp = (long long)T[i] * P[j];
                if (gs[k] % tpp == 0 && gs[k] <= cluster &&
                    add_eps(cs, T[i], P[j], (int)(gs[k] / tpp), eps, nep, err, errlen) != 0)
                    return -1;
            }
    if (cs->n == 0) {
        const char *field = which == 0 ? "tp" : "pp";
        char a[256], b[256];
        list_text(list, n, a, sizeof a);
        list_text(gs, ng, b, sizeof b);
        return pdbx_fail(err, errlen, "%s: no configuration with %s in [%s] fits the GPU counts [%s] of the current "
                         "configurations (allowed: tp*pp dividing a GPU count; set gpus first)", field, field, a, b);
    }
    return 0;
}

/* Overrides of tp, pp, dp, ep, gpus (pdbx_spec_set): rebuild the configurations from the given
 * list and the distinct values of the current ones (docs/spec.md, "Overrides"):
 *   tp L:   L x current PP values x current EP values, DP derived so each GPU count is kept;
 *   pp L:   current TP values x L x current EP values, DP derived likewise;
 *   dp L:   current TP values x current PP values x L x current EP values;
 *   ep L:   each current (TP, PP, DP) x L;
 *   gpus N: each current (TP, PP, EP) with DP = N/(TP*PP), those not dividing N dropped. */
int plan_configs_override(pdbx_spec *s, const char *field, const cJSON *v, char *err, size_t errlen)
{
    plan_config_set cs = {.n = 0};
    int rc;
    if (strcmp(field, "gpus") == 0) {
        rc = override_gpus(s, v, &cs, err, errlen);
    } else if (strcmp(field, "ep") == 0) {
        rc = override_ep(s, v, &cs, err, errlen);
    } else {
        int which = strcmp(field, "tp") == 0 ? 0 : strcmp(field, "pp") == 0 ? 1 : 2;
        long long hi = which == 0 ? PLAN_TP_MAX : which == 1 ? PLAN_PP_MAX : PLAN_DP_MAX;
        int list[PLAN_LIST_CAP];
        size_t n = 0;
        if (plan_read_int_list(v, field, 1, hi, list, PLAN_LIST_CAP, &n, err, errlen) != 0)
            return -1;
        if (which == 2) {   /* dp: a plain cross product, GPU counts change */
            int tps[PDBX_MAX_CONFIGS], pps[PDBX_MAX_CONFIGS], eps[PDBX_MAX_CONFIGS];
            size_t ntp = distinct(s, 0, tps), npp = distinct(s, 1, pps), nep = distinct(s, 4, eps);
            rc = plan_configs_cross(s, tps, ntp, pps, npp, list, n, eps, nep, 0, &cs, err, errlen);
        } else {
            rc = override_tp_pp(s, which, list, n, &cs, err, errlen);
        }
    }
    if (rc != 0)
        return -1;
    plan_configs_apply(s, &cs);
    return 0;
}
