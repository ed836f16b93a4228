#!/usr/bin/env bash
# Explorer compare through tmux: two runs (B = 1.5 x A everywhere) give ratio 1.50 per cell and
# per-op geometric mean 1.50, marked worse; two configs of one run compare too.
. "$PDBX_SOURCE_DIR/tests/fixtures/tui_lib.bash"
A=2026-11-20__10-00-00_aaaa0001
B=2026-11-20__11-00-00_bbbb0002
make_run "$A" --t0 1795168800
make_run "$B" --t0 1795172400 --scale 1.5
start
wait_for "2 runs"
keys c; wait_for "mark a run with Space first"
# newest (B) is first: mark A, move to B, compare A vs B
keys j Space; wait_for "marked $A"
keys k c; wait_for "ratio B/A"
golden tui_compare_runs
screen | grep -E '^ mlp_up +1\.50\^ +1\.50\^ +1\.50\^ +1\.50\^ +1\.50\^' >/dev/null || fail "mlp_up ratios"
screen | grep -E '^ total +1\.50\^' >/dev/null || fail "total ratio"
keys v; wait_for "A vs B, largest ops"
keys Escape; wait_for "2 runs"
# two configs of one run: TP1 vs TP2 of A
keys j Enter; wait_for "view: table (ms)"
keys m; wait_for "marked this config"
keys Tab c; wait_for "TP1 PP1 DP2 vs TP2 PP1 DP1"
screen | grep -E '^ attn_q +0\.50v' >/dev/null || fail "TP2/TP1 attn_q ratio"
keys Escape; wait_for "view: table (ms)"
keys Escape; wait_for "2 runs"
quit_and_check
# at 80x24 a TP1 vs TP2 pair has more op rows than fit: the total row still shows, and the op
# rows scroll with Up/Down
COLS=80 ROWS=24 start
wait_for "2 runs"
keys j Enter; wait_for "view: table (ms)"
keys m; wait_for "marked this config"
keys Tab c; wait_for "TP1 PP1 DP2 vs TP2 PP1 DP1"
wait_for "Up/Down: more ops"
screen | grep -E '^ total +[0-9]' >/dev/null || fail "total row at 80x24"
screen | grep -qE '^ lm_head ' && fail "lm_head shown before scrolling (the test expects a cut table)"
keys End; wait_for " lm_head "
screen | grep -E '^ total +[0-9]' >/dev/null || fail "total row after scrolling"
quit_and_check
echo PASS
