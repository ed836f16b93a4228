#!/usr/bin/env bash
# Per-op agreement with PyTorch on this CPU (Debian's python3-torch): the engine measures a
# TP 1 point (1 rank, all cores as BLAS threads, fp32), then PyTorch times the same shapes with
# the same dtype and threads (torch.set_num_threads). For the GEMMs: median |ours - torch| /
# torch over the GEMM ops; goal <= 10%. Non-GEMM ops are printed for information (PyTorch
# runs them as several fused/unfused kernels, the engine as one C loop).
# This machine may be shared: engine and PyTorch alternate ROUNDS times (default 3) and each
# side keeps its best (lowest) median per op, so load from other processes hits both alike.
source "$(dirname "$0")/common.inc"
"$PY" -c 'import torch' 2>/dev/null || { echo "python3-torch missing: apt-get install python3-torch"; exit 1; }
mbs=${1:-4}; seq=${2:-256}
spec_json "$TMP/s.json" "mbs=\"$mbs:$mbs\"" "seq_len=$seq" 'warmup=3' 'steps=9' 'layers=2'
rounds=${ROUNDS:-3}
for r in $(seq "$rounds"); do
"${MPIRUN[@]}" -np 1 "$ENGINE" --spec "$TMP/s.json" --store "$TMP/st$r" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; exit 1; }
ev_py "$(ls "$TMP"/st$r/runs/*.pdbx)" "
import json
S = [e for e in E if e['type'] == 'run_start'][0]
ops = {e['op']: e['stats']['median'] for e in E if e['type'] == 'op'}
json.dump({'env': S['env'], 'model': S['model'], 'mbs': $mbs, 'seq': $seq, 'ops': ops}, open('$TMP/ours$r.json', 'w'))
"
"$PY" - "$TMP/ours$r.json" "$TMP/torch$r.json" <<'PYEOF'
import json, statistics, sys, time
import torch
o = json.load(open(sys.argv[1]))
m = o["model"]
torch.set_num_threads(o["env"]["blas_threads"])
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
gemms = {"attn_q": (h, a * d), "attn_k": (h, k * d), "attn_v": (h, k * d), "attn_o": (a * d, h),
         "mlp_gate": (h, I), "mlp_up": (h, I), "mlp_down": (I, h), "lm_head": (h, V)}
out = {}
with torch.no_grad():
    for op, (kk, n) in gemms.items():
        A, W, C = U(T, kk), U(kk, n, s=kk ** -0.5), torch.empty(T, n)
        out[op] = timeit(lambda: torch.matmul(A, W, out=C))
        del A, W, C
    x, w = U(T, h), torch.ones(h)
    gt, up = U(T, I), U(T, I)
    q, kt, v = U(B, a, S, d), U(B, a, S, d), U(B, a, S, d)
    mask = torch.full((S, S), float("-inf")).triu(1)
    emb = U(V, h); ids = torch.randint(0, V, (T,), generator=g)
    out["input_norm"] = timeit(lambda: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w)
    out["mlp_act_fn"] = timeit(lambda: torch.nn.functional.silu(gt) * up)
    out["attn_core"] = timeit(lambda: torch.softmax(q @ kt.transpose(-1, -2) / d ** 0.5 + mask, -1) @ v)
    out["embed"] = timeit(lambda: emb[ids])
json.dump(out, open(sys.argv[2], "w"))
PYEOF
done
"$PY" - "$TMP" "$rounds" <<'PYEOF'
import json, statistics, sys
import torch
d, R = sys.argv[1], int(sys.argv[2])
ours = [json.load(open("%s/ours%d.json" % (d, r)))["ops"] for r in range(1, R + 1)]
tor = [json.load(open("%s/torch%d.json" % (d, r))) for r in range(1, R + 1)]
o = json.load(open("%s/ours1.json" % d))
print("torch %s, %d threads, T=%d (MBS %d x seq %d), fp32, %s, best median of %d rounds"
      % (torch.__version__, o["env"]["blas_threads"], o["mbs"] * o["seq"], o["mbs"], o["seq"], o["model"]["name"], R))
print("%-11s %11s %11s %9s" % ("op", "pdbx ms", "torch ms", "|d|/torch"))
rel = []
gem = ["attn_q", "attn_k", "attn_v", "attn_o", "mlp_gate", "mlp_up", "mlp_down", "lm_head"]
for op in gem + ["input_norm", "mlp_act_fn", "attn_core", "embed"]:
    a = min(x[op] for x in ours); t = min(x[op] for x in tor); r = abs(a - t) / t
    if op in gem: rel.append(r)
    if op == "input_norm":
        print("median |ours - torch| / torch over GEMM ops: %.1f%% (goal <= 10%%)" % (100 * statistics.median(rel)))
        print("non-GEMM ops (information):")
    print("%-11s %11.3f %11.3f %8.1f%%" % (op, a, t, 100 * r))
PYEOF
