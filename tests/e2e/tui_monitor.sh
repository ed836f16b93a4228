#!/usr/bin/env bash
# Monitor through tmux: `pdbx replay FILE --speed X` plays a recording to the end (golden);
# `r` on home replays a run; a running run (live launcher pid on this host) reattaches from home,
# follows events appended to its file while watching, keeps running when left with Esc, and
# shows the end and its reason.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
# the explorer prints local time (docs/tui.md); the golden screens were taken in UTC
export TZ=UTC
A=2026-11-20__10-00-00_aaaa0001
R=2026-11-21__10-00-00_dddd0001
make_run "$A"
# replay of a recording file (a run file outside the store)
cp "$STORE/runs/$A.pdbx" "$TMP/rec.pdbx"
start replay "$TMP/rec.pdbx" --speed 200
wait_for "replay finished: complete" 20
wait_for "8/8 points 100%"
golden tui_monitor_replay_done
golden_sizes tui_monitor_replay_done "replay finished: complete"
keys q; wait_for "[pdbx exited 0]"
# a sweep cut mid-way (4 of 8 points, point 4 in flight, no run end) replays to where it
# stopped: the monitor as it looked live, at both sizes (times come from the events)
M=2026-11-20__10-30-00_aaaa0003
make_run "$M" --status running
mv "$STORE/runs/$M.pdbx" "$TMP/midway.pdbx"
start replay "$TMP/midway.pdbx" --speed 1000
wait_for "replay finished: no run end in the recording" 20
wait_for "4/8 points"
golden_sizes tui_monitor_midway "replay finished: no run end in the recording"
keys q; wait_for "[pdbx exited 0]"
# the shipped recording of a real CPU sweep plays to its end too
REC="$SRC/recordings/quick-cpu-amd-epyc-2core.pdbx"
if [ -f "$REC" ]; then
    start replay "$REC" --speed 1000
    wait_for "replay finished: complete" 30
    wait_for "TinyLlama-1.1B"
    wait_for "8/8 points 100%"
    keys q; wait_for "[pdbx exited 0]"
    # at 80x24 the glyph legend still shows in full (on its own line) and a long warning wraps
    # onto a second row instead of being cut at the edge
    COLS=80 ROWS=24 start replay "$REC" --speed 1000
    wait_for "replay finished: complete" 30
    wait_for "legend: # ok  O oom  P predicted OOM  ! error  > running  . pending  - skipped"
    wait_for "(one stage's"
    wait_for "gradients are"
    # the replay speed has its own row and hides nothing of the header
    wait_for "TinyLlama-1.1B  cpu/cpu  complete"
    screen | grep -qE '^ replay x1000' || fail "replay speed row"
    keys q; wait_for "[pdbx exited 0]"
fi
# usage errors are one line and exit 2
"$PDBX" replay >/dev/null 2>"$TMP/err"; [ $? -eq 2 ] || fail "replay without FILE: exit status"
grep -q "missing FILE" "$TMP/err" || fail "replay without FILE: message"
"$PDBX" replay "$TMP/rec.pdbx" --speed fast >/dev/null 2>"$TMP/err"; [ $? -eq 2 ] || fail "--speed fast: exit status"
grep -q "speed: 'fast'" "$TMP/err" || fail "--speed fast: message"

# r on home replays the selected run, Esc returns home
start
wait_for "1 run"
keys r; wait_for "replay x1"
keys + + +; wait_for "replay speed x8"
keys Escape; wait_for "1 run"
# q closes a replay opened from the runs (back to them), it does not quit the explorer
keys r; wait_for "replay x1"
keys q; wait_for "1 run"
screen | grep -qF "[pdbx exited" && fail "q in a replay quit the explorer"

# a running sweep: launcher pid alive on this host
setsid sleep 600 & LAUNCHER=$!
make_run "$R" --t0 1795255200 --status running --pid "$LAUNCHER" --host "$(hostname)"
# the progress model: the TP1 points (MBS 1+2+4+8) of 15 + 7.5 work units (TP2 halves them)
wait_for "running 66%" 10
keys Home Enter; wait_for "now: point 4"
wait_for "op mlp_up"
screen | grep -E 'TP1 PP1 DP2 +1# +2# +4# +8#' >/dev/null || fail "TP1 row of the monitor"
screen | grep -E 'TP2 PP1 DP1 +1> +2\. +4\. +8\.' >/dev/null || fail "TP2 row of the monitor"
# leaving keeps it running, Enter reattaches
keys Escape; wait_for "keeps running in the background"
screen | grep -q "running 66%" || fail "the run stopped being listed as running"
keys Home Enter; wait_for "now: point 4"
# Enter (in the key bar) says why the results do not open yet instead of doing nothing
keys Enter; wait_for "the results open when the sweep ends"
# events appended by the 'engine' while we watch show up
append() { printf '%s' "$1" | zstd -q -c >> "$STORE/runs/$R.pdbx"; }
append '{"type":"warning","t":1795255300,"message":"fixture: appended while watching"}'
wait_for "fixture: appended while watching"
append '{"type":"point_end","t":1795255301,"point":4,"status":"error","message":"fixture: injected failure"}'
wait_for "1!"
append '{"type":"run_end","t":1795255302,"status":"failed","reason":"fixture: stopped","elapsed_s":102}'
wait_for "ended failed: fixture: stopped"
screen | grep -q "ETA --" || fail "a failed run's ETA is not unknown (--): its remaining points never run"
keys c; wait_for "is not running"
kill "$LAUNCHER" 2>/dev/null
keys Escape; wait_for "2 runs"
wait_for "failed"
quit_and_check
echo PASS
