/* gemm_ref.c: a standalone OpenBLAS sgemm timing, the reference for bench/gemm_efficiency.sh.
 * usage: gemm_ref M N K THREADS REPS  -> prints "median_ms mean_ms min_ms" of C[M,N] = A[M,K] x B[K,N]
 * (row-major, no transposes, values in [-1,1) scaled like the engine's), after 2 warmups. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: gemm_ref M N K THREADS REPS\n");
        return 2;
    }
    long m = atol(argv[1]), n = atol(argv[2]), k = atol(argv[3]);
    int threads = atoi(argv[4]), reps = atoi(argv[5]);
    openblas_set_num_threads(threads);
    float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n),
          *c = malloc(sizeof(float) * m * n);
    double *t = malloc(sizeof(double) * reps);
    if (!a || !b || !c || !t)
        return 1;
    unsigned s = 12345;
    for (long i = 0; i < m * k; i++) a[i] = ((s = s * 1103515245u + 12345u) >> 8) / 8388608.0f - 1.0f;
    for (long i = 0; i < k * n; i++) b[i] = (((s = s * 1103515245u + 12345u) >> 8) / 8388608.0f - 1.0f) * 0.02f;
    for (long i = 0; i < m * n; i++) c[i] = 0;
    for (int r = -2; r < reps; r++) {
        double t0 = now_ms();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
        if (r >= 0)
            t[r] = now_ms() - t0;
    }
    double sum = 0;
    for (int r = 0; r < reps; r++) sum += t[r];
    qsort(t, reps, sizeof *t, cmp);
    printf("%.6f %.6f %.6f %g\n", t[reps / 2], sum / reps, t[0], c[0]);
    return 0;
}
