/* store_scan.c: the run-file scanner (pdbx_scan_file, store.h; frames in store_frames.h).
 *
 * Memory is bounded by what a valid event may need, never by the file: a frame's extent is
 * found by walking its header and block headers through a window of one read chunk, and only
 * a complete frame (at most a compressed PDBX_MAX_EVENT_BYTES) is read into memory to decode.
 * A torn frame whose header claims a gigabyte costs a walk of its block headers (stopped at the
 * largest frame an event can have), not a gigabyte of buffer.
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
#include "store/util/fs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY   /* ZSTD_getFrameHeader, ZSTD_COMPRESSBOUND */
#include <zstd.h>
#include <zstd_errors.h>

#define READ_CHUNK (64u * 1024u)
#define MAX_FRAME_BYTES ((uint64_t)ZSTD_COMPRESSBOUND(PDBX_MAX_EVENT_BYTES) + 64u)
#define MAX_RESYNC_TRIES 64

/* ---- a window on the file ------------------------------------------------------------- */

typedef struct {
    int fd;
    uint8_t *buf;      /* file bytes [base, base + len) */
    size_t cap, len;
    uint64_t base;
    int eof;           /* a read returned 0: the file ended at base + len (when read) */
} file_reader;

/* Makes up to `want` bytes from file offset pos available at *p; returns how many are there
 * (fewer than want only where the file ends), or -1 with errno. pos may be anywhere: before
 * the window or past it the window moves (a jump re-reads). The buffer grows only when want
 * exceeds it. */
