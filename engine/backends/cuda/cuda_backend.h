/* cuda_backend.h: internals shared by the files of libpdbx_cuda.so (not a public header: the
 * engine sees only engine/backends/backend.h and the pdbx_backend_entry_v1 symbol).
 *
 * One pdbx_compute owns one device (local_rank % device count), ONE non-blocking stream on
 * which every op, copy and collective of this rank is enqueued, and the two CUDA events that
 * time them. The nccl comm backend (cuda_nccl.c) borrows the stream and events.
 */
#ifndef PDBX_CUDA_BACKEND_H
#define PDBX_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "engine/backends/backend.h"
#include "engine/backends/cuda/cuda_attention.h"
#include "engine/backends/cuda/cuda_gemm.h"
#include "engine/backends/cuda/cuda_moe_walk.h"
#include "engine/backends/cuda/cuda_try.h"

/* Seed of the deterministic fill of every buffer (points and the comm buffer). */
#define FILL_SEED UINT64_C(0x9d2c5680a1b2c3d4)

struct cuda_gemm;
struct cuda_point;
struct cuda_nvml;
struct cuda_kv;

struct pdbx_compute {
    int device, device_count;
    int local_rank, world_rank;
    pdbx_dtype dtype;
    int flush_l2;
    int flash_attention;            /* attn_core's forward by ck_flash_attention */
    char name[256];
    struct cudaDeviceProp prop;
    int clock_khz, mem_clock_khz;   /* peak SM and memory clocks (cudaDeviceGetAttribute) */
    cudaStream_t stream;
    cudaEvent_t ev_start, ev_stop;
    cudaEvent_t ev_span[PDBX_SPAN_COUNT][2];   /* begin, end of each span (cuda_timing.c) */
    void *l2_flush;                 /* flush_l2: memset before each timed execution */
    unsigned char l2_flush_value;   /* changes every flush so no write can be skipped */
    size_t l2_flush_bytes;
    long long spin_ns;              /* the busy kernel before every start event (launch gap) */
    double *checksum_dev;           /* one double for ck_accumulate_sum */
    void *comm_buf;
    size_t comm_bytes;
    struct cuda_gemm *gemm;
    struct cuda_point *point;       /* buffers of the prepared point, NULL when released */
    struct cuda_kv *kv;             /* attn_kv's buffers and plans (cuda_attn_kv.c), or NULL */
    /* device memory in use (cudaMemGetInfo: total - free) when the point's buffers were about
     * to be allocated; mem_base_ok 0 when it could not be read */
    double mem_base;
    int mem_base_ok;
    /* cuda_nvml.c: NVML and this device's handle, opened at the first device_noise (NULL
     * when NVML is missing or does not know the device; nvml_tried: do not try again) */
    struct cuda_nvml *nvml;
    int nvml_tried;
};

/* Dimensions of one point on one TP rank (design.md section 3). */
typedef struct {
    int64_t tokens, seq, mbs;       /* tokens = mbs * seq */
    int64_t hidden, head_dim;
    int64_t heads, kv_heads;        /* per rank; kv heads replicated (1) when TP > kv_heads */
    int64_t inter, vocab;           /* per rank: intermediate/TP, ceil(vocab/TP) */
    int64_t vocab_full, vstart;     /* full vocabulary; first row of this rank's shard */
    int layers, tied;
    /* compute ops prepared (comm bits dropped); with fused_projections the Q/K/V and gate/up
     * bits are replaced by CUDA_FUSED_QKV / CUDA_FUSED_FC1 (the fused GEMMs run for attn_q and
     * mlp_gate; cuda_op_prepared) */
    pdbx_opmask ops;
    /* the ops of `ops` whose GEMM adds a bias (pdbx_op_shape.bias; the fused bits when the
     * group's leader has one): their per-layer bias vectors, bias epilogues and, with bwd,
     * bias gradients */
    pdbx_opmask bias_ops;
    /* the model's kinds (plan_arch.h, docs/models.md), run as the cpu backend runs them; all
     * zero for a Llama, whose buffers and kernels they leave as they were */
    int layernorm;                  /* arch.norm LayerNorm: a bias per norm, each row's mean and
                                     * rstd kept by the forward for the backward; else RMSNorm */
    pdbx_activation act;            /* the MLP's: SiLU, GELU erf or tanh (cuda_arch.h) */
    int mlp_plain;                  /* act(up), no gate (gpt2, gpt-neox): no gate buffers */
    int parallel_residual;          /* post_attn_norm normalises the layer input x (gpt-neox) */
    int64_t rot;                    /* dims of each head attn_rope rotates (cuda_arch.h) */
    int64_t pos_rows;               /* learned positions: the table's rows (max_positions); 0 */
    /* the attention core's options (per profiled layer: cuda_layer_attn_opts) and lm_head's
     * final-logit cap, as the cpu backend runs them; 0 for a Llama */
    int64_t window;                 /* a sliding window shorter than seq (0: none or >= seq) */
    int window_alternating;         /* gemma-2: the window on even profiled layers only */
    float attn_softcap;             /* the scores' cap (the unfused path; needs B_LSE) */
    float final_softcap;            /* the logits' cap: lm_head's forward applies it, its
                                     * backward reads G_LOGITS through it into G_LOGITS_CAPPED */
    /* the attention variants of cuda_mla.h (0 for a Llama): qwen3's per-head q/k norm, and
     * DeepSeek's latent attention (mla.on: kv_heads = heads, head_dim = nope + rope, v's head
     * dim dv, rot = rope; rq 0 when q is projected at full rank by attn_q) */
    int qk_norm;
    struct {
        int on;
        int64_t rq, rkv, nope, rope, dv;
    } mla;
    cuda_moe_dims moe;              /* a MoE model's layer (cuda_moe.h); all zero when dense */
} cuda_dims;

