/* durable.c: crash-safe whole-file writes (see durable.h).
 *
 * The temp file lives next to the target ("<target>.tmp.XXXXXX") so the final rename stays
 * within one filesystem and is atomic. Nothing touches the target before the rename.
 */
#include "store/durable.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct pdbx_durable_file {
    char *path;      /* the target */
    char *tmp;       /* the temp file being written */
    FILE *fp;
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Directory part of path ("." when it has none); malloc'ed. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    size_t n = (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    memcpy(d, path, n);
    d[n] = '\0';
    return d;
}

int pdbx_fsync_dir(const char *dir, char *err, size_t errlen)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, errlen, "%s: cannot open directory: %s", dir, strerror(errno));
        return -1;
    }
    if (fsync(fd) != 0 && errno != EINVAL) {   /* EINVAL: filesystem without dir fsync */
        set_err(err, errlen, "%s: fsync of directory failed: %s", dir, strerror(errno));
        close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

static void durable_free(pdbx_durable_file *f)
{
    if (!f)
        return;
    free(f->path);
    free(f->tmp);
    free(f);
}

int pdbx_durable_open(const char *path, pdbx_durable_file **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!path || !*path) {
        set_err(err, errlen, "durable write: empty path");
        return -1;
    }
    pdbx_durable_file *f = calloc(1, sizeof *f);
    if (!f)
        goto oom;
    f->path = strdup(path);
    size_t tmplen = strlen(path) + sizeof ".tmp.XXXXXX";
    f->tmp = malloc(tmplen);
    if (!f->path || !f->tmp)
        goto oom;
    snprintf(f->tmp, tmplen, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(f->tmp);
    if (fd < 0) {
        set_err(err, errlen, "%s: cannot create temp file: %s", path, strerror(errno));
        durable_free(f);
        return -1;
    }
    /* mkstemp creates 0600; published files follow the umask like any other file. */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0) {
        set_err(err, errlen, "%s: chmod of temp file failed: %s", f->tmp, strerror(errno));
        close(fd);
        unlink(f->tmp);
        durable_free(f);
        return -1;
    }
    f->fp = fdopen(fd, "wb");
    if (!f->fp) {
        set_err(err, errlen, "%s: fdopen failed: %s", f->tmp, strerror(errno));
        close(fd);
        unlink(f->tmp);
        durable_free(f);
        return -1;
    }
    *out = f;
    return 0;
oom:
    set_err(err, errlen, "%s: out of memory", path);
    durable_free(f);
    return -1;
}

int pdbx_durable_put(pdbx_durable_file *f, const void *data, size_t len, char *err, size_t errlen)
{
    if (len == 0)
        return 0;
    if (fwrite(data, 1, len, f->fp) != len) {
        set_err(err, errlen, "%s: write failed: %s", f->tmp, strerror(errno));
        return -1;
    }
    return 0;
}

void pdbx_durable_abort(pdbx_durable_file *f)
{
    if (!f)
        return;
    if (f->fp)
        fclose(f->fp);
    unlink(f->tmp);
    durable_free(f);
}

int pdbx_durable_commit(pdbx_durable_file *f, char *err, size_t errlen)
{
    char *dir = NULL;
    if (fflush(f->fp) != 0) {
        set_err(err, errlen, "%s: write failed: %s", f->tmp, strerror(errno));
        goto fail;
    }
    if (fsync(fileno(f->fp)) != 0) {
        set_err(err, errlen, "%s: fsync failed: %s", f->tmp, strerror(errno));
        goto fail;
    }
    FILE *fp = f->fp;
    f->fp = NULL;
    if (fclose(fp) != 0) {
        set_err(err, errlen, "%s: close failed: %s", f->tmp, strerror(errno));
        goto fail;
    }
    if (rename(f->tmp, f->path) != 0) {
        set_err(err, errlen, "%s: rename from %s failed: %s", f->path, f->tmp, strerror(errno));
        goto fail;
    }
    dir = dir_of(f->path);
    if (!dir) {
        set_err(err, errlen, "%s: out of memory", f->path);
        durable_free(f);
        return -1;
    }
    /* The rename happened; a failing directory fsync is still reported (not durable yet). */
    int rc = pdbx_fsync_dir(dir, err, errlen);
    free(dir);
    durable_free(f);
    return rc;
fail:
    pdbx_durable_abort(f);
    return -1;
}

int pdbx_durable_write(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    pdbx_durable_file *f;
    if (pdbx_durable_open(path, &f, err, errlen) != 0)
        return -1;
    if (pdbx_durable_put(f, data, len, err, errlen) != 0) {
        pdbx_durable_abort(f);
        return -1;
    }
    return pdbx_durable_commit(f, err, errlen);
}
