#!/usr/bin/env python3
"""A PyTorch training iteration of a Llama-family model: the real-framework reference that pdbx's
estimate of an iteration is compared with (bench/torch_step.sh, docs/advise.md; issue 25).

The model is written out from a HuggingFace config.json (Debian's torch 1.13 has no
scaled_dot_product_attention): token embedding, per layer RMSNorm, q/k/v projections, rotary
embedding (rotate-half), causal attention with grouped-query heads, o projection, residual add,
RMSNorm, SiLU-gated MLP (gate, up, down), residual add; final RMSNorm, lm_head (tied when the
config says so), cross-entropy over the vocabulary. One iteration, as a training loop runs it:
    optimizer.zero_grad()                                  (the version's default)
    for each of --micro micro-batches of --mbs sequences of --seq tokens:
        logits = model(x); loss = CE(logits, y) / micro;  (loss's forward timed apart)
        dlogits = grad(loss, logits)                       (loss's backward timed apart)
        logits.backward(dlogits)                           (accumulates into .grad; under DDP the
                                                            last micro-batch all-reduces, no_sync
                                                            before it)
    optimizer.step()                                       (AdamW)
--dp N runs N processes under DistributedDataParallel over gloo (this host).

Besides the iteration it times each op alone on the same shapes, forward and backward, with the
names pdbx's cells have (embed, input_norm, attn_q, attn_k, attn_v, attn_rope, attn_core, attn_o,
attn_residual, post_attn_norm, mlp_gate, mlp_up, mlp_act_fn, mlp_down, mlp_residual, final_norm,
lm_head), and the iteration's other parts (loss, optimizer, zero_grad): what
bench/torch_step.sh puts in place of pdbx's measured cells. An op with weights is timed backward
as the iteration runs it, its weight gradient added into the existing .grad (AccumulateGrad);
the others' input gradients as autograd.grad returns them.

Prints a table; --json FILE writes every figure (ms, medians over --iters iterations after one
warm-up). Threads: --threads (default 1); pin the process (taskset) for one core.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="HuggingFace config.json of a Llama-family model")
    p.add_argument("--layers", type=int, default=2, help="decoder layers (default 2)")
    p.add_argument("--seq", type=int, default=128, help="sequence length (default 128)")
    p.add_argument("--mbs", type=int, default=1, help="micro-batch size in sequences (default 1)")
    p.add_argument("--micro", type=int, default=2, help="micro-batches per iteration (default 2)")
    p.add_argument("--dp", type=int, default=1, help="data-parallel processes, DDP over gloo (default 1)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per process (default 1)")
    p.add_argument("--iters", type=int, default=5, help="timed iterations after one warm-up (default 5)")
    p.add_argument("--op-reps", type=int, default=7, help="timed repetitions of each op (default 7)")
    p.add_argument("--no-ops", action="store_true", help="time the iteration only, not each op")
    p.add_argument("--ops-only", action="store_true",
                   help="time each layer op alone, forward and backward, not the iteration, the loss or"
                        " the optimizer (bench/kernels_torch.sh --bwd)")
    p.add_argument("--grad-only", action="store_true",
                   help="every op's backward as autograd.grad returns its gradients, the weights' not"
                        " added into .grad (the kernels alone: bench/kernels_torch.sh --bwd)")
    p.add_argument("--json", help="write every figure to this file")
    a = p.parse_args(argv)
    for name in ("layers", "seq", "mbs", "micro", "dp", "threads", "iters", "op_reps"):
        if getattr(a, name) < 1:
            p.error("--%s: %d (allowed: 1 or more)" % (name.replace("_", "-"), getattr(a, name)))
    return a


def load_dims(path, layers):
    c = json.load(open(path))
    c = c.get("text_config", c)
    h, a = c["hidden_size"], c["num_attention_heads"]
    d = {"hidden": h, "intermediate": c["intermediate_size"], "heads": a,
         "kv_heads": c.get("num_key_value_heads", a), "head_dim": c.get("head_dim", h // a),
         "vocab": c["vocab_size"], "eps": c.get("rms_norm_eps", 1e-6),
         "rope_theta": c.get("rope_theta", 10000.0), "tied": bool(c.get("tie_word_embeddings", False)),
         "layers": layers, "name": os.path.basename(path)}
    if d["heads"] % d["kv_heads"]:
        sys.exit("torch_step.py: num_attention_heads %d is not a multiple of num_key_value_heads %d"
                 % (d["heads"], d["kv_heads"]))
    return d


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(seq, dim, theta):
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    f = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
    emb = torch.cat((f, f), dim=-1)
    return emb.cos(), emb.sin()


def rope(x, cos, sin):
    """rotate-half RoPE of x [B, heads, S, d]"""
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def attention(q, k, v, groups):
    """causal softmax(QK^T / sqrt(d)) V, k and v [B, kv, S, d] shared by `groups` query heads"""
    if groups > 1:
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
    s = q.shape[-2]
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    mask = torch.ones(s, s, dtype=torch.bool).triu(1)
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        h, a, k, hd = d["hidden"], d["heads"], d["kv_heads"], d["head_dim"]
        self.a, self.k, self.hd = a, k, hd
        self.input_norm = RMSNorm(h, d["eps"])
        self.q = nn.Linear(h, a * hd, bias=False)
        self.kp = nn.Linear(h, k * hd, bias=False)
        self.v = nn.Linear(h, k * hd, bias=False)
        self.o = nn.Linear(a * hd, h, bias=False)
        self.post_norm = RMSNorm(h, d["eps"])
        self.gate = nn.Linear(h, d["intermediate"], bias=False)
        self.up = nn.Linear(h, d["intermediate"], bias=False)
        self.down = nn.Linear(d["intermediate"], h, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        y = self.input_norm(x)
        q = self.q(y).view(b, s, self.a, self.hd).transpose(1, 2)
        k = self.kp(y).view(b, s, self.k, self.hd).transpose(1, 2)
        v = self.v(y).view(b, s, self.k, self.hd).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        c = attention(q, k, v, self.a // self.k).transpose(1, 2).reshape(b, s, self.a * self.hd)
        x = x + self.o(c)
        y = self.post_norm(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class Model(nn.Module):
    def __init__(self, d, seq):
        super().__init__()
        self.embed = nn.Embedding(d["vocab"], d["hidden"])
        self.layers = nn.ModuleList([Layer(d) for _ in range(d["layers"])])
        self.final_norm = RMSNorm(d["hidden"], d["eps"])
        self.lm_head = nn.Linear(d["hidden"], d["vocab"], bias=False)
        if d["tied"]:
            self.lm_head.weight = self.embed.weight
        cos, sin = rope_tables(seq, d["head_dim"], d["rope_theta"])
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin)
        return self.lm_head(self.final_norm(x))


def now_ms():
    return time.perf_counter() * 1e3


def iteration(model, opt, batches, vocab, ddp):
    """one training iteration; its parts in ms (every micro-batch's summed)"""
    part = dict.fromkeys(("zero_grad", "fwd", "loss_fwd", "loss_bwd", "bwd", "optimizer"), 0.0)
    t_start = now_ms()
    t = now_ms()
    opt.zero_grad()
    part["zero_grad"] = now_ms() - t
    for i, (x, y) in enumerate(batches):
        last = i == len(batches) - 1
        ctx = model.no_sync() if ddp and not last else _null()
        with ctx:
            t = now_ms()
            logits = model(x)
            part["fwd"] += now_ms() - t
            t = now_ms()
            loss = F.cross_entropy(logits.view(-1, vocab), y.view(-1)) / len(batches)
            part["loss_fwd"] += now_ms() - t
            t = now_ms()
            (dlogits,) = torch.autograd.grad(loss, logits)
            part["loss_bwd"] += now_ms() - t
            t = now_ms()
            logits.backward(dlogits)
            part["bwd"] += now_ms() - t
    t = now_ms()
    opt.step()
    part["optimizer"] = now_ms() - t
    part["iteration"] = now_ms() - t_start
    return part


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def timeit(fn, reps, warm=2):
    ts = []
    for i in range(warm + reps):
        t0 = now_ms()
        fn()
        if i >= warm:
            ts.append(now_ms() - t0)
    return statistics.median(ts)


def op_times(d, args, model, opt):
    """each op alone on the iteration's shapes: {op: {"fwd": ms, "bwd": ms}}"""
    b, s, h = args.mbs, args.seq, d["hidden"]
    a, k, hd, inter, vocab = d["heads"], d["kv_heads"], d["head_dim"], d["intermediate"], d["vocab"]
    g = torch.Generator().manual_seed(1)

    def rnd(*shape):
        return (torch.rand(*shape, generator=g) * 2 - 1).requires_grad_(True)

    layer = model.layers[0] if not hasattr(model, "module") else model.module.layers[0]
    inner = model if not hasattr(model, "module") else model.module
    cos, sin = inner.cos, inner.sin
    ids = torch.randint(0, vocab, (b, s), generator=g)
    x, xi = rnd(b, s, h), rnd(b, s, inter)
    qh, kh = rnd(b, a, s, hd), rnd(b, k, s, hd)
    gate, up = rnd(b, s, inter), rnd(b, s, inter)
    ctx, vh, x2 = rnd(b, s, a * hd), rnd(b, k, s, hd), rnd(b, s, h)
    cases = {   # op: (forward on fresh leaves, the leaves its backward differentiates)
        "embed": (lambda: inner.embed(ids), [inner.embed.weight]),
        "input_norm": (lambda: layer.input_norm(x), [x, layer.input_norm.weight]),
        "attn_q": (lambda: layer.q(x), [x, layer.q.weight]),
        "attn_k": (lambda: layer.kp(x), [x, layer.kp.weight]),
        "attn_v": (lambda: layer.v(x), [x, layer.v.weight]),
        "attn_rope": (lambda: (rope(qh, cos, sin), rope(kh, cos, sin)), [qh, kh]),
        "attn_core": (lambda: attention(qh, kh, vh, a // k), [qh, kh, vh]),
        "attn_o": (lambda: layer.o(ctx), [ctx, layer.o.weight]),
        "attn_residual": (lambda: x + x2, [x, x2]),
        "post_attn_norm": (lambda: layer.post_norm(x), [x, layer.post_norm.weight]),
        "mlp_gate": (lambda: layer.gate(x), [x, layer.gate.weight]),
        "mlp_up": (lambda: layer.up(x), [x, layer.up.weight]),
        "mlp_act_fn": (lambda: F.silu(gate) * up, [gate, up]),
        "mlp_down": (lambda: layer.down(xi), [xi, layer.down.weight]),
        "mlp_residual": (lambda: x + x2, [x, x2]),
        "final_norm": (lambda: inner.final_norm(x), [x, inner.final_norm.weight]),
        "lm_head": (lambda: inner.lm_head(x), [x, inner.lm_head.weight]),
    }
    if args.ops_only:   # the embedding's other backward: its gradient's rows, not a dense table
        sparse = nn.Embedding(vocab, h, sparse=True)
        cases["embed_sparse"] = (lambda: sparse(ids), [sparse.weight])
    out = {}
    for op, (fwd, leaves) in cases.items():
        f = timeit(fwd, args.op_reps)
        y = fwd()
        ys = y if isinstance(y, tuple) else (y,)
        gy = [torch.rand_like(t) for t in ys]
        kept = [t.grad for t in leaves]   # the model's own gradients: AdamW below steps them
        if not args.grad_only and any(isinstance(t, nn.Parameter) for t in leaves):
            # an op with weights: its backward as the iteration runs it, the weight gradient
            # added into the existing .grad (zero_grad keeps the tensors in this version, so
            # every micro-batch accumulates: AccumulateGrad's add); the activations' gradients
            # accumulate too here (a leaf's), a small add beside the weights'
            for t in leaves:
                t.grad = torch.zeros_like(t)
            bwd = lambda: torch.autograd.backward(ys, gy, retain_graph=True, inputs=leaves)
        else:
            bwd = lambda: torch.autograd.grad(ys, leaves, gy, retain_graph=True)
        out[op] = {"fwd": f, "bwd": timeit(bwd, args.op_reps)}
        for t, g0 in zip(leaves, kept):
            t.grad = g0
        del y, ys, gy
    if args.ops_only:
        return out
    logits = torch.rand(b * s, vocab, generator=g).requires_grad_(True)
    tgt = torch.randint(0, vocab, (b * s,), generator=g)
    ce = lambda: F.cross_entropy(logits, tgt)
    loss = ce()
    out["loss"] = {"fwd": timeit(ce, args.op_reps),
                   "bwd": timeit(lambda: torch.autograd.grad(loss, logits, retain_graph=True), args.op_reps)}
    # the optimizer and zero_grad over the whole model, as the iteration runs them; "optimizer"
    # also in pdbx's unit, one layer's parameters, with its share of zero_grad (AdamW and the
    # zeroing are linear in them: pdbx's optimizer cell steps one layer's and zeroes its
    # gradients, docs/engine.md)
    whole = timeit(opt.step, args.op_reps)
    zero = timeit(opt.zero_grad, args.op_reps)
    total = sum(p.numel() for p in inner.parameters())
    per_layer = sum(p.numel() for p in layer.parameters())
    out["optimizer_model"] = {"fwd": whole}
    out["optimizer"] = {"fwd": (whole + zero) * per_layer / total}
    out["zero_grad"] = {"fwd": zero}
    return out


def run(rank, args, d, result):
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    ddp = args.dp > 1
    if ddp:
        import torch.distributed as dist
        dist.init_process_group("gloo", rank=rank, world_size=args.dp)
    model = Model(d, args.seq)
    if ddp:
        model = nn.parallel.DistributedDataParallel(model)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    if args.ops_only:
        result.update({"torch": torch.__version__, "threads": args.threads, "dims": d, "seq": args.seq,
                       "mbs": args.mbs, "ops": op_times(d, args, model, opt)})
        if args.json:
            json.dump(result, open(args.json, "w"), indent=1)
        return
    g = torch.Generator().manual_seed(100 + rank)
    batches = [(torch.randint(0, d["vocab"], (args.mbs, args.seq), generator=g),
                torch.randint(0, d["vocab"], (args.mbs, args.seq), generator=g)) for _ in range(args.micro)]
    iteration(model, opt, batches, d["vocab"], ddp)          # warm-up: AdamW's state exists after it
    parts = [iteration(model, opt, batches, d["vocab"], ddp) for _ in range(args.iters)]
    med = {k: statistics.median(p[k] for p in parts) for k in parts[0]}
    res = {"torch": torch.__version__, "threads": args.threads, "params": params, "dims": d,
           "layers": args.layers, "seq": args.seq, "mbs": args.mbs, "micro": args.micro,
           "dp": args.dp, "iters": args.iters, "iteration_ms": [p["iteration"] for p in parts],
           "median_ms": med}
    if not args.no_ops and rank == 0:
        res["ops"] = op_times(d, args, model, opt)
    if ddp:
        torch.distributed.destroy_process_group()
    if rank == 0:
        result.update(res)
        if args.json:
            json.dump(res, open(args.json, "w"), indent=1)


def spawn_entry(rank, args, d):
    res = {}
    run(rank, args, d, res)
    if rank == 0:
        report(res)


def report(r):
    m = r["median_ms"]
    print("PyTorch %s, %d thread(s), %s, %d layers, seq %d, MBS %d x %d micro-batches, DP %d, "
          "fp32, AdamW; %.1f M parameters" % (r["torch"], r["threads"], r["dims"]["name"], r["layers"],
                                             r["seq"], r["mbs"], r["micro"], r["dp"], r["params"] / 1e6))
    print("iteration %.1f ms (median of %d; %s)" % (m["iteration"], r["iters"],
                                                   " ".join("%.0f" % x for x in r["iteration_ms"])))
    for k in ("fwd", "loss_fwd", "loss_bwd", "bwd", "optimizer", "zero_grad"):
        print("  %-10s %9.1f ms  %5.1f%%" % (k, m[k], 100 * m[k] / m["iteration"]))
    if "ops" in r:
        print("ops alone (ms, median of each):")
        for op, t in r["ops"].items():
            print("  %-15s fwd %9.3f   bwd %s" % (op, t["fwd"], "%9.3f" % t["bwd"] if "bwd" in t else "      -"))


def main(argv):
    args = parse_args(argv)
    d = load_dims(args.config, args.layers)
    if args.dp > 1:
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
        mp.spawn(spawn_entry, args=(args, d), nprocs=args.dp, join=True)
        return 0
    res = {}
    run(0, args, d, res)
    if not args.ops_only:
        report(res)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
