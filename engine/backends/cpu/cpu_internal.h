/* cpu_internal.h: the cpu backend's state, shared by its files (not a public header: the
 * engine sees only backend.h and pdbx_cpu_compute_ops).
 *
 * cpu_compute.c: init, fini, describe, run_op, spans, comm buffer, checksum;
 * cpu_threads.c: the thread pool of the own kernels and the fills (cpu_threads.h);
 * cpu_memory.c:  prepare and release (memory guard, allocation of the planner's list of
 *                buffers, real values in every buffer; the weights kept across a config's MBS
 *                sweep, cpu_compute.h) and the measured memory peak of a point;
 * cpu_backward.c: the bwd pass of every op (dgrad/wgrad GEMMs, cpu_kernels_bwd.h) and its
 *                buffers' roles and values;
 * cpu_mla.c, cpu_mla_bwd.c: multi-head latent attention's ops (DeepSeek), both passes, and
 *                their buffers (cpu_mla).
 */
#ifndef PDBX_CPU_INTERNAL_H
#define PDBX_CPU_INTERNAL_H

#include <cblas.h>
#include <stdint.h>

#include "engine/backends/backend.h"
#include "engine/backends/cpu/cpu_kernels_attn.h"
#include "engine/backends/cpu/cpu_kernels_mla.h"
#include "engine/backends/cpu/cpu_threads.h"

#define MAX_LAYERS 256
/* every listed buffer of a point: the global ones (with a MoE layer's and their gradients,
 * about 100) and at most 16 weights per layer (a MoE layer's 7 with the attention's and its
 * biases) */
#define MAX_BUFS (128 + 16 * MAX_LAYERS)

typedef void (*sbgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint,
                          blasint, blasint, float, const bfloat16 *, blasint, const bfloat16 *,
                          blasint, float, float *, blasint);

typedef struct {
    void *wq, *wk, *wv, *wo, *wg, *wu, *wd;   /* fp32 or bf16, [k, n] row-major */
    void *wqkv, *wfc1;                        /* fused_projections: [h, qd + 2 kvd], [h, 2 I] */
    /* biases (pdbx_op_shape.bias; NULL where the projection has none): fp32 vectors of the
     * GEMM's n, added to its fp32 output */
    float *bq, *bk, *bv, *bo, *bg, *bu, *bd, *bqkv, *bfc1;
    void *wqa, *wqb, *wkva, *wkvb;            /* MLA: q_a, q_b, kv_a, kv_b (cpu_mla) */
    /* a MoE layer's (fp32; NULL in a dense layer): router [h, E], experts' gate/up [E, h, I_e]
     * and down [E, I_e, h], shared experts' gate/up [h, I_s] and down [I_s, h] */
    float *wr, *weg, *weu, *wed, *wsg, *wsu, *wsd;
} cpu_layer;

/* The MoE layers' activations (one set shared by them, as the dense layers' are), with bwd
 * their gradients and one set of weight gradients (cpu_moe.c, cpu_moe_bwd.c; plan.h's
 * PDBX_BUF_MOE_* roles). All fp32. NULL when the model has no MoE layer. */
typedef struct {
    float *logits, *tw, *rows, *eg, *eu, *ea, *eo, *sg, *su, *sa;
    int32_t *tidx;               /* the router's own top-k (its backward reads it) */
    int32_t *assign;             /* the measured token -> expert map (pdbx_moe_assign) */
    int64_t *offsets, *pos;      /* the permute's (pdbx_k_moe_route_index of assign) */
    int64_t *eoff;               /* the local experts' [El + 1] offsets into the received rows:
                                  * offsets itself at EP 1, after its E + 1 at EP > 1 */
    float *dlogits, *dtw, *drows, *deg, *deu, *dea, *deo, *dsg, *dsu, *dsa;
    float *dwr, *dwe_gu, *dwe_d, *dws_gu, *dws_d;
    int64_t R, X, E, k, Ie, Is;  /* rows, copies, experts, top_k, expert width, shared width/TP */
    int64_t ep, El, Xr, M;       /* EP degree, local experts E / ep, the rows they receive
                                  * (plan_moe.h's measured rank; X at EP 1), max(X, Xr): the
                                  * permuted rows' and the experts' output's rows */
    int router_sigmoid, norm_topk;
    float scale;
    int act;                     /* pdbx_moe_act */
} cpu_moe;

