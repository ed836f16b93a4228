/* test_cuda_backend.c: loads the built libpdbx_cuda.so the way pdbx-engine does (dlopen +
 * pdbx_backend_entry_v1) and checks its ABI, that both vtables are complete, that nothing but
 * the entry symbol is exported, and that probe() and init() fail cleanly, naming the driver or
 * device, on a machine without a GPU. On a machine with a GPU the same binary runs a small
 * point through every compute op, an OOM, and a one-rank NCCL all-reduce instead, and with
 * passes fwd,bwd every op's backward, the bwd point's device memory against the planner's list
 * and lm_head's bwd/fwd ratio (1.5 to 3).
 *
 * The .so is looked up next to this binary's variant (<exe_dir>/../lib), then in
 * $PDBX_BUILD/lib, then in PDBX_SOURCE_DIR/build/lib. When it was not built (no nvcc, or
 * scons --no-cuda) the binary exits 77 (skip) with that reason.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/backends/backend.h"

#define SO_NAME "libpdbx_cuda.so"

/* On a GPU under ASan: CUDA maps memory where ASan keeps its shadow gap unless told not to. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "protect_shadow_gap=0";
}

static char so_path[PATH_MAX + 64];
static void *so_handle;
static const pdbx_backend_entry *entry;
static int have_gpu;
static char probe_why[512];

static int exists(const char *p)
{
    return access(p, R_OK) == 0;
}

static int find_so(void)
{
    char exe[PATH_MAX - 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(so_path, sizeof so_path, "%s/../lib/" SO_NAME, exe);
            if (exists(so_path))
                return 0;
        }
    }
    const char *build = getenv("PDBX_BUILD");
    if (build && *build) {
        int len = snprintf(so_path, sizeof so_path, "%s/lib/" SO_NAME, build);
        if (len > 0 && (size_t)len < sizeof so_path && exists(so_path))
            return 0;
    }
    snprintf(so_path, sizeof so_path, "%s/build/lib/" SO_NAME, PDBX_SOURCE_DIR);
    return exists(so_path) ? 0 : -1;
}

static int group_setup(void **state)
{
    (void)state;
    if (find_so() != 0)
        return -1;   /* main() checked: not reached */
    so_handle = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    if (!so_handle) {
        fprintf(stderr, "dlopen(%s) failed: %s\n", so_path, dlerror());
        return -1;
    }
    pdbx_backend_entry_fn fn;
    *(void **)&fn = dlsym(so_handle, PDBX_BACKEND_ENTRY_SYMBOL);
    if (!fn) {
        fprintf(stderr, "dlsym(%s) in %s: %s\n", PDBX_BACKEND_ENTRY_SYMBOL, so_path, dlerror());
        return -1;
    }
    entry = fn();
    if (entry && entry->probe)
        have_gpu = entry->probe(probe_why, sizeof probe_why);
    return 0;
}

/* dlclose as pdbx-engine does after a failed probe: the .so is linked -z nodelete, so this
 * must not unload it (or the libstdc++ NCCL pulls in, whose pool LeakSanitizer would report). */
static int group_teardown(void **state)
{
    (void)state;
    if (so_handle)
        dlclose(so_handle);
    return 0;
}

static void test_entry_abi(void **state)
{
    (void)state;
    assert_non_null(entry);
    assert_int_equal(entry->abi, PDBX_BACKEND_ABI);
}

