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

int pdbx_store_import(pdbx_store *st, const char *file, char out_id[PDBX_RUN_ID_MAX],
                      char *err, size_t errlen)
{
    import_probe probe = {0};
    uint64_t len = 0;
    char *tmp = NULL;
    if (check_recording(file, &probe, &len, err, errlen) != 0)
        return -1;
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
