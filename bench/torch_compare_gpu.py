#!/usr/bin/env python3
"""torch_compare_gpu.py: pdbx's cuda GEMM and attention times next to PyTorch's on the same GPU.

For every GEMM op (attn_q, attn_k, attn_v, attn_o, mlp_gate, mlp_up, mlp_down, lm_head) of
every measured point of a pdbx run, this times torch.matmul(x, w.t()) at the same shape and
dtype on the GPU with CUDA events (warmup, then the median of N), the way the cuda backend
times itself: one stream, a short torch.cuda._sleep() before the start event so the launch gap
is not timed (or, with --flush-l2, a write of twice the L2 size before each repetition, as the
run's flush_l2), and prints a table:

    op  tp  mbs  m  n  k  pdbx_ms  torch_ms  pdbx/torch-1  pdbx_TFLOP/s  torch_TFLOP/s

ending with the median |pdbx/torch - 1| (issue 5's goal: <= 5%) and the achieved TFLOP/s
against the GPU preset's peak.

With --attention it also times the attention core: every attn_core cell of the run (forward,
and backward when the run measured passes fwd,bwd) against
torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True) at
the same shape (MBS sequences of seq_len, the rank's q and kv heads, head_dim) and dtype,
timed the same way; the backward is torch.autograd.grad of SDPA's output (dq, dk, dv). SDPA
runs with PyTorch's own choice of kernel and, for reference, with each backend forced
(flash, efficient, cudnn; one that refuses the shape is listed as n/a). q, k and v are laid
out as HF Llama hands them to SDPA ([b, s, heads, d] transposed to [b, heads, s, d]). It is
meant for a run with flash_attention true (pdbx's fused kernel; the unfused path computes
the whole s x s square). TFLOP/s count the causal half: 2 b h s^2 d forward, 2.5x that
backward (FlashAttention's convention).

Shapes are pdbx's (design.md section 3), weights stored [out, in] as nn.Linear, so
x @ w.t() is the same cuBLAS TN call pdbx's cuBLASLt plan makes. The run's fp32 math and GEMM
API are read from `pdbx show RUN` ("gemm: fp32 math ..., api ..."): fp32 runs use TF32 only
when the run did (fp32_math tf32, torch.backends.cuda.matmul.allow_tf32), and a --blas that
is not the run's gemm_api is warned about.

pdbx's numbers come from `pdbx show RUN --format json --stat median --attribution pure`
(and `--pass bwd` for the attention backward).

Usage (on the machine with the GPU that made the run, e.g. after
`pdbx run configs/sweeps/...json --backend cuda`):
    python3 bench/torch_compare_gpu.py RUN [--store DIR] [--pdbx build/bin/pdbx]
        [--model configs/models/Llama-3.1-8B.json] [--gpu configs/gpus/H100-SXM.json]
        [--warmup 10] [--iters 50] [--flush-l2] [--blas cublaslt|cublas] [--attention]
        [--json OUT.json]

It needs PyTorch with CUDA and a GPU; it cannot run on a machine without them (pdbx's CI),
and says so.
"""
import argparse
import contextlib
import json
import os
import re
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


def attn_shape(cfg, tp, mbs, seq):
    """(b, q heads, kv heads, s, d) of attn_core on one TP rank (kv heads replicated when
    TP > kv heads, as engine/plan does)."""
    a = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads", a)
    d = cfg.get("head_dim") or cfg["hidden_size"] // a
    return mbs, a // tp, max(kv // tp, 1), seq, d


def pdbx_cmd(args, *extra):
    cmd = [args.pdbx, "show", args.run] + list(extra)
    if args.store:
        cmd += ["--store", args.store]
    return cmd


def run_text(cmd):
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", "") or str(e)
        die("%s failed: %s" % (" ".join(cmd), detail.strip()))


def pdbx_show(args, pass_name="fwd"):
    out = run_text(pdbx_cmd(args, "--format", "json", "--stat", "median", "--attribution", "pure",
                            "--pass", pass_name))
    try:
        return json.loads(out)
    except ValueError as e:
        die("pdbx show printed no JSON: %s" % e)