static void test_vtables_complete(void **state)
{
    (void)state;
    const pdbx_compute_ops *c = entry->compute;
    assert_non_null(c);
    assert_string_equal(c->name, "cuda");
    assert_non_null(c->init);
    assert_non_null(c->fini);
    assert_non_null(c->device_name);
    assert_non_null(c->describe);
    assert_non_null(c->mem_info);
    assert_non_null(c->prepare);
    assert_non_null(c->release);
    assert_non_null(c->run_op);
    assert_non_null(c->comm_buffer);
    assert_non_null(c->checksum);
    assert_non_null(c->mem_peak);
    /* no prepared point (no device here): no peak, said so, never a number */
    double peak = -1, base = -1;
    assert_int_equal(c->mem_peak(NULL, &peak, &base), -1);
    assert_true(peak == -1 && base == -1);
    /* attention with a KV cache (cuda_attn_kv.c; on a GPU: tests/cuda/test_cuda_attn_kv.c): a
     * bad shape is refused by name before any device call, and a compute that was never
     * initialised measures nothing */
    assert_non_null(c->attn_kv);
    const pdbx_attn_kv_shape kv = { 1, 16, 32, 8, 2, 64 }, bad = { 1, 32, 16, 8, 3, 64 };
    double ms = -1;
    char kv_err[256] = "";
    assert_int_equal(c->attn_kv(NULL, &bad, &ms, kv_err, sizeof kv_err), -1);
    assert_string_equal(kv_err, "attn_kv: bad shape batch 1 q_len 32 kv_len 16 heads 8 kv_heads 3 head_dim 64 "
                                "(allowed: positive, kv_len >= q_len, heads a multiple of kv_heads)");
    assert_int_equal(c->attn_kv(NULL, &kv, &ms, kv_err, sizeof kv_err), -1);
    assert_true(ms == -1);
    assert_string_equal(kv_err, "attn_kv: no device (init did not run)");
    const pdbx_comm_ops *m = entry->comm;
    assert_non_null(m);
    assert_string_equal(m->name, "nccl");
    assert_non_null(m->init);
    assert_non_null(m->fini);
    assert_non_null(m->version);
    assert_non_null(m->group_create);
    assert_non_null(m->group_destroy);
    assert_non_null(m->run);
    assert_non_null(m->barrier);
    assert_non_null(entry->probe);
}

/* -fvisibility=hidden: internal functions must not leak into the engine's symbol space. */
static void test_only_entry_exported(void **state)
{
    (void)state;
    static const char *const internal[] = {
        "cuda_fail", "cuda_timer_start", "cuda_gemm_exec", "cuda_gemm_plan_get", "ck_rmsnorm",
        "ck_causal_softmax", "ck_embed_gather", "ck_rope", "ck_rope_table", "ck_residual_add",
        "cuda_nccl_comm_ops", "cuda_nccl_version",
        "pdbx_op_name",
    };
    for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++) {
        void *sym = dlsym(so_handle, internal[i]);
        if (sym)
            fail_msg("%s is exported by %s", internal[i], so_path);
    }
}

static int mentions_driver_or_device(const char *s)
{
    char low[512];
    size_t i = 0;
    for (; s[i] && i < sizeof low - 1; i++)
        low[i] = (char)tolower((unsigned char)s[i]);
    low[i] = '\0';
    return strstr(low, "driver") != NULL || strstr(low, "device") != NULL;
}

static void test_probe_without_gpu(void **state)
{
    (void)state;
    if (have_gpu) {
        print_message("SKIP: a CUDA device is present (%s): the no-GPU path is not testable\n",
                      probe_why);
        skip();
    }
    assert_int_equal(have_gpu, 0);
    assert_true(strlen(probe_why) > 0);
    if (!mentions_driver_or_device(probe_why))
        fail_msg("probe reason does not name the driver or device: '%s'", probe_why);
    print_message("probe: %s\n", probe_why);
}

