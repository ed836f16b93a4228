/* ui_keys.c: see ui_keys.h. */
#include "tui/ui_keys.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

#define CTRL(c) ((c) & 0x1f)
#define NAV (UI_SCR_RUNS | UI_SCR_MONITOR | UI_SCR_RUNVIEW | UI_SCR_COMPARE | UI_SCR_HELP | UI_SCR_REPLAY \
             | UI_SCR_ADVISE)
#define FIELDS (UI_SCR_FORM | UI_SCR_EXPORT)
#define VIEWS (UI_SCR_RUNVIEW | UI_SCR_COMPARE)

/* Order matters: the first binding of an action on a screen is the one the bar shows, and the
 * help lists actions in table order. Letters are never bound on the text-entry screens. */
static const ui_binding table[] = {
    { '?', UI_ACT_HELP, "help", "show this help", UI_SCR_ALL & ~FIELDS & ~UI_SCR_HELP },
    { KEY_F(1), UI_ACT_HELP, "help", "show this help", UI_SCR_ALL & ~UI_SCR_HELP },
    /* in the help, a replay and the advise screen (a view over the run view), q closes that
       view (what a pager's q does), F10 still quits */
    { 'q', UI_ACT_BACK, "back", "close this view", UI_SCR_HELP | UI_SCR_REPLAY | UI_SCR_ADVISE },
    { 'q', UI_ACT_QUIT, "quit", "quit (sweeps keep running in the background)",
      UI_SCR_ALL & ~FIELDS & ~UI_SCR_HELP & ~UI_SCR_REPLAY & ~UI_SCR_ADVISE },
    { KEY_F(10), UI_ACT_QUIT, "quit", "quit (sweeps keep running in the background)", UI_SCR_ALL },
    { 27, UI_ACT_BACK, "back", "back (a running sweep keeps running)", UI_SCR_ALL & ~UI_SCR_RUNS },
    { KEY_ENTER, UI_ACT_OPEN, NULL, "open the selected run", UI_SCR_RUNS },
    { '\n', UI_ACT_OPEN, "open", "open the selected run", UI_SCR_RUNS },
    { '\r', UI_ACT_OPEN, NULL, "open the selected run", UI_SCR_RUNS },
    { '\n', UI_ACT_OPEN, "results", "open the finished run's results", UI_SCR_MONITOR },
    { '\r', UI_ACT_OPEN, NULL, "open the finished run's results", UI_SCR_MONITOR },
    { KEY_ENTER, UI_ACT_OPEN, NULL, "open the finished run's results", UI_SCR_MONITOR },
    { 'n', UI_ACT_NEW, "new", "new sweep (form)", UI_SCR_RUNS },
    { '/', UI_ACT_FILTER, "filter", "filter runs by text (Enter keeps, Esc clears)", UI_SCR_RUNS },
    { 's', UI_ACT_SORT, "sort", "sort by the next column", UI_SCR_RUNS },
    { 'S', UI_ACT_SORT_REVERSE, NULL, "reverse the sort order", UI_SCR_RUNS },
    { ' ', UI_ACT_MARK, "mark", "mark the run to compare with", UI_SCR_RUNS },
    { 'c', UI_ACT_COMPARE, "compare", "compare the marked run with the selected one", UI_SCR_RUNS },
    { 'd', UI_ACT_DELETE, "delete", "delete the selected run (asks first)", UI_SCR_RUNS },
    { 'r', UI_ACT_REPLAY, "replay", "replay the selected run in the monitor", UI_SCR_RUNS },
    { 'e', UI_ACT_EXPORT, "export", "export the selected run (NPZ, CSV, trace)", UI_SCR_RUNS },
    { 'e', UI_ACT_EXPORT, "export", "export this run (NPZ, CSV, trace)", UI_SCR_RUNVIEW },
    { 'A', UI_ACT_ADVISE, "advise", "advise: the TP/PP/DP and MBS to train with, estimated from this run",
      UI_SCR_RUNVIEW },
    { 'g', UI_ACT_GPUS_LESS, "GPUs/2", "halve the GPUs of the query (recomputes)", UI_SCR_ADVISE },
    { 'G', UI_ACT_GPUS_MORE, "GPUs*2", "double the GPUs of the query (recomputes)", UI_SCR_ADVISE },
    { 'b', UI_ACT_GBS_LESS, "gbs/2", "halve the global batch (recomputes)", UI_SCR_ADVISE },
    { 'B', UI_ACT_GBS_MORE, "gbs*2", "double the global batch (recomputes)", UI_SCR_ADVISE },
    { 'v', UI_ACT_VIEW, "chart", "the Pareto chart alone / back to the list", UI_SCR_ADVISE },
    { '\t', UI_ACT_NEXT_TAB, "tab", "next tab (config / collectives)", VIEWS },
    { KEY_RIGHT, UI_ACT_NEXT_TAB, NULL, "next tab", VIEWS },
    { 'l', UI_ACT_NEXT_TAB, NULL, "next tab", VIEWS },
    { KEY_BTAB, UI_ACT_PREV_TAB, NULL, "previous tab", VIEWS },
    { KEY_LEFT, UI_ACT_PREV_TAB, NULL, "previous tab", VIEWS },
    { 'h', UI_ACT_PREV_TAB, NULL, "previous tab", VIEWS },
    { 'v', UI_ACT_VIEW, "view", "next view: table, shares, cost vs MBS, roofline", UI_SCR_RUNVIEW },
    { 'v', UI_ACT_VIEW, "view", "next view: A, B and B/A; B/A alone; cost vs MBS of both", UI_SCR_COMPARE },
    { 's', UI_ACT_STAT, "stat", "next statistic: mean, median, min, max, std", VIEWS },
    { 'o', UI_ACT_OP, "op", "next op for the cost chart (all ops / one op)", VIEWS },
    { 'g', UI_ACT_LOG, "log", "log scale on/off for charts", VIEWS },
    { 'm', UI_ACT_MARK, "mark", "mark this config to compare with", UI_SCR_RUNVIEW },
    { 'c', UI_ACT_COMPARE, "compare", "compare the marked config with this one", UI_SCR_RUNVIEW },
    { 'p', UI_ACT_PASS, "pass", "next pass: fwd, bwd, both (fwd + bwd per op; runs with backward cells)", VIEWS },
    { 'c', UI_ACT_CANCEL_SWEEP, "cancel", "cancel the sweep (asks first)", UI_SCR_MONITOR },
    { KEY_F(5), UI_ACT_LAUNCH, "launch", "validate and launch the sweep", UI_SCR_FORM },
    { KEY_F(5), UI_ACT_LAUNCH, "write", "write the export", UI_SCR_EXPORT },
    { KEY_F(6), UI_ACT_USE_COMBOS, "use combos", "use the valid TPxPPxDP list of the GPU count", UI_SCR_FORM },
    { '+', UI_ACT_FASTER, "faster", "replay twice as fast", UI_SCR_REPLAY },
    { '-', UI_ACT_SLOWER, "slower", "replay half as fast", UI_SCR_REPLAY },
    { ' ', UI_ACT_PAUSE, "pause", "pause / resume the replay", UI_SCR_REPLAY },
    { '\t', UI_ACT_DOWN, NULL, "next field", FIELDS },
    { KEY_BTAB, UI_ACT_UP, NULL, "previous field", FIELDS },
    { KEY_LEFT, UI_ACT_CHOICE_PREV, NULL, "previous choice (in a text field: cursor left)", FIELDS },
    { KEY_RIGHT, UI_ACT_CHOICE_NEXT, NULL, "next choice (in a text field: cursor right)", FIELDS },
    /* presets of a text field (model, GPU, sweep preset) cycle on their own keys, so that Left
       and Right edit a typed path; what was typed stays one step of the cycle */
    { CTRL('N'), UI_ACT_PRESET_NEXT, "preset", "next preset of the field (typed text is kept)", UI_SCR_FORM },
    { CTRL('P'), UI_ACT_PRESET_PREV, NULL, "previous preset of the field", UI_SCR_FORM },
    { CTRL('U'), UI_ACT_CLEAR_FIELD, NULL, "clear the field", FIELDS },
    { KEY_UP, UI_ACT_UP, NULL, "move up", NAV | FIELDS },
    { 'k', UI_ACT_UP, NULL, "move up", NAV },
    { KEY_DOWN, UI_ACT_DOWN, NULL, "move down", NAV | FIELDS },
    { 'j', UI_ACT_DOWN, NULL, "move down", NAV },
    { KEY_PPAGE, UI_ACT_PGUP, NULL, "page up", NAV | FIELDS },
    { KEY_NPAGE, UI_ACT_PGDN, NULL, "page down", NAV | FIELDS },
    { KEY_HOME, UI_ACT_HOME, NULL, "first line", NAV },
    { KEY_END, UI_ACT_END, NULL, "last line", NAV },
    { KEY_HOME, UI_ACT_HOME, NULL, "start of the field", FIELDS },
    { KEY_END, UI_ACT_END, NULL, "end of the field", FIELDS },
    { 't', UI_ACT_THEME, "theme", "next colour theme (saved)", UI_SCR_ALL & ~FIELDS },
    { 'L', UI_ACT_LEGEND, NULL, "next page of a chart legend that says \"+N more\"", VIEWS },
    { 'a', UI_ACT_ASCII, NULL, "charts in plain ASCII / Unicode", VIEWS | UI_SCR_ADVISE },
    { CTRL('L'), UI_ACT_REDRAW, NULL, "redraw the screen", UI_SCR_ALL },
    { KEY_BACKSPACE, UI_ACT_BACK, NULL, "back", UI_SCR_ALL & ~UI_SCR_RUNS & ~FIELDS },
    { 127, UI_ACT_BACK, NULL, "back", UI_SCR_ALL & ~UI_SCR_RUNS & ~FIELDS },
};

