/* Unit tests of tui/ui_data (the numbers of the run view and compare screens, from a pdbx_run
 * folded from real events) and tui/ui_replay (a recording written with the store's writer,
 * played on a virtual clock, long gaps shortened). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "store/store.h"
#include "tui/ui_data.h"
#include "tui/ui_replay.h"

static const char *const events[] = {
    "{\"type\":\"run_start\",\"t\":100.0,\"id\":\"2026-11-20__10-00-00_aaaa0001\",\"host\":\"h\",\"pid\":1,"
    "\"model\":{\"name\":\"M\",\"tag\":\"m\",\"hidden\":64,\"intermediate\":128,\"heads\":4,\"kv_heads\":4,"
    "\"head_dim\":16,\"layers\":2,\"vocab\":100},\"layers_profiled\":1,\"seq_len\":8,\"dtype\":\"fp32\","
    "\"backend\":\"cpu\",\"gpu\":\"cpu\",\"gpu_tag\":\"cpu\",\"warmup\":1,\"steps\":1,\"world_size\":1,"
    "\"ranks_per_node\":1,\"points\":["
    "{\"index\":0,\"tp\":1,\"pp\":1,\"dp\":1,\"mbs\":1,\"seq_len\":8,\"predicted_mem_bytes\":1,\"predicted_oom\":false},"
    "{\"index\":1,\"tp\":1,\"pp\":1,\"dp\":1,\"mbs\":2,\"seq_len\":8,\"predicted_mem_bytes\":1,\"predicted_oom\":false},"
    "{\"index\":2,\"tp\":1,\"pp\":1,\"dp\":1,\"mbs\":4,\"seq_len\":8,\"predicted_mem_bytes\":1,\"predicted_oom\":false}]}",
    "{\"type\":\"point_start\",\"t\":101.0,\"point\":0,\"tp\":1,\"pp\":1,\"dp\":1,\"mbs\":1}",
    "{\"type\":\"op\",\"t\":101.5,\"point\":0,\"op\":\"attn_q\",\"stats\":{\"count\":3,\"min\":1,\"max\":3,\"mean\":2,\"median\":2,\"std\":0.5},"
    "\"flops\":2e9,\"bytes\":1e6}",
    "{\"type\":\"op\",\"t\":102.0,\"point\":0,\"op\":\"mlp_up\",\"stats\":{\"count\":3,\"min\":5,\"max\":7,\"mean\":6,\"median\":6,\"std\":1},"
    "\"flops\":4e9,\"bytes\":2e6}",
    "{\"type\":\"comm\",\"t\":102.2,\"point\":0,\"kind\":\"dp_allreduce\",\"bytes\":1048576,\"group_size\":2,"
    "\"stats\":{\"count\":3,\"min\":0.5,\"max\":0.9,\"mean\":0.7,\"median\":0.6,\"std\":0.1},\"algbw\":1.5,\"busbw\":1.5}",
    /* the measured sums: layer and total are these, never the sum of the ops above */
    "{\"type\":\"step\",\"t\":102.3,\"point\":0,\"layer\":{\"stats\":{\"count\":3,\"min\":9,\"max\":11,\"mean\":10,\"median\":10,\"std\":0.8}},"
    "\"total\":{\"stats\":{\"count\":3,\"min\":18,\"max\":22,\"mean\":20,\"median\":21,\"std\":1.5}}}",
    "{\"type\":\"point_end\",\"t\":102.5,\"point\":0,\"status\":\"ok\"}",
    "{\"type\":\"point_start\",\"t\":103.0,\"point\":1,\"tp\":1,\"pp\":1,\"dp\":1,\"mbs\":2}",
    "{\"type\":\"op\",\"t\":103.5,\"point\":1,\"op\":\"attn_q\",\"stats\":{\"count\":3,\"min\":3,\"max\":5,\"mean\":4,\"median\":4,\"std\":0.5},"
    "\"flops\":4e9,\"bytes\":2e6}",
    "{\"type\":\"point_end\",\"t\":104.0,\"point\":1,\"status\":\"ok\"}",
    /* an hour of silence (a sweep resumed later), then the OOM */
    "{\"type\":\"point_end\",\"t\":3704.0,\"point\":2,\"status\":\"oom\",\"message\":\"out of memory\"}",
    "{\"type\":\"run_end\",\"t\":3705.0,\"status\":\"complete\",\"reason\":\"\",\"elapsed_s\":3605}",
};
#define NEVENTS (sizeof(events) / sizeof(events[0]))

