/* test_advise_fixture.h: the synthetic run of the advise cost-model tests (test_advise.c,
 * test_advise_comm.c), folded from real events: op cells per part (fwd = scale(part) x mbs^2,
 * bwd 1.5x; test_advise.c's header says why), points, comm cells and collectives, the standard
 * run "A" and the queries and stage times the tests compute by hand. */
#ifndef PDBX_TEST_ADVISE_FIXTURE_H
#define PDBX_TEST_ADVISE_FIXTURE_H

#include <math.h>
#include <stdio.h>

#include "engine/advise/advise.h"
#include "engine/advise/advise_cells.h"
#include "store/profiledb.h"
#include "tests/unit/test_advise_util.h"

static const double part_scale[PDBX_ADV_NPARTS] = { 0.5, 1.0, 2.0 };

/* How many ops of store/ops.h fall in a part (the toy model is dense: no moe_* cells, which
 * the advisor counts on MoE layers only; test_advise_ep.c has those). */
static inline int ops_in(int part)
{
    int n = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        n += pdbx_adv_op_part((pdbx_op)op) == part && !pdbx_op_is_moe((pdbx_op)op);
    return n;
}

/* The part's fwd at a measured mbs, as the run holds it (a sum of its ops' medians). */
static inline double part_fwd(int part, double mbs)
{
    return ops_in(part) * part_scale[part] * mbs * mbs;
}


/* Model: hidden 1024, intermediate 4096, 8 heads of 128, 8 kv heads, 4 layers, vocab 1000,
 * untied; seq_len 16, fp32: one activation message [mbs x 16, 1024] x 4 B = mbs x 64 KiB. */
static inline void run_start(pdbx_run *run, int bwd, double gpu_mem)
{
    pdbx_run_init(run);
    apply(run,
          "{\"type\":\"run_start\",\"t\":1000,\"id\":\"advise-test\",\"spec\":{\"name\":\"t\","
          "\"model\":{\"pdbx_name\":\"toy\",\"pdbx_tag\":\"toy\",\"hidden_size\":1024,"
          "\"intermediate_size\":4096,\"num_attention_heads\":8,\"num_key_value_heads\":8,"
          "\"head_dim\":128,\"num_hidden_layers\":4,\"vocab_size\":1000,\"tie_word_embeddings\":false},"
          "\"gpu\":{\"name\":\"toy\",\"tag\":\"toy\",\"mem_bytes\":%.17g,\"bw_gbs\":0,"
          "\"peak_tflops_bf16\":0,\"peak_tflops_fp16\":0,\"peak_tflops_fp32\":0},"
          "\"layers\":1,\"seq_len\":16,\"dtype\":\"fp32\",\"backend\":\"cpu\",\"gpus_per_node\":4,"
          "\"nodes\":1,\"passes\":%s,\"bytes_per_param\":16,\"flash_attention\":false},"
          "\"model\":{\"name\":\"toy\",\"tag\":\"toy\",\"hidden\":1024,\"intermediate\":4096,"
          "\"heads\":8,\"kv_heads\":8,\"head_dim\":128,\"layers\":4,\"vocab\":1000},"
          "\"layers_profiled\":1,\"seq_len\":16,\"dtype\":\"fp32\",\"backend\":\"cpu\",\"gpu\":\"toy\","
          "\"world_size\":4,\"ranks_per_node\":4}",
          gpu_mem, bwd ? "[\"fwd\",\"bwd\"]" : "[\"fwd\"]");
}

static int next_point;
static double point_factor = 1;   /* every compute cell of the next points x this */

/* One ok point with every compute op (and, tp > 1, the layer's TP all-reduce ops). */
static inline int point(pdbx_run *run, int tp, int pp, int dp, int mbs, int bwd)
{
    int idx = next_point++;
    apply(run, "{\"type\":\"point_start\",\"t\":1001,\"point\":%d,\"tp\":%d,\"pp\":%d,\"dp\":%d,\"mbs\":%d,"
               "\"seq_len\":16}", idx, tp, pp, dp, mbs);
    for (int op = 0; op < PDBX_OP_COUNT; op++) {
        int part = pdbx_adv_op_part((pdbx_op)op);
        if (pdbx_op_is_moe((pdbx_op)op))
            continue;
        if (part < 0) {
            if (tp > 1)   /* as the engine writes them: bytes is the message, [mbs x 16, 1024] fp32 */
                apply(run, "{\"type\":\"op\",\"point\":%d,\"op\":\"%s\",\"bytes\":%d,\"flops\":0,"
                           "\"stats\":" STATS "}", idx, pdbx_op_name((pdbx_op)op), mbs * 65536,
                      STATS_ARGS(0.2 * mbs));
            continue;
        }
        double f = point_factor * part_scale[part] * mbs * mbs;
        apply(run, "{\"type\":\"op\",\"point\":%d,\"op\":\"%s\",\"stats\":" STATS "}", idx,
              pdbx_op_name((pdbx_op)op), STATS_ARGS(f));
        if (bwd)
            apply(run, "{\"type\":\"op\",\"point\":%d,\"op\":\"%s\",\"pass\":\"bwd\",\"stats\":" STATS "}",
                  idx, pdbx_op_name((pdbx_op)op), STATS_ARGS(1.5 * f));
    }
    return idx;
}

