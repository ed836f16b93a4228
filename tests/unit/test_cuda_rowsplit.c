/* test_cuda_rowsplit.c: the row split of the cuda backend's warp-per-row kernels
 * (engine/backends/cuda/cuda_rowsplit.h, used by cuda_kernels.cu's softmax and RMSNorm and
 * their backward) walked on the host exactly as warp_walk walks it: every element of every row
 * is visited once, every vector access is 16-byte aligned in every array, for rows of any
 * length starting at any element offset (softmax rows of [s, s] with s not a multiple of 8,
 * RMSNorm rows of odd width). The GPU numerics are tests/cuda/test_cuda_kernels.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "engine/backends/cuda/cuda_rowsplit.h"

/* Walks rows r = 0..rows-1 of length n of arrays based at b0, b1 (aligned bases as cudaMalloc
 * gives, plus an element offset), checking coverage and alignment; returns the vectors used. */
static long walk(int64_t rows, int64_t n, int64_t esize, uintptr_t b0, uintptr_t b1)
{
    unsigned char seen[512];
    long vecs = 0;
    assert_true(n <= (int64_t)sizeof seen);
    for (int64_t r = 0; r < rows; r++) {
        const uintptr_t p0 = b0 + (uintptr_t)(r * n * esize), p1 = b1 ? b1 + (uintptr_t)(r * n * esize) : 0;
        const ck_row_split s = ck_split_row(n, p0, p1, 0, esize);
        memset(seen, 0, sizeof seen);
        assert_true(s.head >= 0 && s.head < 16 / esize);
        assert_true(s.body_end == s.head + s.nvec * (16 / esize) && s.body_end <= n);
        for (int64_t j = 0; j < s.head; j++)
            seen[j]++;
        for (int64_t v = 0; v < s.nvec; v++) {
            const int64_t j = s.head + v * (16 / esize);
            assert_int_equal((p0 + (uintptr_t)(j * esize)) % 16, 0);
            if (p1)
                assert_int_equal((p1 + (uintptr_t)(j * esize)) % 16, 0);
            for (int64_t e = 0; e < 16 / esize; e++)
                seen[j + e]++;
            vecs++;
        }
        for (int64_t j = s.body_end; j < n; j++)
            seen[j]++;
        for (int64_t j = 0; j < n; j++)
            assert_int_equal(seen[j], 1);
        /* a row long enough holds at most one partial vector at each end */
        if (s.nvec > 0)
            assert_true(n - s.body_end < 16 / esize);
    }
    return vecs;
}

static void test_lengths_and_offsets(void **state)
{
    (void)state;
    const uintptr_t base = 0x7f0000000000u;   /* cudaMalloc: 256-byte aligned */
    for (int64_t esize = 2; esize <= 4; esize += 2)
        for (int64_t n = 1; n <= 300; n++)
            for (int64_t off = 0; off < 8; off++)
                walk(5, n, esize, base + (uintptr_t)(off * esize), base + 0x1000 + (uintptr_t)(off * esize));
}

/* aligned rows (length a multiple of the vector) are all vectors */
static void test_aligned_rows_are_vectors(void **state)
{
    (void)state;
    const uintptr_t base = 0x10000;
    assert_int_equal(walk(3, 4096 / 16, 2, base, base + 0x100000), 3 * (4096 / 16) / 8);
    ck_row_split s = ck_split_row(1000, base, base + 256, base + 512, 2);
    assert_true(s.head == 0 && s.nvec == 125 && s.body_end == 1000);
    s = ck_split_row(1003, base, 0, 0, 4);   /* fp32: 250 vectors and 3 in the tail */
    assert_true(s.head == 0 && s.nvec == 250 && s.body_end == 1000);
}

/* arrays whose misalignments differ: no vectors, the whole row scalar */
static void test_disagreeing_alignment(void **state)
{
    (void)state;
    ck_row_split s = ck_split_row(100, 0x1000, 0x2002, 0, 2);
    assert_true(s.head == 0 && s.nvec == 0 && s.body_end == 0);
    assert_int_equal(walk(4, 37, 2, 0x1000, 0x2002), 0);
    /* a head: row starting 3 elements into a vector (bf16) */
    s = ck_split_row(100, 0x1006, 0x2006, 0x3006, 2);
    assert_true(s.head == 5 && s.nvec == 11 && s.body_end == 93);
    /* a pointer not aligned to its element: all scalar */
    s = ck_split_row(100, 0x1001, 0, 0, 2);
    assert_true(s.nvec == 0 && s.body_end == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lengths_and_offsets),
        cmocka_unit_test(test_aligned_rows_are_vectors),
        cmocka_unit_test(test_disagreeing_alignment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
