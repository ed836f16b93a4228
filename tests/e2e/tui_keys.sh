#!/usr/bin/env bash
# Home and End inside tmux, under TERM=screen-256color and TERM=tmux-256color: the named keys
# (tmux sends \e[1~ / \e[4~) and the other forms terminals send (\eOH / \eOF in application
# mode, \e[H / \e[F, \e[7~ / \e[8~) move to the first / last run, and in a form field to the
# start / end of the text; none of them reads as Esc (which would close the form).
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
export TZ=UTC
make_run 2026-11-20__10-00-00_aaaa0001 --t0 1795168800
make_run 2026-11-20__11-00-00_bbbb0002 --t0 1795172400 --model tinyllama
make_run 2026-11-21__09-00-00_cccc0003 --t0 1795251600
FIRST=2026-11-21__09-00-00_cccc0003     # newest first
LAST=2026-11-20__10-00-00_aaaa0001
hex() { tmx send-keys -t e2e -H "$@"; }
# selected SEL: the detail line under the list names the selected run
selected() { wait_for "$1  "; }
for term in screen-256color tmux-256color; do
    TUI_TERM=$term start
    wait_for "3 runs"
    selected "$FIRST"
    keys End; selected "$LAST"
    keys Home; selected "$FIRST"
    hex 1b 4f 46; selected "$LAST"          # \eOF
    hex 1b 4f 48; selected "$FIRST"         # \eOH
    hex 1b 5b 46; selected "$LAST"          # \e[F
    hex 1b 5b 48; selected "$FIRST"         # \e[H
    hex 1b 5b 38 7e; selected "$LAST"       # \e[8~
    hex 1b 5b 37 7e; selected "$FIRST"      # \e[7~
    # in the form: Home / End move the cursor in the field (model, column 21 on)
    keys n; wait_for "Preview: "
    x0=$(tmx display-message -p -t e2e '#{cursor_x}')
    for seq in "1b 4f 48" "1b 5b 48" "1b 5b 31 7e"; do
        hex $seq; sleep 0.2
        screen | grep -q "New sweep" || fail "$term: Home ($seq) closed the form"
        [ "$(tmx display-message -p -t e2e '#{cursor_x}')" = 21 ] || fail "$term: Home ($seq) did not move to the start"
        hex 1b 4f 46; sleep 0.2
        [ "$(tmx display-message -p -t e2e '#{cursor_x}')" = "$x0" ] || fail "$term: End did not move to the end"
    done
    keys Escape; wait_for "3 runs"
    quit_and_check
done
echo PASS
