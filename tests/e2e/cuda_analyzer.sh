#!/usr/bin/env bash
# suite: plain build only: a static check of the sources, the same for both build variants
# GCC's static analyzer (-fanalyzer) over the host C of the cuda and nccl backends
# (engine/backends/cuda/*.c, engine/comm/nccl/*.c): leaks, NULL dereferences, use of
# uninitialised values and double frees on their error paths, which no test here can execute
# (no GPU). Any analyzer or compiler warning fails the test, with the diagnostic.
#
# Skips (77) without the CUDA headers (the backend is not built then) or without a gcc that
# has -fanalyzer (GCC >= 10).
set -u
src="${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}"
cuda="${CUDA_HOME:-/usr/local/cuda}"
cc="${CC:-gcc}"
[ -f "$cuda/include/cuda_runtime_api.h" ] || { echo "SKIP: no CUDA headers at $cuda/include"; exit 77; }
echo 'int main(void){return 0;}' | "$cc" -x c -fanalyzer -c -o /dev/null - 2>/dev/null ||
    { echo "SKIP: $cc has no -fanalyzer (GCC >= 10 needed)"; exit 77; }
mpi=$(mpicc --showme:compile 2>/dev/null)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
bad=0 n=0
for f in "$src"/engine/backends/cuda/*.c "$src"/engine/comm/nccl/*.c; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    # shellcheck disable=SC2086
    if ! "$cc" -std=c11 -fanalyzer -Wall -Wextra -Werror -O1 -D_POSIX_C_SOURCE=200809L \
        -D_DEFAULT_SOURCE -I"$src" -I"$cuda/include" $mpi -c "$f" -o /dev/null 2>"$tmp/out"; then
        echo "FAIL: ${f#"$src"/}"; sed 's/^/    /' "$tmp/out" | head -40
        bad=$((bad + 1))
    fi
done
[ "$n" -gt 0 ] || { echo "FAIL: no cuda/nccl sources found under $src"; exit 1; }
[ "$bad" -eq 0 ] || { echo "FAIL: $bad of $n files have analyzer findings"; exit 1; }
echo "PASS: $n files, -fanalyzer clean"
