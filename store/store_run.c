/* store_run.c: one run: the writer (create O_EXCL, reopen cutting a torn tail, append one
 * durable frame per event), loading a run into a pdbx_run, and the liveness rule (store.h).
 */
#define _GNU_SOURCE      /* fallocate, FALLOC_FL_KEEP_SIZE */
#include "store/util/err.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "store/layout.h"
#include "store/util/clock.h"
#include "store/util/fs.h"
#include "store/util/proc.h"
#include "store/store_frames.h"
#include "store/store_impl.h"

struct pdbx_run_writer {
    char id[PDBX_RUN_ID_MAX];
    char *path;
    int fd;
    uint64_t size;    /* bytes of whole frames in the file */
    pdbx_frame_encoder *enc;
    int no_reserve;   /* the file system cannot preallocate (fallocate KEEP_SIZE) */
    pdbx_append_failure failure;   /* of the last append */
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

static int no_space(int e)
{
    return e == ENOSPC || e == EDQUOT || e == EFBIG;
}

/* Room for len more bytes plus the end reserve: allocated past the end (KEEP_SIZE: the file's
 * size, which readers see, does not change) and under the file-size limit. 0, or -1 with err
 * and nothing written. */
static int reserve_room(pdbx_run_writer *w, size_t len, char *err, size_t errlen)
{
    struct stat sb;
    if (fstat(w->fd, &sb) != 0)
        return 0;                        /* the append itself will say what is wrong */
    uint64_t need = (uint64_t)len + PDBX_RUN_END_RESERVE;
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (uint64_t)sb.st_size + need > (uint64_t)rl.rlim_cur) {
        w->failure = PDBX_APPEND_NO_SPACE;
        pdbx_errf(err, errlen, "%s: a %zu-byte event would reach the file-size limit (ulimit -f, "
                  "%llu bytes): %s", w->path, len, (unsigned long long)rl.rlim_cur, strerror(EFBIG));
        return -1;
    }
    if (w->no_reserve)
        return 0;
    int rc;
    do
        rc = fallocate(w->fd, FALLOC_FL_KEEP_SIZE, sb.st_size, (off_t)need);
    while (rc != 0 && errno == EINTR);
    if (rc == 0)
        return 0;
    if (errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL) {
        w->no_reserve = 1;               /* plain appends on this file system */
        return 0;
    }
    w->failure = no_space(errno) ? PDBX_APPEND_NO_SPACE : PDBX_APPEND_IO;
    pdbx_errf(err, errlen, "%s: no room for a %zu-byte event and the run end: %s", w->path, len,
              strerror(errno));
    return -1;
}

static int writer_append(pdbx_run_writer *w, const cJSON *event, int last, char *err,
                         size_t errlen)
{
    const void *frame;
    size_t len;
    char why[200];
    w->failure = PDBX_APPEND_OK;
    if (pdbx_frame_encode_event(w->enc, event, &frame, &len, why, sizeof why) != 0) {
        pdbx_errf(err, errlen, "%s: %s", w->path, why);
        w->failure = PDBX_APPEND_ENCODE;
        return -1;
    }
    if (!last && reserve_room(w, len, err, errlen) != 0)
        return -1;
    errno = 0;
    int rc = pdbx_frame_append(w->fd, &w->size, frame, len, w->path, err, errlen);
    if (rc != 0)   /* a short write without errno: no room */
        w->failure = no_space(errno) || errno == 0 ? PDBX_APPEND_NO_SPACE : PDBX_APPEND_IO;
    return rc;
}

int pdbx_run_writer_append(pdbx_run_writer *w, const cJSON *event, char *err, size_t errlen)
{
    return writer_append(w, event, 0, err, errlen);
}

int pdbx_run_writer_append_last(pdbx_run_writer *w, const cJSON *event, char *err, size_t errlen)
{
    return writer_append(w, event, 1, err, errlen);
}

