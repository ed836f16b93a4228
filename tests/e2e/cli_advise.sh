#!/usr/bin/env bash
# `pdbx advise` on a run swept here (the real supervisor, mpirun at 2 ranks, the tiny model with
# passes fwd,bwd, configs 1x2x1, 1x1x2, 2x1x1, MBS 1..2, the collectives sweep) and on the
# recorded quick sweep (forward only): the table (columns, Pareto mark, notes, bwd measured or
# x3), the JSON rows read with python (every key, the order, step = compute + comm + bubble,
# num_mb, the Pareto front among the rows that fit, the 1x2x1 stage time and bubble recomputed
# from `pdbx show`'s own median cells, the x3 rule on the forward-only recording), the refusal
# of a TP degree the run did not sweep, and the one-line usage errors (exit 2).
source "$(dirname "$0")/engine_common.inc"
[ -x "$PDBX" ] || { echo "SKIP: $PDBX not built"; exit 77; }
export PDBX_ENGINE=$ENGINE
ST=$TMP/store
REC=$PDBX_SOURCE_DIR/recordings/quick-cpu-amd-epyc-2core.pdbx

phase "sweep"
tiny_spec "$TMP/spec.json" 'configs=[{"tp":1,"pp":2,"dp":1},{"tp":1,"pp":1,"dp":2},{"tp":2,"pp":1,"dp":1}]' \
    'passes=["fwd","bwd"]' 'collectives=true' 'mbs="1:2"' 'gpus_per_node=2'
"$PDBX" run "$TMP/spec.json" --store "$ST" >"$TMP/id" 2>"$TMP/err" || { cat "$TMP/err"; fail "pdbx run"; }
id=$(cat "$TMP/id")
export PDBX_STORE=$ST

phase "table"
"$PDBX" advise "$id" --gpus 2 --gbs 8 --layers 4 >"$TMP/table" 2>"$TMP/err" || { cat "$TMP/err"; fail "advise table"; }
grep -q "^advise run $id: model engine-tiny-llama, 4 layers, 2 GPUs (1 node x 2), gbs 8, mbs <= 4, stat median$" "$TMP/table" || { cat "$TMP/table"; fail "table: header"; }
grep -q "^bwd: measured (the run's backward cells)$" "$TMP/table" || fail "table: bwd line"
grep -qE '^  rank  tp  pp  dp  mbs  num_mb  step_ms  compute_ms  comm_ms  bubble_ms  mem_gb  fits$' "$TMP/table" \
    || { cat "$TMP/table"; fail "table: columns"; }
# 2 GPUs, 4 layers, gbs 8, MBS 1..4 (twice the largest measured): 1x1x2 x 3 MBS, 1x2x1 and 2x1x1 x 3
[ "$(grep -cE '^ +[0-9]+ +[12] +[12] +[12] +[124] ' "$TMP/table")" = 9 ] || { cat "$TMP/table"; fail "table: 9 rows"; }
grep -qE '^ +1 +.* yes +\*' "$TMP/table" || { cat "$TMP/table"; fail "table: the fastest row fits and is on the front"; }
grep -q "^  \* Pareto front of step time vs memory per GPU" "$TMP/table" || fail "table: Pareto legend"
grep -q "^  tp 1 mbs 4: op cells extrapolated from mbs 1 and 2$" "$TMP/table" || { cat "$TMP/table"; fail "table: extrapolation note"; }

phase "json"
"$PDBX" advise "$id" --gpus 2 --gbs 8 --layers 4 --format json >"$TMP/a.json" || fail "advise json"
"$PDBX" show "$id" --stat median --format json >"$TMP/fwd.json" || fail "show fwd"
"$PDBX" show "$id" --stat median --pass bwd --format json >"$TMP/bwd.json" || fail "show bwd"
"$PY" - "$TMP" <<'PYEOF' || fail "advise json"
import json, sys
tmp = sys.argv[1]
doc = json.load(open(tmp + "/a.json"))
rows = doc["rows"]
assert doc["bwd_measured"] is True, doc
assert doc["query"] == {"gpus": 2, "gbs": 8, "nodes": 1, "gpus_per_node": 2, "layers": 4, "mbs_max": 4,
                        "stat": "median"}, doc["query"]
