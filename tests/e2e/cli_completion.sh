#!/usr/bin/env bash
# The bash completion and the man page generated from the option tables (pdbx --dump-cli,
# tui/cli/gen_cli_docs.py) agree with --help: the completion offers every subcommand and, for
# each one, exactly the options its --help lists; values of BOOL/choice options, directories
# for DIR and run ids for RUN; the man page renders without warnings and names every command
# and option.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/cli_fixture.sh" || exit 1
trap cleanup EXIT
COMP="$BUILD/share/bash-completion/completions/pdbx"
MAN="$BUILD/share/man/man1/pdbx.1"
[ -f "$COMP" ] || fail "$COMP was not generated"
[ -f "$MAN" ] || fail "$MAN was not generated"

# complete WORD...: COMPREPLY (sorted, one line) for the command line WORD... (last = current)
complete_line() {
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _pdbx;
             printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' _ "$COMP" "$@"
}
# help_opts CMD: the options `pdbx CMD --help` lists, sorted, one line
help_opts() {
    "$PDBX" "$@" --help | grep -oE '^  (-h, )?--[a-z0-9-]+' | sed 's/^  //; s/^-h, //' | sort | tr '\n' ' '
}

cmds=$("$PDBX" --help | sed -n '/^commands:/,/^$/p' | grep -oE '^  [a-z]+' | tr -d ' ')
[ "$(echo "$cmds" | wc -w)" -ge 12 ] || fail "pdbx --help lists too few commands: $cmds"
got=$(complete_line pdbx "")
[ "$got" = "$(echo "$cmds" | sort | tr '\n' ' ')" ] || fail "pdbx <TAB> offers '$got', not the commands"
[ "$(complete_line pdbx sh)" = "show " ] || fail "pdbx sh<TAB>: $(complete_line pdbx sh)"
for c in $cmds; do
    got=$(complete_line pdbx "$c" --)
    want=$(help_opts "$c")
    [ "$got" = "$want" ] || fail "pdbx $c --<TAB> offers '$got'; --help lists '$want'"
    # the global --store form before the command finds the command too
    got=$(complete_line pdbx --store /tmp "$c" --)
    [ "$got" = "$want" ] || fail "pdbx --store DIR $c --<TAB> offers '$got'"
done
[ "$(complete_line pdbx plan quick --dtype "")" = "bf16 fp16 fp32 " ] || fail "--dtype values: $(complete_line pdbx plan --dtype "")"
[ "$(complete_line pdbx run quick --zero1 "")" = "false true " ] || fail "--zero1 values"
mkdir -p "$TMP/dirs/sub"
[ "$(complete_line pdbx ls --store "$TMP/dirs/")" = "$TMP/dirs/sub " ] || fail "--store DIR completes directories"
S="$TMP/store"
make_store "$S" cli_run_a cli_run_b
got=$(complete_line pdbx show --store "$S" 2026-11-20__1)
[ "$got" = "$RUN_A $RUN_B " ] || fail "show RUN<TAB> offers '$got', not the run ids"

# ---- the man page ----
command -v groff >/dev/null || { echo "SKIP: groff not installed (completion checked)"; exit 77; }
warn=$(groff -man -Tutf8 -ww -z "$MAN" 2>&1)
[ -z "$warn" ] || fail "groff warns on pdbx.1: $warn"
MANWIDTH=80 groff -man -Tutf8 -P-c "$MAN" 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g; s/.\x08//g' > "$TMP/man.txt"
for c in $cmds; do
    grep -q "^   pdbx $c" "$TMP/man.txt" || fail "the man page has no section for pdbx $c"
    for o in $(help_opts "$c"); do
        grep -q -- "$o" "$TMP/man.txt" || fail "the man page lacks $c's $o"
    done
done
grep -q "EXIT STATUS" "$TMP/man.txt" && grep -qE "^ +3 +run and attach: the sweep was cancelled" "$TMP/man.txt" \
    || fail "the man page lacks exit status 3"
if command -v man >/dev/null; then
    warn=$(MANWIDTH=80 man -l "$MAN" 2>&1 >/dev/null)
    [ -z "$warn" ] || fail "man -l warns: $warn"
fi
echo "PASS: completion offers the $(echo $cmds | wc -w) commands and each one's --help options; pdbx.1 renders cleanly"
