/* cpu_compute.c: the `cpu` compute backend (see cpu_compute.h and backend.h).
 *
 * One point's data flow follows the forward pass of a Llama layer, so each op reads what the
 * previous op wrote (fp32 path); residual adds are not ops of the profile and are left out:
 *   embed: ids -> x;  input_norm: x -> xn;  q/k/v: xn -> q,k,v;  attn_core: q,k,v -> ctx;
 *   attn_o: ctx -> y;  post_attn_norm: y -> yn;  gate/up: yn -> g,u;  act: g,u -> act;
 *   mlp_down: act -> x;  final_norm: x -> xn;  lm_head: xn -> logits.
 * Each profiled layer has its own weights (as a real model: the next layer's weights are not in
 * cache); activations are shared between layers. */
#include "engine/backends/cpu/cpu_compute.h"
#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/host.h"
#include "store/util/clock.h"

#include <cblas.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LAYERS 256
#define MAX_BUFS (32 + 7 * MAX_LAYERS)

typedef void (*sbgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint,
                          blasint, blasint, float, const bfloat16 *, blasint, const bfloat16 *,
                          blasint, float, float *, blasint);

typedef struct {
    void *wq, *wk, *wv, *wo, *wg, *wu, *wd;   /* fp32 or bf16, [k, n] row-major */
} cpu_layer;

struct pdbx_compute {
    pdbx_compute_config cfg;
    char device[256];
    int prepared;
    pdbx_point_shapes p;
    size_t esz;                  /* bytes per weight/GEMM-input element: 4 fp32, 2 bf16 */
    int64_t T, h, qd, kvd, inter, vloc, heads, kv_heads, d;
    /* activations of the point (freed by release()) and weights (kept while the next point has
     * the same weight shapes: a config's MBS sweep allocates and fills them once) */
    void *bufs[MAX_BUFS];
    int nbufs;
    void *wbufs[MAX_BUFS];
    int nw;
    int have_weights;
    int64_t wkey[10];
    size_t planned;              /* bytes the next prepare() allocates */
    int32_t *ids;
    void *emb_table, *emb_out;
    float *norm_w, *x, *xn, *q, *k, *v, *ctx, *y, *yn, *g, *u, *act, *logits, *attn_scratch;
    void *xn_b, *ctx_b, *yn_b, *act_b;        /* bf16 GEMM inputs (NULL in fp32) */
    void *wlm;
    cpu_layer layer[MAX_LAYERS];
    int nlayers;
    void *comm_buf;
    size_t comm_bytes;
    sbgemm_fn sbgemm;
    double span_t0[PDBX_SPAN_COUNT];   /* pdbx_mono_s() in ms at each span's begin */
};

static sbgemm_fn find_sbgemm(void);


static int cpu_init(const pdbx_compute_config *cfg, pdbx_compute **out, char *err, size_t errlen)
{
    pdbx_compute *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "cpu backend: out of memory");
        return PDBX_EOOM;
    }
    c->cfg = *cfg;
    if (cfg->dtype == PDBX_DTYPE_BF16 && !(c->sbgemm = find_sbgemm())) {
        snprintf(err, errlen, "dtype: bf16 needs cblas_sbgemm, which this OpenBLAS (%s) does not "
                 "provide (allowed on this host: fp32)", openblas_get_config());
        free(c);
        return -1;
    }
    if (cfg->dtype == PDBX_DTYPE_FP16) {
        snprintf(err, errlen, "dtype: fp16 is not supported by the cpu backend "
                 "(OpenBLAS has no fp16 GEMM; allowed: fp32%s)", find_sbgemm() ? ", bf16" : "");
        free(c);
        return -1;
    }
    if (c->cfg.blas_threads < 1)
        c->cfg.blas_threads = 1;
    openblas_set_num_threads(c->cfg.blas_threads);
    pdbx_host_cpu_model(c->device, sizeof c->device);
    *out = c;
    return 0;
}

