#!/usr/bin/env bash
# `pdbx plan`: the FASOP preset on A40 (48 GB) and H100-SXM (80 GB) lists its 4 configs with their
# MBS points and both memory predictions (profile: what the engine allocates, which decides the
# OOM stop; train: the full model's training memory) with their marks; the A40 plans the points
# FASOP measured there as measurable while training the 80-layer model is OOM everywhere;
# --format json (or --json) carries the same plan; spec fields work as flags.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/cli_fixture.sh" || exit 1
trap cleanup EXIT

for gpu in A40 H100-SXM; do
    "$PDBX" plan fasop-llama70b-8gpu --gpu $gpu > "$TMP/plan.$gpu" 2>"$TMP/err" || fail "plan --gpu $gpu: $(cat "$TMP/err")"
    "$PDBX" plan fasop-llama70b-8gpu --gpu $gpu --format json > "$TMP/plan.$gpu.json" || fail "plan --format json --gpu $gpu"
    "$PDBX" plan fasop-llama70b-8gpu --gpu $gpu --json | cmp -s - "$TMP/plan.$gpu.json" || fail "plan --json differs from --format json"
    n=$(grep -c '^TP [0-9]* *PP [0-9]* *DP [0-9]*' "$TMP/plan.$gpu")
    [ "$n" -eq 4 ] || fail "$gpu: $n config headers, expected 4"
    for cfg in "TP 1  PP 8  DP 1" "TP 2  PP 4  DP 1" "TP 4  PP 2  DP 1" "TP 8  PP 2  DP 1"; do
        grep -q "^$cfg" "$TMP/plan.$gpu" || fail "$gpu: no config '$cfg'"
    done
done
grep -q "gpu A40: 4[0-9.]* GB" "$TMP/plan.A40" || fail "A40 memory not in the header: $(head -3 "$TMP/plan.A40")"
grep -q "gpu H100-SXM: [78][0-9.]* GB" "$TMP/plan.H100-SXM" || fail "H100 memory not in the header"

# The JSON and the table agree: MBS points 1..128 per config, both predictions grow with MBS, a
# point is marked OOM exactly when a prediction exceeds the GPU's memory, the table's marks match.
# Full 70B training with Adam fits neither GPU at these configs (the preset says so), so the
# training marks can only differ where the model puts a point between 48 and 80 GB: the same
# configs with Llama-3.1-8B (--model llama8b) do, and there the A40 must mark more points OOM.
# The profile of the 8 profiled layers fits the A40 where FASOP measured (its llama70b_A40_1.npz
# holds MBS 1..8; the others at least as many): the engine would measure those points.
for gpu in A40 H100-SXM; do
    "$PDBX" plan fasop-llama70b-8gpu --gpu $gpu --model llama8b > "$TMP/p8.$gpu" || fail "plan --model llama8b"
    "$PDBX" plan fasop-llama70b-8gpu --gpu $gpu --model llama8b --json > "$TMP/p8.$gpu.json" || fail "plan --model llama8b --json"
done
$PY - "$TMP" <<'PYEOF' || fail "plan JSON checks"
import json, sys
tmp = sys.argv[1]
def check(stem, gpu):
    plan = json.load(open(f"{tmp}/{stem}.{gpu}.json"))
    table = open(f"{tmp}/{stem}.{gpu}").read()
    pts = plan["points"]
    cfgs = sorted({(p["tp"], p["pp"], p["dp"]) for p in pts})
    assert cfgs == [(1, 8, 1), (2, 4, 1), (4, 2, 1), (8, 2, 1)], cfgs
    mem = plan["gpu"]["mem_bytes"]
    for c in cfgs:
        cp = [p for p in pts if (p["tp"], p["pp"], p["dp"]) == c]
        assert [p["mbs"] for p in cp] == [1, 2, 4, 8, 16, 32, 64, 128], (c, [p["mbs"] for p in cp])
        for key in ("train_mem_bytes", "profile_mem_bytes"):
            v = [p[key] for p in cp]
            assert v == sorted(v), (c, key, v)
        for p in cp:
            assert p["train_mem_bytes"] == p["mem"]["total"], p
            assert p["train_fits"] == (p["train_mem_bytes"] <= mem), p
            assert p["profile_fits"] == (p["profile_mem_bytes"] <= mem), p
            assert p["predicted_oom"] == (not p["train_fits"]), p      # kept: the training mark
            assert abs(sum(p["profile"].values()) - p["profile_mem_bytes"]) < 1, p
            assert p["profile_mem_bytes"] < p["train_mem_bytes"], p      # 8 of 80 layers, no training state
    rows = [l.split() for l in table.splitlines() if l.startswith("  ") and l.split()[0].isdigit()]
    assert len(rows) == len(pts), (len(rows), len(pts))
    for r, p in zip(rows, pts):          # same order: per config, MBS ascending
        # mbs profile fits weights grads optimizer activations train fits sweep
        assert int(r[0]) == p["mbs"] and abs(float(r[1]) - p["profile_mem_bytes"] / 1e9) < 0.051, (r, p)
        assert r[2] == ("fits" if p["profile_fits"] else "OOM"), (r, p)
        assert abs(float(r[7]) - p["train_mem_bytes"] / 1e9) < 0.051, (r, p)
        assert r[8] == ("fits" if p["train_fits"] else "OOM"), (r, p)
    return mem, {(p["tp"], p["mbs"]): (not p["train_fits"], p["train_mem_bytes"], p["profile_fits"]) for p in pts}
