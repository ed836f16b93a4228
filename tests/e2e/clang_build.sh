#!/usr/bin/env bash
# suite: plain build only: a static check of the sources with another compiler, the same for both build variants
# suite: long: starts first in the pool (a real sweep or a long session), so the pool does not end on it
# Every C file scons compiles, through clang with the flags scons gives it (-std=c11 -Wall
# -Wextra -Werror, the POSIX defines, -I., MPI's include flags where scons adds them, the CUDA
# include dir for the cuda and nccl backends and their tests, PDBX_VERSION, PDBX_SOURCE_DIR),
# -fsyntax-only: clang's warnings without its code generation. The product is built with gcc,
# and `scons fuzz` (docs/fuzz.md) with clang: a change only gcc accepts fails here, not at the
# start of the next fuzz campaign (a -Wparentheses in tui/screens/ui_advise.c once stopped it).
#
# The files: git's (tracked and untracked, not ignored: what scons's Glob sees) *.c, except
# bench/ (its programs are compiled by its scripts, without -Werror); the cuda and nccl ones
# only where scons builds them (nvcc under CUDA_HOME; nccl.h beside it). Two clang processes at
# a time. The check proves first that it can fail: clang must refuse a snippet that gcc accepts.
# Skips (77) without clang.
set -u
cd "${PDBX_SOURCE_DIR:-$(dirname "$0")/../..}"
root=$(pwd)
clang=${CLANG:-clang}
command -v "$clang" >/dev/null ||
    { echo "SKIP: $clang not found (install clang; .ci/setup test does)"; exit 77; }
cuda=${CUDA_HOME:-/usr/local/cuda}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# PDBX_VERSION as SConstruct defines it (the one place it is written)
version=$(grep -o "'PDBX_VERSION', '[^']*'" SConstruct | cut -d"'" -f4 | tr -d '\\"')
[ -n "$version" ] || { echo "FAIL: PDBX_VERSION not found in SConstruct"; exit 1; }
mpi=$(mpicc --showme:compile 2>/dev/null) || { echo "FAIL: mpicc --showme:compile failed"; exit 1; }
have_cuda=0 have_nccl=0
[ -x "$cuda/bin/nvcc" ] && have_cuda=1
[ $have_cuda = 1 ] && [ -f "$cuda/include/nccl.h" ] && have_nccl=1

export CLANG_BIN=$clang ERRDIR=$tmp MPI_FLAGS=$mpi CUDA_INC=$cuda/include HAVE_NCCL=$have_nccl
export BASE_FLAGS="-fsyntax-only -std=c11 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I."
export VERSION_DEF="-DPDBX_VERSION=\"$version\"" SOURCE_DEF="-DPDBX_SOURCE_DIR=\"$root\""

# One file with the flags its SConscript adds; its diagnostics to ERRDIR on failure.
check_one() {
    local f=$1 extra=()
    case "$f" in
    engine/backends/cuda/* | engine/comm/nccl/* | tests/cuda/*)
        extra=(-I"$CUDA_INC")
        [ "$HAVE_NCCL" = 1 ] || extra+=(-DPDBX_CUDA_NO_NCCL) ;;
    engine/comm/mpi/*)                  # MPI_COMPILE: engine/comm/mpi/ and engine/ itself
        read -ra extra <<<"$MPI_FLAGS" ;;
    engine/*/*) ;;
    engine/*)
        read -ra extra <<<"$MPI_FLAGS" ;;
    tests/unit/* | tests/fuzz/*)        # tests/SConscript's env
        read -ra extra <<<"$MPI_FLAGS"
        extra+=("$SOURCE_DEF")
        # the replay driver is compiled once per target with its name
        [ "$f" = tests/fuzz/fuzz_replay_main.c ] && extra+=(-DFUZZ_TARGET='"spec"') ;;
    store/version.c)
        extra=(-DPDBX_GIT_REV='"clang-check"') ;;
    esac
    # shellcheck disable=SC2086
    "$CLANG_BIN" $BASE_FLAGS "$VERSION_DEF" "${extra[@]}" "$f" 2>"$ERRDIR/$(echo "$f" | tr / _).err" ||
        { echo "$f" >>"$ERRDIR/failed"; return 1; }
    rm -f "$ERRDIR/$(echo "$f" | tr / _).err"
}
export -f check_one

# It can fail: a sum as the condition of ?: unparenthesised (what ui_advise.c had) is an error
# under these flags for clang, and gcc's -Wall -Wextra -Werror accepts it.
printf 'int f(unsigned n, int x);\nint f(unsigned n, int x) { return n + (x > 0) ? 1 : 2; }\n' >"$tmp/probe.c"
# shellcheck disable=SC2086
if "$clang" $BASE_FLAGS "$tmp/probe.c" 2>/dev/null; then
    echo "FAIL: $clang accepted the probe's unparenthesised ?: under \"$BASE_FLAGS\": the check could not fail"
    exit 1
fi

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard -- '*.c' >"$tmp/all"
else
    find . -name '*.c' -not -path './build*' | sed 's|^\./||' >"$tmp/all"
fi
grep -v '^bench/' "$tmp/all" | while read -r f; do
    case "$f" in
    engine/backends/cuda/* | tests/cuda/test_cuda_kernels.c | tests/cuda/test_cuda_checks.c)
        [ $have_cuda = 1 ] || continue ;;
    engine/comm/nccl/* | tests/cuda/test_nccl_timing.c | tests/cuda/fake_cuda.c)
        [ $have_nccl = 1 ] || continue ;;
    esac
    [ -f "$f" ] && echo "$f"
done | sort -u >"$tmp/files"
n=$(wc -l <"$tmp/files")
[ "$n" -gt 0 ] || { echo "FAIL: no C files found under $root"; exit 1; }

t0=$(date +%s)
tr '\n' '\0' <"$tmp/files" | xargs -0 -r -P 2 -n 1 bash -c 'check_one "$1"' _
secs=$(( $(date +%s) - t0 ))
if [ -s "$tmp/failed" ]; then
    sort "$tmp/failed" | while read -r f; do
        echo "FAIL: $f"
        sed 's/^/    /' "$tmp/$(echo "$f" | tr / _).err" | head -30
    done
    echo "FAIL: $(wc -l <"$tmp/failed") of $n files have clang warnings under -Werror ($clang $("$clang" -dumpversion))"
    exit 1
fi
cuda_note="cuda and nccl included"
[ $have_cuda = 1 ] || cuda_note="no nvcc under $cuda: cuda and nccl files not built, not checked"
[ $have_cuda = 1 ] && [ $have_nccl = 0 ] && cuda_note="no nccl.h: nccl files not built, not checked"
echo "PASS: $n files clean under $clang $("$clang" -dumpversion) -Werror in ${secs}s ($cuda_note)"