static ssize_t reader_at(file_reader *r, uint64_t pos, size_t want, const uint8_t **p)
{
    if (pos < r->base || pos > r->base + r->len) {
        r->base = pos;
        r->len = 0;
        r->eof = 0;
    }
    size_t off = (size_t)(pos - r->base);
    if (r->len - off < want && !r->eof) {
        if (off > 0)
            memmove(r->buf, r->buf + off, r->len - off);
        r->len -= off;
        r->base = pos;
        off = 0;
        if (want > r->cap || !r->buf) {
            size_t ncap = r->cap ? r->cap : READ_CHUNK;
            while (ncap < want)
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
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                return -1;
            r->eof = n == 0;
            r->len += (size_t)n;
        }
    }
    *p = r->buf ? r->buf + off : NULL;
    size_t avail = r->len - off;
    return (ssize_t)(avail < want ? avail : want);
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* 1 when the file has a byte at pos, 0 when it ends before, -1 read error. */
static int have_byte(file_reader *r, uint64_t pos)
{
    const uint8_t *p;
    ssize_t n = reader_at(r, pos, 1, &p);
    return n < 0 ? -1 : n == 1;
}

/* The walk below: 0 complete (*fsz set), 1 the file ends inside the frame, 2 damage (why
 * set), -1 read error. */
enum { EXT_OK = 0, EXT_TORN = 1, EXT_DAMAGE = 2 };

/* The blocks of a zstd frame from b (RFC 8878 3.1.1.2): each a 3-byte header (last flag,
 * type, size); raw and compressed blocks carry size bytes, an RLE block one. *end is where
 * the last block ends. */
static int walk_blocks(file_reader *rd, uint64_t start, uint64_t b, uint64_t *end, char *why,
                       size_t whylen)
{
    for (;;) {
        if (b - start > MAX_FRAME_BYTES) {
            snprintf(why, whylen, "frame runs past %llu bytes, larger than an event of "
                     "PDBX_MAX_EVENT_BYTES (%u) compresses to",
                     (unsigned long long)MAX_FRAME_BYTES, PDBX_MAX_EVENT_BYTES);
            return EXT_DAMAGE;
        }
        const uint8_t *p;
        ssize_t n = reader_at(rd, b, 3, &p);
        if (n < 0)
            return -1;
        if (n < 3)
            return EXT_TORN;
        uint32_t bh = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
        uint32_t type = (bh >> 1) & 3, size = bh >> 3;
        if (type == 3 || size > ZSTD_BLOCKSIZE_MAX) {
            snprintf(why, whylen, "zstd: %s", type == 3 ? "reserved block type" : "block larger than 128 KiB");
            return EXT_DAMAGE;
        }
        b += 3 + (type == 1 ? 1 : size);
        if (bh & 1) {
            *end = b;
            return EXT_OK;
        }
    }
}

/* Where the frame at pos ends, from its headers only (see the top of the file). */
static int frame_extent(file_reader *rd, uint64_t pos, uint64_t *fsz, char *why, size_t whylen)
{
    const uint8_t *p;
    ssize_t n = reader_at(rd, pos, ZSTD_FRAMEHEADERSIZE_MAX, &p);
    if (n < 0)
        return -1;
    if (n < 4)
        return EXT_TORN;
    uint64_t end;
    if ((le32(p) & ZSTD_MAGIC_SKIPPABLE_MASK) == ZSTD_MAGIC_SKIPPABLE_START) {
        if (n < 8)
            return EXT_TORN;
        end = pos + 8 + le32(p + 4);
    } else {
        ZSTD_frameHeader fh;
        size_t r = ZSTD_getFrameHeader(&fh, p, (size_t)n);
        if (ZSTD_isError(r)) {
            snprintf(why, whylen, "zstd: %s", ZSTD_getErrorName(r));
            return EXT_DAMAGE;
        }
        if (r > 0)                                 /* header cut by the end of the file */
            return EXT_TORN;
        int w = walk_blocks(rd, pos, pos + fh.headerSize, &end, why, whylen);
        if (w != EXT_OK)
            return w;
        end += fh.checksumFlag ? 4 : 0;
    }
    if (end - pos > MAX_FRAME_BYTES) {
        snprintf(why, whylen, "frame of %llu bytes is larger than any event's frame",
                 (unsigned long long)(end - pos));
        return EXT_DAMAGE;
    }
    int h = have_byte(rd, end - 1);
    if (h <= 0)
        return h < 0 ? -1 : EXT_TORN;
    *fsz = end - pos;
    return EXT_OK;
}

/* ---- decoding one frame -------------------------------------------------------------- */

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
    if (fcs > PDBX_MAX_EVENT_BYTES) {
        snprintf(why, whylen, "event of %llu bytes is larger than %u", fcs, PDBX_MAX_EVENT_BYTES);
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
        if (*outlen + 1 > PDBX_MAX_EVENT_BYTES) {
            snprintf(why, whylen, "event larger than %u bytes", PDBX_MAX_EVENT_BYTES);
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
    return n >= 4 && (le32(p) & ZSTD_MAGIC_SKIPPABLE_MASK) == ZSTD_MAGIC_SKIPPABLE_START;
}

/* Where a complete, valid event frame starts after pos (up to MAX_RESYNC_TRIES candidates,
 * read a chunk at a time): 1 with *at set, 0 none, -1 read error / out of memory. */
static int find_later_frame(file_reader *rd, frame_decoder *d, uint64_t pos, uint64_t *at)
{
    static const uint8_t magic[4] = {0x28, 0xB5, 0x2F, 0xFD};
    int tries = 0;
    for (uint64_t q = pos + 1; tries < MAX_RESYNC_TRIES;) {
        const uint8_t *p;
        ssize_t n = reader_at(rd, q, READ_CHUNK, &p);
        if (n < 4)
            return n < 0 ? -1 : 0;
        const uint8_t *hit = p, *stop = p + n - 3;
        while ((hit = memchr(hit, magic[0], (size_t)(stop - hit))) && memcmp(hit, magic, 4) != 0)
            hit++;
        if (!hit) {
            q += (uint64_t)n - 3;
            continue;
        }
        uint64_t cand = q + (uint64_t)(hit - p), fsz;
        char why[160];
        tries++;
        q = cand + 1;
        int e = frame_extent(rd, cand, &fsz, why, sizeof why);
        if (e < 0)
            return -1;
        if (e != EXT_OK)
            continue;
        const uint8_t *f;
        ssize_t got = reader_at(rd, cand, (size_t)fsz, &f);
        if (got < 0)
            return -1;
        cJSON *ev = NULL;
        int dr = (uint64_t)got == fsz ? decode_frame(d, f, (size_t)fsz, NULL, NULL, &ev, why, sizeof why) : 1;
        cJSON_Delete(ev);
        if (dr < 0) {
            errno = ENOMEM;
            return -1;
        }
        if (dr == 0) {
            *at = cand;
            return 1;
        }
    }
    return 0;
}

/* The next whole frame at pos. Returns 0 (*p and *fsz set), 1 at the end of the file
 * (res->torn_tail set when a partial frame is left), 2 when the bytes at pos are damage (why
 * set), -1 on a read error (errno). */
static int next_frame(file_reader *rd, frame_decoder *dec, uint64_t pos, const uint8_t **p,
                      size_t *fsz, pdbx_scan_result *res, char *why, size_t whylen)
{
    uint64_t ext, later;
    int h = have_byte(rd, pos);
    if (h <= 0)
        return h < 0 ? -1 : 1;                       /* clean end */
    int e = frame_extent(rd, pos, &ext, why, whylen);
    if (e < 0 || e == EXT_DAMAGE)
        return e < 0 ? -1 : 2;
    if (e == EXT_TORN) {
        int f = find_later_frame(rd, dec, pos, &later);
        if (f <= 0) {
            res->torn_tail = f == 0;                 /* the event in flight: ignored */
            return f < 0 ? -1 : 1;
        }
        snprintf(why, whylen, "frame runs past a valid frame at byte %llu", (unsigned long long)later);
        return 2;
    }
    ssize_t got = reader_at(rd, pos, (size_t)ext, p);
    if (got < 0)
        return -1;
    if ((uint64_t)got < ext) {                       /* the file shrank since the walk */
        res->torn_tail = 1;
        return 1;
    }
    *fsz = (size_t)ext;
    return 0;
}

int pdbx_scan_file(const char *path, uint64_t from, pdbx_event_fn fn, void *ctx,
                   pdbx_scan_result *res, char *err, size_t errlen)
{
    return pdbx_scan_file_filtered(path, from, NULL, fn, ctx, res, err, errlen);
}

int pdbx_scan_file_filtered(const char *path, uint64_t from, pdbx_frame_filter_fn filter,
                            pdbx_event_fn fn, void *ctx, pdbx_scan_result *res,
                            char *err, size_t errlen)
{
    file_reader rd = {.fd = -1, .base = from};
    frame_decoder dec = {0};
    memset(res, 0, sizeof *res);
    res->next_offset = from;
    if ((rd.fd = pdbx_open_regular(path, err, errlen)) < 0)
        return -1;
    int rc = 0;
    char why[200];
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
