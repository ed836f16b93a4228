#!/usr/bin/env bash
# `pdbx record RUN FILE` copies a run's event stream to a recording; `pdbx import FILE` adds it to
# another store (same id, or a new one when taken); a recording opens directly by path.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/cli_fixture.sh" || exit 1
trap cleanup EXIT
S="$TMP/store"
make_store "$S" cli_run_a
"$PDBX" record --store "$S" 2026-11-20 "$TMP/rec.pdbx" > "$TMP/out" 2>"$TMP/err" || fail "record: $(cat "$TMP/err")"
grep -qx "$TMP/rec.pdbx" "$TMP/out" || fail "record did not print the file"
# The recording is the run's stream, frame for frame readable by zstd.
zstd -q -d -c "$TMP/rec.pdbx" | head -c 200 | grep -q '"type":"run_start"' || fail "recording not zstd frames of events"
# It opens by path like a run.
"$PDBX" show "$TMP/rec.pdbx" --format csv > "$TMP/rec.csv" || fail "show recording by path"
"$PDBX" show --store "$S" 2026-11-20 --format csv > "$TMP/run.csv" || fail "show run"
cmp -s "$TMP/rec.csv" "$TMP/run.csv" || fail "recording shows differently from its run"

# Import into an empty store (created on import); the same recording again names the run already
# there (tests/e2e/store_hostile.sh); a different recording with the taken id gets a new one.
S2="$TMP/other"
"$PDBX" import --store "$S2" "$TMP/rec.pdbx" > "$TMP/id1" 2>"$TMP/err" || fail "import: $(cat "$TMP/err")"
[ "$(cat "$TMP/id1")" = "$RUN_A" ] || fail "import did not keep the id: $(cat "$TMP/id1")"
cp "$TMP/rec.pdbx" "$TMP/rec2.pdbx"
printf '{"type":"warning","message":"one more event"}\n' | zstd -q -c >> "$TMP/rec2.pdbx"
"$PDBX" import --store "$S2" "$TMP/rec2.pdbx" > "$TMP/id2" || fail "second import"
[ "$(cat "$TMP/id2")" != "$RUN_A" ] || fail "second import reused a taken id"
"$PDBX" ls --store "$S2" --json > "$TMP/ls.json" || fail "ls after import"
$PY -c "import json; r=json.load(open('$TMP/ls.json')); assert len(r)==2 and all(x['status']=='complete' for x in r), r" \
    || fail "imported runs do not list as complete"
# Importing something that is not a recording fails with one line, and the store is unharmed.
printf 'not a recording' > "$TMP/junk.pdbx"
"$PDBX" import --store "$S2" "$TMP/junk.pdbx" > /dev/null 2>"$TMP/err" && fail "import of junk succeeded"
[ "$(wc -l < "$TMP/err")" -eq 1 ] || fail "import junk: $(cat "$TMP/err")"
"$PDBX" ls --store "$S2" --json | $PY -c "import json,sys; assert len(json.load(sys.stdin))==2" || fail "junk import changed the store"
echo "PASS: record, import, recordings by path"
