#!/usr/bin/env bash
# The pass selector and the cell statistics on a crafted run with backward cells
# (tests/fixtures/cli_run_bwd.jsonl, make_cli_fixtures.py): `pdbx show --pass fwd|bwd|both`
# against the fixture's own numbers (both = fwd + bwd per op, CI in quadrature, n = min), the
# noisy mark and its legend, the bwd/fwd ratio, --stats with provenance, the "measured under
# load" line in show, diff and ls, the one-line refusals (exit 2), and the NPZ's "pass" metadata
# read with numpy (tests/npz_check.py).
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/cli_fixture.sh" || exit 1
trap cleanup EXIT
S="$TMP/store"
make_store "$S" cli_run_a cli_run_bwd
export PDBX_STORE="$S"
RUN_BWD=2026-11-22__10-00-00_eeee0001

# ---- show --pass: values from the fixture's op events --------------------------------------
for pass in fwd bwd both; do
    "$PDBX" show "$RUN_BWD" --pass $pass --format json > "$TMP/show.$pass.json" 2>"$TMP/err" \
        || fail "show --pass $pass: $(cat "$TMP/err")"
done
"$PDBX" show "$RUN_BWD" --format json > "$TMP/show.default.json" || fail "show --format json"
cmp -s "$TMP/show.default.json" "$TMP/show.fwd.json" || fail "show: the default pass is not fwd"
$PY - "$FIX/cli_run_bwd.jsonl" "$TMP" <<'PYEOF' || fail "show --pass values"
import json, math, sys
fix, tmp = sys.argv[1], sys.argv[2]
cells, points, noise = {}, {}, {}
for line in open(fix):
    e = json.loads(line)
    if e["type"] == "run_start":
        points = {p["index"]: p for p in e["points"]}
    elif e["type"] == "op":
        cells[(e["point"], e["op"], e.get("pass", "fwd"))] = e
    elif e["type"] == "point_end" and "noise" in e:
        noise[e["point"]] = e["noise"]
def close(a, b):
    return a is not None and abs(a - b) <= 1e-9 * max(abs(b), 1e-12)
checked = 0
for pass_ in ("fwd", "bwd", "both"):
    doc = json.load(open(f"{tmp}/show.{pass_}.json"))
    assert doc["pass"] == pass_ and doc["has_bwd"] is True, (doc["pass"], doc["has_bwd"])
    assert doc["load"] == {"points": 12, "busy": 2, "other_busy_max": 1.8, "steal_max": 0}, doc["load"]
    for cfg in doc["configs"]:
        for p in cfg["points"]:
            idx = next(i for i, q in points.items() if (q["tp"], q["pp"], q["dp"], q["mbs"]) ==
                       (cfg["tp"], cfg["pp"], cfg["dp"], p["mbs"]))
            for op, ms in p["ms"].items():
                f, b = cells.get((idx, op, "fwd")), cells.get((idx, op, "bwd"))
                if f is None:
                    assert ms is None, (idx, op, ms)
                    continue
                fs, bs = f["stats"], b["stats"]
                want = {"fwd": fs["mean"], "bwd": bs["mean"], "both": fs["mean"] + bs["mean"]}[pass_]
                assert close(ms, want), (pass_, idx, op, ms, want)
                c = p["cells"][op]
                n = {"fwd": fs["count"], "bwd": bs["count"], "both": min(fs["count"], bs["count"])}[pass_]
                ci = {"fwd": fs["ci95"], "bwd": bs["ci95"], "both": math.hypot(fs["ci95"], bs["ci95"])}[pass_]
                std = {"fwd": fs["std"], "bwd": bs["std"], "both": math.hypot(fs["std"], bs["std"])}[pass_]
                assert c["n"] == n and close(c["ci95"], ci), (pass_, idx, op, c, n, ci)
                assert close(c["cv"], std / want) and close(c["rel_ci"], ci / want), (pass_, idx, op, c)
                assert c["noisy"] == (std / want > 0.05), (pass_, idx, op, c)
                assert c.get("reused_from") == f.get("reused_from"), (idx, op, c)
                assert c.get("shared_with") == f.get("shared_with"), (idx, op, c)
                assert close(p["bwd_fwd_ratio"][op], bs["mean"] / fs["mean"]), (idx, op, p["bwd_fwd_ratio"])
                checked += 1
            # layer and total are forward sums: null under bwd and both
            assert (p["layer"] is None) == (pass_ != "fwd"), (pass_, idx, p["layer"])
            assert p["noise"]["busy"] == bool(noise[idx]["busy"]), (idx, p["noise"])
            assert close(p["setup_s"], 0.1 * p["mbs"]), (idx, p["setup_s"])
            if cfg["tp"] == 2:
                assert p["noise"]["throttle"] == "sw_power_cap, sw_thermal", p["noise"]
