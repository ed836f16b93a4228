#!/usr/bin/env bash
# `pdbx plan`: the FASOP preset on A40 (48 GB) and H100-SXM (80 GB) lists its 4 configs with their
# MBS points, predicted memory and OOM marks, and the marks differ; --json carries the same plan;
# spec fields work as flags.
. "$PDBX_SOURCE_DIR/tests/fixtures/cli_fixture.sh"
trap cleanup EXIT

for gpu in A40 H100-SXM; do
    "$PDBX" plan fasop-llama70b-8gpu --gpu $gpu > "$TMP/plan.$gpu" 2>"$TMP/err" || fail "plan --gpu $gpu: $(cat "$TMP/err")"
    "$PDBX" plan fasop-llama70b-8gpu --gpu $gpu --json > "$TMP/plan.$gpu.json" || fail "plan --json --gpu $gpu"
    n=$(grep -c '^TP [0-9]* *PP [0-9]* *DP [0-9]*' "$TMP/plan.$gpu")
    [ "$n" -eq 4 ] || fail "$gpu: $n config headers, expected 4"
    for cfg in "TP 1  PP 8  DP 1" "TP 2  PP 4  DP 1" "TP 4  PP 2  DP 1" "TP 8  PP 2  DP 1"; do
        grep -q "^$cfg" "$TMP/plan.$gpu" || fail "$gpu: no config '$cfg'"
    done
done
grep -q "gpu A40: 4[0-9.]* GB" "$TMP/plan.A40" || fail "A40 memory not in the header: $(head -3 "$TMP/plan.A40")"
grep -q "gpu H100-SXM: [78][0-9.]* GB" "$TMP/plan.H100-SXM" || fail "H100 memory not in the header"

# The JSON and the table agree, and numpy-free checks in Python: MBS points 1..128 per config,
# memory grows with MBS, OOM exactly where total > GPU memory, A40 has more OOM points than H100.
$PY - "$TMP/plan.A40.json" "$TMP/plan.H100-SXM.json" "$TMP/plan.A40" "$TMP/plan.H100-SXM" <<'PYEOF' || fail "plan JSON checks"
import json, sys
a40, h100 = (json.load(open(p)) for p in sys.argv[1:3])
tables = [open(p).read() for p in sys.argv[3:5]]
def check(plan, table):
    pts = plan["points"]
    cfgs = sorted({(p["tp"], p["pp"], p["dp"]) for p in pts})
    assert cfgs == [(1, 8, 1), (2, 4, 1), (4, 2, 1), (8, 2, 1)], cfgs
    mem = plan["gpu"]["mem_bytes"]
    ooms = 0
    for c in cfgs:
        cp = [p for p in pts if (p["tp"], p["pp"], p["dp"]) == c]
        assert [p["mbs"] for p in cp] == [1, 2, 4, 8, 16, 32, 64, 128], (c, [p["mbs"] for p in cp])
        tot = [p["mem"]["total"] for p in cp]
        assert tot == sorted(tot), (c, tot)
        for p in cp:
            assert p["predicted_oom"] == (p["mem"]["total"] > mem), p
            ooms += p["predicted_oom"]
        # The table row of each point carries its total in GB and the mark.
    n_oom_table = sum(1 for l in table.splitlines() if l.strip().split()[-2:-1] == ["OOM"])
    assert n_oom_table == ooms, (n_oom_table, ooms)
    return ooms, {(p["tp"], p["mbs"]): p["predicted_oom"] for p in pts}
o40, m40 = check(a40, tables[0])
o80, m80 = check(h100, tables[1])
assert o40 > o80, (o40, o80)
assert m40 != m80
print("A40 OOM points", o40, "H100 OOM points", o80)
PYEOF

# Spec fields as flags, applied after the preset; errors from the planner are one line, exit 2.
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
echo "PASS: plan on A40 ($(grep -c OOM "$TMP/plan.A40") OOM lines) vs H100-SXM ($(grep -c OOM "$TMP/plan.H100-SXM"))"