/* v's (and the context's) head dim: MLA's v_head_dim, else head_dim. */
static inline int64_t cuda_v_dim(const cuda_dims *d)
{
    return d->mla.on ? d->mla.dv : d->head_dim;
}

/* Bits past the op bits in cuda_dims.ops: a fused group prepared (its buffers' "ops"). */
#define CUDA_FUSED_QKV (UINT64_C(1) << 62)
#define CUDA_FUSED_FC1 (UINT64_C(1) << 63)
/* Whether run_op may run op at the point of dims d: its bit, or the fused group it leads. */
int cuda_op_prepared(const cuda_dims *d, pdbx_op op);

/* A point's buffers (cuda_point.c allocates the forward's, cuda_backward.c the backward's;
 * cuda_bufs.h says which a point has and their sizes; engine/plan/plan_profile_memory_cuda.c
 * lists the same). */
enum {   /* one set per point, shared by all layers */
    B_IDS, B_EMBED, B_X, B_XN, B_Q, B_K, B_V, B_SCORES, B_CTX, B_ATTN_OUT, B_XN2, B_GATE, B_UP,
    B_ACT, B_XF, B_FINAL_W, B_LOGITS, B_LM_W, B_QKV, B_FC1,
    B_ROPE,   /* attn_rope: fp32 cos [seq, rot/2] then sin (ck_rope_table), not in the dtype */
    B_LSE,    /* fp32 [mbs, heads, seq]: flash_attention with bwd, the fused forward's log-sum-exp;
               * the unfused path with an attention cap, its capped rows' (the backward's cap
               * derivative reads it) */
    /* the dense families (cuda_bufs.c says when): the final LayerNorm's bias, the learned
     * position table [max_positions, h] (dtype), LayerNorm's per-row mean and rstd (fp32 [T],
     * written by every forward norm, read by the backward) */
    B_FINAL_B, B_POS, B_NORM_MEAN, B_NORM_RSTD,
    /* cuda_mla.h: qk_norm's q and k weights [2, head_dim]; MLA's q_a, q_norm, kv_a, kv_norm and
     * kv_b outputs and its q/kv norm weights [rq + rkv] (norm weights shared by the layers) */
    B_QK_NORM_W, B_MLA_QA, B_MLA_QAN, B_MLA_KVA, B_MLA_KVN, B_MLA_KVB, B_MLA_NORM_W,
    /* a MoE layer (cuda_moe.h): the router's logits, top-k ids (int32) and weights (fp32); the
     * assignment (int32), its offsets and positions (int64); the permuted rows, the experts'
     * gate, up, act and output; the shared experts' gate, up, act */
    B_MOE_LOGITS, B_MOE_TOPK_IDX, B_MOE_TOPK_W, B_MOE_ASSIGN, B_MOE_OFFSETS, B_MOE_POS, B_MOE_ROWS,
    B_MOE_GATE, B_MOE_UP, B_MOE_ACT, B_MOE_OUT, B_MOE_SH_GATE, B_MOE_SH_UP, B_MOE_SH_ACT,
    B_COUNT
};
enum {   /* one set per instantiated layer */
    W_IN_NORM, W_Q, W_K, W_V, W_O, W_POST_NORM, W_GATE, W_UP, W_DOWN, W_QKV, W_FC1,
    /* the projections' biases (dtype; where bias_ops has the op), rotated with the weights */
    W_BQ, W_BK, W_BV, W_BO, W_BGATE, W_BUP, W_BDOWN, W_BQKV, W_BFC1,
    W_IN_NORM_B, W_POST_NORM_B,   /* LayerNorm: the norms' biases (dtype), rotated as well */
    W_Q_A, W_Q_B, W_KV_A, W_KV_B,   /* MLA's projections (cuda_mla.h) */
    /* a MoE layer: the router [E, h], the local experts' gate, up [El, Ie, h] and down
     * [El, h, Ie], the shared experts' gate, up [Is, h] and down [h, Is] ([out, in] each) */
    W_MOE_ROUTER, W_MOE_GATE, W_MOE_UP, W_MOE_DOWN, W_MOE_SH_GATE, W_MOE_SH_UP, W_MOE_SH_DOWN,
    W_COUNT
};
enum {   /* passes with bwd: the gradient of each activation (dtype), RMSNorm's rstd (fp32) and
          * one set of weight gradients (fp32) shared by the layers */
    G_X, G_XN, G_Q, G_K, G_V, G_SCORES, G_CTX, G_ATTN_OUT, G_XN2, G_GATE, G_UP, G_ACT, G_XF,
    G_LOGITS, G_RSTD, G_EMBED, G_NORM_W, G_LM_W, G_WQ, G_WKV, G_WO, G_WGU, G_WD,
    G_QKV, G_FC1, G_WQKV, G_WFC1,   /* fused_projections: the fused GEMMs' dY and dW */
    /* the biases' fp32 gradients (where bias_ops has the op; k/v and gate/up share one) */
    G_BQ, G_BKV, G_BO, G_BGU, G_BD, G_BQKV, G_BFC1,
    /* flash_attention: the fused backward's delta (fp32 [mbs, heads, seq]) and, for bf16/fp16,
     * its fp32 dQ accumulator [tokens, heads, d] (fp32 accumulates into G_Q itself) */
    G_DELTA, G_DQ_ACC,
    /* LayerNorm: the norms' bias gradient (fp32 [h], shared as G_NORM_W); learned positions:
     * the table's gradient (fp32 [max_positions, h]) */
    G_NORM_B, G_POS,
    /* final-logit cap: d logits through the cap (dtype [T, vocab]), lm_head's dgrad/wgrad dY;
     * G_LOGITS, filled once, is never modified */
    G_LOGITS_CAPPED,
    /* cuda_mla.h: the MLA outputs' gradients (dtype), the q/k and MLA norm weights' and MLA
     * projections' gradients (fp32) */
    G_MLA_QA, G_MLA_QAN, G_MLA_KVA, G_MLA_KVN, G_MLA_KVB, G_QK_NORM_W, G_MLA_NORM_W,
    G_W_Q_A, G_W_Q_B, G_W_KV_A, G_W_KV_B,
    /* a MoE layer: its activations' gradients (the routing weights' fp32) and one set of fp32
     * weight gradients (the experts' and the shared experts' gate and up sharing one) */
    G_MOE_LOGITS, G_MOE_TOPK_W, G_MOE_ROWS, G_MOE_GATE, G_MOE_UP, G_MOE_ACT, G_MOE_OUT, G_MOE_SH_GATE,
    G_MOE_SH_UP, G_MOE_SH_ACT, G_MOE_WROUTER, G_MOE_WGU, G_MOE_WD, G_MOE_WSH_GU, G_MOE_WSH_D,
    G_COUNT
};

