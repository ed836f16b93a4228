/* Unit tests of tui/ui_keys: dispatch, the generated help and key bar agree with the table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <curses.h>
#include <cmocka.h>

#include "tui/ui_keys.h"

static void test_dispatch(void **state)
{
    (void)state;
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, 'q'), UI_ACT_QUIT);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, KEY_F(10)), UI_ACT_QUIT);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, '?'), UI_ACT_HELP);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, KEY_F(1)), UI_ACT_HELP);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, 'j'), UI_ACT_DOWN);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, KEY_DOWN), UI_ACT_DOWN);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, 'k'), UI_ACT_UP);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, KEY_NPAGE), UI_ACT_PGDN);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, KEY_HOME), UI_ACT_HOME);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, '\n'), UI_ACT_OPEN);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, '/'), UI_ACT_FILTER);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, 'd'), UI_ACT_DELETE);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, 'n'), UI_ACT_NEW);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, 'r'), UI_ACT_REPLAY);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, 0x0c), UI_ACT_REDRAW);
    /* the same key means different things on different screens */
    assert_int_equal(ui_keys_action(UI_SCR_MONITOR, 'c'), UI_ACT_CANCEL_SWEEP);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, 'c'), UI_ACT_COMPARE);
    assert_int_equal(ui_keys_action(UI_SCR_RUNVIEW, 's'), UI_ACT_STAT);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, 's'), UI_ACT_SORT);
    assert_int_equal(ui_keys_action(UI_SCR_MONITOR, 27), UI_ACT_BACK);
    assert_int_equal(ui_keys_action(UI_SCR_RUNVIEW, KEY_BACKSPACE), UI_ACT_BACK);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, 'Z'), UI_ACT_NONE);
}

static void test_text_screens_leave_printables_alone(void **state)
{
    (void)state;
    /* form fields and the export dialog take every printable key as text */
    for (int c = 32; c < 127; c++) {
        assert_true(ui_keys_is_text_key(c));
        assert_int_equal(ui_keys_action(UI_SCR_FORM, c), UI_ACT_NONE);
        assert_int_equal(ui_keys_action(UI_SCR_EXPORT, c), UI_ACT_NONE);
    }
    assert_false(ui_keys_is_text_key('\n'));
    assert_false(ui_keys_is_text_key(KEY_UP));
    /* but they still quit, get help and go back with non-printing keys */
    assert_int_equal(ui_keys_action(UI_SCR_FORM, KEY_F(10)), UI_ACT_QUIT);
    assert_int_equal(ui_keys_action(UI_SCR_FORM, KEY_F(1)), UI_ACT_HELP);
    assert_int_equal(ui_keys_action(UI_SCR_FORM, 27), UI_ACT_BACK);
    assert_int_equal(ui_keys_action(UI_SCR_FORM, KEY_F(5)), UI_ACT_LAUNCH);
}

static void test_every_binding_is_described(void **state)
{
    (void)state;
    size_t n;
    const ui_binding *t = ui_keys_table(&n);
    assert_true(n > 20);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(t[i].desc);
        assert_true(strlen(t[i].desc) > 3);
        assert_true(t[i].screens != 0);
        assert_true(t[i].action > UI_ACT_NONE && t[i].action < UI_ACT_COUNT);
        /* no key is bound twice on one screen (the first binding would hide the second) */
        for (size_t j = 0; j < i; j++)
            if (t[j].key == t[i].key && (t[j].screens & t[i].screens))
                assert_int_equal(t[j].action, t[i].action);
    }
}

static void test_help_is_generated_from_the_table(void **state)
{
    (void)state;
    char lines[64][128];
    int n = ui_keys_help(UI_SCR_RUNS, lines, 64);
    assert_true(n > 8);
    int quit = 0, filter = 0, enter = 0;
    for (int i = 0; i < n; i++) {
        if (strstr(lines[i], "q, F10") && strstr(lines[i], "quit")) quit++;
        if (strstr(lines[i], "/") && strstr(lines[i], "filter")) filter++;
        if (strstr(lines[i], "Enter") && strstr(lines[i], "open")) {
            enter++;
            /* "\n", "\r" and KEY_ENTER collapse to one name */
            assert_null(strstr(strstr(lines[i], "Enter") + 1, "Enter"));
        }
    }
    assert_int_equal(quit, 1);
    assert_int_equal(filter, 1);
    assert_int_equal(enter, 1);
    /* the monitor's help has cancel, the home screen's does not */
    n = ui_keys_help(UI_SCR_MONITOR, lines, 64);
    int cancel = 0;
    for (int i = 0; i < n; i++)
        cancel += strstr(lines[i], "cancel the sweep") != NULL;
    assert_int_equal(cancel, 1);
}

