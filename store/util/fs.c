/* fs.c: crash-safe whole-file writes and mkdir -p (see fs.h).
 *
 * The temp file lives next to the target ("<target>.tmp.<pid>.<tag>") so the final rename stays
 * within one filesystem and is atomic. Nothing touches the target before the rename.
 */
#include "store/util/err.h"
#include "store/util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct pdbx_durable_file {
    char *path;      /* the target */
    char *tmp;       /* the temp file being written */
    FILE *fp;
};


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
        pdbx_errf(err, errlen, "%s: cannot open directory: %s", dir, strerror(errno));
        return -1;
    }
    if (fsync(fd) != 0 && errno != EINVAL) {   /* EINVAL: filesystem without dir fsync */
        pdbx_errf(err, errlen, "%s: fsync of directory failed: %s", dir, strerror(errno));
        close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

int pdbx_mkdirs(const char *path, char *err, size_t errlen)
{
    char *p = strdup(path);
    if (!p) {
        pdbx_errf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (char *q = p + 1;; q++) {
        if (*q == '/' || *q == '\0') {
            char c = *q;
            *q = '\0';
            int made = mkdir(p, 0755) == 0;
            if (!made && errno != EEXIST) {
                pdbx_errf(err, errlen, "%s: cannot create directory: %s", p, strerror(errno));
                free(p);
                return -1;
            }
            /* A new directory's name is an entry of its parent: sync the parent, or a crash
             * can drop runs/ (and the run files synced into it) after the first run. */
            if (made) {
                char *slash = strrchr(p, '/');
                int rc;
                if (!slash || slash == p) {
                    rc = pdbx_fsync_dir(slash ? "/" : ".", err, errlen);
                } else {
                    *slash = '\0';
                    rc = pdbx_fsync_dir(p, err, errlen);
                    *slash = '/';
                }
                if (rc != 0) {
                    free(p);
                    return -1;
                }
            }
            *q = c;
            if (c == '\0')
                break;
        }
    }
    free(p);
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        pdbx_errf(err, errlen, "%s: not a directory", path);
        return -1;
    }
    return 0;
}

static const char *file_kind(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISDIR(m) ? "a directory" : S_ISSOCK(m) ? "a socket" :
           S_ISCHR(m) || S_ISBLK(m) ? "a device" : "not a file";
}

int pdbx_open_regular(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        pdbx_errf(err, errlen, "%s: cannot open: %s", path,
                  errno == EACCES ? "permission denied" : strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        int e = errno;
        int stat_ok = fstat(fd, &sb) == 0;
        close(fd);
        pdbx_errf(err, errlen, "%s: not a regular file (%s)", path,
                  stat_ok ? file_kind(sb.st_mode) : strerror(e));
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);                 /* back to blocking reads */
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

void pdbx_ignore_sigxfsz(void)
{
    struct sigaction old;
    if (sigaction(SIGXFSZ, NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
        !(old.sa_flags & SA_SIGINFO)) {
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigemptyset(&ign.sa_mask);
        (void)sigaction(SIGXFSZ, &ign, NULL);
    }
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
        pdbx_errf(err, errlen, "durable write: empty path");
        return -1;
    }
    pdbx_ignore_sigxfsz();
    pdbx_durable_file *f = calloc(1, sizeof *f);
    if (!f)
        goto oom;
    f->path = strdup(path);
    size_t tmplen = strlen(path) + 48;
    f->tmp = malloc(tmplen);
    if (!f->path || !f->tmp)
        goto oom;
    /* A fresh name opened O_EXCL with mode 0666: the file gets the caller's umask like any
     * other file it creates (mkstemp would force 0600, and changing the umask to read it is
     * not thread-safe). */
    int fd = -1;
    for (int attempt = 0; fd < 0; attempt++) {
        /* pid + this allocation's address are unique among live writers; the clock and the
         * attempt vary the name when a stale temp file holds it. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned tag = (unsigned)((uintptr_t)f >> 4) ^ (unsigned)ts.tv_nsec * 2654435761u ^ (unsigned)attempt;
        snprintf(f->tmp, tmplen, "%s.tmp.%ld.%08x", path, (long)getpid(), tag);
        fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && (errno != EEXIST || attempt >= 100)) {
            pdbx_errf(err, errlen, "%s: cannot create temp file: %s", path, strerror(errno));
            durable_free(f);
            return -1;
        }
    }
    f->fp = fdopen(fd, "wb");
    if (!f->fp) {
        pdbx_errf(err, errlen, "%s: fdopen failed: %s", f->tmp, strerror(errno));
        close(fd);
        unlink(f->tmp);
        durable_free(f);
        return -1;
    }
    *out = f;
    return 0;
oom:
    pdbx_errf(err, errlen, "%s: out of memory", path);
    durable_free(f);
    return -1;
}

int pdbx_durable_put(pdbx_durable_file *f, const void *data, size_t len, char *err, size_t errlen)
{
    if (len == 0)
        return 0;
    if (fwrite(data, 1, len, f->fp) != len) {
        pdbx_errf(err, errlen, "%s: write failed: %s", f->tmp, strerror(errno));
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
        pdbx_errf(err, errlen, "%s: write failed: %s", f->tmp, strerror(errno));
        goto fail;
    }
    if (fsync(fileno(f->fp)) != 0) {
        pdbx_errf(err, errlen, "%s: fsync failed: %s", f->tmp, strerror(errno));
        goto fail;
    }
    FILE *fp = f->fp;
    f->fp = NULL;
    if (fclose(fp) != 0) {
        pdbx_errf(err, errlen, "%s: close failed: %s", f->tmp, strerror(errno));
        goto fail;
    }
    if (rename(f->tmp, f->path) != 0) {
        pdbx_errf(err, errlen, "%s: rename from %s failed: %s", f->path, f->tmp, strerror(errno));
        goto fail;
    }
    dir = dir_of(f->path);
    if (!dir) {
        pdbx_errf(err, errlen, "%s: out of memory", f->path);
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
