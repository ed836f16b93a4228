/* cpu_memory.c: a point's buffers on the cpu backend (cpu_internal.h, cpu_compute.h's memory
 * policy): planned sizes first, the MemAvailable guard, then allocation and real values. */
#include "engine/backends/cpu/cpu_internal.h"
#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/host.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void cpu_release(pdbx_compute *c)
{
    for (int i = 0; i < c->nbufs; i++)
        free(c->bufs[i]);
    c->nbufs = 0;
    free(c->comm_buf);
    c->comm_buf = NULL;
    c->comm_bytes = 0;
    c->prepared = 0;
    c->ids = NULL;
    c->emb_out = NULL;
    c->x = c->xn = c->q = c->k = c->v = c->ctx = c->y = c->yn = c->g = c->u = c->act = NULL;
    c->logits = c->attn_scratch = c->rope = c->norm_mean = c->norm_rstd = NULL;
    c->xn_b = c->ctx_b = c->yn_b = c->act_b = NULL;
    memset(&c->grad, 0, sizeof c->grad);   /* freed with the point's other buffers */
    pdbx_cpu_mla_forget(c, 0);
    pdbx_cpu_opt_forget(c, 0);
    pdbx_cpu_moe_release(c);
    pdbx_cpu_free_kv(c);
}

void pdbx_cpu_free_weights(pdbx_compute *c)
{
    for (int i = 0; i < c->nw; i++)
        free(c->wbufs[i]);
    c->nw = 0;
    c->have_weights = 0;
    c->emb_table = c->wlm = NULL;
    c->norm_w = c->norm_b = c->pos = c->qk_norm_w = NULL;
    memset(c->layer, 0, sizeof c->layer);
    pdbx_cpu_mla_forget(c, 1);
    pdbx_cpu_opt_forget(c, 1);
}

/* Allocation accounting: the first pass adds sizes (alloc == 0), the second allocates. */
typedef struct {
    pdbx_compute *c;
    int alloc;
    int weights;               /* allocations go to the weight list */
    int failed;
} alloc_pass;

static void *take(alloc_pass *ap, size_t bytes)
{
    pdbx_compute *c = ap->c;
    if (!ap->alloc) {
        c->planned += bytes;
        return NULL;
    }
    if (ap->failed)
        return NULL;
    void **list = ap->weights ? c->wbufs : c->bufs;
    int *n = ap->weights ? &c->nw : &c->nbufs;
    if (*n >= MAX_BUFS) {
        ap->failed = 1;
        return NULL;
    }
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes) != 0) {
        ap->failed = 1;
        return NULL;
    }
    list[(*n)++] = p;
    return p;
}

/* Commits the pages of x[first, last) (the whole pages inside it) in one system call,
 * MADV_POPULATE_WRITE (Linux 5.14): the kernel allocates and zeroes them without a page fault
 * per 4 KiB page, the largest part of a first touch on a virtual machine. Where the call is
 * missing the stores that follow fault the pages in as before. */
static void populate(unsigned char *x, size_t first, size_t last)
{
#ifdef MADV_POPULATE_WRITE
    const uintptr_t page = 4096;
    uintptr_t a = ((uintptr_t)(x + first) + page - 1) & ~(page - 1), b = (uintptr_t)(x + last) & ~(page - 1);
    if (b > a)
        (void)madvise((void *)a, b - a, MADV_POPULATE_WRITE);
#else
    (void)x;
    (void)first;
    (void)last;
#endif
}

/* Fills x[0..n) with pseudo-random values in [-scale, scale]: FILL_BLOCK random elements,
 * then copies of them (memcpy runs at memory speed; generating every element of a GB-sized
 * weight would dominate the sweep's overhead). The values are real and varied, which is all the
 * timing needs (no zeros, no denormals, no NaN); the period is FILL_BLOCK elements, the same
 * on any thread count. Most of a fill's time is the first touch of fresh pages, so the copies
 * are chunks taken by the backend's pool, each chunk's pages committed first (populate).
 * Transparent huge pages (MADV_HUGEPAGE) were measured and left out: on this project's
 * virtual machines free 2 MiB blocks are the ones the host has reclaimed, and a buffer of them
 * took 4 times longer to commit than one of 4 KiB pages. */
