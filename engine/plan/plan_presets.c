/* plan_presets.c: the configs directory, preset lookup (by file name, case-insensitively, or by
 * tag), HuggingFace config.json reading for models (sizes and arch by family: plan_arch.c) and the gpus/<name>.json format. */
#include "engine/plan/plan_internal.h"

#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/util/proc.h"

/* ---- configs directory --------------------------------------------------------------- */

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Not thread-safe: the result lives in a static buffer, recomputed on each call so that a
 * test or a caller may change $PDBX_CONFIGS. */
const char *pdbx_configs_dir(void)
{
    static char dir[PDBX_PATH_MAX];
    const char *env = getenv("PDBX_CONFIGS");
    if (env && *env) {
        pdbx_strcopy(dir, sizeof dir, env);
        return dir;
    }
    char exe[PDBX_PATH_MAX];
    if (pdbx_exe_dir(exe, sizeof exe) != 0) {
        snprintf(dir, sizeof dir, "configs");
        return dir;
    }
    /* build tree: <repo>/build/bin/pdbx -> <repo>/configs; installed: <prefix>/bin -> share */
    static const char *const rel[] = {"/../../configs", "/../share/pdbx/configs"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[PDBX_PATH_MAX + 32];
        snprintf(cand, sizeof cand, "%s%s", exe, rel[i]);
        if (is_dir(cand)) {
            char *real = realpath(cand, NULL);
            pdbx_strcopy(dir, sizeof dir, real ? real : cand);
            free(real);
            return dir;
        }
    }
    snprintf(dir, sizeof dir, "%.*s/../../configs", (int)(sizeof dir - 16), exe);
    return dir;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

size_t pdbx_preset_names(const char *kind, char (*out)[64], size_t cap)
{
    char path[PDBX_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", pdbx_configs_dir(), kind);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < cap) {
        size_t len = strlen(e->d_name);
        if (len <= 5 || len - 5 >= 64 || strcmp(e->d_name + len - 5, ".json") != 0 || e->d_name[0] == '.')
            continue;
        memcpy(out[n], e->d_name, len - 5);
        out[n][len - 5] = '\0';
        n++;
    }
    closedir(d);
    qsort(out, n, sizeof out[0], cmp_names);
    return n;
}

static int looks_like_path(const char *s)
{
    size_t n = strlen(s);
    return strchr(s, '/') != NULL || (n > 5 && strcmp(s + n - 5, ".json") == 0);
}

/* Resolves a preset name of `kind` to a file path: exact file name, then a case-insensitive
 * file name, then a tag (the JSON field tag_field, e.g. "pdbx_tag") equal case-insensitively.
 * `what` names the field in messages ("model", "gpu", "sweep"). */
static int resolve_preset(const char *kind, const char *what, const char *tag_field, const char *name,
                          char *path, size_t pathlen, char *err, size_t errlen)
{
    if (!name || !*name)
        return pdbx_fail(err, errlen, "%s: empty name (allowed: a preset name or a .json path)", what);
    if (looks_like_path(name)) {
        if ((size_t)snprintf(path, pathlen, "%s", name) >= pathlen)
            return pdbx_fail(err, errlen, "%s: path too long (allowed: %zu characters)", what, pathlen - 1);
        return 0;
    }
    const char *dir = pdbx_configs_dir();
    snprintf(path, pathlen, "%s/%s/%s.json", dir, kind, name);
    if (access(path, R_OK) == 0)
        return 0;

    enum { CAP = 128 };
    static char names[CAP][64];   /* static: 8 KiB off the stack; not thread-safe */
    char tags[CAP][64];
    size_t n = pdbx_preset_names(kind, names, CAP);
    for (size_t i = 0; i < n; i++) {
        if (strcasecmp(names[i], name) == 0) {
            snprintf(path, pathlen, "%s/%s/%s.json", dir, kind, names[i]);
            return 0;
        }
    }
    size_t ntags = 0;
    for (size_t i = 0; i < n && tag_field; i++) {
        char p[PDBX_PATH_MAX + 128];
        snprintf(p, sizeof p, "%s/%s/%s.json", dir, kind, names[i]);
        cJSON *root = plan_json_file(p, NULL, 0);
        const cJSON *t = root ? cJSON_GetObjectItemCaseSensitive(root, tag_field) : NULL;
        int match = 0;
        if (cJSON_IsString(t) && t->valuestring) {
            match = strcasecmp(t->valuestring, name) == 0;
            snprintf(tags[ntags++], 64, "%s", t->valuestring);
        }
        cJSON_Delete(root);
        if (match) {
            snprintf(path, pathlen, "%s", p);
            return 0;
        }
    }
    if (n == 0)
        return pdbx_fail(err, errlen, "%s: unknown preset '%s' (no presets in %s/%s; set PDBX_CONFIGS)",
                         what, name, dir, kind);
    qsort(tags, ntags, sizeof tags[0], cmp_names);
    const char *cands[2 * CAP];
    size_t nc = 0;
    for (size_t i = 0; i < n; i++)
        cands[nc++] = names[i];
    for (size_t i = 0; i < ntags; i++) {
        int dup = 0;
        for (size_t k = 0; k < nc; k++)
            dup |= strcmp(cands[k], tags[i]) == 0;
        if (!dup)
            cands[nc++] = tags[i];
    }
    char sug[1024];
    pdbx_suggest(name, cands, nc, sug, sizeof sug);
    return pdbx_fail(err, errlen, "%s: unknown preset '%s'%s", what, name, sug);
}

/* Reads preset name_or_path: a model into *m when m is given, else a GPU into *g. */
static int load_preset(const char *name_or_path, pdbx_model *m, pdbx_gpu *g, char *err, size_t errlen)
{
    char path[PDBX_PATH_MAX];
    if (resolve_preset(m ? "models" : "gpus", m ? "model" : "gpu", m ? "pdbx_tag" : "tag", name_or_path,
                       path, sizeof path, err, errlen) != 0)
        return -1;
    cJSON *root = plan_json_file(path, err, errlen);
    int rc = !root ? -1 : m ? pdbx_model_from_json(root, path, m, err, errlen)
                            : plan_gpu_from_json(root, path, g, err, errlen);
    cJSON_Delete(root);
    return rc;
}

/* ---- models ---------------------------------------------------------------------------- */

/* The model's display name from where it came: a preset file's base name, or the directory of
 * a HuggingFace checkout (".../Llama-3.3-70B-Instruct/config.json"). */
static void name_from_origin(const char *origin, char *out, size_t len)
{
    char tmp[PDBX_PATH_MAX];
    pdbx_strcopy(tmp, sizeof tmp, origin ? origin : "model");
    size_t n = strlen(tmp);
    if (n > 5 && strcmp(tmp + n - 5, ".json") == 0) {
        char *slash = strrchr(tmp, '/');
        const char *base = slash ? slash + 1 : tmp;
        if (strcmp(base, "config.json") == 0 && slash) {
            *slash = '\0';
            char *up = strrchr(tmp, '/');
            snprintf(out, len, "%s", up ? up + 1 : tmp);
            return;
        }
        tmp[n - 5] = '\0';
        snprintf(out, len, "%s", base);
        return;
    }
    snprintf(out, len, "%s", tmp);
}

int plan_model_check(const pdbx_model *m, const char *origin, char *err, size_t errlen)
{
    if (m->heads > 0 && m->kv_heads > 0 && m->heads % m->kv_heads != 0)
        return pdbx_fail(err, errlen,
                         "%s: num_key_value_heads %d does not divide num_attention_heads %d "
                         "(allowed: a divisor of %d)", origin, m->kv_heads, m->heads, m->heads);
    if (m->kv_heads > m->heads)
        return pdbx_fail(err, errlen, "%s: num_key_value_heads %d exceeds num_attention_heads %d",
                         origin, m->kv_heads, m->heads);
    return 0;
}

int pdbx_model_from_json(const cJSON *hf, const char *origin, pdbx_model *out, char *err, size_t errlen)
{
    const char *org = origin ? origin : "model";
    if (!cJSON_IsObject(hf))
        return pdbx_fail(err, errlen, "%s: expected a JSON object (a HuggingFace config.json)", org);
    pdbx_model m;
    memset(&m, 0, sizeof m);
    /* sizes and architecture, by family (plan_arch.c) */
    if (plan_arch_read(hf, org, &m, err, errlen) != 0)
        return -1;
    const cJSON *pname = cJSON_GetObjectItemCaseSensitive(hf, "pdbx_name");
    if (cJSON_IsString(pname) && pname->valuestring && *pname->valuestring)
        pdbx_strcopy(m.name, sizeof m.name, pname->valuestring);
    else
        name_from_origin(org, m.name, sizeof m.name);
    const cJSON *tag = cJSON_GetObjectItemCaseSensitive(hf, "pdbx_tag");
    if (tag && !cJSON_IsNull(tag)) {
        char label[PDBX_PATH_MAX + 64];
        const char *s;
        snprintf(label, sizeof label, "%s: pdbx_tag", org);
        if (plan_json_string(tag, label, &s, err, errlen) != 0)
            return -1;
        pdbx_strcopy(m.tag, sizeof m.tag, s);
    } else {
        pdbx_strcopy(m.tag, sizeof m.tag, m.name);
    }
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(hf, "pdbx_source");
    if (cJSON_IsString(src) && src->valuestring)
        pdbx_strcopy(m.source, sizeof m.source, src->valuestring);
    else
        pdbx_strcopy(m.source, sizeof m.source, org);
    if (plan_model_check(&m, org, err, errlen) != 0)
        return -1;
    *out = m;
    return 0;
}

int pdbx_model_load(const char *name_or_path, pdbx_model *out, char *err, size_t errlen)
{
    return load_preset(name_or_path, out, NULL, err, errlen);
}

cJSON *plan_model_to_json(const pdbx_model *m)
{
    static const plan_json_field f[] = {
        {"pdbx_name", PLAN_J_STR, offsetof(pdbx_model, name)},
        {"pdbx_tag", PLAN_J_STR, offsetof(pdbx_model, tag)},
        {"pdbx_source", PLAN_J_STR, offsetof(pdbx_model, source)},
        {"hidden_size", PLAN_J_INT, offsetof(pdbx_model, hidden)},
        {"intermediate_size", PLAN_J_INT, offsetof(pdbx_model, intermediate)},
        {"num_attention_heads", PLAN_J_INT, offsetof(pdbx_model, heads)},
        {"num_key_value_heads", PLAN_J_INT, offsetof(pdbx_model, kv_heads)},
        {"head_dim", PLAN_J_INT, offsetof(pdbx_model, head_dim)},
        {"num_hidden_layers", PLAN_J_INT, offsetof(pdbx_model, layers)},
        {"vocab_size", PLAN_J_INT, offsetof(pdbx_model, vocab)},
        {"tie_word_embeddings", PLAN_J_BOOL, offsetof(pdbx_model, tie_embeddings)},
    };
    cJSON *o = plan_fields_to_json(m, f, sizeof f / sizeof f[0]);
    /* the arch as plan --format json prints it; pdbx_model_from_json reads it back as it is */
    cJSON *arch = o ? pdbx_arch_to_json(m) : NULL;
    if (o && (!arch || !cJSON_AddItemToObject(o, "arch", arch))) {
        cJSON_Delete(arch);
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Copy of configs/models/TinyLlama-1.1B.json (test_plan_presets checks they agree). */
void plan_default_model(pdbx_model *m)
{
    *m = (pdbx_model){
        .name = "TinyLlama-1.1B", .tag = "tinyllama",
        .source = "built-in (configs/models/TinyLlama-1.1B.json)",
        .hidden = 2048, .intermediate = 5632, .heads = 32, .kv_heads = 4, .head_dim = 64,
        .layers = 22, .vocab = 32000, .tie_embeddings = 0,
    };
    plan_arch_llama(&m->arch, m->heads, m->kv_heads);
}

/* ---- GPUs ------------------------------------------------------------------------------ */

static const char *const gpu_fields[] = {
    "name", "tag", "mem_bytes", "bw_gbs", "peak_tflops_bf16", "peak_tflops_fp16", "peak_tflops_fp32", "notes",
};
#define N_GPU_FIELDS (sizeof gpu_fields / sizeof gpu_fields[0])

static int gpu_number(const cJSON *obj, const char *org, const char *key, int required, double hi,
                      double *out, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required)
            return pdbx_fail(err, errlen, "%s: missing required field '%s'", org, key);
        return 1;
    }
    char label[PDBX_PATH_MAX + 64];
    snprintf(label, sizeof label, "%s: %s", org, key);
    return plan_json_number(v, label, 0, hi, out, err, errlen);
}

int plan_gpu_from_json(const cJSON *obj, const char *origin, pdbx_gpu *out, char *err, size_t errlen)
{
    const char *org = origin ? origin : "gpu";
    if (!cJSON_IsObject(obj))
        return pdbx_fail(err, errlen, "%s: expected a JSON object (a GPU description)", org);
    for (const cJSON *it = obj->child; it; it = it->next) {
        size_t i;
        for (i = 0; i < N_GPU_FIELDS; i++)
            if (it->string && strcmp(it->string, gpu_fields[i]) == 0)
                break;
        if (i == N_GPU_FIELDS) {
            char sug[512];
            pdbx_suggest(it->string ? it->string : "", gpu_fields, N_GPU_FIELDS, sug, sizeof sug);
            return pdbx_fail(err, errlen, "%s: unknown field '%s'%s", org, it->string ? it->string : "", sug);
        }
    }
    pdbx_gpu g;
    memset(&g, 0, sizeof g);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "name");
    const char *s;
    char label[PDBX_PATH_MAX + 64];
    if (name) {
        snprintf(label, sizeof label, "%s: name", org);
        if (plan_json_string(name, label, &s, err, errlen) != 0)
            return -1;
        pdbx_strcopy(g.name, sizeof g.name, s);
    } else {
        char tmp[PDBX_PATH_MAX];
        name_from_origin(org, tmp, sizeof tmp);
        pdbx_strcopy(g.name, sizeof g.name, tmp);
    }
    const cJSON *tag = cJSON_GetObjectItemCaseSensitive(obj, "tag");
    if (tag) {
        snprintf(label, sizeof label, "%s: tag", org);
        if (plan_json_string(tag, label, &s, err, errlen) != 0)
            return -1;
        pdbx_strcopy(g.tag, sizeof g.tag, s);
    } else {
        pdbx_strcopy(g.tag, sizeof g.tag, g.name);
    }
    const cJSON *notes = cJSON_GetObjectItemCaseSensitive(obj, "notes");
    if (notes) {
        snprintf(label, sizeof label, "%s: notes", org);
        if (plan_json_string(notes, label, &s, err, errlen) != 0)
            return -1;
    }
    if (gpu_number(obj, org, "mem_bytes", 1, 1e15, &g.mem_bytes, err, errlen) < 0 ||
        gpu_number(obj, org, "bw_gbs", 1, 1e6, &g.bw_gbs, err, errlen) < 0 ||
        gpu_number(obj, org, "peak_tflops_bf16", 1, 1e6, &g.peak_tflops_bf16, err, errlen) < 0 ||
        gpu_number(obj, org, "peak_tflops_fp32", 1, 1e6, &g.peak_tflops_fp32, err, errlen) < 0)
        return -1;
    int rc = gpu_number(obj, org, "peak_tflops_fp16", 0, 1e6, &g.peak_tflops_fp16, err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 1)
        g.peak_tflops_fp16 = g.peak_tflops_bf16;
    if (g.mem_bytes == 0)   /* a host preset: the memory of this machine */
        g.mem_bytes = plan_host_mem_bytes();
    *out = g;
    return 0;
}

