/* fuzz_common.h: what the fuzz targets (tests/fuzz/fuzz_*.c) share.
 *
 * Each target defines LLVMFuzzerTestOneInput and drives one of pdbx's parsers through its real
 * entry point. The same object links either with clang's libFuzzer (build-fuzz/, `scons fuzz`)
 * or with fuzz_replay_main.c, a plain driver that feeds it every file of a corpus directory
 * (build/tests/test_fuzz_*, run by the normal suite over tests/fuzz/corpus/<target>/).
 *
 * Contract for every target: deterministic for one input, frees everything it allocates
 * (LeakSanitizer), never exits the process, and keeps its files in fuzz_tmpdir(), one
 * directory per process, created on first use and removed at exit.
 */
#ifndef PDBX_FUZZ_COMMON_H
#define PDBX_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Once per process: PDBX_CONFIGS and PDBX_THEMES point at the source tree's configs/ and
 * themes/ (unless set), stdout goes to /dev/null (help and tables the parsers print). */
void fuzz_setup(void);
/* The per-process scratch directory (under /dev/shm when there is one: no disk syncs). */
const char *fuzz_tmpdir(void);
/* Writes data to path (truncating); aborts on failure (the harness is broken, not pdbx). */
void fuzz_write_file(const char *path, const void *data, size_t size);
/* Removes every entry of directory dir (one level below: files and their subdirectories'
 * files), keeping dir itself. */
void fuzz_clear_dir(const char *dir);

/* Writes a run file (or recording) from a fuzz input: an input that starts with the zstd frame
 * magic is written as it is (the scanner sees raw bytes); any other input is JSON events, one
 * per line, each encoded as one frame by the store's own encoder, so the fuzzer reaches the
 * fold of events into a run without having to forge checksums. A line starting with '!' is
 * written raw (without the '!'), so damage can sit between whole frames. */
void fuzz_write_run_file(const char *path, const uint8_t *data, size_t size);

/* A NUL-terminated copy of data (malloc'ed; the caller frees it). */
char *fuzz_strndup(const uint8_t *data, size_t size);

#endif
