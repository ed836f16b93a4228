/* cli_show_formats.c: `pdbx show --format json` (one document: configs, points, cells,
 * ratios, noise, comm, collectives, validations) and `--format csv` (one row per point, every
 * column; empty = not measured) (cli_show.h). */
#include "tui/cli/cli_show.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "store/events.h"
#include "store/util/fmt.h"

/* ---- JSON ------------------------------------------------------------------------------- */
static cJSON *num_or_null(double v, int valid)
{
    return valid && isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static int add_item(cJSON *obj, const char *key, cJSON *item)
{
    if (!item)
        return -1;
    if (!cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        return -1;
    }
    return 0;
}

/* The time and bandwidths every comm cell and collective carries; 0 or -1 out of memory. */
static int add_timing(cJSON *c, const pdbx_stats *time, pdbx_stat_kind stat, double algbw,
                      double busbw)
{
    return !cJSON_AddNumberToObject(c, "time_ms", pdbx_stats_get(time, stat))
           || !cJSON_AddNumberToObject(c, "algbw", algbw) || !cJSON_AddNumberToObject(c, "busbw", busbw)
               ? -1 : 0;
}

static cJSON *comm_json(const pdbx_rt_point *p, pdbx_stat_kind stat)
{
    cJSON *comm = cJSON_CreateObject();
    for (int k = 0; comm && k < PDBX_RT_NCOMM; k++) {
        const pdbx_comm_cell *cc = p->comm[k];
        if (!cc->valid)
            continue;
        cJSON *c = cJSON_CreateObject();
        if (add_item(comm, pdbx_rt_comm_name(k), c) || !cJSON_AddNumberToObject(c, "bytes", cc->bytes)
            || !cJSON_AddNumberToObject(c, "group_size", cc->group_size)
            || add_timing(c, &cc->time, stat, cc->algbw, cc->busbw)) {
            cJSON_Delete(comm);
            return NULL;
        }
    }
    return comm;
}

/* Per measured op cell of the table's pass: n, ci95 (ms, null when unknown), cv, rel_ci,
 * noisy, and reused_from / shared_with when the samples came from elsewhere. */
static cJSON *cells_json(const pdbx_rt_point *p)
{
    cJSON *cells = cJSON_CreateObject();
    for (int op = 0; cells && op < PDBX_OP_COUNT; op++) {
        const pdbx_rt_cell *c = &p->op[op];
        if (!c->valid)
            continue;
        cJSON *o = cJSON_CreateObject();
        if (add_item(cells, pdbx_op_name((pdbx_op)op), o)
            || !cJSON_AddNumberToObject(o, "n", (double)c->stats.count)
            || add_item(o, "ci95", num_or_null(c->stats.ci95, 1))
            || add_item(o, "cv", num_or_null(pdbx_stats_cv(&c->stats), 1))
            || add_item(o, "rel_ci", num_or_null(pdbx_stats_rel_ci(&c->stats), 1))
            || !cJSON_AddBoolToObject(o, "noisy", pdbx_rt_cell_noisy(c))
            || (c->reused && !cJSON_AddNumberToObject(o, "reused_from", c->source_point))
            || (c->shared && !cJSON_AddStringToObject(o, "shared_with", pdbx_op_name(c->shared_op)))
            || (c->fused && (!cJSON_AddStringToObject(o, "fused_with", pdbx_op_name(c->fused_op))
                             || !cJSON_AddNumberToObject(o, "fused_share", c->fused_share)))) {
            cJSON_Delete(cells);
            return NULL;
        }
    }
    return cells;
}

/* The measured bwd/fwd ratio of each op measured in both passes. */
static cJSON *ratio_json(const pdbx_point *p, pdbx_stat_kind stat)
{
    cJSON *o = cJSON_CreateObject();
    for (int op = 0; o && op < PDBX_OP_COUNT; op++) {
        double r = pdbx_point_bwd_ratio(p, (pdbx_op)op, stat);
        if (isfinite(r) && !cJSON_AddNumberToObject(o, pdbx_op_name((pdbx_op)op), r)) {
            cJSON_Delete(o);
            return NULL;
        }
    }
    return o;
}

/* point_end's noise as recorded (null when the point recorded none). */
static cJSON *noise_json(const pdbx_point_noise *n)
{
    if (!n->valid)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    int bad = !o || !cJSON_AddBoolToObject(o, "busy", n->busy) || !cJSON_AddNumberToObject(o, "cores", n->cores)
              || add_item(o, "load1", num_or_null(n->load1, 1))
              || add_item(o, "other_busy", num_or_null(n->other_busy, 1))
              || add_item(o, "steal_pct", num_or_null(n->steal_pct, 1));
    if (!bad && n->gpu_valid) {
        char why[256];
        pdbx_throttle_text(n->throttle_reasons, why, sizeof why);
        bad = add_item(o, "sm_clock_min_mhz", num_or_null(n->sm_clock_min_mhz, 1))
              || add_item(o, "sm_clock_max_mhz", num_or_null(n->sm_clock_max_mhz, 1))
              || add_item(o, "temp_max_c", num_or_null(n->temp_max_c, 1))
              || !cJSON_AddNumberToObject(o, "throttle_reasons", n->throttle_reasons)
              || !cJSON_AddStringToObject(o, "throttle", why);
    }
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *point_json(const pdbx_run *run, const pdbx_rt_point *p, const show_args *a,
                         const pdbx_rt_col *cols, size_t ncols)
{
    pdbx_cli_row r;
    pdbx_cli_row_fill(p, cols, ncols, (pdbx_stat_kind)a->stat, &r);
    cJSON *o = cJSON_CreateObject(), *cells = cJSON_CreateObject();
    int bad = !o || add_item(o, "ms", cells)
              || !cJSON_AddNumberToObject(o, "mbs", p->mbs)
              || !cJSON_AddStringToObject(o, "status", show_status_text(run, p->point))
              || (p->point->message && add_item(o, "message", cJSON_CreateString(p->point->message)));
    for (size_t c = 0; c < ncols && !bad; c++)
        bad = add_item(cells, cols[c].name, num_or_null(r.v[c], r.valid[c]));
    bad = bad || add_item(o, "comm", comm_json(p, (pdbx_stat_kind)a->stat))
          || add_item(o, "layer", num_or_null(r.layer, r.layer_valid))
          || add_item(o, "total", num_or_null(r.total, r.total_valid))
          || add_item(o, "profile_mem_bytes", num_or_null(p->point->profile_mem_bytes, 1))
          || add_item(o, "mem_peak_bytes", num_or_null(p->point->mem_peak_bytes, 1))
          || add_item(o, "mem_base_bytes", num_or_null(p->point->mem_base_bytes, 1))
          || add_item(o, "cells", cells_json(p))
          || (pdbx_run_has_bwd(run) && add_item(o, "bwd_fwd_ratio", ratio_json(p->point, (pdbx_stat_kind)a->stat)))
          || add_item(o, "setup_s", num_or_null(p->point->setup_s, 1))
          || add_item(o, "noise", noise_json(&p->point->noise));
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *config_json(const pdbx_run *run, const pdbx_rt_config *cfg, const show_args *a,
                          const pdbx_rt_col *cols, size_t ncols)
{
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    int bad = !o || add_item(o, "points", arr) || !cJSON_AddNumberToObject(o, "tp", cfg->tp)
              || !cJSON_AddNumberToObject(o, "pp", cfg->pp)
              || !cJSON_AddNumberToObject(o, "dp", cfg->dp)
              || (cfg->ep > 1 && !cJSON_AddNumberToObject(o, "ep", cfg->ep));   /* only when > 1 */
    for (size_t k = 0; k < cfg->npoints && !bad; k++) {
        cJSON *pj = point_json(run, &cfg->points[k], a, cols, ncols);
        bad = !pj || !cJSON_AddItemToArray(arr, pj);
        if (bad)
            cJSON_Delete(pj);
    }
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *collectives_json(const pdbx_run *run, pdbx_stat_kind stat)
{
    cJSON *colls = cJSON_CreateArray();
    for (size_t i = 0; colls && i < run->ncoll; i++) {
        const pdbx_coll_result *r = &run->coll[i];
        cJSON *c = cJSON_CreateObject();
        if (!c || !cJSON_AddItemToArray(colls, c)) {
            cJSON_Delete(c);
            cJSON_Delete(colls);
            return NULL;
        }
        if (!cJSON_AddStringToObject(c, "coll", r->coll)
            || !cJSON_AddNumberToObject(c, "bytes", r->bytes)
            || !cJSON_AddNumberToObject(c, "nranks", r->nranks)
            || !cJSON_AddNumberToObject(c, "ranks_per_node", r->ranks_per_node)
            || !cJSON_AddBoolToObject(c, "in_place", r->in_place)
            || (r->nodes > 0 && (!cJSON_AddNumberToObject(c, "nodes", r->nodes)
                                 || !cJSON_AddBoolToObject(c, "spans_nodes", r->spans_nodes)))
            || add_timing(c, &r->time, stat, r->algbw, r->busbw)) {
            cJSON_Delete(colls);
            return NULL;
        }
    }
    return colls;
}

int show_print_json(const pdbx_runtable *t, const show_args *a, const pdbx_rt_col *cols,
                    size_t ncols, FILE *out)
{
    const pdbx_run *run = t->run;
    cJSON *root = cJSON_CreateObject(), *configs = cJSON_CreateArray();
    int bad = !root || add_item(root, "configs", configs)
              || !cJSON_AddStringToObject(root, "id", run->id)
              || !cJSON_AddStringToObject(root, "status", pdbx_run_status_name(run->status))
              || !cJSON_AddStringToObject(root, "reason", run->end_reason)
              || !cJSON_AddStringToObject(root, "cause", pdbx_end_cause_name((pdbx_end_cause)run->end_cause))
              || !cJSON_AddStringToObject(root, "in_flight", pdbx_in_flight_name((pdbx_in_flight)run->in_flight))
              || !cJSON_AddNumberToObject(root, "in_flight_point", run->in_flight_point)
              || !cJSON_AddStringToObject(root, "model", run->model.name)
              || !cJSON_AddStringToObject(root, "model_tag", run->model.tag)
              || !cJSON_AddNumberToObject(root, "layers_profiled", run->layers_profiled)
              || !cJSON_AddNumberToObject(root, "seq_len", run->seq_len)
              || !cJSON_AddStringToObject(root, "dtype", run->dtype)
              || !cJSON_AddStringToObject(root, "backend", run->backend)
              || !cJSON_AddStringToObject(root, "gpu", run->gpu)
              || !cJSON_AddStringToObject(root, "stat", pdbx_stat_name((pdbx_stat_kind)a->stat))
              || !cJSON_AddStringToObject(root, "attribution", pdbx_cli_attributions[a->attribution])
              || !cJSON_AddStringToObject(root, "pass", pdbx_pass_sel_name((pdbx_pass_sel)a->pass))
              || !cJSON_AddBoolToObject(root, "has_bwd", pdbx_run_has_bwd(run))
              || !cJSON_AddStringToObject(root, "unit", "ms")
              || (run->launcher[0] && !cJSON_AddStringToObject(root, "launcher", run->launcher))
              || (run->command[0] && !cJSON_AddStringToObject(root, "command", run->command));
    pdbx_run_noise_summary ns;
    pdbx_run_noise_of(run, &ns);
    cJSON *load = cJSON_CreateObject();
    bad = bad || add_item(root, "load", load) || !cJSON_AddNumberToObject(load, "points", ns.points)
          || !cJSON_AddNumberToObject(load, "busy", ns.busy)
          || !cJSON_AddNumberToObject(load, "other_busy_max", ns.other_busy_max)
          || !cJSON_AddNumberToObject(load, "steal_max", ns.steal_max);
    const cJSON *placement = run->env ? cJSON_GetObjectItemCaseSensitive(run->env, "placement") : NULL;
    if (!bad && cJSON_IsArray(placement))
        bad = !cJSON_AddItemToObject(root, "placement", cJSON_Duplicate(placement, 1));
    for (size_t i = 0; i < t->nconfigs && !bad; i++) {
        cJSON *cj = config_json(run, &t->configs[i], a, cols, ncols);
        bad = !cj || !cJSON_AddItemToArray(configs, cj);
        if (bad)
            cJSON_Delete(cj);
    }
    bad = bad || add_item(root, "collectives", collectives_json(run, (pdbx_stat_kind)a->stat));
    cJSON *vals = bad ? NULL : cJSON_AddArrayToObject(root, "validations");
    bad = bad || !vals;
    for (size_t i = 0; i < a->nvals && !bad; i++) {
        cJSON *vj = pdbx_validation_to_json(&a->vals[i]);
        bad = !vj || !cJSON_AddItemToArray(vals, vj);
        if (bad)
            cJSON_Delete(vj);
    }
    if (bad) {
        cJSON_Delete(root);
        return -1;
    }
    return pdbx_cli_emit_json(out, root);
}

/* ---- CSV: one row per point, every column (empty = not measured) ------------------------- */
static void csv_num(FILE *out, double v, int valid)
{
    valid ? fprintf(out, ",%.17g", v) : fputs(",", out);
}

int show_print_csv(const pdbx_runtable *t, const show_args *a, const pdbx_rt_col *cols,
                   size_t ncols, FILE *out)
{
    /* an ep column only when a config has EP > 1 (as pdbx diff's): a dense run's CSV is unchanged */
    int has_ep = 0;
    for (size_t i = 0; i < t->nconfigs; i++)
        has_ep |= t->configs[i].ep > 1;
    fputs(has_ep ? "tp,pp,dp,ep,mbs,status" : "tp,pp,dp,mbs,status", out);
    for (size_t c = 0; c < ncols; c++) {
        fputc(',', out);
        pdbx_csv_field(out, cols[c].name);
    }
    fputs(",layer,total\n", out);
    for (size_t i = 0; i < t->nconfigs; i++) {
        const pdbx_rt_config *cfg = &t->configs[i];
        for (size_t k = 0; k < cfg->npoints; k++) {
            pdbx_cli_row r;
            pdbx_cli_row_fill(&cfg->points[k], cols, ncols, (pdbx_stat_kind)a->stat, &r);
            fprintf(out, "%d,%d,%d,", cfg->tp, cfg->pp, cfg->dp);
            if (has_ep)
                fprintf(out, "%d,", cfg->ep);
            fprintf(out, "%d,%s", cfg->points[k].mbs, show_status_text(t->run, cfg->points[k].point));
            for (size_t c = 0; c < ncols; c++)
                csv_num(out, r.v[c], r.valid[c]);
            csv_num(out, r.layer, r.layer_valid);
            csv_num(out, r.total, r.total_valid);
            fputc('\n', out);
        }
    }
    return 0;
}
