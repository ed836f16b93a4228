/* cli_validate.c: `pdbx validate RUN --config TPxPPxDP --mbs M --gbs B`: a real training
 * iteration (pdbx-engine's validate mode, launched like a sweep) against the advise model's
 * estimate of it (engine/advise/advise.h), recorded next to the run (store/validation.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/advise/advise.h"
#include "engine/launch/launch.h"
#include "store/layout.h"
#include "store/util/fmt.h"
#include "store/util/fs.h"
#include "store/util/text.h"
#include "store/validation.h"
#include "tui/cli/cli.h"

#define CMD "validate"
#define ITERS_DEFAULT 3
#define ITERS_MAX 1000

typedef struct {
    const char *store, *config, *hosts, *hostfile, *launcher_args, *launcher;
    int mbs, gbs, layers, iters, format, simulate_nodes, stat;
    int tp, pp, dp, ep;
    int recompute, zero1;   /* the layout (-1: the run spec's) */
} val_args;

static const pdbx_cli_opt val_opts[] = {
    { "config", "TPxPPxDP[xEP]", "the parallel configuration to run (required), e.g. 1x1x2 or 1x1x2x2" },
    { "mbs", "M", "micro-batch size (required)" },
    { "gbs", "B", "global batch in sequences (required; a multiple of M x DP)" },
    { "layers", "L", "decoder layers (default: the run's profiled layers, at least PP, rounded up to a multiple of PP)" },
    { "iters", "N", "measured iterations after one warm-up (default 3)" },
    { "format", "FMT", "table (default) or json" },
    { "stat", "STAT", "statistic of the estimate's cells: median (default, as advise), mean, min, max" },
    { "recompute", "R", "activation recomputation: none, full or selective (default: the run spec's)" },
    { "zero1", "Z", "the distributed optimizer (ZeRO-1): off or on (default: the run spec's)" },
    { "launcher", "KIND", "auto (default: the run's), local, mpirun or srun" },
    { "hosts", "H:N,...", "mpirun on these hosts with N slots each (e.g. a:8,b:8)" },
    { "hostfile", "FILE", "mpirun on the hosts of an OpenMPI hostfile (NAME slots=N per line)" },
    { "launcher-args", "ARGS", "extra arguments for mpirun/srun, split like a shell (quotes kept)" },
    { "simulate-nodes", NULL, "local launcher: run every node's ranks on this machine" },
    PDBX_CLI_OPT_STORE,
    { NULL, NULL, NULL },
};

static const pdbx_cli_spec val_spec = {
    .name = CMD, .args = "RUN", .opts = val_opts, .min_args = 1, .max_args = 1,
    .about = "Runs real training iterations of the run's model on its backend (pdbx-engine's validate\n"
             "mode: TP*PP*DP ranks launched as 'pdbx run' launches a sweep; every op's forward and\n"
             "backward, the TP all-reduces, PP send/recv under 1F1B, the DP gradient all-reduce),\n"
             "one warm-up then N measured, and prints the measured iteration (median, min, max)\n"
             "next to 'pdbx advise''s estimate of it with the error (estimated - measured) /\n"
             "measured. The result is recorded next to the run (runs/<id>.validations.jsonl) and\n"
             "listed by 'pdbx show RUN'. RUN is a unique prefix of a run id in the store.\n"
             "Exit: 0 measured, 1 the engine failed, 2 bad input.",
};

