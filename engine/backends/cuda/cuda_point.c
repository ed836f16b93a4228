/* cuda_point.c: the buffers of one sweep point on the cuda backend (cuda_backend.h, struct
 * cuda_point): what prepare() allocates and fills for the ops and passes of a point, the GEMM
 * plans it builds so that run_op() only enqueues work, the rotation of the layers' weights,
 * release(), and the checksum and memory peak of the prepared point. The bwd pass's gradient
 * buffers are cuda_backward.c's.
 *
 * Weights are per layer (layers instantiated), activations are one set reused by every layer.
 * Tokens are ordered sequence-major (row = position * mbs + sequence, Megatron's [s, b, h]),
 * which makes every (sequence, head) of the attention core a constant-stride batch member of
 * a cuBLASLt strided-batched GEMM (cuda_attention.h, docs/cuda.md).
 */
#include "engine/backends/cuda/cuda_backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cuda/cuda_attention.h"
#include "engine/backends/cuda/cuda_memtally.h"
#include "engine/backends/cuda/cuda_gemm.h"
#include "engine/backends/cuda/cuda_kernels.h"

/* ---- point buffers -----------------------------------------------------------------------
 * The planner lists these same buffers (engine/plan/plan_profile_memory.c, cuda_list) to
 * predict a point's profile memory, which decides the OOM stop of an MBS sweep: a buffer added,
 * dropped or resized here must change there too. This backend does not allocate from that list
 * (as the cpu backend does) because libpdbx_cuda.so links none of the planner; the rewrite of
 * this sizing should take the list from the planner instead. */

enum { K_IDS, K_ACT, K_WEIGHT, K_NORM_W, K_BIAS, K_ROPE, K_LSE };   /* how a buffer is filled */

