#!/usr/bin/env bash
# suite: plain build only: launcher and supervisor integration (mpirun, kill -9); the supervisor under ASan runs in engine_stop.sh and cli_progress.sh, the argv builder in test_launch_argv
# suite: long: starts first in the pool (a real sweep or a long session), so the pool does not end on it
# pdbx run / attach / cancel and crash handling through the real supervisor and mpirun:
#  - run --detach returns at once with the run id; attach follows it to `complete`;
#  - cancel ends a running sweep `cancelled` with a valid file, completed points kept;
#  - kill -9 of one engine rank: mpirun tears down, the supervisor appends run_end failed,
#    completed points stay, `pdbx ls` says failed;
#  - kill -9 of supervisor and ranks: no run_end at all, `pdbx ls` still says failed (liveness).
source "$(dirname "$0")/engine_common.inc"
[ -x "$PDBX" ] || { echo "SKIP: $PDBX not built"; exit 77; }
export PDBX_ENGINE=$ENGINE
ST=$TMP/store

status_of() {
    "$PDBX" ls --json --store "$ST" | "$PY" -c 'import json,sys; print([r["status"] for r in json.load(sys.stdin) if r["id"] == sys.argv[1]][0])' "$1"
}
# the /dev/shm files the engine ranks of run $1 have mapped (OpenMPI's shared-memory segments)
shm_of_run() {
    local p
    for p in $(pgrep -f "^$ENGINE .*--run-id $1"); do
        grep -o ' /dev/shm/.*' "/proc/$p/maps" 2>/dev/null | sed 's/^ //; s/ (deleted)$//'
    done | sort -u
}
# fails when any of the files (one per line in $1) or the run's own directory still exist once
# the run's supervisor has exited (it removes them after mpirun ends, after run_end)
shm_gone() {   # files, id, what
    local f sup
    sup=$(ev_py "$ST/runs/$2.pdbx" 'print([e for e in E if e["type"] == "run_start"][0]["pid"])')
    for _ in $(seq 100); do kill -0 "$sup" 2>/dev/null || break; sleep 0.1; done
    for f in $1; do [ -e "$f" ] && fail "$3: $f left behind in /dev/shm"; done
    [ -e "/dev/shm/pdbx-$2" ] && fail "$3: /dev/shm/pdbx-$2 left behind"
    return 0
}

tiny_spec "$TMP/short.json" 'configs=[{"tp":2,"pp":1,"dp":1}]' 'mbs="1:2"'
# ---- a sweep that cannot start: recorded as a failed run naming the reason ----
PDBX_MPIRUN=/nonexistent/mpirun "$PDBX" run "$TMP/short.json" --store "$ST" >"$TMP/id" 2>"$TMP/err"
rc=$?
[ $rc -eq 1 ] || { cat "$TMP/err"; fail "run without mpirun: exit $rc, want 1"; }
grep -q "failed: could not start /nonexistent/mpirun" "$TMP/err" || { cat "$TMP/err"; fail "reason not shown"; }
id=$(cat "$TMP/id")
[ "$(status_of "$id")" = failed ] || fail "the failed start is not listed as failed"
PDBX_MPIRUN=/nonexistent/mpirun "$PDBX" run "$TMP/short.json" --store "$ST" --detach >/dev/null 2>&1 || fail "--detach must return once the attempt is recorded"

