/* test_store_frames.c: run files through the real writer and scanner: every event type round
 * trips byte-for-byte as JSON; a torn tail at every byte cut of the last frame is ignored
 * (never corrupt); every flipped bit of a middle frame is detected and named by file and
 * offset; a writer reopening a torn run cuts the tail; tailing from next_offset. */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "test_store_util.h"

#define MAXEV 64

typedef struct {
    char dir[512];
    char path[600];
    size_t n;
    uint64_t off[MAXEV + 1];    /* off[i]: start of frame i; off[n]: file size */
    cJSON *sent[MAXEV];         /* the events as written (with "t") */
} fixture;

static uint64_t file_size(const char *path)
{
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    return (uint64_t)sb.st_size;
}

/* Writes every test event (repeated to n events) into run "r1" of a store in dir. */
static void write_run(fixture *fx, const char *dir, size_t n)
{
    char err[256];
    pdbx_store *st;
    snprintf(fx->dir, sizeof fx->dir, "%s", dir);
    assert_int_equal(pdbx_store_open(dir, 1, &st, err, sizeof err), 0);
    pdbx_run_writer *w;
    assert_int_equal(pdbx_run_writer_create(st, "r1", &w, err, sizeof err), 0);
    assert_int_equal(pdbx_store_run_path(st, "r1", fx->path, sizeof fx->path), 0);
    size_t ntexts;
    const char *const *texts = test_event_texts(&ntexts);
    fx->n = n;
    for (size_t i = 0; i < n; i++) {
        fx->off[i] = file_size(fx->path);
        cJSON *ev = cJSON_Parse(texts[i % ntexts]);
        assert_non_null(ev);
        if (pdbx_run_writer_append(w, ev, err, sizeof err) != 0)
            fail_msg("append %zu: %s", i, err);
        fx->sent[i] = ev;
    }
    fx->off[n] = file_size(fx->path);
    assert_int_equal(pdbx_run_writer_close(w, err, sizeof err), 0);
    pdbx_store_close(st);
}

static void fixture_free(fixture *fx)
{
    for (size_t i = 0; i < fx->n; i++)
        cJSON_Delete(fx->sent[i]);
}

typedef struct {
    cJSON *got[MAXEV * 2];
    size_t n;
} collected;

static int collect(const cJSON *ev, void *ctx)
{
    collected *c = ctx;
    assert_true(c->n < MAXEV * 2);
    c->got[c->n++] = cJSON_Duplicate(ev, 1);
    return 0;
}

static void collected_free(collected *c)
{
    for (size_t i = 0; i < c->n; i++)
        cJSON_Delete(c->got[i]);
    c->n = 0;
}

