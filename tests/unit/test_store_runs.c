/* test_store_runs.c: the store API on real directories: open and default dir, ids and prefix
 * resolution, load with the liveness rule, list with the index.json cache (valid, stale,
 * missing, garbage; runs deleted or changed behind its back; a corrupt run among good ones),
 * delete, record and import. */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "store/util/proc.h"
#include "test_store_util.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static pdbx_store *open_store(const char *dir)
{
    char err[256];
    pdbx_store *st;
    if (pdbx_store_open(dir, 1, &st, err, sizeof err) != 0)
        fail_msg("%s", err);
    return st;
}

static void append_text(pdbx_run_writer *w, const char *text)
{
    char err[256];
    cJSON *ev = cJSON_Parse(text);
    assert_non_null(ev);
    if (pdbx_run_writer_append(w, ev, err, sizeof err) != 0)
        fail_msg("%s", err);
    cJSON_Delete(ev);
}

/* A run with id, launcher host/pid, created at t, points (tp, mbs) for tp in tps and mbs in
 * 1..4; `done` point_ends; end = run_end status or NULL. */
static void make_run(pdbx_store *st, const char *id, const char *host, long pid, double t,
                     const char *model, const int *tps, int ntp, int done, const char *end)
{
    char err[256];
    pdbx_run_writer *w;
    if (pdbx_run_writer_create(st, id, &w, err, sizeof err) != 0)
        fail_msg("%s", err);
    char pts[2048] = "";
    int n = 0, idx = 0;
    for (int i = 0; i < ntp; i++)
        for (int mbs = 1; mbs <= 4; mbs *= 2)
            n += snprintf(pts + n, sizeof pts - (size_t)n, "%s{\"index\":%d,\"tp\":%d,\"pp\":1,\"dp\":1,\"mbs\":%d}",
                          idx ? "," : "", idx, tps[i], mbs), idx++;
    char ev[4096];
    snprintf(ev, sizeof ev,
             "{\"type\":\"run_start\",\"t\":%.6f,\"id\":\"%s\",\"host\":\"%s\",\"pid\":%ld,"
             "\"model\":{\"name\":\"%s\"},\"backend\":\"cpu\",\"gpu\":\"cpu\",\"points\":[%s]}",
             t, id, host, pid, model, pts);
    append_text(w, ev);
    for (int i = 0; i < done && i < idx; i++) {
        snprintf(ev, sizeof ev, "{\"type\":\"point_end\",\"t\":%.6f,\"point\":%d,\"status\":\"ok\"}", t + 1 + i, i);
        append_text(w, ev);
    }
    if (end) {
        snprintf(ev, sizeof ev, "{\"type\":\"run_end\",\"t\":%.6f,\"status\":\"%s\",\"reason\":\"r-%s\"}", t + 50, end, end);
        append_text(w, ev);
    }
    assert_int_equal(pdbx_run_writer_close(w, err, sizeof err), 0);
}

static char *my_host(void)
{
    static char h[256];
    assert_int_equal(gethostname(h, sizeof h), 0);
    return h;
}

static long dead_pid(void)
{
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0)
        _exit(0);
    int status;
    assert_int_equal(waitpid(p, &status, 0), p);
    return (long)p;
}

static const pdbx_run_summary *find_sum(const pdbx_run_summary *s, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i].id, id) == 0)
            return &s[i];
    return NULL;
}

/* ---- open, default dir, ids -------------------------------------------------------- */

static void test_open_and_default_dir(void **state)
{
    const char *dir = *state;
    char err[256], buf[900], sub[800];
    pdbx_store *st;
    snprintf(sub, sizeof sub, "%s/a/b/store", dir);
    assert_int_equal(pdbx_store_open(sub, 0, &st, err, sizeof err), -1);
    assert_non_null(strstr(err, sub));
    assert_int_equal(pdbx_store_open(sub, 1, &st, err, sizeof err), 0);
    assert_string_equal(pdbx_store_dir(st), sub);
    pdbx_store_close(st);
    assert_int_equal(pdbx_store_open(sub, 0, &st, err, sizeof err), 0);   /* now it is a store */
    char path[900];
    assert_int_equal(pdbx_store_run_path(st, "abc", path, sizeof path), 0);
    snprintf(buf, sizeof buf, "%.800s/runs/abc.pdbx", sub);
    assert_string_equal(path, buf);
    assert_int_equal(pdbx_store_run_path(st, "abc", path, 8), -1);       /* too small */
    pdbx_store_close(st);

    /* a path whose parent is a file cannot become a store */
    char file[600];
    snprintf(file, sizeof file, "%s/file", dir);
    test_write_file(file, "x", 1);
    snprintf(sub, sizeof sub, "%s/store", file);
    assert_int_equal(pdbx_store_open(sub, 1, &st, err, sizeof err), -1);
    assert_non_null(strstr(err, file));

    char *saved[3];
    const char *names[3] = {"PDBX_STORE", "XDG_DATA_HOME", "HOME"};
    for (int i = 0; i < 3; i++)
        saved[i] = getenv(names[i]) ? strdup(getenv(names[i])) : NULL;
    setenv("PDBX_STORE", "/s1", 1);
    setenv("XDG_DATA_HOME", "/x", 1);
    setenv("HOME", "/h", 1);
    assert_int_equal(pdbx_store_default_dir(buf, sizeof buf, err, sizeof err), 0);
    assert_string_equal(buf, "/s1");
    unsetenv("PDBX_STORE");
    assert_int_equal(pdbx_store_default_dir(buf, sizeof buf, err, sizeof err), 0);
    assert_string_equal(buf, "/x/pdbx");
    setenv("XDG_DATA_HOME", "", 1);
    assert_int_equal(pdbx_store_default_dir(buf, sizeof buf, err, sizeof err), 0);
    assert_string_equal(buf, "/h/.local/share/pdbx");
    unsetenv("XDG_DATA_HOME");
    unsetenv("HOME");
    assert_int_equal(pdbx_store_default_dir(buf, sizeof buf, err, sizeof err), -1);
    assert_non_null(strstr(err, "PDBX_STORE"));
    for (int i = 0; i < 3; i++) {
        if (saved[i])
            setenv(names[i], saved[i], 1);
        else
            unsetenv(names[i]);
        free(saved[i]);
    }
}

