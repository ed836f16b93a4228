/* store_list.c: run summaries and listing. A summary comes from index.json while the run
 * file's (size, mtime, inode) are unchanged; changed or new runs are rescanned (verifying
 * every frame, parsing only what a summary needs) and the index is rewritten durably.
 */
#include "store/util/err.h"
#include "store/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "store/events.h"
#include "store/progress.h"
#include "store/store_frames.h"
#include "store/store_impl.h"
#include "store/store_index.h"

/* ---- summaries and listing ----------------------------------------------------------- */

/* Measurement events a summary does not need (warnings only move last_event). */
static const pdbx_event_type summary_skips[] = {PDBX_EV_OP, PDBX_EV_STEP, PDBX_EV_TRACE,
                                                PDBX_EV_COMM, PDBX_EV_COLL};

/* Frames of measurement events are verified but not parsed. An event spelled otherwise than
 * the encoders write it is simply parsed and skipped in summary_event. */
static int summary_wants(const char *json, size_t len, void *ctx)
{
    store_load_ctx *c = ctx;
    for (size_t i = 0; i < sizeof summary_skips / sizeof summary_skips[0]; i++)
        if (pdbx_event_raw_is(json, len, summary_skips[i])) {
            if (summary_skips[i] == PDBX_EV_COLL)    /* the progress model counts them */
                c->run->progress.coll_done++;
            return 0;
        }
    return 1;
}

/* Folds only what a summary needs: measurements and warnings are skipped. */
static int summary_event(const cJSON *ev, void *vctx)
{
    store_load_ctx *c = vctx;
    pdbx_event_type t = pdbx_event_type_of(ev);
    int skip = t == PDBX_EV_WARNING;
    for (size_t i = 0; i < sizeof summary_skips / sizeof summary_skips[0]; i++)
        skip |= t == summary_skips[i];
    if (skip) {
        double tm;
        if (t == PDBX_EV_COLL)
            c->run->progress.coll_done++;
        if (pdbx_event_time(ev, &tm) && tm > c->run->last_event)
            c->run->last_event = tm;
        c->index++;
        return 0;
    }
    return store_load_event(ev, vctx);
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

/* [[index, tp, mbs, status], ...] of the run's points (NULL when out of memory). */
static cJSON *points_state(const pdbx_run *run)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < run->npoints; i++) {
        const pdbx_point *p = &run->points[i];
        int v[4] = {p->index, p->tp, p->mbs, (int)p->status};
        cJSON *t = cJSON_CreateIntArray(v, 4);
        if (!t) {
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddItemToArray(a, t);
    }
    return a;
}

/* Fills e from a folded run; scanned: whole-frame bytes folded (where a resume starts). */
static void summary_from_run(const pdbx_run *run, const char *id, const struct stat *sb,
                             uint64_t scanned, pdbx_index_entry *e)
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
    snprintf(s->launcher, sizeof s->launcher, "%s", run->launcher);
    s->status = run->status;
    s->points_done = (int)pdbx_run_points_done(run);
    s->points_total = (int)run->npoints;
    pdbx_progress pg;
    pdbx_progress_of(run, run->last_event, &pg);     /* the percentage needs no clock */
    s->percent = pg.percent;
    pdbx_run_noise_summary ns;
    pdbx_run_noise_of(run, &ns);
    s->noise_points = ns.points;
    s->busy_points = ns.busy;
    e->layers = run->layers_profiled;
    e->coll_done = run->progress.coll_done;
    e->coll_total = run->progress.coll_total;
    s->size = (uint64_t)sb->st_size;
    if (run->status == PDBX_RUN_CORRUPT || run->status == PDBX_RUN_FAILED || run->status == PDBX_RUN_CANCELLED)
        copy_message(s->message, sizeof s->message, run->end_reason);
    e->mtime_ns = (int64_t)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec;
    e->ino = (uint64_t)sb->st_ino;
    e->have_end = run->have_end;
    snprintf(e->host, sizeof e->host, "%s", run->host);
    e->pid = run->pid;
    e->pid_start = run->pid_start;
    snprintf(e->boot_id, sizeof e->boot_id, "%s", run->boot_id);
    e->last_event = run->last_event;
    /* A run that may still grow keeps what a resumed scan needs (NULL on OOM: full rescan). */
    if (!run->have_end && run->status == PDBX_RUN_RUNNING && scanned > 0) {
        e->resume_points = points_state(run);
        e->scan_offset = e->resume_points ? scanned : 0;
    }
}

