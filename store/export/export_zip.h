/* export_zip.h: an in-memory writer of "stored" ZIP archives (no compression), the container
 * numpy's np.savez writes and np.load reads for .npz files. Also the npy v1.0 encoder of a
 * float64 matrix, so the NPZ export is two calls.
 *
 * Contract:
 *  - pdbx_zip_stored() lays out, for each member in order, a local file header + the bytes,
 *    then the central directory and the end-of-central-directory record (PKWARE APPNOTE 6.3,
 *    version needed 2.0, method 0 "stored", CRC-32 of the bytes, a fixed 1980-01-01 00:00 DOS
 *    time so equal inputs give equal files). No ZIP64: the archive and every member must stay
 *    below 4 GiB and 65535 members, else -1 with a message.
 *  - pdbx_npy_f64() encodes a rows x cols row-major matrix as npy v1.0: magic, version 1.0,
 *    little-endian uint16 header length, the header dict
 *      {'descr': '<f8', 'fortran_order': False, 'shape': (rows, cols), }
 *    padded with spaces and ended by '\n' so the data starts at a multiple of 64 bytes, then
 *    the values as little-endian IEEE-754 doubles whatever the host byte order.
 *    pdbx_npy_f64_vector() the same for a 1-D array of n values: shape (n,).
 *  - All return 0 and a malloc'd buffer in *out (caller frees), or -1 with err filled.
 */
#ifndef PDBX_EXPORT_ZIP_H
#define PDBX_EXPORT_ZIP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *name;           /* member name, ASCII, no leading '/' */
    const void *data;
    size_t len;
} pdbx_zip_member;

/* CRC-32 as ZIP and zlib define it (reflected polynomial 0xEDB88320); crc = 0 to start. */
uint32_t pdbx_crc32(uint32_t crc, const void *data, size_t len);

int pdbx_zip_stored(const pdbx_zip_member *members, size_t n, unsigned char **out,
                    size_t *outlen, char *err, size_t errlen);

/* Alignment of the npy data start, as numpy >= 1.14 writes it. */
#define PDBX_NPY_ALIGN 64

int pdbx_npy_f64(const double *values, size_t rows, size_t cols, unsigned char **out,
                 size_t *outlen, char *err, size_t errlen);
int pdbx_npy_f64_vector(const double *values, size_t n, unsigned char **out, size_t *outlen,
                        char *err, size_t errlen);

#endif
