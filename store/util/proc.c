/* proc.c: see proc.h. */
#include "store/util/proc.h"

#include <string.h>
#include <unistd.h>

#include "store/util/text.h"

int pdbx_exe_dir(char *buf, size_t len)
{
    if (!buf || len == 0)
        return -1;
    buf[0] = '\0';
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    if (slash == exe)               /* the executable sits in "/" */
        pdbx_strcopy(exe, sizeof exe, "/");
    if (strlen(exe) >= len)
        return -1;
    pdbx_strcopy(buf, len, exe);
    return 0;
}

void pdbx_hostname(char *buf, size_t len, const char *fallback)
{
    if (!buf || len == 0)
        return;
    buf[len - 1] = '\0';
    if (gethostname(buf, len - 1) != 0 || !buf[0])
        pdbx_strcopy(buf, len, fallback);
}
