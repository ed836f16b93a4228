/* plan_validate.c: pdbx_spec_validate, the checks that need the whole spec (the model against
 * TP and PP, configurations against the cluster, dtype against bytes_per_param ...). Each
 * error is one line: field, value, what is allowed. */
#include "engine/plan/plan_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* TP is valid for a model when it divides the attention heads and the intermediate size, and
 * divides the kv heads or is a multiple of them (kv heads are then replicated, one per rank).
 * Any vocabulary takes any TP: its last shard is padded (plan_vocab_per_rank). */
static const char *tp_violation(const pdbx_model *m, int tp, int *what_value)
{
    if (m->heads % tp != 0) {
        *what_value = m->heads;
        return "does not divide num_attention_heads";
    }
    if (m->kv_heads % tp != 0 && tp % m->kv_heads != 0) {
        *what_value = m->kv_heads;
        return "neither divides nor is a multiple of num_key_value_heads";
    }
    if (m->intermediate % tp != 0) {
        *what_value = m->intermediate;
        return "does not divide intermediate_size";
    }
    return NULL;
}

static void tp_allowed(const pdbx_model *m, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int t = 1; t <= m->heads && used < len; t++) {
        int dummy;
        if (!tp_violation(m, t, &dummy))
            used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? ", " : "", t);
    }
}

static int range(const char *field, long long v, long long lo, long long hi, char *err, size_t errlen)
{
    if (v < lo || v > hi)
        return plan_range_fail(field, v, lo, hi, err, errlen);
    return 0;
}

static int check_bool(const char *field, int v, char *err, size_t errlen)
{
    if (v != 0 && v != 1)
        return pdbx_fail(err, errlen, "%s: %d is out of range (allowed: true or false)", field, v);
    return 0;
}

/* The cuda backend runs a window and both soft-caps on its unfused attention path and in
 * lm_head (cuda_point.c, per profiled layer); the fused kernel (flash_attention) runs plain
 * causal attention only, so a window shorter than seq_len or an attention cap with it is
 * refused by name rather than measured as plain attention. */
static int cuda_attn_opts_check(const pdbx_spec *s, char *err, size_t errlen)
{
    const pdbx_arch *a = &s->model.arch;
    if (s->backend != PDBX_BACKEND_CUDA || !s->flash_attention)
        return 0;
    if (a->sliding_window.layers != PDBX_SW_NONE && a->sliding_window.size < s->seq_len)
        return pdbx_fail(err, errlen, "flash_attention: the fused kernel does not run model %s's sliding "
                         "window of %d tokens (shorter than seq_len %d) (allowed for this model: "
                         "flash_attention false, or seq_len <= %d)", s->model.name, a->sliding_window.size,
                         s->seq_len, a->sliding_window.size);
    if (a->attn_softcap > 0)
        return pdbx_fail(err, errlen, "flash_attention: the fused kernel does not run model %s's attention "
                         "soft-capping (%g) (allowed for this model: flash_attention false)", s->model.name,
                         a->attn_softcap);
    if (a->attention == PDBX_ATTN_MLA)   /* v's head dim differs from q's and k's */
        return pdbx_fail(err, errlen, "flash_attention: the fused kernel does not run model %s's multi-head latent "
                         "attention (v head dim %d, q/k %d) (allowed for this model: flash_attention false)",
                         s->model.name, a->mla.v_head_dim, s->model.head_dim);
    return 0;
}

