/* export_common.c: helpers shared by the export modules (export_common.h). */
#include "store/util/err.h"
#include "store/export/export_common.h"
#include "store/util/fs.h"

#include <stdarg.h>

int pdbx_export_mkdirs(const char *dir, char *err, size_t errlen)
{
    if (!dir || !*dir) {
        pdbx_errf(err, errlen, "export directory: empty path");
        return -1;
    }
    return pdbx_mkdirs(dir, err, errlen);
}

int pdbx_export_publish(const char *path, const void *data, size_t len,
                        void (*wrote)(const char *path, void *ctx), void *ctx,
                        char *err, size_t errlen)
{
    if (pdbx_durable_write(path, data, len, err, errlen) != 0)
        return -1;
    if (wrote)
        wrote(path, ctx);
    return 0;
}