assert checked == 3 * 12 * 14 + 3 * 4 * 2, checked   # every op cell of every point, each pass
# one noisy cell (mlp_act_fn at TP 1 MBS 2, CV 8%): in every TP 1 config, since PP 1 reuses it
noisy = [(c["tp"], c["pp"], p["mbs"], op) for c in json.load(open(f"{tmp}/show.fwd.json"))["configs"]
         for p in c["points"] for op, v in p["cells"].items() if v["noisy"]]
assert noisy == [(1, 2, 2, "mlp_act_fn"), (1, 1, 2, "mlp_act_fn")], noisy
PYEOF

# ---- the table: load line, the noisy mark and legend, the ratio, the pass ---------------------
"$PDBX" show "$RUN_BWD" > "$TMP/show.txt" || fail "show"
grep -qx 'measured under load: 2 of 12 points; other processes used up to 1.8 cores, steal up to 0%' \
    "$TMP/show.txt" || fail "show: no 'measured under load' line: $(head -6 "$TMP/show.txt")"
grep -q 'pass fwd$' "$TMP/show.txt" || fail "show: the header does not name the pass"
sed -n '/^TP 1  PP 2/,/^TP 2/p' "$TMP/show.txt" | grep -E '^ +2  ok' | grep -q ' 1\.200! ' \
    || fail "show: mlp_act_fn at TP 1 MBS 2 is not marked noisy"
[ "$(grep -c '! noisy: CV > 5%' "$TMP/show.txt")" -eq 2 ] || fail "show: expected the legend under the 2 TP 1 tables"
sed -n '/^TP 2  PP 1/,/^TP 1  PP 1/p' "$TMP/show.txt" | grep -q '!' && fail "show: a quiet config has a noisy mark"
grep -q 'bwd/fwd (measured, mean):' "$TMP/show.txt" || fail "show: no bwd/fwd table"
"$PDBX" show "$RUN_BWD" --pass both --tp 2 > "$TMP/show.both.txt" || fail "show --pass both --tp 2"
grep -q 'pass both (fwd + bwd per op' "$TMP/show.both.txt" || fail "show --pass both: the header does not say fwd + bwd"
# lm_head at TP 2 MBS 1: fwd 0.8 / 2 = 0.4, bwd twice that: 1.200
grep -E '^ +1  ok' "$TMP/show.both.txt" | head -1 | grep -q ' 1\.200$' || fail "show --pass both: lm_head not 1.200"
sed -n '/^TP 2/,/bwd\/fwd/p' "$TMP/show.both.txt" | head -2 | tail -1 | grep -q 'total' \
    && fail "show --pass both: a forward total column beside fwd + bwd cells"
"$PDBX" show "$RUN_BWD" --stats --tp 1 > "$TMP/show.stats.txt" || fail "show --stats"
grep -Eq '^ +2  attn_v +6 +0\.4000 +1\.0% +2\.0%  shared with attn_k$' "$TMP/show.stats.txt" \
    || fail "show --stats: attn_v not shared with attn_k: $(grep attn_v "$TMP/show.stats.txt" | head -2)"
grep -Eq '^ +2  mlp_act_fn +6 +1\.200 +1\.0% +8\.0%!  measured at point 1$' "$TMP/show.stats.txt" \
    || fail "show --stats: the reused noisy cell: $(grep mlp_act_fn "$TMP/show.stats.txt" | sed -n 6p)"
# a run recorded before these fields: no load line, no ratio table, no mark
"$PDBX" show "$RUN_A" > "$TMP/show.a.txt" || fail "show run A"
grep -Eq 'measured under load|bwd/fwd|noisy' "$TMP/show.a.txt" && fail "show: noise or bwd lines for a forward-only quiet run"

# ---- ls: the run measured under load says so (from a scan and from the index; an index entry
# written before the counts is dropped and its run rescanned) ----------------------------------
for pass in scan index; do
    "$PDBX" ls > "$TMP/ls.$pass" || fail "ls ($pass)"
    grep "$RUN_BWD" "$TMP/ls.$pass" | grep -q 'complete .* measured under load (2 of 12 points)$' \
        || fail "ls ($pass): no load note: $(cat "$TMP/ls.$pass")"
    grep "$RUN_A" "$TMP/ls.$pass" | grep -q 'under load' && fail "ls ($pass): a quiet run marked"
done
$PY - "$S/index.json" <<'PYEOF' || fail "stripping the index"
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["runs"]:
    del r["noise_points"], r["busy_points"]
json.dump(d, open(sys.argv[1], "w"))
PYEOF
"$PDBX" ls --json > "$TMP/ls.json" || fail "ls --json"
$PY -c 'import json, sys; r = {x["id"]: x for x in json.load(open(sys.argv[1]))}; assert (r[sys.argv[2]]["busy_points"], r[sys.argv[2]]["noise_points"], r[sys.argv[3]]["busy_points"]) == (2, 12, 0), r' \
    "$TMP/ls.json" "$RUN_BWD" "$RUN_A" || fail "ls --json busy_points after an old index"

