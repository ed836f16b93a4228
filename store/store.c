/* store.c: the run store: open, ids, resolve, writer, load, liveness, list, delete, record and
 * import (see store.h). Frames are store_frames.c; the index cache is store_index.c.
 */
#include "store/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/durable.h"
#include "store/store_frames.h"
#include "store/store_index.h"

#define RUN_SUFFIX ".pdbx"
#define HEARTBEAT_TIMEOUT_S 60.0

struct pdbx_store {
    char *dir;
    char *runs;       /* DIR/runs */
    char *index;      /* DIR/index.json */
};

struct pdbx_run_writer {
    char id[PDBX_RUN_ID_MAX];
    char *path;
    int fd;
    uint64_t size;    /* bytes of whole frames in the file */
    pdbx_frame_encoder *enc;
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

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s/%s", a, b);
    return s;
}

/* Ids name files: letters, digits, '-', '_', '.', not starting with '.', below the max. */
static int valid_id(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n >= PDBX_RUN_ID_MAX || id[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return 0;
    }
    return 1;
}

/* The id of a directory entry "<id>.pdbx", or 0 when the name is not a run file. */
static int id_of_name(const char *name, char id[PDBX_RUN_ID_MAX])
{
    size_t n = strlen(name), sl = strlen(RUN_SUFFIX);
    if (n <= sl || strcmp(name + n - sl, RUN_SUFFIX) != 0 || n - sl >= PDBX_RUN_ID_MAX)
        return 0;
    memcpy(id, name, n - sl);
    id[n - sl] = '\0';
    return valid_id(id);
}

/* ---- open ---------------------------------------------------------------------------- */

int pdbx_store_default_dir(char *buf, size_t len, char *err, size_t errlen)
{
    const char *s = getenv("PDBX_STORE");
    int n;
    if (s && *s)
        n = snprintf(buf, len, "%s", s);
    else if ((s = getenv("XDG_DATA_HOME")) && *s)
        n = snprintf(buf, len, "%s/pdbx", s);
    else if ((s = getenv("HOME")) && *s)
        n = snprintf(buf, len, "%s/.local/share/pdbx", s);
    else {
        set_err(err, errlen, "no store directory: set PDBX_STORE, XDG_DATA_HOME or HOME, or pass --store DIR");
        return -1;
    }
    if (n < 0 || (size_t)n >= len) {
        set_err(err, errlen, "store directory path too long: %s...", s);
        return -1;
    }
    return 0;
}

/* mkdir -p */
static int make_dirs(const char *path, char *err, size_t errlen)
{
    char *p = strdup(path);
    if (!p) {
        set_err(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (char *q = p + 1;; q++) {
        if (*q == '/' || *q == '\0') {
            char c = *q;
            *q = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST) {
                set_err(err, errlen, "%s: cannot create directory: %s", p, strerror(errno));
                free(p);
                return -1;
            }
            *q = c;
            if (c == '\0')
                break;
        }
    }
    free(p);
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        set_err(err, errlen, "%s: not a directory", path);
        return -1;
    }
    return 0;
}

void pdbx_store_close(pdbx_store *st)
{
    if (!st)
        return;
    free(st->dir);
    free(st->runs);
    free(st->index);
    free(st);
}

int pdbx_store_open(const char *dir, int create, pdbx_store **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!dir || !*dir) {
        set_err(err, errlen, "store: empty directory name");
        return -1;
    }
    pdbx_store *st = calloc(1, sizeof *st);
    if (!st || !(st->dir = strdup(dir)) || !(st->runs = join(dir, "runs")) ||
        !(st->index = join(dir, "index.json"))) {
        set_err(err, errlen, "%s: out of memory", dir);
        pdbx_store_close(st);
        return -1;
    }
    size_t n = strlen(st->dir);
    while (n > 1 && st->dir[n - 1] == '/')
        st->dir[--n] = '\0';
    if (create) {
        if (make_dirs(st->runs, err, errlen) != 0) {
            pdbx_store_close(st);
            return -1;
        }
    } else {
        struct stat sb;
        if (stat(st->runs, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            set_err(err, errlen, "%s: not a pdbx store (no runs/ directory in it)", dir);
            pdbx_store_close(st);
            return -1;
        }
    }
    *out = st;
    return 0;
}

