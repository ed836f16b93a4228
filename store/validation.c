/* validation.c: the validations record of a run (validation.h). */
#include "store/validation.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/layout.h"
#include "store/util/err.h"
#include "store/util/fmt.h"
#include "store/util/fs.h"
#include "store/util/text.h"

#define MAX_FILE_BYTES (64u << 20)   /* far beyond any real record: a bound on what is read */

static cJSON *num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

cJSON *pdbx_validation_to_json(const pdbx_validation *v)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    char config[64];
    pdbx_fmt_config(PDBX_CFG_LABEL_DIMS, v->tp, v->pp, v->dp, v->ep, config, sizeof config);
    int ok = cJSON_AddNumberToObject(o, "time", v->time) &&
             cJSON_AddStringToObject(o, "config", config) &&
             cJSON_AddNumberToObject(o, "tp", v->tp) && cJSON_AddNumberToObject(o, "pp", v->pp) &&
             cJSON_AddNumberToObject(o, "dp", v->dp) && cJSON_AddNumberToObject(o, "mbs", v->mbs) &&
             cJSON_AddNumberToObject(o, "gbs", v->gbs) &&
             cJSON_AddNumberToObject(o, "layers", v->layers) &&
             cJSON_AddNumberToObject(o, "num_mb", v->num_mb) &&
             cJSON_AddNumberToObject(o, "iterations", v->iters) &&
             cJSON_AddStringToObject(o, "backend", v->backend) &&
             cJSON_AddItemToObject(o, "measured_ms", num_or_null(v->measured_ms)) &&
             cJSON_AddItemToObject(o, "measured_min_ms", num_or_null(v->measured_min_ms)) &&
             cJSON_AddItemToObject(o, "measured_max_ms", num_or_null(v->measured_max_ms)) &&
             cJSON_AddItemToObject(o, "estimated_ms", num_or_null(v->estimated_ms)) &&
             cJSON_AddItemToObject(o, "error_pct", num_or_null(v->error_pct));
    cJSON *est = ok ? cJSON_AddObjectToObject(o, "estimate") : NULL;
    ok = est && cJSON_AddItemToObject(est, "compute_ms", num_or_null(v->est_compute_ms)) &&
         cJSON_AddItemToObject(est, "bubble_ms", num_or_null(v->est_bubble_ms)) &&
         cJSON_AddItemToObject(est, "tp_comm_ms", num_or_null(v->est_tp_comm_ms)) &&
         cJSON_AddItemToObject(est, "pp_comm_ms", num_or_null(v->est_pp_comm_ms)) &&
         cJSON_AddItemToObject(est, "dp_comm_ms", num_or_null(v->est_dp_comm_ms)) &&
         cJSON_AddBoolToObject(est, "bwd_measured", v->bwd_measured) &&
         cJSON_AddStringToObject(est, "note", v->note);
    if (ok && v->ep > 1)
        ok = cJSON_AddNumberToObject(o, "ep", v->ep) &&
             cJSON_AddItemToObject(est, "ep_comm_ms", num_or_null(v->est_ep_comm_ms));
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static int int_of(const cJSON *o, const char *k, int *out)
{
    double d = num(o, k);
    if (!isfinite(d) || d < 0 || d > 1e9)
        return -1;
    *out = (int)d;
    return 0;
}

int pdbx_validation_from_json(const cJSON *obj, pdbx_validation *out)
{
    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(obj))
        return -1;
    if (int_of(obj, "tp", &out->tp) || int_of(obj, "pp", &out->pp) || int_of(obj, "dp", &out->dp) ||
        int_of(obj, "mbs", &out->mbs) || int_of(obj, "gbs", &out->gbs) ||
        int_of(obj, "layers", &out->layers))
        return -1;
    out->measured_ms = num(obj, "measured_ms");
    if (!isfinite(out->measured_ms))
        return -1;
    (void)int_of(obj, "num_mb", &out->num_mb);
    out->ep = 1;
    (void)int_of(obj, "ep", &out->ep);
    (void)int_of(obj, "iterations", &out->iters);
    out->time = num(obj, "time");
    out->measured_min_ms = num(obj, "measured_min_ms");
    out->measured_max_ms = num(obj, "measured_max_ms");
    out->estimated_ms = num(obj, "estimated_ms");
    out->error_pct = num(obj, "error_pct");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(obj, "backend");
    if (cJSON_IsString(b))
        pdbx_strcopy(out->backend, sizeof out->backend, b->valuestring);
    const cJSON *est = cJSON_GetObjectItemCaseSensitive(obj, "estimate");
    out->est_compute_ms = num(est, "compute_ms");
    out->est_bubble_ms = num(est, "bubble_ms");
    out->est_tp_comm_ms = num(est, "tp_comm_ms");
    out->est_pp_comm_ms = num(est, "pp_comm_ms");
    out->est_dp_comm_ms = num(est, "dp_comm_ms");
    out->est_ep_comm_ms = out->ep > 1 ? num(est, "ep_comm_ms") : 0;
    out->bwd_measured = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(est, "bwd_measured"));
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(est, "note");
    if (cJSON_IsString(note))
        pdbx_strcopy(out->note, sizeof out->note, note->valuestring);
    return 0;
}

