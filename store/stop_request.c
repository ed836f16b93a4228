/* stop_request.c: see stop_request.h. The file holds two lines: the cause's name and the
 * detail. */
#include "store/stop_request.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store/layout.h"
#include "store/util/err.h"
#include "store/util/fs.h"
#include "store/util/text.h"

int pdbx_stop_request_write(const char *store_dir, const char *id, pdbx_end_cause cause,
                            const char *detail, char *err, size_t errlen)
{
    char path[4096], text[PDBX_STOP_DETAIL_MAX + 64];
    if (pdbx_layout_path(PDBX_PATH_STOP, store_dir, id, path, sizeof path) != 0)
        return pdbx_fail(err, errlen, "store path too long: %s", store_dir);
    if (access(path, F_OK) == 0)
        return 0;                /* the first request says why */
    int n = snprintf(text, sizeof text, "%s\n%.*s\n", pdbx_end_cause_name(cause),
                     PDBX_STOP_DETAIL_MAX - 1, detail ? detail : "");
    for (char *p = strchr(text, '\n') + 1; *p && p < text + n - 1; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';            /* the detail is one line */
    return pdbx_durable_write(path, text, (size_t)n, err, errlen);
}

int pdbx_stop_request_read(const char *store_dir, const char *id, pdbx_end_cause *cause,
                           char detail[PDBX_STOP_DETAIL_MAX])
{
    char path[4096], text[PDBX_STOP_DETAIL_MAX + 64];
    *cause = PDBX_CAUSE_NONE;
    detail[0] = '\0';
    if (pdbx_layout_path(PDBX_PATH_STOP, store_dir, id, path, sizeof path) != 0)
        return -1;
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return -1;
    text[n] = '\0';
    char *nl = strchr(text, '\n');
    if (!nl)
        return -1;
    *nl = '\0';
    *cause = pdbx_end_cause_from_name(text);
    char *line = nl + 1;
    line[strcspn(line, "\n")] = '\0';
    pdbx_strcopy(detail, PDBX_STOP_DETAIL_MAX, line);
    return *cause == PDBX_CAUSE_NONE ? -1 : 0;
}
