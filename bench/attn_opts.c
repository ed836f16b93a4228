/* bench/attn_opts.c: milliseconds the cpu backend's attention core takes, forward and backward,
 * with a sliding window and logit soft-capping (engine/backends/cpu/cpu_kernels_attn.h) or
 * plain, for bench/attn_opts.sh. Built by that script from the kernels' sources; with
 * -DATTN_OPTS_OLD it uses the plain entry points alone (pdbx_k_attention_causal and
 * pdbx_k_attention_causal_bwd), so that it builds against the sources of a commit before the
 * options existed too.
 *   attn_opts SEQ HEADS KV_HEADS HEAD_DIM WINDOW SOFTCAP THREADS REPS OUT
 * One sequence; q with values in [-3, 3], k, v, dO in [-1, 1] (fixed seeds). WINDOW 0 and
 * SOFTCAP 0 call the plain entry points (what the backend calls today). Prints
 * "fwd median_ms min_ms" and "bwd median_ms min_ms" over REPS timed calls after one untimed
 * one; OUT (not "-"): the output, dq, dk and dv as raw fp32, to compare bits between builds.
 * ATTN_OPTS_CLOCK=cpu times the process's CPU time instead of the wall clock (one thread on a
 * loaded machine: a time slice lost to another process is not counted). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_bwd.h"
#ifndef ATTN_OPTS_OLD
#include "engine/backends/cpu/cpu_kernels_attn.h"
#endif

static clockid_t clock_id = CLOCK_MONOTONIC;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static float *filled(size_t n, float scale, uint64_t seed)
{
    float *p = malloc(n * sizeof *p);
    if (!p) {
        fprintf(stderr, "attn_opts: out of memory\n");
        exit(2);
    }
    pdbx_k_fill_uniform(p, n, scale, seed);
    return p;
}

typedef struct {
    int64_t S, H, KV, d, window;
    float cap;
    int threads;
    pdbx_cpu_pool *pool;
    float *q, *k, *v, *dO, *out, *dq, *dk, *dv, *fs, *bs;
} bench;

static void run(const bench *B, int bwd)
{
#ifndef ATTN_OPTS_OLD
    const pdbx_attn_opts o = { .window = B->window, .softcap = B->cap };
    if (B->window != 0 || B->cap != 0.0f) {
        if (bwd)
            pdbx_k_attention_causal_bwd_opts(B->pool, B->q, B->k, B->v, B->dO, 1, B->S, B->H,
                                             B->KV, B->d, B->bs, B->dq, B->dk, B->dv, &o);
        else
            pdbx_k_attention_causal_opts(B->pool, B->q, B->k, B->v, 1, B->S, B->H, B->KV, B->d,
                                         B->fs, B->out, &o);
        return;
    }
#endif
    if (bwd)
#ifdef ATTN_OPTS_OLD   /* before the backward took the pool: its thread count */
        pdbx_k_attention_causal_bwd(B->q, B->k, B->v, B->dO, 1, B->S, B->H, B->KV, B->d,
                                    B->threads, B->bs, B->dq, B->dk, B->dv);
#else
        pdbx_k_attention_causal_bwd(B->pool, B->q, B->k, B->v, B->dO, 1, B->S, B->H, B->KV, B->d,
                                    B->bs, B->dq, B->dk, B->dv);
#endif
    else
        pdbx_k_attention_causal(B->pool, B->q, B->k, B->v, 1, B->S, B->H, B->KV, B->d, B->fs,
                                B->out);
}

int main(int argc, char **argv)
{
    if (argc != 10) {
        fprintf(stderr, "usage: attn_opts SEQ HEADS KV_HEADS HEAD_DIM WINDOW SOFTCAP THREADS "
                        "REPS OUT\n");
        return 2;
    }
    bench B = { .S = atoll(argv[1]), .H = atoll(argv[2]), .KV = atoll(argv[3]),
                .d = atoll(argv[4]), .window = atoll(argv[5]), .cap = (float)atof(argv[6]),
                .threads = atoi(argv[7]) };
    const int reps = atoi(argv[8]);
    const char *clk = getenv("ATTN_OPTS_CLOCK");
    if (clk && strcmp(clk, "cpu") == 0)
        clock_id = CLOCK_PROCESS_CPUTIME_ID;
    if (B.S < 1 || B.H < 1 || B.KV < 1 || B.H % B.KV || B.d < 1 || B.threads < 1 || reps < 1) {
        fprintf(stderr, "attn_opts: bad shape\n");
        return 2;
    }
#ifdef ATTN_OPTS_OLD
    if (B.window != 0 || B.cap != 0.0f) {
        fprintf(stderr, "attn_opts: this build has no window or soft-capping\n");
        return 2;
    }
#endif
    const size_t nq = (size_t)(B.S * B.H * B.d), nk = (size_t)(B.S * B.KV * B.d);
    B.pool = pdbx_cpu_pool_create(B.threads);
    B.q = filled(nq, 3.0f, 1), B.k = filled(nk, 1.0f, 2), B.v = filled(nk, 1.0f, 3);
    B.dO = filled(nq, 1.0f, 4), B.out = filled(nq, 1.0f, 5), B.dq = filled(nq, 1.0f, 6);
    B.dk = filled(nk, 1.0f, 7), B.dv = filled(nk, 1.0f, 8);
    B.fs = filled(pdbx_k_attention_scratch_floats(B.S, B.d, B.threads), 1.0f, 9);
    B.bs = filled(pdbx_k_attention_bwd_scratch_floats(B.S, B.d, B.threads), 1.0f, 10);
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t)
        return 2;
    for (int bwd = 0; bwd < 2; bwd++) {
        run(&B, bwd);
        for (int i = 0; i < reps; i++) {
            const double t0 = now_ms();
            run(&B, bwd);
            t[i] = now_ms() - t0;
        }
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        printf("%s %.3f %.3f\n", bwd ? "bwd" : "fwd", t[reps / 2], t[0]);
    }
    if (strcmp(argv[9], "-") != 0) {
        FILE *f = fopen(argv[9], "wb");
        if (!f || fwrite(B.out, sizeof(float), nq, f) != nq ||
            fwrite(B.dq, sizeof(float), nq, f) != nq || fwrite(B.dk, sizeof(float), nk, f) != nk ||
            fwrite(B.dv, sizeof(float), nk, f) != nk || fclose(f) != 0) {
            fprintf(stderr, "attn_opts: cannot write %s\n", argv[9]);
            return 1;
        }
    }
    pdbx_cpu_pool_destroy(B.pool);
    free(t), free(B.q), free(B.k), free(B.v), free(B.dO), free(B.out), free(B.dq), free(B.dk);
    free(B.dv), free(B.fs), free(B.bs);
    return 0;
}