static void test_round_trip_every_event(void **state)
{
    fixture fx;
    size_t ntexts;
    test_event_texts(&ntexts);
    write_run(&fx, *state, ntexts);
    for (size_t i = 0; i < fx.n; i++)
        assert_true(fx.off[i + 1] > fx.off[i]);          /* one frame per event */

    collected c = {0};
    pdbx_scan_result res;
    char err[256];
    assert_int_equal(pdbx_scan_file(fx.path, 0, collect, &c, &res, err, sizeof err), 0);
    assert_int_equal(res.events, fx.n);
    assert_int_equal(c.n, fx.n);
    assert_false(res.torn_tail);
    assert_false(res.corrupt);
    assert_int_equal(res.next_offset, fx.off[fx.n]);
    for (size_t i = 0; i < fx.n; i++)
        assert_true(cJSON_Compare(c.got[i], fx.sent[i], 1));
    collected_free(&c);

    /* each frame alone is one event: scanning from any frame offset yields the rest */
    for (size_t i = 0; i < fx.n; i++) {
        assert_int_equal(pdbx_scan_file(fx.path, fx.off[i], collect, &c, &res, err, sizeof err), 0);
        assert_int_equal(c.n, fx.n - i);
        assert_true(cJSON_Compare(c.got[0], fx.sent[i], 1));
        collected_free(&c);
    }

    /* "t" is added when absent, kept when present */
    pdbx_store *st;
    pdbx_run_writer *w;
    assert_int_equal(pdbx_store_open(*state, 0, &st, err, sizeof err), 0);
    assert_int_equal(pdbx_run_writer_create(st, "r2", &w, err, sizeof err), 0);
    cJSON *ev = cJSON_Parse("{\"type\":\"warning\",\"message\":\"no t\"}");
    assert_int_equal(pdbx_run_writer_append(w, ev, err, sizeof err), 0);
    cJSON_Delete(ev);
    /* not an event: refused, nothing written */
    ev = cJSON_Parse("{\"message\":\"no type\"}");
    assert_int_equal(pdbx_run_writer_append(w, ev, err, sizeof err), -1);
    assert_non_null(strstr(err, "type"));
    cJSON_Delete(ev);
    assert_int_equal(pdbx_run_writer_close(w, err, sizeof err), 0);
    char p2[600];
    pdbx_store_run_path(st, "r2", p2, sizeof p2);
    assert_int_equal(pdbx_scan_file(p2, 0, collect, &c, &res, err, sizeof err), 0);
    assert_int_equal(c.n, 1);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(c.got[0], "t");
    assert_true(cJSON_IsNumber(t));
    assert_true(t->valuedouble > 1.7e9);
    collected_free(&c);
    pdbx_store_close(st);

    /* the folded run has every event applied */
    pdbx_run run;
    assert_int_equal(pdbx_run_load_file(fx.path, &run, err, sizeof err), 0);
    assert_int_equal(run.status, PDBX_RUN_COMPLETE);
    assert_int_equal(run.npoints, 3);
    assert_int_equal(run.points[0].status, PDBX_POINT_OK);
    assert_double_equal(run.points[0].op[PDBX_OP_ATTN_Q].rank[1].mean, 1.25, 0);
    assert_double_equal(run.points[0].op[PDBX_OP_MLP_DOWN].stats.mean, 2.75, 0);
    assert_true(run.points[0].pp_sendrecv.valid);
    assert_int_equal(run.points[1].status, PDBX_POINT_OOM);
    assert_int_equal(run.points[2].status, PDBX_POINT_PREDICTED_OOM);
    assert_int_equal(run.ntrace, 2);
    assert_int_equal(run.ncoll, 1);
    assert_int_equal(run.nwarnings, 1);
    assert_int_equal(run.pid, 1235);          /* from the launch event */
    assert_string_equal(run.model.name, "TinyLlama-1.1B");
    assert_string_equal(run.device_name, "AMD EPYC 7B13");
    assert_false(run.torn_tail);
    pdbx_run_free(&run);
    fixture_free(&fx);
}

/* Cutting the file anywhere inside the last frame: the events before it, torn_tail, never
 * corrupt; at the frame boundary itself: a clean file. */
static void test_torn_tail_every_cut(void **state)
{
    fixture fx;
    size_t ntexts;
    test_event_texts(&ntexts);
    write_run(&fx, *state, ntexts);
    char err[256];
    uint64_t last = fx.off[fx.n - 1], end = fx.off[fx.n];
    /* make the last frame a big one (run_start is the largest event) */
    size_t len;
    char *orig = test_slurp(fx.path, &len);
    assert_non_null(orig);
    assert_int_equal(len, end);
    char copy[700];
    snprintf(copy, sizeof copy, "%s/cut.pdbx", fx.dir);
    test_write_file(copy, orig, len);
    for (uint64_t cut = end - 1; cut + 1 > last; cut--) {     /* longest to shortest */
        assert_int_equal(truncate(copy, (off_t)cut), 0);
        collected c = {0};
        pdbx_scan_result res;
        assert_int_equal(pdbx_scan_file(copy, 0, collect, &c, &res, err, sizeof err), 0);
        if (res.corrupt)
            fail_msg("cut at %llu (frame %llu..%llu): corrupt: %s", (unsigned long long)cut,
                     (unsigned long long)last, (unsigned long long)end, res.corrupt_msg);
        assert_int_equal(res.events, fx.n - 1);
        assert_int_equal(res.torn_tail, cut > last);
        assert_int_equal(res.next_offset, last);
        collected_free(&c);
        pdbx_run run;
        assert_int_equal(pdbx_run_load_file(copy, &run, err, sizeof err), 0);
        assert_int_equal(run.torn_tail, cut > last);
        assert_int_not_equal(run.status, PDBX_RUN_CORRUPT);
        assert_false(run.have_end);                      /* run_end was the torn frame */
        pdbx_run_free(&run);
    }
    /* a torn run_start frame at the very start of a file: empty, torn, not corrupt */
    for (uint64_t cut = fx.off[1] - 1; cut > 0; cut--) {
        assert_int_equal(truncate(copy, (off_t)cut), 0);
        pdbx_scan_result res;
        assert_int_equal(pdbx_scan_file(copy, 0, NULL, NULL, &res, err, sizeof err), 0);
        assert_false(res.corrupt);
        assert_true(res.torn_tail);
        assert_int_equal(res.events, 0);
    }
    free(orig);
    fixture_free(&fx);
}