/* Multi-head latent attention's state (cpu_mla.c; all NULL and on 0 for another model): its
 * dims, its activations (fp32: q_a's output and its norm's [T, rq], kv_a's [T, rkv + rope],
 * kv_norm's [T, rkv], kv_b's [T, H, nope + dv]), the two norms' weights [rq + rkv] (q_a's
 * first; shared by the layers, as norm_w), and with bwd the gradients of each and the four
 * projections' fp32 weight gradients (one set, as the other weights'). q, k, v and the context
 * are the common buffers at MLA's widths (k [T, H, nope + rope], v and ctx [T, H, dv]). */
typedef struct {
    int on;
    int64_t rq;                  /* q_lora_rank (0: q through attn_q at full rank) */
    pdbx_mla_dims dims;
    float *qa, *qan, *kva, *kvn, *kvb, *norm_w;
    float *dqa, *dqan, *dkva, *dkvn, *dkvb, *dnorm_w, *dwqa, *dwqb, *dwkva, *dwkvb;
} cpu_mla;

/* The backward pass's buffers (allocated only when the point's passes include bwd; the
 * planner's list, plan_profile_memory.c, cpu_grad_list): d<activation> is the gradient of that
 * activation in fp32; the *_b copies hold the GEMM dtype (bf16) of the output gradients a bf16
 * dgrad/wgrad reads (NULL in fp32); dw* are the fp32 weight gradients, one set for all layers. */
typedef struct {
    float *dx, *dxn, *dq, *dk, *dv, *dctx, *dy, *dyn, *dg, *du, *dact, *dlogits, *scratch;
    void *dx_b, *dq_b, *dk_b, *dv_b, *dy_b, *dg_b, *du_b, *dlogits_b;
    void *dlogits_capped;        /* final-logit cap: d logits through the cap (GEMM dtype) */
    float *demb, *dnorm_w, *dwlm, *dwq, *dwkv, *dwo, *dwgu, *dwd;
    void *dqkv, *dfc1;           /* fused_projections: the fused GEMMs' dY (GEMM dtype) */
    float *dwqkv, *dwfc1;        /* and their weights' fp32 gradients */
    /* the biases' fp32 gradients (NULL where no bias): one set, k/v and gate/up sharing */
    float *dbq, *dbkv, *dbo, *dbgu, *dbd, *dbqkv, *dbfc1;
    float *dnorm_b;              /* LayerNorm: the norms' shared bias gradient */
    float *dpos;                 /* learned positions: the table's gradient [max_positions, h] */
    float *dqk_norm_w;           /* qk_norm: the q and k norm weights' gradient [2, d] */
    float *loss_stats;           /* the loss op: per row max, sum of exponentials, target logit
                                  * (cpu_kernels_loss.h), the forward's for the backward */
} cpu_grads;

/* The optimizer op's flat arrays (cpu_optimizer.c; plan.h's PDBX_BUF_OPT_*; NULL without the
 * op): fp32 master weights, m, v (kept with the weights), main gradient (a point's), the
 * gradient buffer zeroed for the next iteration, the bf16 model copy of a bf16 run; n
 * parameters; the step count AdamW's bias correction reads. */
typedef struct {
    float *master, *m, *v, *grad, *grad_zeroed;
    uint16_t *model_lp;
    int64_t n;
    int step;
} cpu_opt;

