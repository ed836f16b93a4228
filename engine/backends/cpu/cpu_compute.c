/* cpu_compute.c: the `cpu` compute backend (see cpu_compute.h and backend.h).
 *
 * One point's data flow follows the forward pass of a Llama layer, so each op reads what the
 * previous op wrote (fp32 path):
 *   embed: ids -> x;  input_norm: x -> xn;  q/k/v: xn -> q,k,v;  attn_rope: q,k rotated in
 *   place;  attn_core: q,k,v -> ctx;  attn_o: ctx -> y;  attn_residual: y += x (the layer's
 *   input: y is then the hidden state);  post_attn_norm: y -> yn;  gate/up: yn -> g,u;
 *   act: g,u -> act;  mlp_down: act -> x;  mlp_residual: x += y (the next layer's input);
 *   final_norm: x -> xn;  lm_head: xn -> logits (capped in place with gemma-2's final-logit
 *   soft-capping).
 * A parallel residual (gpt-neox: x + attn(ln1 x) + mlp(ln2 x)) changes one read: post_attn_norm
 * normalises x, the layer's input, which mlp_down overwrites only after it; mlp_residual's
 * x += y then sums all three. gpt-j's one shared norm has no post_attn_norm op (the MLP reads
 * yn, rows of the same shape as xn). Learned positions, LayerNorm and GELU MLPs are the
 * arch's kinds of embed, the norms and act (run_embed, run_norm, run_act).
 * Each profiled layer has its own weights (as a real model: the next layer's weights are not in
 * cache); activations are shared between layers. */
#include "engine/backends/cpu/cpu_compute.h"
#include "engine/backends/cpu/cpu_internal.h"
#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_attn.h"
#include "engine/backends/cpu/cpu_kernels_dense.h"
#include "engine/backends/cpu/cpu_kernels_loss.h"
#include "engine/backends/host.h"
#include "store/events.h"
#include "store/util/clock.h"

#include <cblas.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>



static int cpu_init(const pdbx_compute_config *cfg, pdbx_compute **out, char *err, size_t errlen)
{
    pdbx_compute *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "cpu backend: out of memory");
        return PDBX_EOOM;
    }
    c->cfg = *cfg;
    /* the engine refuses these before init (exit 2); a caller that did not is refused here */
    if (pdbx_backend_modes_check(PDBX_BACKEND_CPU, cfg->fp32_math, cfg->gemm_api, err, errlen) != 0) {
        free(c);
        return -1;
    }
    if (cfg->dtype == PDBX_DTYPE_BF16 && !(c->sbgemm = pdbx_cpu_find_sbgemm())) {
        snprintf(err, errlen, "dtype: bf16 needs cblas_sbgemm, which this OpenBLAS (%s) does not "
                 "provide (allowed on this host: fp32)", openblas_get_config());
        free(c);
        return -1;
    }
    if (cfg->dtype == PDBX_DTYPE_FP16) {
        snprintf(err, errlen, "dtype: fp16 is not supported by the cpu backend "
                 "(OpenBLAS has no fp16 GEMM; allowed: fp32%s)", pdbx_cpu_find_sbgemm() ? ", bf16" : "");
        free(c);
        return -1;
    }
    if (c->cfg.blas_threads < 1)
        c->cfg.blas_threads = 1;
    openblas_set_num_threads(c->cfg.blas_threads);
    /* the own kernels' threads: as many as OpenBLAS's (idle while these run); none started
     * leaves the kernels on this thread (cpu_threads.h) */
    c->pool = pdbx_cpu_pool_create(c->cfg.blas_threads);
    pdbx_host_cpu_model(c->device, sizeof c->device);
    *out = c;
    return 0;
}

static void cpu_fini(pdbx_compute *c)
{
    if (!c)
        return;
    cpu_release(c);
    pdbx_cpu_free_weights(c);
    pdbx_cpu_pool_destroy(c->pool);
    free(c);
}

static const char *cpu_device_name(pdbx_compute *c)
{
    return c->device;
}

static void cpu_device_id(pdbx_compute *c, int *index, char *uuid, size_t len)
{
    (void)c;
    *index = -1;           /* the host's cores: no device to name */
    if (len)
        uuid[0] = '\0';
}

