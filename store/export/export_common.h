/* export_common.h: small helpers the export modules share (export_npz.c, export_csv.c,
 * export_trace.c). Not a public API: only store/export_*.c include it. */
#ifndef PDBX_EXPORT_COMMON_H
#define PDBX_EXPORT_COMMON_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "store/profiledb.h"
#include "store/util/err.h"

/* mkdir -p DIR (mode 0755). 0, or -1 with "<path>: cannot create directory: <why>" or
 * "<dir>: not a directory" in err. */
int pdbx_export_mkdirs(const char *dir, char *err, size_t errlen);

/* Writes data to path durably (tmp -> fsync -> rename) and reports it through wrote (may be
 * NULL). 0, or -1 with err. */
int pdbx_export_publish(const char *path, const void *data, size_t len,
                        void (*wrote)(const char *path, void *ctx), void *ctx,
                        char *err, size_t errlen);

/* cJSON builders with a sticky success flag: a document is built with many adds and checked
 * once (*ok == 0 after any failed allocation). An item that cannot be attached is freed. */
static inline void pdbx_json_str(int *ok, cJSON *obj, const char *key, const char *value)
{
    if (!cJSON_AddStringToObject(obj, key, value ? value : ""))
        *ok = 0;
}

static inline void pdbx_json_num(int *ok, cJSON *obj, const char *key, double value)
{
    if (!cJSON_AddNumberToObject(obj, key, value))
        *ok = 0;
}

static inline void pdbx_json_bool(int *ok, cJSON *obj, const char *key, int value)
{
    if (!cJSON_AddBoolToObject(obj, key, value))
        *ok = 0;
}

/* Attaches item to obj under key (key NULL: appends to the array obj). */
static inline void pdbx_json_put(int *ok, cJSON *obj, const char *key, cJSON *item)
{
    int attached = item && obj && (key ? cJSON_AddItemToObject(obj, key, item)
                                        : cJSON_AddItemToArray(obj, item));
    if (!attached) {
        cJSON_Delete(item);
        *ok = 0;
    }
}

/* A tag that becomes part of a file name ({model}_{gpu}_{tp}.npz): letters, digits, '-',
 * '.', '+', at most 64 characters. 0, or -1 with "<field>: ..." in err. */
int pdbx_export_check_tag(const char *field, const char *tag, char *err, size_t errlen);

/* The run's identity, the same keys in every export's metadata: run_id, model, gpu, backend,
 * dtype, device, seq_len, layers_profiled. *ok becomes 0 when out of memory. */
void pdbx_export_run_identity(int *ok, cJSON *obj, const pdbx_run *run);

/* How the GEMMs were measured, the same keys in every export's metadata: "projections"
 * ("fused" when the run's spec had fused_projections: the q/k/v and gate/up cells are the
 * fused QKV and fc1 GEMMs' times split by FLOP share; else "separate"), "projections_note"
 * saying so, and run_start env's "fp32_math" and "gemm_api" (null in runs recorded before
 * them). */
void pdbx_export_gemm_modes(int *ok, cJSON *obj, const pdbx_run *run);

#endif
