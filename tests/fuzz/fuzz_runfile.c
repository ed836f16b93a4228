/* fuzz_runfile.c: run-file frames (store: pdbx_run_load_file, the streaming scanner
 * pdbx_scan_file plus the fold of every event into a pdbx_run), then what every view reads from
 * a loaded run: the run table (store/runtable.h), each cell's statistics under both
 * attributions, and the FASOP rows of each config (store/export).
 *
 * Checks the scanner's contract for a run being written (store.h): a monitor that scans a
 * prefix of the file (cut anywhere, as a reader may see a write in progress) and then the rest
 * from the prefix's next_offset gets exactly what one scan of the whole file gets: the same
 * events, the same end (torn tail, damage) and the same next_offset. A cut never makes a good
 * frame look damaged: damage found in the prefix is damage the whole file has at that event.
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
                            if (cols[k].ops & PDBX_OP_BIT(op))
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

static uint8_t *read_back(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0)
        abort();
    long n = ftell(f);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    rewind(f);
    if (n < 0 || !buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        abort();
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void check_incremental(const char *path, const uint8_t *data, size_t size)
{
    char err[512];
    pdbx_scan_result whole, head, rest;
    if (pdbx_scan_file(path, 0, NULL, NULL, &whole, err, sizeof err) != 0)
        return;
    size_t len;
    uint8_t *file = read_back(path, &len);
    uint32_t h = 2166136261u;                  /* FNV-1a of the input picks the cut */
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    size_t cut = len ? h % (len + 1) : 0;
    fuzz_write_file(path, file, cut);
    if (pdbx_scan_file(path, 0, NULL, NULL, &head, err, sizeof err) != 0)
        abort();
    if (head.corrupt) {
        if (!whole.corrupt || whole.events != head.events || whole.next_offset != head.next_offset) {
            fprintf(stderr, "fuzz_runfile: the first %zu of %zu bytes are damaged after %zu events "
                    "(%s), the whole file %s after %zu\n", cut, len, head.events, head.corrupt_msg,
                    whole.corrupt ? "too" : "is not", whole.events);
            abort();
        }
    } else {
        fuzz_write_file(path, file, len);
        if (pdbx_scan_file(path, head.next_offset, NULL, NULL, &rest, err, sizeof err) != 0)
            abort();
        if (head.events + rest.events != whole.events || rest.corrupt != whole.corrupt ||
            rest.torn_tail != whole.torn_tail || rest.next_offset != whole.next_offset) {
            fprintf(stderr, "fuzz_runfile: cut at %zu of %zu: %zu + %zu events, corrupt %d, torn %d, "
                    "next %llu; one scan: %zu events, corrupt %d, torn %d, next %llu\n", cut, len,
                    head.events, rest.events, rest.corrupt, rest.torn_tail,
                    (unsigned long long)rest.next_offset, whole.events, whole.corrupt,
                    whole.torn_tail, (unsigned long long)whole.next_offset);
            abort();
        }
    }
    free(file);
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
    check_incremental(path, data, size);
    return 0;
}
