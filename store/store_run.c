/* store_run.c: one run: the writer (create O_EXCL, reopen cutting a torn tail, append one
 * durable frame per event), loading a run into a pdbx_run, and the liveness rule (store.h).
 */
#include "store/util/err.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "store/layout.h"
#include "store/util/clock.h"
#include "store/util/fs.h"
#include "store/store_frames.h"
#include "store/store_impl.h"

struct pdbx_run_writer {
    char id[PDBX_RUN_ID_MAX];
    char *path;
    int fd;
    uint64_t size;    /* bytes of whole frames in the file */
    pdbx_frame_encoder *enc;
};

/* ---- writer -------------------------------------------------------------------------- */

static void writer_free(pdbx_run_writer *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    pdbx_frame_encoder_free(w->enc);
    free(w->path);
    free(w);
}

static pdbx_run_writer *writer_new(const pdbx_store *st, const char *id, char *err, size_t errlen)
{
    pdbx_run_writer *w = calloc(1, sizeof *w);
    if (!w) {
        pdbx_errf(err, errlen, "run %s: out of memory", id);
        return NULL;
    }
    w->fd = -1;
    snprintf(w->id, sizeof w->id, "%s", id);
    if (!(w->path = store_run_path_alloc(st, id))) {
        pdbx_errf(err, errlen, "run %s: out of memory", id);
        writer_free(w);
        return NULL;
    }
    if (pdbx_frame_encoder_new(&w->enc, err, errlen) != 0) {
        writer_free(w);
        return NULL;
    }
    return w;
}

int pdbx_run_writer_create(pdbx_store *st, const char *id, pdbx_run_writer **out,
                           char *err, size_t errlen)
{
    *out = NULL;
    pdbx_ignore_sigxfsz();      /* a write past the file-size limit fails (EFBIG), reported */
    if (id && !pdbx_layout_valid_id(id)) {
        pdbx_errf(err, errlen, "run id '%s': not allowed (1-%d of A-Z a-z 0-9 . _ -, not starting with '.')",
                id, PDBX_RUN_ID_MAX - 1);
        return -1;
    }
    for (int attempt = 0;; attempt++) {
        char fresh[PDBX_RUN_ID_MAX];
        if (!id)
            pdbx_store_new_id(fresh);
        pdbx_run_writer *w = writer_new(st, id ? id : fresh, err, errlen);
        if (!w)
            return -1;
        w->fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
        if (w->fd < 0) {
            int e = errno;
            if (e == EEXIST && !id && attempt < 8) {   /* a fresh id clashed: draw another */
                writer_free(w);
                continue;
            }
            pdbx_errf(err, errlen, "%s: cannot create run file: %s", w->path, strerror(e));
            writer_free(w);
            return -1;
        }
        if (pdbx_fsync_dir(st->runs, err, errlen) != 0) {
            unlink(w->path);
            writer_free(w);
            return -1;
        }
        *out = w;
        return 0;
    }
}