m40, a = check("plan", "A40")
m80, h = check("plan", "H100-SXM")
assert 40e9 < m40 < 50e9 and 75e9 < m80 < 85e9, (m40, m80)
assert {k: v[1] for k, v in a.items()} == {k: v[1] for k, v in h.items()}   # memory is the GPU's business only in the marks
between = [k for k, v in a.items() if m40 < v[1] <= m80]
assert all(a[k][0] and not h[k][0] for k in between)
# the 70B preset on A40: training the full model is OOM at every point, the profile fits the
# points FASOP measured (MBS 1..8 of every TP) and each config's MBS sweep goes on past them
assert all(v[0] for v in a.values()), "a 70B point predicted to train in 48 GB"
assert all(a[(tp, m)][2] for tp in (1, 2, 4, 8) for m in (1, 2, 4, 8)), a
first = {tp: min([m for (t, m), v in a.items() if t == tp and not v[2]] or [256]) for tp in (1, 2, 4, 8)}
print("A40, llama70b: first profile OOM per TP:", first, "; training OOM at all", len(a), "points")
preset = (sum(v[0] for v in a.values()), sum(v[0] for v in h.values()))
m40, a = check("p8", "A40")
m80, h = check("p8", "H100-SXM")
o40, o80 = sum(v[0] for v in a.values()), sum(v[0] for v in h.values())
assert o40 > o80, (o40, o80)
print("training OOM points A40/H100: llama70b preset %d/%d, with llama8b %d/%d" % (preset + (o40, o80)))
PYEOF
grep -q "32 points in 4 configs: 32 to measure, [0-9]* profile OOM, 32 training OOM" "$TMP/plan.A40" \
    || fail "A40 summary line: $(sed -n 5p "$TMP/plan.A40")"

# With predict_oom on, each config measures up to its first profile OOM, stops there and skips
# the rest: the sweep column follows the profile marks, never the training ones.
"$PDBX" plan fasop-llama70b-8gpu --predict-oom on --json > "$TMP/stop.json" || fail "plan --predict-oom on"
$PY - "$TMP/stop.json" <<'PYEOF' || fail "sweep actions do not follow the profile OOM marks"
import json, sys
pts = json.load(open(sys.argv[1]))["points"]
stops = 0
for cfg in sorted({(p["tp"], p["pp"], p["dp"]) for p in pts}):
    cp = [p for p in pts if (p["tp"], p["pp"], p["dp"]) == cfg]
    first = next((i for i, p in enumerate(cp) if not p["profile_fits"]), len(cp))
    want = ["measure"] * first + (["stop"] + ["skip"] * (len(cp) - first - 1) if first < len(cp) else [])
    assert [p["sweep"] for p in cp] == want, (cfg, [p["sweep"] for p in cp], want)
    assert first >= 4, (cfg, first)     # MBS 1..8 are measured although training is OOM
    stops += first < len(cp)
assert stops > 0
PYEOF

# Spec fields as flags, applied after the preset; errors from the planner are one line, exit 2.
"$PDBX" plan quick --format csv >/dev/null 2>"$TMP/fmt.err"; rc=$?
[ $rc -eq 2 ] && grep -q "format" "$TMP/fmt.err" || fail "plan --format csv: exit $rc, $(cat "$TMP/fmt.err")"
"$PDBX" plan quick --seq-len 512 --json > "$TMP/q.json" || fail "plan quick --seq-len 512"
$PY -c "import json,sys; d=json.load(open('$TMP/q.json')); assert d['spec']['seq_len']==512, d['spec'].get('seq_len')" \
    || fail "--seq-len did not reach the spec"
"$PDBX" plan quick > "$TMP/q.txt" || fail "plan quick"
grep -q '^sweep quick' "$TMP/q.txt" || fail "plan quick header: $(head -1 "$TMP/q.txt")"

# pdbx with no subcommand: the quick plan and the store listing.
mkdir -p "$TMP/store"
PDBX_STORE="$TMP/store" "$PDBX" > "$TMP/overview" 2>"$TMP/err" || fail "pdbx (overview): $(cat "$TMP/err")"
grep -q '^sweep quick' "$TMP/overview" || fail "overview lacks the quick plan"
grep -q "no runs in $TMP/store" "$TMP/overview" || fail "overview lacks the listing"
echo "PASS: plan on A40 vs H100-SXM, JSON = table, overrides, overview"
