/* test_store_concurrency.c: real processes. Two writers append 300 events each to their own
 * run of one store while a third process lists the store in a loop and a fourth tails one
 * run from its next_offset like the monitor does. Afterwards every event of both runs is
 * there, in order, no list call failed and no reader ever saw a damaged frame. */
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "test_store_util.h"

#define NEVENTS 300
#define DEADLINE_S 120

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int append(pdbx_run_writer *w, const char *text)
{
    char err[256];
    cJSON *ev = cJSON_Parse(text);
    if (!ev)
        return -1;
    int rc = pdbx_run_writer_append(w, ev, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "writer %d: %s\n", (int)getpid(), err);
    cJSON_Delete(ev);
    return rc;
}

/* Child: one sweep writing its own run. Exit status 0 on success. */
static int writer_main(const char *dir, const char *id)
{
    char err[256], host[256], ev[1024];
    pdbx_store *st;
    pdbx_run_writer *w;
    if (pdbx_store_open(dir, 0, &st, err, sizeof err) != 0 ||
        pdbx_run_writer_create(st, id, &w, err, sizeof err) != 0) {
        fprintf(stderr, "writer %s: %s\n", id, err);
        return 1;
    }
    gethostname(host, sizeof host);
    snprintf(ev, sizeof ev, "{\"type\":\"run_start\",\"id\":\"%s\",\"host\":\"%s\",\"pid\":%d,"
             "\"model\":{\"name\":\"M-%s\"},\"backend\":\"cpu\",\"points\":[{\"index\":0,\"tp\":1,\"pp\":1,\"dp\":1,\"mbs\":1}]}",
             id, host, (int)getpid(), id);
    if (append(w, ev) != 0)
        return 1;
    for (int i = 0; i < NEVENTS; i++) {
        snprintf(ev, sizeof ev, "{\"type\":\"op\",\"point\":0,\"op\":\"attn_q\",\"seq\":%d,\"writer\":\"%s\","
                 "\"stats\":{\"count\":%d,\"min\":%d,\"max\":%d,\"mean\":%d.5,\"median\":%d,\"std\":0.25}}",
                 i, id, i + 1, i, i + 1, i, i);
        if (append(w, ev) != 0)
            return 1;
        if (i % 4 == 0)
            usleep(200);                  /* spread the writes over the lister's loop */
    }
    if (append(w, "{\"type\":\"point_end\",\"point\":0,\"status\":\"ok\"}") != 0 ||
        append(w, "{\"type\":\"run_end\",\"status\":\"complete\"}") != 0)
        return 1;
    if (pdbx_run_writer_close(w, err, sizeof err) != 0)
        return 1;
    pdbx_store_close(st);
    return 0;
}

/* Child: lists until the stop file appears. 0 when every call succeeded and nothing was
 * ever seen corrupt; prints how many lists it made. */
static int lister_main(const char *dir, const char *stopfile)
{
    char err[256];
    pdbx_store *st;
    if (pdbx_store_open(dir, 0, &st, err, sizeof err) != 0)
        return 1;
    long calls = 0, seen_runs = 0;
    double t0 = now_s();
    for (;;) {
        int stop = access(stopfile, F_OK) == 0;
        pdbx_run_summary *s;
        size_t n;
        if (pdbx_store_list(st, &s, &n, err, sizeof err) != 0) {
            fprintf(stderr, "lister: list failed: %s\n", err);
            return 2;
        }
        calls++;
        for (size_t i = 0; i < n; i++) {
            if (s[i].status == PDBX_RUN_CORRUPT || s[i].status == PDBX_RUN_FAILED) {
                fprintf(stderr, "lister: %s listed %s: %s\n", s[i].id, pdbx_run_status_name(s[i].status),
                        s[i].message);
                free(s);
                return 3;
            }
        }
        seen_runs += (long)n;
        free(s);
        if (stop || now_s() - t0 > DEADLINE_S)
            break;
    }
    fprintf(stderr, "lister: %ld list calls, %ld run summaries\n", calls, seen_runs);
    pdbx_store_close(st);
    return calls > 1 ? 0 : 4;
}

typedef struct {
    int next_seq;
    int ended;
    int bad;
} tail_state;

static int tail_event(const cJSON *ev, void *ctx)
{
    tail_state *t = ctx;
    const char *type = cJSON_GetObjectItemCaseSensitive(ev, "type")->valuestring;
    if (strcmp(type, "op") == 0) {
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(ev, "seq");
        if (!cJSON_IsNumber(seq) || seq->valueint != t->next_seq) {
            fprintf(stderr, "tailer: seq %d, expected %d\n", cJSON_IsNumber(seq) ? seq->valueint : -1, t->next_seq);
            t->bad = 1;
            return 1;
        }
        t->next_seq++;
    } else if (strcmp(type, "run_end") == 0) {
        t->ended = 1;
    }
    return 0;
}

