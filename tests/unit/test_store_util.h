/* test_store_util.h: helpers shared by the store tests (temp directories, files, doubles).
 * Include after <cmocka.h>. Defines _XOPEN_SOURCE for nftw before any system header. */
#ifndef PDBX_TEST_STORE_UTIL_H
#define PDBX_TEST_STORE_UTIL_H

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* cmocka 1.1 has only a float comparison; measurements are doubles. */
#define assert_double_equal(a, b, eps)                                                           \
    do {                                                                                         \
        double a_ = (a), b_ = (b), e_ = (eps);                                                   \
        if (!(fabs(a_ - b_) <= e_))                                                              \
            fail_msg("%s = %.17g, expected %s = %.17g (tolerance %g)", #a, a_, #b, b_, e_);      \
    } while (0)

static inline int test_rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(p);
}

static inline void test_rm_rf(const char *dir)
{
    nftw(dir, test_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* cmocka setup/teardown: *state is a fresh temp directory (malloc'ed path). */
static inline int test_setup_tmpdir(void **state)
{
    char *d = strdup("/tmp/pdbx-store-test-XXXXXX");
    if (!d || !mkdtemp(d)) {
        free(d);
        return -1;
    }
    *state = d;
    return 0;
}

static inline int test_teardown_tmpdir(void **state)
{
    test_rm_rf((char *)*state);
    free(*state);
    return 0;
}

/* Whole file into a malloc'ed, NUL-terminated buffer (length in *len unless len is NULL);
 * NULL when it cannot be read. */
static inline char *test_slurp(const char *path, size_t *len)
{
    if (len)
        *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = (size_t)n;
    }
    return buf;
}

static inline void test_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* One event of every type of docs/events.md, in a plausible order: a 3-point run with every
 * measurement kind, ending complete. host/pid are filled by callers where liveness matters. */
#define TEST_STATS(m) "{\"count\":10,\"min\":" #m ",\"max\":" #m ",\"mean\":" #m ",\"median\":" #m ",\"std\":0}"
static inline const char *const *test_event_texts(size_t *n)
{
    static const char *const ev[] = {
        "{\"type\":\"run_start\",\"t\":1000.5,\"id\":\"2026-11-21__23-59-01_1a2b3c4d\",\"pdbx_version\":\"0.1.0\","
        "\"git_rev\":\"abc\",\"host\":\"elsewhere-host\",\"pid\":1234,\"spec\":{\"model\":\"tiny\",\"tp\":[1,2]},"
        "\"model\":{\"name\":\"TinyLlama-1.1B\",\"tag\":\"tinyllama\",\"hidden\":2048,\"intermediate\":5632,"
        "\"heads\":32,\"kv_heads\":4,\"head_dim\":64,\"layers\":22,\"vocab\":32000},"
        "\"layers_profiled\":2,\"seq_len\":128,\"dtype\":\"fp32\",\"backend\":\"cpu\",\"gpu\":\"cpu\",\"gpu_tag\":\"CPU\","
        "\"warmup\":1,\"steps\":3,\"world_size\":2,\"ranks_per_node\":2,"
        "\"env\":{\"hosts\":[\"node1\"],\"device\":\"AMD EPYC 7B13\",\"nccl\":null,\"cuda\":null},"
        "\"points\":[{\"index\":0,\"tp\":1,\"pp\":2,\"dp\":1,\"mbs\":1,\"seq_len\":128,\"predicted_mem_bytes\":5e8,\"predicted_oom\":false},"
        "{\"index\":1,\"tp\":1,\"pp\":2,\"dp\":1,\"mbs\":2,\"seq_len\":128,\"predicted_mem_bytes\":1e9,\"predicted_oom\":false},"
        "{\"index\":2,\"tp\":2,\"pp\":1,\"dp\":1,\"mbs\":4,\"seq_len\":128,\"predicted_mem_bytes\":6e10,\"predicted_oom\":true}]}",
        "{\"type\":\"point_start\",\"t\":1001,\"point\":0,\"tp\":1,\"pp\":2,\"dp\":1,\"mbs\":1}",
        "{\"type\":\"op\",\"t\":1002,\"point\":0,\"op\":\"attn_q\",\"stats\":" TEST_STATS(1.5) ",\"ranks\":[" TEST_STATS(1.5) "," TEST_STATS(1.25) "],"
        "\"flops\":1.2e9,\"bytes\":3.4e6}",
        "{\"type\":\"op\",\"t\":1002.1,\"point\":0,\"op\":\"mlp_down\",\"stats\":" TEST_STATS(2.75) ",\"flops\":2e9,\"bytes\":1e6}",
        "{\"type\":\"comm\",\"t\":1003,\"point\":0,\"kind\":\"pp_sendrecv\",\"bytes\":524288,\"group_size\":2,"
        "\"stats\":" TEST_STATS(0.25) ",\"algbw\":2.0,\"busbw\":2.0}",
        "{\"type\":\"trace\",\"t\":1003.2,\"point\":0,\"rank\":1,\"ops\":[[\"embed\",-1,0,12.5],[\"attn_q\",0,12.5,803.1]]}",
        "{\"type\":\"progress\",\"t\":1003.5,\"done\":0,\"total\":3,\"point\":0,\"op\":\"mlp_up\",\"elapsed_s\":3,\"eta_s\":9}",
        "{\"type\":\"warning\",\"t\":1003.6,\"message\":\"rank 1: BLAS threads capped at 1\"}",
        "{\"type\":\"point_end\",\"t\":1004,\"point\":0,\"status\":\"ok\"}",
        "{\"type\":\"point_start\",\"t\":1005,\"point\":1,\"tp\":1,\"pp\":2,\"dp\":1,\"mbs\":2}",
        "{\"type\":\"point_end\",\"t\":1006,\"point\":1,\"status\":\"oom\",\"message\":\"allocation of 1 GiB failed\"}",
        "{\"type\":\"point_end\",\"t\":1006.5,\"point\":2,\"status\":\"predicted_oom\",\"message\":\"needs 60 GB\"}",
        "{\"type\":\"launch\",\"t\":1006.8,\"world_size\":2,\"ranks_per_node\":2,\"host\":\"elsewhere-host\",\"pid\":1235,\"configs\":[[2,1,1]]}",
        "{\"type\":\"coll\",\"t\":1007,\"coll\":\"all_reduce\",\"bytes\":1048576,\"nranks\":2,\"ranks_per_node\":2,"
        "\"stats\":" TEST_STATS(0.5) ",\"algbw\":2.097152,\"busbw\":2.097152}",
        "{\"type\":\"run_end\",\"t\":1008,\"status\":\"complete\",\"reason\":\"\",\"elapsed_s\":7.5}",
    };
    *n = sizeof ev / sizeof ev[0];
    return ev;
}

#endif
