/* test_advise_ep.c: the advise cost model on a mixture-of-experts run with expert parallelism
 * (engine/advise/advise.h, "layer kinds" and "EP"), a synthetic run folded from real events: a
 * tiny DeepSeek-V2 (4 layers, the first dense: first_k_dense_replace 1) measured at DP 2 with
 * EP 1 and EP 2. Checked by hand:
 *  - rows at EP 1 and EP 2 both appear (the EP degrees the run measured, dividing tp x dp);
 *  - a layer costs the common ops plus its kind's MLP: 1 dense layer x the mlp_* cells and 3 MoE
 *    layers x the moe_* cells, not every per-layer cell on each of the 4 layers;
 *  - the EP 2 row takes the EP 2 cells and adds its all-to-alls (ep_dispatch + ep_combine, fwd +
 *    bwd) once per MoE layer and micro-batch, in comm_ms; EP 1 has none;
 *  - with PP 2 the stages differ by kind: stage 0 holds the dense layer, stage 1 two MoE layers
 *    (the slowest here);
 *  - the EP 2 row's memory per GPU is below EP 1's (half the routed experts);
 *  - the routed experts' gradients are reduced over their expert data parallel group (2 ranks
 *    at EP 1, none at EP 2), every other gradient over DP. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engine/advise/advise.h"
#include "store/profiledb.h"
#include "tests/unit/test_advise_util.h"


static void run_start(pdbx_run *run)
{
    pdbx_run_init(run);
    apply(run,
          "{\"type\":\"run_start\",\"t\":1000,\"id\":\"advise-ep-test\",\"spec\":{\"name\":\"t\","
          "\"model\":{\"pdbx_name\":\"tinyds\",\"pdbx_tag\":\"tinyds\",\"model_type\":\"deepseek_v2\","
          "\"hidden_act\":\"silu\",\"hidden_size\":256,\"intermediate_size\":512,\"num_attention_heads\":4,"
          "\"num_key_value_heads\":4,\"num_hidden_layers\":4,\"vocab_size\":8192,\"kv_lora_rank\":64,"
          "\"q_lora_rank\":null,\"qk_nope_head_dim\":32,\"qk_rope_head_dim\":16,\"v_head_dim\":32,"
          "\"n_routed_experts\":8,\"num_experts_per_tok\":2,\"n_shared_experts\":2,"
          "\"moe_intermediate_size\":128,\"first_k_dense_replace\":1,\"tie_word_embeddings\":false},"
          "\"gpu\":{\"name\":\"toy\",\"tag\":\"toy\",\"mem_bytes\":1e12,\"bw_gbs\":0,"
          "\"peak_tflops_bf16\":0,\"peak_tflops_fp16\":0,\"peak_tflops_fp32\":0},"
          "\"layers\":2,\"seq_len\":32,\"dtype\":\"fp32\",\"backend\":\"cpu\",\"gpus_per_node\":2,"
          "\"nodes\":1,\"passes\":[\"fwd\",\"bwd\"],\"bytes_per_param\":16,\"flash_attention\":false},"
          "\"model\":{\"name\":\"tinyds\",\"tag\":\"tinyds\",\"hidden\":256,\"intermediate\":512,"
          "\"heads\":4,\"kv_heads\":4,\"head_dim\":48,\"layers\":4,\"vocab\":8192},"
          "\"layers_profiled\":2,\"seq_len\":32,\"dtype\":\"fp32\",\"backend\":\"cpu\",\"gpu\":\"toy\","
          "\"world_size\":2,\"ranks_per_node\":2}");
}

/* The cells (median fwd, ms per op at MBS m: x m; bwd 1.5 x fwd): embed 0.5, final_norm and
 * lm_head 2 each; the common per-layer ops 1 each; the dense mlp_* 10 each; the moe_* 100 each
 * at EP 1, 60 at EP 2; at EP 2 ep_dispatch and ep_combine 3 fwd, 4 bwd each. */
static const pdbx_op first_ops[] = { PDBX_OP_EMBED };
static const pdbx_op last_ops[] = { PDBX_OP_FINAL_NORM, PDBX_OP_LM_HEAD };
static const pdbx_op common_ops[] = { PDBX_OP_INPUT_NORM, PDBX_OP_ATTN_Q, PDBX_OP_ATTN_CORE, PDBX_OP_ATTN_O };
static const pdbx_op dense_ops[] = { PDBX_OP_MLP_GATE, PDBX_OP_MLP_UP, PDBX_OP_MLP_ACT_FN, PDBX_OP_MLP_DOWN };
#define N(a) ((int)(sizeof a / sizeof a[0]))