struct pdbx_compute {
    pdbx_compute_config cfg;
    char device[256];
    int prepared;
    pdbx_point_shapes p;
    size_t esz;                  /* bytes per weight/GEMM-input element: 4 fp32, 2 bf16 */
    int64_t T, h, qd, kvd, inter, vloc, heads, kv_heads, d;
    int64_t dvh, vd, ctxd;       /* v's head dim (d but MLA's), v's and the context's widths */
    /* activations of the point (freed by release()) and weights (kept while the next point has
     * the same weight shapes: a config's MBS sweep allocates and fills them once) */
    void *bufs[MAX_BUFS];
    int nbufs;
    void *wbufs[MAX_BUFS];
    int nw;
    int have_weights;
    int64_t wkey[12];
    size_t planned;              /* bytes the next prepare() allocates */
    pdbx_profile_memory mem;     /* the planner's list of the point's buffers (allocated as listed) */
    double rss_base;             /* RSS before the point, kept weights not counted (mem_peak) */
    double shadow_base;          /* ASan's resident shadow then (host.h; 0 without ASan) */
    int rss_measured;            /* 1 when the peak since prepare() can be read */
    int32_t *ids;
    void *emb_table, *emb_out;
    float *norm_w, *x, *xn, *q, *k, *v, *ctx, *y, *yn, *g, *u, *act, *logits, *attn_scratch;
    float *qkv, *fc1;            /* fused_projections: the fused GEMMs' outputs (fp32) */
    float *rope;                 /* attn_rope: cos [seq_len, rot/2] then sin (fp32; NULL without) */
    int64_t rot;                 /* the dims of each head RoPE rotates (pdbx_rotary_dims) */
    /* the dense families (arch.norm, arch.position; NULL for a Llama): LayerNorm's bias shared
     * by the norms as norm_w is, each row's mean and rstd written by the forward for the
     * backward; learned positions' table [max_positions, h] */
    float *norm_b, *norm_mean, *norm_rstd, *pos;
    float *qk_norm_w;            /* qk_norm (qwen3): q's then k's per-head RMSNorm weight [2, d] */
    void *xn_b, *ctx_b, *yn_b, *act_b;        /* bf16 GEMM inputs (NULL in fp32) */
    void *wlm;
    cpu_layer layer[MAX_LAYERS];
    int nlayers;
    void *comm_buf;
    size_t comm_bytes;
    sbgemm_fn sbgemm;
    cpu_grads grad;              /* bwd buffers (cpu_backward.c); all NULL without bwd */
    cpu_moe moe;                 /* MoE layers' buffers (cpu_moe.c); NULL for a dense model */
    pdbx_cpu_pool *pool;         /* the own kernels' threads (cfg.blas_threads; NULL: one) */
    double span_t0[PDBX_SPAN_COUNT];   /* pdbx_mono_s() in ms at each span's begin */
    /* attn_kv's buffers (cpu_attn_kv.c): fp32 q, k/v cache, output and scores scratch for
     * kv_shape; freed by release() */
    float *kv_q, *kv_k, *kv_v, *kv_out, *kv_scratch;
    pdbx_attn_kv_shape kv_shape;
    cpu_mla mla;
    cpu_opt opt;
};

/* cblas_sbgemm of this process's OpenBLAS, NULL when it has none (looked up once). */
sbgemm_fn pdbx_cpu_find_sbgemm(void);
/* backend.h's prepare and release; free_weights drops the kept weights too. */
int cpu_prepare(pdbx_compute *c, const pdbx_point_shapes *p, char *err, size_t errlen);
void cpu_release(pdbx_compute *c);
void pdbx_cpu_free_weights(pdbx_compute *c);
int cpu_mem_peak(pdbx_compute *c, double *peak_bytes, double *base_bytes);
/* cpu_attn_kv.c: backend.h's attn_kv, and the release of its buffers. */
int cpu_attn_kv(pdbx_compute *c, const pdbx_attn_kv_shape *s, double *ms, char *err, size_t errlen);
void pdbx_cpu_free_kv(pdbx_compute *c);
/* cpu_backward.c: where a gradient role of the planner's list lives (NULL for other roles);
 * real values in the gradient buffers after allocation (returns the next seed); the timed
 * body of run_op's bwd pass of op (0, or -1 with a message). */
void **pdbx_cpu_grad_slot(pdbx_compute *c, pdbx_buf_role r);
uint64_t pdbx_cpu_fill_grads(pdbx_compute *c, uint64_t seed);
int pdbx_cpu_run_bwd(pdbx_compute *c, pdbx_op op, int layer, char *err, size_t errlen);
/* cpu_memory.c's fills, for the other files' buffers: real values in [-scale, scale] (a block
 * generated, then tiled over the pool), or zeros. */
