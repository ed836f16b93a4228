/* cuda_backend.c: the `cuda` compute backend and the entry point of libpdbx_cuda.so.
 *
 * Per rank: one device (local_rank % device count), one stream, two timing events. A point's
 * buffers are allocated with cudaMalloc in prepare() (a failed allocation frees what was taken
 * and returns PDBX_EOOM: a real OOM) and filled with deterministic pseudo-random values; every
 * GEMM plan (cuBLASLt descriptors + heuristic algorithm) is built there too, so run_op() only
 * enqueues work between the two events. The data flow follows one Llama decoder layer:
 *
 *   embed -> x -> input_norm -> xn -> attn_q/k/v -> q,k,v -> attn_core -> ctx -> attn_o
 *   -> attn_out -> post_attn_norm -> xn2 -> mlp_gate/up -> gate,up -> mlp_act_fn -> act
 *   -> mlp_down -> x (the residual stream, next layer's input) -> final_norm -> xf -> lm_head
 *
 * Weights are per layer (layers instantiated), activations are one set reused by every layer.
 * Tokens are ordered sequence-major (row = position * mbs + sequence, Megatron's [s, b, h]),
 * which makes every (sequence, head) of the attention core a constant-stride batch member of
 * a cuBLASLt strided-batched GEMM (cuda_attention.h, docs/cuda.md).
 */
#include "engine/backends/cuda/cuda_backend.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backends/cuda/cuda_attention.h"
#include "engine/backends/cuda/cuda_checks.h"
#include "engine/backends/cuda/cuda_memtally.h"
#include "engine/backends/cuda/cuda_gemm.h"
#include "engine/backends/cuda/cuda_kernels.h"

#define RMS_EPS 1e-5f                 /* rms_norm_eps of the Llama 3 and TinyLlama configs */

/* ---- errors --------------------------------------------------------------------------- */

int cuda_fail(char *err, size_t errlen, const char *call, cudaError_t e)
{
    /* A sticky error (cuda_checks.h) cannot be cleared: every later call on this context
     * fails the same way, so the run must end rather than go on to the next point. */
    const int sticky = cuda_error_is_sticky(e);
    if (!sticky)
        (void)cudaGetLastError();   /* clear a non-sticky error so the next call starts clean */
    if (err && errlen)
        snprintf(err, errlen, "%s failed: %s (%s)%s", call, cudaGetErrorName(e), cudaGetErrorString(e),
                 sticky ? "; the CUDA context is unusable (sticky error): the run ends" : "");
    return sticky ? PDBX_EFATAL : e == cudaErrorMemoryAllocation ? PDBX_EOOM : -1;
}

/* ---- point buffers ----------------------------------------------------------------------
 * The planner lists these same buffers (engine/plan/plan_profile_memory.c, cuda_list) to
 * predict a point's profile memory, which decides the OOM stop of an MBS sweep: a buffer added,
 * dropped or resized here must change there too. This backend does not allocate from that list
 * (as the cpu backend does) because libpdbx_cuda.so links none of the planner; the rewrite of
 * this sizing should take the list from the planner instead. */

enum { K_IDS, K_ACT, K_WEIGHT, K_NORM_W, K_BIAS, K_ROPE };   /* how a buffer is filled */

