/* err.h: the one error convention of every module.
 *
 * Functions that can fail take (char *err, size_t errlen) and, on failure, write one line
 * naming the file, field or value at fault and what is allowed; they return -1 (or NULL).
 * err may be NULL (the caller does not want the message). Programs print such a line as
 * "<program>: <message>" on stderr and exit 1 (2 for usage errors).
 */
#ifndef PDBX_ERR_H
#define PDBX_ERR_H

#include <stddef.h>

/* Writes the message: printf-style, truncating, a no-op on a NULL buffer. */
void pdbx_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* pdbx_errf, then returns -1, so a caller can `return pdbx_fail(err, errlen, ...)`. */
int pdbx_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