static void fold(pdbx_run *run, size_t upto)
{
    pdbx_run_init(run);
    for (size_t i = 0; i < upto; i++) {
        cJSON *ev = cJSON_Parse(events[i]);
        assert_non_null(ev);
        char err[256];
        assert_int_equal(pdbx_run_apply(run, ev, err, sizeof(err)), 0);
        cJSON_Delete(ev);
    }
}

static void test_matrix(void **state)
{
    (void)state;
    pdbx_run run;
    fold(&run, NEVENTS);
    ui_matrix m;
    ui_matrix_build(&run, (const int[PDBX_CFG_DIMS]){ 1, 1, 1, 1 }, PDBX_STAT_MEAN, &m);
    assert_int_equal(m.n, 3);
    assert_int_equal(m.mbs[0], 1);
    assert_int_equal(m.mbs[2], 4);
    assert_int_equal(m.status[2], PDBX_POINT_OOM);
    assert_float_equal(m.v[PDBX_OP_ATTN_Q][0], 2.0, 1e-12);
    assert_float_equal(m.v[PDBX_OP_ATTN_Q][1], 4.0, 1e-12);
    assert_float_equal(m.v[PDBX_OP_MLP_UP][0], 6.0, 1e-12);
    /* never measured: NaN (N/A on screen), never 0 */
    assert_true(isnan(m.v[PDBX_OP_MLP_UP][1]));
    assert_true(isnan(m.v[PDBX_OP_ATTN_Q][2]));
    /* measured layer/total (cmocka's assert_float_equal passes on NaN: check finiteness) */
    assert_true(isfinite(m.total[0]) && isfinite(m.layer[0]));
    assert_float_equal(m.total[0], 20.0, 1e-12);
    assert_float_equal(m.layer[0], 10.0, 1e-12);
    /* no step event: N/A, never the sum of the ops (4.0) */
    assert_true(isnan(m.total[1]) && isnan(m.layer[1]));
    assert_true(isnan(m.total[2]));
    /* shares: a per-layer op over the measured layer; N/A without it */
    assert_float_equal(m.share[PDBX_OP_ATTN_Q][0], 0.2, 1e-12);
    assert_true(isnan(m.share[PDBX_OP_ATTN_Q][1]));
    assert_int_equal(m.op_present[PDBX_OP_ATTN_Q], 1);
    assert_int_equal(m.op_present[PDBX_OP_EMBED], 0);
    assert_float_equal(m.flops[PDBX_OP_MLP_UP][0], 4e9, 1);
    /* the point's DP all-reduce: its own row, outside the total; N/A where not measured */
    assert_int_equal(m.dp_present, 1);
    assert_int_equal(m.pp_present, 0);
    assert_float_equal(m.dp_allreduce[0], 0.7, 1e-12);
    assert_true(isnan(m.dp_allreduce[1]));
    assert_true(isnan(m.pp_sendrecv[0]));
    assert_int_equal(ui_matrix_find(&m, 4), 2);
    assert_int_equal(ui_matrix_find(&m, 8), -1);
    /* another statistic */
    ui_matrix_build(&run, (const int[PDBX_CFG_DIMS]){ 1, 1, 1, 1 }, PDBX_STAT_MAX, &m);
    assert_float_equal(m.v[PDBX_OP_ATTN_Q][0], 3.0, 1e-12);
    assert_float_equal(m.dp_allreduce[0], 0.9, 1e-12);
    assert_float_equal(m.total[0], 22.0, 1e-12);
    ui_matrix_build(&run, (const int[PDBX_CFG_DIMS]){ 1, 1, 1, 1 }, PDBX_STAT_STD, &m);
    assert_float_equal(m.total[0], 1.5, 1e-12);                /* a measured std, not a sum */
    assert_true(isfinite(m.total[0]));
    /* an unknown config has no points */
    ui_matrix_build(&run, (const int[PDBX_CFG_DIMS]){ 2, 1, 1, 1 }, PDBX_STAT_MEAN, &m);
    assert_int_equal(m.n, 0);
    pdbx_run_free(&run);
}