static void test_bar(void **state)
{
    (void)state;
    char bar[256];
    size_t n = ui_keys_bar(UI_SCR_RUNS, 200, bar, sizeof(bar));
    assert_int_equal(n, strlen(bar));
    assert_non_null(strstr(bar, "? help"));
    assert_non_null(strstr(bar, "q quit"));
    assert_non_null(strstr(bar, "n new"));
    assert_null(strstr(bar, "F10 quit"));      /* one key per action */
    /* cut at a pair boundary, never mid-label */
    n = ui_keys_bar(UI_SCR_RUNS, 20, bar, sizeof(bar));
    assert_true(n <= 20);
    assert_string_equal(bar, "? help  q quit  ...");     /* "..." says there are more */
    n = ui_keys_bar(UI_SCR_RUNS, 19, bar, sizeof(bar));
    assert_string_equal(bar, "? help  q quit  ...");
    n = ui_keys_bar(UI_SCR_RUNS, 18, bar, sizeof(bar));
    assert_string_equal(bar, "? help  ...");              /* a whole pair gives way */
    n = ui_keys_bar(UI_SCR_RUNS, 2, bar, sizeof(bar));
    assert_int_equal(n, 0);
    n = ui_keys_bar(UI_SCR_MONITOR, 200, bar, sizeof(bar));
    assert_non_null(strstr(bar, "c cancel"));
    assert_non_null(strstr(bar, "Esc back"));
    /* a tiny buffer never overflows */
    char tiny[8];
    n = ui_keys_bar(UI_SCR_RUNS, 200, tiny, sizeof(tiny));
    assert_true(n < sizeof(tiny));
}

static void test_key_names(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(ui_keys_name(KEY_F(10), b, sizeof(b)), "F10");
    assert_string_equal(ui_keys_name(27, b, sizeof(b)), "Esc");
    assert_string_equal(ui_keys_name(0x0c, b, sizeof(b)), "^L");
    assert_string_equal(ui_keys_name('x', b, sizeof(b)), "x");
    assert_string_equal(ui_keys_name(KEY_PPAGE, b, sizeof(b)), "PgUp");
}

/* The one field editor of the form and the export dialog: insert at the cursor, move,
 * delete on both sides, clear, and refuse (without damage) what does not fit. */
static void test_field_edit(void **state)
{
    (void)state;
    char t[6] = "ac";
    int cur = 1;
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, 'b', UI_ACT_NONE), UI_EDIT_CHANGED);
    assert_string_equal(t, "abc");
    assert_int_equal(cur, 2);
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, KEY_RIGHT, UI_ACT_CHOICE_NEXT), UI_EDIT_MOVED);
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, KEY_RIGHT, UI_ACT_CHOICE_NEXT), UI_EDIT_MOVED);
    assert_int_equal(cur, 3);                      /* stays at the end */
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, KEY_DC, UI_ACT_NONE), UI_EDIT_NOOP);
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, KEY_BACKSPACE, UI_ACT_NONE), UI_EDIT_CHANGED);
    assert_string_equal(t, "ab");
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, 1, UI_ACT_NONE), UI_EDIT_MOVED);   /* ^A */
    assert_int_equal(cur, 0);
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, 127, UI_ACT_NONE), UI_EDIT_NOOP);
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, KEY_DC, UI_ACT_NONE), UI_EDIT_CHANGED);
    assert_string_equal(t, "b");
    for (const char *p = "xyzw"; *p; p++)
        ui_keys_edit(t, sizeof t, &cur, *p, UI_ACT_NONE);
    assert_string_equal(t, "xyzwb");               /* full: 5 bytes and the NUL */
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, 'q', UI_ACT_NONE), UI_EDIT_NOOP);
    assert_string_equal(t, "xyzwb");
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, KEY_F(3), UI_ACT_NONE), UI_EDIT_NONE);
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, 21, UI_ACT_CLEAR_FIELD), UI_EDIT_CHANGED);
    assert_string_equal(t, "");
    assert_int_equal(cur, 0);
}

