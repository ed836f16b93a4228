/* store_frames.c: run-file frames: the encoder, the durable append and the scanner
 * (see store_frames.h and store.h).
 *
 * Telling a torn tail from damage: a frame whose structure runs past the end of the file is
 * normally the event a crashed writer was appending (or one being appended right now). But a
 * flipped bit in a block header of an earlier frame can also make that frame claim bytes past
 * the end. Writers never append after a partial frame (pdbx_frame_append cuts a failed write
 * back, pdbx_run_writer_open cuts a torn tail), so when a complete, checksummed event frame
 * starts anywhere after the "torn" frame, that frame is damaged, not torn.
 */
#include "store/util/err.h"
#include "store/store_frames.h"
#include "store/store.h"
#include "store/events.h"
#include "store/util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY   /* ZSTD_getFrameHeader */
#include <zstd.h>
#include <zstd_errors.h>

#define FRAME_LEVEL 3
#define READ_CHUNK (256u * 1024u)
#define MAX_EVENT_BYTES (256u * 1024u * 1024u)   /* larger decompressed events are damage */
#define MAX_RESYNC_TRIES 64


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
    size_t bound = ZSTD_compressBound(len);
    if (ZSTD_isError(bound)) {
        pdbx_errf(err, errlen, "zstd: event of %zu bytes is too large", len);
        return -1;
    }
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
    if (written != len) {
        int e = w < 0 ? errno : ENOSPC;
        pdbx_errf(err, errlen, "%s: append of a %zu-byte frame failed: %s%s", path, len, strerror(e),
                w >= 0 ? " (short write)" : "");
        goto cut;
    }
    if (fdatasync(fd) != 0) {
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
    return -1;
}

/* ---- scanner ------------------------------------------------------------------------- */

typedef struct {
    int fd;
    uint8_t *buf;      /* file bytes [base, base + len) */
    size_t cap, len;
    uint64_t base;
    int eof;           /* a read returned 0: the file ended (at the time of reading) */
} file_reader;

/* Makes at least `want` bytes from file offset pos available in the buffer (fewer at EOF).
 * pos must be >= r->base. Returns 0, or -1 with errno on a read error / out of memory. */
static int reader_need(file_reader *r, uint64_t pos, size_t want)
{
    size_t off = (size_t)(pos - r->base);
    if (r->len - off >= want || r->eof)
        return 0;
    if (off > 0) {
        memmove(r->buf, r->buf + off, r->len - off);
        r->len -= off;
        r->base = pos;
    }
    if (want > r->cap || r->cap - r->len < READ_CHUNK / 4) {
        size_t ncap = r->cap ? r->cap : READ_CHUNK;
        while (ncap < want || ncap - r->len < READ_CHUNK / 4)
            ncap *= 2;
        uint8_t *nb = realloc(r->buf, ncap);
        if (!nb) {
            errno = ENOMEM;
            return -1;
        }
        r->buf = nb;
        r->cap = ncap;
    }
    while (r->len < want && !r->eof) {
        ssize_t n = pread(r->fd, r->buf + r->len, r->cap - r->len, (off_t)(r->base + r->len));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            r->eof = 1;
        r->len += (size_t)n;
        if (r->len == r->cap)
            break;
    }
    return 0;
}

typedef struct {
    ZSTD_DCtx *dctx;
    char *out;
    size_t cap;
} frame_decoder;

/* Grows the output buffer to at least need bytes; -1 when out of memory. */
static int out_reserve(frame_decoder *d, size_t need)
{
    if (need <= d->cap)
        return 0;
    size_t ncap = d->cap ? d->cap : 4096;
    while (ncap < need)
        ncap *= 2;
    char *nb = realloc(d->out, ncap);
    if (!nb)
        return -1;
    d->out = nb;
    d->cap = ncap;
    return 0;
}

/* Frame decoders below: 0 with *outlen set, 1 bad frame (why set), -1 out of memory. */

/* The writer records the content size: one-shot decoding (much cheaper than a streaming
 * session for small frames); it verifies the checksum too. */
static int decompress_sized(frame_decoder *d, const uint8_t *src, size_t n, unsigned long long fcs,
                            size_t *outlen, char *why, size_t whylen)
{
    if (fcs > MAX_EVENT_BYTES) {
        snprintf(why, whylen, "event of %llu bytes is larger than %u", fcs, MAX_EVENT_BYTES);
        return 1;
    }
    if (out_reserve(d, (size_t)fcs + 1) != 0)
        return -1;
    size_t r = ZSTD_decompressDCtx(d->dctx, d->out, (size_t)fcs, src, n);
    if (ZSTD_isError(r))
        snprintf(why, whylen, "zstd: %s", ZSTD_getErrorName(r));
    else if (r != fcs)
        snprintf(why, whylen, "zstd: %zu bytes decoded, frame header says %llu", r, fcs);
    *outlen = r;
    return ZSTD_isError(r) || r != fcs;
}