struct cuda_point {
    cuda_dims d;
    void *buf[B_COUNT];
    size_t bytes[B_COUNT];
    /* [wcopies][layers][W_COUNT]: the profiled layers' weights in wcopies copies (total >= 3x
     * L2, pdbx_cuda_weight_copies), rotated per execution (cuda_layer_weights) */
    void **w;
    int wcopies;
    unsigned *wnext;                /* [layers][PDBX_OP_COUNT]: executions so far */
    size_t wbytes[W_COUNT];
    cuda_gemm_plan *plan[PDBX_OP_COUNT];
    cuda_attention attn;
    int bwd;                        /* prepared with bwd: the fields below are set */
    void *grad[G_COUNT];
    size_t gbytes[G_COUNT];
    cuda_gemm_plan *dgrad[PDBX_OP_COUNT], *wgrad[PDBX_OP_COUNT];
    struct cuda_moe *moe;           /* a MoE layer's assignment and plans (cuda_moe.c), or NULL */
};

/* The weights (W_COUNT slots) op runs with on `layer` in this execution: the copies in turn,
 * one per execution of op on that layer, so consecutive steps read different copies. */
void **cuda_layer_weights(struct cuda_point *pt, pdbx_op op, int layer);

/* The linear ops of a point on one TP rank, as F.linear GEMMs [T, k] x [k, n]: attn_q/k/v/o,
 * mlp_gate/up/down, lm_head, and with MLA attn_q_a, q_b, kv_a, kv_b. Writes them to out
 * (CUDA_LINEAR_OPS entries), returns the count (MLA's four only for an MLA model).
 * One table for the dims check, the forward plans and the dgrad/wgrad plans. */