#define OB(op) PDBX_OP_BIT(PDBX_OP_##op)
static const struct {
    const char *name;
    pdbx_opmask ops;   /* the ops that read or write it: allocated when any of them is prepared */
    int kind;
} global_bufs[B_COUNT] = {
    [B_IDS] = {"token_ids", OB(EMBED), K_IDS},
    [B_EMBED] = {"embed_table", OB(EMBED), K_WEIGHT},   /* + lm_head when tied */
    [B_X] = {"hidden", OB(EMBED) | OB(INPUT_NORM) | OB(MLP_DOWN) | OB(FINAL_NORM) | OB(ATTN_RESIDUAL) |
             OB(MLP_RESIDUAL), K_ACT},
    [B_XN] = {"input_norm_out", OB(INPUT_NORM) | OB(ATTN_Q) | OB(ATTN_K) | OB(ATTN_V) | CUDA_FUSED_QKV,
              K_ACT},
    [B_Q] = {"q", OB(ATTN_Q) | OB(ATTN_ROPE) | OB(ATTN_CORE), K_ACT},
    [B_K] = {"k", OB(ATTN_K) | OB(ATTN_ROPE) | OB(ATTN_CORE), K_ACT},
    [B_V] = {"v", OB(ATTN_V) | OB(ATTN_CORE), K_ACT},
    [B_SCORES] = {"attn_scores", OB(ATTN_CORE), K_ACT},
    [B_CTX] = {"attn_context", OB(ATTN_CORE) | OB(ATTN_O), K_ACT},
    [B_ATTN_OUT] = {"attn_out", OB(ATTN_O) | OB(POST_ATTN_NORM) | OB(ATTN_RESIDUAL) | OB(MLP_RESIDUAL),
                    K_ACT},
    [B_XN2] = {"post_attn_norm_out", OB(POST_ATTN_NORM) | OB(MLP_GATE) | OB(MLP_UP) | CUDA_FUSED_FC1,
               K_ACT},
    [B_GATE] = {"mlp_gate_out", OB(MLP_GATE) | OB(MLP_ACT_FN), K_ACT},
    [B_UP] = {"mlp_up_out", OB(MLP_UP) | OB(MLP_ACT_FN), K_ACT},
    [B_ACT] = {"mlp_act_out", OB(MLP_ACT_FN) | OB(MLP_DOWN), K_ACT},
    [B_XF] = {"final_norm_out", OB(FINAL_NORM) | OB(LM_HEAD), K_ACT},
    [B_FINAL_W] = {"final_norm_weight", OB(FINAL_NORM), K_NORM_W},
    [B_LOGITS] = {"logits", OB(LM_HEAD), K_ACT},
    [B_LM_W] = {"lm_head_weight", OB(LM_HEAD), K_WEIGHT},   /* not when tied */
    [B_QKV] = {"qkv (fused)", CUDA_FUSED_QKV, K_ACT},
    [B_FC1] = {"mlp_fc1_out (fused)", CUDA_FUSED_FC1, K_ACT},
    [B_ROPE] = {"rope cos/sin table", OB(ATTN_ROPE), K_ROPE},
    /* the fused forward's log-sum-exp for the fused backward (flash_attention with bwd only):
     * computed by a forward at prepare (cuda_bwd_prepare), rewritten by each timed forward */
    [B_LSE] = {"attn lse (fp32)", OB(ATTN_CORE), K_LSE},
};
static const struct {
    const char *name;
    pdbx_opmask ops;
    int kind;
} layer_bufs[W_COUNT] = {
    [W_IN_NORM] = {"input_norm_weight", OB(INPUT_NORM), K_NORM_W},
    [W_Q] = {"q_proj", OB(ATTN_Q), K_WEIGHT},
    [W_K] = {"k_proj", OB(ATTN_K), K_WEIGHT},
    [W_V] = {"v_proj", OB(ATTN_V), K_WEIGHT},
    [W_O] = {"o_proj", OB(ATTN_O), K_WEIGHT},
    [W_POST_NORM] = {"post_attn_norm_weight", OB(POST_ATTN_NORM), K_NORM_W},
    [W_GATE] = {"gate_proj", OB(MLP_GATE), K_WEIGHT},
    [W_UP] = {"up_proj", OB(MLP_UP), K_WEIGHT},
    [W_DOWN] = {"down_proj", OB(MLP_DOWN), K_WEIGHT},
    [W_QKV] = {"qkv_proj (fused)", CUDA_FUSED_QKV, K_WEIGHT},
    [W_FC1] = {"fc1 (fused gate_proj, up_proj)", CUDA_FUSED_FC1, K_WEIGHT},
    /* biases: allocated where the op is prepared AND has a bias (layer_buf_used) */
    [W_BQ] = {"q_proj bias", OB(ATTN_Q), K_BIAS},
    [W_BK] = {"k_proj bias", OB(ATTN_K), K_BIAS},
    [W_BV] = {"v_proj bias", OB(ATTN_V), K_BIAS},
    [W_BO] = {"o_proj bias", OB(ATTN_O), K_BIAS},
    [W_BGATE] = {"gate_proj bias", OB(MLP_GATE), K_BIAS},
    [W_BUP] = {"up_proj bias", OB(MLP_UP), K_BIAS},
    [W_BDOWN] = {"down_proj bias", OB(MLP_DOWN), K_BIAS},
    [W_BQKV] = {"qkv_proj bias (fused)", CUDA_FUSED_QKV, K_BIAS},
    [W_BFC1] = {"fc1 bias (fused)", CUDA_FUSED_FC1, K_BIAS},
};

/* Whether layer buffer w is allocated at the point: its op prepared (and, for a bias, the op
 * has one). */
static int layer_buf_used(const struct cuda_point *pt, int w)
{
    const pdbx_opmask ops = layer_bufs[w].kind == K_BIAS ? pt->d.ops & pt->d.bias_ops : pt->d.ops;
    return (layer_bufs[w].ops & ops) != 0;
}
#undef OB

static size_t dtype_size(pdbx_dtype dt)
{
    return dt == PDBX_DTYPE_FP32 ? 4 : 2;
}

static void point_free(struct cuda_point *pt)
{
    if (!pt)
        return;
    for (int i = 0; i < B_COUNT; i++)
        cuda_dev_free(pt->buf[i]);
    for (int i = 0; i < G_COUNT; i++)
        cuda_dev_free(pt->grad[i]);
    if (pt->w) {
        for (size_t i = 0; i < (size_t)pt->wcopies * pt->d.layers * W_COUNT; i++)
            cuda_dev_free(pt->w[i]);
        free(pt->w);
    }
    free(pt->wnext);
    free(pt);   /* gemm plans belong to the gemm cache */
}