def gemm_modes(args):
    """(fp32_math, gemm_api) from the header of `pdbx show RUN` ("gemm: fp32 math ieee, api
    cublaslt, ..."); None for a run recorded before the fields existed."""
    m = re.search(r"^gemm: fp32 math (\S+), api ([^,\s]+)", run_text(pdbx_cmd(args)), re.M)
    return (m.group(1), m.group(2)) if m else (None, None)


def spin_cycles(us):
    """torch.cuda._sleep cycles that last at least `us` microseconds on an SM clocked at up to
    2 GHz (the H100/H200 boost is 1.98): the spin the backend queues before each start event
    (100 us for a GEMM; longer for SDPA, whose backward the host enqueues through autograd)."""
    return int(2000 * us)


def event_median(torch, fn, warmup, iters, flush, spin_us):
    """Median ms of fn() between two CUDA events, as the backend times an op: [flush L2], a spin
    that keeps the GPU busy while the host enqueues, start, fn, stop."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    stop = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        if flush is not None:
            flush.zero_()
        torch.cuda._sleep(spin_cycles(spin_us))
        start[i].record()
        fn()
        stop[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(start, stop))


def time_torch(torch, m, n, k, dtype, warmup, iters, flush):
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    w = torch.randn(n, k, device="cuda", dtype=dtype) * 0.02
    return event_median(torch, lambda: torch.matmul(x, w.t()), warmup, iters, flush, 100)


def sdpa_backends(torch):
    """[(name, context factory)]: PyTorch's own choice, then each backend forced."""
    out = [("default", contextlib.nullcontext)]
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return out
    for name, attr in (("flash", "FLASH_ATTENTION"), ("efficient", "EFFICIENT_ATTENTION"),
                       ("cudnn", "CUDNN_ATTENTION")):
        if hasattr(SDPBackend, attr):
            out.append((name, lambda b=getattr(SDPBackend, attr): sdpa_kernel([b])))
    return out


def gqa_mode(torch):
    """'enable_gqa' where SDPA takes it (PyTorch >= 2.5), else 'expanded' (k and v repeated to
    every query head before the timed call, as HF's repeat_kv did)."""
    q = torch.zeros(1, 2, 4, 8, device="cuda")
    kv = torch.zeros(1, 1, 4, 8, device="cuda")
    try:
        torch.nn.functional.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=True)
        return "enable_gqa"
    except TypeError:
        return "expanded"


