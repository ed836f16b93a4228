#!/usr/bin/env bash
# suite: both builds: the release pdbx's read commands (ls, show, diff) on a fixture store
# `pdbx ls`, `show` and `diff` on a store built from the JSONL fixtures (no engine): listing with
# status, progress and the corruption message; id prefixes; the values printed equal the
# fixtures'; OOM statuses; diff ratios and their geometric means.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/cli_fixture.sh" || exit 1
trap cleanup EXIT
S="$TMP/store"
make_store "$S"

# ---- ls ---------------------------------------------------------------------------------
"$PDBX" ls --store "$S" > "$TMP/ls" 2>"$TMP/err" || fail "ls: $(cat "$TMP/err")"
cat "$TMP/ls"
[ "$(wc -l < "$TMP/ls")" -eq 6 ] || fail "ls: expected a header and 5 runs"
head -n1 "$TMP/ls" | grep -q '^created  *id  *model  *backend/gpu  *tp  *mbs  *status' || fail "ls header"
grep "$RUN_A" "$TMP/ls" | grep -q 'Llama-3.2-1B  *cpu  *1,2  *1\.\.8  *complete' || fail "ls row of run A"
# the progress model's percentage (what pdbx run, attach and the monitor print): points weigh
# their MBS, so MBS 1 and 2 done of 1, 2, 4, 8 is 3/15 = 20% (not 2 of 4 points = 50%)
grep "$RUN_RUNNING" "$TMP/ls" | grep -q 'running 20%' || fail "ls: running run not at 20%"
grep "$RUN_CORRUPT" "$TMP/ls" | grep -q 'corrupt.*byte' || fail "ls: corrupt run without its message"
# Newest first.
[ "$(sed -n 2p "$TMP/ls" | awk '{print $3}')" = "$RUN_RUNNING" ] || fail "ls not newest first"
PDBX_STORE="$S" "$PDBX" ls --json > "$TMP/ls.json" || fail "ls --json (PDBX_STORE)"
$PY - "$TMP/ls.json" <<'PYEOF' || fail "ls --json content"
import json, sys
runs = {r["id"]: r for r in json.load(open(sys.argv[1]))}
assert len(runs) == 5, list(runs)
a = runs["2026-11-20__10-00-00_aaaa1111"]
assert a["tp"] == [1, 2] and a["mbs_min"] == 1 and a["mbs_max"] == 8 and a["status"] == "complete", a
assert a["points_done"] == 8 and a["points_total"] == 8, a
r = runs["2026-11-21__10-00-00_dddd0001"]
assert r["status"] == "running" and r["points_done"] == 2 and r["points_total"] == 4, r
assert r["percent"] == 20 and a["percent"] == 100, (r, a)
c = runs["2026-11-21__09-30-00_cccc0001"]
assert c["status"] == "corrupt" and c["message"], c
PYEOF
# An explicit store that does not exist is an error (one line), not an empty listing.
"$PDBX" ls --store "$TMP/nope" 2>"$TMP/err" && fail "ls of a missing store succeeded"
[ "$(wc -l < "$TMP/err")" -eq 1 ] || fail "ls missing store: $(cat "$TMP/err")"

# ---- show: table, prefixes, values ---------------------------------------------------------
export PDBX_STORE="$S"
"$PDBX" show aaaa1111 >/dev/null 2>&1 && fail "a suffix must not resolve as a prefix"
"$PDBX" show 2026-11-20__10 > "$TMP/show" 2>"$TMP/err" || fail "show by prefix: $(cat "$TMP/err")"
"$PDBX" show "$RUN_A" > "$TMP/show.full" || fail "show by full id"
cmp -s "$TMP/show" "$TMP/show.full" || fail "prefix and full id differ"
"$PDBX" show "$S/runs/$RUN_A.pdbx" > "$TMP/show.path" || fail "show by path"
cmp -s "$TMP/show" "$TMP/show.path" || fail "path and id differ"
cat "$TMP/show"
grep -q "^run $RUN_A  complete" "$TMP/show" || fail "show header"
[ "$(grep -c '^TP ' "$TMP/show")" -eq 2 ] || fail "show: expected 2 configs"
# TP 1 has no TP all-reduce columns; TP 2 has them.
sed -n '/^TP 1 /,/^TP 2 /p' "$TMP/show" | grep -q tp_allreduce_attn && fail "TP 1 shows tp_allreduce columns"
sed -n '/^TP 2 /,$p' "$TMP/show" | grep -q 'tp_allreduce_attn' || fail "TP 2 lacks tp_allreduce columns"
# the fixture predates attn_rope and the residual adds: no column for ops no point measured
grep -Eq 'attn_rope|_residual' "$TMP/show" && fail "show has columns for ops the run never measured"
grep -q 'pp_sendrecv' "$TMP/show" || fail "show lacks the comm cells"
grep -q '^collectives' "$TMP/show" || fail "show lacks the collectives"

# Values: JSON output against the fixture, for every stat and cell (1e-9 relative).
for stat in mean median min max std; do
    "$PDBX" show 2026-11-20__10 --stat $stat --format json > "$TMP/show.$stat.json" || fail "show --stat $stat --format json"
