/* cli_plan.c: `pdbx plan SPEC|PRESET [overrides]`: the sweep's points grouped by parallel
 * config with their two memory predictions against the GPU preset (profile memory, what the
 * engine allocates, which decides the OOM stop; training memory of the full model, planning
 * information) and their OOM marks, as a table or JSON, after what was understood of the model
 * (model.arch: plan_arch.h). A model the engine does not measure (MoE, MLA, GELU MLPs, biases
 * ...) is refused with exit 2; --format json prints model.arch and "refused" first. Nothing runs.
 *
 * Every field pdbx_spec_set() accepts is an option: the field name with '_' spelled '-'
 * (seq_len -> --seq-len). The option table is generated from pdbx_spec_field_names(), so a
 * field the planner adds is a flag here without touching this file. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tui/cli/cli.h"
#include "store/util/fmt.h"

typedef struct {
    int json;
    pdbx_cli_spec_opts so;
} plan_args;

static const pdbx_cli_opt plan_opts[] = {
    { "format", "FMT", "table (default) or json" },
    { "json", NULL, "the same as --format json" },
    { NULL, NULL, NULL },
};
static const char *const plan_formats[] = { "table", "json", NULL };

static const char *const plan_about =
    "Prints the points a sweep would measure, grouped by parallel config (TP, PP, DP), with two\n"
    "memory predictions per rank in GB (1e9 bytes) against the GPU preset's memory:\n"
    "'profile' is what the engine allocates at the point (the profiled layers' weights, one set\n"
    "of activations, workspace, the collective buffer); it decides the OOM stop. 'train' is the\n"
    "memory of training the full model (weights, gradients, optimizer states, activations of\n"
    "stage 0's micro-batches in flight), planning information only. 'sweep' says what the\n"
    "engine does: measure, stop (the first profile OOM of a config, when predict_oom is on) or\n"
    "skip (the points after it).\n"
    "SPEC|PRESET is a sweep preset name or a spec file (default: the built-in defaults); each\n"
    "spec field is also an option (--seq-len 2048, --tp 1,2,4, --mbs 1:64, --gpu A40 ...),\n"
    "applied in the order given after the preset is loaded.";

static int plan_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err, size_t errlen)
{
    plan_args *a = ctx;
    if (strcmp(opt->name, "format") == 0)   /* as show and diff take it: --format json */
        return pdbx_cli_choice(opt->name, value, plan_formats, &a->json, err, errlen);
    a->json = 1;                            /* --json */
    return 0;
}

/* What the engine does with each point: a profile OOM stops a config's MBS sweep. */
typedef enum { SWEEP_MEASURE = 0, SWEEP_STOP, SWEEP_SKIP } sweep_action;
static const char *const sweep_names[] = { "measure", "stop", "skip" };

static void sweep_actions(const pdbx_spec *spec, const pdbx_plan_point *pts, size_t n,
                          sweep_action *act)
{
    int stopped[PDBX_MAX_CONFIGS] = { 0 };
    for (size_t i = 0; i < n; i++) {
        int c = pts[i].config >= 0 && pts[i].config < PDBX_MAX_CONFIGS ? pts[i].config : 0;
        if (stopped[c])
            act[i] = SWEEP_SKIP;
        else if (spec->predict_oom && pts[i].profile_oom) {
            act[i] = SWEEP_STOP;
            stopped[c] = 1;
        } else
            act[i] = SWEEP_MEASURE;
    }
}

/* Config c's points: MBS, both memory predictions and what the sweep does, under the config's
 * heading. 0, or -1 out of memory. */
