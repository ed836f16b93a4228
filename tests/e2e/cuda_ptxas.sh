#!/usr/bin/env bash
# suite: plain build only: a static check of the CUDA build, the same for both build variants
# The own CUDA kernels (engine/backends/cuda/*.cu) as the build compiled them for sm_80 and
# sm_90: the build passes `-Xptxas -warn-spills,-v` with -Werror=all-warnings, so a kernel that
# spills registers already fails it; this reads the ptxas reports the build keeps next to each
# object (<object>.ptxas.log) and checks, independently of that flag, that no compilation
# reports spill bytes beyond SPILL_BOUND (0), and that every instantiation of the fused
# attention kernels, forward and backward (bf16/fp16 wmma and fp32, head_dim 64 and 128), was
# compiled for both architectures (docs/cuda-kernels.md, "Kernels and attention"). Skips when the cuda backend was not
# built (no nvcc).
set -u
SPILL_BOUND=0
build="${PDBX_BUILD:?PDBX_BUILD not set}"
logs=("$build"/engine/backends/cuda/*.o.ptxas.log)
if [ ! -f "$build/lib/libpdbx_cuda.so" ] || [ ! -f "${logs[0]}" ]; then
    echo "SKIP: the cuda backend was not built in $build (nvcc not found, or scons --no-cuda)"
    exit 77
fi
fail=0
for log in "${logs[@]}"; do
    name=$(basename "$log" .o.ptxas.log)
    # ptxas pairs "Compiling entry function 'X' for 'sm_NN'" with a later spill line
    awk -v bound="$SPILL_BOUND" -v file="$name.cu" '
        /Compiling entry function/ { fn = $0 }
        /bytes spill stores/ {
            st = $0; sub(/ bytes spill stores.*/, "", st); sub(/.*, /, "", st)
            ld = $0; sub(/ bytes spill loads.*/, "", ld); sub(/.*stores, /, "", ld)
            n++
            if (st + 0 > bound || ld + 0 > bound) { print "FAIL: " file ": " fn ": " $0; bad = 1 }
        }
        END { if (n == 0) { print "FAIL: " file ": no kernel compilation reported"; bad = 1 }
              printf "%s: %d kernel compilations, spills within %d bytes\n", file, n, bound; exit bad }
    ' "$log" || fail=1
done
# every instantiation of the fused forward (cuda_flash.cu) and backward (cuda_flash_bwd.cu):
# bf16, fp16, fp32 x head_dim 64, 128, for sm_80 and sm_90
for kernel in flash_fwd_:cuda_flash flash_bwd_kernel:cuda_flash_bwd; do
    log="$build/engine/backends/cuda/${kernel#*:}.o.ptxas.log"
    n=$(grep -c "Compiling entry function '.*${kernel%%:*}.*' for 'sm_[89]0'" "$log" 2>/dev/null)
    if [ "${n:-0}" -ne 12 ]; then
        echo "FAIL: ${n:-0} compilations of ${kernel%%:*} in ${kernel#*:}.cu (expected 6 instantiations x 2 SMs)"
        fail=1
    fi
done
[ $fail -eq 0 ] && echo "ok: no spills beyond $SPILL_BOUND bytes in engine/backends/cuda/*.cu for sm_80 and sm_90"
exit $fail
