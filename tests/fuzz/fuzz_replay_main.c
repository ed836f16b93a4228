/* fuzz_replay_main.c: a plain driver for a fuzz target, without libFuzzer. Linked with one
 * fuzz_<target>.c into <variant>/tests/test_fuzz_<target> (gcc, build/ and build-san/), it calls
 * LLVMFuzzerTestOneInput once per file, in name order, of each directory or file given, by
 * default the committed seed corpus tests/fuzz/corpus/<target>/. The suite runs it: a crash,
 * a sanitizer report or a failed check of the target fails the test; a leak fails it in
 * build-san/ (LeakSanitizer at exit). Also replays a crash file libFuzzer left:
 *   build-san/tests/test_fuzz_runfile build-fuzz/work/runfile/crash-...
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz_common.h"

#ifndef FUZZ_TARGET
#error "FUZZ_TARGET must name the target (tests/SConscript defines it)"
#endif

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf)
            abort();
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        cap *= 2;
        buf = realloc(buf, cap);
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: read error\n", path);
        free(buf);
        return -1;
    }
    /* An exact-size copy, so AddressSanitizer sees a read past the input's end. */
    uint8_t *input = malloc(n ? n : 1);
    if (!input)
        abort();
    memcpy(input, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(input, n);
    free(input);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order; returns the count run, -1 on an error. */
static int run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
            if (!names)
                abort();
        }
        names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (!names[n])
            abort();
        sprintf(names[n], "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        if (stat(names[i], &sb) == 0 && S_ISREG(sb.st_mode)) {
            if (run_file(names[i]) != 0)
                count = -1;
            else if (count >= 0)
                count++;
        }
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv)
{
    const char *def[] = { PDBX_SOURCE_DIR "/tests/fuzz/corpus/" FUZZ_TARGET };
    const char **paths = argc > 1 ? (const char **)argv + 1 : def;
    int npaths = argc > 1 ? argc - 1 : 1;
    int total = 0;
    for (int i = 0; i < npaths; i++) {
        struct stat sb;
        int got = stat(paths[i], &sb) == 0 && S_ISDIR(sb.st_mode) ? run_dir(paths[i])
                                                                    : (run_file(paths[i]) == 0 ? 1 : -1);
        if (got < 0)
            return 1;
        total += got;
    }
    if (total == 0) {
        fprintf(stderr, "fuzz %s: no inputs in %s\n", FUZZ_TARGET, paths[0]);
        return 1;
    }
    fprintf(stderr, "fuzz %s: %d inputs replayed, no crash\n", FUZZ_TARGET, total);
    return 0;
}