static int cpu_describe(pdbx_compute *c, cJSON *env)
{
    uint64_t avail = 0, total = 0;
    pdbx_host_meminfo(&avail, &total);
    const char *blas = openblas_get_config();
    char blasv[256];
    snprintf(blasv, sizeof blasv, "%s", blas ? blas : "OpenBLAS (unknown config)");
    /* the device through the schema; the rest is this backend's own description (opaque) */
    if (pdbx_event_env_set_device(env, c->device) != 0 ||
        !cJSON_AddNumberToObject(env, "device_mem_bytes", (double)total) ||
        !cJSON_AddStringToObject(env, "blas", blasv) ||
        !cJSON_AddNumberToObject(env, "blas_threads", c->cfg.blas_threads) ||
        !cJSON_AddNumberToObject(env, "blas_threads_effective", openblas_get_num_threads()) ||
        !cJSON_AddStringToObject(env, "timer", "CLOCK_MONOTONIC around each call") ||
        /* what the GEMMs ran as (docs/cuda.md, "Math modes and GEMM API"): OpenBLAS sgemm is
         * IEEE fp32 (and sbgemm accumulates in fp32) */
        !cJSON_AddStringToObject(env, "fp32_math", "ieee") ||
        !cJSON_AddStringToObject(env, "gemm_api", "openblas"))
        return -1;
    return 0;
}

static int cpu_mem_info(pdbx_compute *c, uint64_t *free_bytes, uint64_t *total_bytes)
{
    (void)c;
    return pdbx_host_meminfo(free_bytes, total_bytes);
}

/* cblas_sbgemm exists only in OpenBLAS builds with BUILD_BFLOAT16 (Debian 12's 0.3.21 has
 * none), so it is looked up at run time: the binary links everywhere and bf16 works where the
 * library offers it. */
sbgemm_fn pdbx_cpu_find_sbgemm(void)
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
    return pdbx_cpu_find_sbgemm() != NULL;
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

/* A projection: its GEMM, then its bias (pdbx_op_shape.bias; prepare checked that the
 * buffer exists where the shape says so) added to the fp32 output, both in the timed op as
 * PyTorch's F.linear(x, W, b) runs them. */
static void linear(pdbx_compute *c, pdbx_op op, const void *x, const void *w, const float *bias,
                   float *y, int64_t m, int64_t n, int64_t k)
{
    gemm(c, x, w, y, m, n, k);
    if (c->p.shape[op].bias && bias)
        pdbx_k_bias_add(c->pool, y, bias, m, n);
}

/* The norms' eps: rms_norm_eps of the Llama 3 and TinyLlama configs, layer_norm_epsilon of
 * GPT-2's (the model's own value changes no work). */
#define NORM_EPS 1e-5f

/* A norm of the model's kind (arch.norm) over the point's [T, h] rows: RMSNorm, or LayerNorm
 * with the shared bias, writing each row's mean and rstd for the backward. */
static void run_norm(pdbx_compute *c, const float *in, float *out)
{
    if (c->p.model.arch.norm == PDBX_NORM_LAYER)
        pdbx_k_layernorm(c->pool, in, c->norm_w, c->norm_b, c->T, c->h, NORM_EPS, out, c->norm_mean,
                         c->norm_rstd);
    else
        pdbx_k_rmsnorm(c->pool, in, c->norm_w, c->T, c->h, NORM_EPS, out);
}

/* The MLP's activation (arch.activation, arch.mlp_plain): SiLU(gate) x up (a Llama's), GELU(gate)
 * x up (Gemma's), or GELU(up) (gpt2, gpt-neox: a plain MLP reads no gate). */
static void run_act(pdbx_compute *c)
{
    const int64_t n = c->T * c->inter;
    pdbx_gelu_kind kind;
    if (pdbx_gelu_kind_of(c->p.model.arch.activation, &kind) != 0)
        pdbx_k_silu_mul(c->pool, c->g, c->u, n, c->act);
    else if (c->p.model.arch.mlp_plain)
        pdbx_k_gelu(c->pool, c->u, n, kind, c->act);
    else
        pdbx_k_gelu_mul(c->pool, c->g, c->u, n, kind, c->act);
}

/* embed: the vocab-parallel gather and, with learned positions (c->pos), the position rows
 * added: into the gathered fp32 rows, or in bf16 into the fp32 hidden state (the bf16 rows are
 * its input in a real model: the same reads and writes). */
static void run_embed(pdbx_compute *c)
{
    pdbx_k_embed_gather(c->emb_table, c->vloc, 0, c->ids, c->T, (size_t)c->h * c->esz, c->emb_out);
    if (c->pos)
        pdbx_k_pos_embed_add(c->pool, c->esz == 4 ? (float *)c->emb_out : c->x, c->pos, c->T, c->h,
                             c->p.seq_len);
}

