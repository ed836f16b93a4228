/* Unit tests of tui/ui_theme (parsing theme files: fallbacks, warnings, clear errors; the
 * shipped themes) and tui/ui_config (lookup order, save only when changed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <curses.h>
#include <cmocka.h>

#include "tui/ui_config.h"
#include "tui/ui_theme.h"

static void test_parse_sets_roles_and_falls_back(void **state)
{
    (void)state;
    ui_theme t, def;
    ui_theme_builtin_default(&def);
    ui_theme_warnings w;
    char err[256] = "";
    const char *text = "# a comment\n"
                       "\n"
                       "header = red on blue bold underline\n"
                       "  worse=bright-red   # trailing comment\n"
                       "series3 = 208 on 17\n";
    assert_int_equal(ui_theme_parse(text, "t.theme", &t, &w, err, sizeof(err)), 0);
    assert_int_equal(w.n, 0);
    assert_int_equal(t.role[UI_C_HEADER].fg, COLOR_RED);
    assert_int_equal(t.role[UI_C_HEADER].bg, COLOR_BLUE);
    assert_int_equal(t.role[UI_C_HEADER].attrs, UI_A_BOLD | UI_A_UNDERLINE);
    assert_int_equal(t.role[UI_C_WORSE].fg, 8 + COLOR_RED);
    assert_int_equal(t.role[UI_C_WORSE].bg, UI_COLOR_DEFAULT);
    assert_int_equal(t.role[UI_C_SERIES3].fg, 208);
    assert_int_equal(t.role[UI_C_SERIES3].bg, 17);
    /* roles the file does not set keep the default */
    assert_memory_equal(&t.role[UI_C_SELECTED], &def.role[UI_C_SELECTED], sizeof(ui_style));
    assert_memory_equal(&t.role[UI_C_TITLE], &def.role[UI_C_TITLE], sizeof(ui_style));
}

static void test_unknown_role_warns(void **state)
{
    (void)state;
    ui_theme t;
    ui_theme_warnings w;
    char err[256] = "";
    assert_int_equal(ui_theme_parse("headr = red\nok = green\n", "x.theme", &t, &w, err, sizeof(err)), 0);
    assert_int_equal(w.n, 1);
    assert_string_equal(w.msg[0], "x.theme:1: unknown role 'headr' ignored");
    assert_int_equal(t.role[UI_C_OK].fg, COLOR_GREEN);
}

static void test_bad_value_rejected_with_clear_message(void **state)
{
    (void)state;
    ui_theme t, def;
    ui_theme_builtin_default(&def);
    ui_theme_warnings w;
    char err[256] = "";
    assert_int_equal(ui_theme_parse("ok = green\nheader = purple bold\n", "bad.theme", &t, &w, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "bad.theme:2:"));
    assert_non_null(strstr(err, "header"));
    assert_non_null(strstr(err, "'purple'"));
    assert_non_null(strstr(err, "allowed"));
    /* the whole theme falls back to the default, not a half-applied file */
    assert_memory_equal(t.role, def.role, sizeof(def.role));
    assert_int_equal(ui_theme_parse("just words\n", "b2.theme", &t, &w, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "b2.theme:1: expected 'role = colours'"));
    assert_int_equal(ui_theme_parse("ok = green on\n", "b3.theme", &t, &w, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "'on' without a background"));
    assert_int_equal(ui_theme_parse("ok = 256\n", "b4.theme", &t, &w, err, sizeof(err)), -1);
    assert_int_equal(ui_theme_parse("ok = red green\n", "b5.theme", &t, &w, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "second foreground"));
}

static void test_missing_file(void **state)
{
    (void)state;
    ui_theme t;
    char err[256] = "";
    assert_int_equal(ui_theme_load_file("/nonexistent/x.theme", &t, NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "/nonexistent/x.theme"));
    assert_string_equal(t.name, "default-dark");
    setenv("PDBX_THEMES", PDBX_SOURCE_DIR "/themes", 1);
    assert_int_equal(ui_theme_load("no-such-theme", &t, NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "unknown theme 'no-such-theme'"));
    assert_non_null(strstr(err, "monochrome"));          /* lists what exists */
}