done
"$PDBX" show 2026-11-20__10 --tp 2 --format json > "$TMP/show.tp2.json" || fail "show --tp 2"
"$PDBX" show 2026-11-20__10 --format csv > "$TMP/show.csv" || fail "show --format csv"
"$PDBX" show 2026-11-20__10 --attribution fasop --format json > "$TMP/show.fasop.json" || fail "show --attribution fasop"
$PY - "$TMP" "$FIX/cli_run_a.jsonl" <<'PYEOF' || fail "show values differ from the fixture"
import csv, json, math, sys
tmp, fixture = sys.argv[1], sys.argv[2]
events = [json.loads(l) for l in open(fixture)]
start = events[0]
pts = {p["index"]: p for p in start["points"]}
want = {}   # (tp, mbs, op) -> stats
for e in events:
    if e["type"] == "op":
        p = pts[e["point"]]
        want[(p["tp"], p["mbs"], e["op"])] = e["stats"]
steps = {}  # (tp, mbs) -> the step event: measured layer and total
for e in events:
    if e["type"] == "step":
        steps[(pts[e["point"]]["tp"], pts[e["point"]]["mbs"])] = e
def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300)
for stat in ["mean", "median", "min", "max", "std"]:
    d = json.load(open(f"{tmp}/show.{stat}.json"))
    assert d["stat"] == stat and d["id"] == start["id"]
    n = 0
    for cfg in d["configs"]:
        for p in cfg["points"]:
            assert p["status"] == "ok", p
            layer = 0.0
            for op, v in p["ms"].items():
                w = want.get((cfg["tp"], p["mbs"], op))
                if w is None:
                    assert v is None, (cfg, p["mbs"], op, v)   # never measured: null, not 0
                    continue
                assert close(v, w[stat]), (stat, cfg["tp"], p["mbs"], op, v, w[stat])
                n += 1
                if op not in ("embed", "final_norm", "lm_head"):
                    layer += v
            # layer and total are the measured cells (std included), never the sum of the ops
            st = steps[(cfg["tp"], p["mbs"])]
            assert close(p["layer"], st["layer"]["stats"][stat]), (stat, p["layer"], st["layer"])
            assert close(p["total"], st["total"]["stats"][stat]), (stat, p["total"], st["total"])
            assert not close(p["layer"], layer), (stat, p["layer"], layer)
    assert n == len(want), (n, len(want))
    # a run recorded before pdbx measured RoPE and the residual adds: their cells load as N/A
    for cfg in d["configs"]:
        for p in cfg["points"]:
            for op in ("attn_rope", "attn_residual", "mlp_residual"):
                assert op in p["ms"] and p["ms"][op] is None, (op, p["ms"].get(op, "absent"))
tp2 = json.load(open(f"{tmp}/show.tp2.json"))
assert [c["tp"] for c in tp2["configs"]] == [2]
# comm cells of TP 2 carry the fixture's bytes and busbw
comm = {(pts[e["point"]]["mbs"], e["kind"]): e for e in events if e["type"] == "comm"
        and pts[e["point"]]["tp"] == 2}
for p in tp2["configs"][0]["points"]:
    c = p["comm"]["tp_allreduce"]
    e = comm[(p["mbs"], "tp_allreduce")]
    assert c["bytes"] == e["bytes"] and close(c["busbw"], e["busbw"]) and close(c["time_ms"], e["stats"]["mean"])
# CSV: header and one row per point; empty cells where nothing was measured
rows = list(csv.DictReader(open(f"{tmp}/show.csv")))
assert len(rows) == 8, len(rows)
r = [x for x in rows if x["tp"] == "1" and x["mbs"] == "4"][0]
assert r["tp_allreduce_attn"] == "" and close(float(r["attn_q"]), want[(1, 4, "attn_q")]["mean"])
# FASOP attribution: attn_q carries input_norm (+ the MLP all-reduce at TP 2), and the layer
# columns sum to the same layer time as the pure attribution.
fa = json.load(open(f"{tmp}/show.fasop.json"))
pure = json.load(open(f"{tmp}/show.mean.json"))
for cf, cp in zip(fa["configs"], pure["configs"]):
    for pf, pp in zip(cf["points"], cp["points"]):
        assert list(pf["ms"]) == ["embed", "attn_q", "attn_k", "attn_v", "attn_o", "mlp_gate",
                                  "mlp_act_fn", "mlp_up", "mlp_down", "lm_head"]
        q = want[(cf["tp"], pf["mbs"], "attn_q")]["mean"] + want[(cf["tp"], pf["mbs"], "input_norm")]["mean"]
        if cf["tp"] > 1:
            q += want[(cf["tp"], pf["mbs"], "tp_allreduce_mlp")]["mean"]
        assert close(pf["ms"]["attn_q"], q), (pf["ms"]["attn_q"], q)
        assert close(pf["layer"], pp["layer"]), (pf["layer"], pp["layer"])
print("show values match the fixture")
PYEOF