static int val_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err, size_t errlen)
{
    val_args *a = ctx;
    const char *n = opt->name;
    if (strcmp(n, "store") == 0)
        a->store = value;
    else if (strcmp(n, "config") == 0)
        a->config = value;
    else if (strcmp(n, "mbs") == 0)
        return pdbx_cli_int("--mbs", value, 1, 1 << 20, &a->mbs, err, errlen);
    else if (strcmp(n, "gbs") == 0)
        return pdbx_cli_int("--gbs", value, 1, 1 << 24, &a->gbs, err, errlen);
    else if (strcmp(n, "layers") == 0)
        return pdbx_cli_int("--layers", value, 1, PDBX_RUN_MAX_LAYERS, &a->layers, err, errlen);
    else if (strcmp(n, "iters") == 0)
        return pdbx_cli_int("--iters", value, 1, ITERS_MAX, &a->iters, err, errlen);
    else if (strcmp(n, "stat") == 0) {
        if (pdbx_cli_stat("--stat", value, &a->stat, err, errlen) != 0)
            return -1;
        if (a->stat == PDBX_STAT_STD)
            return snprintf(err, errlen, "--stat: 'std' is not a time (allowed: median, mean, min, max)"), -1;
    } else if (strcmp(n, "format") == 0) {
        static const char *const fmts[] = { "table", "json", NULL };
        return pdbx_cli_choice("--format", value, fmts, &a->format, err, errlen);
    } else if (strcmp(n, "launcher") == 0)
        a->launcher = value;
    else if (strcmp(n, "hosts") == 0)
        a->hosts = value;
    else if (strcmp(n, "hostfile") == 0)
        a->hostfile = value;
    else if (strcmp(n, "launcher-args") == 0)
        a->launcher_args = value;
    else if (strcmp(n, "simulate-nodes") == 0)
        a->simulate_nodes = 1;
    else if (strcmp(n, "recompute") == 0) {
        static const char *const r[] = { "none", "full", "selective", NULL };   /* pdbx_recompute's order */
        return pdbx_cli_choice("--recompute", value, r, &a->recompute, err, errlen);
    } else if (strcmp(n, "zero1") == 0) {
        static const char *const z[] = { "off", "on", NULL };
        return pdbx_cli_choice("--zero1", value, z, &a->zero1, err, errlen);
    }
    return 0;
}

/* The launcher options (as `pdbx run` reads them); 0 or the usage exit. */
static int launch_opts(const val_args *a, pdbx_spec *spec, pdbx_launch_opts *o)
{
    char err[1024];
    memset(o, 0, sizeof *o);
    o->simulate_nodes = a->simulate_nodes;
    if (a->launcher && pdbx_launcher_parse(a->launcher, &o->kind, err, sizeof err) != 0)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "--launcher: %s", err);
    if (a->hosts && a->hostfile)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "--hosts and --hostfile: give one of them");
    if (a->hosts && pdbx_launch_hosts_parse(a->hosts, spec->gpus_per_node, o, err, sizeof err) != 0)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "%s", err);
    if (a->hostfile && pdbx_launch_hostfile_read(a->hostfile, spec->gpus_per_node, o, err, sizeof err) != 0)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "%s", err);
    if (a->launcher_args) {
        char words[PDBX_LAUNCH_ARGS_MAX + 1], *w[64];
        if (strlen(a->launcher_args) >= sizeof o->launcher_args)
            return pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "--launcher-args: longer than %zu characters",
                                 sizeof o->launcher_args - 1);
        if (pdbx_launch_split_words(a->launcher_args, words, sizeof words, w, 64, err, sizeof err) < 0)
            return pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "--launcher-args: %s", err);
        snprintf(o->launcher_args, sizeof o->launcher_args, "%s", a->launcher_args);
    }
    return 0;
}

/* The checks of the configuration against the run; 0 or the usage exit. */
static int check_input(val_args *a, const pdbx_run *run)
{
    int t = 0, p = 0, d = 0, x = 1, used = 0, more = 0;
    if (!a->config)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "--config TPxPPxDP is required (e.g. --config 1x1x2)");
    int ok = sscanf(a->config, "%d%*[xX]%d%*[xX]%d%n", &t, &p, &d, &used) == 3;
    if (ok && a->config[used])   /* the optional EP degree */
        ok = sscanf(a->config + used, "%*[xX]%d%n", &x, &more) == 1 && !a->config[used + more];
    if (!ok || t < 1 || p < 1 || d < 1 || x < 1 || t > 4096 || p > 4096 || d > 4096 || x > 4096)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "--config: '%s' is not TPxPPxDP or TPxPPxDPxEP (degrees "
                             "of 1..4096, e.g. 2x1x2 or 1x1x2x2)", a->config);
    a->tp = t, a->pp = p, a->dp = d, a->ep = x;
    if (a->mbs < 1)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "--mbs M is required (the micro-batch size, 1 or more)");
    if (a->gbs < 1)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "--gbs B is required (the global batch, a multiple "
                             "of mbs x dp = %d)", a->mbs * d);
    if (a->gbs % (a->mbs * d) != 0)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "--gbs: %d is not a multiple of mbs x dp = %d x %d "
                             "(allowed: k x %d)", a->gbs, a->mbs, d, a->mbs * d);
    if (a->layers == 0) {
        int l = run->layers_profiled > p ? run->layers_profiled : p;
        a->layers = (l + p - 1) / p * p;
    }
    if (a->layers % p != 0)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "--layers: %d is not a multiple of pp = %d "
                             "(allowed: k x %d)", a->layers, p, p);
    if (a->iters == 0)
        a->iters = ITERS_DEFAULT;
    /* the run must have measured this TP degree: the estimate and the shapes come from it */
    int cfgs[256][PDBX_CFG_DIMS], seen = 0;
    char tps[128] = "";
    size_t n = pdbx_cli_run_configs(run, 0, cfgs, 256);
    for (size_t i = 0; i < n; i++) {
        int dup = 0;
        for (size_t k = 0; k < i; k++)
            dup |= cfgs[k][0] == cfgs[i][0];
        if (!dup) {
            size_t o = strlen(tps);
            snprintf(tps + o, sizeof tps - o, "%s%d", o ? ", " : "", cfgs[i][0]);
        }
        seen |= cfgs[i][0] == t;
    }
    int ok_point = 0;
    for (size_t i = 0; i < run->npoints; i++)
        ok_point |= run->points[i].tp == t && run->points[i].status == PDBX_POINT_OK;
    if (!seen || !ok_point)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "--config: TP %d was not measured by run %s "
                             "(allowed: the TP degrees it measured: %s)", t, run->id, tps[0] ? tps : "none");
    return 0;
}

