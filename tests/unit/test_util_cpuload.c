/* test_util_cpuload.c: store/util/cpuload.h: the /proc/stat parser on crafted texts, the load
 * figures between two crafted snapshots (busy, own, other, steal, the busy verdict), the
 * warning's sentence, and the real files read while this process and a child spin. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/util/clock.h"
#include "store/util/cpuload.h"

static const char *const STAT_2CPU =
    "cpu  774763 34769 402782 716624 3547 10 1355 2135 500 7\n"
    "cpu0 370588 17379 187823 388638 1086 5 333 1044 250 3\n"
    "cpu1 404175 17390 214958 327985 2461 5 1022 1090 250 4\n"
    "intr 10325803 0 0 0\n"
    "ctxt 38754725\n"
    "btime 1764000000\n";

static void test_parse(void **state)
{
    (void)state;
    pdbx_cpu_snapshot s;
    memset(&s, 0, sizeof s);
    assert_int_equal(pdbx_cpu_snapshot_parse(STAT_2CPU, &s), 0);
    assert_int_equal(s.cpus, 2);
    /* guest (500) and guest_nice (7) are inside user and nice already: not added again */
    assert_true(s.busy == 774763ULL + 34769 + 402782 + 10 + 1355 + 2135);
    assert_true(s.steal == 2135);
    assert_true(s.total == s.busy + 716624 + 3547);
    /* an old kernel's four fields: no iowait, irq, softirq, steal */
    assert_int_equal(pdbx_cpu_snapshot_parse("cpu 10 20 30 40\ncpu0 10 20 30 40\n", &s), 0);
    assert_true(s.busy == 60 && s.steal == 0 && s.total == 100);
    assert_int_equal(s.cpus, 1);
    /* a "cpu" line without per-CPU lines still counts one CPU */
    assert_int_equal(pdbx_cpu_snapshot_parse("cpu 1 2 3 4 5 6 7 8\n", &s), 0);
    assert_int_equal(s.cpus, 1);
    /* no aggregate line, too few fields, garbage */
    assert_int_equal(pdbx_cpu_snapshot_parse("cpu0 1 2 3 4\nintr 5\n", &s), -1);
    assert_int_equal(pdbx_cpu_snapshot_parse("cpu 1 2 3\n", &s), -1);
    assert_int_equal(pdbx_cpu_snapshot_parse("cpu x y z w\n", &s), -1);
    assert_int_equal(pdbx_cpu_snapshot_parse("", &s), -1);
    assert_int_equal(pdbx_cpu_snapshot_parse("cpu 99999999999999999999999 1 2 3\n", &s), -1);
}

/* A snapshot at time t of a 2-CPU machine with the given busy, steal and idle ticks. */
static pdbx_cpu_snapshot snap(double t, unsigned long long busy, unsigned long long steal,
                              unsigned long long idle)
{
    pdbx_cpu_snapshot s = { .t = t, .busy = busy, .steal = steal, .total = busy + idle, .cpus = 2 };
    return s;
}

static void test_load_between(void **state)
{
    (void)state;
    pdbx_cpu_load l;
    /* one second at 100 ticks/s: 150 busy ticks = 1.5 cores; ours 1.0 s: 0.5 core of others,
     * which is not above the threshold */
    pdbx_cpu_snapshot a = snap(10.0, 1000, 0, 5000), b = snap(11.0, 1150, 0, 5050);
    assert_int_equal(pdbx_cpu_load_between(&a, &b, 1.0, 100, &l), 0);
    assert_float_equal(l.wall_s, 1.0, 1e-9);
    assert_float_equal(l.busy_cores, 1.5, 1e-9);
    assert_float_equal(l.own_cores, 1.0, 1e-9);
    assert_float_equal(l.other_busy, 0.5, 1e-9);
    assert_float_equal(l.steal_pct, 0.0, 1e-9);
    assert_int_equal(pdbx_cpu_is_busy(l.other_busy, l.steal_pct), 0);
    /* ours 0.4 s: 1.1 cores of others: busy */
    assert_int_equal(pdbx_cpu_load_between(&a, &b, 0.4, 100, &l), 0);
    assert_float_equal(l.other_busy, 1.1, 1e-9);
    assert_int_equal(pdbx_cpu_is_busy(l.other_busy, l.steal_pct), 1);
    /* half a second, quiet but 12 of 100 ticks stolen: 12% steal, busy by steal alone */
    a = snap(0.0, 0, 0, 0);
    b = snap(0.5, 20, 12, 80);
    assert_int_equal(pdbx_cpu_load_between(&a, &b, 0.0, 100, &l), 0);
    assert_float_equal(l.busy_cores, 0.4, 1e-9);
    assert_float_equal(l.steal_pct, 12.0, 1e-9);
    assert_int_equal(pdbx_cpu_is_busy(0.0, l.steal_pct), 1);
    assert_int_equal(pdbx_cpu_is_busy(0.0, 5.0), 0);
    /* our CPU time above what /proc/stat counted (its ticks are sampled): no other load, not a
     * negative one; a tick too many is cut to the machine's cores */
    a = snap(0.0, 0, 0, 0);
    b = snap(0.1, 10, 0, 10);
    assert_int_equal(pdbx_cpu_load_between(&a, &b, 0.2, 100, &l), 0);
    assert_float_equal(l.other_busy, 0.0, 1e-9);
    b = snap(0.1, 25, 0, 0);
    assert_int_equal(pdbx_cpu_load_between(&a, &b, NAN, 100, &l), 0);
    assert_float_equal(l.busy_cores, 2.0, 1e-9);
    assert_float_equal(l.other_busy, 2.0, 1e-9);
    /* no interval, counters backwards (a reboot between), no tick rate: no figures */
    b = snap(0.0, 10, 0, 10);
    assert_int_equal(pdbx_cpu_load_between(&a, &b, 0, 100, &l), -1);
    a = snap(0.0, 100, 0, 100);
    b = snap(1.0, 50, 0, 300);
    assert_int_equal(pdbx_cpu_load_between(&a, &b, 0, 100, &l), -1);
    b = snap(1.0, 150, 0, 50);
    assert_int_equal(pdbx_cpu_load_between(&a, &b, 0, 100, &l), -1);   /* total unchanged */
    b = snap(1.0, 150, 0, 300);
    assert_int_equal(pdbx_cpu_load_between(&a, &b, 0, 0, &l), -1);
}

