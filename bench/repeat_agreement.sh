#!/usr/bin/env bash
# Repeatability and load detection of the quick sweep (adaptive repetition):
#  1. the quick preset twice on this machine: per GEMM cell (op x point) the relative difference
#     of the two means; prints the worst cell and the median (goal: worst <= 2%). Run it on an
#     idle machine: each run records the load it saw (point_end "noise"), printed here, and a
#     busy run is said to be so instead of being compared silently.
#  2. the quick preset once more beside a CPU hog (one busy loop per core): every point should
#     be flagged busy (noise.busy), and pdbx run warns before it starts.
# Usage: bench/repeat_agreement.sh [preset [--FIELD VALUE ...]] (default quick; the overrides
# go to every pdbx run, e.g. --target-rel-ci 0.01 --max-seconds-per-op 1).
source "$(dirname "$0")/common.inc"
preset=${1:-quick}
shift || true
overrides=("$@")
run() {   # NAME: a run of the preset into $TMP/NAME, its id in $TMP/NAME.id
    "$PDBX" run "$preset" "${overrides[@]}" --store "$TMP/$1" >"$TMP/$1.id" 2>"$TMP/$1.err" || { cat "$TMP/$1.err"; exit 1; }
}
run a; run b
"$PY" - "$TMP/a/runs/$(cat "$TMP/a.id").pdbx" "$TMP/b/runs/$(cat "$TMP/b.id").pdbx" <<'PYEOF'
import json, statistics, subprocess, sys
def events(path):
    s = subprocess.run(["zstdcat", path], capture_output=True, text=True).stdout
    dec, i, out = json.JSONDecoder(), 0, []
    while i < len(s):
        while i < len(s) and s[i] in " \n\r\t": i += 1
        if i >= len(s): break
        o, i = dec.raw_decode(s, i); out.append(o)
    return out
GEMMS = {"attn_q", "attn_k", "attn_o", "mlp_gate", "mlp_down", "lm_head"}   # v, up: shared
runs = [events(p) for p in sys.argv[1:3]]
cells = []
for E in runs:
    busy = [e for e in E if e["type"] == "point_end" and e.get("noise", {}).get("busy")]
    ends = [e for e in E if e["type"] == "point_end"]
    print("run: %d points, %d measured under load%s" % (len(ends), len(busy),
          "" if not busy else " (other processes up to %.1f cores)" % max(e["noise"]["other_busy"] for e in busy)))
    cells.append({(e["point"], e["op"]): e["stats"] for e in E
                  if e["type"] == "op" and e["op"] in GEMMS and "reused_from" not in e})
for stat in ("mean", "median"):
    diffs = sorted((abs(b[stat] - cells[0][k][stat]) / cells[0][k][stat], k)
                   for k, b in cells[1].items() if k in cells[0])
    worst = diffs[-1]
    print("%-6s GEMM cells compared: %d; median difference %.2f%%; worst %.2f%% (point %d %s: %.3f vs %.3f ms); worst <= 2%%: %s"
          % (stat, len(diffs), 100 * statistics.median(d for d, _ in diffs), 100 * worst[0], worst[1][0],
             worst[1][1], cells[0][worst[1]][stat], cells[1][worst[1]][stat], "yes" if worst[0] <= 0.02 else "NO"))
PYEOF
hogs=()
for _ in $(seq "$(nproc)"); do sh -c 'while :; do :; done' & hogs+=($!); done
trap 'kill "${hogs[@]}" 2>/dev/null; rm -rf "$TMP"' EXIT
run h
kill "${hogs[@]}" 2>/dev/null
grep -i "busy" "$TMP/h.err" | head -1 | sed 's/^/pdbx run said: /'
ev_py "$TMP/h/runs/$(cat "$TMP/h.id").pdbx" '
ends = [e for e in E if e["type"] == "point_end"]
busy = [e for e in ends if e.get("noise", {}).get("busy")]
print("beside a CPU hog: %d of %d points flagged busy%s" % (len(busy), len(ends),
      "" if not ends or "noise" not in ends[0] else " (other processes %.1f cores)" % max(e["noise"]["other_busy"] for e in ends)))
print("flagged: %s" % ("yes" if ends and len(busy) == len(ends) else "NO"))
'
