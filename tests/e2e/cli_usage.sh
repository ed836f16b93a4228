#!/usr/bin/env bash
# Every subcommand answers --help on stdout with exit 0; every bad invocation (unknown option,
# bad value, missing or extra argument, unknown or ambiguous run) exits 2 with ONE stderr line.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/cli_fixture.sh" || exit 1
trap cleanup EXIT
S="$TMP/store"
make_store "$S" cli_run_a cli_run_b
export PDBX_STORE="$S"

# --help everywhere: exit 0, a usage line, every declared option listed.
"$PDBX" --help > "$TMP/help" || fail "pdbx --help"
for cmd in ls show diff export plan record import run attach cancel; do
    grep -q "^  $cmd " "$TMP/help" || fail "pdbx --help does not list $cmd"
    "$PDBX" $cmd --help > "$TMP/h.$cmd" 2>"$TMP/h.err" || fail "pdbx $cmd --help exited $?"
    head -n1 "$TMP/h.$cmd" | grep -q "^usage: pdbx $cmd" || fail "pdbx $cmd --help: $(head -n1 "$TMP/h.$cmd")"
    grep -q -- '--help' "$TMP/h.$cmd" || fail "pdbx $cmd --help does not list --help"
    [ ! -s "$TMP/h.err" ] || fail "pdbx $cmd --help wrote to stderr"
done
# The global form of the usage line, `pdbx --store DIR CMD`, reaches the command.
"$PDBX" --store "$S" ls > "$TMP/ls.global" || fail "pdbx --store DIR ls exited $?"
grep -q "$RUN_A" "$TMP/ls.global" || fail "pdbx --store DIR ls does not list $RUN_A"
"$PDBX" --store="$S" show "$RUN_A" > /dev/null || fail "pdbx --store=DIR show exited $?"
grep -q -- '--stat STAT' "$TMP/h.show" || fail "show --help lacks --stat"
grep -q -- '--seq-len N  *sequence length; allowed: 1..131072; default: 128' "$TMP/h.plan" || fail "plan --help lacks the spec field --seq-len with its range and default"
grep -q -- '--npz DIR' "$TMP/h.export" || fail "export --help lacks --npz"

bad=(
    "nosuchcmd"
    "--bogus"
    "ls --bogus"
    "ls extra-arg"
    "ls --store"
    "ls --json=yes"
    "show"
    "show $RUN_A --stat avg"
    "show $RUN_A --stat"
    "show $RUN_A --format xml"
    "show $RUN_A --tp 0"
    "show $RUN_A --tp two"
    "show $RUN_A --tp 99999999999999999999"
    "show $RUN_A --tp 4"
    "show $RUN_A --attribution both"
    "show $RUN_A --attribution fasop --stat std"
    "show $RUN_A $RUN_B"
    "show $RUN_A --sat mean"
    "show -x $RUN_A"
    "show nosuchrun"
    "show 2026-11-20"
    "diff $RUN_A"
    "diff $RUN_A $RUN_B extra"
    "diff $RUN_A $RUN_B --stat avg"
    "diff $RUN_A $RUN_B --format yaml"
    "diff $RUN_A nosuchrun"
    "export $RUN_A"
    "export $RUN_A --model-tag llama1b"
    "export $RUN_A --npz $TMP/npz --attribution both"
    "export $RUN_A --npz $TMP/npz --stat std"
    "export $RUN_A --npz $TMP/npz --gpu-tag a/b"
    "export $RUN_A --npz"
    "export $RUN_A --csv="
    "export 2026 --csv $TMP/csv"
    "plan nosuchpreset"
    "plan quick extra"
    "plan quick --bogus 1"
    "plan quick --seq-len abc"
    "plan quick --seq-len -5"
    "plan quick --mbs 3:8"
    "plan quick --dtype fp8"
    "plan quick --seqlen 1024"
    "record $RUN_A"
    "record nosuchrun $TMP/rec.pdbx"
    "import"
    "record $RUN_A $TMP"
    "import a b"
)
for inv in "${bad[@]}"; do
    # shellcheck disable=SC2086  # word splitting of the invocation is intended
    expect_usage_error "$PDBX" $inv
done

# Empty positional values (no word splitting here)
expect_usage_error "$PDBX" import ""
expect_usage_error "$PDBX" record "$RUN_A" ""
for cmd in ls "show $RUN_A" "attach $RUN_A" "cancel $RUN_A" "diff $RUN_A $RUN_B"; do
    # shellcheck disable=SC2086  # word splitting of the command is intended
    expect_usage_error "$PDBX" $cmd --store ""
done

# The message names the option, the value and what is allowed.
"$PDBX" show "$RUN_A" --stat avg 2>"$TMP/e" ; grep -qx "pdbx show: --stat: 'avg' is not one of mean, median, min, max, std" "$TMP/e" \
    || fail "stat message: $(cat "$TMP/e")"
"$PDBX" show 2026-11-20 2>"$TMP/e"; grep -q "2026-11-20" "$TMP/e" || fail "ambiguous prefix message: $(cat "$TMP/e")"
"$PDBX" show "$RUN_A" --sat mean 2>"$TMP/e"; grep -q "did you mean '--stat'" "$TMP/e" || fail "no did-you-mean: $(cat "$TMP/e")"
"$PDBX" show "$RUN_A" --tp 4 2>"$TMP/e"; grep -q "has: 1,2" "$TMP/e" || fail "--tp 4 message: $(cat "$TMP/e")"
echo "PASS: ${#bad[@]} bad invocations exit 2 with one line; --help on every command"
