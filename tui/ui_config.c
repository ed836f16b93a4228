/* ui_config.c: see ui_config.h. */
#include "tui/ui_config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/util/fs.h"

int ui_config_path(char *buf, size_t len)
{
    const char *env = getenv("PDBX_CONFIG");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return 0;
    }
    const char *xdg = getenv("XDG_CONFIG_HOME");
    if (xdg && *xdg) {
        snprintf(buf, len, "%s/pdbx/config", xdg);
        return 0;
    }
    const char *home = getenv("HOME");
    if (home && *home) {
        snprintf(buf, len, "%s/.config/pdbx/config", home);
        return 0;
    }
    return -1;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

void ui_config_parse(const char *text, ui_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    char line[512];
    while (text && *text) {
        const char *nl = strchr(text, '\n');
        size_t n = nl ? (size_t)(nl - text) : strlen(text);
        if (n >= sizeof(line)) n = sizeof(line) - 1;
        memcpy(line, text, n);
        line[n] = '\0';
        text = nl ? nl + 1 : NULL;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = '\0';
        char *k = trim(line), *v = trim(eq + 1);
        if (strcmp(k, "theme") == 0)
            snprintf(cfg->theme, sizeof(cfg->theme), "%s", v);
        else if (strcmp(k, "ascii") == 0)
            cfg->ascii = strcmp(v, "1") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "true") == 0;
    }
}

static int read_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    return 0;
}

int ui_config_load(ui_config *cfg, char *err, size_t errlen)
{
    char path[PATH_MAX], text[4096];
    memset(cfg, 0, sizeof(*cfg));
    if (ui_config_path(path, sizeof(path)) != 0)
        return 0;
    if (read_file(path, text, sizeof(text)) != 0) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    ui_config_parse(text, cfg);
    return 0;
}

int ui_config_save_if_changed(const ui_config *cfg, char *err, size_t errlen)
{
    char path[PATH_MAX], text[4096];
    if (ui_config_path(path, sizeof(path)) != 0) {
        snprintf(err, errlen, "config: no PDBX_CONFIG, XDG_CONFIG_HOME or HOME to save to");
        return -1;
    }
    ui_config old;
    memset(&old, 0, sizeof(old));
    if (read_file(path, text, sizeof(text)) == 0)
        ui_config_parse(text, &old);
    if (strcmp(old.theme, cfg->theme) == 0 && old.ascii == cfg->ascii)
        return 0;
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        char why[PATH_MAX + 96];
        if (pdbx_mkdirs(dir, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "config: %s", why);
            return -1;
        }
    }
    int n = snprintf(text, sizeof(text), "# pdbx explorer settings (written by pdbx)\ntheme = %s\nascii = %d\n",
                     cfg->theme, cfg->ascii);
    return pdbx_durable_write(path, text, (size_t)n, err, errlen);
}
