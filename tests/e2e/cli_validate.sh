#!/usr/bin/env bash
# pdbx validate end to end: a real sweep of the tiny model (fwd and bwd, TP1/PP1/DP2 and
# TP1/PP2/DP1 over 2 ranks, real mpirun), then `pdbx validate` of both configurations through
# the launcher: the JSON has measured_ms, estimated_ms and error_pct consistent with each other
# and with the run's own estimate (pdbx advise's model), the iterations asked for, num_mb; the
# record lands next to the run (one line per validation, the run file untouched) and `pdbx show`
# lists it (table and JSON); bad input is one line naming the field with exit 2, and nothing
# is recorded for it.
. "$(dirname "$0")/engine_common.inc"
fail() { echo "FAIL: $*" >&2; exit 1; }
ST=$TMP/store
tiny_spec "$TMP/spec.json" 'configs=[{"tp":1,"pp":1,"dp":2},{"tp":1,"pp":2,"dp":1}]' \
    'passes=["fwd","bwd"]' 'mbs="1:2"' 'collectives=false' 'gpus_per_node=2'
"$PDBX" run "$TMP/spec.json" --store "$ST" >"$TMP/id" 2>"$TMP/run.log" || fail "run: $(cat "$TMP/run.log")"
id=$(tail -1 "$TMP/id")
[ -n "$id" ] || fail "run printed no id"
runfile=$ST/runs/$id.pdbx
sum_before=$(md5sum <"$runfile")

# DP2: JSON
"$PDBX" validate "$id" --store "$ST" --config 1x1x2 --mbs 1 --gbs 4 --iters 2 --format json \
    >"$TMP/v1.json" 2>"$TMP/v1.err" || fail "validate 1x1x2: $(cat "$TMP/v1.err")"
"$PY" - "$TMP/v1.json" <<'PYEOF' || fail "validate 1x1x2 JSON: $(cat "$TMP/v1.json")"
import json, math, sys
d = json.load(open(sys.argv[1]))
for k in ("measured_ms", "estimated_ms", "error_pct", "measured_min_ms", "measured_max_ms"):
    assert isinstance(d[k], (int, float)) and math.isfinite(d[k]), (k, d.get(k))
assert d["measured_ms"] > 0 and d["estimated_ms"] > 0, d
assert abs(d["error_pct"] - 100 * (d["estimated_ms"] - d["measured_ms"]) / d["measured_ms"]) < 1e-6, d
assert d["config"] == "1x1x2" and (d["tp"], d["pp"], d["dp"], d["mbs"], d["gbs"]) == (1, 1, 2, 1, 4), d
assert d["layers"] == 2 and d["num_mb"] == 2 and d["iterations"] == 2, d
assert len(d["iterations_ms"]) == 2 and d["measured_min_ms"] <= d["measured_ms"] <= d["measured_max_ms"], d
e = d["estimate"]
assert e["bwd_measured"] is True, e             # the run measured backward
assert e["dp_comm_ms"] > 0 and e["pp_comm_ms"] == 0 and e["bubble_ms"] == 0, e
assert abs(e["step_ms"] - d["estimated_ms"]) < 1e-9, e
assert d["measured_parts"]["dp_comm_ms"] > 0 and d["measured_parts"]["pp_comm_ms"] == 0, d
assert d["backend"] == "cpu", d
# the optimizer step: estimated from the run's optimizer cell, run by the engine after the
# gradients' all-reduce (docs/advise.md)
assert e["optimizer_ms"] > 0 and d["measured_parts"]["optimizer_ms"] > 0, (e, d["measured_parts"])
# the loss on the last stage: estimated from the run's loss cells, run after lm_head and before
# its backward in each micro-batch
assert e["loss_ms"] > 0 and d["measured_parts"]["loss_ms"] > 0, (e, d["measured_parts"])
PYEOF
# the run's optimizer cells: one per point, fwd only (no pass), one layer's AdamW
ev_py "$runfile" '
O = [e for e in E if e["type"] == "op" and e["op"] == "optimizer"]
P = [e for e in E if e["type"] == "point_end" and e["status"] == "ok"]
assert len(O) == len(P) and all("pass" not in e for e in O), (len(O), len(P))
assert all(e["flops"] > 0 and e["bytes"] == 32 * e["flops"] / 14 and e["stats"]["median"] > 0 for e in O), O[0]
# the loss's cells: fwd and bwd per point, over the vocabulary's logits read twice
L = [e for e in E if e["type"] == "op" and e["op"] == "loss"]
assert sorted(e.get("pass", "fwd") for e in L) == sorted(["fwd", "bwd"] * len(P)), L
assert all(e["flops"] > 0 and e["bytes"] == 2 * e["flops"] and e["stats"]["median"] > 0 for e in L), L[0]
' || fail "optimizer and loss cells"
# the estimate is advise's for the same query
"$PDBX" advise "$id" --store "$ST" --gpus 2 --gbs 4 --layers 2 --format json >"$TMP/adv.json" 2>"$TMP/adv.err" \
    || fail "advise: $(cat "$TMP/adv.err")"