# ---- OOM statuses, messages ---------------------------------------------------------------
"$PDBX" show bbbb0001 >/dev/null 2>&1 && fail "suffix resolved"
"$PDBX" show 2026-11-21__09-00 > "$TMP/oom" || fail "show oom run"
cat "$TMP/oom"
sed -n '/^TP 1 /,/^TP 2 /p' "$TMP/oom" | grep -Eq '^ +4  oom( |$)' || fail "MBS 4 of TP 1 not oom"
sed -n '/^TP 1 /,/^TP 2 /p' "$TMP/oom" | grep -Eq '^ +8  skipped( |$)' || fail "MBS 8 of TP 1 not skipped"
sed -n '/^TP 2 /,$p' "$TMP/oom" | grep -Eq '^ +8  predicted_oom( |$)' || fail "MBS 8 of TP 2 not predicted_oom"
grep -q 'MBS 4 oom: out of memory: allocating 1.2 GiB' "$TMP/oom" || fail "oom message missing"
sed -n '/^TP 1 /,/^TP 2 /p' "$TMP/oom" | grep -E '^ +4  oom' | grep -q 'N/A' || fail "oom row must print N/A"

# The corrupt run still shows its events before the damage, and names the damage.
"$PDBX" show 2026-11-21__09-30 > "$TMP/corrupt" 2>"$TMP/err" || fail "show corrupt run: $(cat "$TMP/err")"
grep -q "^run $RUN_CORRUPT  corrupt" "$TMP/corrupt" || fail "corrupt run header: $(head -1 "$TMP/corrupt")"
grep -q "bad frame at byte" "$TMP/corrupt" || fail "corrupt run: the damage is not named"
grep -Eq '^ +1  unfinished ' "$TMP/corrupt" || fail "corrupt run: the point cut off by the damage is not 'unfinished'"

# ---- diff -----------------------------------------------------------------------------------
"$PDBX" diff 2026-11-20__10 2026-11-20__11 > "$TMP/diff" || fail "diff"
cat "$TMP/diff"
"$PDBX" diff 2026-11-20__10 2026-11-20__11 --format json > "$TMP/diff.json" || fail "diff --format json"
"$PDBX" diff 2026-11-20__10 2026-11-20__11 --format csv > "$TMP/diff.csv" || fail "diff --format csv"
$PY - "$TMP" <<'PYEOF' || fail "diff ratios"
import csv, json, sys
tmp = sys.argv[1]
d = json.load(open(f"{tmp}/diff.json"))
gemm = {"attn_q", "attn_k", "attn_v", "attn_o", "mlp_gate", "mlp_up", "mlp_down", "lm_head"}
for c in d["cells"]:
    if c["op"] in ("layer", "total"):
        continue
    want = 0.5 if c["op"] in gemm else 1.25
    assert abs(c["ratio"] - want) < 1e-12, c
for op, g in d["geomean"].items():
    if op in ("layer", "total"):
        continue
    assert abs(g["geomean"] - (0.5 if op in gemm else 1.25)) < 1e-12, (op, g)
    assert g["cells"] == (4 if op.startswith("tp_allreduce") else 8), (op, g)
rows = list(csv.DictReader(open(f"{tmp}/diff.csv")))
assert len(rows) == len(d["cells"]) and set(rows[0]) == {"tp", "pp", "dp", "mbs", "op", "a", "b", "ratio",
                                                         "noise_ms", "verdict"}
print("diff: per-cell ratios and geometric means as constructed")
PYEOF
grep -Eq '^  attn_q +8 +0\.500 ' "$TMP/diff" || fail "diff table geomean of attn_q"
# The OOM run against run A: only cells ok in both are compared (TP1 MBS 4/8, TP2 MBS 8 drop out).
"$PDBX" diff 2026-11-20__10 2026-11-21__09-00 --format json > "$TMP/diff2.json" || fail "diff A oom"
$PY -c "
import json; d = json.load(open('$TMP/diff2.json'))
pts = {(c['tp'], c['mbs']) for c in d['cells']}
assert pts == {(1,1),(1,2),(2,1),(2,2),(2,4)}, pts
assert d['geomean']['attn_q']['cells'] == 5
" || fail "diff with the OOM run compares the wrong cells"
# A path to a file that is not a run (empty, or not zstd) is refused with one line, exit 1.
: > "$TMP/empty.pdbx"
head -c 512 /dev/zero > "$TMP/zeros.pdbx"
for f in "$TMP/empty.pdbx" "$TMP/zeros.pdbx"; do
    "$PDBX" show "$f" > "$TMP/notrun.out" 2>"$TMP/notrun.err"; rc=$?
    [ $rc -eq 1 ] || fail "show $f (not a run) exited $rc, expected 1"
    [ "$(wc -l < "$TMP/notrun.err")" -eq 1 ] && grep -q "not a pdbx run file" "$TMP/notrun.err" \
        || fail "show $f: $(cat "$TMP/notrun.err")"
    [ ! -s "$TMP/notrun.out" ] || fail "show $f printed a run: $(cat "$TMP/notrun.out")"
done
echo "PASS: ls, show, diff"
