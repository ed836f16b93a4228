/* ui_keys.h: the one key table of the explorer (tig help.c, htop Action_setBindings).
 *
 * Every binding is {key, action, bar label, description, screens}. Key dispatch, the help
 * screen (?/F1) and the bottom key bar are all generated from this table, so they cannot
 * disagree. Text entry (the filter line, form fields, dialog fields) bypasses the table for
 * printable keys: see ui_keys_is_text_key().
 * Pure: uses only the key code constants of curses.h, no terminal.
 */
#ifndef PDBX_UI_KEYS_H
#define PDBX_UI_KEYS_H

#include <stddef.h>

/* Screens a binding applies to (bit mask). */
enum {
    UI_SCR_RUNS = 1u << 0,
    UI_SCR_FORM = 1u << 1,
    UI_SCR_MONITOR = 1u << 2,
    UI_SCR_RUNVIEW = 1u << 3,
    UI_SCR_COMPARE = 1u << 4,
    UI_SCR_EXPORT = 1u << 5,
    UI_SCR_HELP = 1u << 6,
    UI_SCR_REPLAY = 1u << 7,
    UI_SCR_ADVISE = 1u << 8,
    UI_SCR_ALL = 0x1FFu
};

typedef enum {
    UI_ACT_NONE = 0,
    UI_ACT_UP, UI_ACT_DOWN, UI_ACT_PGUP, UI_ACT_PGDN, UI_ACT_HOME, UI_ACT_END,
    UI_ACT_PREV_TAB, UI_ACT_NEXT_TAB,
    UI_ACT_OPEN, UI_ACT_BACK, UI_ACT_QUIT, UI_ACT_HELP, UI_ACT_REDRAW, UI_ACT_THEME,
    UI_ACT_ASCII,
    UI_ACT_FILTER, UI_ACT_SORT, UI_ACT_SORT_REVERSE, UI_ACT_DELETE, UI_ACT_NEW, UI_ACT_REPLAY,
    UI_ACT_MARK, UI_ACT_COMPARE, UI_ACT_CANCEL_SWEEP, UI_ACT_STAT, UI_ACT_VIEW, UI_ACT_LOG,
    UI_ACT_EXPORT, UI_ACT_LAUNCH, UI_ACT_FASTER, UI_ACT_SLOWER, UI_ACT_PAUSE, UI_ACT_OP, UI_ACT_USE_COMBOS,
    UI_ACT_CHOICE_PREV, UI_ACT_CHOICE_NEXT, UI_ACT_PRESET_PREV, UI_ACT_PRESET_NEXT, UI_ACT_CLEAR_FIELD,
    UI_ACT_LEGEND, UI_ACT_PASS,
    UI_ACT_ADVISE, UI_ACT_GPUS_LESS, UI_ACT_GPUS_MORE, UI_ACT_GBS_LESS, UI_ACT_GBS_MORE,
    UI_ACT_COUNT
} ui_action;

typedef struct {
    int key;                 /* curses key code or character */
    ui_action action;
    const char *label;       /* bar label ("quit"); NULL: not on the bar */
    const char *desc;        /* help line */
    unsigned screens;        /* UI_SCR_* mask */
} ui_binding;

/* The table, and its length. */
const ui_binding *ui_keys_table(size_t *n);
/* Action of key on screen (first matching binding), UI_ACT_NONE when unbound. */
ui_action ui_keys_action(unsigned screen, int key);
/* Display name of a key: "q", "F10", "Enter", "Esc", "Up", "PgUp", "^L", "Space", "Tab". */
const char *ui_keys_name(int key, char *buf, size_t len);
/* The bottom bar for a screen: "key label" pairs (first key of each action with a label),
 * separated by two spaces, cut to width columns at a pair boundary. Returns the length. */
size_t ui_keys_bar(unsigned screen, int width, char *buf, size_t len);
/* The help lines for a screen: one line per action, "  keys...   description", keys of the
 * same action joined with ", ". Returns the number of lines written (<= cap). */
int ui_keys_help(unsigned screen, char (*lines)[128], int cap);
/* Printable keys that text fields take (everything from space to '~', and UTF-8 bytes). */
int ui_keys_is_text_key(int key);

/* What ui_keys_edit did with a key. */
typedef enum {
    UI_EDIT_NONE = 0,        /* not an editing key: the caller decides */
    UI_EDIT_MOVED,           /* the cursor moved (or tried to, at an end) */
    UI_EDIT_NOOP,            /* an editing key with nothing to do (delete at an end, field full) */
    UI_EDIT_CHANGED,         /* the text changed */
} ui_edit_result;

/* One-line text field editing shared by the form and the dialogs, by key: Left/Right (a
 * character, UTF-8 aware), Home/^A, End/^E, Backspace and Delete (a character), ^U
 * (UI_ACT_CLEAR_FIELD) and printable keys inserted at *cursor (a byte offset), for text of
 * capacity cap (NUL included). Choosing among presets is the caller's (other keys). */
ui_edit_result ui_keys_edit(char *text, size_t cap, int *cursor, int key, ui_action act);
/* Horizontal scroll of a field shown in width columns: moves *first (the byte offset of the
 * first character shown) so that the cursor is visible, and back when the text fits again.
 * Returns the cursor's column relative to the first character shown. */
int ui_keys_field_view(const char *text, int cursor, int width, int *first);

/* Escape sequences of Home and End that the explorer binds in addition to terminfo's
 * (explorer.c calls define_key for them), and the key codes it reads as Home/End. */
typedef struct {
    const char *seq;
    int key;
} ui_key_sequence;
const ui_key_sequence *ui_keys_sequences(size_t *n);
/* KEY_HOME for the keypad's Home and the VT220 Find key, KEY_END for keypad End and Select;
 * every other key unchanged. The loop applies it to every key read. */
int ui_keys_canonical(int key);

#endif