/* Rebuilds the fold state of a growing run from its index entry (see store_index.h). */
static int run_from_entry(const pdbx_index_entry *e, pdbx_run *run)
{
    pdbx_run_init(run);
    snprintf(run->id, sizeof run->id, "%s", e->sum.id);
    snprintf(run->model.name, sizeof run->model.name, "%s", e->sum.model);
    snprintf(run->backend, sizeof run->backend, "%s", e->sum.backend);
    snprintf(run->gpu, sizeof run->gpu, "%s", e->sum.gpu);
    snprintf(run->launcher, sizeof run->launcher, "%s", e->sum.launcher);
    snprintf(run->host, sizeof run->host, "%s", e->host);
    run->created = e->sum.created;
    run->layers_profiled = e->layers;
    run->progress.coll_done = e->coll_done;
    run->progress.coll_total = e->coll_total;
    run->pid = e->pid;
    run->pid_start = e->pid_start;
    snprintf(run->boot_id, sizeof run->boot_id, "%s", e->boot_id);
    run->last_event = e->last_event;
    size_t n = (size_t)cJSON_GetArraySize(e->resume_points);
    if (n > 0 && !(run->points = calloc(n, sizeof *run->points)))
        return -1;
    const cJSON *p;
    cJSON_ArrayForEach(p, e->resume_points) {
        pdbx_point *pt = &run->points[run->npoints++];
        pt->index = cJSON_GetArrayItem(p, 0)->valueint;
        pt->tp = cJSON_GetArrayItem(p, 1)->valueint;
        pt->mbs = cJSON_GetArrayItem(p, 2)->valueint;
        pt->status = (pdbx_point_status)cJSON_GetArrayItem(p, 3)->valueint;
    }
    return 0;
}

/* Scans one run file into an index entry (status before liveness): from the start, or, when
 * prev is given, only the frames after prev->scan_offset folded onto prev's state.
 * Returns 1 when the file vanished. */