/* ---- the result file ------------------------------------------------------------------- */
/* the engine's parts; ep_comm_ms only at EP > 1, optimizer_ms and loss_ms only when the engine
 * ran those ops (a training run on the cpu backend) */
enum { PART_EP = 5, PART_OPT = 6, PART_LOSS = 7, PART_RECOMP = 8, NPARTS = 9 };
static const char *const part_keys[NPARTS] = { "fwd_ms", "bwd_ms", "tp_comm_ms", "pp_comm_ms", "dp_comm_ms",
                                               "ep_comm_ms", "optimizer_ms", "loss_ms", "recompute_ms" };

typedef struct {
    double median, min, max;
    double iters_ms[ITERS_MAX];
    int n, num_mb;
    double parts[NPARTS];
    char backend[16];
} measured;


static double jnum(const cJSON *o, const char *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static int read_result(const char *path, measured *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "r");
    if (!f)
        return snprintf(err, errlen, "%s: the engine wrote no result: %s", path, strerror(errno)), -1;
    char buf[1 << 16];
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    cJSON *o = cJSON_ParseWithLength(buf, got);
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "iterations_ms");
    const cJSON *parts = cJSON_GetObjectItemCaseSensitive(o, "parts");
    const cJSON *be = cJSON_GetObjectItemCaseSensitive(o, "backend");
    m->median = jnum(o, "median_ms");
    m->min = jnum(o, "min_ms");
    m->max = jnum(o, "max_ms");
    m->num_mb = (int)jnum(o, "num_mb");
    if (!o || !cJSON_IsArray(arr) || !isfinite(m->median) || !isfinite(m->min) || !isfinite(m->max)) {
        cJSON_Delete(o);
        return snprintf(err, errlen, "%s: not a validation result", path), -1;
    }
    const cJSON *x;
    cJSON_ArrayForEach(x, arr)
        if (cJSON_IsNumber(x) && m->n < ITERS_MAX)
            m->iters_ms[m->n++] = x->valuedouble;
    for (int i = 0; i < NPARTS; i++)
        m->parts[i] = jnum(parts, part_keys[i]);
    pdbx_strcopy(m->backend, sizeof m->backend, cJSON_IsString(be) ? be->valuestring : "?");
    cJSON_Delete(o);
    return 0;
}