need = ["tp", "pp", "dp", "mbs", "num_mb", "step_ms", "compute_ms", "comm_ms", "bubble_ms", "mem_gb", "fits"]
assert len(rows) == 9, len(rows)
for r in rows:
    assert all(k in r for k in need), r
    assert r["tp"] * r["pp"] * r["dp"] == 2 and 4 % r["pp"] == 0, r
    assert r["num_mb"] == 8 // (r["mbs"] * r["dp"]) and 8 % (r["mbs"] * r["dp"]) == 0, r
    parts = r["compute_ms"] + r["comm_ms"] + r["bubble_ms"] + r["optimizer_ms"]
    assert abs(r["step_ms"] - parts) <= 1e-9 * r["step_ms"], r
    assert r["optimizer_ms"] > 0, r   # the run measured fwd+bwd: its optimizer cell
    assert r["loss_ms"] > 0 and r["loss_ms"] < r["compute_ms"], r   # and its loss cells
    assert abs(r["comm_ms"] - (r["tp_comm_ms"] + r["pp_comm_ms"] + r["dp_comm_ms"])) <= 1e-9 * max(r["comm_ms"], 1), r
    assert r["bubble_ms"] == 0 if r["pp"] == 1 else r["bubble_ms"] > 0, r
    assert (r["tp_comm_ms"] > 0) == (r["tp"] > 1) and (r["dp_comm_ms"] > 0) == (r["dp"] > 1), r
    assert r["fits"] is True and r["bwd_measured"] is True, r
    assert (r["note"] is None) == (r["estimated_cells"] == 0), r
assert [r["step_ms"] for r in rows] == sorted(r["step_ms"] for r in rows), "not in step order"
for r in rows:
    dominated = any(o is not r and o["fits"] and o["step_ms"] <= r["step_ms"] and o["mem_gb"] <= r["mem_gb"]
                    and (o["step_ms"] < r["step_ms"] or o["mem_gb"] < r["mem_gb"]) for o in rows)
    assert r["pareto"] == (r["fits"] and not dominated), r
assert rows[0]["pareto"], rows[0]
# 1x2x1 mbs 1 from show's cells: the config's own point at mbs 1
def cells(path):
    cfg = next(c for c in json.load(open(path))["configs"] if (c["tp"], c["pp"], c["dp"]) == (1, 2, 1))
    p = next(p for p in cfg["points"] if p["mbs"] == 1)
    # (the optimizer's cell is not a stage's pass: optimizer_ms, checked above)
    return {op: v for op, v in p["ms"].items()
            if v is not None and not op.startswith("tp_allreduce") and op != "optimizer"}
fwd, bwd = cells(tmp + "/fwd.json"), cells(tmp + "/bwd.json")
once = {"embed": "first", "final_norm": "last", "lm_head": "last", "loss": "last"}
def stage(d, which):
    return sum(v * (2 if op not in once else 1) for op, v in d.items() if op not in once or once[op] == which)
ts = sorted(stage(fwd, s) + stage(bwd, s) for s in ("first", "last"))
t, other = ts[1], ts[0]
r = next(r for r in rows if (r["tp"], r["pp"], r["dp"], r["mbs"]) == (1, 2, 1, 1))
assert abs(r["stage_fwd_ms"] + r["stage_bwd_ms"] - t) <= 1e-6 * t, (r, t)
# 1F1B: the bubble is one micro-batch of the other stage (fill and drain), not (pp - 1) x t
assert abs(r["bubble_ms"] - other) <= 1e-6 * t and abs(r["compute_ms"] - 8 * t) <= 1e-6 * t, (r, t, other)
assert abs(r["pp_comm_ms"] - 2 * (8 + 2 - 2) * r["p2p_ms"]) <= 1e-9 * r["pp_comm_ms"], r
PYEOF

"$PDBX" advise "$id" --gpus 2 --gbs 8 --layers 4 --top 3 --format json >"$TMP/top.json" || fail "advise --top"
"$PY" - "$TMP" <<'PYEOF' || fail "advise --top 3"
import json, sys
a, t = json.load(open(sys.argv[1] + "/a.json")), json.load(open(sys.argv[1] + "/top.json"))
assert t["rows_total"] == 9 and t["rows"] == a["rows"][:3], t
PYEOF
"$PDBX" advise "$id" --gpus 2 --gbs 8 --layers 4 --top 3 | grep -q "^  (3 of 9 configurations shown: --top)$" \
    || fail "advise --top: the shown line"

phase "forward-only recording: the x3 rule; an unswept TP"
"$PDBX" advise "$REC" --gpus 2 --gbs 8 >"$TMP/rec.table" || fail "advise recording"
grep -q "^bwd: not measured: backward = 2 x forward (FASOP's x3 rule)$" "$TMP/rec.table" || { cat "$TMP/rec.table"; fail "x3 line"; }
"$PDBX" advise "$REC" --gpus 4 --gbs 8 --format json >"$TMP/rec.json" || fail "advise recording --gpus 4"
"$PY" - "$TMP/rec.json" <<'PYEOF' || fail "recording json"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["bwd_measured"] is False and doc["rows"], doc["bwd_measured"]
for r in doc["rows"]:
    assert r["bwd_measured"] is False and abs(r["stage_bwd_ms"] - 2 * r["stage_fwd_ms"]) <= 1e-9 * r["stage_bwd_ms"], r
    assert r["tp"] in (1, 2), r
