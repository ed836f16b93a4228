/* ui_runview_details.c: the run view's per-point views and its collectives tab: memory per
 * rank, each point's cells (samples, CI, CV, source; setup time, host load, GPU clocks), and
 * the collectives table with its busbw chart (ui_runview_internal.h). */
#include "tui/screens/ui_runview_internal.h"

#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/plan/plan.h"
#include "store/runtable.h"
#include "store/util/fmt.h"
#include "tui/ui_app.h"
#include "tui/ui_data.h"

/* Memory per rank of the points of config cfg: the profile prediction (what the engine
 * allocates at the point; it decides the OOM stop) beside the measured peak, and the training
 * prediction of the full model with its verdict against the GPU preset (planning only). */
void rv_draw_memory(rv_state *v, ui_rect b, const int cfg[PDBX_CFG_DIMS])
{
    const pdbx_point *pts[UI_MAX_MBS];
    size_t n = pdbx_run_config_points(&v->run, cfg[0], cfg[1], cfg[2], cfg[3], pts, UI_MAX_MBS);
    double gpu_mem = v->have_spec ? v->spec.gpu.mem_bytes : NAN;
    char g[32];
    ui_put_text(b.y, 1, b.w - 2, UI_C_HEADER, 0, "memory per rank, GPU preset %s: %s", v->run.gpu,
                gpu_mem > 0 ? pdbx_fmt_size(gpu_mem, g, sizeof g) : "N/A");
    ui_put(b.y + 1, 1, b.w - 2, UI_C_HEADER, 1, "%5s %13s %13s %9s %13s %6s", "MBS", "profile pred.",
           "peak meas.", "meas/pred", "train (full)", "train");
    int y = b.y + 2;
    for (size_t i = (size_t)v->scroll; i < n && y < b.y + b.h - 2; i++) {
        const pdbx_point *p = pts[i];
        char pr[32] = "N/A", pk[32] = "N/A", ratio[32] = "N/A", tr[32] = "N/A";
        if (isfinite(p->profile_mem_bytes)) pdbx_fmt_size(p->profile_mem_bytes, pr, sizeof pr);
        if (isfinite(p->mem_peak_bytes)) pdbx_fmt_size(p->mem_peak_bytes, pk, sizeof pk);
        if (isfinite(p->profile_mem_bytes) && isfinite(p->mem_peak_bytes) && p->profile_mem_bytes > 0)
            snprintf(ratio, sizeof ratio, "%.3f", p->mem_peak_bytes / p->profile_mem_bytes);
        if (p->predicted_mem_bytes > 0) pdbx_fmt_size(p->predicted_mem_bytes, tr, sizeof tr);
        const char *verdict = p->predicted_mem_bytes > 0 ? (p->predicted_oom ? "OOM" : "fits") : "N/A";
        ui_put(y++, 1, b.w - 2, p->predicted_oom ? UI_C_WARNING : UI_C_NORMAL, 1, "%5d %13s %13s %9s %13s %6s",
               p->mbs, pr, pk, ratio, tr, verdict);
    }
    ui_put_text(b.y + b.h - 2, 1, b.w - 2, UI_C_DIM, 0,
                "profile: what the engine allocates at the point (it decides the OOM stop)");
    ui_put_text(b.y + b.h - 1, 1, b.w - 2, UI_C_DIM, 0,
                "train: the full model's training memory per rank (planning information)");
}

/* v with `decimals` decimals, N/A when a run file left it out (NaN). */
static const char *num_or_na(double v, int decimals, char *buf, size_t len)
{
    if (isfinite(v)) snprintf(buf, len, "%.*f", decimals, v);
    else snprintf(buf, len, "N/A");
    return buf;
}

/* The host's load and the GPU's clocks while a point was measured: one line each (the GPU's
 * only when recorded). */
static void noise_lines(const pdbx_point *p, char *host, size_t hlen, char *gpu, size_t glen)
{
    const pdbx_point_noise *n = &p->noise;
    char a[32], b[32], c[32];
    host[0] = gpu[0] = '\0';
    if (!n->valid) {
        snprintf(host, hlen, "host load not recorded");
        return;
    }
    snprintf(host, hlen, "%s: others %s/%d cores, load %s, steal %s%%", n->busy ? "BUSY" : "quiet",
             num_or_na(n->other_busy, 1, a, sizeof(a)), n->cores, num_or_na(n->load1, 2, b, sizeof(b)),
             num_or_na(n->steal_pct, 0, c, sizeof(c)));
    if (n->gpu_valid) {
        char why[160], t[32];
        pdbx_throttle_text(n->throttle_reasons, why, sizeof(why));
        snprintf(gpu, glen, "gpu: SM clock %s-%s MHz, max %s C, throttle: %s",
                 num_or_na(n->sm_clock_min_mhz, 0, a, sizeof(a)), num_or_na(n->sm_clock_max_mhz, 0, b, sizeof(b)),
                 num_or_na(n->temp_max_c, 0, t, sizeof(t)), why);
    }
}

