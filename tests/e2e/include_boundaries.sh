#!/usr/bin/env bash
# Every #include of a project header crosses only into directories the including directory's
# SConscript declares (tests/check_boundaries.py), and the checker itself catches a violation.
set -eu
cd "$(dirname "$0")/../.."
py=${PYTHON:-python3}
$py tests/check_boundaries.py .
# The check must be able to fail: a store/ file that reaches into tui/ is a violation.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/store" "$tmp/tui"
printf "env.PdbxLibrary('store', [], deps=['store/util'])\n" > "$tmp/store/SConscript"
printf "env.PdbxLibrary('tui', [], deps=['store'])\n" > "$tmp/tui/SConscript"
printf '#include "tui/ui_app.h"\n' > "$tmp/store/bad.c"
printf '#include "store/store.h"\n' > "$tmp/tui/ok.c"
if out=$($py tests/check_boundaries.py "$tmp"); then
    echo "FAIL: the checker accepted store/bad.c including tui/ui_app.h"; exit 1
fi
echo "$out" | grep -q 'store/bad.c:1: includes "tui/ui_app.h"' || { echo "FAIL: unexpected report: $out"; exit 1; }
echo "include boundaries: ok"
