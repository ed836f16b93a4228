/* test_util.c: the ground library store/util: clock.h, text.h, err.h, proc.h and the time-zone
 * rule of fmt.h (tables and numbers are covered by test_cli_fmt.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/util/clock.h"
#include "store/util/err.h"
#include "store/util/fmt.h"
#include "store/util/proc.h"
#include "store/util/text.h"

/* ---- clock.h ----------------------------------------------------------------------------- */

static void test_mono_advances_with_sleep(void **state)
{
    (void)state;
    double t0 = pdbx_mono_s();
    pdbx_sleep_ms(30);
    double dt = pdbx_mono_s() - t0;
    assert_true(dt >= 0.029);
    assert_true(dt < 5.0);
    t0 = pdbx_mono_s();
    pdbx_sleep_ms(0);                 /* returns at once */
    pdbx_sleep_ms(-5);
    assert_true(pdbx_mono_s() - t0 < 0.5);
}

static void test_wall_is_unix_time(void **state)
{
    (void)state;
    double before = (double)time(NULL);
    double w = pdbx_wall_s();
    double after = (double)time(NULL);
    assert_true(w >= before - 1.0 && w <= after + 1.0);
}

static void test_mono_deadline(void **state)
{
    (void)state;
    struct timespec now, d;
    clock_gettime(CLOCK_MONOTONIC, &now);
    d = pdbx_mono_deadline(2.75);
    double gap = (double)(d.tv_sec - now.tv_sec) + (double)(d.tv_nsec - now.tv_nsec) * 1e-9;
    assert_true(gap >= 2.75 - 1e-6 && gap < 2.75 + 0.5);
    assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);   /* normalized */
    d = pdbx_mono_deadline(-3);                                /* negative: now */
    gap = (double)(d.tv_sec - now.tv_sec) + (double)(d.tv_nsec - now.tv_nsec) * 1e-9;
    assert_true(gap >= 0 && gap < 0.5);
    d = pdbx_mono_deadline(0.9999999);                         /* carries into seconds */
    assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
}

/* ---- text.h ------------------------------------------------------------------------------ */

static void test_strcopy(void **state)
{
    (void)state;
    char b[6];
    memset(b, 'x', sizeof b);
    pdbx_strcopy(b, sizeof b, "abc");
    assert_string_equal(b, "abc");
    pdbx_strcopy(b, sizeof b, "abcdefgh");          /* truncates, always terminates */
    assert_string_equal(b, "abcde");
    pdbx_strcopy(b, sizeof b, NULL);                /* NULL copies as "" */
    assert_string_equal(b, "");
    pdbx_strcopy(b, 1, "zzz");
    assert_string_equal(b, "");
    b[0] = 'q';
    pdbx_strcopy(b, 0, "zzz");                      /* no room: untouched */
    assert_int_equal(b[0], 'q');
    pdbx_strcopy(NULL, 4, "zzz");                   /* no crash */
}

static void test_edit_distance(void **state)
{
    (void)state;
    assert_int_equal(pdbx_edit_distance("", ""), 0);
    assert_int_equal(pdbx_edit_distance("abc", ""), 3);
    assert_int_equal(pdbx_edit_distance("", "abcd"), 4);
    assert_int_equal(pdbx_edit_distance("kitten", "sitting"), 3);
    assert_int_equal(pdbx_edit_distance("steps", "stpes"), 2);
    assert_int_equal(pdbx_edit_distance("seq_len", "seq_len"), 0);
    assert_int_equal(pdbx_edit_distance("flaw", "lawn"), 2);
    assert_int_equal(pdbx_edit_distance("abc", "abd"), pdbx_edit_distance("abd", "abc"));
    /* longer than 128 bytes: as far as the longer word is long */
    char longw[200];
    memset(longw, 'a', sizeof longw - 1);
    longw[sizeof longw - 1] = '\0';
    assert_int_equal(pdbx_edit_distance(longw, "a"), 199);
    assert_int_equal(pdbx_edit_distance("a", longw), 199);
}

static const char *const fields[] = {"seq_len", "steps", "warmup", "flash_attention", "flush_l2"};
#define NFIELDS (sizeof fields / sizeof fields[0])

static void test_suggest(void **state)
{
    (void)state;
    char b[256];
    pdbx_suggest("setps", fields, NFIELDS, b, sizeof b);          /* a few edits */
    assert_string_equal(b, " (did you mean 'steps'?)");
    pdbx_suggest("flash", fields, NFIELDS, b, sizeof b);          /* a prefix */
    assert_string_equal(b, " (did you mean 'flash_attention'?)");
    pdbx_suggest("flus", fields, NFIELDS, b, sizeof b);           /* prefix beats distance */
    assert_string_equal(b, " (did you mean 'flush_l2'?)");
    pdbx_suggest("fl", fields, NFIELDS, b, sizeof b);             /* too short for a prefix */
    assert_string_equal(b, " (allowed: seq_len, steps, warmup, flash_attention, flush_l2)");
    pdbx_suggest("zzzzzzzz", fields, NFIELDS, b, sizeof b);       /* far from all */
    assert_string_equal(b, " (allowed: seq_len, steps, warmup, flash_attention, flush_l2)");
    static const char *const tied[] = {"cat", "bat", "rat", "hat", "mat", "dog"};
    pdbx_suggest("xat", tied, 6, b, sizeof b);                    /* at most four, in order */
    assert_string_equal(b, " (did you mean 'cat', 'bat', 'rat' or 'hat'?)");
    pdbx_suggest("x", NULL, 0, b, sizeof b);
    assert_string_equal(b, " (allowed: )");
    char small[12];
    pdbx_suggest("zzzzzzzz", fields, NFIELDS, small, sizeof small); /* truncated, terminated */
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, " (allowed: ", 11);
}

