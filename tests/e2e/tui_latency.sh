#!/usr/bin/env bash
# suite: plain build only: a latency budget (timings belong to one build); the explorer and the store scan under ASan run in the other tui_* scripts and test_store_scan
# suite: serial: a latency budget needs the machine to itself
# Key latency with 10,000 runs in the store and while a sweep runs: the explorer logs, per key,
# the milliseconds from getch() to the refreshed screen (PDBX_TUI_KEYLOG). Budget: 50 ms
# (the ASan+UBSan build gets 4x: sanitizers slow everything, not only the explorer).
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
N=10000
BUDGET=50
case "$BUILD" in *-san*) BUDGET=200 ;; esac
"$PY" "$SRC/tests/fixtures/tui_many_runs.py" "$STORE" $N || fail "making $N runs"
[ "$(ls "$STORE/runs" | wc -l)" -eq $N ] || fail "expected $N run files"
R=2026-11-21__10-00-00_dddd0001
setsid sleep 600 & LAUNCHER=$!
make_run "$R" --t0 1795255200 --status running --pid "$LAUNCHER" --host "$(hostname)"
TUI_ENV="PDBX_TUI_KEYLOG=$TMP/keys.log" start
wait_for "$((N + 1)) runs" 120          # the first listing may build the index
sent=0
send() { keys "$@"; sent=$((sent + $#)); }
waitlog() {                              # every sent key logged
    local i=0
    while [ "$(wc -l < "$TMP/keys.log" 2>/dev/null || echo 0)" -lt $sent ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
    [ "$(wc -l < "$TMP/keys.log")" -ge $sent ] || fail "only $(wc -l < "$TMP/keys.log") of $sent keys logged"
}
: > "$TMP/keys.log"
for k in j j j j j j j j j j k k k k k NPage NPage NPage End Home; do send "$k"; sleep 0.02; done
send s; wait_for "sorted by model"
send s s s s s; wait_for "sorted by created"
send S; send S
send /; send 1 2 3; wait_for "filter: 123_"; send Escape; wait_for "$((N + 1)) runs"
waitlog
# the monitor of the running sweep while events keep arriving
send Home Enter; wait_for "now: point 4"
( for i in $(seq 1 100); do
      printf '{"type":"warning","t":%d,"message":"fixture: tick %d"}' $((1795255300 + i)) $i | zstd -q -c >> "$STORE/runs/$R.pdbx"
      sleep 0.05
  done ) & WRITER=$!
for k in j k '?' Escape j k j k; do send "$k"; sleep 0.1; done
wait "$WRITER"
wait_for "fixture: tick 100"
send Escape; wait_for "$((N + 1)) runs"
waitlog
kill "$LAUNCHER" 2>/dev/null
quit_and_check
"$PY" - "$TMP/keys.log" "$BUDGET" <<'PY' || fail "key latency over budget"
import sys
ms = sorted(float(l.split()[3]) for l in open(sys.argv[1]) if l.startswith("key "))
budget = float(sys.argv[2])
p50, mx = ms[len(ms) // 2], ms[-1]
print(f"{len(ms)} keys: median {p50:.2f} ms, max {mx:.2f} ms (budget {budget:.0f} ms)")
sys.exit(0 if mx < budget else 1)
PY
echo PASS
