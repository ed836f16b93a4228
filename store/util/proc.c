/* proc.c: see proc.h. */
#include "store/util/proc.h"

#include <stdio.h>
#include <stdlib.h>
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

int pdbx_proc_start_ticks(long pid, unsigned long long *ticks)
{
    char path[64], buf[1024];
    if (pid <= 0)
        return -1;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the command name (field 2) may hold spaces and parentheses: count from the last ')' */
    const char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    p++;
    for (int field = 2; field < 21 && *p; field++) {   /* skip fields 3..21 */
        p = strchr(p + 1, ' ');
        if (!p)
            return -1;
    }
    char *end = NULL;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p)
        return -1;
    *ticks = v;
    return 0;
}

void pdbx_boot_id(char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    buf[0] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return;
    if (!fgets(buf, (int)len, f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}