/* A crashed writer left a torn frame: reopening the run cuts it, so new frames follow whole
 * ones and the file reads clean. */
static void test_writer_reopen_cuts_torn_tail(void **state)
{
    fixture fx;
    write_run(&fx, *state, 6);
    char err[256];
    uint64_t cut = fx.off[5] + (fx.off[6] - fx.off[5]) / 2;
    assert_int_equal(truncate(fx.path, (off_t)cut), 0);
    pdbx_store *st;
    assert_int_equal(pdbx_store_open(*state, 0, &st, err, sizeof err), 0);
    pdbx_run_writer *w;
    assert_int_equal(pdbx_run_writer_open(st, "r1", &w, err, sizeof err), 0);
    assert_string_equal(pdbx_run_writer_id(w), "r1");
    assert_int_equal(file_size(fx.path), fx.off[5]);
    cJSON *ev = cJSON_Parse("{\"type\":\"run_end\",\"status\":\"failed\",\"reason\":\"resumed\"}");
    assert_int_equal(pdbx_run_writer_append(w, ev, err, sizeof err), 0);
    cJSON_Delete(ev);
    assert_int_equal(pdbx_run_writer_close(w, err, sizeof err), 0);
    pdbx_run run;
    assert_int_equal(pdbx_run_load(st, "r1", &run, err, sizeof err), 0);
    assert_false(run.torn_tail);
    assert_int_equal(run.status, PDBX_RUN_FAILED);
    assert_string_equal(run.end_reason, "resumed");
    pdbx_run_free(&run);
    /* reopening a run that does not exist fails and names it */
    assert_int_equal(pdbx_run_writer_open(st, "nope", &w, err, sizeof err), -1);
    assert_non_null(strstr(err, "nope"));
    pdbx_store_close(st);
    fixture_free(&fx);
}

/* Every bit of one middle frame flipped in turn: the scan stops at that frame's offset and
 * names the file; the events before it are delivered. A flip that is not detected must leave
 * every event intact (the checksum covers the content). */
/* Flips every bit of every stride-th byte of frame k; checks detection as described above. */
static void flip_frame(fixture *fx, char *orig, size_t len, size_t k, uint64_t stride)
{
    char err[256], copy[700], expect[800];
    snprintf(copy, sizeof copy, "%s/flip.pdbx", fx->dir);
    snprintf(expect, sizeof expect, "%s: bad frame at byte %llu: ", copy, (unsigned long long)fx->off[k]);
    int detected = 0, benign = 0;
    test_write_file(copy, orig, len);
    int fd = open(copy, O_WRONLY);
    assert_true(fd >= 0);
    for (uint64_t b = fx->off[k]; b < fx->off[k + 1]; b += stride) {
        for (int bit = 0; bit < 8; bit++) {
            char flipped = (char)(orig[b] ^ (1 << bit));
            assert_int_equal(pwrite(fd, &flipped, 1, (off_t)b), 1);
            collected c = {0};
            pdbx_scan_result res;
            assert_int_equal(pdbx_scan_file(copy, 0, collect, &c, &res, err, sizeof err), 0);
            if (res.corrupt) {
                if (strncmp(res.corrupt_msg, expect, strlen(expect)) != 0)
                    fail_msg("frame %zu byte %llu bit %d: message \"%s\", expected prefix \"%s\"", k,
                             (unsigned long long)b, bit, res.corrupt_msg, expect);
                assert_int_equal(res.events, k);
                assert_int_equal(c.n, k);
                for (size_t i = 0; i < k; i++)
                    assert_true(cJSON_Compare(c.got[i], fx->sent[i], 1));
                detected++;
            } else {
                /* undetected: only acceptable when every event is intact */
                if (res.events != fx->n || res.torn_tail)
                    fail_msg("frame %zu byte %llu bit %d: silently lost events (%zu of %zu, torn %d)", k,
                             (unsigned long long)b, bit, res.events, fx->n, res.torn_tail);
                for (size_t i = 0; i < fx->n; i++)
                    assert_true(cJSON_Compare(c.got[i], fx->sent[i], 1));
                benign++;
            }
            collected_free(&c);
        }
        assert_int_equal(pwrite(fd, &orig[b], 1, (off_t)b), 1);
    }
    close(fd);
    /* Bits a decoder ignores (the frame header's unused bit, padding of an entropy table) leave
     * the events intact and so cannot be detected; they must stay rare. */
    print_message("frame %zu (%d bytes, every %d. byte): %d flips detected, %d left the data intact\n", k,
                  (int)(fx->off[k + 1] - fx->off[k]), (int)stride, detected, benign);
    assert_true(benign * 50 <= detected);
}