/* The model, the layer count and the scalar run settings. */
static int check_model_and_run(const pdbx_spec *s, char *err, size_t errlen)
{
    const pdbx_model *m = &s->model;
    if (m->hidden <= 0 || m->intermediate <= 0 || m->heads <= 0 || m->kv_heads <= 0 || m->head_dim <= 0 ||
        m->layers <= 0 || m->vocab <= 0)
        return pdbx_fail(err, errlen, "model: '%s' has a zero or negative size (allowed: a preset name or a "
                         "config.json path)", m->name);
    if (plan_model_check(m, "model", err, errlen) != 0)
        return -1;
    if (s->layers_profiled < 1 || s->layers_profiled > m->layers)
        return pdbx_fail(err, errlen, "layers: %d is out of range (allowed: 1..%d, num_hidden_layers of %s)",
                         s->layers_profiled, m->layers, m->name);
    if (range("seq_len", s->seq_len, 1, 131072, err, errlen) != 0)
        return -1;
    if (m->arch.position == PDBX_POS_LEARNED && s->seq_len > m->arch.max_positions)
        return pdbx_fail(err, errlen, "seq_len: %d is longer than model %s's learned position table (allowed: "
                         "1..%d, its n_positions)", s->seq_len, m->name, m->arch.max_positions);
    /* What the engine does not measure (MoE, MLA, GELU or plain MLPs, biases, a window shorter
     * than seq_len ...) is refused here, so pdbx plan, pdbx run, the form and pdbx-engine's spec
     * check all say so; never profiled as a dense Llama (plan_arch.h). */
    char why[768];
    if (pdbx_arch_refusal(m, s->seq_len, why, sizeof why))
        return pdbx_fail(err, errlen, "%s", why);
    const pdbx_arch *a = &m->arch;
    if (a->sliding_window.layers == PDBX_SW_ALTERNATING && a->sliding_window.size < s->seq_len &&
        (s->layers_profiled < 2 || s->layers_profiled % 2 != 0))
        return pdbx_fail(err, errlen, "layers: %d profiled layers of %s, whose window of %d alternates "
                         "with full attention (allowed: even and >= 2, so that its local and global "
                         "layers are profiled alike)", s->layers_profiled, m->name, a->sliding_window.size);
    if ((int)s->recompute < PDBX_RECOMPUTE_NONE || (int)s->recompute > PDBX_RECOMPUTE_SELECTIVE)
        return pdbx_fail(err, errlen, "recompute: %d is out of range (allowed: none, full, selective)",
                         (int)s->recompute);
    if ((int)s->launcher < PDBX_LAUNCHER_AUTO || (int)s->launcher > PDBX_LAUNCHER_SRUN)
        return pdbx_fail(err, errlen, "launcher: %d is out of range (allowed: auto, local, mpirun, "
                         "srun)", (int)s->launcher);
    if ((int)s->dtype < PDBX_DTYPE_BF16 || (int)s->dtype > PDBX_DTYPE_FP32)
        return pdbx_fail(err, errlen, "dtype: %d is out of range (allowed: bf16, fp16, fp32)", (int)s->dtype);
    if ((int)s->backend < PDBX_BACKEND_AUTO || (int)s->backend > PDBX_BACKEND_CUDA)
        return pdbx_fail(err, errlen, "backend: %d is out of range (allowed: auto, cpu, cuda)", (int)s->backend);
    if (range("gpus_per_node", s->gpus_per_node, 1, 256, err, errlen) != 0 ||
        range("nodes", s->nodes, 1, 4096, err, errlen) != 0)
        return -1;
    if (plan_check_mbs_bound("mbs_min", s->mbs_min, err, errlen) != 0 || plan_check_mbs_bound("mbs_max", s->mbs_max, err, errlen) != 0)
        return -1;
    if (s->mbs_min > s->mbs_max)
        return pdbx_fail(err, errlen, "mbs_min: %d is greater than mbs_max %d (allowed: mbs_min <= mbs_max)",
                         s->mbs_min, s->mbs_max);
    if ((int)s->repetition < PDBX_REP_ADAPTIVE || (int)s->repetition > PDBX_REP_FIXED)
        return pdbx_fail(err, errlen, "repetition: %d is out of range (allowed: adaptive, fixed)", (int)s->repetition);
    if (!(s->target_rel_ci >= 0.0001 && s->target_rel_ci <= 0.5))
        return pdbx_fail(err, errlen, "target_rel_ci: %g is out of range (allowed: 0.0001..0.5)", s->target_rel_ci);
    if (!(s->max_seconds_per_op >= 0.001 && s->max_seconds_per_op <= 3600))
        return pdbx_fail(err, errlen, "max_seconds_per_op: %g is out of range (allowed: 0.001..3600)",
                         s->max_seconds_per_op);
    if (range("min_reps", s->min_reps, 2, 100000, err, errlen) != 0 ||
        range("max_reps", s->max_reps, 2, 1000000, err, errlen) != 0)
        return -1;
    if (s->max_reps < s->min_reps)
        return pdbx_fail(err, errlen, "max_reps: %d is below min_reps %d (allowed: min_reps..1000000)",
                         s->max_reps, s->min_reps);
    if (!(s->passes & PDBX_PASS_BIT(PDBX_PASS_FWD)) || (s->passes & ~(PDBX_PASS_BIT(PDBX_PASS_COUNT) - 1u)))
        return pdbx_fail(err, errlen, "passes: mask 0x%x is not allowed (allowed: fwd, or fwd,bwd)", (unsigned)s->passes);
    if (range("warmup", s->warmup, 0, 1000, err, errlen) != 0 || range("steps", s->steps, 1, 100000, err, errlen) != 0)
        return -1;
    return 0;
}

