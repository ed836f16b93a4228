#!/usr/bin/env bash
# suite: long: starts first in the pool (a real sweep or a long session), so the pool does not end on it
# Who stopped a sweep, through the real supervisor, mpirun and signals (issue 10 items 3, 10,
# the cancel reasons and Ctrl-C):
#  - a run whose recorded launcher pid now belongs to an unrelated live process (pid reuse,
#    start time differs): `pdbx ls` does not show it running and `pdbx cancel` signals nothing;
#    a run recorded without a start time keeps the pid-only rule;
#  - Ctrl-C (SIGINT) to a watching `pdbx run` and to `pdbx attach` both cancel, run_end cause
#    "ctrl_c", exit 3;
#  - SIGTERM to a watching pdbx attach only stops watching;
#  - a SIGTERM to the supervisor that no pdbx command announced: cause "signal", naming the
#    sender's pid;
#  - kill -9 of the supervisor: run_end failed, cause "supervisor_lost" (not a user cancel);
#  - kill -9 of mpirun: the shared-memory segments its ranks mapped (OpenMPI's, in /dev/shm)
#    are removed by the supervisor; the run ends failed;
#  - pdbx cancel during the collectives sweep: in_flight "none", no in_flight_point; inside a
#    point's last step: in_flight "finished", the point kept and no later point started;
#  - every stopped run says what became of the point in flight (a point_end "skipped" when it
#    was dropped) in run_end's fields and reason, which ls and show print.
source "$(dirname "$0")/engine_common.inc"
[ -x "$PDBX" ] || { echo "SKIP: $PDBX not built"; exit 77; }
export PDBX_ENGINE=$ENGINE
ST=$TMP/store
mkdir -p "$ST/runs" "$ST/logs"
host=$(hostname)
boot=$(cat /proc/sys/kernel/random/boot_id)

ls_field() {   # id field
    "$PDBX" ls --json --store "$ST" | "$PY" -c 'import json,sys; print([r[sys.argv[2]] for r in json.load(sys.stdin) if r["id"] == sys.argv[1]][0])' "$1" "$2"
}
# a run file by hand: one zstd frame (checksummed) per JSON event
write_run() {   # id, run_start JSON
    printf '%s' "$2" | zstd -q -c > "$ST/runs/$1.pdbx"
    : > "$ST/logs/$1.log"          # as if launched from this store
}