/* ---- output ---------------------------------------------------------------------------- */
static cJSON *num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static int print_json(const pdbx_run *run, const val_args *a, const measured *m,
                      const pdbx_advise_row *est, const pdbx_validation *v)
{
    cJSON *o = pdbx_validation_to_json(v);
    if (!o)
        return pdbx_cli_fail(PDBX_EXIT_FAIL, CMD, "out of memory");
    cJSON_AddStringToObject(o, "run", run->id);
    cJSON *arr = cJSON_AddArrayToObject(o, "iterations_ms");
    for (int i = 0; arr && i < m->n; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(m->iters_ms[i]));
    cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "estimate");
    if (e) {
        cJSON_AddItemToObject(e, "step_ms", num_or_null(est->step_ms));
        cJSON_AddItemToObject(e, "comm_ms", num_or_null(est->comm_ms));
        cJSON_AddItemToObject(e, "stage_fwd_ms", num_or_null(est->stage_fwd_ms));
        cJSON_AddItemToObject(e, "stage_bwd_ms", num_or_null(est->stage_bwd_ms));
        cJSON_AddItemToObject(e, "mem_gb", num_or_null(est->mem_gb));
        cJSON_AddItemToObject(e, "optimizer_ms", num_or_null(est->optimizer_ms));
        cJSON_AddItemToObject(e, "loss_ms", num_or_null(est->loss_ms));
        cJSON_AddItemToObject(e, "recompute_ms", num_or_null(est->recompute_ms));
        cJSON_AddStringToObject(e, "recompute", pdbx_recompute_name((pdbx_recompute)est->recompute));
        cJSON_AddBoolToObject(e, "zero1", est->zero1);
    }
    cJSON *mp = cJSON_AddObjectToObject(o, "measured_parts");
    for (int i = 0; mp && i < NPARTS; i++)
        if (i < PART_EP || (i == PART_EP && a->ep > 1) || (i >= PART_OPT && m->parts[i] > 0))
            cJSON_AddItemToObject(mp, part_keys[i], num_or_null(m->parts[i]));
    return pdbx_cli_emit_json(stdout, o) == 0 ? PDBX_EXIT_OK
                                              : pdbx_cli_fail(PDBX_EXIT_FAIL, CMD, "out of memory");
}

static void print_table(const pdbx_run *run, const val_args *a, const measured *m,
                        const pdbx_advise_row *est, const pdbx_validation *v)
{
    char epx[64] = "";
    if (a->ep > 1)
        snprintf(epx, sizeof epx, " EP%d", a->ep);
    if (est->recompute != PDBX_RECOMPUTE_NONE || est->zero1)
        snprintf(epx + strlen(epx), sizeof epx - strlen(epx), "%s%s%s",
                 est->recompute ? ", recompute " : "",
                 est->recompute ? pdbx_recompute_name((pdbx_recompute)est->recompute) : "",
                 est->zero1 ? ", zero1" : "");
    pdbx_cli_line(stdout, "validate %s: TP%d PP%d DP%d%s, MBS %d, GBS %d, %d layers, %d micro-batches, "
                  "%d iterations (%s)", run->id, a->tp, a->pp, a->dp, epx, a->mbs, a->gbs, a->layers,
                  v->num_mb, m->n, m->backend);
    printf("  %-22s %12s %12s %9s\n", "", "measured", "estimated", "error");
    printf("  %-22s %12.2f %12.2f %+8.1f%%\n", "iteration (ms)", m->median, est->step_ms, v->error_pct);
    printf("  %-22s %12s\n", "min / max (ms)", "");
    printf("    %.2f / %.2f over %d iterations:", m->min, m->max, m->n);
    for (int i = 0; i < m->n && i < 12; i++)
        printf(" %.2f", m->iters_ms[i]);
    printf("\n");
    printf("  estimate: compute %.2f, bubble %.2f, TP %.2f, PP %.2f, DP %.2f ms (backward %s)\n",
           est->compute_ms, est->bubble_ms, est->tp_comm_ms, est->pp_comm_ms, est->dp_comm_ms,
           est->bwd_measured ? "measured" : "2 x forward");
    printf("  measured (slowest rank, median iteration): fwd %.2f, bwd %.2f, TP %.2f, PP %.2f, DP %.2f ms\n",
           m->parts[0], m->parts[1], m->parts[2], m->parts[3], m->parts[4]);
    if (a->ep > 1)
        printf("  EP all-to-alls: estimated %.2f ms, measured %.2f ms (slowest rank, median iteration)\n",
               est->ep_comm_ms, m->parts[PART_EP]);
    if (est->optimizer_ms > 0 || (isfinite(m->parts[PART_OPT]) && m->parts[PART_OPT] > 0))
        printf("  optimizer step: estimated %.2f ms, measured %.2f ms (slowest rank, median iteration)\n",
               est->optimizer_ms, m->parts[PART_OPT]);
    if (est->recompute_ms > 0 || (isfinite(m->parts[PART_RECOMP]) && m->parts[PART_RECOMP] > 0))
        printf("  recomputed forward: estimated %.2f ms, measured %.2f ms (slowest rank, median iteration)\n",
               est->recompute_ms, m->parts[PART_RECOMP]);
    if (est->loss_ms > 0 || (isfinite(m->parts[PART_LOSS]) && m->parts[PART_LOSS] > 0))
        printf("  loss (last stage): estimated %.2f ms, measured %.2f ms (slowest rank, median iteration)\n",
               est->loss_ms, m->parts[PART_LOSS]);
    if (est->note[0])
        pdbx_cli_line(stdout, "  note: %s", est->note);
    pdbx_cli_line(stdout, "  recorded in runs/%s.validations.jsonl", run->id);
}