static int print_config(const pdbx_spec *spec, int c, const pdbx_plan_point *pts, size_t n,
                        const sweep_action *act, FILE *out)
{
    const pdbx_parallel *par = &spec->configs[c];
    enum { NCOL = 10 };
    int rc = -1;
    pdbx_table *t = pdbx_table_new(NCOL);
    if (!t)
        return -1;
    static const char *const hd[NCOL] = { "mbs", "profile", "", "weights", "grads", "optimizer",
                                          "activations", "train", "", "sweep" };
    for (size_t k = 0; k < NCOL; k++)
        if (pdbx_table_header(t, k, hd[k], k == 2 || k >= 8 ? PDBX_ALIGN_LEFT : PDBX_ALIGN_RIGHT))
            goto fail;
    for (size_t i = 0; i < n; i++) {
        if (pts[i].config != c)
            continue;
        char pr[32], w[32], g[32], o[32], a[32], tot[32];
        const pdbx_memory *m = &pts[i].mem;
        if (pdbx_table_add_row(t) || pdbx_table_set(t, 0, "%d", pts[i].mbs)
            || pdbx_table_set(t, 1, "%s", pdbx_fmt_gb(pts[i].profile_bytes, pr, sizeof pr))
            || pdbx_table_set(t, 2, "%s", pts[i].profile_oom ? "OOM" : "fits")
            || pdbx_table_set(t, 3, "%s", pdbx_fmt_gb(m->weights, w, sizeof w))
            || pdbx_table_set(t, 4, "%s", pdbx_fmt_gb(m->grads, g, sizeof g))
            || pdbx_table_set(t, 5, "%s", pdbx_fmt_gb(m->optimizer, o, sizeof o))
            || pdbx_table_set(t, 6, "%s", pdbx_fmt_gb(m->activations, a, sizeof a))
            || pdbx_table_set(t, 7, "%s", pdbx_fmt_gb(m->total, tot, sizeof tot))
            || pdbx_table_set(t, 8, "%s", pts[i].train_oom ? "OOM" : "fits")
            || pdbx_table_set(t, 9, "%s", sweep_names[act[i]]))
            goto fail;
    }
    char head[64];   /* EP only when > 1, as pdbx show heads the config */
    fprintf(out, "\n%s  (%d ranks; GB per rank: profile, then training)\n",
            pdbx_fmt_config(PDBX_CFG_LABEL_HEADER, par->tp, par->pp, par->dp, pdbx_par_ep(par), head, sizeof head),
            par->tp * par->pp * par->dp);
    pdbx_table_print(t, out, "  ");
    rc = 0;
fail:
    pdbx_table_free(t);
    return rc;
}

static int print_table(const pdbx_spec *spec, const pdbx_plan_point *pts, size_t n,
                       const sweep_action *act, FILE *out)
{
    char gb[32];
    /* names come from user files (spec, config.json): printed through the untrusted-text rule */
    pdbx_cli_line(out, "sweep %s: %s (%s), %d of %d layers profiled, seq_len %d, %s, backend %s",
            spec->name, spec->model.name, spec->model.tag, spec->layers_profiled, spec->model.layers,
            spec->seq_len, pdbx_dtype_name(spec->dtype), pdbx_backend_name(spec->backend));
    char arch[512];
    pdbx_arch_summary(&spec->model, arch, sizeof arch);
    pdbx_cli_line(out, "arch %s", arch);
    pdbx_cli_line(out, "gpu %s: %s GB; %d GPUs per node, %d node(s); warmup %d, steps %d; "
                       "predicted-OOM stop %s",
            spec->gpu.name, pdbx_fmt_gb(spec->gpu.mem_bytes, gb, sizeof gb), spec->gpus_per_node,
            spec->nodes, spec->warmup, spec->steps, spec->predict_oom ? "on" : "off");
    pdbx_profile_point pp;
    pdbx_profile_point_of(spec, &spec->configs[0], spec->mbs_min, spec->backend, 1, &pp);
    fprintf(out, "profile memory: what the engine allocates (%s backend%s); decides the OOM stop\n",
            pdbx_backend_name(pp.backend),
            pp.backend == PDBX_BACKEND_CPU ? ", attention scratch of 1 BLAS thread" : "");
    fprintf(out, "training memory (full model, planning only): %.4g bytes/param (weights+grads+Adam), "
                 "ZeRO-1 %s, flash attention %s, recompute %s\n",
            spec->bytes_per_param, spec->zero1 ? "on" : "off", spec->flash_attention ? "on" : "off",
            pdbx_recompute_name(spec->recompute));
    size_t measured = 0, poom = 0, toom = 0;
    for (size_t i = 0; i < n; i++) {
        measured += act[i] == SWEEP_MEASURE;
        poom += pts[i].profile_oom != 0;
        toom += pts[i].train_oom != 0;
    }
    fprintf(out, "%zu points in %d configs: %zu to measure, %zu profile OOM, %zu training OOM; launches:",
            n, spec->nconfigs, measured, poom, toom);
    /* One mpirun per distinct rank count (a preset may mix 8- and 16-GPU configs). */
    for (int c = 0; c < spec->nconfigs; c++) {
        const pdbx_parallel *p = &spec->configs[c];
        int ranks = p->tp * p->pp * p->dp, seen = 0, count = 0;
        for (int k = 0; k < spec->nconfigs; k++) {
            const pdbx_parallel *q = &spec->configs[k];
            if (q->tp * q->pp * q->dp == ranks) {
                seen |= k < c;
                count++;
            }
        }
        if (!seen)
            fprintf(out, "%s %d ranks (%d config%s)", c ? "," : "", ranks, count, count > 1 ? "s" : "");
    }
    fputc('\n', out);
    /* the inference phase (docs/spec.md "Inference grids"): rows per distinct TP degree */
    const size_t nkv = pdbx_kv_rows(spec, NULL, 0);
    if (spec->ntokens > 0 || nkv > 0) {
        int tps[PDBX_MAX_CONFIGS], ntp = 0;
        for (int c = 0; c < spec->nconfigs && ntp < PDBX_MAX_CONFIGS; c++) {
            int k = 0;
            while (k < ntp && tps[k] != spec->configs[c].tp)
                k++;
            if (k == ntp)
                tps[ntp++] = spec->configs[c].tp;
        }
        fprintf(out, "inference phase: per TP degree (%d of them), %d tokens rows (%d..%d tokens) and %zu "
                "attention rows with a KV cache (max_kv %d)\n", ntp, spec->ntokens,
                spec->ntokens ? spec->tokens[0] : 0, spec->ntokens ? spec->tokens[spec->ntokens - 1] : 0, nkv,
                pdbx_kv_max(spec));
    }

    for (int c = 0; c < spec->nconfigs; c++)
        if (print_config(spec, c, pts, n, act, out) != 0)
            return -1;
    return 0;
}

