/* plan_describe.c: the plan as a run_start event records it (see plan.h). One writer for the
 * engine's run_start and the launcher's record of a sweep that never started. */
#include "engine/plan/plan.h"

int pdbx_plan_describe(cJSON *ev, const pdbx_spec *sp, const pdbx_plan_point *pts, size_t n)
{
    cJSON *spec = pdbx_spec_to_json(sp);
    if (!spec || !cJSON_AddItemToObject(ev, "spec", spec)) {
        cJSON_Delete(spec);
        return -1;
    }
    cJSON *m = cJSON_AddObjectToObject(ev, "model");
    if (!m)
        return -1;
    const pdbx_model *md = &sp->model;
    int ok = cJSON_AddStringToObject(m, "name", md->name) && cJSON_AddStringToObject(m, "tag", md->tag)
        && cJSON_AddNumberToObject(m, "hidden", md->hidden)
        && cJSON_AddNumberToObject(m, "intermediate", md->intermediate)
        && cJSON_AddNumberToObject(m, "heads", md->heads)
        && cJSON_AddNumberToObject(m, "kv_heads", md->kv_heads)
        && cJSON_AddNumberToObject(m, "head_dim", md->head_dim)
        && cJSON_AddNumberToObject(m, "layers", md->layers)
        && cJSON_AddNumberToObject(m, "vocab", md->vocab)
        && cJSON_AddNumberToObject(ev, "layers_profiled", sp->layers_profiled)
        && cJSON_AddNumberToObject(ev, "seq_len", sp->seq_len)
        && cJSON_AddStringToObject(ev, "dtype", pdbx_dtype_name(sp->dtype))
        && cJSON_AddStringToObject(ev, "gpu", sp->gpu.name)
        && cJSON_AddStringToObject(ev, "gpu_tag", sp->gpu.tag)
        && cJSON_AddNumberToObject(ev, "warmup", sp->warmup)
        && cJSON_AddNumberToObject(ev, "steps", sp->steps);
    cJSON *arr = ok ? cJSON_AddArrayToObject(ev, "points") : NULL;
    if (!arr)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const pdbx_plan_point *p = &pts[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(arr, o))
            return cJSON_Delete(o), -1;
        if (!cJSON_AddNumberToObject(o, "index", p->index) || !cJSON_AddNumberToObject(o, "tp", p->tp)
            || !cJSON_AddNumberToObject(o, "pp", p->pp) || !cJSON_AddNumberToObject(o, "dp", p->dp)
            || !cJSON_AddNumberToObject(o, "mbs", p->mbs)
            || !cJSON_AddNumberToObject(o, "seq_len", sp->seq_len)
            || !cJSON_AddNumberToObject(o, "predicted_mem_bytes", p->mem.total)
            || !cJSON_AddBoolToObject(o, "predicted_oom", p->predicted_oom))
            return -1;
    }
    return 0;
}
