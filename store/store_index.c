/* store_index.c: reading and writing DIR/index.json (see store_index.h).
 *
 * Format: {"version":1,"runs":[{"id":..,"size":..,"mtime_ns":..,"ino":..,"status":"running",
 *          "have_end":false,"host":..,"pid":..,"last_event":..,"created":..,"model":..,
 *          "backend":..,"gpu":..,"tp":[1,2],"mbs_min":1,"mbs_max":128,"points_done":3,
 *          "points_total":16,"percent":20,"layers":8,"coll_done":0,"coll_total":24,"message":"",
 *          "noise_points":16,"busy_points":2},
 *          ...]}
 * (percent, layers, coll_done and coll_total: the progress model's, store/progress.h;
 * noise_points and busy_points: pdbx_run_noise_of's counts; an entry without them, from an
 * older pdbx, is dropped and its run rescanned once.)
 * 64-bit integers above 2^53 (mtime_ns) do not fit a JSON double exactly, so mtime_ns and ino
 * are written as decimal strings.
 */
#include "store/store_index.h"

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "store/json_fields.h"
#include "store/util/fs.h"

#define INDEX_VERSION 1

static int get_u64str(const cJSON *o, const char *name, uint64_t *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsString(it) || !it->valuestring[0])
        return 0;
    char *end = NULL;
    unsigned long long v = strtoull(it->valuestring, &end, 10);
    if (!end || *end)
        return 0;
    *out = (uint64_t)v;
    return 1;
}

static int status_from_name(const char *s)
{
    for (int i = PDBX_RUN_RUNNING; i <= PDBX_RUN_UNREADABLE; i++)
        if (strcmp(s, pdbx_run_status_name((pdbx_run_status)i)) == 0)
            return i;
    return -1;
}

/* [[index, tp, mbs, status], ...]: integers in range and a known point status. */
static int resume_points_ok(const cJSON *rp)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, rp) {
        if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 4)
            return 0;
        const cJSON *v;
        int k = 0;
        cJSON_ArrayForEach(v, p) {
            double max = k == 3 ? (double)PDBX_POINT_SKIPPED : 1e9;
            if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= max) ||
                v->valuedouble != (double)(int)v->valuedouble)
                return 0;
            k++;
        }
    }
    return 1;
}

