/* fuzz_runfile.c: run-file frames (store: pdbx_run_load_file, the streaming scanner
 * pdbx_scan_file plus the fold of every event into a pdbx_run), then what every view reads from
 * a loaded run: the run table (store/runtable.h), each cell's statistics under both
 * attributions, and the FASOP rows of each config (store/export).
 *
 * Input: a run file as bytes (starting with the zstd magic), or JSON events one per line that
 * fuzz_write_run_file encodes as frames (fuzz_common.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "store/export/export.h"
#include "store/runtable.h"
#include "store/store.h"
#include "tests/fuzz/fuzz_common.h"

static void read_table(const pdbx_run *run)
{
    pdbx_runtable t;
    if (pdbx_runtable_build(run, 0, &t) != 0)
        return;
    pdbx_rt_col cols[PDBX_RT_MAX_COLS];
    volatile double sink = 0;
    for (int attr = 0; attr < 2; attr++) {
        size_t ncols = pdbx_rt_columns((pdbx_attribution)attr, cols);
        for (size_t c = 0; c < t.nconfigs; c++) {
            const pdbx_rt_config *cfg = &t.configs[c];
            for (size_t p = 0; p < cfg->npoints; p++)
                for (size_t k = 0; k < ncols; k++)
                    for (int s = 0; s < PDBX_STAT_COUNT_KINDS; s++)
                        for (int op = 0; op < PDBX_OP_COUNT; op++)
                            if (cols[k].ops & (1u << op))
                                sink += pdbx_rt_value(&cfg->points[p].op[op], (pdbx_stat_kind)s);
            double rows[64 * PDBX_FASOP_COLS];
            char err[256];
            (void)pdbx_fasop_rows(run, cfg->tp, cfg->pp, cfg->dp, (pdbx_attribution)attr,
                                  PDBX_STAT_MEAN, rows, 64, err, sizeof err);
        }
    }
    (void)sink;
    pdbx_runtable_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/run.pdbx", fuzz_tmpdir());
    fuzz_write_run_file(path, data, size);
    pdbx_run run;
    if (pdbx_run_load_file(path, &run, err, sizeof err) == 0)
        read_table(&run);
    pdbx_run_free(&run);
    return 0;
}