int pdbx_gpu_load(const char *name_or_path, pdbx_gpu *out, char *err, size_t errlen)
{
    return load_preset(name_or_path, NULL, out, err, errlen);
}

cJSON *plan_gpu_to_json(const pdbx_gpu *g)
{
    static const plan_json_field f[] = {
        {"name", PLAN_J_STR, offsetof(pdbx_gpu, name)},
        {"tag", PLAN_J_STR, offsetof(pdbx_gpu, tag)},
        {"mem_bytes", PLAN_J_NUM, offsetof(pdbx_gpu, mem_bytes)},
        {"bw_gbs", PLAN_J_NUM, offsetof(pdbx_gpu, bw_gbs)},
        {"peak_tflops_bf16", PLAN_J_NUM, offsetof(pdbx_gpu, peak_tflops_bf16)},
        {"peak_tflops_fp16", PLAN_J_NUM, offsetof(pdbx_gpu, peak_tflops_fp16)},
        {"peak_tflops_fp32", PLAN_J_NUM, offsetof(pdbx_gpu, peak_tflops_fp32)},
    };
    return plan_fields_to_json(g, f, sizeof f / sizeof f[0]);
}

/* Copy of configs/gpus/cpu.json (test_plan_presets checks they agree). */
void plan_default_gpu(pdbx_gpu *g)
{
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "cpu");
    snprintf(g->tag, sizeof g->tag, "cpu");
    g->mem_bytes = plan_host_mem_bytes();
}

int plan_sweep_path(const char *name_or_path, char *path, size_t pathlen, char *err, size_t errlen)
{
    return resolve_preset("sweeps", "sweep", NULL, name_or_path, path, pathlen, err, errlen);
}
