#!/usr/bin/env bash
# Explorer resize through tmux: below 80x24 a clear "terminal too small" message (golden), keys
# other than quit do nothing there, and back at full size the screen is whole again.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
# the explorer prints local time (docs/tui.md); the golden screens were taken in UTC
export TZ=UTC
make_run 2026-11-20__10-00-00_aaaa0001
start
wait_for "1 run"
golden tui_resize_before
tmx resize-window -t e2e -x 60 -y 20
wait_for "terminal too small"
golden tui_resize_small
keys n; sleep 0.2                 # ignored while too small (nothing to wait for: it must not change)
screen | grep -q "terminal too small" || fail "a key changed the too-small screen"
tmx resize-window -t e2e -x 80 -y 23
wait_for "80x23, need 80x24"
tmx resize-window -t e2e -x "$COLS" -y "$ROWS"
wait_for "1 run"
golden tui_resize_before
# the smallest allowed size draws the whole frame
tmx resize-window -t e2e -x 80 -y 24
wait_for "? help  q quit"
screen | grep -q "terminal too small" && fail "80x24 is big enough"
quit_and_check
echo PASS