#define FILL_BLOCK 65536
typedef struct {
    unsigned char *b;
    size_t total, block;       /* bytes of the buffer and of its random head block */
} tile_job;

/* One chunk: one block-sized piece after the head (256 KiB in fp32: the source stays in L2),
 * its pages committed first. */
static void tile_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const tile_job *J = arg;
    size_t pos = J->block * (size_t)(chunk + 1);
    size_t n = J->total - pos < J->block ? J->total - pos : J->block;
    populate(J->b, pos, pos + n);
    memcpy(J->b + pos, J->b, n);
}

static void tile(pdbx_cpu_pool *pool, void *x, size_t n, size_t esz)
{
    size_t have = n < FILL_BLOCK ? n : FILL_BLOCK;
    tile_job J = { .b = x, .total = n * esz, .block = have * esz };
    if (J.total > J.block)
        pdbx_cpu_pool_for(pool, (long long)((J.total - J.block + J.block - 1) / J.block), tile_chunk, &J);
}

/* Zeros an output buffer whose values no op reads before writing them (the embedding output,
 * the logits, the attention scratch): committed by populate, then zeroed (a recycled heap
 * block holds the previous point's bytes; zeros keep the checksum of a point whose ops leave
 * the buffer unwritten the same from run to run). Split over the pool like a fill. */
typedef struct {
    unsigned char *b;
    size_t bytes;
} zero_job;

#define ZERO_CHUNK ((size_t)1 << 20)

static void zero_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const zero_job *J = arg;
    size_t pos = ZERO_CHUNK * (size_t)chunk;
    size_t n = J->bytes - pos < ZERO_CHUNK ? J->bytes - pos : ZERO_CHUNK;
    populate(J->b, pos, pos + n);
    memset(J->b + pos, 0, n);
}

static void fill_zero(pdbx_cpu_pool *pool, void *x, size_t bytes)
{
    if (!x || !bytes)
        return;
    zero_job J = { .b = x, .bytes = bytes };
    pdbx_cpu_pool_for(pool, (long long)((bytes + ZERO_CHUNK - 1) / ZERO_CHUNK), zero_chunk, &J);
}

static void fill_f32(pdbx_cpu_pool *pool, float *x, size_t n, float scale, uint64_t seed)
{
    if (!x)
        return;
    pdbx_k_fill_uniform(x, n < FILL_BLOCK ? n : FILL_BLOCK, scale, seed);
    tile(pool, x, n, sizeof *x);
}

/* Same for n elements of esz bytes (fp32 or bf16). */
static void fill_elems(pdbx_cpu_pool *pool, void *x, size_t n, size_t esz, float scale,
                       uint64_t seed)
{
    if (!x)
        return;
    if (esz == 4) {
        fill_f32(pool, x, n, scale, seed);
        return;
    }
    uint16_t *b = x;
    float tmp[1024];
    size_t head = n < FILL_BLOCK ? n : FILL_BLOCK;
    for (size_t i = 0; i < head; i += 1024) {
        size_t m = head - i < 1024 ? head - i : 1024;
        pdbx_k_fill_uniform(tmp, m, scale, seed + i);
        for (size_t j = 0; j < m; j++)
            b[i + j] = pdbx_k_f32_to_bf16(tmp[j]);
    }
    tile(pool, x, n, esz);
}

void pdbx_cpu_fill_f32(pdbx_compute *c, float *x, size_t n, float scale, uint64_t seed)
{
    fill_f32(c->pool, x, n, scale, seed);
}

