/* test_store_durable.c: durable whole-file writes publish complete files and leave the target
 * untouched when anything fails (write error, rename error, unusable directory). */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/util/fs.h"
#include "store/store.h"
#include "test_store_util.h"

#define setup_dir test_setup_tmpdir
#define teardown_dir test_teardown_tmpdir
#define slurp test_slurp

/* Number of entries in dir other than . and .. */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static void test_write_and_overwrite(void **state)
{
    const char *dir = *state;
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/out.json", dir);
    assert_int_equal(pdbx_durable_write(path, "first", 5, err, sizeof err), 0);
    size_t len;
    char *got = slurp(path, &len);
    assert_non_null(got);
    assert_int_equal(len, 5);
    assert_memory_equal(got, "first", 5);
    free(got);

    /* streamed in pieces, replacing the old file */
    pdbx_durable_file *f;
    assert_int_equal(pdbx_durable_open(path, &f, err, sizeof err), 0);
    assert_int_equal(pdbx_durable_put(f, "sec", 3, err, sizeof err), 0);
    assert_int_equal(pdbx_durable_put(f, "ond!", 4, err, sizeof err), 0);
    assert_int_equal(pdbx_durable_commit(f, err, sizeof err), 0);
    got = slurp(path, &len);
    assert_int_equal(len, 7);
    assert_memory_equal(got, "second!", 7);
    free(got);
    assert_int_equal(count_entries(dir), 1);   /* no temp file left behind */

    /* empty content is a valid file */
    assert_int_equal(pdbx_durable_write(path, "", 0, err, sizeof err), 0);
    got = slurp(path, &len);
    assert_int_equal(len, 0);
    free(got);
}

static void test_abort_leaves_target(void **state)
{
    const char *dir = *state;
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/keep.txt", dir);
    assert_int_equal(pdbx_durable_write(path, "old", 3, err, sizeof err), 0);
    pdbx_durable_file *f;
    assert_int_equal(pdbx_durable_open(path, &f, err, sizeof err), 0);
    assert_int_equal(pdbx_durable_put(f, "new content", 11, err, sizeof err), 0);
    pdbx_durable_abort(f);
    size_t len;
    char *got = slurp(path, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(got, "old", 3);
    free(got);
    assert_int_equal(count_entries(dir), 1);
}

/* A write error (file size limit: works even as root) fails the commit; the target keeps
 * its old content and the temp file is gone. */
static void test_write_error_leaves_target(void **state)
{
    const char *dir = *state;
    char path[512], err[256] = "";
    snprintf(path, sizeof path, "%s/target.bin", dir);
    assert_int_equal(pdbx_durable_write(path, "old", 3, err, sizeof err), 0);

    size_t big = 1 << 20;
    char *data = malloc(big);
    assert_non_null(data);
    memset(data, 'x', big);
    struct rlimit saved, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
    lim = saved;
    lim.rlim_cur = 8192;
    void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = pdbx_durable_write(path, data, big, err, sizeof err);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
    signal(SIGXFSZ, old);
    free(data);

    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "target.bin"));
    size_t len;
    char *got = slurp(path, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(got, "old", 3);
    free(got);
    assert_int_equal(count_entries(dir), 1);
}

/* The parent of the target is a regular file: nothing can be created; the error names it. */
static void test_parent_is_file(void **state)
{
    const char *dir = *state;
    char file[512], path[600], err[256] = "";
    snprintf(file, sizeof file, "%s/plain", dir);
    assert_int_equal(pdbx_durable_write(file, "data", 4, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/sub.json", file);
    assert_int_equal(pdbx_durable_write(path, "x", 1, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    size_t len;
    char *got = slurp(file, &len);
    assert_int_equal(len, 4);
    free(got);
    assert_int_equal(count_entries(dir), 1);
}

/* The rename fails (target is a non-empty directory): the directory is untouched and the temp
 * file is removed. */
static void test_rename_error_cleans_up(void **state)
{
    const char *dir = *state;
    char target[512], inner[600], err[256] = "";
    snprintf(target, sizeof target, "%s/target", dir);
    assert_int_equal(mkdir(target, 0755), 0);
    snprintf(inner, sizeof inner, "%s/inner", target);
    assert_int_equal(pdbx_durable_write(inner, "i", 1, err, sizeof err), 0);
    assert_int_equal(pdbx_durable_write(target, "x", 1, err, sizeof err), -1);
    assert_non_null(strstr(err, target));
    struct stat sb;
    assert_int_equal(stat(inner, &sb), 0);
    assert_int_equal(count_entries(dir), 1);
}

/* The published file gets the caller's umask, like any file it creates. */
static void test_mode_follows_umask(void **state)
{
    const char *dir = *state;
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/mode", dir);
    mode_t old = umask(022);
    assert_int_equal(pdbx_durable_write(path, "x", 1, err, sizeof err), 0);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0644);
    umask(077);
    assert_int_equal(pdbx_durable_write(path, "y", 1, err, sizeof err), 0);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    umask(old);
}

static void test_fsync_dir(void **state)
{
    char err[256] = "";
    assert_int_equal(pdbx_fsync_dir((const char *)*state, err, sizeof err), 0);
    assert_int_equal(pdbx_fsync_dir("/nonexistent/pdbx", err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/pdbx"));
}

/* Creating a store makes each missing directory and syncs its parent (absolute nested path,
 * relative path: parent "."); an existing store opens without creating anything. */
static void test_store_create_syncs_new_dirs(void **state)
{
    const char *dir = *state;
    char path[512], runs[600], err[256] = "", cwd[4096];
    struct stat sb;
    pdbx_store *st = NULL;
    snprintf(path, sizeof path, "%s/a/b/store", dir);
    assert_int_equal(pdbx_store_open(path, 1, &st, err, sizeof err), 0);
    pdbx_store_close(st);
    snprintf(runs, sizeof runs, "%s/runs", path);
    assert_int_equal(stat(runs, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(pdbx_store_open(path, 1, &st, err, sizeof err), 0);
    pdbx_store_close(st);

    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    int rc = pdbx_store_open("rel", 1, &st, err, sizeof err);
    int isdir = stat("rel/runs", &sb) == 0 && S_ISDIR(sb.st_mode);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, 0);
    assert_true(isdir);
    pdbx_store_close(st);

    /* a file where a directory must go: one error naming it */
    snprintf(path, sizeof path, "%s/file", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(path, sizeof path, "%s/file/store", dir);
    assert_int_equal(pdbx_store_open(path, 1, &st, err, sizeof err), -1);
    assert_null(st);
    assert_non_null(strstr(err, "file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_and_overwrite, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_abort_leaves_target, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_write_error_leaves_target, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_parent_is_file, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_rename_error_cleans_up, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_mode_follows_umask, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_fsync_dir, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_store_create_syncs_new_dirs, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests_name("store_durable", tests, NULL, NULL);
}