# ---- pid reuse: the recorded launcher pid is now an unrelated process ----
phase 'pid reuse'
sleep 60 &
victim=$!
start=$(awk '{print $22}' "/proc/$victim/stat")
id=2026-01-01__00-00-00_0000beef
write_run $id "{\"type\":\"run_start\",\"t\":$(date +%s),\"id\":\"$id\",\"host\":\"$host\",\"pid\":$victim,\"pid_start\":$((start - 100)),\"boot_id\":\"$boot\",\"points\":[]}"
st=$(ls_field $id status)
[ "$st" = failed ] || { "$PDBX" ls --store "$ST"; kill $victim; fail "a reused pid lists as $st, want failed"; }
ls_field $id message | grep -q "is gone" || { "$PDBX" ls --store "$ST"; kill $victim; fail "ls reason"; }
"$PDBX" cancel $id --store "$ST" 2>"$TMP/cancel" && { kill $victim; fail "cancel of a run whose launcher is gone succeeded"; }
cat "$TMP/cancel"
[ "$(wc -l < "$TMP/cancel")" -eq 1 ] || { kill $victim; fail "cancel must say it in one line"; }
grep -q "nothing signalled" "$TMP/cancel" || { kill $victim; fail "cancel message"; }
sleep 0.3
kill -0 $victim 2>/dev/null || fail "pdbx cancel killed the process that reused the pid"
# the same run recorded with the right start time is running (the identity matches) ...
id2=2026-01-01__00-00-01_0000cafe
write_run $id2 "{\"type\":\"run_start\",\"t\":$(date +%s),\"id\":\"$id2\",\"host\":\"$host\",\"pid\":$victim,\"pid_start\":$start,\"boot_id\":\"$boot\",\"points\":[]}"
[ "$(ls_field $id2 status)" = running ] || { kill $victim; fail "the recorded launcher itself must list as running"; }
# ... and an older run without a start time keeps the pid-only rule
id3=2026-01-01__00-00-02_0000f00d
write_run $id3 "{\"type\":\"run_start\",\"t\":$(date +%s),\"id\":\"$id3\",\"host\":\"$host\",\"pid\":$victim,\"points\":[]}"
[ "$(ls_field $id3 status)" = running ] || { kill $victim; fail "a run without pid_start: pid-only rule"; }
kill $victim; wait $victim 2>/dev/null
rm -f "$ST"/runs/* "$ST"/logs/*

# A sweep long enough to interrupt, even in build-san on a loaded machine: many steps per
# point (every use cancels it; a Ctrl-C that came after the run ended would read as complete).
tiny_spec "$TMP/long.json" 'configs=[{"tp":2,"pp":1,"dp":1}]' 'mbs="1:8"' 'steps=1500' 'seq_len=64'

# checks the run_end of run $1: status $2, cause $3, and that in_flight agrees with the events
check_end() {
    WANT_STATUS=$2 WANT_CAUSE=$3 ev_py "$ST/runs/$1.pdbx" '
import os
status, cause = os.environ["WANT_STATUS"], os.environ["WANT_CAUSE"]
end = [e for e in E if e["type"] == "run_end"]
assert len(end) == 1, end
end = end[0]
assert end["status"] == status and end.get("cause") == cause, end
fl = end.get("in_flight")
assert fl in ("none", "finished", "dropped"), end
dropped = [e["point"] for e in E if e["type"] == "point_end" and e["status"] == "skipped"
           and "dropped" in e.get("message", "")]
if fl == "dropped":
    assert dropped == [end["in_flight_point"]], (dropped, end)
    assert "in flight dropped" in end["reason"], end
else:
    assert dropped == [], (dropped, end)
if fl == "finished":
    assert any(e["type"] == "point_end" and e["point"] == end["in_flight_point"] and e["status"] == "ok" for e in E), end
    assert "finished and kept" in end["reason"], end
print(end["reason"])
'
}

# wait_caught PID [BITS]: until PID is pdbx (not the shell forked for the job, which has
# handlers of its own until it execs) and catches the signals of BITS in SigCgt of
# /proc/PID/status (default 0x2, SIGINT; 0x4000 is SIGTERM, installed just after SIGINT). A
# background job of this non-interactive shell starts with SIGINT ignored, so a Ctrl-C sent
# before the command installs its handler would be lost whatever the command does.
wait_caught() {
    local i mask bits=${2:-0x2}
    local st name
    for i in $(seq 400); do
        # the name and the mask from one read of status: read apart, the mask could be the
        # forked bash's (which catches SIGTERM) and the name already pdbx's after its exec, and
        # the signal then met pdbx before it installed its handler (exit 143, 1 run in 4 in the
        # sanitizer build)
        st=$(cat "/proc/$1/status" 2>/dev/null)
        name=$(printf '%s\n' "$st" | sed -n 's/^Name:[[:space:]]*//p')
        mask=$(printf '%s\n' "$st" | sed -n 's/^SigCgt:[[:space:]]*//p')
        [ "$name" = pdbx ] && [ -n "$mask" ] &&
            [ $(( 0x$mask & bits )) -eq $(( bits )) ] && return 0
        sleep 0.05
    done
    return 1
}