/* Every point of config cfg: its status, setup time, load and GPU figures, then per measured op
 * (of the view's pass) the samples, mean, 95% CI and CV as % of the mean (noisy marked '!'),
 * the measured bwd/fwd and where the samples came from. Scrolls by line (Up/Down). */
void rv_draw_cells(rv_state *v, ui_rect b, const int cfg[PDBX_CFG_DIMS])
{
    pdbx_rt_config c;
    if (pdbx_rt_config_build_pass(&v->run, cfg[0], cfg[1], cfg[2], cfg[3], v->pass, &c) != 0) {
        ui_put(b.y, 1, b.w - 2, UI_C_ERROR, 0, "out of memory building the cells");
        return;
    }
    int y = b.y, line = 0, bottom = b.y + b.h - 1;
    ui_put(y++, 1, b.w - 2, UI_C_HEADER, 1, "%-17s %5s %9s %7s %7s %7s  %s", "op", "n", "ms", "+-ci95",
           "cv", "bwd/fwd", "source");
#define CELLS_LINE(role, bold, ...) do { \
        if (line++ >= v->scroll && y < bottom) ui_put(y++, 1, b.w - 2, role, bold, __VA_ARGS__); \
    } while (0)
    for (size_t i = 0; i < c.npoints; i++) {
        const pdbx_rt_point *p = &c.points[i];
        char setup[32] = "N/A", host[192], gpu[512];
        if (isfinite(p->point->setup_s)) snprintf(setup, sizeof(setup), "%.2f s", p->point->setup_s);
        noise_lines(p->point, host, sizeof(host), gpu, sizeof(gpu));
        CELLS_LINE(p->point->noise.busy ? UI_C_WARNING : UI_C_INFO, 1, "MBS %d point %d %s, setup %s; %s", p->mbs, p->point->index,
                   pdbx_point_status_name(p->status), setup, host);
        if (gpu[0])
            CELLS_LINE(UI_C_INFO, 1, "  %s", gpu);
        for (int op = 0; op < PDBX_OP_COUNT; op++) {
            const pdbx_rt_cell *cell = &p->op[op];
            if (!cell->valid) continue;
            char ms[32], ci[32], cv[32], ratio[32] = "", src[96];
            ui_format_value(cell->stats.mean, ms, sizeof(ms));
            pdbx_fmt_pct(pdbx_stats_rel_ci(&cell->stats), ci, sizeof(ci));
            pdbx_fmt_pct(pdbx_stats_cv(&cell->stats), cv, sizeof(cv));
            int noisy = pdbx_rt_cell_noisy(cell);
            if (noisy) strncat(cv, "!", sizeof(cv) - strlen(cv) - 1);
            double r = pdbx_point_bwd_ratio(p->point, (pdbx_op)op, v->stat);
            if (isfinite(r)) snprintf(ratio, sizeof(ratio), "%.2f", r);
            pdbx_rt_cell_source(cell, src, sizeof(src));
            CELLS_LINE(noisy ? UI_C_WARNING : UI_C_NORMAL, 1, "%-17s %5lld %9s %7s %7s %7s  %s",
                       pdbx_op_name((pdbx_op)op), (long long)cell->stats.count, ms, ci, cv, ratio,
                       src[0] ? src : "here");
        }
    }
#undef CELLS_LINE
    if (v->scroll > line - 1) v->scroll = line > 0 ? line - 1 : 0;
    ui_put_text(bottom, 1, b.w - 2, UI_C_DIM, 0, "ms: the %s of pass %s; ! noisy: CV > 5%%; Up/Down scroll",
                pdbx_stat_name(PDBX_STAT_MEAN), pdbx_pass_sel_name(v->pass));
    pdbx_rt_config_free(&c);
}

/* busbw vs message size, one series per collective (in place: the out-of-place rows are in
 * the table only), in the rect b. */
