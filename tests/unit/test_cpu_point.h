/* test_cpu_point.h: the tiny point the cpu backend tests prepare (test_engine_kernels_backend.c,
 * test_engine_kernels_bwd.c): hidden 64, 4 heads and 2 kv heads of 16, intermediate 128, vocab
 * 256, seq 20, 2 profiled layers of a 4-layer model, every op, at (tp, mbs) with `passes`. */
#ifndef PDBX_TEST_CPU_POINT_H
#define PDBX_TEST_CPU_POINT_H

#include <stdint.h>
#include <string.h>

#include "engine/backends/backend.h"

static inline pdbx_point_shapes tiny_cpu_point(int tp, int mbs, uint32_t passes)
{
    pdbx_point_shapes p;
    memset(&p, 0, sizeof p);
    p.model.hidden = 64;
    p.model.intermediate = 128;
    p.model.heads = 4;
    p.model.kv_heads = 2;
    p.model.head_dim = 16;
    p.model.layers = 4;
    p.model.vocab = 256;
    p.tp = tp;
    p.mbs = mbs;
    p.seq_len = 20;
    p.layers = 2;
    p.ops = PDBX_OPS_ALL;
    p.passes = passes;
    return p;
}

#endif