static void test_init_fails_cleanly_without_gpu(void **state)
{
    (void)state;
    if (have_gpu) {
        print_message("SKIP: a CUDA device is present (%s)\n", probe_why);
        skip();
    }
    pdbx_compute_config cfg = {.local_rank = 0, .local_size = 1, .world_rank = 0,
                               .world_size = 1, .blas_threads = 1, .dtype = PDBX_DTYPE_BF16};
    pdbx_compute *c = (pdbx_compute *)(uintptr_t)1;
    char err[512] = "";
    int rc = entry->compute->init(&cfg, &c, err, sizeof err);
    assert_int_not_equal(rc, 0);
    assert_null(c);
    if (!mentions_driver_or_device(err) && strstr(err, "cudaGetDeviceCount") == NULL)
        fail_msg("init error does not say why: '%s'", err);
    print_message("init: %s\n", err);
    /* A bad dtype is refused before any CUDA call. */
    cfg.dtype = (pdbx_dtype)7;
    err[0] = '\0';
    assert_int_not_equal(entry->compute->init(&cfg, &c, err, sizeof err), 0);
    assert_non_null(strstr(err, "dtype"));
}

/* ---- with a GPU ------------------------------------------------------------------------- */

static int local_bcast(void *buf, size_t len, int root, void *ctx)
{
    (void)buf, (void)len, (void)root, (void)ctx;   /* one rank: nothing to send */
    return 0;
}

static void tiny_point(pdbx_point_shapes *p, int mbs)
{
    memset(p, 0, sizeof *p);
    snprintf(p->model.name, sizeof p->model.name, "tiny");
    p->model.hidden = 256;
    p->model.intermediate = 512;
    p->model.heads = 4;
    p->model.kv_heads = 2;
    p->model.head_dim = 64;
    p->model.layers = 2;
    p->model.vocab = 1000;
    p->tp = 1;
    p->mbs = mbs;
    p->seq_len = 64;
    p->layers = 2;
    p->ops = PDBX_OPS_ALL;
    /* The planner's shapes, as the engine passes them (prepare cross-checks them). */
    pdbx_spec spec;
    pdbx_spec_defaults(&spec);
    spec.model = p->model;
    spec.seq_len = p->seq_len;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        assert_int_equal(pdbx_op_shape_for(&spec, p->tp, mbs, (pdbx_op)op, &p->shape[op]), 0);
}

