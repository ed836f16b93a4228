#!/usr/bin/env bash
# `pdbx diff` calls a difference real only beyond both cells' noise (Welch at 95% from the stored
# std and count, docs/cli.md), never by a fixed percentage: a 3% difference with a 10% std is
# "same" within noise, a 1% difference with a 0.1% std is "worse" (and "better" the other way
# round); the table, JSON and CSV all carry A ms, B ms, B/A and the verdict.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/cli_fixture.sh" || exit 1
STORE="$TMP/store"
mk() { fixture_run "$STORE" "$@"; }
mk 2026-11-22__10-00-00_noisy001 --std 0.1
mk 2026-11-22__11-00-00_noisy003 --std 0.1 --scale 1.03 --t0 1795172400
mk 2026-11-22__12-00-00_tight001 --std 0.001 --t0 1795176000
mk 2026-11-22__13-00-00_tight101 --std 0.001 --scale 1.01 --t0 1795179600
diff_runs() { "$PDBX" diff --store "$STORE" "$@"; }
diff_runs 2026-11-22__10 2026-11-22__11 --format json > "$TMP/noisy.json" || fail "diff noisy"
diff_runs 2026-11-22__12 2026-11-22__13 --format json > "$TMP/tight.json" || fail "diff tight"
diff_runs 2026-11-22__13 2026-11-22__12 --format csv > "$TMP/back.csv" || fail "diff tight, B faster"
$PY - "$TMP" <<'PYEOF' || fail "diff verdicts"
import csv, json, math, sys
tmp = sys.argv[1]
for name, ratio, verdict in (("noisy", 1.03, "same"), ("tight", 1.01, "worse")):
    d = json.load(open(f"{tmp}/{name}.json"))
    assert d["cells"], name
    for c in d["cells"]:
        assert abs(c["ratio"] - ratio) < 1e-6, c      # the fixture rounds to 1e-6 ms
        assert c["verdict"] == verdict, (name, c)
        # the threshold is Welch's at z = 1.96 with std = FRAC x mean over 6 samples (ddof 0)
        frac = 0.1 if name == "noisy" else 0.001
        if c["op"] not in ("layer", "total"):
            want = 1.96 * math.sqrt((frac * c["a"]) ** 2 / 5 + (frac * c["b"]) ** 2 / 5)
            assert abs(c["noise_ms"] - want) <= 1e-6 * want + 1e-9, (c, want)
    for op, g in d["geomean"].items():
        assert g[verdict] == g["cells"], (name, op, g)
rows = list(csv.DictReader(open(f"{tmp}/back.csv")))
assert rows and all(r["verdict"] == "better" for r in rows), rows[:2]
assert all(float(r["b"]) < float(r["a"]) for r in rows)
print("diff: 3% within a 10% std is noise, 1% beyond a 0.1% std is real")
PYEOF
diff_runs 2026-11-22__10 2026-11-22__11 > "$TMP/noisy.txt" || fail "diff table"
grep -Eq '^    1  attn_q +1\.000 +1\.030 +1\.030 ~  same within noise$' "$TMP/noisy.txt" \
    || fail "noisy table row: $(grep attn_q "$TMP/noisy.txt" | head -2)"
diff_runs 2026-11-22__12 2026-11-22__13 > "$TMP/tight.txt" || fail "diff table"
grep -Eq '^    1  attn_q +1\.000 +1\.010 +1\.010 \^  worse$' "$TMP/tight.txt" \
    || fail "tight table row: $(grep attn_q "$TMP/tight.txt" | head -2)"
echo "PASS: diff judges differences against the cells' noise"
