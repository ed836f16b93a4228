#!/usr/bin/env bash
# suite: long: starts first in the pool (a real sweep or a long session), so the pool does not end on it
# The explorer's main path with the real engine: an empty store opens the form with the quick preset, a
# shortened quick sweep is launched with F5 (pdbx_launch_start: mpirun + pdbx-engine in the
# background), the monitor watches it to the end, Enter opens the results and tabs switch; a
# second sweep is cancelled from the monitor after confirmation and ends 'cancelled'; leaving
# the explorer never stops a sweep.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
[ -x "$BUILD/bin/pdbx-engine" ] || { echo "SKIP: $BUILD/bin/pdbx-engine not built"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found"; exit 77; }
LIMIT=240
case "$BUILD" in *-san*) LIMIT=480 ;; esac
mkdir -p "$STORE/runs"
start
# an empty store opens on the new-sweep form with the quick preset, ready to launch
wait_for "no runs yet: F5 launches this sweep"
wait_for "Preview: 8 points"
screen | grep -q "quick" || fail "the form does not start from the quick preset"
# shorten the quick sweep: one config, MBS 1..2, seq_len 64, no collectives sweep
# (fields: preset, model, layers, seq_len, ..., configs, gpus, mbs, warmup, steps, collectives)
keys Down Down; keys C-u; keys -l 64
keys Down Down Down Down Down Down; keys C-u; keys -l 1x1x2
keys Down Down; keys C-u; keys -l 1:2
keys Down Down Down Left
wait_for "Preview: 2 points"
wait_for "valid: F5 launches"
golden tui_sweep_form
keys F5
wait_for "launched 20" 60
wait_for "ended complete" $LIMIT
wait_for "2/2 points 100%"
screen | grep -E 'TP1 PP1 DP2 +1# +2#' >/dev/null || fail "monitor rows at the end"
keys Enter; wait_for "view: table (ms)"
# (a cell whose CV exceeds 5% carries the noisy mark '!')
screen | grep -E '^ mlp_up +[0-9.]+!? +[0-9.]+' >/dev/null || fail "measured mlp_up row"
keys Escape; wait_for "1 run"
wait_for "complete"
# a longer sweep, cancelled from the monitor
keys n; wait_for "Preview: 8 points"
keys F5
wait_for "launched 20" 60
wait_for "now: point" $LIMIT
keys c; wait_for "[y/N]"
keys n; wait_for "cancelled"          # n keeps it running
screen | grep -q "ended" && fail "n cancelled the sweep"
keys c; wait_for "[y/N]"
keys y; wait_for "cancel sent"
wait_for "ended cancelled" $LIMIT
keys Escape; wait_for "2 runs"
wait_for "cancelled"
# quitting the explorer leaves a running sweep running to its end
keys n; wait_for "Preview: 8 points"
keys Down Down; keys C-u; keys -l 64
keys Down Down Down Down Down Down; keys C-u; keys -l 1x1x2
keys Down Down; keys C-u; keys -l 1:2
keys Down Down Down Left
wait_for "Preview: 2 points"
keys F5
wait_for "launched 20" 60
id=$(screen | sed -n 's/.*launched \(20[0-9_-]*_[0-9a-f]*\).*/\1/p' | head -1)
[ -n "$id" ] || fail "no run id in the launch message"
quit_and_check
i=0
until zstdcat "$STORE/runs/$id.pdbx" 2>/dev/null | grep -q '"type":"run_end","status":"complete"\|"status":"complete"' ; do
    [ $i -lt $((LIMIT * 10)) ] || fail "the sweep did not complete after the explorer quit"
    sleep 0.1; i=$((i + 1))
done
# mpirun missing: the sweep ends 'failed' with a one-line reason naming it, the explorer stays up
TUI_ENV="PDBX_MPIRUN=/nonexistent/mpirun" start
wait_for "3 runs"
keys n; wait_for "Preview: 8 points"
keys F5
wait_for "ended failed: could not start /nonexistent/mpirun" 60
screen | grep -q "q quit" || fail "the explorer did not survive a failed launch"
keys Escape; wait_for "4 runs"
wait_for "failed"
quit_and_check
echo PASS