static size_t global_elems(const struct cuda_point *pt, int b)
{
    const int64_t T = pt->d.tokens, h = pt->d.hidden, qd = pt->d.heads * pt->d.head_dim,
                  kvd = pt->d.kv_heads * pt->d.head_dim;
    switch (b) {
    case B_IDS: return (size_t)T;
    case B_EMBED: case B_LM_W: return (size_t)(pt->d.vocab * h);
    case B_X: case B_XN: case B_ATTN_OUT: case B_XN2: case B_XF: return (size_t)(T * h);
    case B_Q: case B_CTX: return (size_t)(T * qd);
    case B_K: case B_V: return (size_t)(T * kvd);
    case B_SCORES: {
        cuda_attention_dims d = {pt->d.mbs, pt->d.seq, pt->d.heads, pt->d.kv_heads, pt->d.head_dim,
                                 PDBX_DTYPE_BF16, 0};
        return cuda_attention_scores_elems(&d);
    }
    case B_GATE: case B_UP: case B_ACT: return (size_t)(T * pt->d.inter);
    case B_FINAL_W: return (size_t)h;
    case B_LOGITS: return (size_t)(T * pt->d.vocab);
    case B_QKV: return (size_t)(T * (qd + 2 * kvd));
    case B_FC1: return (size_t)(T * 2 * pt->d.inter);
    case B_ROPE: return (size_t)(2 * pt->d.seq * (pt->d.head_dim / 2));
    case B_LSE: return (size_t)(pt->d.mbs * pt->d.heads * pt->d.seq);
    default: return 0;
    }
}

static size_t layer_elems(const struct cuda_point *pt, int w)
{
    const int64_t h = pt->d.hidden, qd = pt->d.heads * pt->d.head_dim, kvd = pt->d.kv_heads * pt->d.head_dim;
    switch (w) {
    case W_IN_NORM: case W_POST_NORM: return (size_t)h;
    case W_Q: case W_O: return (size_t)(qd * h);
    case W_K: case W_V: return (size_t)(kvd * h);
    case W_GATE: case W_UP: case W_DOWN: return (size_t)(pt->d.inter * h);
    case W_QKV: return (size_t)((qd + 2 * kvd) * h);
    case W_FC1: return (size_t)(2 * pt->d.inter * h);
    case W_BQ: return (size_t)qd;
    case W_BK: case W_BV: return (size_t)kvd;
    case W_BO: case W_BDOWN: return (size_t)h;
    case W_BGATE: case W_BUP: return (size_t)pt->d.inter;
    case W_BQKV: return (size_t)(qd + 2 * kvd);
    case W_BFC1: return (size_t)(2 * pt->d.inter);
    default: return 0;
    }
}

static int fill(pdbx_compute *c, void *p, size_t elems, int kind, uint64_t seed,
                const struct cuda_point *pt, const char *name, char *err, size_t errlen)
{
    int rc = -1;
    char call[96];
    snprintf(call, sizeof call, "fill(%s)", name);
    switch (kind) {
    case K_IDS:
        CU_TRY(call, ck_fill_tokens(p, elems, (int32_t)pt->d.vocab_full, seed, c->stream));
        break;
    case K_WEIGHT:   /* std 0.02, as HF initialises Llama linear layers */
        CU_TRY(call, ck_fill_uniform(p, elems, c->dtype, seed, -0.0346f, 0.0346f, c->stream));
        break;
    case K_NORM_W:
        CU_TRY(call, ck_fill_uniform(p, elems, c->dtype, seed, 0.9f, 1.1f, c->stream));
        break;
    case K_BIAS:   /* O(0.1), a trained bias's size (the cpu backend's too) */
        CU_TRY(call, ck_fill_uniform(p, elems, c->dtype, seed, -0.1f, 0.1f, c->stream));
        break;
    case K_ROPE:   /* the real table of the point's positions (plan.h, PDBX_ROPE_THETA) */
        CU_TRY(call, ck_rope_table(p, pt->d.seq, pt->d.head_dim, PDBX_ROPE_THETA, c->stream));
        break;
    case K_LSE:    /* written by the forward (cuda_bwd_prepare runs one) */
        CU_TRY(call, cudaMemsetAsync(p, 0, elems * sizeof(float), c->stream));
        break;
    default:
        CU_TRY(call, ck_fill_uniform(p, elems, c->dtype, seed, -1.0f, 1.0f, c->stream));
        break;
    }
    return 0;
fail:
    return rc;
}