static void test_shipped_themes_parse_cleanly(void **state)
{
    (void)state;
    setenv("PDBX_THEMES", PDBX_SOURCE_DIR "/themes", 1);
    char names[16][64];
    int n = ui_theme_names(names, 16);
    const char *want[] = { "default-dark", "high-contrast", "light", "monochrome" };
    int found = 0;
    for (int i = 0; i < n; i++) {
        ui_theme t;
        ui_theme_warnings w;
        char err[256] = "";
        assert_int_equal(ui_theme_load(names[i], &t, &w, err, sizeof(err)), 0);
        assert_int_equal(w.n, 0);                         /* every role name is known */
        assert_string_equal(t.name, names[i]);
        for (size_t k = 0; k < 4; k++)
            found += strcmp(names[i], want[k]) == 0;
        if (strcmp(names[i], "monochrome") == 0)
            for (int r = 0; r < UI_C_COUNT; r++) {
                assert_int_equal(t.role[r].fg, UI_COLOR_DEFAULT);
                assert_int_equal(t.role[r].bg, UI_COLOR_DEFAULT);
            }
    }
    assert_int_equal(found, 4);
    /* the default-dark file is the built-in default */
    ui_theme f, def;
    char err[256];
    ui_theme_builtin_default(&def);
    assert_int_equal(ui_theme_load("default-dark", &f, NULL, err, sizeof(err)), 0);
    assert_memory_equal(f.role, def.role, sizeof(def.role));
}

static void test_mono_distinguishes_key_roles(void **state)
{
    (void)state;
    ui_theme m;
    ui_theme_builtin_mono(&m);
    /* selection, title, errors and better/worse must not look like plain text */
    const ui_role must[] = { UI_C_TITLE, UI_C_SELECTED, UI_C_ERROR, UI_C_BETTER, UI_C_WORSE,
                             UI_C_HEADER, UI_C_FIELD_ACTIVE, UI_C_TAB_ACTIVE };
    for (size_t i = 0; i < sizeof(must) / sizeof(must[0]); i++)
        assert_true(m.role[must[i]].attrs != 0);
    assert_true(m.role[UI_C_BETTER].attrs != m.role[UI_C_WORSE].attrs);
    assert_int_equal(ui_role_from_name("field_active"), UI_C_FIELD_ACTIVE);
    assert_int_equal(ui_role_from_name("nope"), -1);
    assert_string_equal(ui_role_name(UI_C_SERIES7), "series7");
}

static void test_config_lookup_and_save_only_when_changed(void **state)
{
    (void)state;
    char dir[] = "/tmp/pdbx-test-tui-config.XXXXXX", path[128], p2[128], err[256];
    assert_non_null(mkdtemp(dir));
    /* lookup order: PDBX_CONFIG, then XDG_CONFIG_HOME/pdbx/config, then ~/.config/pdbx/config */
    setenv("HOME", dir, 1);
    unsetenv("PDBX_CONFIG");
    unsetenv("XDG_CONFIG_HOME");
    assert_int_equal(ui_config_path(path, sizeof(path)), 0);
    snprintf(p2, sizeof(p2), "%s/.config/pdbx/config", dir);
    assert_string_equal(path, p2);
    setenv("XDG_CONFIG_HOME", "/xdg", 1);
    ui_config_path(path, sizeof(path));
    assert_string_equal(path, "/xdg/pdbx/config");
    snprintf(p2, sizeof(p2), "%s/sub/dir/cfg", dir);
    setenv("PDBX_CONFIG", p2, 1);
    ui_config_path(path, sizeof(path));
    assert_string_equal(path, p2);
    /* a missing file is the defaults */
    ui_config c;
    assert_int_equal(ui_config_load(&c, err, sizeof(err)), 0);
    assert_string_equal(c.theme, "");
    /* saving creates the directories and the file */
    snprintf(c.theme, sizeof(c.theme), "light");
    assert_int_equal(ui_config_save_if_changed(&c, err, sizeof(err)), 0);
    ui_config back;
    assert_int_equal(ui_config_load(&back, err, sizeof(err)), 0);
    assert_string_equal(back.theme, "light");
    /* unchanged values do not rewrite the file (a marker line survives) */
    FILE *f = fopen(p2, "a");
    assert_non_null(f);
    fputs("# marker\nunknown_key = 1\n", f);
    fclose(f);
    assert_int_equal(ui_config_save_if_changed(&c, err, sizeof(err)), 0);
    char text[512] = "";
    f = fopen(p2, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_non_null(strstr(text, "# marker"));
    /* a change rewrites it */
    snprintf(c.theme, sizeof(c.theme), "high-contrast");
    assert_int_equal(ui_config_save_if_changed(&c, err, sizeof(err)), 0);
    assert_int_equal(ui_config_load(&back, err, sizeof(err)), 0);
    assert_string_equal(back.theme, "high-contrast");
    unsetenv("PDBX_CONFIG");
    unsetenv("XDG_CONFIG_HOME");
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_sets_roles_and_falls_back),
        cmocka_unit_test(test_unknown_role_warns),
        cmocka_unit_test(test_bad_value_rejected_with_clear_message),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_shipped_themes_parse_cleanly),
        cmocka_unit_test(test_mono_distinguishes_key_roles),
        cmocka_unit_test(test_config_lookup_and_save_only_when_changed),
    };
    return cmocka_run_group_tests_name("tui_theme", tests, NULL, NULL);
}
