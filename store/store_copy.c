/* store_copy.c: recordings: record (a run's whole frames, durably, to a file) and import
 * (a recording into the store under its id, or a new one when taken; never replacing a run).
 */
#include "store/util/err.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "store/events.h"
#include "store/layout.h"
#include "store/util/clock.h"
#include "store/util/fs.h"
#include "store/util/text.h"
#include "store/store_impl.h"

/* Where copied bytes go: 0, or -1 with a message. */
typedef int (*sink_fn)(void *sink, const void *buf, size_t n, char *err, size_t errlen);

static int durable_sink(void *f, const void *buf, size_t n, char *err, size_t errlen)
{
    return pdbx_durable_put(f, buf, n, err, errlen);
}

typedef struct {
    int fd;
    const char *path;
} fd_sink_t;

static int fd_sink(void *vs, const void *buf, size_t n, char *err, size_t errlen)
{
    fd_sink_t *s = vs;
    ssize_t w;
    do
        w = write(s->fd, buf, n);
    while (w < 0 && errno == EINTR);
    if (w == (ssize_t)n)
        return 0;
    return pdbx_fail(err, errlen, "%s: write failed: %s", s->path, w < 0 ? strerror(errno) : "short write");
}

/* Copies bytes [0, len) of src to the sink. */
static int copy_prefix(const char *src, uint64_t len, sink_fn put, void *sink, char *err, size_t errlen)
{
    int fd = open(src, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return pdbx_fail(err, errlen, "%s: cannot open: %s", src, strerror(errno));
    char buf[65536];
    uint64_t off = 0;
    int rc = 0;
    while (rc == 0 && off < len) {
        size_t want = len - off < sizeof buf ? (size_t)(len - off) : sizeof buf;
        ssize_t r = pread(fd, buf, want, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            rc = pdbx_fail(err, errlen, "%s: read failed at byte %llu: %s", src, (unsigned long long)off,
                           r < 0 ? strerror(errno) : "file shrank");
        else
            rc = put(sink, buf, (size_t)r, err, errlen);
        off += r > 0 ? (uint64_t)r : 0;
    }
    close(fd);
    return rc;
}

int pdbx_store_record(pdbx_store *st, const char *id, const char *file, char *err, size_t errlen)
{
    char rid[PDBX_RUN_ID_MAX];
    if (pdbx_store_resolve(st, id, rid, err, errlen) != 0)
        return -1;
    char *path = store_run_path_alloc(st, rid);
    if (!path) {
        pdbx_errf(err, errlen, "run %s: out of memory", rid);
        return -1;
    }
    int rc = -1;
    pdbx_scan_result res;
    if (pdbx_scan_file(path, 0, NULL, NULL, &res, err, errlen) != 0)
        goto done;
    if (res.corrupt) {
        pdbx_errf(err, errlen, "run %s is damaged, not recorded: %s", rid, res.corrupt_msg);
        goto done;
    }
    pdbx_durable_file *f;
    if (pdbx_durable_open(file, &f, err, errlen) != 0)
        goto done;
    /* Whole frames only: a torn tail of a run being written is left out. */
    if (copy_prefix(path, res.next_offset, durable_sink, f, err, errlen) != 0) {
        pdbx_durable_abort(f);
        goto done;
    }
    rc = pdbx_durable_commit(f, err, errlen);
done:
    free(path);
    return rc;
}

typedef struct {
    char id[PDBX_RUN_ID_MAX];
    char first_type[32];
} import_probe;

static int probe_first(const cJSON *ev, void *vctx)
{
    import_probe *p = vctx;
    pdbx_strcopy(p->first_type, sizeof p->first_type, pdbx_event_type_str(ev));
    pdbx_ev_run_start h;
    memset(&h, 0, sizeof h);
    if (pdbx_event_type_of(ev) == PDBX_EV_RUN_START) {
        pdbx_event_decode_run_start(ev, &h);
        if (pdbx_layout_valid_id(h.who.id))
            pdbx_strcopy(p->id, sizeof p->id, h.who.id);
    }
    return 1;   /* only the first event matters here */
}

/* A recording must start with run_start and have no damaged frame; *len: its whole frames. */
static int check_recording(const char *file, import_probe *probe, uint64_t *len, char *err, size_t errlen)
{
    pdbx_scan_result res;
    if (pdbx_scan_file(file, 0, probe_first, probe, &res, err, errlen) != 0)
        return -1;
    if (res.corrupt)
        return pdbx_fail(err, errlen, "not imported: %s", res.corrupt_msg);
    if (res.events == 0)
        return pdbx_fail(err, errlen, "%s: no events: not a pdbx run file or recording", file);
    if (pdbx_event_type_from_name(probe->first_type) != PDBX_EV_RUN_START)
        return pdbx_fail(err, errlen, "%s: first event is \"%s\", expected \"%s\"", file, probe->first_type,
                         pdbx_event_type_name(PDBX_EV_RUN_START));
    /* Validate the whole file (the probe stopped early) and find its whole-frame length. */
    if (pdbx_scan_file(file, 0, NULL, NULL, &res, err, errlen) != 0)
        return -1;
    if (res.corrupt)
        return pdbx_fail(err, errlen, "not imported: %s", res.corrupt_msg);
    *len = res.next_offset;
    return 0;
}

/* A new hidden temp file in runs/ (never listed): its fd, its path in *tmp (malloc'ed). Mode
 * 0644 through the umask, like a run the writer creates (mkstemp would force 0600). */
static int create_temp(const pdbx_store *st, char **tmp, char *err, size_t errlen)
{
    if (!(*tmp = malloc(strlen(st->runs) + 64)))
        return pdbx_fail(err, errlen, "%s: out of memory", st->runs);
    for (int attempt = 0;; attempt++) {
        double now = pdbx_wall_s();
        sprintf(*tmp, "%s/.import-%ld-%09ld-%d", st->runs, (long)getpid(),
                (long)((now - (double)(long)now) * 1e9), attempt);
        int fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST || attempt >= 100) {
            free(*tmp);
            *tmp = NULL;
            return pdbx_fail(err, errlen, "%s: cannot create a temp file: %s", st->runs, strerror(errno));
        }
    }
}

/* link()s tmp to runs/<id>.pdbx: link fails when the name is taken, so an existing run is
 * never replaced; a taken id is replaced by a new one. */
static int link_as_run(const pdbx_store *st, const char *tmp, char id[PDBX_RUN_ID_MAX],
                       char *err, size_t errlen)
{
    for (int attempt = 0;; attempt++) {
        char *target = store_run_path_alloc(st, id);
        if (!target)
            return pdbx_fail(err, errlen, "%s: out of memory", tmp);
        int ok = link(tmp, target) == 0, e = errno;
        if (!ok && (e != EEXIST || attempt >= 8))
            pdbx_errf(err, errlen, "%s: cannot create: %s", target, strerror(e));
        free(target);
        if (ok)
            return 0;
        if (e != EEXIST || attempt >= 8)
            return -1;
        pdbx_store_new_id(id);
    }
}

/* 1 when file a's first len bytes are file b's whole content (b has len bytes), 0 when not
 * (or either cannot be read: then a copy is made, as before). */
static int same_bytes(const char *a, const char *b, uint64_t len)
{
    int fa = pdbx_open_regular(a, NULL, 0), fb = pdbx_open_regular(b, NULL, 0);
    struct stat sb;
    enum { CHUNK = 65536 };
    char *x = malloc(2 * CHUNK), *y = x ? x + CHUNK : NULL;
    int same = x && fa >= 0 && fb >= 0 && fstat(fb, &sb) == 0 && (uint64_t)sb.st_size == len;
    for (uint64_t off = 0; same && off < len;) {
        size_t want = len - off < CHUNK ? (size_t)(len - off) : CHUNK;
        ssize_t ra = pread(fa, x, want, (off_t)off), rb = pread(fb, y, want, (off_t)off);
        same = ra > 0 && ra == rb && memcmp(x, y, (size_t)ra) == 0;
        off += same ? (uint64_t)ra : 0;
    }
    if (fa >= 0)
        close(fa);
    if (fb >= 0)
        close(fb);
    free(x);
    return same;
}

/* The run of the store whose file is exactly the recording's whole frames: its id into out
 * (1), or 0 when none. Only files of the same size are compared. */
static int find_same_run(const pdbx_store *st, const char *file, uint64_t len,
                         char out[PDBX_RUN_ID_MAX])
{
    store_id_list ids;
    char err[256];
    int found = 0;
    if (store_list_ids(st, &ids, err, sizeof err) != 0)
        return 0;
    for (size_t i = 0; i < ids.n && !found; i++) {
        char *path = store_run_path_alloc(st, ids.id[i]);
        struct stat sb;
        if (path && stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size == len &&
            same_bytes(file, path, len)) {
            snprintf(out, PDBX_RUN_ID_MAX, "%s", ids.id[i]);
            found = 1;
        }
        free(path);
    }
    free(ids.id);
    return found;
}

int pdbx_store_import(pdbx_store *st, const char *file, char out_id[PDBX_RUN_ID_MAX],
                      char *err, size_t errlen)
{
    return pdbx_store_import_ex(st, file, out_id, NULL, err, errlen);
}

int pdbx_store_import_ex(pdbx_store *st, const char *file, char out_id[PDBX_RUN_ID_MAX],
                         int *already, char *err, size_t errlen)
{
    import_probe probe = {0};
    uint64_t len = 0;
    char *tmp = NULL;
    if (already)
        *already = 0;
    if (check_recording(file, &probe, &len, err, errlen) != 0)
        return -1;
    /* Importing the same recording twice made two runs of one measurement. */
    if (find_same_run(st, file, len, out_id)) {
        if (already)
            *already = 1;
        return 0;
    }
    /* Copy to a hidden temp in runs/, fsync, then give it its name. */
    fd_sink_t sink = {create_temp(st, &tmp, err, errlen), tmp};
    if (sink.fd < 0)
        return -1;
    int rc = copy_prefix(file, len, fd_sink, &sink, err, errlen);
    if (rc == 0 && fsync(sink.fd) != 0)
        rc = pdbx_fail(err, errlen, "%s: fsync failed: %s", tmp, strerror(errno));
    char id[PDBX_RUN_ID_MAX];
    if (probe.id[0])
        snprintf(id, sizeof id, "%s", probe.id);
    else
        pdbx_store_new_id(id);
    if (rc == 0)
        rc = link_as_run(st, tmp, id, err, errlen);
    unlink(tmp);
    close(sink.fd);
    free(tmp);
    if (rc == 0)
        rc = pdbx_fsync_dir(st->runs, err, errlen);
    if (rc == 0)
        snprintf(out_id, PDBX_RUN_ID_MAX, "%s", id);
    return rc;
}