static void test_geomean_and_roofline(void **state)
{
    (void)state;
    const double r[] = { 2.0, 8.0, NAN, -1, 0 };
    assert_float_equal(ui_geomean(r, 5), 4.0, 1e-12);       /* only finite positive values */
    assert_true(isnan(ui_geomean(r + 2, 3)));
    pdbx_gpu g;
    memset(&g, 0, sizeof(g));
    g.peak_tflops_bf16 = 100;
    g.peak_tflops_fp32 = 10;
    g.bw_gbs = 1000;
    /* compute bound: 1e12 flops at 100 TFLOP/s = 10 ms; 1e9 bytes at 1000 GB/s = 1 ms */
    assert_float_equal(ui_roofline_ms(&g, "bf16", 1e12, 1e9), 10.0, 1e-9);
    assert_float_equal(ui_roofline_ms(&g, "fp32", 1e12, 1e9), 100.0, 1e-9);
    /* memory bound */
    assert_float_equal(ui_roofline_ms(&g, "bf16", 1e9, 1e10), 10.0, 1e-9);
    /* a preset without numbers has no bound */
    memset(&g, 0, sizeof(g));
    assert_true(isnan(ui_roofline_ms(&g, "bf16", 1e12, 1e9)));
}

/* Writes the events into a fresh store with the store's own writer; returns the file path. */
static void write_recording(char *dir, size_t dlen, char *path, size_t plen)
{
    snprintf(dir, dlen, "/tmp/pdbx-test-tui-data.XXXXXX");
    assert_non_null(mkdtemp(dir));
    pdbx_store *st;
    char err[256];
    assert_int_equal(pdbx_store_open(dir, 1, &st, err, sizeof(err)), 0);
    pdbx_run_writer *w;
    assert_int_equal(pdbx_run_writer_create(st, "2026-11-20__10-00-00_aaaa0001", &w, err, sizeof(err)), 0);
    for (size_t i = 0; i < NEVENTS; i++) {
        cJSON *ev = cJSON_Parse(events[i]);
        assert_int_equal(pdbx_run_writer_append(w, ev, err, sizeof(err)), 0);
        cJSON_Delete(ev);
    }
    assert_int_equal(pdbx_run_writer_close(w, err, sizeof(err)), 0);
    assert_int_equal(pdbx_store_run_path(st, "2026-11-20__10-00-00_aaaa0001", path, plen), 0);
    pdbx_store_close(st);
}

static void test_replay(void **state)
{
    (void)state;
    char dir[64], path[1024], err[256];
    write_recording(dir, sizeof(dir), path, sizeof(path));
    ui_replay rp;
    assert_int_equal(ui_replay_load(path, 2.0, &rp, err, sizeof(err)), 0);
    assert_int_equal(rp.n, NEVENTS);
    pdbx_run run;
    pdbx_run_init(&run);
    /* time 0: only run_start (t = 100) is due */
    assert_int_equal(ui_replay_advance(&rp, 0, &run), 1);
    assert_int_equal(run.npoints, 3);
    assert_int_equal(pdbx_run_points_done(&run), 0);
    /* 1 s wall at x2 = 2 s of events: up to t = 102 */
    assert_int_equal(ui_replay_advance(&rp, 1.0, &run), 3);
    assert_int_equal(run.current_point, 0);
    /* 1.25 s more: t = 104.5, both ok points done */
    ui_replay_advance(&rp, 1.25, &run);
    assert_int_equal(pdbx_run_points_done(&run), 2);
    assert_false(ui_replay_done(&rp));
    /* the hour of silence is cut to UI_REPLAY_MAX_GAP_S: a few seconds finish the replay */
    ui_replay_advance(&rp, 0.1, &run);
    ui_replay_advance(&rp, (UI_REPLAY_MAX_GAP_S + 1) / 2.0, &run);
    ui_replay_advance(&rp, 1.0, &run);
    assert_true(ui_replay_done(&rp));
    assert_int_equal(run.have_end, 1);
    assert_int_equal(run.status, PDBX_RUN_COMPLETE);
    assert_int_equal(run.points[2].status, PDBX_POINT_OOM);
    pdbx_run_free(&run);
    ui_replay_free(&rp);
    /* not a recording: a clear error naming the file */
    char bad[1100];
    snprintf(bad, sizeof(bad), "%s/not-a-recording", dir);
    FILE *f = fopen(bad, "w");
    assert_non_null(f);
    fputs("hello\n", f);
    fclose(f);
    assert_int_equal(ui_replay_load(bad, 1.0, &rp, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "not-a-recording"));
    assert_int_equal(ui_replay_load("/nonexistent/rec.pdbx", 1.0, &rp, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "/nonexistent/rec.pdbx"));
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matrix),
        cmocka_unit_test(test_geomean_and_roofline),
        cmocka_unit_test(test_replay),
    };
    return cmocka_run_group_tests_name("tui_data", tests, NULL, NULL);
}