/* Child: tails a run from next_offset like the monitor until run_end. */
static int tailer_main(const char *path)
{
    tail_state t = {0};
    uint64_t off = 0;
    long scans = 0, torn = 0;
    double t0 = now_s();
    while (!t.ended && now_s() - t0 < DEADLINE_S) {
        char err[256];
        pdbx_scan_result res;
        if (access(path, F_OK) != 0)
            continue;
        if (pdbx_scan_file(path, off, tail_event, &t, &res, err, sizeof err) != 0) {
            fprintf(stderr, "tailer: %s\n", err);
            return 2;
        }
        scans++;
        torn += res.torn_tail;
        if (res.corrupt) {
            fprintf(stderr, "tailer: %s\n", res.corrupt_msg);
            return 3;
        }
        if (t.bad)
            return 4;
        off = res.next_offset;
    }
    fprintf(stderr, "tailer: %ld scans (%ld saw a frame in flight), %d ops in order\n", scans, torn, t.next_seq);
    return (t.ended && t.next_seq == NEVENTS) ? 0 : 5;
}

static pid_t spawn(int (*fn)(const char *, const char *), const char *a, const char *b)
{
    fflush(NULL);
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0)
        _exit(fn(a, b));
    return p;
}

static int tailer_adapter(const char *path, const char *unused)
{
    (void)unused;
    return tailer_main(path);
}

static int wait_status(pid_t p)
{
    int status;
    assert_int_equal(waitpid(p, &status, 0), p);
    if (!WIFEXITED(status))
        return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return WEXITSTATUS(status);
}

typedef struct {
    int seq[NEVENTS + 8];
    int nops, ended;
} collected_ops;

static int collect_ops(const cJSON *ev, void *ctx)
{
    collected_ops *c = ctx;
    const char *type = cJSON_GetObjectItemCaseSensitive(ev, "type")->valuestring;
    if (strcmp(type, "op") == 0 && c->nops < NEVENTS + 8)
        c->seq[c->nops++] = cJSON_GetObjectItemCaseSensitive(ev, "seq")->valueint;
    if (strcmp(type, "run_end") == 0)
        c->ended = 1;
    return 0;
}

static void test_two_writers_lister_tailer(void **state)
{
    const char *dir = *state;
    char err[256], stopfile[600], pathA[700], pathB[700];
    pdbx_store *st;
    assert_int_equal(pdbx_store_open(dir, 1, &st, err, sizeof err), 0);
    pdbx_store_run_path(st, "writerA", pathA, sizeof pathA);
    pdbx_store_run_path(st, "writerB", pathB, sizeof pathB);
    snprintf(stopfile, sizeof stopfile, "%s/stop", dir);

    pid_t lister = spawn(lister_main, dir, stopfile);
    pid_t tailer = spawn(tailer_adapter, pathA, NULL);
    pid_t wa = spawn(writer_main, dir, "writerA");
    pid_t wb = spawn(writer_main, dir, "writerB");
    int sa = wait_status(wa), sb = wait_status(wb);
    test_write_file(stopfile, "", 0);
    int sl = wait_status(lister), stl = wait_status(tailer);
    assert_int_equal(sa, 0);
    assert_int_equal(sb, 0);
    assert_int_equal(sl, 0);
    assert_int_equal(stl, 0);

    const char *paths[2] = {pathA, pathB};
    for (int r = 0; r < 2; r++) {
        collected_ops c = {0};
        pdbx_scan_result res;
        assert_int_equal(pdbx_scan_file(paths[r], 0, collect_ops, &c, &res, err, sizeof err), 0);
        assert_false(res.corrupt);
        assert_false(res.torn_tail);
        assert_int_equal(c.nops, NEVENTS);
        for (int i = 0; i < NEVENTS; i++)
            assert_int_equal(c.seq[i], i);
        assert_true(c.ended);
    }
    pdbx_run_summary *s;
    size_t n;
    assert_int_equal(pdbx_store_list(st, &s, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(s[i].status, PDBX_RUN_COMPLETE);
        assert_int_equal(s[i].points_done, 1);
    }
    free(s);
    pdbx_run run;
    assert_int_equal(pdbx_run_load(st, "writerB", &run, err, sizeof err), 0);
    assert_int_equal(run.status, PDBX_RUN_COMPLETE);
    assert_double_equal(run.points[0].op[PDBX_OP_ATTN_Q].stats.mean, NEVENTS - 1 + 0.5, 0);
    assert_string_equal(run.model.name, "M-writerB");
    pdbx_run_free(&run);
    pdbx_store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_two_writers_lister_tailer, test_setup_tmpdir, test_teardown_tmpdir),
    };
    return cmocka_run_group_tests_name("store_concurrency", tests, NULL, NULL);
}
