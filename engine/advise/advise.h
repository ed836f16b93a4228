/* advise.h: from a stored run's measurements to the (TP, PP, DP, MBS) to train with.
 *
 * The cost model (docs/advise.md) estimates one training iteration of a model of `layers`
 * decoder layers on `gpus` ranks for a global batch `gbs`, from the run's own cells only:
 *  - per stage and micro-batch: forward from the op cells of (tp, mbs), backward from the
 *    measured bwd cells when the run has them, else 2 x forward (FASOP's x3 rule; the row's
 *    bwd_measured says which);
 *  - TP: the two all-reduces per layer (fwd, and the same again in bwd) from the run's
 *    measured tp_allreduce cells or its collectives sweep at the message size, at the group's
 *    placement (intra- or inter-node);
 *  - PP: 1F1B with num_mb = gbs / (mbs * dp) micro-batches: step = num_mb x the slowest
 *    stage's (fwd + bwd) + one micro-batch of every other stage (the bubble), plus the send/recv of
 *    activations at stage boundaries;
 *  - DP: one gradient all-reduce of the stage's parameters (fp32) after the last backward;
 *  - memory: the planner's training memory per rank (pdbx_memory_predict) against the GPU.
 *  - layer kinds: a stage's layers each cost the common per-layer ops plus their kind's MLP:
 *    the dense mlp_* cells on dense layers, the moe_* cells on MoE layers (DeepSeek's first
 *    first_dense_layers are dense: pdbx_layer_is_moe over the job's layers), never both;
 *  - EP: rows at every EP degree the run measured that divides tp x dp, from that degree's cells,
 *    with the all-to-alls of the measured ep_dispatch/ep_combine cells (fwd + bwd) per MoE layer
 *    and the memory of E / ep experts per rank.
 * Where a cell a configuration needs is missing (an MBS or a TP degree not swept, a message
 * size outside the collectives sweep) the model interpolates or extrapolates and says so in a
 * note naming the cell; it never reuses another row silently.
 *
 * Contract:
 *  - Units: milliseconds and GB (1e9 bytes). Pure: no I/O, no globals; the run is borrowed.
 *  - pdbx_advise() fills rows for every (tp, pp, dp, mbs) with tp * pp * dp == gpus,
 *    layers % pp == 0, gbs % (mbs * dp) == 0, in step_ms order (ascending; ties by memory),
 *    and marks the Pareto set of (step_ms, mem_gb) among the rows that fit.
 *  - Errors (bad query, a run without measured points) are one line: the field, the value and
 *    what is allowed; -1. 0 on success (possibly with 0 rows and a note saying why).
 */
#ifndef PDBX_ADVISE_H
#define PDBX_ADVISE_H

#include <stddef.h>

#include "store/profiledb.h"

typedef struct {
    int gpus;                /* ranks in the training job (> 0) */
    int gbs;                 /* global batch in sequences (> 0) */
    int nodes;               /* 0: ceil(gpus / gpus_per_node) */
    int gpus_per_node;       /* 0: the run's (spec gpus_per_node) */
    int layers;              /* decoder layers of the job; 0: the model's full count */
    int mbs_max;             /* 0: the largest MBS the run measured x 2 (extrapolated rows
                              * carry a note) */
    pdbx_stat_kind stat;     /* statistic of the cells (median by default) */
    /* Added for the training layouts (issue 25; source-compatible): the recomputation and
     * optimizer layouts a row can have, as sets of PDBX_ADV_RECOMPUTE_BIT / PDBX_ADV_ZERO1_BIT;
     * 0: the run spec's own (its recompute, its zero1). pdbx_advise enumerates every member;
     * pdbx_advise_one takes a set of one. */
    unsigned recompute_set, zero1_set;
} pdbx_advise_query;

#define PDBX_ADV_RECOMPUTE_BIT(r) (1u << (r))        /* pdbx_recompute: none, full, selective */
#define PDBX_ADV_ZERO1_BIT(on) (1u << ((on) != 0))   /* 0: off; 1: the distributed optimizer */

#define PDBX_ADVISE_NOTE_MAX 192