/* The MoE layer's compute ops (pdbx_op_is_moe less the EP all-to-alls, which are comm). */
static int is_moe_compute(int op)
{
    return pdbx_op_is_moe((pdbx_op)op) && !pdbx_op_is_comm((pdbx_op)op);
}

static int n_moe_ops(void)
{
    int n = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        n += is_moe_compute(op);
    return n;
}

static void cell(pdbx_run *run, int idx, pdbx_op op, double f, double b)
{
    apply(run, "{\"type\":\"op\",\"point\":%d,\"op\":\"%s\",\"stats\":" STATS "}", idx, pdbx_op_name(op),
          STATS_ARGS(f));
    apply(run, "{\"type\":\"op\",\"point\":%d,\"op\":\"%s\",\"pass\":\"bwd\",\"stats\":" STATS "}", idx,
          pdbx_op_name(op), STATS_ARGS(b));
}

static void cells(pdbx_run *run, int idx, const pdbx_op *ops, int n, double f)
{
    for (int i = 0; i < n; i++)
        cell(run, idx, ops[i], f, 1.5 * f);
}

static double moe_ms(int ep)
{
    return ep > 1 ? 60 : 100;
}

/* One ok point of DP 2 at ep and mbs, with its DP all-reduce (20 ms per 32 MB). */
static void point(pdbx_run *run, int idx, int ep, int mbs)
{
    apply(run, "{\"type\":\"point_start\",\"t\":1001,\"point\":%d,\"tp\":1,\"pp\":1,\"dp\":2,\"ep\":%d,"
               "\"mbs\":%d,\"seq_len\":32}", idx, ep, mbs);
    cells(run, idx, first_ops, N(first_ops), 0.5 * mbs);
    cells(run, idx, last_ops, N(last_ops), 2.0 * mbs);
    cells(run, idx, common_ops, N(common_ops), 1.0 * mbs);
    cells(run, idx, dense_ops, N(dense_ops), 10.0 * mbs);
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        if (is_moe_compute(op))
            cell(run, idx, (pdbx_op)op, moe_ms(ep) * mbs, 1.5 * moe_ms(ep) * mbs);
    if (ep > 1) {
        cell(run, idx, PDBX_OP_EP_DISPATCH, 3.0 * mbs, 4.0 * mbs);
        cell(run, idx, PDBX_OP_EP_COMBINE, 3.0 * mbs, 4.0 * mbs);
    }
    apply(run, "{\"type\":\"comm\",\"point\":%d,\"kind\":\"dp_allreduce\",\"bytes\":32e6,\"group_size\":2,"
               "\"stats\":" STATS ",\"algbw\":1,\"busbw\":1}", idx, STATS_ARGS(20.0));
    apply(run, "{\"type\":\"point_end\",\"t\":1002,\"point\":%d,\"status\":\"ok\"}", idx);
}

static void build(pdbx_run *run)
{
    run_start(run);
    int idx = 0;
    for (int ep = 1; ep <= 2; ep++)
        for (int m = 1; m <= 2; m++)
            point(run, idx++, ep, m);
    /* a send/recv in the collectives sweep, so that PP 2 rows are estimated too */
    apply(run, "{\"type\":\"coll\",\"coll\":\"send_recv\",\"bytes\":32768,\"nranks\":2,\"ranks_per_node\":2,"
               "\"stats\":" STATS ",\"algbw\":1,\"busbw\":1,\"nodes\":1,\"spans_nodes\":false}", STATS_ARGS(0.5));
}

static const pdbx_advise_row *find(const pdbx_advise_result *r, int tp, int pp, int dp, int ep, int mbs)
{
    for (size_t i = 0; i < r->nrows; i++) {
        const pdbx_advise_row *w = &r->rows[i];
        if (w->tp == tp && w->pp == pp && w->dp == dp && w->ep == ep && w->mbs == mbs)
            return w;
    }
    return NULL;
}

