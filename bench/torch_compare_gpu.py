#!/usr/bin/env python3
"""torch_compare_gpu.py: pdbx's cuda GEMM times next to PyTorch's on the same GPU.

For every GEMM op (attn_q, attn_k, attn_v, attn_o, mlp_gate, mlp_up, mlp_down, lm_head) of
every measured point of a pdbx run, this times torch.matmul(x, w.t()) at the same shape and
dtype on the GPU with CUDA events (warmup, then the median of N), the way the cuda backend
times itself: one stream, a short torch.cuda._sleep() before the start event so the launch gap
is not timed (or, with --flush-l2, a write of twice the L2 size before each repetition, as the
run's flush_l2), and prints a table:

    op  tp  mbs  m  n  k  pdbx_ms  torch_ms  pdbx/torch-1  pdbx_TFLOP/s  torch_TFLOP/s

ending with the median |pdbx/torch - 1| (issue 5's goal: <= 5%) and the achieved TFLOP/s
against the GPU preset's peak.

Shapes are pdbx's (design.md section 3), weights stored [out, in] as nn.Linear, so
x @ w.t() is the same cuBLAS TN call pdbx's cuBLASLt plan makes. fp32 runs use TF32
(torch.backends.cuda.matmul.allow_tf32 = True), as the backend does.

pdbx's numbers come from `pdbx show RUN --format json --stat median --attribution pure`.

Usage (on the machine with the GPU that made the run, e.g. after
`pdbx run configs/sweeps/...json --backend cuda`):
    python3 bench/torch_compare_gpu.py RUN [--store DIR] [--pdbx build/bin/pdbx]
        [--model configs/models/Llama-3.1-8B.json] [--gpu configs/gpus/H100-SXM.json]
        [--warmup 10] [--iters 50] [--flush-l2] [--json OUT.json]

It needs PyTorch with CUDA and a GPU; it cannot run on a machine without them (pdbx's CI),
and says so.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEMM_OPS = ["attn_q", "attn_k", "attn_v", "attn_o", "mlp_gate", "mlp_up", "mlp_down", "lm_head"]


def die(msg):
    print("torch_compare_gpu: " + msg, file=sys.stderr)
    sys.exit(2)


def load_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        die("%s: cannot read %s: %s" % (what, path, e))


def gemm_shape(cfg, op, tp, mbs, seq):
    """(m, n, k) of one TP rank, as engine/plan computes them (design.md section 3)."""
    h = cfg["hidden_size"]
    a = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads", a)
    d = cfg.get("head_dim") or h // a
    inter = cfg["intermediate_size"]
    vocab = cfg["vocab_size"]
    t = mbs * seq
    kv_rank = max(kv // tp, 1)
    return {
        "attn_q": (t, a * d // tp, h),
        "attn_k": (t, kv_rank * d, h),
        "attn_v": (t, kv_rank * d, h),
        "attn_o": (t, h, a * d // tp),
        "mlp_gate": (t, inter // tp, h),
        "mlp_up": (t, inter // tp, h),
        "mlp_down": (t, h, inter // tp),
        "lm_head": (t, (vocab + tp - 1) // tp, h),
    }[op]


def pdbx_show(args):
    cmd = [args.pdbx, "show", args.run, "--format", "json", "--stat", "median",
           "--attribution", "pure"]
    if args.store:
        cmd += ["--store", args.store]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", "") or str(e)
        die("%s failed: %s" % (" ".join(cmd), detail.strip()))
    try:
        return json.loads(out)
    except ValueError as e:
        die("pdbx show printed no JSON: %s" % e)


def time_torch(torch, m, n, k, dtype, warmup, iters, flush):
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    w = torch.randn(n, k, device="cuda", dtype=dtype) * 0.02
    start = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    stop = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for _ in range(warmup):
        torch.matmul(x, w.t())
    torch.cuda.synchronize()
    for i in range(iters):
        if flush is not None:
            flush.zero_()
        else:
            torch.cuda._sleep(flush_cycles(torch))
        start[i].record()
        torch.matmul(x, w.t())
        stop[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(start, stop))


_cycles = None


def flush_cycles(torch):
    """About 100 us of SM clock cycles, the backend's spin before each start event."""
    global _cycles
    if _cycles is None:
        try:
            mhz = torch.cuda.clock_rate()   # needs pynvml; falls back below
        except Exception:
            mhz = 0
        _cycles = int((mhz or 1500) * 100)
    return _cycles


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="run id (or unique prefix) in the store")
    ap.add_argument("--store", help="pdbx store (default: pdbx's own default / $PDBX_STORE)")
    ap.add_argument("--pdbx", default=os.path.join(ROOT, "build", "bin", "pdbx"))
    ap.add_argument("--model", help="HF config.json of the run's model "
                    "(default: configs/models/<model>.json)")
    ap.add_argument("--gpu", help="GPU preset for the peak (default: configs/gpus/<gpu>.json)")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--flush-l2", action="store_true", help="flush L2 before each repetition")
    ap.add_argument("--blas", choices=["default", "cublas", "cublaslt"], default="default",
                    help="PyTorch's GEMM library (torch.backends.cuda.preferred_blas_library); "
                    "pdbx always uses cuBLASLt, torch.matmul defaults to cuBLAS")
    ap.add_argument("--json", help="also write the rows as JSON here")
    args = ap.parse_args()
    if args.warmup < 0 or args.iters < 1:
        die("--warmup must be >= 0 and --iters >= 1")

    try:
        import torch
    except ImportError:
        die("PyTorch is not installed: this comparison runs only on a machine with PyTorch + CUDA")
    if not torch.cuda.is_available():
        die("no CUDA device visible to PyTorch: run this on the GPU machine that made the run")

    run = pdbx_show(args)
    if run.get("backend") != "cuda":
        print("warning: run %s used backend %r, not cuda" % (run.get("id"), run.get("backend")),
              file=sys.stderr)
    dtype_name = run.get("dtype", "bf16")
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
    if dtype_name not in dtypes:
        die("run dtype %r (allowed: bf16, fp16, fp32)" % dtype_name)
    dtype = dtypes[dtype_name]
    torch.backends.cuda.matmul.allow_tf32 = True
    blas = "default"
    if args.blas != "default":
        try:
            torch.backends.cuda.preferred_blas_library(args.blas)
        except (AttributeError, RuntimeError) as e:
            die("--blas %s: this PyTorch cannot choose its BLAS library: %s" % (args.blas, e))
    try:
        blas = str(torch.backends.cuda.preferred_blas_library())
    except AttributeError:
        pass
    seq = int(run["seq_len"])
    model_path = args.model or os.path.join(ROOT, "configs", "models", run["model"] + ".json")
    cfg = load_json(model_path, "--model")
    gpu_path = args.gpu or os.path.join(ROOT, "configs", "gpus", run.get("gpu", "") + ".json")
    gpu = load_json(gpu_path, "--gpu") if os.path.exists(gpu_path) else {}
    peak_key = {"bf16": "peak_tflops_bf16", "fp16": "peak_tflops_fp16", "fp32": "peak_tflops_fp32"}
    peak = gpu.get(peak_key[dtype_name])

    flush = None
    if args.flush_l2:
        l2 = torch.cuda.get_device_properties(0).L2_cache_size or (64 << 20)
        flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")

    rows = []
    for c in run.get("configs", []):
        tp = int(c["tp"])
        for p in c.get("points", []):
            if p.get("status") != "ok":
                continue
            mbs = int(p["mbs"])
            for op in GEMM_OPS:
                ours = (p.get("ms") or {}).get(op)
                if ours is None:
                    continue
                m, n, k = gemm_shape(cfg, op, tp, mbs, seq)
                theirs = time_torch(torch, m, n, k, dtype, args.warmup, args.iters, flush)
                flops = 2.0 * m * n * k
                rows.append({"op": op, "tp": tp, "mbs": mbs, "m": m, "n": n, "k": k,
                             "pdbx_ms": ours, "torch_ms": theirs, "rel": ours / theirs - 1.0,
                             "pdbx_tflops": flops / (ours * 1e-3) / 1e12,
                             "torch_tflops": flops / (theirs * 1e-3) / 1e12})
    if not rows:
        die("run %s has no measured GEMM cells" % run.get("id"))

    print("device: %s, torch %s (BLAS %s), CUDA %s, dtype %s, seq_len %d, model %s"
          % (torch.cuda.get_device_name(0), torch.__version__, blas, torch.version.cuda,
             dtype_name, seq, run["model"]))
    print("%-9s %3s %4s %7s %6s %6s %9s %9s %8s %8s %8s" % (
        "op", "tp", "mbs", "m", "n", "k", "pdbx_ms", "torch_ms", "diff", "pdbx_TF", "torch_TF"))
    for r in rows:
        print("%-9s %3d %4d %7d %6d %6d %9.4f %9.4f %+7.1f%% %8.1f %8.1f" % (
            r["op"], r["tp"], r["mbs"], r["m"], r["n"], r["k"], r["pdbx_ms"], r["torch_ms"],
            100 * r["rel"], r["pdbx_tflops"], r["torch_tflops"]))
    med = statistics.median(abs(r["rel"]) for r in rows)
    print("median |pdbx/torch - 1| over %d GEMM cells: %.1f%% (goal <= 5%%)" % (len(rows), 100 * med))
    best = max(rows, key=lambda r: r["pdbx_tflops"])
    if peak:
        print("best pdbx GEMM: %s mbs %d at %.1f TFLOP/s = %.0f%% of the %s peak %.1f"
              % (best["op"], best["mbs"], best["pdbx_tflops"], 100 * best["pdbx_tflops"] / peak,
                 gpu.get("name", "GPU"), peak))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                       "blas": blas,
                       "dtype": dtype_name, "median_abs_rel": med, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
