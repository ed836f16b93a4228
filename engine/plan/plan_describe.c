/* plan_describe.c: the plan as a run_start event records it. pdbx_plan_run_start
 * (plan_event.h) encodes it through the event schema. */
#include "engine/plan/plan_event.h"

#include <stdlib.h>
#include <string.h>

#include "store/util/text.h"

/* The model as run_start names it: the members of pdbx_model that runs are grouped by. */
static void model_info(const pdbx_model *m, pdbx_model_info *out)
{
    memset(out, 0, sizeof *out);
    pdbx_strcopy(out->name, sizeof out->name, m->name);
    pdbx_strcopy(out->tag, sizeof out->tag, m->tag);
    out->hidden = m->hidden;
    out->intermediate = m->intermediate;
    out->heads = m->heads;
    out->kv_heads = m->kv_heads;
    out->head_dim = m->head_dim;
    out->layers = m->layers;
    out->vocab = m->vocab;
}

cJSON *pdbx_plan_run_start(const pdbx_ev_launcher *who, const char *backend, cJSON *env,
                           const pdbx_spec *sp, const pdbx_plan_point *pts, size_t n)
{
    pdbx_ev_run_start h;
    memset(&h, 0, sizeof h);
    h.who = *who;
    pdbx_strcopy(h.backend, sizeof h.backend, backend ? backend : pdbx_backend_name(sp->backend));
    model_info(&sp->model, &h.model);
    h.layers_profiled = sp->layers_profiled;
    h.seq_len = sp->seq_len;
    h.warmup = sp->warmup;
    h.steps = sp->steps;
    pdbx_strcopy(h.dtype, sizeof h.dtype, pdbx_dtype_name(sp->dtype));
    pdbx_strcopy(h.gpu, sizeof h.gpu, sp->gpu.name);
    pdbx_strcopy(h.gpu_tag, sizeof h.gpu_tag, sp->gpu.tag);
    pdbx_ev_plan_point *ep = n ? calloc(n, sizeof *ep) : NULL;
    cJSON *spec = pdbx_spec_to_json(sp);
    if ((n && !ep) || !spec) {
        free(ep);
        cJSON_Delete(spec);
        cJSON_Delete(env);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        ep[i] = (pdbx_ev_plan_point){ .index = pts[i].index, .tp = pts[i].tp, .pp = pts[i].pp,
                                      .dp = pts[i].dp, .mbs = pts[i].mbs, .seq_len = sp->seq_len,
                                      .predicted_mem_bytes = pts[i].mem.total,
                                      .predicted_oom = pts[i].train_oom, .ep = pts[i].ep };
    cJSON *ev = pdbx_event_run_start(&h, spec, env, ep, n);
    free(ep);
    return ev;
}
