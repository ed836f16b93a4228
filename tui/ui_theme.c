/* ui_theme.c: see ui_theme.h. */
#include "tui/ui_theme.h"
#include "store/util/proc.h"

#include <ctype.h>
#include <curses.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const role_names[UI_C_COUNT] = {
    "normal", "title", "keybar", "key", "header", "selected", "marked", "dim", "error", "info",
    "ok", "running", "warning", "bad", "pending", "better", "worse", "axis", "field",
    "field_active", "tab", "tab_active",
    "series0", "series1", "series2", "series3", "series4", "series5", "series6", "series7",
};

static const char *const colour_names[8] = {
    "black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"
};

const char *ui_role_name(ui_role r)
{
    return (r >= 0 && r < UI_C_COUNT) ? role_names[r] : "?";
}

int ui_role_from_name(const char *name)
{
    for (int i = 0; i < UI_C_COUNT; i++)
        if (strcmp(role_names[i], name) == 0)
            return i;
    return -1;
}

#define D UI_COLOR_DEFAULT
void ui_theme_builtin_default(ui_theme *out)
{
    static const ui_style dark[UI_C_COUNT] = {
        [UI_C_NORMAL] = { D, D, 0 },
        [UI_C_TITLE] = { COLOR_BLACK, COLOR_CYAN, UI_A_BOLD },
        [UI_C_KEYBAR] = { COLOR_WHITE, COLOR_BLUE, 0 },
        [UI_C_KEY] = { COLOR_YELLOW, COLOR_BLUE, UI_A_BOLD },
        [UI_C_HEADER] = { COLOR_YELLOW, D, UI_A_BOLD },
        [UI_C_SELECTED] = { COLOR_BLACK, COLOR_CYAN, 0 },
        [UI_C_MARKED] = { COLOR_MAGENTA, D, UI_A_BOLD },
        [UI_C_DIM] = { D, D, UI_A_DIM },
        [UI_C_ERROR] = { COLOR_WHITE, COLOR_RED, UI_A_BOLD },
        [UI_C_INFO] = { COLOR_CYAN, D, 0 },
        [UI_C_OK] = { COLOR_GREEN, D, 0 },
        [UI_C_RUNNING] = { COLOR_CYAN, D, UI_A_BOLD },
        [UI_C_WARNING] = { COLOR_YELLOW, D, 0 },
        [UI_C_BAD] = { COLOR_RED, D, UI_A_BOLD },
        [UI_C_PENDING] = { D, D, UI_A_DIM },
        [UI_C_BETTER] = { COLOR_GREEN, D, UI_A_BOLD },
        [UI_C_WORSE] = { COLOR_RED, D, UI_A_BOLD },
        [UI_C_AXIS] = { D, D, UI_A_DIM },
        [UI_C_FIELD] = { D, D, UI_A_UNDERLINE },
        [UI_C_FIELD_ACTIVE] = { COLOR_BLACK, COLOR_YELLOW, 0 },
        [UI_C_TAB] = { D, D, 0 },
        [UI_C_TAB_ACTIVE] = { COLOR_BLACK, COLOR_CYAN, UI_A_BOLD },
        [UI_C_SERIES0] = { COLOR_GREEN, D, 0 },
        [UI_C_SERIES1] = { COLOR_YELLOW, D, 0 },
        [UI_C_SERIES2] = { COLOR_CYAN, D, 0 },
        [UI_C_SERIES3] = { COLOR_MAGENTA, D, 0 },
        [UI_C_SERIES4] = { COLOR_BLUE, D, UI_A_BOLD },
        [UI_C_SERIES5] = { COLOR_RED, D, 0 },
        [UI_C_SERIES6] = { COLOR_WHITE, D, UI_A_BOLD },
        [UI_C_SERIES7] = { COLOR_GREEN, D, UI_A_BOLD },
    };
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "default-dark");
    memcpy(out->role, dark, sizeof(dark));
}

void ui_theme_builtin_mono(ui_theme *out)
{
    static const int mono[UI_C_COUNT] = {
        [UI_C_NORMAL] = 0,
        [UI_C_TITLE] = UI_A_REVERSE | UI_A_BOLD,
        [UI_C_KEYBAR] = UI_A_REVERSE,
        [UI_C_KEY] = UI_A_REVERSE | UI_A_BOLD,
        [UI_C_HEADER] = UI_A_BOLD | UI_A_UNDERLINE,
        [UI_C_SELECTED] = UI_A_REVERSE,
        [UI_C_MARKED] = UI_A_BOLD | UI_A_UNDERLINE,
        [UI_C_DIM] = UI_A_DIM,
        [UI_C_ERROR] = UI_A_REVERSE | UI_A_BOLD,
        [UI_C_INFO] = UI_A_BOLD,
        [UI_C_OK] = 0,
        [UI_C_RUNNING] = UI_A_BOLD,
        [UI_C_WARNING] = UI_A_UNDERLINE,
        [UI_C_BAD] = UI_A_BOLD | UI_A_UNDERLINE,
        [UI_C_PENDING] = UI_A_DIM,
        [UI_C_BETTER] = UI_A_BOLD,
        [UI_C_WORSE] = UI_A_UNDERLINE,
        [UI_C_AXIS] = UI_A_DIM,
        [UI_C_FIELD] = UI_A_UNDERLINE,
        [UI_C_FIELD_ACTIVE] = UI_A_REVERSE,
        [UI_C_TAB] = 0,
        [UI_C_TAB_ACTIVE] = UI_A_REVERSE | UI_A_BOLD,
    };
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "monochrome");
    for (int i = 0; i < UI_C_COUNT; i++)
        out->role[i] = (ui_style){ D, D, mono[i] };
}
#undef D