int cuda_alloc_buf(void **p, size_t bytes, const char *name, char *err, size_t errlen)
{
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        *p = NULL;
        char call[128];
        snprintf(call, sizeof call, "cudaMalloc(%s, %.3f GiB)", name, (double)bytes / (1 << 30));
        return cuda_fail(err, errlen, call, e);
    }
    return 0;
}

int cuda_point_dims(const pdbx_point_shapes *p, int world_rank, cuda_dims *d, char *err,
                    size_t errlen)
{
    const pdbx_model *m = &p->model;
    int tp = p->tp;
    if (tp <= 0 || p->mbs <= 0 || p->seq_len <= 0 || p->layers <= 0) {
        snprintf(err, errlen, "cuda prepare: tp %d, mbs %d, seq_len %d, layers %d (allowed: > 0)",
                 tp, p->mbs, p->seq_len, p->layers);
        return -1;
    }
    if (m->hidden <= 0 || m->heads <= 0 || m->kv_heads <= 0 || m->head_dim <= 0 ||
        m->intermediate <= 0 || m->vocab <= 0) {
        snprintf(err, errlen, "cuda prepare: model '%s' has a non-positive dimension", m->name);
        return -1;
    }
    if (m->heads % tp || m->intermediate % tp || (m->kv_heads % tp && tp % m->kv_heads)) {
        snprintf(err, errlen, "cuda prepare: tp %d does not divide heads %d, intermediate %d and "
                 "kv_heads %d (or is not a multiple of kv_heads)", tp, m->heads, m->intermediate,
                 m->kv_heads);
        return -1;
    }
    d->mbs = p->mbs;
    d->seq = p->seq_len;
    d->tokens = (int64_t)p->mbs * p->seq_len;
    d->hidden = m->hidden;
    d->head_dim = m->head_dim;
    d->heads = m->heads / tp;
    d->kv_heads = m->kv_heads >= tp ? m->kv_heads / tp : 1;   /* replicated when TP > k */
    if (d->heads % d->kv_heads) {
        snprintf(err, errlen, "cuda prepare: %lld q heads per rank are not a multiple of %lld kv "
                 "heads", (long long)d->heads, (long long)d->kv_heads);
        return -1;
    }
    d->inter = m->intermediate / tp;
    d->vocab_full = m->vocab;
    d->vocab = (m->vocab + tp - 1) / tp;
    d->vstart = (int64_t)(world_rank % tp) * d->vocab;   /* TP is the fastest rank index */
    d->layers = p->layers;
    d->tied = m->tie_embeddings;
    d->ops = p->ops & ~(PDBX_OP_BIT(PDBX_OP_TP_ALLREDUCE_ATTN) | PDBX_OP_BIT(PDBX_OP_TP_ALLREDUCE_MLP));
    d->bias_ops = 0;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        if ((d->ops & PDBX_OP_BIT(op)) && p->shape[op].bias)
            d->bias_ops |= PDBX_OP_BIT(op);
    if (p->fused_projections) {
        const pdbx_opmask qkv = PDBX_OP_BIT(PDBX_OP_ATTN_Q) | PDBX_OP_BIT(PDBX_OP_ATTN_K) | PDBX_OP_BIT(PDBX_OP_ATTN_V);
        const pdbx_opmask fc1 = PDBX_OP_BIT(PDBX_OP_MLP_GATE) | PDBX_OP_BIT(PDBX_OP_MLP_UP);
        /* a fused GEMM has its group's bias (the group shares the flag: the leader's says) */
        const pdbx_opmask qkv_b = d->ops & qkv && p->shape[PDBX_OP_ATTN_Q].bias ? CUDA_FUSED_QKV : 0;
        const pdbx_opmask fc1_b = d->ops & fc1 && p->shape[PDBX_OP_MLP_GATE].bias ? CUDA_FUSED_FC1 : 0;
        d->ops = (d->ops & ~(qkv | fc1)) | (d->ops & qkv ? CUDA_FUSED_QKV : 0) | (d->ops & fc1 ? CUDA_FUSED_FC1 : 0);
        d->bias_ops = (d->bias_ops & ~(qkv | fc1)) | qkv_b | fc1_b;
    }

    const int64_t T = d->tokens;
    cuda_linear_op expect[CUDA_LINEAR_OPS];
    const int nexpect = cuda_linear_ops(d, expect);
    for (int i = 0; i < nexpect; i++) {
        const pdbx_op_shape *s = &p->shape[expect[i].op];
        if (!(d->ops & PDBX_OP_BIT(expect[i].op)) || s->m == 0)
            continue;   /* not prepared, or the caller left the shape out */
        if (s->m != T || s->n != expect[i].n || s->k != expect[i].k) {
            snprintf(err, errlen, "cuda prepare: %s shape m,n,k = %lld,%lld,%lld from the plan, "
                     "but the model at tp %d gives %lld,%lld,%lld", pdbx_op_name(expect[i].op),
                     (long long)s->m, (long long)s->n, (long long)s->k, tp,
                     (long long)T, (long long)expect[i].n, (long long)expect[i].k);
            return -1;
        }
    }
    return 0;
}