static void cpu_release(pdbx_compute *c)
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
    c->logits = c->attn_scratch = NULL;
    c->xn_b = c->ctx_b = c->yn_b = c->act_b = NULL;
}

static void free_weights(pdbx_compute *c)
{
    for (int i = 0; i < c->nw; i++)
        free(c->wbufs[i]);
    c->nw = 0;
    c->have_weights = 0;
    c->emb_table = c->wlm = NULL;
    c->norm_w = NULL;
    memset(c->layer, 0, sizeof c->layer);
}

static void cpu_fini(pdbx_compute *c)
{
    if (!c)
        return;
    cpu_release(c);
    free_weights(c);
    free(c);
}

static const char *cpu_device_name(pdbx_compute *c)
{
    return c->device;
}

static int cpu_describe(pdbx_compute *c, cJSON *env)
{
    uint64_t avail = 0, total = 0;
    pdbx_host_meminfo(&avail, &total);
    const char *blas = openblas_get_config();
    char blasv[256];
    snprintf(blasv, sizeof blasv, "%s", blas ? blas : "OpenBLAS (unknown config)");
    if (!cJSON_AddStringToObject(env, "device", c->device) ||
        !cJSON_AddNumberToObject(env, "device_mem_bytes", (double)total) ||
        !cJSON_AddStringToObject(env, "blas", blasv) ||
        !cJSON_AddNumberToObject(env, "blas_threads", c->cfg.blas_threads) ||
        !cJSON_AddNumberToObject(env, "blas_threads_effective", openblas_get_num_threads()) ||
        !cJSON_AddStringToObject(env, "timer", "CLOCK_MONOTONIC around each call"))
        return -1;
    return 0;
}

static int cpu_mem_info(pdbx_compute *c, uint64_t *free_bytes, uint64_t *total_bytes)
{
    (void)c;
    return pdbx_host_meminfo(free_bytes, total_bytes);
}

/* Allocation accounting: first pass adds sizes (alloc == 0), second pass allocates. */
typedef struct {
    pdbx_compute *c;
    int alloc;
    int weights;               /* allocations go to the weight list */
    int failed;
} alloc_pass;

