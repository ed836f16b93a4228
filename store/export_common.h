/* export_common.h: small helpers the export modules share (export_npz.c, export_csv.c,
 * export_trace.c). Not a public API: only store/export_*.c include it. */
#ifndef PDBX_EXPORT_COMMON_H
#define PDBX_EXPORT_COMMON_H

#include <stddef.h>

/* mkdir -p DIR (mode 0755). 0, or -1 with "<path>: cannot create directory: <why>" or
 * "<dir>: not a directory" in err. */
int pdbx_export_mkdirs(const char *dir, char *err, size_t errlen);

/* snprintf into err when err is not NULL. */
void pdbx_export_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