/* 0 when the entry is complete and sane, -1 to drop it. */
static int entry_from_json(cJSON *j, pdbx_index_entry *e)
{
    memset(e, 0, sizeof *e);
    char status[16];
    double size, created, pid, last, done, total, mmin, mmax, pct, layers, cdone, ctotal, npts, busy;
    uint64_t mt;
    if (!cJSON_IsObject(j) || !jf_strbuf(j, "id", e->sum.id, sizeof e->sum.id) || !e->sum.id[0] ||
        !jf_num(j, "size", &size) || size < 0 || !get_u64str(j, "mtime_ns", &mt) ||
        !get_u64str(j, "ino", &e->ino) || !jf_strbuf(j, "status", status, sizeof status) ||
        !jf_num(j, "created", &created) || !jf_num(j, "pid", &pid) ||
        !jf_num(j, "last_event", &last) || !jf_num(j, "points_done", &done) ||
        !jf_num(j, "points_total", &total) || !jf_num(j, "mbs_min", &mmin) ||
        !jf_num(j, "percent", &pct) || !jf_num(j, "layers", &layers) ||
        !jf_num(j, "coll_done", &cdone) || !jf_num(j, "coll_total", &ctotal) ||
        !jf_num(j, "noise_points", &npts) || !jf_num(j, "busy_points", &busy) ||
        !jf_num(j, "mbs_max", &mmax) || !jf_strbuf(j, "host", e->host, sizeof e->host) ||
        !jf_strbuf(j, "model", e->sum.model, sizeof e->sum.model) ||
        !jf_strbuf(j, "backend", e->sum.backend, sizeof e->sum.backend) ||
        !jf_strbuf(j, "gpu", e->sum.gpu, sizeof e->sum.gpu) ||
        !jf_strbuf(j, "message", e->sum.message, sizeof e->sum.message))
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(j, "launcher") &&      /* written only when known */
        !jf_strbuf(j, "launcher", e->sum.launcher, sizeof e->sum.launcher))
        return -1;
    /* counts, sizes and pids in range (a damaged index must not overflow a conversion) */
    if (!(size <= 9.0e18) || !(done >= 0 && done <= 1e9) || !(total >= 0 && total <= 1e9) ||
        !(mmin >= 0 && mmin <= 1e9) || !(mmax >= 0 && mmax <= 1e9) || !(pid >= 0 && pid <= 2147483647.0) ||
        !(pct >= 0 && pct <= 100) || !(layers >= 0 && layers <= 1e6) || !(cdone >= 0 && cdone <= 1e9) ||
        !(ctotal >= 0 && ctotal <= 1e9) || !(npts >= 0 && npts <= 1e9) || !(busy >= 0 && busy <= npts))
        return -1;
    int st = status_from_name(status);
    const cJSON *he = cJSON_GetObjectItemCaseSensitive(j, "have_end");
    const cJSON *tp = cJSON_GetObjectItemCaseSensitive(j, "tp");
    if (st < 0 || !cJSON_IsBool(he) || !cJSON_IsArray(tp) || cJSON_GetArraySize(tp) > PDBX_SUMMARY_MAX_TP)
        return -1;
    const cJSON *t;
    cJSON_ArrayForEach(t, tp) {
        if (!cJSON_IsNumber(t))
            return -1;
        e->sum.tp[e->sum.ntp++] = t->valueint;
    }
    e->sum.size = (uint64_t)size;
    e->mtime_ns = (int64_t)mt;
    e->sum.created = created;
    e->sum.status = (pdbx_run_status)st;
    e->sum.points_done = (int)done;
    e->sum.points_total = (int)total;
    e->sum.percent = (int)pct;
    e->sum.noise_points = (int)npts;
    e->sum.busy_points = (int)busy;
    e->layers = (int)layers;
    e->coll_done = cdone;
    e->coll_total = ctotal;
    e->sum.mbs_min = (int)mmin;
    e->sum.mbs_max = (int)mmax;
    e->have_end = cJSON_IsTrue(he);
    e->pid = (long)pid;
    e->last_event = last;
    /* optional (indexes written before them): the launcher's identity beyond its pid */
    double start = 0;
    if (jf_num(j, "pid_start", &start) && start >= 0 && start <= 9.0e18)
        e->pid_start = start;
    jf_strbuf(j, "boot_id", e->boot_id, sizeof e->boot_id);
    /* Optional resume state: dropped (full rescan next time) unless complete and sane. */
    cJSON *rp = cJSON_GetObjectItemCaseSensitive(j, "resume_points");
    uint64_t off;
    if (cJSON_IsArray(rp) && get_u64str(j, "scan_offset", &off) && off <= e->sum.size &&
        resume_points_ok(rp)) {
        e->scan_offset = off;
        e->resume_points = cJSON_DetachItemViaPointer(j, rp);
    }
    return 0;
}


void pdbx_index_entry_clear(pdbx_index_entry *e)
{
    cJSON_Delete(e->resume_points);
    e->resume_points = NULL;
    e->scan_offset = 0;
}

void pdbx_index_free(pdbx_index_entry *e, size_t n)
{
    for (size_t i = 0; e && i < n; i++)
        cJSON_Delete(e[i].resume_points);
    free(e);
}

int pdbx_index_load(const char *path, pdbx_index_entry **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    /* a cache: a FIFO or device in its place is ignored (never opened to block or to read
     * forever), and so is one larger than an index can be */
    int fd = pdbx_open_regular(path, NULL, 0);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 65536) {
            size_t ncap = cap ? 2 * cap : 262144;
            char *nt = realloc(text, ncap);
            if (!nt) {
                free(text);
                fclose(f);
                return -1;
            }
            text = nt;
            cap = ncap;
        }
        size_t r = fread(text + len, 1, cap - len, f);
        len += r;
        if (r == 0 || len > PDBX_INDEX_MAX_BYTES)
            break;
    }
    int read_error = ferror(f);
    fclose(f);
    cJSON *root = read_error || len > PDBX_INDEX_MAX_BYTES ? NULL : cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "version");
    cJSON *runs = cJSON_GetObjectItemCaseSensitive(root, "runs");
    if (!cJSON_IsNumber(ver) || ver->valueint != INDEX_VERSION || !cJSON_IsArray(runs)) {
        cJSON_Delete(root);
        return 0;                                  /* garbage: rebuilt silently */
    }
    int total = cJSON_GetArraySize(runs);
    pdbx_index_entry *e = total > 0 ? calloc((size_t)total, sizeof *e) : NULL;
    if (total > 0 && !e) {
        cJSON_Delete(root);
        return -1;
    }
    size_t k = 0;
    cJSON *r;
    cJSON_ArrayForEach(r, runs) {
        if (entry_from_json(r, &e[k]) == 0)
            k++;
        else
            pdbx_index_entry_clear(&e[k]);
    }
    cJSON_Delete(root);
    *out = e;
    *n = k;
    return 0;
}

