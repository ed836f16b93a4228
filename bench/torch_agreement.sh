#!/usr/bin/env bash
# Per-op agreement with PyTorch on this CPU (Debian's python3-torch): the engine measures a
# TP 1 point (1 rank, all cores as BLAS threads, fp32), then PyTorch times the same shapes with
# the same dtype and threads (torch.set_num_threads). For the GEMMs: median |ours - torch| /
# torch over the GEMM ops; goal <= 10%. Non-GEMM ops are printed for information (PyTorch
# runs them as several fused/unfused kernels, the engine as one C loop).
source "$(dirname "$0")/common.inc"
"$PY" -c 'import torch' 2>/dev/null || { echo "python3-torch missing: apt-get install python3-torch"; exit 1; }
mbs=${1:-4}; seq=${2:-256}
spec_json "$TMP/s.json" "mbs=\"$mbs:$mbs\"" "seq_len=$seq" 'warmup=3' 'steps=9' 'layers=2'
"${MPIRUN[@]}" -np 1 "$ENGINE" --spec "$TMP/s.json" --store "$TMP/st" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; exit 1; }
ev_py "$(ls "$TMP"/st/runs/*.pdbx)" "
import json
S = [e for e in E if e['type'] == 'run_start'][0]
ops = {e['op']: e['stats']['median'] for e in E if e['type'] == 'op'}
json.dump({'env': S['env'], 'model': S['model'], 'mbs': $mbs, 'seq': $seq, 'ops': ops}, open('$TMP/ours.json', 'w'))
"
"$PY" - "$TMP/ours.json" <<'PYEOF'
import json, statistics, sys, time
import torch
o = json.load(open(sys.argv[1]))
m, ours = o["model"], o["ops"]
thr = o["env"]["blas_threads"]
torch.set_num_threads(thr)
T, S, B = o["mbs"] * o["seq"], o["seq"], o["mbs"]
h, I, V = m["hidden"], m["intermediate"], m["vocab"]
a, k, d = m["heads"], m["kv_heads"], m["head_dim"]
def timeit(fn, reps=9, warm=3):
    for _ in range(warm): fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); fn(); ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)
g = torch.Generator().manual_seed(0)
def U(*shape, s=1.0): return (torch.rand(*shape, generator=g) * 2 - 1) * s
x = U(T, h)
gemms = {"attn_q": (h, a * d), "attn_k": (h, k * d), "attn_v": (h, k * d), "attn_o": (a * d, h),
         "mlp_gate": (h, I), "mlp_up": (h, I), "mlp_down": (I, h), "lm_head": (h, V)}
rows, rel = [], []
with torch.no_grad():
    for op, (kk, n) in gemms.items():
        A, W, C = U(T, kk), U(kk, n, s=kk ** -0.5), torch.empty(T, n)
        t = timeit(lambda: torch.matmul(A, W, out=C))
        r = abs(ours[op] - t) / t
        rel.append(r)
        rows.append((op, ours[op], t, r))
    w = torch.ones(h)
    def rms(): return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w
    gt, up = U(T, I), U(T, I)
    q, kt, v = U(B, a, S, d), U(B, a, S, d), U(B, a, S, d)
    mask = torch.full((S, S), float("-inf")).triu(1)
    def attn(): return torch.softmax(q @ kt.transpose(-1, -2) / d ** 0.5 + mask, -1) @ v
    emb = U(V, h); ids = torch.randint(0, V, (T,), generator=g)
    info = [("input_norm", rms), ("mlp_act_fn", lambda: torch.nn.functional.silu(gt) * up),
            ("attn_core", attn), ("embed", lambda: emb[ids])]
    print("torch %s, %d threads, T=%d (MBS %d x seq %d), fp32, model %s" % (torch.__version__, thr, T, B, S, m["name"]))
    print("%-11s %11s %11s %9s" % ("op", "pdbx ms", "torch ms", "|d|/torch"))
    for op, a_, t, r in rows:
        print("%-11s %11.3f %11.3f %8.1f%%" % (op, a_, t, 100 * r))
    print("median |ours - torch| / torch over GEMM ops: %.1f%% (goal <= 10%%)" % (100 * statistics.median(rel)))
    print("non-GEMM ops (information):")
    for op, fn in info:
        t = timeit(fn)
        print("%-11s %11.3f %11.3f %8.1f%%" % (op, ours[op], t, 100 * abs(ours[op] - t) / t))
PYEOF
