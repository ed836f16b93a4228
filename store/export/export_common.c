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
