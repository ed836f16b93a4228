/* plan_profile_memory.h: what the profile-memory rule's files share (internal to engine/plan;
 * the rule itself is plan.h's pdbx_profile_memory_list): the buffers' sizing helpers, the lists
 * of each backend (plan_profile_memory_cpu.c: cpu_memory.c's and cpu_backward.c's buffers;
 * plan_profile_memory_cuda.c: cuda_point.c's and cuda_backward.c's), and the conditions they
 * test on the point p (its ops, the model's kinds). */
#ifndef PDBX_PLAN_PROFILE_MEMORY_H
#define PDBX_PLAN_PROFILE_MEMORY_H

#include "engine/plan/plan_internal.h"

/* cpu: take() in cpu_memory.c hands out whole 64-byte lines (posix_memalign(64)). */
#define CPU_ALIGN 64.0
/* cpu: the attention kernel's blocking (engine/backends/cpu/cpu_kernels.h, PDBX_K_ATTN_BLOCK
 * and PDBX_K_ATTN_KBLOCK): per thread a block of query-row scores against the sequence and a
 * transposed key block. A unit test holds the two in step. */
#define CPU_ATTN_BLOCK 32
#define CPU_ATTN_KBLOCK 64
/* cuda: cuBLASLt workspace of the GEMM cache (cuda_gemm.h, CUDA_GEMM_WORKSPACE_BYTES). */
#define CUDA_GEMM_WORKSPACE (32.0 * 1024 * 1024)

#define HAS(op) (p->ops & PDBX_OP_BIT(PDBX_OP_##op))
/* the model's kinds (plan_arch.h): a gated MLP has a gate; LayerNorm a bias and saved row
 * statistics; learned positions a table */
#define GATED(p) (!(p)->model.arch.mlp_plain)
#define LAYERNORM(p) ((p)->model.arch.norm == PDBX_NORM_LAYER)
/* final-logit soft-capping: lm_head's bwd reads its capped gradient from a buffer of its own */
#define FINAL_CAP(p) ((p)->model.arch.final_softcap > 0)
#define LEARNED_POS(p) ((p)->model.arch.position == PDBX_POS_LEARNED)
/* the residual adds read and write hidden and attn_out (their gradients in the backward) */
#define RESID(p) (((p)->ops & (PDBX_OP_BIT(PDBX_OP_ATTN_RESIDUAL) | PDBX_OP_BIT(PDBX_OP_MLP_RESIDUAL))) != 0)
#define QKV_BIAS(p) ((p)->model.arch.bias.qkv != 0)
#define O_BIAS(p) ((p)->model.arch.bias.attn_out != 0)
#define MLP_BIAS(p) ((p)->model.arch.bias.mlp != 0)
#define QKV_OPS (PDBX_OP_BIT(PDBX_OP_ATTN_Q) | PDBX_OP_BIT(PDBX_OP_ATTN_K) | PDBX_OP_BIT(PDBX_OP_ATTN_V))
#define FC1_OPS (PDBX_OP_BIT(PDBX_OP_MLP_GATE) | PDBX_OP_BIT(PDBX_OP_MLP_UP))

/* Appends count buffers of one role (bytes each) and adds them to their kind's and the total. */
void plan_mem_add(pdbx_profile_memory *out, pdbx_buf_role role, pdbx_mem_kind kind, double bytes,
                  int count);
double plan_mem_lines(double bytes);   /* cpu: whole 64-byte lines */
double plan_mem_exact(double bytes);   /* cuda: the size asked for */
/* The RoPE table's bytes: fp32 cos and sin of [seq_len, head_dim/2] (both backends). */
double plan_mem_rope_table_bytes(const pdbx_profile_point *p);
/* The projections' bias vectors of e bytes per element, sets of each. */
void plan_mem_biases(const pdbx_profile_point *p, pdbx_profile_memory *out, double (*sz)(double),
                     double e, int sets);
/* The fp32 weight gradients of the backward, one set (both backends; cpu 1: its rules). */
void plan_mem_weight_grads(const pdbx_profile_point *p, pdbx_profile_memory *out, int cpu);

void plan_mem_cpu_list(const pdbx_profile_point *p, pdbx_profile_memory *out);
/* The widths per token of k, v and the attention context (a Llama's kv heads x d, kv heads x
 * d, heads x d; MLA's heads x (nope + rope), heads x v_head_dim twice) and the cpu backend's
 * MLA buffers, activations and weights (grad 0) or their gradients (grad 1), none for another
 * model (plan_profile_memory_mla.c). */
void plan_mem_attn_widths(const pdbx_profile_point *p, double *kd, double *vd, double *ctxd);
void plan_mem_cpu_mla(const pdbx_profile_point *p, pdbx_profile_memory *out, int grad);
void plan_mem_cpu_grad_list(const pdbx_profile_point *p, pdbx_profile_memory *out);
/* cpu: a MoE layer's buffers and, with bwd, their gradients (plan_profile_memory_moe.c) */
void plan_mem_cpu_moe_list(const pdbx_profile_point *p, pdbx_profile_memory *out);
void plan_mem_cpu_moe_grad_list(const pdbx_profile_point *p, pdbx_profile_memory *out);
/* 1 when the model has dense MLP layers (mlp_*: every dense model, a MoE model's first dense
 * layers): their gate/up/act rows and weights are listed only then */
#define DENSE_MLP(p) ((pdbx_model_ops(&(p)->model) & PDBX_OP_BIT(PDBX_OP_MLP_UP)) != 0)
/* cuda: the per-layer weight sets (layers x the L2 rotation's copies), the point's buffers
 * and, with bwd, the gradient buffers */
int plan_mem_cuda_weight_sets(const pdbx_profile_point *p);
void plan_mem_cuda_list(const pdbx_profile_point *p, int sets, pdbx_profile_memory *out);
void plan_mem_cuda_grad_list(const pdbx_profile_point *p, pdbx_profile_memory *out);
/* cuda: qk_norm's and MLA's buffers (plan_profile_memory_cuda_mla.c, mirroring
 * engine/backends/cuda/cuda_mla.c): grad 0 the activations and weights (`sets` per-layer weight
 * sets), grad 1 their gradients (passes with bwd); and one layer's MLA weights in elements. */
void plan_mem_cuda_mla(const pdbx_profile_point *p, pdbx_profile_memory *out, int sets, int grad);
double plan_mem_cuda_mla_layer_elems(const pdbx_profile_point *p);
/* plan_profile_memory_moe.c: the cuda backend's MoE buffers (weights in `sets` sets), and the
 * bytes of one layer's MoE weights in the dtype of es bytes (the L2 rotation's copies count them). */
void plan_mem_cuda_moe_list(const pdbx_profile_point *p, int sets, pdbx_profile_memory *out);
void plan_mem_cuda_moe_grad_list(const pdbx_profile_point *p, pdbx_profile_memory *out);
double plan_mem_cuda_moe_layer_bytes(const pdbx_profile_point *p, double es);

#endif
