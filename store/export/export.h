/* export.h: files other tools read, written from a loaded pdbx_run (docs/exports.md).
 *
 *  - FASOP NPZ: per TP degree one `{model_tag}_{gpu_tag}_{tp}.npz` in DIR: a stored ZIP with
 *    member `data.npy` (npy v1.0, '<f8', C order, shape (M, 10), FASOP's columns, ms, forward
 *    only, per micro-batch, layer ops averaged over profiled layers, row i = MBS 2^i from 1
 *    with no gaps: rows stop before the first MBS that is missing or not ok) and a second
 *    member `meta.json` (attribution, stat, pass, run id, mbs list, units). Forward only
 *    unless the options ask for pass both (fwd + bwd per cell, said in meta.json).
 *    When several configs share a TP degree, the one with the most ok rows is exported.
 *  - Vidur CSV: DIR/mlp.csv, DIR/all_reduce.csv, DIR/send_recv.csv (the collectives sweep,
 *    Vidur's size) and DIR/step_comm.csv (the points' own TP/PP/DP traffic, apart).
 *  - FASOP legacy known-cost files (the HPDC'24 tree, AvatarHwang/FASOP): per TP degree
 *    DIR/{model_tag}_{gpu_tag}_{tp}.npy, 1-D '<f8' of the model's num_layers + 2 elements
 *    [embedding, layer x num_layers, post_process], seconds, forward, MBS 1 (FASOP scales by
 *    MBS and by 3 itself), plus a sidecar {name}.npy.json (export_fasop_npy.c).
 *  - Chrome trace: FILE, one complete ("ph":"X") event per op and per step collective of one
 *    measured step per rank, pid = rank + 1, one tid per (rank, point). At most PDBX_TRACE_MAX_EVENTS events (recorded or synthesized
 *    from points x ranks x layers_profiled x ops): a larger trace is refused before anything
 *    is built, with a message naming the cap.
 * Writes are durable (tmp -> fsync -> rename). Each call reports every file it wrote through
 * `wrote` (may be NULL). Every writer reads the run table (store/runtable.h). Errors: -1
 * with one line naming the file or the reason (for example
 * "no ok point at MBS 1 for TP 4: FASOP rows must start at MBS 1").
 */
#ifndef PDBX_EXPORT_H
#define PDBX_EXPORT_H

#include <stddef.h>
#include "store/profiledb.h"
#include "store/runtable.h"   /* pdbx_attribution, the cells every writer reads */

/* About 150 bytes of JSON each: a 150 MB file, more than trace viewers open comfortably. */
#define PDBX_TRACE_MAX_EVENTS 1000000

typedef void (*pdbx_wrote_fn)(const char *path, void *ctx);

typedef struct {
    const char *model_tag;        /* NULL: run->model.tag */
    const char *gpu_tag;          /* NULL: run->gpu_tag */
    pdbx_attribution attribution;
    pdbx_stat_kind stat;          /* a time: mean (FASOP), median, min, max; std is refused */
    /* fwd (the default, what FASOP reads: it multiplies by 3 for fwd+bwd itself); both: each
     * cell fwd + bwd (pdbx_point_cell_pass), stated in meta.json ("pass": "both"), for tools
     * that want the measured training-step cost; bwd is refused (a backward-only table read
     * as FASOP's forward would be multiplied by 3 again). */
    pdbx_pass_sel pass;
} pdbx_npz_options;

int pdbx_export_npz(const pdbx_run *run, const char *dir, const pdbx_npz_options *opt,
                    pdbx_wrote_fn wrote, void *ctx, char *err, size_t errlen);
/* model_tag, gpu_tag: NULL for the run's. Refused (-1) when a TP degree has no ok MBS 1 point
 * (the others are still written). */
int pdbx_export_fasop_npy(const pdbx_run *run, const char *dir, const char *model_tag,
                          const char *gpu_tag, pdbx_wrote_fn wrote, void *ctx, char *err,
                          size_t errlen);
int pdbx_export_csv(const pdbx_run *run, const char *dir,
                    pdbx_wrote_fn wrote, void *ctx, char *err, size_t errlen);
int pdbx_export_trace(const pdbx_run *run, const char *file,
                      pdbx_wrote_fn wrote, void *ctx, char *err, size_t errlen);

/* The FASOP row values of one config (tp, pp, dp), exactly as the NPZ holds them:
 * rows x PDBX_FASOP_COLS doubles into out (row-major), returns rows (0..cap) or -1 with err. */
int pdbx_fasop_rows(const pdbx_run *run, int tp, int pp, int dp, pdbx_attribution attr,
                    pdbx_stat_kind stat, double *out, int cap, char *err, size_t errlen);

#endif