"$PY" - "$TMP/v1.json" "$TMP/adv.json" <<'PYEOF' || fail "validate's estimate is not advise's row"
import json, sys
v = json.load(open(sys.argv[1])); a = json.load(open(sys.argv[2]))
rows = a["rows"] if isinstance(a, dict) else a
r = [r for r in rows if (r["tp"], r["pp"], r["dp"], r["mbs"]) == (1, 1, 2, 1)]
assert len(r) == 1, rows
assert abs(r[0]["step_ms"] - v["estimated_ms"]) <= 1e-6 * v["estimated_ms"], (r[0], v["estimated_ms"])
PYEOF

# --stat picks the estimate's cells as advise's --stat does
"$PDBX" validate "$id" --store "$ST" --config 1x1x2 --mbs 2 --gbs 4 --iters 1 --stat max --format json \
    >"$TMP/v3.json" 2>"$TMP/v3.err" || fail "validate --stat max: $(cat "$TMP/v3.err")"
"$PDBX" advise "$id" --store "$ST" --gpus 2 --gbs 4 --layers 2 --stat max --format json >"$TMP/adv3.json" \
    2>"$TMP/adv3.err" || fail "advise --stat max: $(cat "$TMP/adv3.err")"
"$PY" - "$TMP/v3.json" "$TMP/adv3.json" "$TMP/adv.json" <<'PYEOF' || fail "validate --stat max is not advise's"
import json, sys
v = json.load(open(sys.argv[1]))
rows = lambda f: (lambda a: a["rows"] if isinstance(a, dict) else a)(json.load(open(f)))
r = [r for r in rows(sys.argv[2]) if (r["tp"], r["pp"], r["dp"], r["mbs"]) == (1, 1, 2, 2)]
med = [r for r in rows(sys.argv[3]) if (r["tp"], r["pp"], r["dp"], r["mbs"]) == (1, 1, 2, 2)]
assert len(r) == 1 and abs(r[0]["step_ms"] - v["estimated_ms"]) <= 1e-6 * v["estimated_ms"], (r, v)
assert med[0]["step_ms"] < r[0]["step_ms"], (med, r)      # max cells make a longer estimate
PYEOF

# PP2: table (the pipeline's send/recv and bubble)
"$PDBX" validate "${id:0:22}" --store "$ST" --config 1x2x1 --mbs 2 --gbs 4 --iters 1 \
    >"$TMP/v2.txt" 2>"$TMP/v2.err" || fail "validate 1x2x1: $(cat "$TMP/v2.err")"
grep -q "TP1 PP2 DP1, MBS 2, GBS 4, 2 layers, 2 micro-batches, 1 iterations (cpu)" "$TMP/v2.txt" \
    || fail "validate 1x2x1 header: $(cat "$TMP/v2.txt")"
grep -qE "^  iteration \(ms\) +[0-9.]+ +[0-9.]+ +[-+][0-9.]+%" "$TMP/v2.txt" || fail "no measured/estimated/error line: $(cat "$TMP/v2.txt")"
grep -qE "measured .*PP [0-9.]*[1-9]" "$TMP/v2.txt" || fail "no measured PP time: $(cat "$TMP/v2.txt")"

# the layouts: full recomputation and the distributed optimizer, run by the engine (the
# recomputed forwards, the reduce-scatter and all-gather, AdamW over half the parameters) and
# estimated by advise's row of the same layout
"$PDBX" validate "$id" --store "$ST" --config 1x1x2 --mbs 1 --gbs 4 --iters 1 --recompute full --zero1 on \
    --format json >"$TMP/v4.json" 2>"$TMP/v4.err" || fail "validate --recompute full --zero1 on: $(cat "$TMP/v4.err")"
"$PDBX" advise "$id" --store "$ST" --gpus 2 --gbs 4 --layers 2 --recompute full --zero1 on --format json \
    >"$TMP/adv4.json" 2>"$TMP/adv4.err" || fail "advise --recompute full --zero1 on: $(cat "$TMP/adv4.err")"