const char *pdbx_store_dir(const pdbx_store *st)
{
    return st->dir;
}

int pdbx_store_run_path(const pdbx_store *st, const char *id, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/%s%s", st->runs, id ? id : "", RUN_SUFFIX);
    return (n < 0 || (size_t)n >= len) ? -1 : 0;
}

static char *run_path_alloc(const pdbx_store *st, const char *id)
{
    size_t n = strlen(st->runs) + strlen(id) + sizeof RUN_SUFFIX + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s%s", st->runs, id, RUN_SUFFIX);
    return p;
}

/* ---- ids ----------------------------------------------------------------------------- */

void pdbx_store_new_id(char out[PDBX_RUN_ID_MAX])
{
    static unsigned counter;
    uint32_t rnd = 0;
    if (getentropy(&rnd, sizeof rnd) != 0) {
        /* No entropy source: time, pid and a counter still make clashes unlikely, and run
         * files are created O_EXCL anyway. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        rnd = (uint32_t)ts.tv_nsec * 2654435761u ^ (uint32_t)getpid() * 40503u ^ ++counter;
    }
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%d__%H-%M-%S", &tm);
    snprintf(out, PDBX_RUN_ID_MAX, "%s_%08" PRIx32, stamp, rnd);
}

/* Ids of every run file in runs/ (malloc'ed array of fixed-size names). */
typedef struct {
    char (*id)[PDBX_RUN_ID_MAX];
    size_t n, cap;
} id_list;

static int list_ids(const pdbx_store *st, id_list *l, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    DIR *d = opendir(st->runs);
    if (!d) {
        set_err(err, errlen, "%s: cannot read: %s", st->runs, strerror(errno));
        return -1;
    }
    struct dirent *e;
    char id[PDBX_RUN_ID_MAX];
    while ((e = readdir(d))) {
        if (!id_of_name(e->d_name, id))
            continue;
        if (l->n == l->cap) {
            size_t ncap = l->cap ? 2 * l->cap : 64;
            void *nid = realloc(l->id, ncap * sizeof *l->id);
            if (!nid) {
                set_err(err, errlen, "%s: out of memory listing runs", st->runs);
                closedir(d);
                free(l->id);
                memset(l, 0, sizeof *l);
                return -1;
            }
            l->id = nid;
            l->cap = ncap;
        }
        memcpy(l->id[l->n++], id, PDBX_RUN_ID_MAX);
    }
    closedir(d);
    return 0;
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

int pdbx_store_resolve(pdbx_store *st, const char *prefix, char out[PDBX_RUN_ID_MAX],
                       char *err, size_t errlen)
{
    if (!prefix || !*prefix) {
        set_err(err, errlen, "run id: empty; give a run id or a unique prefix of one (see pdbx ls)");
        return -1;
    }
    id_list l;
    if (list_ids(st, &l, err, errlen) != 0)
        return -1;
    if (l.n)
        qsort(l.id, l.n, sizeof *l.id, cmp_id);
    size_t plen = strlen(prefix), matches = 0, first = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (strcmp(l.id[i], prefix) == 0) {      /* a whole id wins over longer ids it prefixes */
            snprintf(out, PDBX_RUN_ID_MAX, "%s", l.id[i]);
            free(l.id);
            return 0;
        }
        if (strncmp(l.id[i], prefix, plen) == 0) {
            if (matches++ == 0)
                first = i;
        }
    }
    if (matches == 1) {
        snprintf(out, PDBX_RUN_ID_MAX, "%s", l.id[first]);
        free(l.id);
        return 0;
    }
    if (matches == 0) {
        set_err(err, errlen, "run '%s': no run in %s has this id or prefix (see pdbx ls)", prefix, st->dir);
    } else if (err && errlen) {
        int n = snprintf(err, errlen, "run '%s' is ambiguous: it prefixes %zu runs:", prefix, matches);
        size_t shown = 0;
        for (size_t i = first; i < l.n && n >= 0 && (size_t)n < errlen; i++) {
            if (strncmp(l.id[i], prefix, plen) != 0)
                continue;
            if (shown == 4) {
                n += snprintf(err + n, errlen - (size_t)n, " ... (%zu more)", matches - shown);
                break;
            }
            n += snprintf(err + n, errlen - (size_t)n, "%s %s", shown ? "," : "", l.id[i]);
            shown++;
        }
    }
    free(l.id);
    return -1;
}

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
        set_err(err, errlen, "run %s: out of memory", id);
        return NULL;
    }
    w->fd = -1;
    snprintf(w->id, sizeof w->id, "%s", id);
    if (!(w->path = run_path_alloc(st, id))) {
        set_err(err, errlen, "run %s: out of memory", id);
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
    if (id && !valid_id(id)) {
        set_err(err, errlen, "run id '%s': not allowed (1-%d of A-Z a-z 0-9 . _ -, not starting with '.')",
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
            set_err(err, errlen, "%s: cannot create run file: %s", w->path, strerror(e));
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
    if (!valid_id(id)) {
        set_err(err, errlen, "run id '%s': not a valid run id", id ? id : "");
        return -1;
    }
    pdbx_run_writer *w = writer_new(st, id, err, errlen);
    if (!w)
        return -1;
    w->fd = open(w->path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (w->fd < 0) {
        set_err(err, errlen, "%s: cannot open run for appending: %s", w->path, strerror(errno));
        goto fail;
    }
    pdbx_scan_result res;
    if (pdbx_scan_file(w->path, 0, NULL, NULL, &res, err, errlen) != 0)
        goto fail;
    if (res.corrupt) {
        set_err(err, errlen, "cannot append to a damaged run: %s", res.corrupt_msg);
        goto fail;
    }
    /* A crash left a partial frame: cut it so new frames follow whole ones. */
    struct stat sb;
    if (fstat(w->fd, &sb) != 0) {
        set_err(err, errlen, "%s: stat failed: %s", w->path, strerror(errno));
        goto fail;
    }
    if ((uint64_t)sb.st_size != res.next_offset) {
        if (ftruncate(w->fd, (off_t)res.next_offset) != 0 || fdatasync(w->fd) != 0) {
            set_err(err, errlen, "%s: cannot cut the torn tail at byte %llu: %s", w->path,
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
        set_err(err, errlen, "%s: %s", w->path, why);
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
        set_err(err, errlen, "%s: close failed: %s", w->path, strerror(errno));
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

/* 1 while a run without run_end counts as running (see store.h). */
static int launcher_alive(const char *host, long pid, double last_event)
{
    if (pid > 0 && same_host(host))
        return kill((pid_t)pid, 0) == 0 || errno == EPERM;
    return last_event > 0 && pdbx_now() - last_event < HEARTBEAT_TIMEOUT_S;
}

static void no_end_reason(char *buf, size_t len, const char *host, long pid, double last_event)
{
    if (pid > 0 && same_host(host))
        snprintf(buf, len, "no run end (launcher pid %ld on %s is gone)", pid, host);
    else if (last_event > 0)
        snprintf(buf, len, "no run end (last event %.0f s ago)", pdbx_now() - last_event);
    else
        snprintf(buf, len, "no run end (no events)");
}

void pdbx_run_refresh_liveness(pdbx_run *run)
{
    if (run->have_end || run->status == PDBX_RUN_CORRUPT)
        return;
    if (launcher_alive(run->host, run->pid, run->last_event)) {
        run->status = PDBX_RUN_RUNNING;
        run->end_reason[0] = '\0';
    } else {
        run->status = PDBX_RUN_FAILED;
        no_end_reason(run->end_reason, sizeof run->end_reason, run->host, run->pid, run->last_event);
    }
}

/* ---- loading ------------------------------------------------------------------------- */

typedef struct {
    pdbx_run *run;
    size_t index;      /* event number, for messages */
} load_ctx;

static int load_event(const cJSON *ev, void *vctx)
{
    load_ctx *c = vctx;
    char msg[200];
    if (pdbx_run_apply(c->run, ev, msg, sizeof msg) != 0) {
        /* A malformed event is reported in the run's warnings; the rest still folds. */
        pdbx_run *r = c->run;
        snprintf(r->warnings[r->nwarnings % PDBX_WARN_RING], sizeof r->warnings[0],
                 "event %zu ignored: %s", c->index, msg);
        r->nwarnings++;
    }
    c->index++;
    return 0;
}

static double mtime_of(const struct stat *sb)
{
    return (double)sb->st_mtim.tv_sec + (double)sb->st_mtim.tv_nsec * 1e-9;
}

int pdbx_run_load_file(const char *path, pdbx_run *run, char *err, size_t errlen)
{
    pdbx_run_init(run);
    load_ctx c = {run, 0};
    pdbx_scan_result res;
    uint64_t from = 0;
    int alive = 0;
    /* A launcher that appends run_end and exits between our scan and the liveness check
     * would make a finished run look crashed. So liveness is checked first and the file
     * afterwards: if the launcher is gone but the file grew past what we read, read the rest
     * (a dead launcher appends nothing more, so this ends). */
    for (int pass = 0;; pass++) {
        if (pdbx_scan_file(path, from, load_event, &c, &res, err, errlen) != 0) {
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
                run->last_event = mtime_of(&sb);
        }
        alive = launcher_alive(run->host, run->pid, run->last_event);
        struct stat sb;
        if (alive || pass >= 8 || stat(path, &sb) != 0 || (uint64_t)sb.st_size <= res.next_offset)
            break;
    }
    if (alive) {
        run->status = PDBX_RUN_RUNNING;
        run->end_reason[0] = '\0';
    } else {
        run->status = PDBX_RUN_FAILED;
        no_end_reason(run->end_reason, sizeof run->end_reason, run->host, run->pid, run->last_event);
    }
    return 0;
}

int pdbx_run_load(pdbx_store *st, const char *id, pdbx_run *run, char *err, size_t errlen)
{
    if (id && (strchr(id, '/') || (strlen(id) > strlen(RUN_SUFFIX) &&
                                   strcmp(id + strlen(id) - strlen(RUN_SUFFIX), RUN_SUFFIX) == 0))) {
        return pdbx_run_load_file(id, run, err, errlen);
    }
    char rid[PDBX_RUN_ID_MAX];
    if (!st) {
        pdbx_run_init(run);
        set_err(err, errlen, "run '%s': no store to look it up in", id ? id : "");
        return -1;
    }
    if (pdbx_store_resolve(st, id, rid, err, errlen) != 0) {
        pdbx_run_init(run);
        return -1;
    }
    char *path = run_path_alloc(st, rid);
    if (!path) {
        pdbx_run_init(run);
        set_err(err, errlen, "run %s: out of memory", rid);
        return -1;
    }
    int rc = pdbx_run_load_file(path, run, err, errlen);
    free(path);
    if (rc == 0)   /* the file name is the id (an import may have renamed it) */
        snprintf(run->id, sizeof run->id, "%s", rid);
    return rc;
}

/* ---- summaries and listing ----------------------------------------------------------- */

/* Measurement events a summary does not need; their frames are verified but not parsed.
 * The writer prints "type" first (cJSON keeps insertion order); any other spelling is simply
 * parsed and skipped in summary_event. */
static int summary_wants(const char *json, size_t len, void *ctx)
{
    (void)ctx;
    static const char *const skip[] = {"{\"type\":\"op\",", "{\"type\":\"trace\",",
                                       "{\"type\":\"comm\",", "{\"type\":\"coll\","};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++) {
        size_t n = strlen(skip[i]);
        if (len > n && memcmp(json, skip[i], n) == 0)
            return 0;
    }
    return 1;
}

/* Folds only what a summary needs: measurements (op, comm, trace, coll) are skipped. */
static int summary_event(const cJSON *ev, void *vctx)
{
    load_ctx *c = vctx;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
    const char *t = type->valuestring;
    if (strcmp(t, "op") == 0 || strcmp(t, "comm") == 0 || strcmp(t, "trace") == 0 ||
        strcmp(t, "coll") == 0 || strcmp(t, "warning") == 0) {
        const cJSON *tm = cJSON_GetObjectItemCaseSensitive(ev, "t");
        if (cJSON_IsNumber(tm) && tm->valuedouble > c->run->last_event)
            c->run->last_event = tm->valuedouble;
        c->index++;
        return 0;
    }
    return load_event(ev, vctx);
}

/* A summary message is short: a corruption message keeps the file name, not its directories. */
static void copy_message(char *dst, size_t cap, const char *src)
{
    const char *bad = strstr(src, ": bad frame at byte");
    if (bad) {
        for (const char *q = src; q < bad; q++)
            if (*q == '/')
                src = q + 1;
    }
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void summary_from_run(const pdbx_run *run, const char *id, const struct stat *sb,
                             pdbx_index_entry *e)
{
    memset(e, 0, sizeof *e);
    pdbx_run_summary *s = &e->sum;
    snprintf(s->id, sizeof s->id, "%s", id);
    s->created = run->created;
    snprintf(s->model, sizeof s->model, "%s", run->model.name);
    snprintf(s->backend, sizeof s->backend, "%s", run->backend);
    snprintf(s->gpu, sizeof s->gpu, "%s", run->gpu[0] ? run->gpu : (strcmp(run->backend, "cpu") == 0 ? "cpu" : ""));
    s->mbs_min = s->mbs_max = 0;
    for (size_t i = 0; i < run->npoints; i++) {
        const pdbx_point *p = &run->points[i];
        int k;
        for (k = 0; k < s->ntp; k++)
            if (s->tp[k] == p->tp)
                break;
        if (k == s->ntp && s->ntp < PDBX_SUMMARY_MAX_TP)
            s->tp[s->ntp++] = p->tp;
        if (p->mbs > 0 && (s->mbs_min == 0 || p->mbs < s->mbs_min))
            s->mbs_min = p->mbs;
        if (p->mbs > s->mbs_max)
            s->mbs_max = p->mbs;
    }
    qsort(s->tp, (size_t)s->ntp, sizeof s->tp[0], cmp_int);
    s->status = run->status;
    s->points_done = (int)pdbx_run_points_done(run);
    s->points_total = (int)run->npoints;
    s->size = (uint64_t)sb->st_size;
    if (run->status == PDBX_RUN_CORRUPT || run->status == PDBX_RUN_FAILED || run->status == PDBX_RUN_CANCELLED)
        copy_message(s->message, sizeof s->message, run->end_reason);
    e->mtime_ns = (int64_t)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec;
    e->ino = (uint64_t)sb->st_ino;
    e->have_end = run->have_end;
    snprintf(e->host, sizeof e->host, "%s", run->host);
    e->pid = run->pid;
    e->last_event = run->last_event;
}

/* Scans one run file into an index entry (status before liveness). 1 when the file vanished. */
static int scan_summary(const char *path, const char *id, pdbx_index_entry *e, char *err, size_t errlen)
{
    pdbx_run run;
    pdbx_run_init(&run);
    load_ctx c = {&run, 0};
    pdbx_scan_result res;
    struct stat sb;
    /* stat first: if the file grows meanwhile, its new mtime invalidates this entry later. */
    if (stat(path, &sb) != 0)
        return errno == ENOENT ? 1 : -1;
    if (pdbx_scan_file_filtered(path, 0, summary_wants, summary_event, &c, &res, err, errlen) != 0) {
        pdbx_run_free(&run);
        return access(path, F_OK) != 0 ? 1 : -1;
    }
    if (run.last_event == 0.0)
        run.last_event = mtime_of(&sb);
    if (res.corrupt) {
        run.status = PDBX_RUN_CORRUPT;
        snprintf(run.end_reason, sizeof run.end_reason, "%s", res.corrupt_msg);
    }
    summary_from_run(&run, id, &sb, e);
    pdbx_run_free(&run);
    return 0;
}

static int cmp_entry_id(const void *a, const void *b)
{
    return strcmp(((const pdbx_index_entry *)a)->sum.id, ((const pdbx_index_entry *)b)->sum.id);
}

static int cmp_summary_newest(const void *a, const void *b)
{
    const pdbx_run_summary *x = a, *y = b;
    if (x->created != y->created)
        return x->created < y->created ? 1 : -1;
    return -strcmp(x->id, y->id);
}

/* The summary to show: a run without run_end whose launcher is gone is listed as failed. */
static pdbx_run_summary live_summary(const pdbx_index_entry *e, int launcher_dead)
{
    pdbx_run_summary s = e->sum;
    if (s.status == PDBX_RUN_RUNNING && !e->have_end && launcher_dead) {
        s.status = PDBX_RUN_FAILED;
        no_end_reason(s.message, sizeof s.message, e->host, e->pid, e->last_event);
    }
    return s;
}

static int store_list(pdbx_store *st, int use_index, pdbx_run_summary **out, size_t *nout,
                      char *err, size_t errlen)
{
    pdbx_index_entry *old = NULL, *cur = NULL;
    int *dead = NULL;
    size_t nold = 0, ncur = 0;
    id_list ids = {0};
    int rc = -1, changed = !use_index;
    if (out)
        *out = NULL;
    if (nout)
        *nout = 0;

    if (use_index && pdbx_index_load(st->index, &old, &nold) != 0) {
        set_err(err, errlen, "%s: out of memory reading the index", st->index);
        goto done;
    }
    if (nold)
        qsort(old, nold, sizeof *old, cmp_entry_id);
    for (size_t i = 1; i < nold; i++)            /* duplicate ids: a damaged index */
        if (strcmp(old[i - 1].sum.id, old[i].sum.id) == 0)
            nold = 0;
    if (list_ids(st, &ids, err, errlen) != 0)
        goto done;
    cur = ids.n ? calloc(ids.n, sizeof *cur) : NULL;
    if (ids.n && !cur) {
        set_err(err, errlen, "%s: out of memory listing runs", st->runs);
        goto done;
    }
    for (size_t i = 0; i < ids.n; i++) {
        const char *id = ids.id[i];
        char *path = run_path_alloc(st, id);
        if (!path) {
            set_err(err, errlen, "%s: out of memory listing runs", st->runs);
            goto done;
        }
        struct stat sb;
        if (stat(path, &sb) != 0) {                /* deleted while listing */
            free(path);
            changed = 1;
            continue;
        }
        pdbx_index_entry key;
        snprintf(key.sum.id, sizeof key.sum.id, "%s", id);
        pdbx_index_entry *hit = nold ? bsearch(&key, old, nold, sizeof *old, cmp_entry_id) : NULL;
        int64_t mt = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
        if (hit && hit->sum.size == (uint64_t)sb.st_size && hit->mtime_ns == mt &&
            hit->ino == (uint64_t)sb.st_ino) {
            cur[ncur++] = *hit;
            free(path);
            continue;
        }
        changed = 1;
        char serr[256];
        int s = scan_summary(path, id, &cur[ncur], serr, sizeof serr);
        free(path);
        if (s == 1)
            continue;                               /* vanished meanwhile */
        if (s < 0) {
            /* Unreadable: listed as corrupt with the reason; never cached. */
            memset(&cur[ncur], 0, sizeof cur[ncur]);
            snprintf(cur[ncur].sum.id, sizeof cur[ncur].sum.id, "%s", id);
            cur[ncur].sum.status = PDBX_RUN_CORRUPT;
            cur[ncur].sum.size = (uint64_t)sb.st_size;
            cur[ncur].ino = UINT64_MAX;             /* never matches: rescanned next time */
            copy_message(cur[ncur].sum.message, sizeof cur[ncur].sum.message, serr);
        }
        ncur++;
    }
    if (ncur != nold)
        changed = 1;
    /* Liveness of runs without run_end: decided here, once. The launcher may append run_end
     * and exit after we scanned: so check the launcher first, then whether the file changed
     * since the scan; if it did, rescan, so a finished run never lists as crashed. */
    dead = ncur ? calloc(ncur, sizeof *dead) : NULL;
    if (ncur && !dead) {
        set_err(err, errlen, "%s: out of memory listing runs", st->runs);
        goto done;
    }
    for (size_t i = 0; i < ncur; i++) {
        pdbx_index_entry *e = &cur[i];
        for (int pass = 0; pass < 8; pass++) {
            if (e->sum.status != PDBX_RUN_RUNNING || e->have_end ||
                launcher_alive(e->host, e->pid, e->last_event))
                break;
            dead[i] = 1;
            char *path = run_path_alloc(st, e->sum.id);
            struct stat sb;
            pdbx_index_entry fresh;
            char serr[256];
            int grew = path && stat(path, &sb) == 0 && (uint64_t)sb.st_size != e->sum.size &&
                       scan_summary(path, e->sum.id, &fresh, serr, sizeof serr) == 0;
            free(path);
            if (!grew)
                break;
            *e = fresh;
            dead[i] = 0;
            changed = 1;
        }
    }
    if (changed) {
        /* The index is a cache: a read-only store still lists. */
        char ierr[256];
        (void)pdbx_index_save(st->index, cur, ncur, ierr, sizeof ierr);
    }
    if (out) {
        pdbx_run_summary *s = ncur ? calloc(ncur, sizeof *s) : NULL;
        if (ncur && !s) {
            set_err(err, errlen, "%s: out of memory listing runs", st->runs);
            goto done;
        }
        for (size_t i = 0; i < ncur; i++)
            s[i] = live_summary(&cur[i], dead[i]);
        if (ncur)
            qsort(s, ncur, sizeof *s, cmp_summary_newest);
        *out = s;
        *nout = ncur;
    }
    rc = 0;
done:
    free(dead);
    free(old);
    free(cur);
    free(ids.id);
    return rc;
}

int pdbx_store_list(pdbx_store *st, pdbx_run_summary **out, size_t *n, char *err, size_t errlen)
{
    return store_list(st, 1, out, n, err, errlen);
}

int pdbx_store_rebuild_index(pdbx_store *st, char *err, size_t errlen)
{
    if (unlink(st->index) != 0 && errno != ENOENT) {
        set_err(err, errlen, "%s: cannot remove: %s", st->index, strerror(errno));
        return -1;
    }
    if (store_list(st, 0, NULL, NULL, err, errlen) != 0)
        return -1;
    struct stat sb;
    if (stat(st->index, &sb) != 0) {
        set_err(err, errlen, "%s: index not written (is the store writable?)", st->index);
        return -1;
    }
    return 0;
}

/* ---- delete, record, import ---------------------------------------------------------- */

int pdbx_store_delete(pdbx_store *st, const char *id, char *err, size_t errlen)
{
    if (!valid_id(id)) {
        set_err(err, errlen, "run id '%s': not a valid run id", id ? id : "");
        return -1;
    }
    char *path = run_path_alloc(st, id);
    if (!path) {
        set_err(err, errlen, "run %s: out of memory", id);
        return -1;
    }
    if (unlink(path) != 0) {
        if (errno == ENOENT)
            set_err(err, errlen, "run %s: no such run in %s", id, st->dir);
        else
            set_err(err, errlen, "%s: cannot delete: %s", path, strerror(errno));
        free(path);
        return -1;
    }
    free(path);
    if (pdbx_fsync_dir(st->runs, err, errlen) != 0)
        return -1;
    /* Drop it from the index now (a later list would too). */
    pdbx_index_entry *e = NULL;
    size_t n = 0;
    if (pdbx_index_load(st->index, &e, &n) == 0 && n > 0) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (strcmp(e[i].sum.id, id) != 0)
                e[k++] = e[i];
        if (k != n) {
            char ierr[256];
            (void)pdbx_index_save(st->index, e, k, ierr, sizeof ierr);
        }
    }
    free(e);
    return 0;
}

/* Copies bytes [0, len) of src to the durable file f. */
static int copy_prefix(const char *src, uint64_t len, pdbx_durable_file *f, char *err, size_t errlen)
{
    int fd = open(src, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, errlen, "%s: cannot open: %s", src, strerror(errno));
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
            set_err(err, errlen, "%s: read failed at byte %llu: %s", src, (unsigned long long)off,
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
    char *path = run_path_alloc(st, rid);
    if (!path) {
        set_err(err, errlen, "run %s: out of memory", rid);
        return -1;
    }
    int rc = -1;
    pdbx_scan_result res;
    if (pdbx_scan_file(path, 0, NULL, NULL, &res, err, errlen) != 0)
        goto done;
    if (res.corrupt) {
        set_err(err, errlen, "run %s is damaged, not recorded: %s", rid, res.corrupt_msg);
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
    snprintf(p->first_type, sizeof p->first_type, "%s",
             cJSON_GetObjectItemCaseSensitive(ev, "type")->valuestring);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(ev, "id");
    if (cJSON_IsString(id) && valid_id(id->valuestring))
        snprintf(p->id, sizeof p->id, "%s", id->valuestring);
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
        set_err(err, errlen, "not imported: %s", res.corrupt_msg);
        return -1;
    }
    if (res.events == 0) {
        set_err(err, errlen, "%s: no events: not a pdbx run file or recording", file);
        return -1;
    }
    if (strcmp(probe.first_type, "run_start") != 0) {
        set_err(err, errlen, "%s: first event is \"%s\", expected \"run_start\"", file, probe.first_type);
        return -1;
    }
    /* Validate the whole file (the probe stopped early) and find its whole-frame length. */
    if (pdbx_scan_file(file, 0, NULL, NULL, &res, err, errlen) != 0)
        return -1;
    if (res.corrupt) {
        set_err(err, errlen, "not imported: %s", res.corrupt_msg);
        return -1;
    }

    /* Copy to a hidden temp in runs/ (never listed), then link() it to its name: link fails
     * when the name is taken, so an existing run is never replaced. */
    char *tmp = join(st->runs, ".import-XXXXXX");
    char *target = NULL;
    int fd = -1, rc = -1;
    if (!tmp) {
        set_err(err, errlen, "%s: out of memory", file);
        return -1;
    }
    fd = mkstemp(tmp);
    if (fd < 0) {
        set_err(err, errlen, "%s: cannot create a temp file: %s", st->runs, strerror(errno));
        free(tmp);
        return -1;
    }
    fchmod(fd, 0644);
    {
        int src = open(file, O_RDONLY | O_CLOEXEC);
        if (src < 0) {
            set_err(err, errlen, "%s: cannot open: %s", file, strerror(errno));
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
                set_err(err, errlen, "%s: copying %s failed at byte %llu: %s", tmp, file,
                        (unsigned long long)off, r < 0 ? strerror(errno) : "short read or write");
                close(src);
                goto fail;
            }
            off += (uint64_t)r;
        }
        close(src);
    }
    if (fsync(fd) != 0) {
        set_err(err, errlen, "%s: fsync failed: %s", tmp, strerror(errno));
        goto fail;
    }
    char id[PDBX_RUN_ID_MAX];
    if (probe.id[0])
        snprintf(id, sizeof id, "%s", probe.id);
    else
        pdbx_store_new_id(id);
    for (int attempt = 0;; attempt++) {
        free(target);
        target = run_path_alloc(st, id);
        if (!target) {
            set_err(err, errlen, "%s: out of memory", file);
            goto fail;
        }
        if (link(tmp, target) == 0)
            break;
        if (errno != EEXIST || attempt >= 8) {
            set_err(err, errlen, "%s: cannot create: %s", target, strerror(errno));
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