static int path_of(const char *store_dir, const char *run_id, char *buf, size_t len, char *err,
                   size_t errlen)
{
    if (!pdbx_layout_valid_id(run_id))
        return pdbx_fail(err, errlen, "run id '%s': not a valid run id", run_id ? run_id : "");
    if (pdbx_layout_path(PDBX_PATH_VALIDATIONS, store_dir, run_id, buf, len) != 0)
        return pdbx_fail(err, errlen, "store path too long: %s", store_dir);
    return 0;
}

int pdbx_validation_append(const char *store_dir, const char *run_id, const pdbx_validation *v,
                           char *err, size_t errlen)
{
    char path[4096];
    if (path_of(store_dir, run_id, path, sizeof path, err, errlen) != 0)
        return -1;
    cJSON *o = pdbx_validation_to_json(v);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text)
        return pdbx_fail(err, errlen, "%s: out of memory", path);
    size_t n = strlen(text);
    char *line = realloc(text, n + 2);
    if (!line) {
        free(text);
        return pdbx_fail(err, errlen, "%s: out of memory", path);
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    int created = access(path, F_OK) != 0;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    int rc = 0;
    if (fd < 0) {
        rc = pdbx_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    } else {
        pdbx_ignore_sigxfsz();
        ssize_t w = write(fd, line, n + 1);      /* one write: O_APPEND keeps the line whole */
        if (w != (ssize_t)(n + 1)) {
            int e = w < 0 ? errno : ENOSPC;
            /* a short write leaves a torn line: cut it off so the next append starts clean */
            if (w > 0) {
                struct stat sb;
                if (fstat(fd, &sb) == 0 && ftruncate(fd, sb.st_size - w) != 0)
                    e = errno;
            }
            rc = pdbx_fail(err, errlen, "%s: write failed: %s", path, strerror(e));
        } else if (fdatasync(fd) != 0) {
            rc = pdbx_fail(err, errlen, "%s: fdatasync failed: %s", path, strerror(errno));
        }
        if (close(fd) != 0 && rc == 0)
            rc = pdbx_fail(err, errlen, "%s: close failed: %s", path, strerror(errno));
    }
    free(line);
    if (rc == 0 && created) {
        char dir[4096];
        if (pdbx_layout_path(PDBX_PATH_RUNS, store_dir, NULL, dir, sizeof dir) == 0)
            rc = pdbx_fsync_dir(dir, err, errlen);
    }
    return rc;
}

int pdbx_validation_list(const char *store_dir, const char *run_id, pdbx_validation **out,
                         size_t *n, size_t *skipped, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (skipped)
        *skipped = 0;
    char path[4096];
    if (path_of(store_dir, run_id, path, sizeof path, err, errlen) != 0)
        return -1;
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return 0;
    int fd = pdbx_open_regular(path, err, errlen);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return pdbx_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    }
    char *line = NULL;
    size_t cap = 0, total = 0, have = 0;
    ssize_t got;
    int rc = 0;
    while ((got = getline(&line, &cap, f)) >= 0) {
        total += (size_t)got;
        if (total > MAX_FILE_BYTES) {
            rc = pdbx_fail(err, errlen, "%s: larger than %u MiB", path, MAX_FILE_BYTES >> 20);
            break;
        }
        cJSON *o = cJSON_ParseWithLength(line, (size_t)got);
        pdbx_validation v;
        if (!o || pdbx_validation_from_json(o, &v) != 0) {
            if (skipped && strspn(line, " \t\r\n") != (size_t)got)
                (*skipped)++;
            cJSON_Delete(o);
            continue;
        }
        cJSON_Delete(o);
        if (*n == have) {
            size_t nc = have ? 2 * have : 8;
            pdbx_validation *p = realloc(*out, nc * sizeof *p);
            if (!p) {
                rc = pdbx_fail(err, errlen, "%s: out of memory", path);
                break;
            }
            *out = p;
            have = nc;
        }
        (*out)[(*n)++] = v;
    }
    if (rc == 0 && ferror(f))
        rc = pdbx_fail(err, errlen, "%s: read failed", path);
    free(line);
    fclose(f);
    if (rc != 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}
