/* fuzz_theme.c: theme files (tui/ui_theme.c: ui_theme_load_file, the reader of
 * themes/<name>.theme and of `--theme PATH`). Checks the parser's contract (ui_theme.h): on
 * success every role has a colour in -1..255 and only known attribute bits; on failure the
 * theme is the built-in default and the message names the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_common.h"
#include "tui/ui_theme.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/fuzz.theme", fuzz_tmpdir());
    fuzz_write_file(path, data, size);
    ui_theme t, def;
    ui_theme_warnings w;
    memset(&w, 0, sizeof w);
    int rc = ui_theme_load_file(path, &t, &w, err, sizeof err);
    if (rc == 0) {
        for (int r = 0; r < UI_C_COUNT; r++) {
            const ui_style *s = &t.role[r];
            if (s->fg < -1 || s->fg > 255 || s->bg < -1 || s->bg > 255 ||
                (s->attrs & ~(UI_A_BOLD | UI_A_REVERSE | UI_A_DIM | UI_A_UNDERLINE))) {
                fprintf(stderr, "fuzz_theme: role %s got fg %d bg %d attrs %d\n",
                        ui_role_name((ui_role)r), s->fg, s->bg, s->attrs);
                abort();
            }
        }
        if (w.n < 0 || w.n > UI_THEME_WARN_MAX)
            abort();
    } else {
        ui_theme_builtin_default(&def);
        if (memcmp(t.role, def.role, sizeof def.role) != 0 || !strstr(err, path)) {
            fprintf(stderr, "fuzz_theme: a refused theme is not the default or '%s' does not name "
                    "the file\n", err);
            abort();
        }
    }
    return 0;
}