/* ---- the command ----------------------------------------------------------------------- */
static int launch_and_measure(const pdbx_run *run, const val_args *a, pdbx_spec *spec,
                              const pdbx_launch_opts *lo, measured *m)
{
    char dir[] = "/tmp/pdbx-validate-XXXXXX", spec_path[64], out_path[64], err[1024];
    if (!mkdtemp(dir))
        return pdbx_cli_fail(PDBX_EXIT_FAIL, CMD, "cannot create a temporary directory: %s", strerror(errno));
    snprintf(spec_path, sizeof spec_path, "%s/spec.json", dir);
    snprintf(out_path, sizeof out_path, "%s/result.json", dir);
    cJSON *js = pdbx_spec_to_json(spec);
    char *text = js ? cJSON_Print(js) : NULL;
    cJSON_Delete(js);
    int rc = PDBX_EXIT_OK;
    if (!text || pdbx_durable_write(spec_path, text, strlen(text), err, sizeof err) != 0)
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, CMD, "%s", text ? err : "out of memory");
    free(text);
    if (rc == PDBX_EXIT_OK) {
        char cfg[64], mbs[16], gbs[16], layers[16], iters[16];
        if (a->ep > 1)
            snprintf(cfg, sizeof cfg, "%dx%dx%dx%d", a->tp, a->pp, a->dp, a->ep);
        else
            snprintf(cfg, sizeof cfg, "%dx%dx%d", a->tp, a->pp, a->dp);
        snprintf(mbs, sizeof mbs, "%d", a->mbs);
        snprintf(gbs, sizeof gbs, "%d", a->gbs);
        snprintf(layers, sizeof layers, "%d", a->layers);
        snprintf(iters, sizeof iters, "%d", a->iters);
        char *extra[] = { "--validate", cfg, "--mbs", mbs, "--gbs", gbs, "--layers", layers,
                          "--iters", iters, "--out", out_path };
        pdbx_launch_target t = { NULL, spec_path, NULL, NULL, extra, (int)(sizeof extra / sizeof extra[0]) };
        int status = 0, usage = 0;
        if (pdbx_launch_foreground(spec, lo, &t, a->tp * a->pp * a->dp, &status, &usage, err, sizeof err) != 0)
            rc = pdbx_cli_fail(usage ? PDBX_EXIT_USAGE : PDBX_EXIT_FAIL, CMD, "%s", err);
        else if (status != 0)
            rc = pdbx_cli_fail(PDBX_EXIT_FAIL, CMD, "the engine failed (exit %d of %s; its messages are "
                               "above): nothing recorded", status, pdbx_engine_path());
        else if (read_result(out_path, m, err, sizeof err) != 0)
            rc = pdbx_cli_fail(PDBX_EXIT_FAIL, CMD, "%s", err);
    }
    unlink(spec_path);
    unlink(out_path);
    rmdir(dir);
    (void)run;
    return rc;
}

/* The record of one validation: the configuration, the measurement and the estimate. */
static void fill_record(const val_args *a, const measured *m, const pdbx_advise_row *est, pdbx_validation *v)
{
    memset(v, 0, sizeof *v);
    v->time = (double)time(NULL);
    v->tp = a->tp, v->pp = a->pp, v->dp = a->dp, v->mbs = a->mbs, v->gbs = a->gbs, v->layers = a->layers;
    v->num_mb = a->gbs / (a->mbs * a->dp);
    v->iters = m->n;
    pdbx_strcopy(v->backend, sizeof v->backend, m->backend);
    v->measured_ms = m->median;
    v->measured_min_ms = m->min;
    v->measured_max_ms = m->max;
    v->estimated_ms = est->step_ms;
    v->error_pct = 100.0 * (est->step_ms - m->median) / m->median;
    v->est_compute_ms = est->compute_ms;
    v->est_bubble_ms = est->bubble_ms;
    v->est_tp_comm_ms = est->tp_comm_ms;
    v->est_pp_comm_ms = est->pp_comm_ms;
    v->est_dp_comm_ms = est->dp_comm_ms;
    v->ep = a->ep, v->est_ep_comm_ms = est->ep_comm_ms;
    v->bwd_measured = est->bwd_measured;
    pdbx_strcopy(v->note, sizeof v->note, est->note);
}

