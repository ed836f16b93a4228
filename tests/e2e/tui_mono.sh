#!/usr/bin/env bash
# Monochrome and themes: NO_COLOR, --no-color and a terminal without colours draw no colour
# escapes (bold/reverse only) with the same text; the default draws colours; a bad theme file
# gets a one-line message naming file, line and value and the default theme is used; the theme
# key cycles themes and the choice is saved in the user config.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
# the explorer prints local time (docs/tui.md); the golden screens were taken in UTC
export TZ=UTC
make_run 2026-11-20__10-00-00_aaaa0001
colours() { tmx capture-pane -e -p -t e2e | grep -cE $'\e\\[[0-9;]*(3[0-7]|4[0-7]|38;5|48;5)[;m]' ; }
attrs() { tmx capture-pane -e -p -t e2e | grep -cE $'\e\\[[0-9;]*(1|7)[;m]' ; }

start
wait_for "1 run"
normal_screen > "$TMP/colour.txt"
[ "$(colours)" -gt 0 ] || fail "the default theme drew no colours"

TUI_ENV="NO_COLOR=1" start
wait_for "1 run"
[ "$(colours)" -eq 0 ] || fail "NO_COLOR still drew colours"
[ "$(attrs)" -gt 0 ] || fail "monochrome lost bold/reverse"
normal_screen | diff -u "$TMP/colour.txt" - >&2 || fail "monochrome text differs from the colour text"
golden tui_mono_home
keys Enter; wait_for "view: table (ms)"
keys v v; wait_for "op shares per MBS"
golden tui_mono_shares           # distinct fill per op, readable without colour
keys Escape; wait_for "1 run"
quit_and_check

start --no-color
wait_for "1 run"
[ "$(colours)" -eq 0 ] || fail "--no-color still drew colours"
quit_and_check

TUI_TERM=vt100 start
wait_for "1 run"
[ "$(colours)" -eq 0 ] || fail "a terminal without colours got colours"
quit_and_check

# a bad theme file: clear message, default theme used, nothing else breaks
printf 'title = black on cyan\nheader = purple bold\n' > "$TMP/bad.theme"
start --theme "$TMP/bad.theme"
wait_for "bad.theme:2: header = purple bold: unknown word"
wait_for "default theme used: "
[ "$(colours)" -gt 0 ] || fail "the default theme was not used after the bad file"
# the theme key cycles and saves the choice (written only when it changed)
keys t; wait_for "theme: "
grep -q '^theme = ' "$TMP/config" || fail "theme choice not saved in $TMP/config"
saved=$(sed -n 's/^theme = //p' "$TMP/config")
quit_and_check
start
wait_for "1 run"
keys t; wait_for "theme: "
[ "$(sed -n 's/^theme = //p' "$TMP/config")" != "$saved" ] || fail "the next theme was not saved"
quit_and_check
echo PASS
