#!/usr/bin/env bash
# Failures inside a sweep: a real OOM stops its config's MBS sweep (later points skipped) and
# the next config still runs; a predicted OOM does the same without measuring; a rank that
# hangs inside a collective trips the timeout and the run ends failed with the reason; a
# collectives-sweep group that fails to form on one rank ends the sweep with a warning on every
# rank (no rank waits on it until the timeout).
# Uses PDBX_FAULT, the engine's test-only fault injection (docs/engine.md).
source "$(dirname "$0")/engine_common.inc"

# ---- injected allocation failure at point 1 (TP1, MBS 2) ----
tiny_spec "$TMP/oom.json" 'configs=[{"tp":1,"pp":1,"dp":2},{"tp":2,"pp":1,"dp":1}]' 'mbs="1:4"' 'layers=1' 'steps=1'
PDBX_FAULT=oom:rank=1:point=1 mpirun_np 2 -x PDBX_FAULT "$ENGINE" --spec "$TMP/oom.json" --store "$TMP/st1" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "oom run"; }
ev_py "$(run_file "$TMP/st1")" '
ends = {e["point"]: e for e in E if e["type"] == "point_end"}
assert [ends[i]["status"] for i in range(6)] == ["ok", "oom", "skipped", "ok", "ok", "ok"], ends
assert ends[1]["message"].startswith("rank 1: allocation failed"), ends[1]
assert "OOM at MBS 2" in ends[2]["message"], ends[2]
assert not any(e["type"] == "op" and e["point"] in (1, 2) for e in E)
assert E[-1]["type"] == "run_end" and E[-1]["status"] == "complete"
' || fail "oom events"

# ---- a real allocation refusal: the host-memory guard ("would exceed MemAvailable") ----
tiny_spec "$TMP/big.json" 'configs=[{"tp":1,"pp":1,"dp":1}]' 'mbs="128:256"' 'layers=1' 'steps=1' 'seq_len=131072' 'predict_oom=false'
mpirun_np 1 "$ENGINE" --spec "$TMP/big.json" --store "$TMP/st2" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "guard run"; }
ev_py "$(run_file "$TMP/st2")" '
ends = [e for e in E if e["type"] == "point_end"]
assert [e["status"] for e in ends] == ["oom", "skipped"], ends
assert "MemAvailable" in ends[0]["message"], ends[0]
' || fail "memory guard events"

# ---- predicted OOM against a GPU memory that fits nothing ----
tiny_spec "$TMP/pred.json" 'configs=[{"tp":1,"pp":1,"dp":1}]' 'mbs="1:4"' 'gpu_mem_gb=0.001'
mpirun_np 1 "$ENGINE" --spec "$TMP/pred.json" --store "$TMP/st3" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "predicted run"; }
ev_py "$(run_file "$TMP/st3")" '
ends = [e for e in E if e["type"] == "point_end"]
assert [e["status"] for e in ends] == ["predicted_oom", "skipped", "skipped"], ends
assert not any(e["type"] == "point_start" for e in E)
# decimal GB as `pdbx plan` prints it; the 0.001 GB limit stays visible
assert "GB > 0.001 GB of" in ends[0]["message"], ends[0]
' || fail "predicted oom events"

# ---- a hung rank: timeout -> run_end failed naming op and point; mpirun ends ----
tiny_spec "$TMP/hang.json" 'configs=[{"tp":2,"pp":1,"dp":1}]' 'mbs="1:1"' 'timeout_s=3'
t0=$(date +%s)
PDBX_FAULT=hang:rank=1:point=0 timeout 60 "${MPIRUN[@]}" -np 2 -x PDBX_FAULT "$ENGINE" --spec "$TMP/hang.json" --store "$TMP/st4" >/dev/null 2>"$TMP/err"
rc=$?; dt=$(( $(date +%s) - t0 ))
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { cat "$TMP/err"; fail "hung run: exit $rc"; }
[ $dt -lt 30 ] || fail "timeout took ${dt}s"
ev_py "$(run_file "$TMP/st4")" '
end = [e for e in E if e["type"] == "run_end"]
assert len(end) == 1 and end[0]["status"] == "failed", end
assert end[0]["reason"].startswith("timeout: ") and "point 0" in end[0]["reason"], end[0]
print(end[0]["reason"])
' || { cat "$TMP/err"; fail "timeout events"; }
# ---- a collectives-sweep group that fails on rank 1: warning, run complete, no timeout ----
tiny_spec "$TMP/grp.json" 'configs=[{"tp":2,"pp":1,"dp":1}]' 'mbs="1:1"' 'layers=1' 'steps=1' 'collectives=true' 'timeout_s=5'
t0=$(date +%s)
PDBX_FAULT=group:rank=1:point=2 timeout 60 "${MPIRUN[@]}" -np 2 -x PDBX_FAULT "$ENGINE" --spec "$TMP/grp.json" --store "$TMP/st5" >/dev/null 2>"$TMP/err"
rc=$?; dt=$(( $(date +%s) - t0 ))
[ $rc -eq 0 ] || { cat "$TMP/err"; fail "group failure run: exit $rc"; }
[ $dt -lt 30 ] || fail "group failure took ${dt}s"
ev_py "$(run_file "$TMP/st5")" '
w = [e["message"] for e in E if e["type"] == "warning" and "collectives sweep" in e["message"]]
assert len(w) == 1 and "group of 2 ranks failed" in w[0] and "rank 1: " in w[0], w
assert not any(e["type"] == "coll" for e in E)
assert [e["status"] for e in E if e["type"] == "point_end"] == ["ok"]
assert E[-1]["type"] == "run_end" and E[-1]["status"] == "complete", E[-1]
print(w[0])
' || { cat "$TMP/err"; fail "group failure events"; }
echo PASS
