/* export_fasop_npy.c: the known-cost files of the HPDC'24 FASOP tree (AvatarHwang/FASOP),
 * export.h's pdbx_export_fasop_npy.
 *
 * What that estimator reads (FASOP/estimate.py, init_param and get_cost_e; docs/exports.md):
 *  - known_cost/{model}_{gpu}_{tp}.npy, loaded with np.load and multiplied by 3 (forward to
 *    forward + backward);
 *  - a 1-D float64 array of num_layers + 2 elements (it asserts the length against the model's
 *    layer list): [embedding, one transformer layer x num_layers, post_process];
 *  - seconds, forward only, at micro-batch 1: it scales by the micro-batch size itself (its
 *    gpt2XL branch: layers linearly; embedding and post-process linearly on A10, unscaled on
 *    A100), so there is no MBS dimension in the file;
 *  - a layer element is the whole layer forward: the estimator adds the PP send/recv, the DP
 *    all-reduce and the embedding all-reduce itself, never the TP all-reduces, which a
 *    Megatron module hook around a layer includes.
 * So each element is built from the FASOP-attribution row at MBS 1 (pdbx_fasop_rows, the NPZ's
 * own numbers): embedding = column embed; layer = the sum of the layer columns attn_q ..
 * mlp_down (norms, attention core and both TP all-reduces attributed as FASOP's hooks see
 * them: exactly one layer's forward), repeated for every layer of the full model;
 * post_process = column lm_head (final norm + LM head). Milliseconds / 1000.
 * A sidecar {stem}.npy.json says what the numbers are; FASOP opens only the .npy names.
 */
#include "store/export/export.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "store/export/export_common.h"
#include "store/export/export_zip.h"
#include "store/util/err.h"

/* The layer columns of a FASOP row: attn_q .. mlp_down (column 0 is embed, the last lm_head). */
#define FIRST_LAYER_COL 1
#define LAST_LAYER_COL (PDBX_FASOP_COLS - 2)

/* The MBS 1 row of config (tp, pp, dp) as the NPZ holds it, in ms: 0, or -1 with err. */
static int mbs1_row(const pdbx_run *run, const pdbx_rt_config *c, double row[PDBX_FASOP_COLS],
                    char *err, size_t errlen)
{
    int rows = pdbx_fasop_rows(run, c->tp, c->pp, c->dp, PDBX_ATTR_FASOP, PDBX_STAT_MEAN, row, 1,
                               err, errlen);
    if (rows < 0)
        return -1;
    if (rows == 0)
        return pdbx_fail(err, errlen, "no ok point at MBS 1 for TP %d: the legacy FASOP file is "
                         "the MBS 1 forward profile", c->tp);
    for (int k = 0; k < PDBX_FASOP_COLS; k++)
        if (!isfinite(row[k]) || row[k] < 0)
            return pdbx_fail(err, errlen, "TP %d, MBS 1: column %s is not measured (%g)", c->tp,
                             pdbx_fasop_col_name(k), row[k]);
    return 0;
}

static char *sidecar_json(const pdbx_run *run, const pdbx_rt_config *c, const char *model_tag,
                          const char *gpu_tag, const double *v, int layers)
{
    int ok = 1;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    pdbx_json_str(&ok, o, "format", "FASOP (AvatarHwang/FASOP, HPDC'24) known_cost .npy");
    pdbx_export_run_identity(&ok, o, run);
    pdbx_json_str(&ok, o, "model_tag", model_tag);
    pdbx_json_str(&ok, o, "gpu_tag", gpu_tag);
    pdbx_json_num(&ok, o, "tp", c->tp);
    pdbx_json_num(&ok, o, "source_pp", c->pp);
    pdbx_json_num(&ok, o, "source_dp", c->dp);
    pdbx_json_num(&ok, o, "mbs", 1);
    pdbx_json_num(&ok, o, "num_layers", layers);
    pdbx_json_str(&ok, o, "units", "s");
    pdbx_json_str(&ok, o, "pass", "fwd");
    pdbx_json_str(&ok, o, "stat", "mean");
    pdbx_json_str(&ok, o, "layout", "[embedding, transformer_layer x num_layers, post_process]");
    pdbx_json_num(&ok, o, "embedding_s", v[0]);
    pdbx_json_num(&ok, o, "layer_s", v[1]);
    pdbx_json_num(&ok, o, "post_process_s", v[layers + 1]);
    pdbx_json_str(&ok, o, "layer_is",
                  "one layer's forward: input norm, q/k/v, attention core, o, TP all-reduce, "
                  "post-attention norm, gate/up, SiLU x up, down, TP all-reduce (FASOP "
                  "attribution, averaged over the profiled layers)");
    pdbx_json_str(&ok, o, "post_process_is", "final norm + LM head");
    pdbx_json_str(&ok, o, "note",
                  "FASOP multiplies these forward times by 3 for forward + backward and by the "
                  "micro-batch size itself; it reads model types gpt2XL, bert and T5 (a "
                  "decoder-only model goes as gpt2XL), GPU tags A100 and A10 and TP 1, 2 and 4");
    char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return text;
}