const ui_binding *ui_keys_table(size_t *n)
{
    *n = sizeof(table) / sizeof(table[0]);
    return table;
}

ui_action ui_keys_action(unsigned screen, int key)
{
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].key == key && (table[i].screens & screen))
            return table[i].action;
    return UI_ACT_NONE;
}

const char *ui_keys_name(int key, char *buf, size_t len)
{
    static const struct { int key; const char *name; } names[] = {
        { KEY_UP, "Up" }, { KEY_DOWN, "Down" }, { KEY_LEFT, "Left" }, { KEY_RIGHT, "Right" },
        { KEY_PPAGE, "PgUp" }, { KEY_NPAGE, "PgDn" }, { KEY_HOME, "Home" }, { KEY_END, "End" },
        { KEY_ENTER, "Enter" }, { '\n', "Enter" }, { '\r', "Enter" }, { 27, "Esc" },
        { KEY_BACKSPACE, "Backspace" }, { 127, "Backspace" }, { '\t', "Tab" },
        { KEY_BTAB, "S-Tab" }, { ' ', "Space" },
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].key == key) {
            snprintf(buf, len, "%s", names[i].name);
            return buf;
        }
    if (key >= KEY_F(1) && key <= KEY_F(12))
        snprintf(buf, len, "F%d", key - KEY_F(0));
    else if (key > 0 && key < 32)
        snprintf(buf, len, "^%c", key + '@');
    else if (key >= 32 && key < 127)
        snprintf(buf, len, "%c", key);
    else
        snprintf(buf, len, "key %d", key);
    return buf;
}

