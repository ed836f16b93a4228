#!/usr/bin/env bash
# The dense families' cpu kernels (engine/backends/cpu/cpu_kernels_dense.h) against PyTorch's CPU
# kernels on ONE core, same shapes, fp32 (issue 24 item 4):
#   layernorm_fwd  pdbx_k_layernorm (with bias, mean and rstd out)   torch.native_layer_norm
#   layernorm_bwd  pdbx_k_layernorm_bwd (dx, dw, db)                 aten native_layer_norm_backward
#   gelu_*_fwd     pdbx_k_gelu, erf and tanh forms                   F.gelu(x, approximate=...)
#   gelu_*_bwd     pdbx_k_gelu_bwd                                   aten gelu_backward
# LayerNorm on [LN_ROWS, LN_COLS] (default 2048 x 2048), GELU on [GELU_ROWS, GELU_COLS] (default
# 2048 x 8192). Ours: bench/dense_kernels.c, built here against the build's cpu library, every
# kernel on the caller's thread (NULL pool), the clone the CPU picks; where the CPU has AVX2 and
# FMA also a build of the kernels' sources with the x86-64-v3 clone only, the instruction set
# Debian's PyTorch uses ("CPU capability usage: AVX2" in torch.__config__.show()), so a ratio
# that comes from AVX-512 alone is told apart. PyTorch (Debian's python3-torch, for
# /usr/bin/python3) with torch.set_num_threads(1), each op the best of its allocating form and
# its out= form (aten's .out / .grad_input overloads, into preallocated tensors, as ours write
# into their buffers), glibc keeping freed memory (MALLOC_MMAP_THRESHOLD_ and
# MALLOC_TRIM_THRESHOLD_, as kernels_torch.sh: a fresh 64 MiB output would otherwise fault its
# pages on every call). Every timing is the median of REPS (default 15) calls after 3 untimed,
# on the same buffers; ours and PyTorch's alternate ROUNDS times (default 3) and each keeps its
# best median, so load from other processes hits both alike. Prints ms and ours/torch per
# kernel; without PyTorch, ours only. Information, no goal: exits 0 unless something fails.
#   bench/dense_kernels.sh [LN_ROWS LN_COLS GELU_ROWS GELU_COLS]
source "$(dirname "$0")/common.inc"
ln_rows=${1:-2048}; ln_cols=${2:-2048}; g_rows=${3:-2048}; g_cols=${4:-8192}
reps=${REPS:-15}; rounds=${ROUNDS:-3}
lib=$BUILD/engine/backends/cpu/libpdbx_engine_backends_cpu.a
[ -f "$lib" ] || { echo "build first: $lib missing" >&2; exit 1; }
cflags=(-std=c11 -O2 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I"$ROOT")
gcc "${cflags[@]}" -o "$TMP/dense" "$ROOT/bench/dense_kernels.c" "$lib" -lm -lpthread || exit 1
builds=(dense)
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
    gcc "${cflags[@]}" '-DPDBX_K_CLONES=target("arch=x86-64-v3")' -o "$TMP/dense_v3" \
        "$ROOT/bench/dense_kernels.c" "$ROOT"/engine/backends/cpu/cpu_kernels_dense*.c "$lib" \
        -lm -lpthread || exit 1
    builds+=(dense_v3)
fi
have_torch=1
"$PY" -c 'import torch' 2>/dev/null || have_torch=0
uptime
for r in $(seq "$rounds"); do
    for b in "${builds[@]}"; do
        "$TMP/$b" "$ln_rows" "$ln_cols" "$g_rows" "$g_cols" "$reps" > "$TMP/$b.$r" || exit 1
    done
    [ $have_torch = 1 ] || continue
    OMP_NUM_THREADS=1 MALLOC_MMAP_THRESHOLD_=$((1 << 30)) MALLOC_TRIM_THRESHOLD_=$((1 << 32)) \
    "$PY" - "$ln_rows" "$ln_cols" "$g_rows" "$g_cols" "$reps" > "$TMP/torch.$r" <<'PYEOF' || exit 1