static void test_gpu_point(void **state)
{
    (void)state;
    if (!have_gpu) {
        print_message("SKIP: no CUDA device (%s)\n", probe_why);
        skip();
    }
    const pdbx_compute_ops *ops = entry->compute;
    pdbx_compute_config cfg = {.local_rank = 0, .local_size = 1, .world_rank = 0,
                               .world_size = 1, .blas_threads = 1, .dtype = PDBX_DTYPE_BF16};
    pdbx_compute *c = NULL;
    char err[512] = "";
    if (ops->init(&cfg, &c, err, sizeof err) != 0)
        fail_msg("init: %s", err);
    cJSON *env = cJSON_CreateObject();
    assert_int_equal(ops->describe(c, env), 0);
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(env, "gpu");
    assert_true(cJSON_IsObject(gpu));
    const cJSON *sms = cJSON_GetObjectItemCaseSensitive(gpu, "sm_count");
    assert_true(cJSON_IsNumber(sms) && sms->valuedouble > 0);
    cJSON_Delete(env);

    pdbx_point_shapes p;
    tiny_point(&p, 2);
    if (ops->prepare(c, &p, err, sizeof err) != 0)
        fail_msg("prepare: %s", err);
    for (int l = 0; l < p.layers; l++)
        for (int op = 0; op < PDBX_OP_COUNT; op++) {
            if (pdbx_op_is_comm((pdbx_op)op))
                continue;
            double ms = -1.0;
            if (ops->run_op(c, (pdbx_op)op, PDBX_PASS_FWD, l, &ms, err, sizeof err) != 0)
                fail_msg("run_op(%s, layer %d): %s", pdbx_op_name((pdbx_op)op), l, err);
            assert_true(ms > 0.0 && ms < 1000.0);
        }
    double sum = ops->checksum(c);
    assert_true(isfinite(sum));
    double ms = 0.0;
    assert_int_not_equal(ops->run_op(c, PDBX_OP_TP_ALLREDUCE_MLP, PDBX_PASS_FWD, 0, &ms, err, sizeof err), 0);

    /* A point far beyond any GPU's memory is a real OOM, and leaves the backend usable. */
    pdbx_point_shapes huge;
    tiny_point(&huge, 1 << 28);
    huge.ops = PDBX_OP_BIT(PDBX_OP_ATTN_CORE);   /* q alone: 2^34 tokens x 256 x 2 B = 8 TiB */
    assert_int_equal(ops->prepare(c, &huge, err, sizeof err), PDBX_EOOM);
    print_message("oom: %s\n", err);
    if (ops->prepare(c, &p, err, sizeof err) != 0)
        fail_msg("prepare after OOM: %s", err);

    const pdbx_comm_ops *nccl = entry->comm;
    pdbx_comm *m = NULL;
    if (nccl->init(c, &m, err, sizeof err) != 0)
        fail_msg("nccl init: %s", err);
    pdbx_group_desc desc = {.group_rank = 0, .group_size = 1, .world_rank = 0, .world_size = 1,
                            .bcast = local_bcast};
    pdbx_group *g = NULL;
    if (nccl->group_create(m, &desc, &g, err, sizeof err) != 0)
        fail_msg("nccl group_create: %s", err);
    void *buf = NULL;
    assert_int_equal(ops->comm_buffer(c, 1 << 20, &buf, err, sizeof err), 0);
    const pdbx_coll_call call = { PDBX_COLL_ALL_REDUCE, PDBX_DTYPE_BF16, 1 << 20, 1, 0 };
    if (nccl->run(m, g, &call, buf, &ms, err, sizeof err) != 0)
        fail_msg("nccl all_reduce: %s", err);
    assert_true(ms > 0.0);
    assert_int_equal(nccl->barrier(m, g, 60.0, err, sizeof err), 0);
    nccl->group_destroy(m, g);
    nccl->fini(m);
    ops->release(c);
    ops->fini(c);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of 9 timed executions of one pass of op (after 2 untimed). */
static double median_ms(const pdbx_compute_ops *ops, pdbx_compute *c, pdbx_op op, pdbx_pass pass)
{
    double t[9], ms;
    char err[512];
    for (int i = 0; i < 11; i++) {
        if (ops->run_op(c, op, pass, 0, &ms, err, sizeof err) != 0)
            fail_msg("run_op(%s, %s): %s", pdbx_op_name(op), pdbx_pass_name(pass), err);
        if (i >= 2)
            t[i - 2] = ms;
    }
    qsort(t, 9, sizeof t[0], cmp_double);
    return t[4];
}

/* passes fwd,bwd: every op's bwd runs on every layer (bf16 and fp32, untied and tied
 * embeddings); a point prepared without bwd refuses it; the point's device memory is the
 * planner's list (its cuda rule, gradients included); lm_head's bwd (dgrad + wgrad) takes 1.5
 * to 3 times its forward. */
static void test_gpu_bwd(void **state)
{
    (void)state;
    if (!have_gpu) {
        print_message("SKIP: no CUDA device (%s)\n", probe_why);
        skip();
    }
    const pdbx_compute_ops *ops = entry->compute;
    char err[512] = "";
    for (int variant = 0; variant < 3; variant++) {
        pdbx_compute_config cfg = {.local_size = 1, .world_size = 1, .blas_threads = 1,
                                   .dtype = variant == 1 ? PDBX_DTYPE_FP32 : PDBX_DTYPE_BF16};
        pdbx_compute *c = NULL;
        if (ops->init(&cfg, &c, err, sizeof err) != 0)
            fail_msg("init: %s", err);
        pdbx_point_shapes p;
        tiny_point(&p, 2);
        p.model.tie_embeddings = variant == 2;
        p.passes = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD);
        if (ops->prepare(c, &p, err, sizeof err) != 0)
            fail_msg("prepare: %s", err);
        for (int l = 0; l < p.layers; l++)
            for (int op = 0; op < PDBX_OP_COUNT; op++) {
                if (pdbx_op_is_comm((pdbx_op)op))
                    continue;
                double ms = -1.0;
                if (ops->run_op(c, (pdbx_op)op, PDBX_PASS_FWD, l, &ms, err, sizeof err) != 0 ||
                    ops->run_op(c, (pdbx_op)op, PDBX_PASS_BWD, l, &ms, err, sizeof err) != 0)
                    fail_msg("run_op(%s, layer %d): %s", pdbx_op_name((pdbx_op)op), l, err);
                assert_true(ms > 0.0 && ms < 1000.0);
            }
        assert_true(isfinite(ops->checksum(c)));
        p.passes = PDBX_PASS_BIT(PDBX_PASS_FWD);
        if (ops->prepare(c, &p, err, sizeof err) != 0)
            fail_msg("prepare: %s", err);
        double ms = 0;
        assert_int_not_equal(ops->run_op(c, PDBX_OP_LM_HEAD, PDBX_PASS_BWD, 0, &ms, err, sizeof err), 0);
        assert_non_null(strstr(err, "bwd"));
        ops->fini(c);
    }
    /* memory and the lm_head ratio on a real-sized lm_head (h 2048, vocab 128256, seq 512) */
    pdbx_compute_config cfg = {.local_size = 1, .world_size = 1, .blas_threads = 1,
                               .dtype = PDBX_DTYPE_BF16};
    pdbx_compute *c = NULL;
    if (ops->init(&cfg, &c, err, sizeof err) != 0)
        fail_msg("init: %s", err);
    pdbx_point_shapes p;
    tiny_point(&p, 1);
    p.model.hidden = 2048;
    p.model.heads = 32;
    p.model.kv_heads = 8;
    p.model.intermediate = 8192;
    p.model.vocab = 128256;
    p.seq_len = 512;
    p.layers = 1;
    p.passes = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD);
    pdbx_spec spec;
    pdbx_spec_defaults(&spec);
    spec.model = p.model;
    spec.seq_len = p.seq_len;
    for (int op = 0; op < PDBX_OP_COUNT; op++)
        assert_int_equal(pdbx_op_shape_for(&spec, 1, 1, (pdbx_op)op, &p.shape[op]), 0);
    if (ops->prepare(c, &p, err, sizeof err) != 0)
        fail_msg("prepare: %s", err);
    pdbx_profile_point pp = {.model = p.model, .tp = 1, .pp = 1, .dp = 1, .mbs = 1,
                             .seq_len = p.seq_len, .layers = 1, .ops = p.ops, .passes = p.passes,
                             .dtype = PDBX_DTYPE_BF16, .backend = PDBX_BACKEND_CUDA, .threads = 1};
    pdbx_profile_memory pm;
    assert_int_equal(pdbx_profile_memory_list(&pp, &pm, err, sizeof err), 0);
    double peak = 0, base = 0;
    /* every prepared point records its peak (cudaMemGetInfo's rise, at least the backend's
     * tally of what it cudaMalloc'd) and the device memory in use before it (context,
     * cuBLASLt workspace: never 0 on a real device) */
    assert_int_equal(ops->mem_peak(c, &peak, &base), 0);
    assert_true(base > 0);
    /* the cuBLASLt workspace is allocated at init (in the baseline) */
    double listed = pm.total - pm.kind_bytes[PDBX_MEM_WORKSPACE] + (double)p.mbs * p.seq_len * 4;
    print_message("device memory of the bwd point: %.0f bytes above %.0f, listed %.0f\n", peak,
                  base, listed);
    assert_true(fabs(peak - listed) <= 0.05 * listed + (64 << 20));
    double fwd = median_ms(ops, c, PDBX_OP_LM_HEAD, PDBX_PASS_FWD);
    double bwd = median_ms(ops, c, PDBX_OP_LM_HEAD, PDBX_PASS_BWD);
    print_message("lm_head [512 x 2048] x [2048 x 128256] bf16: fwd %.3f ms, bwd %.3f ms, bwd/fwd "
                  "%.2f\n", fwd, bwd, bwd / fwd);
    assert_true(bwd / fwd >= 1.5 && bwd / fwd <= 3.0);
    /* the comm buffer is freed by comm_buffer(c, 0): the device gets its bytes back */
    void *buf = NULL;
    uint64_t free0 = 0, free1 = 0, total = 0;
    assert_int_equal(ops->comm_buffer(c, (size_t)256 << 20, &buf, err, sizeof err), 0);
    assert_int_equal(ops->mem_info(c, &free0, &total), 0);
    assert_int_equal(ops->comm_buffer(c, 0, &buf, err, sizeof err), 0);
    assert_null(buf);
    assert_int_equal(ops->mem_info(c, &free1, &total), 0);
    assert_true((double)free1 - (double)free0 >= 0.9 * (256 << 20));
    ops->release(c);
    assert_int_equal(ops->mem_peak(c, &peak, &base), -1);   /* nothing prepared */
    ops->fini(c);
}