static cJSON *entry_to_json(const pdbx_index_entry *e)
{
    char mt[32], ino[32];
    snprintf(mt, sizeof mt, "%" PRId64, e->mtime_ns);
    snprintf(ino, sizeof ino, "%" PRIu64, e->ino);
    cJSON *j = cJSON_CreateObject();
    cJSON *tp = cJSON_CreateArray();
    if (!j || !tp)
        goto fail;
    cJSON_AddItemToObject(j, "tp", tp);
    for (int i = 0; i < e->sum.ntp; i++) {
        cJSON *v = cJSON_CreateNumber(e->sum.tp[i]);
        if (!v)
            goto fail_j;
        cJSON_AddItemToArray(tp, v);
    }
    if (!cJSON_AddStringToObject(j, "id", e->sum.id) ||
        !cJSON_AddNumberToObject(j, "size", (double)e->sum.size) ||
        !cJSON_AddStringToObject(j, "mtime_ns", mt) || !cJSON_AddStringToObject(j, "ino", ino) ||
        !cJSON_AddStringToObject(j, "status", pdbx_run_status_name(e->sum.status)) ||
        !cJSON_AddBoolToObject(j, "have_end", e->have_end) ||
        !cJSON_AddStringToObject(j, "host", e->host) ||
        !cJSON_AddNumberToObject(j, "pid", (double)e->pid) ||
        !cJSON_AddNumberToObject(j, "pid_start", e->pid_start) ||
        !cJSON_AddStringToObject(j, "boot_id", e->boot_id) ||
        !cJSON_AddNumberToObject(j, "last_event", e->last_event) ||
        !cJSON_AddNumberToObject(j, "created", e->sum.created) ||
        !cJSON_AddStringToObject(j, "model", e->sum.model) ||
        !cJSON_AddStringToObject(j, "backend", e->sum.backend) ||
        !cJSON_AddStringToObject(j, "gpu", e->sum.gpu) ||
        !cJSON_AddNumberToObject(j, "mbs_min", e->sum.mbs_min) ||
        !cJSON_AddNumberToObject(j, "mbs_max", e->sum.mbs_max) ||
        !cJSON_AddNumberToObject(j, "points_done", e->sum.points_done) ||
        !cJSON_AddNumberToObject(j, "points_total", e->sum.points_total) ||
        !cJSON_AddNumberToObject(j, "percent", e->sum.percent) ||
        !cJSON_AddNumberToObject(j, "layers", e->layers) ||
        !cJSON_AddNumberToObject(j, "coll_done", e->coll_done) ||
        !cJSON_AddNumberToObject(j, "coll_total", e->coll_total) ||
        !cJSON_AddNumberToObject(j, "noise_points", e->sum.noise_points) ||
        !cJSON_AddNumberToObject(j, "busy_points", e->sum.busy_points) ||
        !cJSON_AddStringToObject(j, "message", e->sum.message) ||
        (e->sum.launcher[0] && !cJSON_AddStringToObject(j, "launcher", e->sum.launcher)))
        goto fail_j;
    if (e->resume_points) {
        char off[32];
        snprintf(off, sizeof off, "%" PRIu64, e->scan_offset);
        cJSON *rp = cJSON_Duplicate(e->resume_points, 1);
        if (!rp || !cJSON_AddStringToObject(j, "scan_offset", off)) {
            cJSON_Delete(rp);
            goto fail_j;
        }
        cJSON_AddItemToObject(j, "resume_points", rp);
    }
    return j;
fail:
    cJSON_Delete(tp);
fail_j:
    cJSON_Delete(j);
    return NULL;
}

int pdbx_index_save(const char *path, const pdbx_index_entry *e, size_t n, char *err, size_t errlen)
{
    int rc = -1;
    char *text = NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON *runs = cJSON_CreateArray();
    if (!root || !runs) {
        cJSON_Delete(runs);
        goto oom;
    }
    cJSON_AddItemToObject(root, "runs", runs);
    if (!cJSON_AddNumberToObject(root, "version", INDEX_VERSION))
        goto oom;
    for (size_t i = 0; i < n; i++) {
        cJSON *j = entry_to_json(&e[i]);
        if (!j)
            goto oom;
        cJSON_AddItemToArray(runs, j);
    }
    text = cJSON_PrintUnformatted(root);
    if (!text)
        goto oom;
    rc = pdbx_durable_write(path, text, strlen(text), err, errlen);
    goto done;
oom:
    if (err && errlen)
        snprintf(err, errlen, "%s: out of memory building the index", path);
done:
    free(text);
    cJSON_Delete(root);
    return rc;
}