static void test_new_ids(void **state)
{
    pdbx_store *st = open_store(*state);
    char a[PDBX_RUN_ID_MAX], b[PDBX_RUN_ID_MAX];
    pdbx_store_new_id(a);
    pdbx_store_new_id(b);
    /* YYYY-MM-DD__HH-MM-SS_<hash8> */
    assert_int_equal(strlen(a), 29);
    assert_true(a[4] == '-' && a[7] == '-' && a[10] == '_' && a[11] == '_' && a[14] == '-' && a[17] == '-' && a[20] == '_');
    for (int i = 21; i < 29; i++)
        assert_non_null(strchr("0123456789abcdef", a[i]));
    assert_string_not_equal(a, b);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char year[8];
    strftime(year, sizeof year, "%Y-", &tm);
    assert_memory_equal(a, year, 5);

    /* writer with a fresh id; a taken or invalid id is refused */
    char err[256];
    pdbx_run_writer *w;
    assert_int_equal(pdbx_run_writer_create(st, NULL, &w, err, sizeof err), 0);
    char id[PDBX_RUN_ID_MAX];
    snprintf(id, sizeof id, "%s", pdbx_run_writer_id(w));
    assert_int_equal(strlen(id), 29);
    assert_int_equal(pdbx_run_writer_close(w, err, sizeof err), 0);
    assert_int_equal(pdbx_run_writer_create(st, id, &w, err, sizeof err), -1);
    assert_non_null(strstr(err, id));
    assert_int_equal(pdbx_run_writer_create(st, "../escape", &w, err, sizeof err), -1);
    assert_non_null(strstr(err, "../escape"));
    assert_int_equal(pdbx_run_writer_create(st, ".hidden", &w, err, sizeof err), -1);
    pdbx_store_close(st);
}

static void test_resolve(void **state)
{
    pdbx_store *st = open_store(*state);
    int tp1[] = {1};
    const char *ids[] = {"2026-01-01__00-00-00_aaaa0001", "2026-01-01__00-00-00_aaaa0002",
                         "2026-01-02__10-00-00_bbbb0001", "run", "run-2"};
    for (size_t i = 0; i < 5; i++)
        make_run(st, ids[i], "h", 1, 1000.0 + (double)i, "m", tp1, 1, 0, "complete");
    char out[PDBX_RUN_ID_MAX], err[512];
    assert_int_equal(pdbx_store_resolve(st, "2026-01-02", out, err, sizeof err), 0);
    assert_string_equal(out, ids[2]);
    assert_int_equal(pdbx_store_resolve(st, ids[1], out, err, sizeof err), 0);
    assert_string_equal(out, ids[1]);
    assert_int_equal(pdbx_store_resolve(st, "2026-01-01__00-00-00_aaaa0001", out, err, sizeof err), 0);
    /* a whole id wins over a longer id it prefixes */
    assert_int_equal(pdbx_store_resolve(st, "run", out, err, sizeof err), 0);
    assert_string_equal(out, "run");
    assert_int_equal(pdbx_store_resolve(st, "run-", out, err, sizeof err), 0);
    assert_string_equal(out, "run-2");
    /* ambiguous: names the candidates */
    assert_int_equal(pdbx_store_resolve(st, "2026-01-01", out, err, sizeof err), -1);
    assert_non_null(strstr(err, "ambiguous"));
    assert_non_null(strstr(err, ids[0]));
    assert_non_null(strstr(err, ids[1]));
    assert_null(strstr(err, ids[2]));
    /* unknown */
    assert_int_equal(pdbx_store_resolve(st, "2027", out, err, sizeof err), -1);
    assert_non_null(strstr(err, "2027"));
    assert_int_equal(pdbx_store_resolve(st, "", out, err, sizeof err), -1);
    /* load accepts a prefix too */
    pdbx_run run;
    assert_int_equal(pdbx_run_load(st, "2026-01-02", &run, err, sizeof err), 0);
    assert_string_equal(run.id, ids[2]);
    assert_int_equal(run.status, PDBX_RUN_COMPLETE);
    pdbx_run_free(&run);
    assert_int_equal(pdbx_run_load(st, "2026-01-01", &run, err, sizeof err), -1);
    assert_non_null(strstr(err, "ambiguous"));
    pdbx_run_free(&run);
    pdbx_store_close(st);
}

/* ---- liveness ---------------------------------------------------------------------- */

/* A run started by an sbatch job has no supervisor where it is looked at: from another host it
 * reads as running while its events come, then failed naming how it was launched (the job). */