# tp 4 on 4 GPUs: pp 1 dp 1, mbs 1, 2, 4, 8 (up to twice the largest measured, 8 dividing 8)
assert "tp 4 not measured: 4 configurations left out" in doc["notes"], doc["notes"]
PYEOF

phase "layouts"
# every layout of the sets: six rows per configuration (none, full, selective x off, on), each row's layout in the JSON; the
# table's layout column; full recomputation never faster, the distributed optimizer's optimizer
# step half the replicated one's at DP 2
"$PDBX" advise "$id" --gpus 2 --gbs 8 --layers 4 --recompute all --zero1 all --format json >"$TMP/lay.json" \
    || fail "advise --recompute all --zero1 all"
"$PDBX" advise "$id" --gpus 2 --gbs 8 --layers 4 --recompute all >"$TMP/lay.table" || fail "advise --recompute all (table)"
grep -qE '^  rank  tp  pp  dp  mbs  layout +num_mb' "$TMP/lay.table" || { cat "$TMP/lay.table"; fail "layout column"; }
"$PY" - "$TMP/a.json" "$TMP/lay.json" <<'PYEOF' || fail "advise layouts"
import json, sys
base = json.load(open(sys.argv[1]))["rows"]; rows = json.load(open(sys.argv[2]))["rows"]
assert len(rows) == 6 * len(base), (len(rows), len(base))   # none, full, selective x off, on
assert all(r["recompute"] == "none" and r["zero1"] is False and r["recompute_ms"] == 0 for r in base), base[0]
key = lambda r: (r["tp"], r["pp"], r["dp"], r["mbs"])
by = {(key(r), r["recompute"], r["zero1"]): r for r in rows}
for b in base:
    k = key(b)
    n, f, z = by[(k, "none", False)], by[(k, "full", False)], by[(k, "none", True)]
    sel = by[(k, "selective", False)]
    assert 0 < sel["recompute_ms"] < f["recompute_ms"] and n["step_ms"] < sel["step_ms"] < f["step_ms"], (sel, f)
    assert abs(n["step_ms"] - b["step_ms"]) <= 1e-9 * b["step_ms"], (n, b)
    assert f["recompute_ms"] > 0 and f["step_ms"] > n["step_ms"] and f["mem_gb"] <= n["mem_gb"], (f, n)
    assert abs(f["stage_bwd_ms"] - n["stage_bwd_ms"] - f["recompute_ms"] / f["num_mb"]) <= 1e-6 * f["stage_bwd_ms"], (f, n)
    if b["dp"] == 2:
        assert abs(z["optimizer_ms"] - n["optimizer_ms"] / 2) <= 1e-9 * n["optimizer_ms"], (z, n)
        assert z["mem_gb"] < n["mem_gb"], (z, n)
    else:
        assert z["step_ms"] == n["step_ms"], (z, n)
PYEOF

phase "usage errors"
usage() {   # usage 'expected text' ARGS...: exit 2 and exactly one line naming it
    local want=$1; shift
    "$PDBX" advise "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    [ $rc = 2 ] || fail "advise $*: exit $rc, expected 2"
    [ "$(wc -l <"$TMP/err")" = 1 ] || { cat "$TMP/err"; fail "advise $*: not one line"; }
    grep -qF -- "$want" "$TMP/err" || { cat "$TMP/err"; fail "advise $*: no '$want'"; }
    [ ! -s "$TMP/out" ] || fail "advise $*: printed on stdout"
}
usage "--gpus: 0 is out of range (allowed: 1..65536)" "$id" --gpus 0 --gbs 8
usage "--gbs: missing" "$id" --gpus 2
usage "--gpus: missing" "$id" --gbs 8
usage "--gbs: 'x'" "$id" --gpus 2 --gbs x
usage "--nodes: 3 does not divide --gpus 2" "$id" --gpus 2 --gbs 8 --nodes 3
usage "--stat: 'std' is not a time" "$id" --gpus 2 --gbs 8 --stat std
usage "--format: 'xml'" "$id" --gpus 2 --gbs 8 --format xml
usage "--top: 0 is out of range" "$id" --gpus 2 --gbs 8 --top 0
usage "nosuchrun" nosuchrun --gpus 2 --gbs 8
usage "--recompute: 'half' is not one of none, full, selective, all" "$id" --gpus 2 --gbs 8 --recompute half
usage "--zero1: 'yes' is not one of off, on, all" "$id" --gpus 2 --gbs 8 --zero1 yes
"$PDBX" advise --help | grep -q "^usage: pdbx advise RUN" || fail "advise --help"
phase "done"
echo "PASS: pdbx advise: table, JSON against show's cells, x3 on a forward-only run, unswept TP, usage errors"