/* q closes the help and a replay (what a pager does); elsewhere it quits; F10 always quits. */
static void test_q_closes_views(void **state)
{
    (void)state;
    assert_int_equal(ui_keys_action(UI_SCR_HELP, 'q'), UI_ACT_BACK);
    assert_int_equal(ui_keys_action(UI_SCR_REPLAY, 'q'), UI_ACT_BACK);
    assert_int_equal(ui_keys_action(UI_SCR_HELP, KEY_F(10)), UI_ACT_QUIT);
    assert_int_equal(ui_keys_action(UI_SCR_REPLAY, KEY_F(10)), UI_ACT_QUIT);
    assert_int_equal(ui_keys_action(UI_SCR_MONITOR, 'q'), UI_ACT_QUIT);
    assert_int_equal(ui_keys_action(UI_SCR_RUNVIEW, 'q'), UI_ACT_QUIT);
}

/* The advise screen: opened by A from the run view, whose key bar shows it at 80 columns; its
 * own keys change the query (g/G GPUs, b/B global batch) where the run view's g is the log
 * scale; q closes it like the help, F10 quits; the list moves with the navigation keys. */
static void test_advise_keys(void **state)
{
    (void)state;
    assert_int_equal(ui_keys_action(UI_SCR_RUNVIEW, 'A'), UI_ACT_ADVISE);
    assert_int_equal(ui_keys_action(UI_SCR_RUNVIEW, 'g'), UI_ACT_LOG);
    assert_int_equal(ui_keys_action(UI_SCR_ADVISE, 'g'), UI_ACT_GPUS_LESS);
    assert_int_equal(ui_keys_action(UI_SCR_ADVISE, 'G'), UI_ACT_GPUS_MORE);
    assert_int_equal(ui_keys_action(UI_SCR_ADVISE, 'b'), UI_ACT_GBS_LESS);
    assert_int_equal(ui_keys_action(UI_SCR_ADVISE, 'B'), UI_ACT_GBS_MORE);
    assert_int_equal(ui_keys_action(UI_SCR_ADVISE, 'v'), UI_ACT_VIEW);
    assert_int_equal(ui_keys_action(UI_SCR_ADVISE, 'q'), UI_ACT_BACK);
    assert_int_equal(ui_keys_action(UI_SCR_ADVISE, 27), UI_ACT_BACK);
    assert_int_equal(ui_keys_action(UI_SCR_ADVISE, KEY_F(10)), UI_ACT_QUIT);
    assert_int_equal(ui_keys_action(UI_SCR_ADVISE, KEY_DOWN), UI_ACT_DOWN);
    assert_int_equal(ui_keys_action(UI_SCR_ADVISE, 'j'), UI_ACT_DOWN);
    assert_int_equal(ui_keys_action(UI_SCR_ADVISE, KEY_END), UI_ACT_END);
    assert_int_equal(ui_keys_action(UI_SCR_ADVISE, 't'), UI_ACT_THEME);
    assert_int_equal(ui_keys_action(UI_SCR_ADVISE, 'a'), UI_ACT_ASCII);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, 'A'), UI_ACT_NONE);
    char bar[256];
    ui_keys_bar(UI_SCR_RUNVIEW, 78, bar, sizeof(bar));
    assert_non_null(strstr(bar, "A advise"));
    ui_keys_bar(UI_SCR_ADVISE, 78, bar, sizeof(bar));
    assert_non_null(strstr(bar, "q back  F10 quit  g GPUs/2  G GPUs*2  b gbs/2  B gbs*2"));
    char lines[64][128];
    int n = ui_keys_help(UI_SCR_ADVISE, lines, 64), found = 0;
    for (int i = 0; i < n; i++)
        found += strstr(lines[i], "double the global batch") != NULL;
    assert_int_equal(found, 1);
}

/* Home and End: every escape sequence terminals send is in the table, keypad and Find/Select
 * keys read as Home/End. */
