/* backend.h: the compute and comm backend interfaces of pdbx-engine.
 *
 * A compute backend (cpu, cuda) owns one device, the buffers of one sweep point and the
 * kernels of each op of design.md section 3; a comm backend (mpi, nccl) times collectives on
 * buffers the compute backend allocated. Each backend is a table of function pointers. The
 * cuda + nccl pair lives in a shared object (libpdbx_cuda.so) that pdbx-engine dlopens and
 * whose only exported symbol is
 *     const pdbx_backend_entry *pdbx_backend_entry_v1(void);
 * so this header must stay free of MPI and CUDA types: group set-up that needs MPI goes through
 * the bcast callback the engine provides.
 *
 * Conventions: functions return 0 on success, PDBX_EOOM when an allocation failed (a real OOM:
 * the engine records the point as `oom`), PDBX_EFATAL when the device is unusable for the rest
 * of the process (cuda: a sticky error such as cudaErrorIllegalAddress; the engine ends the
 * point `error` and the run `failed` with the message, measuring nothing more), or -1 with a
 * one-line message in err (the point ends `error`, the sweep goes on with the next config).
 * Times are milliseconds of device time for one execution (cpu: CLOCK_MONOTONIC around the
 * call; cuda: CUDA events around the kernel(s) on the backend's one stream).
 */
#ifndef PDBX_BACKEND_H
#define PDBX_BACKEND_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "engine/plan/plan.h"
#include "store/ops.h"

#define PDBX_EOOM (-2)
#define PDBX_EFATAL (-3)
/* 2: compute ops gained span_begin/span_end (measured layer and step sums).
 * 3: compute ops gained mem_peak (the measured memory peak of a point).
 * 4: run_op takes the pass (fwd, bwd), point shapes the passes to prepare; device_noise.
 * 5: comm run takes a pdbx_coll_call; barrier is bounded.
 * 6: compute config gained fp32_math and gemm_api; point shapes gained fused_projections.
 * 7: pdbx_op_shape gained bias: the linear ops (and fused GEMMs) that add a bias.
 * 8: the ops gained attn_rope, attn_residual and mlp_residual (store/ops.h), which run_op runs
 *    in both passes: every pdbx_op after attn_v has a new value, so a backend built against 7
 *    would run the wrong kernel for an op number (and prepare sizes the rope table).
 * 9: compute ops gained attn_kv: attention with a KV cache (the inference phase's prefill and
 *    decode rows, spec kv_cache), which the training point's attn_core (q, k, v of the same
 *    T tokens, no cache) cannot time.
 * 10: op masks are 64 bits (pdbx_opmask, store/ops.h): pdbx_point_shapes.ops changed type.
 * 11: attn_qk_norm (qwen3's per-head q/k RMSNorm) after attn_v: every pdbx_op from attn_rope on
 *    has a new value; the buffer roles gained the q/k norm weights and their gradient.
 * 12: the MLA ops (attn_q_a .. attn_kv_b) and the mixture-of-experts ops (moe_*, ep_*): every
 *    pdbx_op from attn_k on has a new value; the all_to_all collective (pdbx_coll).
 * 13: pdbx_point_shapes gained moe_imbalance (the spec's moe_routing): a MoE point's measured
 *    assignment.
 * 14: pdbx_point_shapes gained ep (expert parallelism): a MoE point holds E / ep experts and
 *    runs them on the measured EP rank's received rows.
 * 15: the optimizer op (store/ops.h, after lm_head: fwd only, with a backward in the passes) and
 *    the planner's PDBX_BUF_OPT_* roles before PDBX_BUF_COMM (its value changed).
 * 16: the loss op (store/ops.h, after lm_head: every op after it has a new value) and the
 *    planner's PDBX_BUF_LOSS_STATS role (the roles after it have new values). */
#define PDBX_BACKEND_ABI 16

typedef struct pdbx_compute pdbx_compute;   /* backend-defined */
typedef struct pdbx_comm pdbx_comm;
typedef struct pdbx_group pdbx_group;

typedef struct {
    /* rank on this node and the ranks on it: local_rank picks the device; cuda refuses
     * local_size > the node's GPUs (ranks must not share a device) */
    int local_rank, local_size;
    int world_rank, world_size;
    int blas_threads;             /* cpu: threads for BLAS and own kernels */
    pdbx_dtype dtype;
    int flush_l2;                 /* cuda: flush L2 before each timed execution */
    int flash_attention;          /* cuda: attn_core forward by the fused kernel (spec's
                                   * flash_attention; docs/cuda.md) */
    pdbx_fp32_math fp32_math;     /* fp32 GEMMs: ieee or tf32 (cpu: init refuses tf32) */
    pdbx_gemm_api gemm_api;       /* cuda: cublaslt or cublas (cpu: init refuses cublas) */
} pdbx_compute_config;