static void *take(alloc_pass *ap, size_t bytes)
{
    pdbx_compute *c = ap->c;
    bytes = (bytes + 63u) & ~(size_t)63u;
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

/* Fills x[0..n) with pseudo-random values in [-scale, scale]: FILL_BLOCK random elements,
 * then copies of them (memcpy runs at memory speed; generating every element of a GB-sized
 * weight would dominate the sweep's overhead). The values are real and varied, which is all the
 * timing needs (no zeros, no denormals, no NaN); the period is FILL_BLOCK elements. */
#define FILL_BLOCK 65536
static void tile(void *x, size_t n, size_t esz)
{
    size_t have = n < FILL_BLOCK ? n : FILL_BLOCK, total = n * esz;
    unsigned char *b = x;
    for (size_t done = have * esz; done < total;) {
        size_t chunk = done < total - done ? done : total - done;
        memcpy(b + done, b, chunk);
        done += chunk;
    }
}

static void fill_f32(float *x, size_t n, float scale, uint64_t seed)
{
    if (!x)
        return;
    if (scale == 0.0f) {
        memset(x, 0, n * sizeof *x);
        return;
    }
    pdbx_k_fill_uniform(x, n < FILL_BLOCK ? n : FILL_BLOCK, scale, seed);
    tile(x, n, sizeof *x);
}

/* Same for n elements of esz bytes (fp32 or bf16). */
static void fill_elems(void *x, size_t n, size_t esz, float scale, uint64_t seed)
{
    if (!x)
        return;
    if (esz == 4) {
        fill_f32(x, n, scale, seed);
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
    tile(x, n, esz);
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Plans (ap->alloc == 0) or performs the allocations of a point's activations. */
static void layout_acts(alloc_pass *ap)
{
    pdbx_compute *c = ap->c;
    const uint32_t ops = c->p.ops;
    const size_t f = sizeof(float), e = c->esz;
    const int64_t T = c->T, h = c->h;
    int bf = (e == 2);
#define HAS(op) (ops & PDBX_OP_BIT(op))
    c->ids = take(ap, (size_t)T * sizeof(int32_t));
    if (HAS(PDBX_OP_EMBED))
        c->emb_out = take(ap, (size_t)T * h * e);
    c->x = take(ap, (size_t)T * h * f);
    c->xn = take(ap, (size_t)T * h * f);
    c->q = take(ap, (size_t)T * c->qd * f);
    c->k = take(ap, (size_t)T * c->kvd * f);
    c->v = take(ap, (size_t)T * c->kvd * f);
    c->ctx = take(ap, (size_t)T * c->qd * f);
    c->y = take(ap, (size_t)T * h * f);
    c->yn = take(ap, (size_t)T * h * f);
    c->g = take(ap, (size_t)T * c->inter * f);
    c->u = take(ap, (size_t)T * c->inter * f);
    c->act = take(ap, (size_t)T * c->inter * f);
    c->attn_scratch = take(ap, pdbx_k_attention_scratch_floats(c->p.seq_len, c->d,
                                                                c->cfg.blas_threads) * f);
    if (bf) {
        c->xn_b = take(ap, (size_t)T * h * e);
        c->ctx_b = take(ap, (size_t)T * c->qd * e);
        c->yn_b = take(ap, (size_t)T * h * e);
        c->act_b = take(ap, (size_t)T * c->inter * e);
    }
    if (HAS(PDBX_OP_LM_HEAD))
        c->logits = take(ap, (size_t)T * c->vloc * f);
#undef HAS
}

/* Plans or performs the allocations of the weights (MBS-independent). */
static void layout_weights(alloc_pass *ap)
{
    pdbx_compute *c = ap->c;
    const uint32_t ops = c->p.ops;
    const size_t f = sizeof(float), e = c->esz;
    const int64_t h = c->h;
#define HAS(op) (ops & PDBX_OP_BIT(op))
    if (HAS(PDBX_OP_EMBED))
        c->emb_table = take(ap, (size_t)c->vloc * h * e);
    c->norm_w = take(ap, (size_t)h * f);
    if (HAS(PDBX_OP_LM_HEAD))
        c->wlm = take(ap, (size_t)h * c->vloc * e);
    for (int l = 0; l < c->nlayers; l++) {
        cpu_layer *L = &c->layer[l];
        L->wq = HAS(PDBX_OP_ATTN_Q) ? take(ap, (size_t)h * c->qd * e) : NULL;
        L->wk = HAS(PDBX_OP_ATTN_K) ? take(ap, (size_t)h * c->kvd * e) : NULL;
        L->wv = HAS(PDBX_OP_ATTN_V) ? take(ap, (size_t)h * c->kvd * e) : NULL;
        L->wo = HAS(PDBX_OP_ATTN_O) ? take(ap, (size_t)c->qd * h * e) : NULL;
        L->wg = HAS(PDBX_OP_MLP_GATE) ? take(ap, (size_t)h * c->inter * e) : NULL;
        L->wu = HAS(PDBX_OP_MLP_UP) ? take(ap, (size_t)h * c->inter * e) : NULL;
        L->wd = HAS(PDBX_OP_MLP_DOWN) ? take(ap, (size_t)c->inter * h * e) : NULL;
    }
#undef HAS
}

static int cpu_prepare(pdbx_compute *c, const pdbx_point_shapes *p, char *err, size_t errlen)
{
    cpu_release(c);
    c->p = *p;
    c->esz = c->cfg.dtype == PDBX_DTYPE_BF16 ? 2 : 4;
    const pdbx_model *m = &p->model;
    if (p->tp < 1 || p->mbs < 1 || p->seq_len < 1 || p->layers < 1 || p->layers > MAX_LAYERS ||
        m->hidden < 1 || m->heads < 1 || m->head_dim < 1 || m->kv_heads < 1 ||
        m->intermediate < 1 || m->vocab < 1 || m->heads % p->tp || m->intermediate % p->tp ||
        m->vocab % p->tp) {
        snprintf(err, errlen, "cpu backend: unsupported point shape (tp %d, mbs %d, seq_len %d, "
                 "layers %d, allowed layers 1..%d)", p->tp, p->mbs, p->seq_len, p->layers, MAX_LAYERS);
        return -1;
    }
    c->T = (int64_t)p->mbs * p->seq_len;
    c->h = m->hidden;
    c->heads = m->heads / p->tp;
    c->kv_heads = max64(m->kv_heads / p->tp, 1);
    c->d = m->head_dim;
    c->qd = c->heads * c->d;
    c->kvd = c->kv_heads * c->d;
    c->inter = m->intermediate / p->tp;
    c->vloc = m->vocab / p->tp;
    c->nlayers = p->layers;
    if (c->heads % c->kv_heads) {
        snprintf(err, errlen, "cpu backend: %lld local heads not a multiple of %lld kv heads",
                 (long long)c->heads, (long long)c->kv_heads);
        return -1;
    }

    /* weights are kept from the previous point when their shapes are the same */
    const int64_t key[10] = { m->hidden, m->intermediate, m->heads, m->kv_heads, m->head_dim,
                              m->vocab, p->tp, p->layers, (int64_t)p->ops, (int64_t)c->esz };
    if (c->have_weights && memcmp(key, c->wkey, sizeof key) != 0)
        free_weights(c);
    int new_weights = !c->have_weights;
    alloc_pass ap = { .c = c, .alloc = 0 };
    c->planned = 0;
    layout_acts(&ap);
    if (new_weights) {
        ap.weights = 1;
        layout_weights(&ap);
    }
    uint64_t avail = 0, total = 0;
    if (pdbx_host_meminfo(&avail, &total) == 0) {
        int ranks_here = c->cfg.local_size > 0 ? c->cfg.local_size : 1;
        double need = (double)c->planned * ranks_here;
        double budget = (double)avail * 0.95;
        if (need > budget) {
            snprintf(err, errlen, "would exceed MemAvailable: %.2f GiB per rank x %d ranks on this "
                     "node > %.2f GiB available", c->planned / 1073741824.0, ranks_here,
                     budget / 1073741824.0);
            c->planned = 0;
            return PDBX_EOOM;
        }
    }
    ap.alloc = 1;
    ap.weights = 0;
    layout_acts(&ap);
    if (new_weights && !ap.failed) {
        ap.weights = 1;
        layout_weights(&ap);
    }
    if (ap.failed) {
        snprintf(err, errlen, "allocation of %.2f GiB failed: %s", c->planned / 1073741824.0,
                 strerror(ENOMEM));
        cpu_release(c);
        if (new_weights)
            free_weights(c);
        return PDBX_EOOM;
    }
    if (new_weights) {
        memcpy(c->wkey, key, sizeof key);
        c->have_weights = 1;
    }

    /* Real values everywhere; weights scaled 1/sqrt(fan_in) so activations stay O(1) and no
     * denormals slow the kernels down. */
    const int64_t T = c->T, h = c->h;
    const size_t e = c->esz;
    uint64_t seed = 1000u + (uint64_t)c->cfg.world_rank * 7919u;
    for (int64_t i = 0; i < T; i++)
        c->ids[i] = (int32_t)(((uint64_t)i * 2654435761u + seed) % (uint64_t)m->vocab);
    fill_elems(c->emb_out, (size_t)(T * h), e, 0.0f, seed++);
    fill_f32(c->x, (size_t)(T * h), 1.0f, seed++);
    fill_f32(c->xn, (size_t)(T * h), 1.0f, seed++);
    fill_f32(c->q, (size_t)(T * c->qd), 1.0f, seed++);
    fill_f32(c->k, (size_t)(T * c->kvd), 1.0f, seed++);
    fill_f32(c->v, (size_t)(T * c->kvd), 1.0f, seed++);
    fill_f32(c->ctx, (size_t)(T * c->qd), 1.0f, seed++);
    fill_f32(c->y, (size_t)(T * h), 1.0f, seed++);
    fill_f32(c->yn, (size_t)(T * h), 1.0f, seed++);
    fill_f32(c->g, (size_t)(T * c->inter), 1.0f, seed++);
    fill_f32(c->u, (size_t)(T * c->inter), 1.0f, seed++);
    fill_f32(c->act, (size_t)(T * c->inter), 1.0f, seed++);
    fill_f32(c->attn_scratch, pdbx_k_attention_scratch_floats(p->seq_len, c->d, c->cfg.blas_threads),
             0.0f, seed++);
    fill_elems(c->xn_b, (size_t)(T * h), e, 1.0f, seed++);
    fill_elems(c->ctx_b, (size_t)(T * c->qd), e, 1.0f, seed++);
    fill_elems(c->yn_b, (size_t)(T * h), e, 1.0f, seed++);
    fill_elems(c->act_b, (size_t)(T * c->inter), e, 1.0f, seed++);
    fill_f32(c->logits, (size_t)(T * c->vloc), 0.0f, seed++);
    c->prepared = 1;
    if (!new_weights)
        return 0;
    float sh = 1.0f / sqrtf((float)h), sq = 1.0f / sqrtf((float)c->qd), si = 1.0f / sqrtf((float)c->inter);
    fill_elems(c->emb_table, (size_t)(c->vloc * h), e, 1.0f, seed++);
    for (int64_t i = 0; i < h; i++)
        c->norm_w[i] = 1.0f + 0.01f * (float)(i % 7);
    fill_elems(c->wlm, (size_t)(h * c->vloc), e, sh, seed++);
    for (int l = 0; l < c->nlayers; l++) {
        cpu_layer *L = &c->layer[l];
        fill_elems(L->wq, (size_t)(h * c->qd), e, sh, seed++);
        fill_elems(L->wk, (size_t)(h * c->kvd), e, sh, seed++);
        fill_elems(L->wv, (size_t)(h * c->kvd), e, sh, seed++);
        fill_elems(L->wo, (size_t)(c->qd * h), e, sq, seed++);
        fill_elems(L->wg, (size_t)(h * c->inter), e, sh, seed++);
        fill_elems(L->wu, (size_t)(h * c->inter), e, sh, seed++);
        fill_elems(L->wd, (size_t)(c->inter * h), e, si, seed++);
    }
    c->prepared = 1;
    return 0;
}

/* cblas_sbgemm exists only in OpenBLAS builds with BUILD_BFLOAT16 (Debian 12's 0.3.21 has
 * none), so it is looked up at run time: the binary links everywhere and bf16 works where the
 * library offers it. */
static sbgemm_fn find_sbgemm(void)
{
    static int looked;
    static sbgemm_fn fn;
    if (!looked) {
        void *self = dlopen(NULL, RTLD_NOW);
        if (self) {
            void *sym = dlsym(self, "cblas_sbgemm");
            memcpy(&fn, &sym, sizeof fn);
        }
        looked = 1;
    }
    return fn;
}

int pdbx_cpu_has_bf16_gemm(void)
{
    return find_sbgemm() != NULL;
}

/* C[m,n] = A[m,k] x B[k,n]; A and B fp32 or bf16 (c->esz), C fp32. */
static void gemm(pdbx_compute *c, const void *a, const void *b, float *out,
                 int64_t m, int64_t n, int64_t k)
{
    if (c->esz == 4)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)n, (blasint)k,
                    1.0f, a, (blasint)k, b, (blasint)n, 0.0f, out, (blasint)n);
    else
        c->sbgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)n, (blasint)k,
                     1.0f, (const bfloat16 *)a, (blasint)k, (const bfloat16 *)b, (blasint)n, 0.0f,
                     out, (blasint)n);
}

