/* ui_config.h: the explorer's user config (the saved theme choice and chart glyph choice).
 *
 * Lookup: $PDBX_CONFIG (a file), else $XDG_CONFIG_HOME/pdbx/config, else
 * ~/.config/pdbx/config, else built-in defaults. Format: "key = value" lines, '#' comments;
 * unknown keys are kept out of the struct and ignored. Command-line flags override the file.
 * The file is written (durably, creating its directory) only when a value changed.
 */
#ifndef PDBX_UI_CONFIG_H
#define PDBX_UI_CONFIG_H

#include <stddef.h>

typedef struct {
    char theme[64];          /* "" = default */
    int ascii;               /* 1: force ASCII charts */
} ui_config;

/* Path of the config file (may not exist). Returns 0, or -1 when no HOME is known. */
int ui_config_path(char *buf, size_t len);
/* Parses text into *cfg (starting from defaults). Unknown keys are ignored. */
void ui_config_parse(const char *text, ui_config *cfg);
/* Loads the file at ui_config_path; a missing file gives defaults and returns 0. */
int ui_config_load(ui_config *cfg, char *err, size_t errlen);
/* Writes cfg when it differs from what the file holds; returns 0, or -1 with err. */
int ui_config_save_if_changed(const ui_config *cfg, char *err, size_t errlen);

#endif
