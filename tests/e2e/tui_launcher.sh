#!/usr/bin/env bash
# Explorer run view through tmux: a run whose nodes were all one machine (pdbx run
# --simulate-nodes, run_start launcher "simulated 2 nodes") says so in the run view's header;
# a run launched on real hosts does not.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
export TZ=UTC
# a fixture run with the launcher field added to its run_start
launched_run() {   # id launcher
    local id=$1 launcher=$2 out="$STORE/runs/$1.pdbx"
    mkdir -p "$STORE/runs"
    "$PY" "$SRC/tests/fixtures/tui_fixture.py" "$id" > "$TMP/$id.jsonl" || fail "fixture $id"
    grep -q '^{"type":"run_start",' "$TMP/$id.jsonl" || fail "fixture has no run_start first"
    sed -i "s/^{\"type\":\"run_start\",/{\"type\":\"run_start\",\"launcher\":\"$launcher\",/" "$TMP/$id.jsonl"
    "$FRAMES" < "$TMP/$id.jsonl" > "$out" || fail "jsonl_frames failed for $id"
}
launched_run 2026-11-20__10-00-00_aaaa0001 "simulated 2 nodes"
start
wait_for "1 run"
keys Enter; wait_for "view: table (ms)"
screen | grep -q "complete  simulated 2 nodes" \
    || fail "the run view header does not say the nodes were simulated"
quit_and_check
rm -f "$STORE/runs/"*.pdbx "$STORE/index.json"
launched_run 2026-11-20__10-00-00_aaaa0002 "mpirun on 2 hosts"
start
wait_for "1 run"
keys Enter; wait_for "view: table (ms)"
screen | grep -q "simulated" && fail "a run on real hosts reads as simulated"
quit_and_check
echo PASS