static int cpu_run_op(pdbx_compute *c, pdbx_op op, int layer, double *ms, char *err, size_t errlen)
{
    if (!c->prepared) {
        snprintf(err, errlen, "cpu backend: run_op before prepare");
        return -1;
    }
    if (!(c->p.ops & PDBX_OP_BIT(op)) || pdbx_op_is_comm(op)) {
        snprintf(err, errlen, "cpu backend: op %s not prepared for this point", pdbx_op_name(op));
        return -1;
    }
    if (pdbx_op_is_per_layer(op) && (layer < 0 || layer >= c->nlayers)) {
        snprintf(err, errlen, "cpu backend: layer %d out of range 0..%d", layer, c->nlayers - 1);
        return -1;
    }
    const int64_t T = c->T, h = c->h;
    const int bf = c->esz == 2;
    cpu_layer *L = pdbx_op_is_per_layer(op) ? &c->layer[layer] : NULL;
    const float eps = 1e-5f;
    double t0 = pdbx_mono_s() * 1e3;
    switch (op) {
    case PDBX_OP_EMBED:
        pdbx_k_embed_gather(c->emb_table, c->vloc, 0, c->ids, T, (size_t)h * c->esz, c->emb_out);
        break;
    case PDBX_OP_INPUT_NORM:
        pdbx_k_rmsnorm(c->x, c->norm_w, T, h, eps, c->xn);
        break;
    case PDBX_OP_ATTN_Q:
        gemm(c, bf ? c->xn_b : c->xn, L->wq, c->q, T, c->qd, h);
        break;
    case PDBX_OP_ATTN_K:
        gemm(c, bf ? c->xn_b : c->xn, L->wk, c->k, T, c->kvd, h);
        break;
    case PDBX_OP_ATTN_V:
        gemm(c, bf ? c->xn_b : c->xn, L->wv, c->v, T, c->kvd, h);
        break;
    case PDBX_OP_ATTN_CORE:
        pdbx_k_attention_causal(c->q, c->k, c->v, c->p.mbs, c->p.seq_len, c->heads, c->kv_heads,
                                c->d, c->cfg.blas_threads, c->attn_scratch, c->ctx);
        break;
    case PDBX_OP_ATTN_O:
        gemm(c, bf ? c->ctx_b : c->ctx, L->wo, c->y, T, h, c->qd);
        break;
    case PDBX_OP_POST_ATTN_NORM:
        pdbx_k_rmsnorm(c->y, c->norm_w, T, h, eps, c->yn);
        break;
    case PDBX_OP_MLP_GATE:
        gemm(c, bf ? c->yn_b : c->yn, L->wg, c->g, T, c->inter, h);
        break;
    case PDBX_OP_MLP_UP:
        gemm(c, bf ? c->yn_b : c->yn, L->wu, c->u, T, c->inter, h);
        break;
    case PDBX_OP_MLP_ACT_FN:
        pdbx_k_silu_mul(c->g, c->u, T * c->inter, c->act);
        break;
    case PDBX_OP_MLP_DOWN:
        gemm(c, bf ? c->act_b : c->act, L->wd, c->x, T, h, c->inter);
        break;
    case PDBX_OP_FINAL_NORM:
        pdbx_k_rmsnorm(c->x, c->norm_w, T, h, eps, c->xn);
        break;
    case PDBX_OP_LM_HEAD:
        gemm(c, bf ? c->xn_b : c->xn, c->wlm, c->logits, T, c->vloc, h);
        break;
    default:
        snprintf(err, errlen, "cpu backend: op %s is not a compute op", pdbx_op_name(op));
        return -1;
    }
    *ms = pdbx_mono_s() * 1e3 - t0;
    return 0;
}

