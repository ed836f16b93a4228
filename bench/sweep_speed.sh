#!/usr/bin/env bash
# The same sweep with fixed counts and with adaptive repetition (issue 12's sweep: Llama-3.2-1B,
# 2 profiled layers, seq 128, fp32, TP1, MBS 1/2/4, one rank with all cores as BLAS threads).
#   fixed:    warmup 2 + steps 5 whole steps per point (the counts FASOP-style profilers use);
#   adaptive: each cell repeated until its 95% CI is within target_rel_ci (default 1%), at least
#             min_reps, at most max_reps samples or max_seconds_per_op; one step kept for the
#             step spans after a warm-up that ends when step times agree within 5%.
# Per mode: wall time (pdbx run, launch to exit), setup (sum of the points' setup_s), the sum
# of measured op time (mean x count over the cells measured, a shared cell once), samples per
# op cell (min / median / max), the largest relative CI and how many cells are within the
# target. Last: adaptive wall / fixed wall (goal <= 0.2, every cell within its target).
# Usage: bench/sweep_speed.sh [target_rel_ci] [max_seconds_per_op]. A busy machine inflates the
# CIs (every point records the load it saw: point_end "noise").
source "$(dirname "$0")/common.inc"
target=${1:-0.01}; maxs=${2:-1}
base=('"model": "llama1b"' '"layers": 2' '"seq_len": 128' '"dtype": "fp32"' '"backend": "cpu"'
      '"gpus_per_node": 1' '"configs": [{"tp": 1, "pp": 1, "dp": 1}]' '"mbs": "1:4"'
      '"collectives": false' '"predict_oom": false' '"ops": "all"' '"timeout_s": 3600')
mkspec() {   # FILE extra-fields...
    local f=$1; shift; local IFS=,
    echo "{\"name\": \"sweep_speed\", ${base[*]}, $*}" >"$f"
}
mkspec "$TMP/fixed.json" '"repetition": "fixed"' '"warmup": 2' '"steps": 5'
mkspec "$TMP/adaptive.json" '"repetition": "adaptive"' '"warmup": 2' '"steps": 1' \
    "\"target_rel_ci\": $target" '"min_reps": 5' '"max_reps": 1000' "\"max_seconds_per_op\": $maxs"
for mode in fixed adaptive; do
    t0=$(date +%s.%N)
    id=$("$PDBX" run "$TMP/$mode.json" --store "$TMP/st-$mode" 2>"$TMP/err") || { cat "$TMP/err"; exit 1; }
    t1=$(date +%s.%N)
    echo "$t0 $t1" >"$TMP/$mode.wall"
    ev_py "$TMP/st-$mode/runs/$id.pdbx" "
import json
t0, t1 = map(float, open('$TMP/$mode.wall').read().split())
S = [e for e in E if e['type'] == 'run_start'][0]
sp = S['spec']
ends = [e for e in E if e['type'] == 'point_end']
cells = [e for e in E if e['type'] == 'op' and 'shared_with' not in e and 'reused_from' not in e]
setup = sum(e.get('setup_s', 0) for e in ends)
meas = sum(c['stats']['mean'] * c['stats']['count'] for c in cells) / 1e3
counts = sorted(c['stats']['count'] for c in cells)
rel = [(c['stats'].get('ci95', float('inf')) / c['stats']['mean'], c['point'], c['op']) for c in cells]
worst = max(rel)
within = sum(1 for r in rel if r[0] <= $target)
busy = sum(1 for e in ends if e.get('noise', {}).get('busy'))
print('%-8s wall %6.1f s  setup %5.2f s  measured ops %6.1f s  samples/cell %d/%d/%d  largest CI %.2f%% (point %d %s)  within %.1f%%: %d/%d  busy points %d/%d'
      % ('$mode', t1 - t0, setup, meas, counts[0], counts[len(counts)//2], counts[-1], 100 * worst[0], worst[1], worst[2], 100 * $target, within, len(rel), busy, len(ends)))
json.dump({'wall': t1 - t0, 'within': within, 'cells': len(rel)}, open('$TMP/$mode.json.out', 'w'))
"
done
"$PY" - "$TMP/fixed.json.out" "$TMP/adaptive.json.out" <<'PYEOF'
import json, sys
f, a = (json.load(open(p)) for p in sys.argv[1:])
r = a["wall"] / f["wall"]
ok = r <= 0.2 and a["within"] == a["cells"]
print("adaptive / fixed wall = %.3f (goal <= 0.2 with every cell within its target: %s)" % (r, "yes" if ok else "NO"))
PYEOF