/* The model as understood: name, tag, source and arch (docs/models.md); NULL when out of memory. */
static cJSON *model_json(const pdbx_model *m)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "name", m->name) || !cJSON_AddStringToObject(o, "tag", m->tag)
        || !cJSON_AddStringToObject(o, "source", m->source)) {
        cJSON_Delete(o);
        return NULL;
    }
    cJSON *arch = pdbx_arch_to_json(m);
    if (!arch || !cJSON_AddItemToObject(o, "arch", arch)) {
        cJSON_Delete(arch);
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* A refused model: what was understood and why, so a script sees both before the exit 2. */
static int print_refused_json(const pdbx_spec *spec, const char *why, FILE *out)
{
    cJSON *root = cJSON_CreateObject(), *m = model_json(&spec->model);
    if (!root || !m || !cJSON_AddItemToObject(root, "model", m)) {
        cJSON_Delete(m);
        cJSON_Delete(root);
        return -1;
    }
    if (!cJSON_AddStringToObject(root, "refused", why)) {
        cJSON_Delete(root);
        return -1;
    }
    return pdbx_cli_emit_json(out, root);
}

static int print_json(const pdbx_spec *spec, const pdbx_plan_point *pts, size_t n,
                      const sweep_action *act, FILE *out)
{
    /* root owns every node from its creation on: one delete on any failure */
    cJSON *root = cJSON_CreateObject(), *sj = pdbx_spec_to_json(spec), *gpu = NULL, *arr = NULL;
    if (!root || !sj || !cJSON_AddItemToObject(root, "spec", sj)) {
        cJSON_Delete(sj);
        goto fail;
    }
    cJSON *model = model_json(&spec->model);
    if (!model || !cJSON_AddItemToObject(root, "model", model)) {
        cJSON_Delete(model);
        goto fail;
    }
    if (!cJSON_AddNullToObject(root, "refused") || !(gpu = cJSON_AddObjectToObject(root, "gpu"))
        || !cJSON_AddStringToObject(gpu, "name", spec->gpu.name)
        || !cJSON_AddNumberToObject(gpu, "mem_bytes", spec->gpu.mem_bytes)
        || !(arr = cJSON_AddArrayToObject(root, "points")))
        goto fail;
    for (size_t i = 0; i < n; i++) {
        const pdbx_plan_point *p = &pts[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            goto fail;
        }
        if (!cJSON_AddNumberToObject(o, "index", p->index) || !cJSON_AddNumberToObject(o, "config", p->config)
            || !cJSON_AddNumberToObject(o, "tp", p->tp) || !cJSON_AddNumberToObject(o, "pp", p->pp)
            || !cJSON_AddNumberToObject(o, "dp", p->dp)
            || (p->ep > 1 && !cJSON_AddNumberToObject(o, "ep", p->ep))   /* as pdbx show: > 1 only */
            || !cJSON_AddNumberToObject(o, "mbs", p->mbs) || !cJSON_AddNumberToObject(o, "ranks", p->ranks)
            || !cJSON_AddNumberToObject(o, "profile_mem_bytes", p->profile_bytes)
            || !cJSON_AddBoolToObject(o, "profile_fits", !p->profile_oom)
            || !cJSON_AddNumberToObject(o, "train_mem_bytes", p->mem.total)
            || !cJSON_AddBoolToObject(o, "train_fits", !p->train_oom)
            /* kept for scripts written before the two predictions: the training mark */
            || !cJSON_AddBoolToObject(o, "predicted_oom", p->train_oom)
            || !cJSON_AddStringToObject(o, "sweep", sweep_names[act[i]]))
            goto fail;
        cJSON *pm = cJSON_AddObjectToObject(o, "profile");
        static const char *const kinds[PDBX_MEM_KINDS] = { "weights", "activations", "workspace", "comm",
                                                             "grads" };
        for (int k = 0; pm && k < PDBX_MEM_KINDS; k++)
            if (!cJSON_AddNumberToObject(pm, kinds[k], p->profile_kind_bytes[k]))
                pm = NULL;
        if (!pm)
            goto fail;
        cJSON *m = cJSON_AddObjectToObject(o, "mem");
        if (!m || !cJSON_AddNumberToObject(m, "params_per_rank", p->mem.params_per_rank)
            || !cJSON_AddNumberToObject(m, "weights", p->mem.weights)
            || !cJSON_AddNumberToObject(m, "grads", p->mem.grads)
            || !cJSON_AddNumberToObject(m, "optimizer", p->mem.optimizer)
            || !cJSON_AddNumberToObject(m, "activations", p->mem.activations)
            || !cJSON_AddNumberToObject(m, "total", p->mem.total))
            goto fail;
    }
    return pdbx_cli_emit_json(out, root);
fail:
    cJSON_Delete(root);
    return -1;
}

int pdbx_cli_plan_print(const char *cmd, const pdbx_spec *spec, int json, FILE *out)
{
    char err[1024] = "";
    pdbx_plan_point *pts = NULL;
    size_t n = 0;
    if (pdbx_arch_refusal(&spec->model, spec->seq_len, err, sizeof err)) {
        if (json && print_refused_json(spec, err, out) != 0)
            return pdbx_cli_fail(PDBX_EXIT_FAIL, cmd, "out of memory");
        return pdbx_cli_fail(PDBX_EXIT_USAGE, cmd, "%s", err);
    }
    if (pdbx_spec_validate(spec, err, sizeof err) != 0)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, cmd, "%s", err);
    if (pdbx_plan_expand(spec, &pts, &n, err, sizeof err) != 0)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, cmd, "%s", err);
    sweep_action *act = calloc(n ? n : 1, sizeof *act);
    int rc = PDBX_EXIT_OK;
    if (!act) {
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, cmd, "out of memory");
        goto done;
    }
    sweep_actions(spec, pts, n, act);
    if ((json ? print_json(spec, pts, n, act, out) : print_table(spec, pts, n, act, out)) != 0)
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, cmd, "out of memory");
done:
    free(act);
    free(pts);
    return rc;
}

int pdbx_cmd_plan(int argc, char **argv)
{
    plan_args a = { 0 };
    if (pdbx_cli_spec_opts_init(&a.so, plan_opts) != 0)
        return pdbx_cli_fail(PDBX_EXIT_FAIL, "plan", "out of memory");
    pdbx_cli_spec spec_cli = { .name = "plan", .args = "[SPEC|PRESET]", .about = plan_about,
                               .opts = a.so.opts, .min_args = 0, .max_args = 1 };
    pdbx_spec *spec = NULL;
    char **pos;
    int npos;
    int rc = pdbx_cli_parse_spec(&spec_cli, &a.so, argc, argv, plan_opt, &a, &pos, &npos);
    if (rc != 0) {
        rc = pdbx_cli_parse_exit(rc);
        goto done;
    }
    spec = calloc(1, sizeof *spec);
    if (!spec) {
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, "plan", "out of memory");
        goto done;
    }
    rc = pdbx_cli_spec_build("plan", npos == 1 ? pos[0] : NULL, &a.so, spec);
    if (rc == 0)
        rc = pdbx_cli_plan_print("plan", spec, a.json, stdout);
done:
    free(spec);
    pdbx_cli_spec_opts_free(&a.so);
    return rc;
}