int cuda_linear_ops(const cuda_dims *d, cuda_linear_op out[CUDA_LINEAR_OPS])
{
    const int64_t h = d->hidden, qd = d->heads * d->head_dim, kvd = d->kv_heads * d->head_dim;
    const cuda_linear_op lin[CUDA_LINEAR_OPS] = {
        {PDBX_OP_ATTN_Q, qd, h}, {PDBX_OP_ATTN_K, kvd, h}, {PDBX_OP_ATTN_V, kvd, h},
        {PDBX_OP_ATTN_O, h, qd}, {PDBX_OP_MLP_GATE, d->inter, h}, {PDBX_OP_MLP_UP, d->inter, h},
        {PDBX_OP_MLP_DOWN, h, d->inter}, {PDBX_OP_LM_HEAD, d->vocab, h},
    };
    memcpy(out, lin, sizeof lin);
    return CUDA_LINEAR_OPS;
}

int cuda_op_prepared(const cuda_dims *d, pdbx_op op)
{
    if ((int)op < 0 || op >= PDBX_OP_COUNT)
        return 0;
    return (d->ops & PDBX_OP_BIT(op)) != 0 || (op == PDBX_OP_ATTN_Q && (d->ops & CUDA_FUSED_QKV)) ||
           (op == PDBX_OP_MLP_GATE && (d->ops & CUDA_FUSED_FC1));
}

void cuda_release(pdbx_compute *c)
{
    if (!c)
        return;
    cuda_kv_free(c);   /* attn_kv's buffers (backend.h: kept until release) */
    if (!c->point)
        return;
    cudaStreamSynchronize(c->stream);
    point_free(c->point);
    c->point = NULL;
}

/* Allocates and fills the point's shared buffers, then every layer's weights. */
static int alloc_point_bufs(pdbx_compute *c, struct cuda_point *pt, int bwd, char *err,
                            size_t errlen)
{
    const cuda_attention_dims path = {.flash = c->flash_attention};
    const int fp32_buf[B_COUNT] = {[B_ROPE] = 1, [B_LSE] = 1};
    int rc = 0;
    const size_t es = dtype_size(c->dtype);
    uint64_t seed = FILL_SEED ^ ((uint64_t)c->world_rank << 32);
    for (int b = 0; b < B_COUNT && rc == 0; b++) {
        pdbx_opmask uses = global_bufs[b].ops;
        if (b == B_EMBED && pt->d.tied)
            uses |= PDBX_OP_BIT(PDBX_OP_LM_HEAD);
        if (b == B_LM_W && pt->d.tied)
            uses = 0;
        if (b == B_SCORES && !cuda_attention_needs_scores(&path))
            uses = 0;   /* the fused kernels write no scores */
        if (b == B_LSE && !(path.flash && bwd))
            uses = 0;   /* only the fused backward reads it */
        if (!(uses & pt->d.ops))
            continue;
        size_t elems = global_elems(pt, b);
        pt->bytes[b] = elems * (b == B_IDS ? sizeof(int32_t) : fp32_buf[b] ? sizeof(float) : es);
        rc = cuda_alloc_buf(&pt->buf[b], pt->bytes[b], global_bufs[b].name, err, errlen);
        if (rc == 0)
            rc = fill(c, pt->buf[b], elems, global_bufs[b].kind, seed + (uint64_t)b, pt,
                      global_bufs[b].name, err, errlen);
    }
    /* copies of the layers' weights until they total >= 3x L2 (the planner counts the same) */
    double layer_bytes = 0;
    for (int w = 0; w < W_COUNT; w++)
        if (layer_buf_used(pt, w))
            layer_bytes += (double)(layer_elems(pt, w) * es);
    pt->wcopies = pdbx_cuda_weight_copies(layer_bytes, pt->d.layers, (double)c->prop.l2CacheSize);
    const size_t sets = (size_t)pt->wcopies * pt->d.layers;
    pt->w = calloc(sets * W_COUNT, sizeof *pt->w);
    pt->wnext = calloc((size_t)pt->d.layers * PDBX_OP_COUNT, sizeof *pt->wnext);
    if (rc == 0 && (!pt->w || !pt->wnext)) {
        snprintf(err, errlen, "cuda prepare: out of host memory");
        rc = -1;
    }
    for (size_t set = 0; set < sets && rc == 0; set++)
        for (int w = 0; w < W_COUNT && rc == 0; w++) {
            if (!layer_buf_used(pt, w))
                continue;
            size_t elems = layer_elems(pt, w);
            void **slot = &pt->w[set * W_COUNT + w];
            pt->wbytes[w] = elems * es;
            char name[80];
            snprintf(name, sizeof name, "layer %d %s (copy %d)", (int)(set % (size_t)pt->d.layers),
                     layer_bufs[w].name, (int)(set / (size_t)pt->d.layers));
            rc = cuda_alloc_buf(slot, pt->wbytes[w], name, err, errlen);
            if (rc == 0)
                rc = fill(c, *slot, elems, layer_bufs[w].kind,
                          seed + 0x1000u * (uint64_t)(set + 1) + (uint64_t)w, pt, name, err, errlen);
        }
    return rc;
}