static void draw_coll_chart(ui_app *app, rv_state *v, ui_rect b)
{
    const pdbx_run *run = &v->run;
    char names[8][16];
    double sizes[UI_MAX_MBS];
    int nn = 0, ns = 0;
    for (size_t i = 0; i < run->ncoll; i++) {
        const pdbx_coll_result *r = &run->coll[i];
        if (!r->in_place) continue;
        int k = 0;
        while (k < nn && strcmp(names[k], r->coll) != 0) k++;
        if (k == nn && nn < 8) snprintf(names[nn++], sizeof(names[0]), "%s", r->coll);
        int j = 0;
        while (j < ns && sizes[j] != r->bytes) j++;
        if (j == ns && ns < UI_MAX_MBS) sizes[ns++] = r->bytes;
    }
    for (int i = 1; i < ns; i++)            /* sizes ascending */
        for (int j = i; j > 0 && sizes[j - 1] > sizes[j]; j--) {
            double t = sizes[j]; sizes[j] = sizes[j - 1]; sizes[j - 1] = t;
        }
    if (nn == 0 || ns == 0)
        return;
    double vals[8 * UI_MAX_MBS];
    for (int i = 0; i < nn * ns; i++) vals[i] = NAN;
    for (size_t i = 0; i < run->ncoll; i++) {
        const pdbx_coll_result *r = &run->coll[i];
        if (!r->in_place) continue;
        int k = 0, j = 0;
        while (k < nn && strcmp(names[k], r->coll) != 0) k++;
        while (j < ns && sizes[j] != r->bytes) j++;
        if (k < nn && j < ns) vals[k * ns + j] = r->busbw;
    }
    char xlab[UI_MAX_MBS][16];
    const char *xl[UI_MAX_MBS];
    for (int j = 0; j < ns; j++) {
        ui_format_unit(sizes[j], UI_UNIT_BYTES, xlab[j], sizeof(xlab[j]));
        xl[j] = xlab[j];
    }
    const int legend_rows = 1;
    ui_canvas c;
    if (ui_canvas_init(&c, b.w - 2, b.h - 1 - legend_rows) != 0) return;
    int unicode = app->unicode && !app->force_ascii;
    ui_put(b.y, 1, b.w - 2, UI_C_HEADER, 0, "busbw (GB/s, %s scale) vs message size (bytes)", v->log ? "log" : "linear");
    ui_lines_spec spec = { .values = vals, .nseries = nn, .npts = ns, .xlabels = xl, .xname = "size",
                           .yunit = UI_UNIT_GBS, .log = v->log, .unicode = unicode };
    ui_lines_info info;
    ui_legend_entry legend[9];
    int nlegend = 0;
    for (int k = 0; k < nn; k++)
        ui_legend_set(&legend[nlegend++], ui_series_marker(k, unicode), k, names[k]);
    if (ui_chart_lines(&c, 0, 0, c.h, c.w, &spec, &info) == 0) {
        ui_draw_canvas(&c, b.y + 1, 1);
        if (info.overlaps) {
            ui_legend_overlap(&legend[nlegend++]);
        }
    } else {
        ui_put(b.y + 1, 1, b.w - 2, UI_C_DIM, 0, "not enough room for the busbw chart at this size");
    }
    ui_canvas_free(&c);
    ui_draw_legend(b.y + b.h - legend_rows, 1, b.w - 2, legend_rows, legend, nlegend, &v->legend_page);
}

void rv_draw_collectives(ui_app *app, rv_state *v, ui_rect b)
{
    const pdbx_run *run = &v->run;
    const int chart_min_h = 9;           /* title, 5 plot rows, axis, labels, legend */
    if (v->coll_chart_only) {
        ui_rect cr = { b.y, b.x, b.h - 1, b.w };
        draw_coll_chart(app, v, cr);
        ui_put(b.y + b.h - 1, 1, b.w - 2, UI_C_DIM, 0, "v: back to the table");
        return;
    }
    ui_put(b.y, 1, b.w - 2, UI_C_HEADER, 1, "%-15s %10s %6s %6s %11s %10s %10s", "collective", "size",
           "ranks", "/node", "time (us)", "algbw GB/s", "busbw GB/s");
    int y = b.y + 1;
    int rows = b.h - 2;
    int table_rows = (int)run->ncoll;
    int with_chart = rows - table_rows >= chart_min_h + 1;
    if (!with_chart && table_rows > rows - 1) table_rows = rows - 1;
    size_t first = (size_t)v->scroll;
    if (first >= run->ncoll) first = run->ncoll ? run->ncoll - 1 : 0;
    for (size_t i = first; i < run->ncoll && table_rows > 0; i++, table_rows--) {
        const pdbx_coll_result *r = &run->coll[i];
        char sz[32], t[32], a[32], bb[32];
        ui_format_unit(r->bytes, UI_UNIT_BYTES, sz, sizeof(sz));
        ui_format_value(pdbx_stats_get(&r->time, v->stat) * 1e3, t, sizeof(t));
        ui_format_value(r->algbw, a, sizeof(a));
        ui_format_value(r->busbw, bb, sizeof(bb));
        char name[24];   /* out of place marked, within the column's 15 */
        snprintf(name, sizeof name, r->in_place ? "%s" : "%.11s oop", r->coll);
        ui_put(y++, 1, b.w - 2, UI_C_NORMAL, 1, "%-15s %10s %6d %6d %11s %10s %10s", name, sz, r->nranks,
               r->ranks_per_node, t, a, bb);
    }
    if (with_chart) {
        ui_rect cr = { y + 1, b.x, b.y + b.h - 1 - (y + 1), b.w };
        draw_coll_chart(app, v, cr);
    } else {
        /* no room under the table: say so, and how to see it (an earlier 80x24 showed nothing) */
        ui_put_text(b.y + b.h - 2, 1, b.w - 2, UI_C_DIM, 0,
                    "busbw chart: no room under the table at this size; v shows it alone");
    }
    ui_put(b.y + b.h - 1, 1, b.w - 2, UI_C_DIM, 0, "busbw = algbw x 2(n-1)/n (all_reduce), 1 (send_recv), (n-1)/n (others)");
}
