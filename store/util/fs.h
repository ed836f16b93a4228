/* fs.h: file-system ground rules: crash-safe whole-file writes (redis rdbSave style), mkdir -p.
 *
 * A durable file is written to a temp file in the target's directory; commit checks every
 * write, fflush + fsync, renames over the target, then fsyncs the directory. On any error the
 * temp file is unlinked and the target is untouched. Used for the index, exports and
 * recordings. Functions return 0, or -1 with a one-line message naming the path in err.
 */
#ifndef PDBX_FS_H
#define PDBX_FS_H

#include <stddef.h>

typedef struct pdbx_durable_file pdbx_durable_file;

int pdbx_durable_open(const char *path, pdbx_durable_file **out, char *err, size_t errlen);
int pdbx_durable_put(pdbx_durable_file *f, const void *data, size_t len, char *err, size_t errlen);
/* Publishes the file at its path and frees f (also on failure). */
int pdbx_durable_commit(pdbx_durable_file *f, char *err, size_t errlen);
/* Drops the temp file and frees f. */
void pdbx_durable_abort(pdbx_durable_file *f);
/* One-shot: the whole content at once. */
int pdbx_durable_write(const char *path, const void *data, size_t len, char *err, size_t errlen);
/* fsync of a directory, so a rename or create in it survives a crash. */
int pdbx_fsync_dir(const char *dir, char *err, size_t errlen);
/* Opens path read-only (O_CLOEXEC) only when it is a regular file: a FIFO, device, socket or
 * directory is refused without blocking (opening a FIFO for reading waits for a writer):
 * "<path>: not a regular file (a FIFO)". A file this user may not read gives
 * "<path>: cannot open: permission denied". Returns the fd (blocking reads) or -1. */
int pdbx_open_regular(const char *path, char *err, size_t errlen);
/* Makes the process ignore SIGXFSZ (once; a disposition someone set is kept): a write past
 * RLIMIT_FSIZE then fails with EFBIG, which the writers report and clean up after, instead of
 * the signal killing the process with its temp file left behind. */
void pdbx_ignore_sigxfsz(void);
/* mkdir -p that survives a crash: each directory it creates is synced into its parent.
 * 0 when path is (now) a directory. */
int pdbx_mkdirs(const char *path, char *err, size_t errlen);

#endif