"$PY" - "$TMP/v4.json" "$TMP/adv4.json" "$TMP/v1.json" <<'PYEOF' || fail "validate layouts: $(cat "$TMP/v4.json")"
import json, sys
v = json.load(open(sys.argv[1])); a = json.load(open(sys.argv[2])); v1 = json.load(open(sys.argv[3]))
e, m = v["estimate"], v["measured_parts"]
assert e["recompute"] == "full" and e["zero1"] is True and e["recompute_ms"] > 0, e
assert m["recompute_ms"] > 0 and m["dp_comm_ms"] > 0 and m["optimizer_ms"] > 0, m
r = [r for r in a["rows"] if (r["tp"], r["pp"], r["dp"], r["mbs"]) == (1, 1, 2, 1)]
assert len(r) == 1 and abs(r[0]["step_ms"] - v["estimated_ms"]) <= 1e-6 * v["estimated_ms"], (r, v)
assert abs(e["optimizer_ms"] - v1["estimate"]["optimizer_ms"] / 2) <= 1e-9 * e["optimizer_ms"], (e, v1["estimate"])
PYEOF
# selective: each layer's attention core recomputed alone, less than the whole forward
"$PDBX" validate "$id" --store "$ST" --config 1x1x2 --mbs 1 --gbs 4 --iters 1 --recompute selective \
    --format json >"$TMP/v5.json" 2>"$TMP/v5.err" || fail "validate --recompute selective: $(cat "$TMP/v5.err")"
"$PY" - "$TMP/v5.json" "$TMP/v4.json" <<'PYEOF' || fail "validate selective: $(cat "$TMP/v5.json")"
import json, sys
v = json.load(open(sys.argv[1])); full = json.load(open(sys.argv[2]))
e, m = v["estimate"], v["measured_parts"]
assert e["recompute"] == "selective" and e["zero1"] is False, e
assert 0 < e["recompute_ms"] < full["estimate"]["recompute_ms"] and m["recompute_ms"] > 0, (e, m)
PYEOF

# recorded next to the run, the run file untouched, listed by show
rec=$ST/runs/$id.validations.jsonl
[ "$(wc -l <"$rec")" = 5 ] || fail "record: $(cat "$rec")"
[ "$(md5sum <"$runfile")" = "$sum_before" ] || fail "validate changed the run file"
"$PDBX" show "$id" --store "$ST" >"$TMP/show.txt" || fail "show"
grep -q "^validations" "$TMP/show.txt" || fail "show has no validations section"
grep -qE "^  .* 1x1x2 +1 +4 +2 " "$TMP/show.txt" || fail "show lacks 1x1x2: $(tail -5 "$TMP/show.txt")"
grep -qE "^  .* 1x2x1 +2 +4 +2 " "$TMP/show.txt" || fail "show lacks 1x2x1: $(tail -5 "$TMP/show.txt")"
"$PDBX" show "$id" --store "$ST" --format json >"$TMP/show.json" || fail "show --format json"
"$PY" -c '
import json, sys
v = json.load(open(sys.argv[1]))["validations"]
assert [x["config"] for x in v] == ["1x1x2", "1x1x2", "1x2x1", "1x1x2", "1x1x2"], v
assert all(x["measured_ms"] > 0 for x in v), v' "$TMP/show.json" || fail "show JSON validations"

# bad input: one line naming the field, exit 2, nothing recorded
bad() {
    local want=$1; shift
    "$PDBX" validate "$@" --store "$ST" >"$TMP/bad.out" 2>"$TMP/bad.err"
    local rc=$?
    [ $rc = 2 ] || fail "validate $* exited $rc (want 2): $(cat "$TMP/bad.err")"
    [ "$(wc -l <"$TMP/bad.err")" = 1 ] || fail "validate $*: not one line: $(cat "$TMP/bad.err")"
    grep -qF -- "$want" "$TMP/bad.err" || fail "validate $*: '$want' not in: $(cat "$TMP/bad.err")"
}
bad "TP 2 was not measured" "$id" --config 2x1x1 --mbs 1 --gbs 4
bad "--gbs: 5 is not a multiple of mbs x dp = 1 x 2" "$id" --config 1x1x2 --mbs 1 --gbs 5
bad "--config: 'two' is not TPxPPxDP" "$id" --config two --mbs 1 --gbs 4
bad "--config TPxPPxDP is required" "$id" --mbs 1 --gbs 4
bad "--layers: 3 is not a multiple of pp = 2" "$id" --config 1x2x1 --mbs 1 --gbs 4 --layers 3
bad "--mbs" "$id" --config 1x1x2 --mbs 0 --gbs 4
bad "--stat: 'std' is not a time" "$id" --config 1x1x2 --mbs 1 --gbs 4 --stat std
bad "no-such-run" no-such-run --config 1x1x2 --mbs 1 --gbs 4
bad "--recompute: 'some' is not one of none, full, selective" "$id" --config 1x1x2 --mbs 1 --gbs 4 --recompute some
bad "--zero1: '2' is not one of off, on" "$id" --config 1x1x2 --mbs 1 --gbs 4 --zero1 2
bad "is a path" "$runfile" --config 1x1x2 --mbs 1 --gbs 4
[ "$(wc -l <"$rec")" = 5 ] || fail "bad input was recorded: $(cat "$rec")"
echo "PASS: validate measured and estimated 1x1x2 and 1x2x1, recorded, listed; usage errors exit 2"
