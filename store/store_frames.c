/* store_frames.c: run-file frames: the encoder and the durable append (see store_frames.h);
 * the scanner is store_scan.c.
 */
#include "store/util/err.h"
#include "store/store_frames.h"
#include "store/store.h"
#include "store/events.h"
#include "store/util/clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define FRAME_LEVEL 3


/* ---- encoder ------------------------------------------------------------------------- */

struct pdbx_frame_encoder {
    ZSTD_CCtx *cctx;
    void *buf;
    size_t cap;
};

int pdbx_frame_encoder_new(pdbx_frame_encoder **out, char *err, size_t errlen)
{
    *out = NULL;
    pdbx_frame_encoder *enc = calloc(1, sizeof *enc);
    if (!enc || !(enc->cctx = ZSTD_createCCtx())) {
        pdbx_errf(err, errlen, "zstd: cannot create a compression context (out of memory)");
        free(enc);
        return -1;
    }
    size_t r = ZSTD_CCtx_setParameter(enc->cctx, ZSTD_c_compressionLevel, FRAME_LEVEL);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(enc->cctx, ZSTD_c_checksumFlag, 1);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(enc->cctx, ZSTD_c_contentSizeFlag, 1);
    if (ZSTD_isError(r)) {
        pdbx_errf(err, errlen, "zstd: cannot set frame parameters: %s", ZSTD_getErrorName(r));
        pdbx_frame_encoder_free(enc);
        return -1;
    }
    *out = enc;
    return 0;
}

void pdbx_frame_encoder_free(pdbx_frame_encoder *enc)
{
    if (!enc)
        return;
    ZSTD_freeCCtx(enc->cctx);
    free(enc->buf);
    free(enc);
}

int pdbx_frame_encode(pdbx_frame_encoder *enc, const char *json, size_t len,
                      const void **frame, size_t *frame_len, char *err, size_t errlen)
{
    /* the scanner refuses larger events as damage: never write one it cannot read back */
    if (len > PDBX_MAX_EVENT_BYTES) {
        pdbx_errf(err, errlen, "event of %zu bytes is larger than %u (PDBX_MAX_EVENT_BYTES)", len,
                  PDBX_MAX_EVENT_BYTES);
        return -1;
    }
    size_t bound = ZSTD_compressBound(len);
    if (bound > enc->cap) {
        void *nb = realloc(enc->buf, bound);
        if (!nb) {
            pdbx_errf(err, errlen, "zstd: out of memory for a %zu-byte frame", bound);
            return -1;
        }
        enc->buf = nb;
        enc->cap = bound;
    }
    size_t r = ZSTD_compress2(enc->cctx, enc->buf, enc->cap, json, len);
    if (ZSTD_isError(r)) {
        pdbx_errf(err, errlen, "zstd: compression failed: %s", ZSTD_getErrorName(r));
        return -1;
    }
    *frame = enc->buf;
    *frame_len = r;
    return 0;
}

int pdbx_frame_encode_event(pdbx_frame_encoder *enc, const cJSON *event,
                            const void **frame, size_t *frame_len, char *err, size_t errlen)
{
    cJSON *copy = NULL;
    char *text = NULL;
    int rc = -1;
    if (!cJSON_IsObject(event) || !pdbx_event_type_str(event)) {
        pdbx_errf(err, errlen, "event: must be a JSON object with a string field \"type\"");
        return -1;
    }
    const cJSON *to_print = event;
    double t;
    if (!pdbx_event_time(event, &t)) {
        copy = cJSON_Duplicate(event, 1);
        if (!copy || pdbx_event_stamp(copy, pdbx_wall_s()) != 0)
            goto oom;
        to_print = copy;
    }
    text = cJSON_PrintUnformatted(to_print);
    if (!text)
        goto oom;
    /* One event per line: `zstdcat run.pdbx` prints JSON lines (grep, wc -l, jq -c). */
    size_t len = strlen(text);
    char *line = realloc(text, len + 2);
    if (!line)
        goto oom;
    text = line;
    text[len] = '\n';
    text[len + 1] = '\0';
    rc = pdbx_frame_encode(enc, text, len + 1, frame, frame_len, err, errlen);
    goto done;
oom:
    pdbx_errf(err, errlen, "event: out of memory while serialising");
done:
    free(text);
    cJSON_Delete(copy);
    return rc;
}

/* ---- durable append ------------------------------------------------------------------ */

int pdbx_frame_append(int fd, uint64_t *size, const void *frame, size_t len, const char *path,
                      char *err, size_t errlen)
{
    ssize_t w;
    do
        w = write(fd, frame, len);
    while (w < 0 && errno == EINTR);
    size_t written = w > 0 ? (size_t)w : 0;
    int failed_errno = 0;
    if (written != len) {
        int e = w < 0 ? errno : ENOSPC;
        failed_errno = e;
        pdbx_errf(err, errlen, "%s: append of a %zu-byte frame failed: %s%s", path, len, strerror(e),
                w >= 0 ? " (short write)" : "");
        goto cut;
    }
    if (fdatasync(fd) != 0) {
        failed_errno = errno;
        pdbx_errf(err, errlen, "%s: fdatasync after append failed: %s", path, strerror(errno));
        goto cut;
    }
    *size += len;
    return 0;
cut:
    /* Never leave a partial (or unsynced) frame where the next append would land after it.
     * O_APPEND put our bytes at the end of the file: remove exactly those. */
    if (written > 0) {
        struct stat sb;
        if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size < written ||
            ftruncate(fd, sb.st_size - (off_t)written) != 0) {
            size_t n = err ? strlen(err) : 0;
            if (err && n + 1 < errlen)
                snprintf(err + n, errlen - n, "; removing the %zu bytes written failed: %s", written,
                         strerror(errno));
        } else {
            *size = (uint64_t)sb.st_size - written;
        }
    }
    errno = failed_errno;       /* why the append failed, for the caller */
    return -1;
}