/* One micro-batch's forward of `dense` dense and `moe` MoE layers at ep, MBS 1 (no first/last). */
static double layers_fwd(int dense, int moe, int ep)
{
    return (dense + moe) * N(common_ops) * 1.0 + dense * N(dense_ops) * 10.0 + moe * n_moe_ops() * moe_ms(ep);
}

static void test_ep_rows_and_layer_kinds(void **state)
{
    (void)state;
    pdbx_run run;
    build(&run);
    pdbx_advise_query q;
    pdbx_advise_query_defaults(&q);
    q.gpus = 2, q.gbs = 4;
    pdbx_advise_result r;
    char err[256] = "";
    if (pdbx_advise(&run, &q, &r, err, sizeof err) != 0)
        fail_msg("advise: %s", err);
    const pdbx_advise_row *e1 = find(&r, 1, 1, 2, 1, 1), *e2 = find(&r, 1, 1, 2, 2, 1);
    assert_non_null(e1);
    assert_non_null(e2);
    const double edge = 0.5 + 2 * 2.0;   /* embed + final_norm + lm_head, one stage holds all */
    /* 1 dense and 3 MoE layers; every per-layer cell on all 4 would be far more */
    const double f1 = edge + layers_fwd(1, 3, 1);
    assert_close(e1->stage_fwd_ms, f1);
    assert_close(e1->stage_bwd_ms, 1.5 * f1);
    assert_true(e1->stage_fwd_ms < edge + 4 * (N(common_ops) + N(dense_ops) * 10.0 + n_moe_ops() * 100.0));
    assert_close(e1->ep_comm_ms, 0);
    assert_close(e1->stage_ep_comm_ms, 0);
    assert_int_equal(e1->num_mb, 2);
    assert_close(e1->compute_ms, 2 * 2.5 * f1);
    /* EP 2: its own (faster) expert cells, and (3 + 3 fwd + 4 + 4 bwd) ms on each of 3 MoE layers */
    const double f2 = edge + layers_fwd(1, 3, 2);
    assert_close(e2->stage_fwd_ms, f2);
    assert_close(e2->stage_ep_comm_ms, 3 * 14.0);
    assert_close(e2->ep_comm_ms, 2 * 3 * 14.0);
    assert_close(e2->comm_ms, e2->dp_comm_ms + e2->ep_comm_ms);
    assert_close(e2->step_ms, 2 * 2.5 * f2 + e2->comm_ms);
    /* gradients: everything but the routed experts over DP (the same at both EPs); the experts
     * (3 MoE layers x E / ep x gate, up, down of 256 x 128, fp32) over their EDP group of
     * tp x dp / ep ranks: 2 at EP 1, none at EP 2 (each rank holds experts no other rank of
     * the stage holds); the one 32e6 B cell of 20 ms scaled by bytes */
    assert_close(e1->edp_msg_bytes, 3 * 8 * 3 * 256 * 128 * 4.0);
    assert_close(e2->edp_msg_bytes, 0);
    assert_close(e2->edp_comm_ms, 0);
    assert_close(e2->dp_msg_bytes, e1->dp_msg_bytes);
    assert_close(e1->edp_comm_ms, 20.0 * e1->edp_msg_bytes / 32e6);
    assert_close(e1->dp_comm_ms, 20.0 * (e1->dp_msg_bytes + e1->edp_msg_bytes) / 32e6);
    assert_close(e2->dp_comm_ms, 20.0 * e2->dp_msg_bytes / 32e6);
    assert_true(e2->mem_gb < e1->mem_gb);
    /* PP 2 (EP 1: an EP group of 2 needs tp x dp >= 2): stage 0 the dense layer and a MoE one,
     * stage 1 two MoE layers and lm_head; no EP 2 row at DP 1 */
    const pdbx_advise_row *p2 = find(&r, 1, 2, 1, 1, 1);
    assert_non_null(p2);
    assert_null(find(&r, 1, 2, 1, 2, 1));
    assert_int_equal(p2->slowest_stage, 1);
    assert_close(p2->stage_fwd_ms, 2 * 2.0 + layers_fwd(0, 2, 1));
    assert_close(p2->bubble_ms, 2.5 * (0.5 + layers_fwd(1, 1, 1)));
    pdbx_advise_free(&r);
    pdbx_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ep_rows_and_layer_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
