/* cuda_rowsplit.h: how the row kernels of cuda_kernels.cu (softmax, RMSNorm and their
 * backward: one warp per row) split a row of n elements for 16-byte vector access. Pure
 * arithmetic on addresses, shared by the device code and the host test
 * (tests/unit/test_cuda_rowsplit.c), so the split the GPU uses is the one the host checks.
 *
 * The row [0, n) becomes: a scalar head [0, head) up to the first 16-byte boundary of the
 * first pointer, nvec whole vectors of 16 / esize elements from head, and a scalar tail
 * [body_end, n). Vectors are used only when every pointer of the row (up to three: the
 * arrays read and written at the same element index) is 16-byte aligned at element head;
 * otherwise the whole row is the tail (head = nvec = body_end = 0). */
#ifndef PDBX_CUDA_ROWSPLIT_H
#define PDBX_CUDA_ROWSPLIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define CK_HOST_DEVICE __host__ __device__
#else
#define CK_HOST_DEVICE
#endif

typedef struct {
    int64_t head, nvec, body_end;
} ck_row_split;

/* p1, p2: 0 when the row has fewer pointers. esize: 2 or 4. */
static inline CK_HOST_DEVICE ck_row_split ck_split_row(int64_t n, uintptr_t p0, uintptr_t p1,
                                                       uintptr_t p2, int64_t esize)
{
    ck_row_split none = {0, 0, 0};
    if (n <= 0 || esize <= 0 || 16 % esize != 0 || p0 % (uintptr_t)esize != 0)
        return none;
    const int64_t per_vec = 16 / esize;
    int64_t head = (int64_t)((16 - p0 % 16) % 16) / esize;
    if (head > n)
        head = n;
    const uintptr_t off = (uintptr_t)(head * esize);
    if ((p1 && (p1 + off) % 16 != 0) || (p2 && (p2 + off) % 16 != 0))
        return none;
    const int64_t nvec = (n - head) / per_vec;
    ck_row_split s = {head, nvec, head + nvec * per_vec};
    return s;
}

#endif
