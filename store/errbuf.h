/* errbuf.h: the one-line error convention shared by every module.
 *
 * Functions that can fail take (char *err, size_t errlen) and, on failure, write one line
 * naming the file, field or value at fault. err may be NULL (the caller does not want the
 * message). pdbx_errf is that write: printf-style, truncating, a no-op on a NULL buffer.
 */
#ifndef PDBX_ERRBUF_H
#define PDBX_ERRBUF_H

#include <stddef.h>

void pdbx_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
