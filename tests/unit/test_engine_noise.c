/* test_engine_noise.c: engine/engine_noise.h: the device fold and the point's figures (pure),
 * and the sampler itself over MPI (a singleton MPI_COMM_WORLD): a child spinning beside the
 * point is another process's load, this process's own spin is not, and a backend whose
 * device_noise answers is folded into the gpu figures. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/engine_noise.h"
#include "store/util/clock.h"

/* LeakSanitizer's hook: no leak check at exit for this binary. MPI_Init's plugins (OpenMPI MCA
 * components, PMIx) keep process-lifetime allocations and are dlclosed by MPI_Finalize, so their
 * stacks end in "<unknown module>", which no suppression can name (engine_common.inc turns leak
 * checks off for the engine ranks for the same reason). engine_noise.c allocates nothing: its
 * state is the caller's struct and one MPI communicator, freed by pdbx_noise_fini. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return 1;
}

static void test_device_fold(void **state)
{
    (void)state;
    pdbx_noise_device_acc acc;
    pdbx_noise_device_reset(&acc);
    pdbx_point_noise out;
    pdbx_noise_figures(NULL, 0, NAN, &acc, &out);
    assert_false(out.valid);
    assert_false(out.gpu_valid);
    pdbx_device_noise s1 = { .sm_clock_mhz = 1980, .temp_c = 61, .throttle_reasons = 0x4 };
    pdbx_device_noise s2 = { .sm_clock_mhz = 1755, .temp_c = NAN, .throttle_reasons = 0x20 };
    pdbx_device_noise s3 = { .sm_clock_mhz = NAN, .temp_c = 66, .throttle_reasons = 0 };
    pdbx_noise_device_fold(&acc, &s1);
    pdbx_noise_device_fold(&acc, &s2);
    pdbx_noise_device_fold(&acc, &s3);
    assert_int_equal(acc.samples, 3);
    pdbx_noise_figures(NULL, 0, NAN, &acc, &out);
    assert_true(out.valid);
    assert_true(out.gpu_valid);
    assert_float_equal(out.sm_clock_min_mhz, 1755, 0);
    assert_float_equal(out.sm_clock_max_mhz, 1980, 0);
    assert_float_equal(out.temp_max_c, 66, 0);
    assert_float_equal(out.throttle_reasons, 0x24, 0);
    /* no host figures: NaN, not 0, and no verdict */
    assert_true(isnan(out.other_busy) && isnan(out.steal_pct) && isnan(out.load1));
    assert_false(out.busy);
    /* samples without a clock or temperature: the figures stay unknown (NaN), not +-inf */
    pdbx_noise_device_reset(&acc);
    pdbx_device_noise none = { .sm_clock_mhz = NAN, .temp_c = NAN, .throttle_reasons = 0 };
    pdbx_noise_device_fold(&acc, &none);
    pdbx_noise_figures(NULL, 0, NAN, &acc, &out);
    assert_true(out.gpu_valid);
    assert_true(isnan(out.sm_clock_min_mhz) && isnan(out.sm_clock_max_mhz) && isnan(out.temp_max_c));
}

static void test_host_figures(void **state)
{
    (void)state;
    pdbx_cpu_load host = { .other_busy = 0.4, .steal_pct = 1 };
    pdbx_point_noise out;
    pdbx_noise_figures(&host, 8, 3.5, NULL, &out);
    assert_true(out.valid);
    assert_false(out.gpu_valid);
    assert_int_equal(out.cores, 8);
    assert_float_equal(out.load1, 3.5, 0);
    assert_false(out.busy);
    host.other_busy = 0.6;
    pdbx_noise_figures(&host, 8, 3.5, NULL, &out);
    assert_true(out.busy);
    host.other_busy = 0;
    host.steal_pct = 7;
    pdbx_noise_figures(&host, 8, 3.5, NULL, &out);
    assert_true(out.busy);
}

/* A device answering the backend slot's contract (a sample, or -1) with known values, as a GPU
 * would: the fold is checked without one. */
static int answers;
static int scripted_device_noise(pdbx_compute *c, pdbx_device_noise *out)
{
    (void)c;
    answers++;
    out->sm_clock_mhz = 1500 + 100 * answers;
    out->temp_c = 50 + answers;
    out->throttle_reasons = answers == 2 ? 0x8 : 0;
    return 0;
}

