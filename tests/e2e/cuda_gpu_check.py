#!/usr/bin/env python3
"""cuda_gpu_check.py TP < events: checks the run written by tests/e2e/cuda_gpu.sh (a tiny
bf16 sweep on the cuda backend, MBS 1, 2, 4): complete, the GPU described in run_start,
every compute op measured with sane stats at every point, GEMM throughput physically
possible, and at TP > 1 positive NCCL TP all-reduces. Exit 0 ok, 1 with a FAIL line."""
import json, sys
tp = int(sys.argv[1])
# One JSON event per zstd frame, frames back to back.
ev, dec, text, i = [], json.JSONDecoder(), sys.stdin.read(), 0
while i < len(text):
    while i < len(text) and text[i] in " \n\r\t":
        i += 1
    if i >= len(text):
        break
    o, i = dec.raw_decode(text, i)
    ev.append(o)
def fail(msg):
    print("FAIL:", msg); sys.exit(1)
start = next((e for e in ev if e.get("type") == "run_start"), None)
end = next((e for e in ev if e.get("type") == "run_end"), None)
if not start: fail("no run_start")
if not end or end.get("status") != "complete": fail("run did not complete: %s" % end)
env = start.get("env", {})
gpu = env.get("gpu")
if start.get("backend") != "cuda": fail("backend %r, expected cuda" % start.get("backend"))
if not isinstance(gpu, dict) or gpu.get("sm_count", 0) <= 0 or gpu.get("memory_bytes", 0) <= 0:
    fail("run_start env.gpu does not describe the device: %r" % gpu)
for key in ("driver", "runtime", "cublaslt", "nccl", "clock_mhz", "weights_l2"):
    if not gpu.get(key): fail("env.gpu.%s missing" % key)
if "globaltimer" not in gpu.get("timer", ""):
    fail("env.gpu.timer does not name the %%globaltimer spin: %r" % gpu.get("timer"))
if not str(gpu.get("rope", "")).startswith("ck_rope"):
    fail("env.gpu.rope does not name the kernel that runs attn_rope: %r" % gpu.get("rope"))
print("device: %s, sm %d, %s, CUDA %s / driver %s, %s" % (gpu["name"], gpu["sm_count"],
      gpu["cublaslt"], gpu["runtime"], gpu["driver"], gpu["nccl"]))
ends = [e for e in ev if e.get("type") == "point_end"]
if len(ends) != 3 or any(e.get("status") != "ok" for e in ends):
    fail("expected 3 ok points (MBS 1, 2, 4): %r" % [(e.get("point"), e.get("status"), e.get("message")) for e in ends])
compute_ops = ["embed", "input_norm", "attn_q", "attn_k", "attn_v", "attn_rope", "attn_core", "attn_o",
               "attn_residual", "post_attn_norm", "mlp_gate", "mlp_up", "mlp_act_fn", "mlp_down",
               "mlp_residual", "final_norm", "lm_head"]
gemms = {"attn_q", "attn_k", "attn_v", "attn_o", "mlp_gate", "mlp_up", "mlp_down", "lm_head"}
# H100/H200 dense bf16 is 989 TFLOP/s; nothing real exceeds 1200 on any current GPU.
limit = 1200e12
for p in sorted({e["point"] for e in ends}):
    ops = {e["op"]: e for e in ev if e.get("type") == "op" and e.get("point") == p}
    missing = [o for o in compute_ops if o not in ops]
    if missing: fail("point %d: ops not measured: %s" % (p, missing))
    for name in compute_ops:
        st = ops[name]["stats"]
        if not (st["count"] > 0 and 0 < st["min"] <= st["median"] <= st["max"]):
            fail("point %d %s: bad stats %r" % (p, name, st))
        if name in gemms:
            tflops = ops[name]["flops"] / (st["median"] * 1e-3)
            if tflops > limit: fail("point %d %s: %.0f TFLOP/s is impossible" % (p, name, tflops / 1e12))
    line = "  point %d: " % p + ", ".join("%s %.3f ms" % (o, ops[o]["stats"]["median"])
                                           for o in ("attn_q", "attn_core", "mlp_up", "lm_head"))
    print(line)
if tp > 1:
    comm = [e for e in ev if e.get("type") == "comm" and e.get("kind") == "tp_allreduce"]
    if not comm or any(c["stats"]["median"] <= 0 or c["busbw"] <= 0 for c in comm):
        fail("TP=%d: no positive tp_allreduce comm events: %r" % (tp, comm))
    print("  tp_allreduce busbw: %s GB/s" % ", ".join("%.1f" % c["busbw"] for c in comm))
    # the collectives sweep through NCCL (docs/cuda.md "Timing protocol"): all_gather and
    # reduce_scatter in place and out of place, all_to_all out of place, every entry with a
    # positive bandwidth
    coll = [e for e in ev if e.get("type") == "coll"]
    want = {(c, b, True) for c in ("all_reduce", "all_gather", "reduce_scatter", "send_recv")
            for b in (65536, 8388608)} | {(c, b, False) for c in ("all_gather", "reduce_scatter", "all_to_all")
                                          for b in (65536, 8388608)}
    got = {(e["coll"], e["bytes"], e.get("in_place", True)) for e in coll if e["nranks"] == 2}
    if got != want or any(e["busbw"] <= 0 or e["stats"]["min"] <= 0 for e in coll):
        fail("TP=%d: collectives sweep entries %r, wanted %r" % (tp, sorted(got), sorted(want)))
    for e in coll:
        print("  %-14s %8d %-6s %.3f ms busbw %.1f GB/s" % (e["coll"], e["bytes"],
              "in" if e.get("in_place", True) else "out", e["stats"]["median"], e["busbw"]))
print("ok: tp=%d run complete" % tp)
