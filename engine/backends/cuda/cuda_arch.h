/* cuda_arch.h: what the cuda backend reads of a model's arch (plan_arch.h) that the planner
 * derives with functions: the MLP activation's kind and the dims RoPE rotates. They are the
 * planner's pdbx_activation_of and pdbx_rotary_dims (plan.h) written again, because
 * libpdbx_cuda.so links none of the planner (plan_shapes.c pulls in the spec code); pure, and
 * held equal to the planner's on every name it classifies and a grid of fractions by
 * tests/cuda/test_cuda_dense_point.c. A name the planner learns and this does not is OTHER
 * here: prepare refuses it (cuda_point.c), never runs it as another activation. */
#ifndef PDBX_CUDA_ARCH_H
#define PDBX_CUDA_ARCH_H

#include <string.h>

#include "engine/plan/plan.h"

/* transformers' ACT2CLS names: SiLU, GELU exact (erf), GELU tanh; NULL or "" (an arch built
 * in code, zeroed) is a Llama's SiLU. */
static inline pdbx_activation cuda_activation_of(const char *hf_name)
{
    static const struct {
        const char *name;
        pdbx_activation act;
    } names[] = {
        {"silu", PDBX_ACT_SILU},           {"swish", PDBX_ACT_SILU},
        {"gelu", PDBX_ACT_GELU_ERF},       {"gelu_python", PDBX_ACT_GELU_ERF},
        {"gelu_new", PDBX_ACT_GELU_TANH},  {"gelu_pytorch_tanh", PDBX_ACT_GELU_TANH},
        {"gelu_fast", PDBX_ACT_GELU_TANH}, {"gelu_accurate", PDBX_ACT_GELU_TANH},
    };
    if (!hf_name || !*hf_name)
        return PDBX_ACT_SILU;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(hf_name, names[i].name) == 0)
            return names[i].act;
    return PDBX_ACT_OTHER;
}

/* int(head_dim x fraction) made even, as GPT-NeoX's rotary_ndims; the whole head for a
 * fraction of 1 or 0 (zeroed: a Llama's). */
static inline int cuda_rotary_dims(int head_dim, double fraction)
{
    if (!(fraction > 0 && fraction < 1))
        return head_dim;
    const int rot = (int)(head_dim * fraction);
    return rot - rot % 2;
}

#endif