/* Every bit of one middle frame flipped in turn (and a sample of the first and a later
 * frame): the scan stops at that frame's offset and names the file; the events before it are
 * delivered. A flip that is not detected must leave every event intact (the checksum covers
 * the content). */
static void test_flipped_bits_middle_frame(void **state)
{
    fixture fx;
    size_t ntexts;
    test_event_texts(&ntexts);
    write_run(&fx, *state, ntexts);
    char err[256];
    size_t k = 2;                                        /* the op event with ranks */
    size_t len;
    char *orig = test_slurp(fx.path, &len);
    assert_non_null(orig);
    flip_frame(&fx, orig, len, k, 1);
    flip_frame(&fx, orig, len, 0, 5);                    /* run_start, the largest frame */
    flip_frame(&fx, orig, len, fx.n - 3, 3);
    char copy[700], expect[800];
    snprintf(copy, sizeof copy, "%s/flip.pdbx", fx.dir);
    snprintf(expect, sizeof expect, "%s: bad frame at byte %llu: ", copy, (unsigned long long)fx.off[k]);

    /* the loaded run is CORRUPT with the message, the events before the damage kept */
    orig[fx.off[k] + 10] ^= 0x10;
    test_write_file(copy, orig, len);
    pdbx_run run;
    assert_int_equal(pdbx_run_load_file(copy, &run, err, sizeof err), 0);
    assert_int_equal(run.status, PDBX_RUN_CORRUPT);
    assert_non_null(strstr(run.end_reason, expect));
    assert_int_equal(run.npoints, 3);                    /* run_start was applied */
    assert_int_equal(run.points[0].status, PDBX_POINT_RUNNING);
    pdbx_run_free(&run);

    /* garbage in the middle (not a frame at all) and a frame holding non-JSON */
    memcpy(orig + fx.off[k], "GARBAGE!", 8);
    test_write_file(copy, orig, len);
    pdbx_scan_result res;
    assert_int_equal(pdbx_scan_file(copy, 0, NULL, NULL, &res, err, sizeof err), 0);
    assert_true(res.corrupt);
    assert_non_null(strstr(res.corrupt_msg, expect));
    assert_int_equal(res.events, k);
    free(orig);
    fixture_free(&fx);
}

