#!/usr/bin/env bash
# docs/cli.md documents every subcommand and every option that --help lists (spec-field options
# of plan/run are documented as --FIELD, their help comes from the planner's field table), the
# exit statuses 0..3, and quotes --help where it shows it (the --seq-len line). Every --help
# fits an 80-column terminal.
set -u
SRC=${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}
PDBX=${PDBX_BUILD:?PDBX_BUILD not set}/bin/pdbx
DOC=$SRC/docs/cli.md
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$PDBX" ] || { echo "SKIP: $PDBX not built"; exit 77; }
cmds=$("$PDBX" --help | sed -n '/^commands:/,/^$/p' | grep -oE '^  [a-z]+' | tr -d ' ')
[ -n "$cmds" ] || fail "pdbx --help lists no commands"
long=$("$PDBX" --help | awk 'length > 79')
[ -z "$long" ] || fail "pdbx --help is wider than 79 columns: $long"
n=0
for c in $cmds "--explorer-help"; do
    if [ "$c" != "--explorer-help" ]; then
        grep -qE "^\| (\`[^|]*\`, )?\`$c[ \`]" "$DOC" || fail "docs/cli.md has no table row for '$c'"
        help=$("$PDBX" "$c" --help)
    else
        help=$("$PDBX" --explorer-help)
    fi
    long=$(echo "$help" | awk 'length > 79')
    [ -z "$long" ] || fail "pdbx $c --help is wider than 79 columns: $long"
    # one line per option (--help wraps long ones onto indented continuation lines)
    help=$(echo "$help" | awk '/^     +[^ ]/ && prev ~ /^  -/ { sub(/^ +/, " "); line = line $0; next }
                               { if (line != "") print line; line = $0; prev = $0 } END { print line }')
    # the command's own options (spec fields say "; allowed: " and are documented as --FIELD)
    for o in $(echo "$help" | grep -E '^  --' | grep -v '; allowed: ' | grep -oE '^  --[a-z0-9-]+'); do
        case $o in --store|--help) continue ;; esac
        grep -q -- "$o" "$DOC" || fail "docs/cli.md does not mention $c's option $o"
        n=$((n + 1))
    done
done
for s in "0 done" "1 the command could not do its job" "2 usage" "3 \`run\`/\`attach\`: the sweep was cancelled"; do
    grep -q -- "$s" "$DOC" || fail "docs/cli.md lacks exit status '$s'"
done
want=$("$PDBX" plan --help | grep -E '^  --seq-len ' | tr -s ' ' | sed 's/^ //')
[ -n "$want" ] || fail "plan --help has no --seq-len line"
tr -s ' ' < "$DOC" | grep -qF -- "$want" || fail "docs/cli.md does not quote plan --help's '$want'"
echo "PASS: docs/cli.md documents $(echo $cmds | wc -w) commands, $n options, exit statuses 0..3"
