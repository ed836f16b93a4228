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

#include "engine/backends/cuda/cuda_arch.h"
#include "engine/backends/cuda/cuda_attention.h"
#include "engine/backends/cuda/cuda_bufs.h"
#include "engine/backends/cuda/cuda_memtally.h"
#include "engine/backends/cuda/cuda_gemm.h"
#include "engine/backends/cuda/cuda_kernels.h"
#include "engine/backends/cuda/cuda_mla.h"
#include "engine/backends/cuda/cuda_moe.h"

/* ---- point buffers -----------------------------------------------------------------------
 * Which buffers a point has and their sizes are cuda_bufs.c's; the planner lists the same
 * (engine/plan/plan_profile_memory_cuda.c) to predict a point's profile memory, which decides
 * the OOM stop of an MBS sweep: a buffer added, dropped or resized there must change in the
 * planner too. This backend does not allocate from the planner's list (as the cpu backend
 * does) because libpdbx_cuda.so links none of the planner; tests/cuda/test_cuda_dense_point.c
 * holds the two equal. */

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
    cuda_moe_free(pt->moe);
    free(pt);   /* gemm plans belong to the gemm cache */
}

int cuda_fill_buf(pdbx_compute *c, const cuda_dims *d, void *p, const cuda_buf *b, uint64_t seed,
                  char *err, size_t errlen)
{
    int rc = -1;
    char call[96];
    snprintf(call, sizeof call, "fill(%s)", b->name);
    switch (b->fill) {
    case CUDA_FILL_IDS:
        CU_TRY(call, ck_fill_tokens(p, b->elems, (int32_t)d->vocab_full, seed, c->stream));
        break;
    case CUDA_FILL_WEIGHT:   /* std 0.02, as HF initialises Llama linear layers */
        CU_TRY(call, ck_fill_uniform(p, b->elems, c->dtype, seed, -0.0346f, 0.0346f, c->stream));
        break;
    case CUDA_FILL_NORM_W:
        CU_TRY(call, ck_fill_uniform(p, b->elems, c->dtype, seed, 0.9f, 1.1f, c->stream));
        break;
    case CUDA_FILL_BIAS:   /* O(0.1), a trained bias's (and wpe's) size, the cpu backend's too */
        CU_TRY(call, ck_fill_uniform(p, b->elems, c->dtype, seed, -0.1f, 0.1f, c->stream));
        break;
    case CUDA_FILL_ROPE:   /* the real table of the rotated dims (plan.h, PDBX_ROPE_THETA) */
        CU_TRY(call, ck_rope_table(p, d->seq, d->rot, PDBX_ROPE_THETA, c->stream));
        break;
    case CUDA_FILL_STATS:   /* a forward's row mean and rstd, so a bwd timed first reads such */
        CU_TRY(call, ck_fill_uniform(p, b->elems, PDBX_DTYPE_FP32, seed, 0.9f, 1.1f, c->stream));
        break;
    case CUDA_FILL_ZERO32:   /* the lse (a forward writes it), weight gradients */
    case CUDA_FILL_ZERO_I32: case CUDA_FILL_ZERO_I64:   /* MoE ids and index: cuda_moe_prepare's */
        CU_TRY(call, cudaMemsetAsync(p, 0, b->bytes, c->stream));
        break;
    default:   /* activations and their gradients */
        CU_TRY(call, ck_fill_uniform(p, b->elems, c->dtype, seed, -1.0f, 1.0f, c->stream));
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

/* The model's kinds the kernels and buffers follow (cuda_dims), and a refusal of what this
 * backend has no kernel for (pdbx_backend_model_check refuses the same models earlier). */
static int model_kinds(const pdbx_point_shapes *p, cuda_dims *d, char *err, size_t errlen)
{
    const pdbx_model *m = &p->model;
    const pdbx_arch *a = &m->arch;
    d->layernorm = a->norm == PDBX_NORM_LAYER;
    d->act = cuda_activation_of(a->activation);
    d->mlp_plain = a->mlp_plain != 0;
    d->parallel_residual = a->parallel_residual != 0;
    d->rot = cuda_rotary_dims(m->head_dim, a->rotary_fraction);
    d->pos_rows = a->position == PDBX_POS_LEARNED ? a->max_positions : 0;
    if (d->act == PDBX_ACT_OTHER || (d->mlp_plain && d->act == PDBX_ACT_SILU)) {
        snprintf(err, errlen, "cuda prepare: model '%s': a %s MLP with activation '%s' has no kernel "
                 "(allowed: silu gated, gelu gated or plain)", m->name, d->mlp_plain ? "plain" : "gated",
                 a->activation);
        return -1;
    }
    if (a->position == PDBX_POS_LEARNED && d->pos_rows < p->seq_len) {
        snprintf(err, errlen, "cuda prepare: seq_len %d is longer than model '%s''s position table of "
                 "%lld rows", p->seq_len, m->name, (long long)d->pos_rows);
        return -1;
    }
    const int w = a->sliding_window.size;
    d->window = a->sliding_window.layers != PDBX_SW_NONE && w > 0 && w < p->seq_len ? w : 0;
    d->window_alternating = a->sliding_window.layers == PDBX_SW_ALTERNATING;
    d->attn_softcap = a->attn_softcap > 0 && a->attn_softcap < INFINITY ? (float)a->attn_softcap : 0.0f;
    d->final_softcap = a->final_softcap > 0 && a->final_softcap < INFINITY ? (float)a->final_softcap : 0.0f;
    if (d->window && a->sliding_window.layers == PDBX_SW_SOME) {   /* no layer subset to profile */
        snprintf(err, errlen, "cuda prepare: model '%s': a sliding window of %d on some layers, shorter "
                 "than seq_len %d (allowed: on every layer or on alternate layers)", m->name, w, p->seq_len);
        return -1;
    }
    if (cuda_mla_kinds(p, d, err, errlen) != 0)   /* qk_norm, MLA (cuda_mla.c; MLA's rot) */
        return -1;
    if ((d->ops & PDBX_OP_BIT(PDBX_OP_ATTN_ROPE)) && (d->rot < 2 || d->rot > m->head_dim)) {
        snprintf(err, errlen, "cuda prepare: attn_rope rotates %lld dims of head_dim %d (allowed: "
                 "2..head_dim)", (long long)d->rot, m->head_dim);
        return -1;
    }
    return 0;
}

int cuda_point_dims(const pdbx_point_shapes *p, int world_rank, cuda_dims *d, char *err,
                    size_t errlen)
{
    const pdbx_model *m = &p->model;
    int tp = p->tp;
    memset(d, 0, sizeof *d);   /* every field this does not set (MLA's at a dense model) is 0 */
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
    if (model_kinds(p, d, err, errlen) != 0 || cuda_moe_dims_of(p, &d->moe, err, errlen) != 0)
        return -1;

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
    const int64_t rq = d->mla.rq, rkv = d->mla.rkv, rope = d->mla.rope;
    const int64_t kvbd = d->heads * (d->mla.nope + d->mla.dv);   /* kv_b: each head's k_nope, v */
    const cuda_linear_op lin[CUDA_LINEAR_OPS] = {
        {PDBX_OP_ATTN_Q, qd, h}, {PDBX_OP_ATTN_K, kvd, h}, {PDBX_OP_ATTN_V, kvd, h},
        {PDBX_OP_ATTN_O, h, d->heads * cuda_v_dim(d)}, {PDBX_OP_MLP_GATE, d->inter, h},
        {PDBX_OP_MLP_UP, d->inter, h}, {PDBX_OP_MLP_DOWN, h, d->inter}, {PDBX_OP_LM_HEAD, d->vocab, h},
        {PDBX_OP_ATTN_Q_A, rq, h}, {PDBX_OP_ATTN_Q_B, qd, rq}, {PDBX_OP_ATTN_KV_A, rkv + rope, h},
        {PDBX_OP_ATTN_KV_B, kvbd, rkv},
    };
    memcpy(out, lin, sizeof lin);
    return d->mla.on ? CUDA_LINEAR_OPS : CUDA_LINEAR_OPS - 4;   /* MLA's last */
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
    const cuda_buf_path path = {c->dtype, c->flash_attention, bwd};
    int rc = 0;
    uint64_t seed = FILL_SEED ^ ((uint64_t)c->world_rank << 32);
    for (int b = 0; b < B_COUNT && rc == 0; b++) {
        const cuda_buf buf = cuda_point_buf(&pt->d, &path, b);
        if (!buf.used)
            continue;
        pt->bytes[b] = buf.bytes;
        rc = cuda_alloc_buf(&pt->buf[b], buf.bytes, buf.name, err, errlen);
        if (rc == 0)
            rc = cuda_fill_buf(c, &pt->d, pt->buf[b], &buf, seed + (uint64_t)b, err, errlen);
    }
    /* copies of the layers' weights until they total >= 3x L2 (the planner counts the same) */
    pt->wcopies = pdbx_cuda_weight_copies(cuda_layer_set_bytes(&pt->d, &path), pt->d.layers,
                                          (double)c->prop.l2CacheSize);
    const size_t sets = (size_t)pt->wcopies * pt->d.layers;
    pt->w = calloc(sets * W_COUNT, sizeof *pt->w);
    pt->wnext = calloc((size_t)pt->d.layers * PDBX_OP_COUNT, sizeof *pt->wnext);
    if (rc == 0 && (!pt->w || !pt->wnext)) {
        snprintf(err, errlen, "cuda prepare: out of host memory");
        rc = -1;
    }
    for (size_t set = 0; set < sets && rc == 0; set++)
        for (int w = 0; w < W_COUNT && rc == 0; w++) {
            cuda_buf buf = cuda_layer_buf(&pt->d, &path, w);
            if (!buf.used)
                continue;
            void **slot = &pt->w[set * W_COUNT + w];
            pt->wbytes[w] = buf.bytes;
            char name[80];
            snprintf(name, sizeof name, "layer %d %s (copy %d)", (int)(set % (size_t)pt->d.layers),
                     buf.name, (int)(set / (size_t)pt->d.layers));
            buf.name = name;
            rc = cuda_alloc_buf(slot, buf.bytes, name, err, errlen);
            if (rc == 0)
                rc = cuda_fill_buf(c, &pt->d, *slot, &buf, seed + 0x1000u * (uint64_t)(set + 1) + (uint64_t)w,
                                   err, errlen);
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
    /* the model's window and cap: the plans are every layer's; with flash_attention either is
     * refused by name (the fused kernel runs plain causal attention only) */
    const cuda_attention_opts o = {pt->d.window, pt->d.attn_softcap, pt->d.mla.on ? pt->d.mla.dv : 0};
    return cuda_attention_plan_opts(c->gemm, &attn_dims, &o, &pt->attn, err, errlen);
}

cuda_attention_opts cuda_layer_attn_opts(const cuda_dims *d, int layer)
{
    const int local = !d->window_alternating || layer % 2 == 0;   /* gemma-2: even layers */
    return (cuda_attention_opts){.window = local ? d->window : 0, .softcap = d->attn_softcap,
                                 .v_dim = d->mla.on ? d->mla.dv : 0};
}

cuda_attention cuda_point_attn(const struct cuda_point *pt, int layer)
{
    cuda_attention a = pt->attn;
    const cuda_attention_opts o = cuda_layer_attn_opts(&pt->d, layer);
    a.opts.window = o.window;     /* 0 or < seq: normalised as cuda_attention_plan_opts does */
    a.opts.softcap = o.softcap;
    return a;
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
    if (pt->d.ops & PDBX_OPS_MOE) {   /* cuda_moe.c: the assignment, its index, the plans */
        rc = cuda_moe_prepare(c, pt, err, errlen);
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
    const cuda_buf_path path = {c->dtype, c->flash_attention, pt->bwd};
    if (cudaMemsetAsync(c->checksum_dev, 0, sizeof(double), c->stream) != cudaSuccess)
        goto fail;
    for (int b = 0; b < B_COUNT; b++) {
        const cuda_buf buf = cuda_point_buf(&pt->d, &path, b);
        if (!pt->buf[b] || buf.fill != CUDA_FILL_ACT)
            continue;
        if (ck_accumulate_sum(pt->buf[b], buf.elems, c->dtype, c->checksum_dev,
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

