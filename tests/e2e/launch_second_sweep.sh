#!/usr/bin/env bash
# suite: long: starts first in the pool (a real sweep or a long session), so the pool does not end on it
# A second sweep on the devices a running sweep uses disturbs both (issue 10): with a real slow
# sweep running (pdbx run --detach) in the store,
#  - `pdbx run` without a terminal refuses with one line naming the running run, exit 2, and
#    starts nothing; with --force it starts;
#  - `pdbx run` on a terminal (tmux) asks y/N: n starts nothing;
#  - the explorer's F5 asks before launching: n starts nothing, y launches.
. "$PDBX_SOURCE_DIR/tests/fixtures/tui_lib.bash"
[ -x "$BUILD/bin/pdbx-engine" ] || { echo "SKIP: $BUILD/bin/pdbx-engine not built"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found"; exit 77; }
export PDBX_ENGINE=$BUILD/bin/pdbx-engine
mkdir -p "$STORE/runs"
spec() {   # FILE steps mbs
    "$PY" - "$1" "$SRC/tests/e2e/fixtures/engine-tiny-llama.json" "$2" "$3" <<'EOF'
import json, sys
json.dump({"name": "e2e", "model": sys.argv[2], "gpu": "cpu", "layers": 2, "seq_len": 64,
           "dtype": "fp32", "backend": "cpu", "gpus_per_node": 4, "nodes": 1,
           "configs": [{"tp": 1, "pp": 1, "dp": 1}], "mbs": sys.argv[4], "repetition": "fixed", "warmup": 1,
           "steps": int(sys.argv[3]), "ops": "all", "collectives": False,
           "predict_oom": True, "timeout_s": 60}, open(sys.argv[1], "w"))
EOF
}
nruns() { ls "$STORE/runs" | wc -l; }
spec "$TMP/long.json" 2000 "1:8"
spec "$TMP/short.json" 1 "1:1"
running=$("$PDBX" run "$TMP/long.json" --store "$STORE" --detach 2>"$TMP/err") || { cat "$TMP/err"; fail "the slow sweep did not start"; }
cancel_all() { for r in $(ls "$STORE/runs" | sed 's/\.pdbx$//'); do "$PDBX" cancel "$r" --store "$STORE" >/dev/null 2>&1; done; }
trap 'cancel_all; cleanup' EXIT

# ---- a script: refused, exit 2, one line naming the running run ----
"$PDBX" run "$TMP/short.json" --store "$STORE" </dev/null >"$TMP/out" 2>"$TMP/err"
rc=$?
cat "$TMP/err"
[ $rc -eq 2 ] || fail "a second sweep without a terminal: exit $rc, want 2"
[ "$(wc -l < "$TMP/err")" -eq 1 ] || fail "the refusal is not one line"
grep -q "$running is running on this host" "$TMP/err" || fail "the refusal does not name the running run"
grep -q -- "--force" "$TMP/err" || fail "the refusal does not say --force"
[ "$(nruns)" -eq 1 ] || fail "a refused sweep created a run"

# ---- on a terminal: asked, n starts nothing ----
start run "$TMP/short.json" --store "$STORE"
wait_for "[y/N]" 20
screen | grep -q "$running" || fail "the question does not name the running run"
keys n Enter
wait_for "not started"
wait_for "[pdbx exited 2]"
[ "$(nruns)" -eq 1 ] || fail "n started a sweep"

# ---- the explorer: F5 asks; n keeps it, y launches ----
start
wait_for "1 run"
keys n; wait_for "valid: F5 launches" 20
keys F5
wait_for "launch anyway? $running runs here" 20
keys n; wait_for "cancelled"
[ "$(nruns)" -eq 1 ] || fail "n in the explorer launched a sweep"
keys F5
wait_for "launch anyway?" 20
keys y
wait_for "launched 20" 60
[ "$(nruns)" -eq 2 ] || fail "y in the explorer did not launch"
cancel_all

# ---- --force starts it (after the explorer's sweep ended) ----
for _ in $(seq 100); do [ "$("$PDBX" ls --store "$STORE" | grep -c ' running ')" -eq 0 ] && break; sleep 0.2; done
running=$("$PDBX" run "$TMP/long.json" --store "$STORE" --detach 2>"$TMP/err") || { cat "$TMP/err"; fail "the slow sweep did not start again"; }
"$PDBX" run "$TMP/short.json" --store "$STORE" --force </dev/null >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/err"; fail "--force: the second sweep failed"; }
grep -q "starting anyway (--force)" "$TMP/err" || { cat "$TMP/err"; fail "--force does not say it starts anyway"; }
"$PDBX" ls --store "$STORE"
echo PASS