static int cpu_comm_buffer(pdbx_compute *c, size_t bytes, void **buf, char *err, size_t errlen)
{
    if (bytes <= c->comm_bytes && c->comm_buf) {
        *buf = c->comm_buf;
        return 0;
    }
    uint64_t avail = 0, total = 0;
    if (pdbx_host_meminfo(&avail, &total) == 0 &&
        (double)bytes * (c->cfg.local_size > 0 ? c->cfg.local_size : 1) > (double)avail * 0.95) {
        snprintf(err, errlen, "comm buffer of %zu bytes would exceed MemAvailable", bytes);
        return PDBX_EOOM;
    }
    /* Large message buffers: 2 MiB aligned and backed by transparent huge pages where the host
     * allows it (as numpy does for its arrays, so mpi4py references and PyTorch users get
     * them): shared-memory MPI pins and copies fewer, larger pages. */
    const size_t huge = (size_t)2 << 20;
    void *p = NULL;
    if (posix_memalign(&p, bytes >= huge ? huge : 64, bytes ? bytes : 64) != 0) {
        snprintf(err, errlen, "comm buffer of %zu bytes: allocation failed", bytes);
        return PDBX_EOOM;
    }
#ifdef MADV_HUGEPAGE
    if (bytes >= huge)
        madvise(p, bytes - bytes % huge, MADV_HUGEPAGE);   /* advice only: failure is harmless */
#endif
    free(c->comm_buf);
    c->comm_buf = p;
    c->comm_bytes = bytes;
    /* Small finite floats so sums never overflow however often they are reduced. */
    float *fp = p;
    for (size_t i = 0; i < bytes / sizeof(float); i++)
        fp[i] = 1e-6f * (float)(i % 97);
    *buf = p;
    return 0;
}