/* Writes DIR/{model}_{gpu}_{tp}.npy and its sidecar for config c, whose MBS 1 row is row. */
static int write_one(const pdbx_run *run, const pdbx_rt_config *c, const double *row,
                     const char *dir, const char *model_tag, const char *gpu_tag,
                     pdbx_wrote_fn wrote, void *ctx, char *err, size_t errlen)
{
    const int layers = run->model.layers;
    if (layers < 1 || layers > PDBX_RUN_MAX_LAYERS)
        return pdbx_fail(err, errlen, "run %s: the model's layer count %d is out of range "
                         "(1..%d)", run->id, layers, PDBX_RUN_MAX_LAYERS);
    double layer_ms = 0;
    for (int k = FIRST_LAYER_COL; k <= LAST_LAYER_COL; k++)
        layer_ms += row[k];
    double *v = malloc(sizeof *v * (size_t)(layers + 2));
    if (!v)
        return pdbx_fail(err, errlen, "out of memory for %d layers", layers);
    v[0] = row[0] / 1e3;
    for (int l = 1; l <= layers; l++)
        v[l] = layer_ms / 1e3;
    v[layers + 1] = row[PDBX_FASOP_COLS - 1] / 1e3;

    int rc = -1;
    unsigned char *npy = NULL;
    size_t npy_len = 0;
    char *meta = NULL;
    char path[4096];
    if (pdbx_npy_f64_vector(v, (size_t)layers + 2, &npy, &npy_len, err, errlen) != 0)
        goto out;
    if (snprintf(path, sizeof path, "%s/%s_%s_%d.npy", dir, model_tag, gpu_tag, c->tp)
        >= (int)sizeof path) {
        pdbx_errf(err, errlen, "%s: path too long", dir);
        goto out;
    }
    if (pdbx_export_publish(path, npy, npy_len, wrote, ctx, err, errlen) != 0)
        goto out;
    if (!(meta = sidecar_json(run, c, model_tag, gpu_tag, v, layers))) {
        pdbx_errf(err, errlen, "%s.json: out of memory", path);
        goto out;
    }
    strcat(path, ".json");   /* fits: the .npy name fitted with room for the suffix below */
    if (pdbx_export_publish(path, meta, strlen(meta), wrote, ctx, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    free(v);
    free(npy);
    cJSON_free(meta);
    return rc;
}

int pdbx_export_fasop_npy(const pdbx_run *run, const char *dir, const char *model_tag,
                          const char *gpu_tag, pdbx_wrote_fn wrote, void *ctx, char *err,
                          size_t errlen)
{
    model_tag = model_tag ? model_tag : run->model.tag;
    gpu_tag = gpu_tag ? gpu_tag : run->gpu_tag;
    if (pdbx_export_check_tag("model tag", model_tag, err, errlen) != 0 ||
        pdbx_export_check_tag("gpu tag", gpu_tag, err, errlen) != 0)
        return -1;
    if (strlen(dir) > 3000)
        return pdbx_fail(err, errlen, "%.60s...: path too long", dir);
    if (pdbx_run_fasop_shaped(run, "--fasop-npy", err, errlen) != 0)
        return -1;
    pdbx_runtable t;
    if (pdbx_runtable_build_pass(run, 0, PDBX_PASS_SEL_FWD, &t) != 0)
        return pdbx_fail(err, errlen, "out of memory exporting run %s", run->id);
    int rc = -1;
    if (t.nconfigs == 0) {
        pdbx_errf(err, errlen, "run %s has no points: nothing to export", run->id);
        goto out;
    }
    if (pdbx_export_mkdirs(dir, err, errlen) != 0)
        goto out;
    /* One file per TP degree, from the first config of that degree (plan order) with an ok
     * MBS 1 point: compute cells do not depend on PP or DP. The first TP that cannot be
     * written is the error; the others are still written. */
    char first_err[512] = "";
    for (size_t i = 0; i < t.nconfigs; i++) {
        int done = 0;
        for (size_t j = 0; j < i && !done; j++)
            done = t.configs[j].tp == t.configs[i].tp;
        if (done)
            continue;             /* this TP degree was handled at its first config */
        char e[512] = "";
        int written = 0;
        for (size_t j = i; j < t.nconfigs && !written; j++) {
            if (t.configs[j].tp != t.configs[i].tp)
                continue;
            double row[PDBX_FASOP_COLS];
            char probe[512];
            if (mbs1_row(run, &t.configs[j], row, probe, sizeof probe) != 0) {
                if (!e[0])
                    snprintf(e, sizeof e, "%s", probe);
                continue;
            }
            if (write_one(run, &t.configs[j], row, dir, model_tag, gpu_tag, wrote, ctx, err,
                          errlen) != 0)
                goto out;
            written = 1;
        }
        if (!written && !first_err[0])
            snprintf(first_err, sizeof first_err, "%s", e);
    }
    if (first_err[0]) {
        pdbx_errf(err, errlen, "%s", first_err);
        goto out;
    }
    rc = 0;
out:
    pdbx_runtable_free(&t);
    return rc;
}
