/* plan_layers.h: which profiled layer runs which ops, for the models whose layers differ in
 * kind (part of the planner's interface, plan.h; pure, no I/O; plan_moe_layers.c).
 *
 * Contract (docs/engine-layers.md, "Mixture of experts"):
 *  - A MoE model with arch.moe.first_dense_layers = k dense layers first (DeepSeek) has both kinds;
 * the profiled layers keep that order: with k < the model's layers, profiled layers
 * 0 .. min(k, layers_profiled - 1) - 1 are dense and the rest MoE, so that a profile of two or
 * more layers measures at least one of each. Every layer of a dense model is dense; every layer
 * of a MoE model without dense layers (Mixtral, Qwen-MoE) is MoE.
 */
#ifndef PDBX_PLAN_LAYERS_H
#define PDBX_PLAN_LAYERS_H

#include "store/ops.h"

struct pdbx_model_s;
typedef struct pdbx_model_s pdbx_model;

#define PDBX_MOE_MAX_IMBALANCE 64.0
int pdbx_layer_is_moe(const pdbx_model *m, int layers_profiled, int l);
/* The profiled layers that are MoE layers (the rest are dense). */
int pdbx_profiled_moe_layers(const pdbx_model *m, int layers_profiled);
/* The shared experts' MLP width of a MoE layer (all of them as one; 0 without), before TP. */
int pdbx_moe_shared_width(const pdbx_model *m);
/* 1 when profiled layer l runs op: mlp_* only on dense layers, moe_* and ep_* only on MoE
 * layers, every other per-layer op on every layer. */
int pdbx_layer_has_op(const pdbx_model *m, int layers_profiled, int l, pdbx_op op);
/* The kinds of layer a model has: 2 for dense first layers before MoE ones (DeepSeek) or a
 * window on alternate layers (gemma-2), else 1. A spec profiles at least that many layers
 * (validation); setting such a model while `layers` is at its default 1 makes it 2. */
int pdbx_model_layer_kinds(const pdbx_model *m);
/* The profiled layers that run op (pdbx_layer_has_op), and the rep-th of them in turn (rep % that
 * count; -1 when none does): the layer an op-phase repetition runs on. */
int pdbx_layers_with_op(const pdbx_model *m, int layers_profiled, pdbx_op op);
int pdbx_layer_for_rep(const pdbx_model *m, int layers_profiled, pdbx_op op, long rep);

#endif