/* A frame without a recorded content size: streamed into the growing buffer. */
static int decompress_stream(frame_decoder *d, const uint8_t *src, size_t n, size_t *outlen,
                             char *why, size_t whylen)
{
    size_t r = ZSTD_DCtx_reset(d->dctx, ZSTD_reset_session_only);
    ZSTD_inBuffer in = {src, n, 0};
    *outlen = 0;
    while (!ZSTD_isError(r)) {
        if (*outlen + 1 > MAX_EVENT_BYTES) {
            snprintf(why, whylen, "event larger than %u bytes", MAX_EVENT_BYTES);
            return 1;
        }
        if (out_reserve(d, *outlen + ZSTD_DStreamOutSize() + 1) != 0)
            return -1;
        ZSTD_outBuffer out = {d->out + *outlen, d->cap - *outlen - 1, 0};
        r = ZSTD_decompressStream(d->dctx, &out, &in);
        *outlen += out.pos;
        if (r == 0)
            break;
        if (!ZSTD_isError(r) && in.pos == in.size && out.pos < out.size) {
            snprintf(why, whylen, "zstd: frame ends early");
            return 1;
        }
    }
    if (ZSTD_isError(r)) {
        snprintf(why, whylen, "zstd: %s", ZSTD_getErrorName(r));
        return 1;
    }
    if (in.pos != in.size) {
        snprintf(why, whylen, "zstd: %zu stray bytes after the frame", in.size - in.pos);
        return 1;
    }
    return 0;
}

