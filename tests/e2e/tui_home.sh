#!/usr/bin/env bash
# suite: both builds: the release explorer under tmux (home screen goldens, keys, clean exit)
# Explorer home screen through tmux: list (golden), sort, filter, help from the key table,
# delete with confirmation, and a clean exit.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
# the explorer prints local time (docs/tui.md); the golden screens were taken in UTC
export TZ=UTC
A=2026-11-20__10-00-00_aaaa0001
B=2026-11-20__11-00-00_bbbb0002
C=2026-11-21__09-00-00_cccc0003
make_run "$A" --t0 1795168800
make_run "$B" --t0 1795172400 --scale 1.5 --model tinyllama
make_run "$C" --t0 1795251600 --status cancelled --oom-at 8
start
wait_for "3 runs"
golden tui_home
# sort by model: Llama first, then TinyLlama
keys s; wait_for "sorted by model"
screen | grep -n "Llama-3.2-1B\|TinyLlama" | head -1 | grep -q "Llama-3.2-1B" || fail "sort by model"
# filter: only the tinyllama run stays
keys / T i n y; wait_for "filter: Tiny_"
keys Enter; wait_for "filter: Tiny  (1 of 3 runs; / then Esc clears)"
screen | grep -q "Llama-3.2-1B" && fail "filter kept a Llama-3.2-1B run"
screen | grep -q "TinyLlama-1.1B" || fail "filter lost the TinyLlama run"
keys / Escape; wait_for "3 runs"
# help is generated from the key table and goes back with Esc, and with q (q closes the view,
# it does not quit the program)
keys '?'; wait_for "Keys on the runs screen"
golden tui_home_help
golden_sizes tui_help "Keys on the runs screen"
keys Escape; wait_for "3 runs"
keys '?'; wait_for "Keys on the runs screen"
keys q; wait_for "3 runs"
screen | grep -qF "[pdbx exited" && fail "q in the help quit the explorer"
# delete asks first; n keeps the run, y removes it
keys s s s s s; wait_for "sorted by created"
keys Home d; wait_for "[y/N]"
keys n; wait_for "cancelled"
[ -f "$STORE/runs/$C.pdbx" ] || fail "n deleted the run"
keys d; wait_for "[y/N]"
keys y; wait_for "deleted $C"
wait_for "2 runs"
[ -f "$STORE/runs/$C.pdbx" ] && fail "y did not delete the run file"
quit_and_check
# at 80 columns the whole delete question shows, up to how to answer it; a long model name is
# shown whole (narrower columns give way first), the key bar ends at a whole key with "..."
D=2026-11-19__08-00-00_dddd0004
MODEL_NAME=Llama-3.3-70B-Instruct make_run "$D" --t0 1795075200
COLS=80 ROWS=24 start
wait_for "3 runs"
screen | grep -qE '^ 2026-11-19 08:00 Llama-3\.3-70B-Instruct +cpu/A100-80G ' || fail "the model column is cut at 80 columns"
screen | tail -1 | grep -qE '  c compare  \.\.\.$' || fail "the key bar is not cut at a whole key with ..."
golden_sizes tui_home "3 runs"
keys Home d; wait_for ")? [y/N]"
keys n; wait_for "cancelled"
quit_and_check
# SIGINT (Ctrl-C) and SIGTERM end the explorer cleanly: exit 0 and the terminal restored (the
# shell's line shows on the normal screen, the explorer's screen is gone)
start
wait_for "3 runs"
keys C-c
wait_for "[pdbx exited 0]"
screen | grep -q "q quit" && fail "the explorer's screen is still shown after Ctrl-C"
start
wait_for "3 runs"
pane=$(tmx display-message -p -t e2e '#{pane_pid}')
kid=$(pgrep -P "$pane" | head -1)        # the pane's shell runs pdbx as its child
[ -n "$kid" ] || fail "no pdbx process under the pane"
kill -TERM "$kid"
wait_for "[pdbx exited 0]"
screen | grep -q "q quit" && fail "the explorer's screen is still shown after SIGTERM"
# a store that cannot be created or written: one line, no crash, q quits
STORE_SAVE=$STORE
STORE=/proc/pdbx-no-store
start
wait_for "no store open"
screen | grep -q "/proc/pdbx-no-store" || fail "the store error does not name the directory"
quit_and_check
STORE=$STORE_SAVE
echo PASS
