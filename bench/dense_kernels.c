/* bench/dense_kernels.c: milliseconds the cpu backend's dense-family kernels
 * (engine/backends/cpu/cpu_kernels_dense.h) take on the caller's thread alone (NULL pool: one
 * core), for bench/dense_kernels.sh to set beside PyTorch's. Built by that script against the
 * build's static library.
 *   dense_kernels LN_ROWS LN_COLS GELU_ROWS GELU_COLS REPS
 * prints one line per kernel: "NAME median_ms min_ms" over REPS timed calls after 3 untimed
 * ones, each call on the same buffers (so they are as warm as PyTorch's, which the script
 * times the same way). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_dense.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    int64_t ln_rows, ln_cols, g_n;
    float *x, *w, *b, *y, *mean, *rstd, *dy, *dx, *dw, *db;   /* LayerNorm */
    float *g, *gdy, *gout;                                    /* GELU */
} bufs;

enum { LN_FWD, LN_BWD, ERF_FWD, TANH_FWD, ERF_BWD, TANH_BWD, NKERNELS };
static const char *const NAMES[NKERNELS] = { "layernorm_fwd", "layernorm_bwd", "gelu_erf_fwd",
                                             "gelu_tanh_fwd", "gelu_erf_bwd", "gelu_tanh_bwd" };

static void run(const bufs *B, int k)
{
    switch (k) {
    case LN_FWD:
        pdbx_k_layernorm(NULL, B->x, B->w, B->b, B->ln_rows, B->ln_cols, 1e-5f, B->y, B->mean,
                         B->rstd);
        break;
    case LN_BWD:
        pdbx_k_layernorm_bwd(NULL, B->x, B->w, B->mean, B->rstd, B->dy, B->ln_rows, B->ln_cols,
                             B->dx, B->dw, B->db);
        break;
    case ERF_FWD:
    case TANH_FWD:
        pdbx_k_gelu(NULL, B->g, B->g_n, k == ERF_FWD ? PDBX_GELU_ERF : PDBX_GELU_TANH, B->gout);
        break;
    default:
        pdbx_k_gelu_bwd(NULL, B->g, B->gdy, B->g_n, k == ERF_BWD ? PDBX_GELU_ERF : PDBX_GELU_TANH,
                        B->gout);
    }
}

static float *filled(int64_t n, float scale, uint64_t seed)
{
    float *p = malloc((size_t)n * sizeof *p);
    if (!p) {
        fprintf(stderr, "dense_kernels: out of memory\n");
        exit(2);
    }
    pdbx_k_fill_uniform(p, (size_t)n, scale, seed);
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: dense_kernels LN_ROWS LN_COLS GELU_ROWS GELU_COLS REPS\n");
        return 2;
    }
    bufs B = { .ln_rows = atoll(argv[1]), .ln_cols = atoll(argv[2]) };
    B.g_n = atoll(argv[3]) * atoll(argv[4]);
    const int reps = atoi(argv[5]);
    if (B.ln_rows < 1 || B.ln_cols < 1 || B.g_n < 1 || reps < 1) {
        fprintf(stderr, "dense_kernels: sizes and REPS must be >= 1\n");
        return 2;
    }
    const int64_t n = B.ln_rows * B.ln_cols;
    B.x = filled(n, 1.0f, 1), B.dy = filled(n, 1.0f, 2), B.y = filled(n, 1.0f, 3);
    B.dx = filled(n, 1.0f, 4), B.w = filled(B.ln_cols, 1.0f, 5), B.b = filled(B.ln_cols, 1.0f, 6);
    B.dw = filled(B.ln_cols, 1.0f, 7), B.db = filled(B.ln_cols, 1.0f, 8);
    B.mean = filled(B.ln_rows, 1.0f, 9), B.rstd = filled(B.ln_rows, 1.0f, 10);
    B.g = filled(B.g_n, 4.0f, 11), B.gdy = filled(B.g_n, 1.0f, 12);
    B.gout = filled(B.g_n, 1.0f, 13);
    pdbx_k_layernorm(NULL, B.x, B.w, B.b, B.ln_rows, B.ln_cols, 1e-5f, B.y, B.mean, B.rstd);
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t)
        return 2;
    for (int k = 0; k < NKERNELS; k++) {
        for (int i = 0; i < 3; i++)
            run(&B, k);
        for (int i = 0; i < reps; i++) {
            const double t0 = now_ms();
            run(&B, k);
            t[i] = now_ms() - t0;
        }
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        printf("%s %.4f %.4f\n", NAMES[k], t[reps / 2], t[0]);
    }
    free(t);
    return 0;
}