/* Everything a backend needs to allocate and run one point on one TP rank. */
typedef struct {
    pdbx_model model;
    int tp, mbs, seq_len;
    int layers;                   /* layers instantiated (spec->layers_profiled) */
    pdbx_opmask ops;              /* PDBX_OP_BIT mask to prepare */
    uint32_t passes;              /* PDBX_PASS_BIT mask: bwd adds the gradient buffers */
    /* from pdbx_op_shape_for(); shape[op].bias: linear op `op` adds a bias vector of its n
     * (prepare allocates one per layer, filled with real values; run_op adds it to the GEMM's
     * output within the timed forward, and its bwd adds the bias gradient, the fp32 column sum
     * of dY, to its wgrad). With fused_projections the fused GEMM has a bias when its leader's
     * shape has (a group's ops share the flag): n = the fused n. */
    pdbx_op_shape shape[PDBX_OP_COUNT];
    /* 1: run_op(attn_q) runs the fused QKV GEMM (n = shape q.n + k.n + v.n) and run_op(mlp_gate)
     * the fused fc1 GEMM (n = gate.n + up.n), forward and backward (dgrad and wgrad of the fused
     * weight); attn_k, attn_v and mlp_up are then not run (the engine attributes the fused time
     * to them by FLOP share). prepare allocates the fused weights and outputs
     * (pdbx_fused_shape_for, profile memory's PDBX_BUF_*_FUSED). */
    int fused_projections;
    /* the spec's moe_routing (1: balanced): the backend runs a MoE layer's permute, experts and
     * unpermute on plan_moe.h's assignment at this imbalance (docs/engine-layers.md) */
    double moe_imbalance;
    /* the config's expert-parallel degree (1: none): the backend holds E / ep experts and runs
     * them on the measured EP rank's received rows (plan_moe.h, pdbx_moe_rank_load), permute and
     * unpermute on the rank's own R x top_k copies; shape[] is pdbx_op_shape_ep's at this ep.
     * The all-to-alls (ep_dispatch, ep_combine) are the engine's, on the comm backend. */
    int ep;
} pdbx_point_shapes;

/* The spans the engine measures as a whole (store/profiledb.h, pdbx_point's layer and total):
 * one layer's forward (its ops and TP all-reduces back to back) and one step's forward (embed,
 * every profiled layer, final_norm, lm_head). A layer span nests inside a step span. */
typedef enum { PDBX_SPAN_STEP = 0, PDBX_SPAN_LAYER, PDBX_SPAN_COUNT } pdbx_span;

/* For the backends' span functions: 1 when s names a span, else 0 with a message. */
static inline int pdbx_span_valid(const char *backend, pdbx_span s, char *err, size_t errlen)
{
    if ((int)s >= 0 && s < PDBX_SPAN_COUNT)
        return 1;
    snprintf(err, errlen, "%s span: unknown span %d", backend, (int)s);
    return 0;
}

/* The device's state at one instant (device_noise): what can make a measurement noisy. */
typedef struct {
    double sm_clock_mhz, temp_c;
    uint64_t throttle_reasons;    /* NVML clocks-event reason bits (0: none) */
} pdbx_device_noise;

/* One execution of attention with a KV cache (attn_kv): `batch` sequences, each with q_len
 * query tokens attending causally to the kv_len keys of its cache, the last q_len of which are
 * the queries' own (query i sees keys 0 .. kv_len - q_len + i): prefill of a chunk C after a
 * cached prefix P is q_len C, kv_len P + C; decode is q_len 1, kv_len K. Heads are one TP
 * rank's: heads query heads, kv_heads kv heads (heads a multiple of kv_heads, grouped-query
 * attention read in place), head_dim d. */
typedef struct {
    int batch, q_len, kv_len, heads, kv_heads, head_dim;
} pdbx_attn_kv_shape;

