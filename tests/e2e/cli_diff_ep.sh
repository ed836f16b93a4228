#!/usr/bin/env bash
# `pdbx diff` of runs with an expert-parallel config (tests/fixtures/tui_fixture.py --moe --ep 2:
# TP1 PP1 DP2 at EP 1, TP2, then TP1 PP1 DP2 at EP 2, whose expert GEMMs take 0.75x and which
# adds ep_dispatch and ep_combine): a config is (TP, PP, DP, EP), so EP 2 is compared with EP 2
# only, under its own heading "TP 1  PP 1  DP 2  EP 2", with "ep" in its JSON cells and an ep
# column in the CSV; a run without that EP config has no cell in common with it (never A's EP 2
# against B's EP 1). The dense heading, JSON and CSV read as before (cli_diff_noise.sh). pdbx
# show's CSV gains the same ep column only with EP.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/cli_fixture.sh" || exit 1
STORE="$TMP/store"
mk() { fixture_run "$STORE" "$@"; }
mk 2026-11-23__10-00-00_epaa0001 --moe --ep 2
mk 2026-11-23__11-00-00_epbb0002 --moe --ep 2 --scale 1.1 --t0 1795172400
mk 2026-11-23__12-00-00_moe00003 --moe --t0 1795176000
diff_runs() { "$PDBX" diff --store "$STORE" "$@"; }

# the table: three headings in plan order, the EP one last; its rows carry the EP ops
diff_runs 2026-11-23__10 2026-11-23__11 > "$TMP/ep.txt" || fail "diff EP 2 runs"
[ "$(grep -E '^TP ' "$TMP/ep.txt" | tr '\n' '|')" = "TP 1  PP 1  DP 2|TP 2  PP 1  DP 1|TP 1  PP 1  DP 2  EP 2|" ] \
    || fail "diff headings: $(grep -E '^TP ' "$TMP/ep.txt" | tr '\n' '|')"
sed -n '/^TP 1  PP 1  DP 2  EP 2$/,/^$/p' "$TMP/ep.txt" > "$TMP/ep2.txt"
# EP 2's moe_expert_gate at MBS 1 is 0.75 x 2.0 ms; B is 1.1 x A
grep -Eq '^    1  moe_expert_gate +1\.500 +1\.650 +1\.100 \^  worse$' "$TMP/ep2.txt" \
    || fail "EP 2 moe_expert_gate row: $(grep moe_expert_gate "$TMP/ep2.txt" | head -1)"
grep -Eq '^    1  ep_dispatch +0\.3000 +0\.3300 +1\.100 \^  worse$' "$TMP/ep2.txt" || fail "EP 2 ep_dispatch row"
grep -Eq '^    8  ep_combine ' "$TMP/ep2.txt" || fail "EP 2 ep_combine row at MBS 8"
sed -n '/^TP 1  PP 1  DP 2$/,/^$/p' "$TMP/ep.txt" > "$TMP/ep1.txt"
grep -Eq '^    1  moe_expert_gate +2\.000 +2\.200 ' "$TMP/ep1.txt" || fail "EP 1 moe_expert_gate row"
! grep -q ep_dispatch "$TMP/ep1.txt" || fail "ep_dispatch in the EP 1 table"
grep -Eq '^  ep_dispatch +4 +1\.100 ' "$TMP/ep.txt" || fail "ep_dispatch geomean over EP 2's 4 cells"

diff_runs 2026-11-23__10 2026-11-23__11 --format json > "$TMP/ep.json" || fail "diff --format json"
diff_runs 2026-11-23__10 2026-11-23__11 --format csv > "$TMP/ep.csv" || fail "diff --format csv"
diff_runs 2026-11-23__10 2026-11-23__12 --format json > "$TMP/dense.json" || fail "diff EP run vs EP 1 run"
diff_runs 2026-11-23__12 2026-11-23__10 --format csv > "$TMP/dense.csv" || fail "diff EP 1 run vs EP run, csv"
$PY - "$TMP" <<'PYEOF' || fail "diff EP cells"
import csv, json, sys
tmp = sys.argv[1]
d = json.load(open(f"{tmp}/ep.json"))
ep2 = [c for c in d["cells"] if c.get("ep") == 2]
assert all(c.get("ep") in (None, 2) for c in d["cells"]), d["cells"][:1]   # "ep" only when > 1
assert len(ep2) == 4 * 21, len(ep2)       # 4 MBS x (19 ops + layer + total)
assert all((c["tp"], c["pp"], c["dp"]) == (1, 1, 2) and abs(c["ratio"] - 1.1) < 1e-6 for c in ep2), ep2[:2]
g = {(c["mbs"], c["op"]): c for c in ep2}
assert abs(g[(1, "moe_expert_gate")]["a"] - 1.5) < 1e-9, g[(1, "moe_expert_gate")]
assert {c["op"] for c in d["cells"] if c["op"].startswith("ep_")} == {"ep_dispatch", "ep_combine"}
assert all(c.get("ep") == 2 for c in d["cells"] if c["op"].startswith("ep_"))
rows = list(csv.DictReader(open(f"{tmp}/ep.csv")))
assert list(rows[0])[:5] == ["tp", "pp", "dp", "ep", "mbs"], list(rows[0])
assert sum(r["ep"] == "2" for r in rows) == len(ep2) and sum(r["ep"] == "1" for r in rows) == len(d["cells"]) - len(ep2)
# A's EP 2 config has no counterpart in a run without EP: never compared with its EP 1 cells
dense = json.load(open(f"{tmp}/dense.json"))
assert dense["cells"] and all("ep" not in c for c in dense["cells"]), [c for c in dense["cells"] if "ep" in c][:1]
assert not [c for c in dense["cells"] if c["op"].startswith("ep_")]
assert len(dense["cells"]) == len(d["cells"]) - len(ep2), (len(dense["cells"]), len(d["cells"]))
back = list(csv.DictReader(open(f"{tmp}/dense.csv")))
assert list(back[0])[:4] == ["tp", "pp", "dp", "mbs"], list(back[0])   # no ep column without EP
print("diff: EP 2 compared with EP 2 only (%d cells), dense configs as before" % len(ep2))
PYEOF
# pdbx show's CSV: an ep column with EP (two configs would otherwise share tp,pp,dp,mbs), none without
"$PDBX" show --store "$STORE" 2026-11-23__10 --format csv > "$TMP/show.csv" || fail "show --format csv"
"$PDBX" show --store "$STORE" 2026-11-23__12 --format csv > "$TMP/show1.csv" || fail "show --format csv, EP 1"
head -1 "$TMP/show.csv" | grep -q '^tp,pp,dp,ep,mbs,status,' || fail "show csv header: $(head -1 "$TMP/show.csv")"
head -1 "$TMP/show1.csv" | grep -q '^tp,pp,dp,mbs,status,' || fail "show csv header without EP: $(head -1 "$TMP/show1.csv")"
[ "$(grep -c '^1,1,2,2,[0-9]*,ok,' "$TMP/show.csv")" = 4 ] || fail "show csv: EP 2 rows"
diff_runs 2026-11-23__10 2026-11-23__12 > "$TMP/dense.txt" || fail "diff table, EP run vs EP 1 run"
! grep -q "EP 2" "$TMP/dense.txt" || fail "an EP 2 heading without EP 2 in B"
echo "PASS: diff compares EP configs as their own configs"
