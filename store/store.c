/* store.c: the store directory: open, default dir, run ids, prefix resolution and delete
 * (see store.h; the module map is in store_impl.h).
 */
#include "store/util/err.h"
#include "store/store.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "store/layout.h"
#include "store/util/fs.h"
#include "store/store_impl.h"
#include "store/store_index.h"


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
        pdbx_errf(err, errlen, "no store directory: set PDBX_STORE, XDG_DATA_HOME or HOME, or pass --store DIR");
        return -1;
    }
    if (n < 0 || (size_t)n >= len) {
        pdbx_errf(err, errlen, "store directory path too long: %s...", s);
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
        pdbx_errf(err, errlen, "store: empty directory name");
        return -1;
    }
    pdbx_store *st = calloc(1, sizeof *st);
    if (!st || !(st->dir = strdup(dir))) {
        pdbx_errf(err, errlen, "%s: out of memory", dir);
        pdbx_store_close(st);
        return -1;
    }
    size_t n = strlen(st->dir);
    while (n > 1 && st->dir[n - 1] == '/')
        st->dir[--n] = '\0';
    if (!(st->runs = pdbx_layout_path_alloc(PDBX_PATH_RUNS, st->dir, NULL)) ||
        !(st->index = pdbx_layout_path_alloc(PDBX_PATH_INDEX, st->dir, NULL))) {
        pdbx_errf(err, errlen, "%s: out of memory", dir);
        pdbx_store_close(st);
        return -1;
    }
    if (create) {
        if (pdbx_mkdirs(st->runs, err, errlen) != 0) {
            pdbx_store_close(st);
            return -1;
        }
    } else {
        struct stat sb;
        if (stat(st->runs, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            pdbx_errf(err, errlen, "%s: not a pdbx store (no runs/ directory in it)", dir);
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
    return pdbx_layout_path(PDBX_PATH_RUN, st->dir, id, buf, len);
}

char *store_run_path_alloc(const pdbx_store *st, const char *id)
{
    return pdbx_layout_path_alloc(PDBX_PATH_RUN, st->dir, id);
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

int store_list_ids(const pdbx_store *st, store_id_list *l, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    DIR *d = opendir(st->runs);
    if (!d) {
        pdbx_errf(err, errlen, "%s: cannot read: %s", st->runs, strerror(errno));
        return -1;
    }
    struct dirent *e;
    char id[PDBX_RUN_ID_MAX];
    while ((e = readdir(d))) {
        if (!pdbx_layout_run_id_of_name(e->d_name, id))
            continue;
        if (l->n == l->cap) {
            size_t ncap = l->cap ? 2 * l->cap : 64;
            void *nid = realloc(l->id, ncap * sizeof *l->id);
            if (!nid) {
                pdbx_errf(err, errlen, "%s: out of memory listing runs", st->runs);
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
        pdbx_errf(err, errlen, "run id: empty; give a run id or a unique prefix of one (see pdbx ls)");
        return -1;
    }
    store_id_list l;
    if (store_list_ids(st, &l, err, errlen) != 0)
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
        pdbx_errf(err, errlen, "run '%s': no run in %s has this id or prefix (see pdbx ls)", prefix, st->dir);
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

/* ---- delete -------------------------------------------------------------------------- */

/* The run's supervisor log and launched spec (logs/<id>.log, logs/<id>.spec.json): a run
 * launched from elsewhere, or imported, has none, which is fine. */
static int delete_logs(pdbx_store *st, const char *id, char *err, size_t errlen)
{
    static const pdbx_layout_what logs[] = { PDBX_PATH_LOG, PDBX_PATH_SPEC, PDBX_PATH_STOP };
    int removed = 0;
    for (size_t i = 0; i < sizeof logs / sizeof logs[0]; i++) {
        char *p = pdbx_layout_path_alloc(logs[i], st->dir, id);
        if (!p) {
            pdbx_errf(err, errlen, "run %s: out of memory", id);
            return -1;
        }
        if (unlink(p) == 0) {
            removed = 1;
        } else if (errno != ENOENT) {
            pdbx_errf(err, errlen, "%s: cannot delete: %s", p, strerror(errno));
            free(p);
            return -1;
        }
        free(p);
    }
    char *dir = removed ? pdbx_layout_path_alloc(PDBX_PATH_LOGS, st->dir, NULL) : NULL;
    int rc = dir ? pdbx_fsync_dir(dir, err, errlen) : 0;
    free(dir);
    return rc;
}

int pdbx_store_delete(pdbx_store *st, const char *id, char *err, size_t errlen)
{
    if (!pdbx_layout_valid_id(id)) {
        pdbx_errf(err, errlen, "run id '%s': not a valid run id", id ? id : "");
        return -1;
    }
    char *path = store_run_path_alloc(st, id);
    if (!path) {
        pdbx_errf(err, errlen, "run %s: out of memory", id);
        return -1;
    }
    if (unlink(path) != 0) {
        if (errno == ENOENT)
            pdbx_errf(err, errlen, "run %s: no such run in %s", id, st->dir);
        else
            pdbx_errf(err, errlen, "%s: cannot delete: %s", path, strerror(errno));
        free(path);
        return -1;
    }
    free(path);
    /* the run's validations (validation.h) go with it */
    char *vpath = pdbx_layout_path_alloc(PDBX_PATH_VALIDATIONS, st->dir, id);
    if (!vpath) {
        pdbx_errf(err, errlen, "run %s: out of memory", id);
        return -1;
    }
    if (unlink(vpath) != 0 && errno != ENOENT) {
        pdbx_errf(err, errlen, "%s: cannot delete: %s", vpath, strerror(errno));
        free(vpath);
        return -1;
    }
    free(vpath);
    if (pdbx_fsync_dir(st->runs, err, errlen) != 0)
        return -1;
    if (delete_logs(st, id, err, errlen) != 0)
        return -1;
    /* Drop it from the index now (a later list would too). */
    pdbx_index_entry *e = NULL;
    size_t n = 0;
    if (pdbx_index_load(st->index, &e, &n) == 0 && n > 0) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(e[i].sum.id, id) != 0)
                e[k++] = e[i];
            else
                pdbx_index_entry_clear(&e[i]);
        }
        if (k != n) {
            char ierr[256];
            (void)pdbx_index_save(st->index, e, k, ierr, sizeof ierr);
        }
        n = k;
    }
    pdbx_index_free(e, n);
    return 0;
}
