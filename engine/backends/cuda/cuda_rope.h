/* cuda_rope.h: how ck_rope (cuda_kernels.cu) walks q or k for the rotary embedding. Pure index
 * arithmetic, shared by the device code and the host test (tests/unit/test_cuda_rope.c), so
 * the mapping the GPU uses is the one the host checks against a plain reference.
 *
 * x is [seq, mbs, heads, d] (the backend's sequence-major layout, cuda_attention.h: token row
 * t = pos * mbs + b). RoPE rotates the first rot dims of each head (rot = d for a Llama; fewer
 * with partial rotary, gpt-neox's rotary_pct, gpt-j's rotary_dim; the rest stay), pairing
 * element i < rot/2 with i + rot/2. A work item is `w` consecutive rotation pairs of one head
 * of one token: elements lo .. lo + w - 1 (the first half, i < rot/2) with their partners
 * lo + rot/2 .., and the cos/sin entries table .. table + w - 1 of the [seq, rot/2] tables
 * (row = the token's position). w divides rot/2 (1, or the 16-byte vector: 8 for 2-byte
 * types, 4 for fp32; the vector also needs d a multiple of it, so every head starts aligned). */
#ifndef PDBX_CUDA_ROPE_H
#define PDBX_CUDA_ROPE_H

#include <stdint.h>

#ifdef __CUDACC__
#define CK_ROPE_HD __host__ __device__
#else
#define CK_ROPE_HD
#endif

typedef struct {
    int64_t lo;       /* element offset in x of the item's first low-half element */
    int64_t table;    /* offset in the cos (and sin) table of its first pair */
} ck_rope_at;

/* Items of one ck_rope launch over `tokens` rows of `heads` heads rotating rot dims each. */
static inline CK_ROPE_HD int64_t ck_rope_items(int64_t tokens, int64_t heads, int64_t rot, int64_t w)
{
    return tokens * heads * ((rot / 2) / w);
}

/* Item i of heads of stride d (elements apart) rotating rot <= d dims each; the partner of
 * element lo is lo + rot/2. */
static inline CK_ROPE_HD ck_rope_at ck_rope_item(int64_t i, int64_t heads, int64_t d, int64_t rot,
                                                 int64_t mbs, int64_t w)
{
    const int64_t half = rot / 2, chunks = half / w;
    const int64_t c = i % chunks, th = i / chunks;   /* th = token * heads + head */
    const int64_t pos = (th / heads) / mbs;           /* row t = pos * mbs + b */
    ck_rope_at at = {th * d + c * w, pos * half + c * w};
    return at;
}

#endif