pdbx_append_failure pdbx_run_writer_failure(const pdbx_run_writer *w)
{
    return w ? w->failure : PDBX_APPEND_OK;
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

/* 1 when process pid exists here and is not a zombie. */
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

int pdbx_process_is(long pid, double pid_start, const char *boot_id)
{
    if (!pdbx_process_alive(pid))
        return 0;
    if (!(pid_start > 0))
        return 1;              /* nothing recorded beyond the pid (older runs): the pid decides */
    char boot[40];
    pdbx_boot_id(boot, sizeof boot);
    if (boot_id && boot_id[0] && boot[0] && strcmp(boot, boot_id) != 0)
        return 0;              /* started in an earlier boot: its ticks mean nothing now */
    unsigned long long ticks;
    if (pdbx_proc_start_ticks(pid, &ticks) != 0)
        return 1;              /* /proc unreadable: trust kill */
    return (double)ticks == pid_start;
}

store_launcher store_launcher_of_run(const pdbx_run *run)
{
    store_launcher l = { run->host, run->pid, run->pid_start, run->boot_id, run->last_event, NULL,
                         run->launcher };
    return l;
}

/* How the run at run_path ended, from its log (DIR/logs/<id>.log next to DIR/runs/<id>.pdbx)
 * when the engine or the supervisor could not append run_end (disk full): the last line's
 * text after "run_end not written: ". 0 with out set, -1 when the log says nothing. */
static int log_end(const char *run_path, char *out, size_t len)
{
    static const char mark[] = "run_end not written: ";
    const char *slash = run_path ? strrchr(run_path, '/') : NULL;
    char dir[4096], id[PDBX_RUN_ID_MAX], log[4096], tail[16384];
    if (!slash || (size_t)(slash - run_path) >= sizeof dir ||
        !pdbx_layout_run_id_of_name(slash + 1, id))
        return -1;
    memcpy(dir, run_path, (size_t)(slash - run_path));
    dir[slash - run_path] = '\0';
    char *runs = strrchr(dir, '/');
    if (!runs || strcmp(runs + 1, "runs") != 0)
        return -1;                      /* a recording outside a store: no log */
    *runs = '\0';
    if (pdbx_layout_path(PDBX_PATH_LOG, dir[0] ? dir : "/", id, log, sizeof log) != 0)
        return -1;
    int fd = open(log, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0)
        return -1;
    ssize_t n = -1;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {   /* the last 16 KiB are enough */
        off_t from = sb.st_size > (off_t)sizeof tail - 1 ? sb.st_size - (off_t)(sizeof tail - 1) : 0;
        n = pread(fd, tail, sizeof tail - 1, from);
    }
    close(fd);
    if (n <= 0)
        return -1;
    tail[n] = '\0';
    const char *last = NULL;
    for (const char *p = tail; (p = strstr(p, mark)) != NULL; p += sizeof mark - 1)
        last = p + sizeof mark - 1;
    if (!last)
        return -1;
    size_t k = strcspn(last, "\n");
    snprintf(out, len, "%.*s", (int)k, last);
    return 0;
}

/* 1 while a run without run_end counts as running (the rule of store.h): its launcher is the
 * process recorded (pid, and its start time where recorded: a reused pid is not it) on this
 * host; on another host, while its heartbeat is fresh. */
int store_launcher_alive(const store_launcher *l)
{
    if (l->pid > 0 && same_host(l->host))
        return pdbx_process_is(l->pid, l->pid_start, l->boot_id);
    return l->last_event > 0 && pdbx_wall_s() - l->last_event < PDBX_HEARTBEAT_TIMEOUT_S;
}

void store_no_end_reason(char *buf, size_t len, const store_launcher *l)
{
    char said[300];
    if (log_end(l->path, said, sizeof said) == 0)
        snprintf(buf, len, "%.200s (run_end not written; from the log)", said);
    else if (l->pid > 0 && same_host(l->host) && pdbx_process_alive(l->pid))
        snprintf(buf, len, "no run end (launcher pid %ld on %s is gone; the pid is now another "
                 "process)", l->pid, l->host);
    else if (l->pid > 0 && same_host(l->host))
        snprintf(buf, len, "no run end (launcher pid %ld on %s is gone)", l->pid, l->host);
    else if (l->last_event > 0 && l->launcher && l->launcher[0])
        /* a run without a supervisor here (sbatch): the job is what to look at */
        snprintf(buf, len, "no run end (last event %.0f s ago on %s; launched %s)",
                 pdbx_wall_s() - l->last_event, l->host && l->host[0] ? l->host : "?", l->launcher);
    else if (l->last_event > 0)
        snprintf(buf, len, "no run end (last event %.0f s ago)", pdbx_wall_s() - l->last_event);
    else
        snprintf(buf, len, "no run end (no events)");
}

void pdbx_run_refresh_liveness(pdbx_run *run)
{
    if (run->have_end || run->status == PDBX_RUN_CORRUPT)
        return;
    store_launcher l = store_launcher_of_run(run);
    if (store_launcher_alive(&l)) {
        run->status = PDBX_RUN_RUNNING;
        run->end_reason[0] = '\0';
    } else {
        run->status = PDBX_RUN_FAILED;
        store_no_end_reason(run->end_reason, sizeof run->end_reason, &l);
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
        store_launcher l = store_launcher_of_run(run);
        alive = store_launcher_alive(&l);
        struct stat sb;
        if (alive || pass >= 8 || stat(path, &sb) != 0 || (uint64_t)sb.st_size <= res.next_offset)
            break;
    }
    if (alive) {
        run->status = PDBX_RUN_RUNNING;
        run->end_reason[0] = '\0';
    } else {
        run->status = PDBX_RUN_FAILED;
        store_launcher l = store_launcher_of_run(run);
        l.path = path;
        store_no_end_reason(run->end_reason, sizeof run->end_reason, &l);
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