static int scan_summary(const char *path, const char *id, const pdbx_index_entry *prev,
                        pdbx_index_entry *e, char *err, size_t errlen)
{
    pdbx_run run;
    store_load_ctx c = {&run, 0};
    pdbx_scan_result res;
    struct stat sb;
    /* stat first: if the file grows meanwhile, its new mtime invalidates this entry later. */
    if (stat(path, &sb) != 0)
        return errno == ENOENT ? 1 : -1;
    uint64_t from = 0;
    if (prev) {
        if (run_from_entry(prev, &run) != 0) {
            pdbx_run_free(&run);
            pdbx_errf(err, errlen, "%s: out of memory", path);
            return -1;
        }
        from = prev->scan_offset;
    } else {
        pdbx_run_init(&run);
    }
    if (pdbx_scan_file_filtered(path, from, summary_wants, summary_event, &c, &res, err, errlen) != 0) {
        pdbx_run_free(&run);
        return access(path, F_OK) != 0 ? 1 : -1;
    }
    if (run.last_event == 0.0)
        run.last_event = store_mtime_of(&sb);
    if (res.corrupt) {
        run.status = PDBX_RUN_CORRUPT;
        snprintf(run.end_reason, sizeof run.end_reason, "%s", res.corrupt_msg);
    }
    summary_from_run(&run, id, &sb, res.next_offset, e);
    if (prev) {     /* the resumed fold holds only the points ended after prev's offset */
        e->sum.noise_points += prev->sum.noise_points;
        e->sum.busy_points += prev->sum.busy_points;
    }
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
static pdbx_run_summary live_summary(const pdbx_store *st, const pdbx_index_entry *e,
                                     int launcher_dead)
{
    pdbx_run_summary s = e->sum;
    if (s.status == PDBX_RUN_RUNNING && !e->have_end && launcher_dead) {
        s.status = PDBX_RUN_FAILED;
        char *path = store_run_path_alloc(st, e->sum.id);
        store_launcher l = { e->host, e->pid, e->pid_start, e->boot_id, e->last_event, path,
                             e->sum.launcher };
        store_no_end_reason(s.message, sizeof s.message, &l);
        free(path);
    }
    return s;
}

/* The old index, sorted by id; *n = 0 when it is damaged (duplicate ids). */
static int load_old_index(const pdbx_store *st, pdbx_index_entry **old, size_t *n, size_t *nalloc,
                          char *err, size_t errlen)
{
    if (pdbx_index_load(st->index, old, n) != 0)
        return pdbx_fail(err, errlen, "%s: out of memory reading the index", st->index);
    *nalloc = *n;
    if (*n)
        qsort(*old, *n, sizeof **old, cmp_entry_id);
    for (size_t i = 1; i < *nalloc; i++)
        if (strcmp((*old)[i - 1].sum.id, (*old)[i].sum.id) == 0)
            *n = 0;
    return 0;
}

/* An entry for a run file that could not be read (status UNREADABLE or CORRUPT, the reason in
 * the message); never cached: the next listing looks again. */
static void unread_entry(pdbx_index_entry *e, const char *id, const struct stat *sb,
                         pdbx_run_status status, const char *why)
{
    memset(e, 0, sizeof *e);
    snprintf(e->sum.id, sizeof e->sum.id, "%s", id);
    e->sum.status = status;
    e->sum.size = S_ISREG(sb->st_mode) ? (uint64_t)sb->st_size : 0;
    e->ino = UINT64_MAX;                            /* never matches: rescanned next time */
    copy_message(e->sum.message, sizeof e->sum.message, why);
}

/* What kind of file a non-regular entry of runs/ is, for its message. */
static const char *file_kind(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISDIR(m) ? "a directory" : S_ISSOCK(m) ? "a socket" :
           S_ISCHR(m) || S_ISBLK(m) ? "a device" : "not a file";
}

/* The entry of run id into *e: the cached one while its file is unchanged, else a (resumed)
 * scan. A FIFO, device or directory named like a run is never opened (opening a FIFO blocks
 * until a writer comes: `pdbx ls` hung): it is listed as unreadable, skipped, with what it is. Returns 0, 1 when the run is gone (deleted while listing), -1 out of memory. Sets
 * *changed when the index must be rewritten. */
static int entry_for(const pdbx_store *st, const char *id, pdbx_index_entry *old, size_t nold,
                     pdbx_index_entry *e, int *changed)
{
    char *path = store_run_path_alloc(st, id);
    struct stat sb;
    if (!path)
        return -1;
    if (stat(path, &sb) != 0) {
        free(path);
        *changed = 1;
        return 1;
    }
    if (!S_ISREG(sb.st_mode)) {
        char why[96];
        snprintf(why, sizeof why, "skipped: not a regular file (%s)", file_kind(sb.st_mode));
        unread_entry(e, id, &sb, PDBX_RUN_UNREADABLE, why);
        free(path);
        *changed = 1;
        return 0;
    }
    pdbx_index_entry key;
    snprintf(key.sum.id, sizeof key.sum.id, "%s", id);
    pdbx_index_entry *hit = nold ? bsearch(&key, old, nold, sizeof *old, cmp_entry_id) : NULL;
    int64_t mt = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    if (hit && hit->sum.size == (uint64_t)sb.st_size && hit->mtime_ns == mt &&
        hit->ino == (uint64_t)sb.st_ino) {
        *e = *hit;                                  /* moves the resume state too */
        hit->resume_points = NULL;
        free(path);
        return 0;
    }
    *changed = 1;
    /* Appended to since (same file, not shorter than what was folded): fold the rest. */
    const pdbx_index_entry *prev = hit && hit->resume_points && hit->ino == (uint64_t)sb.st_ino &&
                                   (uint64_t)sb.st_size >= hit->scan_offset ? hit : NULL;
    char serr[256];
    int s = scan_summary(path, id, prev, e, serr, sizeof serr);
    /* A file this user may not read is not damaged: say so (root reads it regardless). */
    int denied = s < 0 && access(path, R_OK) != 0 && errno == EACCES;
    free(path);
    if (s < 0)
        unread_entry(e, id, &sb, denied ? PDBX_RUN_UNREADABLE : PDBX_RUN_CORRUPT,
                     denied ? "permission denied (the run file is not readable by this user)" : serr);
    return s == 1;
}

/* Liveness of a run without run_end, decided once: 1 when its launcher is gone. The launcher
 * may append run_end and exit after we scanned: so check the launcher first, then whether the
 * file changed since the scan; if it did, rescan, so a finished run never lists as crashed. */
static int launcher_dead(const pdbx_store *st, pdbx_index_entry *e, int *changed)
{
    for (int pass = 0; pass < 8; pass++) {
        if (e->sum.status != PDBX_RUN_RUNNING || e->have_end ||
            store_launcher_alive(&(store_launcher){ e->host, e->pid, e->pid_start, e->boot_id,
                                                    e->last_event, NULL, e->sum.launcher }))
            return 0;
        char *path = store_run_path_alloc(st, e->sum.id);
        struct stat sb;
        pdbx_index_entry fresh;
        char serr[256];
        int grew = path && stat(path, &sb) == 0 && (uint64_t)sb.st_size != e->sum.size &&
                   scan_summary(path, e->sum.id, NULL, &fresh, serr, sizeof serr) == 0;
        free(path);
        if (!grew)
            return 1;
        pdbx_index_entry_clear(e);
        *e = fresh;
        *changed = 1;
    }
    return 1;
}

/* The summaries to show, newest first (malloc'ed; NULL when n == 0). */
static int summaries_of(const pdbx_store *st, pdbx_index_entry *cur, size_t n, const int *dead,
                        pdbx_run_summary **out, char *err, size_t errlen)
{
    pdbx_run_summary *s = n ? calloc(n, sizeof *s) : NULL;
    if (n && !s)
        return pdbx_fail(err, errlen, "%s: out of memory listing runs", st->runs);
    for (size_t i = 0; i < n; i++)
        s[i] = live_summary(st, &cur[i], dead[i]);
    if (n)
        qsort(s, n, sizeof *s, cmp_summary_newest);
    *out = s;
    return 0;
}

static int list_runs(pdbx_store *st, int use_index, pdbx_run_summary **out, size_t *nout,
                     char *err, size_t errlen)
{
    pdbx_index_entry *old = NULL, *cur = NULL;
    int *dead = NULL;
    size_t nold = 0, nold_alloc = 0, ncur = 0;
    store_id_list ids = {0};
    int rc = -1, changed = !use_index;
    if (out)
        *out = NULL;
    if (nout)
        *nout = 0;
    if ((use_index && load_old_index(st, &old, &nold, &nold_alloc, err, errlen) != 0) ||
        store_list_ids(st, &ids, err, errlen) != 0)
        goto done;
    cur = ids.n ? calloc(ids.n, sizeof *cur) : NULL;
    dead = ids.n ? calloc(ids.n, sizeof *dead) : NULL;
    if (ids.n && (!cur || !dead))
        goto oom;
    for (size_t i = 0; i < ids.n; i++) {
        int s = entry_for(st, ids.id[i], old, nold, &cur[ncur], &changed);
        if (s < 0)
            goto oom;
        ncur += s == 0;
    }
    changed |= ncur != nold;
    for (size_t i = 0; i < ncur; i++)
        dead[i] = launcher_dead(st, &cur[i], &changed);
    if (changed) {
        /* The index is a cache: a read-only store still lists. */
        char ierr[256];
        (void)pdbx_index_save(st->index, cur, ncur, ierr, sizeof ierr);
    }
    if (out && summaries_of(st, cur, ncur, dead, out, err, errlen) != 0)
        goto done;
    if (nout)
        *nout = out ? ncur : 0;
    rc = 0;
    goto done;
oom:
    pdbx_errf(err, errlen, "%s: out of memory listing runs", st->runs);
done:
    free(dead);
    pdbx_index_free(old, nold_alloc);
    pdbx_index_free(cur, ncur);
    free(ids.id);
    return rc;
}

int pdbx_store_list(pdbx_store *st, pdbx_run_summary **out, size_t *n, char *err, size_t errlen)
{
    return list_runs(st, 1, out, n, err, errlen);
}

int pdbx_store_rebuild_index(pdbx_store *st, char *err, size_t errlen)
{
    if (unlink(st->index) != 0 && errno != ENOENT) {
        pdbx_errf(err, errlen, "%s: cannot remove: %s", st->index, strerror(errno));
        return -1;
    }
    if (list_runs(st, 0, NULL, NULL, err, errlen) != 0)
        return -1;
    struct stat sb;
    if (stat(st->index, &sb) != 0) {
        pdbx_errf(err, errlen, "%s: index not written (is the store writable?)", st->index);
        return -1;
    }
    return 0;
}
