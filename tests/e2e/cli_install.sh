#!/usr/bin/env bash
# `scons install PREFIX=DIR` installs pdbx, pdbx-engine, the cuda backend (when built), the
# presets, the themes, the man page and the bash completion, and the installed pdbx finds its
# engine and presets from another directory with no PDBX_* variable set: `pdbx plan quick` and a
# tiny `pdbx run` (when mpirun is installed).
set -u
SRC=${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v scons >/dev/null || { echo "SKIP: scons not installed"; exit 77; }
TMP=$(mktemp -d /tmp/pdbx-install-e2e.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
P="$TMP/prefix"
# the build/ variant is what gets installed (the suite built it already: this only copies)
(cd "$SRC" && scons -Q -j2 install PREFIX="$P") > "$TMP/scons.log" 2>&1 || { cat "$TMP/scons.log"; fail "scons install"; }
for f in bin/pdbx bin/pdbx-engine share/pdbx/configs/sweeps/quick.json share/pdbx/configs/models \
         share/pdbx/configs/gpus share/pdbx/themes/default-dark.theme share/man/man1/pdbx.1 \
         share/bash-completion/completions/pdbx; do
    [ -e "$P/$f" ] || fail "scons install did not install $f"
done
if [ -e "$SRC/build/lib/libpdbx_cuda.so" ]; then
    [ -e "$P/lib/libpdbx_cuda.so" ] || fail "the cuda backend was built but not installed"
fi
# Nothing may point back into the build tree: run from elsewhere, without the PDBX_* overrides.
unset PDBX_CONFIGS PDBX_ENGINE PDBX_THEMES PDBX_CUDA_LIB PDBX_STORE
export HOME="$TMP/home" XDG_DATA_HOME="$TMP/home/data"
mkdir -p "$TMP/elsewhere" "$HOME"
cd "$TMP/elsewhere" || fail "cd"
"$P/bin/pdbx" plan quick > plan.txt 2> plan.err || fail "installed pdbx plan quick: $(cat plan.err)"
grep -q "TinyLlama" plan.txt || fail "installed pdbx plan quick printed no plan: $(head -5 plan.txt)"
"$P/bin/pdbx" plan quick --json | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin)' \
    || fail "installed pdbx plan quick --json"
if command -v mpirun >/dev/null; then
    export OMPI_MCA_rmaps_base_oversubscribe=1
    if [ -n "${ASAN_OPTIONS:-}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"; fi
    id=$("$P/bin/pdbx" run quick --seq-len 16 --mbs 1:1 --configs 1x1x1 --warmup 0 --steps 1 \
         --collectives false --store st 2> run.err) || fail "installed pdbx run: $(cat run.err)"
    "$P/bin/pdbx" ls --store st | grep "$id" | grep -q complete || fail "the installed run did not complete: $("$P/bin/pdbx" ls --store st)"
    grep -q "launching mpirun .* $P/bin/pdbx-engine " "st/logs/$id.log" \
        || fail "the run did not start the installed engine: $(head -3 "st/logs/$id.log")"
    echo "PASS: scons install; the installed pdbx plans and runs from another directory"
else
    echo "PASS: scons install; the installed pdbx plans from another directory (run not checked: no mpirun)"
fi
