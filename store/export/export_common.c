/* export_common.c: helpers shared by the export modules (export_common.h). */
#include "store/util/err.h"
#include "store/export/export_common.h"
#include "store/util/fs.h"

#include <stdarg.h>
#include <string.h>

int pdbx_export_mkdirs(const char *dir, char *err, size_t errlen)
{
    if (!dir || !*dir) {
        pdbx_errf(err, errlen, "export directory: empty path");
        return -1;
    }
    return pdbx_mkdirs(dir, err, errlen);
}

int pdbx_export_publish(const char *path, const void *data, size_t len,
                        void (*wrote)(const char *path, void *ctx), void *ctx,
                        char *err, size_t errlen)
{
    if (pdbx_durable_write(path, data, len, err, errlen) != 0)
        return -1;
    if (wrote)
        wrote(path, ctx);
    return 0;
}

void pdbx_export_gemm_modes(int *ok, cJSON *obj, const pdbx_run *run)
{
    const cJSON *fused = run->spec ? cJSON_GetObjectItemCaseSensitive(run->spec, "fused_projections") : NULL;
    const int f = cJSON_IsTrue(fused);
    pdbx_json_str(ok, obj, "projections", f ? "fused" : "separate");
    pdbx_json_str(ok, obj, "projections_note", f
        ? "measured fused, attributed by FLOP share: attn_q, attn_k and attn_v ran as one fused "
          "QKV GEMM and mlp_gate and mlp_up as one fused fc1 GEMM (Megatron's linear_qkv and "
          "linear_fc1); each op's samples are its group's fused GEMM time x the op's FLOP share "
          "(q: heads / (heads + 2 kv_heads), k and v: kv_heads / (heads + 2 kv_heads), gate and "
          "up: 1/2), so the ops of a group sum to the fused measurement; backward likewise "
          "(the fused GEMM's dgrad + wgrad)"
        : "each projection (attn_q, attn_k, attn_v, mlp_gate, mlp_up) measured as its own GEMM");
    static const char *const env_keys[] = {"fp32_math", "gemm_api"};
    for (size_t i = 0; i < sizeof env_keys / sizeof env_keys[0]; i++) {
        const cJSON *v = run->env ? cJSON_GetObjectItemCaseSensitive(run->env, env_keys[i]) : NULL;
        pdbx_json_put(ok, obj, env_keys[i], v && cJSON_IsString(v) ? cJSON_CreateString(v->valuestring)
                                                                    : cJSON_CreateNull());
    }
}

void pdbx_export_run_identity(int *ok, cJSON *obj, const pdbx_run *run)
{
    pdbx_json_str(ok, obj, "run_id", run->id);
    pdbx_json_str(ok, obj, "model", run->model.name);
    pdbx_json_str(ok, obj, "gpu", run->gpu);
    pdbx_json_str(ok, obj, "backend", run->backend);
    pdbx_json_str(ok, obj, "dtype", run->dtype);
    pdbx_json_str(ok, obj, "device", run->device_name);
    pdbx_json_num(ok, obj, "seq_len", run->seq_len);
    pdbx_json_num(ok, obj, "layers_profiled", run->layers_profiled);
}

int pdbx_export_check_tag(const char *field, const char *tag, char *err, size_t errlen)
{
    if (!tag || !*tag) {
        pdbx_errf(err, errlen, "%s: empty (the run has none; pass one, e.g. llama70b or A40)", field);
        return -1;
    }
    for (const char *p = tag; *p; p++) {
        int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')
                 || *p == '-' || *p == '.' || *p == '+';
        if (!ok) {
            pdbx_errf(err, errlen, "%s: '%s' has '%c' (allowed: letters, digits, '-', '.', '+')",
                    field, tag, *p);
            return -1;
        }
    }
    if (strlen(tag) > 64) {
        pdbx_errf(err, errlen, "%s: '%s' is longer than 64 characters", field, tag);
        return -1;
    }
    return 0;
}
