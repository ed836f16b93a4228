/* export_zip.c: stored ZIP archives and npy v1.0 float64 matrices in memory (export_zip.h). */
#include "store/util/err.h"
#include "store/export/export_zip.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static uint32_t crc_table[256];
static pthread_once_t crc_table_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t pdbx_crc32(uint32_t crc, const void *data, size_t len)
{
    /* once, with the ordering a plain "ready" flag lacks: a second thread could see the flag
     * set before the table's entries (a data race, and wrong CRCs on a reordering compiler) */
    pthread_once(&crc_table_once, crc_table_init);
    const uint32_t *table = crc_table;
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < len; i++)
        crc = table[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
    return ~crc;
}

/* Little-endian writers into a buffer sized in advance. */
static unsigned char *put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v & 0xff);
    p[1] = (unsigned char)(v >> 8);
    return p + 2;
}

static unsigned char *put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
    return p + 4;
}

static unsigned char *put_bytes(unsigned char *p, const void *src, size_t len)
{
    if (len)
        memcpy(p, src, len);
    return p + len;
}

#define ZIP_LOCAL_HEADER 30u
#define ZIP_CENTRAL_HEADER 46u
#define ZIP_END_RECORD 22u
#define ZIP_VERSION 20u           /* 2.0: the minimum for plain stored files */
#define ZIP_DOS_TIME 0u           /* 00:00:00 */
#define ZIP_DOS_DATE 0x0021u      /* 1980-01-01: reproducible archives */

/* The fields a local header and a central directory entry share, from "version needed"
 * through the name length (APPNOTE 4.3.7 / 4.3.12). */
static unsigned char *put_member_fields(unsigned char *p, uint32_t crc, uint32_t len, uint16_t name_len)
{
    p = put16(p, ZIP_VERSION);                /* version needed to extract */
    p = put16(p, 0);                          /* flags */
    p = put16(p, 0);                          /* method: stored */
    p = put16(p, ZIP_DOS_TIME);
    p = put16(p, ZIP_DOS_DATE);
    p = put32(p, crc);
    p = put32(p, len);                        /* compressed size */
    p = put32(p, len);                        /* uncompressed size */
    return put16(p, name_len);
}

static unsigned char *put_local(unsigned char *p, const pdbx_zip_member *m, uint32_t crc)
{
    uint16_t name_len = (uint16_t)strlen(m->name);
    p = put32(p, 0x04034b50u);                /* local file header signature */
    p = put_member_fields(p, crc, (uint32_t)m->len, name_len);
    p = put16(p, 0);                          /* extra field length */
    p = put_bytes(p, m->name, name_len);
    return put_bytes(p, m->data, m->len);
}

static unsigned char *put_central(unsigned char *p, const pdbx_zip_member *m, uint32_t crc,
                                  uint32_t offset)
{
    uint16_t name_len = (uint16_t)strlen(m->name);
    p = put32(p, 0x02014b50u);                /* central directory header signature */
    p = put16(p, ZIP_VERSION);                /* version made by (MS-DOS, 2.0) */
    p = put_member_fields(p, crc, (uint32_t)m->len, name_len);
    p = put16(p, 0);                          /* extra */
    p = put16(p, 0);                          /* comment */
    p = put16(p, 0);                          /* disk number start */
    p = put16(p, 0);                          /* internal attributes */
    p = put32(p, 0);                          /* external attributes */
    p = put32(p, offset);
    return put_bytes(p, m->name, name_len);
}