pdbx_attn_opts pdbx_cpu_attn_opts(const pdbx_compute *c, int layer)
{
    int64_t w = 0;
    double cap = 0;
    /* validation refused what has no per-layer options (pdbx_arch_refusal): -1 cannot reach
     * here, and would leave plain causal attention */
    pdbx_attn_opts_for_layer(&c->p.model, c->nlayers, layer, c->p.seq_len, &w, &cap);
    /* v's head dim: d but MLA's v_head_dim (cpu_kernels_attn.h: dv = d is d) */
    return (pdbx_attn_opts){ .window = w, .softcap = (float)cap, .dv = c->dvh };
}

void pdbx_cpu_gemm(pdbx_compute *c, const void *a, const void *b, float *out, int64_t m, int64_t n,
                   int64_t k)
{
    gemm(c, a, b, out, m, n, k);
}

/* What run_op refuses: before prepare, a pass or op the point was not prepared for, an op the
 * model or the layer's kind does not run, a layer out of range. 0, or -1 with a message. */
static int check_run_op(pdbx_compute *c, pdbx_op op, pdbx_pass pass, int layer, char *err, size_t errlen)
{
    if (!c->prepared) {
        snprintf(err, errlen, "cpu backend: run_op before prepare");
        return -1;
    }
    if ((int)pass < 0 || pass >= PDBX_PASS_COUNT) {
        snprintf(err, errlen, "cpu backend: pass %d of %s (allowed: fwd, bwd)", (int)pass,
                 pdbx_op_name(op));
        return -1;
    }
    if ((op == PDBX_OP_OPTIMIZER || op == PDBX_OP_LOSS) && !(c->p.passes & PDBX_PASS_BIT(PDBX_PASS_BWD))) {
        snprintf(err, errlen, "cpu backend: %s is training's: it needs a point prepared with bwd "
                 "in its passes", pdbx_op_name(op));
        return -1;
    }
    if (pass == PDBX_PASS_BWD && !pdbx_op_has_bwd(op)) {
        snprintf(err, errlen, "cpu backend: %s has no bwd pass (its one cell is fwd's)", pdbx_op_name(op));
        return -1;
    }
    if (pass == PDBX_PASS_BWD && !(c->p.passes & PDBX_PASS_BIT(PDBX_PASS_BWD))) {
        snprintf(err, errlen, "cpu backend: the bwd pass of %s needs a point prepared with bwd in "
                 "its passes (no gradient buffers)", pdbx_op_name(op));
        return -1;
    }
    if (!(c->p.ops & PDBX_OP_BIT(op)) || pdbx_op_is_comm(op)) {
        snprintf(err, errlen, "cpu backend: op %s not prepared for this point", pdbx_op_name(op));
        return -1;
    }
    if (!(pdbx_model_ops(&c->p.model) & PDBX_OP_BIT(op))) {   /* its buffers were never listed */
        snprintf(err, errlen, "cpu backend: op %s is not an op of model %s", pdbx_op_name(op), c->p.model.name);
        return -1;
    }
    if (c->p.fused_projections && pdbx_fused_leader(op) != PDBX_OP_COUNT && pdbx_fused_leader(op) != op) {
        snprintf(err, errlen, "cpu backend: %s is timed within %s's fused GEMM (fused_projections)",
                 pdbx_op_name(op), pdbx_op_name(pdbx_fused_leader(op)));
        return -1;
    }
    if (pdbx_op_is_per_layer(op) && (layer < 0 || layer >= c->nlayers)) {
        snprintf(err, errlen, "cpu backend: layer %d out of range 0..%d", layer, c->nlayers - 1);
        return -1;
    }
    if (pdbx_op_is_per_layer(op) && !pdbx_layer_has_op(&c->p.model, c->nlayers, layer, op)) {
        snprintf(err, errlen, "cpu backend: op %s does not run on layer %d, a %s layer of model %s", pdbx_op_name(op),
                 layer, pdbx_layer_is_moe(&c->p.model, c->nlayers, layer) ? "mixture-of-experts" : "dense",
                 c->p.model.name);
        return -1;
    }
    return 0;
}

/* The fwd pass of the attention block's ops, attn_q .. attn_o (MLA's own and its attn_rope in
 * cpu_mla.c): 0, or 1 when op is not one of them. */
