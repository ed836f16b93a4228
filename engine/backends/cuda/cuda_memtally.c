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
    for (int w = 0; w < W_COUNT; w++)
        for (int l = 0; pt->w && l < pt->d.layers; l++)
            sum += pt->w[(size_t)l * W_COUNT + w] ? (double)pt->wbytes[w] : 0;
    for (int g = 0; g < G_COUNT; g++)
        sum += pt->grad[g] ? (double)pt->gbytes[g] : 0;
    return sum;
}