/* One colour word: 0 ok (*c set), -1 not a colour. */
static int parse_colour(const char *w, short *c)
{
    if (strcmp(w, "default") == 0) { *c = UI_COLOR_DEFAULT; return 0; }
    int bright = 0;
    if (strncmp(w, "bright-", 7) == 0) { bright = 8; w += 7; }
    for (int i = 0; i < 8; i++)
        if (strcmp(w, colour_names[i]) == 0) { *c = (short)(i + bright); return 0; }
    if (bright)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(w, &end, 10);
    if (*w && !*end && !errno && v >= 0 && v <= 255) { *c = (short)v; return 0; }
    return -1;
}

/* "FG [on BG] [bold] [reverse] [dim] [underline]": 0, or -1 naming the bad word in err. */
static int parse_style(char *value, ui_style *st, char *err, size_t errlen)
{
    ui_style s = { UI_COLOR_DEFAULT, UI_COLOR_DEFAULT, 0 };
    int want_bg = 0, have_fg = 0;
    for (char *save = NULL, *w = strtok_r(value, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
        short c;
        if (strcmp(w, "on") == 0) { want_bg = 1; continue; }
        if (strcmp(w, "bold") == 0) { s.attrs |= UI_A_BOLD; continue; }
        if (strcmp(w, "reverse") == 0) { s.attrs |= UI_A_REVERSE; continue; }
        if (strcmp(w, "dim") == 0) { s.attrs |= UI_A_DIM; continue; }
        if (strcmp(w, "underline") == 0) { s.attrs |= UI_A_UNDERLINE; continue; }
        if (strcmp(w, "normal") == 0) continue;
        if (parse_colour(w, &c) == 0) {
            if (want_bg) { s.bg = c; want_bg = 0; }
            else if (!have_fg) { s.fg = c; have_fg = 1; }
            else { snprintf(err, errlen, "second foreground colour '%s' (write 'FG on BG')", w); return -1; }
            continue;
        }
        snprintf(err, errlen, "unknown word '%s' (allowed: default, black, red, green, yellow, "
                 "blue, magenta, cyan, white, bright-<colour>, 0-255, on, bold, reverse, dim, "
                 "underline)", w);
        return -1;
    }
    if (want_bg) {
        snprintf(err, errlen, "'on' without a background colour");
        return -1;
    }
    *st = s;
    return 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

int ui_theme_parse(const char *text, const char *origin, ui_theme *out, ui_theme_warnings *w,
                   char *err, size_t errlen)
{
    ui_theme t;
    ui_theme_builtin_default(&t);
    if (w) w->n = 0;
    char *copy = strdup(text ? text : "");
    if (!copy) {
        snprintf(err, errlen, "%s: out of memory", origin);
        ui_theme_builtin_default(out);
        return -1;
    }
    int lineno = 0;
    char *p = copy;           /* split by hand: strtok would lose empty lines' numbers */
    while (p) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        lineno++;
        char *hash = strchr(p, '#');
        if (hash) *hash = '\0';
        char *line = trim(p);
        p = nl ? nl + 1 : NULL;
        if (!*line)
            continue;
        char *eq = strchr(line, '=');
        if (!eq) {
            snprintf(err, errlen, "%s:%d: expected 'role = colours', got '%.60s'", origin, lineno, line);
            goto fail;
        }
        *eq = '\0';
        char *key = trim(line), *value = trim(eq + 1);
        if (strcmp(key, "name") == 0) {
            snprintf(t.name, sizeof(t.name), "%s", value);
            continue;
        }
        int role = ui_role_from_name(key);
        if (role < 0) {
            if (w && w->n < UI_THEME_WARN_MAX)
                snprintf(w->msg[w->n++], sizeof(w->msg[0]), "%s:%d: unknown role '%.40s' ignored",
                         origin, lineno, key);
            continue;
        }
        char why[200];
        char vcopy[256];
        snprintf(vcopy, sizeof(vcopy), "%s", value);
        if (parse_style(vcopy, &t.role[role], why, sizeof(why)) != 0) {
            snprintf(err, errlen, "%s:%d: %s = %.40s: %s", origin, lineno, key, value, why);
            goto fail;
        }
    }
    free(copy);
    *out = t;
    return 0;
fail:
    free(copy);
    ui_theme_builtin_default(out);
    return -1;
}

int ui_theme_load_file(const char *path, ui_theme *out, ui_theme_warnings *w, char *err, size_t errlen)
{
    char *buf = NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto fail;
    }
    size_t cap = 1 << 16;
    buf = malloc(cap);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    size_t n = fread(buf, 1, cap - 1, f);
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        goto fail;
    }
    buf[n] = '\0';
    fclose(f);
    f = NULL;
    int rc = ui_theme_parse(buf, path, out, w, err, errlen);
    if (rc == 0) {
        /* the file name is the theme's name unless the file says otherwise */
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        ui_theme def;
        ui_theme_builtin_default(&def);
        if (strcmp(out->name, def.name) == 0) {
            snprintf(out->name, sizeof(out->name), "%s", base);
            char *dot = strstr(out->name, ".theme");
            if (dot) *dot = '\0';
        }
    }
    free(buf);
    return rc;