void pdbx_cpu_fill_zero(pdbx_compute *c, void *x, size_t bytes)
{
    fill_zero(c->pool, x, bytes);
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Where the buffer of a listed role lives (layer: the per-layer weights' layer). */
static void **role_slot(pdbx_compute *c, pdbx_buf_role r, int layer)
{
    cpu_layer *L = &c->layer[layer];
    switch (r) {
    case PDBX_BUF_TOKEN_IDS: return (void **)&c->ids;
    case PDBX_BUF_EMBED_OUT: return &c->emb_out;
    case PDBX_BUF_HIDDEN: return (void **)&c->x;
    case PDBX_BUF_NORM_OUT: return (void **)&c->xn;
    case PDBX_BUF_Q: return (void **)&c->q;
    case PDBX_BUF_K: return (void **)&c->k;
    case PDBX_BUF_V: return (void **)&c->v;
    case PDBX_BUF_CONTEXT: return (void **)&c->ctx;
    case PDBX_BUF_ATTN_OUT: return (void **)&c->y;
    case PDBX_BUF_POST_NORM_OUT: return (void **)&c->yn;
    case PDBX_BUF_GATE: return (void **)&c->g;
    case PDBX_BUF_UP: return (void **)&c->u;
    case PDBX_BUF_ACT: return (void **)&c->act;
    case PDBX_BUF_LOGITS: return (void **)&c->logits;
    case PDBX_BUF_ATTN_SCRATCH: return (void **)&c->attn_scratch;
    case PDBX_BUF_NORM_OUT_LP: return &c->xn_b;
    case PDBX_BUF_CONTEXT_LP: return &c->ctx_b;
    case PDBX_BUF_POST_NORM_OUT_LP: return &c->yn_b;
    case PDBX_BUF_ACT_LP: return &c->act_b;
    case PDBX_BUF_EMBED_TABLE: return &c->emb_table;
    case PDBX_BUF_NORM_W: return (void **)&c->norm_w;
    case PDBX_BUF_LM_HEAD_W: return &c->wlm;
    case PDBX_BUF_L_Q: return &L->wq;
    case PDBX_BUF_L_K: return &L->wk;
    case PDBX_BUF_L_V: return &L->wv;
    case PDBX_BUF_L_O: return &L->wo;
    case PDBX_BUF_L_GATE: return &L->wg;
    case PDBX_BUF_L_UP: return &L->wu;
    case PDBX_BUF_L_DOWN: return &L->wd;
    case PDBX_BUF_QKV_FUSED: return (void **)&c->qkv;
    case PDBX_BUF_ROPE_TABLE: return (void **)&c->rope;
    case PDBX_BUF_NORM_B: return (void **)&c->norm_b;
    case PDBX_BUF_NORM_MEAN: return (void **)&c->norm_mean;
    case PDBX_BUF_NORM_STATS_RSTD: return (void **)&c->norm_rstd;
    case PDBX_BUF_POS_TABLE: return (void **)&c->pos;
    case PDBX_BUF_QK_NORM_W: return (void **)&c->qk_norm_w;
    case PDBX_BUF_GATE_UP_FUSED: return (void **)&c->fc1;
    case PDBX_BUF_L_QKV_FUSED: return &L->wqkv;
    case PDBX_BUF_L_GATE_UP_FUSED: return &L->wfc1;
    case PDBX_BUF_L_Q_BIAS: return (void **)&L->bq;
    case PDBX_BUF_L_K_BIAS: return (void **)&L->bk;
    case PDBX_BUF_L_V_BIAS: return (void **)&L->bv;
    case PDBX_BUF_L_O_BIAS: return (void **)&L->bo;
    case PDBX_BUF_L_GATE_BIAS: return (void **)&L->bg;
    case PDBX_BUF_L_UP_BIAS: return (void **)&L->bu;
    case PDBX_BUF_L_DOWN_BIAS: return (void **)&L->bd;
    case PDBX_BUF_L_QKV_FUSED_BIAS: return (void **)&L->bqkv;
    case PDBX_BUF_L_GATE_UP_FUSED_BIAS: return (void **)&L->bfc1;
    default: {   /* MLA's (cpu_mla.c), a MoE layer's (cpu_moe.c), the bwd buffers (cpu_backward.c) */
        void **mla = pdbx_cpu_mla_slot(c, r, layer);
        void **moe = mla ? NULL : pdbx_cpu_moe_slot(c, r, layer);
        void **opt = mla || moe ? NULL : pdbx_cpu_opt_slot(c, r);
        return mla ? mla : moe ? moe : opt ? opt : pdbx_cpu_grad_slot(c, r);
    }
    }
}

/* Plans (ap->alloc == 0) or performs the allocations of the listed buffers of one kind
 * (activations and workspace, or weights): exactly the planner's list (plan.h, profile
 * memory), so the predicted profile memory is what this backend allocates. */
static void layout(alloc_pass *ap, int weights)
{
    pdbx_compute *c = ap->c;
    const pdbx_profile_memory *pm = &c->mem;
    for (int i = 0; i < pm->nbufs; i++) {
        const pdbx_profile_buf *b = &pm->buf[i];
        if (b->kind == PDBX_MEM_COMM || (b->kind == PDBX_MEM_WEIGHTS) != weights)
            continue;   /* the comm buffer comes from comm_buffer(), asked by the engine */
        for (int l = 0; l < b->count; l++) {
            void **slot = role_slot(c, b->role, l);
            void *p = take(ap, (size_t)b->bytes);
            if (slot)
                *slot = p;
        }
    }
}

/* Per-rank dimensions of the point (TP shards heads, intermediate and vocabulary). 0 or -1. */
static int point_dims(pdbx_compute *c, const pdbx_point_shapes *p, char *err, size_t errlen)
{
    const pdbx_model *m = &p->model;
    if (p->tp < 1 || p->mbs < 1 || p->seq_len < 1 || p->layers < 1 || p->layers > MAX_LAYERS ||
        m->hidden < 1 || m->heads < 1 || m->head_dim < 1 || m->kv_heads < 1 ||
        m->intermediate < 1 || m->vocab < 1 || m->heads % p->tp || m->intermediate % p->tp) {
        snprintf(err, errlen, "cpu backend: unsupported point shape (tp %d, mbs %d, seq_len %d, "
                 "layers %d, allowed layers 1..%d)", p->tp, p->mbs, p->seq_len, p->layers, MAX_LAYERS);
        return -1;
    }
    c->T = (int64_t)p->mbs * p->seq_len;
    c->h = m->hidden;
    c->heads = m->heads / p->tp;
    /* MLA: every head its own k and v (kv_b's per-head k_nope and v) */
    const int mla = m->arch.attention == PDBX_ATTN_MLA;
    c->kv_heads = mla ? c->heads : max64(m->kv_heads / p->tp, 1);
    c->d = m->head_dim;
    c->dvh = mla ? m->arch.mla.v_head_dim : c->d;
    c->rot = pdbx_rotary_dims(m);
    c->qd = c->heads * c->d;
    c->kvd = c->kv_heads * c->d;
    c->vd = c->kv_heads * c->dvh;
    c->ctxd = c->heads * c->dvh;
    c->inter = m->intermediate / p->tp;
    c->vloc = (m->vocab + p->tp - 1) / p->tp;   /* the last shard padded, as the planner's */
    c->nlayers = p->layers;
    pdbx_cpu_moe_dims(c);
    if (c->moe.E > 0 && c->esz != 4) {   /* cpu_kernels_moe.h: fp32 kernels (the planner refuses it too) */
        snprintf(err, errlen, "dtype: bf16: the cpu backend runs model %s's mixture-of-experts ops in fp32 only "
                 "(allowed: fp32)", m->name);
        return -1;
    }
    if (c->heads % c->kv_heads) {
        snprintf(err, errlen, "cpu backend: %lld local heads not a multiple of %lld kv heads",
                 (long long)c->heads, (long long)c->kv_heads);
        return -1;
    }
    return 0;
}

/* The memory guard: PDBX_EOOM when this point's buffers times the ranks on this node would
 * exceed 95% of MemAvailable (before any malloc), else 0. */
static int check_budget(pdbx_compute *c, char *err, size_t errlen)
{
    uint64_t avail = 0, total = 0;
    if (pdbx_host_meminfo(&avail, &total) != 0)
        return 0;
    int ranks_here = c->cfg.local_size > 0 ? c->cfg.local_size : 1;
    double need = (double)c->planned * ranks_here;
    double budget = (double)avail * 0.95;
    if (need <= budget)
        return 0;
    snprintf(err, errlen, "would exceed MemAvailable: %.2f GiB per rank x %d ranks on this "
             "node > %.2f GiB available", c->planned / 1073741824.0, ranks_here,
             budget / 1073741824.0);
    c->planned = 0;
    return PDBX_EOOM;
}

/* Plans, guards and allocates the activations (and the weights when new_weights). */
static int alloc_point(pdbx_compute *c, int new_weights, char *err, size_t errlen)
{
    alloc_pass ap = { .c = c, .alloc = 0 };
    c->planned = 0;
    layout(&ap, 0);
    if (new_weights) {
        ap.weights = 1;
        layout(&ap, 1);
    }
    int rc = check_budget(c, err, errlen);
    if (rc != 0)
        return rc;
    ap.alloc = 1;
    ap.weights = 0;
    layout(&ap, 0);
    if (new_weights && !ap.failed) {
        ap.weights = 1;
        layout(&ap, 1);
    }
    if (!ap.failed)
        return 0;
    snprintf(err, errlen, "allocation of %.2f GiB failed: %s", c->planned / 1073741824.0,
             strerror(ENOMEM));
    cpu_release(c);
    if (new_weights)
        pdbx_cpu_free_weights(c);
    return PDBX_EOOM;
}

/* Real values in every activation an op reads; the pure outputs (embedding output, logits,
 * attention scratch) zeros. Returns the next seed. */
static uint64_t fill_acts(pdbx_compute *c, int vocab, uint64_t seed)
{
    const int64_t T = c->T, h = c->h;
    const size_t e = c->esz;
    pdbx_cpu_pool *pool = c->pool;
    for (int64_t i = 0; i < T; i++)
        c->ids[i] = (int32_t)(((uint64_t)i * 2654435761u + seed) % (uint64_t)vocab);
    fill_zero(pool, c->emb_out, (size_t)(T * h) * e);
    seed++;
    fill_f32(pool, c->x, (size_t)(T * h), 1.0f, seed++);
    fill_f32(pool, c->xn, (size_t)(T * h), 1.0f, seed++);
    fill_f32(pool, c->q, (size_t)(T * c->qd), 1.0f, seed++);
    fill_f32(pool, c->k, (size_t)(T * c->kvd), 1.0f, seed++);
    fill_f32(pool, c->v, (size_t)(T * c->vd), 1.0f, seed++);
    fill_f32(pool, c->ctx, (size_t)(T * c->ctxd), 1.0f, seed++);
    fill_f32(pool, c->y, (size_t)(T * h), 1.0f, seed++);
    fill_f32(pool, c->yn, (size_t)(T * h), 1.0f, seed++);
    fill_f32(pool, c->g, (size_t)(T * c->inter), 1.0f, seed++);
    fill_f32(pool, c->u, (size_t)(T * c->inter), 1.0f, seed++);
    fill_f32(pool, c->act, (size_t)(T * c->inter), 1.0f, seed++);
    fill_zero(pool, c->attn_scratch,
                pdbx_k_attention_scratch_floats(c->p.seq_len, c->d, c->cfg.blas_threads) * sizeof(float));
    seed++;
    fill_elems(pool, c->xn_b, (size_t)(T * h), e, 1.0f, seed++);
    fill_elems(pool, c->ctx_b, (size_t)(T * c->ctxd), e, 1.0f, seed++);
    fill_elems(pool, c->yn_b, (size_t)(T * h), e, 1.0f, seed++);
    fill_elems(pool, c->act_b, (size_t)(T * c->inter), e, 1.0f, seed++);
    fill_zero(pool, c->logits, (size_t)(T * c->vloc) * sizeof(float));
    seed++;
    fill_zero(pool, c->qkv, (size_t)(T * (c->qd + 2 * c->kvd)) * sizeof(float));   /* pure outputs */
    fill_zero(pool, c->fc1, (size_t)(T * 2 * c->inter) * sizeof(float));
    seed++;
    if (c->rope)   /* the real table of the point's positions (plan.h, PDBX_ROPE_THETA) */
        pdbx_k_rope_table(c->p.seq_len, c->rot, PDBX_ROPE_THETA, c->rope, c->rope + c->p.seq_len * (c->rot / 2));
    /* LayerNorm's row statistics: the forward writes them; until it has, a mean of O(1) and
     * an rstd of 1, as a normalised row would have */
    if (c->norm_mean)   /* (a Llama's seeds, and so its fills, stay as they were) */
        fill_f32(pool, c->norm_mean, (size_t)T, 1.0f, seed++);
    for (int64_t i = 0; c->norm_rstd && i < T; i++)
        c->norm_rstd[i] = 1.0f;
    return seed;
}

/* Weights scaled 1/sqrt(fan_in) so activations stay O(1) and no denormals slow the kernels. */
static void fill_weights(pdbx_compute *c, uint64_t seed)
{
    const int64_t h = c->h;
    const size_t e = c->esz;
    pdbx_cpu_pool *pool = c->pool;
    float sh = 1.0f / sqrtf((float)h), sq = 1.0f / sqrtf((float)c->qd), si = 1.0f / sqrtf((float)c->inter);
    fill_elems(pool, c->emb_table, (size_t)(c->vloc * h), e, 1.0f, seed++);
    for (int64_t i = 0; i < h; i++)
        c->norm_w[i] = 1.0f + 0.01f * (float)(i % 7);
    fill_elems(pool, c->wlm, (size_t)(h * c->vloc), e, sh, seed++);
    for (int l = 0; l < c->nlayers; l++) {
        cpu_layer *L = &c->layer[l];
        fill_elems(pool, L->wq, (size_t)(h * c->qd), e, sh, seed++);
        fill_elems(pool, L->wk, (size_t)(h * c->kvd), e, sh, seed++);
        fill_elems(pool, L->wv, (size_t)(h * c->kvd), e, sh, seed++);
        fill_elems(pool, L->wo, (size_t)(c->ctxd * h), e, sq, seed++);
        fill_elems(pool, L->wg, (size_t)(h * c->inter), e, sh, seed++);
        fill_elems(pool, L->wu, (size_t)(h * c->inter), e, sh, seed++);
        fill_elems(pool, L->wd, (size_t)(c->inter * h), e, si, seed++);
        fill_elems(pool, L->wqkv, (size_t)(h * (c->qd + 2 * c->kvd)), e, sh, seed++);
        fill_elems(pool, L->wfc1, (size_t)(h * 2 * c->inter), e, sh, seed++);
        /* biases (fp32, where the projection has one): O(0.1) values as a trained bias */
        fill_elems(pool, L->bq, (size_t)c->qd, 4, 0.1f, seed++);
        fill_elems(pool, L->bk, (size_t)c->kvd, 4, 0.1f, seed++);
        fill_elems(pool, L->bv, (size_t)c->kvd, 4, 0.1f, seed++);
        fill_elems(pool, L->bo, (size_t)h, 4, 0.1f, seed++);
        fill_elems(pool, L->bg, (size_t)c->inter, 4, 0.1f, seed++);
        fill_elems(pool, L->bu, (size_t)c->inter, 4, 0.1f, seed++);
        fill_elems(pool, L->bd, (size_t)h, 4, 0.1f, seed++);
        fill_elems(pool, L->bqkv, (size_t)(c->qd + 2 * c->kvd), 4, 0.1f, seed++);
        fill_elems(pool, L->bfc1, (size_t)(2 * c->inter), 4, 0.1f, seed++);
    }
    /* the dense families' (NULL for a Llama): LayerNorm's bias as a trained one, O(0.1); GPT-2's
     * position rows, O(0.1) as its trained wpe */
    fill_elems(pool, c->norm_b, (size_t)h, 4, 0.1f, seed++);
    fill_elems(pool, c->pos, (size_t)c->p.model.arch.max_positions * h, 4, 0.1f, seed++);
    for (int64_t i = 0; c->qk_norm_w && i < 2 * c->d; i++)   /* as trained norm weights: ~1 */
        c->qk_norm_w[i] = 1.0f;
}

/* The measured peak starts here: what the previous point freed goes back to the system first
 * (malloc_trim: glibc keeps freed heap pages resident otherwise, and the next point would
 * reuse them unseen), then VmHWM is reset to VmRSS. The weights kept from the previous point
 * are this point's too: they are taken out of the baseline. */
static void mark_rss_base(pdbx_compute *c)
{
    double rss = 0, hwm = 0;
    malloc_trim(0);
    c->rss_measured = pdbx_host_rss_reset_peak() == 0 && pdbx_host_rss(&rss, &hwm) == 0 &&
                      pdbx_host_shadow_rss(&c->shadow_base) == 0;
    c->rss_base = rss - (c->have_weights ? c->mem.kind_bytes[PDBX_MEM_WEIGHTS] : 0);
}

/* The peak is what the point's buffers cost, the planner's list (plan.h): the shadow ASan's
 * checks faulted in since the baseline is the sanitizer's, not the point's, and is taken out
 * (host.h: 1/8 of the buffers on a kernel without the shared zero page, near 0 elsewhere; 0
 * without ASan). VmHWM has no parts, so what is taken out is the shadow's growth up to now,
 * not up to the peak: the same where it grew no further after the peak (the buffers' shadow
 * is faulted in by their fills at prepare, and they stay until release()); else the peak is
 * low by at most 1/8 of what the point first touched after it, or high by what ASan gave back. */
int cpu_mem_peak(pdbx_compute *c, double *peak_bytes, double *base_bytes)
{
    double rss = 0, hwm = 0, shadow = 0;
    if (!c->rss_measured || pdbx_host_rss(&rss, &hwm) != 0 || pdbx_host_shadow_rss(&shadow) != 0)
        return -1;
    *peak_bytes = hwm - c->rss_base - (shadow - c->shadow_base);
    *base_bytes = c->rss_base;
    return 0;
}

int cpu_prepare(pdbx_compute *c, const pdbx_point_shapes *p, char *err, size_t errlen)
{
    cpu_release(c);
    c->p = *p;
    c->esz = c->cfg.dtype == PDBX_DTYPE_BF16 ? 2 : 4;
    if (point_dims(c, p, err, errlen) != 0 || pdbx_cpu_mla_dims(c, err, errlen) != 0)
        return -1;
    /* the planner's list allocates a bias where the arch has one; run_op adds one where the
     * shape says so: the two must agree (a bias without its buffer, or one never added) */
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        if ((p->ops & PDBX_OP_BIT(op)) && p->shape[op].bias != pdbx_op_has_bias(&p->model, (pdbx_op)op)) {
            snprintf(err, errlen, "cpu backend: %s's shape says bias %d, the model's arch %d",
                     pdbx_op_name((pdbx_op)op), p->shape[op].bias, pdbx_op_has_bias(&p->model, (pdbx_op)op));
            return -1;
        }
    /* the planner's list of this point's buffers (pp, dp 1: the comm buffer is the engine's) */
    pdbx_profile_point pp = { .model = p->model, .tp = p->tp, .pp = 1, .dp = 1, .mbs = p->mbs,
                              .seq_len = p->seq_len, .layers = p->layers, .ops = p->ops,
                              .passes = p->passes, .ep = p->ep, .moe_imbalance = p->moe_imbalance,
                              .dtype = c->cfg.dtype, .backend = PDBX_BACKEND_CPU,
                              .threads = c->cfg.blas_threads,
                              .fused_projections = p->fused_projections };
    if (pdbx_profile_memory_list(&pp, &c->mem, err, errlen) != 0)
        return -1;
    /* weights are kept from the previous point when their shapes are the same */
    const pdbx_model *m = &p->model;
    const int64_t key[12] = { m->hidden, m->intermediate, m->heads, m->kv_heads, m->head_dim,
                              m->vocab, p->tp, p->layers, (int64_t)p->ops, (int64_t)c->esz,
                              p->fused_projections,
                              /* ep: a MoE layer holds E / ep experts */
                              m->arch.bias.qkv + 2 * m->arch.bias.attn_out + 4 * m->arch.bias.mlp +
                                  8 * (int64_t)(p->ep > 1 ? p->ep : 1) };
    if (c->have_weights && memcmp(key, c->wkey, sizeof key) != 0)
        pdbx_cpu_free_weights(c);
    int new_weights = !c->have_weights;
    mark_rss_base(c);
    int rc = alloc_point(c, new_weights, err, errlen);
    if (rc != 0)
        return rc;
    if (new_weights) {
        memcpy(c->wkey, key, sizeof key);
        c->have_weights = 1;
    }
    uint64_t seed = fill_acts(c, m->vocab, 1000u + (uint64_t)c->cfg.world_rank * 7919u);
    if (new_weights)
        fill_weights(c, seed);
    seed = pdbx_cpu_fill_grads(c, seed + 64);   /* bwd buffers, when listed (cpu_backward.c) */
    pdbx_cpu_mla_fill(c, seed + 64, new_weights);   /* MLA's, both kinds (cpu_mla.c) */
    pdbx_cpu_opt_fill(c, new_weights, seed + 192);   /* the optimizer's (cpu_optimizer.c) */
    rc = pdbx_cpu_moe_fill(c, new_weights, seed + 128, err, errlen);   /* MoE layers (cpu_moe.c) */
    if (rc != 0) {
        cpu_release(c);
        return rc;
    }
    c->prepared = 1;
    return 0;
}