static void test_home_end(void **state)
{
    (void)state;
    size_t n;
    const ui_key_sequence *q = ui_keys_sequences(&n);
    const char *want_home[] = { "\033[1~", "\033OH", "\033[H", "\033[7~" };
    const char *want_end[] = { "\033[4~", "\033OF", "\033[F", "\033[8~" };
    for (int k = 0; k < 4; k++) {
        int home = 0, end = 0;
        for (size_t i = 0; i < n; i++) {
            home += strcmp(q[i].seq, want_home[k]) == 0 && q[i].key == KEY_HOME;
            end += strcmp(q[i].seq, want_end[k]) == 0 && q[i].key == KEY_END;
        }
        assert_int_equal(home, 1);
        assert_int_equal(end, 1);
    }
    assert_int_equal(ui_keys_canonical(KEY_FIND), KEY_HOME);
    assert_int_equal(ui_keys_canonical(KEY_SELECT), KEY_END);
    assert_int_equal(ui_keys_canonical(KEY_A1), KEY_HOME);
    assert_int_equal(ui_keys_canonical(KEY_C1), KEY_END);
    assert_int_equal(ui_keys_canonical('q'), 'q');
    assert_int_equal(ui_keys_canonical(KEY_HOME), KEY_HOME);
    /* in the form, Home/End have their field meaning, in lists their list meaning */
    assert_int_equal(ui_keys_action(UI_SCR_FORM, KEY_HOME), UI_ACT_HOME);
    assert_int_equal(ui_keys_action(UI_SCR_RUNS, KEY_END), UI_ACT_END);
}

/* Left/Right move by a character (a UTF-8 one whole), Backspace/Delete remove one; ^N/^P are
 * not cursor keys (they choose presets, the form's business). */
static void test_field_edit_utf8(void **state)
{
    (void)state;
    char t[32] = "a\xc3\xa9" "b";       /* a, e-acute (2 bytes), b */
    int cur = 4;
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, KEY_LEFT, UI_ACT_CHOICE_PREV), UI_EDIT_MOVED);
    assert_int_equal(cur, 3);
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, KEY_LEFT, UI_ACT_CHOICE_PREV), UI_EDIT_MOVED);
    assert_int_equal(cur, 1);                          /* over both bytes of the e-acute */
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, KEY_DC, UI_ACT_NONE), UI_EDIT_CHANGED);
    assert_string_equal(t, "ab");
    cur = 2;
    strcpy(t, "x\xc3\xa9");
    cur = 3;
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, KEY_BACKSPACE, UI_ACT_NONE), UI_EDIT_CHANGED);
    assert_string_equal(t, "x");
    assert_int_equal(cur, 1);
    assert_int_equal(ui_keys_edit(t, sizeof t, &cur, 0x0e, UI_ACT_PRESET_NEXT), UI_EDIT_NONE);
    assert_string_equal(t, "x");
}

/* Horizontal scroll: the cursor stays inside the field, and the view comes back when the text
 * fits again. */
static void test_field_view(void **state)
{
    (void)state;
    const char *t = "/a/long/path/to/config.json";     /* 27 characters */
    int first = 0;
    int col = ui_keys_field_view(t, 27, 10, &first);
    assert_int_equal(col, 9);                          /* the last column, after the text */
    assert_int_equal(first, 18);
    assert_string_equal(t + first, "nfig.json");
    col = ui_keys_field_view(t, 0, 10, &first);
    assert_int_equal(first, 0);
    assert_int_equal(col, 0);
    first = 20;
    col = ui_keys_field_view("short", 5, 10, &first);   /* fits: no scroll */
    assert_int_equal(first, 0);
    assert_int_equal(col, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_text_screens_leave_printables_alone),
        cmocka_unit_test(test_every_binding_is_described),
        cmocka_unit_test(test_help_is_generated_from_the_table),
        cmocka_unit_test(test_bar),
        cmocka_unit_test(test_advise_keys),
        cmocka_unit_test(test_key_names),
        cmocka_unit_test(test_field_edit),
        cmocka_unit_test(test_q_closes_views),
        cmocka_unit_test(test_home_end),
        cmocka_unit_test(test_field_edit_utf8),
        cmocka_unit_test(test_field_view),
    };
    return cmocka_run_group_tests_name("tui_keys", tests, NULL, NULL);
}