static void test_busy_line(void **state)
{
    (void)state;
    pdbx_cpu_load l = { .other_busy = 1.93, .steal_pct = 0.5 };
    char line[256];
    pdbx_cpu_busy_line(&l, 2, 2.31, line, sizeof line);
    assert_string_equal(line, "this machine is busy (1.9 of 2 cores used by other processes, load "
                              "2.3): measurements will be noisy; the run records it");
    l.steal_pct = 12.4;
    pdbx_cpu_busy_line(&l, 1, NAN, line, sizeof line);
    assert_string_equal(line, "this machine is busy (1.9 of 1 core used by other processes, 12% of "
                              "CPU time stolen by the hypervisor): measurements will be noisy; the "
                              "run records it");
    char tiny[8];
    pdbx_cpu_busy_line(&l, 2, 1.0, tiny, sizeof tiny);
    assert_int_equal(strlen(tiny), 7);
}

/* The real files: while this process spins for 0.4 s, getrusage and /proc/stat agree that we
 * used about a core, so none of it shows as another process's. */
static void test_real_own_time_subtracted(void **state)
{
    (void)state;
    pdbx_cpu_snapshot a, b;
    double own0 = pdbx_self_cpu_s();
    assert_true(isfinite(own0));
    assert_int_equal(pdbx_cpu_snapshot_read(&a), 0);
    assert_true(a.cpus >= 1);
    volatile unsigned long spin = 0;
    double t0 = pdbx_mono_s();
    while (pdbx_mono_s() - t0 < 0.4)
        spin++;
    assert_int_equal(pdbx_cpu_snapshot_read(&b), 0);
    pdbx_cpu_load l;
    assert_int_equal(pdbx_cpu_load_between(&a, &b, pdbx_self_cpu_s() - own0, sysconf(_SC_CLK_TCK), &l), 0);
    /* on a crowded machine the spin gets less than a core, never more than one */
    assert_true(l.own_cores > 0.2 && l.own_cores < 1.1);
    /* /proc/stat counted our spin: the machine's busy time holds ours (a tick of slack) */
    assert_true(l.busy_cores >= l.own_cores - 0.1);
    double load1;
    assert_int_equal(pdbx_loadavg_read(&load1), 0);
    assert_true(load1 >= 0);
    assert_true(pdbx_online_cores() >= 1);
}

/* A child spinning beside us is another process: pdbx_cpu_busy_check says busy, names the
 * cores and the load. */
static void test_real_busy_check_sees_a_hog(void **state)
{
    (void)state;
    pid_t hog = fork();
    assert_true(hog >= 0);
    if (hog == 0) {
        volatile unsigned long spin = 0;
        for (;;)
            spin++;
    }
    pdbx_sleep_ms(100);    /* let the hog be scheduled */
    char line[256];
    int busy = pdbx_cpu_busy_check(0.5, line, sizeof line);
    kill(hog, SIGKILL);
    waitpid(hog, NULL, 0);
    assert_int_equal(busy, 1);
    assert_non_null(strstr(line, "this machine is busy ("));
    assert_non_null(strstr(line, " used by other processes, load "));
    assert_non_null(strstr(line, "): measurements will be noisy; the run records it"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_load_between),
        cmocka_unit_test(test_busy_line),
        cmocka_unit_test(test_real_own_time_subtracted),
        cmocka_unit_test(test_real_busy_check_sees_a_hog),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