/* advise's estimate of the configuration in the layout asked (the run spec's unless given,
 * which the engine's spec then carries too): 0, or the usage exit with its one line. */
static int estimate(const val_args *a, const pdbx_run *run, pdbx_spec *spec, pdbx_advise_row *est)
{
    pdbx_advise_query q;
    pdbx_advise_query_defaults(&q);
    q.gpus = a->tp * a->pp * a->dp;
    q.gbs = a->gbs;
    q.layers = a->layers;
    q.stat = (pdbx_stat_kind)a->stat;
    if (a->recompute >= 0)
        spec->recompute = (pdbx_recompute)a->recompute;
    if (a->zero1 >= 0)
        spec->zero1 = a->zero1;
    q.recompute_set = PDBX_ADV_RECOMPUTE_BIT(spec->recompute);
    q.zero1_set = PDBX_ADV_ZERO1_BIT(spec->zero1);
    char err[1024];
    if (pdbx_advise_one_ep(run, &q, a->tp, a->pp, a->dp, a->ep, a->mbs, est, err, sizeof err) != 0)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "%s", err);
    return 0;
}

int pdbx_cmd_validate(int argc, char **argv)
{
    val_args a;
    memset(&a, 0, sizeof a);
    a.stat = PDBX_STAT_MEDIAN;
    a.recompute = a.zero1 = -1;   /* the run spec's */
    char **pos;
    int npos;
    int rc = pdbx_cli_parse(&val_spec, argc, argv, val_opt, &a, &pos, &npos);
    if (rc != 0)
        return pdbx_cli_parse_exit(rc);
    if (pdbx_layout_is_run_path(pos[0]))
        return pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "RUN: '%s' is a path (allowed: a run id or prefix in "
                             "the store: the result is recorded next to the run)", pos[0]);
    pdbx_store *st;
    if ((rc = pdbx_cli_open_store(CMD, a.store, 0, &st)) != 0)
        return rc;
    pdbx_run run;
    if ((rc = pdbx_cli_load_run(CMD, st, pos[0], &run)) != 0) {
        pdbx_store_close(st);
        return rc;
    }
    pdbx_spec spec;
    pdbx_launch_opts *lo = calloc(1, sizeof *lo);
    char err[1024] = "";
    pdbx_spec_defaults(&spec);
    if (!lo)
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, CMD, "out of memory");
    else if (!run.spec || pdbx_spec_from_json(run.spec, run.id, &spec, err, sizeof err) != 0)
        rc = pdbx_cli_fail(PDBX_EXIT_USAGE, CMD, "RUN: %s has no readable spec (%s): nothing to run",
                           run.id, err[0] ? err : "run_start recorded none");
    else
        rc = check_input(&a, &run);
    /* the estimate first: a configuration it cannot estimate is refused before anything runs */
    pdbx_advise_row est;
    memset(&est, 0, sizeof est);
    if (rc == 0)
        rc = estimate(&a, &run, &spec, &est);
    if (rc == 0) {
        /* the spec the engine reads: the run's, with this configuration as its only one */
        memset(spec.configs, 0, sizeof spec.configs);
        spec.configs[0] = (pdbx_parallel){ a.tp, a.pp, a.dp, a.ep };
        spec.nconfigs = 1;
        rc = launch_opts(&a, &spec, lo);
    }
    measured *m = rc == 0 ? calloc(1, sizeof *m) : NULL;
    if (rc == 0 && !m)
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, CMD, "out of memory");
    if (rc == 0)
        rc = launch_and_measure(&run, &a, &spec, lo, m);
    if (rc == 0) {
        pdbx_validation v;
        fill_record(&a, m, &est, &v);
        if (pdbx_validation_append(pdbx_store_dir(st), run.id, &v, err, sizeof err) != 0)
            rc = pdbx_cli_fail(PDBX_EXIT_FAIL, CMD, "measured, but not recorded: %s", err);
        if (a.format == 1) {
            int prc = print_json(&run, &a, m, &est, &v);
            rc = rc ? rc : prc;
        } else {
            print_table(&run, &a, m, &est, &v);
        }
    }
    free(m);
    free(lo);
    pdbx_run_free(&run);
    pdbx_store_close(st);
    return rc;
}