typedef struct {
    int tp, pp, dp, mbs, num_mb;
    double step_ms;          /* one iteration */
    double compute_ms;       /* (num_mb) x slowest stage (fwd + bwd), comm excluded */
    double comm_ms;          /* tp + pp + dp below */
    double bubble_ms;        /* one micro-batch (fwd + bwd + TP comm) of every stage but the
                              * slowest: (pp - 1) x slowest with equal stages */
    double tp_comm_ms, pp_comm_ms, dp_comm_ms;   /* dp: a MoE model's expert gradients included */
    double stage_fwd_ms, stage_bwd_ms;   /* slowest stage, one micro-batch, compute only */
    /* the optimizer step once the gradients are reduced, every stage at once: the measured
     * optimizer cell (one layer's parameters) x the rank's parameters / the layer's (in
     * step_ms; 0 when the run has no optimizer cell: a fwd-only run, one before the op, cuda) */
    double optimizer_ms;
    /* the loss on the last stage, num_mb x its cells' fwd + bwd: part of compute_ms when the
     * last stage is the slowest (else of the bubble); 0 when the run has no loss cell (a
     * fwd-only run, one before the op, cuda). Its TP all-reduces of the tokens are not in it */
    double loss_ms;
    double mem_gb;           /* training memory per rank (the planner's) */
    int fits;                /* mem_gb <= the run's GPU memory */
    int pareto;              /* on the time/memory Pareto front of the rows that fit */
    int bwd_measured;        /* 1: bwd from measured cells; 0: 2 x fwd */
    int estimated_cells;     /* cells interpolated or extrapolated for this row */
    char note[PDBX_ADVISE_NOTE_MAX];   /* the first such cell, "" when none */
    /* Added after the contract of ebd354f (source-compatible: new fields at the end). */
    double tp_msg_bytes;     /* one TP all-reduce: [mbs x seq, hidden] in the run's dtype (0: tp 1) */
    double pp_msg_bytes;     /* one PP send/recv: the same activations (0: pp 1) */
    double dp_msg_bytes;     /* the DP all-reduce: the largest stage's gradients in fp32 (0: dp 1) */
    double tp_allreduce_ms;  /* one TP all-reduce of tp_msg_bytes */
    double p2p_ms;           /* one send/recv of pp_msg_bytes */
    double stage_tp_comm_ms; /* slowest stage, one micro-batch: its TP all-reduces, fwd + bwd */
    int slowest_stage;       /* 0 .. pp - 1 */
    /* Expert parallelism (source-compatible, at the end): a run with EP > 1 configs gives rows at
     * each EP degree it measured that divides tp x dp; the expert ops' cells are that EP's. */
    int ep;                  /* 1: every expert on every rank */
    double ep_comm_ms;       /* num_mb x the slowest stage's all-to-alls (in comm_ms) */
    double stage_ep_comm_ms; /* slowest stage, one micro-batch: its MoE layers' ep_dispatch +
                              * ep_combine cells, fwd + bwd */
    double edp_comm_ms;      /* the routed experts' gradient all-reduce over the expert data
                              * parallel group (tp x dp / ep ranks; in dp_comm_ms) */
    double edp_msg_bytes;    /* its message: the stage's routed experts' gradients in fp32 (0:
                              * a dense model, or one rank per EDP group) */
    /* The training layout (issue 25; at the end): */
    int recompute;           /* pdbx_recompute: full reruns each layer's forward (its compute, TP
                              * all-reduces and all-to-alls) before its backward; selective its
                              * attention core's forward */
    int zero1;               /* the distributed optimizer: each rank steps 1/DP of the stage's
                              * parameters; the gradients are reduce-scattered and the
                              * parameters all-gathered instead of all-reduced */
    double recompute_ms;     /* num_mb x the slowest stage's recomputed forward compute (in
                              * compute_ms; its TP all-reduces in tp_comm_ms) */
} pdbx_advise_row;

typedef struct {
    size_t nrows;
    pdbx_advise_row *rows;   /* step_ms order (owned) */
    size_t nnotes;
    char **notes;            /* every interpolation/extrapolation, once each, then every refusal
                              * with its count ("tp 8 not measured: 4 configurations left
                              * out") (owned) */
    /* Added after ebd354f (source-compatible): the query as resolved, nodes, gpus_per_node,
     * layers and mbs_max filled in. */
    pdbx_advise_query query;
} pdbx_advise_result;

void pdbx_advise_query_defaults(pdbx_advise_query *q);
int pdbx_advise(const pdbx_run *run, const pdbx_advise_query *q, pdbx_advise_result *out,
                char *err, size_t errlen);
/* One configuration's estimate (what `pdbx validate` compares with): 0 with *row, or -1 with
 * a one-line message (the configuration does not divide the query's gpus/layers/gbs). */
int pdbx_advise_one(const pdbx_run *run, const pdbx_advise_query *q, int tp, int pp, int dp,
                    int mbs, pdbx_advise_row *row, char *err, size_t errlen);
/* The same at EP ep (1: pdbx_advise_one): ep divides tp x dp; refused when the run did not
 * measure (tp, ep). */
int pdbx_advise_one_ep(const pdbx_run *run, const pdbx_advise_query *q, int tp, int pp, int dp, int ep,
                       int mbs, pdbx_advise_row *row, char *err, size_t errlen);
void pdbx_advise_free(pdbx_advise_result *r);

#endif
