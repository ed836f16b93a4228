#!/usr/bin/env bash
# libpdbx_cuda.so as built: exactly one exported symbol (pdbx_backend_entry_v1), an rpath that
# starts with $ORIGIN, and every library it needs resolvable without a GPU driver (the runtime
# loads libcuda.so.1 itself, at probe time). Skips when the .so was not built (no nvcc).
set -u
so="${PDBX_BUILD:?PDBX_BUILD not set}/lib/libpdbx_cuda.so"
if [ ! -f "$so" ]; then
    echo "SKIP: $so was not built (nvcc not found or scons --no-cuda)"
    exit 77
fi
exported=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVWiu]$/ {print $3}' | sort)
if [ "$exported" != "pdbx_backend_entry_v1" ]; then
    echo "FAIL: $so exports more or other than pdbx_backend_entry_v1:"
    echo "$exported"
    exit 1
fi
runpath=$(readelf -d "$so" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
case "$runpath" in
    '$ORIGIN'*) ;;
    *) echo "FAIL: RUNPATH of $so is '$runpath' (expected \$ORIGIN first)"; exit 1 ;;
esac
missing=$(ldd "$so" | grep 'not found')
if [ -n "$missing" ]; then
    echo "FAIL: unresolved libraries of $so:"
    echo "$missing"
    exit 1
fi
echo "ok: $so exports only pdbx_backend_entry_v1; RUNPATH $runpath; all NEEDED libraries resolve"