int pdbx_zip_stored(const pdbx_zip_member *members, size_t n, unsigned char **out,
                    size_t *outlen, char *err, size_t errlen)
{
    *out = NULL;
    *outlen = 0;
    if (n > 0xffffu) {
        pdbx_errf(err, errlen, "zip: %zu members (at most 65535 without ZIP64)", n);
        return -1;
    }
    uint64_t total = ZIP_END_RECORD;
    for (size_t i = 0; i < n; i++) {
        size_t name_len = strlen(members[i].name);
        if (name_len == 0 || name_len > 0xffffu) {
            pdbx_errf(err, errlen, "zip: member %zu: name length %zu (allowed 1..65535)", i, name_len);
            return -1;
        }
        total += (uint64_t)ZIP_LOCAL_HEADER + ZIP_CENTRAL_HEADER + 2u * name_len + members[i].len;
    }
    if (total >= UINT32_MAX) {
        pdbx_errf(err, errlen, "zip: archive of %" PRIu64 " bytes needs ZIP64 (at most 4 GiB)", total);
        return -1;
    }
    unsigned char *buf = malloc((size_t)total);
    uint32_t *crcs = calloc(n ? n : 1, sizeof *crcs);
    uint32_t *offsets = calloc(n ? n : 1, sizeof *offsets);
    if (!buf || !crcs || !offsets) {
        pdbx_errf(err, errlen, "zip: out of memory for %" PRIu64 " bytes", total);
        goto fail;
    }

    unsigned char *p = buf;
    for (size_t i = 0; i < n; i++) {
        crcs[i] = pdbx_crc32(0, members[i].data, members[i].len);
        offsets[i] = (uint32_t)(p - buf);
        p = put_local(p, &members[i], crcs[i]);
    }
    uint32_t central_start = (uint32_t)(p - buf);
    for (size_t i = 0; i < n; i++)
        p = put_central(p, &members[i], crcs[i], offsets[i]);
    uint32_t central_size = (uint32_t)(p - buf) - central_start;
    p = put32(p, 0x06054b50u);                /* end of central directory signature */
    p = put16(p, 0);                          /* this disk */
    p = put16(p, 0);                          /* disk with the central directory */
    p = put16(p, (uint16_t)n);
    p = put16(p, (uint16_t)n);
    p = put32(p, central_size);
    p = put32(p, central_start);
    p = put16(p, 0);                          /* comment length */

    if ((uint64_t)(p - buf) != total) {       /* the size formula and the layout must agree */
        pdbx_errf(err, errlen, "zip: internal size mismatch (%td of %" PRIu64 " bytes)", p - buf, total);
        goto fail;
    }
    free(crcs);
    free(offsets);
    *out = buf;
    *outlen = (size_t)total;
    return 0;
fail:
    free(buf);
    free(crcs);
    free(offsets);
    return -1;
}

/* The npy encoding of count doubles whose shape tuple reads `shape` ("(3, 10)", "(82,)"). */
static int npy_encode(const double *values, size_t count, const char *shape, unsigned char **out,
                      size_t *outlen, char *err, size_t errlen)
{
    *out = NULL;
    *outlen = 0;
    char dict[128];
    int dict_len = snprintf(dict, sizeof dict,
                            "{'descr': '<f8', 'fortran_order': False, 'shape': %s, }", shape);
    if (dict_len < 0 || (size_t)dict_len >= sizeof dict) {
        pdbx_errf(err, errlen, "npy: header of shape %s does not fit", shape);
        return -1;
    }
    /* magic (6) + version (2) + header length (2) + dict + padding + '\n' */
    size_t prefix = 10;
    size_t header_total = prefix + (size_t)dict_len + 1;
    size_t padded = (header_total + PDBX_NPY_ALIGN - 1) / PDBX_NPY_ALIGN * PDBX_NPY_ALIGN;
    size_t header_len = padded - prefix;       /* dict + spaces + '\n', fits in uint16 */
    if (count > (SIZE_MAX - padded) / 8) {
        pdbx_errf(err, errlen, "npy: shape %s is too large", shape);
        return -1;
    }
    size_t total = padded + count * 8;
    unsigned char *buf = malloc(total);
    if (!buf) {
        pdbx_errf(err, errlen, "npy: out of memory for %zu bytes", total);
        return -1;
    }
    unsigned char *p = put_bytes(buf, "\x93NUMPY", 6);
    *p++ = 1;                                  /* major version */
    *p++ = 0;                                  /* minor version */
    p = put16(p, (uint16_t)header_len);
    p = put_bytes(p, dict, (size_t)dict_len);
    while ((size_t)(p - buf) < padded - 1)
        *p++ = ' ';
    *p++ = '\n';
    for (size_t i = 0; i < count; i++) {
        uint64_t bits;
        memcpy(&bits, &values[i], sizeof bits);
        for (int b = 0; b < 8; b++)
            *p++ = (unsigned char)(bits >> (8 * b));
    }
    *out = buf;
    *outlen = total;
    return 0;
}

int pdbx_npy_f64(const double *values, size_t rows, size_t cols, unsigned char **out,
                 size_t *outlen, char *err, size_t errlen)
{
    char shape[64];
    snprintf(shape, sizeof shape, "(%zu, %zu)", rows, cols);
    if (cols != 0 && rows > SIZE_MAX / cols) {
        *out = NULL;
        *outlen = 0;
        pdbx_errf(err, errlen, "npy: shape %s is too large", shape);
        return -1;
    }
    return npy_encode(values, rows * cols, shape, out, outlen, err, errlen);
}

int pdbx_npy_f64_vector(const double *values, size_t n, unsigned char **out, size_t *outlen,
                        char *err, size_t errlen)
{
    char shape[64];
    snprintf(shape, sizeof shape, "(%zu,)", n);
    return npy_encode(values, n, shape, out, outlen, err, errlen);
}