int pdbx_run_writer_open(pdbx_store *st, const char *id, pdbx_run_writer **out,
                         char *err, size_t errlen)
{
    *out = NULL;
    pdbx_ignore_sigxfsz();
    if (!pdbx_layout_valid_id(id)) {
        pdbx_errf(err, errlen, "run id '%s': not a valid run id", id ? id : "");
        return -1;
    }
    pdbx_run_writer *w = writer_new(st, id, err, errlen);
    if (!w)
        return -1;
    w->fd = open(w->path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (w->fd < 0) {
        pdbx_errf(err, errlen, "%s: cannot open run for appending: %s", w->path, strerror(errno));
        goto fail;
    }
    pdbx_scan_result res;
    if (pdbx_scan_file(w->path, 0, NULL, NULL, &res, err, errlen) != 0)
        goto fail;
    if (res.corrupt) {
        pdbx_errf(err, errlen, "cannot append to a damaged run: %s", res.corrupt_msg);
        goto fail;
    }
    /* A crash left a partial frame: cut it so new frames follow whole ones. */
    struct stat sb;
    if (fstat(w->fd, &sb) != 0) {
        pdbx_errf(err, errlen, "%s: stat failed: %s", w->path, strerror(errno));
        goto fail;
    }
    if ((uint64_t)sb.st_size != res.next_offset) {
        if (ftruncate(w->fd, (off_t)res.next_offset) != 0 || fdatasync(w->fd) != 0) {
            pdbx_errf(err, errlen, "%s: cannot cut the torn tail at byte %llu: %s", w->path,
                    (unsigned long long)res.next_offset, strerror(errno));
            goto fail;
        }
    }
    w->size = res.next_offset;
    *out = w;
    return 0;
fail:
    writer_free(w);
    return -1;
}

const char *pdbx_run_writer_id(const pdbx_run_writer *w)
{
    return w->id;
}

int pdbx_run_writer_append(pdbx_run_writer *w, const cJSON *event, char *err, size_t errlen)
{
    const void *frame;
    size_t len;
    char why[200];
    if (pdbx_frame_encode_event(w->enc, event, &frame, &len, why, sizeof why) != 0) {
        pdbx_errf(err, errlen, "%s: %s", w->path, why);
        return -1;
    }
    return pdbx_frame_append(w->fd, &w->size, frame, len, w->path, err, errlen);
}

int pdbx_run_writer_close(pdbx_run_writer *w, char *err, size_t errlen)
{
    if (!w)
        return 0;
    int rc = 0;
    if (w->fd >= 0 && close(w->fd) != 0) {
        pdbx_errf(err, errlen, "%s: close failed: %s", w->path, strerror(errno));
        rc = -1;
    }
    w->fd = -1;
    writer_free(w);
    return rc;
}

/* ---- liveness ------------------------------------------------------------------------ */

static int same_host(const char *host)
{
    char me[256];
    if (!host || !*host || gethostname(me, sizeof me) != 0)
        return 0;
    me[sizeof me - 1] = '\0';
    return strcmp(me, host) == 0;
}

/* 1 while a run without run_end counts as running (the rule of store.h). A pid reused by an
 * unrelated process after a crash reads as alive: the contract (and tests that record a live
 * pid with old event times) ask for exactly "the pid lives on this host". */
int pdbx_process_alive(long pid)
{
    if (pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
        return 0;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;   /* exists (kill said so) but /proc is not readable: trust kill */
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* state is the field after the ")" that closes the command name */
    const char *paren = strrchr(buf, ')');
    return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

int store_launcher_alive(const char *host, long pid, double last_event)
{
    if (pid > 0 && same_host(host))
        return pdbx_process_alive(pid);
    return last_event > 0 && pdbx_wall_s() - last_event < PDBX_HEARTBEAT_TIMEOUT_S;
}

void store_no_end_reason(char *buf, size_t len, const char *host, long pid, double last_event)
{
    if (pid > 0 && same_host(host))
        snprintf(buf, len, "no run end (launcher pid %ld on %s is gone)", pid, host);
    else if (last_event > 0)
        snprintf(buf, len, "no run end (last event %.0f s ago)", pdbx_wall_s() - last_event);
    else
        snprintf(buf, len, "no run end (no events)");
}

void pdbx_run_refresh_liveness(pdbx_run *run)
{
    if (run->have_end || run->status == PDBX_RUN_CORRUPT)
        return;
    if (store_launcher_alive(run->host, run->pid, run->last_event)) {
        run->status = PDBX_RUN_RUNNING;
        run->end_reason[0] = '\0';
    } else {
        run->status = PDBX_RUN_FAILED;
        store_no_end_reason(run->end_reason, sizeof run->end_reason, run->host, run->pid, run->last_event);
    }
}

/* ---- loading ------------------------------------------------------------------------- */

int store_load_event(const cJSON *ev, void *vctx)
{
    store_load_ctx *c = vctx;
    char msg[200];
    if (pdbx_run_apply(c->run, ev, msg, sizeof msg) != 0) {
        /* A malformed event is reported in the run's warnings; the rest still folds. */
        pdbx_run_warn(c->run, "event %zu ignored: %s", c->index, msg);
    }
    c->index++;
    return 0;
}

double store_mtime_of(const struct stat *sb)
{
    return (double)sb->st_mtim.tv_sec + (double)sb->st_mtim.tv_nsec * 1e-9;
}

int pdbx_run_load_file(const char *path, pdbx_run *run, char *err, size_t errlen)
{
    pdbx_run_init(run);
    store_load_ctx c = {run, 0};
    pdbx_scan_result res;
    uint64_t from = 0;
    int alive = 0;
    /* A launcher that appends run_end and exits between our scan and the liveness check
     * would make a finished run look crashed. So liveness is checked first and the file
     * afterwards: if the launcher is gone but the file grew past what we read, read the rest
     * (a dead launcher appends nothing more, so this ends). */
    for (int pass = 0;; pass++) {
        if (pdbx_scan_file(path, from, store_load_event, &c, &res, err, errlen) != 0) {
            if (pass == 0)
                return -1;
            break;                         /* keep what the earlier passes read */
        }
        run->torn_tail = res.torn_tail;
        from = res.next_offset;
        if (res.corrupt) {
            run->status = PDBX_RUN_CORRUPT;
            snprintf(run->end_reason, sizeof run->end_reason, "%s", res.corrupt_msg);
            return 0;
        }
        if (run->have_end)
            return 0;
        if (run->last_event == 0.0) {      /* no timed event yet: the file's age is the heartbeat */
            struct stat sb;
            if (stat(path, &sb) == 0)
                run->last_event = store_mtime_of(&sb);
        }
        alive = store_launcher_alive(run->host, run->pid, run->last_event);
        struct stat sb;
        if (alive || pass >= 8 || stat(path, &sb) != 0 || (uint64_t)sb.st_size <= res.next_offset)
            break;
    }
    if (alive) {
        run->status = PDBX_RUN_RUNNING;
        run->end_reason[0] = '\0';
    } else {
        run->status = PDBX_RUN_FAILED;
        store_no_end_reason(run->end_reason, sizeof run->end_reason, run->host, run->pid, run->last_event);
    }
    return 0;
}

int pdbx_run_load(pdbx_store *st, const char *id, pdbx_run *run, char *err, size_t errlen)
{
    if (pdbx_layout_is_run_path(id))
        return pdbx_run_load_file(id, run, err, errlen);
    char rid[PDBX_RUN_ID_MAX];
    if (!st) {
        pdbx_run_init(run);
        pdbx_errf(err, errlen, "run '%s': no store to look it up in", id ? id : "");
        return -1;
    }
    if (pdbx_store_resolve(st, id, rid, err, errlen) != 0) {
        pdbx_run_init(run);
        return -1;
    }
    char *path = store_run_path_alloc(st, rid);
    if (!path) {
        pdbx_run_init(run);
        pdbx_errf(err, errlen, "run %s: out of memory", rid);
        return -1;
    }
    int rc = pdbx_run_load_file(path, run, err, errlen);
    free(path);
    if (rc == 0)   /* the file name is the id (an import may have renamed it) */
        snprintf(run->id, sizeof run->id, "%s", rid);
    return rc;
}