static double sum_head(const float *x, int64_t n)
{
    double s = 0.0;
    if (!x)
        return 0.0;
    for (int64_t i = 0; i < n && i < 64; i++)
        s += x[i];
    return s;
}

static double cpu_checksum(pdbx_compute *c)
{
    if (!c->prepared)
        return 0.0;
    const int64_t T = c->T;
    double s = sum_head(c->x, T * c->h) + sum_head(c->xn, T * c->h) + sum_head(c->q, T * c->qd) +
               sum_head(c->k, T * c->kvd) + sum_head(c->v, T * c->kvd) + sum_head(c->ctx, T * c->qd) +
               sum_head(c->y, T * c->h) + sum_head(c->yn, T * c->h) + sum_head(c->g, T * c->inter) +
               sum_head(c->u, T * c->inter) + sum_head(c->act, T * c->inter) +
               sum_head(c->logits, T * c->vloc);
    if (c->emb_out && c->esz == 4)
        s += sum_head(c->emb_out, T * c->h);
    return s;
}

/* Spans on the clock the ops use: the ops run synchronously, so the time between the span's
 * boundaries is the wall time of its ops (and of the TP all-reduces between them). */
static int span_valid(pdbx_span s, char *err, size_t errlen)
{
    if ((int)s >= 0 && s < PDBX_SPAN_COUNT)
        return 1;
    snprintf(err, errlen, "cpu span: unknown span %d", (int)s);
    return 0;
}

static int cpu_span_begin(pdbx_compute *c, pdbx_span s, char *err, size_t errlen)
{
    if (!span_valid(s, err, errlen))
        return -1;
    c->span_t0[s] = pdbx_mono_s() * 1e3;
    return 0;
}

static int cpu_span_end(pdbx_compute *c, pdbx_span s, double *ms, char *err, size_t errlen)
{
    if (!span_valid(s, err, errlen))
        return -1;
    *ms = pdbx_mono_s() * 1e3 - c->span_t0[s];
    return 0;
}

static const pdbx_compute_ops cpu_ops = {
    .name = "cpu",
    .init = cpu_init,
    .fini = cpu_fini,
    .device_name = cpu_device_name,
    .describe = cpu_describe,
    .mem_info = cpu_mem_info,
    .prepare = cpu_prepare,
    .release = cpu_release,
    .run_op = cpu_run_op,
    .comm_buffer = cpu_comm_buffer,
    .span_begin = cpu_span_begin,
    .span_end = cpu_span_end,
    .checksum = cpu_checksum,
};

const pdbx_compute_ops *pdbx_cpu_compute_ops(void)
{
    return &cpu_ops;
}