def time_sdpa(torch, shape, dtype, warmup, iters, flush, backend_ctx, gqa, bwd):
    """(fwd ms, bwd ms or None, error or None) of causal SDPA at shape (b, hq, hkv, s, d)."""
    b, hq, hkv, s, d = shape
    F = torch.nn.functional

    def leaf(h):   # HF Llama's layout: [b, s, heads, d] viewed as [b, heads, s, d]
        return torch.randn(b, s, h, d, device="cuda", dtype=dtype).transpose(1, 2).requires_grad_(True)
    q, k, v = leaf(hq), leaf(hkv), leaf(hkv)
    kw = {"is_causal": True}
    if gqa == "enable_gqa":
        kw["enable_gqa"] = True
    elif hq != hkv:
        k = k.detach().repeat_interleave(hq // hkv, dim=1).requires_grad_(True)
        v = v.detach().repeat_interleave(hq // hkv, dim=1).requires_grad_(True)
    fwd_ms = bwd_ms = None
    try:
        with backend_ctx():
            fwd_ms = event_median(torch, lambda: F.scaled_dot_product_attention(q, k, v, **kw),
                                  warmup, iters, flush, 500)
            if bwd:
                out = F.scaled_dot_product_attention(q, k, v, **kw)
                g = torch.randn_like(out)
                bwd_ms = event_median(
                    torch, lambda: torch.autograd.grad(out, (q, k, v), g, retain_graph=True),
                    warmup, iters, flush, 500)
    except RuntimeError as e:
        return fwd_ms, bwd_ms, (str(e).strip().splitlines() or ["RuntimeError"])[0][:200]
    return fwd_ms, bwd_ms, None


def compare_gemms(torch, run, cfg, dtype, args, flush):
    rows = []
    seq = int(run["seq_len"])
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
    return rows


def attn_cells(run_fwd, run_bwd):
    """{(tp, mbs): {"fwd": ms, "bwd": ms|None}} of the run's measured attn_core cells."""
    cells = {}
    for pass_name, run in (("fwd", run_fwd), ("bwd", run_bwd)):
        for c in (run or {}).get("configs", []):
            for p in c.get("points", []):
                ms = (p.get("ms") or {}).get("attn_core")
                if p.get("status") == "ok" and ms is not None:
                    cells.setdefault((int(c["tp"]), int(p["mbs"])), {})[pass_name] = ms
    return cells


def compare_attention(torch, run_fwd, run_bwd, cfg, dtype, args, flush):
    seq = int(run_fwd["seq_len"])
    gqa = gqa_mode(torch)
    backends = sdpa_backends(torch)
    rows = []
    for (tp, mbs), ours in sorted(attn_cells(run_fwd, run_bwd).items()):
        if "fwd" not in ours:
            continue
        shape = attn_shape(cfg, tp, mbs, seq)
        b, hq, hkv, s, d = shape
        flops_fwd = 2.0 * b * hq * s * s * d          # the causal half of QK^T and PV
        timed = {}
        for name, ctx in backends:
            timed[name] = time_sdpa(torch, shape, dtype, args.warmup, args.iters, flush, ctx,
                                    gqa, "bwd" in ours)
        for pass_name, flops in (("fwd", flops_fwd), ("bwd", 2.5 * flops_fwd)):
            mine = ours.get(pass_name)
            if mine is None:
                continue
            k = 0 if pass_name == "fwd" else 1
            theirs = timed["default"][k]
            rows.append({
                "pass": pass_name, "tp": tp, "mbs": mbs, "seq": s, "b": b, "q_heads": hq,
                "kv_heads": hkv, "head_dim": d, "pdbx_ms": mine, "sdpa_ms": theirs,
                "ratio": mine / theirs if theirs else None,
                "pdbx_tflops": flops / (mine * 1e-3) / 1e12,
                "sdpa_tflops": flops / (theirs * 1e-3) / 1e12 if theirs else None,
                "backends": {n: t[k] for n, t in timed.items() if n != "default"},
                "errors": {n: t[2] for n, t in timed.items() if t[2]}})
    return rows, gqa


def fmt_ms(v, width=9):
    return ("%*.4f" % (width, v)) if v is not None else "%*s" % (width, "n/a")


def print_gemms(rows):
    print("%-9s %3s %4s %7s %6s %6s %9s %9s %8s %8s %8s" % (
        "op", "tp", "mbs", "m", "n", "k", "pdbx_ms", "torch_ms", "diff", "pdbx_TF", "torch_TF"))
    for r in rows:
        print("%-9s %3d %4d %7d %6d %6d %9.4f %9.4f %+7.1f%% %8.1f %8.1f" % (
            r["op"], r["tp"], r["mbs"], r["m"], r["n"], r["k"], r["pdbx_ms"], r["torch_ms"],
            100 * r["rel"], r["pdbx_tflops"], r["torch_tflops"]))


def print_attention(rows, gqa, dtype_name):
    r0 = rows[0]
    print("attention core: pdbx attn_core vs scaled_dot_product_attention(is_causal=True), "
          "%d q / %d kv heads per rank, head_dim %d, %s, GQA by %s"
          % (r0["q_heads"], r0["kv_heads"], r0["head_dim"], dtype_name, gqa))
    names = list(r0["backends"])   # in the order tried: flash, efficient, cudnn
    print("%-4s %3s %4s %6s %9s %9s %9s %8s %8s" % ("pass", "tp", "mbs", "seq", "pdbx_ms",
          "sdpa_ms", "pdbx/sdpa", "pdbx_TF", "sdpa_TF") + "".join(" %9s" % n for n in names))
    for r in rows:
        print("%-4s %3d %4d %6d %s %s %9s %8.1f %8s" % (
            r["pass"], r["tp"], r["mbs"], r["seq"], fmt_ms(r["pdbx_ms"]), fmt_ms(r["sdpa_ms"]),
            "%.3f" % r["ratio"] if r["ratio"] else "n/a", r["pdbx_tflops"],
            "%.1f" % r["sdpa_tflops"] if r["sdpa_tflops"] else "n/a")
            + "".join(" " + fmt_ms(r["backends"].get(n)) for n in names))
    errors = {n: e for r in rows for n, e in r["errors"].items()}
    for n, e in sorted(errors.items()):
        print("  sdpa %s: %s" % (n, e))
    for pass_name in ("fwd", "bwd"):
        ratios = [r["ratio"] for r in rows if r["pass"] == pass_name and r["ratio"]]
        if ratios:
            print("median pdbx/sdpa %s over %d cells: %.3f (> 1: pdbx slower)"
                  % (pass_name, len(ratios), statistics.median(ratios)))


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
                    "compare a run with the same library as its gemm_api (torch.matmul "
                    "defaults to cuBLAS)")
    ap.add_argument("--attention", action="store_true",
                    help="also compare the attn_core cells with scaled_dot_product_attention "
                    "(fwd, and bwd when the run has it)")
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
    fp32_math, run_api = gemm_modes(args)
    # as the run multiplied: TF32 only when its fp32_math was tf32 (PyTorch's default is off)
    torch.backends.cuda.matmul.allow_tf32 = fp32_math == "tf32"
    if args.blas != "default" and run_api in ("cublas", "cublaslt") and run_api != args.blas:
        print("warning: run %s used gemm_api %s, compared here with PyTorch on %s"
              % (run.get("id"), run_api, args.blas), file=sys.stderr)
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

    rows = compare_gemms(torch, run, cfg, dtype, args, flush)
    attn, gqa = [], None
    if args.attention:
        run_bwd = pdbx_show(args, "bwd") if run.get("has_bwd") else None
        attn, gqa = compare_attention(torch, run, run_bwd, cfg, dtype, args, flush)
    if not rows and not attn:
        die("run %s has no measured %s cells" % (run.get("id"), "GEMM or attn_core"
                                                 if args.attention else "GEMM"))

    print("device: %s, torch %s (BLAS %s), CUDA %s, dtype %s, seq_len %d, model %s, "
          "run fp32 math %s, api %s%s"
          % (torch.cuda.get_device_name(0), torch.__version__, blas, torch.version.cuda,
             dtype_name, seq, run["model"], fp32_math or "n/a", run_api or "n/a",
             ", L2 flushed" if flush is not None else ""))
    med = None
    if rows:
        print_gemms(rows)
        med = statistics.median(abs(r["rel"]) for r in rows)
        print("median |pdbx/torch - 1| over %d GEMM cells: %.1f%% (goal <= 5%%)"
              % (len(rows), 100 * med))
        best = max(rows, key=lambda r: r["pdbx_tflops"])
        if peak:
            print("best pdbx GEMM: %s mbs %d at %.1f TFLOP/s = %.0f%% of the %s peak %.1f"
                  % (best["op"], best["mbs"], best["pdbx_tflops"],
                     100 * best["pdbx_tflops"] / peak, gpu.get("name", "GPU"), peak))
    if attn:
        print_attention(attn, gqa, dtype_name)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"run": run.get("id"), "device": torch.cuda.get_device_name(0),
                       "torch": torch.__version__, "cuda": torch.version.cuda, "blas": blas,
                       "run_gemm_api": run_api, "run_fp32_math": fp32_math,
                       "flush_l2": flush is not None, "dtype": dtype_name,
                       "median_abs_rel": med, "rows": rows, "attention": attn,
                       "attention_gqa": gqa}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