/* A frame that is valid zstd but not an event is damage too. */
static void test_frame_not_an_event(void **state)
{
    const char *dir = *state;
    char path[600], err[256];
    snprintf(path, sizeof path, "%s/x.pdbx", dir);
    const char *bodies[] = {"not json at all", "[1,2,3]", "{\"no_type\":1}", "{\"type\":5}",
                            "{\"type\":\"a\"} trailing"};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        /* one good event, then the bad frame, then a good one */
        char cmd[1024];
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && printf '%%s' '{\"type\":\"warning\",\"message\":\"a\"}' | zstd -q --check -c > x.pdbx && "
                 "printf '%%s' '%s' | zstd -q --check -c >> x.pdbx && "
                 "printf '%%s' '{\"type\":\"warning\",\"message\":\"b\"}' | zstd -q --check -c >> x.pdbx",
                 dir, bodies[i]);
        if (system(cmd) != 0)
            skip();                                  /* no zstd CLI */
        size_t first = 0;
        {
            pdbx_scan_result r1;
            assert_int_equal(pdbx_scan_file(path, 0, NULL, NULL, &r1, err, sizeof err), 0);
            assert_true(r1.corrupt);
            assert_int_equal(r1.events, 1);
            first = (size_t)r1.next_offset;
            char expect[700];
            snprintf(expect, sizeof expect, "%s: bad frame at byte %zu: ", path, first);
            if (strncmp(r1.corrupt_msg, expect, strlen(expect)) != 0)
                fail_msg("%s: got \"%s\"", bodies[i], r1.corrupt_msg);
        }
    }
    /* a file that cannot be opened is an error, not corruption */
    pdbx_scan_result res;
    snprintf(path, sizeof path, "%s/missing.pdbx", dir);
    assert_int_equal(pdbx_scan_file(path, 0, NULL, NULL, &res, err, sizeof err), -1);
    assert_non_null(strstr(err, "missing.pdbx"));
}

/* Tailing: scanning from next_offset picks up exactly the events appended since, and a
 * partial frame at the end is left for the next scan. */
static void test_tail_incremental(void **state)
{
    char err[256];
    pdbx_store *st;
    assert_int_equal(pdbx_store_open(*state, 1, &st, err, sizeof err), 0);
    pdbx_run_writer *w;
    assert_int_equal(pdbx_run_writer_create(st, NULL, &w, err, sizeof err), 0);
    char path[600];
    pdbx_store_run_path(st, pdbx_run_writer_id(w), path, sizeof path);
    uint64_t off = 0;
    size_t total = 0;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i <= round; i++) {
            char txt[96];
            snprintf(txt, sizeof txt, "{\"type\":\"progress\",\"done\":%zu}", total + (size_t)i);
            cJSON *ev = cJSON_Parse(txt);
            assert_int_equal(pdbx_run_writer_append(w, ev, err, sizeof err), 0);
            cJSON_Delete(ev);
        }
        collected c = {0};
        pdbx_scan_result res;
        assert_int_equal(pdbx_scan_file(path, off, collect, &c, &res, err, sizeof err), 0);
        assert_int_equal(c.n, (size_t)round + 1);
        for (size_t i = 0; i < c.n; i++)
            assert_int_equal(cJSON_GetObjectItemCaseSensitive(c.got[i], "done")->valueint, (int)(total + i));
        total += c.n;
        off = res.next_offset;
        collected_free(&c);
    }
    /* a half-written frame appears at the end: nothing delivered, offset unchanged */
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    static const unsigned char partial[] = {0x28, 0xB5, 0x2F, 0xFD, 0x24, 0x10};
    assert_int_equal(write(fd, partial, sizeof partial), (ssize_t)sizeof partial);
    close(fd);
    pdbx_scan_result res;
    assert_int_equal(pdbx_scan_file(path, off, NULL, NULL, &res, err, sizeof err), 0);
    assert_int_equal(res.events, 0);
    assert_true(res.torn_tail);
    assert_int_equal(res.next_offset, off);
    assert_int_equal(pdbx_run_writer_close(w, err, sizeof err), 0);
    pdbx_store_close(st);
}

/* Skippable frames (zstd's metadata frames) are not events and not damage. */
static void test_skippable_frames_skipped(void **state)
{
    fixture fx;
    write_run(&fx, *state, 3);
    size_t len;
    char *orig = test_slurp(fx.path, &len);
    static const unsigned char skippable[] = {0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0, 'p', 'd', 'b', 'x'};
    FILE *f = fopen(fx.path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(orig, 1, (size_t)fx.off[1], f), (size_t)fx.off[1]);
    assert_int_equal(fwrite(skippable, 1, sizeof skippable, f), sizeof skippable);
    assert_int_equal(fwrite(orig + fx.off[1], 1, len - (size_t)fx.off[1], f), len - (size_t)fx.off[1]);
    assert_int_equal(fclose(f), 0);
    free(orig);
    collected c = {0};
    pdbx_scan_result res;
    char err[256];
    assert_int_equal(pdbx_scan_file(fx.path, 0, collect, &c, &res, err, sizeof err), 0);
    assert_false(res.corrupt);
    assert_int_equal(c.n, 3);
    for (size_t i = 0; i < 3; i++)
        assert_true(cJSON_Compare(c.got[i], fx.sent[i], 1));
    assert_int_equal(res.next_offset, len + sizeof skippable);
    collected_free(&c);
    fixture_free(&fx);
}