typedef struct {
    const char *name;                                         /* "cpu", "cuda" */
    int (*init)(const pdbx_compute_config *cfg, pdbx_compute **out, char *err, size_t errlen);
    void (*fini)(pdbx_compute *c);
    const char *(*device_name)(pdbx_compute *c);
    /* The device this rank measures on (rank placement in run_start): its index among the
     * node's devices and its UUID ("GPU-...", "" when the backend has none); cpu: -1, "". */
    void (*device_id)(pdbx_compute *c, int *index, char *uuid, size_t len);
    /* Adds what describes the device and libraries to env (device, memory, SMs, clocks,
     * driver/runtime versions, BLAS and its threads ...). */
    int (*describe)(pdbx_compute *c, cJSON *env);
    int (*mem_info)(pdbx_compute *c, uint64_t *free_bytes, uint64_t *total_bytes);
    /* Allocates and fills (real values) weights and activations for one point. */
    int (*prepare)(pdbx_compute *c, const pdbx_point_shapes *p, char *err, size_t errlen);
    void (*release)(pdbx_compute *c);
    /* Runs pass `pass` of op on layer (0..layers-1; ignored for once-per-step ops) and times
     * it. bwd (only when prepare() was given PDBX_PASS_BIT(PDBX_PASS_BWD)) is the op's whole
     * backward: a GEMM's dgrad and wgrad, the norm's, activation's and attention core's input
     * (and weight) gradients, the embedding's gradient scatter-add. Repeated calls of the same
     * op are independent executions (the adaptive loop repeats one op). Comm ops
     * (PDBX_OP_TP_ALLREDUCE_*) are not run here: the engine times them with the comm backend
     * on comm_buffer(). */
    int (*run_op)(pdbx_compute *c, pdbx_op op, pdbx_pass pass, int layer, double *ms,
                  char *err, size_t errlen);
    /* A device buffer of at least `bytes` for collectives (reused while large enough; PDBX_EOOM
     * if it fails). bytes 0 frees it (*buf = NULL, returns 0): the engine calls that after
     * each parallel config and after the collectives sweep, so no comm buffer outlives the
     * config it was sized for (its memory would count against the next config's points). */
    int (*comm_buffer)(pdbx_compute *c, size_t bytes, void **buf, char *err, size_t errlen);
    /* Brackets span s: begin before its first op, end after its last; end gives its wall time
     * in ms on the clock the ops use (cpu: CLOCK_MONOTONIC at both boundaries; cuda: events
     * recorded on the backend's stream at both boundaries, end waits for its event). */
    int (*span_begin)(pdbx_compute *c, pdbx_span s, char *err, size_t errlen);
    int (*span_end)(pdbx_compute *c, pdbx_span s, double *ms, char *err, size_t errlen);
    /* Folds the outputs into one number so no work can be optimised away. */
    double (*checksum)(pdbx_compute *c);
    /* The memory this rank used for the prepared point at its highest since prepare() began,
     * in bytes, and the baseline it is counted above (cpu: the RSS high-water mark above the
     * rank's RSS before the point, the weights kept from the previous point counted in, so
     * the figure is the point's own and compares with its profile memory). 0, or -1 when the
     * backend does not measure it. */
    int (*mem_peak)(pdbx_compute *c, double *peak_bytes, double *base_bytes);
    /* Samples the device's clock, temperature and throttle reasons now (cuda: NVML, loaded at
     * run time). 0 with *out, or -1 when the backend cannot (cpu; no NVML). */
    int (*device_noise)(pdbx_compute *c, pdbx_device_noise *out);
    /* Times one execution of attention with a KV cache of shape s in *ms. The query, the
     * cache and the output are the backend's own buffers, allocated and filled with real
     * values (untimed) when s differs from the previous call's, kept until release() or fini;
     * the run's dtype. Independent of prepare(): the engine calls it with no point prepared.
     * A backend without it returns -1 with "not implemented" (the planner refuses kv_cache for
     * such a backend before anything runs). */
    int (*attn_kv)(pdbx_compute *c, const pdbx_attn_kv_shape *s, double *ms, char *err,
                   size_t errlen);
} pdbx_compute_ops;

/* The table of a compute implementation whose functions are named P_init, P_fini, ... P_checksum
 * (every slot above). The slot list is spelled here once: a slot added to the interface is a
 * compile error in each implementation that lacks it, never a NULL call at run time. */
#define PDBX_COMPUTE_OPS(NAME, P) {                                                           \
        .name = NAME, .init = P##_init, .fini = P##_fini, .device_name = P##_device_name,     \
        .device_id = P##_device_id,                                                           \
        .describe = P##_describe, .mem_info = P##_mem_info, .prepare = P##_prepare,           \
        .release = P##_release, .run_op = P##_run_op, .comm_buffer = P##_comm_buffer,         \
        .span_begin = P##_span_begin, .span_end = P##_span_end, .checksum = P##_checksum,     \
        .mem_peak = P##_mem_peak, .device_noise = P##_device_noise,                           \
        .attn_kv = P##_attn_kv,                                                               \
    }

