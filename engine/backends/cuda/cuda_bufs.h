/* cuda_bufs.h: which buffers the cuda backend allocates for a point and their sizes, the one
 * table of them (pure: no CUDA call). cuda_point.c allocates and fills the forward's (the
 * B_* slots shared by the layers, the W_* slots of every layer's weights), cuda_backward.c the
 * backward's (G_*), both from these answers; the planner's cuda rule
 * (engine/plan/plan_profile_memory_cuda.c, which the .so does not link) lists the same, and
 * tests/cuda/test_cuda_dense_point.c holds the two equal on the host for each model family.
 *
 * A buffer is allocated when an op that reads or writes it is prepared (cuda_dims.ops), and
 * the model's kinds (cuda_dims: LayerNorm, a plain MLP, learned positions, a parallel
 * residual, partial rotary) and the point's path (flash attention, a backward) decide the
 * rest, as the cpu backend's data flow uses them (cpu_compute.c, cpu_backward.c):
 *  - LayerNorm: a bias per norm (per layer, and the final norm's), each row's mean and rstd
 *    (fp32) that every forward norm writes and the backward reads (so no G_RSTD), the bias
 *    gradient; RMSNorm: none of these;
 *  - a plain MLP (act(up)): no gate, neither its output nor its gradient;
 *  - learned positions: the table [max_positions, h] (embed adds rows 0..seq-1) and its fp32
 *    gradient; no rope table (no attn_rope op);
 *  - a parallel residual: post_attn_norm reads hidden (the layer's input), not attn_out;
 *  - partial rotary: the rope table has rot/2 columns;
 *  - the attention cap on the unfused path: the rows' lse (B_LSE), written by every forward
 *    and read by the backward; the final-logit cap with bwd: G_LOGITS_CAPPED;
 *  - a MoE layer (cuda_moe.h): its buffers where its ops are prepared, the shared experts'
 *    only with shared experts (Is > 0); its input yn is B_XN2, its output B_X.
 * Everything is in the dtype except the token ids (int32), the rope table, the lse, the row
 * statistics, every weight or bias gradient and the MoE routing weights (fp32), and the MoE
 * expert ids (int32), offsets and positions (int64). */
#ifndef PDBX_CUDA_BUFS_H
#define PDBX_CUDA_BUFS_H

#include <stddef.h>

#include "engine/backends/cuda/cuda_backend.h"

/* How a buffer is filled at prepare (cuda_point.c, cuda_backward.c). */
enum {
    CUDA_FILL_IDS,      /* token ids over the full vocabulary */
    CUDA_FILL_ACT,      /* activations and activation gradients: uniform [-1, 1] in the dtype */
    CUDA_FILL_WEIGHT,   /* std 0.02 as HF initialises linear layers */
    CUDA_FILL_NORM_W,   /* around 1 */
    CUDA_FILL_BIAS,     /* O(0.1): projection and norm biases, the position table (as the cpu's) */
    CUDA_FILL_ROPE,     /* the real cos/sin table of the point's positions */
    CUDA_FILL_STATS,    /* fp32 row mean and rstd, as a forward leaves them (around 1) */
    CUDA_FILL_ZERO32,   /* fp32 zeros: the lse, weight gradients (main_grad at a step's start) */
    CUDA_FILL_ZERO_I32, /* int32 zeros: a MoE layer's ids, written by cuda_moe_prepare */
    CUDA_FILL_ZERO_I64, /* int64 zeros: a MoE layer's offsets and positions, likewise */
};

/* What besides the dims decides a point's buffers. */
typedef struct {
    pdbx_dtype dtype;
    int flash;          /* flash_attention: the fused core (no scores; lse, delta, dq_acc) */
    int bwd;            /* passes include bwd: the lse for the fused backward */
} cuda_buf_path;

typedef struct {
    const char *name;   /* for messages: cudaMalloc(name, size) failed */
    int fill;           /* CUDA_FILL_* */
    int used;           /* allocated at this point */
    size_t elems, bytes;   /* one allocation (bytes 0 when not used) */
} cuda_buf;

/* Slot b of B_COUNT, w of W_COUNT (one copy of one layer), g of G_COUNT at the point d, p
 * (a slot out of range: not used). */
cuda_buf cuda_point_buf(const cuda_dims *d, const cuda_buf_path *p, int b);
cuda_buf cuda_layer_buf(const cuda_dims *d, const cuda_buf_path *p, int w);
cuda_buf cuda_grad_buf(const cuda_dims *d, const cuda_buf_path *p, int g);

/* One layer's weights and biases in bytes: what pdbx_cuda_weight_copies sizes the L2
 * rotation from (the planner's cuda_layer_weight_bytes computes the same). */
double cuda_layer_set_bytes(const cuda_dims *d, const cuda_buf_path *p);
/* Every byte prepare allocates for the point with `sets` layer weight sets (layers x
 * copies), the gradients when p->bwd: what cuda_point_alloc_bytes tallies afterwards. */
double cuda_point_total_bytes(const cuda_dims *d, const cuda_buf_path *p, int sets);

/* cuda_point.c (not pure: enqueues on c's stream): fills the allocation p of buffer b of the
 * point of dims d as b->fill says, from `seed` where the fill is pseudo-random; an error names
 * the buffer. */
int cuda_fill_buf(pdbx_compute *c, const cuda_dims *d, void *p, const cuda_buf *b, uint64_t seed,
                  char *err, size_t errlen);

#endif