#define CUDA_LINEAR_OPS 12   /* and MLA's q_a, q_b, kv_a, kv_b */
typedef struct {
    pdbx_op op;
    int64_t n, k;
} cuda_linear_op;
int cuda_linear_ops(const cuda_dims *d, cuda_linear_op out[CUDA_LINEAR_OPS]);
/* The GEMMs a prepared point runs, for the plans of both passes: each prepared linear op, and
 * each fused group prepared (fused_projections) in its leader's slot (attn_q: n = q + k + v;
 * mlp_gate: n = gate + up; k = hidden); bias: the GEMM adds one (bias_ops). Returns the count. */
typedef struct {
    pdbx_op op;
    int64_t n, k;
    int bias;
} cuda_point_gemm;
#define CUDA_POINT_GEMMS (CUDA_LINEAR_OPS + 2)
int cuda_point_gemms(const cuda_dims *d, cuda_point_gemm out[CUDA_POINT_GEMMS]);

/* The attention core's options of profiled layer `layer` at d (pdbx_attn_opts_for_layer of
 * the planner written again, as cuda_arch.h's: the window on every layer, or gemma-2's on even
 * layers only; the scores' cap; v_dim: MLA's dv, else 0, head_dim). Pure. */
cuda_attention_opts cuda_layer_attn_opts(const cuda_dims *d, int layer);
/* The point's attention (pt->attn, planned once: its GEMMs do not depend on the window or the
 * cap) with layer `layer`'s options, for one forward or backward of that layer. */
cuda_attention cuda_point_attn(const struct cuda_point *pt, int layer);

/* cuda_point.c: backend.h's prepare, checksum and mem_peak of the cuda backend. */
int cuda_prepare(pdbx_compute *c, const pdbx_point_shapes *p, char *err, size_t errlen);
double cuda_checksum(pdbx_compute *c);
int cuda_mem_peak(pdbx_compute *c, double *peak_bytes, double *base_bytes);

/* cuda_attn_kv.c: backend.h's attn_kv, and the free of its buffers (release, fini). */
int cuda_attn_kv(pdbx_compute *c, const pdbx_attn_kv_shape *s, double *ms, char *err,
                 size_t errlen);
void cuda_kv_free(pdbx_compute *c);

/* cuda_backward.c: allocates, fills and plans the backward of prepared point pt (its gradient
 * buffers, the dgrad/wgrad GEMM plans, the attention backward's plan), and enqueues the bwd
 * pass of op on the stream (run_op times it between the same events as the forward). */
int cuda_bwd_prepare(pdbx_compute *c, struct cuda_point *pt, char *err, size_t errlen);
int cuda_bwd_enqueue(pdbx_compute *c, pdbx_op op, int layer, char *err, size_t errlen);
/* A linear op's backward (cuda_backward.c): dX = dY W, dW += dY^T X (fp32) and, db not NULL,
 * db += the column sums of dY, with op's dgrad/wgrad plans. */
