/* export_common.c: helpers shared by the export modules (export_common.h). */
#include "store/errbuf.h"
#include "store/export_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>


int pdbx_export_mkdirs(const char *dir, char *err, size_t errlen)
{
    char path[4096];
    if (!dir || !*dir) {
        pdbx_errf(err, errlen, "export directory: empty path");
        return -1;
    }
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        pdbx_errf(err, errlen, "%s: path too long", dir);
        return -1;
    }
    /* Create each prefix in turn; existing ones are fine, the final check says if DIR is one. */
    for (char *p = path + 1; ; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            pdbx_errf(err, errlen, "%s: cannot create directory: %s", path, strerror(errno));
            return -1;
        }
        *p = c;
        if (c == '\0')
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        pdbx_errf(err, errlen, "%s: not a directory", dir);
        return -1;
    }
    return 0;
}