/* The event in d->out[0..len): 0 (*ev set), 1 when it is not one JSON event (why set). */
static int parse_event(const char *text, size_t len, cJSON **ev, char *why, size_t whylen)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!j) {
        snprintf(why, whylen, "not JSON");
        return 1;
    }
    while (end && end < text + len && (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t'))
        end++;
    if (end && end < text + len)
        snprintf(why, whylen, "not JSON (stray text after the event)");
    else if (!cJSON_IsObject(j) || !pdbx_event_type_str(j))
        snprintf(why, whylen, "not a JSON object with a string \"type\"");
    else {
        *ev = j;
        return 0;
    }
    cJSON_Delete(j);
    return 1;
}

/* Decodes one whole frame src[0..n) into a JSON event. Returns 0 (*ev set, or left NULL when
 * filter declined the text), 1 when the frame is bad (why set), -1 out of memory. */
static int decode_frame(frame_decoder *d, const uint8_t *src, size_t n, pdbx_frame_filter_fn filter,
                        void *fctx, cJSON **ev, char *why, size_t whylen)
{
    *ev = NULL;
    /* Every event frame carries a content checksum; one without cannot be verified (and a
     * flipped checksum flag would otherwise pass with the checksum left as stray bytes). */
    ZSTD_frameHeader fh;
    size_t r = ZSTD_getFrameHeader(&fh, src, n);
    if (ZSTD_isError(r) || r != 0) {
        snprintf(why, whylen, "zstd: %s", ZSTD_isError(r) ? ZSTD_getErrorName(r) : "short frame header");
        return 1;
    }
    if (!fh.checksumFlag) {
        snprintf(why, whylen, "frame has no content checksum");
        return 1;
    }
    size_t outlen = 0;
    unsigned long long fcs = ZSTD_getFrameContentSize(src, n);
    int rc = (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != ZSTD_CONTENTSIZE_ERROR)
                 ? decompress_sized(d, src, n, fcs, &outlen, why, whylen)
                 : decompress_stream(d, src, n, &outlen, why, whylen);
    if (rc != 0)
        return rc;
    d->out[outlen] = '\0';
    if (filter && !filter(d->out, outlen, fctx))
        return 0;
    return parse_event(d->out, outlen, ev, why, whylen);
}

static int is_skippable(const uint8_t *p, size_t n)
{
    if (n < 4)
        return 0;
    uint32_t magic = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return (magic & ZSTD_MAGIC_SKIPPABLE_MASK) == ZSTD_MAGIC_SKIPPABLE_START;
}

/* Offset (relative to p) of a complete valid event frame in p[1..n), or 0 when none. */
static size_t find_later_frame(frame_decoder *d, const uint8_t *p, size_t n)
{
    static const uint8_t magic[4] = {0x28, 0xB5, 0x2F, 0xFD};
    int tries = 0;
    for (size_t i = 1; i + 4 <= n && tries < MAX_RESYNC_TRIES; i++) {
        if (memcmp(p + i, magic, 4) != 0)
            continue;
        tries++;
        size_t fsz = ZSTD_findFrameCompressedSize(p + i, n - i);
        if (ZSTD_isError(fsz))
            continue;
        cJSON *ev = NULL;
        char why[64];
        if (decode_frame(d, p + i, fsz, NULL, NULL, &ev, why, sizeof why) == 0) {
            cJSON_Delete(ev);
            return i;
        }
    }
    return 0;
}

int pdbx_scan_file(const char *path, uint64_t from, pdbx_event_fn fn, void *ctx,
                   pdbx_scan_result *res, char *err, size_t errlen)
{
    return pdbx_scan_file_filtered(path, from, NULL, fn, ctx, res, err, errlen);
}

/* Where the next frame at pos ends. Returns 0 (*p and *fsz set), 1 at the end of the file
 * (res->torn_tail set when a partial frame is left), 2 when the bytes at pos are damage (why
 * set), -1 on a read error (errno). */
static int next_frame(file_reader *rd, frame_decoder *dec, uint64_t pos, const uint8_t **p,
                      size_t *fsz, pdbx_scan_result *res, char *why, size_t whylen)
{
    for (;;) {
        if (reader_need(rd, pos, 64) != 0)
            return -1;
        size_t avail = rd->len - (size_t)(pos - rd->base);
        if (avail == 0)
            return 1;                                /* clean end */
        *p = rd->buf + (pos - rd->base);
        *fsz = ZSTD_findFrameCompressedSize(*p, avail);
        if (!ZSTD_isError(*fsz))
            return 0;
        if (ZSTD_getErrorCode(*fsz) != ZSTD_error_srcSize_wrong) {
            snprintf(why, whylen, "zstd: %s", ZSTD_getErrorName(*fsz));
            return 2;
        }
        if (rd->eof) {
            size_t later = find_later_frame(dec, *p, avail);
            if (later == 0) {
                res->torn_tail = 1;                  /* the event in flight: ignored */
                return 1;
            }
            snprintf(why, whylen, "frame runs past a valid frame at byte %llu",
                     (unsigned long long)(pos + later));
            return 2;
        }
        /* the frame continues beyond the buffer */
        if (reader_need(rd, pos, avail + (avail > READ_CHUNK ? avail : READ_CHUNK)) != 0)
            return -1;
    }
}

int pdbx_scan_file_filtered(const char *path, uint64_t from, pdbx_frame_filter_fn filter,
                            pdbx_event_fn fn, void *ctx, pdbx_scan_result *res,
                            char *err, size_t errlen)
{
    file_reader rd = {.fd = -1, .base = from};
    frame_decoder dec = {0};
    memset(res, 0, sizeof *res);
    res->next_offset = from;
    if ((rd.fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return pdbx_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    int rc = 0;
    char why[160];
    if (!(dec.dctx = ZSTD_createDCtx()))
        rc = pdbx_fail(err, errlen, "%s: out of memory (zstd context)", path);
    for (uint64_t pos = from; rc == 0; pos = res->next_offset) {
        const uint8_t *p;
        size_t fsz;
        cJSON *ev = NULL;
        int d = 0, at = next_frame(&rd, &dec, pos, &p, &fsz, res, why, sizeof why);
        if (at == 0 && !is_skippable(p, fsz))       /* a skippable frame is not an event */
            d = decode_frame(&dec, p, fsz, filter, ctx, &ev, why, sizeof why);
        if (d < 0)
            rc = pdbx_fail(err, errlen, "%s: out of memory decoding the frame at byte %llu", path,
                           (unsigned long long)pos);
        else if (at < 0)
            rc = pdbx_fail(err, errlen, "%s: read failed: %s", path, strerror(errno));
        else if (at == 2 || d > 0) {
            res->corrupt = 1;
            snprintf(res->corrupt_msg, sizeof res->corrupt_msg, "%s: bad frame at byte %llu: %s",
                     path, (unsigned long long)pos, why);
        }
        if (at != 0 || d != 0)
            break;
        res->next_offset = pos + fsz;
        res->events += !is_skippable(p, fsz);
        int stop = ev && fn ? fn(ev, ctx) : 0;       /* ev NULL: declined by the filter */
        cJSON_Delete(ev);
        if (stop)
            break;
    }
    ZSTD_freeDCtx(dec.dctx);
    free(dec.out);
    free(rd.buf);
    close(rd.fd);
    return rc;
}