#define OB(op) PDBX_OP_BIT(PDBX_OP_##op)
static const struct {
    const char *name;
    uint32_t ops;   /* the ops that read or write it: allocated when any of them is prepared */
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
};
static const struct {
    const char *name;
    uint32_t ops;
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
    const uint32_t ops = layer_bufs[w].kind == K_BIAS ? pt->d.ops & pt->d.bias_ops : pt->d.ops;
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
        const uint32_t qkv = PDBX_OP_BIT(PDBX_OP_ATTN_Q) | PDBX_OP_BIT(PDBX_OP_ATTN_K) | PDBX_OP_BIT(PDBX_OP_ATTN_V);
        const uint32_t fc1 = PDBX_OP_BIT(PDBX_OP_MLP_GATE) | PDBX_OP_BIT(PDBX_OP_MLP_UP);
        /* a fused GEMM has its group's bias (the group shares the flag: the leader's says) */
        const uint32_t qkv_b = d->ops & qkv && p->shape[PDBX_OP_ATTN_Q].bias ? CUDA_FUSED_QKV : 0;
        const uint32_t fc1_b = d->ops & fc1 && p->shape[PDBX_OP_MLP_GATE].bias ? CUDA_FUSED_FC1 : 0;
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
    if (!c || !c->point)
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
    int rc = 0;
    const size_t es = dtype_size(c->dtype);
    uint64_t seed = FILL_SEED ^ ((uint64_t)c->world_rank << 32);
    for (int b = 0; b < B_COUNT && rc == 0; b++) {
        uint32_t uses = global_bufs[b].ops;
        if (b == B_EMBED && pt->d.tied)
            uses |= PDBX_OP_BIT(PDBX_OP_LM_HEAD);
        if (b == B_LM_W && pt->d.tied)
            uses = 0;
        if (b == B_SCORES && !cuda_attention_needs_scores(&path, bwd))
            uses = 0;   /* the fused forward writes no scores */
        if (!(uses & pt->d.ops))
            continue;
        size_t elems = global_elems(pt, b);
        pt->bytes[b] = elems * (b == B_IDS ? sizeof(int32_t) : b == B_ROPE ? sizeof(float) : es);
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

/* GEMM plans now, so the heuristic never runs between the timing events. */
static int plan_point_gemms(pdbx_compute *c, struct cuda_point *pt, char *err, size_t errlen)
{
    const int64_t T = pt->d.tokens, h = pt->d.hidden, qd = pt->d.heads * pt->d.head_dim,
                  kvd = pt->d.kv_heads * pt->d.head_dim;
    cuda_linear_op lin[CUDA_LINEAR_OPS];
    const int nlin = cuda_linear_ops(&pt->d, lin);
    for (int i = 0; i < nlin; i++) {
        if (!(pt->d.ops & PDBX_OP_BIT(lin[i].op)))
            continue;
        cuda_gemm_shape s = cuda_gemm_linear_shape(c->dtype, T, lin[i].n, lin[i].k);
        s.bias = (pt->d.bias_ops & PDBX_OP_BIT(lin[i].op)) != 0;   /* the bias epilogue */
        int rc = cuda_gemm_plan_get(c->gemm, &s, &pt->plan[lin[i].op], err, errlen);
        if (rc)
            return rc;
    }
    /* fused: the leader's plan slot holds the fused GEMM (its own op is not prepared) */
    const struct { uint32_t bit; pdbx_op leader; int64_t n; } fused[] = {
        {CUDA_FUSED_QKV, PDBX_OP_ATTN_Q, qd + 2 * kvd}, {CUDA_FUSED_FC1, PDBX_OP_MLP_GATE, 2 * pt->d.inter},
    };
    for (size_t i = 0; i < sizeof fused / sizeof fused[0]; i++) {
        if (!(pt->d.ops & fused[i].bit))
            continue;
        cuda_gemm_shape s = cuda_gemm_linear_shape(c->dtype, T, fused[i].n, h);
        s.bias = (pt->d.bias_ops & fused[i].bit) != 0;
        int rc = cuda_gemm_plan_get(c->gemm, &s, &pt->plan[fused[i].leader], err, errlen);
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

static int cuda_prepare(pdbx_compute *c, const pdbx_point_shapes *p, char *err, size_t errlen)
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

/* ---- ops -------------------------------------------------------------------------------- */

/* Y = X W^T (+ b: the plan's bias epilogue, or cuBLAS's GEMM then ck_bias_add, when the op
 * has a bias; b NULL otherwise). */
static int enqueue_linear(pdbx_compute *c, pdbx_op op, const void *x, const void *w, const void *b,
                          void *y, char *err, size_t errlen)
{
    const cuda_gemm_plan *p = c->point->plan[op];
    if (b)
        return cuda_gemm_exec_bias(c->gemm, p, 1.0f, w, x, b, y, c->stream, err, errlen);
    return cuda_gemm_exec(c->gemm, p, 1.0f, w, x, y, c->stream, err, errlen);
}

void **cuda_layer_weights(struct cuda_point *pt, pdbx_op op, int layer)
{
    unsigned *next = &pt->wnext[(size_t)layer * PDBX_OP_COUNT + (size_t)op];
    const size_t copy = *next % (unsigned)pt->wcopies;
    *next += 1;
    return &pt->w[(copy * (size_t)pt->d.layers + (size_t)layer) * W_COUNT];
}

static int enqueue_op(pdbx_compute *c, pdbx_op op, int layer, char *err, size_t errlen)
{
    int rc = -1;
    struct cuda_point *pt = c->point;
    void **B = pt->buf, **W = cuda_layer_weights(pt, op, layer);
    const int64_t T = pt->d.tokens, h = pt->d.hidden;
    switch (op) {
    case PDBX_OP_EMBED:
        CU_TRY("ck_embed_gather", ck_embed_gather(B[B_IDS], T, B[B_EMBED], pt->d.vstart, pt->d.vocab, h,
                                                  B[B_X], c->dtype, c->stream));
        return 0;
    case PDBX_OP_INPUT_NORM:
        CU_TRY("ck_rmsnorm", ck_rmsnorm(B[B_X], W[W_IN_NORM], B[B_XN], T, h, RMS_EPS, c->dtype,
                                        c->stream));
        return 0;
    case PDBX_OP_ATTN_Q:
        if (pt->d.ops & CUDA_FUSED_QKV)   /* Megatron's linear_qkv: one [T, (a + 2 kv) d] GEMM */
            return enqueue_linear(c, op, B[B_XN], W[W_QKV], W[W_BQKV], B[B_QKV], err, errlen);
        return enqueue_linear(c, op, B[B_XN], W[W_Q], W[W_BQ], B[B_Q], err, errlen);
    case PDBX_OP_ATTN_K: return enqueue_linear(c, op, B[B_XN], W[W_K], W[W_BK], B[B_K], err, errlen);
    case PDBX_OP_ATTN_V: return enqueue_linear(c, op, B[B_XN], W[W_V], W[W_BV], B[B_V], err, errlen);
    case PDBX_OP_ATTN_ROPE:   /* q and k in place, both on the stream between the same events */
        CU_TRY("ck_rope(q)", ck_rope(B[B_Q], T, pt->d.heads, pt->d.head_dim, pt->d.mbs, pt->d.seq,
                                     B[B_ROPE], 0, c->dtype, c->stream));
        CU_TRY("ck_rope(k)", ck_rope(B[B_K], T, pt->d.kv_heads, pt->d.head_dim, pt->d.mbs, pt->d.seq,
                                     B[B_ROPE], 0, c->dtype, c->stream));
        return 0;
    case PDBX_OP_ATTN_RESIDUAL:   /* hidden (attn_out) = attention output + the layer's input */
        CU_TRY("ck_residual_add", ck_residual_add(B[B_ATTN_OUT], B[B_X], T * h, c->dtype, c->stream));
        return 0;
    case PDBX_OP_MLP_RESIDUAL:    /* the next layer's input = MLP output + hidden */
        CU_TRY("ck_residual_add", ck_residual_add(B[B_X], B[B_ATTN_OUT], T * h, c->dtype, c->stream));
        return 0;
    case PDBX_OP_ATTN_CORE:
        return cuda_attention_enqueue(c->gemm, &pt->attn, B[B_Q], B[B_K], B[B_V], B[B_SCORES],
                                      B[B_CTX], c->stream, err, errlen);
    case PDBX_OP_ATTN_O: return enqueue_linear(c, op, B[B_CTX], W[W_O], W[W_BO], B[B_ATTN_OUT], err, errlen);
    case PDBX_OP_POST_ATTN_NORM:
        CU_TRY("ck_rmsnorm", ck_rmsnorm(B[B_ATTN_OUT], W[W_POST_NORM], B[B_XN2], T, h, RMS_EPS,
                                        c->dtype, c->stream));
        return 0;
    case PDBX_OP_MLP_GATE:
        if (pt->d.ops & CUDA_FUSED_FC1)   /* Megatron's linear_fc1: one [T, 2 I] GEMM */
            return enqueue_linear(c, op, B[B_XN2], W[W_FC1], W[W_BFC1], B[B_FC1], err, errlen);
        return enqueue_linear(c, op, B[B_XN2], W[W_GATE], W[W_BGATE], B[B_GATE], err, errlen);
    case PDBX_OP_MLP_UP: return enqueue_linear(c, op, B[B_XN2], W[W_UP], W[W_BUP], B[B_UP], err, errlen);
    case PDBX_OP_MLP_ACT_FN:
        CU_TRY("ck_silu_mul", ck_silu_mul(B[B_GATE], B[B_UP], B[B_ACT], T * pt->d.inter, c->dtype,
                                          c->stream));
        return 0;
    case PDBX_OP_MLP_DOWN: return enqueue_linear(c, op, B[B_ACT], W[W_DOWN], W[W_BDOWN], B[B_X], err, errlen);
    case PDBX_OP_FINAL_NORM:
        CU_TRY("ck_rmsnorm", ck_rmsnorm(B[B_X], B[B_FINAL_W], B[B_XF], T, h, RMS_EPS, c->dtype,
                                        c->stream));
        return 0;
    case PDBX_OP_LM_HEAD:
        return enqueue_linear(c, op, B[B_XF], pt->d.tied ? B[B_EMBED] : B[B_LM_W], NULL, B[B_LOGITS],
                              err, errlen);
    default:
        snprintf(err, errlen, "cuda run_op: op %d has no kernel", (int)op);
        return -1;
    }
fail:
    return rc;
}

static int cuda_run_op(pdbx_compute *c, pdbx_op op, pdbx_pass pass, int layer, double *ms,
                       char *err, size_t errlen)
{
    if (!c->point) {
        snprintf(err, errlen, "cuda run_op(%s): no point prepared", pdbx_op_name(op));
        return -1;
    }
    if ((int)pass < 0 || pass >= PDBX_PASS_COUNT) {
        snprintf(err, errlen, "cuda run_op(%s): pass %d (allowed: fwd, bwd)", pdbx_op_name(op),
                 (int)pass);
        return -1;
    }
    if (pass == PDBX_PASS_BWD && !c->point->bwd) {
        snprintf(err, errlen, "cuda run_op(%s): the bwd pass needs a point prepared with bwd in "
                 "its passes (no gradient buffers)", pdbx_op_name(op));
        return -1;
    }
    if ((int)op < 0 || op >= PDBX_OP_COUNT || pdbx_op_is_comm(op)) {
        snprintf(err, errlen, "cuda run_op: %s is not a compute op (comm ops are timed by the comm "
                 "backend)", pdbx_op_name(op));
        return -1;
    }
    if (!cuda_op_prepared(&c->point->d, op)) {
        snprintf(err, errlen, "cuda run_op(%s): op was not in the prepared op set", pdbx_op_name(op));
        return -1;
    }
    if (!pdbx_op_is_per_layer(op))
        layer = 0;
    if (layer < 0 || layer >= c->point->d.layers) {
        snprintf(err, errlen, "cuda run_op(%s): layer %d (allowed: 0..%d)", pdbx_op_name(op), layer,
                 c->point->d.layers - 1);
        return -1;
    }
    int rc = cuda_timer_start(c, err, errlen);
    if (rc == 0)   /* both passes between the same two events */
        rc = pass == PDBX_PASS_BWD ? cuda_bwd_enqueue(c, op, layer, err, errlen)
                                   : enqueue_op(c, op, layer, err, errlen);
    if (rc == 0)
        return cuda_timer_stop(c, ms, err, errlen);
    cudaStreamSynchronize(c->stream);   /* leave nothing half-enqueued behind */
    (void)cudaGetLastError();
    return rc;
}

static double cuda_checksum(pdbx_compute *c)
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
static int cuda_mem_peak(pdbx_compute *c, double *peak_bytes, double *base_bytes)
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

#ifdef PDBX_CUDA_NO_NCCL   /* built where nccl.h is missing: no comm backend of our own */
#define CUDA_COMM_OPS NULL
#else
#define CUDA_COMM_OPS (&cuda_nccl_comm_ops)
#endif

/* Attention with a KV cache (backend.h attn_kv) is not implemented for cuda yet: the planner
 * refuses a kv_cache grid for backend cuda (plan_infer.c) and the engine for an auto backend
 * resolved to cuda, so this answer is reached only by a caller that skipped both. */
static int cuda_attn_kv(pdbx_compute *c, const pdbx_attn_kv_shape *s, double *ms, char *err,
                        size_t errlen)
{
    (void)c;
    (void)s;
    (void)ms;
    snprintf(err, errlen, "attn_kv: attention with a KV cache is not implemented for backend cuda");
    return -1;
}

/* ---- entry -------------------------------------------------------------------------------- */

static const pdbx_compute_ops cuda_compute_ops = PDBX_COMPUTE_OPS("cuda", cuda);

__attribute__((visibility("default"))) const pdbx_backend_entry *pdbx_backend_entry_v1(void);

static const pdbx_backend_entry cuda_entry = {
    .abi = PDBX_BACKEND_ABI,
    .compute = &cuda_compute_ops,
    .comm = CUDA_COMM_OPS,
    .probe = cuda_probe,
};

const pdbx_backend_entry *pdbx_backend_entry_v1(void)
{
    return &cuda_entry;
}
