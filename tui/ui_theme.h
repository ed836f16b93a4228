/* ui_theme.h: semantic colours x schemes (htop CRT_colorSchemes, ncdu UI_COLORS, btop themes).
 *
 * Views never name colours: they draw with a role (UI_C_HEADER, UI_C_WORSE, ...). A theme maps
 * each role to a foreground, a background and attributes. Themes are files
 * themes/<name>.theme of "role = FG [on BG] [bold] [reverse] [dim] [underline]" lines
 * ('#' comments; colours: default, black, red, green, yellow, blue, magenta, cyan, white,
 * bright-<colour>, or 0-255). Unknown roles are ignored with a warning; roles a file does not
 * set keep the built-in default-dark value. A file with a malformed line or value is rejected
 * with a message naming file, line, role and value, and the built-in default is used.
 *
 * Monochrome (NO_COLOR set, --no-color, or a terminal without colours) ignores colours and
 * uses each role's attributes from the monochrome scheme (bold/reverse/dim/underline), so
 * every element stays distinguishable.
 */
#ifndef PDBX_UI_THEME_H
#define PDBX_UI_THEME_H

#include <stddef.h>

typedef enum {
    UI_C_NORMAL = 0, UI_C_TITLE, UI_C_KEYBAR, UI_C_KEY, UI_C_HEADER, UI_C_SELECTED, UI_C_MARKED,
    UI_C_DIM, UI_C_ERROR, UI_C_INFO, UI_C_OK, UI_C_RUNNING, UI_C_WARNING, UI_C_BAD,
    UI_C_PENDING, UI_C_BETTER, UI_C_WORSE, UI_C_AXIS, UI_C_FIELD, UI_C_FIELD_ACTIVE, UI_C_TAB,
    UI_C_TAB_ACTIVE,
    UI_C_SERIES0, UI_C_SERIES1, UI_C_SERIES2, UI_C_SERIES3, UI_C_SERIES4, UI_C_SERIES5,
    UI_C_SERIES6, UI_C_SERIES7,
    UI_C_COUNT
} ui_role;

enum { UI_A_BOLD = 1, UI_A_REVERSE = 2, UI_A_DIM = 4, UI_A_UNDERLINE = 8 };
#define UI_COLOR_DEFAULT (-1)

typedef struct {
    short fg, bg;            /* curses colour numbers, -1 = terminal default */
    int attrs;               /* UI_A_* */
} ui_style;

typedef struct {
    char name[64];
    ui_style role[UI_C_COUNT];
} ui_theme;

#define UI_THEME_WARN_MAX 8
typedef struct {
    int n;
    char msg[UI_THEME_WARN_MAX][160];
} ui_theme_warnings;

const char *ui_role_name(ui_role r);          /* key in theme files: "header", "series0" */
int ui_role_from_name(const char *name);      /* -1 when unknown */

/* The built-in schemes: default-dark (colours) and monochrome (attributes only). */
void ui_theme_builtin_default(ui_theme *out);
void ui_theme_builtin_mono(ui_theme *out);

/* Parses theme text over the built-in default. Returns 0 (warnings for unknown roles in *w,
 * which may be NULL), or -1 with err naming "<origin>:<line>: ..." and *out left as the
 * built-in default. */
int ui_theme_parse(const char *text, const char *origin, ui_theme *out, ui_theme_warnings *w,
                   char *err, size_t errlen);
/* Reads and parses a file (a path). Same results as ui_theme_parse; on -1 *out is the default. */
int ui_theme_load_file(const char *path, ui_theme *out, ui_theme_warnings *w, char *err, size_t errlen);

/* Directory of theme files: $PDBX_THEMES, else <exe dir>/../../themes (build tree), else
 * <exe dir>/../share/pdbx/themes. */
const char *ui_themes_dir(void);
/* Theme names (file names without .theme) in the themes dir, sorted. Returns the count. */
int ui_theme_names(char (*out)[64], int cap);
/* Loads a theme by name (from ui_themes_dir) or by path (contains '/' or ends in .theme). */
int ui_theme_load(const char *name_or_path, ui_theme *out, ui_theme_warnings *w, char *err, size_t errlen);

/* ---- curses side ------------------------------------------------------------------------ */
/* Sets up colour pairs for the theme (colour mode) or nothing (mono). Call after initscr. */
void ui_theme_apply(const ui_theme *t, int mono);
/* The curses attribute (pair + attrs) of a role under the applied theme. */
int ui_theme_attr(ui_role r);

#endif
