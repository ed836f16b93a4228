/* layout.c: the paths of a store directory (see layout.h). */
#include "store/layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUN_EXT ".pdbx"

/* Each path is DIR/sub, or DIR/sub/<id><ext> for the per-run ones. */
static const struct { const char *sub, *ext; int per_run; } paths[] = {
    [PDBX_PATH_RUNS] = {"runs", "", 0},     [PDBX_PATH_INDEX] = {"index.json", "", 0},
    [PDBX_PATH_LOGS] = {"logs", "", 0},     [PDBX_PATH_RUN] = {"runs", RUN_EXT, 1},
    [PDBX_PATH_LOG] = {"logs", ".log", 1},  [PDBX_PATH_SPEC] = {"logs", ".spec.json", 1},
    [PDBX_PATH_STOP] = {"logs", ".stop", 1},
    [PDBX_PATH_VALIDATIONS] = {"runs", ".validations.jsonl", 1},
};

int pdbx_layout_path(pdbx_layout_what what, const char *dir, const char *id, char *buf, size_t len)
{
    int n;
    if (paths[what].per_run)
        n = snprintf(buf, len, "%s/%s/%s%s", dir, paths[what].sub, id ? id : "", paths[what].ext);
    else
        n = snprintf(buf, len, "%s/%s", dir, paths[what].sub);
    return (n < 0 || (size_t)n >= len) ? -1 : 0;
}

char *pdbx_layout_path_alloc(pdbx_layout_what what, const char *dir, const char *id)
{
    size_t len = strlen(dir) + (id ? strlen(id) : 0) + 32;
    char *p = malloc(len);
    if (p && pdbx_layout_path(what, dir, id, p, len) != 0) {
        free(p);
        p = NULL;
    }
    return p;
}

int pdbx_layout_valid_id(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n >= PDBX_RUN_ID_MAX || id[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return 0;
    }
    return 1;
}

static int has_run_ext(const char *name, size_t n)
{
    size_t el = strlen(RUN_EXT);
    return n > el && strcmp(name + n - el, RUN_EXT) == 0;
}

int pdbx_layout_run_id_of_name(const char *name, char id[PDBX_RUN_ID_MAX])
{
    size_t n = strlen(name), el = strlen(RUN_EXT);
    if (!has_run_ext(name, n) || n - el >= PDBX_RUN_ID_MAX)
        return 0;
    memcpy(id, name, n - el);
    id[n - el] = '\0';
    return pdbx_layout_valid_id(id);
}

int pdbx_layout_is_run_path(const char *arg)
{
    return arg && (strchr(arg, '/') || has_run_ext(arg, strlen(arg)));
}