/* The file reads by hand: `zstdcat run.pdbx` prints one JSON event per line. */
static void test_zstdcat_reads_json_lines(void **state)
{
    fixture fx;
    size_t ntexts;
    test_event_texts(&ntexts);
    write_run(&fx, *state, ntexts);
    if (system("zstdcat --version >/dev/null 2>&1") != 0)
        skip();
    char cmd[800];
    snprintf(cmd, sizeof cmd, "zstdcat -q '%s'", fx.path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char *line = NULL;
    size_t cap = 0, n = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, p)) > 0) {
        assert_true(n < fx.n);
        assert_int_equal(line[len - 1], '\n');
        cJSON *ev = cJSON_ParseWithLength(line, (size_t)len);
        assert_non_null(ev);
        assert_true(cJSON_Compare(ev, fx.sent[n], 1));
        cJSON_Delete(ev);
        n++;
    }
    free(line);
    assert_int_equal(pclose(p), 0);
    assert_int_equal(n, fx.n);
    fixture_free(&fx);
}

/* An append that fails halfway (file size limit: a short write) is cut back, so the file
 * never holds a partial frame that a later append would bury; the next append works. */
static void test_failed_append_is_cut_back(void **state)
{
    char err[256];
    pdbx_store *st;
    assert_int_equal(pdbx_store_open(*state, 1, &st, err, sizeof err), 0);
    pdbx_run_writer *w;
    assert_int_equal(pdbx_run_writer_create(st, "lim", &w, err, sizeof err), 0);
    char path[600];
    pdbx_store_run_path(st, "lim", path, sizeof path);
    cJSON *small = cJSON_Parse("{\"type\":\"warning\",\"message\":\"before\"}");
    assert_int_equal(pdbx_run_writer_append(w, small, err, sizeof err), 0);
    uint64_t before = file_size(path);
    /* an incompressible event of ~4 KB */
    cJSON *big = cJSON_CreateObject();
    cJSON_AddStringToObject(big, "type", "warning");
    char text[4096];
    uint32_t x = 12345;
    for (size_t i = 0; i + 1 < sizeof text; i++) {
        x = x * 1103515245u + 12345u;
        text[i] = (char)('a' + (x >> 16) % 26);
    }
    text[sizeof text - 1] = '\0';
    cJSON_AddStringToObject(big, "message", text);

    struct rlimit saved, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
    lim = saved;
    lim.rlim_cur = before + 100;
    void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = pdbx_run_writer_append(w, big, err, sizeof err);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
    signal(SIGXFSZ, old);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, path));
    assert_int_equal(file_size(path), before);          /* the partial frame was cut */

    assert_int_equal(pdbx_run_writer_append(w, big, err, sizeof err), 0);
    assert_int_equal(pdbx_run_writer_append(w, small, err, sizeof err), 0);
    assert_int_equal(pdbx_run_writer_close(w, err, sizeof err), 0);
    pdbx_scan_result res;
    assert_int_equal(pdbx_scan_file(path, 0, NULL, NULL, &res, err, sizeof err), 0);
    assert_false(res.corrupt);
    assert_false(res.torn_tail);
    assert_int_equal(res.events, 3);
    cJSON_Delete(small);
    cJSON_Delete(big);
    pdbx_store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip_every_event, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_torn_tail_every_cut, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_writer_reopen_cuts_torn_tail, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_flipped_bits_middle_frame, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_frame_not_an_event, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_tail_incremental, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_skippable_frames_skipped, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_zstdcat_reads_json_lines, test_setup_tmpdir, test_teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_failed_append_is_cut_back, test_setup_tmpdir, test_teardown_tmpdir),
    };
    return cmocka_run_group_tests_name("store_frames", tests, NULL, NULL);
}