static void spin(double seconds)
{
    volatile unsigned long n = 0;
    double t0 = pdbx_mono_s();
    while (pdbx_mono_s() - t0 < seconds)
        n++;
}

static void test_sampler_over_mpi(void **state)
{
    (void)state;
    pdbx_noise n;
    assert_int_equal(pdbx_noise_init(&n, MPI_COMM_WORLD), 0);
    pdbx_point_noise out;

    /* a hog beside the point: other processes' load, the verdict busy */
    pid_t hog = fork();
    assert_true(hog >= 0);
    if (hog == 0) {
        volatile unsigned long x = 0;
        for (;;)
            x++;
    }
    pdbx_sleep_ms(100);
    pdbx_noise_begin(&n, NULL, NULL);
    pdbx_sleep_ms(600);
    pdbx_noise_end(&n, NULL, NULL, &out);
    kill(hog, SIGKILL);
    waitpid(hog, NULL, 0);
    assert_true(out.valid);
    assert_false(out.gpu_valid);
    assert_int_equal(out.cores, (int)sysconf(_SC_NPROCESSORS_ONLN));
    assert_true(out.load1 >= 0);
    assert_true(out.steal_pct >= 0 && out.steal_pct <= 100);
    assert_true(out.other_busy > PDBX_BUSY_OTHER_CORES);
    assert_true(out.busy);

    /* our own spin is ours: the point's other load is the machine's busy time over the same
     * window (read here around begin and end) less the spin, not the machine's busy time */
    pdbx_cpu_snapshot a, b;
    double own0 = pdbx_self_cpu_s();
    assert_int_equal(pdbx_cpu_snapshot_read(&a), 0);
    pdbx_noise_begin(&n, NULL, NULL);
    spin(0.6);
    pdbx_noise_end(&n, NULL, NULL, &out);
    assert_int_equal(pdbx_cpu_snapshot_read(&b), 0);
    pdbx_cpu_load all;
    assert_int_equal(pdbx_cpu_load_between(&a, &b, 0, sysconf(_SC_CLK_TCK), &all), 0);
    double own_cores = (pdbx_self_cpu_s() - own0) / all.wall_s;
    assert_true(out.valid);
    assert_true(own_cores > 0.25);
    assert_true(out.other_busy < all.busy_cores - own_cores + 0.15);
    assert_true(out.other_busy > all.busy_cores - own_cores - 0.15 || out.other_busy == 0);

    /* the device slot's samples: begin, two between cells (the second within the minimum
     * interval, skipped), end */
    pdbx_compute_ops ops;
    memset(&ops, 0, sizeof ops);
    ops.device_noise = scripted_device_noise;
    pdbx_compute *dev = (pdbx_compute *)&ops;   /* any non-NULL handle: the slot ignores it */
    answers = 0;
    pdbx_noise_begin(&n, &ops, dev);
    pdbx_sleep_ms(60);
    pdbx_noise_device_sample(&n, &ops, dev);
    pdbx_noise_device_sample(&n, &ops, dev);   /* too soon: skipped */
    pdbx_noise_end(&n, &ops, dev, &out);
    assert_int_equal(answers, 3);
    assert_true(out.gpu_valid);
    assert_float_equal(out.sm_clock_min_mhz, 1600, 0);
    assert_float_equal(out.sm_clock_max_mhz, 1800, 0);
    assert_float_equal(out.temp_max_c, 53, 0);
    assert_float_equal(out.throttle_reasons, 0x8, 0);

    /* a backend that cannot sample (cpu; cuda without NVML): no gpu figures */
    pdbx_compute_ops none;
    memset(&none, 0, sizeof none);
    pdbx_noise_begin(&n, &none, dev);
    pdbx_sleep_ms(50);    /* a few ticks of /proc/stat: an instant has no host figures */
    pdbx_noise_end(&n, &none, dev, &out);
    assert_true(out.valid);
    assert_false(out.gpu_valid);
    pdbx_noise_fini(&n);
    pdbx_noise_fini(&n);   /* twice is safe */
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_fold),
        cmocka_unit_test(test_host_figures),
        cmocka_unit_test(test_sampler_over_mpi),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    MPI_Finalize();
    return rc;
}
