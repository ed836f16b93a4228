#!/usr/bin/env bash
# Hostile files and limits through the real CLI (issue 10 items 8, 9, 12 and the import paper
# cut): an export past `ulimit -f` fails with a message and leaves no temp file (it was killed
# by SIGXFSZ with its temp file left); a FIFO in runs/ does not hang `pdbx ls` and is listed as
# skipped; a run file without read permission says "permission denied", not "corrupt"
# (checked as an unprivileged user: root reads any file); importing the same recording twice
# names the run already there instead of adding a copy.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/cli_fixture.sh" || exit 1
trap cleanup EXIT
S="$TMP/store"
make_store "$S" cli_run_a
export PDBX_STORE="$S"

# ---- item 9: an export past the file-size limit ---------------------------------------------
mkdir -p "$TMP/out" "$TMP/csv"
(ulimit -f 4; exec "$PDBX" export "$RUN_A" --trace "$TMP/out/t.json") > "$TMP/x.out" 2> "$TMP/x.err"
rc=$?
[ $rc -ne 0 ] || fail "export past ulimit -f 4 (4 KiB) succeeded"
[ $rc -lt 128 ] || fail "export was killed by a signal ($rc, SIGXFSZ is $((128 + 25))): $(cat "$TMP/x.err")"
grep -q "File too large" "$TMP/x.err" || fail "export error does not say why: $(cat "$TMP/x.err")"
[ "$(wc -l < "$TMP/x.err")" -eq 1 ] || fail "expected one error line: $(cat "$TMP/x.err")"
left=$(ls -A "$TMP/out")
[ -z "$left" ] || fail "export left files behind: $left"
echo "ok: export past ulimit -f fails cleanly: $(cat "$TMP/x.err")"
(ulimit -f 4; exec "$PDBX" export "$RUN_A" --csv "$TMP/csv") > /dev/null 2> "$TMP/c.err"
rc=$?
[ $rc -ne 0 ] && [ $rc -lt 128 ] || fail "CSV export past ulimit -f: exit $rc: $(cat "$TMP/c.err")"
ls -A "$TMP/csv" | grep -q '\.tmp\.' && fail "CSV export left a temp file: $(ls -A "$TMP/csv")"

# ---- item 8: a FIFO in runs/ ------------------------------------------------------------------
FIFO_ID=2026-11-23__00-00-00_f1f0f1f0
mkfifo "$S/runs/$FIFO_ID.pdbx"
timeout 20 "$PDBX" ls > "$TMP/ls.out" 2> "$TMP/ls.err"
rc=$?
[ $rc -ne 124 ] || fail "pdbx ls hung on a FIFO in runs/"
[ $rc -eq 0 ] || fail "pdbx ls failed ($rc): $(cat "$TMP/ls.err")"
grep "$FIFO_ID" "$TMP/ls.out" | grep -q "unreadable" || fail "FIFO not listed as unreadable: $(cat "$TMP/ls.out")"
grep "$FIFO_ID" "$TMP/ls.out" | grep -q "skipped: not a regular file (a FIFO)" \
    || fail "FIFO listed without the reason: $(cat "$TMP/ls.out")"
grep "$RUN_A" "$TMP/ls.out" | grep -q complete || fail "the real run is not listed: $(cat "$TMP/ls.out")"
timeout 20 "$PDBX" show "$FIFO_ID" > /dev/null 2> "$TMP/show.err"
rc=$?
[ $rc -ne 124 ] || fail "pdbx show hung on a FIFO"
grep -q "not a regular file" "$TMP/show.err" || fail "show of a FIFO: $(cat "$TMP/show.err")"
rm -f "$S/runs/$FIFO_ID.pdbx"
echo "ok: a FIFO in runs/ is listed as skipped, ls does not hang"

# ---- item 12: a run file without read permission ----------------------------------------------
as_nobody() {
    if [ "$(id -u)" != 0 ]; then "$@"; return; fi
    if command -v setpriv > /dev/null; then
        setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
    else
        su nobody -s /bin/sh -c "$(printf '%q ' "$@")"
    fi
}
chmod 755 "$TMP" "$S" "$S/runs"
chmod 644 "$S/runs/"*.pdbx
rm -f "$S/index.json"                  # a cached summary would be shown without reading
chmod 000 "$S/runs/$RUN_A.pdbx"
if as_nobody true 2> /dev/null; then
    as_nobody env PDBX_STORE="$S" "$PDBX" ls > "$TMP/ls.out" 2> "$TMP/ls.err" \
        || fail "ls as an unprivileged user: $(cat "$TMP/ls.err")"
    line=$(grep "$RUN_A" "$TMP/ls.out")
    echo "$line" | grep -q "permission denied" || fail "unreadable run listed as: $line"
    echo "$line" | grep -q "corrupt" && fail "unreadable run listed as corrupt: $line"
    echo "ok: $line"
else
    echo "note: cannot run as an unprivileged user here (no setpriv/su): permission check skipped"
fi
chmod 644 "$S/runs/$RUN_A.pdbx"

# ---- the import paper cut: the same recording twice --------------------------------------------
"$PDBX" record "$RUN_A" "$TMP/rec.pdbx" > /dev/null 2>&1 || fail "record"
S2="$TMP/store2"
"$PDBX" import "$TMP/rec.pdbx" --store "$S2" > "$TMP/i1.out" 2> "$TMP/i1.err" || fail "import: $(cat "$TMP/i1.err")"
"$PDBX" import "$TMP/rec.pdbx" --store "$S2" > "$TMP/i2.out" 2> "$TMP/i2.err"
rc=$?
[ $rc -eq 0 ] || fail "second import exit $rc: $(cat "$TMP/i2.err")"
[ "$(cat "$TMP/i1.out")" = "$RUN_A" ] || fail "first import printed $(cat "$TMP/i1.out")"
[ "$(cat "$TMP/i2.out")" = "$RUN_A" ] || fail "second import printed $(cat "$TMP/i2.out"), not the run already there"
grep -q "already in the store as $RUN_A" "$TMP/i2.err" || fail "second import did not say so: $(cat "$TMP/i2.err")"
n=$(ls "$S2/runs" | grep -c '\.pdbx$')
[ "$n" -eq 1 ] || fail "the store holds $n runs after importing one recording twice"
echo "ok: $(cat "$TMP/i2.err")"
echo "PASS"
