#!/usr/bin/env bash
# The machine's own run-to-run drift, without pdbx: PyTorch (Debian's python3-torch, CPU) times
# the quick preset's GEMM shapes (TinyLlama, seq_len 128, MBS 1..8, TP 1 and 2: attn_q/o,
# mlp_gate/down, lm_head) in N separate processes, each to a 1% CI of the mean (Student t, as
# pdbx's adaptive rule), and prints per shape the spread of the processes' means and the worst
# pair's difference. repeat_agreement.sh's goal (a repeat of the quick sweep within 2% per GEMM
# cell) cannot hold where this spread is above 2%: the floor is the machine's.
# Usage: bench/machine_drift.sh [processes (default 2)] [threads per process (default 1)]
set -u
PY=/usr/bin/python3
n=${1:-2}
threads=${2:-1}
"$PY" -c 'import torch' 2>/dev/null || { echo "needs python3-torch for $PY"; exit 1; }
TMP=$(mktemp -d /tmp/pdbx-drift.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/one.py" <<'PYEOF'
import json, math, sys, time
import torch
torch.set_num_threads(int(sys.argv[1]))
torch.manual_seed(0)
h, inter, heads, d, vocab, seq = 2048, 5632, 32, 64, 32000, 128
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]
shapes = []
for tp in (1, 2):
    for mbs in (1, 2, 4, 8):
        t = mbs * seq
        shapes += [(f"attn_q tp{tp} mbs{mbs}", t, h, heads * d // tp),
                   (f"attn_o tp{tp} mbs{mbs}", t, heads * d // tp, h),
                   (f"mlp_gate tp{tp} mbs{mbs}", t, h, inter // tp),
                   (f"mlp_down tp{tp} mbs{mbs}", t, inter // tp, h)]
    shapes.append((f"lm_head tp{tp} mbs1", seq, h, vocab // tp))
out = {}
for name, m, k, nn in shapes:
    a, w = torch.randn(m, k), torch.randn(nn, k)
    torch.nn.functional.linear(a, w)          # warm-up
    xs, t0 = [], time.monotonic()
    while True:
        s = time.perf_counter()
        torch.nn.functional.linear(a, w)
        xs.append((time.perf_counter() - s) * 1e3)
        if len(xs) >= 5:
            mean = sum(xs) / len(xs)
            sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
            t = T975[min(len(xs) - 2, 9)] if len(xs) <= 11 else 1.96
            if t * sd / math.sqrt(len(xs)) <= 0.01 * mean or len(xs) >= 1000 or time.monotonic() - t0 > 1:
                break
    out[name] = sum(xs) / len(xs)
print(json.dumps(out))
PYEOF
for i in $(seq "$n"); do
    OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MKL_NUM_THREADS=$threads \
        "$PY" "$TMP/one.py" "$threads" > "$TMP/run$i.json" || exit 1
done
"$PY" - "$TMP" "$n" <<'PYEOF'
import json, sys
tmp, n = sys.argv[1], int(sys.argv[2])
runs = [json.load(open(f"{tmp}/run{i}.json")) for i in range(1, n + 1)]
worst = []
for name in runs[0]:
    v = [r[name] for r in runs]
    d = (max(v) - min(v)) / min(v)
    worst.append((d, name, v))
worst.sort(reverse=True)
for d, name, v in worst[:8]:
    print(f"{name:22s} {' '.join(f'{x:8.3f}' for x in v)} ms  spread {100 * d:5.2f}%")
ds = sorted(d for d, _, _ in worst)
print(f"PyTorch, {n} processes, {len(ds)} GEMM shapes: median spread {100 * ds[len(ds) // 2]:.2f}%, "
      f"worst {100 * ds[-1]:.2f}% ({worst[0][1]}); within 2%: {sum(d <= 0.02 for d in ds)}/{len(ds)}")
PYEOF
