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
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "store/events.h"
#include "store/layout.h"
#include "store/util/fs.h"
#include "store/util/text.h"
#include "store/store_impl.h"

/* Copies bytes [0, len) of src to the durable file f. */
static int copy_prefix(const char *src, uint64_t len, pdbx_durable_file *f, char *err, size_t errlen)
{
    int fd = open(src, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        pdbx_errf(err, errlen, "%s: cannot open: %s", src, strerror(errno));
        return -1;
    }
    char buf[65536];
    uint64_t off = 0;
    while (off < len) {
        size_t want = len - off < sizeof buf ? (size_t)(len - off) : sizeof buf;
        ssize_t r = pread(fd, buf, want, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            pdbx_errf(err, errlen, "%s: read failed at byte %llu: %s", src, (unsigned long long)off,
                    r < 0 ? strerror(errno) : "file shrank");
            close(fd);
            return -1;
        }
        if (pdbx_durable_put(f, buf, (size_t)r, err, errlen) != 0) {
            close(fd);
            return -1;
        }
        off += (uint64_t)r;
    }
    close(fd);
    return 0;
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
    if (copy_prefix(path, res.next_offset, f, err, errlen) != 0) {
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
    if (pdbx_event_type_of(ev) == PDBX_EV_RUN_START &&
        pdbx_event_decode_run_start(ev, &h, NULL, 0) == 0 && pdbx_layout_valid_id(h.who.id))
        pdbx_strcopy(p->id, sizeof p->id, h.who.id);
    return 1;   /* only the first event matters here */
}

int pdbx_store_import(pdbx_store *st, const char *file, char out_id[PDBX_RUN_ID_MAX],
                      char *err, size_t errlen)
{
    import_probe probe = {0};
    pdbx_scan_result res;
    if (pdbx_scan_file(file, 0, probe_first, &probe, &res, err, errlen) != 0)
        return -1;
    if (res.corrupt) {
        pdbx_errf(err, errlen, "not imported: %s", res.corrupt_msg);
        return -1;
    }
    if (res.events == 0) {
        pdbx_errf(err, errlen, "%s: no events: not a pdbx run file or recording", file);
        return -1;
    }
    if (pdbx_event_type_from_name(probe.first_type) != PDBX_EV_RUN_START) {
        pdbx_errf(err, errlen, "%s: first event is \"%s\", expected \"%s\"", file, probe.first_type,
                  pdbx_event_type_name(PDBX_EV_RUN_START));
        return -1;
    }
    /* Validate the whole file (the probe stopped early) and find its whole-frame length. */
    if (pdbx_scan_file(file, 0, NULL, NULL, &res, err, errlen) != 0)
        return -1;
    if (res.corrupt) {
        pdbx_errf(err, errlen, "not imported: %s", res.corrupt_msg);
        return -1;
    }

    /* Copy to a hidden temp in runs/ (never listed), then link() it to its name: link fails
     * when the name is taken, so an existing run is never replaced. */
    char *tmp = malloc(strlen(st->runs) + 64);
    char *target = NULL;
    int fd = -1, rc = -1;
    if (!tmp) {
        pdbx_errf(err, errlen, "%s: out of memory", file);
        return -1;
    }
    /* Mode 0644 through the umask, like a run the writer creates (mkstemp would force 0600). */
    for (int attempt = 0; fd < 0; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        sprintf(tmp, "%s/.import-%ld-%09ld-%d", st->runs, (long)getpid(), (long)ts.tv_nsec, attempt);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && (errno != EEXIST || attempt >= 100)) {
            pdbx_errf(err, errlen, "%s: cannot create a temp file: %s", st->runs, strerror(errno));
            free(tmp);
            return -1;
        }
    }
    {
        int src = open(file, O_RDONLY | O_CLOEXEC);
        if (src < 0) {
            pdbx_errf(err, errlen, "%s: cannot open: %s", file, strerror(errno));
            goto fail;
        }
        char buf[65536];
        uint64_t off = 0;
        while (off < res.next_offset) {
            size_t want = res.next_offset - off < sizeof buf ? (size_t)(res.next_offset - off) : sizeof buf;
            ssize_t r = pread(src, buf, want, (off_t)off);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0 || write(fd, buf, (size_t)r) != r) {
                pdbx_errf(err, errlen, "%s: copying %s failed at byte %llu: %s", tmp, file,
                        (unsigned long long)off, r < 0 ? strerror(errno) : "short read or write");
                close(src);
                goto fail;
            }
            off += (uint64_t)r;
        }
        close(src);
    }
    if (fsync(fd) != 0) {
        pdbx_errf(err, errlen, "%s: fsync failed: %s", tmp, strerror(errno));
        goto fail;
    }
    char id[PDBX_RUN_ID_MAX];
    if (probe.id[0])
        snprintf(id, sizeof id, "%s", probe.id);
    else
        pdbx_store_new_id(id);
    for (int attempt = 0;; attempt++) {
        free(target);
        target = store_run_path_alloc(st, id);
        if (!target) {
            pdbx_errf(err, errlen, "%s: out of memory", file);
            goto fail;
        }
        if (link(tmp, target) == 0)
            break;
        if (errno != EEXIST || attempt >= 8) {
            pdbx_errf(err, errlen, "%s: cannot create: %s", target, strerror(errno));
            goto fail;
        }
        pdbx_store_new_id(id);                       /* the id is taken: import under a new one */
    }
    unlink(tmp);
    if (pdbx_fsync_dir(st->runs, err, errlen) != 0)
        goto done;
    snprintf(out_id, PDBX_RUN_ID_MAX, "%s", id);
    rc = 0;
    goto done;
fail:
    unlink(tmp);
done:
    if (fd >= 0)
        close(fd);
    free(tmp);
    free(target);
    return rc;
}
