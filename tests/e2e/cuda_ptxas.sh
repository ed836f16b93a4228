#!/usr/bin/env bash
# suite: plain build only: a static check of the CUDA sources (ptxas), the same for both build variants
# The own CUDA kernels (engine/backends/cuda/*.cu) compiled by nvcc for sm_80 and sm_90 with
# `-Xptxas -v`: no kernel spills registers (bound: SPILL_BOUND bytes of spill stores and loads,
# 0) and every instantiation of the fused attention kernel (bf16/fp16 wmma and fp32, head_dim
# 64 and 128) is compiled for both architectures (docs/cuda.md, "Kernels and attention").
# Skips when nvcc is not found.
set -u
SPILL_BOUND=0
root="${PDBX_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
nvcc="${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
[ -x "$nvcc" ] || nvcc=$(command -v nvcc || true)
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
    echo "SKIP: nvcc not found (CUDA_HOME, /usr/local/cuda, PATH)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for cu in "$root"/engine/backends/cuda/*.cu; do
    name=$(basename "$cu" .cu)
    if ! "$nvcc" -std=c++17 -O3 -I"$root" -gencode arch=compute_80,code=sm_80 \
            -gencode arch=compute_90,code=sm_90 -Xptxas -v -c "$cu" -o "$tmp/$name.o" \
            >"$tmp/$name.log" 2>&1; then
        echo "FAIL: nvcc $name.cu:"; tail -20 "$tmp/$name.log"; exit 1
    fi
    # ptxas pairs "Compiling entry function 'X' for 'sm_NN'" with a later spill line
    awk -v bound="$SPILL_BOUND" -v file="$name.cu" '
        /Compiling entry function/ { fn = $0 }
        /bytes spill stores/ {
            st = $0; sub(/ bytes spill stores.*/, "", st); sub(/.*, /, "", st)
            ld = $0; sub(/ bytes spill loads.*/, "", ld); sub(/.*stores, /, "", ld)
            n++
            if (st + 0 > bound || ld + 0 > bound) { print "FAIL: " file ": " fn ": " $0; bad = 1 }
        }
        END { printf "%s: %d kernel compilations, spills within %d bytes\n", file, n, bound; exit bad }
    ' "$tmp/$name.log" || fail=1
done
flash=$(grep -c "Compiling entry function '.*flash_fwd_.*' for 'sm_[89]0'" "$tmp/cuda_flash.log")
if [ "$flash" -ne 12 ]; then
    echo "FAIL: $flash compilations of the fused attention kernels (expected 6 instantiations x 2 SMs)"
    fail=1
fi
[ $fail -eq 0 ] && echo "ok: no spills beyond $SPILL_BOUND bytes in engine/backends/cuda/*.cu for sm_80 and sm_90"
exit $fail