static void test_liveness_sbatch(void **state)
{
    pdbx_store *st = open_store(*state);
    double now = now_s();
    const char *ids[] = { "sbatch-fresh", "sbatch-stale" };
    double ts[] = { now, now - 600 };
    char err[256], ev[1024];
    for (int i = 0; i < 2; i++) {
        pdbx_run_writer *w;
        if (pdbx_run_writer_create(st, ids[i], &w, err, sizeof err) != 0)
            fail_msg("%s", err);
        snprintf(ev, sizeof ev, "{\"type\":\"run_start\",\"t\":%.6f,\"id\":\"%s\",\"host\":"
                 "\"compute-7.example\",\"pid\":4242,\"launcher\":\"srun (pmix) in sbatch job 41\","
                 "\"command\":\"srun --mpi=pmix pdbx-engine\",\"model\":{\"name\":\"m\"},"
                 "\"backend\":\"cpu\",\"points\":[{\"index\":0,\"tp\":1,\"pp\":1,\"dp\":1,"
                 "\"mbs\":1}]}", ts[i], ids[i]);
        append_text(w, ev);
        assert_int_equal(pdbx_run_writer_close(w, err, sizeof err), 0);
    }
    pdbx_run run;
    assert_int_equal(pdbx_run_load(st, "sbatch-fresh", &run, err, sizeof err), 0);
    assert_int_equal(run.status, PDBX_RUN_RUNNING);
    assert_string_equal(run.launcher, "srun (pmix) in sbatch job 41");
    assert_string_equal(run.command, "srun --mpi=pmix pdbx-engine");
    pdbx_run_free(&run);
    assert_int_equal(pdbx_run_load(st, "sbatch-stale", &run, err, sizeof err), 0);
    assert_int_equal(run.status, PDBX_RUN_FAILED);
    if (!strstr(run.end_reason, "on compute-7.example; launched srun (pmix) in sbatch job 41"))
        fail_msg("reason: %s", run.end_reason);
    pdbx_run_free(&run);
    for (int pass = 0; pass < 2; pass++) {       /* scanned, then from the index */
        pdbx_run_summary *s;
        size_t n;
        assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
        const pdbx_run_summary *x = find_sum(s, n, "sbatch-stale");
        assert_non_null(x);
        assert_int_equal(x->status, PDBX_RUN_FAILED);
        assert_non_null(strstr(x->message, "sbatch job 41"));
        assert_string_equal(x->launcher, "srun (pmix) in sbatch job 41");
        x = find_sum(s, n, "sbatch-fresh");
        assert_int_equal(x->status, PDBX_RUN_RUNNING);
        free(s);
    }
    pdbx_store_close(st);
}

static void test_liveness(void **state)
{
    pdbx_store *st = open_store(*state);
    int tp[] = {1, 2};
    double now = now_s();
    make_run(st, "dead", my_host(), dead_pid(), now, "m", tp, 2, 2, NULL);
    make_run(st, "alive", my_host(), (long)getpid(), now, "m", tp, 2, 1, NULL);
    make_run(st, "remote-fresh", "some-other-host.example", 4242, now, "m", tp, 2, 0, NULL);
    make_run(st, "remote-stale", "some-other-host.example", 4242, now - 600, "m", tp, 2, 0, NULL);
    make_run(st, "ended", my_host(), dead_pid(), now, "m", tp, 2, 6, "complete");
    /* the rule is the pid's existence alone: old event times with a live pid still run */
    make_run(st, "old-alive", my_host(), (long)getpid(), now - 30 * 86400.0, "m", tp, 2, 0, NULL);
    make_run(st, "cancelled", my_host(), dead_pid(), now, "m", tp, 2, 3, "cancelled");
    char err[256];
    struct { const char *id; pdbx_run_status st; const char *msg; } want[] = {
        {"dead", PDBX_RUN_FAILED, "no run end"},
        {"alive", PDBX_RUN_RUNNING, ""},
        {"remote-fresh", PDBX_RUN_RUNNING, ""},
        {"remote-stale", PDBX_RUN_FAILED, "no run end"},
        {"ended", PDBX_RUN_COMPLETE, ""},
        {"cancelled", PDBX_RUN_CANCELLED, "r-cancelled"},
        {"old-alive", PDBX_RUN_RUNNING, ""},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        pdbx_run run;
        assert_int_equal(pdbx_run_load(st, want[i].id, &run, err, sizeof err), 0);
        if (run.status != want[i].st)
            fail_msg("%s: status %s, expected %s", want[i].id, pdbx_run_status_name(run.status),
                     pdbx_run_status_name(want[i].st));
        if (want[i].st == PDBX_RUN_FAILED)
            assert_non_null(strstr(run.end_reason, want[i].msg));
        pdbx_run_free(&run);
    }
    /* the listing agrees, both when scanning and when served from the index */
    for (int pass = 0; pass < 2; pass++) {
        pdbx_run_summary *s;
        size_t n;
        assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
        assert_int_equal(n, 7);
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
            const pdbx_run_summary *x = find_sum(s, n, want[i].id);
            assert_non_null(x);
            if (x->status != want[i].st)
                fail_msg("pass %d: %s: listed %s", pass, want[i].id, pdbx_run_status_name(x->status));
            assert_non_null(strstr(x->message, want[i].msg));
        }
        const pdbx_run_summary *a = find_sum(s, n, "alive");
        assert_int_equal(a->points_total, 6);
        assert_int_equal(a->points_done, 1);
        assert_int_equal(a->ntp, 2);
        assert_int_equal(a->tp[0], 1);
        assert_int_equal(a->tp[1], 2);
        assert_int_equal(a->mbs_min, 1);
        assert_int_equal(a->mbs_max, 4);
        free(s);
    }
    /* refresh: a live run whose launcher dies becomes failed */
    pdbx_run run;
    assert_int_equal(pdbx_run_load(st, "alive", &run, err, sizeof err), 0);
    assert_int_equal(run.status, PDBX_RUN_RUNNING);
    run.pid = dead_pid();
    pdbx_run_refresh_liveness(&run);
    assert_int_equal(run.status, PDBX_RUN_FAILED);
    assert_non_null(strstr(run.end_reason, "no run end"));
    pdbx_run_free(&run);
    pdbx_store_close(st);
}

/* ---- listing and the index --------------------------------------------------------- */

