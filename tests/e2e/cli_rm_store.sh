#!/usr/bin/env bash
# Paper cuts of the CLI (issue 10):
#  - did-you-mean for subcommands and long options (exit 2, one line);
#  - one rule for an explicit --store DIR across commands: a store is a directory with runs/;
#    run and import make one only in a new or empty directory; readers never create one;
#  - pdbx rm: removes the run file, its logs and its index entry; resolves every RUN before
#    removing any; refuses paths, unknown prefixes and a running run (unless --force, which
#    cancels the sweep first: checked against a real sweep when mpirun is installed).
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/cli_fixture.sh" || exit 1
trap cleanup EXIT

# expect_fail CODE PATTERN CMD...: exit CODE, one stderr line matching PATTERN, no stdout.
expect_fail() {
    local code=$1 pat=$2 rc; shift 2
    "$@" >"$TMP/o" 2>"$TMP/e"; rc=$?
    [ $rc -eq "$code" ] || fail "expected exit $code, got $rc: $* ($(cat "$TMP/e"))"
    [ "$(wc -l < "$TMP/e")" -eq 1 ] || fail "expected one stderr line: $*: $(cat "$TMP/e")"
    grep -q -- "$pat" "$TMP/e" || fail "$*: stderr lacks '$pat': $(cat "$TMP/e")"
    [ ! -s "$TMP/o" ] || fail "$*: wrote to stdout"
}

# ---- did you mean ----
expect_fail 2 "unknown command 'shwo'; did you mean 'show'?" "$PDBX" shwo
expect_fail 2 "unknown command 'canel'; did you mean 'cancel'?" "$PDBX" canel
expect_fail 2 "unknown command 'sh'; did you mean 'show'?" "$PDBX" sh
expect_fail 2 "unknown command 'zzz' (see 'pdbx --help')" "$PDBX" zzz
expect_fail 2 "did you mean '--stat'?" "$PDBX" show x --stt mean
expect_fail 2 "did you mean '--force'?" "$PDBX" rm x --forse

# ---- the store rule ----
S="$TMP/store"
make_store "$S" cli_run_a cli_run_b
expect_fail 1 "not a pdbx store" "$PDBX" ls --store "$TMP/nostore"
[ ! -e "$TMP/nostore" ] || fail "ls created the store it refused"
mkdir -p "$TMP/home" && echo notes > "$TMP/home/notes.txt"
for cmd in "ls" "show $RUN_A" "rm $RUN_A" "import $TMP/x.pdbx"; do
    expect_fail 1 "not a pdbx store" "$PDBX" $cmd --store "$TMP/home"
done
expect_fail 1 "not a pdbx store" "$PDBX" run quick --store "$TMP/home"
[ ! -e "$TMP/home/runs" ] || fail "run made a store inside a directory holding other files"
# import (a writer) makes a store in a new directory and in an empty one; ls then reads both
"$PDBX" record "$RUN_A" "$TMP/a.pdbx" --store "$S" >/dev/null 2>&1 || fail "record"
mkdir "$TMP/empty"
for d in "$TMP/new/store" "$TMP/empty"; do
    "$PDBX" import "$TMP/a.pdbx" --store "$d" >/dev/null 2>"$TMP/e" || fail "import into $d: $(cat "$TMP/e")"
    "$PDBX" ls --store "$d" | grep -q "$RUN_A" || fail "ls --store $d after import"
done

# ---- pdbx rm ----
mkdir -p "$S/logs"
echo log > "$S/logs/$RUN_A.log"
echo '{}' > "$S/logs/$RUN_A.spec.json"
"$PDBX" ls --store "$S" >/dev/null || fail "ls"        # writes the index with both runs
grep -q "$RUN_A" "$S/index.json" || fail "index lacks $RUN_A before rm"
# nothing is removed when one RUN is wrong
expect_fail 2 "no run in" "$PDBX" rm "$RUN_A" nosuchrun --store "$S"
expect_fail 2 "is ambiguous" "$PDBX" rm 2026-11-20 --store "$S"
expect_fail 2 "is a path" "$PDBX" rm "$S/runs/$RUN_A.pdbx" --store "$S"
expect_fail 2 "missing argument" "$PDBX" rm --store "$S"
[ -e "$S/runs/$RUN_A.pdbx" ] || fail "a failed rm removed $RUN_A"
"$PDBX" rm "${RUN_A:0:24}" --store "$S" 2>"$TMP/e" || fail "rm $RUN_A: $(cat "$TMP/e")"
grep -q "removed $RUN_A" "$TMP/e" || fail "rm does not say what it removed: $(cat "$TMP/e")"
for f in "runs/$RUN_A.pdbx" "logs/$RUN_A.log" "logs/$RUN_A.spec.json"; do
    [ ! -e "$S/$f" ] || fail "rm left $f"
done
grep -q "$RUN_A" "$S/index.json" && fail "rm left the index entry"
"$PDBX" ls --store "$S" | grep -q "$RUN_B" || fail "rm removed the other run"
expect_fail 2 "no run in" "$PDBX" rm "$RUN_A" --store "$S"

# a running run (its launcher pid is this shell) is refused, and stays
make_store "$S" cli_run_running
expect_fail 1 "is running" "$PDBX" rm "$RUN_RUNNING" --store "$S"
[ -e "$S/runs/$RUN_RUNNING.pdbx" ] || fail "rm removed a running run"

# --force on a real sweep: cancelled first, then removed
ENGINE=$BUILD/bin/pdbx-engine
if command -v mpirun >/dev/null && [ -x "$ENGINE" ]; then
    export PDBX_ENGINE=$ENGINE OMPI_MCA_rmaps_base_oversubscribe=1
    if [ -n "${ASAN_OPTIONS:-}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"; fi
    # --force: the fixture run above lists as running on this host (its launcher is this shell)
    id=$("$PDBX" run quick --seq-len 64 --steps 200 --collectives false --store "$S" --detach --force 2>"$TMP/e") \
        || fail "run --detach: $(cat "$TMP/e")"
    trap '"$PDBX" cancel "$id" --store "$S" >/dev/null 2>&1; cleanup' EXIT
    expect_fail 1 "is running" "$PDBX" rm "$id" --store "$S"
    "$PDBX" rm "$id" --force --store "$S" 2>"$TMP/e" || fail "rm --force: $(cat "$TMP/e")"
    grep -q "cancelling $id" "$TMP/e" || fail "rm --force did not cancel: $(cat "$TMP/e")"
    [ ! -e "$S/runs/$id.pdbx" ] && [ ! -e "$S/logs/$id.log" ] || fail "rm --force left files"
    sleep 1
    pgrep -f "pdbx-engine.*$id" >/dev/null && fail "rm --force left the sweep running"
    trap cleanup EXIT
    echo "PASS: did-you-mean, the --store rule, rm (with --force on a real sweep)"
else
    echo "PASS: did-you-mean, the --store rule, rm (--force not checked: no mpirun)"
fi
