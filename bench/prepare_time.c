/* bench/prepare_time.c: seconds the cpu backend's prepare() takes for each point of a config's
 * MBS sweep (the first point allocates and fills the weights, the later ones keep them), and
 * the seconds one step's forward of that point takes (every op once, as the engine's steps do).
 * Built and run by bench/setup_time.sh against the build's static libraries.
 *   prepare_time MODEL LAYERS SEQ THREADS MBS...
 * prints per point: "mbs M prepare_s P prepare_cpu_s C step_s S" (C: CPU seconds of every
 * thread of the process during prepare, which load from other processes does not stretch;
 * step_s: the minimum of 3 steps). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "engine/backends/cpu/cpu_compute.h"
#include "engine/plan/plan.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu_s(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: prepare_time MODEL LAYERS SEQ THREADS MBS...\n");
        return 2;
    }
    char err[512] = "";
    pdbx_model m;
    if (pdbx_model_load(argv[1], &m, err, sizeof err) != 0) {
        fprintf(stderr, "prepare_time: %s\n", err);
        return 2;
    }
    const pdbx_compute_ops *ops = &pdbx_cpu_compute_ops;
    pdbx_compute_config cfg = { .local_size = 1, .world_size = 1, .blas_threads = atoi(argv[4]),
                                .dtype = PDBX_DTYPE_FP32 };
    pdbx_compute *c = NULL;
    if (ops->init(&cfg, &c, err, sizeof err) != 0) {
        fprintf(stderr, "prepare_time: %s\n", err);
        return 1;
    }
    for (int a = 5; a < argc; a++) {
        pdbx_point_shapes p = { .model = m, .tp = 1, .mbs = atoi(argv[a]), .seq_len = atoi(argv[3]),
                                .layers = atoi(argv[2]), .ops = PDBX_OPS_ALL,
                                .passes = PDBX_PASS_BIT(PDBX_PASS_FWD) };
        double t0 = now_s(), c0 = cpu_s();
        if (ops->prepare(c, &p, err, sizeof err) != 0) {
            fprintf(stderr, "prepare_time: mbs %d: %s\n", p.mbs, err);
            return 1;
        }
        double prep = now_s() - t0, prep_cpu = cpu_s() - c0, best = 1e30;
        for (int step = 0; step < 3; step++) {
            double s0 = now_s(), ms;
            for (int op = 0; op < PDBX_OP_COUNT; op++) {
                if (pdbx_op_is_comm((pdbx_op)op))
                    continue;
                for (int l = 0; l < (pdbx_op_is_per_layer((pdbx_op)op) ? p.layers : 1); l++)
                    if (ops->run_op(c, (pdbx_op)op, PDBX_PASS_FWD, l, &ms, err, sizeof err) != 0) {
                        fprintf(stderr, "prepare_time: %s\n", err);
                        return 1;
                    }
            }
            double s = now_s() - s0;
            best = s < best ? s : best;
        }
        printf("mbs %d prepare_s %.3f prepare_cpu_s %.3f step_s %.3f\n", p.mbs, prep, prep_cpu, best);
        fflush(stdout);
        ops->release(c);
    }
    ops->fini(c);
    return 0;
}