/* fused_projections and the GEMM modes on a GPU: the fused QKV and fc1 GEMMs run fwd and bwd
 * (attn_k and mlp_up are not run on their own: refused), the point's device memory is the
 * planner's fused list; fp32 with tf32 through cuBLAS and cuBLASLt, bf16 through cuBLAS, each
 * running every op and recording its modes in describe; biases on every projection (separate
 * and fused, cuBLASLt's epilogue and cuBLAS + ck_bias_add) run fwd and bwd, their memory the
 * planner's biased list. */
static void test_gpu_fused_and_modes(void **state)
{
    (void)state;
    if (!have_gpu) {
        print_message("SKIP: no CUDA device (%s)\n", probe_why);
        skip();
    }
    const pdbx_compute_ops *ops = entry->compute;
    /* bias: every projection with a bias (arch.bias, shape.bias): the epilogue / ck_bias_add
     * path fwd, the bias gradient bwd, the bias vectors (and their gradients) in the memory */
    static const struct { pdbx_dtype dt; pdbx_fp32_math math; pdbx_gemm_api api; int fused, bias; } runs[] = {
        {PDBX_DTYPE_BF16, PDBX_FP32_MATH_IEEE, PDBX_GEMM_API_CUBLASLT, 1, 0},
        {PDBX_DTYPE_BF16, PDBX_FP32_MATH_IEEE, PDBX_GEMM_API_CUBLAS, 1, 0},
        {PDBX_DTYPE_FP32, PDBX_FP32_MATH_TF32, PDBX_GEMM_API_CUBLAS, 0, 0},
        {PDBX_DTYPE_FP32, PDBX_FP32_MATH_TF32, PDBX_GEMM_API_CUBLASLT, 0, 0},
        {PDBX_DTYPE_BF16, PDBX_FP32_MATH_IEEE, PDBX_GEMM_API_CUBLASLT, 0, 1},
        {PDBX_DTYPE_BF16, PDBX_FP32_MATH_IEEE, PDBX_GEMM_API_CUBLASLT, 1, 1},
        {PDBX_DTYPE_BF16, PDBX_FP32_MATH_IEEE, PDBX_GEMM_API_CUBLAS, 0, 1},
        {PDBX_DTYPE_FP32, PDBX_FP32_MATH_IEEE, PDBX_GEMM_API_CUBLAS, 1, 1},
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        pdbx_compute_config cfg = {.local_size = 1, .world_size = 1, .blas_threads = 1,
                                   .dtype = runs[r].dt, .fp32_math = runs[r].math, .gemm_api = runs[r].api};
        pdbx_compute *c = NULL;
        char err[512] = "";
        if (ops->init(&cfg, &c, err, sizeof err) != 0)
            fail_msg("init: %s", err);
        cJSON *env = cJSON_CreateObject();
        assert_int_equal(ops->describe(c, env), 0);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(env, "fp32_math");
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(env, "gemm_api");
        assert_true(cJSON_IsString(m) && cJSON_IsString(a));
        assert_string_equal(m->valuestring, runs[r].math == PDBX_FP32_MATH_TF32 ? "tf32" : "ieee");
        assert_string_equal(a->valuestring, runs[r].api == PDBX_GEMM_API_CUBLAS ? "cublas" : "cublaslt");
        cJSON_Delete(env);
        pdbx_point_shapes p;
        tiny_point(&p, 2);
        p.passes = PDBX_PASS_BIT(PDBX_PASS_FWD) | PDBX_PASS_BIT(PDBX_PASS_BWD);
        p.fused_projections = runs[r].fused;
        if (runs[r].bias) {
            p.model.arch.bias.qkv = p.model.arch.bias.attn_out = p.model.arch.bias.mlp = 1;
            static const pdbx_op lin[] = {PDBX_OP_ATTN_Q, PDBX_OP_ATTN_K, PDBX_OP_ATTN_V, PDBX_OP_ATTN_O,
                                          PDBX_OP_MLP_GATE, PDBX_OP_MLP_UP, PDBX_OP_MLP_DOWN};
            for (size_t i = 0; i < sizeof lin / sizeof lin[0]; i++)
                p.shape[lin[i]].bias = 1;
        }
        if (ops->prepare(c, &p, err, sizeof err) != 0)
            fail_msg("prepare: %s", err);
        for (int op = 0; op < PDBX_OP_COUNT; op++) {
            if (pdbx_op_is_comm((pdbx_op)op))
                continue;
            const int follower = runs[r].fused && (op == PDBX_OP_ATTN_K || op == PDBX_OP_ATTN_V ||
                                                   op == PDBX_OP_MLP_UP);
            for (int pass = 0; pass < PDBX_PASS_COUNT; pass++) {
                double ms = -1;
                int rc = ops->run_op(c, (pdbx_op)op, (pdbx_pass)pass, 1, &ms, err, sizeof err);
                if (follower) {
                    assert_int_not_equal(rc, 0);
                    continue;
                }
                if (rc != 0)
                    fail_msg("run %zu %s %s: %s", r, pdbx_op_name((pdbx_op)op), pdbx_pass_name((pdbx_pass)pass), err);
                assert_true(ms > 0);
            }
        }
        pdbx_profile_point pp = {.model = p.model, .tp = 1, .pp = 1, .dp = 1, .mbs = p.mbs,
                                 .seq_len = p.seq_len, .layers = p.layers, .ops = p.ops, .passes = p.passes,
                                 .dtype = runs[r].dt, .backend = PDBX_BACKEND_CUDA, .threads = 1,
                                 .fused_projections = p.fused_projections};
        pdbx_profile_memory pm;
        assert_int_equal(pdbx_profile_memory_list(&pp, &pm, err, sizeof err), 0);
        double peak = 0, base = 0;
        if (ops->mem_peak(c, &peak, &base) == 0) {
            double listed = pm.total - pm.kind_bytes[PDBX_MEM_WORKSPACE] + (double)p.mbs * p.seq_len * 4;
            print_message("run %zu: device memory %.0f bytes, listed %.0f\n", r, peak, listed);
            assert_true(fabs(peak - listed) <= 0.05 * listed + (64 << 20));
        }
        ops->fini(c);
    }
}

int main(void)
{
    if (find_so() != 0) {
        printf("SKIP: " SO_NAME " was not built (nvcc not found or scons --no-cuda)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entry_abi),
        cmocka_unit_test(test_vtables_complete),
        cmocka_unit_test(test_only_entry_exported),
        cmocka_unit_test(test_probe_without_gpu),
        cmocka_unit_test(test_init_fails_cleanly_without_gpu),
        cmocka_unit_test(test_gpu_point),
        cmocka_unit_test(test_gpu_bwd),
        cmocka_unit_test(test_gpu_fused_and_modes),
    };
    return cmocka_run_group_tests_name("cuda_backend", tests, group_setup, group_teardown);
}
