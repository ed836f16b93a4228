#!/usr/bin/env bash
# Disk full under a running sweep (issue 10 item 9), on a real tmpfs of 2 MiB filled up while the
# sweep runs (needs root for mount; skipped otherwise):
#  - the engine stops at the first append that finds no room (every rank: mpirun ends), and
#    the run ends failed with "disk full (...)" in run_end, written into the space the run
#    file's writer keeps for it; the events written before stay readable;
#  - `pdbx ls` and `pdbx show` name the reason;
#  - a run whose run_end could not be written at all (its log says so) lists the log's reason.
source "$(dirname "$0")/engine_common.inc"
[ -x "$PDBX" ] || { echo "SKIP: $PDBX not built"; exit 77; }
export PDBX_ENGINE=$ENGINE
mkdir -p "$TMP/mnt"
mount -t tmpfs -o size=2m tmpfs "$TMP/mnt" 2>/dev/null ||
    { echo "SKIP: cannot mount a tmpfs here (needs root): disk-full test not run"; exit 77; }
# a supervisor may still hold the run file for a moment after run_end: detach lazily then
trap 'umount "$TMP/mnt" 2>/dev/null || umount -l "$TMP/mnt" 2>/dev/null; rm -rf "$TMP"' EXIT
ST=$TMP/mnt/store


# many short points: events keep coming until the disk is full
tiny_spec "$TMP/spec.json" 'configs=[{"tp":2,"pp":1,"dp":1}]' 'mbs="1:64"' 'steps=20' 'predict_oom=false'
id=$("$PDBX" run "$TMP/spec.json" --store "$ST" --detach 2>"$TMP/err") || { cat "$TMP/err"; fail "run --detach"; }
f=$ST/runs/$id.pdbx
wait_for 40 'any(e["type"] == "point_end" for e in E)' "$f" || fail "first point never ended"
dd if=/dev/zero of="$TMP/mnt/fill" bs=4k >/dev/null 2>&1     # fills the file system
t_full=$SECONDS
df -k "$TMP/mnt" | tail -1
wait_for 20 'any(e["type"] == "run_end" for e in E)' "$f" || { tail -5 "$ST/logs/$id.log"; fail "no run_end after the disk filled up"; }
echo "run_end $((SECONDS - t_full)) s after the disk was full"
ev_py "$f" '
end = [e for e in E if e["type"] == "run_end"]
assert len(end) == 1, end
end = end[0]
assert end["status"] == "failed" and end.get("cause") == "write_failed", end
assert end["reason"].startswith("disk full ("), end
assert "No space left on device" in end["reason"], end
assert "by" not in end, "the engine itself must record it: %s" % end
ok = [e for e in E if e["type"] == "point_end" and e["status"] == "ok"]
assert ok, "the points measured before are kept"
print(end["reason"])
' || fail "disk-full run_end"
# the engine stopped at the first failed append: said once, nothing tried after it
[ "$(grep -c 'the sweep stops$' "$ST/logs/$id.log")" -eq 1 ] || { tail -5 "$ST/logs/$id.log"; fail "the engine did not stop at the first failed append"; }
grep -q "writing an event" "$ST/logs/$id.log" && fail "the engine went on writing events after the disk was full"
# every rank stopped: mpirun and the ranks are gone soon after
for _ in $(seq 100); do pgrep -f "(mpirun|$ENGINE).*--run-id $id" >/dev/null || break; sleep 0.1; done
pgrep -af "(mpirun|$ENGINE).*--run-id $id" && fail "ranks still run after the disk filled up"
"$PDBX" ls --store "$ST" | tee "$TMP/ls"
grep -q "failed .*disk full" "$TMP/ls" || fail "ls does not say disk full"
"$PDBX" show "$id" --store "$ST" >"$TMP/show" || fail "show of the disk-full run"
grep -q "disk full" "$TMP/show" || { head -5 "$TMP/show"; fail "show does not say disk full"; }
rm -f "$TMP/mnt/fill"

# ---- run_end not written at all: the log's line names the reason ----
id2=2026-01-01__00-00-00_00d15c0f
sh -c 'exit 0' & dead=$!; wait $dead      # a pid that is gone
printf '{"type":"run_start","t":%s,"id":"%s","host":"%s","pid":%s,"points":[]}' "$(date +%s)" $id2 "$(hostname)" $dead \
    | zstd -q -c > "$ST/runs/$id2.pdbx"
printf 'pdbx-engine: run 1\npdbx-engine: run_end not written: failed: disk full (no room) (No space left on device)\nmpirun banner\n' > "$ST/logs/$id2.log"
"$PDBX" ls --store "$ST" | grep "$id2" | tee "$TMP/ls2"
grep -q "failed .*disk full (no room)" "$TMP/ls2" || fail "ls does not give the log's reason for a run without run_end"
"$PDBX" show "$id2" --store "$ST" | grep -q "disk full (no room)" || fail "show does not give the log's reason"
echo "PASS (${SECONDS}s)"
