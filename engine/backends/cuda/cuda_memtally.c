/* cuda_memtally.c: the tally of cuda_memtally.h. */
#include "engine/backends/cuda/cuda_memtally.h"

#include "engine/backends/cuda/cuda_backend.h"

double cuda_point_alloc_bytes(const struct cuda_point *pt)
{
    if (!pt)
        return 0;
    double sum = 0;
    for (int b = 0; b < B_COUNT; b++)
        sum += pt->buf[b] ? (double)pt->bytes[b] : 0;
    /* every layer of every copy of the L2 rotation (at least one: a point torn down before
     * the copies were counted has its first set) */
    const size_t sets = (size_t)(pt->wcopies > 1 ? pt->wcopies : 1) * (size_t)(pt->d.layers > 0 ? pt->d.layers : 0);
    for (int w = 0; w < W_COUNT; w++)
        for (size_t s = 0; pt->w && s < sets; s++)
            sum += pt->w[s * W_COUNT + w] ? (double)pt->wbytes[w] : 0;
    for (int g = 0; g < G_COUNT; g++)
        sum += pt->grad[g] ? (double)pt->gbytes[g] : 0;
    return sum;
}