/* A configuration's EP degree (plan.h, pdbx_parallel): Megatron's expert layout with expert
 * tensor parallelism 1 takes the EP ranks from a pipeline stage's tp x dp ranks, an EP group
 * being ep consecutive ranks (its expert RankGenerator's order tp-ep-dp-pp), so ep divides
 * tp x dp (the expert data parallel degree is tp x dp / ep) and the experts split evenly. */
static int check_ep(const pdbx_spec *s, const pdbx_parallel *c, char *err, size_t errlen)
{
    const pdbx_model *m = &s->model;
    if (c->ep < 0 || c->ep > PLAN_EP_MAX)
        return pdbx_fail(err, errlen, "ep: %d (allowed: 1..%d)", c->ep, PLAN_EP_MAX);
    const int ep = pdbx_par_ep(c);
    if (ep == 1)
        return 0;
    if (!plan_is_moe(m))
        return pdbx_fail(err, errlen, "ep: %d needs a mixture-of-experts model; %s is dense (allowed: 1)", ep,
                         m->name);
    if (m->arch.moe.experts % ep != 0)
        return pdbx_fail(err, errlen, "ep: %d does not divide model %s's %d experts (allowed: a divisor of %d)", ep,
                         m->name, m->arch.moe.experts, m->arch.moe.experts);
    const long long td = (long long)c->tp * c->dp;
    if (td % ep != 0)
        return pdbx_fail(err, errlen, "ep: %d does not divide tp %d x dp %d = %lld of configuration TP%d/PP%d/DP%d "
                         "(allowed: a divisor of tp x dp: the EP ranks are taken from a stage's TP and DP ranks, "
                         "expert tensor parallelism 1)", ep, c->tp, c->dp, td, c->tp, c->pp, c->dp);
    return 0;
}

/* Configuration i: its degrees, TP against the model, PP against the layers, the GPUs it needs
 * against the cluster, and no repeat of an earlier one. */
static int check_config(const pdbx_spec *s, int i, char *err, size_t errlen)
{
    const pdbx_model *m = &s->model;
    const pdbx_parallel *c = &s->configs[i];
    if (range("tp", c->tp, 1, 4096, err, errlen) != 0 || range("pp", c->pp, 1, 4096, err, errlen) != 0 ||
        range("dp", c->dp, 1, 65536, err, errlen) != 0)
        return -1;
    int value;
    const char *why = tp_violation(m, c->tp, &value);
    if (why) {
        char allowed[512];
        tp_allowed(m, allowed, sizeof allowed);
        return pdbx_fail(err, errlen, "tp: %d %s %d (allowed: %s)", c->tp, why, value, allowed);
    }
    if (c->pp > m->layers)
        return pdbx_fail(err, errlen, "pp: %d is greater than num_hidden_layers %d of %s (allowed: 1..%d)",
                         c->pp, m->layers, m->name, m->layers);
    long long cluster = (long long)s->gpus_per_node * s->nodes;
    long long g = (long long)c->tp * c->pp * c->dp;
    if (g > cluster)
        return pdbx_fail(err, errlen, "configs: TP%d/PP%d/DP%d needs %lld GPUs but gpus_per_node %d x nodes %d "
                         "= %lld (allowed: at most %lld GPUs per configuration)", c->tp, c->pp, c->dp, g,
                         s->gpus_per_node, s->nodes, cluster, cluster);
    for (int j = 0; j < i; j++)
        if (s->configs[j].tp == c->tp && s->configs[j].pp == c->pp && s->configs[j].dp == c->dp &&
            pdbx_par_ep(&s->configs[j]) == pdbx_par_ep(c))
            return pdbx_fail(err, errlen, "configs: TP%d/PP%d/DP%d%s is listed twice (allowed: each configuration "
                             "once)", c->tp, c->pp, c->dp, pdbx_par_ep(c) > 1 ? "/EP>1" : "");
    return check_ep(s, c, err, errlen);
}

/* fused_projections times each group as one GEMM: its ops are measured together or not at
 * all (a lone attn_k has no GEMM of its own to time). */