static void test_list_summaries(void **state)
{
    pdbx_store *st = open_store(*state);
    char err[256];
    pdbx_run_summary *s;
    size_t n;
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);   /* empty store */
    assert_int_equal(n, 0);
    free(s);
    int tp1[] = {4, 1, 2}, tp2[] = {8};
    make_run(st, "older", "h", 1, 1000, "Llama-3.1-8B", tp1, 3, 9, "complete");
    make_run(st, "newer", "h", 1, 2000, "Llama-3.3-70B-Instruct", tp2, 1, 2, "failed");
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(s[0].id, "newer");                               /* newest first */
    assert_string_equal(s[1].id, "older");
    assert_string_equal(s[1].model, "Llama-3.1-8B");
    assert_string_equal(s[1].backend, "cpu");
    assert_string_equal(s[1].gpu, "cpu");
    assert_int_equal(s[1].ntp, 3);
    assert_int_equal(s[1].tp[0], 1);
    assert_int_equal(s[1].tp[2], 4);
    assert_int_equal(s[1].points_total, 9);
    assert_int_equal(s[1].points_done, 9);
    assert_int_equal(s[1].status, PDBX_RUN_COMPLETE);
    assert_double_equal(s[1].created, 1000, 0);
    assert_int_equal(s[0].status, PDBX_RUN_FAILED);
    assert_string_equal(s[0].message, "r-failed");
    char path[700];
    pdbx_store_run_path(st, "older", path, sizeof path);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(s[1].size, (uint64_t)sb.st_size);
    free(s);
    pdbx_store_close(st);
}

static char *index_path(const char *dir)
{
    static char p[600];
    snprintf(p, sizeof p, "%s/index.json", dir);
    return p;
}

/* The index serves unchanged runs: proven by planting a different model name in it. */
static void test_index_is_used_and_invalidated(void **state)
{
    const char *dir = *state;
    pdbx_store *st = open_store(dir);
    char err[256];
    int tp[] = {1};
    make_run(st, "r1", "h", 1, 1000, "RealModel", tp, 1, 3, "complete");
    pdbx_run_summary *s;
    size_t n;
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    free(s);
    size_t len;
    char *idx = test_slurp(index_path(dir), &len);
    assert_non_null(idx);
    char *m = strstr(idx, "RealModel");
    assert_non_null(m);
    memcpy(m, "FakeModel", 9);
    test_write_file(index_path(dir), idx, len);
    free(idx);
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(s[0].model, "FakeModel");                  /* served from the cache */
    free(s);

    /* changed behind the index's back: appended to (size and mtime change) */
    pdbx_run_writer *w;
    assert_int_equal(pdbx_run_writer_open(st, "r1", &w, err, sizeof err), 0);
    append_text(w, "{\"type\":\"warning\",\"message\":\"late\"}");
    assert_int_equal(pdbx_run_writer_close(w, err, sizeof err), 0);
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    assert_string_equal(s[0].model, "RealModel");
    free(s);

    /* replaced by a different file of the same size: a new inode invalidates too */
    idx = test_slurp(index_path(dir), &len);
    m = strstr(idx, "RealModel");
    memcpy(m, "FakeModel", 9);
    test_write_file(index_path(dir), idx, len);
    free(idx);
    char path[700], tmp[720];
    pdbx_store_run_path(st, "r1", path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.copy", path);
    char *run = test_slurp(path, &len);
    test_write_file(tmp, run, len);
    free(run);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    struct timeval tv[2] = {{sb.st_atim.tv_sec, 0}, {sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec / 1000}};
    assert_int_equal(utimes(tmp, tv), 0);
    assert_int_equal(rename(tmp, path), 0);
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    assert_string_equal(s[0].model, "RealModel");
    free(s);
    pdbx_store_close(st);
}

static void assert_same_summary(const pdbx_run_summary *a, const pdbx_run_summary *b)
{
    assert_string_equal(a->id, b->id);
    assert_double_equal(a->created, b->created, 0);
    assert_string_equal(a->model, b->model);
    assert_string_equal(a->backend, b->backend);
    assert_string_equal(a->gpu, b->gpu);
    assert_int_equal(a->ntp, b->ntp);
    for (int i = 0; i < a->ntp; i++)
        assert_int_equal(a->tp[i], b->tp[i]);
    assert_int_equal(a->mbs_min, b->mbs_min);
    assert_int_equal(a->mbs_max, b->mbs_max);
    assert_int_equal(a->status, b->status);
    assert_int_equal(a->points_done, b->points_done);
    assert_int_equal(a->points_total, b->points_total);
    assert_int_equal(a->size, b->size);
    assert_string_equal(a->message, b->message);
    assert_int_equal(a->noise_points, b->noise_points);
    assert_int_equal(a->busy_points, b->busy_points);
}

/* A growing run (no run_end) is folded incrementally from where the last list stopped; the
 * result equals a full rescan at every step, through torn tails and a relaunch. */
static void test_index_resumes_growing_run(void **state)
{
    const char *dir = *state;
    pdbx_store *st = open_store(dir);
    char err[256], ev[512], path[700];
    int tp[] = {1, 2, 4};
    double now = now_s();
    pdbx_run_writer *w;
    assert_int_equal(pdbx_run_writer_create(st, "grow", &w, err, sizeof err), 0);
    pdbx_store_run_path(st, "grow", path, sizeof path);
    snprintf(ev, sizeof ev, "{\"type\":\"run_start\",\"t\":%.3f,\"host\":\"%s\",\"pid\":%d,\"model\":{\"name\":\"GrowModel\"},"
             "\"backend\":\"cpu\",\"points\":[{\"index\":0,\"tp\":1,\"mbs\":1},{\"index\":1,\"tp\":1,\"mbs\":2},"
             "{\"index\":2,\"tp\":2,\"mbs\":1},{\"index\":3,\"tp\":2,\"mbs\":2}]}", now, my_host(), (int)getpid());
    append_text(w, ev);
    (void)tp;
    const char *steps[][3] = {
        {"{\"type\":\"point_start\",\"point\":0}", "{\"type\":\"op\",\"point\":0,\"op\":\"attn_q\",\"stats\":" TEST_STATS(1) "}", NULL},
        /* noise (busy) at point 0 and (quiet) at point 2: a resumed scan adds to the counts the
           index kept, it does not lose them nor count them twice */
        {"{\"type\":\"point_end\",\"point\":0,\"status\":\"ok\",\"noise\":{\"cores\":2,\"other_busy\":1.5,\"busy\":1}}",
         "{\"type\":\"progress\",\"done\":1,\"total\":4}", NULL},
        {"TORN", NULL, NULL},
        {"{\"type\":\"point_end\",\"point\":1,\"status\":\"oom\",\"message\":\"x\"}", "{\"type\":\"warning\",\"message\":\"w\"}", NULL},
        {"{\"type\":\"point_start\",\"point\":5,\"tp\":4,\"pp\":1,\"dp\":1,\"mbs\":8}", "{\"type\":\"point_end\",\"point\":5,\"status\":\"ok\"}", NULL},
        {"{\"type\":\"run_end\",\"status\":\"failed\",\"reason\":\"first launch\"}", NULL, NULL},
        {"LAUNCH", "{\"type\":\"point_end\",\"point\":2,\"status\":\"ok\",\"noise\":{\"cores\":2,\"busy\":0}}", NULL},
        {"{\"type\":\"point_end\",\"point\":3,\"status\":\"skipped\"}", "{\"type\":\"run_end\",\"status\":\"complete\"}", NULL},
    };
    int resumed_seen = 0;
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        for (int i = 0; i < 3 && steps[k][i]; i++) {
            if (strcmp(steps[k][i], "TORN") == 0) {
                /* a crash mid-append, then the sweep reopens the run */
                assert_int_equal(pdbx_run_writer_close(w, err, sizeof err), 0);
                FILE *f = fopen(path, "ab");
                static const unsigned char part[] = {0x28, 0xB5, 0x2F, 0xFD, 0x24, 0x40, 0x09};
                fwrite(part, 1, sizeof part, f);
                fclose(f);
                pdbx_run_summary *s;
                size_t n;
                assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
                free(s);
                assert_int_equal(pdbx_run_writer_open(st, "grow", &w, err, sizeof err), 0);
            } else if (strcmp(steps[k][i], "LAUNCH") == 0) {
                snprintf(ev, sizeof ev, "{\"type\":\"launch\",\"host\":\"%s\",\"pid\":%d,\"world_size\":4}",
                         my_host(), (int)getpid());
                append_text(w, ev);
            } else {
                append_text(w, steps[k][i]);
            }
        }
        pdbx_run_summary *inc, *full;
        size_t n1, n2;
        assert_int_equal(pdbx_store_list(st, &inc, &n1, err, sizeof err), 0);
        size_t len;
        char *idx = test_slurp(index_path(dir), &len);
        resumed_seen += strstr(idx, "resume_points") != NULL;
        free(idx);
        assert_int_equal(pdbx_store_rebuild_index(st, err, sizeof err), 0);
        assert_int_equal(pdbx_store_list(st, &full, &n2, err, sizeof err), 0);
        assert_int_equal(n1, 1);
        assert_int_equal(n2, 1);
        assert_same_summary(&inc[0], &full[0]);
        free(inc);
        free(full);
    }
    assert_true(resumed_seen >= 4);
    assert_int_equal(pdbx_run_writer_close(w, err, sizeof err), 0);
    pdbx_run_summary *s;
    size_t n;
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    assert_int_equal(s[0].status, PDBX_RUN_COMPLETE);
    assert_int_equal(s[0].points_total, 5);
    assert_int_equal(s[0].points_done, 5);
    assert_int_equal(s[0].ntp, 3);
    assert_int_equal(s[0].mbs_max, 8);
    assert_int_equal(s[0].noise_points, 2);
    assert_int_equal(s[0].busy_points, 1);
    free(s);
    size_t len;
    char *idx = test_slurp(index_path(dir), &len);
    assert_null(strstr(idx, "resume_points"));          /* ended: nothing to resume */
    free(idx);
    pdbx_store_close(st);
}

