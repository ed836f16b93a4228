#!/usr/bin/env bash
# How fast `pdbx advise` enumerates and estimates configurations (issue 25 item 9: at least
# 10,000 a second; done-when: 100,000 for a 1024-GPU job in under 10 s). Advises the recorded
# quick sweep (recordings/, TP 1 and 2 measured) for a job of GPUS GPUs (default 1024) over
# every layout (--recompute all --zero1 all), a global batch of GBS (default 4096) sequences,
# MBS up to MBS_MAX (default 64), LAYERS layers (default 32), in JSON; REPS times (default 3).
# Prints the rows estimated, the candidates refused (a TP degree the run did not measure: counted
# from advise's notes; cheap), the wall time of each run (the whole process) and both rates, rows
# estimated per second the one that counts; the best run's.
# The candidates are what advise enumerates today: tp x pp x dp x ep x mbs x recompute x zero1;
# vpp, sp and cp are not enumerated yet, so a 1024-GPU job has fewer than 100,000 of them.
#   bench/advise_speed.sh [RUN]   (default the recorded quick sweep)
source "$(dirname "$0")/common.inc"
run=${1:-$(ls "$ROOT"/recordings/quick-cpu-*.pdbx | head -1)}
GPUS=${GPUS:-1024}; GBS=${GBS:-4096}; MBS_MAX=${MBS_MAX:-64}; LAYERS=${LAYERS:-32}; REPS=${REPS:-3}
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); run $run"
best=
for r in $(seq "$REPS"); do
    t0=$(date +%s.%N)
    "$PDBX" advise "$run" --gpus "$GPUS" --gbs "$GBS" --mbs-max "$MBS_MAX" --layers "$LAYERS" \
        --recompute all --zero1 all --format json >"$TMP/a.json" 2>"$TMP/err" || { cat "$TMP/err"; exit 1; }
    t1=$(date +%s.%N)
    line=$("$PY" - "$TMP/a.json" "$t0" "$t1" <<'PYEOF'
import json, re, sys
d = json.load(open(sys.argv[1])); wall = float(sys.argv[3]) - float(sys.argv[2])
refused = sum(int(m.group(1)) for n in d["notes"] for m in [re.search(r": (\d+) configurations? left out$", n)] if m)
n = d["rows_total"] + refused
print("%d %d %.3f %.0f %.0f" % (d["rows_total"], refused, wall, n / wall, d["rows_total"] / wall))
PYEOF
)
    set -- $line
    echo "run $r: $1 rows estimated, $2 candidates refused, $3 s wall (the whole process: start, the run read, JSON): $5 rows/s, $4 candidates/s"
    [ -z "$best" ] || [ "$5" -gt "$best" ] && best=$5
done
echo "best: $best estimated rows/s (goal: 10000 configurations a second)"