/* ---- err.h ------------------------------------------------------------------------------- */

static void test_fail(void **state)
{
    (void)state;
    char err[64] = "old";
    assert_int_equal(pdbx_fail(err, sizeof err, "%s: %d is out of range", "steps", 0), -1);
    assert_string_equal(err, "steps: 0 is out of range");
    assert_int_equal(pdbx_fail(NULL, 0, "ignored %d", 1), -1);  /* caller wants no message */
    char small[8];
    assert_int_equal(pdbx_fail(small, sizeof small, "%s", "a long message"), -1);
    assert_string_equal(small, "a long ");
    pdbx_errf(err, sizeof err, "%s", "plain");
    assert_string_equal(err, "plain");
    pdbx_errf(err, 0, "%s", "untouched");
    assert_string_equal(err, "plain");
}

/* ---- proc.h ------------------------------------------------------------------------------ */

static void test_exe_dir(void **state)
{
    (void)state;
    char dir[PATH_MAX], exe[PATH_MAX];
    assert_int_equal(pdbx_exe_dir(dir, sizeof dir), 0);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    /* dir + "/" + the test's own name is the executable */
    assert_memory_equal(exe, dir, strlen(dir));
    assert_int_equal(exe[strlen(dir)], '/');
    assert_string_equal(exe + strlen(dir) + 1, "test_util");
    char tiny[4] = "xyz";
    assert_int_equal(pdbx_exe_dir(tiny, sizeof tiny), -1);     /* does not fit: "" */
    assert_string_equal(tiny, "");
}

static void test_hostname(void **state)
{
    (void)state;
    char h[256], want[256] = "";
    pdbx_hostname(h, sizeof h, "unknown");
    gethostname(want, sizeof want - 1);
    assert_string_equal(h, want[0] ? want : "unknown");
    char tiny[3];
    pdbx_hostname(tiny, sizeof tiny, "?");
    assert_true(strlen(tiny) < sizeof tiny);                    /* always terminated */
}

/* A process's start time is /proc/PID/stat field 22, read past a command name with spaces and
 * parentheses; it differs between a parent and a child started later, and a gone pid fails. */
static void test_proc_start_ticks(void **state)
{
    (void)state;
    unsigned long long mine = 0, again = 0;
    assert_int_equal(pdbx_proc_start_ticks((long)getpid(), &mine), 0);
    assert_int_equal(pdbx_proc_start_ticks((long)getpid(), &again), 0);
    assert_true(mine > 0 && mine == again);
    FILE *f = fopen("/proc/self/stat", "r");
    char line[1024];
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    /* field 22 counted by hand from the last ')' */
    const char *p = strrchr(line, ')') + 2;
    for (int field = 3; field < 22; field++)
        p = strchr(p, ' ') + 1;
    assert_int_equal(strtoull(p, NULL, 10), mine);
    unsigned long long gone = 0;
    assert_int_equal(pdbx_proc_start_ticks(0, &gone), -1);
    assert_int_equal(pdbx_proc_start_ticks(2147483647L, &gone), -1);
    char boot[64];
    pdbx_boot_id(boot, sizeof boot);
    assert_int_equal(strlen(boot), 36);            /* a UUID, no newline */
}

/* ---- fmt.h: the time-zone rule ------------------------------------------------------------ */

static void test_times_are_local(void **state)
{
    (void)state;
    char b[32];
    const char *old = getenv("TZ");
    char *saved = old ? strdup(old) : NULL;
    setenv("TZ", "UTC0", 1);
    tzset();
    assert_string_equal(pdbx_fmt_time(86400.0 + 3600.0 * 5, b, sizeof b), "1970-01-02 05:00");
    setenv("TZ", "PDBX-3", 1);        /* POSIX: three hours east of UTC */
    tzset();
    assert_string_equal(pdbx_fmt_time(86400.0 + 3600.0 * 5, b, sizeof b), "1970-01-02 08:00");
    assert_string_equal(pdbx_fmt_time(0, b, sizeof b), "N/A");
    assert_string_equal(pdbx_fmt_time(-1, b, sizeof b), "N/A");
    if (saved)
        setenv("TZ", saved, 1);
    else
        unsetenv("TZ");
    tzset();
    free(saved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proc_start_ticks),
        cmocka_unit_test(test_mono_advances_with_sleep),
        cmocka_unit_test(test_wall_is_unix_time),
        cmocka_unit_test(test_mono_deadline),
        cmocka_unit_test(test_strcopy),
        cmocka_unit_test(test_edit_distance),
        cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_fail),
        cmocka_unit_test(test_exe_dir),
        cmocka_unit_test(test_hostname),
        cmocka_unit_test(test_times_are_local),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