/* The resume state is really used: a model name planted in the index survives appends, and
 * is dropped when the file is replaced (new inode). */
static void test_index_resume_is_used(void **state)
{
    const char *dir = *state;
    pdbx_store *st = open_store(dir);
    char err[256], path[700], tmp[720];
    int tp[] = {1};
    make_run(st, "g", my_host(), (long)getpid(), now_s(), "RealModel", tp, 1, 1, NULL);
    pdbx_run_summary *s;
    size_t n;
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    free(s);
    size_t len;
    char *idx = test_slurp(index_path(dir), &len);
    char *m = strstr(idx, "RealModel");
    assert_non_null(m);
    memcpy(m, "FakeModel", 9);
    test_write_file(index_path(dir), idx, len);
    free(idx);
    pdbx_run_writer *w;
    assert_int_equal(pdbx_run_writer_open(st, "g", &w, err, sizeof err), 0);
    append_text(w, "{\"type\":\"point_end\",\"point\":1,\"status\":\"ok\"}");
    assert_int_equal(pdbx_run_writer_close(w, err, sizeof err), 0);
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    assert_string_equal(s[0].model, "FakeModel");       /* folded onto the cached state */
    assert_int_equal(s[0].points_done, 2);
    free(s);
    /* replaced by a copy (new inode) that also grew: full rescan */
    pdbx_store_run_path(st, "g", path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.new", path);
    char *data = test_slurp(path, &len);
    test_write_file(tmp, data, len);
    free(data);
    assert_int_equal(rename(tmp, path), 0);
    assert_int_equal(pdbx_run_writer_open(st, "g", &w, err, sizeof err), 0);
    append_text(w, "{\"type\":\"point_end\",\"point\":2,\"status\":\"ok\"}");
    assert_int_equal(pdbx_run_writer_close(w, err, sizeof err), 0);
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    assert_string_equal(s[0].model, "RealModel");
    assert_int_equal(s[0].points_done, 3);
    free(s);
    pdbx_store_close(st);
}

static void test_index_garbage_rebuilt(void **state)
{
    const char *dir = *state;
    pdbx_store *st = open_store(dir);
    char err[256];
    int tp[] = {1, 2};
    make_run(st, "a", "h", 1, 1000, "ModelA", tp, 2, 6, "complete");
    make_run(st, "b", "h", 1, 2000, "ModelB", tp, 1, 1, "cancelled");
    const char *garbage[] = {
        "", "\x28\xb5\x2f\xfd garbage", "{", "[]", "{}", "{\"version\":99,\"runs\":[]}",
        "{\"version\":1,\"runs\":7}", "{\"version\":1,\"runs\":[{\"id\":\"a\"}]}",
        "{\"version\":1,\"runs\":[{\"id\":\"a\",\"size\":\"x\"},5,null]}",
        "{\"version\":1,\"runs\":[{\"id\":\"a\",\"size\":1,\"mtime_ns\":\"1\",\"ino\":\"1\",\"status\":\"zzz\"}]}",
    };
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        test_write_file(index_path(dir), garbage[i], strlen(garbage[i]));
        pdbx_run_summary *s;
        size_t n;
        if (pdbx_store_list(st, &s, &n, err, sizeof err) != 0)
            fail_msg("garbage %zu: %s", i, err);
        assert_int_equal(n, 2);
        assert_string_equal(s[0].model, "ModelB");
        assert_int_equal(s[0].status, PDBX_RUN_CANCELLED);
        assert_string_equal(s[1].model, "ModelA");
        assert_int_equal(s[1].points_done, 6);
        free(s);
        /* rewritten as a valid index */
        size_t len;
        char *idx = test_slurp(index_path(dir), &len);
        cJSON *j = cJSON_ParseWithLength(idx, len);
        assert_non_null(j);
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "runs")), 2);
        cJSON_Delete(j);
        free(idx);
    }
    /* a well-formed entry with absurd numbers is dropped, not converted */
    {
        pdbx_run_summary *s0;
        size_t n0, len;
        assert_int_equal(pdbx_store_list(st, &s0, &n0, err, sizeof err), 0);
        free(s0);
        char *idx = test_slurp(index_path(dir), &len);
        char *pd = strstr(idx, "\"points_done\":6");
        assert_non_null(pd);
        char *fixed = malloc(len + 16);
        size_t head = (size_t)(pd - idx) + strlen("\"points_done\":");
        memcpy(fixed, idx, head);
        memcpy(fixed + head, "1e300", 5);
        memcpy(fixed + head + 5, pd + strlen("\"points_done\":6"), len - head - 1);
        test_write_file(index_path(dir), fixed, len + 4);
        free(idx);
        free(fixed);
        assert_int_equal(pdbx_store_list(st, &s0, &n0, err, sizeof err), 0);
        assert_int_equal(n0, 2);
        assert_int_equal(s0[1].points_done, 6);
        free(s0);
    }
    /* missing index: rebuilt; explicit rebuild too */
    assert_int_equal(unlink(index_path(dir)), 0);
    pdbx_run_summary *s;
    size_t n;
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    free(s);
    assert_int_equal(access(index_path(dir), F_OK), 0);
    test_write_file(index_path(dir), "junk", 4);
    assert_int_equal(pdbx_store_rebuild_index(st, err, sizeof err), 0);
    size_t len;
    char *idx = test_slurp(index_path(dir), &len);
    assert_non_null(strstr(idx, "ModelA"));
    free(idx);
    /* an index that cannot be written (a directory in its place) does not stop listing */
    assert_int_equal(unlink(index_path(dir)), 0);
    assert_int_equal(mkdir(index_path(dir), 0755), 0);
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    free(s);
    assert_int_equal(pdbx_store_rebuild_index(st, err, sizeof err), -1);
    assert_non_null(strstr(err, "index.json"));
    pdbx_store_close(st);
}