import statistics, sys, time
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
lr, lc, gr, gc, reps = (int(a) for a in sys.argv[1:6])
aten = torch.ops.aten
def timed(fn):
    """median and min ms of reps calls of fn() after 3 untimed ones"""
    for _ in range(3):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); fn(); ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), min(ts)
def best(*fns):
    return min(timed(f) for f in fns)
g = torch.Generator().manual_seed(0)
def U(*shape, s=1.0): return (torch.rand(*shape, generator=g) * 2 - 1) * s
with torch.no_grad():
    x, w, b, dy = U(lr, lc), U(lc), U(lc), U(lr, lc)
    y, mean, rstd = torch.native_layer_norm(x, [lc], w, b, 1e-5)
    o0, o1, o2 = torch.empty_like(y), torch.empty_like(mean), torch.empty_like(rstd)
    res = {"layernorm_fwd": best(
        lambda: torch.native_layer_norm(x, [lc], w, b, 1e-5),
        lambda: aten.native_layer_norm.out(x, [lc], w, b, 1e-5, out0=o0, out1=o1, out2=o2))}
    res["layernorm_bwd"] = best(
        lambda: aten.native_layer_norm_backward(dy, x, [lc], mean, rstd, w, b, [True, True, True]))
    del x, dy, y, o0
    gx, gdy = U(gr, gc, s=4.0), U(gr, gc)
    out = torch.empty_like(gx)
    for kind, approx in (("erf", "none"), ("tanh", "tanh")):
        res["gelu_%s_fwd" % kind] = best(
            lambda: F.gelu(gx, approximate=approx),
            lambda: torch._C._nn.gelu(gx, approximate=approx, out=out))
        res["gelu_%s_bwd" % kind] = best(
            lambda: aten.gelu_backward(gdy, gx, approximate=approx),
            lambda: aten.gelu_backward.grad_input(gdy, gx, approximate=approx, grad_input=out))
for k, (med, mn) in res.items():
    print(k, "%.4f %.4f" % (med, mn))
PYEOF
done
"$PY" - "$TMP" "$rounds" "$ln_rows" "$ln_cols" "$g_rows" "$g_cols" "$have_torch" "${builds[@]}" \
    <<'PYEOF'
import os, sys
d, R = sys.argv[1], int(sys.argv[2])
lr, lc, gr, gc, have_torch = (int(a) for a in sys.argv[3:8])
builds = sys.argv[8:]
def best(name):
    """per kernel: the lowest median over the rounds (and the lowest minimum)"""
    out = {}
    for r in range(1, R + 1):
        for line in open(os.path.join(d, "%s.%d" % (name, r))):
            k, med, mn = line.split()
            m0, n0 = out.get(k, (1e30, 1e30))
            out[k] = (min(m0, float(med)), min(n0, float(mn)))
    return out
ours = best("dense")
v3 = best("dense_v3") if "dense_v3" in builds else None
tor = best("torch") if have_torch else None
head = "one core, fp32, best median of %d rounds; LayerNorm [%d, %d], GELU [%d, %d]" % (
    R, lr, lc, gr, gc)
if have_torch:
    import torch
    cap = [l for l in torch.__config__.show().splitlines() if "CPU capability" in l]
    head += "; torch %s (%s)" % (torch.__version__, cap[0].strip(" -") if cap else "?")
print(head)
cols = (["kernel", "pdbx ms"] + (["pdbx v3 ms"] if v3 else [])
        + (["torch ms", "pdbx/torch"] if tor else []) + (["v3/torch"] if v3 and tor else []))
print("%-15s" % cols[0] + "".join("%12s" % c for c in cols[1:]))
for k in ours:
    row = ([ours[k][0]] + ([v3[k][0]] if v3 else [])
           + ([tor[k][0], ours[k][0] / tor[k][0]] if tor else [])
           + ([v3[k][0] / tor[k][0]] if v3 and tor else []))
    print("%-15s" % k + "".join("%12.3f" % v for v in row))
if not have_torch:
    print("PyTorch is not importable by /usr/bin/python3 (apt-get install python3-torch):"
          " ours only")
PYEOF