static int check_fused_groups(const pdbx_spec *s, char *err, size_t errlen)
{
    static const pdbx_op groups[2][3] = {{PDBX_OP_ATTN_Q, PDBX_OP_ATTN_K, PDBX_OP_ATTN_V},
                                         {PDBX_OP_MLP_GATE, PDBX_OP_MLP_UP, PDBX_OP_COUNT}};
    if (!s->fused_projections)
        return 0;
    for (int g = 0; g < 2; g++) {
        int in = 0, n = g == 0 ? 3 : 2;
        for (int i = 0; i < n; i++)
            in += (s->ops & PDBX_OP_BIT(groups[g][i])) != 0;
        if (in == 0 || in == n)
            continue;
        pdbx_op present = PDBX_OP_COUNT, missing = PDBX_OP_COUNT;
        for (int i = n - 1; i >= 0; i--)
            *(s->ops & PDBX_OP_BIT(groups[g][i]) ? &present : &missing) = groups[g][i];
        return pdbx_fail(err, errlen, "ops: %s without %s while fused_projections is true (allowed: %s "
                         "together, or none of them: they are timed as one fused GEMM)", pdbx_op_name(present),
                         pdbx_op_name(missing), g == 0 ? "attn_q, attn_k, attn_v" : "mlp_gate, mlp_up");
    }
    return 0;
}

/* The ops mask, the collectives switch and the message sizes. */
static int check_ops(const pdbx_spec *s, char *err, size_t errlen)
{
    if (s->ops == 0)
        return pdbx_fail(err, errlen, "ops: empty (allowed: one or more op names, or \"all\")");
    if (check_fused_groups(s, err, errlen) != 0)
        return -1;
    if (s->ops & ~PDBX_OPS_ALL)
        return pdbx_fail(err, errlen, "ops: unknown op bits 0x%llx (allowed: mask 0x%llx)",
                         (unsigned long long)(s->ops & ~PDBX_OPS_ALL), (unsigned long long)PDBX_OPS_ALL);
    if (check_bool("collectives", s->collectives, err, errlen) != 0)
        return -1;
    if (s->ncoll_sizes < 0 || s->ncoll_sizes > PDBX_MAX_COLL_SIZES)
        return pdbx_fail(err, errlen, "coll_sizes: %d sizes (allowed: 0..%d)", s->ncoll_sizes, PDBX_MAX_COLL_SIZES);
    if (s->collectives && s->ncoll_sizes == 0)
        return pdbx_fail(err, errlen, "coll_sizes: empty while collectives is true (allowed: powers of two from 1 "
                         "to 17179869184 bytes)");
    for (int i = 0; i < s->ncoll_sizes; i++) {
        double x = s->coll_sizes[i];
        if (!(x >= 1 && x <= 17179869184.0) || x != floor(x) || !plan_is_pow2((long long)x))
            return pdbx_fail(err, errlen, "coll_sizes: %.0f is not a power of two between 1 and 17179869184 bytes", x);
        if (i > 0 && x <= s->coll_sizes[i - 1])
            return pdbx_fail(err, errlen, "coll_sizes: %.0f after %.0f (allowed: ascending, each size once)", x,
                             s->coll_sizes[i - 1]);
    }
    return 0;
}