static int run_fwd_attn(pdbx_compute *c, pdbx_op op, int layer)
{
    const int64_t T = c->T, h = c->h;
    const int bf = c->esz == 2;
    cpu_layer *L = &c->layer[layer];
    if (pdbx_cpu_mla_runs(c, op)) {
        pdbx_cpu_mla_fwd(c, op, layer);
        return 0;
    }
    switch (op) {
    case PDBX_OP_ATTN_Q:
        if (c->p.fused_projections)   /* Megatron's linear_qkv: one [T, qd + 2 kvd] GEMM */
            linear(c, op, bf ? c->xn_b : c->xn, L->wqkv, L->bqkv, c->qkv, T, c->qd + 2 * c->kvd, h);
        else
            linear(c, op, bf ? c->xn_b : c->xn, L->wq, L->bq, c->q, T, c->qd, h);
        return 0;
    case PDBX_OP_ATTN_K:
        linear(c, op, bf ? c->xn_b : c->xn, L->wk, L->bk, c->k, T, c->kvd, h);
        return 0;
    case PDBX_OP_ATTN_V:
        linear(c, op, bf ? c->xn_b : c->xn, L->wv, L->bv, c->v, T, c->kvd, h);
        return 0;
    case PDBX_OP_ATTN_QK_NORM:   /* qwen3: each head of q and k RMS-normalised over d, in place */
        pdbx_k_rmsnorm(c->pool, c->q, c->qk_norm_w, T * c->heads, c->d, NORM_EPS, c->q);
        pdbx_k_rmsnorm(c->pool, c->k, c->qk_norm_w + c->d, T * c->kv_heads, c->d, NORM_EPS, c->k);
        return 0;
    case PDBX_OP_ATTN_ROPE:   /* q and k in place, the point's cos/sin table */
        pdbx_k_rope(c->pool, c->q, T, c->heads, c->d, c->rot, c->p.seq_len, c->rope,
                    c->rope + c->p.seq_len * (c->rot / 2), 0);
        pdbx_k_rope(c->pool, c->k, T, c->kv_heads, c->d, c->rot, c->p.seq_len, c->rope,
                    c->rope + c->p.seq_len * (c->rot / 2), 0);
        return 0;
    case PDBX_OP_ATTN_CORE: {   /* this profiled layer's window and cap (plan.h) */
        const pdbx_attn_opts o = pdbx_cpu_attn_opts(c, layer);
        pdbx_k_attention_causal_opts(c->pool, c->q, c->k, c->v, c->p.mbs, c->p.seq_len, c->heads,
                                     c->kv_heads, c->d, c->attn_scratch, c->ctx, &o);
        return 0;
    }
    case PDBX_OP_ATTN_O:
        linear(c, op, bf ? c->ctx_b : c->ctx, L->wo, L->bo, c->y, T, h, c->ctxd);
        return 0;
    default:
        return 1;
    }
}

/* The dense MLP's forward ops (mlp_gate or the fused fc1, mlp_up, mlp_act_fn, mlp_down). */
static void run_mlp(pdbx_compute *c, pdbx_op op, int layer)
{
    const int64_t T = c->T, h = c->h;
    const int bf = c->esz == 2;
    const cpu_layer *L = &c->layer[layer];
    switch (op) {
    case PDBX_OP_MLP_GATE:
        if (c->p.fused_projections)   /* Megatron's linear_fc1: one [T, 2 I] GEMM */
            linear(c, op, bf ? c->yn_b : c->yn, L->wfc1, L->bfc1, c->fc1, T, 2 * c->inter, h);
        else
            linear(c, op, bf ? c->yn_b : c->yn, L->wg, L->bg, c->g, T, c->inter, h);
        break;
    case PDBX_OP_MLP_UP:
        linear(c, op, bf ? c->yn_b : c->yn, L->wu, L->bu, c->u, T, c->inter, h);
        break;
    case PDBX_OP_MLP_ACT_FN:
        run_act(c);
        break;
    default:   /* PDBX_OP_MLP_DOWN */
        linear(c, op, bf ? c->act_b : c->act, L->wd, L->bd, c->x, T, h, c->inter);
        break;
    }
}

/* lm_head: the logits GEMM and, with final-logit soft-capping (gemma-2's 30), the cap applied
 * in place, as HF Gemma2's forward does after its lm_head (the backward reads these capped
 * logits for the cap's derivative, cpu_backward.c). */
static void run_lm_head(pdbx_compute *c)
{
    gemm(c, c->esz == 2 ? c->xn_b : c->xn, c->wlm, c->logits, c->T, c->vloc, c->h);
    if (c->p.model.arch.final_softcap > 0)
        pdbx_k_logit_softcap(c->pool, c->logits, c->T, c->vloc, (float)c->p.model.arch.final_softcap);
}