static void test_deleted_behind_index_and_delete(void **state)
{
    const char *dir = *state;
    pdbx_store *st = open_store(dir);
    char err[256], path[700];
    int tp[] = {1};
    make_run(st, "keep", "h", 1, 1000, "M", tp, 1, 3, "complete");
    make_run(st, "gone", "h", 1, 2000, "M", tp, 1, 3, "complete");
    make_run(st, "del", "h", 1, 3000, "M", tp, 1, 3, "complete");
    pdbx_run_summary *s;
    size_t n;
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    free(s);
    /* removed behind the index's back */
    pdbx_store_run_path(st, "gone", path, sizeof path);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_null(find_sum(s, n, "gone"));
    free(s);
    size_t len;
    char *idx = test_slurp(index_path(dir), &len);
    assert_null(strstr(idx, "\"gone\""));
    free(idx);
    /* delete through the API also drops the index entry */
    assert_int_equal(pdbx_store_delete(st, "del", err, sizeof err), 0);
    idx = test_slurp(index_path(dir), &len);
    assert_null(strstr(idx, "\"del\""));
    assert_non_null(strstr(idx, "\"keep\""));
    free(idx);
    pdbx_store_run_path(st, "del", path, sizeof path);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(pdbx_store_delete(st, "del", err, sizeof err), -1);
    assert_non_null(strstr(err, "del"));
    assert_int_equal(pdbx_store_delete(st, "../keep", err, sizeof err), -1);
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(s[0].id, "keep");
    free(s);
    /* stray files in runs/ are not runs */
    char stray[700];
    snprintf(stray, sizeof stray, "%s/runs/notes.txt", dir);
    test_write_file(stray, "hi", 2);
    snprintf(stray, sizeof stray, "%s/runs/.import-abc", dir);
    test_write_file(stray, "hi", 2);
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    free(s);
    pdbx_store_close(st);
}