/* The memory-model switches and figures, the timeout and the GPU preset. */
static int check_memory_and_gpu(const pdbx_spec *s, char *err, size_t errlen)
{
    if (check_bool("predict_oom", s->predict_oom, err, errlen) != 0 || check_bool("zero1", s->zero1, err, errlen) != 0 ||
        check_bool("flash_attention", s->flash_attention, err, errlen) != 0 ||
        check_bool("flush_l2", s->flush_l2, err, errlen) != 0 ||
        check_bool("fused_projections", s->fused_projections, err, errlen) != 0)
        return -1;
    /* backend auto is checked once it is resolved (pdbx-engine, start of the run) */
    if (pdbx_backend_modes_check(s->backend == PDBX_BACKEND_AUTO ? PDBX_BACKEND_CUDA : s->backend,
                                 s->fp32_math, s->gemm_api, err, errlen) != 0)
        return -1;
    int e = pdbx_dtype_bytes(s->dtype);
    if (!(s->bytes_per_param >= 2 * e && s->bytes_per_param <= 64))
        return pdbx_fail(err, errlen, "bytes_per_param: %g is out of range (allowed: %d..64 at %s: weights and "
                         "gradients alone take %d)", s->bytes_per_param, 2 * e, pdbx_dtype_name(s->dtype), 2 * e);
    if (!(s->timeout_s >= 1 && s->timeout_s <= 86400))
        return pdbx_fail(err, errlen, "timeout_s: %g is out of range (allowed: 1..86400)", s->timeout_s);
    if (!(s->gpu.mem_bytes >= 0) || !(s->gpu.bw_gbs >= 0) || !(s->gpu.peak_tflops_bf16 >= 0) ||
        !(s->gpu.peak_tflops_fp16 >= 0) || !(s->gpu.peak_tflops_fp32 >= 0))
        return pdbx_fail(err, errlen, "gpu: %s has a negative size or peak (allowed: >= 0)", s->gpu.name);
    /* Megatron's linear_fc1 fuses gate and up: a plain MLP has no gate to fuse */
    if (s->fused_projections && s->model.arch.mlp_plain)
        return pdbx_fail(err, errlen, "fused_projections: true needs a gated MLP, model %s's is plain (allowed: "
                         "false)", s->model.name);
    /* MLA computes k and v from its latent: there is no QKV GEMM to fuse; its cpu ops run fp32 */
    if (s->fused_projections && s->model.arch.attention == PDBX_ATTN_MLA)
        return pdbx_fail(err, errlen, "fused_projections: true fuses q, k and v into one GEMM, which model %s's "
                         "multi-head latent attention does not have (allowed: false)", s->model.name);
    if (s->model.arch.attention == PDBX_ATTN_MLA && s->backend == PDBX_BACKEND_CPU && s->dtype != PDBX_DTYPE_FP32)
        return pdbx_fail(err, errlen, "dtype: %s: the cpu backend runs model %s's multi-head latent attention in "
                         "fp32 only (allowed: fp32)", pdbx_dtype_name(s->dtype), s->model.name);
    if (pdbx_backend_model_check(s->backend, &s->model, err, errlen) != 0 ||
        cuda_attn_opts_check(s, err, errlen) != 0)
        return -1;
    if (s->backend == PDBX_BACKEND_CUDA && strcmp(s->gpu.name, "cpu") == 0) {
        char names[32][64];
        size_t n = pdbx_preset_names("gpus", names, 32), used = 0;
        char list[512] = "";
        for (size_t i = 0; i < n && used < sizeof list; i++)
            if (strcmp(names[i], "cpu") != 0)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", names[i]);
        return pdbx_fail(err, errlen, "gpu: cpu is the host preset, backend cuda needs a GPU preset (allowed: %s)",
                         used ? list : "a gpus/<name>.json preset");
    }
    return 0;
}

int pdbx_backend_modes_check(pdbx_backend_kind backend, pdbx_fp32_math fp32_math, pdbx_gemm_api gemm_api,
                             char *err, size_t errlen)
{
    if ((int)fp32_math < PDBX_FP32_MATH_IEEE || (int)fp32_math > PDBX_FP32_MATH_TF32)
        return pdbx_fail(err, errlen, "fp32_math: %d is out of range (allowed: ieee, tf32)", (int)fp32_math);
    if ((int)gemm_api < PDBX_GEMM_API_CUBLASLT || (int)gemm_api > PDBX_GEMM_API_CUBLAS)
        return pdbx_fail(err, errlen, "gemm_api: %d is out of range (allowed: cublaslt, cublas)", (int)gemm_api);
    if (backend != PDBX_BACKEND_CPU)
        return 0;
    /* refused rather than recorded as "no effect": a cpu run asked for TF32 or cuBLAS would
     * look like a measurement of them */
    if (fp32_math != PDBX_FP32_MATH_IEEE)
        return pdbx_fail(err, errlen, "fp32_math: \"%s\" is not available on backend cpu (allowed on cpu: ieee; "
                         "tf32 needs backend cuda)", pdbx_fp32_math_name(fp32_math));
    if (gemm_api != PDBX_GEMM_API_CUBLASLT)
        return pdbx_fail(err, errlen, "gemm_api: \"%s\" is not available on backend cpu (allowed on cpu: "
                         "cublaslt, the default, which the cpu backend runs as OpenBLAS; cublas needs backend "
                         "cuda)", pdbx_gemm_api_name(gemm_api));
    return 0;
}