fail:
    if (f) fclose(f);
    free(buf);
    ui_theme_builtin_default(out);
    return -1;
}

const char *ui_themes_dir(void)
{
    static char dir[PATH_MAX];
    const char *env = getenv("PDBX_THEMES");
    if (env && *env) {
        snprintf(dir, sizeof(dir), "%s", env);
        return dir;
    }
    char exe[PATH_MAX];
    if (pdbx_exe_dir(exe, sizeof(exe)) == 0) {
        snprintf(dir, sizeof(dir), "%.*s/../../themes", (int)(sizeof(dir) - 20), exe);
        if (access(dir, R_OK) == 0)
            return dir;
        snprintf(dir, sizeof(dir), "%.*s/../share/pdbx/themes", (int)(sizeof(dir) - 30), exe);
        if (access(dir, R_OK) == 0)
            return dir;
    }
    snprintf(dir, sizeof(dir), "themes");
    return dir;
}

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

int ui_theme_names(char (*out)[64], int cap)
{
    DIR *d = opendir(ui_themes_dir());
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        size_t len = strlen(e->d_name);
        if (len > 6 && len < 64 && strcmp(e->d_name + len - 6, ".theme") == 0) {
            memcpy(out[n], e->d_name, len - 6);
            out[n][len - 6] = '\0';
            n++;
        }
    }
    closedir(d);
    qsort(out, (size_t)n, sizeof(out[0]), cmp_name);
    return n;
}

int ui_theme_load(const char *name_or_path, ui_theme *out, ui_theme_warnings *w, char *err, size_t errlen)
{
    size_t len = strlen(name_or_path);
    if (strchr(name_or_path, '/') || (len > 6 && strcmp(name_or_path + len - 6, ".theme") == 0))
        return ui_theme_load_file(name_or_path, out, w, err, errlen);
    if (len == 0 || len > 60) {
        snprintf(err, errlen, "theme: '%s' is not a theme name", name_or_path);
        ui_theme_builtin_default(out);
        return -1;
    }
    char path[PATH_MAX + 80];
    snprintf(path, sizeof(path), "%s/%s.theme", ui_themes_dir(), name_or_path);
    if (access(path, R_OK) != 0) {
        char names[32][64], list[512] = "";
        int k = ui_theme_names(names, 32);
        size_t ln = 0;
        for (int i = 0; i < k && ln < sizeof(list) - 70; i++)
            ln += (size_t)snprintf(list + ln, sizeof(list) - ln, "%s%s", i ? ", " : "", names[i]);
        snprintf(err, errlen, "theme: unknown theme '%s' (allowed: %s)", name_or_path, k ? list : "none found");
        ui_theme_builtin_default(out);
        return -1;
    }
    return ui_theme_load_file(path, out, w, err, errlen);
}

/* ---- curses side ------------------------------------------------------------------------ */
static int role_attr[UI_C_COUNT];

static int attrs_to_curses(int a)
{
    int r = 0;
    if (a & UI_A_BOLD) r |= A_BOLD;
    if (a & UI_A_REVERSE) r |= A_REVERSE;
    if (a & UI_A_DIM) r |= A_DIM;
    if (a & UI_A_UNDERLINE) r |= A_UNDERLINE;
    return r;
}

static short fit_colour(short c)
{
    if (c < 0) return c;
    if (c >= COLORS) return (short)(c % 8);
    return c;
}

void ui_theme_apply(const ui_theme *t, int mono)
{
    ui_theme m;
    if (mono) {
        ui_theme_builtin_mono(&m);
        /* a theme file whose roles use no colour at all is itself a monochrome scheme */
        int colourless = 1;
        for (int i = 0; i < UI_C_COUNT; i++)
            colourless &= t->role[i].fg < 0 && t->role[i].bg < 0;
        if (colourless) m = *t;
        for (int i = 0; i < UI_C_COUNT; i++)
            role_attr[i] = attrs_to_curses(m.role[i].attrs);
        return;
    }
    for (int i = 0; i < UI_C_COUNT; i++) {
        init_pair((short)(i + 1), fit_colour(t->role[i].fg), fit_colour(t->role[i].bg));
        role_attr[i] = (int)COLOR_PAIR(i + 1) | attrs_to_curses(t->role[i].attrs);
    }
}

int ui_theme_attr(ui_role r)
{
    return (r >= 0 && r < UI_C_COUNT) ? role_attr[r] : 0;
}