static inline void point_end(pdbx_run *run, int idx)
{
    apply(run, "{\"type\":\"point_end\",\"t\":1002,\"point\":%d,\"status\":\"ok\"}", idx);
}

static inline void comm(pdbx_run *run, int idx, const char *kind, double bytes, int group, double ms)
{
    apply(run, "{\"type\":\"comm\",\"point\":%d,\"kind\":\"%s\",\"bytes\":%.17g,\"group_size\":%d,"
               "\"stats\":" STATS ",\"algbw\":1,\"busbw\":1}", idx, kind, bytes, group, STATS_ARGS(ms));
}

static inline void coll(pdbx_run *run, const char *name, double bytes, int nranks, double ms)
{
    apply(run, "{\"type\":\"coll\",\"coll\":\"%s\",\"bytes\":%.17g,\"nranks\":%d,\"ranks_per_node\":4,"
               "\"stats\":" STATS ",\"algbw\":1,\"busbw\":1,\"nodes\":1,\"spans_nodes\":false}",
          name, bytes, nranks, STATS_ARGS(ms));
}

#define KIB 1024.0
#define MIB (1024.0 * 1024.0)

/* Run A: configs 1x1x1 (mbs 1, 2, 4), 2x1x1 (mbs 1, 2, 4; TP all-reduce 0.1 ms per 64 KiB),
 * 1x2x1 (mbs 1; send/recv 64 KiB 0.3 ms), 1x1x2 (mbs 1; one 4 MiB DP bucket 10 ms); the sweep:
 * send_recv 64 KiB 0.25 ms, 128 KiB 0.4 ms; all_reduce 2 ranks 1 MiB 1 ms. */
static inline void run_a(pdbx_run *run, int bwd, double gpu_mem, int big_sweep)
{
    next_point = 0;
    run_start(run, bwd, gpu_mem);
    for (int m = 1; m <= 4; m *= 2)
        point_end(run, point(run, 1, 1, 1, m, bwd));
    for (int m = 1; m <= 4; m *= 2) {
        int i = point(run, 2, 1, 1, m, bwd);
        comm(run, i, "tp_allreduce", m * 64 * KIB, 2, 0.1 * m);
        point_end(run, i);
    }
    int i = point(run, 1, 2, 1, 1, bwd);
    comm(run, i, "pp_sendrecv", 64 * KIB, 2, 0.3);
    point_end(run, i);
    i = point(run, 1, 1, 2, 1, bwd);
    comm(run, i, "dp_allreduce", 4 * MIB, 2, 10);
    point_end(run, i);
    coll(run, "send_recv", 64 * KIB, 2, 0.25);
    coll(run, "send_recv", 128 * KIB, 2, 0.4);
    coll(run, "all_reduce", 1 * MIB, 2, 1);
    if (big_sweep) {
        coll(run, "all_reduce", 128 * MIB, 2, 100);
        coll(run, "all_reduce", 512 * MIB, 2, 400);
    }
}

static inline void query(pdbx_advise_query *q, int gpus, int gbs)
{
    pdbx_advise_query_defaults(q);
    q->gpus = gpus;
    q->gbs = gbs;
}

/* One micro-batch of a stage holding `layers` layers, first/last as flagged, at a measured
 * mbs: fwd + bwd (1.5 x fwd measured, or 2 x fwd). */
static inline double stage_t(int layers, int first, int last, double mbs, double bwd_factor)
{
    double f = layers * part_fwd(PDBX_ADV_LAYER, mbs) + (first ? part_fwd(PDBX_ADV_FIRST, mbs) : 0)
               + (last ? part_fwd(PDBX_ADV_LAST, mbs) : 0);
    return f * (1 + bwd_factor);
}

#endif