/* The timed body of op's forward: 0, or -1 with a message. */
static int run_fwd(pdbx_compute *c, pdbx_op op, int layer, char *err, size_t errlen)
{
    const int64_t T = c->T, h = c->h;
    /* layer ops only read their layer; the others get layer 0 */
    const int l = pdbx_op_is_per_layer(op) ? layer : 0;
    /* the attention block's ops, MLA's among them (run_fwd_attn) */
    if (pdbx_op_is_per_layer(op) && run_fwd_attn(c, op, l) == 0)
        return 0;
    switch (op) {
    case PDBX_OP_EMBED:
        run_embed(c);
        break;
    case PDBX_OP_OPTIMIZER:
        return pdbx_cpu_opt_run(c, err, errlen);
    case PDBX_OP_LOSS:   /* the token ids stand for the targets; the measured rank's shard is 0's */
        pdbx_k_xent_fwd(c->pool, c->logits, c->ids, T, c->vloc, 0, c->grad.loss_stats);
        break;
    case PDBX_OP_INPUT_NORM:
    case PDBX_OP_FINAL_NORM:
        run_norm(c, c->x, c->xn);
        break;

    case PDBX_OP_ATTN_RESIDUAL:
        pdbx_k_add(c->pool, c->y, c->x, T * h);
        break;
    case PDBX_OP_MLP_RESIDUAL:
        pdbx_k_add(c->pool, c->x, c->y, T * h);
        break;
    case PDBX_OP_POST_ATTN_NORM:   /* a parallel residual (gpt-neox) normalises the layer's input */
        run_norm(c, c->p.model.arch.parallel_residual ? c->x : c->y, c->yn);
        break;
    case PDBX_OP_MLP_GATE: case PDBX_OP_MLP_UP: case PDBX_OP_MLP_ACT_FN: case PDBX_OP_MLP_DOWN:
        run_mlp(c, op, l);
        break;
    case PDBX_OP_LM_HEAD:
        run_lm_head(c);
        break;
    default:
        if (pdbx_cpu_moe_fwd(c, op, layer) == 0)   /* a MoE layer's op (cpu_moe.c) */
            break;
        snprintf(err, errlen, "cpu backend: op %s is not a compute op", pdbx_op_name(op));
        return -1;
    }
    return 0;
}

static int cpu_run_op(pdbx_compute *c, pdbx_op op, pdbx_pass pass, int layer, double *ms,
                      char *err, size_t errlen)
{
    if (check_run_op(c, op, pass, layer, err, errlen) != 0)
        return -1;
    double t0 = pdbx_mono_s() * 1e3;
    int rc = pass == PDBX_PASS_BWD ? pdbx_cpu_run_bwd(c, op, layer, err, errlen)   /* cpu_backward.c */
                                   : run_fwd(c, op, layer, err, errlen);
    *ms = pdbx_mono_s() * 1e3 - t0;
    return rc;
}

static int cpu_comm_buffer(pdbx_compute *c, size_t bytes, void **buf, char *err, size_t errlen)
{
    if (bytes == 0) {   /* backend.h: 0 frees the buffer (the engine, after each config) */
        free(c->comm_buf);
        c->comm_buf = NULL;
        c->comm_bytes = 0;
        *buf = NULL;
        return 0;
    }
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
               sum_head(c->k, T * c->kvd) + sum_head(c->v, T * c->vd) + sum_head(c->ctx, T * c->ctxd) +
               sum_head(c->y, T * c->h) + sum_head(c->yn, T * c->h) + sum_head(c->g, T * c->inter) +
               sum_head(c->u, T * c->inter) + sum_head(c->act, T * c->inter) +
               sum_head(c->logits, T * c->vloc) + sum_head(c->qkv, T * (c->qd + 2 * c->kvd)) +
               sum_head(c->fc1, T * 2 * c->inter);
    if (c->emb_out && c->esz == 4)
        s += sum_head(c->emb_out, T * c->h);
    return s;
}

/* Spans on the clock the ops use: the ops run synchronously, so the time between the span's
 * boundaries is the wall time of its ops (and of the TP all-reduces between them). */
static int cpu_span_begin(pdbx_compute *c, pdbx_span s, char *err, size_t errlen)
{
    if (!pdbx_span_valid("cpu", s, err, errlen))
        return -1;
    c->span_t0[s] = pdbx_mono_s() * 1e3;
    return 0;
}

static int cpu_span_end(pdbx_compute *c, pdbx_span s, double *ms, char *err, size_t errlen)
{
    if (!pdbx_span_valid("cpu", s, err, errlen))
        return -1;
    *ms = pdbx_mono_s() * 1e3 - c->span_t0[s];
    return 0;
}

static int cpu_device_noise(pdbx_compute *c, pdbx_device_noise *out)
{
    (void)c;
    (void)out;
    return -1;   /* the host's load is sampled by the engine (engine_noise.h) */
}

const pdbx_compute_ops pdbx_cpu_compute_ops = PDBX_COMPUTE_OPS("cpu", cpu);