/* A damaged run lists as CORRUPT naming the file and offset; the others list normally. */
static void test_corrupt_run_among_good(void **state)
{
    const char *dir = *state;
    pdbx_store *st = open_store(dir);
    char err[256], path[700];
    int tp[] = {1, 2};
    make_run(st, "good1", "h", 1, 1000, "M", tp, 2, 6, "complete");
    make_run(st, "bad", "h", 1, 2000, "M", tp, 2, 4, "complete");
    make_run(st, "good2", "h", 1, 3000, "M", tp, 2, 6, "complete");
    pdbx_run_summary *s;
    size_t n;
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);   /* index holds "bad" as fine */
    free(s);
    pdbx_store_run_path(st, "bad", path, sizeof path);
    size_t len;
    char *data = test_slurp(path, &len);
    pdbx_scan_result res;
    assert_int_equal(pdbx_scan_file(path, 0, NULL, NULL, &res, err, sizeof err), 0);
    assert_int_equal(res.events, 6);
    /* flip a byte in the middle of the file */
    size_t at = len / 2;
    data[at] ^= 0x5a;
    test_write_file(path, data, len);
    free(data);
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    const pdbx_run_summary *b = find_sum(s, n, "bad");
    assert_int_equal(b->status, PDBX_RUN_CORRUPT);
    assert_non_null(strstr(b->message, "bad.pdbx: bad frame at byte "));
    assert_int_equal(find_sum(s, n, "good1")->status, PDBX_RUN_COMPLETE);
    assert_int_equal(find_sum(s, n, "good2")->status, PDBX_RUN_COMPLETE);
    free(s);
    pdbx_run run;
    assert_int_equal(pdbx_run_load(st, "bad", &run, err, sizeof err), 0);
    assert_int_equal(run.status, PDBX_RUN_CORRUPT);
    assert_non_null(strstr(run.end_reason, path));
    assert_int_equal(run.npoints, 6);                    /* run_start before the damage */
    pdbx_run_free(&run);
    /* appending to a damaged run is refused */
    pdbx_run_writer *w;
    assert_int_equal(pdbx_run_writer_open(st, "bad", &w, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad frame"));
    /* recording it is refused too */
    char rec[700];
    snprintf(rec, sizeof rec, "%s/bad.rec", dir);
    assert_int_equal(pdbx_store_record(st, "bad", rec, err, sizeof err), -1);
    assert_int_equal(access(rec, F_OK), -1);
    pdbx_store_close(st);
}

/* ---- record and import ------------------------------------------------------------- */

/* Writes rec2: the recording rec and one more event frame after it (made in store a). */
static void extend_recording(pdbx_store *a, const char *rec, const char *rec2)
{
    char err[256], path[700];
    size_t len, rlen;
    char *orig = test_slurp(rec, &len);
    test_write_file(rec2, orig, len);
    free(orig);
    pdbx_run_writer *wx;
    assert_int_equal(pdbx_run_writer_create(a, "extra", &wx, err, sizeof err), 0);
    append_text(wx, "{\"type\":\"warning\",\"message\":\"one more\"}");
    assert_int_equal(pdbx_run_writer_close(wx, err, sizeof err), 0);
    pdbx_store_run_path(a, "extra", path, sizeof path);
    char *extra = test_slurp(path, &rlen);
    assert_int_equal(pdbx_store_delete(a, "extra", err, sizeof err), 0);
    FILE *f = fopen(rec2, "ab");
    assert_non_null(f);
    fwrite(extra, 1, rlen, f);
    fclose(f);
    free(extra);
}

static void test_record_import(void **state)
{
    const char *dir = *state;
    char s1[600], s2[600], rec[600], err[256];
    snprintf(s1, sizeof s1, "%s/one", dir);
    snprintf(s2, sizeof s2, "%s/two", dir);
    snprintf(rec, sizeof rec, "%s/sweep.pdbx", dir);
    pdbx_store *a = open_store(s1), *b = open_store(s2);
    size_t ntexts;
    const char *const *texts = test_event_texts(&ntexts);
    const char *id = "2026-11-21__23-59-01_1a2b3c4d";
    pdbx_run_writer *w;
    assert_int_equal(pdbx_run_writer_create(a, id, &w, err, sizeof err), 0);
    for (size_t i = 0; i < ntexts; i++)
        append_text(w, texts[i]);
    assert_int_equal(pdbx_run_writer_close(w, err, sizeof err), 0);
    /* a torn tail in the source is not recorded */
    char path[700];
    pdbx_store_run_path(a, id, path, sizeof path);
    size_t len;
    char *orig = test_slurp(path, &len);
    FILE *f = fopen(path, "ab");
    fwrite(orig, 1, 20, f);                              /* the start of a frame */
    fclose(f);
    assert_int_equal(pdbx_store_record(a, "2026-11", rec, err, sizeof err), 0);
    size_t rlen;
    char *recorded = test_slurp(rec, &rlen);
    assert_int_equal(rlen, len);
    assert_memory_equal(recorded, orig, len);
    free(recorded);
    free(orig);

    char got[PDBX_RUN_ID_MAX];
    assert_int_equal(pdbx_store_import(b, rec, got, err, sizeof err), 0);
    assert_string_equal(got, id);                        /* keeps its id */
    /* issue 10: the same recording again is found, not copied a second time */
    char got2[PDBX_RUN_ID_MAX];
    int already = 0;
    assert_int_equal(pdbx_store_import_ex(b, rec, got2, &already, err, sizeof err), 0);
    assert_string_equal(got2, id);
    assert_int_equal(already, 1);
    pdbx_run_summary *s;
    size_t n;
    assert_int_equal(pdbx_store_list(b, &s, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    free(s);
    /* a different recording with the same run id (one more event): a new id */
    char rec2[600];
    snprintf(rec2, sizeof rec2, "%s/rec2.pdbx", dir);
    extend_recording(a, rec, rec2);
    assert_int_equal(pdbx_store_import_ex(b, rec2, got2, &already, err, sizeof err), 0);
    assert_int_equal(already, 0);
    assert_string_not_equal(got2, id);                   /* taken: a new id */
    pdbx_run r1, r2;
    assert_int_equal(pdbx_run_load(b, got, &r1, err, sizeof err), 0);
    assert_int_equal(pdbx_run_load(b, got2, &r2, err, sizeof err), 0);
    assert_string_equal(r1.id, id);
    assert_string_equal(r2.id, got2);
    assert_int_equal(r1.status, PDBX_RUN_COMPLETE);
    assert_int_equal(r2.status, PDBX_RUN_COMPLETE);
    assert_int_equal(r1.npoints, r2.npoints);
    assert_double_equal(r1.points[0].op[PDBX_OP_ATTN_Q].stats.mean, r2.points[0].op[PDBX_OP_ATTN_Q].stats.mean, 0);
    pdbx_run_free(&r1);
    pdbx_run_free(&r2);
    assert_int_equal(pdbx_store_list(b, &s, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    free(s);
    /* a recording loads straight from its path too */
    pdbx_run r3;
    assert_int_equal(pdbx_run_load(NULL, rec, &r3, err, sizeof err), 0);
    assert_int_equal(r3.status, PDBX_RUN_COMPLETE);
    pdbx_run_free(&r3);

    /* refused imports: no events, not starting with run_start, damaged, missing */
    char bad[600];
    snprintf(bad, sizeof bad, "%s/empty.pdbx", dir);
    test_write_file(bad, "", 0);
    assert_int_equal(pdbx_store_import(b, bad, got, err, sizeof err), -1);
    assert_non_null(strstr(err, "no events"));
    pdbx_store_run_path(b, got2, path, sizeof path);
    pdbx_run_writer *w2;
    assert_int_equal(pdbx_run_writer_create(b, "nostart", &w2, err, sizeof err), 0);
    append_text(w2, "{\"type\":\"warning\",\"message\":\"x\"}");
    assert_int_equal(pdbx_run_writer_close(w2, err, sizeof err), 0);
    pdbx_store_run_path(b, "nostart", path, sizeof path);
    assert_int_equal(pdbx_store_import(a, path, got, err, sizeof err), -1);
    assert_non_null(strstr(err, "run_start"));
    orig = test_slurp(rec, &len);
    orig[len - 10] ^= 0x01;
    snprintf(bad, sizeof bad, "%s/damaged.pdbx", dir);
    test_write_file(bad, orig, len);
    free(orig);
    /* the damage is in the last frame; add a good frame after it so it is not a torn tail */
    f = fopen(bad, "ab");
    char *again = test_slurp(rec, &rlen);
    fwrite(again, 1, rlen, f);
    fclose(f);
    free(again);
    assert_int_equal(pdbx_store_import(a, bad, got, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad frame"));
    snprintf(bad, sizeof bad, "%s/missing.pdbx", dir);
    assert_int_equal(pdbx_store_import(a, bad, got, err, sizeof err), -1);
    assert_non_null(strstr(err, "missing.pdbx"));
    /* no temp files left in runs/ */
    assert_int_equal(pdbx_store_list(a, &s, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    free(s);
    pdbx_store_close(a);
    pdbx_store_close(b);
}

/* err may be NULL on every failure path. */
static void test_null_err(void **state)
{
    const char *dir = *state;
    char sub[600], out[PDBX_RUN_ID_MAX];
    snprintf(sub, sizeof sub, "%s/nostore", dir);
    pdbx_store *st;
    assert_int_equal(pdbx_store_open(sub, 0, &st, NULL, 0), -1);
    st = open_store(dir);
    assert_int_equal(pdbx_store_resolve(st, "zzz", out, NULL, 0), -1);
    assert_int_equal(pdbx_store_delete(st, "zzz", NULL, 0), -1);
    assert_int_equal(pdbx_store_import(st, sub, out, NULL, 0), -1);
    assert_int_equal(pdbx_store_record(st, "zzz", sub, NULL, 0), -1);
    pdbx_run_writer *w;
    assert_int_equal(pdbx_run_writer_create(st, "a/b", &w, NULL, 0), -1);
    assert_int_equal(pdbx_run_writer_open(st, "zzz", &w, NULL, 0), -1);
    pdbx_run run;
    assert_int_equal(pdbx_run_load(st, "zzz", &run, NULL, 0), -1);
    pdbx_run_free(&run);
    assert_int_equal(pdbx_run_load_file(sub, &run, NULL, 0), -1);
    pdbx_run_free(&run);
    pdbx_scan_result res;
    assert_int_equal(pdbx_scan_file(sub, 0, NULL, NULL, &res, NULL, 0), -1);
    pdbx_store_close(st);
}

/* The launcher's identity: this process with its own start time and boot is itself; the same
 * pid with another start time (the kernel reused it) or from another boot is not; without a
 * recorded start time the pid alone decides (older runs). */
static void test_process_identity(void **state)
{
    (void)state;
    unsigned long long ticks = 0;
    char boot[64];
    assert_int_equal(pdbx_proc_start_ticks((long)getpid(), &ticks), 0);
    pdbx_boot_id(boot, sizeof boot);
    assert_int_equal(pdbx_process_is((long)getpid(), (double)ticks, boot), 1);
    assert_int_equal(pdbx_process_is((long)getpid(), (double)ticks + 1, boot), 0);
    assert_int_equal(pdbx_process_is((long)getpid(), (double)ticks,
                                     "00000000-0000-0000-0000-000000000000"), 0);
    assert_int_equal(pdbx_process_is((long)getpid(), 0, ""), 1);
    assert_int_equal(pdbx_process_is(2147483647L, (double)ticks, boot), 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, test_setup_tmpdir, test_teardown_tmpdir)
    const struct CMUnitTest tests[] = {
        T(test_open_and_default_dir), T(test_new_ids), T(test_resolve), T(test_liveness_sbatch), T(test_liveness),
        T(test_list_summaries), T(test_index_is_used_and_invalidated), T(test_index_garbage_rebuilt),
        T(test_index_resumes_growing_run), T(test_index_resume_is_used),
        T(test_deleted_behind_index_and_delete), T(test_corrupt_run_among_good), T(test_record_import),
        T(test_null_err), T(test_process_identity),
    };
    return cmocka_run_group_tests_name("store_runs", tests, NULL, NULL);
}
