#!/usr/bin/env bash
# A backend error that leaves the device unusable (PDBX_EFATAL: the cuda backend returns it for
# a sticky CUDA error such as cudaErrorIllegalAddress, cuda_checks.c) ends the run `failed`
# with the reason, with real mpirun on the cpu backend: the point it hit ends `error` with the
# message of the rank that hit it, nothing more is measured (no later point, no collectives
# sweep; a plain error would go on with the next config), and the engine exits non-zero.
# Uses PDBX_FAULT=fatal (the engine's test-only fault injection, docs/engine.md).
source "$(dirname "$0")/engine_common.inc"

tiny_spec "$TMP/fatal.json" 'configs=[{"tp":1,"pp":1,"dp":2},{"tp":2,"pp":1,"dp":1}]' 'mbs="1:2"' \
    'layers=1' 'steps=1' 'collectives=true'
PDBX_FAULT=fatal:rank=1:point=1 mpirun_np 2 -x PDBX_FAULT "$ENGINE" --spec "$TMP/fatal.json" \
    --store "$TMP/st" >/dev/null 2>"$TMP/err" && { cat "$TMP/err"; fail "the run succeeded"; }
ev_py "$(run_file "$TMP/st")" '
ends = {e["point"]: e for e in E if e["type"] == "point_end"}
assert sorted(ends) == [0, 1], ends                       # nothing after the fatal point
assert ends[0]["status"] == "ok" and ends[1]["status"] == "error", ends
assert ends[1]["message"].startswith("rank 1: ") and "injected by PDBX_FAULT" in ends[1]["message"], ends[1]
assert not any(e["type"] == "coll" for e in E)               # no collectives sweep either
end = E[-1]
assert end["type"] == "run_end" and end["status"] == "failed", end
assert "point 1" in end["reason"] and "device unusable" in end["reason"], end
' || fail "fatal events"
echo PASS
