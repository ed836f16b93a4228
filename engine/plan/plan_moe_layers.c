/* plan_moe_layers.c: the layer kinds of a mixture-of-experts model's profile (plan.h, "layer
 * kinds") and the spec's moe_routing field (docs/spec.md): read from JSON or from
 * `--set moe_routing=...` text, written back, printed as an override. */
#include "engine/plan/plan_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The profiled layers that are dense: the model's first_dense_layers, but at most
 * layers_profiled - 1 so that a profile of two or more layers has a MoE layer to measure. */
static int dense_profiled(const pdbx_model *m, int layers_profiled)
{
    if (!plan_is_moe(m))
        return layers_profiled;
    const int k = m->arch.moe.first_dense_layers;
    if (k <= 0)
        return 0;
    if (k >= m->layers)   /* no MoE layer at all: the model is dense (plan_moe_layers 0) */
        return layers_profiled;
    const int cap = layers_profiled - 1;
    return k < cap ? k : cap;
}

int pdbx_layer_is_moe(const pdbx_model *m, int layers_profiled, int l)
{
    return l >= dense_profiled(m, layers_profiled) && l < layers_profiled;
}

int pdbx_profiled_moe_layers(const pdbx_model *m, int layers_profiled)
{
    const int moe = layers_profiled - dense_profiled(m, layers_profiled);
    return moe > 0 ? moe : 0;
}

int pdbx_moe_shared_width(const pdbx_model *m)
{
    return plan_moe_shared_width(m);
}

static int is_dense_mlp(pdbx_op op)
{
    return op == PDBX_OP_MLP_GATE || op == PDBX_OP_MLP_UP || op == PDBX_OP_MLP_ACT_FN || op == PDBX_OP_MLP_DOWN;
}

int pdbx_layer_has_op(const pdbx_model *m, int layers_profiled, int l, pdbx_op op)
{
    if (is_dense_mlp(op))
        return !pdbx_layer_is_moe(m, layers_profiled, l);
    if (pdbx_op_is_moe(op))
        return pdbx_layer_is_moe(m, layers_profiled, l);
    return 1;
}

int pdbx_layers_with_op(const pdbx_model *m, int layers_profiled, pdbx_op op)
{
    int n = 0;
    for (int l = 0; l < layers_profiled; l++)
        n += pdbx_layer_has_op(m, layers_profiled, l, op);
    return n;
}

int pdbx_layer_for_rep(const pdbx_model *m, int layers_profiled, pdbx_op op, long rep)
{
    const int n = pdbx_layers_with_op(m, layers_profiled, op);
    if (n <= 0)
        return -1;
    long want = (rep % n + n) % n;
    for (int l = 0; l < layers_profiled; l++)
        if (pdbx_layer_has_op(m, layers_profiled, l, op) && want-- == 0)
            return l;
    return -1;
}

/* ---- moe_routing ------------------------------------------------------------------------ */

#define ROUTING_ALLOWED "\"balanced\" or {\"imbalance\": F} with 1 <= F <= 64"

/* {"imbalance": f}: f finite in 1 .. PDBX_MOE_MAX_IMBALANCE, no other key. */
static int read_object(const cJSON *o, double *out, char *err, size_t errlen)
{
    const cJSON *f = NULL;
    for (const cJSON *it = o->child; it; it = it->next) {
        if (!it->string || strcmp(it->string, "imbalance") != 0)
            return pdbx_fail(err, errlen, "moe_routing: unknown key \"%s\" (allowed: %s)",
                             it->string ? it->string : "?", ROUTING_ALLOWED);
        f = it;
    }
    if (!f)
        return pdbx_fail(err, errlen, "moe_routing: {} has no imbalance (allowed: %s)", ROUTING_ALLOWED);
    return plan_json_number(f, "moe_routing.imbalance", 1, PDBX_MOE_MAX_IMBALANCE, out, err, errlen);
}

int plan_read_moe_routing(const cJSON *v, double *out, char *err, size_t errlen)
{
    cJSON *parsed = NULL;
    if (cJSON_IsString(v) && v->valuestring) {
        if (strcmp(v->valuestring, "balanced") == 0) {
            *out = 1.0;
            return 0;
        }
        parsed = cJSON_Parse(v->valuestring);   /* pdbx_spec_set: the object's JSON text */
        if (!cJSON_IsObject(parsed)) {
            cJSON_Delete(parsed);
            return pdbx_fail(err, errlen, "moe_routing: \"%.60s\" (allowed: %s)", v->valuestring, ROUTING_ALLOWED);
        }
        v = parsed;
    }
    int rc;
    if (cJSON_IsObject(v)) {
        rc = read_object(v, out, err, errlen);
    } else {
        char br[64];
        plan_json_brief(v, br, sizeof br);
        rc = pdbx_fail(err, errlen, "moe_routing: %s (allowed: %s)", br, ROUTING_ALLOWED);
    }
    cJSON_Delete(parsed);
    return rc;
}

cJSON *plan_moe_routing_to_json(double imbalance)
{
    if (!(imbalance > 1.0))
        return cJSON_CreateString("balanced");
    cJSON *o = cJSON_CreateObject();
    if (o && !cJSON_AddNumberToObject(o, "imbalance", imbalance)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

void plan_moe_routing_text(double imbalance, char *buf, size_t len)
{
    if (!(imbalance > 1.0))
        snprintf(buf, len, "balanced");
    else
        snprintf(buf, len, "{\"imbalance\":%g}", imbalance);
}

int plan_check_moe_routing(const pdbx_spec *s, char *err, size_t errlen)
{
    if (!isfinite(s->moe_imbalance) || s->moe_imbalance < 1 || s->moe_imbalance > PDBX_MOE_MAX_IMBALANCE)
        return pdbx_fail(err, errlen, "moe_routing: imbalance %g (allowed: %s)", s->moe_imbalance, ROUTING_ALLOWED);
    /* an imbalance on a dense model would be silently meaningless: refused by name */
    if (s->moe_imbalance > 1.0 && !plan_is_moe(&s->model))
        return pdbx_fail(err, errlen, "moe_routing: {\"imbalance\": %g} needs a mixture-of-experts model (model %s "
                         "is dense; allowed: \"balanced\")", s->moe_imbalance, s->model.name);
    return 0;
}