# ---- detach + attach ----
phase 'detach + attach'
tiny_spec "$TMP/short.json" 'configs=[{"tp":2,"pp":1,"dp":1}]' 'mbs="1:2"'
t0=$(date +%s%N)
id=$("$PDBX" run "$TMP/short.json" --store "$ST" --detach 2>"$TMP/err") || { cat "$TMP/err"; fail "run --detach"; }
dt=$(( ($(date +%s%N) - t0) / 1000000 ))
[ -n "$id" ] || fail "no run id printed"
echo "detached $id in ${dt} ms"
"$PDBX" attach "${id:0:25}" --store "$ST" 2>"$TMP/attach" || { cat "$TMP/attach"; fail "attach"; }
grep -q "complete" "$TMP/attach" || { cat "$TMP/attach"; fail "attach did not report complete"; }
shm_gone "" "$id" "complete run"
[ "$(status_of "$id")" = complete ] || { "$PDBX" ls --store "$ST"; fail "ls status after attach"; }
# attach to an ended run: its clock stopped at the run end (not now), ETA 0
sleep 3
"$PDBX" attach "$id" --store "$ST" 2>"$TMP/attach2" || { cat "$TMP/attach2"; fail "attach to an ended run"; }
dur=$(ev_py "$ST/runs/$id.pdbx" 'print(int(E[-1]["t"] - E[0]["t"] + 1.5))')
el=$(grep -o 'elapsed [0-9]*s  ETA 0s' "$TMP/attach2" | grep -o '[0-9]*' | head -1)
[ -n "$el" ] && [ "$el" -le "$dur" ] || { cat "$TMP/attach2"; fail "attach to an ended run: elapsed '$el' s, the run took < $dur s"; }
# a launch the engine refuses (bf16 without sbgemm on this OpenBLAS, or none at all): failed run
if ! "$PY" -c 'import ctypes,sys; ctypes.CDLL("libopenblas.so.0").cblas_sbgemm' 2>/dev/null; then
    tiny_spec "$TMP/bf16.json" 'dtype="bf16"'
    "$PDBX" run "$TMP/bf16.json" --store "$ST" >"$TMP/id" 2>"$TMP/err" && fail "bf16 run succeeded without sbgemm"
    grep -q "bf16 needs cblas_sbgemm" "$TMP/err" || { cat "$TMP/err"; fail "bf16 reason"; }
fi

# A long sweep: many steps per point so there is time to interfere.
tiny_spec "$TMP/long.json" 'configs=[{"tp":2,"pp":1,"dp":1}]' 'mbs="1:8"' 'steps=150' 'seq_len=64'

# ---- cancel ----
phase 'cancel'
id=$("$PDBX" run "$TMP/long.json" --store "$ST" --detach 2>"$TMP/err") || { cat "$TMP/err"; fail "run long"; }
f=$ST/runs/$id.pdbx
wait_for 40 'any(e["type"] == "point_end" for e in E)' "$f" || fail "first point never ended"
# an imported copy of the running sweep carries its launcher pid: cancelling the copy must not
# cancel the original (imported into another store: into the same one, an identical recording
# is recognised as the run itself and not copied)
"$PDBX" record "$id" "$TMP/running.rec" --store "$ST" >/dev/null || fail "record a running sweep"
copy=$("$PDBX" import "$TMP/running.rec" --store "$TMP/other") || fail "import a running sweep's recording"
"$PDBX" cancel "$copy" --store "$TMP/other" --no-wait 2>"$TMP/cancel" && fail "cancelling an imported copy succeeded"
grep -q "not launched from this store" "$TMP/cancel" || { cat "$TMP/cancel"; fail "imported-copy cancel message"; }
sleep 1
[ "$(status_of "$id")" = running ] || { "$PDBX" ls --store "$ST"; fail "cancelling the imported copy ended the original"; }
shm=$(shm_of_run "$id")
[ -n "$shm" ] || fail "no shared-memory segment found in the ranks' maps"
echo "$shm"
"$PDBX" cancel "$id" --store "$ST" 2>"$TMP/cancel" || { cat "$TMP/cancel"; fail "cancel"; }
cat "$TMP/cancel"
grep -q "cancelled by pdbx cancel (pid " "$TMP/cancel" || fail "cancel does not say pdbx cancel ended the run"
shm_gone "$shm" "$id" "cancelled run"
ev_py "$f" '
end = [e for e in E if e["type"] == "run_end"]
assert len(end) == 1 and end[0]["status"] == "cancelled", end
assert "by" not in end[0], "the engine itself must end a cancelled run: %s" % end[0]
assert end[0]["cause"] == "pdbx_cancel" and end[0]["in_flight"] in ("none", "finished", "dropped"), end[0]
ok = [e for e in E if e["type"] == "point_end" and e["status"] == "ok"]
assert len(ok) >= 1
' || fail "cancel events"
[ "$(status_of "$id")" = cancelled ] || { "$PDBX" ls --store "$ST"; fail "ls status after cancel"; }
"$PDBX" cancel "$id" --store "$ST" 2>/dev/null && fail "cancelling an ended run succeeded"

