#!/usr/bin/env bash
# The cpu attention core's variants (engine/backends/cpu/cpu_kernels_attn.h) on THREADS cores
# (default 1), fp32, one sequence of SEQ tokens, HEADS query heads over KV kv heads of HEAD_DIM:
#   causal        the plain kernels (pdbx_k_attention_causal, _bwd: opts {0, 0})
#   softcap       full causal, scores capped at CAP (Gemma-2's 50)
#   window        the sliding window of WINDOW tokens (its key blocks outside the band skipped)
#   window+cap    both (Gemma-2's local layers)
# Ours: bench/attn_opts.c built here from the kernels' sources (-O2, as scons builds them), the
# clone the CPU picks. With BASE=<commit> also the kernels of that commit (git archive of its
# engine/backends/cpu), plain causal only: old vs new milliseconds and whether the outputs and
# the three gradients have the same bits (the options must cost the plain case nothing).
# PyTorch (Debian's python3-torch for /usr/bin/python3; 1.13 has no scaled_dot_product_attention
# to take a window) with torch.set_num_threads(THREADS), the attention written out as eager
# models do it: S = Q K^T scale, cap tanh(S / cap), masked_fill of the causal or banded mask,
# softmax, P V, k and v expanded to the query heads inside the graph; its backward is autograd's.
# The whole s x s score matrix, banded or not (what HF's eager attention does; no fused banded
# kernel there), so its window rows cost what its causal rows do.
# Each timing is the minimum over ROUNDS (default 2) of the median of REPS (default 3) calls
# after one untimed; ours, old and PyTorch alternate per round, so load from other processes
# hits them alike. CLOCK=cpu times the process's CPU time instead of the wall clock (meant for
# THREADS=1 on a loaded machine: a time slice lost to another process is not counted). Information, no goal: exits 0 unless something fails (or, with BASE, the
# bits differ).
#   bench/attn_opts.sh [SEQ HEADS KV HEAD_DIM WINDOW CAP]   (default 2048 32 8 64 256 50)
source "$(dirname "$0")/common.inc"
seq=${1:-2048}; heads=${2:-32}; kv=${3:-8}; hd=${4:-64}; win=${5:-256}; cap=${6:-50}
reps=${REPS:-3}; rounds=${ROUNDS:-2}; threads=${THREADS:-1}; clock=${CLOCK:-wall}
export ATTN_OPTS_CLOCK=$clock
cflags=(-std=c11 -O2 -g -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE)
cpu=engine/backends/cpu
gcc "${cflags[@]}" -I"$ROOT" -o "$TMP/new" "$ROOT/bench/attn_opts.c" \
    "$ROOT/$cpu"/cpu_kernels{,_bwd,_attn,_attn_bwd}.c "$ROOT/$cpu/cpu_threads.c" -lm -lpthread || exit 1
builds=(new)
if [ -n "${BASE:-}" ]; then
    mkdir -p "$TMP/base"
    git -C "$ROOT" archive "$BASE" "$cpu" | tar -x -C "$TMP/base" || exit 1
    # the attention files of a commit after the split into cpu_kernels_attn*.c, when present
    srcs=("$TMP/base/$cpu"/cpu_kernels.c "$TMP/base/$cpu"/cpu_kernels_bwd.c "$TMP/base/$cpu"/cpu_threads.c)
    for f in "$TMP/base/$cpu"/cpu_kernels_attn.c "$TMP/base/$cpu"/cpu_kernels_attn_bwd.c; do
        [ -f "$f" ] && srcs+=("$f")
    done
    gcc "${cflags[@]}" -DATTN_OPTS_OLD -I"$TMP/base" -o "$TMP/old" "$ROOT/bench/attn_opts.c" \
        "${srcs[@]}" -lm -lpthread || exit 1
    builds+=(old)
fi
have_torch=1
"$PY" -c 'import torch' 2>/dev/null || have_torch=0
cases=("causal 0 0" "softcap 0 $cap" "window $win 0" "window+cap $win $cap")
uptime
for r in $(seq "$rounds"); do
    for b in "${builds[@]}"; do
        for c in "${cases[@]}"; do
            set -- $c
            [ "$b" = old ] && [ "$1" != causal ] && continue
            out=-
            [ "$1" = causal ] && out="$TMP/$b.bin"
            "$TMP/$b" "$seq" "$heads" "$kv" "$hd" "$2" "$3" "$threads" "$reps" "$out" \
                | sed "s/^/$1 /" >> "$TMP/$b.$r" || exit 1
        done
    done
    [ $have_torch = 1 ] || continue
    OMP_NUM_THREADS=$threads MALLOC_MMAP_THRESHOLD_=$((1 << 30)) MALLOC_TRIM_THRESHOLD_=$((1 << 32)) \
    "$PY" - "$seq" "$heads" "$kv" "$hd" "$win" "$cap" "$threads" "$reps" > "$TMP/torch.$r" \
        <<'PYEOF' || exit 1