int cuda_point_gemms(const cuda_dims *d, cuda_point_gemm out[CUDA_POINT_GEMMS])
{
    const int64_t h = d->hidden, qd = d->heads * d->head_dim, kvd = d->kv_heads * d->head_dim;
    cuda_linear_op lin[CUDA_LINEAR_OPS];
    const int nlin = cuda_linear_ops(d, lin);
    int n = 0;
    for (int i = 0; i < nlin; i++)
        if (d->ops & PDBX_OP_BIT(lin[i].op))
            out[n++] = (cuda_point_gemm){lin[i].op, lin[i].n, lin[i].k,
                                         (d->bias_ops & PDBX_OP_BIT(lin[i].op)) != 0};
    /* fused: the leader's slot holds the fused GEMM (its own op is not prepared) */
    if (d->ops & CUDA_FUSED_QKV)
        out[n++] = (cuda_point_gemm){PDBX_OP_ATTN_Q, qd + 2 * kvd, h, (d->bias_ops & CUDA_FUSED_QKV) != 0};
    if (d->ops & CUDA_FUSED_FC1)
        out[n++] = (cuda_point_gemm){PDBX_OP_MLP_GATE, 2 * d->inter, h, (d->bias_ops & CUDA_FUSED_FC1) != 0};
    return n;
}

/* GEMM plans now, so the heuristic never runs between the timing events. */
static int plan_point_gemms(pdbx_compute *c, struct cuda_point *pt, char *err, size_t errlen)
{
    cuda_point_gemm gemms[CUDA_POINT_GEMMS];
    const int n = cuda_point_gemms(&pt->d, gemms);
    for (int i = 0; i < n; i++) {
        cuda_gemm_shape s = cuda_gemm_linear_shape(c->dtype, pt->d.tokens, gemms[i].n, gemms[i].k);
        s.bias = gemms[i].bias;   /* the bias epilogue */
        int rc = cuda_gemm_plan_get(c->gemm, &s, &pt->plan[gemms[i].op], err, errlen);
        if (rc)
            return rc;
    }
    if (!(pt->d.ops & PDBX_OP_BIT(PDBX_OP_ATTN_CORE)))
        return 0;
    const cuda_attention_dims attn_dims = {pt->d.mbs, pt->d.seq, pt->d.heads, pt->d.kv_heads,
                                           pt->d.head_dim, c->dtype, c->flash_attention};
    return cuda_attention_plan(c->gemm, &attn_dims, &pt->attn, err, errlen);
}

/* Device memory in use now (every process's, the CUDA context and NCCL's buffers included). */
static int device_used(pdbx_compute *c, double *bytes)
{
    uint64_t free_b = 0, total_b = 0;
    if (cuda_mem_info(c, &free_b, &total_b) != 0 || free_b > total_b)
        return -1;
    *bytes = (double)(total_b - free_b);
    return 0;
}