/* 1 when an earlier binding of the same action applies to the screen (labelled: only
 * bindings that carry a bar label count). */
static int seen_before(size_t i, unsigned screen, int labelled)
{
    for (size_t j = 0; j < i; j++)
        if (table[j].action == table[i].action && (table[j].screens & screen)
            && (!labelled || table[j].label))
            return 1;
    return 0;
}

size_t ui_keys_bar(unsigned screen, int width, char *buf, size_t len)
{
    size_t n = 0, ends[64];
    int nitems = 0, cut = 0;
    if (len == 0)
        return 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]) && nitems < 64; i++) {
        const ui_binding *b = &table[i];
        if (!(b->screens & screen) || !b->label || seen_before(i, screen, 1))
            continue;
        char name[32], item[80];
        ui_keys_name(b->key, name, sizeof(name));
        int k = snprintf(item, sizeof(item), "%s%s %s", n ? "  " : "", name, b->label);
        if (k < 0 || (int)(n + (size_t)k) > width || n + (size_t)k + 1 > len) {
            cut = 1;
            break;
        }
        memcpy(buf + n, item, (size_t)k + 1);
        n += (size_t)k;
        ends[nitems++] = n;
    }
    if (!cut)
        return n;
    /* more keys than room: "  ..." says so (F1 lists them all); whole pairs make room for it */
    while (nitems > 0 && ((int)n + 5 > width || n + 6 > len))
        n = --nitems > 0 ? ends[nitems - 1] : 0;
    if ((int)n + 5 <= width && n + 6 <= len) {
        memcpy(buf + n, n ? "  ..." : "...", n ? 6 : 4);
        n += n ? 5 : 3;
    }
    buf[n] = '\0';
    return n;
}

int ui_keys_help(unsigned screen, char (*lines)[128], int cap)
{
    int nl = 0;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]) && nl < cap; i++) {
        if (!(table[i].screens & screen) || seen_before(i, screen, 0))
            continue;
        char keys[64] = "";
        size_t kn = 0;
        char names[8][32];
        int nnames = 0;
        for (size_t j = i; j < sizeof(table) / sizeof(table[0]); j++) {
            if (table[j].action != table[i].action || !(table[j].screens & screen))
                continue;
            char name[32];
            ui_keys_name(table[j].key, name, sizeof(name));
            int dup = 0;
            for (int d = 0; d < nnames; d++)
                dup |= strcmp(names[d], name) == 0;   /* "\n", "\r", KEY_ENTER are all Enter */
            if (dup || nnames == 8)
                continue;
            memcpy(names[nnames++], name, sizeof(name));
            int k = snprintf(keys + kn, sizeof(keys) - kn, "%s%s", kn ? ", " : "", name);
            if (k < 0 || kn + (size_t)k >= sizeof(keys))
                break;
            kn += (size_t)k;
        }
        snprintf(lines[nl++], 128, "  %-22s %s", keys, table[i].desc);
    }
    return nl;
}

