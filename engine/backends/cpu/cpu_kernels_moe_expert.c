/* cpu_kernels_moe_expert.c: the grouped expert MLP of a MoE layer, forward and backward (see
 * cpu_kernels_moe.h): one OpenBLAS GEMM per expert with rows (its own row count, as Megatron's
 * SequentialMLP and a grouped GEMM's groups), and the gated activation over all rows at once
 * through the backend's SiLU x up and gated GELU kernels. */
#include "engine/backends/cpu/cpu_kernels_moe.h"
#include "engine/backends/cpu/cpu_kernels.h"        /* pdbx_k_silu_mul */
#include "engine/backends/cpu/cpu_kernels_bwd.h"    /* pdbx_k_silu_mul_bwd */
#include "engine/backends/cpu/cpu_kernels_dense.h"  /* pdbx_k_gelu_mul, pdbx_k_gelu_mul_bwd */

#include <cblas.h>

void pdbx_k_moe_expert_gemm(const float *x, const float *w, const int64_t *offsets, int experts,
                            int64_t in, int64_t out, float *y)
{
    for (int e = 0; e < experts; e++) {
        const int64_t r0 = offsets[e], n = offsets[e + 1] - r0;
        if (n < 1)
            continue;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)out,
                    (blasint)in, 1.0f, x + r0 * in, (blasint)in, w + (int64_t)e * in * out,
                    (blasint)out, 0.0f, y + r0 * out, (blasint)out);
    }
}

void pdbx_k_moe_expert_gate(const float *x, const float *w_gate, const int64_t *offsets,
                            int experts, int64_t hidden, int64_t inter, float *gate)
{
    pdbx_k_moe_expert_gemm(x, w_gate, offsets, experts, hidden, inter, gate);
}

void pdbx_k_moe_expert_up(const float *x, const float *w_up, const int64_t *offsets, int experts,
                          int64_t hidden, int64_t inter, float *up)
{
    pdbx_k_moe_expert_gemm(x, w_up, offsets, experts, hidden, inter, up);
}

void pdbx_k_moe_expert_down(const float *act, const float *w_down, const int64_t *offsets,
                            int experts, int64_t inter, int64_t hidden, float *out)
{
    pdbx_k_moe_expert_gemm(act, w_down, offsets, experts, inter, hidden, out);
}

/* Per expert with rows: dx_e (=, or += when dx_accumulate) dy_e w[e]^T, dw[e] += x_e^T dy_e
 * (cpu_backward.c's linear_bwd on one expert's slice). */
void pdbx_k_moe_expert_gemm_bwd(const float *x, const float *w, const float *dy,
                                const int64_t *offsets, int experts, int64_t in, int64_t out,
                                float *dx, int dx_accumulate, float *dw)
{
    const blasint K = (blasint)in, N = (blasint)out;
    for (int e = 0; e < experts; e++) {
        const int64_t r0 = offsets[e], n = offsets[e + 1] - r0;
        if (n < 1)
            continue;
        const blasint M = (blasint)n;
        const float *we = w + (int64_t)e * in * out;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, K, N, 1.0f, dy + r0 * out, N, we,
                    N, dx_accumulate ? 1.0f : 0.0f, dx + r0 * in, K);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, N, M, 1.0f, x + r0 * in, K,
                    dy + r0 * out, N, 1.0f, dw + (int64_t)e * in * out, N);
    }
}

void pdbx_k_moe_expert_gate_bwd(const float *x, const float *w_gate, const float *dgate,
                                const int64_t *offsets, int experts, int64_t hidden, int64_t inter,
                                float *dx, int dx_accumulate, float *dw_gate)
{
    pdbx_k_moe_expert_gemm_bwd(x, w_gate, dgate, offsets, experts, hidden, inter, dx,
                               dx_accumulate, dw_gate);
}

void pdbx_k_moe_expert_up_bwd(const float *x, const float *w_up, const float *dup,
                              const int64_t *offsets, int experts, int64_t hidden, int64_t inter,
                              float *dx, int dx_accumulate, float *dw_up)
{
    pdbx_k_moe_expert_gemm_bwd(x, w_up, dup, offsets, experts, hidden, inter, dx, dx_accumulate,
                               dw_up);
}

void pdbx_k_moe_expert_down_bwd(const float *act, const float *w_down, const float *dout,
                                const int64_t *offsets, int experts, int64_t inter, int64_t hidden,
                                float *dact, float *dw_down)
{
    pdbx_k_moe_expert_gemm_bwd(act, w_down, dout, offsets, experts, inter, hidden, dact, 0,
                               dw_down);
}

void pdbx_k_moe_expert_act(pdbx_cpu_pool *pool, const float *gate, const float *up, int64_t rows,
                           int64_t inter, pdbx_moe_act kind, float *act)
{
    const int64_t n = rows * inter;
    if (kind == PDBX_MOE_ACT_SILU)
        pdbx_k_silu_mul(pool, gate, up, n, act);
    else
        pdbx_k_gelu_mul(pool, gate, up, n,
                        kind == PDBX_MOE_ACT_GELU_TANH ? PDBX_GELU_TANH : PDBX_GELU_ERF, act);
}

void pdbx_k_moe_expert_act_bwd(pdbx_cpu_pool *pool, const float *gate, const float *up,
                               const float *dact, int64_t rows, int64_t inter, pdbx_moe_act kind,
                               float *dgate, float *dup)
{
    const int64_t n = rows * inter;
    if (kind != PDBX_MOE_ACT_SILU) {
        pdbx_k_gelu_mul_bwd(pool, gate, up, dact, n,
                            kind == PDBX_MOE_ACT_GELU_TANH ? PDBX_GELU_TANH : PDBX_GELU_ERF, dgate,
                            dup);
        return;
    }
    pdbx_k_silu_mul_bwd(pool, gate, up, dact, n, dgate, dup);
}
