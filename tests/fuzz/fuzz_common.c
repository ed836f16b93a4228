/* fuzz_common.c: the scratch directory, file writing and the run-file builder of the fuzz
 * targets (fuzz_common.h). */
#include "tests/fuzz/fuzz_common.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_frames.h"

#ifndef PDBX_SOURCE_DIR
#error "PDBX_SOURCE_DIR must name the source tree (tests/SConscript defines it)"
#endif

static char tmpdir[256];
static pdbx_frame_encoder *encoder;

static void remove_tmpdir(void)
{
    if (tmpdir[0]) {
        fuzz_clear_dir(tmpdir);
        rmdir(tmpdir);
    }
    pdbx_frame_encoder_free(encoder);
    encoder = NULL;
}

const char *fuzz_tmpdir(void)
{
    if (tmpdir[0])
        return tmpdir;
    struct stat sb;
    const char *base = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0
                           ? "/dev/shm"
                           : (getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    snprintf(tmpdir, sizeof tmpdir, "%s/pdbx-fuzz.XXXXXX", base);
    if (!mkdtemp(tmpdir)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(remove_tmpdir);
    return tmpdir;
}

void fuzz_setup(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    setenv("PDBX_CONFIGS", PDBX_SOURCE_DIR "/configs", 0);
    setenv("PDBX_THEMES", PDBX_SOURCE_DIR "/themes", 0);
    /* Help, plans and tables go to stdout; millions of them would drown the fuzzer's report. */
    if (!freopen("/dev/null", "w", stdout))
        abort();
    (void)fuzz_tmpdir();
}

void fuzz_write_file(const char *path, const void *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(path);
        abort();
    }
    const char *p = data;
    while (size > 0) {
        ssize_t w = write(fd, p, size);
        if (w <= 0) {
            perror(path);
            abort();
        }
        p += w;
        size -= (size_t)w;
    }
    close(fd);
}

void fuzz_clear_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[1024];
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            fuzz_clear_dir(path);
            rmdir(path);
        } else {
            unlink(path);
        }
    }
    closedir(d);
}

char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* A growing byte buffer for the file being built. */
typedef struct {
    char *p;
    size_t n, cap;
} buf_t;

static void buf_add(buf_t *b, const void *data, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np)
            abort();
        b->p = np;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, data, n);
    b->n += n;
}

void fuzz_write_run_file(const char *path, const uint8_t *data, size_t size)
{
    static const uint8_t zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
    if (size >= 4 && memcmp(data, zstd_magic, 4) == 0) {
        fuzz_write_file(path, data, size);
        return;
    }
    char err[256];
    if (!encoder && pdbx_frame_encoder_new(&encoder, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz: %s\n", err);
        abort();
    }
    buf_t b = { 0 };
    size_t i = 0;
    while (i < size) {
        const uint8_t *nl = memchr(data + i, '\n', size - i);
        size_t end = nl ? (size_t)(nl - data) : size;
        const char *line = (const char *)data + i;
        size_t len = end - i;
        if (len > 0 && line[0] == '!') {
            buf_add(&b, line + 1, len - 1);
        } else if (len > 0) {
            const void *frame;
            size_t flen;
            if (pdbx_frame_encode(encoder, line, len, &frame, &flen, err, sizeof err) == 0)
                buf_add(&b, frame, flen);
        }
        i = end + 1;
    }
    fuzz_write_file(path, b.p ? b.p : "", b.n);
    free(b.p);
}