int cuda_prepare(pdbx_compute *c, const pdbx_point_shapes *p, char *err, size_t errlen)
{
    int rc = -1;
    cuda_release(c);
    c->mem_base_ok = device_used(c, &c->mem_base) == 0;
    struct cuda_point *pt = calloc(1, sizeof *pt);
    if (!pt) {
        snprintf(err, errlen, "cuda prepare: out of host memory");
        return -1;
    }
    rc = cuda_point_dims(p, c->world_rank, &pt->d, err, errlen);
    if (rc)
        goto fail;
    rc = -1;
    if (c->flash_attention && (pt->d.ops & PDBX_OP_BIT(PDBX_OP_ATTN_CORE))) {
        const cuda_attention_dims ad = {.head_dim = pt->d.head_dim, .dtype = c->dtype, .flash = 1};
        if (!cuda_attention_flash_ok(&ad, err, errlen))
            goto fail;
    }
    rc = alloc_point_bufs(c, pt, (p->passes & PDBX_PASS_BIT(PDBX_PASS_BWD)) != 0, err, errlen);
    if (rc)
        goto fail;
    rc = -1;
    CU_TRY("cudaStreamSynchronize(after fill)", cudaStreamSynchronize(c->stream));
    rc = plan_point_gemms(c, pt, err, errlen);
    if (rc)
        goto fail;
    if (p->passes & PDBX_PASS_BIT(PDBX_PASS_BWD)) {   /* cuda_backward.c */
        rc = cuda_bwd_prepare(c, pt, err, errlen);
        if (rc)
            goto fail;
    }
    c->point = pt;
    return 0;
fail:
    cudaStreamSynchronize(c->stream);
    (void)cudaGetLastError();
    point_free(pt);
    return rc;
}

void **cuda_layer_weights(struct cuda_point *pt, pdbx_op op, int layer)
{
    unsigned *next = &pt->wnext[(size_t)layer * PDBX_OP_COUNT + (size_t)op];
    const size_t copy = *next % (unsigned)pt->wcopies;
    *next += 1;
    return &pt->w[(copy * (size_t)pt->d.layers + (size_t)layer) * W_COUNT];
}

double cuda_checksum(pdbx_compute *c)
{
    struct cuda_point *pt = c->point;
    double sum = 0.0;
    if (!pt)
        return 0.0;
    if (cudaMemsetAsync(c->checksum_dev, 0, sizeof(double), c->stream) != cudaSuccess)
        goto fail;
    for (int b = 0; b < B_COUNT; b++) {
        if (!pt->buf[b] || global_bufs[b].kind != K_ACT)
            continue;
        if (ck_accumulate_sum(pt->buf[b], global_elems(pt, b), c->dtype, c->checksum_dev,
                              c->stream) != cudaSuccess)
            goto fail;
    }
    if (cudaMemcpyAsync(&sum, c->checksum_dev, sizeof sum, cudaMemcpyDeviceToHost, c->stream) !=
            cudaSuccess ||
        cudaStreamSynchronize(c->stream) != cudaSuccess)
        goto fail;
    return sum;
fail:
    (void)cudaGetLastError();
    return NAN;
}

/* The point's device-memory peak above what was in use before its buffers were allocated
 * (cudaMemGetInfo's used bytes: prepare() allocates every buffer and nothing is freed until the
 * next prepare, so the memory in use after the measured steps is the highest it reached, lazy
 * cuBLASLt or NCCL allocations and a comm buffer grown for the point included), never less
 * than the backend's own tally of what it cudaMalloc'd for the point (cuda_memtally.h): a GPU
 * shared with another process that freed memory meanwhile cannot make it smaller, and without
 * a readable cudaMemGetInfo the tally alone is the figure (base then 0). */
int cuda_mem_peak(pdbx_compute *c, double *peak_bytes, double *base_bytes)
{
    double used = 0;
    if (!c || !c->point)
        return -1;
    const double tally = cuda_point_alloc_bytes(c->point);
    const int have_used = c->mem_base_ok && device_used(c, &used) == 0;
    const double rise = have_used ? used - c->mem_base : 0;
    *peak_bytes = rise > tally ? rise : tally;
    *base_bytes = have_used ? c->mem_base : 0;
    return 0;
}