# ---- refusals: one line, exit 2, naming the value and what is allowed -------------------------
expect_usage_error "$PDBX" show "$RUN_A" --pass both
grep -q "'both' needs backward cells, run $RUN_A measured forward only (allowed: fwd" "$TMP/usage.err" \
    || fail "show --pass both on a forward run: $(cat "$TMP/usage.err")"
expect_usage_error "$PDBX" show "$RUN_A" --pass bwd
expect_usage_error "$PDBX" show "$RUN_BWD" --pass sideways
grep -q "'sideways' is not one of fwd, bwd, both" "$TMP/usage.err" || fail "--pass sideways: $(cat "$TMP/usage.err")"
expect_usage_error "$PDBX" diff "$RUN_A" "$RUN_BWD" --pass bwd
expect_usage_error "$PDBX" export "$RUN_BWD" --npz "$TMP/npz" --pass bwd
grep -q "'bwd' makes no FASOP profile" "$TMP/usage.err" || fail "export --pass bwd: $(cat "$TMP/usage.err")"
expect_usage_error "$PDBX" export "$RUN_A" --npz "$TMP/npz" --pass both
expect_usage_error "$PDBX" export "$RUN_BWD" --csv "$TMP/csv" --pass both
[ -e "$TMP/npz" ] && fail "a refused export wrote files"

# ---- diff: the pass and the load -----------------------------------------------------------------
"$PDBX" diff "$RUN_A" "$RUN_BWD" > "$TMP/diff.txt" || fail "diff"
grep -q '^B was measured under load: 2 of 12 points' "$TMP/diff.txt" || fail "diff: B's load not said"
grep -q '^A was measured under load' "$TMP/diff.txt" && fail "diff: A was quiet"
"$PDBX" diff "$RUN_BWD" "$RUN_BWD" --pass both --format json > "$TMP/diff.json" || fail "diff --pass both"
$PY - "$TMP/diff.json" <<'PYEOF' || fail "diff --pass both JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["pass"] == "both" and d["a_load"].startswith("measured under load: 2 of 12"), d["a_load"]
ops = {c["op"] for c in d["cells"]}
assert "layer" not in ops and "total" not in ops, ops     # forward sums are N/A under both
assert all(c["ratio"] == 1 for c in d["cells"]), "a run against itself"
PYEOF

# ---- NPZ: forward by default, fwd + bwd when asked, said in meta.json ---------------------------
"$PDBX" export "$RUN_BWD" --npz "$TMP/fwd" --attribution pure > /dev/null || fail "export --npz"
"$PDBX" export "$RUN_BWD" --npz "$TMP/both" --attribution pure --pass both > /dev/null || fail "export --npz --pass both"
for pass in fwd both; do
    for tp in 1 2; do
        $PY - "$FIX/cli_run_bwd.jsonl" $tp $pass > "$TMP/exp.json" <<'PYEOF' || fail "expected values"
import json, sys
fix, tp, pass_ = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cols = ["embed", "attn_q", "attn_k", "attn_v", "attn_o", "mlp_gate", "mlp_act_fn", "mlp_up",
        "mlp_down", "lm_head"]
cells, pts = {}, []
for line in open(fix):
    e = json.loads(line)
    if e["type"] == "run_start":
        pts = [p for p in e["points"] if p["tp"] == tp]
    elif e["type"] == "op":
        cells[(e["point"], e["op"], e.get("pass", "fwd"))] = e["stats"]["mean"]
pp, dp = pts[0]["pp"], pts[0]["dp"]   # several configs of one TP with as many rows: the first
rows = sorted((p for p in pts if (p["pp"], p["dp"]) == (pp, dp)), key=lambda p: p["mbs"])
vals = [[cells[(p["index"], c, "fwd")] + (cells[(p["index"], c, "bwd")] if pass_ == "both" else 0)
         for c in cols] for p in rows]
print(json.dumps({"values": vals, "attribution": "pure", "stat": "mean", "tp": tp, "pp": pp,
                  "dp": dp, "ops_not_measured": [], "pass": pass_}))
PYEOF
        $PY "$SRC/tests/npz_check.py" "$TMP/$pass/llama1b_cpu_$tp.npz" "$TMP/exp.json" || fail "NPZ $pass TP $tp"
    done
done
$PY -c 'import json, sys, zipfile; m = json.loads(zipfile.ZipFile(sys.argv[1]).read("meta.json")); assert "forward + backward" in m["per"] and "NOT what FASOP expects" in m["per"], m["per"]' \
    "$TMP/both/llama1b_cpu_1.npz" || fail "NPZ both: meta.json 'per' does not say fwd + bwd"
echo "cli_pass: OK"