# ---- Ctrl-C in a watching pdbx run ----
phase 'Ctrl-C in pdbx run'
"$PDBX" run "$TMP/long.json" --store "$ST" >"$TMP/run.out" 2>"$TMP/run.err" &
watcher=$!
for _ in $(seq 200); do f=$(ls "$ST"/runs/*.pdbx 2>/dev/null | head -1); [ -n "$f" ] && break; sleep 0.1; done
[ -n "$f" ] || fail "pdbx run did not create its run"
id=$(basename "$f" .pdbx)
wait_for 40 'any(e["type"] == "point_start" for e in E)' "$f" || fail "no point started (run)"
wait_caught $watcher || fail "pdbx run never caught SIGINT"
kill -INT $watcher
wait $watcher; rc=$?
cat "$TMP/run.err" | tr '\r' '\n' | grep -v '^\[' | tail -3
[ $rc -eq 3 ] || fail "pdbx run after Ctrl-C: exit $rc, want 3 (cancelled)"
check_end "$id" cancelled ctrl_c || fail "Ctrl-C in pdbx run: run_end"
grep -q "cancelled by Ctrl-C" "$TMP/run.err" || fail "pdbx run does not say Ctrl-C cancelled it"
ls_field "$id" message | grep -q "Ctrl-C" || fail "ls does not name Ctrl-C"
"$PDBX" show "$id" --store "$ST" | grep -q "cancelled by Ctrl-C" || fail "show does not name Ctrl-C"

# ---- Ctrl-C in pdbx attach: the same ----
phase 'Ctrl-C in pdbx attach'
id=$("$PDBX" run "$TMP/long.json" --store "$ST" --detach 2>"$TMP/err") || { cat "$TMP/err"; fail "run --detach"; }
wait_for 40 'any(e["type"] == "point_start" for e in E)' "$ST/runs/$id.pdbx" || fail "no point started (attach)"
"$PDBX" attach "$id" --store "$ST" 2>"$TMP/attach.err" &
watcher=$!
wait_caught $watcher || fail "pdbx attach never caught SIGINT"
# and it is watching: its first progress line is out (the sanitizer build's attach was seen to
# lose a Ctrl-C sent between its start-up and its first look at the run)
for _ in $(seq 200); do [ -s "$TMP/attach.err" ] && break; sleep 0.05; done
kill -INT $watcher
wait $watcher; rc=$?
[ $rc -eq 3 ] || { cat "$TMP/attach.err"; fail "pdbx attach after Ctrl-C: exit $rc, want 3 (cancelled, as pdbx run)"; }
check_end "$id" cancelled ctrl_c || fail "Ctrl-C in pdbx attach: run_end"

# ---- a SIGTERM to the supervisor that no pdbx command sent ----
phase 'foreign SIGTERM'
id=$("$PDBX" run "$TMP/long.json" --store "$ST" --detach 2>"$TMP/err") || { cat "$TMP/err"; fail "run --detach"; }
f=$ST/runs/$id.pdbx
wait_for 40 'any(e["type"] == "point_start" for e in E)' "$f" || fail "no point started (SIGTERM)"
# SIGTERM to a watching pdbx attach is not Ctrl-C: it stops watching, the sweep goes on
"$PDBX" attach "$id" --store "$ST" 2>"$TMP/attach.err" &
watcher=$!
wait_caught $watcher 0x4000 || fail "pdbx attach never caught SIGTERM"
kill -TERM $watcher
wait $watcher; rc=$?
[ $rc -eq 0 ] || { cat "$TMP/attach.err"; fail "pdbx attach after SIGTERM: exit $rc, want 0"; }
grep -q "stopped watching" "$TMP/attach.err" || fail "attach does not say it stopped watching"
ev_py "$f" 'assert not any(e["type"] == "run_end" for e in E)' || fail "SIGTERM to pdbx attach ended the sweep"
sup=$(ev_py "$f" 'print([e for e in E if e["type"] == "run_start"][0]["pid"])')
kill -TERM "$sup"
wait_for 60 'any(e["type"] == "run_end" for e in E)' "$f" || fail "no run_end after SIGTERM"
check_end "$id" cancelled signal || fail "foreign SIGTERM: run_end"
SENDER=$$ ev_py "$f" '
import os
r = [e for e in E if e["type"] == "run_end"][0]["reason"]
assert "SIGTERM from pid %s" % os.environ["SENDER"] in r, r' \
    || fail "the reason does not name the sender (this shell, pid $$)"

# ---- kill -9 of the supervisor: supervisor lost, failed ----
phase 'supervisor killed'
id=$("$PDBX" run "$TMP/long.json" --store "$ST" --detach 2>"$TMP/err") || { cat "$TMP/err"; fail "run --detach"; }
f=$ST/runs/$id.pdbx
wait_for 40 'any(e["type"] == "point_start" for e in E)' "$f" || fail "no point started (kill -9)"
sup=$(ev_py "$f" 'print([e for e in E if e["type"] == "run_start"][0]["pid"])')
kill -9 "$sup"
wait_for 60 'any(e["type"] == "run_end" for e in E)' "$f" || fail "no run_end after the supervisor was killed"
check_end "$id" failed supervisor_lost || fail "kill -9 of the supervisor: run_end"
[ "$(ls_field "$id" status)" = failed ] || fail "ls status after the supervisor was killed"
ls_field "$id" message | grep -q "supervisor lost" || fail "ls does not say supervisor lost"
for _ in $(seq 100); do pgrep -f "(mpirun|$ENGINE).*--run-id $id" >/dev/null || break; sleep 0.1; done
pgrep -af "(mpirun|$ENGINE).*--run-id $id" && fail "the sweep lives on after its supervisor was killed"
[ -e "/dev/shm/pdbx-$id" ] && fail "/dev/shm/pdbx-$id left behind after the supervisor was killed"

# ---- pdbx cancel during the collectives sweep: no point in flight ----
phase 'cancel in the collectives sweep'
# (the point before the sweep measures embed alone; every sample of the sweep lasts >= 1 ms
# since the timing protocol batches iterations: 6 collectives x 5 sizes x 31 samples, seconds)
tiny_spec "$TMP/coll.json" 'configs=[{"tp":2,"pp":1,"dp":1}]' 'mbs="1:1"' 'steps=30' 'ops="embed"' 'collectives=true' 'coll_sizes=[4096,65536,1048576,4194304,16777216]'
id=$("$PDBX" run "$TMP/coll.json" --store "$ST" --detach 2>"$TMP/err") || { cat "$TMP/err"; fail "run --detach"; }
f=$ST/runs/$id.pdbx
wait_for 60 'any(e["type"] == "coll" for e in E)' "$f" || fail "the collectives sweep never started"
"$PDBX" cancel "$id" --store "$ST" 2>"$TMP/cancel" || { cat "$TMP/cancel"; fail "cancel in the collectives sweep"; }
check_end "$id" cancelled pdbx_cancel || fail "cancel in the collectives sweep: run_end"
ev_py "$f" '
end = [e for e in E if e["type"] == "run_end"][0]
assert end["in_flight"] == "none" and "in_flight_point" not in end, end
assert "no point in flight" in end["reason"], end
' || fail "cancel in the collectives sweep: in_flight"

# ---- pdbx cancel inside a point's last step: that point finishes and is kept ----
phase 'cancel in the last step'
# one step per point, no warmup, a long step (attention at seq_len 8192 over the 4 layers:
# about 1.6 s here with the threaded attention kernel, longer than the 1 s heartbeat): once the
# heartbeat names an op of point 0, the ranks are past their last agreement inside that point
# The sanitizer build runs the kernels about ten times slower: a quarter of the attention (seq
# 4096) still lasts well over the heartbeat there, and the in-flight step ends sooner.
fin_seq=8192
[ -n "${ASAN_OPTIONS:-}" ] && fin_seq=4096
tiny_spec "$TMP/fin.json" 'configs=[{"tp":1,"pp":1,"dp":1}]' 'mbs="1:2"' 'layers=4' "seq_len=$fin_seq" 'warmup=0' 'steps=1' 'predict_oom=false' 'timeout_s=120'
id=$("$PDBX" run "$TMP/fin.json" --store "$ST" --detach 2>"$TMP/err") || { cat "$TMP/err"; fail "run --detach"; }
f=$ST/runs/$id.pdbx
wait_for 60 'any(e["type"] == "progress" and e.get("point") == 0 and e.get("op") for e in E)' "$f" || fail "point 0 never started measuring"
"$PDBX" cancel "$id" --store "$ST" 2>"$TMP/cancel" || { cat "$TMP/cancel"; fail "cancel in the last step"; }
check_end "$id" cancelled pdbx_cancel || fail "cancel in the last step: run_end"
ev_py "$f" '
end = [e for e in E if e["type"] == "run_end"][0]
assert end["in_flight"] == "finished" and end["in_flight_point"] == 0, end
assert not any(e["type"] == "point_start" and e["point"] == 1 for e in E), "point 1 was started"
' || fail "cancel in the last step: in_flight"

# ---- kill -9 of mpirun: no shared-memory segment left behind ----
phase 'mpirun killed'
id=$("$PDBX" run "$TMP/long.json" --store "$ST" --detach 2>"$TMP/err") || { cat "$TMP/err"; fail "run --detach"; }
f=$ST/runs/$id.pdbx
wait_for 40 'any(e["type"] == "point_start" for e in E)' "$f" || fail "no point started (kill mpirun)"
sup=$(ev_py "$f" 'print([e for e in E if e["type"] == "run_start"][0]["pid"])')
shm=$(for p in $(pgrep -f "^$ENGINE .*--run-id $id"); do grep -o ' /dev/shm/.*' "/proc/$p/maps"; done | sed 's/^ //; s/ (deleted)$//' | sort -u)
[ -n "$shm" ] || fail "no shared-memory segment in the ranks' maps"
kill -9 "$(pgrep -f "mpirun.*--run-id $id")"
wait_for 30 'any(e["type"] == "run_end" for e in E)' "$f" || fail "no run_end after mpirun was killed"
for _ in $(seq 100); do kill -0 "$sup" 2>/dev/null || break; sleep 0.1; done
for p in $(pgrep -f "^$ENGINE .*--run-id $id"); do kill -9 "$p"; done   # orphaned ranks, if any
for s in $shm; do [ -e "$s" ] && fail "$s left behind in /dev/shm after mpirun was killed"; done
[ -e "/dev/shm/pdbx-$id" ] && fail "/dev/shm/pdbx-$id left behind"
[ "$(ls_field "$id" status)" = failed ] || fail "ls status after mpirun was killed"
"$PDBX" ls --store "$ST"
echo PASS