typedef enum {
    PDBX_COLL_ALL_REDUCE = 0, PDBX_COLL_ALL_GATHER, PDBX_COLL_REDUCE_SCATTER, PDBX_COLL_SEND_RECV,
    PDBX_COLL_ALL_TO_ALL,     /* expert parallelism's dispatch and combine */
    PDBX_COLL_COUNT
} pdbx_coll;
const char *pdbx_coll_name(pdbx_coll c);
/* nccl-tests bus bandwidth factor for n ranks: all_reduce 2(n-1)/n; all_gather,
 * reduce_scatter, all_to_all (n-1)/n; send_recv 1. */
double pdbx_coll_busbw_factor(pdbx_coll c, int n);

/* One timed collective (pdbx_comm_ops.run). */
typedef struct {
    pdbx_coll coll;
    /* Element type: the run's dtype, except fp32 for the DP gradient all-reduce (Megatron
     * reduces bf16 gradients in fp32: grad_reduce_in_fp32). */
    pdbx_dtype dtype;
    size_t bytes;       /* S as nccl-tests defines it (all_gather: the gathered output) */
    int iters;          /* >= 1 executions back to back, timed as one span */
    /* all_gather / reduce_scatter: the output is a separate region (buf holds S bytes of
     * input/output, then the other side); 0: in place, as Megatron's TP/SP buffers.
     * all_to_all is always out of place: S bytes sent (block k, S / n bytes, to group rank k)
     * at buf, S received at buf + S (nccl-tests' alltoall). */
    int out_of_place;
} pdbx_coll_call;

/* A communicator group (TP, PP, DP, or a collectives-sweep group) as the engine built it. */
typedef struct {
    int group_rank, group_size;
    int world_rank, world_size;
    void *mpi_comm;               /* MPI_Comm * for the mpi backend; opaque to others */
    /* Broadcasts len bytes from group rank `root` to the group (engine-provided, over MPI). */
    int (*bcast)(void *buf, size_t len, int root, void *bcast_ctx);
    void *bcast_ctx;
} pdbx_group_desc;

typedef struct {
    const char *name;                                         /* "mpi", "nccl" */
    int (*init)(pdbx_compute *compute, pdbx_comm **out, char *err, size_t errlen);
    void (*fini)(pdbx_comm *m);
    const char *(*version)(pdbx_comm *m);                     /* "Open MPI v4.1.4", "NCCL 2.27.3" */
    int (*group_create)(pdbx_comm *m, const pdbx_group_desc *desc, pdbx_group **out,
                        char *err, size_t errlen);
    void (*group_destroy)(pdbx_comm *m, pdbx_group *g);
    /* Times call->iters back-to-back executions of one collective on buf within group g and
     * gives the mean per execution in *ms (nccl-tests' protocol). send_recv: group ranks 2i
     * send to 2i+1 (peer = partner rank in the group). */
    int (*run)(pdbx_comm *m, pdbx_group *g, const pdbx_coll_call *call, void *buf, double *ms,
               char *err, size_t errlen);
    /* Returns once every member of g has arrived: 0, or -1 with the reason in err when the
     * group failed or timeout_s (> 0; 0: unbounded) passed first (a dead peer). */
    int (*barrier)(pdbx_comm *m, pdbx_group *g, double timeout_s, char *err, size_t errlen);
} pdbx_comm_ops;

/* The table of a comm implementation whose functions are named P_init ... P_barrier (as
 * PDBX_COMPUTE_OPS: the slot list lives here). */
#define PDBX_COMM_OPS(NAME, P) {                                                              \
        .name = NAME, .init = P##_init, .fini = P##_fini, .version = P##_version,             \
        .group_create = P##_group_create, .group_destroy = P##_group_destroy, .run = P##_run, \
        .barrier = P##_barrier,                                                               \
    }

typedef struct {
    int abi;                          /* PDBX_BACKEND_ABI */
    const pdbx_compute_ops *compute;
    const pdbx_comm_ops *comm;        /* NULL when the backend has no comm of its own */
    /* 1 when a usable device exists; else 0 with the reason (no driver, no device). */
    int (*probe)(char *why, size_t len);
} pdbx_backend_entry;

typedef const pdbx_backend_entry *(*pdbx_backend_entry_fn)(void);
#define PDBX_BACKEND_ENTRY_SYMBOL "pdbx_backend_entry_v1"

#endif