void pdbx_cpu_fill_f32(pdbx_compute *c, float *x, size_t n, float scale, uint64_t seed);
void pdbx_cpu_fill_zero(pdbx_compute *c, void *x, size_t bytes);
/* cpu_moe.c: the MoE dims of the point (before allocation); where a MoE role of the planner's
 * list lives (layer: the index among the listed copies, the profiled MoE layers in order; NULL
 * for other roles); after allocation, real values in its buffers, the measured assignment and
 * (new_weights) its weights: 0, or -1 with a message; the pointers dropped at release; run_op's
 * forward of a MoE op on layer (1 when op is not one). */
void pdbx_cpu_moe_dims(pdbx_compute *c);
void **pdbx_cpu_moe_slot(pdbx_compute *c, pdbx_buf_role r, int layer);
int pdbx_cpu_moe_fill(pdbx_compute *c, int new_weights, uint64_t seed, char *err, size_t errlen);
void pdbx_cpu_moe_release(pdbx_compute *c);
int pdbx_cpu_moe_fwd(pdbx_compute *c, pdbx_op op, int layer);
/* cpu_moe_bwd.c: run_op's backward of a MoE op on layer (1 when op is not one). */
int pdbx_cpu_moe_bwd(pdbx_compute *c, pdbx_op op, int layer);
/* cpu_compute.c: the attention core's options of profiled layer `layer` (its sliding window
 * and score cap, pdbx_attn_opts_for_layer), the same in the forward and the backward. */
pdbx_attn_opts pdbx_cpu_attn_opts(const pdbx_compute *c, int layer);
/* The GEMMs of the forward (C[m,n] = A[m,k] B[k,n], cpu_compute.c) and of the backward
 * (dgrad dX = dY W^T, wgrad dW += X^T dY; cpu_backward.c), for the ops of other files. */
void pdbx_cpu_gemm(pdbx_compute *c, const void *a, const void *b, float *out, int64_t m, int64_t n,
                   int64_t k);
void pdbx_cpu_linear_bwd(pdbx_compute *c, const void *x, const void *w, const void *dy, float *dx,
                         float *dw, int64_t m, int64_t n, int64_t k);
/* cpu_mla.c: MLA's dims from the point (and its refusals: fp32 only, no fused projections;
 * 0 or -1 with a message); where an MLA role lives (NULL for other roles); its buffers'
 * pointers dropped (weights too when weights); real values in them after allocation (weights
 * when new_weights; returns the next seed); whether run_op's pass of op is MLA's (its own ops,
 * and attn_rope of an MLA model), and that pass's timed body (cpu_mla_bwd.c for bwd). */
int pdbx_cpu_mla_dims(pdbx_compute *c, char *err, size_t errlen);
void **pdbx_cpu_mla_slot(pdbx_compute *c, pdbx_buf_role r, int layer);
void pdbx_cpu_mla_forget(pdbx_compute *c, int weights);
uint64_t pdbx_cpu_mla_fill(pdbx_compute *c, uint64_t seed, int new_weights);
int pdbx_cpu_mla_runs(const pdbx_compute *c, pdbx_op op);
void pdbx_cpu_mla_fwd(pdbx_compute *c, pdbx_op op, int layer);
void pdbx_cpu_mla_bwd(pdbx_compute *c, pdbx_op op, int layer);
/* cpu_optimizer.c: where an optimizer role lives (NULL for other roles); its pointers dropped
 * (master, m, v and the 16-bit copy too when weights); real values after allocation (those
 * kept with the weights when new_weights; returns the next seed); run_op's optimizer op, one
 * AdamW step (0, or -1 with a message). */
void **pdbx_cpu_opt_slot(pdbx_compute *c, pdbx_buf_role r);
void pdbx_cpu_opt_forget(pdbx_compute *c, int weights);
uint64_t pdbx_cpu_opt_fill(pdbx_compute *c, int new_weights, uint64_t seed);
int pdbx_cpu_opt_run(pdbx_compute *c, char *err, size_t errlen);

#endif