# ---- kill -9 of one rank ----
phase 'kill -9 of one rank'
id=$("$PDBX" run "$TMP/long.json" --store "$ST" --detach 2>"$TMP/err") || { cat "$TMP/err"; fail "run long 2"; }
f=$ST/runs/$id.pdbx
wait_for 40 'any(e["type"] == "point_end" for e in E)' "$f" || fail "first point never ended (kill)"
ranks=$(pgrep -f "^$ENGINE .*--run-id $id" | sort -n)
[ "$(echo "$ranks" | wc -l)" -eq 2 ] || fail "expected 2 engine ranks, got: $ranks"
shm=$(shm_of_run "$id")
[ -n "$shm" ] || fail "no shared-memory segment found in the ranks' maps (kill)"
kill -9 "$(echo "$ranks" | tail -1)"
wait_for 30 'any(e["type"] == "run_end" for e in E)' "$f" || fail "no run_end after kill -9"
ev_py "$f" '
end = [e for e in E if e["type"] == "run_end"][0]
assert end["status"] == "failed" and end.get("by") == "supervisor", end
assert any(e["type"] == "point_end" and e["status"] == "ok" for e in E)
print(end["reason"])
' || fail "kill -9 events"
[ "$(status_of "$id")" = failed ] || { "$PDBX" ls --store "$ST"; fail "ls status after kill -9"; }
shm_gone "$shm" "$id" "killed rank"

# ---- kill -9 of the whole sweep (supervisor first): no run_end, liveness says failed ----
phase 'kill -9 of the whole sweep (su'
id=$("$PDBX" run "$TMP/long.json" --store "$ST" --detach 2>"$TMP/err") || { cat "$TMP/err"; fail "run long 3"; }
f=$ST/runs/$id.pdbx
wait_for 40 'any(e["type"] == "point_end" for e in E)' "$f" || fail "first point never ended (kill all)"
sup=$(ev_py "$f" 'print([e for e in E if e["type"] == "run_start"][0]["pid"])')
mp=$(pgrep -f "mpirun.*--run-id $id")
ranks=$(pgrep -f "^$ENGINE .*--run-id $id")
stale_shm=$(shm_of_run "$id")
stale_id=$id
[ -n "$stale_shm" ] || fail "no shared-memory segment found in the ranks' maps (kill all)"
# one kill for all: SIGKILL reaches mpirun before it could act on the supervisor's death
kill -9 "$sup" $mp $ranks 2>/dev/null
ev_py "$f" 'assert not any(e["type"] == "run_end" for e in E)' || fail "a run_end appeared"
# the killed supervisor is an orphan: wait until init has reaped it (a zombie still "lives")
for _ in $(seq 50); do [ "$(status_of "$id")" = failed ] && break; sleep 0.2; done
st=$(status_of "$id")
[ "$st" = failed ] || { ps -o pid,stat,cmd -p "$sup"; ps -ef | grep -E "pdbx|mpirun" | grep -v grep; "$PDBX" ls --store "$ST"; fail "ls status after killing everything: $st"; }
"$PDBX" ls --store "$ST"

# ---- kill -9 of the supervisor alone: mpirun and the ranks do not live on as orphans, and the
# run ends failed, "supervisor lost" (engine_stop.sh checks the run_end itself) ----
phase 'kill -9 of the supervisor alone'
id=$("$PDBX" run "$TMP/long.json" --store "$ST" --detach 2>"$TMP/err") || { cat "$TMP/err"; fail "run long 4"; }
f=$ST/runs/$id.pdbx
wait_for 40 'any(e["type"] == "point_start" for e in E)' "$f" || fail "first point never started (kill supervisor)"
# nobody was left to remove the killed sweep's shared memory: the next launch of the store does
for s in $stale_shm; do [ -e "$s" ] && fail "the next launch left the killed sweep's $s in /dev/shm"; done
[ -e "/dev/shm/pdbx-$stale_id" ] && fail "the next launch left /dev/shm/pdbx-$stale_id"
sup=$(ev_py "$f" 'print([e for e in E if e["type"] == "run_start"][0]["pid"])')
kill -9 "$sup"
for _ in $(seq 200); do
    pgrep -f "(mpirun|$ENGINE).*--run-id $id" >/dev/null || break
    sleep 0.1
done
pgrep -af "(mpirun|$ENGINE).*--run-id $id" && { tail -20 "$ST/logs/$id.log"; fail "the sweep lives on after its supervisor was killed"; }
for _ in $(seq 50); do [ "$(status_of "$id")" != running ] && break; sleep 0.2; done
st=$(status_of "$id")
[ "$st" = failed ] || { "$PDBX" ls --store "$ST"; fail "status after killing the supervisor: $st"; }
"$PDBX" show "$id" --store "$ST" >/dev/null || fail "show after killing the supervisor"
echo PASS