int cuda_linear_bwd(pdbx_compute *c, pdbx_op op, const void *x, const void *w, const void *dy,
                    void *dx, void *dw, void *db, char *err, size_t errlen);

/* Derives cuda_dims from the model, TP, MBS and seq_len of p (the TP rank is world_rank % tp:
 * Megatron's order, TP fastest) and checks them against the planner's GEMM shapes in p->shape
 * (where set, for prepared ops): -1 with a message naming the op and both shapes when they
 * disagree. Pure: no CUDA calls. */
int cuda_point_dims(const pdbx_point_shapes *p, int world_rank, cuda_dims *d, char *err,
                    size_t errlen);

/* "call failed: cudaErrorXxx (text)" into err; returns PDBX_EFATAL for a sticky error
 * (cuda_checks.h: the context is unusable, the run ends failed), PDBX_EOOM for
 * cudaErrorMemoryAllocation, else -1. Clears a non-sticky last error. */
int cuda_fail(char *err, size_t errlen, const char *call, cudaError_t e);

/* Calls a CUDA runtime function; on failure sets rc (cuda_fail) and jumps to the caller's
 * `fail:` label (needs `rc`, `err`, `errlen` in scope). */
#define CU_TRY(name, expr) \
    CUDA_TRY_STATUS(cudaError_t, cudaSuccess, expr, cuda_fail(err, errlen, (name), s_))

/* Records the start event, for the caller to enqueue its work: after the L2 flush (flush_l2)
 * and then, always, the spin (the flush alone would leave the host's launch gaps timed). */
int cuda_timer_start(pdbx_compute *c, char *err, size_t errlen);
/* Enqueues the spin (ck_spin_ns) of spin_ns plus CUDA_LAUNCH_NS per launch the caller will
 * enqueue behind it (capped at CUDA_SPIN_MAX_NS), so the GPU waits for none of them. */
#define CUDA_LAUNCH_NS 20000LL
#define CUDA_SPIN_MAX_NS 10000000LL
int cuda_timer_spin(pdbx_compute *c, int launches, char *err, size_t errlen);
/* Records the stop event, waits for it and returns the elapsed device time in ms. */
int cuda_timer_stop(pdbx_compute *c, double *ms, char *err, size_t errlen);

/* backend.h's span_begin/span_end: events recorded on the stream at the span's boundaries. */
int cuda_span_begin(pdbx_compute *c, pdbx_span s, char *err, size_t errlen);
int cuda_span_end(pdbx_compute *c, pdbx_span s, double *ms, char *err, size_t errlen);

/* cuda_device.c: the compute ops that concern the device rather than a point, and the probe. */
int cuda_init(const pdbx_compute_config *cfg, pdbx_compute **out, char *err, size_t errlen);
void cuda_fini(pdbx_compute *c);
const char *cuda_device_name(pdbx_compute *c);
void cuda_device_id(pdbx_compute *c, int *index, char *uuid, size_t len);
int cuda_mem_info(pdbx_compute *c, uint64_t *free_bytes, uint64_t *total_bytes);
/* cuda_nvml.c: backend.h's device_noise (NVML loaded at run time; -1 without it), and the
 * close of what it opened (cuda_fini). */
int cuda_device_noise(pdbx_compute *c, pdbx_device_noise *out);
void cuda_nvml_close(pdbx_compute *c);
int cuda_describe(pdbx_compute *c, cJSON *env);
int cuda_comm_buffer(pdbx_compute *c, size_t bytes, void **buf, char *err, size_t errlen);
int cuda_probe(char *why, size_t len);
/* cuda_point.c: frees the prepared point's buffers and attn_kv's; cudaMalloc with a message
 * naming the buffer (PDBX_EOOM on cudaErrorMemoryAllocation). */
void cuda_release(pdbx_compute *c);
/* cuda_device.c: cudaFree(p) when p was allocated. NULL is skipped, not passed on: cudaFree(NULL)
 * would create a context on a device that init may have given up on. */
void cuda_dev_free(void *p);
int cuda_alloc_buf(void **p, size_t bytes, const char *name, char *err, size_t errlen);

extern const pdbx_comm_ops cuda_nccl_comm_ops;   /* cuda_nccl.c */
/* "NCCL 2.28.9" from ncclGetVersion() (the loaded library, not the header). */
void cuda_nccl_version(char *buf, size_t len);

#endif
