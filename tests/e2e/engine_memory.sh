#!/usr/bin/env bash
# suite: plain build only: the memory model against measured RSS; the sanitizer allocator changes what is measured, and the engine under ASan runs in engine_quick and engine_ranks
# suite: long: starts first in the pool (a real sweep or a long session), so the pool does not end on it
# The profile-memory prediction against what the cpu backend really takes: the quick sweep
# (shortened: seq_len 32, one measured step, MBS 1..8 as the preset) through `pdbx run`; every
# point's point_end carries the predicted profile memory (engine/plan, what the engine
# allocates on one rank) and the measured peak (the rank's RSS high-water mark above its
# baseline, max over ranks). The prediction must be within 15% of the peak for every point;
# the ratios are printed. `pdbx show` prints both per point, and --format json carries them.
source "$(dirname "$0")/engine_common.inc"
[ -x "$PDBX" ] || { echo "SKIP: $PDBX not built"; exit 77; }
[ -w /proc/self/clear_refs ] || { echo "SKIP: /proc/self/clear_refs is not writable: the RSS peak cannot be reset per point"; exit 77; }
export PDBX_ENGINE=$ENGINE
# Sanitizer build: ASan keeps freed chunks in a quarantine (256 MiB by default) that stays
# resident; the adaptive op phase frees many small temporaries (MPI, OpenBLAS) and its
# quarantine would count as the point's memory (measured/predicted 1.22 instead of 1.06). A small
# quarantine keeps use-after-free detection and the RSS honest.
if [ -n "${ASAN_OPTIONS:-}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=8"; fi
ST=$TMP/store
"$PDBX" run quick --seq-len 32 --warmup 0 --steps 1 --store "$ST" >"$TMP/id" 2>"$TMP/err" || { cat "$TMP/err"; fail "pdbx run quick"; }
id=$(cat "$TMP/id")
# (The sanitizer build measures the same ratios: its quarantine raises the baseline, not the
# point's own peak above it.)
ev_py "$ST/runs/$id.pdbx" '
S = [e for e in E if e["type"] == "run_start"][0]
pts = {p["index"]: p for p in S["points"]}
ends = [e for e in E if e["type"] == "point_end"]
assert len(ends) == 8 and all(e["status"] == "ok" for e in ends), ends
worst = 0
for e in ends:
    p = pts[e["point"]]
    pred, peak, base = e["profile_mem_bytes"], e["mem_peak_bytes"], e["mem_base_bytes"]
    ratio = peak / pred
    worst = max(worst, abs(ratio - 1))
    print("TP%d PP%d DP%d MBS %d: predicted %.1f MiB, measured %.1f MiB (baseline %.1f MiB), measured/predicted %.3f"
          % (p["tp"], p["pp"], p["dp"], p["mbs"], pred / 2**20, peak / 2**20, base / 2**20, peak / pred))
    assert 0.85 <= ratio <= 1.15, (p, pred, peak, ratio)
    assert 0 < base < peak, (base, peak)
# the prediction grows with MBS within a config, and so does the measurement
for tp in {p["tp"] for p in pts.values()}:
    cfg = sorted((pts[e["point"]]["mbs"], e) for e in ends if pts[e["point"]]["tp"] == tp)
    preds = [e["profile_mem_bytes"] for _, e in cfg]
    assert preds == sorted(preds) and preds[0] < preds[-1], preds
print("worst deviation %.1f%%" % (100 * worst))
' || fail "predicted profile memory vs measured peak"

# pdbx show: per config a memory table, predicted beside measured, and the JSON fields.
"$PDBX" show "$id" --store "$ST" >"$TMP/show" 2>"$TMP/err" || { cat "$TMP/err"; fail "pdbx show"; }
[ "$(grep -c '^  memory per rank (predicted profile memory; measured peak' "$TMP/show")" = 2 ] || { cat "$TMP/show"; fail "no memory table per config"; }
grep -A2 '^  memory per rank' "$TMP/show" | grep -q '^  mbs  predicted  measured  measured/predicted$' || fail "memory table header"
"$PDBX" show "$id" --store "$ST" --format json >"$TMP/show.json" || fail "pdbx show --format json"
"$PY" - "$TMP/show.json" "$TMP/show" <<'PYEOF' || fail "show: memory fields"
import json, sys
d = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
n = 0
for c in d["configs"]:
    for p in c["points"]:
        assert p["profile_mem_bytes"] > 0 and p["mem_peak_bytes"] > 0 and p["mem_base_bytes"] > 0, p
        # the table's ratio column is the JSON's figures' ratio
        assert ("%.3f" % (p["mem_peak_bytes"] / p["profile_mem_bytes"])) in text, p
        n += 1
assert n == 8, n
PYEOF
echo "PASS: profile memory within 15% of the measured peak for the 8 quick points; show prints both"