int pdbx_backend_model_check(pdbx_backend_kind backend, const pdbx_model *m, char *err, size_t errlen)
{
    if (backend != PDBX_BACKEND_CUDA)
        return 0;
    /* the cuda backend runs the families as the cpu does (LayerNorm, gated or plain GELU
     * MLPs, learned positions, partial rotary, a parallel residual, gpt-j's shared norm, qwen3's
     * q/k norm, DeepSeek's MLA, mixtures of experts); what it has no kernel for is refused rather than run as something else. The arch check
     * (plan_arch_out.c) refuses such a model for every backend before this is reached. */
    const pdbx_arch *a = &m->arch;
    /* the MoE kernels (engine/backends/cuda/cuda_kernels_moe.h) hold a token's choices in
     * registers (CK_MOE_MAX_TOPK) and the route index's counters in shared memory */
    if (a->moe.experts > 0 && (a->moe.top_k > 16 || a->moe.experts > 12288))
        return pdbx_fail(err, errlen, "backend: cuda does not run model %s's mixture of experts with top_k %d of "
                         "%d experts (allowed on cuda: top_k <= 16, experts <= 12288)", m->name, a->moe.top_k,
                         a->moe.experts);
    const pdbx_activation act = pdbx_activation_of(a->activation);
    const char *what = act == PDBX_ACT_OTHER ? "MLP activation"
                       : a->mlp_plain && act == PDBX_ACT_SILU ? "plain (ungated) SiLU MLP" : NULL;
    if (!what)
        return 0;
    return pdbx_fail(err, errlen, "backend: cuda does not run model %s's %s '%s' (allowed: silu gated, gelu "
                     "or gelu tanh gated or plain)", m->name, what, *a->activation ? a->activation : "silu");
}

/* A mixture-of-experts model: moe_routing; a model with dense and MoE layers profiles at least
 * one of each (pdbx_layer_is_moe); the cpu backend's MoE kernels are fp32 (cpu_kernels_moe.h);
 * the shared experts' width splits over every TP degree. */
static int check_moe(const pdbx_spec *s, char *err, size_t errlen)
{
    const pdbx_model *m = &s->model;
    if (plan_check_moe_routing(s, err, errlen) != 0)
        return -1;
    if (!plan_is_moe(m))
        return 0;
    const int dense = m->arch.moe.first_dense_layers;
    if (dense > 0 && dense < m->layers && s->layers_profiled < 2)
        return pdbx_fail(err, errlen, "layers: %d would profile only a dense layer of model %s (its first %d of %d "
                         "layers are dense, the rest mixture of experts; allowed: 2..%d, one of each kind at least)",
                         s->layers_profiled, m->name, dense, m->layers, m->layers);
    const int cpu = s->backend == PDBX_BACKEND_CPU || (s->backend == PDBX_BACKEND_AUTO && strcmp(s->gpu.name, "cpu") == 0);
    if (cpu && s->dtype != PDBX_DTYPE_FP32)
        return pdbx_fail(err, errlen, "dtype: %s: the cpu backend runs model %s's mixture-of-experts ops in fp32 "
                         "only (allowed for this model on cpu: fp32)", pdbx_dtype_name(s->dtype), m->name);
    const int shared = plan_moe_shared_width(m);
    for (int i = 0; i < s->nconfigs && i < PDBX_MAX_CONFIGS; i++)
        if (s->configs[i].tp >= 1 && shared % s->configs[i].tp)
            return pdbx_fail(err, errlen, "configs: tp %d does not divide model %s's shared-expert width %d "
                             "(allowed: a TP that divides it)", s->configs[i].tp, m->name, shared);
    return 0;
}

/* In the order a reader meets the fields: the first fault is the one reported. */
int pdbx_spec_validate(const pdbx_spec *s, char *err, size_t errlen)
{
    if (check_model_and_run(s, err, errlen) != 0 || check_moe(s, err, errlen) != 0)
        return -1;
    if (s->nconfigs < 1 || s->nconfigs > PDBX_MAX_CONFIGS)
        return pdbx_fail(err, errlen, "configs: %d configurations (allowed: 1..%d)", s->nconfigs, PDBX_MAX_CONFIGS);
    for (int i = 0; i < s->nconfigs; i++)
        if (check_config(s, i, err, errlen) != 0)
            return -1;
    if (check_ops(s, err, errlen) != 0 || check_memory_and_gpu(s, err, errlen) != 0 ||
        plan_check_infer(s, err, errlen) != 0)
        return -1;
    return 0;
}