int ui_keys_is_text_key(int key)
{
    return (key >= 32 && key < 127) || (key >= 128 && key < 256);
}

/* UTF-8: a continuation byte (10xxxxxx) is never where a cursor stops. */
static int is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

static int char_before(const char *t, int c)
{
    do
        c--;
    while (c > 0 && is_cont((unsigned char)t[c]));
    return c;
}

static int char_after(const char *t, int c, int len)
{
    do
        c++;
    while (c < len && is_cont((unsigned char)t[c]));
    return c;
}

/* Cursor keys: Left/Right by a character, Home/^A and End/^E to the ends. */
static int edit_move(int key, int c, const char *text, int len, int *cursor)
{
    if (key == KEY_LEFT) *cursor = c > 0 ? char_before(text, c) : c;
    else if (key == KEY_RIGHT) *cursor = c < len ? char_after(text, c, len) : c;
    else if (key == KEY_HOME || key == 1) *cursor = 0;
    else if (key == KEY_END || key == 5) *cursor = len;
    else return 0;
    return 1;
}

ui_edit_result ui_keys_edit(char *text, size_t cap, int *cursor, int key, ui_action act)
{
    size_t len = strlen(text);
    if (*cursor > (int)len) *cursor = (int)len;
    if (*cursor < 0) *cursor = 0;
    int c = *cursor;
    if (edit_move(key, c, text, (int)len, cursor))
        return UI_EDIT_MOVED;
    if (key == KEY_BACKSPACE || key == 127 || key == 8) {
        if (c == 0) return UI_EDIT_NOOP;
        int b = char_before(text, c);
        memmove(text + b, text + c, len - (size_t)c + 1);
        *cursor = b;
    } else if (key == KEY_DC) {
        if (c >= (int)len) return UI_EDIT_NOOP;
        int a = char_after(text, c, (int)len);
        memmove(text + c, text + a, len - (size_t)a + 1);
    } else if (act == UI_ACT_CLEAR_FIELD) {
        text[0] = '\0';
        *cursor = 0;
    } else if (ui_keys_is_text_key(key)) {
        if (len + 1 >= cap) return UI_EDIT_NOOP;
        memmove(text + c + 1, text + c, len - (size_t)c + 1);
        text[c] = (char)key;
        *cursor = c + 1;
    } else {
        return UI_EDIT_NONE;
    }
    return UI_EDIT_CHANGED;
}

int ui_keys_field_view(const char *text, int cursor, int width, int *first)
{
    int len = (int)strlen(text);
    if (cursor > len) cursor = len;
    if (cursor < 0) cursor = 0;
    if (width < 2) width = 2;
    if (*first > cursor || *first < 0) *first = cursor;
    while (*first > 0 && is_cont((unsigned char)text[*first])) (*first)--;
    /* columns from first to the cursor; scroll right until the cursor is inside the window
       (the last column stays free for it at the end of the text) */
    int col = 0;
    for (int i = *first; i < cursor; i++)
        col += !is_cont((unsigned char)text[i]);
    while (col > width - 1) {
        *first = char_after(text, *first, len);
        col--;
    }
    /* scroll back when the text before first would fit again (after deletes) */
    int total = 0;
    for (int i = *first; i < len; i++)
        total += !is_cont((unsigned char)text[i]);
    while (*first > 0 && total + 1 < width) {
        *first = char_before(text, *first);
        total++;
        col++;
    }
    return col;
}

/* Escape sequences terminals send for Home and End. terminfo names one per key, but the
 * terminal in front (tmux, screen, an xterm in application-cursor mode) may send another:
 * TERM=screen-256color and tmux-256color describe \e[1~ / \e[4~, while tmux and xterms send
 * \eOH / \eOF or \e[H / \e[F in some modes, and \e[1~ is "Find" to an xterm description.
 * Unknown, such a sequence reached the screens as Esc (back!) and two letters. */
static const ui_key_sequence sequences[] = {
    { "\033[1~", KEY_HOME }, { "\033[7~", KEY_HOME }, { "\033OH", KEY_HOME }, { "\033[H", KEY_HOME },
    { "\033[4~", KEY_END }, { "\033[8~", KEY_END }, { "\033OF", KEY_END }, { "\033[F", KEY_END },
};

const ui_key_sequence *ui_keys_sequences(size_t *n)
{
    *n = sizeof(sequences) / sizeof(sequences[0]);
    return sequences;
}

int ui_keys_canonical(int key)
{
    /* keypad Home/End and the VT220 Find/Select keys some descriptions give \e[1~ / \e[4~ */
    if (key == KEY_FIND || key == KEY_A1) return KEY_HOME;
    if (key == KEY_SELECT || key == KEY_C1) return KEY_END;
    return key;
}