import os, statistics, sys, time
import torch
S, H, KV, d, W = (int(a) for a in sys.argv[1:6])
now = time.process_time if os.environ.get("ATTN_OPTS_CLOCK") == "cpu" else time.perf_counter
cap, threads, reps = float(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
torch.set_num_threads(threads)
g = torch.Generator().manual_seed(0)
def U(*shape, s=1.0): return (torch.rand(*shape, generator=g) * 2 - 1) * s
q, k, v, dO = U(1, H, S, d, s=3.0), U(1, KV, S, d), U(1, KV, S, d), U(1, H, S, d)
i = torch.arange(S)
causal = i[None, :] <= i[:, None]
band = causal & (i[None, :] > i[:, None] - W)
def attn(q, k, v, mask, c):
    kk, vv = (t.repeat_interleave(H // KV, dim=1) for t in (k, v))
    s = torch.matmul(q, kk.transpose(-1, -2)) * d ** -0.5
    if c > 0:
        s = torch.tanh(s / c) * c
    p = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
    return torch.matmul(p, vv)
for name, mask, c in (("causal", causal, 0.0), ("softcap", causal, cap), ("window", band, 0.0),
                      ("window+cap", band, cap)):
    fw, bw = [], []
    for n in range(reps + 1):
        qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
        t0 = now()
        o = attn(qq, kk, vv, mask, c)
        t1 = now()
        o.backward(dO)
        t2 = now()
        if n:
            fw.append((t1 - t0) * 1e3), bw.append((t2 - t1) * 1e3)
        del o, qq, kk, vv
    print(name, "fwd %.3f %.3f" % (statistics.median(fw), min(fw)))
    print(name, "bwd %.3f %.3f" % (statistics.median(bw), min(bw)))
PYEOF
done
status=0
if [ -n "${BASE:-}" ]; then
    if cmp -s "$TMP/old.bin" "$TMP/new.bin"; then
        bits="the same bits (output, dq, dk, dv)"
    else
        bits="DIFFERENT BITS"; status=1
    fi
fi
"$PY" - "$TMP" "$rounds" "$have_torch" "${bits:-}" "$seq $heads $kv $hd $win $cap $threads" \
    "${builds[@]}" <<'PYEOF'
import os, sys
d, R, have_torch, bits = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
S, H, KV, hd, W, cap, thr = sys.argv[5].split()
builds = sys.argv[6:]
def best(name):
    """(case, pass) -> the lowest median over the rounds"""
    out = {}
    for r in range(1, R + 1):
        for line in open(os.path.join(d, "%s.%d" % (name, r))):
            case, ps, med, mn = line.split()
            out[case, ps] = min(out.get((case, ps), 1e30), float(med))
    return out
new = best("new")
old = best("old") if "old" in builds else None
tor = best("torch") if have_torch else None
print("seq %s, %s heads over %s kv heads of %s, window %s, cap %s, %s thread(s), fp32; ms (%s"
      " clock), best median of %d rounds" % (S, H, KV, hd, W, cap, thr,
                                             os.environ.get("ATTN_OPTS_CLOCK"), R))
cols = ["case", "pass", "pdbx ms"] + (["old ms", "new/old"] if old else []) + \
       ["vs causal"] + (["torch ms", "pdbx/torch"] if tor else [])
print("%-11s %-4s" % tuple(cols[:2]) + "".join("%11s" % c for c in cols[2:]))
for case in ("causal", "softcap", "window", "window+cap"):
    for ps in ("fwd", "bwd"):
        t = new[case, ps]
        row = [t]
        if old:
            row += [old[case, ps], t / old[case, ps]] if (case, ps) in old else [float("nan")] * 2
        row.append(t / new["causal", ps])
        if tor:
            row += [tor[case, ps], t / tor[case, ps]]
        print("%-11s %-4s" % (case, ps) + "".join("%11.3f" % v for v in row))
if bits:
    print("plain causal, old vs new: " + bits)
if not have_torch:
    print("PyTorch is not importable by /usr/bin/python3 (apt-get install python3-torch): ours only")
PYEOF
exit $status
